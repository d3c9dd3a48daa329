"""A local OpenAI-compatible chat-completions server that speaks the real wire format.

It is not a mock of our HTTP client: it is a real HTTP/1.1 server on a
loopback socket, and it writes what the provider writes, byte for byte in
shape (OpenAI's "Streaming" and "Chat completion chunk object" reference):

    HTTP/1.1 200 OK
    Content-Type: text/event-stream; charset=utf-8
    Transfer-Encoding: chunked

    data: {"id":"chatcmpl-…","object":"chat.completion.chunk","created":…,"model":"…",
           "system_fingerprint":"fp_…","choices":[{"index":0,"delta":{"role":"assistant",
           "content":"","refusal":null},"logprobs":null,"finish_reason":null}]}

    data: {…,"choices":[{"index":0,"delta":{"content":"Hello"},"logprobs":null,"finish_reason":null}]}

    data: {…,"choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]}

    data: [DONE]

(one JSON object per `data:` line, each event ended by a blank line, each
written as its own HTTP chunk), and errors as a status code with
`{"error": {"message", "type", "param", "code"}}`.

A test scripts the reply to a given user message with `Reply`, and reads
what happened in `Exchange`: the request as received (path, headers, JSON
body), whether the last content chunk was sent, and whether and when the
client closed the connection (observed on the socket, not inferred).
"""

from __future__ import annotations

import json
import select
import socket
import struct
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """What the fake answers to one request."""

    content: list[str] = field(default_factory=lambda: ["Hello", ", world", "!"])
    finish_reason: str | None = "stop"
    done: bool = True  # send `data: [DONE]` after the final chunk
    status: int = 200
    error: dict | None = None  # the inner error object of a non-200 answer
    body: bytes | None = None  # a raw non-200 body instead of `error`
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = "text/event-stream; charset=utf-8"
    header_delay: float = 0.0  # before the status line
    first_token_delay: float = 0.0  # after the role chunk, before the first content
    delay: float = 0.0  # between content chunks
    gate: threading.Event | None = None  # waited for before the last content chunk
    disconnect_after: int | None = None  # drop the connection after this many content chunks
    disconnect_with_reset: bool = False  # drop it with a TCP RST rather than a FIN
    hang_after: int | None = None  # after this many content chunks, send nothing until the client leaves
    refusal: list[str] | None = None  # refusal pieces (delta.refusal) instead of content
    raw_events: list[bytes] = field(default_factory=list)  # sent as is after the content chunks
    # Deltas other than text (tool calls, annotations), each a chunk: before the first content
    # chunk, and after the last one.
    deltas_before: list[dict] = field(default_factory=list)
    deltas_after: list[dict] = field(default_factory=list)
    role_chunk: bool = True


@dataclass
class Exchange:
    """One request the fake received, and what happened to it."""

    path: str
    headers: dict[str, str]
    body: Any
    received_at: float
    sent_last: threading.Event = field(default_factory=threading.Event)
    client_closed: threading.Event = field(default_factory=threading.Event)
    client_closed_at: float | None = None

    def mark_closed(self) -> None:
        if self.client_closed_at is None:
            self.client_closed_at = time.monotonic()
        self.client_closed.set()


class ClientGone(Exception):
    pass


