"""Regenerate and edit: the conversation's last turn replaced by a new answer.

`service.py` (transport-free: which turn may be replaced, and the claim that replaces it),
`api.py` (the two routes, each streaming its new answer like a send).
"""
