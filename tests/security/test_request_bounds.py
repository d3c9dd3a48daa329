"""Request bounds (docs/security.md, "Request bounds"): a body is refused above
MAX_BODY_BYTES whatever its framing, and cut when it trickles in for longer than
BODY_READ_TIMEOUT_SECONDS, under the dev server (werkzeug) and under `widget-server`
(gunicorn + gevent). Real sockets on loopback: the framing and the pace are the point."""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest

from ..conftest import TEST_CONFIG
from ..helpers import HTTP
from ..processes import ServerProcess

LIMIT = 4096  # MAX_BODY_BYTES in these tests


def _address(url: str) -> tuple[str, int]:
    host, port = url.removeprefix("http://").split(":")
    return host, int(port)


def _conversation(url: str) -> tuple[str, str]:
    body = HTTP.post(url + "/api/v1/conversations").json()
    return body["conversation_id"], body["token"]


def _head(cid: str, token: str, framing: str) -> bytes:
    return (
        f"POST /api/v1/conversations/{cid}/messages HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n{framing}\r\n\r\n"
    ).encode()


def _chunked(body: bytes, size: int = 1000) -> bytes:
    pieces = [body[i : i + size] for i in range(0, len(body), size)]
    return b"".join(b"%x\r\n%s\r\n" % (len(piece), piece) for piece in pieces) + b"0\r\n\r\n"


def _read_until_closed(sock: socket.socket, received: bytes = b"", *, complete: bool = False) -> bytes:
    """Append what the server sends until it closes (a reset counts as closed);
    with `complete`, stop as soon as a whole answer or a JSON error arrived."""
    while True:
        try:
            data = sock.recv(65536)
        except OSError:
            return received
        if not data:
            return received
        received += data
        if complete and (b"message.completed" in received or (b"\r\n\r\n" in received and b'"error"' in received)):
            return received


def _exchange(url: str, request: bytes, timeout: float = 20.0) -> bytes:
    """Send the whole request, read until the server closes or a response is complete."""
    with socket.create_connection(_address(url), timeout=timeout) as sock:
        sock.sendall(request)
        return _read_until_closed(sock, complete=True)


def _status_and_json(response: bytes) -> tuple[int, dict | None]:
    head, _, body = response.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    try:
        return status, json.loads(body)
    except ValueError:
        return status, None


def _oversized_message() -> bytes:
    # Valid JSON whatever the cut: whitespace pads it past the limit, so only the
    # framing-independent check can refuse it (a truncated read parses and is answered).
    return json.dumps({"request_id": "big-1", "text": "which arpeggio fits Am F C G"}).encode() + b" " * (2 * LIMIT)


def _assert_refused_whatever_the_framing(url: str) -> None:
    cid, token = _conversation(url)
    body = _oversized_message()
    for framing, payload in (
        ("Transfer-Encoding: chunked", _chunked(body)),
        (f"Content-Length: {len(body)}", body),
    ):
        status, error = _status_and_json(_exchange(url, _head(cid, token, framing) + payload))
        assert status == 413, (framing, status, error)
        assert error is not None and error["error"]["code"] == "body_too_large", (framing, error)
    # Nothing was answered: the conversation has no message.
    history = HTTP.get(f"{url}/api/v1/conversations/{cid}", headers={"Authorization": f"Bearer {token}"})
    assert history.json()["messages"] == []
    # A chunked body within the limit is still answered.
    small = json.dumps({"request_id": "small-1", "text": "which arpeggio fits Am F C G"}).encode()
    answer = _exchange(url, _head(cid, token, "Transfer-Encoding: chunked") + _chunked(small))
    assert answer.startswith(b"HTTP/1.1 200") and b"message.completed" in answer


def test_chunked_body_over_max_body_bytes_gets_413_like_content_length_on_the_dev_server(live_server_factory):
    server = live_server_factory(MAX_BODY_BYTES=LIMIT)
    _assert_refused_whatever_the_framing(server.url)


