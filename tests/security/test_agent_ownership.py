"""One agent cannot write into a conversation another agent holds, by any route
(docs/security.md, "Who can reach what"; HandoffService._authorize_agent_write).

Alice claims a visitor who had earlier left a message for the team; Bob, signed in too, tries
every route of the agent API against that conversation. Every write is refused, nothing he
sent reaches the transcript or the visitor's stream, and the table below must name every
`/agent/api` route there is: a new route fails `test_every_agent_route_is_tried` until it has
its case. A visitor cannot leave a message while a person is asked for or answering
(409 `handoff_active`: the message goes to that person). On the memory store, one Redis and
a Redis Cluster.

Before the rule was one method, the reply to a left message checked nobody's claim: Bob's
reply here was 201 and "BOB WAS HERE" reached Alice's visitor; the left message while assigned
was 201 too.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from typing import Any

import pytest

from widget_server.handoff.service import HandoffService

from ..agent_support import HandoffVisitor, SignedInAgent, agents_app


@pytest.fixture(params=["memory", "redis", "cluster"])
def store_kind(request) -> str:
    kind: str = request.param
    return kind


@pytest.fixture
def app(store_kind, tmp_path, store_config, shared_store):
    with agents_app(tmp_path, **store_config) as app:
        yield app


Agent = SignedInAgent


class Visitor(HandoffVisitor):
    def post(self, tail: str, body: dict[str, Any]) -> Any:
        """POST to the conversation's hand-off routes: `…/handoff{tail}`."""
        return super().post(f"/handoff{tail}", body)


@pytest.fixture
def held(app):
    """(alice, bob, visitor, left message id): the visitor left a message when nobody was
    there, then asked again and Alice claimed the conversation."""
    visitor = Visitor(app)
    assert visitor.post("", {"request_id": "h0"}).get_json()["state"] == "unavailable"
    left = visitor.post("/left-messages", {"request_id": "l1", "text": "Call me, please."})
    assert left.status_code == 201
    alice, bob = Agent(app, "alice"), Agent(app, "bob")
    assert visitor.post("", {"request_id": "h1"}).get_json()["state"] == "queued"
    assert alice.call("POST", f"/conversations/{visitor.cid}/claim").status_code == 200
    greeting = {"request_id": "a1", "text": "Hi, Alice here."}
    assert alice.call("POST", f"/conversations/{visitor.cid}/messages", greeting).status_code == 201
    return alice, bob, visitor, left.get_json()["left_message_id"]


# Every /agent/api route (Flask endpoint) → what Bob gets against Alice's conversation:
# (method, path with {cid} and {left}, body, status, code), or None for a route that names no
# conversation (what it returns is checked in test_routes_without_a_conversation_show_bob_nothing_of_alices).
BOB_AGAINST_ALICE: dict[str, tuple[str, str, Any, int, str] | None] = {
    "agent_api.get_session": None,
    "agent_api.get_queue": None,
    "agent_api.get_inbox": None,
    "agent_api.claim": ("POST", "/conversations/{cid}/claim", None, 409, "already_claimed"),
    "agent_api.get_conversation": ("GET", "/conversations/{cid}", None, 403, "not_your_conversation"),
    "agent_api.get_events": ("GET", "/conversations/{cid}/events", None, 403, "not_your_conversation"),
    "agent_api.get_attachment": ("GET", "/conversations/{cid}/attachments/f_x", None, 403, "not_your_conversation"),
    "agent_api.post_message": (
        "POST",
        "/conversations/{cid}/messages",
        {"request_id": "b1", "text": "BOB WAS HERE"},
        403,
        "not_your_conversation",
    ),
    "agent_api.typing": ("POST", "/conversations/{cid}/typing", None, 403, "not_your_conversation"),
    "agent_api.end": ("POST", "/conversations/{cid}/end", {"reason": "ended"}, 403, "not_your_conversation"),
    "agent_api.reply_to_left": (
        "POST",
        "/inbox/{left}/reply",
        {"request_id": "b2", "text": "BOB WAS HERE"},
        403,
        "not_your_conversation",
    ),
}


def test_every_agent_route_is_tried(app):
    routes = {rule.endpoint for rule in app.url_map.iter_rules() if rule.rule.startswith("/agent/api/")}
    assert routes == set(BOB_AGAINST_ALICE)


