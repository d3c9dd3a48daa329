"""Shared test helpers: a live server on loopback and a real SSE client.

Nothing here mocks what users touch: the server is the real Flask app on a
real socket, and streams are read by a real HTTP client (httpx) through the
project's standard event-stream parser.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from flask import Flask, render_template_string
from werkzeug.serving import make_server

from widget_server import create_app, init_app
from widget_server.backends.demo import load_seed_answers as load_seed_answers  # the copy the package ships
from widget_server.services import SERVICES_KEY
from widget_server.sse import EventStreamParser, ServerSentEvent
from widget_server.testing import SHUTDOWN_POLL_SECONDS

# One TLS context for every test's HTTP client. Without one, each `httpx.Client()` (and each
# `httpx.get()`, which makes a client) builds its own and loads the CA bundle into it, which
# OpenSSL 3 does slowly (https://github.com/python/cpython/issues/95031): the larger part of
# what a short API test cost (docs/performance.md, "The test suite"). It is the context httpx
# would have made (`httpx.create_ssl_context()`: verifying, the same CA bundle); the suite's
# servers are plain HTTP on loopback, so it verifies nothing today, and would as httpx does.
TLS = httpx.create_ssl_context()


def http_client(**options: Any) -> httpx.Client:
    """`httpx.Client(**options)` with the suite's one TLS context."""
    return httpx.Client(verify=TLS, **options)


# For one-off requests, in place of httpx's module functions (`HTTP.get(url)` for
# `httpx.get(url)`): a client that keeps no connection between requests, as they keep none.
HTTP = http_client(limits=httpx.Limits(max_keepalive_connections=0))

REPO_ROOT = Path(__file__).resolve().parent.parent


def site_app() -> Flask:
    """A site's own small Flask app, for the chat to be mounted in (widget_server/mount.py):
    a page of its own and a 404 page of its own, which the chat must leave alone."""
    site = Flask("site")

    @site.get("/")
    def home() -> str:
        return "<!doctype html><title>The site</title><p>The site's own home page.</p>"

    @site.get("/help")
    def help_page() -> str:
        # The loader as a site's template names it (mount.py `chat_loader_url`), announcing at
        # the panel's 100 ms floor as the e2e `embed` fixture does.
        return render_template_string(
            '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Help</title></head>'
            "<body><main><h1>Help</h1><p>Ask us anything.</p></main>"
            '<script src="{{ chat_loader_url() }}" defer data-announce-interval="100"></script></body></html>'
        )

    @site.errorhandler(404)
    def not_found(_error: Exception) -> tuple[str, int]:
        return "The site's own 404 page.", 404

    return site


class LiveServer:
    """The real app served by Werkzeug's threaded server on a free loopback port; with
    `url_prefix`, mounted at that path inside a site's own Flask app (`init_app`), and `url`
    is the chat's base under it."""

    def __init__(self, config: dict[str, Any] | None = None, url_prefix: str = "") -> None:
        served: Flask
        if url_prefix:
            served = site_app()
            self.app = init_app(served, url_prefix, environ={}, **(config or {})).app
        else:
            served = self.app = create_app(config or {}, environ={})
        self.service = self.app.extensions[SERVICES_KEY].chat
        self._server = make_server("127.0.0.1", 0, served, threaded=True)
        self.port = self._server.server_port
        self.origin = f"http://127.0.0.1:{self.port}"
        self.url = self.origin + url_prefix
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": SHUTDOWN_POLL_SECONDS}, daemon=True
        )

    def start(self) -> LiveServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


