"""The event-stream writer and reader, byte for byte.

Parser cases follow the HTML Living Standard, 9.2.6 "Interpreting an event
stream", and the web-platform-tests `eventsource/format-*` files. Every case
is fed whole, one byte at a time, and split at seeded random points, because
a real network delivers any of those.
"""

from __future__ import annotations

import codecs
import itertools
import json
import random
import re

import pytest
from httpx_sse._decoders import SSEDecoder, SSELineDecoder
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from widget_server.messages import EventKind, StreamEvent
from widget_server.sse import (
    EventStreamParser,
    InvalidFieldError,
    ServerSentEvent,
    encode_comment,
    encode_event,
    encode_retry,
    parse_stream,
)

# --------------------------------------------------------------------------
# Writer: exact bytes
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "kwargs", "expected"),
    [
        ("hello", {}, b"data: hello\n\n"),
        ("", {}, b"data: \n\n"),
        ("a\r\nb", {}, b"data: a\ndata: b\n\n"),
        ("a\rb", {}, b"data: a\ndata: b\n\n"),
        ("a\nb", {}, b"data: a\ndata: b\n\n"),
        # A blank line inside the text is a `data:` line, never a dispatching blank line.
        ("a\n\nb", {}, b"data: a\ndata: \ndata: b\n\n"),
        ("a\r\n\r\nb", {}, b"data: a\ndata: \ndata: b\n\n"),
        ("\n", {}, b"data: \ndata: \n\n"),
        ("x\n", {}, b"data: x\ndata: \n\n"),
        # CR LF in the wrong order is two line breaks.
        ("a\n\rb", {}, b"data: a\ndata: \ndata: b\n\n"),
        # Leading spaces survive: we always write the one space a reader strips.
        (" lead", {}, b"data:  lead\n\n"),
        ("   three", {}, b"data:    three\n\n"),
        (":not a comment", {}, b"data: :not a comment\n\n"),
        ("data: x", {}, b"data: data: x\n\n"),
        ("\x00", {}, b"data: \x00\n\n"),
        ("ok\u2192", {}, "data: ok\u2192\n\n".encode("utf-8")),
        # U+2028 / U+2029 / NEL are not SSE line breaks.
        ("a\u2028b\x85c", {}, "data: a\u2028b\x85c\n\n".encode("utf-8")),
        ("x", {"id": "m_1:3"}, b"id: m_1:3\ndata: x\n\n"),
        ("x", {"event": "text.delta"}, b"event: text.delta\ndata: x\n\n"),
        ("x", {"retry": 0}, b"retry: 0\ndata: x\n\n"),
        (
            "x",
            {"id": "7", "event": "e", "retry": 1500},
            b"id: 7\nevent: e\nretry: 1500\ndata: x\n\n",
        ),
        ("x", {"id": ""}, b"id: \ndata: x\n\n"),
        ("x", {"id": " spaced"}, b"id:  spaced\ndata: x\n\n"),
    ],
)
def test_encode_event_bytes(data, kwargs, expected):
    assert encode_event(data, **kwargs) == expected


@pytest.mark.parametrize("field", ["id", "event"])
@pytest.mark.parametrize("bad", ["a\rb", "a\nb", "a\r\nb", "a\x00b", "\n", "\r", "\x00", "end\n"])
def test_encode_event_rejects_line_breaks_and_nul_in_single_line_fields(field, bad):
    with pytest.raises(InvalidFieldError):
        encode_event("x", **{field: bad})


@pytest.mark.parametrize("bad", [-1, -1000, 1.5, "10", True, False])
def test_encode_event_rejects_bad_retry(bad):
    with pytest.raises(InvalidFieldError):
        encode_event("x", retry=bad)


