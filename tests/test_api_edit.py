"""POST …/messages/{user_message_id}/edit (docs/protocol.md, "Regenerate and edit"), on the
memory store and on Redis: the last user message replaced by new text (a new user message
id) and answered, streamed like a send, idempotent on its request_id; the old pair leaves
the history and what the backend sees. The text follows a send's rules (api.user_text).

Backend runs and the history each run was given are observed with tests/revision_support.py
ScriptedBackend, whose every answer differs.
"""

from __future__ import annotations

import threading

import pytest

from .helpers import (
    ChatClient,
    assert_completed,
    assert_json_error,
    assert_sound_events,
    message_state,
    wait_until,
)
from .revision_support import edit, history_ids, listed, regenerate, scripted


def test_edit_replaces_the_last_turn_and_streams_its_new_answer(live_server, chat_factory):
    backend = scripted(live_server)
    chat = chat_factory(live_server)
    first = assert_completed(chat.send("q1", "r1"))
    second = assert_completed(chat.send("q2", "r2"))
    user_ids = history_ids(chat)[0::2]

    new = assert_completed(edit(chat, user_ids[1], "r3", "q2, better put"))

    assert new.message_id not in (first.message_id, second.message_id)
    assert new.text == "q2, better put #3."
    assert backend.turns[-1].text == "q2, better put"
    assert backend.turns[-1].history == [("user", "q1"), ("assistant", "q1 #1.")]
    assert listed(chat) == [
        ("user", "q1", "completed"),
        ("assistant", "q1 #1.", "completed"),
        ("user", "q2, better put", "completed"),
        ("assistant", "q2, better put #3.", "completed"),
    ]
    ids = history_ids(chat)
    assert ids[:2] == [user_ids[0], first.message_id] and ids[3] == new.message_id
    assert ids[2] not in user_ids and ids[2].startswith("u_")  # the edited turn has its own id
    # The old answer stays in the store (diagnostics), ended as it was.
    assert message_state(chat, second.message_id) == "completed"
    # The next turn's backend sees the edited pair, never the old one.
    assert_completed(chat.send("q3", "r4"))
    assert backend.turns[-1].history == [
        ("user", "q1"),
        ("assistant", "q1 #1."),
        ("user", "q2, better put"),
        ("assistant", "q2, better put #3."),
    ]
    assert backend.runs == 4


def test_an_edited_turn_may_be_edited_and_regenerated_again(live_server, chat_factory):
    backend = scripted(live_server)
    chat = chat_factory(live_server)
    assert_completed(chat.send("q1", "r1"))
    edited = assert_completed(edit(chat, history_ids(chat)[0], "r2", "q1b"))
    regenerated = assert_completed(regenerate(chat, edited.message_id, "r3"))
    # A regenerate keeps the user turn, so the edited turn's id still names the last message.
    assert history_ids(chat)[1] == regenerated.message_id
    again = assert_completed(edit(chat, history_ids(chat)[0], "r4", "q1c"))
    assert backend.turns[-1].history == []
    assert listed(chat) == [("user", "q1c", "completed"), ("assistant", "q1c #4.", "completed")]
    assert history_ids(chat)[1] == again.message_id


def test_a_retry_with_the_same_request_id_streams_the_same_answer_and_starts_nothing(live_server, chat_factory):
    backend = scripted(live_server)
    chat = chat_factory(live_server)
    assert_completed(chat.send("q1", "r1"))
    user_id = history_ids(chat)[0]
    first = assert_completed(edit(chat, user_id, "edit-1", "q1b"))
    retry = assert_completed(edit(chat, user_id, "edit-1", "q1b"))
    assert retry.message_id == first.message_id
    assert retry.payloads == first.payloads
    assert backend.runs == 2
    assert listed(chat) == [("user", "q1b", "completed"), ("assistant", "q1b #2.", "completed")]
    # The same request id with another text is another request.
    conflict = edit(chat, user_id, "edit-1", "q1c")
    assert conflict.status == 409 and conflict.json["error"]["code"] == "request_id_conflict"
    assert conflict.json["error"]["details"] == {"message_id": first.message_id}
    assert backend.runs == 2


def test_only_the_last_user_message_may_be_edited(live_server, chat_factory):
    backend = scripted(live_server)
    chat = chat_factory(live_server)
    assert_completed(chat.send("q1", "r1"))
    assert_completed(chat.send("q2", "r2"))
    refused = edit(chat, history_ids(chat)[0], "r3", "q1b")
    assert refused.status == 409 and refused.json["error"]["code"] == "not_last_message"
    assert backend.runs == 2 and len(listed(chat)) == 4


def test_a_message_whose_answer_is_still_generating_cannot_be_edited(live_server, chat_factory):
    backend = scripted(live_server)
    backend.gate = threading.Event()
    chat = chat_factory(live_server)
    running = chat.send("q1", "r1", max_events=2)
    assert running.kinds == ["message.started", "text.delta"]
    user_id = history_ids(chat)[0]
    refused = edit(chat, user_id, "r2", "q1b")
    assert refused.status == 409 and refused.json["error"]["code"] == "message_not_finished"
    backend.gate.set()
    assert wait_until(lambda: message_state(chat, running.message_id) == "completed")
    assert_completed(edit(chat, user_id, "r2", "q1b"))
    assert backend.runs == 2


