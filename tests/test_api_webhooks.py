"""Signed webhooks over real HTTP (docs/webhooks.md): a real receiver on loopback
(tests/webhook_support.py, with WEBHOOK_ALLOW_PRIVATE) gets every event, signed as the docs'
own snippet verifies, retried after a 500 with the same id, in order per conversation, while a
receiver that hangs never holds up an answer; on Redis a delivery queued by a worker that
stopped is sent by the next. Named tests/test_api_*.py: memory, a real redis-server, a real
Redis Cluster, mounted."""

from __future__ import annotations

import re
import time

import pytest

from widget_server.dashboard.buckets import PERIODS
from widget_server.dashboard.summary import read_summary
from widget_server.services import SERVICES_KEY
from widget_server.webhooks.delivery import SENDERS

from .helpers import HTTP, ChatClient
from .privacy_support import PRIVACY_CONFIG, realistic_conversation
from .webhook_support import SECRET, Receiver, delivered_types, docs_verifier, webhook_config


@pytest.fixture
def receiver():
    started = Receiver().start()
    yield started
    started.stop()


@pytest.fixture
def webhook_server(live_server_factory, shared_store):
    """A server whose senders stop with the test (shared_store empties the Redis first: another
    test's queued deliveries are not this one's)."""
    started = []

    def start(**config):
        server = live_server_factory(**config)
        started.append(server)
        return server

    yield start
    for server in started:
        delivery = server.app.extensions[SERVICES_KEY].webhook_delivery
        if delivery is not None:
            delivery.stop()


@pytest.fixture
def open_chat():
    """A ChatClient with a new conversation on `server`, closed after the test."""
    opened = []

    def open_on(server):
        chat = ChatClient(server.url).new_conversation()
        opened.append(chat)
        return chat

    yield open_on
    for chat in opened:
        chat.close()


def answered(open_chat, server, text="hello", request_id="wh-req-01"):
    chat = open_chat(server)
    result = chat.send(text, request_id)
    assert result.kinds[-1] == "message.completed", result.kinds
    return chat, result


def metric(server, event, outcome):
    exposition = HTTP.get(f"{server.url}/metrics", timeout=10).text
    found = re.search(
        rf'chat_webhook_deliveries_total\{{event="{re.escape(event)}",outcome="{outcome}"\}} (\S+)', exposition
    )
    return float(found.group(1)) if found else 0.0


