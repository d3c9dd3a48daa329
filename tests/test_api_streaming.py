"""The streaming core against a live server: exact answers, true streaming, heartbeats, headers.

Every test runs the real app on a loopback socket and reads it with httpx
through the project's standard event-stream parser.
"""

from __future__ import annotations

import itertools
import json
import time

import pytest

from widget_server.sse import EventStreamParser

from .helpers import CountingBackend, assert_digest, assert_sound_events, http_client

SEED_QUESTIONS = [
    pytest.param("improvisation", "question", id="improvisation-question"),
    pytest.param("improvisation", "scenario", id="improvisation-scenario"),
    pytest.param("voicings", "question", id="voicings-question"),
    pytest.param("voicings", "scenario", id="voicings-scenario"),
]


@pytest.mark.parametrize(("seed", "how"), SEED_QUESTIONS)
def test_seed_answer_arrives_exactly(live_server, chat_factory, seed_answers, seed, how):
    """The seed answers arrive character for character, and the completion event proves it."""
    chat = chat_factory(live_server)
    expected = seed_answers[seed]["answer"]
    question = seed_answers[seed]["question"] if how == "question" else f"/scenario {seed}"

    result = chat.send(question, "r-1")

    assert result.status == 200
    seqs = assert_sound_events(result)
    assert seqs[0] == 1
    kinds = result.kinds
    assert kinds[0] == "message.started"
    assert kinds[-1] == "message.completed"
    assert set(kinds[1:-1]) == {"text.delta"}
    assert result.text == expected
    completed = result.payloads[-1]
    assert_digest(completed, result.text)
    assert completed["length"] == len(expected)  # and the digest is of the expected text itself
    # The stream advises a reconnection delay before any event.
    assert result.raw.startswith(b"retry: ")

    # The answer is also what history keeps.
    history = chat.history().json()["messages"]
    assert [m["role"] for m in history] == ["user", "assistant"]
    assert history[0]["text"] == question
    assert history[1] == {
        "message_id": result.message_id,
        "role": "assistant",
        "text": expected,
        "state": "completed",
        "feedback": None,  # nobody rated it (tests/test_api_feedback.py)
    }


def test_answer_with_unicode_and_blank_lines_arrives_exactly(live_server, chat_factory):
    """Multi-byte characters, line ends, tabs and blank lines survive the wire (digest over UTF-8).

    The question's CRLF and bare CR reach the backend as LF (a typed text is cleaned:
    docs/protocol.md, "Conventions"), so the echo holds LF only; an answer's own CR arrives
    exactly (tests/test_messages.py, test_cr_and_crlf_are_kept_in_text_and_digest)."""
    chat = chat_factory(live_server)
    text = "Ünïcödé — 🎸 chords\n\nline after a blank line\r\nCRLF line\rCR line\n\n\n  indented\ttab"
    result = chat.send(f"/echo {text}", "r-echo")
    assert result.status == 200
    assert_sound_events(result)
    assert result.kinds[-1] == "message.completed"
    echoed = "Ünïcödé — 🎸 chords\n\nline after a blank line\nCRLF line\nCR line\n\n\n  indented\ttab"
    assert result.text == echoed
    assert_digest(result.payloads[-1], echoed)


def test_first_delta_arrives_long_before_completion(live_server_factory, chat_factory, seed_answers):
    """True streaming: the first words reach the client while the server is still generating.

    Arrival times are taken with time.monotonic as each event is parsed. A
    server (or proxy) that buffered the answer would deliver every event at
    about the same moment; here the first delta must precede the completion
    by at least three pace intervals, and when it arrives the server must
    still report the message as running.
    """
    pace = 0.3
    server = live_server_factory(DEMO_DELAY_SECONDS=pace)
    chat = chat_factory(server)
    arrivals: list[tuple[float, str, dict]] = []
    state_at_first_delta: dict | None = None

    def on_event(event) -> None:
        arrivals.append((time.monotonic(), event.event, json.loads(event.data)))

    parser = EventStreamParser(on_event)
    with chat.http.stream(
        "POST",
        chat.messages_url(),
        json={"request_id": "r-stream", "text": "/scenario improvisation"},
        headers=chat.auth,
    ) as response:
        assert response.status_code == 200
        for chunk in response.iter_raw():
            parser.feed(chunk)
            if state_at_first_delta is None and any(kind == "text.delta" for _, kind, _ in arrivals):
                message_id = arrivals[0][2]["message_id"]
                state_at_first_delta = chat.http.get(f"{chat.messages_url()}/{message_id}", headers=chat.auth).json()
        parser.end()

    kinds = [kind for _, kind, _ in arrivals]
    assert kinds[-1] == "message.completed"
    deltas = [(t, data) for t, kind, data in arrivals if kind == "text.delta"]
    assert len(deltas) >= 4
    assert "".join(data["text"] for _, data in deltas) == seed_answers["improvisation"]["answer"]

    first_delta_at = deltas[0][0]
    completed_at = arrivals[-1][0]
    # The backend sleeps `pace` between chunks, so len(deltas)-1 intervals
    # separate the first chunk from the last; allow generous slack.
    assert completed_at - first_delta_at >= 3 * pace - 0.1
    # Deltas arrive spread out, one by one, not in a burst.
    gaps = [b[0] - a[0] for a, b in itertools.pairwise(deltas)]
    assert sum(gap >= pace / 2 for gap in gaps) >= len(gaps) - 1
    # When the first words were on screen, the answer was not finished yet.
    assert state_at_first_delta is not None
    assert state_at_first_delta["state"] == "running"
    assert state_at_first_delta["last_seq"] < arrivals[-1][2]["seq"]


