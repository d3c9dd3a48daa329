"""The agent API (widget_server/agents/api.py) against the real hand-off service, on the
memory store and on a real Redis (tests/conftest.py runs tests/test_api_*.py on both):
queue, claim (once), messages both ways, typing, end, return, the inbox and its reply with
mail to a real SMTP server on loopback, and every bad input a JSON error.

The visitor's side goes through the visitor API (`/api/v1/conversations/{cid}/handoff…`),
the agents' through the console's routes with a real session and CSRF token."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator

import pytest

from widget_server import create_app
from widget_server.services import SERVICES_KEY

from .agent_support import HttpAgent, sign_in, write_agents
from .conftest import TEST_CONFIG
from .helpers import HTTP


@pytest.fixture
def app(request, store_kind, tmp_path, store_config, smtp, shared_store):
    # shared_store: the queue, the inbox and presence are shared by every conversation of a
    # store: each test starts with an empty one (as tests/test_api_handoff.py does).
    path = tmp_path / "agents.json"
    write_agents(path)
    smtp.inbox.mails.clear()
    marker = request.node.get_closest_marker("app_settings")
    overrides = marker.kwargs if marker else {}
    config = {**TEST_CONFIG, **store_config, "AGENTS_FILE": str(path), **smtp.settings(), **overrides}
    app = create_app(config, environ={})
    yield app
    app.extensions[SERVICES_KEY].mailer.close()


class Agent:
    """One agent's browser: the test client with its session cookie and CSRF token."""

    def __init__(self, app, name: str) -> None:
        self.client = app.test_client()
        self.csrf = sign_in(self.client, name)

    def get(self, path: str):
        return self.client.get(f"/agent/api{path}")

    def post(self, path: str, body=None, **kwargs):
        headers = {"X-CSRF-Token": self.csrf, **kwargs.pop("headers", {})}
        if body is None:
            return self.client.post(f"/agent/api{path}", headers=headers, **kwargs)
        return self.client.post(f"/agent/api{path}", json=body, headers=headers, **kwargs)


class Visitor:
    def __init__(self, app) -> None:
        self.client = app.test_client()
        body = self.client.post("/api/v1/conversations").get_json()
        self.cid, self.token = body["conversation_id"], body["token"]
        self.headers = {"Authorization": f"Bearer {self.token}"}

    def ask_for_a_person(self, request_id: str = "h1") -> dict:
        response = self.client.post(
            f"/api/v1/conversations/{self.cid}/handoff", json={"request_id": request_id}, headers=self.headers
        )
        assert response.status_code in (200, 202), response.get_json()
        return response.get_json()

    def say(self, text: str, request_id: str):
        return self.client.post(
            f"/api/v1/conversations/{self.cid}/handoff/messages",
            json={"request_id": request_id, "text": text},
            headers=self.headers,
        )

    def leave(self, text: str, email: str | None, request_id: str = "l1"):
        body = {"request_id": request_id, "text": text} | ({"email": email} if email else {})
        return self.client.post(
            f"/api/v1/conversations/{self.cid}/handoff/left-messages", json=body, headers=self.headers
        )

    def history(self) -> list[dict]:
        return self.client.get(f"/api/v1/conversations/{self.cid}", headers=self.headers).get_json()["messages"]


def sse_events(response, until: str | Callable[[str, dict], bool], most: int = 200) -> Iterator[tuple[str, dict]]:
    """(type, data) of a text/event-stream response's events, up to the first of type `until`
    (or for which `until(type, data)` is true); `data` also has the event's `_id`."""
    done = until if callable(until) else (lambda kind, _data: kind == until)
    buffer = b""
    seen = 0
    for chunk in response.response:
        buffer += chunk
        while b"\n\n" in buffer:
            block, buffer = buffer.split(b"\n\n", 1)
            fields = dict(
                line.split(": ", 1) for line in block.decode("utf-8").splitlines() if ": " in line and line[0] != ":"
            )
            if "event" not in fields:
                continue
            data = {**json.loads(fields["data"]), "_id": fields.get("id", "")}
            yield fields["event"], data
            seen += 1
            if done(fields["event"], data) or seen >= most:
                response.close()
                return
    response.close()


@pytest.fixture
def alice(app):
    return Agent(app, "alice")


@pytest.fixture
def bob(app):
    return Agent(app, "bob")


