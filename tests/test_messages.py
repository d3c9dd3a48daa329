"""MessageLog: the state machine, its events, the bounded log and resume."""

from __future__ import annotations

import hashlib
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from widget_server import sse
from widget_server.errors import ErrorCode, ErrorInfo
from widget_server.messages import (
    EventKind,
    InvalidTransition,
    MessageLog,
    MessageState,
    StreamEvent,
    clean_text,
    replace_lone_surrogates,
    text_digest,
)
from widget_server.protocol import event_id, parse_event_id
from widget_server.sse import EventStreamParser

ERROR = ErrorInfo.for_code(ErrorCode.PROVIDER)


def running(max_events: int = 100) -> MessageLog:
    log = MessageLog("m_1", max_events)
    log.start()
    return log


def _end(log: MessageLog, how: str):
    if how == "complete":
        return log.complete()
    if how == "cancel":
        return log.cancel()
    return log.fail(ERROR)


# -- state machine ---------------------------------------------------------


def test_happy_path_states_and_kinds():
    log = MessageLog("m_1", 100)
    assert log.state is MessageState.ACCEPTED
    assert log.last_seq == 0
    started = log.start()
    assert log.state is MessageState.RUNNING
    delta = log.add_text("Hello")
    done = log.complete()
    assert log.state is MessageState.COMPLETED
    assert [e.kind for e in (started, delta, done)] == [EventKind.STARTED, EventKind.DELTA, EventKind.COMPLETED]
    assert [e.seq for e in (started, delta, done)] == [1, 2, 3]
    assert delta.payload == {"text": "Hello"}
    assert log.text == "Hello"


@pytest.mark.parametrize("how", ["complete", "cancel", "fail"])
def test_terminal_states_are_final(how):
    log = running()
    log.add_text("partial")
    _end(log, how)
    assert log.state.terminal
    seq, text = log.last_seq, log.text
    for write in (
        log.start,
        lambda: log.add_text("more"),
        log.complete,
        log.cancel,
        lambda: log.fail(ERROR),
    ):
        with pytest.raises(InvalidTransition):
            write()
    # Refused writes change nothing.
    assert log.last_seq == seq
    assert log.text == text
    assert len(log.events_after(0)) == seq


def test_cancel_before_start_is_allowed_and_final():
    log = MessageLog("m_1", 100)
    event = log.cancel()
    assert log.state is MessageState.CANCELLED
    assert event.kind is EventKind.CANCELLED
    assert event.seq == 1
    assert event.payload == {"incomplete": True, "length": 0}
    with pytest.raises(InvalidTransition):
        log.start()
    assert log.events_after(0) == [event]


def test_fail_before_start_is_allowed():
    log = MessageLog("m_1", 100)
    event = log.fail(ERROR)
    assert log.state is MessageState.FAILED
    assert log.error == ERROR
    assert event.payload["error"] == ERROR.to_json()
    assert event.payload["incomplete"] is True


def test_complete_before_start_is_refused():
    log = MessageLog("m_1", 100)
    with pytest.raises(InvalidTransition):
        log.complete()
    assert log.state is MessageState.ACCEPTED
    assert log.last_seq == 0


def test_text_before_start_is_refused():
    log = MessageLog("m_1", 100)
    with pytest.raises(InvalidTransition):
        log.add_text("x")
    assert log.text == ""
    assert log.last_seq == 0


def test_start_twice_is_refused():
    log = running()
    with pytest.raises(InvalidTransition):
        log.start()
    assert log.last_seq == 1


def test_max_events_must_be_positive():
    with pytest.raises(ValueError):
        MessageLog("m_1", 0)


def test_terminal_flags():
    assert {s for s in MessageState if s.terminal} == {
        MessageState.COMPLETED,
        MessageState.CANCELLED,
        MessageState.FAILED,
    }
    assert {k for k in EventKind if k.terminal} == {EventKind.COMPLETED, EventKind.CANCELLED, EventKind.FAILED}


# -- events and digests ----------------------------------------------------


