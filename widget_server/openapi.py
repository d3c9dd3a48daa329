"""The OpenAPI 3.2 document for wire protocol v1, served at /openapi.json.

Its request bodies and response records are the wire types the routes read and write
(wire/bodies.py, wire/records.py), described by wire/schema.py: a rule is written once, for
the check and the document alike. Its paths are the route table's (wire/routes.py: each
operation's body, answer and registered errors, grouped by the status the registry gives them).
Its events' data are the types of wire/events.py, described the same way. The special answers
(streams, a file) and the parameters are written here.
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

import re
from http import HTTPStatus
from typing import Any

from flask import Blueprint, Flask, Response, current_app, jsonify, request

from .attachments.sniff import MEDIA_TYPES
from .messages import MessageState
from .protocol import EVENT_ID_PATTERN, ID_PATTERN, IDEMPOTENCY_KEY_PATTERN, LAST_EVENT_ID_PATTERN, REQUEST_ID_PATTERN
from .wire import bodies, events, records, routes
from .wire.errors import HTTP_ERROR_CODE, NOT_FOUND, REGISTRY, HttpError
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
    "Satisfaction": records.SatisfactionRecord,
    "HandoffMessageCreated": records.HandoffMessageCreated,
    "LeftMessageCreated": records.LeftMessageCreated,
    "SubjectConversation": records.SubjectConversation,
    "SubjectConversationList": records.SubjectConversationList,
}
_COMPONENT_NAME = {record: name for name, record in _RECORDS.items()}
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
        bodies.GiveSatisfaction,
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


_EVENT_STREAM = {
    "description": (
        "A text/event-stream of this message's events. Each event has `id: <message_id>:<seq>`, "
        "`event:` one of " + ", ".join(events.ANSWER_EVENTS) + ", and one-line JSON `data:`. "
        "The stream starts with a `retry:` field, may carry `: heartbeat` comments, and ends after the "
        "terminal event; a close without one means: resume."
    ),
    "headers": {
        "Cache-Control": {"schema": {"type": "string", "const": "no-store"}},
        "X-Accel-Buffering": {"schema": {"type": "string", "const": "no"}},
    },
    "content": {"text/event-stream": {"itemSchema": {"$ref": "#/components/schemas/StreamEvent"}}},
}


# The JSON in each event's `data`, by event type: the types wire/events.py declares.
def _event_data_schemas(data_types: dict[str, type]) -> dict[str, Any]:
    return {data_type.__name__: json_schema(data_type, _COMPONENT_OF.get) for data_type in data_types.values()}


def _event_with_data(data_types: dict[str, type]) -> list[dict[str, Any]]:
    """For each event type, the schema of its `data`'s JSON (itemSchema of an event stream)."""
    return [
        {
            "if": {"properties": {"event": {"const": kind}}, "required": ["event"]},
            "then": {
                "properties": {
                    "data": {
                        "contentMediaType": "application/json",
                        "contentSchema": {"$ref": f"#/components/schemas/{data_type.__name__}"},
                    }
                }
            },
        }
        for kind, data_type in data_types.items()
    ]


_STREAM_EVENT = {
    "description": "One event of a message's stream, as an EventSource reader dispatches it.",
    "type": "object",
    "required": ["event", "id", "data"],
    "properties": {
        "event": {"enum": list(events.ANSWER_EVENTS)},
        "id": {"type": "string", "pattern": EVENT_ID_PATTERN},
        "data": {"type": "string", "contentMediaType": "application/json"},
        "retry": {"type": "integer", "minimum": 0},
    },
    "allOf": _event_with_data(events.ANSWER_EVENT_DATA),
}

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


# -- hand-off to a person (widget_server/handoff/) ------------------------------------------

_HANDOFF_SCHEMAS: dict[str, Any] = {
    **_event_data_schemas(events.CONVERSATION_EVENT_DATA),
    "ConversationEvent": {
        "description": "One event of a conversation's stream, as an EventSource reader dispatches it.",
        "type": "object",
        "required": ["event", "id", "data"],
        "properties": {
            "event": {"enum": list(events.CONVERSATION_EVENTS)},
            "id": {"type": "string", "pattern": EVENT_ID_PATTERN},
            "data": {"type": "string", "contentMediaType": "application/json"},
            "retry": {"type": "integer", "minimum": 0},
        },
        "allOf": _event_with_data(events.CONVERSATION_EVENT_DATA),
    },
}


