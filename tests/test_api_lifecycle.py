"""A message's life: idempotent submits, cancel, the time limit, and what history keeps.

Backend runs are counted by wrapping the live server's backend in
CountingBackend, so "generated once" and "stopped promptly" are observed,
not assumed.
"""

from __future__ import annotations

import json
import threading

import pytest

from widget_server.backends.demo import SLOW_ANSWER
from widget_server.sse import EventStreamParser

from .helpers import (
    ChatClient,
    CountingBackend,
    StreamResult,
    assert_digest,
    assert_json_error,
    assert_sound_events,
    wait_until,
)


def _count(server) -> CountingBackend:
    counting = CountingBackend(server.service.backend)
    server.service.backend = counting
    return counting


def _same_conversation(chat: ChatClient) -> ChatClient:
    other = ChatClient(chat.base_url)
    other.conversation_id, other.token = chat.conversation_id, chat.token
    return other


def _state(chat: ChatClient, message_id: str) -> dict:
    response = chat.http.get(f"{chat.messages_url()}/{message_id}", headers=chat.auth)
    assert response.status_code == 200
    return response.json()


def _send_and_cancel_after_first_delta(chat: ChatClient, text: str, request_id: str):
    """Stream `text`; as soon as the first delta is parsed, cancel. Returns (stream, cancel response)."""
    result = StreamResult(0, {})
    cancel_response = None
    parser = EventStreamParser(result.events.append)
    with chat.http.stream(
        "POST", chat.messages_url(), json={"request_id": request_id, "text": text}, headers=chat.auth
    ) as response:
        result.status = response.status_code
        result.headers = dict(response.headers)
        for chunk in response.iter_raw():
            result.raw += chunk
            parser.feed(chunk)
            if cancel_response is None and "text.delta" in result.kinds:
                cancel_response = chat.cancel(result.message_id)
        parser.end()
    return result, cancel_response


# -- idempotency ---------------------------------------------------------------


def test_concurrent_double_post_runs_the_backend_once(live_server_factory, chat_factory, seed_answers):
    server = live_server_factory(DEMO_DELAY_SECONDS=0.05)
    counting = _count(server)
    chat = chat_factory(server)
    twin = _same_conversation(chat)
    barrier = threading.Barrier(2)
    results: dict[str, StreamResult] = {}
    errors: list[BaseException] = []

    def post(name: str, client: ChatClient) -> None:
        try:
            barrier.wait(timeout=5)
            results[name] = client.send("/scenario improvisation", "same-request")
        except BaseException as error:  # reported below, not lost in the thread
            errors.append(error)

    threads = [threading.Thread(target=post, args=(name, c)) for name, c in (("a", chat), ("b", twin))]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=20)
    finally:
        twin.close()
    assert not errors, errors
    a, b = results["a"], results["b"]
    assert a.status == b.status == 200
    assert a.message_id == b.message_id
    expected = seed_answers["improvisation"]["answer"]
    assert a.text == b.text == expected
    for result in (a, b):
        assert_sound_events(result)
        assert result.kinds[-1] == "message.completed"
        assert_digest(result.payloads[-1], expected)
    assert counting.calls == 1
    assert len(chat.history().json()["messages"]) == 2


def test_sequential_retry_replays_the_same_answer(live_server, chat_factory, seed_answers):
    counting = _count(live_server)
    chat = chat_factory(live_server)
    question = seed_answers["voicings"]["question"]
    first = chat.send(question, "retry-me")
    second = chat.send(question, "retry-me")

    assert first.status == second.status == 200
    assert first.message_id == second.message_id
    assert first.text == second.text == seed_answers["voicings"]["answer"]
    assert second.payloads == first.payloads  # the same log, replayed: same seqs, same digest
    assert counting.calls == 1
    assert len(chat.history().json()["messages"]) == 2


def test_retry_with_last_event_id_sends_only_the_rest(live_server, chat_factory, seed_answers):
    counting = _count(live_server)
    chat = chat_factory(live_server)
    first = chat.send("/scenario improvisation", "r-1", max_events=3)
    again = chat.send("/scenario improvisation", "r-1", headers={"Last-Event-ID": first.events[-1].id})
    assert again.message_id == first.message_id
    assert again.payloads[0]["seq"] == 4
    assert first.text + again.text == seed_answers["improvisation"]["answer"]
    assert counting.calls == 1


def test_same_request_id_with_other_text_is_a_conflict(live_server, chat_factory):
    counting = _count(live_server)
    chat = chat_factory(live_server)
    first = chat.send("/echo one", "r-1")
    before = chat.history().json()

    response = chat.http.post(chat.messages_url(), json={"request_id": "r-1", "text": "/echo two"}, headers=chat.auth)

    body = assert_json_error(response, 409, "request_id_conflict")
    assert body["error"]["details"] == {"message_id": first.message_id}
    assert chat.history().json() == before
    assert counting.calls == 1


