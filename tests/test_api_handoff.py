"""The visitor's hand-off routes (docs/protocol.md, "Hand-off to a person") over real HTTP, on
the memory store and a real redis-server (tests/conftest.py parametrizes tests/test_api_*.py
with `store_kind`).

The agent's side is driven through the app's HandoffService (the agents' HTTP API has its own
tests); the visitor's side only through HTTP, as the widget does. The conversation stream's
resume at every position is tests/test_handoff_events.py.
"""

from __future__ import annotations

import hashlib
import threading
from typing import Any

import httpx
import pytest

from widget_server.handoff.service import HandoffService
from widget_server.services import SERVICES_KEY

from .helpers import ChatClient, CountingBackend, assert_json_error
from .redis_support import keys_naming
from .test_scale_out import metric_value

ON = {"HANDOFF": "on"}


def handoff_of(server) -> HandoffService:
    service: HandoffService = server.app.extensions[SERVICES_KEY].handoff
    return service


def url(chat: ChatClient, tail: str = "") -> str:
    return f"/api/v1/conversations/{chat.conversation_id}/handoff{tail}"


def post(chat: ChatClient, path: str, body: Any, **kwargs: Any) -> httpx.Response:
    return chat.http.post(path, json=body, headers={**chat.auth, **kwargs.pop("headers", {})}, **kwargs)


def ask(chat: ChatClient, request_id: str = "h1") -> httpx.Response:
    return post(chat, url(chat), {"request_id": request_id})


def say(chat: ChatClient, text: str, request_id: str) -> httpx.Response:
    return post(chat, url(chat, "/messages"), {"request_id": request_id, "text": text})


def history(chat: ChatClient) -> list[dict]:
    response = chat.history()
    assert response.status_code == 200
    return response.json()["messages"]


@pytest.fixture(autouse=True)
def empty_store(request, store_kind):
    """Each test starts with nobody present and nobody queued: the desk and the agents'
    presence are shared by every conversation of a store, so one test's would be another's."""
    if store_kind != "memory":
        request.getfixturevalue("shared_store")


@pytest.fixture
def server(live_server_factory):
    return live_server_factory(**ON)


@pytest.fixture
def chat(server, chat_factory) -> ChatClient:
    return chat_factory(server)


def test_request_is_idempotent_and_says_the_position(server, chat, chat_factory):
    assert ask(chat).json() == {"state": "unavailable", "reason": "no_agents", "seq": 1}
    handoff_of(server).agent_seen("ana")
    response = ask(chat, "h2")
    assert response.status_code == 200 and response.json() == {"state": "queued", "position": 1, "seq": 2}
    assert ask(chat, "h2").json() == {"state": "queued", "position": 1, "seq": 2}
    assert ask(chat, "h1").json() == {"state": "queued", "position": 1, "seq": 2}  # while queued: where it is
    other = chat_factory(server)
    assert ask(other, "h1").json() == {"state": "queued", "position": 2, "seq": 1}
    assert chat.http.delete(url(chat), headers=chat.auth).status_code == 204
    assert chat.http.delete(url(chat), headers=chat.auth).status_code == 204  # nothing left to end
    assert handoff_of(server).state(other.conversation_id) == {"state": "queued", "position": 1}
    handoff_of(server).claim(other.conversation_id, "ana", "Ana")
    # other's log: queued 2nd (1), 1st once chat left (2), assigned (3)
    assert ask(other, "h9").json() == {"state": "assigned", "agent": "Ana", "seq": 3}
    metrics = chat.http.get("/metrics").text
    assert metric_value(metrics, "chat_handoffs_requested_total", outcome="queued") == 2
    assert metric_value(metrics, "chat_handoffs_unavailable_total", reason="no_agents") == 1
    assert metric_value(metrics, "chat_handoff_time_in_queue_seconds_count") == 1


def test_off_says_disabled(live_server_factory, chat_factory):
    server = live_server_factory(HANDOFF="off")
    chat = chat_factory(server)
    handoff_of(server).agent_seen("ana")
    assert ask(chat).json() == {"state": "unavailable", "reason": "disabled", "seq": 1}