@settings(max_examples=100, deadline=None)
@given(parts=st.lists(st.text(), max_size=12))
def test_seq_rises_by_one_and_completed_digest_is_exact(parts):
    log = running()
    seqs = [1]
    for part in parts:
        seqs.append(log.add_text(part).seq)
    done = log.complete()
    seqs.append(done.seq)
    assert seqs == list(range(1, len(parts) + 3))
    # An answer keeps every character but lone surrogates, controls included (clean_text is for typed texts).
    text = replace_lone_surrogates("".join(parts))
    assert log.text == text
    encoded = text.encode("utf-8")
    assert done.payload == {
        "length": len(text),
        "utf8_bytes": len(encoded),
        "sha256": hashlib.sha256(encoded).hexdigest(),
    }
    assert done.payload == text_digest(text)
    assert log.length == len(text)


@settings(max_examples=60, deadline=None)
@given(parts=st.lists(st.text(), max_size=12), max_events=st.integers(1, 6))
def test_add_delta_keeps_what_add_text_keeps(parts, max_events):
    """The store's per-delta write (MemoryStore.append_text_soon) makes no event: the log it
    leaves, and the byte count the store's budget reads, are add_text's, eviction included."""
    with_events, without = running(max_events), running(max_events)
    for part in parts:
        assert without.add_delta(part) == with_events.add_text(part).seq
        assert without.stored_bytes == with_events.stored_bytes
    assert without.events_after(0) == with_events.events_after(0)
    assert without.complete() == with_events.complete()
    assert without.stored_bytes == with_events.stored_bytes
    without.compact()
    with_events.compact()
    assert without.stored_bytes == with_events.stored_bytes
    with pytest.raises(InvalidTransition):
        without.add_delta("after the end")


def test_completed_digest_of_seed_answers(seed_answers):
    for key in ("improvisation", "voicings"):
        answer = seed_answers[key]["answer"]
        log = running()
        for index in range(0, len(answer), 7):
            log.add_text(answer[index : index + 7])
        done = log.complete()
        assert log.text == answer
        assert done.payload["length"] == seed_answers[key]["chars"] == len(answer)
        assert done.payload["utf8_bytes"] == len(answer.encode("utf-8"))
        assert done.payload["sha256"] == hashlib.sha256(answer.encode("utf-8")).hexdigest()


def test_cr_and_crlf_are_kept_in_text_and_digest():
    log = running()
    log.add_text("a\r\nb\r")
    log.add_text("c")
    done = log.complete()
    assert log.text == "a\r\nb\rc"
    assert done.payload["sha256"] == hashlib.sha256(b"a\r\nb\rc").hexdigest()


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("a\ud800b", "a\ufffdb"),
        ("\udfff", "\ufffd"),
        ("\ud83c\udfb8", "\ufffd\ufffd"),  # a surrogate *pair* in a str is still two lone surrogates
        ("\U0001f3b8", "\U0001f3b8"),
        ("plain", "plain"),
        ("\ufffd", "\ufffd"),
    ],
)
def test_lone_surrogates_become_replacement_characters(raw, clean):
    assert clean_text(raw) == clean
    assert replace_lone_surrogates(raw) == clean
    log = running()
    delta = log.add_text(raw)
    done = log.complete()
    assert delta.payload["text"] == clean
    assert log.text == clean
    assert done.payload["sha256"] == hashlib.sha256(clean.encode("utf-8")).hexdigest()
    delta.encode()  # encodable: no UnicodeEncodeError


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("a\x00b\x07c", "abc"),
        ("\x1b[31mred\x1b[0m", "[31mred[0m"),  # ESC gone: no terminal colour, the rest is text
        ("one\r\ntwo\rthree\nfour", "one\ntwo\nthree\nfour"),
        ("tab\there", "tab\there"),
        ("del\x7f", "del"),
        ("\x0b\x0c\x1f", ""),
        ("é\x08\ud800", "é\ufffd"),
        ("\u2028 and \x85 stay", "\u2028 and \x85 stay"),  # not C0: left to the protocol's rules
    ],
)
def test_clean_text_drops_control_characters_but_tab_and_newline(raw, clean):
    """docs/protocol.md, "Conventions": typed texts lose C0 controls (but tab and LF) and DEL,
    and their line ends become LF; an answer's text keeps them (exact text)."""
    assert clean_text(raw) == clean
    log = running()
    log.add_text(raw)
    assert log.text == replace_lone_surrogates(raw)


