"""Hand-offs are bounded in bytes and in queue length (docs/security.md, "Memory").

The memory hand-off store counts what it holds (HANDOFF_MEMORY_STORE_MAX_BYTES): filled past
its budget with real HandoffService calls, it stays within it by evicting hand-offs that are
over, the least recently written first (their event logs, then their records), never one that
is queued or assigned; when only those are left, a new request or message is refused with
503 `handoff_store_full` (a JSON error over HTTP), counted in the metrics. The queue is bounded
on both stores (HANDOFF_QUEUE_MAX): beyond it a request gets `unavailable` with reason `busy`,
so the visitor is offered the leave-a-message form.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from widget_server.chat.service import ChatService
from widget_server.errors import ApiError
from widget_server.handoff import events as ev
from widget_server.handoff.memory_store import EVENT_BYTES, LOG_BYTES, MemoryHandoffStore
from widget_server.handoff.service import HandoffService
from widget_server.services import SERVICES_KEY

from ..handoff_support import MakeServices, handoff_services
from ..helpers import assert_json_error
from ..memory_walk import deep_size
from ..test_handoff_service import make_service  # noqa: F401 - a fixture: pytest finds it by this name
from ..test_scale_out import metric_value

BUDGET = 65536  # the setting's minimum


@pytest.fixture
def services(make_service):  # noqa: F811 - the imported fixture
    """services(**settings) → (HandoffService, ChatService), on the memory store and a real redis-server."""
    return make_service


@pytest.fixture
def memory_services(request) -> Iterator[MakeServices]:
    """The same on the memory store alone: the byte budget is its own (Redis bounds itself with
    key expiry and its maxmemory, docs/serving.md)."""
    with handoff_services(request, "memory") as make:
        yield make


TEXT = "Mi pedido llegó roto — ¿me ayudan? " * 20  # 700 characters, some of them not ASCII


def memory_service(make: Any, **settings: Any) -> tuple[HandoffService, ChatService, MemoryHandoffStore]:
    service, chat = make(**{"HANDOFF_MEMORY_STORE_MAX_BYTES": BUDGET, **settings})
    assert isinstance(service.store, MemoryHandoffStore)
    service.agent_seen("ana")
    return service, chat, service.store


def new_conversation(chat: ChatService) -> str:
    return chat.create_conversation()[0]


def ended_handoff(service: HandoffService, chat: ChatService, text: str = TEXT) -> str:
    cid = new_conversation(chat)
    assert service.request(cid, "r")["state"] == "queued"
    service.claim(cid, "ana", "Ana")
    service.visitor_message(cid, "v", text)
    service.agent_message(cid, "ana", "a", text)
    service.end(cid, "ana")
    return cid


def held_bytes(store: MemoryHandoffStore) -> int:
    """What a sys.getsizeof walk finds in the store's records and logs (not its estimate)."""
    return deep_size(store._records) + deep_size(store._logs) + deep_size(store._log_bytes)


def recount(store: MemoryHandoffStore) -> int:
    """The count made afresh from what the store holds (records, and logs as trimmed now)."""
    logs = sum(LOG_BYTES + sum(EVENT_BYTES + sys.getsizeof(raw) for _, raw in log) for log in store._logs.values())
    return sum(record.stored_bytes for record in store._records.values()) + logs


@pytest.mark.parametrize("events_max", [500, 3])  # 3: every log trimmed (CONVERSATION_EVENTS_MAX)
def test_the_count_is_never_below_what_the_store_holds(memory_services, events_max):
    service, chat, store = memory_service(
        memory_services, HANDOFF_MEMORY_STORE_MAX_BYTES=1 << 30, CONVERSATION_EVENTS_MAX=events_max
    )
    assert store.stored_bytes == 0
    cids = [ended_handoff(service, chat, TEXT[: 25 * n]) for n in range(1, 30)]
    queued = new_conversation(chat)
    service.request(queued, "r")
    service.visitor_message(queued, "v", "¿Hola?")
    assert store.stored_bytes == recount(store)
    walked = held_bytes(store)
    # An estimate of the containers, exact for the texts: at least what is there, not far above.
    assert walked <= store.stored_bytes <= 1.5 * walked, (walked, store.stored_bytes)
    for cid in cids:
        service.forget(cid)
    service.forget(queued)
    # Everything deleted: the count is back to the desk's and the inbox's records alone.
    assert store.stored_bytes == recount(store)
    assert set(store._records) <= {"desk", "inbox"} and not store._logs