class CountingBackend:
    """Wraps a backend and counts how many generations it was asked for."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.calls = 0
        self.closed = 0
        self._lock = threading.Lock()

    def stream(self, turn, cancel):
        with self._lock:
            self.calls += 1
        self.turns = [*getattr(self, "turns", []), turn]
        try:
            yield from self.inner.stream(turn, cancel)
        finally:
            with self._lock:
                self.closed += 1


@dataclass
class StreamResult:
    status: int
    headers: dict[str, str]
    events: list[ServerSentEvent] = field(default_factory=list)
    raw: bytes = b""
    json: Any = None

    @property
    def kinds(self) -> list[str]:
        return [e.event for e in self.events]

    @property
    def payloads(self) -> list[dict]:
        return [json.loads(e.data) for e in self.events]

    @property
    def text(self) -> str:
        """The answer as a client rebuilds it: snapshots replace, deltas append."""
        text = ""
        for event, data in zip(self.events, self.payloads, strict=True):
            if event.event == "message.snapshot":
                text = data["text"]
            elif event.event == "text.delta":
                text += data["text"]
        return text

    @property
    def message_id(self) -> str:
        return self.payloads[0]["message_id"]


class ChatClient:
    """A thin real HTTP client for the v1 API."""

    def __init__(self, base_url: str, timeout: float = 30.0) -> None:
        self.base_url = base_url
        self.http = http_client(base_url=base_url, timeout=timeout)
        self.conversation_id = ""
        self.token = ""

    def close(self) -> None:
        self.http.close()

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def new_conversation(self) -> ChatClient:
        response = self.http.post("/api/v1/conversations")
        response.raise_for_status()
        body = response.json()
        self.conversation_id, self.token = body["conversation_id"], body["token"]
        return self

    def messages_url(self) -> str:
        return f"/api/v1/conversations/{self.conversation_id}/messages"

    def events_url(self, message_id: str) -> str:
        return f"{self.messages_url()}/{message_id}/events"

    def stream(self, method: str, url: str, *, max_events: int | None = None, **kwargs: Any) -> StreamResult:
        """Read a stream through the standard parser; stop after `max_events` (a dropped connection)."""
        headers = {**self.auth, **kwargs.pop("headers", {})}
        with self.http.stream(method, url, headers=headers, **kwargs) as response:
            result = StreamResult(response.status_code, dict(response.headers))
            if not response.headers.get("content-type", "").startswith("text/event-stream"):
                result.raw = response.read()
                result.json = json.loads(result.raw) if result.raw else None
                return result
            parser = EventStreamParser(result.events.append)
            for chunk in response.iter_raw():
                result.raw += chunk
                parser.feed(chunk)
                if max_events is not None and len(result.events) >= max_events:
                    del result.events[max_events:]
                    return result  # leaving the block closes the connection mid-stream
            parser.end()
            return result

    def send(self, text: str, request_id: str, **kwargs: Any) -> StreamResult:
        return self.stream("POST", self.messages_url(), json={"request_id": request_id, "text": text}, **kwargs)

    def resume(self, message_id: str, last_event_id: str | None, **kwargs: Any) -> StreamResult:
        headers = {"Last-Event-ID": last_event_id} if last_event_id else {}
        return self.stream("GET", self.events_url(message_id), headers=headers, **kwargs)

    def cancel(self, message_id: str) -> httpx.Response:
        return self.http.post(f"{self.messages_url()}/{message_id}/cancel", headers=self.auth)

    def history(self) -> httpx.Response:
        return self.http.get(f"/api/v1/conversations/{self.conversation_id}", headers=self.auth)


def iter_stream_events(raw_chunks: Iterator[bytes]) -> list[ServerSentEvent]:
    events: list[ServerSentEvent] = []
    parser = EventStreamParser(events.append)
    for chunk in raw_chunks:
        parser.feed(chunk)
    parser.end()
    return events


# -- added for the tests/test_api_*.py integration suite ---------------------


def assert_sound_events(
    result: StreamResult, message_id: str | None = None, *, allow_snapshots: bool = False
) -> list[int]:
    """Every event's SSE id is "<mid>:<seq>" and matches its data; seqs rise by exactly 1.

    Returns the seqs. The first seq is whatever the stream started at (1 for
    a fresh stream, k+1 or a snapshot's seq for a resumed one). With
    `allow_snapshots` (a small LOG_MAX_EVENTS), a reader that falls behind
    may get a `message.snapshot` mid-stream: its seq may jump ahead (it
    stands in for evicted events), but never back.
    """
    assert result.events, "the stream carried no events"
    message_id = message_id or result.message_id
    seqs: list[int] = []
    for event, data in zip(result.events, result.payloads, strict=True):
        assert data["message_id"] == message_id, (event, data)
        assert isinstance(data["seq"], int), data
        assert event.id == f"{message_id}:{data['seq']}", (event.id, data)
        if seqs:
            if allow_snapshots and event.event == "message.snapshot":
                assert data["seq"] > seqs[-1], f"snapshot goes back: {seqs[-1]} then {data['seq']}"
            else:
                assert data["seq"] == seqs[-1] + 1, (
                    f"seqs not contiguous: {seqs[-1]} then {data['seq']} ({event.event})"
                )
        seqs.append(data["seq"])
    if not allow_snapshots:
        assert "message.snapshot" not in result.kinds[1:], result.kinds
    return seqs


def assert_digest(completed: dict, text: str) -> None:
    """message.completed's length, utf8_bytes and sha256 describe exactly `text`."""
    import hashlib

    encoded = text.encode("utf-8")
    assert completed["length"] == len(text)
    assert completed["utf8_bytes"] == len(encoded)
    assert completed["sha256"] == hashlib.sha256(encoded).hexdigest()


def wait_until(predicate, timeout: float = 5.0, interval: float = 0.005) -> bool:
    """Poll `predicate` until it is true (returns True) or `timeout` s pass (returns False)."""
    import time

    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)


