"""Errors: answer failures inside a stream, and refusals before any answer exists.

Every refusal is checked for its status AND its JSON body
{"error": {"code", "message"}} (never HTML, never a traceback), and bad
input is shown to change nothing.
"""

from __future__ import annotations

import json

import httpx
import pytest

from widget_server.errors import ErrorCode

from .conftest import TEST_CONFIG
from .helpers import HTTP, ChatClient, CountingBackend, LiveServer, assert_json_error, assert_sound_events, wait_until

LIMITS = {"MAX_BODY_BYTES": 4096, "MAX_TEXT_CHARS": 50}


@pytest.fixture(scope="module")
def server():
    """One server for the many read-only refusal cases (each case makes its own conversation)."""
    live = LiveServer({**TEST_CONFIG, **LIMITS}).start()
    yield live
    live.stop()


# -- answer failures -----------------------------------------------------------


@pytest.mark.parametrize("code", [code.value for code in ErrorCode])
def test_failure_scenarios_end_with_message_failed(server, chat_factory, code):
    chat = chat_factory(server)
    result = chat.send(f"/scenario fail-{code}", f"r-{code}")

    assert result.status == 200
    assert_sound_events(result)
    assert result.kinds[0] == "message.started"
    assert result.kinds[-1] == "message.failed"
    assert "message.completed" not in result.kinds
    failed = result.payloads[-1]
    error = failed["error"]
    assert error == {
        "code": code,
        "message": ErrorCode(code).user_message,
        "retryable": ErrorCode(code).retryable,
    }
    assert failed["incomplete"] is True
    assert result.text.startswith("This answer is about to fail. ")
    assert failed["length"] == len(result.text)
    # Internals reach the log only: not the event, not anywhere in the stream.
    raw = result.raw.decode("utf-8")
    for leak in ("RuntimeError", "Traceback", "demo scenario", "backend bug", 'File "'):
        assert leak not in raw
    state = chat.http.get(f"{chat.messages_url()}/{result.message_id}", headers=chat.auth).json()
    assert state == {"message_id": result.message_id, "state": "failed", "last_seq": failed["seq"], "error": error}
    assert chat.history().json()["messages"] == []


def test_failed_turn_is_not_given_to_the_backend(live_server, chat_factory):
    counting = CountingBackend(live_server.service.backend)
    live_server.service.backend = counting
    chat = chat_factory(live_server)
    chat.send("/scenario fail-internal", "r-1")
    chat.send("/echo after", "r-2")
    assert counting.turns[-1].history == []
    assert [m["text"] for m in chat.history().json()["messages"]] == ["/echo after", "after"]


def test_unexpected_server_error_is_json_without_traceback():
    """A 500 from any route is the generic JSON error; details go to the log only."""
    live = LiveServer(TEST_CONFIG)

    @live.app.get("/api/v1/boom")
    def boom():
        raise RuntimeError("secret internal detail")

    live.start()
    try:
        response = HTTP.get(f"{live.url}/api/v1/boom")
    finally:
        live.stop()
    body = assert_json_error(response, 500, "internal")
    assert "secret" not in response.text and "RuntimeError" not in response.text
    assert body["error"]["message"] == "Something went wrong on our side. Nothing was saved; try again."


# -- refusals of POST …/messages -----------------------------------------------

JSON = "application/json"


def _body(**fields) -> bytes:
    return json.dumps(fields).encode("utf-8")