@pytest.fixture
def queued(app, alice):
    """A visitor waiting in the queue (alice's console has been seen, so someone is there)."""
    assert alice.get("/queue").status_code == 200
    visitor = Visitor(app)
    state = visitor.ask_for_a_person()
    assert state["state"] == "queued" and state["position"] == 1
    assert visitor.say("My order never came", "v1").status_code == 201
    return visitor


# -- the queue and the claim --------------------------------------------------------------------


def test_the_queue_lists_the_waiting_visitor_with_their_last_message(alice, queued):
    body = alice.get("/queue").get_json()
    assert body["mine"] == [] and body["inbox_unreplied"] == 0
    (waiting,) = body["waiting"]
    assert waiting["conversation_id"] == queued.cid
    assert waiting["position"] == 1
    assert waiting["last_visitor_message"] == "My order never came"
    assert waiting["waiting_since"].endswith("Z")


def test_a_claim_is_won_once_and_the_other_agent_is_told_by_whom(alice, bob, queued):
    won = alice.post(f"/conversations/{queued.cid}/claim")
    assert won.status_code == 200
    assert won.get_json() == {"conversation_id": queued.cid, "agent": "Alice Agent"}
    lost = bob.post(f"/conversations/{queued.cid}/claim")
    assert lost.status_code == 409
    error = lost.get_json()["error"]
    assert error["code"] == "already_claimed"
    assert "Alice Agent" in error["message"] and error["details"]["agent"] == "Alice Agent"
    assert alice.post(f"/conversations/{queued.cid}/claim").status_code == 200  # one's own again: the same
    assert alice.get("/queue").get_json()["waiting"] == []
    assert [c["conversation_id"] for c in alice.get("/queue").get_json()["mine"]] == [queued.cid]
    assert bob.get("/queue").get_json()["mine"] == []


def test_the_transcript_is_for_the_waiting_or_the_holder(alice, bob, queued):
    waiting = bob.get(f"/conversations/{queued.cid}")
    assert waiting.status_code == 200
    assert waiting.get_json()["state"] == "queued"
    assert [m["text"] for m in waiting.get_json()["messages"]] == ["My order never came"]
    alice.post(f"/conversations/{queued.cid}/claim")
    refused = bob.get(f"/conversations/{queued.cid}")
    assert refused.status_code == 403 and refused.get_json()["error"]["code"] == "not_your_conversation"
    mine = alice.get(f"/conversations/{queued.cid}").get_json()
    assert mine["state"] == "assigned" and mine["agent"] == "Alice Agent"
    assert bob.client.get(f"/agent/api/conversations/{queued.cid}/events").status_code == 403


# -- messages both ways, typing, end ------------------------------------------------------------


def test_agent_and_visitor_exchange_exact_messages_once(app, alice, queued):
    alice.post(f"/conversations/{queued.cid}/claim")
    text = "Sorry about that — it ships today. 📦"
    sent = alice.post(f"/conversations/{queued.cid}/messages", {"request_id": "a1", "text": text})
    assert sent.status_code == 201
    body = sent.get_json()
    assert body["sha256"] == hashlib.sha256(text.encode("utf-8")).hexdigest()
    again = alice.post(f"/conversations/{queued.cid}/messages", {"request_id": "a1", "text": text})
    assert again.status_code == 201 and again.get_json()["message_id"] == body["message_id"]  # a retry
    assert queued.say("Thanks!", "v2").status_code == 201

    history = [m for m in queued.history() if m["role"] in ("agent", "visitor")]
    assert [(m["role"], m["text"]) for m in history] == [
        ("visitor", "My order never came"),
        ("agent", text),
        ("visitor", "Thanks!"),
    ]
    assert history[1]["agent"] == "Alice Agent" and history[1]["message_id"] == body["message_id"]

    # The agent's stream, from the start: every event once, in order, the agent's text exact.
    stream = alice.client.get(f"/agent/api/conversations/{queued.cid}/events", buffered=False)
    assert stream.status_code == 200 and stream.mimetype == "text/event-stream"
    events = list(sse_events(stream, until=lambda _kind, data: data.get("text") == "Thanks!", most=10))
    kinds = [kind for kind, _ in events]
    assert kinds.count("agent.message") == 1
    (message,) = [data for kind, data in events if kind == "agent.message"]
    assert message["text"] == text and message["sha256"] == body["sha256"] and message["agent"] == "Alice Agent"
    assert "handoff.assigned" in kinds
    ids = [data["_id"] for _, data in events]
    assert ids == [f"{queued.cid}:{seq}" for seq in range(1, len(ids) + 1)]

    # Resumed after the assignment: nothing before it again.
    assigned_seq = next(int(d["_id"].rsplit(":", 1)[1]) for k, d in events if k == "handoff.assigned")
    resumed = alice.client.get(
        f"/agent/api/conversations/{queued.cid}/events",
        headers={"Last-Event-ID": f"{queued.cid}:{assigned_seq}"},
        buffered=False,
    )
    after = list(sse_events(resumed, until="agent.message"))
    assert after[0][1]["_id"] == f"{queued.cid}:{assigned_seq + 1}"
    assert [k for k, _ in after] == [k for k, _ in events[assigned_seq:]][: len(after)]


