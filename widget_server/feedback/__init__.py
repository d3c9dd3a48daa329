"""Feedback on answers: a visitor's rating of an ended answer, with an optional comment.

`service.py` (transport-free: the rules, and the export `widget-server feedback export`
writes), `api.py` (PUT and DELETE of an answer's feedback).
"""