_DOWNLOAD_HEADERS = {
    "Content-Disposition": {
        "description": "`inline` for png, jpeg, webp and gif; `attachment` otherwise; with filename and filename*.",
        "schema": {"type": "string", "pattern": '^(inline|attachment); filename="[^"]*"; filename\\*=UTF-8\'\''},
    },
    "X-Content-Type-Options": {"schema": {"type": "string", "const": "nosniff"}},
    "Content-Security-Policy": {"schema": {"type": "string", "const": "sandbox"}},
    "Cache-Control": {"schema": {"type": "string", "const": "private, no-store"}},
}


# -- the paths, from the route table (wire/routes.py) -----------------------------------------

# The conversation's Bearer token (no scopes); a stream's may come as `?token=` instead.
# A known visitor's identity token does for the conversations its subject owns, and is what
# /api/v1/me needs (docs/protocol.md, "Known visitors"); never in the query.
_SECURITY: list[dict[str, list[str]]] = [{"bearer": []}, {"identity": []}]
_STREAM_SECURITY: list[dict[str, list[str]]] = [{"bearer": []}, {"identity": []}, {"queryToken": []}]
_IDENTITY_SECURITY: list[dict[str, list[str]]] = [{"identity": []}]
# The owner dashboard's: an admin agent's session cookie (dashboard/api.py).
_ADMIN_SECURITY: list[dict[str, list[str]]] = [{"agentSession": []}]

# Parameters beyond the path's ids, by the name a route gives them.
_PARAMETERS: dict[str, dict[str, Any]] = {
    "Last-Event-ID": _LAST_EVENT_ID_HEADER,
    "last_event_id": {
        "name": "last_event_id",
        "in": "query",
        "required": False,
        "description": "Same as the Last-Event-ID header (the header wins).",
        "schema": _LAST_EVENT_ID_SCHEMA,
    },
    "snapshot": {
        "name": "snapshot",
        "in": "query",
        "required": False,
        "description": "`1` or `true`: start with a message.snapshot of the whole text so far (after a client saw a gap).",
        "schema": {"type": "string"},
    },
    "Idempotency-Key": {
        "name": "Idempotency-Key",
        "in": "header",
        "required": False,
        "description": "The action's idempotency key (or send it as the body's idempotency_key).",
        "schema": {"type": "string", "pattern": IDEMPOTENCY_KEY_PATTERN},
    },
    "Idempotency-Key of an upload": {
        "name": "Idempotency-Key",
        "in": "header",
        "required": False,
        "schema": {"type": "string", "pattern": IDEMPOTENCY_KEY_PATTERN},
    },
    "Last-Event-ID of the conversation": {
        "name": "Last-Event-ID",
        "in": "header",
        "required": False,
        "description": "`<conversation_id>:<seq>` of the last event the client applied.",
        "schema": _LAST_EVENT_ID_SCHEMA,
    },
    "period": {
        "name": "period",
        "in": "query",
        "required": False,
        "description": "`today` (since 00:00 UTC), `7d` (the default) or `30d`: the last 7·24 or 30·24 hours.",
        "schema": {"type": "string", "enum": ["today", "7d", "30d"]},
    },
    "after": {
        "name": "after",
        "in": "query",
        "required": False,
        "description": "The seq of the last event the client applied (the header wins).",
        "schema": {"type": "string", "pattern": "^(0|[1-9][0-9]{0,9})$"},
    },
}

