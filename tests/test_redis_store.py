"""The Redis store, against a real redis-server: the store contract, and two
servers sharing it — resume on another server, cancel from another server,
one run for a double submit across servers."""

from __future__ import annotations

import hashlib
import threading
import time

import pytest

from widget_server.errors import ErrorCode, ErrorInfo
from widget_server.messages import EventKind
from widget_server.protocol import CONVERSATION_PREFIX, new_id
from widget_server.stores.base import Conversation, RequestConflict, StoreUnavailable
from widget_server.stores.redis import RedisStore
from widget_server.stores.redis_tail import _Tail

from .helpers import CountingBackend, wait_until

QUESTION = "which arpeggio fits Am F C G"


@pytest.fixture
def store(redis_server):
    redis_server.flush()
    store = RedisStore(redis_server.url, max_events=4)
    yield store
    store.close()


def running_message(store, text_parts=()):
    store.create_conversation(Conversation("c_1", "hash", 0.0))
    claim = store.claim_request("c_1", "r1", "fp", "question", "u_1", "m_1")
    store.start("m_1")
    for part in text_parts:
        store.append_text("m_1", part)
    return claim


def test_claim_is_idempotent_and_conflicts_on_another_body(store):
    store.create_conversation(Conversation("c_1", "hash", 0.0))
    first = store.claim_request("c_1", "r1", "fp", "question", "u_1", "m_1")
    again = store.claim_request("c_1", "r1", "fp", "question", "u_2", "m_2")
    assert first.created and not again.created
    assert again.exchange.assistant_message_id == "m_1"
    with pytest.raises(RequestConflict):
        store.claim_request("c_1", "r1", "other", "question", "u_3", "m_3")
    assert [e.assistant_message_id for e in store.exchanges("c_1")] == ["m_1"]