def test_each_event_is_delivered_signed_with_its_data(webhook_server, receiver, open_chat):
    server = webhook_server(**webhook_config(receiver))
    chat, result = answered(open_chat, server)
    got = receiver.wait_for(lambda items: len(items) >= 2)
    verify = docs_verifier()
    for item in got:
        assert verify(SECRET, item.headers["x-widget-server-signature"], item.body), item.headers
        assert not verify("another-secret-0123456789abcdef0123", item.headers["x-widget-server-signature"], item.body)
        assert not verify(SECRET, item.headers["x-widget-server-signature"], item.body + b" ")
        assert item.headers["content-type"] == "application/json"
        assert item.headers["x-widget-server-delivery"] == item.json["id"]
        assert item.headers["x-widget-server-event"] == item.json["type"]
        assert item.json["conversation_id"] == chat.conversation_id
    created, completed = (item.json for item in got[:2])
    assert (created["type"], created["data"]) == ("conversation.created", {"identified": False})
    assert completed["type"] == "message.completed"
    ending = result.payloads[-1]
    assert completed["data"] == {
        "message_id": result.message_id,
        "length": ending["length"],
        "sha256": ending["sha256"],
    }
    assert created["id"] != completed["id"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", completed["created_at"])
    assert wait_until(lambda: metric(server, "message.completed", "delivered") == 1)


def test_a_500_is_retried_with_the_same_id_and_the_conversation_waits_its_turn(webhook_server, receiver, open_chat):
    receiver.statuses.extend([500])
    server = webhook_server(**webhook_config(receiver))
    answered(open_chat, server)
    got = receiver.wait_for(lambda items: len(delivered_types(items)) >= 2)
    first, retried = got[0], got[1]
    assert first.status == 500 and retried.status == 200
    # The same delivery again: same id, body and event; a fresh signature of its own.
    assert retried.json == first.json and retried.json["type"] == "conversation.created"
    assert retried.headers["x-widget-server-delivery"] == first.headers["x-widget-server-delivery"]
    assert docs_verifier()(SECRET, retried.headers["x-widget-server-signature"], retried.body)
    # The answer's event, queued while its conversation's first event waited for its retry,
    # came only after it: the order the events happened in.
    assert delivered_types(got) == ["conversation.created", "message.completed"]
    assert metric(server, "conversation.created", "retried") == 1
    assert wait_until(lambda: metric(server, "conversation.created", "delivered") == 1)
    # The owner dashboard counts the same attempts (docs/dashboard.md, "Webhook deliveries").
    dashboard = server.app.extensions[SERVICES_KEY].dashboard.store
    assert wait_until(lambda: read_summary(dashboard, PERIODS["today"])["webhooks"] == {"delivered": 2, "retried": 1})


def test_a_4xx_is_not_retried(webhook_server, receiver, open_chat):
    receiver.statuses.extend([410])
    server = webhook_server(**webhook_config(receiver, WEBHOOK_EVENTS="conversation.created"))
    open_chat(server)
    second = open_chat(server)
    got = receiver.wait_for(lambda items: len(items) >= 2)
    # The refused one was let go: the next request is the other conversation's event.
    assert [item.status for item in got[:2]] == [410, 200]
    assert got[1].json["conversation_id"] == second.conversation_id
    assert wait_until(lambda: metric(server, "conversation.created", "rejected") == 1)


def test_a_failed_answer_is_delivered_with_its_code(webhook_server, receiver, open_chat):
    server = webhook_server(**webhook_config(receiver, WEBHOOK_EVENTS="message.failed,message.completed"))
    chat = open_chat(server)
    result = chat.send("/scenario fail-provider", "wh-fail-01")
    assert result.kinds[-1] == "message.failed", result.kinds
    got = receiver.wait_for(lambda items: len(items) >= 1)
    assert got[0].json["type"] == "message.failed"
    assert got[0].json["data"] == {"message_id": result.message_id, "code": "provider"}


def test_a_delivery_failing_past_the_retry_horizon_is_given_up_and_the_next_goes(webhook_server, receiver, open_chat):
    receiver.statuses.extend([503])
    # WEBHOOK_RETRY_FOR=0: one attempt each, the 503 given up at once.
    server = webhook_server(**webhook_config(receiver, WEBHOOK_RETRY_FOR=0))
    answered(open_chat, server)
    got = receiver.wait_for(lambda items: len(items) >= 2)
    assert [(item.json["type"], item.status) for item in got] == [
        ("conversation.created", 503),
        ("message.completed", 200),
    ]
    assert wait_until(lambda: metric(server, "conversation.created", "failed") == 1)
    assert metric(server, "conversation.created", "retried") == 0


def test_a_private_address_is_refused_without_allow_private(webhook_server, receiver, open_chat):
    # The receiver's own URL, on loopback, as an attacker's setting could name the server's network.
    server = webhook_server(**webhook_config(receiver, WEBHOOK_ALLOW_PRIVATE=False))
    answered(open_chat, server)
    for event in ("conversation.created", "message.completed"):
        assert wait_until(lambda event=event: metric(server, event, "refused") == 1)
    # Both refused before any connection: the receiver never heard of them, nor will (not retried).
    assert receiver.received == []
    assert server.app.extensions[SERVICES_KEY].webhooks.queue.pending() == 0


def test_only_the_chosen_events_are_sent(webhook_server, receiver, open_chat):
    server = webhook_server(**webhook_config(receiver, WEBHOOK_EVENTS="message.completed"))
    answered(open_chat, server)
    got = receiver.wait_for(lambda items: len(items) >= 1)
    # conversation.created would have been first in the conversation's lane: it was never queued.
    assert [item.json["type"] for item in got] == ["message.completed"]


def test_feedback_and_the_handoff_are_delivered_in_order(webhook_server, receiver):
    server = webhook_server(**PRIVACY_CONFIG, **webhook_config(receiver))
    made = realistic_conversation(server, None, tag="hook")
    expected = [
        "conversation.created",
        "message.completed",
        "message.completed",
        "message.completed",
        "feedback.submitted",
        "handoff.queued",
        "handoff.assigned",
        "handoff.ended",
        "message.left",
    ]
    got = receiver.wait_for(lambda items: len(items) >= len(expected))
    assert [item.json["type"] for item in got] == expected
    by_type = {item.json["type"]: item.json["data"] for item in got}
    assert by_type["feedback.submitted"] == {"message_id": made.message_ids[0], "rating": "up", "comment": "Spot on"}
    assert by_type["handoff.queued"] == {"position": 1}
    assert by_type["handoff.assigned"] == {"agent": "Ana"}
    assert by_type["handoff.ended"] == {"agent": "Ana", "reason": "ended"}
    assert by_type["message.left"] == {
        "left_message_id": made.left_message_ids[0],
        "email": "ada@example.com",
        "text": "Call me back",
    }
    assert {item.json["conversation_id"] for item in got} == {made.conversation_id}


def test_a_rating_after_a_hand_off_is_delivered_once(webhook_server, receiver):
    """satisfaction.submitted (docs/webhooks.md): once per answer; the visitor's identical retry
    (a 200 with the stored answer, docs/protocol.md "Satisfaction") sends nothing more: the
    conversation's next event arrives right after the one delivery (its lane keeps order)."""
    events = "satisfaction.submitted,feedback.submitted"
    server = webhook_server(**PRIVACY_CONFIG, **webhook_config(receiver, WEBHOOK_EVENTS=events))
    made = realistic_conversation(server, None, tag="rated")
    auth = {"Authorization": f"Bearer {made.token}"}
    stream = HTTP.get(
        f"{server.url}/api/v1/conversations/{made.conversation_id}/events",
        params={"after": 0},
        headers=auth,
        timeout=10,
    ).text
    ended = int(re.findall(r"id: [^:\n]+:(\d+)\nevent: handoff.ended", stream)[-1])
    body = {"handoff": ended, "rating": 4, "comment": "Quick and kind."}
    url = f"{server.url}/api/v1/conversations/{made.conversation_id}/satisfaction"
    assert HTTP.post(url, json=body, headers=auth, timeout=10).status_code == 201
    assert HTTP.post(url, json=body, headers=auth, timeout=10).status_code == 200
    feedback = f"{server.url}/api/v1/conversations/{made.conversation_id}/messages/{made.message_ids[0]}/feedback"
    assert HTTP.put(feedback, json={"rating": "down"}, headers=auth, timeout=10).status_code in (200, 201)
    got = receiver.wait_for(lambda items: len(items) >= 3)
    assert [item.json["type"] for item in got] == ["feedback.submitted", "satisfaction.submitted", "feedback.submitted"]
    assert got[1].json["data"] == {"handoff": ended, "rating": 4, "comment": "Quick and kind."}
    assert got[1].json["conversation_id"] == made.conversation_id


def test_a_receiver_that_hangs_never_holds_up_an_answer(webhook_server, receiver, open_chat):
    receiver.hang()
    server = webhook_server(**webhook_config(receiver, WEBHOOK_TIMEOUT=60, DEMO_DELAY_SECONDS=0.001))
    # One conversation per sender: each sender of the process is now stuck on the receiver.
    for _ in range(SENDERS):
        open_chat(server)
    receiver.wait_hanging(SENDERS)
    chat = open_chat(server)
    for number in range(1, 7):
        result = chat.send(f"/echo question {number}", f"wh-hang-{number:02}")
        assert result.kinds[0] == "message.started" and result.kinds[-1] == "message.completed", result.kinds
        assert result.text.strip() == f"question {number}"
        assert [payload["seq"] for payload in result.payloads] == list(range(1, len(result.payloads) + 1))
    # The receiver is still stuck: nothing was delivered while the answers streamed.
    assert receiver.delivered() == []
    # The last answer's event is queued by its run just after the store took its ending, which
    # the stream may have delivered a moment before: waited for, not read at once.
    queue = server.app.extensions[SERVICES_KEY].webhooks.queue
    assert wait_until(lambda: queue.pending() == SENDERS + 1 + 6), queue.pending()
    receiver.release()


def test_a_delivery_queued_by_a_stopped_worker_is_sent_by_the_next(webhook_server, receiver, store_kind, open_chat):
    if store_kind == "memory":
        pytest.skip("the memory store's queue lives and dies with its one process")
    first = webhook_server(**webhook_config(receiver))
    first.app.extensions[SERVICES_KEY].webhook_delivery.stop()  # as a worker stopping
    chat, _ = answered(open_chat, first)
    queue = first.app.extensions[SERVICES_KEY].webhooks.queue
    # Queued in Redis, nobody sending. The answer's own event is queued just after the store
    # takes its ending, which the stream may deliver first: wait for it.
    assert wait_until(lambda: queue.pending() == 2)
    second = webhook_server(**webhook_config(receiver))
    got = receiver.wait_for(lambda items: len(delivered_types(items)) >= 2)
    assert delivered_types(got) == ["conversation.created", "message.completed"]
    assert {item.json["conversation_id"] for item in got} == {chat.conversation_id}
    # Sent by the second worker, not the first.
    for event in ("conversation.created", "message.completed"):
        assert wait_until(lambda event=event: metric(second, event, "delivered") == 1)
        assert metric(first, event, "delivered") == 0
    assert wait_until(lambda: queue.pending() == 0)


def wait_until(condition, timeout=10.0):
    """Whether `condition()` came true within `timeout`: for what only shows in the server's
    own state (a counter, the queue), which no event announces."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True