def test_invalid_field_error_is_a_value_error():
    with pytest.raises(ValueError):
        encode_event("x", id="a\nb")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", b":\n\n"),
        ("heartbeat", b": heartbeat\n\n"),
        (" x", b":  x\n\n"),
        ("\u00e9", ": \u00e9\n\n".encode("utf-8")),
    ],
)
def test_encode_comment_bytes(text, expected):
    assert encode_comment(text) == expected


def test_encode_comment_default_is_empty_comment():
    assert encode_comment() == b":\n\n"


@pytest.mark.parametrize("bad", ["a\nb", "a\rb", "a\x00", "\r\n"])
def test_encode_comment_rejects_line_breaks(bad):
    with pytest.raises(InvalidFieldError):
        encode_comment(bad)


@pytest.mark.parametrize(
    ("ms", "expected"), [(0, b"retry: 0\n\n"), (2000, b"retry: 2000\n\n"), (600000, b"retry: 600000\n\n")]
)
def test_encode_retry_bytes(ms, expected):
    assert encode_retry(ms) == expected


@pytest.mark.parametrize("bad", [-1, -2000, 1.0, "2000", True, False, None])
def test_encode_retry_rejects_non_natural_numbers(bad):
    with pytest.raises(InvalidFieldError):
        encode_retry(bad)


def test_comment_and_retry_dispatch_nothing_but_retry_is_read():
    events = _parse_whole(encode_retry(1234) + encode_comment("heartbeat") + encode_comment())
    assert events == []
    parser = EventStreamParser(lambda e: None)
    parser.feed(encode_retry(1234))
    assert parser.retry == 1234


# --------------------------------------------------------------------------
# Parser: 9.2.6 and WPT cases, each fed whole, byte by byte and randomly split
# --------------------------------------------------------------------------


def _parse_chunks(chunks) -> list[ServerSentEvent]:
    events: list[ServerSentEvent] = []
    parser = EventStreamParser(events.append)
    for chunk in chunks:
        parser.feed(chunk)
    parser.end()
    return events


def _parse_whole(raw: bytes) -> list[ServerSentEvent]:
    return _parse_chunks([raw])


def _bytewise(raw: bytes) -> list[bytes]:
    return [raw[i : i + 1] for i in range(len(raw))]


def _random_split(raw: bytes, rng: random.Random) -> list[bytes]:
    if len(raw) < 2:
        return [raw]
    count = rng.randint(1, min(len(raw) - 1, 12))
    cuts = sorted(rng.sample(range(1, len(raw)), count))
    return [raw[a:b] for a, b in itertools.pairwise([0, *cuts, len(raw)])]


def _feeds(raw: bytes):
    """Whole, byte by byte, and 20 seeded random splittings (incl. empty chunks)."""
    yield "whole", [raw]
    yield "bytewise", _bytewise(raw)
    rng = random.Random(raw)
    for n in range(20):
        chunks = _random_split(raw, rng)
        if n % 5 == 0:
            chunks = [b"", *chunks[:1], b"", *chunks[1:], b""]
        yield f"random{n}", chunks


def M(data, event="message", id="", retry=None):
    return ServerSentEvent(data=data, event=event, id=id, retry=retry)