@pytest.mark.parametrize("endpoint", sorted(e for e, case in BOB_AGAINST_ALICE.items() if case is not None))
def test_bob_cannot_act_in_a_conversation_alice_holds(app, held, endpoint):
    alice, bob, visitor, left_id = held
    method, path, body, status, code = BOB_AGAINST_ALICE[endpoint]  # type: ignore[misc]
    response = bob.call(method, path.format(cid=visitor.cid, left=left_id), body)
    assert response.status_code == status, response.get_data(as_text=True)[:300]
    assert response.mimetype == "application/json" and response.get_json()["error"]["code"] == code
    # Nothing Bob tried changed Alice's conversation.
    view = alice.call("GET", f"/conversations/{visitor.cid}").get_json()
    assert view["state"] == "assigned" and view["agent"] == "Alice Agent"
    assert [(m["role"], m["text"]) for m in view["messages"] if m["role"] == "agent"] == [("agent", "Hi, Alice here.")]
    assert all("BOB" not in m["text"] for m in visitor.history())
    assert not any(m["replied"] for m in alice.call("GET", "/inbox").get_json()["messages"])


def test_routes_without_a_conversation_show_bob_nothing_of_alices(held):
    _alice, bob, _visitor, left_id = held
    assert bob.call("GET", "/session").get_json()["name"] == "bob"
    queue = bob.call("GET", "/queue").get_json()
    assert queue["mine"] == [] and queue["waiting"] == []
    # The inbox is the team's, shared: Bob sees the left message, and (above) cannot answer it
    # while Alice holds its conversation.
    assert [m["left_message_id"] for m in bob.call("GET", "/inbox").get_json()["messages"]] == [left_id]


def test_alice_who_holds_it_may_reply_to_its_left_message(held):
    alice, _bob, visitor, left_id = held
    reply = alice.call("POST", f"/inbox/{left_id}/reply", {"request_id": "r1", "text": "About your note: done."})
    assert reply.status_code == 201
    assert [m["text"] for m in visitor.history() if m["role"] == "agent"] == [
        "Hi, Alice here.",
        "About your note: done.",
    ]


def test_a_reply_to_a_left_message_whose_visitor_waits_in_the_queue_is_refused(app):
    visitor = Visitor(app)
    left_id = visitor.post("/left-messages", {"request_id": "l1", "text": "Call me."}).get_json()["left_message_id"]
    bob = Agent(app, "bob")  # present: the visitor's next request is queued
    assert visitor.post("", {"request_id": "h1"}).get_json()["state"] == "queued"
    response = bob.call("POST", f"/inbox/{left_id}/reply", {"request_id": "r1", "text": "BOB WAS HERE"})
    assert response.status_code == 409 and response.get_json()["error"]["code"] == "handoff_active"
    assert all("BOB" not in m["text"] for m in visitor.history())
    # Once nobody is there any more, any agent may answer it.
    cancel = visitor.client.delete(f"/api/v1/conversations/{visitor.cid}/handoff", headers=visitor.headers)
    assert cancel.status_code == 204
    assert bob.call("POST", f"/inbox/{left_id}/reply", {"request_id": "r2", "text": "Back to you."}).status_code == 201


@pytest.mark.parametrize("state", ["queued", "assigned"])
def test_a_visitor_cannot_leave_a_message_while_a_person_is_asked_for(app, state):
    visitor = Visitor(app)
    alice = Agent(app, "alice")
    assert visitor.post("", {"request_id": "h1"}).get_json()["state"] == "queued"
    if state == "assigned":
        assert alice.call("POST", f"/conversations/{visitor.cid}/claim").status_code == 200
    response = visitor.post("/left-messages", {"request_id": "l1", "text": "hello?"})
    assert response.status_code == 409
    error = response.get_json()["error"]
    assert error["code"] == "handoff_active" and error["details"] == {"state": state}
    assert alice.call("GET", "/inbox").get_json()["messages"] == []


# The service's methods that take an agent's name and are not writes into a conversation held
# by someone: presence, the list of one's own claims, and the claim (whose rule is the queue's).
NOT_WRITES_INTO_A_HELD_CONVERSATION = {"agent_seen", "claimed_by", "claim"}


def test_every_agent_write_of_the_service_goes_through_the_one_rule():
    takes_agent = {
        name
        for name, method in inspect.getmembers(HandoffService, inspect.isfunction)
        if "agent_name" in inspect.signature(method).parameters and not name.startswith("_")
    }
    checked = set()
    for name in takes_agent - NOT_WRITES_INTO_A_HELD_CONVERSATION:
        tree = ast.parse(textwrap.dedent(inspect.getsource(getattr(HandoffService, name))))
        calls = {
            node.func.attr
            for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
        }
        assert "_authorize_agent_write" in calls, f"HandoffService.{name} writes as an agent without the rule"
        checked.add(name)
    assert checked == {"agent_message", "typing", "end", "reply_to_left"}