BAD_POSTS = [
    # id, body bytes, content type, status, code
    ("malformed-json", b'{"request_id": "r1", "text": ', JSON, 400, "invalid_json"),
    ("empty-body", b"", JSON, 400, "invalid_json"),
    ("invalid-utf8", b'{"request_id": "r1", "text": "\xff\xfe"}', JSON, 400, "invalid_json"),
    ("deeply-nested", b"[" * 4000, JSON, 400, "invalid_json"),
    ("array", b'[{"request_id": "r1", "text": "hi"}]', JSON, 400, "invalid_body"),
    ("string", b'"hello"', JSON, 400, "invalid_body"),
    ("null", b"null", JSON, 400, "invalid_body"),
    ("text-plain", _body(request_id="r1", text="hi"), "text/plain", 415, "unsupported_media_type"),
    ("form", b"request_id=r1&text=hi", "application/x-www-form-urlencoded", 415, "unsupported_media_type"),
    ("no-content-type", _body(request_id="r1", text="hi"), None, 415, "unsupported_media_type"),
    ("missing-request-id", _body(text="hi"), JSON, 400, "missing_request_id"),
    ("empty-request-id", _body(request_id="", text="hi"), JSON, 400, "missing_request_id"),
    ("numeric-request-id", _body(request_id=7, text="hi"), JSON, 400, "missing_request_id"),
    ("missing-text", _body(request_id="r1"), JSON, 400, "missing_text"),
    ("null-text", _body(request_id="r1", text=None), JSON, 400, "missing_text"),
    ("list-text", _body(request_id="r1", text=["hi"]), JSON, 400, "missing_text"),
    ("request-id-space", _body(request_id="has space", text="hi"), JSON, 400, "invalid_request_id"),
    ("request-id-slash", _body(request_id="a/b", text="hi"), JSON, 400, "invalid_request_id"),
    ("request-id-leading-dash", _body(request_id="-r1", text="hi"), JSON, 400, "invalid_request_id"),
    ("request-id-non-ascii", _body(request_id="ré", text="hi"), JSON, 400, "invalid_request_id"),
    ("request-id-trailing-newline", _body(request_id="r1\n", text="hi"), JSON, 400, "invalid_request_id"),
    ("request-id-too-long", _body(request_id="r" * 129, text="hi"), JSON, 400, "invalid_request_id"),
    ("empty-text", _body(request_id="r1", text=""), JSON, 400, "empty_text"),
    ("whitespace-text", _body(request_id="r1", text=" \n\t "), JSON, 400, "empty_text"),
    ("text-too-long", _body(request_id="r1", text="x" * 51), JSON, 413, "text_too_long"),
    ("text-too-long-code-points", _body(request_id="r1", text="🎸" * 51), JSON, 413, "text_too_long"),
    ("body-too-large", _body(request_id="r1", text="x" * 5000), JSON, 413, "body_too_large"),
    ("unknown-field", _body(request_id="r1", text="hi", stream=True), JSON, 400, "unknown_field"),
]


def _post(chat: ChatClient, body: bytes, content_type: str | None, **headers: str) -> httpx.Response:
    sent = {**chat.auth, **headers}
    if content_type is not None:
        sent["Content-Type"] = content_type
    return chat.http.post(chat.messages_url(), content=body, headers=sent)


@pytest.mark.parametrize(
    ("body", "content_type", "status", "code"), [case[1:] for case in BAD_POSTS], ids=[case[0] for case in BAD_POSTS]
)
def test_bad_post_is_refused_with_a_json_error(server, chat_factory, body, content_type, status, code):
    chat = chat_factory(server)
    response = _post(chat, body, content_type)
    assert_json_error(response, status, code)
    assert response.headers["cache-control"] == "no-store"
    assert chat.history().json()["messages"] == []


def test_text_at_the_limit_is_accepted_counting_code_points(server, chat_factory):
    chat = chat_factory(server)
    text = "/echo " + "🎸" * (LIMITS["MAX_TEXT_CHARS"] - len("/echo "))
    result = chat.send(text, "r-limit")
    assert result.status == 200
    assert result.text == text.removeprefix("/echo ")


def test_lone_surrogate_in_text_is_replaced_not_a_500(server, chat_factory):
    chat = chat_factory(server)
    body = b'{"request_id": "r1", "text": "/echo a\\ud800b"}'
    result = chat.stream("POST", chat.messages_url(), content=body, headers={"Content-Type": JSON})
    assert result.status == 200
    assert result.text == "a\ufffdb"
    history = chat.history()
    assert history.status_code == 200
    assert [m["text"] for m in history.json()["messages"]] == ["/echo a\ufffdb", "a\ufffdb"]


