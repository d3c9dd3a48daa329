"""Transport for feedback on answers: PUT and DELETE …/messages/<message_id>/feedback.

A thin adapter from HTTP to feedback/service.py (under /api/v1, like chat/api.py). The checks
run in this order and the first failing one answers: ids (404, while the URL is routed:
transport.IdConverter) → token (404) → body (415, 413 `body_too_large`, 400) → fields (400
`unknown_field`, `invalid_rating`, `invalid_comment`; 413 `comment_too_long`) → the answer
(404 `not_found`, 409 `message_not_finished`).
"""

from __future__ import annotations

from flask import Blueprint, Response, jsonify

from ..transport import authorize, chat_service, parse_json
from ..wire.bodies import PutFeedback
from . import service as feedback

bp = Blueprint("feedback_api", __name__, url_prefix="/api/v1")

FEEDBACK_PATH = "/conversations/<conversation:conversation_id>/messages/<message:message_id>/feedback"


@bp.put(FEEDBACK_PATH)
def put_feedback(conversation_id: str, message_id: str) -> Response:
    authorize(conversation_id)
    rating = parse_json(PutFeedback)
    _record, body = feedback.put(chat_service(), conversation_id, message_id, rating.rating, rating.comment)
    return jsonify(body)


@bp.delete(FEEDBACK_PATH)
def delete_feedback(conversation_id: str, message_id: str) -> Response:
    authorize(conversation_id)
    feedback.delete(chat_service(), conversation_id, message_id)
    return Response(status=204)


@bp.after_request
def _no_store(response: Response) -> Response:
    # Private like every API response (chat/api.py's _no_store): a visitor's own rating and words.
    response.headers.setdefault("Cache-Control", "no-store")
    return response