def test_concurrent_claims_create_one_exchange(store):
    store.create_conversation(Conversation("c_1", "hash", 0.0))
    results = []
    threads = [
        threading.Thread(
            target=lambda i=i: results.append(store.claim_request("c_1", "r1", "fp", "q", f"u_{i}", f"m_{i}"))
        )
        for i in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(claim.created for claim in results) == 1
    assert len({claim.exchange.assistant_message_id for claim in results}) == 1


def test_text_and_digest_are_exact(store):
    parts = ["Ünïcödé 🎸 ", "with CR\r\n", "and a blank line\n\n", "end."]
    running_message(store, parts)
    completed = store.complete("m_1")
    text = "".join(parts)
    assert completed.kind is EventKind.COMPLETED
    assert completed.payload["sha256"] == hashlib.sha256(text.encode()).hexdigest()
    assert completed.payload["length"] == len(text)
    assert store.message("m_1").text == text


def test_the_first_ending_wins(store):
    running_message(store, ["partial 🎸"])
    cancelled = store.cancel("m_1")
    assert cancelled.kind is EventKind.CANCELLED and cancelled.payload["length"] == len("partial 🎸")
    assert store.complete("m_1") is None
    assert store.fail("m_1", ErrorInfo.for_code(ErrorCode.TIMEOUT)) is None
    assert store.append_text("m_1", "more") is None
    assert store.message("m_1").state.value == "cancelled"


def test_reads_block_until_another_thread_writes(store):
    running_message(store)
    timer = threading.Timer(0.2, lambda: store.append_text("m_1", "late"))
    timer.start()
    started = time.monotonic()
    events = store.read_events("m_1", 1, timeout=5)
    assert [e.payload.get("text") for e in events] == ["late"]
    assert time.monotonic() - started < 4
    assert store.read_events("m_1", 2, timeout=0.2) == []


def test_an_evicted_position_gets_a_snapshot_then_the_rest(store):
    parts = [f"part {i}. " for i in range(10)]
    running_message(store, parts)  # 11 events, 4 kept
    events = store.read_events("m_1", 1, timeout=1)
    assert events[0].kind is EventKind.SNAPSHOT
    assert events[0].payload["text"] == "".join(parts)
    assert events[0].seq == 11 and events[1:] == []
    store.complete("m_1")
    after = store.read_events("m_1", 2, timeout=1)
    assert [e.kind for e in after] == [EventKind.SNAPSHOT, EventKind.COMPLETED]
    assert after[0].seq == 11


def test_entries_trimmed_between_the_snapshot_and_the_read_after_it_are_never_a_gap(store, monkeypatch):
    """A reader behind the log gets a snapshot, then the entries after it, in two reads; a fast
    answer may trim the ones right after the snapshot in between (found by the full suite on a
    Redis Cluster: 22 then 26). The reader then gets the snapshot alone, and its next read a
    newer one: the text stays exact."""
    parts = [f"part {i}. " for i in range(10)]
    running_message(store, parts)  # 11 events, 4 kept
    take_snapshot = store.snapshot
    late = [f"late {i}. " for i in range(6)]

    def snapshot_then_six_more_written(message_id):
        taken = take_snapshot(message_id)
        for part in late:  # events 12-17: 12 and 13 are trimmed before the second read
            store.append_text(message_id, part)
        return taken

    monkeypatch.setattr(store, "snapshot", snapshot_then_six_more_written)
    events = store.read_events("m_1", 1, timeout=1)
    assert [(event.kind, event.seq) for event in events] == [(EventKind.SNAPSHOT, 11)]
    assert events[0].payload["text"] == "".join(parts)
    monkeypatch.setattr(store, "snapshot", take_snapshot)
    newer = store.read_events("m_1", 11, timeout=1)
    assert [(event.kind, event.seq) for event in newer] == [(EventKind.SNAPSHOT, 17)]
    assert newer[0].payload["text"] == "".join(parts + late)


def test_the_fan_out_buffer_never_bridges_entries_redis_trimmed_first():
    """The tailing XREAD may find that Redis already trimmed entries it never
    read (a small LOG_MAX_EVENTS, a loaded process): a reader positioned
    before that hole gets None (read Redis: a snapshot), never the entries
    after the hole as if they were next (found by the full suite: 242 → 244)."""
    tail = _Tail(240, threading.Lock(), max_entries=2)
    tail.add(241, b"e241")
    tail.add(242, b"e242")
    tail.add(244, b"e244")  # 243 was trimmed before the XREAD came back
    assert tail.after(242) is None
    assert tail.after(243) == [(244, b"e244")]
    tail.add(244, b"again")  # a repeat is ignored
    tail.add(245, b"e245")
    assert tail.after(243) == [(244, b"e244"), (245, b"e245")]
    assert tail.after(241) is None


# -- two servers sharing one Redis -----------------------------------------


@pytest.fixture
def two_servers(redis_server, live_server_factory):
    redis_server.flush()
    config = {"STORE": redis_server.url, "DEMO_DELAY_SECONDS": 0.15}
    return live_server_factory(**config), live_server_factory(**config)


def test_resume_on_another_server_is_exact(two_servers, seed_answers):
    from .helpers import ChatClient

    a, b = two_servers
    on_a = ChatClient(a.url).new_conversation()
    first = on_a.send(QUESTION, "r1", max_events=2)
    on_b = ChatClient(b.url)
    on_b.conversation_id, on_b.token = on_a.conversation_id, on_a.token
    rest = on_b.resume(first.message_id, first.events[-1].id)
    seqs = [p["seq"] for p in first.payloads + rest.payloads]
    assert seqs == list(range(1, 8))
    assert first.text + rest.text == seed_answers["improvisation"]["answer"]
    assert rest.kinds[-1] == "message.completed"
    on_a.close()
    on_b.close()


def test_cancel_on_another_server_stops_the_generation(two_servers):
    from .helpers import ChatClient

    a, b = two_servers
    a.service.backend = CountingBackend(a.service.backend)
    on_a = ChatClient(a.url).new_conversation()
    first = on_a.send("/scenario slow", "r1", max_events=2)
    on_b = ChatClient(b.url)
    on_b.conversation_id, on_b.token = on_a.conversation_id, on_a.token
    response = on_b.cancel(first.message_id)
    assert response.json()["state"] == "cancelled"
    # The backend on A is told within the poll interval, though nobody on A asked.
    assert wait_until(lambda: a.service.backend.closed == 1, timeout=2)
    rest = on_a.resume(first.message_id, first.events[-1].id)
    assert rest.kinds[-1] == "message.cancelled"
    on_a.close()
    on_b.close()


def test_a_cancel_on_another_server_stops_a_run_that_writes_nothing(two_servers):
    """The generating server asks Redis only about runs that wrote nothing within a tick (a
    refused write stops a streaming run by itself): a backend waiting on its upstream still
    learns of a cancel sent to another server within two ticks."""
    from widget_server.chat.generation import RunKeeper

    from .helpers import ChatClient

    a, b = two_servers
    a.service.backend = CountingBackend(a.service.backend)
    on_a = ChatClient(a.url).new_conversation()
    first = on_a.send("/scenario hang", "r1", max_events=2)  # started, one delta, then nothing
    on_b = ChatClient(b.url)
    on_b.conversation_id, on_b.token = on_a.conversation_id, on_a.token
    assert on_b.cancel(first.message_id).json()["state"] == "cancelled"
    assert wait_until(lambda: a.service.backend.closed == 1, timeout=2 * RunKeeper.TICK_SECONDS + 1)
    on_a.close()
    on_b.close()


def test_deltas_sent_without_waiting_stay_in_order_and_a_refusal_is_learned_next(store):
    """append_text_soon (a generating run's deltas): the store takes them in order, complete()
    waits for them (its digest covers every one), and a delta the store refused is learned at
    the next call, which sends nothing."""
    running_message(store)
    for part in ("Am ", "F ", "C ", "G"):
        assert store.append_text_soon("m_1", part) is True
    completed = store.complete("m_1")
    assert completed.payload["sha256"] == hashlib.sha256(b"Am F C G").hexdigest()
    assert store.message("m_1").text == "Am F C G" and completed.seq == 6

    store.claim_request("c_1", "r2", "fp2", "again", "u_2", "m_2")
    store.start("m_2")
    assert store.append_text_soon("m_2", "kept ") is True
    store.cancel("m_2")
    assert store.append_text_soon("m_2", "refused ") is True  # sent; its outcome comes next
    assert store.append_text_soon("m_2", "never sent") is False
    assert store.settle("m_2") is True  # nothing left unsettled
    assert store.message("m_2").text == "kept "


def test_a_delta_sent_while_redis_is_down_is_learned_as_store_unavailable(redis_server):
    redis_server.flush()
    store = RedisStore(redis_server.url)
    try:
        running_message(store)
        redis_server.crash()
        assert store.append_text_soon("m_1", "lost") is True
        with pytest.raises(StoreUnavailable):
            store.settle("m_1")
    finally:
        redis_server.recover()
        store.close()


def test_a_double_submit_across_servers_runs_once(two_servers, seed_answers):
    from .helpers import ChatClient

    a, b = two_servers
    a.service.backend = CountingBackend(a.service.backend)
    b.service.backend = CountingBackend(b.service.backend)
    on_a = ChatClient(a.url).new_conversation()
    on_b = ChatClient(b.url)
    on_b.conversation_id, on_b.token = on_a.conversation_id, on_a.token
    results = {}
    threads = [
        threading.Thread(target=lambda name=name, chat=chat: results.__setitem__(name, chat.send(QUESTION, "same")))
        for name, chat in (("a", on_a), ("b", on_b))
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert a.service.backend.calls + b.service.backend.calls == 1
    assert results["a"].message_id == results["b"].message_id
    assert results["a"].text == results["b"].text == seed_answers["improvisation"]["answer"]
    on_a.close()
    on_b.close()


# -- ownership: the lease ---------------------------------------------------


def lost() -> ErrorInfo:
    return ErrorInfo.for_code(ErrorCode.WORKER_LOST)


def test_a_claim_takes_the_lease_and_reaping_waits_for_it_to_expire(redis_server):
    redis_server.flush()
    store = RedisStore(redis_server.url, lease_seconds=1)
    running_message(store, ["some text "])
    assert store.reap_if_lost("m_1", lost()) is None  # the owner's lease is alive
    store.renew_lease("m_1")
    assert wait_until(lambda: store.redis.exists("cw:msg:m_1:lease") == 0, timeout=3)
    event = store.reap_if_lost("m_1", lost())
    assert event.kind is EventKind.FAILED and event.payload["error"]["code"] == "worker_lost"
    assert event.payload["incomplete"] is True and event.payload["length"] == len("some text ")
    assert store.reap_if_lost("m_1", lost()) is None  # once
    # The owner, if it was only slow, is refused from then on.
    assert store.append_text("m_1", "late") is None
    assert store.message("m_1").state.value == "failed"
    store.close()


def test_an_ending_releases_the_lease_and_a_terminal_message_is_never_reaped(redis_server):
    redis_server.flush()
    store = RedisStore(redis_server.url, lease_seconds=60)
    running_message(store, ["done"])
    assert store.complete("m_1") is not None
    assert store.redis.exists("cw:msg:m_1:lease") == 0
    assert store.reap_if_lost("m_1", lost()) is None
    assert store.message("m_1").state.value == "completed"
    store.close()


def test_a_run_longer_than_its_lease_keeps_it_by_renewing(redis_or_cluster, seed_answers):
    """On one Redis (renewals in a pipeline) and on a cluster (in batches per master)."""
    from widget_server.backends.base import Turn
    from widget_server.backends.demo import DemoBackend
    from widget_server.chat.generation import GenerationRun
    from widget_server.settings import load_settings

    store = RedisStore(redis_or_cluster.url, lease_seconds=1)
    store.create_conversation(Conversation("c_1", "hash", 0.0))
    store.claim_request("c_1", "r1", "fp", QUESTION, "u_1", "m_1")
    backend = DemoBackend.from_settings(load_settings({"DEMO_DELAY_SECONDS": 0.4}, environ={}))
    run = GenerationRun(store, backend, Turn(QUESTION, [], "c_1", "m_1"), time_limit=30)
    run.start()
    # Meanwhile, a reader elsewhere keeps looking for an expired lease.
    while not run.finished.wait(0.2):
        assert store.reap_if_lost("m_1", lost()) is None
    info = store.message("m_1")
    assert info.state.value == "completed"  # 2.8 s of answer on a 1 s lease
    assert info.text == seed_answers["improvisation"]["answer"]
    store.close()


def test_connection_trouble_is_store_unavailable(redis_server):
    from widget_server.stores.base import StoreUnavailable

    from .redis_support import free_port

    store = RedisStore(f"redis://127.0.0.1:{free_port()}/0")
    for call in (store.ping, lambda: store.message("m_1"), lambda: store.get_conversation("c_1")):
        with pytest.raises(StoreUnavailable, match="redis: ConnectionError"):
            call()
    store.close()


def test_a_conversation_stored_before_known_visitors_reads_as_anonymous(store):
    conversation_id = new_id(CONVERSATION_PREFIX)
    store.redis.hset(store._conv(conversation_id), mapping={"token_hash": "h", "created_at": "1.5"})
    assert store.get_conversation(conversation_id) == Conversation(conversation_id, "h", 1.5)


def test_a_subjects_list_follows_its_conversations(store):
    """Known visitors (widget_server/identity/): the subject's list (one sorted set) names the
    conversations still stored, most recently active first; a deleted one leaves it at once, an
    expired one at the next listing; the list expires with the conversation TTL."""
    first = Conversation(new_id(CONVERSATION_PREFIX), "h", 1000.0, "user-1", "Ada", "ada@example.com")
    second = Conversation(new_id(CONVERSATION_PREFIX), "h", 1001.0, "user-1")
    third = Conversation(new_id(CONVERSATION_PREFIX), "h", 1002.0, "user-1")
    for conversation in (first, second, third):
        store.create_conversation(conversation)
    store.create_conversation(Conversation(new_id(CONVERSATION_PREFIX), "h", 1003.0))  # anonymous
    assert store.get_conversation(first.conversation_id) == first
    listed = store.subject_conversations("user-1", 10)
    assert [entry.conversation for entry in listed] == [third, second, first]
    store.touch_subject_conversation(first, 2000.0)
    assert [entry.conversation for entry in store.subject_conversations("user-1", 2)] == [first, third]
    assert 0 < store.redis.ttl(store.keys.subject("user-1")) <= store._ttl
    store.delete_conversation(second.conversation_id)
    assert store.redis.zscore(store.keys.subject("user-1"), second.conversation_id) is None
    store.redis.delete(store._conv(third.conversation_id))  # as if it had expired
    assert [entry.conversation for entry in store.subject_conversations("user-1", 10)] == [first]
    assert store.redis.zcard(store.keys.subject("user-1")) == 1  # pruned
    # A touch after a delete does not list the conversation again.
    store.delete_conversation(first.conversation_id)
    store.touch_subject_conversation(first, 3000.0)
    assert store.subject_conversations("user-1", 10) == []
