"""Resuming a stream: after a drop at any position, by header or query, after eviction.

A TCP close is never completion: the answer keeps generating in the
background, and a reader that comes back with the id of the last event it
saw gets exactly the rest, with no gap and no duplicate.
"""

from __future__ import annotations

import httpx
import pytest

from widget_server.backends.demo import LONG_MARKDOWN
from widget_server.sse import EventStreamParser

from .helpers import (
    CountingBackend,
    StreamResult,
    assert_digest,
    assert_json_error,
    assert_sound_events,
    http_client,
    wait_until,
)


def test_resume_after_a_drop_at_every_position(live_server_factory, chat_factory, seed_answers):
    """Drop after event k for every k, resume with Last-Event-ID: the text is exact, seqs 1..N once each."""
    server = live_server_factory(DEMO_DELAY_SECONDS=0.02)
    expected = seed_answers["improvisation"]["answer"]
    reference = chat_factory(server).send("/scenario improvisation", "r-ref")
    total = len(reference.events)
    assert reference.text == expected and total >= 5

    for k in range(1, total):
        chat = chat_factory(server)  # a fresh conversation: dropped streams may hold a slot a moment
        first = chat.send("/scenario improvisation", f"r-{k}", max_events=k)
        assert len(first.events) == k, k
        assert_sound_events(first)
        last_id = first.events[-1].id
        assert last_id == f"{first.message_id}:{k}"

        rest = chat.resume(first.message_id, last_id)

        assert rest.status == 200, (k, rest.json)
        assert_sound_events(rest, first.message_id)
        assert rest.payloads[0]["seq"] == k + 1, k
        seqs = [p["seq"] for p in first.payloads + rest.payloads]
        assert seqs == list(range(1, total + 1)), (k, seqs)
        assert rest.kinds[-1] == "message.completed", k
        text = first.text + rest.text
        assert text == expected, k
        assert_digest(rest.payloads[-1], text)


def _raw_get(url: str, path: str, **params: str) -> tuple[httpx.Response, list]:
    """A GET with no Authorization header at all, as EventSource makes it."""
    events: list = []
    parser = EventStreamParser(events.append)
    with http_client(base_url=url, timeout=10) as http:
        response = http.get(path, params=params)
        assert "authorization" not in {k.lower() for k in response.request.headers}
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            parser.feed(response.content)
            parser.end()
    return response, events


def test_resume_by_query_parameters_without_authorization_header(live_server_factory, chat_factory, seed_answers):
    """EventSource cannot set headers: ?last_event_id= and ?token= do the same job."""
    server = live_server_factory(DEMO_DELAY_SECONDS=0.02)
    chat = chat_factory(server)
    expected = seed_answers["improvisation"]["answer"]
    first = chat.send("/scenario improvisation", "r-q", max_events=3)
    path = chat.events_url(first.message_id)

    response, events = _raw_get(server.url, path, last_event_id=first.events[-1].id, token=chat.token)

    assert response.status_code == 200
    rest = StreamResult(200, dict(response.headers), events)
    assert_sound_events(rest, first.message_id)
    assert rest.payloads[0]["seq"] == 4
    assert rest.kinds[-1] == "message.completed"
    assert first.text + rest.text == expected
    assert_digest(rest.payloads[-1], expected)

    # The query token is what authorized it: without it, or with a wrong one, 404.
    missing, _ = _raw_get(server.url, path, last_event_id=first.events[-1].id)
    wrong, _ = _raw_get(server.url, path, last_event_id=first.events[-1].id, token="not-the-token")
    assert_json_error(missing, 404, "not_found")
    assert_json_error(wrong, 404, "not_found")
    assert missing.json() == wrong.json()


def test_header_last_event_id_wins_over_query(live_server, chat_factory):
    chat = chat_factory(live_server)
    first = chat.send("/scenario improvisation", "r-1")
    mid = first.message_id
    rest = chat.stream(
        "GET", chat.events_url(mid), headers={"Last-Event-ID": f"{mid}:5"}, params={"last_event_id": f"{mid}:2"}
    )
    assert rest.payloads[0]["seq"] == 6


def test_resume_without_position_replays_everything(live_server, chat_factory, seed_answers):
    chat = chat_factory(live_server)
    first = chat.send("/scenario improvisation", "r-1")
    again = chat.resume(first.message_id, None)
    assert again.status == 200
    assert [e.id for e in again.events] == [e.id for e in first.events]
    assert again.payloads == first.payloads
    assert again.text == seed_answers["improvisation"]["answer"]


@pytest.mark.parametrize("ending", ["improvisation", "fail-provider"])
def test_resume_at_the_terminal_event_ends_at_once(live_server_factory, chat_factory, ending):
    """A reader that already has the terminal event gets an empty stream that ends.

    (It used to get heartbeats forever, holding a stream slot.) The stream
    is read with a fast heartbeat, and reading stops with a failure after a
    few heartbeats, so a regression fails instead of hanging.
    """
    server = live_server_factory(HEARTBEAT_SECONDS=0.05)
    chat = chat_factory(server)
    first = chat.send(f"/scenario {ending}", "r-1")
    assert first.kinds[-1] in ("message.completed", "message.failed")
    raw = b""
    with chat.http.stream(
        "GET", chat.events_url(first.message_id), headers={**chat.auth, "Last-Event-ID": first.events[-1].id}
    ) as response:
        assert response.status_code == 200
        for chunk in response.iter_raw():
            raw += chunk
            assert raw.count(b": heartbeat") < 3, "the stream of an ended message does not end"
    assert raw == b"retry: 2000\n\n"
    assert wait_until(lambda: server.service.open_streams == 0)