@settings(max_examples=200, deadline=None)
@given(text=st.text(alphabet=st.characters(codec=None, max_codepoint=0x2030)))
def test_clean_text_is_idempotent_and_leaves_no_control(text):
    """Cleaning twice is cleaning once (a retry's fingerprint, over the cleaned text, matches)."""
    clean = clean_text(text)
    assert clean_text(clean) == clean
    assert not any((ord(c) < 0x20 and c not in "\t\n") or c == "\x7f" for c in clean)
    assert clean.count("\n") == text.replace("\r\n", "\n").count("\n") + text.replace("\r\n", "").count("\r")
    assert clean.count("\t") == text.count("\t")
    clean.encode("utf-8")  # no lone surrogate left


def test_failed_and_cancelled_payloads_report_partial_length():
    log = running()
    log.add_text("héllo")
    failed = log.fail(ERROR)
    assert failed.payload == {"error": ERROR.to_json(), "incomplete": True, "length": 5}
    log2 = running()
    log2.add_text("abc")
    assert log2.cancel().payload == {"incomplete": True, "length": 3}


def test_stream_event_encode_and_json_round_trip():
    event = StreamEvent("m_1", 4, EventKind.DELTA, {"text": "a\r\nb"})
    assert event.id == "m_1:4" == event_id("m_1", 4)
    assert event.data() == {"message_id": "m_1", "seq": 4, "text": "a\r\nb"}
    assert event.to_json() == {"kind": "text.delta", "message_id": "m_1", "seq": 4, "text": "a\r\nb"}
    assert StreamEvent.from_json(event.to_json()) == event
    seen = []
    parser = EventStreamParser(seen.append)
    parser.feed(event.encode())
    assert len(seen) == 1
    assert (seen[0].event, seen[0].id) == ("text.delta", "m_1:4")
    assert json.loads(seen[0].data) == event.data()


def _general_encoding(event: StreamEvent) -> bytes:
    """What every event is: its data dumped as one-line JSON, written by the SSE writer."""
    data = json.dumps(event.data(), ensure_ascii=False, separators=(",", ":"))
    return sse.encode_event(data, event=event.kind.value, id=event.id)


TRICKY_TEXTS = ["", "a\r\nb\rc\n", "\u2028\u2029\x85", '"\\/', "\x00\x1f\x7f", "🎸 日本語 fa\u0301cil", "\t"]


@settings(max_examples=300, deadline=None)
@given(
    text=st.text(alphabet=st.characters(exclude_categories=["Cs"])) | st.sampled_from(TRICKY_TEXTS),
    seq=st.integers(min_value=1, max_value=10**12),
)
def test_a_delta_encodes_as_the_general_path_does(text, seq):
    # StreamEvent.encode writes a delta directly (the event every stream sends most):
    # byte for byte what the general path writes, for any text.
    event = StreamEvent("msg_0123456789abcdef", seq, EventKind.DELTA, {"text": text})
    assert event.encode() == _general_encoding(event)
    seen = []
    EventStreamParser(seen.append).feed(event.encode())
    assert [(e.event, e.id, json.loads(e.data)) for e in seen] == [("text.delta", event.id, event.data())]


def test_a_delta_with_a_message_id_unfit_for_the_id_field_is_refused_as_before():
    with pytest.raises(sse.InvalidFieldError):
        StreamEvent("m\n1", 2, EventKind.DELTA, {"text": "a"}).encode()
    # A delta with more than its text goes the general way (stores add nothing today).
    event = StreamEvent("m_1", 2, EventKind.DELTA, {"text": "a", "extra": 1})
    assert event.encode() == _general_encoding(event)


# -- reading and eviction ----------------------------------------------------


def test_events_after_without_eviction():
    log = running()
    deltas = [log.add_text(c) for c in "abc"]
    assert [e.seq for e in log.events_after(0)] == [1, 2, 3, 4]
    assert log.events_after(2) == deltas[1:]
    assert log.events_after(4) == []
    assert log.events_after(99) == []


