"""Concurrent calls of one Lua script, sent to Redis together (a group commit; docs/serving.md, "Load on Redis").

Every delta of every answer is one call of the append script (stores/redis/lua/append.lua). Sent one
by one, each call took a pooled connection, was packed by redis-py, cost a send and a receive
syscall on both sides and a greenlet switch to wait: py-spy found a large share of a worker's
CPU in those calls at N=500 (bench/load.py, redis-2w), and Redis spent its time on the sockets of
500 clients. Here one sender per Redis server (a thread; a greenlet under gevent) sends
what was submitted while its previous batch was on the wire as the next batch: one send,
one read of the replies, one connection at a time per process (per master on a cluster).
A lone call goes at once; nothing waits for a timer, so an idle server's latency is
unchanged. A caller may wait for its reply (`__call__`) or not (`submit`, then
`Call.result()` when it needs it: RedisStore.append_text_soon).

A batch is not a transaction, and nothing about a call changes by being in one:
- each script is atomic in Redis, as before; Redis runs a batch's scripts one after another,
  like the same calls from separate connections;
- an error reply fails only its own call. NOSCRIPT (a restarted Redis lost its scripts) means
  the script did not run: it is loaded and the call sent again. MOVED or ASK (a cluster moving
  a slot) means it did not run either: the call goes through redis-py, which follows them;
- a connection error fails every call of the batch still without a reply, and none is sent
  again: a call whose reply was lost may have run (stores/redis/unavailable.py);
- calls to one server are sent in the order they were submitted, and all of a message's keys
  are on one server, so an answer's appends and its ending stay in order.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from ..waiting import Flag, spawn

log = logging.getLogger(__name__)

Arg = str | int | bytes


def pack_command(parts: Sequence[Arg]) -> bytes:
    """One command in RESP (https://redis.io/docs/latest/develop/reference/protocol-spec/,
    "Sending commands to a Redis server": an array of bulk strings)."""
    out = [b"*%d\r\n" % len(parts)]
    for part in parts:
        if isinstance(part, str):
            part = part.encode()
        elif isinstance(part, int):
            part = b"%d" % part
        out += (b"$%d\r\n" % len(part), part, b"\r\n")
    return b"".join(out)


class Call:
    """One call of the script, sent or about to be: result() waits for its reply."""

    __slots__ = ("args", "batch", "error", "keys", "packed", "replied", "reply")

    def __init__(self, keys: Sequence[str], args: Sequence[Arg], packed: bytes) -> None:
        self.keys = keys
        self.args = args
        self.packed = packed
        self.batch: _Batch | None = None
        self.replied = False
        self.reply: Any = None
        self.error: BaseException | None = None

    def answer(self, reply: Any) -> None:
        self.reply = reply
        self.replied = True

    def result(self) -> Any:
        """The script's reply (waiting for it), or its error raised."""
        if self.batch is not None:
            self.batch.done.wait()
        if self.error is not None:
            raise self.error
        return self.reply


class _Batch:
    __slots__ = ("calls", "done")

    def __init__(self) -> None:
        self.calls: list[Call] = []
        self.done = Flag()  # set once every call of the batch has its reply or error