PARSER_CASES = {
    # Line endings (9.2.6: CRLF, LF or CR).
    "lf": (b"data: a\n\n", [M("a")]),
    "crlf": (b"data: a\r\n\r\n", [M("a")]),
    "cr": (b"data: a\r\r", [M("a")]),
    "mixed": (b"data: a\rdata: b\r\ndata: c\n\r\n", [M("a\nb\nc")]),
    "lf-cr-is-two-breaks": (b"data: a\n\rdata: b\n\n", [M("a"), M("b")]),
    "wpt-format-newlines": (b"data:test\r\ndata\ndata:test\r\n\r\n", [M("test\n\ntest")]),
    # Blank line dispatches; several events.
    "two-events": (b"data: 1\n\ndata: 2\n\n", [M("1"), M("2")]),
    "data-lines-joined-by-lf": (b"data: a\ndata: b\ndata: c\n\n", [M("a\nb\nc")]),
    "extra-blank-lines-dispatch-nothing": (b"\n\n\ndata: x\n\n\n\n", [M("x")]),
    # Empty data buffer: nothing is dispatched, and event type is reset.
    "empty-buffer-nothing": (b"event: e\n\ndata: x\n\n", [M("x")]),
    "id-only-nothing": (b"id: 1\n\n", []),
    # Field without colon: the whole line is the field name, value empty.
    "data-alone-is-empty-line": (b"data\n\n", [M("")]),
    "wpt-format-field-data": (b"data:\n\ndata\ndata\n\ndata:test\n\n", [M(""), M("\n"), M("test")]),
    "data-colon-only": (b"data:\n\n", [M("")]),
    # One space after the colon is removed, and only one.
    "no-space": (b"data:x\n\n", [M("x")]),
    "one-space": (b"data: x\n\n", [M("x")]),
    "wpt-format-leading-space": (b"data:    test\n\n", [M("   test")]),
    "tab-is-not-space": (b"data:\tx\n\n", [M("\tx")]),
    "colon-in-value-kept": (b"data: a: b:c\n\n", [M("a: b:c")]),
    # Comments.
    "comment": (b":comment\ndata: x\n: another\n\n", [M("x")]),
    "comment-only-event": (b": hi\n\n", []),
    "colon-only-line": (b":\ndata: x\n\n", [M("x")]),
    # Unknown fields ignored, including a field name with a leading space.
    "wpt-format-field-unknown": (
        b"data:test\n data\ndata\nfoobar:xxx\njustsometext\n:thisisacommentyay\ndata:test\n\n",
        [M("test\n\ntest")],
    ),
    "field-names-are-case-sensitive": (b"Data: x\nDATA: y\ndata: z\n\n", [M("z")]),
    # event.
    "event-default-message": (b"data: x\n\n", [M("x", "message")]),
    "event-named": (b"event: add\ndata: x\n\n", [M("x", "add")]),
    "wpt-format-field-event-empty": (b"event: \ndata:data\n\n", [M("data", "message")]),
    "event-reset-after-dispatch": (b"event: a\ndata: 1\n\ndata: 2\n\n", [M("1", "a"), M("2")]),
    "event-last-wins": (b"event: a\nevent: b\ndata: 1\n\n", [M("1", "b")]),
    # id: persists, empty resets, NUL makes it ignored.
    "id-persists": (b"id: 1\ndata: a\n\ndata: b\n\n", [M("a", id="1"), M("b", id="1")]),
    "id-before-empty-event-persists": (b"id: 1\n\ndata: x\n\n", [M("x", id="1")]),
    "id-empty-resets": (b"id: 5\ndata: a\n\nid\ndata: b\n\n", [M("a", id="5"), M("b", id="")]),
    "id-empty-colon-resets": (b"id: 5\ndata: a\n\nid:\ndata: b\n\n", [M("a", id="5"), M("b", id="")]),
    "wpt-format-field-id-null": (b"id: 1\ndata: a\n\nid: 2\x00x\ndata: b\n\n", [M("a", id="1"), M("b", id="1")]),
    "id-nul-alone-ignored": (b"id:\x00\ndata: b\n\n", [M("b")]),
    "id-after-data-applies": (b"data: a\nid: 9\n\n", [M("a", id="9")]),
    # retry: only ASCII digits.
    "retry-digits": (b"retry: 3000\ndata: x\n\n", [M("x", retry=3000)]),
    "retry-leading-zero": (b"retry:03000\ndata: x\n\n", [M("x", retry=3000)]),
    "retry-alone-no-dispatch": (b"retry: 10\n\n", []),
    "retry-trailing-junk-ignored": (b"retry: 10\n\nretry: 100x\ndata: x\n\n", [M("x", retry=10)]),
    "retry-two-spaces-ignored": (b"retry:  100\ndata: x\n\n", [M("x")]),
    "retry-negative-ignored": (b"retry: -1\ndata: x\n\n", [M("x")]),
    "retry-decimal-ignored": (b"retry: 1.5\ndata: x\n\n", [M("x")]),
    "retry-empty-ignored": (b"retry\ndata: x\n\n", [M("x")]),
    "retry-non-ascii-digits-ignored": ("retry: \u0661\u0662\ndata: x\n\n".encode("utf-8"), [M("x")]),
    "retry-fullwidth-digits-ignored": ("retry: \uff11\ndata: x\n\n".encode("utf-8"), [M("x")]),
    # BOM: exactly one leading BOM is stripped.
    "bom-stripped": (b"\xef\xbb\xbfdata: 1\n\n", [M("1")]),
    "wpt-format-bom": (b"\xef\xbb\xbfdata:1\n\n\xef\xbb\xbfdata:2\n\ndata:3\n\n", [M("1"), M("3")]),
    "wpt-format-bom-2": (b"\xef\xbb\xbf\xef\xbb\xbfdata:1\n\ndata:2\n\ndata:3\n\n", [M("2"), M("3")]),
    "bom-in-data-kept": (b"data: \xef\xbb\xbfx\n\n", [M("\ufeffx")]),
    # UTF-8.
    "wpt-format-utf-8": ("data:ok\u2192\n\n".encode("utf-8"), [M("ok\u2192")]),
    "four-byte-utf8": ("data: \U0001f3b8 \u00e9\n\n".encode("utf-8"), [M("\U0001f3b8 \u00e9")]),
    "invalid-utf8-replaced": (b"data: a\xffb\n\n", [M("a\ufffdb")]),
    "wpt-format-null-character": (b"data:\x00\n\n\n\n", [M("\x00")]),
    # Unicode line separators are not line breaks.
    "u2028-not-a-break": ("data: a\u2028b\x85c\n\n".encode("utf-8"), [M("a\u2028b\x85c")]),
    # End of stream: an unterminated event is discarded.
    "unterminated-discarded": (b"data: a\n\ndata: b\n", [M("a")]),
    "unterminated-line-discarded": (b"data: a\n\ndata: b", [M("a")]),
    "ends-with-cr-discards": (b"data: a\r", []),
    "empty-stream": (b"", []),
}


