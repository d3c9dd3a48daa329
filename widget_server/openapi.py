"""The OpenAPI 3.2 document for wire protocol v1, served at /openapi.json.

Its request bodies and response records are the wire types the routes read and write
(wire/bodies.py, wire/records.py), described by wire/schema.py: a rule is written once, for
the check and the document alike. The paths and the events' data are written here.
Schemathesis checks every response against it (tests/test_openapi_schemathesis.py).
docs/protocol.md explains the events.

OpenAPI 3.2 because it is the first version that can describe an event
stream: `itemSchema` of `text/event-stream` describes each event (its
`event`, `id` and `data` fields, and the JSON inside `data` through
`contentMediaType`/`contentSchema`). A 3.1 document could only say "a
string", and tools read a 3.1 `schema` there inconsistently (as the whole
body or as each event).
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Flask, Response, current_app, jsonify, request

from .attachments.sniff import MEDIA_TYPES
from .handoff import events as handoff_events
from .messages import EventKind, MessageState
from .protocol import EVENT_ID_PATTERN, ID_PATTERN, IDEMPOTENCY_KEY_PATTERN, LAST_EVENT_ID_PATTERN, REQUEST_ID_PATTERN
from .wire import bodies, records
from .wire.errors import HTTP_ERROR_CODE, REGISTRY
from .wire.schema import json_schema

bp = Blueprint("openapi", __name__)

_ID_SCHEMA = {"type": "string", "pattern": ID_PATTERN}
_STATES = [state.value for state in MessageState]

# The JSON records the API answers with (wire/records.py), by their component's name.
_RECORDS: dict[str, type] = {
    "NewConversation": records.NewConversation,
    "ConversationHistory": records.ConversationHistory,
    "HistoryMessage": records.HistoryMessage,
    "MessageState": records.MessageStateRecord,
    "ErrorInfo": records.ErrorInfo,
    "Attachment": records.AttachmentRecord,
    "SentAttachment": records.SentAttachmentRecord,
    "Feedback": records.FeedbackRecord,
    "StoredFeedback": records.StoredFeedbackRecord,
    "ActionProposal": records.ActionProposal,
    "Action": records.ActionRecord,
    "ActionList": records.ActionList,
    "HandoffState": records.HandoffStateRecord,
    "HandoffMessageCreated": records.HandoffMessageCreated,
    "LeftMessageCreated": records.LeftMessageCreated,
}
_COMPONENT_OF = {record: f"#/components/schemas/{name}" for name, record in _RECORDS.items()}
_RECORD_SCHEMAS = {name: json_schema(record, _COMPONENT_OF.get) for name, record in _RECORDS.items()}

# Every JSON request body, described by the types the routes read it with (wire/bodies.py).
_BODY_SCHEMAS: dict[str, Any] = {
    body_type.__name__: json_schema(body_type)
    for body_type in (
        bodies.NewMessage,
        bodies.RegenerateMessage,
        bodies.EditMessage,
        bodies.ClientReport,
        bodies.PutFeedback,
        bodies.ConfirmAction,
        bodies.HandoffRequest,
        bodies.HandoffMessage,
        bodies.LeftMessage,
    )
}


def _error_response(description: str, *, retry_after: bool = False) -> dict[str, Any]:
    response: dict[str, Any] = {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
    }
    if retry_after:
        response["headers"] = {
            "Retry-After": {"description": "Seconds to wait before trying again.", "schema": {"type": "string"}}
        }
    return response


# Every /api/v1 operation: a browser request from another site's page
# (docs/security.md, "Rate limits") is refused before anything is counted.
_ORIGIN_REFUSED = (
    "A browser request whose Origin is neither this server's nor in API_ORIGINS (`origin_not_allowed`); "
    "nothing was counted or done."
)


def _errors(*statuses: int) -> dict[str, Any]:
    descriptions = {
        400: "Malformed request: bad JSON, missing or invalid field, or a Last-Event-ID that is not this message's.",
        404: "Unknown conversation or message, or a missing or wrong token (indistinguishable on purpose).",
        405: "Method not allowed on this path (an id holding an encoded '/', which no valid id has, is decoded "
        "before routing and can land on a path that takes other methods).",
        409: "request_id already used with a different body.",
        413: "Request body or text larger than the configured limit.",
        415: "Content-Type is not application/json.",
        429: "Over a rate limit (`rate_limited`), or too many streams or running answers in this conversation.",
        503: "The server is at its limit of open streams (`server_busy`), or its store is unreachable (`store_unavailable`).",
    }
    descriptions[403] = _ORIGIN_REFUSED
    return {
        str(status): _error_response(descriptions[status], retry_after=status in (429, 503))
        for status in sorted({*statuses, 403})
    }


_EVENT_STREAM = {
    "description": (
        "A text/event-stream of this message's events. Each event has `id: <message_id>:<seq>`, "
        "`event:` one of " + ", ".join(kind.value for kind in EventKind) + ", and one-line JSON `data:`. "
        "The stream starts with a `retry:` field, may carry `: heartbeat` comments, and ends after the "
        "terminal event; a close without one means: resume."
    ),
    "headers": {
        "Cache-Control": {"schema": {"type": "string", "const": "no-store"}},
        "X-Accel-Buffering": {"schema": {"type": "string", "const": "no"}},
    },
    "content": {"text/event-stream": {"itemSchema": {"$ref": "#/components/schemas/StreamEvent"}}},
}

# The JSON in each event's `data`, by event type (messages.MessageLog writes them).
_EVENT_DATA = {
    EventKind.STARTED: "StartedData",
    EventKind.DELTA: "DeltaData",
    EventKind.SNAPSHOT: "SnapshotData",
    EventKind.COMPLETED: "CompletedData",
    EventKind.FAILED: "FailedData",
    EventKind.CANCELLED: "CancelledData",
    EventKind.ACTION_PROPOSED: "ActionProposedData",
}


def _event_data(required: list[str], properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "required": ["message_id", "seq", *required],
        "properties": {"message_id": _ID_SCHEMA, "seq": {"type": "integer", "minimum": 0}, **properties},
    }


_COUNT = {"type": "integer", "minimum": 0}
_EVENT_DATA_SCHEMAS = {
    "StartedData": _event_data([], {}),
    "DeltaData": _event_data(["text"], {"text": {"type": "string", "minLength": 1}}),
    "SnapshotData": _event_data(
        ["text", "state"],
        {"text": {"type": "string"}, "state": {"const": MessageState.RUNNING.value}},
    ),
    "CompletedData": _event_data(
        ["length", "utf8_bytes", "sha256"],
        {
            "length": _COUNT,
            "utf8_bytes": _COUNT,
            "sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
            "actions": {
                "description": "Present when the answer proposed actions: the only ones it offers, actionable now that it completed.",
                "type": "array",
                "minItems": 1,
                "items": {"$ref": "#/components/schemas/ActionProposal"},
            },
        },
    ),
    "FailedData": _event_data(
        ["error", "incomplete", "length"],
        {"error": {"$ref": "#/components/schemas/ErrorInfo"}, "incomplete": {"const": True}, "length": _COUNT},
    ),
    "CancelledData": _event_data(["incomplete", "length"], {"incomplete": {"const": True}, "length": _COUNT}),
    # An action proposal's fields (ActionProposal), next to message_id and seq.
    "ActionProposedData": {
        "allOf": [_event_data([], {}), {"$ref": "#/components/schemas/ActionProposal"}],
    },
}

_ACTION_ID = {"name": "action_id", "in": "path", "required": True, "schema": _ID_SCHEMA}
_ACTION_RESPONSE = {
    "description": "The action and what became of it.",
    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Action"}}},
}


def _action_errors(*statuses: int) -> dict[str, Any]:
    descriptions = {
        400: "Malformed request: a missing, invalid or mismatched Idempotency-Key, a body that is not a JSON object, "
        "or an unknown field.",
        404: "Unknown conversation, message or action, an action of another message, or a missing or wrong token.",
        409: "The action's answer did not complete (`message_not_completed`), the action was already confirmed with "
        "another key (`action_already_confirmed`), dismissed (`action_dismissed`), is still being carried out "
        "(`action_in_progress`, with Retry-After), or is no longer installed (`action_unavailable`).",
        413: "Request body larger than the configured limit.",
        415: "A body was sent, but not as application/json.",
        422: "The action's arguments no longer pass its validation (`invalid_arguments`); nothing was carried out.",
    }
    descriptions[403] = _ORIGIN_REFUSED
    return {
        str(status): _error_response(descriptions[status], retry_after=status == 409)
        for status in sorted({*statuses, 403})
    }


_ACTION_PATHS = {
    "/api/v1/conversations/{conversation_id}/actions": {
        "get": {
            "operationId": "listActions",
            "summary": "The actions proposed by this conversation's completed answers, and their status.",
            "security": [{"bearer": []}],
            "parameters": [{"name": "conversation_id", "in": "path", "required": True, "schema": _ID_SCHEMA}],
            "responses": {
                "200": {
                    "description": "The actions, oldest first.",
                    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ActionList"}}},
                },
                **_action_errors(404),
            },
        }
    },
    "/api/v1/conversations/{conversation_id}/messages/{message_id}/actions/{action_id}/confirm": {
        "post": {
            "operationId": "confirmAction",
            "summary": "Carry out a completed answer's proposed action, exactly once.",
            "description": "Send the action's own idempotency key (generated once per action by the client, reused on "
            "every retry) in the Idempotency-Key header or the body. The first confirm executes it; a retry with the "
            "same key gets the same outcome; another key gets 409. `status` `failed` is an outcome too (200): it is "
            "never retried.",
            "security": [{"bearer": []}],
            "parameters": [
                {"name": "conversation_id", "in": "path", "required": True, "schema": _ID_SCHEMA},
                {"name": "message_id", "in": "path", "required": True, "schema": _ID_SCHEMA},
                _ACTION_ID,
                {
                    "name": "Idempotency-Key",
                    "in": "header",
                    "required": False,
                    "description": "The action's idempotency key (or send it as the body's idempotency_key).",
                    "schema": {"type": "string", "pattern": IDEMPOTENCY_KEY_PATTERN},
                },
            ],
            "requestBody": {
                "required": False,
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ConfirmAction"}}},
            },
            "responses": {"200": _ACTION_RESPONSE, **_action_errors(400, 404, 409, 413, 415, 422)},
        }
    },
    "/api/v1/conversations/{conversation_id}/messages/{message_id}/actions/{action_id}/dismiss": {
        "post": {
            "operationId": "dismissAction",
            "summary": "Decline a completed answer's proposed action; it can no longer be confirmed (idempotent).",
            "security": [{"bearer": []}],
            "parameters": [
                {"name": "conversation_id", "in": "path", "required": True, "schema": _ID_SCHEMA},
                {"name": "message_id", "in": "path", "required": True, "schema": _ID_SCHEMA},
                _ACTION_ID,
            ],
            "responses": {"200": _ACTION_RESPONSE, **_action_errors(404, 409)},
        }
    },
}

_STREAM_EVENT = {
    "description": "One event of a message's stream, as an EventSource reader dispatches it.",
    "type": "object",
    "required": ["event", "id", "data"],
    "properties": {
        "event": {"enum": [kind.value for kind in EventKind]},
        "id": {"type": "string", "pattern": EVENT_ID_PATTERN},
        "data": {"type": "string", "contentMediaType": "application/json"},
        "retry": {"type": "integer", "minimum": 0},
    },
    "allOf": [
        {
            "if": {"properties": {"event": {"const": kind.value}}, "required": ["event"]},
            "then": {
                "properties": {
                    "data": {
                        "contentMediaType": "application/json",
                        "contentSchema": {"$ref": f"#/components/schemas/{name}"},
                    }
                }
            },
        }
        for kind, name in _EVENT_DATA.items()
    ],
}

# Security requirement: the conversation's Bearer token (no scopes).
_BEARER: list[dict[str, list[str]]] = [{"bearer": []}]
_CONVERSATION_ID = {"name": "conversation_id", "in": "path", "required": True, "schema": _ID_SCHEMA}
_MESSAGE_ID = {"name": "message_id", "in": "path", "required": True, "schema": _ID_SCHEMA}
# Empty means "from the start"; otherwise the id of an event of this message
# (another message's id, or a position not yet reached, is a 400).
_LAST_EVENT_ID_SCHEMA = {"type": "string", "pattern": LAST_EVENT_ID_PATTERN}
_LAST_EVENT_ID_HEADER = {
    "name": "Last-Event-ID",
    "in": "header",
    "required": False,
    "description": "`<message_id>:<seq>` of the last event the client applied; the stream continues after it.",
    "schema": _LAST_EVENT_ID_SCHEMA,
}


# -- feedback on answers, and deleting a conversation (widget_server/feedback/) --


def _feedback_errors(*statuses: int) -> dict[str, Any]:
    descriptions = {
        400: "Malformed request: bad JSON, a body that is not an object, an unknown field (`unknown_field`), "
        "a rating other than up or down (`invalid_rating`), a comment that is not a string (`invalid_comment`).",
        404: "Unknown conversation, not an answer (assistant message) of this conversation, or a missing or "
        "wrong token.",
        409: "The answer is still being written (`message_not_finished`): rate it once it has ended.",
        413: "Request body larger than MAX_BODY_BYTES, or comment longer than FEEDBACK_COMMENT_MAX_CHARS "
        "(`comment_too_long`).",
        415: "Content-Type is not application/json.",
    }
    descriptions[403] = _ORIGIN_REFUSED
    return {str(status): _error_response(descriptions[status]) for status in sorted({*statuses, 403})}


_FEEDBACK_PATHS = {
    "/api/v1/conversations/{conversation_id}/messages/{message_id}/feedback": {
        "put": {
            "operationId": "putFeedback",
            "summary": "Rate an ended answer (completed, failed or cancelled); replaces any earlier rating of it.",
            "security": [{"bearer": []}],
            "parameters": [
                {"name": "conversation_id", "in": "path", "required": True, "schema": _ID_SCHEMA},
                {"name": "message_id", "in": "path", "required": True, "schema": _ID_SCHEMA},
            ],
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/PutFeedback"}}},
            },
            "responses": {
                "200": {
                    "description": "The stored feedback.",
                    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/StoredFeedback"}}},
                },
                **_feedback_errors(400, 404, 409, 413, 415),
            },
        },
        "delete": {
            "operationId": "deleteFeedback",
            "summary": "Remove the answer's feedback (204 also when it had none).",
            "security": [{"bearer": []}],
            "parameters": [
                {"name": "conversation_id", "in": "path", "required": True, "schema": _ID_SCHEMA},
                {"name": "message_id", "in": "path", "required": True, "schema": _ID_SCHEMA},
            ],
            "responses": {"204": {"description": "It has no feedback now."}, **_feedback_errors(404)},
        },
    },
}

_DELETE_CONVERSATION = {
    "operationId": "deleteConversation",
    "summary": "Delete the conversation and everything of it; its running answers are cancelled first.",
    "description": "Everything stored for it is gone at once (exchanges, answers and their logs, actions, "
    "feedback, its rate-limit counters); its token no longer works (404). The response expires the panel's "
    "conversation cookie.",
    "security": [{"bearer": []}],
    "parameters": [{"name": "conversation_id", "in": "path", "required": True, "schema": _ID_SCHEMA}],
    "responses": {"204": {"description": "Deleted."}, **_errors(404)},
}


# -- regenerate and edit the last turn (widget_server/revisions/) --


def _revision_operation(operation_id: str, summary: str, description: str, body: str, conflicts: str) -> dict:
    errors = _errors(400, 404, 413, 415, 429, 503)
    errors["404"] = _error_response(
        "Unknown conversation, no such message in it (for an edit: no such user message), "
        "or a missing or wrong token (indistinguishable on purpose)."
    )
    errors["409"] = _error_response(
        f"{conflicts}, its answer is still being generated (`message_not_finished`), or the request_id was "
        "already used for another request (`request_id_conflict`). Nothing was started."
    )
    return {
        "post": {
            "operationId": operation_id,
            "summary": summary,
            "description": description,
            "security": _BEARER,
            "parameters": [_CONVERSATION_ID, _MESSAGE_ID, _LAST_EVENT_ID_HEADER],
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{body}"}}},
            },
            "responses": {"200": _EVENT_STREAM, **errors},
        }
    }


_REVISION_PATHS = {
    "/api/v1/conversations/{conversation_id}/messages/{message_id}/regenerate": _revision_operation(
        "regenerateMessage",
        "Answer the last turn again; the response streams the new answer's events from its start.",
        "Only the conversation's last answer, once it has ended (completed, failed or cancelled). The new "
        "answer (a new message_id) replaces it in the history and in what the backend is given; the user turn "
        "stays. Idempotent on request_id, like a send.",
        "RegenerateMessage",
        "Not the last answer (`not_last_answer`)",
    ),
    "/api/v1/conversations/{conversation_id}/messages/{message_id}/edit": _revision_operation(
        "editMessage",
        "Replace the last user message with new text and stream its answer from its start.",
        "`message_id` is the user message's id (from the history). Only the conversation's last user "
        "message, once its answer has ended. The edited message (a new user message_id) and its answer "
        "replace the old pair in the history and in what the backend is given. Idempotent on request_id.",
        "EditMessage",
        "Not the last user message (`not_last_message`)",
    ),
}


# -- hand-off to a person (widget_server/handoff/) ------------------------------------------

_SHA256 = {"type": "string", "pattern": "^[0-9a-f]{64}$"}
_OPENS_AT = {
    "type": "string",
    "format": "date-time",
    "description": "With reason `closed`: the next opening (HANDOFF_HOURS), ISO 8601 with the schedule zone's offset.",
}
_HANDOFF_DATA: dict[str, tuple[str, list[str], dict[str, Any]]] = {
    handoff_events.QUEUED: ("HandoffQueuedData", ["position"], {"position": {"type": "integer", "minimum": 1}}),
    handoff_events.ASSIGNED: ("HandoffAssignedData", ["agent"], {"agent": {"type": "string"}}),
    handoff_events.AGENT_TYPING: ("AgentTypingData", ["agent"], {"agent": {"type": "string"}}),
    handoff_events.AGENT_MESSAGE: (
        "AgentMessageData",
        ["message_id", "text", "sha256", "agent"],
        {"message_id": _ID_SCHEMA, "text": {"type": "string"}, "sha256": _SHA256, "agent": {"type": "string"}},
    ),
    handoff_events.VISITOR_MESSAGE: (
        "VisitorMessageData",
        ["message_id", "text", "sha256"],
        {
            "message_id": _ID_SCHEMA,
            "text": {"type": "string"},
            "sha256": _SHA256,
            "attachments": {"type": "array", "items": {"$ref": "#/components/schemas/SentAttachment"}},
        },
    ),
    handoff_events.ENDED: (
        "HandoffEndedData",
        ["agent", "reason"],
        {"agent": {"type": "string"}, "reason": {"enum": list(handoff_events.END_REASONS)}},
    ),
    handoff_events.UNAVAILABLE: (
        "HandoffUnavailableData",
        ["reason"],
        {"reason": {"enum": list(handoff_events.UNAVAILABLE_REASONS)}, "opens_at": _OPENS_AT},
    ),
    handoff_events.SNAPSHOT: (
        "ConversationSnapshotData",
        ["state", "messages"],
        {
            "state": {"enum": [handoff_events.NONE, *handoff_events.ACTIVE_STATES, handoff_events.STATE_ENDED]},
            "agent": {"type": "string"},
            "position": {"type": "integer", "minimum": 1},
            "messages": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["message_id", "role", "text", "sha256"],
                    "properties": {
                        "message_id": _ID_SCHEMA,
                        "role": {"enum": ["agent", "visitor"]},
                        "text": {"type": "string"},
                        "sha256": _SHA256,
                        "agent": {"type": "string"},
                    },
                },
            },
        },
    ),
}


def _conversation_event_data(required: list[str], properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "required": ["conversation_id", "seq", *required],
        "properties": {"conversation_id": _ID_SCHEMA, "seq": {"type": "integer", "minimum": 0}, **properties},
    }


_HANDOFF_SCHEMAS: dict[str, Any] = {
    name: _conversation_event_data(required, properties) for name, required, properties in _HANDOFF_DATA.values()
}
_HANDOFF_SCHEMAS.update(
    {
        "ConversationEvent": {
            "description": "One event of a conversation's stream, as an EventSource reader dispatches it.",
            "type": "object",
            "required": ["event", "id", "data"],
            "properties": {
                "event": {"enum": list(handoff_events.ALL_TYPES)},
                "id": {"type": "string", "pattern": EVENT_ID_PATTERN},
                "data": {"type": "string", "contentMediaType": "application/json"},
                "retry": {"type": "integer", "minimum": 0},
            },
            "allOf": [
                {
                    "if": {"properties": {"event": {"const": kind}}, "required": ["event"]},
                    "then": {
                        "properties": {
                            "data": {
                                "contentMediaType": "application/json",
                                "contentSchema": {"$ref": f"#/components/schemas/{name}"},
                            }
                        }
                    },
                }
                for kind, (name, _, _) in _HANDOFF_DATA.items()
            ],
        },
    }
)


def _handoff_errors(*statuses: int) -> dict[str, Any]:
    errors = _errors(*statuses)
    if "409" in errors:
        errors["409"] = _error_response(
            "No hand-off is queued or assigned (`handoff_not_active`), or the request_id was already used for "
            "another request (`request_id_conflict`)."
        )
    if "503" in errors:
        errors["503"] = _error_response(
            "The store is unreachable (`store_unavailable`), the server is at its limit of open streams "
            "(`server_busy`), the hand-off desk is busy with other changes (`handoff_busy`), or the memory "
            "store's hand-off budget holds only hand-offs going on (`handoff_store_full`).",
            retry_after=True,
        )
    return errors


def _handoff_post(operation_id: str, summary: str, body: str, created: str, description: str) -> dict[str, Any]:
    return {
        "operationId": operation_id,
        "summary": summary,
        "description": description,
        "security": _BEARER,
        "parameters": [_CONVERSATION_ID],
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{body}"}}},
        },
        "responses": {
            "201": {
                "description": "Stored (or, for a retry of its request_id, stored before).",
                "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{created}"}}},
            },
            **_handoff_errors(400, 404, 405, 409, 413, 415, 503),
        },
    }


_HANDOFF_PATHS = {
    "/api/v1/conversations/{conversation_id}/handoff": {
        "post": {
            "operationId": "requestHandoff",
            "summary": "Ask for a person: queued, already assigned, or unavailable (nobody present, hand-off off, or closed).",
            "description": "Idempotent on request_id; while a hand-off is queued or assigned, any request says where "
            "it is. Then open the conversation's event stream.",
            "security": _BEARER,
            "parameters": [_CONVERSATION_ID],
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/HandoffRequest"}}},
            },
            "responses": {
                "200": {
                    "description": "Where the hand-off is.",
                    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/HandoffState"}}},
                },
                **_handoff_errors(400, 404, 405, 409, 413, 415, 503),
            },
        },
        "delete": {
            "operationId": "cancelHandoff",
            "summary": "Leave the queue or end the hand-off (`handoff.ended`, reason `visitor`); 204 also when none.",
            "security": _BEARER,
            "parameters": [_CONVERSATION_ID],
            "responses": {
                "204": {"description": "No hand-off is queued or assigned now."},
                **_handoff_errors(404, 405, 503),
            },
        },
    },
    "/api/v1/conversations/{conversation_id}/handoff/messages": {
        "post": _handoff_post(
            "postHandoffMessage",
            "Send a message to the person (only while a hand-off is queued or assigned).",
            "HandoffMessage",
            "HandoffMessageCreated",
            "It becomes a `visitor.message` event and a `visitor` entry of the history; the backend never sees it. "
            "Idempotent on request_id.",
        )
    },
    "/api/v1/conversations/{conversation_id}/handoff/left-messages": {
        "post": _handoff_post(
            "postLeftMessage",
            "Leave a message for the site's team (when nobody was available), with an optional email address.",
            "LeftMessage",
            "LeftMessageCreated",
            "It lands in the agents' inbox; a reply is shown in this conversation. Idempotent on request_id.",
        )
    },
    "/api/v1/conversations/{conversation_id}/events": {
        "get": {
            "operationId": "getConversationEvents",
            "summary": "The conversation's event stream: the hand-off's state and its messages, resumable.",
            "description": "Events have `id: <conversation_id>:<seq>`. Resume with Last-Event-ID (or `?after=<seq>`); "
            "a position no longer kept gets one `conversation.snapshot` first. The stream ends once the reader has "
            "every event and no hand-off is queued or assigned.",
            "security": [{"bearer": []}, {"queryToken": []}],
            "parameters": [
                _CONVERSATION_ID,
                {
                    "name": "Last-Event-ID",
                    "in": "header",
                    "required": False,
                    "description": "`<conversation_id>:<seq>` of the last event the client applied.",
                    "schema": _LAST_EVENT_ID_SCHEMA,
                },
                {
                    "name": "after",
                    "in": "query",
                    "required": False,
                    "description": "The seq of the last event the client applied (the header wins).",
                    "schema": {"type": "string", "pattern": "^(0|[1-9][0-9]{0,9})$"},
                },
            ],
            "responses": {
                "200": {
                    "description": "A text/event-stream of the conversation's events; `retry:` first, `: heartbeat` "
                    "comments while quiet.",
                    "headers": _EVENT_STREAM["headers"],
                    "content": {
                        "text/event-stream": {"itemSchema": {"$ref": "#/components/schemas/ConversationEvent"}}
                    },
                },
                **_handoff_errors(400, 404, 405, 429, 503),
            },
        }
    },
}


def _attachment_errors(*statuses: int) -> dict[str, Any]:
    descriptions = {
        400: "A malformed upload: no file part `file` (`missing_file`), an empty file (`empty_file`), an unreadable "
        "multipart body or two files (`invalid_upload`), another field (`unknown_field`), a bad idempotency key "
        "(`invalid_idempotency_key`, `idempotency_key_mismatch`).",
        404: "Unknown conversation, a missing or wrong token, or an attachment that is not this conversation's "
        "(unknown, another conversation's, or a malformed id: the same 404).",
        408: "The upload's body did not arrive within ATTACHMENT_UPLOAD_TIMEOUT_SECONDS (`body_timeout`).",
        409: "The idempotency key already uploaded another file in this conversation (`request_id_conflict`).",
        413: "The file is larger than ATTACHMENT_MAX_BYTES (`attachment_too_large`, details.limit), does not fit "
        "the conversation's budget (`attachments_budget_exceeded`, details.limit and details.used), or is an image "
        "of more than ATTACHMENT_IMAGE_MAX_PIXELS pixels (`attachment_image_too_large`).",
        415: "The content is none of the allowed types (`attachment_type`, details.allowed), or the body is not "
        "multipart/form-data (`unsupported_media_type`).",
        503: "The store is unreachable (`store_unavailable`), or the directory store is full (`attachment_store_full`).",
    }
    descriptions[403] = _ORIGIN_REFUSED
    return {
        str(status): _error_response(descriptions[status], retry_after=status == 503)
        for status in sorted({*statuses, 403})
    }


_ATTACHMENT_ID = {"name": "attachment_id", "in": "path", "required": True, "schema": _ID_SCHEMA}
_DOWNLOAD_HEADERS = {
    "Content-Disposition": {
        "description": "`inline` for png, jpeg, webp and gif; `attachment` otherwise; with filename and filename*.",
        "schema": {"type": "string", "pattern": '^(inline|attachment); filename="[^"]*"; filename\\*=UTF-8\'\''},
    },
    "X-Content-Type-Options": {"schema": {"type": "string", "const": "nosniff"}},
    "Content-Security-Policy": {"schema": {"type": "string", "const": "sandbox"}},
    "Cache-Control": {"schema": {"type": "string", "const": "private, no-store"}},
}
_ATTACHMENT_PATHS = {
    "/api/v1/conversations/{conversation_id}/attachments": {
        "post": {
            "operationId": "uploadAttachment",
            "summary": "Upload one file for this conversation; its type is read from its content.",
            "description": "multipart/form-data with one file part `file` and, optionally, a text field "
            "`request_id`. Idempotent on the key (`Idempotency-Key` or `request_id`): a retry with the same file "
            "stores nothing and answers the first upload again. The body may be up to ATTACHMENT_MAX_BYTES plus "
            '16 KiB (not MAX_BODY_BYTES). See docs/protocol.md, "Attachments".',
            "security": _BEARER,
            "parameters": [
                _CONVERSATION_ID,
                {
                    "name": "Idempotency-Key",
                    "in": "header",
                    "required": False,
                    "schema": {"type": "string", "pattern": IDEMPOTENCY_KEY_PATTERN},
                },
            ],
            "requestBody": {
                "required": True,
                "content": {
                    "multipart/form-data": {
                        "schema": {
                            "type": "object",
                            "additionalProperties": False,
                            "required": ["file"],
                            "properties": {
                                "file": {"type": "string", "contentMediaType": "application/octet-stream"},
                                "request_id": {"type": "string", "pattern": REQUEST_ID_PATTERN},
                            },
                        },
                        "encoding": {"file": {"contentType": "application/octet-stream"}},
                        "example": {"file": "Error 504 at checkout, 10:42.\n"},
                    }
                },
            },
            "responses": {
                "201": {
                    "description": "Stored (or, for a retry of its idempotency key, stored before).",
                    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Attachment"}}},
                },
                **_attachment_errors(400, 404, 408, 409, 413, 415, 503),
            },
        }
    },
    "/api/v1/conversations/{conversation_id}/attachments/{attachment_id}": {
        "get": {
            "operationId": "downloadAttachment",
            "summary": "The attachment's bytes, exactly as uploaded, with headers that keep them inert.",
            "security": _BEARER,
            "parameters": [_CONVERSATION_ID, _ATTACHMENT_ID],
            "responses": {
                "200": {
                    "description": "The bytes, with the sniffed Content-Type.",
                    "headers": _DOWNLOAD_HEADERS,
                    "content": {media_type: {"schema": {}} for media_type in MEDIA_TYPES.values()},
                },
                **_attachment_errors(404),
            },
        },
        "delete": {
            "operationId": "deleteAttachment",
            "summary": "Remove the attachment; its bytes no longer count against the conversation's budget.",
            "security": _BEARER,
            "parameters": [_CONVERSATION_ID, _ATTACHMENT_ID],
            "responses": {"204": {"description": "Deleted."}, **_attachment_errors(404)},
        },
    },
}


def build_document(server_url: str | None = None) -> dict[str, Any]:
    document: dict[str, Any] = {
        "openapi": "3.2.0",
        "info": {
            "title": "widget_server chat API",
            "version": "1",
            "description": "Wire protocol v1 of widget_server. See docs/protocol.md for the events and their guarantees.",
        },
        "paths": {
            "/healthz": {
                "get": {
                    "operationId": "health",
                    "summary": "Liveness and basic facts.",
                    "responses": {
                        "200": {
                            "description": "The server is up.",
                            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Health"}}},
                        },
                        "503": {
                            "description": "This worker cannot reach its store: route visitors elsewhere.",
                            "headers": {"Retry-After": {"schema": {"type": "string"}}},
                            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Health"}}},
                        },
                    },
                }
            },
            "/metrics": {
                "get": {
                    "operationId": "metrics",
                    "summary": "Prometheus metrics, summed over the server's workers (docs/serving.md#metrics).",
                    "responses": {
                        "200": {
                            "description": "Prometheus text exposition format.",
                            "content": {"text/plain": {"schema": {"type": "string"}}},
                        },
                        "404": _errors(404)["404"],
                    },
                }
            },
            "/api/v1/conversations": {
                "post": {
                    "operationId": "createConversation",
                    "summary": "Start a conversation; returns its id and secret token.",
                    "responses": {
                        "201": {
                            "description": "Created.",
                            "content": {
                                "application/json": {"schema": {"$ref": "#/components/schemas/NewConversation"}}
                            },
                        }
                    },
                }
            },
            "/api/v1/conversations/{conversation_id}": {
                "get": {
                    "operationId": "getConversation",
                    "summary": "The history: user turns and their answers (never failed or cancelled ones).",
                    "security": _BEARER,
                    "parameters": [_CONVERSATION_ID],
                    "responses": {
                        "200": {
                            "description": "The history.",
                            "content": {
                                "application/json": {"schema": {"$ref": "#/components/schemas/ConversationHistory"}}
                            },
                        },
                        **_errors(404, 405),
                    },
                },
                "delete": _DELETE_CONVERSATION,
            },
            "/api/v1/conversations/{conversation_id}/messages": {
                "post": {
                    "operationId": "postMessage",
                    "summary": "Send a user message; the response streams the answer's events from its start.",
                    "description": "Idempotent on request_id: the same id and body again streams the existing answer and starts nothing.",
                    "security": _BEARER,
                    "parameters": [_CONVERSATION_ID, _LAST_EVENT_ID_HEADER],
                    "requestBody": {
                        "required": True,
                        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/NewMessage"}}},
                    },
                    "responses": {"200": _EVENT_STREAM, **_errors(400, 404, 409, 413, 415, 429, 503)},
                }
            },
            "/api/v1/conversations/{conversation_id}/messages/{message_id}": {
                "get": {
                    "operationId": "getMessage",
                    "summary": "A message's state.",
                    "security": _BEARER,
                    "parameters": [_CONVERSATION_ID, _MESSAGE_ID],
                    "responses": {
                        "200": {
                            "description": "The state.",
                            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/MessageState"}}},
                        },
                        **_errors(404, 405),
                    },
                }
            },
            "/api/v1/conversations/{conversation_id}/messages/{message_id}/events": {
                "get": {
                    "operationId": "getMessageEvents",
                    "summary": "Resume a message's event stream after Last-Event-ID (header or query).",
                    "security": [{"bearer": []}, {"queryToken": []}],
                    "parameters": [
                        _CONVERSATION_ID,
                        _MESSAGE_ID,
                        _LAST_EVENT_ID_HEADER,
                        {
                            "name": "last_event_id",
                            "in": "query",
                            "required": False,
                            "description": "Same as the Last-Event-ID header (the header wins).",
                            "schema": _LAST_EVENT_ID_SCHEMA,
                        },
                        {
                            "name": "snapshot",
                            "in": "query",
                            "required": False,
                            "description": "`1` or `true`: start with a message.snapshot of the whole text so far (after a client saw a gap).",
                            "schema": {"type": "string"},
                        },
                    ],
                    "responses": {"200": _EVENT_STREAM, **_errors(400, 404, 429, 503)},
                }
            },
            "/api/v1/conversations/{conversation_id}/messages/{message_id}/cancel": {
                "post": {
                    "operationId": "cancelMessage",
                    "summary": "Stop generating this answer (no effect if it already ended).",
                    "security": _BEARER,
                    "parameters": [_CONVERSATION_ID, _MESSAGE_ID],
                    "responses": {
                        "200": {
                            "description": "The message's state after the request.",
                            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/MessageState"}}},
                        },
                        **_errors(404),
                    },
                }
            },
            "/api/v1/conversations/{conversation_id}/messages/{message_id}/report": {
                "post": {
                    "operationId": "reportMessage",
                    "summary": "What the client repaired on this message's streams (counted at /metrics).",
                    "description": (
                        "One report per message: the first accepted one is counted, later ones get 204 and "
                        "change nothing. Each figure is at most the message's event count so far (its "
                        "last_seq); larger is 422 report_exceeds_message."
                    ),
                    "security": _BEARER,
                    "parameters": [_CONVERSATION_ID, _MESSAGE_ID],
                    "requestBody": {
                        "required": True,
                        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ClientReport"}}},
                    },
                    "responses": {
                        "204": {"description": "Counted, if it is the message's first report; else ignored."},
                        **_errors(400, 404, 413, 415),
                        "422": _error_response(
                            "A figure larger than the message's event count (`report_exceeds_message`); "
                            "nothing counted."
                        ),
                    },
                }
            },
            **_ACTION_PATHS,
            **_FEEDBACK_PATHS,
            **_REVISION_PATHS,
            **_HANDOFF_PATHS,
            **_ATTACHMENT_PATHS,
        },
        "components": {
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer", "description": "The conversation's token."},
                "queryToken": {
                    "type": "apiKey",
                    "in": "query",
                    "name": "token",
                    "description": "For EventSource, which cannot set headers.",
                },
            },
            "schemas": {
                "Error": {
                    "type": "object",
                    "required": ["error"],
                    "properties": {
                        "error": {
                            "type": "object",
                            "required": ["code", "message"],
                            "properties": {
                                # Every code the server sends, from their one registry.
                                "code": {
                                    "enum": sorted([*REGISTRY, HTTP_ERROR_CODE]),
                                    # The same request, unchanged, may succeed later (after Retry-After).
                                    "x-retryable": sorted(code for code, entry in REGISTRY.items() if entry.retryable),
                                },
                                "message": {"type": "string"},
                                "details": {"type": "object"},
                            },
                        }
                    },
                },
                "Health": {
                    "type": "object",
                    "required": ["status"],
                    "properties": {
                        "status": {"enum": ["ok", "unavailable"]},
                        "backend": {"type": "string"},
                        "open_streams": {"type": "integer"},
                        "store": {"enum": ["ok", "unavailable"]},
                    },
                },
                "StreamEvent": _STREAM_EVENT,
                **_EVENT_DATA_SCHEMAS,
                **_RECORD_SCHEMAS,
                **_BODY_SCHEMAS,
                **_HANDOFF_SCHEMAS,
            },
        },
    }
    if server_url:
        document["servers"] = [{"url": server_url}]
    # Every API operation may be refused by a rate limit or an unreachable store.
    for path, operations in document["paths"].items():
        if path.startswith("/api/v1/"):
            for operation in operations.values():
                operation["responses"].setdefault("429", _errors(429)["429"])
                operation["responses"].setdefault("503", _errors(503)["503"])
    return document


@bp.get("/openapi.json")
def openapi_json() -> Response:
    document: dict[str, Any] | None = current_app.extensions.get("widget_server.openapi")
    if document is None:
        # Mounted under a path in a site's app (mount.py), the paths below are under it: a
        # relative server URL is resolved against this document's own (OpenAPI 3.1 §4.8.5).
        document = current_app.extensions["widget_server.openapi"] = build_document(request.script_root or None)
    return jsonify(document)


def init_app(app: Flask) -> None:
    app.register_blueprint(bp)
