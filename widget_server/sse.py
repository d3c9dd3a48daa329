"""The event-stream wire format: a writer and a standard reader.

Pure: this module imports no web framework and does no I/O, so it can be
tested byte for byte and reused by any transport (Flask today, anything else
tomorrow) and by our own clients (bench/, tests).

References are to the HTML Living Standard, section 9.2 "Server-sent events",
in particular 9.2.6 "Interpreting an event stream" (the parsing rules) and
9.2.7 "Authoring notes".
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

__all__ = [
    "EventStreamParser",
    "InvalidFieldError",
    "ServerSentEvent",
    "encode_comment",
    "encode_event",
    "encode_retry",
    "parse_stream",
]

# 9.2.6: "Lines must be separated by either a U+000D CARRIAGE RETURN U+000A
# LINE FEED (CRLF) character pair, a single U+000A LINE FEED (LF) character,
# or a single U+000D CARRIAGE RETURN (CR) character."
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_FORBIDDEN_IN_FIELD = re.compile(r"[\r\n\x00]")


class InvalidFieldError(ValueError):
    """An `id`, `event` or comment value that would corrupt the stream."""


@dataclass(frozen=True)
class ServerSentEvent:
    """One dispatched event, as a reader following 9.2.6 sees it."""

    data: str
    event: str = "message"
    id: str = ""
    retry: int | None = None


def _check_single_line(name: str, value: str) -> None:
    # A CR or LF would end the field's line early and turn the rest into a
    # field of its own; a NUL in `id` makes a standard reader ignore the
    # whole id field (9.2.6, "If the field name is 'id'").
    if _FORBIDDEN_IN_FIELD.search(value):
        raise InvalidFieldError(f"SSE {name} must not contain CR, LF or NUL: {value!r}")


def _check_retry(value: object) -> None:
    # bool is an int subclass, but `retry: True` is not a field value a
    # reader accepts (9.2.6 wants ASCII digits only).
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise InvalidFieldError(f"SSE retry must be a non-negative integer: {value!r}")


def encode_event(
    data: str,
    *,
    event: str | None = None,
    id: str | None = None,
    retry: int | None = None,
) -> bytes:
    """Encode one event, ending with the blank line that dispatches it.

    `data` may hold any text: it is split on CR, LF and CRLF into one
    `data:` line per line, so a blank line inside the text can never end the
    event early (docs/design.md, "An event's data never ends the event early"). A reader joins the lines
    with LF, so CR and CRLF in `data` arrive as LF; everything else,
    including leading spaces (we always write the one space 9.2.6 strips),
    arrives exactly.
    """
    parts: list[str] = []
    if id is not None:
        _check_single_line("id", id)
        parts.append(f"id: {id}\n")
    if event is not None:
        _check_single_line("event", event)
        parts.append(f"event: {event}\n")
    if retry is not None:
        _check_retry(retry)
        parts.append(f"retry: {retry}\n")
    for line in _LINE_BREAK.split(data):
        parts.append(f"data: {line}\n")
    parts.append("\n")
    return "".join(parts).encode("utf-8")


def encode_comment(text: str = "") -> bytes:
    """A comment line plus a blank line: keeps idle connections alive.

    The blank line dispatches nothing because the data buffer is empty
    (9.2.6, "dispatch the event", step 2), but it makes sure a proxy that
    buffers per event forwards the bytes.
    """
    _check_single_line("comment", text)
    return f": {text}\n\n".encode() if text else b":\n\n"


def encode_retry(milliseconds: int) -> bytes:
    """A `retry:` field on its own: sets the reconnection time, dispatches nothing."""
    _check_retry(milliseconds)
    return f"retry: {milliseconds}\n\n".encode()


class EventStreamParser:
    """An incremental reader that follows 9.2.6 exactly.

    Feed it bytes as they arrive, in chunks of any size: a CR at the end of
    one chunk and an LF at the start of the next are one line break, and a
    UTF-8 sequence split between chunks is reassembled.

    `last_event_id` is the standard's "last event ID string": an `id` field
    fills the last event ID buffer, and the buffer becomes the string only
    when a blank line dispatches (9.2.6, "dispatch the event", step 1), so
    the id of an event cut off by the end of the stream is never committed.
    It persists across events and, if the caller keeps the parser and calls
    `end()` between connections, across a reconnection, as does `retry`.
    """

    def __init__(self, on_event: Callable[[ServerSentEvent], None]) -> None:
        import codecs

        self._on_event = on_event
        # 9.2.6: the stream is decoded with "UTF-8 decode", which replaces
        # invalid sequences with U+FFFD and strips one leading BOM.
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._bom_checked = False
        self._pending = ""  # text after the last complete line
        self._last_was_cr = False  # the previous chunk ended in CR
        self._data: list[str] = []
        self._event_type = ""
        self._id_buffer = ""  # the last event ID buffer (uncommitted)
        self.last_event_id = ""  # the last event ID string (committed)
        self.retry: int | None = None

    def feed(self, chunk: bytes) -> None:
        self._feed_text(self._decoder.decode(chunk))

    def end(self) -> None:
        """End of stream: 9.2.6 says an event not yet dispatched is discarded.

        The parser is then ready for the next connection's stream, which is
        decoded anew (its leading BOM is stripped too) and starts with empty
        buffers, except the last event ID and the reconnection time.
        """
        self._feed_text(self._decoder.decode(b"", final=True))
        # A final line without a terminator is not a line; drop it with the
        # unterminated event, and the id that event never committed.
        self._pending = ""
        self._data = []
        self._event_type = ""
        self._id_buffer = self.last_event_id
        self._decoder.reset()
        self._bom_checked = False
        self._last_was_cr = False

    def _feed_text(self, text: str) -> None:
        if not text:
            return
        if not self._bom_checked:
            self._bom_checked = True
            if text.startswith("\ufeff"):
                text = text[1:]
        if self._last_was_cr and text.startswith("\n"):
            text = text[1:]  # the LF of a CRLF split across chunks
        self._last_was_cr = False
        buffer = self._pending + text
        start = 0
        for match in _LINE_BREAK.finditer(buffer):
            if match.group() == "\r" and match.end() == len(buffer):
                # A CR at the very end may be the first half of CRLF: the
                # line is complete either way, remember to skip an LF.
                self._last_was_cr = True
            self._process_line(buffer[start : match.start()])
            start = match.end()
        self._pending = buffer[start:]

    def _process_line(self, line: str) -> None:
        if line == "":
            self._dispatch()
            return
        if line.startswith(":"):
            return  # a comment
        field, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        # 9.2.6, "process the field": an `id` containing U+0000 NULL, a `retry` that is not
        # only ASCII digits, and any other field are ignored.
        if field == "event":
            self._event_type = value
        elif field == "data":
            self._data.append(value)
        elif field == "id" and "\x00" not in value:
            self._id_buffer = value
        elif field == "retry" and value and value.isascii() and value.isdigit():
            self.retry = int(value)

    def _dispatch(self) -> None:
        # Step 1 happens even if no event is dispatched: a blank line after
        # just `id: x` sets the last event ID.
        self.last_event_id = self._id_buffer
        data, self._data = self._data, []
        event_type, self._event_type = self._event_type, ""
        if not data:
            return  # an empty data buffer dispatches nothing
        self._on_event(
            ServerSentEvent(
                data="\n".join(data),
                event=event_type or "message",
                id=self.last_event_id,
                retry=self.retry,
            )
        )


def parse_stream(chunks: Iterable[bytes]) -> Iterator[ServerSentEvent]:
    """Parse a whole stream given as an iterable of byte chunks."""
    events: list[ServerSentEvent] = []
    parser = EventStreamParser(events.append)
    for chunk in chunks:
        parser.feed(chunk)
        yield from events
        events.clear()
    parser.end()
    yield from events