def test_only_the_holder_may_write_to_a_conversation(alice, bob, queued):
    alice.post(f"/conversations/{queued.cid}/claim")
    for path, body in (
        ("messages", {"request_id": "b1", "text": "hi"}),
        ("typing", None),
        ("end", {"reason": "ended"}),
    ):
        response = bob.post(f"/conversations/{queued.cid}/{path}", body)
        assert response.status_code == 403, path
        assert response.get_json()["error"]["code"] == "not_your_conversation"


def test_typing_reaches_the_stream_and_end_hands_back_to_the_assistant(alice, queued):
    alice.post(f"/conversations/{queued.cid}/claim")
    assert alice.post(f"/conversations/{queued.cid}/typing").status_code == 204
    assert alice.post(f"/conversations/{queued.cid}/end", {"reason": "returned"}).status_code == 204
    # The conversation is no longer the agent's: its stream is refused now, so read the visitor's.
    stream = queued.client.get(f"/api/v1/conversations/{queued.cid}/events", headers=queued.headers, buffered=False)
    events = list(sse_events(stream, until="handoff.ended"))
    kinds = [k for k, _ in events]
    assert "agent.typing" in kinds
    assert events[-1] == ("handoff.ended", {**events[-1][1], "reason": "returned", "agent": "Alice Agent"})
    assert alice.get("/queue").get_json()["mine"] == []
    # Ended: the visitor's messages go to the assistant again.
    refused = queued.say("still there?", "v3")
    assert refused.status_code == 409 and refused.get_json()["error"]["code"] == "handoff_not_active"


def test_end_with_the_default_reason(alice, queued):
    alice.post(f"/conversations/{queued.cid}/claim")
    assert alice.post(f"/conversations/{queued.cid}/end").status_code == 204
    # Ended: no longer held, so nothing more to write; the agent who ended it still reads it
    # until a new hand-off is queued (the visitor's rating comes there: docs/agents.md,
    # "Satisfaction"; tests/test_api_satisfaction.py).
    read = alice.get(f"/conversations/{queued.cid}")
    assert read.status_code == 200 and read.get_json()["state"] == "ended"
    refused = alice.post(f"/conversations/{queued.cid}/messages", {"request_id": "r_late", "text": "Still there?"})
    assert refused.status_code == 409 and refused.get_json()["error"]["code"] == "handoff_not_active"


# -- nobody there: a left message, the inbox, the reply, the mail -----------------------------------


def test_left_message_reaches_the_inbox_and_the_owner_and_the_reply_reaches_the_visitor(app, smtp):
    visitor = Visitor(app)  # no agent has been seen: nobody is available
    assert visitor.ask_for_a_person()["state"] == "unavailable"
    left = visitor.leave("Please call me about order 12", "visitor@example.org")
    assert left.status_code == 201
    left_id = left.get_json()["left_message_id"]

    (to_owner,) = smtp.inbox.wait(1)
    assert to_owner.recipients == ["owner@example.com"]
    assert to_owner.message["Reply-To"] == "visitor@example.org"
    assert "Please call me about order 12" in to_owner.message.get_content()

    alice = Agent(app, "alice")
    assert alice.get("/queue").get_json()["inbox_unreplied"] == 1
    (entry,) = alice.get("/inbox").get_json()["messages"]
    assert entry["left_message_id"] == left_id and entry["email"] == "visitor@example.org"
    assert entry["text"] == "Please call me about order 12" and entry["replied"] is False

    reply = alice.post(f"/inbox/{left_id}/reply", {"request_id": "r1", "text": "We will call you at 5."})
    assert reply.status_code == 201
    assert alice.post(f"/inbox/{left_id}/reply", {"request_id": "r1", "text": "We will call you at 5."}).get_json() == (
        reply.get_json()
    )
    assert alice.get("/inbox").get_json()["messages"][0]["replied"] is True
    assert alice.get("/queue").get_json()["inbox_unreplied"] == 0

    mails = smtp.inbox.wait(2)
    assert len(mails) == 2  # the retry sent nothing more
    to_visitor = mails[1]
    assert to_visitor.recipients == ["visitor@example.org"]
    assert to_visitor.message["Subject"] == "Alice Agent replied to your message"
    body = to_visitor.message.get_content().replace("\r\n", "\n")
    assert "We will call you at 5." in body and "> Please call me about order 12" in body
    # And in the widget, if they come back.
    (shown,) = [m for m in visitor.history() if m["role"] == "agent"]
    assert shown["text"] == "We will call you at 5." and shown["agent"] == "Alice Agent"
    app.extensions[SERVICES_KEY].mailer.flush(10)
    assert 'chat_mails_total{outcome="sent"} 2.0' in app.test_client().get("/metrics").get_data(as_text=True)


