"""A half-open conversation stream in the agent console is noticed and resumed exactly, in real
Chromium and Firefox ESR against a real server (static/widget/follow.js; docs/protocol.md, "The
conversation event stream").

The console reaches the server through a TCP relay of this module's that can go silent: from
`silence()` on, the connection carrying the conversation's event stream passes nothing more from
the server to the browser, and both its ends stay open. The server goes on writing (events,
heartbeats), the browser hears no byte and no close — a peer or a middlebox gone without a FIN,
which no error ever reports. Only the stall timer notices it: no byte for the console config's
`stallTimeoutMs` (the panel's rule, three heartbeats and 5 s: widget_server/agents/api.py
`console()`, widget_server/web.py), then the read is aborted and resumed with `Last-Event-ID` from
the last event the browser received. A console without a stall timer waits on the silent
connection for ever, and the messages sent meanwhile never appear.

Firefox runs it too (docs/testing.md, "Firefox ESR's share"): a stream read aborted mid-body by a
timer, then fetched again, is the engine's path, which no contract line takes.
"""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from dataclasses import dataclass, field

import pytest
from playwright.sync_api import expect

from .test_agent_console import Console, claim, start_handoff_server, waiting_visitor

pytestmark = pytest.mark.e2e

# Heartbeats every half second: the stall timeout is 0.5 × 3 s + 5 s = 6.5 s (the console's config).
HEARTBEAT_SECONDS = 0.5
STALL_TIMEOUT_MS = int(HEARTBEAT_SECONDS * 3000) + 5000
# A short `retry:`, so the resume follows the stall soon (its backoff starts there).
RETRY_MS = 200

# The head of a request, as the browser writes it (HTTP/1.1 over plain http, one write per head).
REQUEST_LINE = re.compile(rb"^(?:GET|POST|PUT|DELETE|HEAD|OPTIONS|PATCH) (\S+) HTTP/1\.1\r\n")
LAST_EVENT_ID = re.compile(rb"^last-event-id: *(.*?)\r$", re.I | re.M)
EVENT_ID = re.compile(rb"^id: *(.*)$", re.M)


@dataclass
class Relayed:
    """One browser connection through the relay."""

    browser: socket.socket
    server: socket.socket
    stream: bool = False  # its latest request is a conversation's event stream
    silenced: bool = False
    delivered: bytearray = field(default_factory=bytearray)  # what the stream passed on
    delivered_at: float = 0.0  # time.monotonic() when it last passed something on


@dataclass
class StreamRequest:
    at: float  # time.monotonic()
    last_event_id: str | None


class SilencingRelay:
    """A TCP relay from a loopback port to the server, byte for byte, until `silence()`."""

    def __init__(self, server_port: int) -> None:
        self.server_port = server_port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.lock = threading.Lock()
        self.connections: list[Relayed] = []
        self.stream_requests: list[StreamRequest] = []
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.closed:
            try:
                browser, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", self.server_port))
            relayed = Relayed(browser, server)
            with self.lock:
                self.connections.append(relayed)
            threading.Thread(target=self._to_server, args=(relayed,), daemon=True).start()
            threading.Thread(target=self._to_browser, args=(relayed,), daemon=True).start()

    def _to_server(self, relayed: Relayed) -> None:
        while chunk := self._receive(relayed.browser):
            if line := REQUEST_LINE.match(chunk):
                relayed.stream = re.search(rb"/agent/api/conversations/[^/?]+/events", line[1]) is not None
                if relayed.stream:
                    found = LAST_EVENT_ID.search(chunk)
                    with self.lock:
                        self.stream_requests.append(
                            StreamRequest(time.monotonic(), found[1].decode() if found else None)
                        )
            if not self._send(relayed.server, chunk):
                break
        self._close(relayed)

    def _to_browser(self, relayed: Relayed) -> None:
        while chunk := self._receive(relayed.server):
            with self.lock:
                if relayed.silenced:
                    continue  # read, so the server is never held up, and dropped: silence
                if relayed.stream:
                    relayed.delivered += chunk
            if not self._send(relayed.browser, chunk):
                break
            relayed.delivered_at = time.monotonic()
        self._close(relayed)

    @staticmethod
    def _receive(sock: socket.socket) -> bytes:
        try:
            return sock.recv(65536)
        except OSError:
            return b""

    @staticmethod
    def _send(sock: socket.socket, chunk: bytes) -> bool:
        try:
            sock.sendall(chunk)
        except OSError:
            return False
        return True

    @staticmethod
    def _close(relayed: Relayed) -> None:
        for sock in (relayed.browser, relayed.server):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()

    def silence(self) -> list[Relayed]:
        """From now on, pass nothing more on the connections carrying an event stream."""
        with self.lock:
            streams = [relayed for relayed in self.connections if relayed.stream and relayed.browser.fileno() >= 0]
            for relayed in streams:
                relayed.silenced = True
        return streams

    def close(self) -> None:
        self.closed = True
        self.listener.close()
        with self.lock:
            connections = list(self.connections)
        for relayed in connections:
            self._close(relayed)


