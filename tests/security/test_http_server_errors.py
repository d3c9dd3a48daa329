"""What gunicorn refuses before the app runs is JSON too (docs/protocol.md, "HTTP errors";
docs/security.md, "Request bounds"): a request line over `limit_request_line` (414
`uri_too_long`), headers over `limit_request_field_size` or `limit_request_fields` (431
`header_too_large`), a request gunicorn cannot parse (400 `bad_request`). gunicorn itself
answers them with an HTML page; `widget_server/server_errors.py` turns that into the app's
JSON error, for `widget-server` and `widget_server.gunicorn_conf` alike (one worker class).
Raw sockets on loopback against one real `widget-server`: the bytes on the wire are the point.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from unittest.mock import Mock

import pytest
from gunicorn.config import Config

from widget_server.gevent_worker import GeventWorker

from ..conftest import TEST_CONFIG
from ..helpers import HTTP
from ..processes import ServerProcess

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("processes")]


@pytest.fixture(scope="module")
def server() -> Iterator[ServerProcess]:
    process = ServerProcess(TEST_CONFIG).start()
    try:
        yield process
    finally:
        process.stop()


def _exchange(url: str, request: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send `request` whole, read until the server closes: (status, headers, body)."""
    host, port = url.removeprefix("http://").split(":")
    received = b""
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(request)
        while True:
            try:
                data = sock.recv(65536)
            except ConnectionResetError:  # a reset after the answer counts as closed
                break
            if not data:
                break
            received += data
    return _parse(received)


def _parse(received: bytes) -> tuple[int, dict[str, str], bytes]:
    head, _, body = received.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {name.lower(): value.strip() for name, _, value in (line.partition(":") for line in lines)}
    return int(status_line.split(" ", 2)[1]), headers, body


def _get(target: str, headers: str = "") -> bytes:
    return f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\n{headers}\r\n".encode()


# gunicorn's defaults, which neither serving.py nor gunicorn_conf.py changes: a request line
# of at most 4094 bytes, at most 100 header fields of at most 8190 bytes each.
REFUSED = {
    "a 5,000-character path": (_get("/" + "a" * 5000), 414, "uri_too_long", ["4094 bytes"]),
    "a 10 KB Authorization header": (
        _get("/healthz", "Authorization: Bearer " + "t" * 10_240 + "\r\n"),
        431,
        "header_too_large",
        ["100 fields", "8190 bytes"],
    ),
    "150 header fields": (
        _get("/healthz", "".join(f"X-Field-{index}: {index}\r\n" for index in range(150))),
        431,
        "header_too_large",
        ["100 fields", "8190 bytes"],
    ),
    "a garbage request line": (b"GARBAGE\r\n\r\n", 400, "bad_request", ["HTTP/1.1"]),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_gunicorns_refusals_are_json_errors_with_a_stable_code(server, case):
    request, status, code, limits_named = REFUSED[case]
    got_status, headers, body = _exchange(server.url, request)
    assert got_status == status, (got_status, headers, body[:200])
    assert headers.get("content-type") == "application/json", headers
    error = json.loads(body)
    assert set(error) == {"error"} and set(error["error"]) == {"code", "message"}, error
    assert error["error"]["code"] == code
    for limit in limits_named:
        assert limit in error["error"]["message"], error
    assert int(headers["content-length"]) == len(body)
    assert headers.get("cache-control") == "no-store"
    assert headers.get("connection") == "close"


def test_the_refusals_carry_the_headers_the_apps_json_errors_carry(server):
    app_error = HTTP.get(server.url + "/no-such-page")
    assert app_error.status_code == 404 and app_error.json()["error"]["code"] == "not_found"
    _status, headers, _body = _exchange(server.url, REFUSED["a 5,000-character path"][0])
    for name in ("content-type", "cache-control", "x-content-type-options", "referrer-policy"):
        assert headers.get(name) == app_error.headers[name], name


def test_a_transfer_coding_gunicorn_does_not_implement_is_a_json_http_error(server):
    # RFC 9112, section 6.1: gunicorn answers 501 for a coding it does not know (br); it is none
    # of the codes above, so it gets the fallback code docs/protocol.md gives other statuses.
    request = "POST /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: br, chunked\r\n\r\n0\r\n\r\n"
    status, headers, body = _exchange(server.url, request.encode())
    assert status == 501 and headers.get("content-type") == "application/json", (status, body[:200])
    assert json.loads(body)["error"]["code"] == "http_error"


def test_the_server_still_answers_after_the_refusals(server):
    workers = server.worker_pids()
    for request, *_ in REFUSED.values():
        _exchange(server.url, request)
    assert HTTP.get(server.url + "/healthz").status_code == 200
    created = HTTP.post(server.url + "/api/v1/conversations")
    assert created.status_code in (200, 201) and "conversation_id" in created.json()
    # The worker that refused them is the one answering: none was restarted.
    assert server.worker_pids() == workers


def test_a_500_gunicorn_answers_is_the_apps_internal_error_and_gunicorn_still_logs_it():
    # gunicorn answers 500 when the application raises before its response began (its
    # `Worker.handle_error`, for anything but a client's error); no server can be made to do
    # that on purpose, so the worker's method is called on a socket pair.
    worker = object.__new__(GeventWorker)
    worker.cfg, worker.log = Config(), Mock()
    ours, theirs = socket.socketpair()
    with ours, theirs:
        worker.handle_error(None, ours, ("127.0.0.1", 40000), RuntimeError("the app failed"))
        ours.shutdown(socket.SHUT_WR)
        status, headers, body = _parse(theirs.recv(65536))
    assert status == 500 and headers["content-type"] == "application/json"
    assert json.loads(body) == {
        "error": {"code": "internal", "message": "Something went wrong on our side. Nothing was saved; try again."}
    }
    worker.log.exception.assert_called_once_with("Error handling request (no URI read)")