def test_concurrent_new_requests_respect_the_running_limit(live_server_factory, chat_factory):
    """MAX_RUNNING_PER_CONVERSATION=1 holds even when new requests race each other."""
    server = live_server_factory(MAX_RUNNING_PER_CONVERSATION=1)
    counting = _count(server)
    chat = chat_factory(server)
    clients = [_same_conversation(chat) for _ in range(6)]
    barrier = threading.Barrier(len(clients))
    statuses: list[int] = []
    lock = threading.Lock()

    def post(index: int, client: ChatClient) -> None:
        barrier.wait(timeout=5)
        # /scenario slow keeps the first answer running for seconds; read only the head.
        result = client.send("/scenario slow", f"race-{index}", max_events=1)
        with lock:
            statuses.append(result.status)

    threads = [threading.Thread(target=post, args=(i, c)) for i, c in enumerate(clients)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=20)
    finally:
        for client in clients:
            client.close()
    assert sorted(statuses) == [200] + [429] * (len(clients) - 1), statuses
    # message.started is stored before the run asks the backend for its answer, so on a
    # loaded machine the one call may come just after the head was read.
    assert wait_until(lambda: counting.calls >= 1, timeout=5.0)
    assert counting.calls == 1
    running = [m for m in chat.history().json()["messages"] if m["role"] == "assistant"]
    assert len(running) == 1
    chat.cancel(running[0]["message_id"])


# -- cancel --------------------------------------------------------------------


def test_cancel_stops_the_stream_and_the_backend(live_server, chat_factory):
    counting = _count(live_server)
    chat = chat_factory(live_server)

    result, cancel_response = _send_and_cancel_after_first_delta(chat, "/scenario slow", "r-slow")

    assert cancel_response is not None
    assert cancel_response.status_code == 200
    assert cancel_response.headers["content-type"].startswith("application/json")
    state = cancel_response.json()
    assert state["state"] == "cancelled" and state["message_id"] == result.message_id
    assert "error" not in state
    # The stream that was open ends with message.cancelled, right after the first delta.
    assert_sound_events(result)
    assert result.kinds == ["message.started", "text.delta", "message.cancelled"]
    ending = result.payloads[-1]
    assert ending["incomplete"] is True
    assert ending["length"] == len(result.text)
    assert SLOW_ANSWER.startswith(result.text) and result.text != SLOW_ANSWER
    assert state["last_seq"] == ending["seq"]
    # The backend was woken and stopped, long before its next sentence (a second away).
    assert wait_until(lambda: counting.closed == 1, timeout=1.0)
    assert counting.calls == 1

    # Cancelling again changes nothing and still says cancelled.
    again = chat.cancel(result.message_id)
    assert again.status_code == 200
    assert again.json() == state
    # A later reader sees the same ending.
    replay = chat.resume(result.message_id, None)
    assert replay.payloads == result.payloads


def test_cancel_reaches_every_open_stream(live_server, chat_factory):
    """A second reader, attached before the cancel, also receives message.cancelled and ends."""
    chat = chat_factory(live_server)
    first = chat.send("/scenario slow", "r-slow", max_events=2)
    mid = first.message_id
    connected = threading.Event()
    other = StreamResult(0, {})

    def read() -> None:
        parser = EventStreamParser(other.events.append)
        headers = {**chat.auth, "Last-Event-ID": first.events[-1].id}
        with chat.http.stream("GET", chat.events_url(mid), headers=headers) as response:
            other.status = response.status_code
            for chunk in response.iter_raw():
                connected.set()  # the retry: field arrives at once
                parser.feed(chunk)
            parser.end()

    reader = threading.Thread(target=read)
    reader.start()
    assert connected.wait(timeout=5)
    response = chat.cancel(mid)
    reader.join(timeout=10)
    assert not reader.is_alive()
    assert response.json()["state"] == "cancelled"
    assert other.status == 200
    assert other.kinds[-1] == "message.cancelled"
    assert_sound_events(other, mid)
    assert other.payloads[0]["seq"] == 3


def test_cancel_of_a_completed_message_leaves_it_completed(live_server, chat_factory, seed_answers):
    chat = chat_factory(live_server)
    result = chat.send("/scenario voicings", "r-1")
    assert result.kinds[-1] == "message.completed"

    response = chat.cancel(result.message_id)

    assert response.status_code == 200
    assert response.json() == {
        "message_id": result.message_id,
        "state": "completed",
        "last_seq": result.payloads[-1]["seq"],
    }
    assert chat.resume(result.message_id, None).payloads == result.payloads
    history = chat.history().json()["messages"]
    assert history[-1]["text"] == seed_answers["voicings"]["answer"] and history[-1]["state"] == "completed"


