"""Messages: their state machine, their events, and the bounded log of one answer.

docs/design.md ("A state machine, not an animation"): accepted → running → completed | cancelled | failed, with
terminal states final, and only an explicit completion event binding. This
module is pure (no I/O, no locking); stores wrap it with their own
concurrency and persistence.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from collections import deque
from dataclasses import dataclass, field
from enum import Enum
from json.encoder import encode_basestring as _json_string
from typing import Any

from . import sse
from .errors import ErrorInfo
from .protocol import event_id


class MessageState(str, Enum):
    ACCEPTED = "accepted"
    RUNNING = "running"
    COMPLETED = "completed"
    CANCELLED = "cancelled"
    FAILED = "failed"

    @property
    def terminal(self) -> bool:
        return self in TERMINAL_STATES


TERMINAL_STATES = frozenset({MessageState.COMPLETED, MessageState.CANCELLED, MessageState.FAILED})

_TRANSITIONS = {
    MessageState.ACCEPTED: {MessageState.RUNNING, MessageState.CANCELLED, MessageState.FAILED},
    MessageState.RUNNING: {MessageState.COMPLETED, MessageState.CANCELLED, MessageState.FAILED},
}


class EventKind(str, Enum):
    STARTED = "message.started"
    DELTA = "text.delta"
    SNAPSHOT = "message.snapshot"
    COMPLETED = "message.completed"
    FAILED = "message.failed"
    CANCELLED = "message.cancelled"
    # An action the backend proposed (widget_server.actions). Informational
    # while the answer runs: only the list in `message.completed` is actionable.
    ACTION_PROPOSED = "action.proposed"
    # What the backend is doing before or between words (answer_parts.Progress): shown and
    # announced while the answer is busy, never part of its text or its history.
    PROGRESS = "message.progress"

    @property
    def terminal(self) -> bool:
        return self in (EventKind.COMPLETED, EventKind.FAILED, EventKind.CANCELLED)


class InvalidTransition(Exception):
    pass


@dataclass(frozen=True, slots=True)
class StreamEvent:
    message_id: str
    seq: int
    kind: EventKind
    payload: dict[str, Any] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return event_id(self.message_id, self.seq)

    def data(self) -> dict[str, Any]:
        return {"message_id": self.message_id, "seq": self.seq, **self.payload}

    def encode(self) -> bytes:
        payload = self.payload
        if self.kind is EventKind.DELTA and len(payload) == 1 and "text" in payload:
            message_id = self.message_id
            if message_id.isascii() and message_id.isprintable():  # no CR, LF or NUL for `id:`
                return _encode_delta(message_id, self.seq, payload["text"])
        # One-line JSON: json.dumps escapes CR and LF inside strings, so the
        # answer's text survives exactly, CR included (the SSE writer still
        # splits lines, as it must for any data).
        data = json.dumps(self.data(), ensure_ascii=False, separators=(",", ":"))
        return sse.encode_event(data, event=self.kind.value, id=self.id)

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind.value, **self.data()}

    @classmethod
    def from_json(cls, value: dict[str, Any]) -> StreamEvent:
        value = dict(value)
        kind = EventKind(value.pop("kind"))
        return cls(value.pop("message_id"), value.pop("seq"), kind, value)


def _encode_delta(message_id: str, seq: int, text: str) -> bytes:
    """The very bytes StreamEvent.encode's general path writes for a delta, written directly:
    one per event on every stream, where json.dumps of a dict and the SSE writer's line
    splitting were a measurable part of what an event costs a worker (bench/load.py measures
    it; docs/performance.md has the current table).

    `_json_string` is the string encoder `json.dumps(..., ensure_ascii=False)` uses, so the
    data is byte for byte the dict's dump (keys in the same order, no spaces); JSON escapes
    every control character, CR and LF included, so the data is one line, as the SSE writer
    would leave it (tests/test_messages.py, test_a_delta_encodes_as_the_general_path_does).
    """
    return (
        f'id: {message_id}:{seq}\nevent: text.delta\ndata: {{"message_id":{_json_string(message_id)},'
        f'"seq":{seq},"text":{_json_string(text)}}}\n\n'
    ).encode()


_SURROGATE = re.compile("[\ud800-\udfff]")
# C0 controls but tab and line feed, and DEL: a terminal acts on them (ESC starts a colour or a
# cursor move, BEL rings, NUL ends a C string) where the site's owner reads an export, a log or
# a mail, and the console shows them as nothing or as boxes (docs/security.md, "Request bounds").
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f]")


def replace_lone_surrogates(text: str) -> str:
    """Replace lone surrogates (which have no UTF-8 form) with U+FFFD; keep everything else.

    What an answer's text goes through, a delta at a time: the completed event's SHA-256 is
    over the UTF-8 bytes of the text as stored, and a CR at the end of one delta may be the
    start of a CRLF that ends in the next (docs/protocol.md, "Exact text")."""
    if text.isascii():
        return text
    return _SURROGATE.sub("\ufffd", text)


def clean_text(text: str) -> str:
    """A text a person typed (a visitor's message, to the assistant or to a person, a left
    message, an agent's message or reply, a feedback comment, a file's description), as it is
    stored and shown: CRLF and a lone CR become LF, the other C0 controls but tab and line feed
    are removed, and DEL too (docs/protocol.md, "Conventions"); lone surrogates become U+FFFD.

    The same text always comes out the same, and cleaning it again changes nothing, so a
    retry's fingerprint (over the cleaned text) still matches its first request's."""
    if text.isprintable():  # no control, no line break, no lone surrogate: the usual message
        return text
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return replace_lone_surrogates(_CONTROL.sub("", text))


def text_digest(text: str) -> dict[str, Any]:
    encoded = text.encode("utf-8")
    return {"length": len(text), "utf8_bytes": len(encoded), "sha256": hashlib.sha256(encoded).hexdigest()}


# What the memory store's byte budget counts for a log (deterministic estimates, calibrated
# with bench/memory.py): the log itself, one event without its text, and the text (kept
# once as the answer and once in each delta that is still kept).
LOG_BYTES = 1024
EVENT_BYTES = 420


def _event_bytes(event: StreamEvent) -> int:
    text = event.payload.get("text")
    return EVENT_BYTES + (sys.getsizeof(text) if isinstance(text, str) else 0)


def _record_bytes(record: StreamEvent | tuple[int, str]) -> int:
    """_event_bytes of a kept record; a delta's (seq, text) counts as its event would."""
    if isinstance(record, tuple):
        return EVENT_BYTES + sys.getsizeof(record[1])
    return _event_bytes(record)