def assert_json_error(response: httpx.Response, status: int, code: str | None = None) -> dict:
    """A JSON error body {"error": {"code", "message"}} with `status`, never HTML."""
    assert response.status_code == status, (response.status_code, response.text)
    assert response.headers.get("content-type", "").startswith("application/json"), response.headers
    assert "<html" not in response.text.lower() and "traceback" not in response.text.lower()
    body = response.json()
    assert set(body) == {"error"}, body
    error = body["error"]
    assert isinstance(error.get("code"), str) and error["code"], body
    assert isinstance(error.get("message"), str) and error["message"], body
    if code is not None:
        assert error["code"] == code, body
    return body


def assert_completed(result: StreamResult) -> StreamResult:
    """A stream that answered 200 and completed, its events well formed and its digest right."""
    assert result.status == 200, result.json
    assert_sound_events(result)
    assert result.kinds[0] == "message.started" and result.kinds[-1] == "message.completed", result.kinds
    assert_digest(result.payloads[-1], result.text)
    return result


def message_state(chat: ChatClient, message_id: str) -> str:
    """The message's state as `GET …/messages/{id}` reports it."""
    response = chat.http.get(f"{chat.messages_url()}/{message_id}", headers=chat.auth)
    assert response.status_code == 200, response.text
    return str(response.json()["state"])


_PANEL_CONFIG = re.compile(r'<script type="application/json" id="chat-config">(.*?)</script>', re.S)


def panel_config_of(html: str) -> dict[str, Any]:
    """The configuration a panel page hands its modules (#chat-config, widget_server/web.py)."""
    found = _PANEL_CONFIG.search(html)
    assert found, "the panel page carries its configuration"
    config: dict[str, Any] = json.loads(found.group(1))
    return config


def run_pytest(
    *arguments: str, cwd: Path, environment: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """The installed pytest in a process of its own, as the suite runs it, outside this run's
    xdist worker (no PYTEST_ variables passed on); no cache written."""
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *arguments],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={
            **{key: value for key, value in os.environ.items() if not key.startswith("PYTEST_")},
            **(environment or {}),
        },
    )
