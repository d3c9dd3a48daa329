"""`/metrics` (Prometheus text format) and `/healthz` (is this worker usable?)."""

from __future__ import annotations

import hmac

from flask import Blueprint, Flask, Response, abort, jsonify

from .stores.base import StoreUnavailable
from .transport import bearer_token, chat_service, services, settings

bp = Blueprint("monitoring", __name__)


@bp.get("/metrics")
def metrics() -> Response:
    registry = services().metrics
    if not registry.enabled or not _metrics_allowed():
        abort(404)
    body, content_type = registry.exposition()
    return Response(body, content_type=content_type, headers={"Cache-Control": "no-store"})


def _metrics_allowed() -> bool:
    """With METRICS_TOKEN set, only a request bearing it (any ENV); without, only outside
    production. Refused is the same 404 as METRICS off, as a wrong token on the API is:
    a prober learns neither whether metrics are served nor whether a token exists."""
    values = settings()
    expected = values.server.metrics_token
    if not expected:
        return values.server.env != "production"
    given = bearer_token() or ""
    return hmac.compare_digest(given.encode("utf-8"), expected.encode("utf-8"))


@bp.get("/healthz")
def healthz() -> Response:
    """200 when this worker can serve; 503 when its store is unreachable, so a
    load balancer sends visitors elsewhere until Redis is back."""
    chat = chat_service()
    body = {"status": "ok", "backend": chat.backend.name, "open_streams": chat.open_streams, "store": "ok"}
    try:
        chat.store.ping()
    except StoreUnavailable:
        body.update(status="unavailable", store="unavailable")
        response = jsonify(body)
        response.status_code = 503
        response.headers["Retry-After"] = "2"
        return response
    return jsonify(body)


def init_app(app: Flask) -> None:
    app.register_blueprint(bp)