def test_twenty_concurrent_claims_across_two_app_instances_have_one_winner(
    store_kind, live_server_factory, chat_factory
):
    first = live_server_factory(**ON)
    # On Redis, a second app instance on the same redis-server (another worker or host);
    # the memory store lives in one process, so its race is among threads of one.
    second = live_server_factory(**ON) if store_kind != "memory" else first
    chat = chat_factory(first)
    handoff_of(first).agent_seen("ana")
    assert ask(chat).json()["state"] == "queued"
    services = [handoff_of(first), handoff_of(second)]
    start = threading.Barrier(20)
    outcomes: list[Any] = [None] * 20

    def claim(index: int) -> None:
        start.wait()
        try:
            outcomes[index] = services[index % 2].claim(chat.conversation_id, f"agent{index}", f"Agent {index}")
        except Exception as error:
            outcomes[index] = error

    threads = [threading.Thread(target=claim, args=(i,)) for i in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    winners = [o["agent"] for o in outcomes if isinstance(o, dict)]
    assert len(winners) == 1, outcomes
    losers = [o for o in outcomes if not isinstance(o, dict)]
    assert len(losers) == 19
    assert all((o.status, o.code, o.details) == (409, "already_claimed", {"agent": winners[0]}) for o in losers)
    assert ask(chat, "again").json() == {"state": "assigned", "agent": winners[0], "seq": 2}


def test_the_answer_s_seq_is_where_the_event_stream_starts(server, chat):
    """`seq` is the log's newest seq as of the request (its own event included): a stream read
    after it starts with what comes next, never with an earlier hand-off's ending."""
    handoff = handoff_of(server)
    events = f"/api/v1/conversations/{chat.conversation_id}/events"
    assert ask(chat, "h1").json() == {"state": "unavailable", "reason": "no_agents", "seq": 1}
    handoff.agent_seen("ana")
    assert ask(chat, "h2").json()["seq"] == 2  # handoff.queued
    assert chat.http.delete(url(chat), headers=chat.auth).status_code == 204  # handoff.ended (3)
    again = ask(chat, "h3").json()
    assert again == {"state": "queued", "position": 1, "seq": 4}
    handoff.claim(chat.conversation_id, "ana", "Ana")
    read = chat.stream("GET", events, params={"after": str(again["seq"])}, max_events=1)
    assert read.status == 200
    assert [(e.event, e.id) for e in read.events] == [("handoff.assigned", f"{chat.conversation_id}:5")]
    # From 0 (no seq), the same stream would begin with the earlier unavailable and ending.
    whole = chat.stream("GET", events, params={"after": "0"}, max_events=3)
    assert whole.kinds == ["handoff.unavailable", "handoff.queued", "handoff.ended"]
    # While assigned, any request (h1 again) says where it is, at the newest seq.
    assert ask(chat, "h1").json() == {"state": "assigned", "agent": "Ana", "seq": 5}


def test_visitor_messages_go_to_the_person_never_to_the_backend(server, chat):
    counting = CountingBackend(server.service.backend)
    server.service.backend = counting
    first = chat.send("before the person", "m1")
    assert first.status == 200 and first.kinds[-1] == "message.completed"
    assert counting.calls == 1
    handoff = handoff_of(server)
    handoff.agent_seen("ana")
    assert_json_error(say(chat, "too early", "v0"), 409, "handoff_not_active")
    assert ask(chat).json()["state"] == "queued"
    queued = say(chat, "waiting 🙂\nline two", "v1")
    assert queued.status_code == 201
    assert queued.json()["sha256"] == hashlib.sha256("waiting 🙂\nline two".encode()).hexdigest()
    assert say(chat, "waiting 🙂\nline two", "v1").json() == queued.json()  # a retry: the same message
    assert_json_error(say(chat, "different", "v1"), 409, "request_id_conflict")
    refused = chat.send("to the assistant?", "m2")
    assert refused.status == 409 and refused.json["error"]["code"] == "handoff_active"
    handoff.claim(chat.conversation_id, "ana", "Ana")
    assert say(chat, "hello Ana", "v2").status_code == 201
    assert chat.send("to the assistant?", "m3").json["error"]["code"] == "handoff_active"
    handoff.agent_message(chat.conversation_id, "ana", "a1", "Hello, I'm Ana.")
    handoff.agent_message(chat.conversation_id, "ana", "a2", "A second one is not a first reply.")
    assert counting.calls == 1  # nothing reached the backend while the person had it
    metrics = chat.http.get("/metrics").text
    assert metric_value(metrics, "chat_handoff_time_to_first_agent_reply_seconds_count") == 1
    handoff.end(chat.conversation_id, "ana", "returned")
    after = chat.send("back to the assistant", "m4")
    assert after.status == 200 and after.kinds[-1] == "message.completed"
    assert counting.calls == 2
    assert all(turn.text != "hello Ana" for turn in counting.turns)
    # the backend's history has only the assistant's turns (docs/protocol.md, "History")
    assert [role for role, _ in counting.turns[-1].history] == ["user", "assistant"]
    entries = history(chat)
    assert [(e["role"], e["text"] if e["role"] != "assistant" else "…") for e in entries] == [
        ("user", "before the person"),
        ("assistant", "…"),
        ("visitor", "waiting 🙂\nline two"),
        ("visitor", "hello Ana"),
        ("agent", "Hello, I'm Ana."),
        ("agent", "A second one is not a first reply."),
        ("user", "back to the assistant"),
        ("assistant", "…"),
    ]
    assert entries[4]["agent"] == "Ana" and entries[4]["state"] == "completed"
    assert "agent" not in entries[2]


def test_nobody_there_leave_a_message_lands_in_the_inbox(server, chat):
    assert ask(chat).json() == {"state": "unavailable", "reason": "no_agents", "seq": 1}
    path = url(chat, "/left-messages")
    assert_json_error(
        post(chat, path, {"request_id": "l1", "text": "hi", "email": "not an address"}), 400, "invalid_email"
    )
    assert_json_error(post(chat, path, {"request_id": "l1", "text": "hi", "email": 5}), 400, "invalid_email")
    body = {"request_id": "l1", "text": "Please call me back", "email": "ana@example.com"}
    left = post(chat, path, body)
    assert left.status_code == 201
    assert post(chat, path, body).json() == left.json()
    assert post(chat, path, {"request_id": "l2", "text": "No address this time"}).status_code == 201
    inbox = handoff_of(server).inbox()
    assert [(m["text"], m["email"]) for m in inbox] == [
        ("No address this time", None),
        ("Please call me back", "ana@example.com"),
    ]
    assert inbox[1]["left_message_id"] == left.json()["left_message_id"]
    metrics = chat.http.get("/metrics").text
    assert metric_value(metrics, "chat_handoff_messages_left_total") == 2


def test_deleting_the_conversation_forgets_its_hand_off(store_kind, server, chat, chat_factory):
    handoff = handoff_of(server)
    handoff.agent_seen("ana")
    other = chat_factory(server)
    assert ask(chat).json()["position"] == 1
    assert ask(other).json()["position"] == 2
    say(chat, "secret", "v1")
    post(chat, url(chat, "/left-messages"), {"request_id": "l1", "text": "note"})
    assert chat.http.delete(f"/api/v1/conversations/{chat.conversation_id}", headers=chat.auth).status_code == 204
    assert [q["conversation_id"] for q in handoff.queue()] == [other.conversation_id]
    assert handoff.inbox() == []
    assert handoff.messages(chat.conversation_id) == []
    assert handoff.state(other.conversation_id) == {"state": "queued", "position": 1}
    assert_json_error(ask(chat), 404, "not_found")
    if store_kind != "memory":  # no key naming it remains (docs/protocol.md, "Deleting a conversation")
        assert keys_naming(server.app.config["WIDGET_SERVER"]["STORE"], {chat.conversation_id}) == []
    else:
        store = handoff.store
        assert not [key for key in store._records if chat.conversation_id in key]
        assert chat.conversation_id not in store._logs


@pytest.mark.parametrize(
    ("tail", "body", "status", "code"),
    [
        ("", {}, 400, "missing_request_id"),
        ("", {"request_id": "bad id"}, 400, "invalid_request_id"),
        ("", {"request_id": "r", "extra": 1}, 400, "unknown_field"),
        ("", {"request_id": "r", "reason": 5}, 400, "invalid_reason"),
        ("", [1], 400, "invalid_body"),
        ("/messages", {"request_id": "r"}, 400, "missing_text"),
        ("/messages", {"request_id": "r", "text": "   "}, 400, "empty_text"),
        ("/messages", {"request_id": "r", "text": "x" * 4001}, 413, "text_too_long"),
        ("/messages", {"request_id": "r", "text": "no hand-off"}, 409, "handoff_not_active"),
        ("/left-messages", {"request_id": "r"}, 400, "missing_text"),
        ("/left-messages", {"request_id": "r", "text": "x", "email": "a@b"}, 400, "invalid_email"),
    ],
)
def test_bad_input_is_a_json_error(chat, tail, body, status, code):
    assert_json_error(post(chat, url(chat, tail), body), status, code)


def test_bad_requests_without_a_body_or_token_are_json_errors(chat):
    assert_json_error(
        chat.http.post(url(chat), content=b"{", headers={**chat.auth, "Content-Type": "application/json"}),
        400,
        "invalid_json",
    )
    assert_json_error(chat.http.post(url(chat), content=b"x", headers=chat.auth), 415, "unsupported_media_type")
    assert_json_error(chat.http.post(url(chat), json={"request_id": "r"}), 404, "not_found")
    assert_json_error(chat.http.delete(url(chat), headers={"Authorization": "Bearer nope"}), 404, "not_found")
    assert_json_error(
        chat.http.post("/api/v1/conversations/c_nope/handoff", json={"request_id": "r"}, headers=chat.auth),
        404,
        "not_found",
    )
    assert_json_error(chat.http.put(url(chat), json={}, headers=chat.auth), 405)
