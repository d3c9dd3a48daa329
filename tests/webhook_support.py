"""A real webhook receiver on loopback for the webhook tests (tests/test_api_webhooks.py,
tests/test_webhooks_*.py, bench/webhooks.py): a ThreadingHTTPServer that records every POST it
gets (headers and body) and answers with the statuses it is told, or hangs until released."""

from __future__ import annotations

import json
import re
import ssl
import threading
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

DOCS = Path(__file__).resolve().parents[1] / "docs" / "webhooks.md"
# At least 32 bytes (WEBHOOK_SECRET's minimum).
SECRET = "whsec-test-0123456789abcdef0123456789abcdef"


@dataclass(frozen=True)
class Received:
    headers: dict[str, str]
    body: bytes
    status: int  # what the receiver answered (0: it hung until released)

    @property
    def json(self) -> dict[str, Any]:
        parsed: dict[str, Any] = json.loads(self.body)
        return parsed


class Receiver:
    """`statuses`: the answers to give, in order (then 200). `hang()`: every request from now
    waits until `release()` (a receiver that is stuck)."""

    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        self.received: list[Received] = []
        self.statuses: deque[int] = deque()
        self._changed = threading.Condition()
        self._released = threading.Event()
        self._released.set()
        self.hanging = 0
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                headers = {name.lower(): value for name, value in self.headers.items()}
                if not receiver._released.is_set():
                    with receiver._changed:
                        receiver.hanging += 1
                        receiver._changed.notify_all()
                    receiver._released.wait()
                    receiver._record(Received(headers, body, 0))
                    return
                with receiver._changed:
                    status = receiver.statuses.popleft() if receiver.statuses else 200
                receiver._record(Received(headers, body, status))
                self.send_response(status)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args: Any) -> None:
                return None

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        if tls is not None:  # an https receiver, its certificate the test's own
            self._server.socket = tls.wrap_socket(self._server.socket, server_side=True)
        self.port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/hooks/chat"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def _record(self, received: Received) -> None:
        with self._changed:
            self.received.append(received)
            self._changed.notify_all()

    def start(self) -> Receiver:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.release()
        self._server.shutdown()
        self._server.server_close()

    def hang(self) -> None:
        self._released.clear()

    def release(self) -> None:
        self._released.set()

    def wait_for(self, condition: Any, timeout: float = 30.0) -> list[Received]:
        """Wait until `condition(received)` holds; the requests received so far."""
        with self._changed:
            if not self._changed.wait_for(lambda: condition(self.received), timeout):
                raise AssertionError(f"the receiver never saw that; it got {self.types()}")
            return list(self.received)

    def wait_hanging(self, count: int = 1, timeout: float = 30.0) -> None:
        with self._changed:
            assert self._changed.wait_for(lambda: self.hanging >= count, timeout), "no request reached the receiver"

    def delivered(self) -> list[Received]:
        """The requests it answered with a 2xx, in order."""
        with self._changed:
            return [item for item in self.received if 200 <= item.status < 300]

    def types(self) -> list[str]:
        return [item.json["type"] for item in list(self.received)]


def delivered_types(received: list[Received]) -> list[str]:
    return [item.json["type"] for item in received if 200 <= item.status < 300]


def docs_verifier() -> Any:
    """The receiver's `verify` function exactly as docs/webhooks.md writes it (its first Python
    block), executed: the documented snippet is what the tests verify signatures with."""
    found = re.search(r"```python\n(.*?)```", DOCS.read_text(encoding="utf-8"), re.DOTALL)
    assert found, "docs/webhooks.md has no Python block"
    namespace: dict[str, Any] = {}
    exec(compile(found.group(1), str(DOCS), "exec"), namespace)
    return namespace["verify"]


def webhook_config(receiver: Receiver, **more: Any) -> dict[str, Any]:
    return {"WEBHOOK_URLS": receiver.url, "WEBHOOK_SECRET": SECRET, "WEBHOOK_ALLOW_PRIVATE": True, **more}