def test_events_after_with_eviction_running_gives_snapshot_at_newest_seq():
    log = running(max_events=3)
    for c in "abcdef":
        log.add_text(c)
    assert log.last_seq == 7
    # Retained: seqs 5, 6, 7. Asking after 4 needs 5: still there.
    assert [e.seq for e in log.events_after(4)] == [5, 6, 7]
    # Asking after 3 needs 4, evicted: snapshot at 7, nothing after it.
    (snapshot,) = log.events_after(3)
    assert snapshot.kind is EventKind.SNAPSHOT
    assert snapshot.seq == 7
    assert snapshot.payload == {"text": "abcdef", "state": "running"}
    assert log.events_after(0) == [snapshot]
    # The snapshot's id is a valid resume position: after it, nothing is missing.
    assert log.events_after(snapshot.seq) == []
    log.add_text("g")
    assert [e.payload for e in log.events_after(snapshot.seq)] == [{"text": "g"}]


@pytest.mark.parametrize("how", ["complete", "cancel", "fail"])
def test_events_after_with_eviction_terminal_gives_snapshot_then_terminal(how):
    log = running(max_events=2)
    for c in "abcd":
        log.add_text(c)
    end = _end(log, how)
    assert end.seq == log.last_seq == 6
    events = log.events_after(1)
    assert [e.kind for e in events] == [EventKind.SNAPSHOT, end.kind]
    snapshot = events[0]
    assert snapshot.seq == 5
    assert snapshot.payload == {"text": "abcd", "state": "running"}
    assert events[1] is end
    assert [e.seq for e in log.events_after(4)] == [5, 6]  # 5 and 6 retained
    assert log.events_after(5) == [end]


def test_terminal_event_is_never_evicted_with_max_events_one():
    log = running(max_events=1)
    log.add_text("x")
    done = log.complete()
    assert log.events_after(0) == [
        StreamEvent("m_1", 2, EventKind.SNAPSHOT, {"text": "x", "state": "running"}),
        done,
    ]
    assert log.events_after(2) == [done]


def test_rebuilding_text_from_any_resume_point_is_exact():
    text = "Line one.\r\nLine two.\n\nThree " * 3
    pieces = [text[i : i + 4] for i in range(0, len(text), 4)]
    for max_events in (1, 2, 5, 100):
        log = running(max_events)
        for piece in pieces:
            log.add_text(piece)
        done = log.complete()
        for after in range(log.last_seq + 1):
            # A client that read every event up to `after` has these deltas
            # (seq 1 is message.started, deltas are seq 2 .. len(pieces)+1).
            known = "".join(pieces[: max(0, min(after, len(pieces) + 1) - 1)])
            events = log.events_after(after)
            for event in events:
                if event.kind is EventKind.SNAPSHOT:
                    known = event.payload["text"]
                elif event.kind is EventKind.DELTA:
                    known += event.payload["text"]
            assert known == text, (max_events, after)
            if after < log.last_seq:
                assert events[-1] == done
                seqs = [e.seq for e in events]
                assert seqs == sorted(set(seqs)) and seqs[0] > after
            else:
                assert events == []


# -- event ids ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "parsed"),
    [
        ("m_x:3", ("m_x", 3)),
        ("m_x:0", ("m_x", 0)),
        ("abc-DEF_123:1234567890", ("abc-DEF_123", 1234567890)),
        ("a" * 64 + ":1", ("a" * 64, 1)),
    ],
)
def test_parse_event_id_accepts(value, parsed):
    assert parse_event_id(value) == parsed


@pytest.mark.parametrize(
    "value",
    [
        "",
        "x",
        "x:",
        ":3",
        "x:-1",
        "x:01",
        "x:+1",
        "x: 1",
        " x:1",
        "x:1 ",
        "a:b:3",
        "x:1.0",
        "x:12345678901",  # more than 10 digits
        "a" * 65 + ":1",
        "m.x:1",
        "m_x:3\n",  # `$` would accept a trailing newline
        "m_x:3\r",
        "m_x\n:3",
        "m_x:\u0661",  # Arabic-Indic digit one
    ],
)
def test_parse_event_id_rejects(value):
    assert parse_event_id(value) is None


@given(message_id=st.from_regex(r"\A[A-Za-z0-9_-]{1,64}\Z"), seq=st.integers(0, 9_999_999_999))
def test_event_id_round_trip(message_id, seq):
    assert parse_event_id(event_id(message_id, seq)) == (message_id, seq)
