"""The Redis store's fan-out through Pub/Sub (widget_server/stores/redis_tail.py), against a
real redis-server and a real 3-master Redis Cluster (SPUBLISH, SSUBSCRIBE).

Pub/Sub delivers at most once and only while subscribed; these show that a reader still gets
every event once and in order: entries written before the subscription, an entry nobody
published (a process of an older version), a subscriber connection Redis closed, a
subscriber that hears nothing for longer than its read timeout, a Redis that stops
answering, and that a log nobody waits on is unsubscribed. The process that generates an
answer reads its log without Pub/Sub (TailHub.own): the tests at the end show that its
readers get every entry once and in order, also when another process ends the answer or a
write's reply is lost."""

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
    """The reader: a process that did not write the logs it reads, so it hears them."""
    store = RedisStore(server.url)
    yield store
    store.close()


@pytest.fixture
def writer(server):
    """The process that claims and generates the answers (it owns their logs: its own
    readers would take its entries without Pub/Sub, as the tests at the end show)."""
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


def test_a_waiting_reader_gets_what_was_written_before_and_after_it_subscribed(store, writer):
    message_id = running(writer)
    writer.append_text(message_id, "before ")  # seq 2, never published to this reader
    got: list = []
    reader = threading.Thread(target=lambda: read_all(store, message_id, 1, 4, timeout=2, events=got))
    reader.start()
    assert wait_until(lambda: got, timeout=10)
    writer.append_text(message_id, "after, ")
    writer.append_text(message_id, "and more")
    reader.join(timeout=10)
    assert [(event.seq, event.kind) for event in got] == [
        (2, EventKind.DELTA),
        (3, EventKind.DELTA),
        (4, EventKind.DELTA),
    ]
    assert "".join(event.payload["text"] for event in got) == "before after, and more"


def test_an_entry_nobody_published_is_still_read_in_order(store, writer, server):
    """A process of an older version appends without publishing: the next published entry
    shows the hole (the buffer never bridges it), and a lone one is found after a wait."""
    message_id = running(writer)
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
        writer.append_text(message_id, "loud")  # seq 4, published
        events = read_all(store, message_id, 2, 4)
        assert [(event.seq, event.payload["text"]) for event in events] == [(3, "gap "), (4, "loud")]
    finally:
        client.close()


def test_a_lost_subscriber_connection_fails_waiting_readers_then_every_event_arrives_once(store, writer, server):
    message_id = running(writer)
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
        writer.append_text(message_id, text)
    events = read_all(store, message_id, 1, 4, timeout=2)
    assert [event.seq for event in events] == [2, 3, 4]
    assert "".join(event.payload["text"] for event in events) == "one two three"


def test_a_log_nobody_waits_on_is_unsubscribed(store, writer, server, monkeypatch):
    monkeypatch.setattr(redis_tail, "IDLE_SECONDS", 0.2)
    monkeypatch.setattr(redis_tail, "HOUSEKEEPING_SECONDS", 0.1)
    message_id = running(writer)
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
    store, writer = RedisStore(server.url), RedisStore(server.url)
    try:
        message_id = running(writer)
        read_all(store, message_id, 0, 1)
        with caplog.at_level(logging.WARNING, logger=redis_tail.__name__):
            assert store.read_events(message_id, 1, 2.0) == []  # six timeouts of silence
            writer.append_text(message_id, "after the silence")
            events = read_all(store, message_id, 1, 2, timeout=2)
        assert [(event.seq, event.payload["text"]) for event in events] == [(2, "after the silence")]
        assert [record.getMessage() for record in caplog.records] == []
    finally:
        store.close()
        writer.close()


def test_a_redis_that_stops_answering_fails_the_waiting_reader_within_two_timeouts(monkeypatch):
    """A host that hangs sends no reset: the unanswered PING is what tells the subscriber.
    SIGSTOP freezes a dedicated redis-server; the reader fails instead of waiting forever,
    and once Redis answers again every event arrives."""
    monkeypatch.setattr(redis_connection, "COMMAND_TIMEOUT_SECONDS", 0.3)
    server = RedisServer().start()
    store, writer = RedisStore(server.url), RedisStore(server.url)
    try:
        message_id = running(writer)
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
        writer.append_text(message_id, "back")
        events = read_all(store, message_id, 1, 2, timeout=2)
        assert [(event.seq, event.payload["text"]) for event in events] == [(2, "back")]
    finally:
        store.close()
        writer.close()
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
        for position in range(tail.last_seq + 2):
            expected = [entry for entry in kept if entry[0] > position]
            if position < tail.last_seq and (not kept or kept[0][0] > position + 1):
                expected = None
            assert tail.after(position) == expected, (seq, position)
    assert [seq for seq, _ in tail.entries] == [20, 21]