def test_token_is_checked_before_the_body(server, chat_factory):
    chat = chat_factory(server)
    response = chat.http.post(
        chat.messages_url(), content=b"{", headers={"Authorization": "Bearer nope", "Content-Type": JSON}
    )
    assert_json_error(response, 404, "not_found")


# -- who may see a conversation ------------------------------------------------

ENDPOINTS = [
    ("GET", ""),
    ("POST", "/messages"),
    ("GET", "/messages/{mid}"),
    ("GET", "/messages/{mid}/events"),
    ("POST", "/messages/{mid}/cancel"),
]


@pytest.mark.parametrize(("method", "suffix"), ENDPOINTS, ids=[f"{m} {s or '/'}" for m, s in ENDPOINTS])
def test_unknown_conversation_wrong_token_and_missing_token_look_the_same(server, chat_factory, method, suffix):
    chat = chat_factory(server)
    mid = chat.send("/echo hi", "r-0").message_id
    path = suffix.format(mid=mid)
    kwargs = {"json": {"request_id": "r-1", "text": "hi"}} if suffix == "/messages" else {}
    base = "/api/v1/conversations"
    attempts = {
        "unknown": (f"{base}/c_AAAAAAAAAAAAAAAA{path}", chat.auth),
        "malformed": (f"{base}/not%20an%20id{path}", chat.auth),
        "wrong token": (f"{base}/{chat.conversation_id}{path}", {"Authorization": "Bearer wrong-token"}),
        "other scheme": (f"{base}/{chat.conversation_id}{path}", {"Authorization": f"Basic {chat.token}"}),
        "missing token": (f"{base}/{chat.conversation_id}{path}", {}),
    }
    bodies = {}
    for name, (url, headers) in attempts.items():
        response = chat.http.request(method, url, headers=headers, **kwargs)
        assert_json_error(response, 404, "not_found")
        bodies[name] = response.json()
    assert len({json.dumps(body, sort_keys=True) for body in bodies.values()}) == 1, bodies
    # Nothing happened to the real conversation.
    assert [m["text"] for m in chat.history().json()["messages"]] == ["/echo hi", "hi"]


@pytest.mark.parametrize(("method", "suffix"), [("GET", ""), ("GET", "/events"), ("POST", "/cancel")])
@pytest.mark.parametrize("message_id", ["m_AAAAAAAAAAAAAAAA", "m!bad", "m" * 65])
def test_unknown_message_is_404(server, chat_factory, method, suffix, message_id):
    chat = chat_factory(server)
    response = chat.http.request(method, f"{chat.messages_url()}/{message_id}{suffix}", headers=chat.auth)
    assert_json_error(response, 404, "not_found")


# -- resume positions ----------------------------------------------------------


@pytest.mark.parametrize("via", ["header", "query"])
def test_bad_resume_positions_are_400(server, chat_factory, via):
    chat = chat_factory(server)
    mine = chat.send("/scenario improvisation", "r-1")
    other = chat.send("/echo other", "r-2")
    mid = mine.message_id
    last_seq = mine.payloads[-1]["seq"]
    bad = [
        "garbage",
        mid,
        f"{mid}:",
        f"{mid}:-1",
        f"{mid}:01",
        f"{mid}:1:2",
        f"{mid}:1x",
        f":{last_seq}",
        f"{other.message_id}:1",  # an event of another message
        f"{mid}:{last_seq + 1}",  # ahead of the message
        f"{mid}:99999999999",
    ]
    for value in bad:
        if via == "header":
            response = chat.http.get(chat.events_url(mid), headers={**chat.auth, "Last-Event-ID": value})
        else:
            response = chat.http.get(chat.events_url(mid), headers=chat.auth, params={"last_event_id": value})
        assert_json_error(response, 400, "invalid_last_event_id")
    # The last position itself is fine (and yields nothing more).
    assert chat.resume(mid, f"{mid}:{last_seq}").events == []
    assert chat.resume(mid, f"{mid}:0").payloads == mine.payloads


