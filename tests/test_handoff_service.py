"""HandoffService (widget_server/handoff/service.py), on both hand-off stores.

Transport-free: these tests call the service as the agents' API and the visitor's routes do,
against the memory store and a real redis-server, so the two keep the same promises (the HTTP
side is tests/test_api_handoff.py; the event stream's resume, tests/test_handoff_events.py).
"""

from __future__ import annotations

import hashlib
import threading
import time
from typing import Any

import pytest

from widget_server.chat.service import ChatService
from widget_server.errors import ApiError
from widget_server.handoff import events as ev
from widget_server.handoff.service import HandoffService
from widget_server.identity.identity import Identity

from .handoff_support import handoff_services
from .helpers import wait_until


@pytest.fixture(params=["memory", "redis"])
def make_service(request):
    """make_service(**settings) → (HandoffService, ChatService) on this test's store kind."""
    with handoff_services(request, request.param) as make:
        yield make


def events_of(service: HandoffService, conversation_id: str, after: int = 0) -> list[ev.ConversationEvent]:
    return service.read_events(conversation_id, after, 0)


def new_conversation(chat: ChatService) -> str:
    return chat.create_conversation()[0]


def refusal(call, *args: Any) -> ApiError:
    with pytest.raises(ApiError) as caught:
        call(*args)
    return caught.value


def test_request_is_unavailable_without_a_present_agent_and_when_off(make_service):
    service, chat = make_service()
    cid = new_conversation(chat)
    assert service.request(cid, "r1") == {"state": "unavailable", "reason": "no_agents", "seq": 1}
    assert [e.type for e in events_of(service, cid)] == [ev.UNAVAILABLE]
    off, chat_off = make_service(HANDOFF="off")
    other = new_conversation(chat_off)
    off.agent_seen("ana")
    assert off.request(other, "r1") == {"state": "unavailable", "reason": "disabled", "seq": 1}
    # auto: on only when the agents file lists someone (services.py passes AgentAccounts.anyone)
    agents_listed = [False]
    auto, chat_auto = make_service(hooks={"has_agents": lambda: agents_listed[0]}, HANDOFF="auto")
    auto.agent_seen("ana")
    third = new_conversation(chat_auto)
    assert auto.request(third, "r1")["reason"] == "disabled"
    agents_listed[0] = True
    assert auto.request(third, "r2") == {"state": "queued", "position": 1, "seq": 2}  # after the unavailable


def test_request_is_idempotent_and_positions_follow_the_queue(make_service):
    service, chat = make_service()
    service.agent_seen("ana")
    first, second, third = (new_conversation(chat) for _ in range(3))
    assert service.request(first, "r1") == {"state": "queued", "position": 1, "seq": 1}
    assert service.request(first, "r1") == {"state": "queued", "position": 1, "seq": 1}  # a retry
    assert service.request(first, "r2") == {"state": "queued", "position": 1, "seq": 1}  # already queued
    assert service.request(second, "r1") == {"state": "queued", "position": 2, "seq": 1}
    assert service.request(third, "x") == {"state": "queued", "position": 3, "seq": 1}
    assert [e.type for e in events_of(service, first)] == [ev.QUEUED]  # retries append nothing
    assert [q["conversation_id"] for q in service.queue()] == [first, second, third]
    service.cancel(first)
    assert [(e.type, e.payload) for e in events_of(service, first)][-1] == (
        ev.ENDED,
        {"agent": "", "reason": "visitor"},
    )
    # the others moved up, each told once
    assert [(e.type, e.payload) for e in events_of(service, second)] == [
        (ev.QUEUED, {"position": 2}),
        (ev.QUEUED, {"position": 1}),
    ]
    assert events_of(service, third)[-1].payload == {"position": 2}
    assert service.state(third) == {"state": "queued", "position": 2}
    service.cancel(first)  # nothing to end: no event
    assert events_of(service, first)[-1].type == ev.ENDED and len(events_of(service, first)) == 2