def test_a_reply_to_a_message_left_without_an_address_sends_no_mail(app, smtp):
    visitor = Visitor(app)
    left_id = visitor.leave("No email from me", None).get_json()["left_message_id"]
    smtp.inbox.wait(1)  # the owner's copy
    alice = Agent(app, "alice")
    assert alice.post(f"/inbox/{left_id}/reply", {"request_id": "r1", "text": "Noted"}).status_code == 201
    app.extensions[SERVICES_KEY].mailer.flush(10)
    assert len(smtp.inbox.mails) == 1


# -- every bad input is a JSON error ---------------------------------------------------------------


@pytest.mark.parametrize(
    "path,kwargs,status,code",
    [
        (
            "/conversations/{cid}/messages",
            {"data": "{not json", "content_type": "application/json"},
            400,
            "invalid_json",
        ),
        (
            "/conversations/{cid}/messages",
            {"data": "text=hi", "content_type": "text/plain"},
            415,
            "unsupported_media_type",
        ),
        ("/conversations/{cid}/messages", {"json": []}, 400, "invalid_body"),
        ("/conversations/{cid}/messages", {"json": {"text": "hi"}}, 400, "missing_request_id"),
        ("/conversations/{cid}/messages", {"json": {"request_id": "bad id", "text": "hi"}}, 400, "invalid_request_id"),
        ("/conversations/{cid}/messages", {"json": {"request_id": "r1"}}, 400, "missing_text"),
        ("/conversations/{cid}/messages", {"json": {"request_id": "r1", "text": "  "}}, 400, "empty_text"),
        ("/conversations/{cid}/messages", {"json": {"request_id": "r1", "text": "x" * 4001}}, 413, "text_too_long"),
        ("/conversations/{cid}/messages", {"json": {"request_id": "r1", "text": "hi", "x": 1}}, 400, "unknown_field"),
        ("/conversations/{cid}/messages", {"json": {"request_id": "r1", "text": "x" * 70000}}, 413, "body_too_large"),
        ("/conversations/{cid}/end", {"json": {"reason": "bored"}}, 400, "invalid_reason"),
        ("/conversations/{cid}/end", {"json": {"reason": "ended", "x": 1}}, 400, "unknown_field"),
        ("/conversations/{cid}/typing", {"json": {"x": 1}}, 400, "unknown_field"),
        ("/conversations/{cid}/claim", {"json": {"x": 1}}, 400, "unknown_field"),
        ("/conversations/not:an:id/claim", {}, 404, "not_found"),
        ("/inbox/l_unknown/reply", {"json": {"request_id": "r1", "text": "hi"}}, 404, "not_found"),
        ("/inbox/not:an:id/reply", {"json": {"request_id": "r1", "text": "hi"}}, 404, "not_found"),
        ("/inbox/l_x/reply", {"json": {"request_id": "r1"}}, 400, "missing_text"),
    ],
)
def test_bad_input_is_a_json_error(alice, queued, path, kwargs, status, code):
    alice.post(f"/conversations/{queued.cid}/claim")
    response = alice.client.post(
        f"/agent/api{path.format(cid=queued.cid)}", headers={"X-CSRF-Token": alice.csrf}, **kwargs
    )
    assert response.status_code == status, response.get_data(as_text=True)[:300]
    assert response.mimetype == "application/json"
    assert response.get_json()["error"]["code"] == code


