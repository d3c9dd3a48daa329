"""MemoryStore: idempotent claims, history, compare-and-set endings, blocking reads, expiry."""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from widget_server.errors import ErrorCode, ErrorInfo
from widget_server.messages import EventKind, MessageState
from widget_server.stores.base import Conversation, RequestConflict, UnknownMessage
from widget_server.stores.memory import MemoryStore

ERROR = ErrorInfo.for_code(ErrorCode.TIMEOUT)


def make_store(**kwargs) -> MemoryStore:
    store = MemoryStore(**kwargs)
    store.create_conversation(Conversation("c_1", "hash", 0.0))
    return store


def claim(
    store: MemoryStore,
    request_id: str,
    text: str = "hi",
    fingerprint: str | None = None,
    n: int | None = None,
    conversation_id: str = "c_1",
):
    suffix = request_id if n is None else f"{request_id}_{n}"
    return store.claim_request(
        conversation_id, request_id, fingerprint or f"fp:{text}", text, f"u_{suffix}", f"m_{suffix}"
    )


def answer(store: MemoryStore, message_id: str, *parts: str, end: str = "complete"):
    store.start(message_id)
    for part in parts:
        store.append_text(message_id, part)
    if end == "complete":
        return store.complete(message_id)
    if end == "cancel":
        return store.cancel(message_id)
    if end == "fail":
        return store.fail(message_id, ERROR)
    return None


# -- conversations and claims ----------------------------------------------


def test_get_conversation():
    store = make_store()
    assert store.get_conversation("c_1") == Conversation("c_1", "hash", 0.0)
    assert store.get_conversation("c_nope") is None


def test_claim_is_idempotent_for_the_same_request_and_body():
    store = make_store()
    first = claim(store, "r1", "hello")
    assert first.created is True
    again = store.claim_request("c_1", "r1", "fp:hello", "hello", "u_other", "m_other")
    assert again.created is False
    assert again.exchange == first.exchange
    assert again.exchange.assistant_message_id == "m_r1"
    assert store.message("m_other") is None  # no second message was made
    assert store.exchanges("c_1") == [first.exchange]


def test_claim_with_same_request_id_but_other_body_conflicts():
    store = make_store()
    first = claim(store, "r1", "hello")
    with pytest.raises(RequestConflict) as info:
        store.claim_request("c_1", "r1", "fp:different", "different", "u_2", "m_2")
    assert info.value.exchange == first.exchange
    assert store.exchanges("c_1") == [first.exchange]
    assert store.message("m_2") is None


def test_request_ids_are_per_conversation():
    store = make_store()
    store.create_conversation(Conversation("c_2", "hash2", 0.0))
    a = claim(store, "r1", "hello", n=1)
    b = claim(store, "r1", "other", n=2, conversation_id="c_2")
    assert a.created and b.created
    assert a.exchange.assistant_message_id != b.exchange.assistant_message_id


def test_claim_in_unknown_conversation_raises():
    store = make_store()
    with pytest.raises(UnknownMessage):
        claim(store, "r1", conversation_id="c_missing")


def test_new_message_starts_accepted_and_empty():
    store = make_store()
    claim(store, "r1")
    info = store.message("m_r1")
    assert info is not None
    assert (info.conversation_id, info.state, info.text, info.last_seq, info.error) == (
        "c_1",
        MessageState.ACCEPTED,
        "",
        0,
        None,
    )


def test_history_has_only_completed_exchanges_in_order():
    store = make_store()
    assert claim(store, "r1", "first?").history == []
    answer(store, "m_r1", "First ", "answer.")
    claim(store, "r2", "second?")
    answer(store, "m_r2", "cut", end="cancel")
    claim(store, "r3", "third?")
    answer(store, "m_r3", "broken", end="fail")
    claim(store, "r4", "fourth?")  # still accepted
    claim(store, "r5", "fifth?")
    answer(store, "m_r5", "Fifth\r\nanswer.")
    claim(store, "r6", "running?")
    answer(store, "m_r6", "part", end="none")  # running
    sixth = claim(store, "r7", "seventh?")
    assert sixth.history == [
        ("user", "first?"),
        ("assistant", "First answer."),
        ("user", "fifth?"),
        ("assistant", "Fifth\r\nanswer."),
    ]
    # A repeated claim does not rebuild history (the answer already exists).
    assert claim(store, "r7", "seventh?").history == []


# -- writes: compare-and-set terminal transitions ----------------------------