# -- logs this process writes (TailHub.own): fed by its appends, nothing subscribed -------------


def test_the_process_generating_an_answer_reads_its_log_without_subscribing(writer, server):
    message_id = running(writer)  # claimed here: this process owns the log
    got: list = []
    reader = threading.Thread(target=lambda: read_all(writer, message_id, 0, 5, timeout=2, events=got))
    reader.start()
    for text in ("one ", "two ", "thr", "ee"):
        writer.append_text(message_id, text)
    reader.join(timeout=10)
    assert [event.seq for event in got] == [1, 2, 3, 4, 5]
    assert "".join(event.payload.get("text", "") for event in got) == "one two three"
    client = redis_client(server.url)
    try:
        assert _subscribers(client, writer._msg(message_id) + ":events") == 0
    finally:
        client.close()


@pytest.mark.parametrize("learns_by", ["its next write refused", "its keeper finding it ended"])
def test_an_answer_another_process_ends_reaches_the_owners_readers_once_the_owner_learns_it(store, writer, learns_by):
    """A cancel sent to another host is a write this process never fed: its readers get the
    cancelled event, exactly once and in order, as soon as the owner learns of it (a refused
    write, or the RunKeeper's look at quiet runs: chat/generation.py), through Redis."""
    message_id = running(writer)
    assert writer.append_text(message_id, "partial") is not None  # seq 2
    got: list = []
    # A wait long enough that the reader's own look at Redis after a silent wait (30 s) is
    # not what brings the cancel: the owner's learning it is.
    reader = threading.Thread(target=lambda: read_all(writer, message_id, 0, 3, timeout=30, events=got))
    reader.start()
    assert wait_until(lambda: [event.seq for event in got] == [1, 2], timeout=10)
    assert store.cancel(message_id) is not None  # another process: seq 3
    if learns_by == "its next write refused":
        assert writer.append_text(message_id, "never") is None
    else:
        assert writer.keep_runs([message_id], renew=False)[message_id].terminal
    reader.join(timeout=10)
    assert not reader.is_alive()
    assert [(event.seq, event.kind) for event in got] == [
        (1, EventKind.STARTED),
        (2, EventKind.DELTA),
        (3, EventKind.CANCELLED),
    ]


def test_an_entry_the_owner_never_fed_is_read_from_redis_in_order(writer, server):
    """An entry in an owned log that the owner's replies did not bring (written by an older
    version, or a write whose reply was lost) leaves a hole at the next fed entry: the buffer
    does not bridge it, and the reader reads Redis."""
    message_id = running(writer)
    assert read_all(writer, message_id, 0, 1)[-1].seq == 1
    client = redis_client(server.url)
    try:
        client.hincrby(writer._msg(message_id), "last_seq", 1)
        client.xadd(
            writer._msg(message_id) + ":events",
            {"e": f'{{"kind":"text.delta","text":"quiet ","seq":2,"message_id":"{message_id}"}}'},
            id="2-1",
        )
    finally:
        client.close()
    writer.append_text(message_id, "loud")  # seq 3, fed
    events = read_all(writer, message_id, 1, 3, timeout=30)  # (not the look after a silent wait)
    assert [(event.seq, event.payload["text"]) for event in events] == [(2, "quiet "), (3, "loud")]


def test_a_write_whose_reply_was_lost_disowns_the_log_and_its_readers_read_redis(writer, server):
    """The write ran in Redis but its reply never came (a connection lost after sending): the
    store cannot feed what it did not receive, so it follows the log through Pub/Sub from
    then on; the entry it missed is read from the log after subscribing."""
    from widget_server.stores.script_batches import Call

    message_id = running(writer)
    assert read_all(writer, message_id, 0, 1)[-1].seq == 1
    other = RedisStore(server.url)  # the write that ran: made elsewhere, so nothing feeds it
    try:
        assert other.append_text(message_id, "ran") is not None  # seq 2
    finally:
        other.close()
    keys = writer._append_keys(message_id)
    lost = Call(keys, ["text", "{}", "ran"], b"")
    lost.error = ConnectionError("the reply was lost")
    writer._appended(lost)
    events = read_all(writer, message_id, 1, 2, timeout=30)  # (not the look after a silent wait)
    assert [(event.seq, event.payload["text"]) for event in events] == [(2, "ran")]
    client = redis_client(server.url)
    try:
        assert wait_until(lambda: _subscribers(client, keys[2]) == 1, timeout=10)
    finally:
        client.close()
