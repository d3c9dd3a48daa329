"""The event types, declared once (widget_server/wire/events.py) from where they are made, and
docs/protocol.md's two event tables held to that declaration in both directions: every declared
event has a row, and every row is a declared event of that stream."""

from __future__ import annotations

import re

import pytest

from widget_server.handoff import events as conversation
from widget_server.messages import TERMINAL_STATES, EventKind, MessageState
from widget_server.wire import events

from .helpers import REPO_ROOT

PROTOCOL = REPO_ROOT / "docs" / "protocol.md"
# A row of an event table: `| `text.delta` | …`.
EVENT_ROW = re.compile(r"^\| *`([a-z_]+(?:\.[a-z_]+)+)` *\|", re.MULTILINE)
# Each stream's table, by the heading of its section in docs/protocol.md.
TABLES = {"### Events": events.ANSWER_EVENTS, "### The conversation event stream": events.CONVERSATION_EVENTS}


def section(text: str, heading: str) -> str:
    """The text under `heading`, up to the next heading of any level."""
    start = text.index(f"\n{heading}\n") + len(heading) + 2
    following = re.search(r"^#{1,6} ", text[start:], re.MULTILINE)
    return text[start : start + following.start()] if following else text[start:]


def documented_events(heading: str) -> list[str]:
    return EVENT_ROW.findall(section(PROTOCOL.read_text(encoding="utf-8"), heading))


def test_the_declaration_is_the_one_the_events_are_made_from():
    assert tuple(kind.value for kind in EventKind) == events.ANSWER_EVENTS
    assert events.CONVERSATION_EVENTS is conversation.ALL_TYPES
    assert tuple(state.value for state in MessageState) == events.MESSAGE_STATES
    assert set(events.TERMINAL_MESSAGE_STATES) == {state.value for state in TERMINAL_STATES}
    assert events.TERMINAL_MESSAGE_STATES == ("completed", "cancelled", "failed")


def test_each_list_names_each_event_once_and_no_event_is_in_both_streams():
    for declared in (events.ANSWER_EVENTS, events.CONVERSATION_EVENTS, events.MESSAGE_STATES):
        assert len(set(declared)) == len(declared), declared
    assert not set(events.ANSWER_EVENTS) & set(events.CONVERSATION_EVENTS)
    assert {"text.delta", "message.completed"} <= set(events.ANSWER_EVENTS)
    assert {"handoff.queued", "conversation.snapshot"} <= set(events.CONVERSATION_EVENTS)


def test_the_table_reader_finds_rows_only_in_its_section():
    text = (
        "## A\n\n### Events\n\n| `event` | x |\n| --- | --- |\n| `a.one` | … |\n| `a.two` | … |\n\n"
        "## B\n\n| `b.three` | … |\n"
    )
    assert EVENT_ROW.findall(section(text, "### Events")) == ["a.one", "a.two"]
    assert EVENT_ROW.findall(section(text, "## B")) == ["b.three"]


@pytest.mark.parametrize("heading", sorted(TABLES))
def test_every_documented_event_is_declared_for_its_stream(heading):
    rows = documented_events(heading)
    assert len(rows) == len(set(rows)), f"docs/protocol.md's {heading!r} table has a row twice: {rows}"
    undeclared = [name for name in rows if name not in TABLES[heading]]
    assert undeclared == [], f"docs/protocol.md's {heading!r} table names events the server does not send"


@pytest.mark.parametrize(
    "heading,name", [(heading, name) for heading, declared in sorted(TABLES.items()) for name in declared]
)
def test_every_declared_event_has_a_row_in_its_streams_table(heading, name):
    assert name in documented_events(heading), f"docs/protocol.md's {heading!r} table has no row for `{name}`"
