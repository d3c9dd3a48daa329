"""The Redis store's fan-out through Pub/Sub (widget_server/stores/redis_tail.py), against a
real redis-server and a real 3-master Redis Cluster (SPUBLISH, SSUBSCRIBE).

Pub/Sub delivers at most once and only while subscribed; these show that a reader still gets
every event once and in order: entries written before the subscription, an entry nobody
published (a process of an older version), a subscriber connection Redis closed, a
subscriber that hears nothing for longer than its read timeout, a Redis that stops
answering, and that a log nobody waits on is unsubscribed."""

from __future__ import annotations

import logging
import signal
import threading

import pytest

from widget_server.messages import EventKind
from widget_server.stores import redis_connection, redis_tail
from widget_server.stores.base import Conversation, StoreUnavailable
from widget_server.stores.redis import RedisStore

from .helpers import wait_until
from .redis_support import RedisServer, redis_client


@pytest.fixture
def server(redis_or_cluster):
    return redis_or_cluster


@pytest.fixture
def store(server):
    store = RedisStore(server.url)
    yield store
    store.close()


def running(store: RedisStore, conversation_id: str = "c_tail1") -> str:
    message_id = "m_tail" + conversation_id[-1]  # its conversation's slot on a cluster
    store.create_conversation(Conversation(conversation_id, "hash", 0.0))
    store.claim_request(conversation_id, "r1", "fp", "question", "u_1", message_id)
    store.start(message_id)
    return message_id


def read_all(
    store: RedisStore, message_id: str, after_seq: int, until_seq: int, timeout: float = 0.3, events: list | None = None
) -> list:
    """Every event after `after_seq` up to `until_seq`, as a stream reads them (into `events`)."""
    events = [] if events is None else events
    seq = after_seq
    deadline = 40
    while seq < until_seq and deadline:
        deadline -= 1
        for event in store.read_events(message_id, seq, timeout):
            events.append(event)
            seq = event.seq
    return events


def waiting_reader(store: RedisStore, message_id: str, seconds: float) -> tuple[threading.Thread, dict]:
    """A started thread that waits up to `seconds` for the events after seq 1; its outcome
    (`events`, or the StoreUnavailable as `error`) lands in the dict once it returns."""
    outcome: dict = {}

    def wait_long() -> None:
        try:
            outcome["events"] = store.read_events(message_id, 1, seconds)
        except StoreUnavailable as error:
            outcome["error"] = error

    reader = threading.Thread(target=wait_long)
    reader.start()
    return reader, outcome


def test_a_waiting_reader_gets_what_was_written_before_and_after_it_subscribed(store):
    message_id = running(store)
    store.append_text(message_id, "before ")  # seq 2, never published to this reader
    got: list = []
    reader = threading.Thread(target=lambda: read_all(store, message_id, 1, 4, timeout=2, events=got))
    reader.start()
    assert wait_until(lambda: got, timeout=10)
    store.append_text(message_id, "after, ")
    store.append_text(message_id, "and more")
    reader.join(timeout=10)
    assert [(event.seq, event.kind) for event in got] == [
        (2, EventKind.DELTA),
        (3, EventKind.DELTA),
        (4, EventKind.DELTA),
    ]
    assert "".join(event.payload["text"] for event in got) == "before after, and more"


def test_an_entry_nobody_published_is_still_read_in_order(store, server):
    """A process of an older version appends without publishing: the next published entry
    shows the hole (the buffer never bridges it), and a lone one is found after a wait."""
    message_id = running(store)
    assert read_all(store, message_id, 0, 1)[-1].seq == 1
    events_key = store._msg(message_id) + ":events"
    client = redis_client(server.url)
    try:
        client.hincrby(store._msg(message_id), "last_seq", 1)
        client.xadd(
            events_key, {"e": f'{{"kind":"text.delta","text":"quiet ","seq":2,"message_id":"{message_id}"}}'}, id="2-1"
        )
        # Alone: heard by nobody, read from Redis once the wait ends.
        assert [(event.seq, event.payload["text"]) for event in read_all(store, message_id, 1, 2)] == [(2, "quiet ")]
        client.hincrby(store._msg(message_id), "last_seq", 1)
        client.xadd(
            events_key, {"e": f'{{"kind":"text.delta","text":"gap ","seq":3,"message_id":"{message_id}"}}'}, id="3-1"
        )
        store.append_text(message_id, "loud")  # seq 4, published
        events = read_all(store, message_id, 2, 4)
        assert [(event.seq, event.payload["text"]) for event in events] == [(3, "gap "), (4, "loud")]
    finally:
        client.close()


def test_a_lost_subscriber_connection_fails_waiting_readers_then_every_event_arrives_once(store, server):
    message_id = running(store)
    read_all(store, message_id, 0, 1)
    reader, outcome = waiting_reader(store, message_id, 10)
    client = redis_client(server.url)
    try:
        pubsub_clients = lambda: [  # noqa: E731
            entry
            for node_clients in _client_lists(client)
            for entry in node_clients
            if entry.get("flags") == "P" or int(entry.get("sub", 0)) + int(entry.get("ssub", 0)) > 0
        ]
        assert wait_until(pubsub_clients, timeout=10)
        for node in _nodes(client):
            node.client_kill_filter(_type="pubsub")
    finally:
        client.close()
    reader.join(timeout=15)
    assert "error" in outcome or outcome.get("events") == []
    for text in ("one ", "two ", "three"):
        store.append_text(message_id, text)
    events = read_all(store, message_id, 1, 4, timeout=2)
    assert [event.seq for event in events] == [2, 3, 4]
    assert "".join(event.payload["text"] for event in events) == "one two three"


