"""Feedback on answers (docs/protocol.md, "Feedback"): PUT and DELETE …/messages/<message_id>/feedback.

One record per answer, changeable and removable; only for an ended answer of the same
conversation; carried by the history, so a reloaded panel shows it again; counted at
/metrics by rating. Named tests/test_api_*.py, so every test runs on the memory store and on
a real redis-server.
"""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime

import httpx

from .helpers import HTTP, ChatClient, assert_json_error
from .test_scale_out import metric_value

QUESTION = "which arpeggio fits Am F C G"
ISO_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def feedback_url(chat: ChatClient, message_id: str) -> str:
    return f"{chat.messages_url()}/{message_id}/feedback"


def put(chat: ChatClient, message_id: str, body, **kwargs) -> httpx.Response:
    headers = {**chat.auth, **kwargs.pop("headers", {})}
    return chat.http.put(feedback_url(chat, message_id), json=body, headers=headers, **kwargs)


def delete(chat: ChatClient, message_id: str, **kwargs) -> httpx.Response:
    return chat.http.delete(feedback_url(chat, message_id), headers={**chat.auth, **kwargs.pop("headers", {})})


def reloaded(chat: ChatClient) -> ChatClient:
    """Another client holding only the conversation's id and token, as a reloaded panel does."""
    other = ChatClient(chat.base_url)
    other.conversation_id, other.token = chat.conversation_id, chat.token
    return other


def feedback_in_history(chat: ChatClient) -> dict[str, object]:
    """message id → its `feedback` as a fresh GET of the history says; user entries have none."""
    fresh = reloaded(chat)
    try:
        response = fresh.history()
    finally:
        fresh.close()
    assert response.status_code == 200
    found = {}
    for entry in response.json()["messages"]:
        if entry["role"] == "user":
            assert "feedback" not in entry, entry
        else:
            found[entry["message_id"]] = entry["feedback"]
    return found


def answered(chat: ChatClient, request_id: str, text: str = QUESTION) -> str:
    result = chat.send(text, request_id)
    assert result.kinds[-1] == "message.completed", result.kinds
    return result.message_id