def test_resume_after_eviction_starts_with_a_snapshot(live_server_factory, chat_factory):
    """With only 2 events kept, an early position gets a snapshot (a prefix), then the rest.

    The reader follows a running answer, so if it falls behind by more than
    2 events (a loaded machine) it may get a further snapshot mid-stream;
    that is the protocol, and the text must still come out exact.
    """
    server = live_server_factory(LOG_MAX_EVENTS=2, DEMO_DELAY_SECONDS=0.001)
    chat = chat_factory(server)
    # Only the message id matters here; under load even this first event may be a snapshot.
    mid = chat.send("/scenario markdown", "r-md", max_events=1).message_id
    # Wait until position 1 is certainly evicted (more than 2 events later).
    assert wait_until(lambda: chat.http.get(f"{chat.messages_url()}/{mid}", headers=chat.auth).json()["last_seq"] > 5)

    rest = chat.resume(mid, f"{mid}:1")

    assert rest.status == 200
    assert rest.kinds[0] == "message.snapshot"
    snapshot = rest.payloads[0]
    assert snapshot["seq"] > 5
    assert snapshot["state"] == "running"
    assert snapshot["text"] and LONG_MARKDOWN.startswith(snapshot["text"])
    # After the snapshot: only events newer than it, in order, to the end.
    seqs = assert_sound_events(rest, mid, allow_snapshots=True)
    assert seqs[0] == snapshot["seq"]
    assert rest.kinds[-1] == "message.completed"
    assert rest.text == LONG_MARKDOWN
    assert_digest(rest.payloads[-1], LONG_MARKDOWN)
    # Each later snapshot, if any, is a longer prefix of the same answer.
    snapshots = [p["text"] for kind, p in zip(rest.kinds, rest.payloads, strict=True) if kind == "message.snapshot"]
    assert all(LONG_MARKDOWN.startswith(text) for text in snapshots)
    assert [len(text) for text in snapshots] == sorted(len(text) for text in snapshots)


def test_resume_after_eviction_of_a_finished_answer(live_server_factory, chat_factory):
    """A late reader of a finished, evicted answer gets the snapshot of the whole text and the ending."""
    server = live_server_factory(LOG_MAX_EVENTS=2)
    chat = chat_factory(server)
    first = chat.send("/scenario markdown", "r-md", max_events=1)
    mid = first.message_id
    assert wait_until(
        lambda: chat.http.get(f"{chat.messages_url()}/{mid}", headers=chat.auth).json()["state"] == "completed"
    )

    rest = chat.resume(mid, f"{mid}:1")

    assert rest.kinds == ["message.snapshot", "message.completed"]
    assert rest.payloads[0]["text"] == LONG_MARKDOWN
    assert_sound_events(rest, mid)
    assert rest.text == LONG_MARKDOWN
    assert_digest(rest.payloads[-1], LONG_MARKDOWN)


def test_disconnect_does_not_stop_generation(live_server_factory, chat_factory, seed_answers):
    """Reading one event then dropping does not cancel: the answer completes and resumes exactly."""
    pace = 0.1
    server = live_server_factory(DEMO_DELAY_SECONDS=pace)
    counting = CountingBackend(server.service.backend)
    server.service.backend = counting
    chat = chat_factory(server)
    first = chat.send("/scenario improvisation", "r-drop", max_events=1)
    mid = first.message_id
    state = lambda: chat.http.get(f"{chat.messages_url()}/{mid}", headers=chat.auth).json()  # noqa: E731
    # Just after the drop the answer is still being generated...
    assert state()["state"] in ("accepted", "running")
    # ...and it finishes on its own, with nobody reading.
    assert wait_until(lambda: state()["state"] == "completed", timeout=10)
    assert counting.calls == 1

    rest = chat.resume(mid, first.events[-1].id)

    assert rest.status == 200
    assert rest.payloads[0]["seq"] == 2
    assert_sound_events(rest, mid)
    assert rest.kinds[-1] == "message.completed"
    assert first.text + rest.text == seed_answers["improvisation"]["answer"]
    assert_digest(rest.payloads[-1], seed_answers["improvisation"]["answer"])
    assert counting.calls == 1  # resuming replays the log; it never runs the backend again
    history = chat.history().json()["messages"]
    assert history[-1]["text"] == seed_answers["improvisation"]["answer"]


def test_resumed_stream_follows_a_running_answer_live(live_server_factory, chat_factory, seed_answers):
    server = live_server_factory(DEMO_DELAY_SECONDS=0.1)
    chat = chat_factory(server)
    first = chat.send("/scenario improvisation", "r-live", max_events=2)
    mid = first.message_id
    running = chat.http.get(f"{chat.messages_url()}/{mid}", headers=chat.auth).json()
    assert running["state"] == "running"

    rest = chat.resume(mid, first.events[-1].id)

    seqs = assert_sound_events(rest, mid)
    assert seqs[0] == 3
    assert seqs[-1] > running["last_seq"]  # it waited for events that did not exist when it connected
    assert rest.kinds[-1] == "message.completed"
    assert first.text + rest.text == seed_answers["improvisation"]["answer"]