@pytest.mark.slow
@pytest.mark.xdist_group("processes")
def test_chunked_body_over_max_body_bytes_gets_413_like_content_length_under_widget_server():
    server = ServerProcess({**TEST_CONFIG, "MAX_BODY_BYTES": LIMIT}).start()
    try:
        _assert_refused_whatever_the_framing(server.url)
    finally:
        server.stop()


# -- bodies that trickle in -----------------------------------------------------------------

PACE = 0.5  # seconds between two bytes: a 60-byte body would take 30 s


def _trickle(url: str, cid: str, token: str, request_id: str, give_up: float) -> tuple[float, bytes]:
    """Send a small message's body one byte per PACE; stop when the server answers or
    closes, or after `give_up` seconds. (seconds taken, what the server sent)"""
    body = json.dumps({"request_id": request_id, "text": "which arpeggio fits Am F C G"}).encode()
    started = time.monotonic()
    received = b""
    with socket.create_connection(_address(url), timeout=give_up) as sock:
        sock.sendall(_head(cid, token, f"Content-Length: {len(body)}"))
        sock.settimeout(PACE)
        for byte in body:
            if time.monotonic() - started > give_up:
                break
            try:
                sock.sendall(bytes([byte]))
                data = sock.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                break  # reset or broken pipe: the server closed it
            if not data:
                break
            received += data
            break
        if received:
            # The answer has begun: the rest of it, until the server closes.
            sock.settimeout(5)
            received = _read_until_closed(sock, received)
    return time.monotonic() - started, received


def _assert_cut(taken: float, received: bytes, timeout: float) -> None:
    # Cut near the timeout (a wide margin for a loaded machine), far before the
    # 30 s the body would take: a 408 JSON error, or at least a closed connection.
    assert taken < timeout + 8, taken
    if received:
        status, error = _status_and_json(received)
        assert status == 408, received[:200]
        assert error is not None and error["error"]["code"] == "body_timeout"


def test_trickled_body_is_cut_with_408_after_the_body_read_timeout_on_the_dev_server(live_server_factory):
    server = live_server_factory(BODY_READ_TIMEOUT_SECONDS=1.0)
    cid, token = _conversation(server.url)
    taken, received = _trickle(server.url, cid, token, "slow-1", give_up=20)
    assert received, "the server neither answered nor closed the connection"
    _assert_cut(taken, received, 1.0)
    # Nothing was started, and the server goes on serving.
    chat = HTTP.get(f"{server.url}/api/v1/conversations/{cid}", headers={"Authorization": f"Bearer {token}"})
    assert chat.json()["messages"] == []


@pytest.mark.slow
@pytest.mark.xdist_group("processes")
def test_trickled_bodies_are_cut_and_free_every_connection_of_a_gevent_worker():
    # One worker accepting 10 connections, 12 bodies trickling in: before the timeout
    # nothing else gets in; after it, every trickler got its 408 and /healthz is served.
    server = ServerProcess({**TEST_CONFIG, "BODY_READ_TIMEOUT_SECONDS": 1.0, "WORKER_CONNECTIONS": 10}).start()
    try:
        cid, token = _conversation(server.url)
        results: dict[int, tuple[float, bytes]] = {}

        def trickle(index: int) -> None:
            results[index] = _trickle(server.url, cid, token, f"slow-{index}", give_up=25)

        threads = [threading.Thread(target=trickle, args=(index,)) for index in range(12)]
        for thread in threads:
            thread.start()
        time.sleep(0.3)
        health = HTTP.get(server.url + "/healthz", timeout=20)
        assert health.status_code == 200
        for thread in threads:
            thread.join(40)
        assert len(results) == 12
        for taken, received in results.values():
            assert received, "the server neither answered nor closed the connection"
            _assert_cut(taken, received, 1.0)
        assert HTTP.get(server.url + "/healthz", timeout=5).status_code == 200
    finally:
        server.stop()
