"""The host page's context (docs/protocol.md, "The host page's context").

`POST …/messages` with `"context": {...}` next to `text`: what a site's
`ChatWidget.setContext()` gave. Named tests/test_api_*.py: every test runs on the memory store,
on Redis and mounted at /chat (the agent's view on the memory store and on Redis).

The demo backend's `/scenario context` answers with the Turn.context it received, so the tests
prove it reached the backend exactly; a regenerate keeps it; the bounds (2048 bytes of compact
UTF-8 JSON, a flat object of strings, numbers and booleans, 32 keys of 1 to 64 characters) are
refused with 400 `invalid_context` before anything is claimed; the agent who takes the
conversation sees it with the question (docs/agents.md, "The page's context").
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from .helpers import ChatClient, StreamResult, assert_completed, assert_json_error
from .revision_support import regenerate, scripted
from .test_api_agents import Agent, Visitor, alice, app, bob  # noqa: F401 - fixtures and helpers

# ruff: noqa: F811 - the fixtures imported above are the tests' parameters

CONTEXT = {"page": "/pricing?plan=pro", "plan": "Pro ✨", "seats": 12, "trial": False, "price": 9.5}


def send(chat: ChatClient, request_id: str, text: str, context: Any) -> StreamResult:
    body = {"request_id": request_id, "text": text, "context": context}
    return chat.stream("POST", chat.messages_url(), json=body)


def expected_answer(context: dict[str, Any]) -> str:
    lines = ["The page's context:\n"]
    lines += [
        f"- {json.dumps(k, ensure_ascii=False)}: {json.dumps(v, ensure_ascii=False)}\n" for k, v in context.items()
    ]
    return "".join(lines)


def test_the_backend_receives_the_context_exactly(live_server, chat_factory):
    chat = chat_factory(live_server)
    answer = assert_completed(send(chat, "with-context", "/scenario context", CONTEXT))
    assert answer.text == expected_answer(CONTEXT)
    # None, and null: the backend's Turn.context is empty.
    without = assert_completed(chat.send("/scenario context", "without-context"))
    assert without.text.startswith("No context came with this message.")
    nulled = assert_completed(send(chat, "null-context", "/scenario context", None))
    assert nulled.text.startswith("No context came with this message.")
    # The visitor's own history does not list it.
    assert all("context" not in message for message in chat.history().json()["messages"])


def test_a_regenerate_keeps_the_context_and_a_retry_keeps_the_first(live_server, chat_factory):
    backend = scripted(live_server)
    chat = chat_factory(live_server)
    first = assert_completed(send(chat, "asked", "Which plan?", CONTEXT))
    assert backend.turns[-1].context == CONTEXT
    # The same request_id with another context: the same message (not part of the fingerprint).
    again = send(chat, "asked", "Which plan?", {"page": "/elsewhere"})
    assert again.status == 200 and backend.runs == 1
    assert_completed(regenerate(chat, first.message_id, "asked-again"))
    assert backend.runs == 2 and backend.turns[-1].context == CONTEXT


@pytest.mark.parametrize(
    ("refused", "message"),
    [
        ({"page": "x" * 2100}, "context is 2111 bytes of JSON; the limit is 2048."),
        ({"page": "é" * 1020}, "context is 2051 bytes of JSON; the limit is 2048."),  # bytes, not characters
        ({"nested": {"a": 1}}, None),
        ({"list": [1, 2]}, None),
        ({"none": None}, None),
        ({"": "empty key"}, None),
        ({"k" * 65: "key too long"}, None),
        ({f"key{n}": n for n in range(33)}, None),
        ({"bell": "ring\u0007"}, None),
        (["page", "/pricing"], None),
        ("page=/pricing", None),
        (42, None),
    ],
)
# Not named `context`: that is pytest-playwright's fixture, and a parameter of its name would
# have each case run once per browser.
def test_a_context_out_of_bounds_is_refused_before_anything_is_claimed(live_server, chat_factory, refused, message):
    chat = chat_factory(live_server)
    body = {"request_id": "refused-1", "text": "hello", "context": refused}
    response = chat.http.post(chat.messages_url(), json=body, headers=chat.auth)
    error = assert_json_error(response, 400, "invalid_context")["error"]
    if message is not None:
        assert error["message"].startswith(message)
        assert error["details"] == {"limit": 2048}
    else:
        assert "strings, numbers or booleans" in error["message"]
    # Nothing was claimed: the same request id with a sound context is a new message.
    assert_completed(send(chat, "refused-1", "hello", {"page": "/"}))
    assert [m["role"] for m in chat.history().json()["messages"]] == ["user", "assistant"]


def test_the_largest_context_within_its_bounds_is_taken(live_server, chat_factory):
    chat = chat_factory(live_server)
    # 2048 bytes exactly: {"page":"…"} is 11 bytes around the value.
    largest = {"page": "p" * (2048 - 11)}
    assert len(json.dumps(largest, separators=(",", ":")).encode()) == 2048
    assert assert_completed(send(chat, "largest", "/scenario context", largest)).text == expected_answer(largest)


def test_the_agent_sees_the_context_with_the_question(app, alice: Agent):
    assert alice.get("/queue").status_code == 200  # alice is present: the hand-off queues
    visitor = Visitor(app)
    response = visitor.client.post(
        f"/api/v1/conversations/{visitor.cid}/messages",
        json={"request_id": "with-context", "text": "Is the Pro plan monthly?", "context": CONTEXT},
        headers=visitor.headers,
    )
    assert response.status_code == 200 and b"event: message.completed" in response.get_data()
    assert visitor.ask_for_a_person()["state"] == "queued"
    assert alice.post(f"/conversations/{visitor.cid}/claim").status_code == 200
    detail = alice.get(f"/conversations/{visitor.cid}").get_json()
    (turn,) = [entry for entry in detail["messages"] if entry["role"] == "user"]
    assert turn["text"] == "Is the Pro plan monthly?"
    assert turn["context"] == CONTEXT