def test_cancel_of_a_failed_message_leaves_it_failed(live_server, chat_factory):
    chat = chat_factory(live_server)
    result = chat.send("/scenario fail-network", "r-1")
    response = chat.cancel(result.message_id)
    assert response.status_code == 200
    body = response.json()
    assert body["state"] == "failed" and body["error"]["code"] == "network"


# -- time limit ----------------------------------------------------------------


def test_time_limit_fails_a_hung_answer_with_timeout(live_server_factory, chat_factory):
    server = live_server_factory(MESSAGE_TIME_LIMIT_SECONDS=1)
    counting = _count(server)
    chat = chat_factory(server)

    result = chat.send("/scenario hang", "r-hang")

    assert result.status == 200
    assert_sound_events(result)
    assert result.kinds[0] == "message.started"
    assert result.kinds[-1] == "message.failed"
    failed = result.payloads[-1]
    assert failed["error"]["code"] == "timeout"
    assert failed["error"]["retryable"] is True
    assert failed["error"]["message"]
    assert failed["incomplete"] is True
    assert result.text  # the part that arrived before the hang
    assert failed["length"] == len(result.text)
    # The hung backend was woken by the time limit and ended.
    assert wait_until(lambda: counting.closed == 1, timeout=2.0)
    state = _state(chat, result.message_id)
    assert state["state"] == "failed" and state["error"] == failed["error"]
    assert chat.history().json()["messages"] == []


# -- history -------------------------------------------------------------------


def test_history_keeps_completed_turns_only(live_server, chat_factory):
    """Failed and cancelled turns are absent from GET history and from the backend's history.

    The choice for a cancelled turn: a cancel is the user's "never mind", so
    the exchange is dropped everywhere exactly like a failed one (it stays
    in the store, so a retry of its request_id replays the cancellation). A
    completed turn is kept in both, with its exact text.
    """
    counting = _count(live_server)
    chat = chat_factory(live_server)

    done = chat.send("/echo kept answer", "r-done")
    assert done.kinds[-1] == "message.completed"
    failed = chat.send("/scenario fail-provider", "r-failed")
    assert failed.kinds[-1] == "message.failed"
    cancelled, response = _send_and_cancel_after_first_delta(chat, "/scenario slow", "r-cancelled")
    assert response.json()["state"] == "cancelled" and cancelled.kinds[-1] == "message.cancelled"

    history = chat.history().json()
    assert history["conversation_id"] == chat.conversation_id
    assert [(m["role"], m["text"], m["state"]) for m in history["messages"]] == [
        ("user", "/echo kept answer", "completed"),
        ("assistant", "kept answer", "completed"),
    ]
    assert history["messages"][1]["message_id"] == done.message_id

    nxt = chat.send("/echo next", "r-next")
    assert nxt.text == "next"
    assert counting.turns[-1].history == [("user", "/echo kept answer"), ("assistant", "kept answer")]
    assert [m["text"] for m in chat.history().json()["messages"]] == [
        "/echo kept answer",
        "kept answer",
        "/echo next",
        "next",
    ]
    # The dropped turns are still in the store: retrying their request ids replays their endings.
    assert chat.send("/scenario fail-provider", "r-failed").payloads == failed.payloads
    assert chat.send("/scenario slow", "r-cancelled").kinds[-1] == "message.cancelled"
    assert counting.calls == 4


def test_running_answer_is_listed_with_its_state(live_server, chat_factory):
    chat = chat_factory(live_server)
    first = chat.send("/scenario slow", "r-slow", max_events=2)
    messages = chat.history().json()["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant"]
    assert messages[1]["message_id"] == first.message_id
    assert messages[1]["state"] == "running"
    assert SLOW_ANSWER.startswith(messages[1]["text"])
    chat.cancel(first.message_id)
    assert chat.history().json()["messages"] == []


@pytest.mark.parametrize("path", ["", "/events", "/cancel"])
def test_message_endpoints_refuse_a_message_of_another_conversation(live_server, chat_factory, path):
    owner = chat_factory(live_server)
    stranger = chat_factory(live_server)
    mid = owner.send("/echo mine", "r-1").message_id
    method = "POST" if path == "/cancel" else "GET"
    response = stranger.http.request(method, f"{stranger.messages_url()}/{mid}{path}", headers=stranger.auth)
    assert_json_error(response, 404, "not_found")
    assert json.loads(owner.history().content)["messages"][1]["state"] == "completed"
