"""Transport for actions: confirm, dismiss, list (under /api/v1, like chat/api.py).

A thin adapter from HTTP to actions/service.py; the checks run in this
order and the first failing one answers: ids (404, while the URL is routed:
transport.IdConverter) → token (404) → body (415, 413, 400) → Idempotency-Key
(400) → action and its answer (404, 409) → arguments (422) → the claim (409
for another key or a dismissed action).
"""

from __future__ import annotations

from flask import Blueprint, Response, jsonify, request

from ..transport import authorize, chat_service, handoff_service, parse_json, settings
from ..wire.bodies import ConfirmAction
from . import service as actions

bp = Blueprint("actions_api", __name__, url_prefix="/api/v1")


def _has_body() -> bool:
    return bool(request.content_length) or "chunked" in request.headers.get("Transfer-Encoding", "").lower()


def _idempotency_key() -> str:
    body_key = None
    if _has_body():
        body_key = parse_json(ConfirmAction).idempotency_key
    return actions.parse_idempotency_key(request.headers.get("Idempotency-Key"), body_key)


@bp.post(
    "/conversations/<conversation:conversation_id>/messages/<message:message_id>/actions/<action:action_id>/confirm"
)
def confirm_action(conversation_id: str, message_id: str, action_id: str) -> Response:
    authorize(conversation_id)
    key = _idempotency_key()
    action = actions.confirm(
        chat_service().store,
        settings(),
        chat_service().actions,
        conversation_id,
        message_id,
        action_id,
        key,
        request_handoff=handoff_service().request,
    )
    return jsonify(action.to_json())


@bp.post(
    "/conversations/<conversation:conversation_id>/messages/<message:message_id>/actions/<action:action_id>/dismiss"
)
def dismiss_action(conversation_id: str, message_id: str, action_id: str) -> Response:
    authorize(conversation_id)
    action = actions.dismiss(chat_service().store, conversation_id, message_id, action_id)
    return jsonify(action.to_json())


@bp.get("/conversations/<conversation:conversation_id>/actions")
def list_actions(conversation_id: str) -> Response:
    authorize(conversation_id)
    found = actions.conversation_actions(chat_service().store, conversation_id)
    return jsonify({"conversation_id": conversation_id, "actions": [action.to_json() for action in found]})


@bp.after_request
def _no_store(response: Response) -> Response:
    response.headers.setdefault("Cache-Control", "no-store")
    return response
