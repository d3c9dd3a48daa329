"""The Redis store's fan-out: each process hears the logs its readers wait on through Pub/Sub.

Every script that adds to a message log (or a hand-off log) also publishes the entry, as
`<seq> <event JSON>`, on a channel named like the log's key: PUBLISH on one Redis, SPUBLISH
(a shard channel, in the key's slot) on a Redis Cluster
(https://redis.io/docs/latest/develop/interact/pubsub/, "Sharded Pub/Sub"). One connection
per process (per bucket's hash tag on a cluster) subscribes to the logs its readers wait on,
keeps each log's newest entries, and wakes the readers of a log when it grows; they take
their events from memory.

It replaced one `XREAD BLOCK` over every tailed log: that command named all of them each
time, so its cost grew with the open streams, not with the events. Once appends went to
Redis in batches (script_batches.py) the XREAD came back with a few entries each time and
bench/load.py found it the largest part of a worker's CPU, much of it packing its arguments.

Pub/Sub delivers at most once and only while subscribed; the log stays the truth:
- a log's buffer is filled from the log itself (XREVRANGE) only after Redis has confirmed the
  subscription, so no entry falls between the two; an entry that is both is kept once;
- an entry whose seq is not the next one (one missed, or trimmed) clears the buffer, and a
  reader before the hole reads Redis itself: its snapshot, never a gap (_Tail.add);
- a lost connection (or a cluster moving the slot away) fails the readers waiting then, as
  before, and every log is subscribed and filled again;
- a reader that hears nothing for a whole wait reads Redis itself once (wait returns None),
  so an entry no script published (a process of an older version writing) is still read.

A reader the buffer cannot serve (behind it, or the first read of a log) reads Redis itself,
then waits here; the store's continuity check and snapshot-after-trimming stay in
RedisStore.read_events.

The log of an answer this process generates is not subscribed at all (`own`): its readers
here are fed each entry from the reply of the append that wrote it (`feed`, in write order:
script_batches.py `answered`), the entry exactly as Redis stored and published it. Only
another process's write is not fed, and every such write ends the answer (a cancel sent to
another host, a deleted conversation, a lost worker's failure): this process learns it from
its next write, refused, or from its RunKeeper's look at quiet runs (chat/generation.py), and
then follows the log as any other (`disown`: subscribe, then read the log from what the
buffer holds). So does a write whose reply was lost. An entry that is not fed still shows
as a hole at the next one that is, as above.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable, Iterable
from enum import Enum
from typing import Any

from ..waiting import condition, spawn
from .base import StoreUnavailable
from .script_batches import pack_command

log = logging.getLogger(__name__)

# Entries kept per log: a reader further behind reads Redis itself.
BUFFER_ENTRIES = 512
# A log nobody has waited on for this long is unsubscribed.
IDLE_SECONDS = 5.0
# How often a log nobody waits on is looked for.
HOUSEKEEPING_SECONDS = 1.0
# Channels named in one SUBSCRIBE (a resubscription of thousands is sent in parts).
SUBSCRIBE_CHUNK = 256
# A subscriber hears nothing while no answer streams, and its read gives up after the
# connection's socket timeout (redis_connection.COMMAND_TIMEOUT_SECONDS). Silence is not
# trouble: it sends a PING then, and only a connection that stays silent for a second timeout
# is lost (a Redis host that went away without a reset sends nothing). Redis replies to a
# PING in subscribed mode with a ["pong", ""] message
# (https://redis.io/docs/latest/commands/ping/); tests/test_redis_tail.py.
PING = pack_command((b"PING",))


class Subscription(Enum):
    ASKED = "asked"  # SUBSCRIBE sent (or to be sent on the next connection), not confirmed
    CONFIRMED = "confirmed"  # Redis said so; the buffer is not filled from the log yet
    FILLING = "filling"  # a reader is reading the log into the buffer
    LIVE = "live"  # the buffer follows the log
    # This process writes the log (it generates the answer): the buffer is fed with each of
    # its appends as Redis confirms it (feed), and nothing is subscribed (own, disown).
    OWN = "own"


# States in which the buffer holds the log's newest entries.
_FOLLOWED = (Subscription.LIVE, Subscription.OWN)


class _Tail:
    __slots__ = ("changed", "entries", "heard", "last_seq", "readers", "state", "used_at")

    def __init__(self, after_seq: int, lock: Any, max_entries: int) -> None:
        self.last_seq = after_seq  # the newest seq read (or the position it started from)
        self.entries: collections.deque[tuple[int, bytes]] = collections.deque(maxlen=max_entries)
        self.readers = 0
        self.used_at = time.monotonic()
        self.changed = condition(lock)
        self.state = Subscription.ASKED
        # Published while the buffer is not filled yet (no more than the buffer holds: an older
        # one lost here is a hole that add() sees).
        self.heard: collections.deque[tuple[int, bytes]] = collections.deque(maxlen=max_entries)

    def add(self, seq: int, event: bytes) -> None:
        """Keep one entry (older or repeated ones are ignored)."""
        if seq <= self.last_seq:
            return
        if seq != self.last_seq + 1:
            # An entry this process never heard (trimmed from the log, or published while it
            # was not subscribed): the buffer must not bridge the hole, or a reader before it
            # would get a gap instead of its snapshot (tests/test_redis_store.py).
            self.entries.clear()
        self.entries.append((seq, event))
        self.last_seq = seq

    def after(self, after_seq: int) -> list[tuple[int, bytes]] | None:
        """Entries after `after_seq` ([] if none yet), or None if the buffer
        no longer holds the one right after it."""
        if self.last_seq <= after_seq:
            return []
        entries = self.entries
        if not entries or entries[0][0] > after_seq + 1:
            return None
        # The entries' seqs are consecutive (add() clears the buffer at a hole), so the ones
        # wanted are the newest `last_seq - after_seq`: taken from the right, not found by
        # walking all of a long buffer for each read (which showed in a worker's CPU profile
        # at N=2,000, bench/load.py).
        size = len(entries)
        return [entries[index] for index in range(size - (self.last_seq - after_seq), size)]


def _hang_up(pool: Any, connection: Any) -> None:
    connection.disconnect()
    pool.release(connection)


def _seq_and_event(data: bytes) -> tuple[int, bytes]:
    seq, _, event = data.partition(b" ")
    return int(seq), event


class TailHub:
    """The subscriber of one Redis server (or of one hash tag's master on a cluster)."""

    def __init__(
        self,
        client: Any,
        trouble: tuple[type[BaseException], ...],
        *,
        max_events: int,
        pool: Callable[[], Any] | None = None,
        sharded: bool = False,
    ) -> None:
        self.client = client
        # Where the subscriber's connection comes from (looked up at each connection: a
        # cluster's slot may have moved to another master).
        self._pool = pool or (lambda: client.connection_pool)
        self._subscribe, self._unsubscribe = (
            (b"SSUBSCRIBE", b"SUNSUBSCRIBE") if sharded else (b"SUBSCRIBE", b"UNSUBSCRIBE")
        )
        self._message = b"smessage" if sharded else b"message"
        self._confirmation = b"ssubscribe" if sharded else b"subscribe"
        self._ended = b"sunsubscribe" if sharded else b"unsubscribe"
        # Never more than the store keeps (LOG_MAX_EVENTS): a position the
        # store has evicted gets its snapshot here too, as documented.
        self.max_entries = max(1, min(BUFFER_ENTRIES, max_events))
        self._trouble = trouble
        from redis.exceptions import TimeoutError

        self._timeout = TimeoutError
        self._lock = threading.Lock()
        self._send_lock = threading.Lock()  # one command at a time on the subscriber's socket
        self._tails: dict[bytes, _Tail] = {}
        self._connection: Any = None
        self._running = False
        self._epoch = 0  # which start of the subscriber a housekeeper belongs to
        self._closed = False
        # Failures of the subscriber: a reader fails only for one that happens while it
        # waits (never for a stale one after Redis is back).
        self._failures = 0
        self._error: BaseException | None = None

    def close(self) -> None:
        """Stop listening (the store is closing); waiting readers time out."""
        with self._lock:
            self._closed = True
            self._tails.clear()
            connection = self._connection
        if connection is not None:
            connection.disconnect()  # ends the subscriber's read: it sees the store closed

    def peek(self, key: bytes, after_seq: int) -> list[tuple[int, bytes]] | None:
        """Without waiting: entries after `after_seq` from the buffer ([] if
        the log is followed and has nothing new), or None if this log is not
        followed yet or the buffer cannot serve this position."""
        with self._lock:
            tail = self._tails.get(key)
            if tail is None or tail.state not in _FOLLOWED:
                return None
            tail.used_at = time.monotonic()
            return tail.after(after_seq)

    def follows(self, key: bytes) -> bool:
        """Whether this process hears `key`'s log already (else wait() subscribes and reads
        the log's newest entries itself: the caller need not read Redis first)."""
        with self._lock:
            return key in self._tails

    def wait(self, key: bytes, after_seq: int, timeout: float) -> list[tuple[int, bytes]] | None:
        """Entries after `after_seq`, waiting up to `timeout` s for the first;
        None if the buffer cannot serve this position, or if nothing came (the
        caller reads Redis once). Raises StoreUnavailable while the subscriber fails."""
        deadline = time.monotonic() + timeout
        with self._lock:
            failures_before = self._failures
            tail = self._tails.get(key)
            if tail is None:
                tail = self._tails[key] = _Tail(after_seq, self._lock, self.max_entries)
                connection = self._connection
                if not self._running:
                    self._start()
            else:
                connection = None
            tail.readers += 1
        try:
            if connection is not None:
                # Without a connection the subscriber asks for every log when it connects.
                self._send(connection, self._subscribe, [key])
            with self._lock:
                while True:
                    if tail.state in _FOLLOWED:
                        found = tail.after(after_seq)
                        if found != []:
                            return found
                    elif tail.state is Subscription.CONFIRMED:
                        self._fill(key, tail)
                        continue
                    # (An owned log hears nothing from the subscriber: its trouble is not this
                    # reader's; a failing Redis fails the writer, which disowns the log.)
                    if self._failures != failures_before and tail.state is not Subscription.OWN:
                        raise StoreUnavailable(f"redis: {type(self._error).__name__}: {self._error}")
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        return None
                    tail.changed.wait(remaining)
        finally:
            with self._lock:
                tail.readers -= 1
                tail.used_at = time.monotonic()

    def own(self, key: bytes) -> None:
        """This process is about to write `key`'s log from its start (it claimed the answer and
        generates it): its readers here take the entries from feed(), and nothing is
        subscribed. Pub/Sub would only bring back, a round trip later and parsed again, what
        this process's own appends returned (bench/load.py, redis-2w: the subscriber's reading
        and the SUBSCRIBE and fill of each new answer were a large share of a worker's CPU).

        Any other process may end the answer too (a cancel sent to another host, a
        conversation deleted there): this process learns it when Redis refuses its next write
        or its RunKeeper finds the state ended, and the store disowns the log then."""
        with self._lock:
            if key in self._tails:
                return  # followed already: stays as it is
            tail = self._tails[key] = _Tail(0, self._lock, self.max_entries)
            tail.state = Subscription.OWN
            if not self._running:
                self._start()  # its housekeeper forgets the log once nobody reads it

    def feed(self, key: bytes, seq: int, event: bytes) -> None:
        """An entry of an owned log, as Redis stored it: its writer's reply, in write order."""
        with self._lock:
            tail = self._tails.get(key)
            if tail is None or tail.state is not Subscription.OWN:
                return
            tail.add(seq, event)  # a write not fed (a hole) clears the buffer: add() says why
            tail.changed.notify_all()

    def disown(self, key: bytes) -> None:
        """The owned log may hold entries this process did not feed (another process ended the
        answer, or a write's reply was lost): follow it from now on as any other log, through
        Pub/Sub and one read of the log after the subscription (from what the buffer holds)."""
        with self._lock:
            tail = self._tails.get(key)
            if tail is None or tail.state is not Subscription.OWN:
                return
            tail.state = Subscription.ASKED
            connection = self._connection
            if not self._running:
                self._start()  # it subscribes every log asked for when it connects
            tail.changed.notify_all()
        if connection is not None:
            self._send(connection, self._subscribe, [key])

    def _fill(self, key: bytes, tail: _Tail) -> None:
        """Read the log's newest entries into the buffer (called with the lock held; the lock
        is let go during the read). Redis has confirmed the subscription: every entry after
        the ones read arrives as a message, and those heard meanwhile wait in `heard`."""
        tail.state = Subscription.FILLING
        self._lock.release()
        try:
            newest = self.client.xrevrange(key, max="+", min=f"({tail.last_seq}-1", count=self.max_entries)
        except BaseException:
            self._lock.acquire()
            if tail.state is Subscription.FILLING:
                tail.state = Subscription.CONFIRMED
            raise
        self._lock.acquire()
        if tail.state is not Subscription.FILLING:
            return  # the connection was lost meanwhile: subscribed and filled again
        for entry_id, fields in reversed(newest):
            tail.add(int(entry_id.split(b"-")[0]), fields[b"e"])
        for seq, event in tail.heard:
            tail.add(seq, event)
        tail.heard.clear()
        tail.state = Subscription.LIVE
        tail.changed.notify_all()

    def _send(self, connection: Any, command: bytes, keys: list[bytes]) -> None:
        try:
            with self._send_lock:
                for start in range(0, len(keys), SUBSCRIBE_CHUNK):
                    part = pack_command((command, *keys[start : start + SUBSCRIBE_CHUNK]))
                    # No health check: its PING's reply would be read by the subscriber.
                    connection.send_packed_command([part], check_health=False)
        except Exception as error:  # the subscriber sees the broken connection and asks again
            log.debug("%s on the subscriber's connection failed: %s", command.decode(), error)

    def _connect(self) -> tuple[Any, Any]:
        pool = self._pool()
        connection = pool.get_connection()
        with self._lock:
            self._connection = connection
            keys = [key for key, tail in self._tails.items() if tail.state is not Subscription.OWN]
            for key in keys:
                self._tails[key].state = Subscription.ASKED
        if keys:
            with self._send_lock:
                for start in range(0, len(keys), SUBSCRIBE_CHUNK):
                    command = pack_command((self._subscribe, *keys[start : start + SUBSCRIBE_CHUNK]))
                    connection.send_packed_command([command], check_health=False)
        return pool, connection

    def _start(self) -> None:
        """Start the subscriber and its housekeeper (called with the lock held)."""
        self._running = True
        self._epoch += 1
        epoch = self._epoch
        spawn(self._run, "redis-tail")
        spawn(lambda: self._housekeep(epoch), "redis-tail-idle")

    def _housekeep(self, epoch: int) -> None:
        """Every HOUSEKEEPING_SECONDS: forget the logs nobody waited on lately and unsubscribe
        them. The subscriber stops once nothing is followed (when Redis confirms the last
        unsubscription), and so does this."""
        while True:
            time.sleep(HOUSEKEEPING_SECONDS)
            with self._lock:
                if self._epoch != epoch or not self._running:
                    return
                now = time.monotonic()
                idle = [
                    key for key, tail in self._tails.items() if not tail.readers and now - tail.used_at > IDLE_SECONDS
                ]
                subscribed = [key for key in idle if self._tails[key].state is not Subscription.OWN]
                for key in idle:
                    del self._tails[key]
                connection = self._connection
            if subscribed and connection is not None:
                self._send(connection, self._unsubscribe, subscribed)

    def _stopping(self) -> bool:
        """Whether the subscriber stops now: nothing is followed, or the store closed (called
        with the lock held)."""
        if self._tails and not self._closed:
            return False
        self._running = False
        self._connection = None
        return True

    def _run(self) -> None:
        pool = connection = None
        pinged = False  # a PING is unanswered: the connection was silent for a whole timeout
        while True:
            try:
                if connection is None:
                    pool, connection = self._connect()
                    with self._lock:
                        stop = self._stopping()  # closed, or every log forgotten, meanwhile
                    if stop:
                        _hang_up(pool, connection)
                        return
                # Blocks until Redis sends something, up to the socket timeout: no timeout to
                # arm per wait. A timeout rewinds the parser's buffer (nothing is lost) and,
                # without disconnect_on_error, keeps the connection for the PING.
                try:
                    first = connection.read_response(push_request=True, disconnect_on_error=False)
                except self._timeout:
                    if pinged:
                        raise
                    pinged = True
                    with self._send_lock:
                        connection.send_packed_command([PING], check_health=False)
                    continue
                pinged = False
                messages = [first]
                while connection.can_read(timeout=0):  # what is already here, under one lock
                    messages.append(connection.read_response(push_request=True))
                self._hear(messages)
                with self._lock:
                    stop = self._stopping()
                if stop:
                    _hang_up(pool, connection)
                    return
            except Exception as error:
                pinged = False
                if connection is not None:
                    _hang_up(pool, connection)
                    connection = None
                with self._lock:
                    self._connection = None
                    if self._stopping():
                        return
                    if not isinstance(error, self._trouble):
                        log.exception("following %d message log(s) failed", len(self._tails))
                    else:
                        log.warning("following %d message log(s): %s", len(self._tails), error)
                    self._error = error
                    self._failures += 1
                    for tail in self._tails.values():
                        if tail.state is not Subscription.OWN:
                            tail.state = Subscription.ASKED
                            tail.heard.clear()
                            tail.changed.notify_all()
                time.sleep(0.2)

    def _hear(self, messages: Iterable[Any]) -> None:
        woken: set[_Tail] = set()
        with self._lock:
            for message in messages:
                if not isinstance(message, list) or len(message) < 3:
                    continue  # a PING's reply: the connection is alive
                kind, channel, data = message[0], message[1], message[2]
                tail = self._tails.get(channel)
                if tail is None or tail.state is Subscription.OWN:
                    continue  # (an owned log is not subscribed: a reply of its past, if any)
                if kind == self._message:
                    if tail.state is Subscription.LIVE:
                        tail.add(*_seq_and_event(data))
                        woken.add(tail)
                    elif tail.state is not Subscription.ASKED:
                        tail.heard.append(_seq_and_event(data))
                elif kind == self._confirmation:
                    if tail.state is Subscription.ASKED:
                        tail.state = Subscription.CONFIRMED
                        woken.add(tail)
                elif kind == self._ended and tail.state is not Subscription.ASKED:
                    # Not asked for by this process (it forgets a log before unsubscribing):
                    # a cluster moved the slot. Connect again, to the slot's master now.
                    from redis.exceptions import ConnectionError

                    raise ConnectionError(f"Redis ended the subscription of {channel!r}")
            for tail in woken:
                tail.changed.notify_all()


class SlotTails:
    """On a Redis Cluster, one TailHub per hash tag, each subscribed on the master of its slot
    (a shard channel lives in its slot: every log of a bucket of conversations shares its tag,
    keyspace.py). So a process holds at most one subscriber per bucket with readers, each in
    its own thread (a greenlet under gevent), and each stops when its logs go idle."""

    def __init__(self, client: Any, trouble: tuple[type[BaseException], ...], *, max_events: int) -> None:
        self._client = client
        self._trouble = trouble
        self._max_events = max_events
        self._lock = threading.Lock()
        self._hubs: dict[bytes, TailHub] = {}

    def _hub(self, key: bytes) -> TailHub:
        start = key.find(b"{")
        end = key.find(b"}", start + 1)
        tag = key[start + 1 : end] if start >= 0 and end > start + 1 else key
        hub = self._hubs.get(tag)  # made once per tag: looked up without the lock after that
        if hub is not None:
            return hub
        with self._lock:
            hub = self._hubs.get(tag)
            if hub is None:
                client = self._client

                def pool() -> Any:
                    return client.get_redis_connection(client.get_node_from_key(key)).connection_pool

                hub = self._hubs[tag] = TailHub(
                    client, self._trouble, max_events=self._max_events, pool=pool, sharded=True
                )
            return hub

    def close(self) -> None:
        with self._lock:
            for hub in self._hubs.values():
                hub.close()

    def peek(self, key: bytes, after_seq: int) -> list[tuple[int, bytes]] | None:
        return self._hub(key).peek(key, after_seq)

    def follows(self, key: bytes) -> bool:
        return self._hub(key).follows(key)

    def wait(self, key: bytes, after_seq: int, timeout: float) -> list[tuple[int, bytes]] | None:
        return self._hub(key).wait(key, after_seq, timeout)

    def own(self, key: bytes) -> None:
        self._hub(key).own(key)

    def feed(self, key: bytes, seq: int, event: bytes) -> None:
        self._hub(key).feed(key, seq, event)

    def disown(self, key: bytes) -> None:
        self._hub(key).disown(key)


def publish_command(client: Any) -> str:
    """The command a script publishes a log's new entry with (an ARGV of the scripts)."""
    from .redis_connection import is_cluster

    return "SPUBLISH" if is_cluster(client) else "PUBLISH"


def tail_hub(client: Any, trouble: tuple[type[BaseException], ...], *, max_events: int) -> TailHub | SlotTails:
    """The readers' fan-out for this client: one subscriber per process on one Redis, one per
    hash tag on a cluster."""
    from .redis_connection import is_cluster

    if is_cluster(client):
        return SlotTails(client, trouble, max_events=max_events)
    return TailHub(client, trouble, max_events=max_events)