@pytest.mark.parametrize("first", ["complete", "cancel", "fail"])
def test_first_ending_wins_and_later_writes_are_refused(first):
    store = make_store()
    claim(store, "r1")
    assert store.start("m_r1").kind is EventKind.STARTED
    assert store.append_text("m_r1", "abc").payload == {"text": "abc"}
    endings = {
        "complete": lambda: store.complete("m_r1"),
        "cancel": lambda: store.cancel("m_r1"),
        "fail": lambda: store.fail("m_r1", ERROR),
    }
    won = endings[first]()
    assert won is not None and won.kind.terminal and won.seq == 3
    for name, ending in endings.items():
        assert ending() is None, name
    assert store.append_text("m_r1", "late") is None
    assert store.start("m_r1") is None
    info = store.message("m_r1")
    assert info.last_seq == 3
    assert info.text == "abc"
    assert info.state.value == {"complete": "completed", "cancel": "cancelled", "fail": "failed"}[first]
    assert (info.error == ERROR) is (first == "fail")


def _run_together(*operations: Callable[[], Any]) -> list[Any]:
    """Each operation in its own thread, released at the same instant; their results."""
    barrier = threading.Barrier(len(operations))
    results: list[Any] = []

    def run(operation: Callable[[], Any]) -> None:
        barrier.wait()
        results.append(operation())

    threads = [threading.Thread(target=run, args=(operation,)) for operation in operations]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(5)
    return results


def test_concurrent_endings_exactly_one_wins():
    for _ in range(20):
        store = make_store()
        claim(store, "r1")
        store.start("m_r1")
        results = _run_together(
            functools.partial(store.complete, "m_r1"),
            functools.partial(store.cancel, "m_r1"),
            functools.partial(store.fail, "m_r1", ERROR),
        )
        winners = [r for r in results if r is not None]
        assert len(results) == 3
        assert len(winners) == 1
        assert winners[0].seq == 2
        assert store.message("m_r1").last_seq == 2


def test_writes_to_unknown_message_return_none():
    store = make_store()
    assert store.start("m_x") is None
    assert store.append_text("m_x", "a") is None
    assert store.complete("m_x") is None
    assert store.cancel("m_x") is None
    assert store.fail("m_x", ERROR) is None
    assert store.message("m_x") is None


def test_cancel_before_start_then_start_refused():
    store = make_store()
    claim(store, "r1")
    assert store.cancel("m_r1").kind is EventKind.CANCELLED
    assert store.start("m_r1") is None
    assert store.message("m_r1").state is MessageState.CANCELLED


# -- reads -------------------------------------------------------------------


def test_read_events_returns_at_once_when_events_exist():
    store = make_store()
    claim(store, "r1")
    answer(store, "m_r1", "a", "b", end="none")
    started = time.monotonic()
    events = store.read_events("m_r1", 1, timeout=5)
    assert time.monotonic() - started < 1
    assert [e.payload["text"] for e in events] == ["a", "b"]


def test_read_events_blocks_until_another_thread_appends():
    store = make_store()
    claim(store, "r1")
    store.start("m_r1")
    timer = threading.Timer(0.15, lambda: store.append_text("m_r1", "late"))
    started = time.monotonic()
    timer.start()
    try:
        events = store.read_events("m_r1", 1, timeout=5)
    finally:
        timer.cancel()
        timer.join()
    waited = time.monotonic() - started
    assert [e.kind for e in events] == [EventKind.DELTA]
    assert events[0].payload == {"text": "late"}
    assert events[0].seq == 2
    assert 0.1 <= waited < 4  # it waited for the write, and woke on it, not on the timeout


def test_read_events_wakes_on_terminal_event():
    store = make_store()
    claim(store, "r1")
    store.start("m_r1")
    timer = threading.Timer(0.1, lambda: store.cancel("m_r1"))
    timer.start()
    try:
        events = store.read_events("m_r1", 1, timeout=5)
    finally:
        timer.join()
    assert [e.kind for e in events] == [EventKind.CANCELLED]


def test_read_events_ignores_writes_to_other_messages():
    store = make_store()
    claim(store, "r1")
    claim(store, "r2")
    store.start("m_r1")
    store.start("m_r2")
    timer = threading.Timer(0.05, lambda: store.append_text("m_r2", "other"))
    started = time.monotonic()
    timer.start()
    try:
        events = store.read_events("m_r1", 1, timeout=0.3)
    finally:
        timer.join()
    assert events == []
    assert time.monotonic() - started >= 0.29


def test_read_events_times_out_with_empty_list():
    store = make_store()
    claim(store, "r1")
    store.start("m_r1")
    started = time.monotonic()
    assert store.read_events("m_r1", 1, timeout=0.1) == []
    waited = time.monotonic() - started
    assert 0.09 <= waited < 2
    assert store.read_events("m_r1", 1, timeout=0) == []


def test_read_events_unknown_message_raises():
    store = make_store()
    with pytest.raises(UnknownMessage):
        store.read_events("m_missing", 0, timeout=0.01)


def test_read_events_snapshot_after_eviction():
    store = make_store(max_events=2)
    claim(store, "r1")
    answer(store, "m_r1", "a", "b", "c")
    events = store.read_events("m_r1", 0, timeout=0)
    assert [e.kind for e in events] == [EventKind.SNAPSHOT, EventKind.COMPLETED]
    assert events[0].payload["text"] == "abc"


