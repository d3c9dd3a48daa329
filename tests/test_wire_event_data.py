"""Each event's data type (widget_server/wire/events.py) agrees with what the server sends: a
real answer of every ending and a real hand-off run through the Flask test client, their event
streams parsed, and each event's data validated against the schema openapi.py generates from
its type, with no field the type does not declare. tests/test_openapi_schemathesis.py checks
the live streams against the same document."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import jsonschema_rs
import pytest

from widget_server.app import create_app
from widget_server.handoff.service import HandoffService
from widget_server.messages import MessageLog
from widget_server.openapi import build_document
from widget_server.services import SERVICES_KEY
from widget_server.sse import parse_stream
from widget_server.wire import events

from .conftest import TEST_CONFIG

DOCUMENT = build_document()


def check(data_types: dict[str, type], kind: str, data: dict[str, Any]) -> None:
    """`data`, sent as a `kind` event, is valid for its type's schema and says nothing undeclared."""
    data_type = data_types[kind]
    schema = {"$ref": f"#/components/schemas/{data_type.__name__}", "components": DOCUMENT["components"]}
    jsonschema_rs.Draft202012Validator(schema, validate_formats=True).validate(data)
    declared = {field.name for field in dataclasses.fields(data_type)}
    assert data.keys() <= declared, (kind, data.keys() - declared)


def stream_events(response: Any) -> list[tuple[str, dict[str, Any]]]:
    return [(event.event, json.loads(event.data)) for event in parse_stream([response.get_data()])]


def test_every_event_type_has_a_data_type():
    assert tuple(events.ANSWER_EVENT_DATA) == events.ANSWER_EVENTS
    assert tuple(events.CONVERSATION_EVENT_DATA) == events.CONVERSATION_EVENTS


def test_a_schema_refuses_what_the_server_never_sends():
    with pytest.raises(jsonschema_rs.ValidationError):
        check(events.ANSWER_EVENT_DATA, "message.cancelled", {"message_id": "m_1", "seq": 2, "length": 3})
    with pytest.raises(AssertionError):
        check(events.ANSWER_EVENT_DATA, "message.started", {"message_id": "m_1", "seq": 1, "text": "x"})


def answer(client: Any, conversation: dict[str, str], text: str, request_id: str) -> list[tuple[str, dict]]:
    response = client.post(
        f"/api/v1/conversations/{conversation['conversation_id']}/messages",
        json={"request_id": request_id, "text": text},
        headers={"Authorization": f"Bearer {conversation['token']}"},
    )
    assert response.status_code == 200
    return stream_events(response)


def test_an_answers_events_have_their_declared_data(client):
    conversation = client.post("/api/v1/conversations").get_json()
    seen: list[tuple[str, dict]] = []
    seen += answer(client, conversation, "Hello", "r_plain")
    seen += answer(client, conversation, "/scenario action", "r_action")
    seen += answer(client, conversation, "/scenario fail-provider", "r_fail")
    sources = answer(client, conversation, "/scenario sources", "r_sources")  # a progress line, sources
    assert "sources" in sources[-1][1] and any(kind == "message.progress" for kind, _ in sources)
    seen += sources
    # A snapshot and a cancel: the answer's log as the generation writes it (messages.MessageLog).
    log = MessageLog("m_cancelled", max_events=10)
    log.start()
    log.add_text("Half")
    seen += [(event.event, json.loads(event.data)) for event in parse_stream([log.snapshot().encode()])]
    seen += [(event.event, json.loads(event.data)) for event in parse_stream([log.cancel().encode()])]
    for kind, data in seen:
        check(events.ANSWER_EVENT_DATA, kind, data)
    assert {kind for kind, _ in seen} == set(events.ANSWER_EVENTS)


def test_a_hand_offs_events_have_their_declared_data():
    app = create_app({**TEST_CONFIG, "HANDOFF": "on", "CONVERSATION_EVENTS_MAX": 4}, environ={})
    client = app.test_client()
    handoff: HandoffService = app.extensions[SERVICES_KEY].handoff
    alone = client.post("/api/v1/conversations").get_json()
    conversation = client.post("/api/v1/conversations").get_json()

    def visitor(of: dict[str, str], path: str, body: dict[str, object]) -> None:
        response = client.post(
            f"/api/v1/conversations/{of['conversation_id']}{path}",
            json=body,
            headers={"Authorization": f"Bearer {of['token']}"},
        )
        assert response.status_code in (200, 201), response.get_json()

    def read(of: dict[str, str], after: int) -> list[tuple[str, dict]]:
        response = client.get(
            f"/api/v1/conversations/{of['conversation_id']}/events?after={after}",
            headers={"Authorization": f"Bearer {of['token']}"},
        )
        assert response.status_code == 200
        return stream_events(response)

    visitor(alone, "/handoff", {"request_id": "r_alone"})  # nobody present: unavailable
    seen = read(alone, 0)
    handoff.agent_seen("ana")
    visitor(conversation, "/handoff", {"request_id": "r_ask"})
    cid = conversation["conversation_id"]
    handoff.claim(cid, "ana", "Ana")
    visitor(conversation, "/handoff/messages", {"request_id": "r_hello", "text": "Hello?"})
    handoff.typing(cid, "ana")
    handoff.agent_message(cid, "ana", "r_reply", "Hi, Ana here.")
    handoff.end(cid, "ana")
    seen += read(conversation, 2)  # the message, typing, the reply, the end
    visitor(conversation, "/handoff", {"request_id": "r_again"})
    handoff.claim(cid, "ana", "Ana")
    handoff.end(cid, "ana", "returned")
    visitor(conversation, "/satisfaction", {"handoff": 9, "rating": 4, "comment": "Quick, thanks."})
    seen += read(conversation, 6)  # queued, assigned, ended, satisfaction
    seen += read(conversation, 0)  # the first events are gone (CONVERSATION_EVENTS_MAX): a snapshot
    for kind, data in seen:
        check(events.CONVERSATION_EVENT_DATA, kind, data)
    kinds = {kind for kind, _ in seen}
    assert kinds == set(events.CONVERSATION_EVENTS), kinds