@pytest.mark.parametrize(("raw", "expected"), PARSER_CASES.values(), ids=PARSER_CASES.keys())
def test_parser_cases(raw, expected):
    for how, chunks in _feeds(raw):
        assert b"".join(chunks) == raw
        assert _parse_chunks(chunks) == expected, how


def test_parser_cr_and_lf_split_across_feeds_is_one_line_break():
    events: list[ServerSentEvent] = []
    parser = EventStreamParser(events.append)
    parser.feed(b"data: a\r")
    parser.feed(b"\ndata: b\r")
    assert events == []  # each split CRLF ended one line, not two
    parser.feed(b"\n\r")
    assert events == [M("a\nb")]  # the lone CR is the blank line
    parser.feed(b"\n")  # second half of that CRLF: no second blank line
    parser.feed(b"data: c\n\n")
    assert events == [M("a\nb"), M("c")]


def test_parser_cr_then_empty_feed_then_lf():
    events: list[ServerSentEvent] = []
    parser = EventStreamParser(events.append)
    parser.feed(b"data: a\r")
    parser.feed(b"")
    parser.feed(b"\n")
    parser.feed(b"\r\n")
    assert events == [M("a")]


def test_parser_cr_then_partial_utf8_then_lf():
    # The chunk after a CR decodes to nothing (half a character); the LF
    # that follows must still be taken as the second half of a CRLF.
    events: list[ServerSentEvent] = []
    parser = EventStreamParser(events.append)
    parser.feed(b"data: a\r")
    parser.feed(b"\n")
    parser.feed("data: \u00e9".encode("utf-8")[:-1])
    parser.feed("\u00e9".encode("utf-8")[-1:] + b"\r")
    parser.feed(b"\n\r\n")
    assert events == [M("a\n\u00e9")]


