"""What a finished answer costs the store is bounded in bytes (docs/security.md, "Memory").

Against a live server, on the memory store and on a real redis-server: a
finished answer's log is compacted to its text and its terminal event, so a
resume after the end is one `message.snapshot` and the ending, still exact;
the bytes the store holds for a finished 4,000-character answer are about
its text (counted from what the store holds, not from the process's RSS).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from widget_server.backends.demo import LONG_MARKDOWN

from ..helpers import ChatClient, assert_digest, assert_sound_events, wait_until
from ..memory_walk import deep_size

pytestmark = pytest.mark.parametrize("store_kind", ["memory", "redis"])

# 4,000 characters, some of them multi-byte, streamed as a model does: about 4 characters a delta.
ANSWER_4000 = ("Arpeggios — «Am F C G» — spell the chord tones; scales fill the gaps. " * 60)[:4000]
DELTA_CHARS = 4


class TokenBackend:
    """A model that streams ANSWER_4000 in token-sized deltas."""

    name = "tokens"

    def stream(self, turn: Any, cancel: Any) -> Iterator[str]:
        for start in range(0, len(ANSWER_4000), DELTA_CHARS):
            yield ANSWER_4000[start : start + DELTA_CHARS]


def _state(chat, mid: str) -> dict:
    return chat.http.get(f"{chat.messages_url()}/{mid}", headers=chat.auth).json()


def _finished(chat, text: str, request_id: str) -> str:
    result = chat.send(text, request_id)
    assert result.kinds[-1] == "message.completed", result.kinds
    return result.message_id


@pytest.fixture
def other_worker(live_server_factory, store_kind: str) -> Iterator[Callable[..., ChatClient]]:
    """The same conversation through another worker on the same Redis (what the store
    holds, not the first worker's tail buffer of the events it read); on memory, the same server."""
    made: list[ChatClient] = []

    def through(chat: ChatClient, **config: Any) -> ChatClient:
        if store_kind == "memory":
            return chat
        other = ChatClient(live_server_factory(**config).url)
        other.conversation_id, other.token = chat.conversation_id, chat.token
        made.append(other)
        return other

    yield through
    for other in made:
        other.close()


def test_a_finished_answer_resumes_as_one_snapshot_and_its_ending(live_server_factory, chat_factory, other_worker):
    server = live_server_factory(FINISHED_LOG_GRACE_SECONDS=0)
    writer = chat_factory(server)
    mid = _finished(writer, "/scenario markdown", "r-md")
    chat = other_worker(writer, FINISHED_LOG_GRACE_SECONDS=0)

    for position in (None, f"{mid}:0", f"{mid}:1", f"{mid}:2"):
        rest = chat.resume(mid, position)
        assert rest.status == 200, (position, rest.json)
        assert rest.kinds == ["message.snapshot", "message.completed"], position
        assert rest.payloads[0]["seq"] == rest.payloads[1]["seq"] - 1
        assert rest.payloads[0]["state"] == "running"
        assert_sound_events(rest, mid)
        assert rest.text == LONG_MARKDOWN
        assert_digest(rest.payloads[-1], LONG_MARKDOWN)
    # At the terminal event: nothing more. The history still has the whole answer.
    last = _state(chat, mid)["last_seq"]
    assert chat.resume(mid, f"{mid}:{last}").events == []
    assert chat.history().json()["messages"][-1]["text"] == LONG_MARKDOWN


def test_a_finished_answer_keeps_its_exact_events_for_the_grace_then_is_compacted(
    live_server_factory, chat_factory, other_worker
):
    server = live_server_factory(FINISHED_LOG_GRACE_SECONDS=1)
    chat = chat_factory(server)
    first = chat.send("/scenario improvisation", "r-1")
    mid = first.message_id
    # Within the grace a reader catching up gets the very events, not the whole text again.
    again = chat.resume(mid, f"{mid}:2")
    assert [e.id for e in again.events] == [e.id for e in first.events[2:]]
    time.sleep(1.2)
    _finished(chat, "/scenario voicings", "r-2")  # any later activity compacts what is due
    rest = other_worker(chat).resume(mid, f"{mid}:2")
    assert rest.kinds == ["message.snapshot", "message.completed"]
    assert rest.text == first.text
    assert_digest(rest.payloads[-1], first.text)


def stored_bytes(server: Any, mid: str) -> int:
    """What the store holds for one message: a walk of its record (memory), MEMORY USAGE of its keys (Redis)."""
    store = server.service.store
    if server.service.store.shared:
        key = f"cw:msg:{mid}"
        usages = [store.redis.memory_usage(k) for k in (key, key + ":text", key + ":events", key + ":actions")]
        return sum(u or 0 for u in usages)
    record = store._messages[mid]
    return deep_size(record.log)


def _bound(text: str, store_kind: str) -> int:
    """About its text plus a small constant: the text as the store keeps it (a
    CPython str of this text is 2 bytes a character; Redis keeps UTF-8), and 6 KiB (on
    Redis, mostly the 4 KiB a stream node reserves for its one terminal entry)."""
    kept = sys.getsizeof(text) if store_kind == "memory" else len(text.encode("utf-8"))
    return kept + 6144


def test_a_finished_4000_character_answer_costs_about_its_text(
    live_server_factory, chat_factory, other_worker, store_kind
):
    server = live_server_factory(FINISHED_LOG_GRACE_SECONDS=0)
    server.service.backend = TokenBackend()
    chat = chat_factory(server)
    result = chat.send("a long answer, please", "r-long")
    assert result.kinds[-1] == "message.completed"
    assert result.text == ANSWER_4000  # (a reader behind at the end gets a snapshot: it was compacted)
    mid = result.message_id
    assert wait_until(lambda: _state(chat, mid)["state"] == "completed")

    held = stored_bytes(server, mid)

    assert held <= _bound(ANSWER_4000, store_kind), held
    rest = other_worker(chat).resume(mid, f"{mid}:1")
    assert rest.kinds == ["message.snapshot", "message.completed"] and rest.text == ANSWER_4000
