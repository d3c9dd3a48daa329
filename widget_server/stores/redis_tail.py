"""One XREAD per process for all its readers: the Redis store's fan-out.

Each open stream used to wait in its own blocking XREAD: a Redis connection
per reader, and a round trip per event per reader. The load bench measured
about 0.5 ms of CPU per event that way (redis-py's per-command cost, not
Redis), against 0.11 ms for the memory store. Here one thread per process
tails every message log its readers wait on with a single `XREAD BLOCK`
over all of them, keeps each log's newest entries, and wakes the readers of
a log when it grows; they take their events from memory.

A reader the buffer cannot serve (behind it, or the first read of a log)
reads Redis itself, once, then waits here; the store's continuity check and
snapshot-after-trimming stay in RedisStore.read_events.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from ..waiting import condition
from .base import StoreUnavailable

log = logging.getLogger(__name__)

# Entries kept per log: a reader further behind reads Redis itself.
BUFFER_ENTRIES = 512
# The longest one XREAD blocks. A log a reader starts waiting on joins the
# next XREAD, so this bounds the extra delay of a stream's first new event;
# later events are delivered as soon as Redis has them.
BLOCK_MS = 25
# A log nobody has waited on for this long is no longer tailed.
IDLE_SECONDS = 5.0


class _Tail:
    __slots__ = ("changed", "entries", "last_seq", "readers", "used_at")

    def __init__(self, after_seq: int, lock: threading.Lock, max_entries: int) -> None:
        self.last_seq = after_seq  # the newest seq read (or the position it started from)
        self.entries: collections.deque[tuple[int, bytes]] = collections.deque(maxlen=max_entries)
        self.readers = 0
        self.used_at = time.monotonic()
        self.changed = condition(lock)

    def add(self, seq: int, event: bytes) -> None:
        """Keep one entry the tailing XREAD returned (older or repeated ones are ignored)."""
        if seq <= self.last_seq:
            return
        if seq != self.last_seq + 1:
            # Redis trimmed entries before this tail read them (the log keeps
            # LOG_MAX_EVENTS): the buffer must not bridge the hole, or a
            # reader before it would get a gap instead of its snapshot
            # (tests/test_redis_store.py).
            self.entries.clear()
        self.entries.append((seq, event))
        self.last_seq = seq

    def after(self, after_seq: int) -> list[tuple[int, bytes]] | None:
        """Entries after `after_seq` ([] if none yet), or None if the buffer
        no longer holds the one right after it."""
        if self.last_seq <= after_seq:
            return []
        if not self.entries or self.entries[0][0] > after_seq + 1:
            return None
        return [entry for entry in self.entries if entry[0] > after_seq]


def _read_one_redis(client: Any, positions: dict[bytes, str]) -> Any:
    return client.xread(positions, count=BUFFER_ENTRIES, block=BLOCK_MS)


def _read_cluster_slot(client: Any, positions: dict[bytes, str]) -> Any:
    """XREAD on a cluster, sent to the master of the logs' one slot. redis-py cannot find an
    XREAD's keys by itself (they follow STREAMS) and asks a node with two `COMMAND GETKEYS`
    per call: bench/load.py counted 62,462 of them at N=500, all on the first seed. The node
    is looked up in the client's slot map each time, so a resharding is followed."""
    node = client.get_node_from_key(next(iter(positions)))
    return client.execute_command(
        "XREAD",
        "COUNT",
        BUFFER_ENTRIES,
        "BLOCK",
        BLOCK_MS,
        "STREAMS",
        *positions.keys(),
        *positions.values(),
        target_nodes=node,
    )