def test_parser_cr_lf_split_dispatches_once():
    # "data: a\r" | "\n\r" | "\n": if the split CRLF were two breaks, the
    # event would dispatch before the second line.
    events: list[ServerSentEvent] = []
    parser = EventStreamParser(events.append)
    parser.feed(b"data: a\r")
    parser.feed(b"\ndata: b\n\n")
    assert events == [M("a\nb")]


def test_parser_multibyte_split_at_every_position():
    text = "data: \u00e9\u2192\U0001f3b8\n\n"
    raw = text.encode("utf-8")
    for cut in range(len(raw) + 1):
        assert _parse_chunks([raw[:cut], raw[cut:]]) == [M("\u00e9\u2192\U0001f3b8")], cut


def test_parser_bom_split_across_feeds():
    for cut in range(4):
        raw = b"\xef\xbb\xbfdata: 1\n\n"
        assert _parse_chunks([raw[:cut], raw[cut:]]) == [M("1")]
        assert _parse_chunks(_bytewise(raw)) == [M("1")]


def test_parser_bom_only_at_stream_start_not_after_first_text():
    # A BOM that arrives after some text (even in a later feed) is data.
    raw = b"data: a\n\n\xef\xbb\xbfdata: b\n\n"
    for _, chunks in _feeds(raw):
        assert _parse_chunks(chunks) == [M("a")]  # "\ufeffdata" is an unknown field


def test_parser_end_discards_pending_event_and_type():
    events: list[ServerSentEvent] = []
    parser = EventStreamParser(events.append)
    parser.feed(b"event: e\ndata: a\n")
    parser.end()
    assert events == []


def test_parser_last_event_id_survives_for_reconnection():
    parser = EventStreamParser(lambda e: None)
    parser.feed(b"id: m_1:4\ndata: x\n\n")
    parser.end()
    assert parser.last_event_id == "m_1:4"


def test_parser_id_is_committed_only_by_a_blank_line():
    # 9.2.6 "dispatch the event" step 1: the last event ID buffer becomes
    # the last event ID string at a blank line, even with no data.
    parser = EventStreamParser(lambda e: None)
    parser.feed(b"data: a\nid: 7\n\nid: 8\n")
    assert parser.last_event_id == "7"
    parser.end()
    assert parser.last_event_id == "7"
    parser = EventStreamParser(lambda e: None)
    parser.feed(b"id: 3\n\n")
    assert parser.last_event_id == "3"


def test_parser_reconnection_keeps_committed_id_and_retry_drops_the_rest():
    events: list[ServerSentEvent] = []
    parser = EventStreamParser(events.append)
    parser.feed(b"retry: 500\nid: 1\ndata: a\n\nid: 2\nevent: t\ndata: b")
    parser.end()
    assert parser.last_event_id == "1"  # what a reconnection sends
    # The next connection: new buffers, new decoder, its own leading BOM.
    parser.feed(b"\xef\xbb\xbfdata: c\n\n")
    parser.end()
    assert events == [M("a", id="1", retry=500), M("c", id="1", retry=500)]


def test_parser_reconnection_drops_partial_utf8():
    events: list[ServerSentEvent] = []
    parser = EventStreamParser(events.append)
    parser.feed(b"data: a\n\ndata: \xe2\x82")
    parser.end()
    parser.feed(b"\xacdata: b\n\ndata: c\n\n")  # a stray continuation byte starts the line
    parser.end()
    assert events == [M("a"), M("c")]