def test_feedback_is_stored_replaced_removed_and_shown_again_after_a_reload(live_server, chat_factory):
    chat = chat_factory(live_server)
    first = answered(chat, "r1")
    second = answered(chat, "r2", "/help")
    assert feedback_in_history(chat) == {first: None, second: None}

    before = datetime.now(UTC)
    response = put(chat, first, {"rating": "up"})
    assert response.status_code == 200, response.text
    assert response.headers["cache-control"] == "no-store"
    stored = response.json()
    assert set(stored) == {"message_id", "rating", "comment", "updated_at"}
    assert stored["message_id"] == first and stored["rating"] == "up" and stored["comment"] == ""
    assert ISO_UTC.match(stored["updated_at"]), stored
    when = datetime.fromisoformat(stored["updated_at"])
    assert before.replace(microsecond=before.microsecond // 1000 * 1000) <= when <= datetime.now(UTC)
    assert feedback_in_history(chat) == {
        first: {"rating": "up", "comment": "", "updated_at": stored["updated_at"]},
        second: None,
    }

    # Changed: the one record is replaced (rating and comment), not added to.
    comment = "Too vague — ¿y los acordes?"
    replaced = put(chat, first, {"rating": "down", "comment": comment})
    assert replaced.status_code == 200
    assert replaced.json()["rating"] == "down" and replaced.json()["comment"] == comment
    assert replaced.json()["updated_at"] >= stored["updated_at"]
    assert feedback_in_history(chat) == {
        first: {"rating": "down", "comment": comment, "updated_at": replaced.json()["updated_at"]},
        second: None,
    }
    # A comment of null is no comment.
    assert put(chat, second, {"rating": "up", "comment": None}).json()["comment"] == ""

    removed = delete(chat, first)
    assert removed.status_code == 204 and removed.content == b""
    assert feedback_in_history(chat)[first] is None
    assert feedback_in_history(chat)[second]["rating"] == "up"
    # Removing what is not there is done too.
    assert delete(chat, first).status_code == 204


def test_a_failed_or_cancelled_answer_can_be_rated_but_not_one_still_running(live_server, chat_factory):
    chat = chat_factory(live_server)
    running = chat.send("/scenario slow", "r-slow", max_events=2)
    assert running.kinds == ["message.started", "text.delta"]
    assert_json_error(put(chat, running.message_id, {"rating": "up"}), 409, "message_not_finished")
    assert chat.cancel(running.message_id).json()["state"] == "cancelled"
    assert put(chat, running.message_id, {"rating": "down"}).status_code == 200

    failed = chat.send("/scenario fail-provider", "r-failed")
    assert failed.kinds[-1] == "message.failed"
    response = put(chat, failed.message_id, {"rating": "down", "comment": "it broke"})
    assert response.status_code == 200 and response.json()["comment"] == "it broke"


def test_only_an_answer_of_this_conversation_can_be_rated(live_server, chat_factory):
    chat = chat_factory(live_server)
    result = chat.send(QUESTION, "r1")
    answer = result.message_id
    user_message = chat.history().json()["messages"][0]["message_id"]
    assert user_message.startswith("u_")
    other = chat_factory(live_server)
    others_answer = answered(other, "r1")

    for message_id in (user_message, others_answer, "m_AAAAAAAAAAAAAAAA"):
        assert_json_error(put(chat, message_id, {"rating": "up"}), 404, "not_found")
        assert_json_error(delete(chat, message_id), 404, "not_found")
    # A malformed id is the same 404 (the route's converter).
    assert_json_error(put(chat, "not an id!", {"rating": "up"}), 404, "not_found")

    # Another conversation's token, a wrong one, none: the conversation's 404.
    url = feedback_url(chat, answer)
    for headers in ({"Authorization": f"Bearer {other.token}"}, {"Authorization": "Bearer " + "x" * 43}, {}):
        assert_json_error(chat.http.put(url, json={"rating": "up"}, headers=headers), 404, "not_found")
        assert_json_error(chat.http.delete(url, headers=headers), 404, "not_found")
    # The other conversation's own answer, through its own token, is untouched by all this.
    assert feedback_in_history(chat) == {answer: None}
    assert feedback_in_history(other) == {others_answer: None}


def test_bodies_are_validated_and_bounded(live_server_factory, chat_factory):
    server = live_server_factory(FEEDBACK_COMMENT_MAX_CHARS=10)
    chat = chat_factory(server)
    answer = answered(chat, "r1")
    for body, status, code in (
        ({}, 400, "invalid_rating"),
        ({"rating": "meh"}, 400, "invalid_rating"),
        ({"rating": 1}, 400, "invalid_rating"),
        ({"rating": None}, 400, "invalid_rating"),
        ({"rating": "up", "comment": 5}, 400, "invalid_comment"),
        ({"rating": "up", "stars": 5}, 400, "unknown_field"),
        ([], 400, "invalid_body"),
        ({"rating": "up", "comment": "x" * 11}, 413, "comment_too_long"),
        # Code points, not UTF-16 units or bytes: 11 emoji are 11 characters.
        ({"rating": "up", "comment": "👍" * 11}, 413, "comment_too_long"),
    ):
        assert_json_error(put(chat, answer, body), status, code)
    not_json = chat.http.put(
        feedback_url(chat, answer), content=b'{"rating":"up"}', headers={**chat.auth, "Content-Type": "text/plain"}
    )
    assert_json_error(not_json, 415, "unsupported_media_type")
    assert_json_error(
        chat.http.put(
            feedback_url(chat, answer), content=b"{", headers={**chat.auth, "Content-Type": "application/json"}
        ),
        400,
        "invalid_json",
    )
    # Nothing was stored by any refusal.
    assert feedback_in_history(chat) == {answer: None}
    # At the limit is accepted, whole.
    assert put(chat, answer, {"rating": "up", "comment": "👍" * 10}).json()["comment"] == "👍" * 10


def test_the_body_size_bound_applies(live_server_factory, chat_factory):
    server = live_server_factory(MAX_BODY_BYTES=1024, FEEDBACK_COMMENT_MAX_CHARS=10_000)
    chat = chat_factory(server)
    answer = answered(chat, "r1")
    assert_json_error(put(chat, answer, {"rating": "up", "comment": "x" * 2000}), 413, "body_too_large")
    assert feedback_in_history(chat) == {answer: None}


def test_ratings_are_counted_at_metrics_by_rating(live_server, chat_factory):
    chat = chat_factory(live_server)
    first = answered(chat, "r1")
    second = answered(chat, "r2")

    def counted(rating: str) -> float:
        response = HTTP.get(live_server.url + "/metrics")
        assert response.status_code == 200
        return metric_value(response.text, "chat_feedback_total", rating=rating)

    assert (counted("up"), counted("down")) == (0, 0)
    put(chat, first, {"rating": "up"})
    # The widget sends the rating, then the comment: the comment alone is not another rating.
    put(chat, first, {"rating": "up", "comment": "thanks"})
    assert (counted("up"), counted("down")) == (1, 0)
    put(chat, first, {"rating": "down"})  # changed: counted
    put(chat, second, {"rating": "down"})
    assert (counted("up"), counted("down")) == (1, 2)
    # Refused requests count nothing.
    assert_json_error(put(chat, first, {"rating": "sideways"}), 400)
    delete(chat, first)
    assert (counted("up"), counted("down")) == (1, 2)


def test_feedback_expires_with_its_conversation(live_server_factory, chat_factory, store_kind):
    server = live_server_factory(CONVERSATION_TTL_SECONDS=600)
    chat = chat_factory(server)
    answer = answered(chat, "r1")
    assert put(chat, answer, {"rating": "up"}).status_code == 200
    store = server.service.store
    if store_kind != "memory":
        # Its key lives as long as the conversation's, refreshed with it.
        key = store.keys.conversation(chat.conversation_id) + ":feedback"
        ttl = store.redis.ttl(key)
        assert 0 < ttl <= 600, ttl
        store.redis.expire(key, 5)
        assert chat.history().status_code == 200  # a use of the conversation refreshes every key of it
        assert store.redis.ttl(key) > 5
    else:
        # In memory it is part of the conversation's record, forgotten with it when it expires.
        assert chat.conversation_id in store.feedback_conversations()
        store._expire(time.monotonic() + 601)
        assert store.conversation_feedback(chat.conversation_id) == {}
        assert chat.conversation_id not in store.feedback_conversations()
        assert_json_error(put(chat, answer, {"rating": "down"}), 404, "not_found")


def test_feedback_counts_against_the_client_rate_limit(live_server_factory, chat_factory):
    # docs/security.md, "Rate limits": like every /api/v1 request, within RATE_LIMIT_CLIENT.
    server = live_server_factory(RATE_LIMITS=True, RATE_LIMIT_CLIENT="6/minute")
    chat = chat_factory(server)  # 1: the new conversation
    answer = answered(chat, "r1")  # 2
    for rating in ("up", "down", "up"):  # 3, 4, 5
        assert put(chat, answer, {"rating": rating}).status_code == 200
    assert delete(chat, answer).status_code == 204  # 6
    refused = assert_json_error(put(chat, answer, {"rating": "down"}), 429, "rate_limited")
    assert refused["error"]["details"]["limit"] == "client"
    assert_json_error(delete(chat, answer), 429, "rate_limited")
    # Nothing the refused requests asked for happened (the DELETE before them did).
    server.app.extensions["widget_server.rate_limits"].storage.reset()
    assert feedback_in_history(chat) == {answer: None}