@pytest.mark.parametrize(
    "headers,query,code",
    [({"Last-Event-ID": "c_other:1"}, "", "invalid_last_event_id"), ({}, "?after=-1", "invalid_after")],
)
def test_a_bad_resume_position_is_a_json_error(alice, queued, headers, query, code):
    response = alice.client.get(f"/agent/api/conversations/{queued.cid}/events{query}", headers=headers)
    assert response.status_code == 400 and response.get_json()["error"]["code"] == code


def test_claiming_what_does_not_wait_is_a_conflict(alice):
    response = alice.post("/conversations/c_nobody/claim")
    assert response.status_code == 409 and response.get_json()["error"]["code"] == "handoff_not_active"


def test_messages_to_a_conversation_nobody_holds_are_refused(alice, queued):
    response = alice.post(f"/conversations/{queued.cid}/messages", {"request_id": "a1", "text": "hi"})
    assert response.status_code == 409 and response.get_json()["error"]["code"] == "handoff_not_active"


@pytest.mark.app_settings(MAX_STREAMS_PER_CONVERSATION=1)
def test_the_agents_stream_takes_a_stream_slot_and_checks_its_resume_position(app, alice, queued):
    ahead = alice.client.get(
        f"/agent/api/conversations/{queued.cid}/events", headers={"Last-Event-ID": f"{queued.cid}:99"}
    )
    assert ahead.status_code == 400 and ahead.get_json()["error"]["code"] == "invalid_last_event_id"
    first = alice.client.get(f"/agent/api/conversations/{queued.cid}/events", buffered=False)
    assert first.status_code == 200
    second = alice.client.get(f"/agent/api/conversations/{queued.cid}/events", buffered=False)
    assert second.status_code == 429 and second.get_json()["error"]["code"] == "too_many_streams"
    first.close()  # the slot is free again
    third = alice.client.get(f"/agent/api/conversations/{queued.cid}/events", buffered=False)
    assert third.status_code == 200
    third.close()


# -- over real HTTP, and across workers ------------------------------------------------------------


def test_over_real_http_the_console_on_one_server_and_the_visitor_on_another(
    request, store_kind, tmp_path, live_server_factory, chat_factory, shared_store
):
    path = tmp_path / "agents.json"
    write_agents(path)
    console_host = live_server_factory(AGENTS_FILE=str(path))
    # On Redis the visitor is served by another server (another worker or host); in memory, one
    # process is the whole deployment.
    visitor_host = live_server_factory(AGENTS_FILE=str(path)) if shared_store else console_host
    agent = HttpAgent(console_host.url)
    agent.sign_in("alice")
    assert agent.get("/agent/api/queue").status_code == 200  # present

    visitor = chat_factory(visitor_host)
    auth = {"Authorization": f"Bearer {visitor.token}"}
    base = f"/api/v1/conversations/{visitor.conversation_id}"
    assert visitor.http.post(f"{base}/handoff", json={"request_id": "h1"}, headers=auth).json()["state"] == "queued"
    said = visitor.http.post(f"{base}/handoff/messages", json={"request_id": "v1", "text": "Hello?"}, headers=auth)
    assert said.status_code == 201
    cid = visitor.conversation_id
    assert agent.agent_api(f"/conversations/{cid}/claim").json() == {"conversation_id": cid, "agent": "Alice Agent"}

    text = "Hi, I'm Alice — how can I help?"
    with HTTP.stream(
        "GET", f"{visitor_host.url}{base}/events", headers={**auth, "Last-Event-ID": f"{cid}:0"}, timeout=30
    ) as stream:
        sent = agent.agent_api(f"/conversations/{cid}/messages", {"request_id": "a1", "text": text})
        assert sent.status_code == 201
        found, kind = None, ""
        for line in stream.iter_lines():
            if line.startswith("event: "):
                kind = line.removeprefix("event: ")
            elif line.startswith("data: ") and kind == "agent.message":
                found = json.loads(line.removeprefix("data: "))
                break
        assert found is not None
        assert found["text"] == text and found["sha256"] == sent.json()["sha256"]

    assert agent.agent_api(f"/conversations/{cid}/end", {"reason": "returned"}).status_code == 204
    # The session is the store's: the other server accepts the same cookie.
    other = HttpAgent(visitor_host.url)
    other.cookies, other.csrf = dict(agent.cookies), agent.csrf
    assert other.get("/agent/api/session").json()["name"] == "alice"
    agent.http.close()
    other.http.close()