def test_twenty_concurrent_claims_have_exactly_one_winner(make_service):
    service, chat = make_service()
    service.agent_seen("ana")
    cid = new_conversation(chat)
    service.request(cid, "r1")
    start = threading.Barrier(20)
    outcomes: list[Any] = [None] * 20

    def claim(index: int) -> None:
        start.wait()
        try:
            outcomes[index] = service.claim(cid, f"agent{index}", f"Agent {index}")
        except ApiError as error:
            outcomes[index] = error

    threads = [threading.Thread(target=claim, args=(i,)) for i in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    winners = [o for o in outcomes if isinstance(o, dict)]
    assert len(winners) == 1, outcomes
    winner = winners[0]["agent"]
    for lost in (o for o in outcomes if isinstance(o, ApiError)):
        assert (lost.status, lost.code) == (409, "already_claimed")
        assert lost.details == {"agent": winner} and winner in lost.message
    assigned = [e for e in events_of(service, cid) if e.type == ev.ASSIGNED]
    assert [e.payload for e in assigned] == [{"agent": winner}]
    assert service.state(cid) == {"state": "assigned", "agent": winner}
    assert service.queue() == []


def test_messages_both_ways_are_exact_idempotent_and_only_for_the_claimer(make_service):
    service, chat = make_service()
    service.agent_seen("ana")
    cid = new_conversation(chat)
    assert refusal(service.visitor_message, cid, "v1", "hi").code == "handoff_not_active"
    service.request(cid, "r1")
    sent = service.visitor_message(cid, "v1", "Hello\r\nthere 🙂 \u00e9")
    assert sent == service.visitor_message(cid, "v1", "Hello\r\nthere 🙂 \u00e9")  # a retry
    text = "Hello\nthere 🙂 \u00e9"  # as stored: CRLF becomes LF (docs/protocol.md, "Conventions")
    assert sent["sha256"] == hashlib.sha256(text.encode()).hexdigest()
    assert refusal(service.visitor_message, cid, "v1", "other").code == "request_id_conflict"
    assert service.queue()[0]["last_visitor_message"] == text
    assert refusal(service.agent_message, cid, "ana", "a1", "hi").code == "handoff_not_active"
    service.claim(cid, "ana", "Ana")
    mine = refusal(service.agent_message, cid, "bob", "a1", "hi")
    assert (mine.status, mine.code, mine.details) == (403, "not_your_conversation", {"agent": "Ana"})
    reply = service.agent_message(cid, "ana", "a1", "How can I help?")
    assert reply == service.agent_message(cid, "ana", "a1", "How can I help?")
    service.typing(cid, "ana")
    service.typing(cid, "ana")  # within TYPING_EVERY_SECONDS: not appended again
    kinds = [(e.type, e.payload.get("text")) for e in events_of(service, cid)]
    assert kinds == [
        (ev.QUEUED, None),
        (ev.VISITOR_MESSAGE, text),
        (ev.ASSIGNED, None),
        (ev.AGENT_MESSAGE, "How can I help?"),
        (ev.AGENT_TYPING, None),
    ]
    assert [e.seq for e in events_of(service, cid)] == [1, 2, 3, 4, 5]
    assert service.claimed_by("ana")[0]["conversation_id"] == cid and service.claimed_by("bob") == []
    assert refusal(service.end, cid, "ana", "bye").code == "invalid_reason"
    assert refusal(service.end, cid, "bob").code == "not_your_conversation"
    service.end(cid, "ana", "returned")
    assert events_of(service, cid)[-1].payload == {"agent": "Ana", "reason": "returned"}
    assert service.state(cid) == {"state": "ended"}
    assert [(m["role"], m["text"]) for m in service.transcript(cid)] == [
        ("visitor", text),
        ("agent", "How can I help?"),
    ]


def test_a_claim_whose_agent_is_gone_past_the_grace_returns_to_the_queue_in_its_place(make_service):
    service, chat = make_service(AGENT_GRACE_SECONDS=0.5)
    service.agent_seen("ana")
    service.agent_seen("bob")
    first, second = new_conversation(chat), new_conversation(chat)
    service.request(first, "r")
    service.request(second, "r")
    service.claim(first, "ana", "Ana")
    assert service.release_lapsed() == 0  # seen just now
    deadline = time.monotonic() + 5
    while service.release_lapsed() == 0:  # ana's console stopped calling; nothing else moves
        assert time.monotonic() < deadline, "the claim was never released"
        service.agent_seen("bob")
        time.sleep(0.05)
    tail = [(e.type, e.payload) for e in events_of(service, first)][-2:]
    assert tail == [(ev.ENDED, {"agent": "Ana", "reason": "timeout"}), (ev.QUEUED, {"position": 1})]
    assert [q["conversation_id"] for q in service.queue()] == [first, second]  # its old place
    assert events_of(service, second)[-1].payload == {"position": 2}
    assert service.claim(first, "bob", "Bob") == {"conversation_id": first, "agent": "Bob"}


def test_unavailable_then_a_left_message_lands_in_the_inbox_and_a_reply_reaches_the_conversation(make_service):
    left_hook: list[dict] = []
    reply_hook: list[tuple[dict, dict]] = []
    service, chat = make_service(
        hooks={
            "on_left_message": left_hook.append,
            "on_left_reply": lambda entry, reply: reply_hook.append((entry, reply)),
        }
    )
    cid = new_conversation(chat)
    assert service.request(cid, "r")["state"] == "unavailable"
    left = service.leave_message(cid, "l1", "visitor@example.com", "Call me back")
    assert left == service.leave_message(cid, "l1", "visitor@example.com", "Call me back")
    assert len(left_hook) == 1 and left_hook[0]["text"] == "Call me back"
    (entry,) = service.inbox()
    assert entry["left_message_id"] == left["left_message_id"]
    assert (entry["conversation_id"], entry["email"], entry["replied"]) == (cid, "visitor@example.com", False)
    reply = service.reply_to_left(left["left_message_id"], "ana", "Ana", "p1", "We called.")
    assert reply == service.reply_to_left(left["left_message_id"], "ana", "Ana", "p1", "We called.")
    assert service.inbox()[0]["replied"] is True
    assert len(reply_hook) == 1 and reply_hook[0][1]["text"] == "We called."
    last = events_of(service, cid)[-1]
    assert (last.type, last.payload["text"], last.payload["agent"]) == (ev.AGENT_MESSAGE, "We called.", "Ana")
    assert refusal(service.reply_to_left, "l_nope", "ana", "Ana", "p2", "x").code == "not_found"
    text = service.app_metrics.exposition()[0].decode()
    assert "chat_handoff_messages_left_total 1.0" in text
    assert 'chat_handoffs_unavailable_total{reason="no_agents"} 1.0' in text


def test_a_position_evicted_from_the_log_gets_a_snapshot_then_what_follows(make_service):
    service, chat = make_service(CONVERSATION_EVENTS_MAX=3)
    service.agent_seen("ana")
    cid = new_conversation(chat)
    service.request(cid, "r")
    service.claim(cid, "ana", "Ana")
    for n in range(5):
        service.agent_message(cid, "ana", f"a{n}", f"message {n}")
    # 7 events; the log keeps 5, 6, 7
    got = events_of(service, cid, 1)
    assert got[0].type == ev.SNAPSHOT and got[0].seq == 7
    assert got[0].payload["state"] == "assigned" and got[0].payload["agent"] == "Ana"
    assert [m["text"] for m in got[0].payload["messages"]] == [f"message {n}" for n in range(5)]
    assert len(got) == 1
    assert [e.seq for e in events_of(service, cid, 4)] == [5, 6, 7]  # still kept: exact


def test_forget_removes_the_hand_off_and_its_place_and_left_messages(make_service):
    service, chat = make_service()
    service.agent_seen("ana")
    first, second = new_conversation(chat), new_conversation(chat)
    service.leave_message(first, "l", None, "note")  # before asking again: not while queued
    service.request(first, "r")
    service.request(second, "r")
    service.forget(first)
    assert service.state(first) == {"state": "none"}
    assert events_of(service, first) == []
    assert [q["conversation_id"] for q in service.queue()] == [second]
    assert service.inbox() == []
    assert events_of(service, second)[-1].payload == {"position": 1}


def test_history_places_hand_off_messages_among_the_turns(make_service):
    service, chat = make_service()
    service.agent_seen("ana")
    cid = new_conversation(chat)
    message_id, _ = chat.submit(cid, "q1", "hello")
    assert wait_until(lambda: chat.store.message(message_id).state.terminal, 10)
    service.request(cid, "r")
    service.visitor_message(cid, "v", "to a person")
    service.claim(cid, "ana", "Ana")
    service.agent_message(cid, "ana", "a", "a person here")
    service.end(cid, "ana")
    after, _ = chat.submit(cid, "q2", "hello again")
    assert wait_until(lambda: chat.store.message(after).state.terminal, 10)
    roles = [(m["role"], m.get("agent")) for m in service.history(cid, chat.history(cid))]
    assert roles == [
        ("user", None),
        ("assistant", None),
        ("visitor", None),
        ("agent", "Ana"),
        ("user", None),
        ("assistant", None),
    ]


def test_a_lone_surrogate_becomes_u_fffd_in_the_store_and_the_digest(make_service):
    service, chat = make_service()
    service.agent_seen("ana")
    cid = new_conversation(chat)
    service.request(cid, "r")
    service.claim(cid, "ana", "Ana")
    sent = service.agent_message(cid, "ana", "a", "broken \ud800 text")
    assert sent["sha256"] == hashlib.sha256("broken \ufffd text".encode()).hexdigest()
    last = events_of(service, cid)[-1]
    assert last.payload["text"] == "broken \ufffd text"
    assert last.encode().decode("utf-8").count("\ufffd") == 1


def test_a_known_visitors_name_and_email_reach_the_agents(make_service):
    """docs/agents.md, "Known visitors": the queue, the held conversations and the conversation
    view say who the site vouched for; `visitor` is None for an anonymous visitor."""
    service, chat = make_service()
    service.agent_seen("ana")
    known = chat.create_conversation(Identity("user-7", "Ada <b>Lovelace</b>", "ada@example.com"))[0]
    anonymous = new_conversation(chat)
    service.request(known, "r1")
    service.request(anonymous, "r1")
    visitor = {"subject": "user-7", "name": "Ada <b>Lovelace</b>", "email": "ada@example.com"}
    assert [entry["visitor"] for entry in service.queue()] == [visitor, None]
    service.claim(known, "ana", "Ana")
    assert service.claimed_by("ana")[0]["visitor"] == visitor
    assert service.console_view(known)["visitor"] == visitor
    assert service.console_view(anonymous)["visitor"] is None