def test_heartbeats_keep_an_idle_stream_alive_without_changing_the_text(live_server_factory, chat_factory, monkeypatch):
    """Idle for over a second between sentences: on Redis that is longer than the store's read
    timeout (0.3 s here), which the worker's silent Pub/Sub subscriber outlasts with a PING
    (tests/test_redis_tail.py) instead of ending the stream as `store_unavailable`."""
    from widget_server.backends.demo import SLOW_ANSWER
    from widget_server.stores import redis_connection

    monkeypatch.setattr(redis_connection, "COMMAND_TIMEOUT_SECONDS", 0.3)
    server = live_server_factory(HEARTBEAT_SECONDS=0.2)
    chat = chat_factory(server)
    result = chat.send("/scenario slow", "r-slow")

    assert result.status == 200
    lines = result.raw.decode("utf-8").splitlines()
    heartbeats = [line for line in lines if line == ": heartbeat"]
    # At least a second passes between sentences, so several heartbeats are due.
    assert len(heartbeats) >= 4
    assert_sound_events(result)
    assert result.kinds[-1] == "message.completed"
    assert result.text == SLOW_ANSWER
    assert_digest(result.payloads[-1], SLOW_ANSWER)


@pytest.mark.parametrize("method", ["POST", "GET"])
def test_stream_headers_forbid_caching_buffering_and_compression(live_server, chat_factory, method):
    chat = chat_factory(live_server)
    headers = {"Accept-Encoding": "gzip, deflate, br"}
    if method == "POST":
        result = chat.send("/scenario voicings", "r-h", headers=headers)
    else:
        first = chat.send("/scenario voicings", "r-h")
        result = chat.stream("GET", chat.events_url(first.message_id), headers=headers)
    assert result.status == 200
    assert result.headers["content-type"].startswith("text/event-stream")
    assert result.headers["cache-control"] == "no-store"
    assert result.headers["x-accel-buffering"] == "no"
    assert result.headers.get("content-encoding", "identity") == "identity"
    assert "content-length" not in result.headers
    # The bytes on the wire are the event stream itself, not a gzip member.
    assert not result.raw.startswith(b"\x1f\x8b")
    assert result.raw.startswith(b"retry: ")
    assert result.kinds[-1] == "message.completed"


def test_backend_runs_once_per_answer_and_sees_the_text(live_server, chat_factory):
    counting = CountingBackend(live_server.service.backend)
    live_server.service.backend = counting
    chat = chat_factory(live_server)
    result = chat.send("/echo hello there", "r-1")
    assert result.text == "hello there"
    assert counting.calls == 1
    assert counting.turns[-1].text == "/echo hello there"
    assert counting.turns[-1].message_id == result.message_id
    assert counting.turns[-1].conversation_id == chat.conversation_id


def test_raw_client_without_helper_reads_the_same_stream(live_server, chat_factory, seed_answers):
    """A plain httpx request (no helper) gets a parseable stream: nothing depends on our client."""
    chat = chat_factory(live_server)
    with http_client(base_url=live_server.url, timeout=10) as http:
        response = http.post(
            chat.messages_url(),
            json={"request_id": "r-raw", "text": seed_answers["voicings"]["question"]},
            headers=chat.auth,
        )
    assert response.status_code == 200
    events = []
    parser = EventStreamParser(events.append)
    parser.feed(response.content)
    parser.end()
    text = "".join(json.loads(e.data)["text"] for e in events if e.event == "text.delta")
    assert text == seed_answers["voicings"]["answer"]


def test_json_responses_are_not_cacheable(live_server, chat_factory):
    """The token, the history and message states are private: every API response says no-store."""
    with http_client(base_url=live_server.url) as http:
        created = http.post("/api/v1/conversations")
    assert created.status_code == 201
    assert created.headers["cache-control"] == "no-store"
    chat = chat_factory(live_server)
    mid = chat.send("/echo hi", "r-1").message_id
    for response in (
        chat.history(),
        chat.http.get(f"{chat.messages_url()}/{mid}", headers=chat.auth),
        chat.cancel(mid),
    ):
        assert response.status_code == 200
        assert response.headers["cache-control"] == "no-store"