class _Lane:
    """The batches to one Redis server: one sender, one batch on the wire at a time."""

    def __init__(self, pool: Callable[[], Any], script: ScriptBatches) -> None:
        self._pool = pool  # the server's connection pool
        self._script = script
        self._lock = threading.Lock()
        self._turn = threading.Lock()  # held by the batch on the wire
        self._next = _Batch()
        self._sending = False
        self.batches_sent = 0  # (tests/test_script_batches.py)

    def submit(self, call: Call) -> None:
        """Queue `call` for the next batch, without waiting (call.result() waits)."""
        with self._lock:
            batch = call.batch = self._next
            batch.calls.append(call)
            if self._sending:
                return
            self._sending = True
        # A thread (a greenlet under gevent) sends while calls keep coming, so a caller that
        # does not wait for its reply (RedisStore.append_text_soon) is never the one sending.
        spawn(self._send_while_queued, "redis-batches")

    def _send_while_queued(self) -> None:
        while True:
            with self._turn:
                # Let the calls that are ready to run now join this batch: writers whose
                # timers fired in the same turn of the loop (a sleep(0) under gevent, a GIL
                # release with threads).
                time.sleep(0)
                with self._lock:
                    batch = self._next
                    if not batch.calls:
                        self._sending = False
                        return
                    self._next = _Batch()  # later calls join the next batch
                try:
                    self._send(batch.calls)
                except BaseException:  # the calls have their error; this thread ends
                    with self._lock:
                        self._sending = False
                    self._finish(batch)
                    if self._next.calls:
                        self._restart()
                    raise
                self._finish(batch)

    def _finish(self, batch: _Batch) -> None:
        answered = self._script.answered
        if answered is not None:
            # In the order the calls were submitted, each with its final outcome, before any
            # caller learns it (RedisStore feeds this process's own logs from here).
            for call in batch.calls:
                try:
                    answered(call)
                except Exception:  # a caller waits for `done` whatever happens here
                    log.exception("after a reply of the batched script")
        batch.done.set()
        # Each call keeps its batch (result() waits on `done`): the batch lets go of its calls,
        # so call and batch are not a reference cycle and are freed as soon as the caller
        # drops the call, not at the collector's next pass (one call per event: 11,549 calls
        # and their key and argument lists were the garbage of one worker's run at N=500,
        # bench/load.py redis-2w, gc.DEBUG_SAVEALL; tests/test_script_batches.py).
        batch.calls = []

    def _restart(self) -> None:
        with self._lock:
            if self._sending or not self._next.calls:
                return
            self._sending = True
        spawn(self._send_while_queued, "redis-batches")

    def _send(self, calls: list[Call]) -> None:
        from redis.exceptions import AskError, ConnectionError, MovedError, NoScriptError, ResponseError

        # Taken from the pool for each batch, so that the pool's checks apply: a connection
        # Redis closed (a restart) is made again before it is used, a forked child gets its own.
        pool = self._pool()
        connection = None
        unsent = calls
        try:
            connection = pool.get_connection()
            for attempt in range(2):
                self.batches_sent += 1
                connection.send_packed_command([b"".join(call.packed for call in unsent)])
                for call in unsent:
                    try:
                        call.answer(connection.read_response())
                    except ResponseError as error:
                        call.answer(error)
                unsent = [call for call in unsent if isinstance(call.reply, NoScriptError)]
                if not unsent or attempt:
                    break
                connection.send_packed_command([pack_command(("SCRIPT", "LOAD", self._script.source))])
                connection.read_response()
                for call in unsent:
                    call.replied = False  # sent again: a failure now is its outcome
        except BaseException as error:
            if connection is not None:
                connection.disconnect()
            self._script.lost_connection()
            # Another caller's greenlet must not receive this one's GreenletExit or Timeout.
            failure = error if isinstance(error, Exception) else ConnectionError("the batch was interrupted")
            for call in calls:
                if not call.replied:
                    call.error = failure
            if failure is not error:
                raise
            return
        finally:
            if connection is not None:
                pool.release(connection)
        for call in calls:
            if isinstance(call.reply, (MovedError, AskError)):
                try:
                    call.answer(self._script.redirected(call.keys, call.args))
                except Exception as error:
                    call.error = error
            elif isinstance(call.reply, ResponseError):
                call.error = call.reply


class ScriptBatches:
    """Calls of `source` on `client` (redis-py's Redis or RedisCluster), batched per server.
    `redirected(keys, args)` makes one call through redis-py (its Script object), for a call a
    cluster answered with MOVED or ASK. `answered(call)`, if given, is called once per call
    with its outcome (`reply`, or `error`), in the order calls were submitted to a server,
    before result() returns to anyone: it must not block (it runs in the sender)."""

    def __init__(
        self,
        client: Any,
        source: str,
        redirected: Callable[[Sequence[str], Sequence[Arg]], Any],
        answered: Callable[[Call], None] | None = None,
    ) -> None:
        from .redis_connection import is_cluster

        self.source = source
        self.redirected = redirected
        self.answered = answered
        self._client = client
        self._cluster = is_cluster(client)
        self._prefix = (b"EVALSHA", hashlib.sha1(source.encode()).hexdigest().encode())
        self._lock = threading.Lock()
        self._lanes: dict[str, _Lane] = {}
        self._single = None if self._cluster else _Lane(lambda: client.connection_pool, self)

    def __call__(self, keys: Sequence[str], args: Sequence[Arg]) -> Any:
        """One call: its reply, once it has come."""
        return self.submit(keys, args).result()

    def submit(self, keys: Sequence[str], args: Sequence[Arg]) -> Call:
        """One call, sent with the next batch; its result() waits for the reply. Calls on the
        same server are sent in the order they were submitted."""
        call = Call(keys, args, pack_command((*self._prefix, len(keys), *keys, *args)))
        self._lane(keys[0]).submit(call)
        return call

    def _lane(self, key: str) -> _Lane:
        if self._single is not None:
            return self._single
        node = self._client.get_node_from_key(key)
        lane = self._lanes.get(node.name)
        if lane is None:
            with self._lock:
                lane = self._lanes.get(node.name)
                if lane is None:
                    client = self._client
                    lane = self._lanes[node.name] = _Lane(
                        lambda: client.get_redis_connection(node).connection_pool, self
                    )
        return lane

    @property
    def batches_sent(self) -> int:
        lanes = [self._single] if self._single is not None else list(self._lanes.values())
        return sum(lane.batches_sent for lane in lanes)

    def lost_connection(self) -> None:
        """A server stopped answering: on a cluster, read the slot map again (redis-py does the
        same after a connection error), so calls go to the master that took its slots over."""
        if not self._cluster:
            return
        try:
            self._client.nodes_manager.initialize()
        except Exception:  # no node answers yet: the next failure tries again
            pass
