"""Transport: a known visitor's own data, under /api/v1/me (docs/protocol.md, "Your data";
docs/privacy.md). Authorised by the visitor's identity token (`Authorization: Bearer <JWT>`,
transport.bearer_identity), so a visitor reaches their own subject's data and nobody else's:
`GET /api/v1/me/export` answers it as JSON Lines (GDPR Art. 15 and 20), `DELETE /api/v1/me`
erases it (Art. 17). Both read the subject's own list (its newest conversations, at most
SUBJECT_LIST_MAX), never a scan of the store; `widget-server data` is the operator's
complete walk (privacy/commands.py)."""

from __future__ import annotations

import json

from flask import Blueprint, Flask, Response

from ..ratelimits import current_limits
from ..stores.base import SUBJECT_LIST_MAX
from ..transport import bearer_identity, services
from .erase import erase_subject
from .export import export_records

bp = Blueprint("privacy", __name__, url_prefix="/api/v1/me")

NDJSON = "application/x-ndjson"


def _own_conversation_ids(subject: str) -> list[str]:
    store = services().store
    return [entry.conversation.conversation_id for entry in store.subject_conversations(subject, SUBJECT_LIST_MAX)]


@bp.get("/export")
def export_my_data() -> Response:
    subject = bearer_identity().subject
    found = services()
    records = export_records(found.chat, found.handoff, found.attachments, subject, _own_conversation_ids(subject))
    body = b"".join(json.dumps(record, ensure_ascii=False).encode("utf-8") + b"\n" for record in records)
    response = Response(body, status=200, mimetype=NDJSON)
    response.headers["Content-Disposition"] = 'attachment; filename="my-chat-data.jsonl"'
    return response


@bp.delete("")
def erase_my_data() -> Response:
    subject = bearer_identity().subject
    found = services()
    limits = current_limits()
    erase_subject(
        found.chat,
        found.handoff,
        found.attachments,
        subject,
        _own_conversation_ids(subject),
        forget_limits=limits.forget_conversation if limits is not None else None,
    )
    return Response(status=204)


@bp.after_request
def _no_store(response: Response) -> Response:
    # A visitor's data is theirs alone: no shared or browser cache may keep it.
    response.headers["Cache-Control"] = "no-store"
    return response


def init_app(app: Flask) -> None:
    app.register_blueprint(bp)