def test_the_new_answer_resumes_like_any_answer(live_server, chat_factory):
    backend = scripted(live_server)
    chat = chat_factory(live_server)
    assert_completed(chat.send("q1", "r1"))
    backend.gate = threading.Event()
    cut = edit(chat, history_ids(chat)[0], "r2", "q1b", max_events=2)
    assert cut.kinds == ["message.started", "text.delta"]
    backend.gate.set()
    resumed = chat.resume(cut.message_id, cut.events[-1].id)
    assert resumed.kinds == ["text.delta", "message.completed"]
    assert_sound_events(resumed, cut.message_id)
    assert cut.text + resumed.text == "q1b #2."
    assert backend.runs == 2


def test_an_unknown_or_foreign_message_is_not_found(live_server, chat_factory):
    backend = scripted(live_server)
    chat = chat_factory(live_server)
    answer = assert_completed(chat.send("q1", "r1"))
    other = chat_factory(live_server)
    assert_completed(other.send("q2", "r1"))
    theirs = history_ids(other)[0]
    # Another conversation's user message, an unknown one, and an answer (not a user message).
    for message_id in (theirs, "u_unknown000000000000", answer.message_id):
        result = edit(chat, message_id, f"r-{message_id}", "text")
        assert result.status == 404 and result.json["error"]["code"] == "not_found", (message_id, result.json)
    assert backend.runs == 2
    assert listed(chat) == [("user", "q1", "completed"), ("assistant", "q1 #1.", "completed")]


@pytest.mark.parametrize("token", [None, "wrong-token"])
def test_without_the_conversation_token_nothing_is_found(live_server, chat_factory, token):
    backend = scripted(live_server)
    chat = chat_factory(live_server)
    assert_completed(chat.send("q1", "r1"))
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    response = chat.http.post(
        f"{chat.messages_url()}/{history_ids(chat)[0]}/edit", json={"request_id": "r2", "text": "x"}, headers=headers
    )
    assert_json_error(response, 404, "not_found")
    assert backend.runs == 1


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"request_id": "r2"}, 400, "missing_text"),
        ({"request_id": "r2", "text": 5}, 400, "missing_text"),
        ({"request_id": "r2", "text": " \n\t "}, 400, "empty_text"),
        ({"request_id": "r2", "text": "x" * 4001}, 413, "text_too_long"),
        ({"text": "q1b"}, 400, "missing_request_id"),
        ({"request_id": "bad id", "text": "q1b"}, 400, "invalid_request_id"),
        ({"request_id": "r2", "text": "q1b", "extra": 1}, 400, "unknown_field"),
    ],
)
def test_the_text_follows_a_sends_rules(live_server, chat_factory, body, status, code):
    backend = scripted(live_server)
    chat = chat_factory(live_server)
    assert_completed(chat.send("q1", "r1"))
    user_id = history_ids(chat)[0]
    response = chat.http.post(f"{chat.messages_url()}/{user_id}/edit", json=body, headers=chat.auth)
    assert_json_error(response, status, code)
    # A send refuses the same body the same way (one validation: api.user_text).
    sent = chat.http.post(chat.messages_url(), json=body, headers=chat.auth)
    assert_json_error(sent, status, code)
    assert backend.runs == 1
    assert listed(chat) == [("user", "q1", "completed"), ("assistant", "q1 #1.", "completed")]


def test_lone_surrogates_in_the_text_are_replaced_as_in_a_send(live_server, chat_factory):
    backend = scripted(live_server)
    chat = chat_factory(live_server)
    assert_completed(chat.send("q1", "r1"))
    user_id = history_ids(chat)[0]
    response = chat.stream(
        "POST",
        f"{chat.messages_url()}/{user_id}/edit",
        content=b'{"request_id": "r2", "text": "a\\ud800b"}',
        headers={"Content-Type": "application/json"},
    )
    assert_completed(response)
    assert backend.turns[-1].text == "a\ufffdb"
    assert listed(chat)[0] == ("user", "a\ufffdb", "completed")


def test_edit_spends_the_conversations_message_quota(live_server_factory, chat_factory):
    """An edit starts an answer, so it counts as a send (ratelimits.py)."""
    import random

    server = live_server_factory(
        RATE_LIMITS=True,
        PROXY_HOPS=1,
        RATE_LIMIT_CLIENT="",
        RATE_LIMIT_NEW_CONVERSATIONS="",
        RATE_LIMIT_MESSAGES_CLIENT="",
        RATE_LIMIT_MESSAGES_CONVERSATION="2/minute",
    )
    backend = scripted(server)
    chat = ChatClient(server.url)
    # A fresh address: counters in Redis outlive a test's servers (tests/test_api_ratelimits.py).
    chat.http.headers["X-Forwarded-For"] = f"10.{random.randrange(256)}.{random.randrange(256)}.9"
    chat.new_conversation()
    try:
        assert_completed(chat.send("q1", "r1"))
        assert_completed(edit(chat, history_ids(chat)[0], "r2", "q1b"))
        refused = edit(chat, history_ids(chat)[0], "r3", "q1c")
        assert refused.status == 429
        assert refused.json["error"]["details"]["limit"] == "messages_conversation"
        assert backend.runs == 2
    finally:
        chat.close()