def test_post_retry_with_last_event_id_of_another_message_is_400(server, chat_factory):
    chat = chat_factory(server)
    first = chat.send("/echo one", "r-1")
    other = chat.send("/echo two", "r-2")
    response = chat.http.post(
        chat.messages_url(),
        json={"request_id": "r-1", "text": "/echo one"},
        headers={**chat.auth, "Last-Event-ID": f"{other.message_id}:1"},
    )
    assert_json_error(response, 400, "invalid_last_event_id")
    assert chat.send("/echo one", "r-1").payloads == first.payloads
    assert wait_until(lambda: server.service.open_streams == 0)  # the refused POST released its slot


# -- routing -------------------------------------------------------------------


@pytest.mark.parametrize(
    "path", ["/nope", "/api/v1/nope", "/api/v1", "/api/v1/conversations/c_x/nope", "/api/v2/conversations"]
)
def test_unknown_path_is_json_404(server, path):
    response = HTTP.get(server.url + path)
    assert_json_error(response, 404, "not_found")


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("GET", "/api/v1/conversations", {"POST"}),
        ("PUT", "/api/v1/conversations/c_x", {"GET", "DELETE"}),  # DELETE: the conversation's deletion
        ("GET", "/api/v1/conversations/c_x/messages/m_x/feedback", {"PUT", "DELETE"}),
        ("GET", "/api/v1/conversations/c_x/messages", {"POST"}),
        ("PUT", "/api/v1/conversations/c_x/messages/m_x", {"GET"}),
        ("GET", "/api/v1/conversations/c_x/messages/m_x/cancel", {"POST"}),
        ("POST", "/api/v1/conversations/c_x/messages/m_x/events", {"GET"}),
    ],
)
def test_wrong_method_is_json_405_with_allow(server, method, path, allowed):
    response = HTTP.request(method, server.url + path)
    assert_json_error(response, 405, "method_not_allowed")
    assert allowed <= {m.strip() for m in response.headers["allow"].split(",")}


# -- capacity limits -----------------------------------------------------------


def _hold_stream(chat: ChatClient, text: str, request_id: str):
    """Open a POST stream and read until its first event, leaving it open. Returns (context, response)."""
    context = chat.http.stream(
        "POST", chat.messages_url(), json={"request_id": request_id, "text": text}, headers=chat.auth
    )
    response = context.__enter__()
    assert response.status_code == 200
    chunks = response.iter_raw()
    received = b""
    while b"message.started" not in received:
        received += next(chunks)
    # Keep the iterator alive with the context: if it were garbage collected,
    # httpx would close the connection and the server would free the slot.
    context.held_chunks = chunks
    return context, received


def test_too_many_streams_on_the_server_is_503(live_server_factory, chat_factory):
    server = live_server_factory(MAX_STREAMS=1)
    counting = CountingBackend(server.service.backend)
    server.service.backend = counting
    holder = chat_factory(server)
    other = chat_factory(server)
    context, received = _hold_stream(holder, "/scenario slow", "r-hold")
    mid = received.split(b"id: ", 1)[1].split(b":", 1)[0].decode()
    try:
        for response in (
            other.http.post(other.messages_url(), json={"request_id": "r-1", "text": "/echo hi"}, headers=other.auth),
            holder.http.get(holder.events_url(mid), headers=holder.auth),
        ):
            assert_json_error(response, 503, "server_busy")
            assert int(response.headers["retry-after"]) > 0
    finally:
        context.__exit__(None, None, None)
    # The refused POST claimed nothing: no answer, no backend run.
    assert other.history().json()["messages"] == []
    assert counting.calls == 1
    # Once the slot is free again, the same request works.
    holder.cancel(mid)
    assert wait_until(lambda: server.service.open_streams == 0)
    result = other.send("/echo hi", "r-1")
    assert result.status == 200 and result.text == "hi"


