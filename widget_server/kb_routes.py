"""`/kb/<path>`: the knowledge-base backend's source documents, read-only, as plain text.

Only documents the `kb` backend indexed at start are served, looked up by their path relative
to `KB_DIR` (so `..`, absolute paths, other files and other extensions are 404 by
construction), from the text read at start. The backend names this blueprint as its
`routes`, so the app registers it with the kb backend only: with another, every `/kb/` path is
404.

The answers' links to these documents are absolute: on `PUBLIC_URL` when it is set (always
in production; app.py `PublicHost` puts it in place of the request's Host), else on the host
each question was sent to. The backend reads it from the question's Turn (`server_url`,
docs/backends.md).
"""

from __future__ import annotations

from flask import Blueprint, Response, abort

from .backends.kb import KnowledgeBaseBackend
from .transport import chat_service

bp = Blueprint("kb", __name__)


@bp.get("/kb/<path:path>")
def source(path: str) -> Response:
    backend = chat_service().backend
    document = backend.kb.documents.get(path) if isinstance(backend, KnowledgeBaseBackend) else None
    if document is None:
        abort(404)
    response = Response(document.text, mimetype="text/plain")
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Content-Security-Policy"] = "default-src 'none'; sandbox"
    response.headers["Cache-Control"] = "public, max-age=300"
    return response
