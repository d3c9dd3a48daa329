"""A queued visitor must be there: with no conversation stream open for
HANDOFF_QUEUE_IDLE_SECONDS, their conversation leaves the queue (docs/protocol.md, "Bounds of
the hand-off"; docs/security.md, "Memory"; HandoffService.release_lapsed).

Placeholder hand-offs (requested, no stream ever opened: a script's, a closed tab's) leave the
queue once idle, with `handoff.ended` reason `idle`, and the visitors behind move up; a
visitor whose stream is open stays, however long; an agent's stream does not count for the
visitor; a visitor back between the look and the transaction stays; a queue that placeholders
filled to HANDOFF_QUEUE_MAX takes a real visitor again once they idle out. On the memory
store, one redis-server and a Redis Cluster, with a short idle time (never long sleeps).

Before, a queued hand-off stayed until claimed or cancelled: HANDOFF_QUEUE_MAX placeholder
requests kept every real visitor out (`busy`) for as long as the conversations lived.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from widget_server.chat.service import ChatService
from widget_server.handoff import events as ev
from widget_server.handoff.service import HandoffService

from ..handoff_support import MakeServices, handoff_services
from ..helpers import wait_until

# Short enough for a test, long enough that an open stream (marking every quarter of it)
# is never taken for gone on a busy machine.
IDLE = 0.8


@pytest.fixture(params=["memory", "redis", "cluster"])
def make(request) -> Iterator[MakeServices]:
    """make(**settings) → (HandoffService, ChatService) on this test's store, an agent present."""
    with handoff_services(request, request.param, HANDOFF_QUEUE_IDLE_SECONDS=IDLE) as build:

        def present(**overrides: Any) -> tuple[HandoffService, ChatService]:
            service, chat = build(**overrides)
            service.agent_seen("ana")
            return service, chat

        yield present


class OpenStream:
    """A conversation stream read to its end in a thread, as a worker serves it; `close()`
    is the reader leaving (the disconnect probe)."""

    def __init__(self, service: HandoffService, conversation_id: str, *, visitor: bool) -> None:
        self.chunks: list[bytes] = []
        self._gone = threading.Event()
        after = service.last_seq(conversation_id)
        stream = service.event_stream(conversation_id, after, client_gone=self._gone.is_set, visitor=visitor)
        self._thread = threading.Thread(target=lambda: self.chunks.extend(stream), daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._gone.set()
        self._thread.join(10)
        assert not self._thread.is_alive()


def ended_reason(service: HandoffService, conversation_id: str) -> str | None:
    found = [e for e in service.read_events(conversation_id, 0, 0) if e.type == ev.ENDED]
    return found[-1].payload["reason"] if found else None


def queued(service: HandoffService) -> list[str]:
    return [entry["conversation_id"] for entry in service.queue()]


def test_a_placeholder_leaves_after_the_idle_time_and_an_open_stream_keeps_its_visitor(make):
    service, chat = make()
    placeholder, waiting = chat.create_conversation()[0], chat.create_conversation()[0]
    assert service.request(placeholder, "r")["position"] == 1  # and never opens its stream
    assert service.request(waiting, "r")["position"] == 2
    stream = OpenStream(service, waiting, visitor=True)
    try:
        assert service.release_lapsed() == 0  # nobody has been gone that long yet
        assert wait_until(lambda: service.release_lapsed() == 1, timeout=10)
        assert service.state(placeholder) == {"state": "ended"}
        assert ended_reason(service, placeholder) == "idle"
        assert service.read_events(placeholder, 0, 0)[-1].payload == {"agent": "", "reason": "idle"}
        assert queued(service) == [waiting]
        assert service.state(waiting) == {"state": "queued", "position": 1}
        assert service.read_events(waiting, 0, 0)[-1].payload == {"position": 1}
        # The open stream told its reader it moved up.
        assert wait_until(lambda: b'"position":1' in b"".join(stream.chunks))
        # Two idle times later the visitor whose stream is open is still in line.
        deadline = time.monotonic() + 2 * IDLE
        while time.monotonic() < deadline:
            assert service.release_lapsed() == 0
            time.sleep(0.05)
        assert queued(service) == [waiting]
    finally:
        stream.close()
    # Their stream closed (a closed tab): once idle, they leave too.
    assert wait_until(lambda: service.release_lapsed() == 1, timeout=10)
    assert queued(service) == [] and ended_reason(service, waiting) == "idle"
    assert service.store.visitors_seen() == {}  # marks of hand-offs that are over are forgotten


def test_an_agent_s_stream_does_not_count_as_the_visitor(make):
    service, chat = make()
    cid = chat.create_conversation()[0]
    service.request(cid, "r")
    console = OpenStream(service, cid, visitor=False)  # an agent looking at the waiting visitor
    try:
        assert wait_until(lambda: service.release_lapsed() == 1, timeout=10)
        assert ended_reason(service, cid) == "idle"
    finally:
        console.close()
    assert b"event: handoff.ended" in b"".join(console.chunks)


def test_a_visitor_back_between_the_look_and_the_transaction_stays(make):
    """The transaction re-checks: the look's marks may be stale by the time it commits."""
    service, chat = make()
    cid = chat.create_conversation()[0]
    service.request(cid, "r")
    time.sleep(IDLE + 0.1)
    real_visitors_seen = service.store.visitors_seen

    def stale_then_fresh(conversation_ids: list[str] | None = None) -> dict[str, float]:
        if conversation_ids is None:  # the look: before the visitor's stream came back
            return {}
        service.store.__dict__.pop("visitors_seen")
        service.store.visitor_seen(cid, time.time())  # their stream opens meanwhile
        return real_visitors_seen(conversation_ids)

    service.store.visitors_seen = stale_then_fresh  # type: ignore[method-assign]
    assert service.release_lapsed() == 0
    assert service.state(cid) == {"state": "queued", "position": 1}
    assert ended_reason(service, cid) is None


def test_a_queue_full_of_placeholders_takes_a_real_visitor_once_they_idle_out(make):
    service, chat = make(HANDOFF_QUEUE_MAX=3)
    placeholders = [chat.create_conversation()[0] for _ in range(3)]
    for cid in placeholders:
        assert service.request(cid, "r")["state"] == "queued"
    real = chat.create_conversation()[0]
    assert service.request(real, "r1") == {"state": "unavailable", "reason": "busy", "seq": 1}
    left: list[int] = []  # the agents' queue poll, a few times a second; they were queued one by one
    assert wait_until(lambda: left.append(service.release_lapsed()) or sum(left) == 3, timeout=10)
    assert all(ended_reason(service, cid) == "idle" for cid in placeholders)
    assert service.request(real, "r2") == {"state": "queued", "position": 1, "seq": 2}
    assert queued(service) == [real]


def test_zero_keeps_idle_visitors_queued(make):
    service, chat = make(HANDOFF_QUEUE_IDLE_SECONDS=0)
    cid = chat.create_conversation()[0]
    service.request(cid, "r")
    stream = OpenStream(service, cid, visitor=True)
    stream.close()
    time.sleep(0.2)
    assert service.release_lapsed() == 0 and queued(service) == [cid]
    assert service.store.visitors_seen() == {}  # off: a stream marks nobody
