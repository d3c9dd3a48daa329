"""Fault injection (tests and QA only) and the snapshot a client asks for after a gap."""

from __future__ import annotations

import pytest

from widget_server import create_app
from widget_server.settings import ConfigError

QUESTION = "which arpeggio fits Am F C G"


@pytest.fixture
def faulty(live_server_factory, chat_factory):
    return chat_factory(live_server_factory(FAULTS=True))


def seqs(result):
    return [payload["seq"] for payload in result.payloads]


def test_faults_are_refused_unless_enabled(live_server, chat_factory):
    chat = chat_factory(live_server)
    result = chat.send(QUESTION, "r1", headers={"X-Chat-Faults": "drop-after=2"})
    assert result.status == 403
    assert result.json["error"]["code"] == "faults_disabled"
    assert chat.history().json()["messages"] == []  # refused before anything started


def test_production_refuses_to_start_with_faults():
    with pytest.raises(ConfigError, match="FAULTS"):
        create_app({"ENV": "production", "FAULTS": True}, environ={})


def test_a_malformed_fault_is_a_clear_400(faulty):
    result = faulty.send(QUESTION, "r1", headers={"X-Chat-Faults": "explode=1"})
    assert result.status == 400
    assert result.json["error"]["code"] == "invalid_faults"


def test_drop_after_cuts_the_first_stream_without_a_terminal_event(faulty, seed_answers):
    first = faulty.send(QUESTION, "r1", headers={"X-Chat-Faults": "drop-after=3"})
    assert seqs(first) == [1, 2, 3]
    assert not any(kind.startswith("message.completed") for kind in first.kinds)
    rest = faulty.resume(first.message_id, first.events[-1].id)
    assert seqs(rest) == [4, 5, 6, 7]
    assert first.text + rest.text == seed_answers["improvisation"]["answer"]


def test_duplicate_sends_one_event_twice(faulty, seed_answers):
    result = faulty.send(QUESTION, "r1", headers={"X-Chat-Faults": "duplicate=3"})
    assert seqs(result) == [1, 2, 3, 3, 4, 5, 6, 7]


def test_skip_leaves_a_gap_that_a_snapshot_repairs(faulty, seed_answers):
    answer = seed_answers["improvisation"]["answer"]
    result = faulty.send(QUESTION, "r1", headers={"X-Chat-Faults": "skip=3"})
    assert seqs(result) == [1, 2, 4, 5, 6, 7]
    # The client saw 2 then 4: it asks for a snapshot from its last good position.
    repaired = faulty.stream(
        "GET", faulty.events_url(result.message_id) + "?snapshot=1", headers={"Last-Event-ID": result.events[1].id}
    )
    assert repaired.kinds == ["message.snapshot", "message.completed"]
    assert repaired.payloads[0]["text"] == answer
    assert repaired.payloads[0]["seq"] == 6


def test_snapshot_fault_starts_a_resume_with_a_snapshot(faulty, seed_answers):
    first = faulty.send(QUESTION, "r1", max_events=2)
    resumed = faulty.stream(
        "GET",
        faulty.events_url(first.message_id),
        headers={"Last-Event-ID": first.events[-1].id, "X-Chat-Faults": "snapshot"},
    )
    assert resumed.kinds[0] == "message.snapshot"
    assert resumed.text == seed_answers["improvisation"]["answer"]