# -- expiry ------------------------------------------------------------------


def test_conversation_expires_after_ttl_without_other_activity():
    store = make_store(conversation_ttl=0.05)
    claim(store, "r1")
    answer(store, "m_r1", "x")
    assert store.get_conversation("c_1") is not None
    time.sleep(0.1)
    # Forgotten even though no other conversation was created since.
    assert store.get_conversation("c_1") is None
    assert store.exchanges("c_1") == []
    assert store.message("m_r1") is None
    with pytest.raises(UnknownMessage):
        claim(store, "r2")


def test_each_conversation_expires_by_its_own_retention_on_the_stores_clock():
    """RETENTION for an anonymous conversation, IDENTIFIED_RETENTION for a known visitor's
    (docs/privacy.md), on the clock the store is given: a known visitor's older conversation,
    kept longer, never holds back the expiry of anonymous ones behind it."""
    now = [1000.0]
    store = MemoryStore(conversation_ttl=60, identified_ttl=600, clock=lambda: now[0])
    store.create_conversation(Conversation("c_known", "h", 0.0, "sub-1", "", ""))
    now[0] += 10
    store.create_conversation(Conversation("c_anon", "h", 0.0))
    now[0] += 55  # the anonymous one is 55 s old, the known one 65 s
    assert store.get_conversation("c_anon") is not None
    now[0] += 60  # the anonymous one was used 60 s ago: gone; the known one is kept
    assert store.get_conversation("c_anon") is None
    assert store.get_conversation("c_known") is not None
    assert [entry.conversation.conversation_id for entry in store.subject_conversations("sub-1", 10)] == ["c_known"]
    now[0] += 600
    assert store.find_subject_conversations("sub-1") == []
    assert store.get_conversation("c_known") is None
    assert store._subjects == {} and all(not order for order in store._by_retention.values())


def test_conversation_expires_when_another_is_created():
    store = make_store(conversation_ttl=0.05)
    claim(store, "r1")
    time.sleep(0.1)
    store.create_conversation(Conversation("c_2", "h", 0.0))
    assert store.get_conversation("c_1") is None
    assert store.message("m_r1") is None
    assert store.get_conversation("c_2") is not None


def test_use_keeps_a_conversation_alive():
    store = make_store(conversation_ttl=0.3)
    for _ in range(5):
        time.sleep(0.1)
        assert store.get_conversation("c_1") is not None  # each use renews it
    store.create_conversation(Conversation("c_2", "h", 0.0))
    assert store.get_conversation("c_1") is not None


def test_oldest_conversation_dropped_beyond_the_cap():
    store = MemoryStore(max_conversations=2)
    for cid in ("c_a", "c_b"):
        store.create_conversation(Conversation(cid, "h", 0.0))
    store.get_conversation("c_a")  # c_b is now least recently used
    store.create_conversation(Conversation("c_c", "h", 0.0))
    assert store.get_conversation("c_b") is None
    assert store.get_conversation("c_a") is not None
    assert store.get_conversation("c_c") is not None


def test_a_generating_answer_keeps_its_conversation_alive():
    store = make_store(conversation_ttl=0.3)
    claim(store, "r1")
    store.start("m_r1")
    for _ in range(5):
        time.sleep(0.1)
        assert store.append_text("m_r1", "x") is not None  # writes renew it
    store.create_conversation(Conversation("c_2", "h", 0.0))
    assert store.message("m_r1").text == "xxxxx"
    assert store.get_conversation("c_1") is not None


def test_a_subjects_list_follows_its_conversations():
    """Known visitors (widget_server/identity/): the list names the subject's conversations still
    stored, most recently active first, and loses one as it expires or is deleted."""
    store = make_store(conversation_ttl=0.2)
    first = Conversation("c_first", "h", 1000.0, "user-1", "Ada", "ada@example.com")
    second = Conversation("c_second", "h", 1001.0, "user-1")
    other = Conversation("c_other", "h", 1002.0, "user-2")
    anonymous = Conversation("c_anonymous", "h", 1003.0)
    for conversation in (first, second, other, anonymous):
        store.create_conversation(conversation)
    assert [entry.conversation for entry in store.subject_conversations("user-1", 10)] == [second, first]
    store.touch_subject_conversation(first, 2000.0)
    listed = store.subject_conversations("user-1", 10)
    assert [(entry.conversation.conversation_id, entry.last_activity) for entry in listed] == [
        ("c_first", 2000.0),
        ("c_second", 1001.0),
    ]
    assert [entry.conversation.conversation_id for entry in store.subject_conversations("user-1", 1)] == ["c_first"]
    assert store.subject_conversations("", 10) == []
    store.delete_conversation("c_second")
    assert [entry.conversation.conversation_id for entry in store.subject_conversations("user-1", 10)] == ["c_first"]
    time.sleep(0.3)
    assert store.subject_conversations("user-1", 10) == [] and store.subject_conversations("user-2", 10) == []
