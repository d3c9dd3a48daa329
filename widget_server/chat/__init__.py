"""The chat itself: a visitor's question in, the answer streamed back as it is written.

`service.py` (`ChatService`, transport-free: idempotent submits, streams read from the
store's log, cancel, history, deleting a conversation), `generation.py` (the backend run in
its own thread or greenlet, apart from any connection), `api.py` (the `/api/v1` routes).
"""