_SPECIAL_ANSWERS: dict[str, dict[str, Any]] = {
    routes.ANSWER_STREAM: _EVENT_STREAM,
    routes.CONVERSATION_STREAM: {
        "description": "A text/event-stream of the conversation's events; `retry:` first, `: heartbeat` "
        "comments while quiet.",
        "headers": _EVENT_STREAM["headers"],
        "content": {"text/event-stream": {"itemSchema": {"$ref": "#/components/schemas/ConversationEvent"}}},
    },
    routes.JSON_LINES: {
        "description": "JSON Lines: one JSON object a line, each with its `kind` (docs/privacy.md).",
        "content": {"application/x-ndjson": {"itemSchema": {"type": "object", "required": ["kind"]}}},
    },
    routes.DASHBOARD_SUMMARY: {
        "description": 'The period\'s numbers (docs/dashboard.md, "What each number means").',
        "content": {
            "application/json": {
                "schema": {
                    "type": "object",
                    "required": [
                        "period",
                        "from",
                        "to",
                        "conversations",
                        "answers",
                        "time_to_first_delta_ms",
                        "feedback",
                        "handoffs",
                        "satisfaction",
                        "top_questions",
                        "webhooks",
                        "series",
                    ],
                }
            }
        },
    },
    routes.FILE: {
        "description": "The bytes, with the sniffed Content-Type.",
        "headers": _DOWNLOAD_HEADERS,
        "content": {media_type: {"schema": {}} for media_type in MEDIA_TYPES.values()},
    },
}

_UPLOAD_BODY = {
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
}


def _json_content(component: str) -> dict[str, Any]:
    return {"application/json": {"schema": {"$ref": f"#/components/schemas/{component}"}}}


def _error_responses(errors: tuple[HttpError, ...]) -> dict[str, Any]:
    """The route's errors by status, each status naming its codes (wire/errors.py)."""
    by_status: dict[int, list[HttpError]] = {}
    for error in errors:
        by_status.setdefault(error.status, []).append(error)
    return {
        str(status): _error_response(
            f"{HTTPStatus(status).phrase}: " + ", ".join(f"`{error.code}`" for error in found) + ".",
            retry_after=any(error.retryable for error in found),
        )
        for status, found in sorted(by_status.items())
    }


def _operation(route: routes.Route) -> dict[str, Any]:
    answer: dict[str, Any]
    if isinstance(route.answer, str):
        answer = _SPECIAL_ANSWERS[route.answer]
    elif route.answer is not None:
        answer = {"description": route.ok_says, "content": _json_content(_COMPONENT_NAME[route.answer])}
    else:
        answer = {"description": route.ok_says}
    operation: dict[str, Any] = {"operationId": route.operation_id, "summary": route.summary}
    if route.description:
        operation["description"] = route.description
    ids = re.findall(r"\{(\w+)\}", route.path)
    if route.path.startswith(routes.ME):
        operation["security"] = _IDENTITY_SECURITY
    if route.path.startswith(routes.ADMIN):
        operation["security"] = _ADMIN_SECURITY
    if route.parameters and not ids:
        operation["parameters"] = [_PARAMETERS[name] for name in route.parameters]
    if ids:
        operation["security"] = _STREAM_SECURITY if route.query_token else _SECURITY
        operation["parameters"] = [
            *({"name": name, "in": "path", "required": True, "schema": _ID_SCHEMA} for name in ids),
            *(_PARAMETERS[name] for name in route.parameters),
        ]
    if route.body == routes.UPLOAD:
        operation["requestBody"] = _UPLOAD_BODY
    elif isinstance(route.body, type):
        operation["requestBody"] = {"required": route.body_required, "content": _json_content(route.body.__name__)}
    operation["responses"] = {str(route.ok): answer, **_error_responses(route.errors())}
    return operation


def _paths() -> dict[str, Any]:
    paths: dict[str, Any] = {}
    for route in routes.ROUTES:
        paths.setdefault(route.path, {})[route.method] = _operation(route)
    return paths


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
                        **_error_responses((NOT_FOUND,)),
                    },
                }
            },
            **_paths(),
        },
        "components": {
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer", "description": "The conversation's token."},
                "identity": {
                    "type": "http",
                    "scheme": "bearer",
                    "bearerFormat": "JWT",
                    "description": "A known visitor's identity token, signed by the site (docs/protocol.md, "
                    '"Known visitors"): for /api/v1/me, and for the conversations its subject owns.',
                },
                "agentSession": {
                    "type": "apiKey",
                    "in": "cookie",
                    "name": "__Host-agent_session",
                    "description": "An agent's session from signing in at /agent (docs/agents.md); the "
                    "dashboard's routes need an admin's.",
                },
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
                **_event_data_schemas(events.ANSWER_EVENT_DATA),
                **_RECORD_SCHEMAS,
                **_BODY_SCHEMAS,
                **_HANDOFF_SCHEMAS,
            },
        },
    }
    if server_url:
        document["servers"] = [{"url": server_url}]
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
