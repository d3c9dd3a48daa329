"""`/kb/<path>`: the knowledge-base backend's source documents, read-only, as plain text.

Only documents the `kb` backend indexed at start are served, looked up by their path relative
to `KB_DIR` (so `..`, absolute paths, other files and other extensions are 404 by
construction), from the text read at start. With another backend every `/kb/` path is 404.

The answer's links must be absolute (the widget renders no relative link), so before a
question is accepted this blueprint tells the backend which scheme://host the conversation
uses, as the panel's own API base does, once the conversation's token has been checked.
"""

from __future__ import annotations

from flask import Blueprint, Flask, Response, abort, current_app, request

from .api import _bearer_token
from .backends.kb import KnowledgeBaseBackend
from .errors import ApiError

bp = Blueprint("kb", __name__)


def _backend() -> KnowledgeBaseBackend | None:
    backend = current_app.extensions["widget_server.service"].backend
    return backend if isinstance(backend, KnowledgeBaseBackend) else None


@bp.before_app_request
def _remember_origin() -> None:
    if request.endpoint != "api.post_message":
        return
    backend = _backend()
    conversation_id = (request.view_args or {}).get("conversation_id", "")
    if backend is None or not conversation_id:
        return
    try:
        current_app.extensions["widget_server.service"].authorize(conversation_id, _bearer_token())
    except ApiError:
        return  # the view refuses it
    backend.remember_origin(conversation_id, request.host_url)


@bp.get("/kb/<path:path>")
def source(path: str) -> Response:
    backend = _backend()
    document = backend.kb.documents.get(path) if backend is not None else None
    if document is None:
        abort(404)
    response = Response(document.text, mimetype="text/plain")
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Content-Security-Policy"] = "default-src 'none'; sandbox"
    response.headers["Cache-Control"] = "public, max-age=300"
    return response


def init_app(app: Flask) -> None:
    app.register_blueprint(bp)
