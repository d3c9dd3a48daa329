"""Typed texts lose their control characters before they are stored (docs/protocol.md,
"Conventions"; docs/security.md, "Request bounds"; messages.clean_text).

A visitor's message to the assistant, a message to the person, a left message, an agent's
message and reply, and a feedback comment are sent over the app's HTTP routes with NUL, BEL,
an ANSI colour (ESC [31m), CRLF, a lone CR, tab, vertical tab, form feed and DEL; each comes
back (the visitor's history, the console's transcript, the inbox, the feedback's answer, its
history entry and `widget-server feedback export`) without the controls, with its tab and
line feeds kept and its line ends made LF. A retry of the same request with the same raw
text is still the same request (its fingerprint is over the cleaned text). On the memory
store and a real redis-server.

Before, every one of them was stored as sent: ESC reached the terminal the owner reads the
export in, and NUL and BEL the console.
"""

from __future__ import annotations

from typing import Any

import pytest

from widget_server.chat.service import ChatService
from widget_server.feedback.service import export
from widget_server.services import SERVICES_KEY

from ..agent_support import HandoffVisitor, SignedInAgent, agents_app

RAW = "Hi\x00 there\x07, \x1b[31mred\x1b[0m\r\nline two\rline three\ttabbed\x7f\x0b\x0c\x1f end"
CLEAN = "Hi there, [31mred[0m\nline two\nline three\ttabbed end"


@pytest.fixture(params=["memory", "redis"])
def store_kind(request) -> str:
    kind: str = request.param
    return kind


@pytest.fixture
def app(store_kind, tmp_path, store_config, shared_store):
    with agents_app(tmp_path, **store_config, HANDOFF="on") as app:
        yield app


class Agent(SignedInAgent):
    def get(self, path: str) -> Any:
        response = self.call("GET", path)
        assert response.status_code == 200, response.get_json()
        return response.get_json()

    def post(self, path: str, body: Any = None) -> Any:
        return self.call("POST", path, body)


Visitor = HandoffVisitor


def no_controls(text: str) -> bool:
    return not any((ord(c) < 0x20 and c not in "\t\n") or c == "\x7f" for c in text)


def test_a_visitor_s_message_and_feedback_comment_are_stored_without_controls(app):
    visitor = Visitor(app)
    sent = visitor.post("/messages", {"request_id": "q1", "text": RAW})
    assert sent.status_code == 200
    sent.get_data()  # the answer's stream, to its end: the answer can then be rated
    user, answer = visitor.history()
    assert user["role"] == "user" and user["text"] == CLEAN
    assert answer["role"] == "assistant" and answer["state"] == "completed"
    # The same request again (a retry after a lost response) is the same request, not a conflict.
    again = visitor.post("/messages", {"request_id": "q1", "text": RAW})
    assert again.status_code == 200, again.get_json()
    again.get_data()
    assert len(visitor.history()) == 2

    rated = visitor.client.put(
        visitor.url(f"/messages/{answer['message_id']}/feedback"),
        json={"rating": "down", "comment": RAW},
        headers=visitor.headers,
    )
    assert rated.status_code == 200 and rated.get_json()["comment"] == CLEAN
    assert visitor.history()[1]["feedback"]["comment"] == CLEAN
    service: ChatService = app.extensions[SERVICES_KEY].chat
    (row,) = [row for row in export(service.store) if row["conversation_id"] == visitor.cid]
    assert row["comment"] == CLEAN and row["question"] == CLEAN
    assert no_controls(row["comment"]) and no_controls(row["question"])


def test_hand_off_messages_both_ways_are_stored_without_controls(app):
    alice = Agent(app)
    alice.get("/queue")  # her console is seen: someone is there
    visitor = Visitor(app)
    assert visitor.post("/handoff", {"request_id": "h1"}).get_json()["state"] == "queued"
    said = visitor.post("/handoff/messages", {"request_id": "v1", "text": RAW})
    assert said.status_code == 201
    retried = visitor.post("/handoff/messages", {"request_id": "v1", "text": RAW})
    assert retried.status_code == 201 and retried.get_json() == said.get_json()
    assert alice.post(f"/conversations/{visitor.cid}/claim").status_code == 200
    wrote = alice.post(f"/conversations/{visitor.cid}/messages", {"request_id": "a1", "text": RAW})
    assert wrote.status_code == 201
    assert alice.post(f"/conversations/{visitor.cid}/messages", {"request_id": "a1", "text": RAW}).get_json() == (
        wrote.get_json()
    )

    transcript = alice.get(f"/conversations/{visitor.cid}")["messages"]
    assert [(m["role"], m["text"]) for m in transcript] == [("visitor", CLEAN), ("agent", CLEAN)]
    assert [(m["role"], m["text"]) for m in visitor.history()] == [("visitor", CLEAN), ("agent", CLEAN)]


def test_a_left_message_and_the_agent_s_reply_are_stored_without_controls(app):
    visitor = Visitor(app)
    left = visitor.post("/handoff/left-messages", {"request_id": "l1", "text": RAW, "email": "v@example.org"})
    assert left.status_code == 201
    retried = visitor.post("/handoff/left-messages", {"request_id": "l1", "text": RAW, "email": "v@example.org"})
    assert retried.status_code == 201 and retried.get_json() == left.get_json()
    alice = Agent(app)
    (entry,) = [m for m in alice.get("/inbox")["messages"] if m["conversation_id"] == visitor.cid]
    assert entry["text"] == CLEAN
    reply = alice.post(f"/inbox/{entry['left_message_id']}/reply", {"request_id": "r1", "text": RAW})
    assert reply.status_code == 201
    assert [(m["role"], m["text"]) for m in visitor.history()] == [("agent", CLEAN)]
