"""An answer longer than MAX_ANSWER_CHARS fails with a typed error (docs/security.md, "Memory").

Against a live server, on the memory store and on a real redis-server: the
text up to the limit is kept and flagged incomplete, the answer fails with
`answer_too_long` (not retryable), and it never enters the history.
"""

from __future__ import annotations

import pytest

from ..helpers import assert_sound_events

pytestmark = pytest.mark.parametrize("store_kind", ["memory", "redis"])

LIMIT = 100


def test_an_answer_over_max_answer_chars_fails_typed_with_its_partial_text_flagged_incomplete(
    live_server_factory, chat_factory, seed_answers, store_kind
):
    server = live_server_factory(MAX_ANSWER_CHARS=LIMIT)
    chat = chat_factory(server)
    expected = seed_answers["improvisation"]["answer"]
    assert len(expected) > LIMIT

    result = chat.send("/scenario improvisation", "r-long")

    assert_sound_events(result, result.message_id)
    assert result.kinds[-1] == "message.failed"
    ending = result.payloads[-1]
    assert ending["error"]["code"] == "answer_too_long"
    assert ending["error"]["retryable"] is False
    assert ending["incomplete"] is True and ending["length"] == LIMIT
    assert result.text == expected[:LIMIT]
    state = chat.http.get(f"{chat.messages_url()}/{result.message_id}", headers=chat.auth).json()
    assert state["state"] == "failed" and state["error"]["code"] == "answer_too_long"
    # Not kept in history as an answer.
    assert chat.history().json()["messages"] == []


def test_an_answer_at_max_answer_chars_completes(live_server_factory, chat_factory, seed_answers, store_kind):
    expected = seed_answers["improvisation"]["answer"]
    server = live_server_factory(MAX_ANSWER_CHARS=len(expected))
    chat = chat_factory(server)
    result = chat.send("/scenario improvisation", "r-exact")
    assert result.kinds[-1] == "message.completed" and result.text == expected