@pytest.fixture
def handoff_server(chat_server_factory, tmp_path):
    return start_handoff_server(chat_server_factory, tmp_path, HEARTBEAT_SECONDS=HEARTBEAT_SECONDS, RETRY_MS=RETRY_MS)


@pytest.fixture
def relay(handoff_server):
    relay = SilencingRelay(handoff_server.port)
    yield relay
    relay.close()


def count_transcript_additions(console: Console) -> None:
    """From now on, window.__transcriptAdded counts the items ever added to the transcript (a
    message drawn twice, or removed and drawn again, counts twice)."""
    console.page.evaluate(
        """() => {
            window.__transcriptAdded = 0;
            new MutationObserver((records) => {
                for (const record of records) window.__transcriptAdded += record.addedNodes.length;
            }).observe(document.querySelector('[data-agent-transcript]'), {childList: true});
        }"""
    )


def test_a_silent_stream_is_noticed_after_the_stall_timeout_and_resumed_exactly(handoff_server, relay, context):
    # The console through the relay: `localhost` (its __Host- cookie is Secure, which both
    # browsers accept over plain http from localhost only; test_agent_console.py console_url).
    console = Console(context.new_page(), f"http://localhost:{relay.port}")
    console.sign_in("ana")
    console.wait_ready()
    config = json.loads(console.page.locator("#agent-config").text_content() or "{}")
    assert config["stallTimeoutMs"] == STALL_TIMEOUT_MS  # the panel's rule, from the server's heartbeat
    visitor = waiting_visitor(handoff_server, console)
    claim(console, visitor)
    visitor.say("Before the silence.")
    expect(console.transcript.filter(has_text="Before the silence.")).to_have_count(1)
    count_transcript_additions(console)

    silenced = relay.silence()
    assert len(silenced) == 1, silenced  # the one stream the console follows
    delivered = bytes(silenced[0].delivered)
    # The last event the browser received before the silence: where the resume must start.
    last_id = EVENT_ID.findall(delivered)[-1].decode()
    assert last_id.startswith(f"{visitor.conversation_id}:"), last_id
    requests_before = len(relay.stream_requests)

    during = [f"During the silence {n}" for n in range(3)]
    for text in during:
        visitor.say(text)
    # The relay really holds them back: nothing of them reaches the console while it is silent.
    console.page.wait_for_timeout(1000)
    expect(console.transcript.filter(has_text="During the silence")).to_have_count(0)
    assert len(relay.stream_requests) == requests_before

    # Noticed and resumed: every message sent meanwhile appears, within the stall timeout and
    # the backoff (RETRY_MS, jittered) and some room for a loaded machine.
    expect(console.transcript.filter(has_text=during[-1])).to_have_count(1, timeout=STALL_TIMEOUT_MS + 10_000)
    resumed = relay.stream_requests[requests_before:]
    assert len(resumed) == 1, resumed
    # With Last-Event-ID from the last event received: nothing missed, nothing again.
    assert resumed[0].last_event_id == last_id, (resumed[0], last_id)
    # Not before the stall timeout since the last byte the browser got: the stall timer, not
    # some other drop, noticed it (a quarter second for timers' imprecision).
    quiet = resumed[0].at - silenced[0].delivered_at
    assert quiet >= STALL_TIMEOUT_MS / 1000 - 0.25, quiet

    visitor.say("After the resume.")
    expect(console.transcript.last).to_contain_text("After the resume.")
    texts = console.transcript.locator(".transcript__text").all_text_contents()
    assert texts == ["Before the silence.", *during, "After the resume."], texts
    # Each drawn once, in order; each said once.
    assert console.page.evaluate("() => window.__transcriptAdded") == len(during) + 1
    console.wait_said("Visitor: After the resume.")
    said = console.said("polite")
    for text in ["Before the silence.", *during, "After the resume."]:
        assert said.count(f"Visitor: {text}") == 1, (text, said)
    # The outage was said once, as any dropped stream's is (console.js, `connectionLost`).
    assert said.count("Connection to the conversation lost, reconnecting…") == 1, said
