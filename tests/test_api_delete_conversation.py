"""DELETE /api/v1/conversations/<conversation_id> (docs/protocol.md, "Deleting a conversation").

Running answers are cancelled first (the backend run stops: counted by CountingBackend);
then everything of the conversation is gone at once: exchanges, request claims, every
answer's log and text, actions, client-report marks, feedback and the rate limits' counters
for it. On Redis that is proved by SCAN: no key names the conversation, or any of its
messages or actions, afterwards. The token no longer works, and the response expires the
panel's cookie. Named tests/test_api_*.py: every test runs on both stores.
"""

from __future__ import annotations

import threading
import time

import httpx
import pytest

from widget_server.chat.generation import RunKeeper
from widget_server.sse import EventStreamParser
from widget_server.transport import CONVERSATION_COOKIE

from .helpers import HTTP, ChatClient, CountingBackend, StreamResult, assert_json_error, wait_until
from .redis_support import keys_naming, keyspace_of
from .test_scale_out import metric_value


def _count(server) -> CountingBackend:
    counting = CountingBackend(server.service.backend)
    server.service.backend = counting
    return counting


def delete_conversation(chat: ChatClient, token: str | None = None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token or chat.token}"}
    return chat.http.delete(f"/api/v1/conversations/{chat.conversation_id}", headers=headers)


def memory_traces(server, names: set[str]) -> list[str]:
    """What the memory store and the in-process rate limits still hold of `names`."""
    store = server.service.store
    found = [f"conversation {cid}" for cid in store._conversations if cid in names]
    found += [f"message {mid}" for mid in store._messages if mid in names]
    found += [f"action {aid}" for aid in store._actions if aid in names]
    limits = server.app.extensions.get("widget_server.rate_limits")
    if limits is not None:  # RATE_LIMITS on: their in-process counters
        for table in (limits.storage.storage, limits.storage.events, limits.storage.expirations):
            found += [f"rate limit {key}" for key in table if any(name in key for name in names)]
    return found


def store_url(server) -> str:
    return server.app.config["WIDGET_SERVER"]["STORE"]


def traces(server, store_kind: str, names: set[str]) -> list[str]:
    """Whatever of `names` the server's store (and rate limits) still hold."""
    if store_kind != "memory":
        return keys_naming(store_url(server), names)
    return memory_traces(server, names)


def stream_until(chat: ChatClient, text: str, request_id: str, kinds: int) -> tuple[StreamResult, threading.Thread]:
    """POST `text` and read its stream in a thread; return once `kinds` events arrived.
    The thread reads on until the stream ends."""
    result = StreamResult(0, {})
    arrived = threading.Event()

    def read() -> None:
        parser = EventStreamParser(result.events.append)
        body = {"request_id": request_id, "text": text}
        with chat.http.stream("POST", chat.messages_url(), json=body, headers=chat.auth) as response:
            result.status = response.status_code
            for chunk in response.iter_raw():
                parser.feed(chunk)
                if len(result.events) >= kinds:
                    arrived.set()
            parser.end()
        arrived.set()

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    assert arrived.wait(timeout=10)
    return result, thread


def test_delete_removes_every_trace_of_the_conversation_at_once(live_server_factory, chat_factory, store_kind):
    # Rate limits on: their per-conversation counters must go too.
    server = live_server_factory(RATE_LIMITS=True, CONVERSATION_TTL_SECONDS=600)
    chat = chat_factory(server)
    keep = chat_factory(server)  # another conversation: untouched
    kept = keep.send("/help", "k1")
    assert (
        keep.http.put(
            f"{keep.messages_url()}/{kept.message_id}/feedback", json={"rating": "up"}, headers=keep.auth
        ).status_code
        == 200
    )

    completed = chat.send("/scenario action", "r-action")
    assert completed.kinds[-1] == "message.completed"
    action_id = completed.payloads[-1]["actions"][0]["action_id"]
    dismissed = chat.http.post(
        f"{chat.messages_url()}/{completed.message_id}/actions/{action_id}/dismiss", headers=chat.auth
    )
    assert dismissed.status_code == 200
    failed = chat.send("/scenario fail-provider", "r-failed")
    assert failed.kinds[-1] == "message.failed"
    cancelled = chat.send("/scenario slow", "r-slow", max_events=2)
    assert chat.cancel(cancelled.message_id).json()["state"] == "cancelled"
    feedback = chat.http.put(
        f"{chat.messages_url()}/{completed.message_id}/feedback",
        json={"rating": "down", "comment": "meh"},
        headers=chat.auth,
    )
    assert feedback.status_code == 200
    report = chat.http.post(
        f"{chat.messages_url()}/{completed.message_id}/report", json={"duplicates": 1}, headers=chat.auth
    )
    assert report.status_code == 204
    history = chat.history().json()["messages"]
    user_ids = {entry["message_id"] for entry in history if entry["role"] == "user"}
    names = {
        chat.conversation_id,
        completed.message_id,
        failed.message_id,
        cancelled.message_id,
        action_id,
        *user_ids,
    }
    before = traces(server, store_kind, names)
    # The check can see them: the conversation, each answer, the action, the rate limit.
    assert any(chat.conversation_id in t and "messages_conversation" in t for t in before), before
    for name in (chat.conversation_id, completed.message_id, failed.message_id, cancelled.message_id, action_id):
        assert any(name in t for t in before), (name, before)
    if store_kind != "memory":
        assert keyspace_of(store_url(server)).conversation(chat.conversation_id) + ":feedback" in before

    response = delete_conversation(chat)

    assert response.status_code == 204, response.text
    assert response.content == b""
    assert traces(server, store_kind, names) == []
    # The panel's cookie is expired, with the attributes it was set with.
    cookie = response.headers["set-cookie"]
    assert cookie.startswith(f"{CONVERSATION_COOKIE}=;"), cookie
    for part in ("Max-Age=0", "Path=/", "Secure", "HttpOnly", "SameSite=None", "Partitioned"):
        assert part in cookie, cookie
    # The token no longer opens anything.
    assert_json_error(chat.history(), 404, "not_found")
    assert_json_error(delete_conversation(chat), 404, "not_found")
    after = chat.stream("POST", chat.messages_url(), json={"request_id": "r-after", "text": "hello"})
    assert after.status == 404 and after.json["error"]["code"] == "not_found"
    assert chat.resume(completed.message_id, None).status == 404
    assert_json_error(
        chat.http.put(
            f"{chat.messages_url()}/{completed.message_id}/feedback", json={"rating": "up"}, headers=chat.auth
        ),
        404,
        "not_found",
    )
    # Nothing the later requests did brought a key back.
    assert traces(server, store_kind, names) == []
    # The other conversation is whole.
    assert keep.history().json()["messages"][1]["feedback"]["rating"] == "up"