def test_parser_invalid_utf8_at_end_is_replaced_not_lost():
    events: list[ServerSentEvent] = []
    parser = EventStreamParser(events.append)
    parser.feed(b"data: a\xe2\x86")  # truncated U+2192
    parser.feed(b"\n\n")
    parser.end()
    assert events == [M("a\ufffd")]


def test_parse_stream_yields_as_chunks_arrive():
    produced: list[str] = []

    def chunks():
        produced.append("1")
        yield b"data: 1\n\n"
        produced.append("2")
        yield b"data: 2\n"
        produced.append("3")
        yield b"\n"

    iterator = parse_stream(chunks())
    first = next(iterator)
    assert first == M("1")
    assert produced == ["1"]  # the first event left before the second chunk was read
    assert list(iterator) == [M("2")]


# --------------------------------------------------------------------------
# Round trips: writer → our reader, and writer → httpx-sse's reader
# --------------------------------------------------------------------------

# Any text without surrogates (which have no UTF-8 form), biased towards the
# characters and substrings that break naive writers and readers.
_TRICKY = st.sampled_from(
    [
        "\r",
        "\n",
        "\r\n",
        "\n\r",
        "\n\n",
        "\r\r",
        " ",
        "  ",
        ":",
        ":comment",
        "data: x",
        "id: y",
        "event: z",
        "retry: 5",
        "\ufeff",
        "\x00",
        "\u2028",
        "\x85",
        "\u00e9",
        "\U0001f3b8",
        "data",
        "",
    ]
)
_CHAR = st.characters(exclude_categories=("Cs",))
ANY_TEXT = st.one_of(
    st.text(_CHAR),
    st.lists(st.one_of(_TRICKY, st.text(_CHAR, max_size=5)), max_size=20).map("".join),
)
SINGLE_LINE = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\r\n\x00"), max_size=12)


def _normalise(text: str) -> str:
    return re.sub(r"\r\n|\r", "\n", text)


def _httpx_sse_events(raw: bytes, cuts: list[int]) -> list:
    """Decode with httpx-sse's own line splitter and field parser.

    Independent of widget_server.sse: the bytes are decoded with an ordinary
    incremental UTF-8 decoder (what httpx's iter_text does), split into
    lines by httpx-sse's SSELineDecoder (CR, LF, CRLF, incl. a CR at a
    chunk end) and interpreted by httpx-sse's SSEDecoder. Only our writer's
    output is shared with the test under check.
    """
    decoder = codecs.getincrementaldecoder("utf-8")()
    lines_decoder = SSELineDecoder()
    fields = SSEDecoder()
    events = []
    lines: list[str] = []
    bounds = [0, *sorted(set(cuts)), len(raw)]
    for a, b in itertools.pairwise(bounds):
        text = decoder.decode(raw[a:b])
        if text:
            lines.extend(lines_decoder.decode(text))
    text = decoder.decode(b"", final=True)
    if text:
        lines.extend(lines_decoder.decode(text))
    lines.extend(lines_decoder.flush())
    for line in lines:
        event = fields.decode(line)
        if event is not None:
            events.append(event)
    return events


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    texts=st.lists(ANY_TEXT, min_size=1, max_size=4),
    ids=st.lists(st.one_of(st.none(), SINGLE_LINE), min_size=4, max_size=4),
    kinds=st.lists(st.one_of(st.none(), SINGLE_LINE), min_size=4, max_size=4),
    seed=st.integers(0, 2**32 - 1),
)
@example(
    texts=["a\r\n\r\nb", "\r\n", " lead", "data: x\nid: y\n:comment\n\n"], ids=[None] * 4, kinds=[None] * 4, seed=0
)
@example(texts=["\ufeffbom", "x\r"], ids=["\ufeff", " "], kinds=[" ", "message"], seed=1)
def test_writer_to_our_parser_and_httpx_sse_round_trip(texts, ids, kinds, seed):
    raw = encode_retry(1000) + encode_comment("hi")
    events_only = b""
    expected_ids = []
    last_id = ""
    # ids and kinds are drawn four long; texts, one to four, set how many events there are.
    for text, id_, kind in zip(texts, ids[: len(texts)], kinds[: len(texts)], strict=True):
        encoded = encode_event(text, id=id_, event=kind)
        raw += encoded + encode_comment()
        events_only += encoded
        if id_ is not None:
            last_id = id_
        expected_ids.append(last_id)
    expected_data = [_normalise(t) for t in texts]
    expected_kinds = [k or "message" for k in kinds[: len(texts)]]

    rng = random.Random(seed)
    cuts = sorted(rng.sample(range(1, len(raw)), min(len(raw) - 1, rng.randint(0, 10))))
    bounds = [0, *cuts, len(raw)]
    chunks = [raw[a:b] for a, b in itertools.pairwise(bounds)]

    for how in (chunks, [raw]):
        ours = _parse_chunks(how)
        assert [e.data for e in ours] == expected_data
        assert [e.id for e in ours] == expected_ids
        assert [e.event for e in ours] == expected_kinds
        assert all(e.retry == 1000 for e in ours)

    # httpx-sse departs from 9.2.6 in one way: a blank line dispatches an
    # (empty-data) event when an id or retry is set even if the data buffer
    # is empty. So it reads the events without our retry/heartbeat lines.
    theirs = _httpx_sse_events(events_only, [c for c in cuts if c < len(events_only)])
    assert [e.data for e in theirs] == expected_data
    assert [e.id for e in theirs] == expected_ids
    assert [e.event for e in theirs] == expected_kinds