class FakeOpenAI:
    """Start with `FakeOpenAI().start()`; `url` is http://127.0.0.1:<port>."""

    MODEL = "gpt-4o-mini-2024-07-18"

    def __init__(self) -> None:
        self.replies: dict[str, Reply] = {}
        self.default = Reply()
        self.exchanges: list[Exchange] = []
        self.received = threading.Condition()
        fake = self

        class Handler(_Handler):
            server_fake = fake

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-openai", daemon=True
        )

    def start(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def reply(self, user_text: str, reply: Reply) -> Reply:
        """Answer `reply` when the request's last user message is `user_text`."""
        self.replies[user_text] = reply
        return reply

    def wait_for_requests(self, count: int, timeout: float = 5.0) -> Exchange:
        with self.received:
            if not self.received.wait_for(lambda: len(self.exchanges) >= count, timeout):
                raise AssertionError(f"the fake provider received {len(self.exchanges)} requests, expected {count}")
            return self.exchanges[count - 1]

    def _record(self, exchange: Exchange) -> None:
        with self.received:
            self.exchanges.append(exchange)
            self.received.notify_all()

    def choose(self, body: Any) -> Reply:
        try:
            user_text = [m for m in body["messages"] if m["role"] == "user"][-1]["content"]
            if isinstance(user_text, list):  # content parts (files): the first text part
                user_text = next((part["text"] for part in user_text if part.get("type") == "text"), "")
        except (KeyError, IndexError, TypeError):
            return self.default
        return self.replies.get(user_text, self.default)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_fake: FakeOpenAI

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    # -- observing the client -------------------------------------------------

    def _wait(self, seconds: float, exchange: Exchange, gate: threading.Event | None = None) -> None:
        """Sleep up to `seconds` (or until `gate` is set), watching the socket.

        The client sends nothing after its request, so the socket becoming
        readable means it closed (EOF) or reset the connection.
        """
        deadline = time.monotonic() + seconds
        while True:
            if gate is not None and gate.is_set():
                return
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            readable, _, _ = select.select([self.connection], [], [], min(remaining, 0.01))
            if readable:
                try:
                    data = self.connection.recv(1, socket.MSG_PEEK)
                except OSError:
                    data = b""
                if not data:
                    exchange.mark_closed()
                    raise ClientGone

    def _write(self, data: bytes, exchange: Exchange) -> None:
        try:
            self.wfile.write(data)
            self.wfile.flush()
        except OSError:
            exchange.mark_closed()
            raise ClientGone from None

    def _chunk(self, data: bytes, exchange: Exchange) -> None:
        self._write(b"%x\r\n%s\r\n" % (len(data), data), exchange)

    def _event(self, obj: Any, exchange: Exchange) -> None:
        payload = obj if isinstance(obj, str) else json.dumps(obj, separators=(",", ":"), ensure_ascii=False)
        self._chunk(f"data: {payload}\n\n".encode(), exchange)

    # -- answering ------------------------------------------------------------

    def do_POST(self) -> None:
        fake = self.server_fake
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        exchange = Exchange(self.path, {k.lower(): v for k, v in self.headers.items()}, body, time.monotonic())
        fake._record(exchange)
        reply = fake.choose(body)
        self.close_connection = True
        try:
            self._answer(reply, exchange, body)
            # Wait briefly to see the client hang up after the end.
            self._wait(2.0, exchange)
        except ClientGone:
            pass

    def _answer(self, reply: Reply, exchange: Exchange, body: Any) -> None:
        if reply.header_delay:
            self._wait(reply.header_delay, exchange)
        if self.path != "/v1/chat/completions":
            self._error(
                404,
                {
                    "message": f"Invalid URL (POST {self.path})",
                    "type": "invalid_request_error",
                    "param": None,
                    "code": None,
                },
                reply,
                exchange,
            )
            return
        if reply.status != 200:
            self._error(reply.status, reply.error, reply, exchange)
            return
        head = [
            "HTTP/1.1 200 OK",
            f"Content-Type: {reply.content_type}",
            "Transfer-Encoding: chunked",
            "Cache-Control: no-cache",
        ]
        head += [f"{k}: {v}" for k, v in reply.headers.items()]
        self._write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"), exchange)

        created = int(time.time())
        model = (body or {}).get("model", FakeOpenAI.MODEL) if isinstance(body, dict) else FakeOpenAI.MODEL

        def chunk(delta: dict, finish_reason: str | None = None) -> dict:
            return {
                "id": "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT",
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "system_fingerprint": "fp_44709d6fcb",
                "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
            }

        if reply.role_chunk:
            self._event(chunk({"role": "assistant", "content": "", "refusal": None}), exchange)
        if reply.first_token_delay:
            self._wait(reply.first_token_delay, exchange)
        for delta in reply.deltas_before:
            self._event(chunk(delta), exchange)
        pieces = reply.content
        for index, piece in enumerate(pieces):
            if reply.hang_after is not None and index == reply.hang_after:
                self._wait(3600, exchange)
            if reply.disconnect_after is not None and index == reply.disconnect_after:
                self._drop(reply)
                return
            if index and reply.delay:
                self._wait(reply.delay, exchange)
            if reply.gate is not None and index == len(pieces) - 1:
                self._wait(30, exchange, gate=reply.gate)
            self._event(chunk({"content": piece}), exchange)
        exchange.sent_last.set()
        if reply.hang_after is not None and reply.hang_after >= len(pieces):
            self._wait(3600, exchange)
        if reply.disconnect_after is not None and reply.disconnect_after >= len(pieces):
            self._drop(reply)
            return
        for piece in reply.refusal or []:
            self._event(chunk({"content": None, "refusal": piece}), exchange)
        for delta in reply.deltas_after:
            self._event(chunk(delta), exchange)
        for raw in reply.raw_events:
            self._chunk(raw, exchange)
        if reply.finish_reason is not None:
            self._event(chunk({}, reply.finish_reason), exchange)
        if reply.done:
            self._event("[DONE]", exchange)
        self._write(b"0\r\n\r\n", exchange)

    def _error(self, status: int, error: dict | None, reply: Reply, exchange: Exchange) -> None:
        if reply.body is not None:
            payload, content_type = reply.body, "text/plain; charset=utf-8"
        else:
            payload = json.dumps(
                {"error": error or {"message": "error", "type": "server_error", "param": None, "code": None}}
            ).encode()
            content_type = "application/json"
        head = [
            f"HTTP/1.1 {status} {self.responses.get(status, ('Error',))[0]}",
            f"Content-Type: {content_type}",
            f"Content-Length: {len(payload)}",
        ]
        head += [f"{k}: {v}" for k, v in reply.headers.items()]
        self._write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + payload, exchange)

    def _drop(self, reply: Reply) -> None:
        """End the connection in the middle of the chunked body."""
        if reply.disconnect_with_reset:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
        else:
            self.connection.shutdown(socket.SHUT_WR)
        raise ClientGone