def test_delete_cancels_a_running_answer_first(live_server, chat_factory, store_kind):
    counting = _count(live_server)
    chat = chat_factory(live_server)
    running, reader = stream_until(chat, "/scenario slow", "r-slow", kinds=2)
    assert running.kinds == ["message.started", "text.delta"]
    assert counting.calls == 1 and counting.closed == 0
    started = time.monotonic()

    response = delete_conversation(chat)

    assert response.status_code == 204
    # The backend was woken and stopped before the keys went (the slow scenario's next
    # sentence is a second away), and the open stream ended.
    assert counting.closed == 1
    assert time.monotonic() - started < 1.0
    reader.join(timeout=5)
    assert not reader.is_alive()
    assert running.kinds[-1] == "message.cancelled", running.kinds
    metrics = HTTP.get(live_server.url + "/metrics").text
    assert metric_value(metrics, "chat_messages_ended_total", state="cancelled", code="") == 1
    assert metric_value(metrics, "chat_cancel_requests_total", outcome="cancelled") == 1
    assert traces(live_server, store_kind, {chat.conversation_id, running.message_id}) == []
    assert_json_error(chat.history(), 404, "not_found")


def test_a_delete_on_another_worker_stops_the_answer_and_leaves_no_key(live_server_factory, chat_factory, store_kind):
    """Two servers on one Redis: the answer runs on one, the delete lands on the other. The
    generating worker notices (its RunKeeper), stops the backend, and a lease renewal
    brings back no key."""
    if store_kind == "memory":
        pytest.skip("the memory store lives in one process: no other worker can share the conversation")
    generating = live_server_factory()
    counting = _count(generating)
    other = live_server_factory()
    chat = chat_factory(generating)
    running, reader = stream_until(chat, "/scenario slow", "r-slow", kinds=2)
    there = ChatClient(other.url)
    there.conversation_id, there.token = chat.conversation_id, chat.token
    try:
        assert delete_conversation(there).status_code == 204
    finally:
        there.close()
    assert wait_until(lambda: counting.closed == 1, timeout=2 * RunKeeper.TICK_SECONDS + 1)
    reader.join(timeout=5)
    assert not reader.is_alive()
    assert keys_naming(store_url(generating), {chat.conversation_id, running.message_id}) == []
    # A renewal racing the delete (the keeper's tick, just after it) brings back no lease:
    # renewing is refused for a message that is no longer running or no longer exists.
    store = generating.service.store
    assert store.keep_runs([running.message_id], renew=True) == {running.message_id: None}
    assert keys_naming(store_url(generating), {chat.conversation_id, running.message_id}) == []


def test_only_the_conversations_own_token_deletes_it(live_server, chat_factory):
    chat = chat_factory(live_server)
    answer = chat.send("/help", "r1")
    other = chat_factory(live_server)
    url = f"/api/v1/conversations/{chat.conversation_id}"
    for headers in ({"Authorization": f"Bearer {other.token}"}, {"Authorization": "Bearer " + "x" * 43}, {}):
        assert_json_error(chat.http.delete(url, headers=headers), 404, "not_found")
    assert_json_error(chat.http.delete("/api/v1/conversations/c_AAAAAAAAAAAAAAAA", headers=chat.auth), 404)
    messages = chat.history().json()["messages"]
    assert [m["message_id"] for m in messages][1] == answer.message_id
    assert other.history().status_code == 200


def test_a_replaced_answer_is_deleted_with_its_conversation(live_server, chat_factory, store_kind):
    """A regenerated answer's predecessor stays in the store, unlisted (docs/protocol.md,
    "Regenerate and edit"), until the conversation goes: then it goes too."""
    chat = chat_factory(live_server)
    old = chat.send("/help", "r1")
    new = chat.stream("POST", f"{chat.messages_url()}/{old.message_id}/regenerate", json={"request_id": "r2"})
    assert new.status == 200 and new.kinds[-1] == "message.completed", (new.status, new.json)
    assert new.message_id != old.message_id
    names = {chat.conversation_id, old.message_id, new.message_id}
    held = traces(live_server, store_kind, names)
    assert any(old.message_id in t for t in held) and any(new.message_id in t for t in held), held

    assert delete_conversation(chat).status_code == 204
    assert traces(live_server, store_kind, names) == []