class MessageLog:
    """One assistant message: its state, its full text, and its last events.

    Sequence numbers start at 1 and rise by exactly 1 per event. Only the
    newest `max_events` events are kept; a reader asking for an evicted
    position gets a snapshot (the whole text so far, at the newest
    non-terminal sequence number) and then the events after it. The
    terminal event is always the newest, so it is never evicted.
    """

    def __init__(self, message_id: str, max_events: int) -> None:
        if max_events < 1:
            raise ValueError("max_events must be at least 1")
        self.message_id = message_id
        self.state = MessageState.ACCEPTED
        self.error: ErrorInfo | None = None
        self.last_seq = 0
        # A delta is kept as (seq, text), made a StreamEvent when read: about 80 bytes
        # instead of 390 (an event, its payload dict), a large part of an open stream's memory
        # while its answer runs (bench/load.py, memory per stream).
        self._events: deque[StreamEvent | tuple[int, str]] = deque(maxlen=max_events)
        self._parts: list[str] = []
        self._length = 0
        self._utf8_bytes = 0
        self._hash = hashlib.sha256()
        # Proposals made while running, as public JSON ({action_id, name, …}).
        self.actions: list[dict[str, Any]] = []
        # The answer's sources (answer_parts.source_json), given with its completion.
        self.sources: list[dict[str, Any]] = []
        self._events_bytes = 0

    @property
    def stored_bytes(self) -> int:
        """About what this log holds in memory, in bytes (the memory store's budget counts it)."""
        return LOG_BYTES + self._events_bytes + 2 * self._utf8_bytes + 1024 * (len(self.actions) + len(self.sources))

    @property
    def text(self) -> str:
        if len(self._parts) > 1:
            self._parts = ["".join(self._parts)]
        return self._parts[0] if self._parts else ""

    @property
    def length(self) -> int:
        return self._length

    # -- transitions -------------------------------------------------------

    def _transition(self, new_state: MessageState) -> None:
        if new_state not in _TRANSITIONS.get(self.state, ()):
            raise InvalidTransition(f"{self.state.value} → {new_state.value}")
        self.state = new_state

    def _append(self, kind: EventKind, **payload: Any) -> StreamEvent:
        """An event other than a delta (add_delta keeps those)."""
        self.last_seq += 1
        event = StreamEvent(self.message_id, self.last_seq, kind, payload)
        self._keep(event)
        return event

    def _keep(self, record: StreamEvent | tuple[int, str]) -> None:
        events = self._events
        if len(events) == events.maxlen:
            self._events_bytes -= _record_bytes(events[0])  # about to be evicted
        events.append(record)
        self._events_bytes += _record_bytes(record)

    def _event(self, record: StreamEvent | tuple[int, str]) -> StreamEvent:
        if isinstance(record, tuple):
            return StreamEvent(self.message_id, record[0], EventKind.DELTA, {"text": record[1]})
        return record

    def start(self, **payload: Any) -> StreamEvent:
        self._transition(MessageState.RUNNING)
        return self._append(EventKind.STARTED, **payload)

    def add_text(self, text: str) -> StreamEvent:
        self.add_delta(text)
        return self._event(self._events[-1])

    def add_delta(self, text: str) -> int:
        """add_text without making the event it returns: the sequence number. The generator's
        write of every delta (MemoryStore.append_text_soon) needs no event, and making one
        is work on every delta that nobody reads (bench/stream_path.py counts it)."""
        if self.state is not MessageState.RUNNING:
            raise InvalidTransition(f"text in state {self.state.value}")
        text = replace_lone_surrogates(text)
        self._parts.append(text)
        encoded = text.encode("utf-8")
        self._length += len(text)
        self._utf8_bytes += len(encoded)
        self._hash.update(encoded)
        self.last_seq = seq = self.last_seq + 1
        self._keep((seq, text))
        return seq

    def add_action(self, proposal: dict[str, Any]) -> StreamEvent:
        """Record a validated action proposal; only while running."""
        if self.state is not MessageState.RUNNING:
            raise InvalidTransition(f"action in state {self.state.value}")
        self.actions.append(dict(proposal))
        return self._append(EventKind.ACTION_PROPOSED, **proposal)

    def add_progress(self, text: str) -> StreamEvent:
        """A progress line (answer_parts.progress_text); only while running."""
        if self.state is not MessageState.RUNNING:
            raise InvalidTransition(f"progress in state {self.state.value}")
        return self._append(EventKind.PROGRESS, text=text)

    def complete(self, sources: list[dict[str, Any]] | tuple[dict[str, Any], ...] = ()) -> StreamEvent:
        self._transition(MessageState.COMPLETED)
        # The completion lists the proposals: what it lists, and only that,
        # becomes actionable (and only because the answer completed).
        extra: dict[str, Any] = {"actions": [dict(a) for a in self.actions]} if self.actions else {}
        # And the sources, in the terminal event that compaction keeps: a reader resuming after
        # the end gets them exactly as a live one did (docs/protocol.md, "Sources").
        if sources:
            self.sources = [dict(source) for source in sources]
            extra["sources"] = [dict(source) for source in self.sources]
        return self._append(
            EventKind.COMPLETED,
            length=self._length,
            utf8_bytes=self._utf8_bytes,
            sha256=self._hash.hexdigest(),
            **extra,
        )

    def fail(self, error: ErrorInfo) -> StreamEvent:
        self._transition(MessageState.FAILED)
        self.error = error
        # A failed answer is never complete: what arrived is partial.
        return self._append(EventKind.FAILED, error=error.to_json(), incomplete=True, length=self._length)

    def cancel(self) -> StreamEvent:
        self._transition(MessageState.CANCELLED)
        return self._append(EventKind.CANCELLED, incomplete=True, length=self._length)

    def compact(self) -> None:
        """Once ended, keep only the text and the terminal event (docs/protocol.md, "Resume").

        A reader behind the end then gets a snapshot and the terminal event, as
        after eviction, so a finished answer costs about its text, not its events.
        """
        if not self.state.terminal:
            raise InvalidTransition(f"compact in state {self.state.value}")
        self._events = deque([self._events[-1]], maxlen=1)  # nothing follows the end
        self._events_bytes = _record_bytes(self._events[0])
        self._parts = [self.text] if self._parts else []

    @property
    def compacted(self) -> bool:
        return self.state.terminal and len(self._events) <= 1

    # -- reading -----------------------------------------------------------

    def snapshot(self) -> StreamEvent:
        """The whole text so far, at the newest sequence number it includes."""
        seq = self.last_seq - 1 if self.state.terminal else self.last_seq
        state = MessageState.RUNNING if self.state.terminal else self.state
        return StreamEvent(self.message_id, seq, EventKind.SNAPSHOT, {"text": self.text, "state": state.value})

    def events_after(self, after_seq: int) -> list[StreamEvent]:
        """Events with seq > after_seq; a snapshot first if some were evicted."""
        wanted = self.last_seq - after_seq
        if wanted <= 0:
            return []
        if wanted <= len(self._events):
            return self._newest(wanted)
        snapshot = self.snapshot()
        return [snapshot, *self._newest(self.last_seq - snapshot.seq)]

    def _newest(self, count: int) -> list[StreamEvent]:
        # The kept events' seqs are consecutive and end at last_seq (each is kept as it is
        # numbered, eviction takes the oldest, compact() keeps the newest), so the newest
        # `count` are the wanted ones: a live reader, asking for the last few, costs what it
        # gets, not the log's length, and no event's seq is looked at.
        events = self._events
        size = len(events)
        return [self._event(events[index]) for index in range(size - count, size)]
