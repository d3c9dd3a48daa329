"""widget_server/stream_loop.py: the one loop both event streams run (docs/protocol.md, "Resuming").

Driven by a scripted LogSource, byte for byte; the answer's and the conversation's own sources
are tested through the API (tests/test_api_streaming.py, test_api_resume.py, test_api_faults.py,
test_handoff_events.py)."""

from __future__ import annotations

from collections import deque

from widget_server import sse
from widget_server.stores.base import StoreUnavailable
from widget_server.stream_loop import HEARTBEAT, RESTARTING, STORE_UNAVAILABLE, follow_log

RETRY = sse.encode_retry(1500)


class ScriptedSource:
    """A LogSource that plays its reads in order; `calls` records what the loop asked."""

    def __init__(self, reads, *, begun=(b"", 0), stop_after=None, quiet=True):
        self.reads = deque(reads)
        self.begun = begun
        self.stop_after = stop_after
        self.quiet_answer = quiet
        self.calls: list[str] = []
        self.errors: list[StoreUnavailable] = []

    def begin(self, after_seq):
        self.calls.append(f"begin {after_seq}")
        return self.begun

    @property
    def stopping(self):
        return self  # its is_set() says whether the worker stops

    def is_set(self):
        return self.stop_after is not None and self.calls.count("read") >= self.stop_after

    def read(self, seq):
        self.calls.append("read")
        step = self.reads.popleft()
        if isinstance(step, Exception):
            raise step
        return step

    def quiet(self, seq):
        self.calls.append(f"quiet {seq}")
        return self.quiet_answer

    def unavailable(self, error):
        self.errors.append(error)


def run(source, after_seq=0, heartbeat_seconds=60.0):
    return list(follow_log(source, after_seq, retry_ms=1500, heartbeat_seconds=heartbeat_seconds))


def test_retry_first_then_the_events_until_the_ending_one():
    source = ScriptedSource([(b"e1", 1, False), (b"e2e3", 3, True)])
    assert run(source) == [RETRY, b"e1", b"e2e3"]
    assert source.calls == ["begin 0", "read", "read"]


def test_the_opening_snapshot_comes_before_the_reads_which_start_after_it():
    positions = []

    class Source(ScriptedSource):
        def read(self, seq):
            positions.append(seq)
            return super().read(seq)

    source = Source([(b"e8", 8, True)], begun=(b"snapshot", 7))
    assert run(source, after_seq=2) == [RETRY, b"snapshot", b"e8"]
    assert positions == [7]


def test_a_reader_that_has_everything_gets_retry_alone():
    assert run(ScriptedSource([], begun=None), after_seq=5) == [RETRY]


def test_an_ending_without_bytes_sends_nothing_more():
    assert run(ScriptedSource([(b"e1", 1, False), (b"", 1, True)])) == [RETRY, b"e1"]


def test_quiet_polls_send_a_heartbeat_once_it_is_due_and_the_source_may_end_them():
    source = ScriptedSource([None, (b"e1", 1, False), None, None], quiet=True)
    source.reads.append((b"e2", 2, True))
    assert run(source, heartbeat_seconds=0) == [RETRY, HEARTBEAT, b"e1", HEARTBEAT, HEARTBEAT, b"e2"]
    assert source.calls.count("quiet 0") == 1 and source.calls.count("quiet 1") == 2
    ended = ScriptedSource([None, (b"never", 1, True)], quiet=False)
    assert run(ended, heartbeat_seconds=0) == [RETRY]


def test_no_heartbeat_before_heartbeat_seconds_without_bytes():
    assert run(ScriptedSource([None, None, (b"e1", 1, True)]), heartbeat_seconds=60) == [RETRY, b"e1"]


def test_a_stopping_worker_ends_the_stream_without_an_ending_so_the_reader_resumes():
    source = ScriptedSource([(b"e1", 1, False), (b"e2", 2, False)], stop_after=1)
    assert run(source) == [RETRY, b"e1", RESTARTING]


def test_an_unreachable_store_ends_the_stream_with_a_comment_and_tells_the_source():
    error = StoreUnavailable("connection refused")
    source = ScriptedSource([(b"e1", 1, False), error])
    assert run(source) == [RETRY, b"e1", STORE_UNAVAILABLE]
    assert source.errors == [error]


def test_the_comments_are_comments_a_reader_ignores():
    events = list(sse.parse_stream([RETRY, HEARTBEAT, RESTARTING, STORE_UNAVAILABLE]))
    assert events == []