def test_over_the_budget_hand_offs_that_are_over_go_oldest_first_never_one_going_on(memory_services):
    service, chat, store = memory_service(memory_services)
    held = new_conversation(chat)
    service.request(held, "r")
    service.claim(held, "ana", "Ana")
    service.visitor_message(held, "v", TEXT)
    service.agent_message(held, "ana", "a", TEXT)
    waiting = new_conversation(chat)
    service.request(waiting, "r")
    service.visitor_message(waiting, "v", TEXT)
    going_on = {held: service.messages(held), waiting: service.messages(waiting)}

    ended = []
    for _ in range(24):  # about 10 KB each: four times the budget
        ended.append(ended_handoff(service, chat))
        assert store.stored_bytes <= BUDGET and store.stored_bytes == recount(store)
        assert held_bytes(store) <= BUDGET
    assert store.evicted > 0

    # Evicted: the oldest ended ones' records (their hand-off reads as never requested) ...
    gone = [cid for cid in ended if service.state(cid)["state"] == ev.NONE]
    kept = [cid for cid in ended if service.state(cid)["state"] == ev.STATE_ENDED]
    assert gone and kept and len(gone) + len(kept) == len(ended)
    assert ended[: len(gone)] == gone, "the least recently written go first"
    assert service.messages(gone[0]) == []
    assert service.messages(ended[-1])[0]["text"] == TEXT
    # ... and, before any record, the logs of ended ones: a reader behind gets a snapshot, exact.
    logless = [cid for cid in kept if cid not in store._logs]
    assert logless, "an ended conversation's log goes before its record"
    (snapshot,) = service.read_events(logless[-1], 0, 0)
    assert snapshot.type == ev.SNAPSHOT and snapshot.payload["state"] == ev.STATE_ENDED
    assert [m["text"] for m in snapshot.payload["messages"]] == [TEXT, TEXT]
    assert snapshot.seq == service.last_seq(logless[-1])

    # Never a hand-off going on: its state, its messages and its whole log are all there.
    assert service.state(held) == {"state": "assigned", "agent": "Ana"}
    assert service.state(waiting) == {"state": "queued", "position": 1}
    for cid, messages in going_on.items():
        assert service.messages(cid) == messages
        assert service.read_events(cid, 0, 0)[0].type == ev.QUEUED  # from its first event, no snapshot


def fill_with_waiting_visitors(service: HandoffService, chat: ChatService) -> tuple[list[str], ApiError]:
    """Queued hand-offs with messages until the store refuses one; the refusal."""
    waiting: list[str] = []
    for n in range(200):
        cid = new_conversation(chat)
        try:
            service.request(cid, "r")
            waiting.append(cid)
            service.visitor_message(cid, "v", TEXT)
        except ApiError as refused:
            return waiting, refused
        assert n < 199, "the store never refused"
    raise AssertionError("unreachable")


def test_when_only_hand_offs_going_on_are_left_a_new_one_is_refused(memory_services):
    service, chat, store = memory_service(memory_services)
    waiting, refused = fill_with_waiting_visitors(service, chat)
    assert (refused.status, refused.code) == (503, "handoff_store_full")
    assert store.stored_bytes <= BUDGET and held_bytes(store) <= BUDGET
    # Smaller and smaller messages until even a short one does not fit: then neither does a request.
    for size in (1000, 300, 100, 30):
        while True:
            try:
                service.visitor_message(waiting[0], f"v{size}-{len(service.messages(waiting[0]))}", TEXT[:size])
            except ApiError as error:
                assert error.code == "handoff_store_full"
                break
    newcomer = new_conversation(chat)
    assert refusal_code(service.request, newcomer, "r") == "handoff_store_full"
    assert service.state(newcomer) == {"state": "none"}  # nothing of it was stored
    assert refusal_code(service.leave_message, newcomer, "l", None, "Call me back") == "handoff_store_full"
    assert store.stored_bytes <= BUDGET
    # Nothing going on was evicted to make room.
    assert [q["conversation_id"] for q in service.queue()] == waiting
    assert all(service.messages(cid)[0]["text"] == TEXT for cid in waiting if len(service.messages(cid)))
    text = service.app_metrics.exposition()[0].decode()
    assert metric_value(text, "chat_handoff_refusals_total", reason="store_full") >= 3

    # Transitions are never refused; one that ends a hand-off makes it evictable, so room again.
    service.cancel(waiting[0])
    service.claim(waiting[1], "ana", "Ana")
    assert service.request(newcomer, "r2")["state"] == "queued"
    assert service.state(waiting[0]) == {"state": "none"}  # evicted for the newcomer
    assert store.stored_bytes <= BUDGET


