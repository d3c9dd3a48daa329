"""The hand-off store's records are exactly the TypedDicts handoff/store.py declares: every key
the service writes is declared, every required key is written, on the memory store and on
Redis (whose JSON is the same). mypy checks the service against the declarations; this checks
the declarations against what is really stored, after every kind of transition."""

from __future__ import annotations

import typing
from typing import Any

import pytest

from widget_server.handoff.store import (
    DESK,
    Claim,
    DeskRecord,
    HandoffMessageRecord,
    HandoffRecord,
    KnownRequest,
    LeftMessageRecord,
    QueueEntry,
    conversation_key,
    left_key,
)

from .handoff_support import handoff_services


@pytest.fixture(params=["memory", "redis"])
def make_service(request):
    with handoff_services(request, request.param) as make:
        yield make


def assert_shape(value: Any, shape: type) -> None:
    """`value` has every required key of the TypedDict `shape` and no undeclared one."""
    assert isinstance(value, dict)
    # Read from the annotations: under `from __future__ import annotations` Python 3.11's
    # __required_keys__ does not see NotRequired.
    hints = typing.get_type_hints(shape, include_extras=True)
    optional = {key for key, hint in hints.items() if typing.get_origin(hint) is typing.NotRequired}
    if not getattr(shape, "__total__", True):
        optional = set(hints)
    required = hints.keys() - optional
    assert required <= value.keys(), (shape.__name__, required - value.keys())
    assert value.keys() <= hints.keys(), (shape.__name__, value.keys() - hints.keys())
    for key, hint in typing.get_type_hints(shape).items():
        if key in value and typing.is_typeddict(hint):
            assert_shape(value[key], hint)


def test_every_stored_record_has_its_declared_shape(make_service):
    service, chat = make_service()
    service.agent_seen("ana")
    waiting, held, left_in = (chat.create_conversation()[0] for _ in range(3))
    service.request(waiting, "r")
    service.request(held, "r")
    service.claim(held, "ana", "Ana")
    service.visitor_message(held, "v", "Hello")
    service.agent_message(held, "ana", "a", "Hi there")
    service.typing(held, "ana")
    left = service.leave_message(left_in, "l", "visitor@example.com", "Call me")
    service.reply_to_left(left["left_message_id"], "ana", "Ana", "p", "We will.")

    names = [conversation_key(cid) for cid in (waiting, held, left_in)]
    records = service.store.load([*names, DESK, left_key(left["left_message_id"])])
    for name in names:
        record = records[name][1]
        assert_shape(record, HandoffRecord)
        for message in record["messages"]:
            assert_shape(message, HandoffMessageRecord)
        for known in record["requests"].values():
            assert_shape(known, KnownRequest)
    assert {message["role"] for message in records[conversation_key(held)][1]["messages"]} == {"visitor", "agent"}
    assert "left" in records[conversation_key(left_in)][1]  # the optional key, once written
    desk = records[DESK][1]
    assert_shape(desk, DeskRecord)
    assert [entry["conversation_id"] for entry in desk["queue"]] == [waiting]
    for entry in desk["queue"]:
        assert_shape(entry, QueueEntry)
    for claim in desk["assigned"].values():
        assert_shape(claim, Claim)
    assert_shape(records[left_key(left["left_message_id"])][1], LeftMessageRecord)