class TailHub:
    def __init__(
        self,
        client: Any,
        trouble: tuple[type[BaseException], ...],
        *,
        max_events: int,
        read: Callable[[Any, dict[bytes, str]], Any] = _read_one_redis,
    ) -> None:
        self.client = client
        self._read = read
        # Never more than the store keeps (LOG_MAX_EVENTS): a position the
        # store has evicted gets its snapshot here too, as documented.
        self.max_entries = max(1, min(BUFFER_ENTRIES, max_events))
        self._trouble = trouble
        self._lock = threading.Lock()
        self._tails: dict[bytes, _Tail] = {}
        self._running = False
        self._closed = False
        # Failures of the tailing XREAD: a reader fails only for one that
        # happens while it waits (never for a stale one after Redis is back).
        self._failures = 0
        self._error: BaseException | None = None

    def close(self) -> None:
        """Stop tailing (the store is closing); waiting readers time out."""
        with self._lock:
            self._closed = True
            self._tails.clear()

    def peek(self, key: bytes, after_seq: int) -> list[tuple[int, bytes]] | None:
        """Without waiting: entries after `after_seq` from the buffer ([] if
        the log is tailed and has nothing new), or None if this log is not
        tailed or the buffer cannot serve this position."""
        with self._lock:
            tail = self._tails.get(key)
            if tail is None:
                return None
            tail.used_at = time.monotonic()
            return tail.after(after_seq)

    def wait(self, key: bytes, after_seq: int, timeout: float) -> list[tuple[int, bytes]] | None:
        """Entries after `after_seq`, waiting up to `timeout` s for the first
        ([] on timeout); None if the buffer cannot serve this position.
        Raises StoreUnavailable while the tailing XREAD fails."""
        deadline = time.monotonic() + timeout
        with self._lock:
            failures_before = self._failures
            tail = self._tails.get(key)
            if tail is None:
                tail = self._tails[key] = _Tail(after_seq, self._lock, self.max_entries)
                if not self._running:
                    self._running = True
                    threading.Thread(target=self._run, name="redis-tail", daemon=True).start()
            tail.readers += 1
            try:
                while True:
                    found = tail.after(after_seq)
                    if found != []:
                        return found
                    if self._failures != failures_before:
                        raise StoreUnavailable(f"redis: {type(self._error).__name__}: {self._error}")
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        return []
                    tail.changed.wait(remaining)
            finally:
                tail.readers -= 1
                tail.used_at = time.monotonic()

    def _positions(self) -> dict[bytes, str] | None:
        with self._lock:
            now = time.monotonic()
            for key, tail in list(self._tails.items()):
                if not tail.readers and now - tail.used_at > IDLE_SECONDS:
                    del self._tails[key]
            if not self._tails or self._closed:
                self._running = False
                return None
            return {key: f"{tail.last_seq}-1" for key, tail in self._tails.items()}

    def _run(self) -> None:
        while True:
            positions = self._positions()
            if positions is None:
                return
            try:
                reply = self._read(self.client, positions)
            except Exception as error:
                if self._closed:
                    return  # the store closed its connections under us
                if not isinstance(error, self._trouble):
                    log.exception("tailing %d message log(s) failed", len(positions))
                else:
                    log.warning("tailing %d message log(s): %s", len(positions), error)
                with self._lock:
                    self._error = error
                    self._failures += 1
                    for tail in self._tails.values():
                        tail.changed.notify_all()
                time.sleep(0.2)
                continue
            with self._lock:
                for key, entries in _streams(reply):
                    read = self._tails.get(key)
                    if read is None or not entries:
                        continue
                    for entry_id, fields in entries:
                        read.add(int(entry_id.split(b"-")[0]), fields[b"e"])
                    read.changed.notify_all()


def _streams(reply: Any) -> list[tuple[bytes, list]]:
    """(key, entries) pairs of an XREAD reply, RESP2 or RESP3."""
    if not reply:
        return []
    if isinstance(reply, dict):  # RESP3: {key: [entries]} (redis-py may nest once more)
        pairs = []
        for key, value in reply.items():
            nested = value and value[0] and isinstance(value[0][0], (list, tuple))
            pairs.append((key, value[0] if nested else value))
        return pairs
    return [(key, entries) for key, entries in reply]


class SlotTails:
    """On a Redis Cluster, one TailHub per hash tag: an XREAD may name keys of one slot only
    (https://redis.io/docs/latest/operate/oss_and_stack/reference/cluster-spec/, "Key
    distribution model"), and every log of a bucket of conversations shares its tag
    (keyspace.py). So a process waits in at most one XREAD per bucket with readers, each in its
    own thread (a greenlet under gevent), and each hub stops when its logs go idle."""

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
        with self._lock:
            hub = self._hubs.get(tag)
            if hub is None:
                hub = self._hubs[tag] = TailHub(
                    self._client, self._trouble, max_events=self._max_events, read=_read_cluster_slot
                )
            return hub

    def close(self) -> None:
        with self._lock:
            for hub in self._hubs.values():
                hub.close()

    def peek(self, key: bytes, after_seq: int) -> list[tuple[int, bytes]] | None:
        return self._hub(key).peek(key, after_seq)

    def wait(self, key: bytes, after_seq: int, timeout: float) -> list[tuple[int, bytes]] | None:
        return self._hub(key).wait(key, after_seq, timeout)


def tail_hub(client: Any, trouble: tuple[type[BaseException], ...], *, max_events: int) -> TailHub | SlotTails:
    """The readers' fan-out for this client: one XREAD per process on one Redis, one per hash
    tag on a cluster."""
    from .redis_connection import is_cluster

    hub_class = SlotTails if is_cluster(client) else TailHub
    return hub_class(client, trouble, max_events=max_events)
