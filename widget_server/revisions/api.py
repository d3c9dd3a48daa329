"""Transport for regenerate and edit (under /api/v1, like chat/api.py): the new answer's stream.

A thin adapter from HTTP to revisions/service.py. The checks run in this order and the
first failing one answers: ids (404, while the URL is routed: transport.IdConverter) →
token (404) → body (415, 413, 400: wire/bodies.py's RegenerateMessage and EditMessage, whose
text follows a send's rules) → the target (404, 409: revisions.check_target) → then exactly what a
send does (chat.api.stream_new_answer: faults header, Last-Event-ID, running limit, stream slot,
the claim). Rate limits count them as sends (ratelimits.py).
"""

from __future__ import annotations

from flask import Blueprint, Response

from ..chat.api import stream_new_answer
from ..stores.base import Revision
from ..transport import authorize, chat_service, parse_json
from ..wire.bodies import EditMessage, RegenerateMessage
from . import service as revisions

bp = Blueprint("revisions_api", __name__, url_prefix="/api/v1")


def _stream_revision(conversation_id: str, request_id: str, revision: Revision) -> Response:
    revisions.check_target(chat_service(), conversation_id, request_id, revision)
    return stream_new_answer(
        conversation_id,
        request_id,
        lambda chat, origin: revisions.replace(chat, conversation_id, request_id, revision, server_url=origin),
    )


@bp.post("/conversations/<conversation:conversation_id>/messages/<message:message_id>/regenerate")
def regenerate(conversation_id: str, message_id: str) -> Response:
    authorize(conversation_id)
    body = parse_json(RegenerateMessage)
    return _stream_revision(conversation_id, body.request_id, revisions.regeneration(message_id))


@bp.post("/conversations/<conversation:conversation_id>/messages/<message:message_id>/edit")
def edit(conversation_id: str, message_id: str) -> Response:
    authorize(conversation_id)
    body = parse_json(EditMessage)
    return _stream_revision(conversation_id, body.request_id, revisions.edition(message_id, body.text))


@bp.after_request
def _no_store(response: Response) -> Response:
    # Private, like every API response (chat/api.py): a stream already says so, an error too.
    response.headers.setdefault("Cache-Control", "no-store")
    return response