def test_a_log_nobody_waits_on_is_unsubscribed(store, server, monkeypatch):
    monkeypatch.setattr(redis_tail, "IDLE_SECONDS", 0.2)
    monkeypatch.setattr(redis_tail, "HOUSEKEEPING_SECONDS", 0.1)
    message_id = running(store)
    channel = store._msg(message_id) + ":events"
    client = redis_client(server.url)
    try:
        reader = threading.Thread(target=lambda: store.read_events(message_id, 1, 1.0))
        reader.start()
        assert wait_until(lambda: _subscribers(client, channel) == 1, timeout=10)
        reader.join(timeout=10)
        assert wait_until(lambda: _subscribers(client, channel) == 0, timeout=10)
    finally:
        client.close()


def _nodes(client) -> list:
    if hasattr(client, "get_primaries"):
        return [client.get_redis_connection(node) for node in client.get_primaries()]
    return [client]


def _client_lists(client) -> list[list[dict]]:
    return [node.client_list() for node in _nodes(client)]


def _subscribers(client, channel: str) -> int:
    if hasattr(client, "get_primaries"):
        node = client.get_redis_connection(client.get_node_from_key(channel))
        reply = node.execute_command("PUBSUB", "SHARDNUMSUB", channel)
    else:
        reply = client.execute_command("PUBSUB", "NUMSUB", channel)
    return int(reply[1])


def test_a_silent_subscriber_outlasts_its_read_timeouts_and_still_hears_the_next_entry(server, monkeypatch, caplog):
    """No answer streaming is not Redis trouble: the subscriber's read times out (after
    COMMAND_TIMEOUT_SECONDS, 0.3 s here), it PINGs, and its readers wait on. Before the PING,
    every 5 s of silence failed every reader of the process (a hand-off visitor's open stream
    ended as `store_unavailable`: CI, tests/test_handoff_events.py)."""
    monkeypatch.setattr(redis_connection, "COMMAND_TIMEOUT_SECONDS", 0.3)
    store = RedisStore(server.url)
    try:
        message_id = running(store)
        read_all(store, message_id, 0, 1)
        with caplog.at_level(logging.WARNING, logger=redis_tail.__name__):
            assert store.read_events(message_id, 1, 2.0) == []  # six timeouts of silence
            store.append_text(message_id, "after the silence")
            events = read_all(store, message_id, 1, 2, timeout=2)
        assert [(event.seq, event.payload["text"]) for event in events] == [(2, "after the silence")]
        assert [record.getMessage() for record in caplog.records] == []
    finally:
        store.close()


def test_a_redis_that_stops_answering_fails_the_waiting_reader_within_two_timeouts(monkeypatch):
    """A host that hangs sends no reset: the unanswered PING is what tells the subscriber.
    SIGSTOP freezes a dedicated redis-server; the reader fails instead of waiting forever,
    and once Redis answers again every event arrives."""
    monkeypatch.setattr(redis_connection, "COMMAND_TIMEOUT_SECONDS", 0.3)
    server = RedisServer().start()
    store = RedisStore(server.url)
    try:
        message_id = running(store)
        read_all(store, message_id, 0, 1)
        reader, outcome = waiting_reader(store, message_id, 30)
        client = redis_client(server.url)
        assert wait_until(lambda: _subscribers(client, store._msg(message_id) + ":events") == 1, timeout=10)
        client.close()
        server.process.send_signal(signal.SIGSTOP)
        try:
            reader.join(timeout=10)
        finally:
            server.process.send_signal(signal.SIGCONT)
        assert not reader.is_alive()
        assert isinstance(outcome.get("error"), StoreUnavailable)
        store.append_text(message_id, "back")
        events = read_all(store, message_id, 1, 2, timeout=2)
        assert [(event.seq, event.payload["text"]) for event in events] == [(2, "back")]
    finally:
        store.close()
        server.stop()


def test_the_buffer_answers_every_position_as_a_filter_of_what_it_kept_would():
    """_Tail.after takes the newest entries from the right (their seqs are consecutive):
    for every position, over holes (an entry never heard) and a full buffer dropping its
    oldest, it gives what filtering the kept entries gives, or None when the entry right
    after the position is no longer kept."""
    tail = redis_tail._Tail(0, threading.Lock(), max_entries=8)
    heard = [1, 2, 3, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 2, 16, 20, 21]  # holes at 4 and 17-19
    for seq in heard:
        tail.add(seq, b"%d" % seq)
        kept = list(tail.entries)
        for position in range(0, tail.last_seq + 2):
            expected = [entry for entry in kept if entry[0] > position]
            if position < tail.last_seq and (not kept or kept[0][0] > position + 1):
                expected = None
            assert tail.after(position) == expected, (seq, position)
    assert [seq for seq, _ in tail.entries] == [20, 21]