def refusal_code(call: Any, *args: Any) -> str:
    with pytest.raises(ApiError) as caught:
        call(*args)
    assert caught.value.status == 503
    return caught.value.code


def test_a_refused_request_is_a_json_503_with_its_code(live_server_factory, chat_factory):
    server = live_server_factory(HANDOFF="on", HANDOFF_MEMORY_STORE_MAX_BYTES=BUDGET)
    service: HandoffService = server.app.extensions[SERVICES_KEY].handoff
    service.agent_seen("ana")
    fill_with_waiting_visitors(service, server.service)
    for _ in range(200):  # then requests alone, until one does not fit either
        try:
            service.request(new_conversation(server.service), "r")
        except ApiError:
            break
    newcomer = chat_factory(server)
    path = f"/api/v1/conversations/{newcomer.conversation_id}/handoff"
    response = newcomer.http.post(path, json={"request_id": "h1"}, headers=newcomer.auth)
    assert_json_error(response, 503, "handoff_store_full")
    assert response.headers["Retry-After"] == "60"
    assert metric_value(newcomer.http.get("/metrics").text, "chat_handoff_refusals_total", reason="store_full") >= 2


def test_the_queue_is_bounded_beyond_it_a_request_is_busy_and_may_leave_a_message(services):
    service, chat = services(HANDOFF_QUEUE_MAX=2)
    service.agent_seen("ana")
    first, second, third = (new_conversation(chat) for _ in range(3))
    assert service.request(first, "r")["state"] == "queued"
    assert service.request(second, "r")["position"] == 2
    assert service.request(third, "r") == {"state": "unavailable", "reason": "busy", "seq": 1}
    assert service.request(third, "r") == {"state": "unavailable", "reason": "busy", "seq": 1}  # a retry
    assert [(e.type, e.payload) for e in service.read_events(third, 0, 0)] == [(ev.UNAVAILABLE, {"reason": "busy"})]
    assert [q["conversation_id"] for q in service.queue()] == [first, second]
    # As for nobody there: the visitor may leave a message.
    left = service.leave_message(third, "l", "ana@example.com", "Please call me back")
    assert service.inbox()[0]["left_message_id"] == left["left_message_id"]
    text = service.app_metrics.exposition()[0].decode()
    assert metric_value(text, "chat_handoffs_unavailable_total", reason="busy") == 1
    # A place frees up: the next request queues.
    service.claim(first, "ana", "Ana")
    assert service.request(third, "r2") == {"state": "queued", "position": 2, "seq": 2}


def test_a_busy_request_over_http_is_unavailable_with_its_reason(live_server_factory, chat_factory):
    server = live_server_factory(HANDOFF="on", HANDOFF_QUEUE_MAX=1)
    server.app.extensions[SERVICES_KEY].handoff.agent_seen("ana")
    first, second = chat_factory(server), chat_factory(server)
    ask = lambda chat: chat.http.post(  # noqa: E731
        f"/api/v1/conversations/{chat.conversation_id}/handoff", json={"request_id": "h1"}, headers=chat.auth
    )
    assert ask(first).json()["state"] == "queued"
    response = ask(second)
    assert response.status_code == 200
    assert response.json() == {"state": "unavailable", "reason": "busy", "seq": 1}


def test_the_desk_record_stays_small_with_a_full_queue(services):
    """HANDOFF_QUEUE_MAX bounds the one desk record every claim rewrites (Redis: one hash)."""
    service, chat = services(HANDOFF_QUEUE_MAX=50)
    service.agent_seen("ana")
    for n in range(60):
        service.request(new_conversation(chat), f"r{n}")
    desk = service.store.load(["desk"])["desk"][1]
    assert desk is not None and len(desk["queue"]) == 50
    # About 60 bytes of JSON a waiting conversation: 200 (the default) are about 12 KB.
    size = len(json.dumps(desk))
    assert size < 50 * 100, size