def test_too_many_streams_in_a_conversation_is_429(live_server_factory, chat_factory):
    server = live_server_factory(MAX_STREAMS_PER_CONVERSATION=1)
    chat = chat_factory(server)
    context, received = _hold_stream(chat, "/scenario slow", "r-hold")
    mid = received.split(b"id: ", 1)[1].split(b":", 1)[0].decode()
    try:
        for response in (
            chat.http.get(chat.events_url(mid), headers=chat.auth),
            chat.http.post(
                chat.messages_url(), json={"request_id": "r-hold", "text": "/scenario slow"}, headers=chat.auth
            ),
        ):
            assert_json_error(response, 429, "too_many_streams")
            assert int(response.headers["retry-after"]) > 0
        # Another conversation is not affected.
        elsewhere = chat_factory(server).send("/echo hi", "r-1")
        assert elsewhere.status == 200 and elsewhere.text == "hi"
    finally:
        context.__exit__(None, None, None)
    chat.cancel(mid)


def test_too_many_running_answers_is_429(live_server_factory, chat_factory):
    server = live_server_factory(MAX_RUNNING_PER_CONVERSATION=1)
    counting = CountingBackend(server.service.backend)
    server.service.backend = counting
    chat = chat_factory(server)
    running = chat.send("/scenario slow", "r-slow", max_events=2)
    before = chat.history().json()

    response = chat.http.post(chat.messages_url(), json={"request_id": "r-new", "text": "/echo hi"}, headers=chat.auth)

    assert_json_error(response, 429, "too_many_running")
    assert int(response.headers["retry-after"]) > 0
    assert chat.history().json() == before
    assert counting.calls == 1
    # A retry of the running request is a read, not a new answer: allowed.
    retry = chat.send("/scenario slow", "r-slow", max_events=2)
    assert retry.status == 200 and retry.message_id == running.message_id
    # When it ends, the new request goes through.
    assert chat.cancel(running.message_id).json()["state"] == "cancelled"
    result = chat.send("/echo hi", "r-new")
    assert result.status == 200 and result.text == "hi"
    assert counting.calls == 2


# -- bad input loses nothing ---------------------------------------------------


def test_bad_input_changes_nothing_and_a_good_request_still_works(live_server_factory, chat_factory):
    server = live_server_factory(**LIMITS)
    counting = CountingBackend(server.service.backend)
    server.service.backend = counting
    chat = chat_factory(server)
    first = chat.send("/echo first", "r-first")
    before = chat.history().json()
    assert len(before["messages"]) == 2

    for name, body, content_type, status, code in BAD_POSTS:
        response = _post(chat, body, content_type)
        assert response.status_code == status, name
        assert response.json()["error"]["code"] == code, name
    assert_json_error(
        chat.http.post(chat.messages_url(), json={"request_id": "r-first", "text": "/echo changed"}, headers=chat.auth),
        409,
    )
    assert_json_error(
        chat.http.get(chat.events_url(first.message_id), headers={**chat.auth, "Last-Event-ID": "junk"}), 400
    )
    assert_json_error(
        chat.http.post(
            chat.messages_url(), json={"request_id": "r-x", "text": "hi"}, headers={"Authorization": "Bearer no"}
        ),
        404,
    )

    assert chat.history().json() == before
    assert counting.calls == 1
    assert chat.resume(first.message_id, None).payloads == first.payloads
    result = chat.send("/echo second", "r-second")
    assert result.status == 200 and result.text == "second"
    assert [m["text"] for m in chat.history().json()["messages"]] == ["/echo first", "first", "/echo second", "second"]
    assert counting.calls == 2