@settings(max_examples=300, deadline=None)
@given(text=ANY_TEXT)
@example(text="")
@example(text="\r\n")
@example(text=" x")
def test_single_event_round_trip_exact(text):
    raw = encode_event(text)
    expected = _normalise(text)
    assert _parse_whole(raw) == [M(expected)]
    assert _parse_chunks(_bytewise(raw)) == [M(expected)]
    assert [e.data for e in _httpx_sse_events(raw, [])] == [expected]


@settings(max_examples=200, deadline=None)
@given(text=ANY_TEXT, seq=st.integers(1, 10**6))
@example(text="a\r\nb\rc\n", seq=1)
@example(text="\r", seq=3)
def test_json_payload_round_trip_keeps_cr_exactly(text, seq):
    event = StreamEvent("m_abc", seq, EventKind.DELTA, {"text": text})
    raw = event.encode()
    parsed = _parse_chunks(_random_split(raw, random.Random(seq)))
    assert len(parsed) == 1
    assert parsed[0].event == "text.delta"
    assert parsed[0].id == f"m_abc:{seq}"
    payload = json.loads(parsed[0].data)
    assert payload == {"message_id": "m_abc", "seq": seq, "text": text}
    assert payload["text"] == text  # CR included: JSON escapes it
    # The JSON is one line, so the event is exactly one `data:` line.
    assert raw.count(b"\ndata: ") + raw.startswith(b"data: ") == 1
    theirs = _httpx_sse_events(raw, [])
    assert [json.loads(e.data)["text"] for e in theirs] == [text]


def test_seed_answers_round_trip_exactly(seed_answers):
    # The two answers that must reach users exactly, as deltas of the real
    # event format, read by both readers.
    for key in ("improvisation", "voicings"):
        answer = seed_answers[key]["answer"]
        raw = StreamEvent("m_seed", 2, EventKind.DELTA, {"text": answer}).encode()
        for _, chunks in _feeds(raw):
            (event,) = _parse_chunks(chunks)
            assert json.loads(event.data)["text"] == answer
        (theirs,) = _httpx_sse_events(raw, [])
        assert json.loads(theirs.data)["text"] == answer
        # And as raw event data (no JSON): LF-only text survives the line split.
        assert "\r" not in answer
        assert _parse_whole(encode_event(answer)) == [M(answer)]
