"""The one loop of a resumable event stream, for an answer's and a conversation's alike.

docs/protocol.md, "Resuming": a stream opens with `retry:` at once (the reader sees it open and
learns the reconnection delay before anything is said), sends what the log holds after the
reader's position, keeps a quiet connection alive with a heartbeat comment every
HEARTBEAT_SECONDS without bytes, and ends without a terminal event when the worker stops or the
store cannot be reached, so the reader resumes exactly where it was. What differs between the
two streams (which log, what ends them, what a quiet moment is for) is their `LogSource`:
`chat/service.py`'s `EventStream` and `handoff/service.py`'s `ConversationSource`.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Protocol

from . import sse
from .stores.base import StoreUnavailable

# Comments a reader ignores (HTML, 9.2.6: a line starting with ":"), for whoever reads the bytes.
HEARTBEAT = sse.encode_comment("heartbeat")
RESTARTING = sse.encode_comment("server restarting; resume")
STORE_UNAVAILABLE = sse.encode_comment("store unavailable; resume shortly")


class StopSignal(Protocol):
    """A threading.Event as the loop uses it (gevent's, in a gevent worker)."""

    def is_set(self) -> bool: ...


class LogSource(Protocol):
    """What one stream reads, and when it ends."""

    def begin(self, after_seq: int) -> tuple[bytes, int] | None:
        """Called once, before the first read: what to send first (a snapshot, or b"") and the
        position to read after; None when the reader already has everything (end now)."""

    @property
    def stopping(self) -> StopSignal:
        """Set when this worker is stopping (then the stream ends, to be resumed elsewhere): the
        service's own event, whose `is_set` the loop binds once."""

    def read(self, seq: int) -> tuple[bytes, int, bool] | None:
        """The events after `seq` (waiting up to the source's own poll for some), encoded: the
        bytes, the position after them and whether the stream ends with them (a terminal event;
        or b"" and True: the reader left, the log is gone). None: nothing came in the poll."""

    def quiet(self, seq: int) -> bool:
        """After a poll that brought nothing: housekeeping; False ends the stream."""

    def unavailable(self, error: StoreUnavailable) -> None:
        """The store could not be reached: logged and counted by the source."""


def follow_log(source: LogSource, after_seq: int, *, retry_ms: int, heartbeat_seconds: float) -> Iterator[bytes]:
    """The stream's bytes: `retry:`, the source's opening, its events as they come, heartbeats
    while quiet; ends when the source says so, or without an ending when the worker stops or
    the store is unreachable (the reader resumes)."""
    try:
        yield sse.encode_retry(retry_ms)
        begun = source.begin(after_seq)
        if begun is None:
            return
        opening, seq = begun
        if opening:
            yield opening
        # Bound once: the loop runs once per event of every open stream, and a call less per
        # event shows in a worker's instructions per event (bench/worker_path.py).
        stopping, read, monotonic = source.stopping.is_set, source.read, time.monotonic
        quiet_since = monotonic()
        while True:
            if stopping():
                yield RESTARTING
                return
            found = read(seq)
            if found is None:
                if not source.quiet(seq):
                    return
                if monotonic() - quiet_since >= heartbeat_seconds:
                    yield HEARTBEAT
                    quiet_since = monotonic()
                continue
            data, seq, ends = found
            if data:
                yield data
            if ends:
                return
            quiet_since = monotonic()
    except StoreUnavailable as error:
        # The response has begun (200): end it without a terminal event, so the reader
        # resumes; its resume gets 503 + Retry-After until the store is back.
        source.unavailable(error)
        yield STORE_UNAVAILABLE
