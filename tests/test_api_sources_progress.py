"""An answer's sources and progress lines, on the wire (docs/protocol.md, "Sources" and
"`message.progress`"): sources come with `message.completed` and stay in the history, exactly
after any resume and reload; progress lines are events of the stream only, never the answer's
text or its history; a failed or cancelled answer lists no sources.

Named tests/test_api_*.py, so every test runs on the memory store and on a real redis-server.
The demo's `/scenario sources` and `/scenario progress` are played as a visitor would; the
rest by `ScriptedBackend` below, loaded by its path as a site's own backend would be.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from widget_server.answer_parts import MAX_PROGRESS_CHARS, MAX_SOURCES, Progress, Source
from widget_server.backends.base import CancelToken, Turn
from widget_server.backends.demo import (
    DEMO_SOURCES,
    PROGRESS_ANSWER,
    PROGRESS_LINES,
    SOURCES_ANSWER,
    SOURCES_PROGRESS,
)
from widget_server.errors import ChatError, ErrorCode

from .helpers import ChatClient, assert_digest, assert_sound_events

DEMO_SOURCES_JSON = [
    {"id": source.id, "title": source.title, "url": source.url, "snippet": source.snippet} for source in DEMO_SOURCES
]


class ScriptedBackend:
    """Answers by the question: a few sources, then a failure; a source no client could show;
    many progress lines, long ones among them; a source and a marker with spaces around."""

    name = "scripted-parts"

    def stream(self, turn: Turn, cancel: CancelToken) -> Iterator[str | Source | Progress]:
        if turn.text == "sources then fail":
            yield "Partly answered [1]. "
            yield Source("1", "Cited before the failure", "https://example.com/a")
            raise ChatError(ErrorCode.PROVIDER, "scripted failure after a source")
        if turn.text.startswith("bad source "):
            yield "An answer. "
            kind = turn.text.removeprefix("bad source ")
            yield {
                "javascript": Source("1", "Click me", "javascript:alert(1)"),
                "relative": Source("1", "Relative", "/kb/faq.md"),
                "no title": Source("1", "   "),
                "twice": Source("1", "Once"),
                "too many": Source(str(MAX_SOURCES + 1), "Over the limit"),
            }[kind]
            if kind == "twice":
                yield Source("1", "Twice")
            if kind == "too many":
                for number in range(1, MAX_SOURCES + 2):
                    yield Source(f"s{number}", f"Source {number}")
        if turn.text == "progress lines":
            yield Progress("")  # nothing to say: left out
            yield Progress("Searching\n  the   help centre…")
            yield Progress("x" * (MAX_PROGRESS_CHARS + 50))
            yield "Found it. "
            yield Progress("Reading 3 documents…")  # between words
            yield "Done.\n"
        if turn.text == "tidied source":
            yield "See [a]."
            yield Source(" a ", "  A\ttitle\nwith  breaks ", "https://example.com/a?q=1#x", "  a  snippet ")


@pytest.fixture
def scripted(live_server_factory):
    return live_server_factory(BACKEND="tests.test_api_sources_progress:ScriptedBackend")


def progress_of(result) -> list[str]:
    return [
        data["text"] for kind, data in zip(result.kinds, result.payloads, strict=True) if kind == "message.progress"
    ]


def assistant_entries(chat: ChatClient) -> list[dict]:
    return [m for m in chat.history().json()["messages"] if m["role"] == "assistant"]


# -- sources ---------------------------------------------------------------------------------


def test_sources_come_with_the_completion_and_stay_in_the_history(live_server, chat_factory):
    chat = chat_factory(live_server)
    result = chat.send("/scenario sources", "r-1")
    assert_sound_events(result)
    assert result.kinds[-1] == "message.completed" and result.text == SOURCES_ANSWER
    assert_digest(result.payloads[-1], result.text)
    assert result.payloads[-1]["sources"] == DEMO_SOURCES_JSON
    assert progress_of(result) == [SOURCES_PROGRESS]
    # Only the completion carries them: no other event, and the text has only the markers.
    assert all("sources" not in data for data in result.payloads[:-1])
    (answer,) = assistant_entries(chat)
    assert answer["sources"] == DEMO_SOURCES_JSON and answer["text"] == SOURCES_ANSWER


def test_sources_are_exact_after_any_resume_and_a_reload(live_server, chat_factory):
    chat = chat_factory(live_server)
    first = chat.send("/scenario sources", "r-1")
    message_id = first.message_id
    last = first.payloads[-1]["seq"]
    # Resumed from every position, before and after the end: the same completion, the same list.
    for after in (None, *range(1, last + 1)):
        resumed = chat.resume(message_id, f"{message_id}:{after}" if after else None)
        if after == last:
            assert resumed.events == []  # nothing after the end
            continue
        assert_sound_events(resumed, message_id, allow_snapshots=True)
        assert resumed.kinds[-1] == "message.completed"
        assert resumed.payloads[-1] == first.payloads[-1], after
    # The same request again (a retry) replays it exactly.
    again = chat.send("/scenario sources", "r-1")
    assert again.payloads[-1]["sources"] == DEMO_SOURCES_JSON
    # Another client with the conversation's token (a reload) reads the same history.
    reloaded = ChatClient(live_server.url)
    reloaded.conversation_id, reloaded.token = chat.conversation_id, chat.token
    try:
        assert assistant_entries(reloaded) == assistant_entries(chat)
        assert assistant_entries(reloaded)[0]["sources"] == DEMO_SOURCES_JSON
    finally:
        reloaded.close()


def test_an_answer_without_sources_lists_none(live_server, chat_factory):
    chat = chat_factory(live_server)
    result = chat.send("/echo plain words", "r-1")
    assert result.kinds[-1] == "message.completed" and "sources" not in result.payloads[-1]
    assert "sources" not in assistant_entries(chat)[0]


def test_a_failed_answer_lists_no_sources(scripted, chat_factory):
    chat = chat_factory(scripted)
    result = chat.send("sources then fail", "r-1")
    assert result.kinds[-1] == "message.failed" and result.payloads[-1]["error"]["code"] == "provider"
    assert all("sources" not in data for data in result.payloads)
    assert assistant_entries(chat) == []  # an error is never saved into history


@pytest.mark.parametrize("kind", ["javascript", "relative", "no title", "twice", "too many"])
def test_a_source_no_client_could_show_fails_the_answer_as_internal(scripted, chat_factory, kind):
    chat = chat_factory(scripted)
    result = chat.send(f"bad source {kind}", "r-1")
    assert result.kinds[-1] == "message.failed", result.kinds
    assert result.payloads[-1]["error"]["code"] == "internal"
    assert "javascript:" not in str(result.payloads)


def test_a_source_is_tidied_once_and_kept_as_tidied(scripted, chat_factory):
    chat = chat_factory(scripted)
    result = chat.send("tidied source", "r-1")
    tidied = {"id": "a", "title": "A title with breaks", "url": "https://example.com/a?q=1#x", "snippet": "a snippet"}
    assert result.payloads[-1]["sources"] == [tidied]
    assert assistant_entries(chat)[0]["sources"] == [tidied]


# -- progress --------------------------------------------------------------------------------


def test_progress_lines_stream_before_the_words_and_never_reach_the_history(live_server, chat_factory):
    chat = chat_factory(live_server)
    result = chat.send("/scenario progress", "r-1")
    assert_sound_events(result)
    assert progress_of(result) == list(PROGRESS_LINES)
    assert result.kinds[:3] == ["message.started", "message.progress", "message.progress"]
    assert result.kinds[-1] == "message.completed" and result.text == PROGRESS_ANSWER
    assert_digest(result.payloads[-1], result.text)  # the digest is over the text alone
    (answer,) = assistant_entries(chat)
    assert answer["text"] == PROGRESS_ANSWER and set(answer) == {"message_id", "role", "text", "state", "feedback"}


def test_progress_lines_are_bounded_and_may_come_between_words(scripted, chat_factory):
    chat = chat_factory(scripted)
    result = chat.send("progress lines", "r-1")
    lines = progress_of(result)
    assert lines[0] == "Searching the help centre…"  # one line, whitespace runs as one space
    assert len(lines[1]) == MAX_PROGRESS_CHARS and lines[1].endswith("…")
    assert lines[2] == "Reading 3 documents…"
    assert result.kinds.index("text.delta") < len(result.kinds) - 1 - result.kinds[::-1].index("message.progress")
    assert result.text == "Found it. Done.\n"
    # A reader resuming while it ran got the same events; after the end, the log keeps the
    # text and the ending only (docs/protocol.md, "Resume"): progress is gone, the text exact.
    resumed = chat.resume(result.message_id, None)
    assert resumed.text == result.text and resumed.payloads[-1] == result.payloads[-1]
    assert "Reading" not in str(assistant_entries(chat))
