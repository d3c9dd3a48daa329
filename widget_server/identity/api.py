"""Transport: a known visitor's own routes under /api/v1/me (docs/protocol.md, "Known
visitors"). Authorised by the visitor's identity token (`Authorization: Bearer <JWT>`,
transport.bearer_identity); the conversation routes accept the same token for the
conversations its subject owns (transport.authorize)."""

from __future__ import annotations

from flask import Blueprint, Flask, Response, jsonify

from ..transport import bearer_identity, chat_service
from .service import subject_conversations

bp = Blueprint("identity", __name__, url_prefix="/api/v1/me")


@bp.get("/conversations")
def list_conversations() -> Response:
    identity = bearer_identity()
    return jsonify({"conversations": subject_conversations(chat_service(), identity.subject)})


@bp.after_request
def _no_store(response: Response) -> Response:
    # A visitor's list is theirs alone: no shared or browser cache may keep it.
    response.headers["Cache-Control"] = "no-store"
    return response


def init_app(app: Flask) -> None:
    app.register_blueprint(bp)
