"""Stream slots (docs/security.md, "Rate limits"): one client
address cannot hold more than MAX_STREAMS_PER_CLIENT of a worker's streams, and a
reader that disconnects frees its slot within about a second, not at the next
heartbeat. Live servers on the memory store and on Redis (the dev server, Werkzeug),
and `widget-server` (gunicorn + gevent)."""

from __future__ import annotations

import contextlib
import random
import time

import httpx
import pytest

from ..conftest import TEST_CONFIG
from ..helpers import HTTP, assert_json_error, http_client, wait_until
from ..processes import ServerProcess

HANG = "/scenario hang"  # starts, then waits for its time limit: a stream that stays open


@pytest.fixture(params=["memory", "redis"])
def store_kind(request) -> str:
    return request.param


def client_address() -> str:
    return f"10.{random.randrange(256)}.{random.randrange(256)}.{random.randrange(1, 255)}"


def new_conversation(http: httpx.Client) -> tuple[str, dict[str, str]]:
    body = http.post("/api/v1/conversations").json()
    return body["conversation_id"], {"Authorization": f"Bearer {body['token']}"}


def running_message(http: httpx.Client, conversation: str, auth: dict[str, str]) -> str:
    """The conversation's answer in progress: `accepted` until its run starts, then `running`."""
    found: list[str] = []

    def look() -> bool:
        history = http.get(f"/api/v1/conversations/{conversation}", headers=auth).json()["messages"]
        found[:] = [
            m["message_id"] for m in history if m["role"] == "assistant" and m["state"] in ("accepted", "running")
        ]
        return bool(found)

    assert wait_until(look, timeout=5), "no answer in progress"
    return found[-1]


@contextlib.contextmanager
def open_stream(http: httpx.Client, method: str, url: str, **kwargs):
    """A stream held open: its response, after its first bytes (the `retry:` line) arrived."""
    with http.stream(method, url, **kwargs) as response:
        if response.status_code == 200:
            chunks = response.iter_raw()  # kept while the stream is held: dropping it closes the connection
            assert next(chunks).startswith(b"retry:")
        yield response


def test_one_client_cannot_hold_more_than_max_streams_per_client(live_server_factory):
    server = live_server_factory(PROXY_HOPS=1, MAX_STREAMS=6, MAX_STREAMS_PER_CLIENT=3, MESSAGE_TIME_LIMIT_SECONDS=20)
    greedy = http_client(base_url=server.url, headers={"X-Forwarded-For": client_address()}, timeout=10)
    visitor = http_client(base_url=server.url, headers={"X-Forwarded-For": client_address()}, timeout=10)
    with contextlib.ExitStack() as held, greedy, visitor:
        conversation, auth = new_conversation(greedy)
        messages = f"/api/v1/conversations/{conversation}/messages"
        first = held.enter_context(
            open_stream(greedy, "POST", messages, json={"request_id": "r0", "text": HANG}, headers=auth)
        )
        assert first.status_code == 200
        message_id = running_message(greedy, conversation, auth)
        events = f"{messages}/{message_id}/events"
        for _ in range(2):
            assert held.enter_context(open_stream(greedy, "GET", events, headers=auth)).status_code == 200
        assert server.service.open_streams == 3
        refused = held.enter_context(open_stream(greedy, "GET", events, headers=auth))
        refused.read()
        body = assert_json_error(refused, 429, "too_many_streams")
        assert body["error"]["details"] == {"limit": "client"}
        assert refused.headers["Retry-After"] == "2"
        # A new conversation of the same address is refused too: the cap is per address.
        other, other_auth = new_conversation(greedy)
        again = greedy.post(
            f"/api/v1/conversations/{other}/messages", json={"request_id": "r0", "text": "/echo hi"}, headers=other_auth
        )
        assert_json_error(again, 429, "too_many_streams")
        # Another visitor still gets a stream: slots are left for everyone else.
        theirs, their_auth = new_conversation(visitor)
        reply = visitor.post(
            f"/api/v1/conversations/{theirs}/messages",
            json={"request_id": "r0", "text": "/echo hi"},
            headers=their_auth,
        )
        assert reply.status_code == 200 and "message.completed" in reply.text
        greedy.post(f"{messages}/{message_id}/cancel", headers=auth)


def _hold_and_drop(url: str, open_streams) -> float:
    """Open a stream on a hanging answer, disconnect, and return how long its slot stayed taken."""
    with http_client(base_url=url, timeout=10) as http:
        conversation, auth = new_conversation(http)
        messages = f"/api/v1/conversations/{conversation}/messages"
        with http.stream("POST", messages, json={"request_id": "r0", "text": HANG}, headers=auth) as response:
            assert response.status_code == 200
            # Read all the answer sends before it hangs, so the close is a plain FIN (unread
            # bytes would make it a reset, which the server's next write notices anyway).
            received = b""
            chunks = response.iter_raw()
            while b"event: text.delta" not in received:
                received += next(chunks)
            assert wait_until(lambda: open_streams() == 1, timeout=5)
            time.sleep(0.3)  # nothing more is on its way
        dropped = time.monotonic()  # leaving the block closed the connection
        freed = wait_until(lambda: open_streams() == 0, timeout=5, interval=0.05)
        held = time.monotonic() - dropped
        message_id = running_message(http, conversation, auth)
        http.post(f"{messages}/{message_id}/cancel", headers=auth)
        assert freed, f"the slot was still taken {held:.1f} s after the reader left"
        return held


def test_a_disconnected_reader_frees_its_stream_slot_within_about_a_second(live_server_factory):
    # The default heartbeat (15 s): before, the slot stayed taken until a heartbeat's write failed.
    server = live_server_factory(MESSAGE_TIME_LIMIT_SECONDS=30)
    held = _hold_and_drop(server.url, lambda: server.service.open_streams)
    assert held < 2.0, f"the slot stayed taken {held:.1f} s after the reader left"


def test_a_disconnected_reader_frees_its_stream_slot_within_about_a_second_under_widget_server(store_config):
    server = ServerProcess(
        {**TEST_CONFIG, **store_config, "MESSAGE_TIME_LIMIT_SECONDS": 30, "SHUTDOWN_GRACE_SECONDS": 1}
    ).start()
    try:
        held = _hold_and_drop(server.url, lambda: HTTP.get(server.url + "/healthz").json()["open_streams"])
    finally:
        server.stop()
    assert held < 2.0, f"the slot stayed taken {held:.1f} s after the reader left"
