"""Transport for actions: confirm, dismiss, list (under /api/v1, like api.py).

A thin adapter from HTTP to widget_server.actions; the checks run in this
order and the first failing one answers: token (404) → ids (404) → body
(415, 413, 400) → Idempotency-Key (400) → action and its answer (404, 409)
→ arguments (422) → the claim (409 for another key or a dismissed action).
"""

from __future__ import annotations

import re

from flask import Blueprint, Response, current_app, jsonify, request

from . import actions
from .api import _authorize, _check_message_id, _json_body, service
from .errors import ApiError

bp = Blueprint("actions_api", __name__, url_prefix="/api/v1")

_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def _check_action_id(action_id: str) -> None:
    if not _ID.fullmatch(action_id):
        raise ApiError(404, "not_found", "No such action for this message.")


def _has_body() -> bool:
    return bool(request.content_length) or "chunked" in request.headers.get("Transfer-Encoding", "").lower()


def _idempotency_key() -> str:
    body_key = None
    if _has_body():
        body = _json_body()
        unknown = sorted(set(body) - {"idempotency_key"})
        if unknown:
            raise ApiError(400, "unknown_field", f"Unknown field(s): {', '.join(unknown)}. Send only idempotency_key.")
        body_key = body.get("idempotency_key")
    return actions.parse_idempotency_key(request.headers.get("Idempotency-Key"), body_key)


@bp.post("/conversations/<conversation_id>/messages/<message_id>/actions/<action_id>/confirm")
def confirm_action(conversation_id: str, message_id: str, action_id: str):
    _authorize(conversation_id)
    _check_message_id(message_id)
    _check_action_id(action_id)
    key = _idempotency_key()
    settings = current_app.config["WIDGET_SERVER"]
    action = actions.confirm(service().store, settings, conversation_id, message_id, action_id, key)
    return jsonify(action.to_json())


@bp.post("/conversations/<conversation_id>/messages/<message_id>/actions/<action_id>/dismiss")
def dismiss_action(conversation_id: str, message_id: str, action_id: str):
    _authorize(conversation_id)
    _check_message_id(message_id)
    _check_action_id(action_id)
    action = actions.dismiss(service().store, conversation_id, message_id, action_id)
    return jsonify(action.to_json())


@bp.get("/conversations/<conversation_id>/actions")
def list_actions(conversation_id: str):
    _authorize(conversation_id)
    found = actions.conversation_actions(service().store, conversation_id)
    return jsonify({"conversation_id": conversation_id, "actions": [action.to_json() for action in found]})


@bp.after_request
def _no_store(response: Response) -> Response:
    response.headers.setdefault("Cache-Control", "no-store")
    return response
