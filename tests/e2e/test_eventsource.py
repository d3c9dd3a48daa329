"""A browser's own EventSource reads the resume stream and rebuilds the answer exactly.

Real Chromium and Firefox ESR, a real server on loopback. The question is
asked over HTTP from Python (as the widget would), then the page opens
`new EventSource(…/events?token=…)` on the same origin — EventSource cannot
set headers, so the token and the resume position travel in the query — and
rebuilds the text from the events (a snapshot replaces, a delta appends).
The text must equal the seed answer to the byte, and its SHA-256, computed
in the page with crypto.subtle over the UTF-8 bytes, must equal the one the
`message.completed` event announces.
"""

from __future__ import annotations

import hashlib

import pytest
from playwright.sync_api import Page

from ..helpers import ChatClient

pytestmark = pytest.mark.e2e

QUESTION = "which arpeggio fits Am F C G"

# Opens the EventSource, rebuilds the text (starting from the text the caller
# already applied), closes on the terminal event (an EventSource would
# otherwise reconnect when the server ends the response), hashes the result,
# and resolves with what it saw. The guard timer only bounds a hung stream.
READ_WITH_EVENTSOURCE = """
async ({url, initialText, guardMs}) => {
  const seen = await new Promise((resolve, reject) => {
    const started = performance.now();
    const source = new EventSource(url);
    const result = {text: initialText, events: [], errors: 0, openedAfterMs: null, completed: null};
    const guard = setTimeout(() => {
      source.close();
      reject(new Error("no terminal event after " + guardMs + " ms; saw " + JSON.stringify(result.events)));
    }, guardMs);
    const finish = () => { clearTimeout(guard); source.close(); resolve(result); };
    source.onopen = () => { result.openedAfterMs = performance.now() - started; };
    source.onerror = () => {
      result.errors += 1;
      if (source.readyState === EventSource.CLOSED) {
        clearTimeout(guard);
        reject(new Error("EventSource closed by an error; saw " + JSON.stringify(result.events)));
      }
    };
    const on = (type, apply) => source.addEventListener(type, (event) => {
      const data = JSON.parse(event.data);
      result.events.push({type, id: event.lastEventId, seq: data.seq, origin: event.origin, atMs: performance.now() - started});
      apply(data);
    });
    on("message.started", () => {});
    on("message.snapshot", (data) => { result.text = data.text; });
    on("text.delta", (data) => { result.text += data.text; });
    on("message.completed", (data) => { result.completed = data; finish(); });
    on("message.failed", () => finish());
    on("message.cancelled", () => finish());
  });
  const bytes = new TextEncoder().encode(seen.text);
  const digest = await crypto.subtle.digest("SHA-256", bytes);
  seen.sha256 = Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
  seen.utf8Bytes = bytes.length;
  return seen;
}
"""


PACE_SECONDS = 0.4


@pytest.fixture
def slow_server(live_server_factory):
    # A paced answer (5 chunks, one every PACE_SECONDS), so the browser opens
    # its EventSource while the answer is still being produced.
    return live_server_factory(DEMO_DELAY_SECONDS=PACE_SECONDS)


def _ask(server) -> tuple[ChatClient, str, list[dict]]:
    """POST the question, read only its first 2 events (then drop the connection)."""
    chat = ChatClient(server.url).new_conversation()
    first = chat.send(QUESTION, "eventsource-1", max_events=2)
    assert first.status == 200
    assert first.kinds == ["message.started", "text.delta"], first.kinds
    return chat, first.message_id, first.payloads


def _on_the_servers_origin(page: Page, server) -> None:
    """The page on the API's origin, loaded before the question is asked: the EventSource then
    opens right after Python's read, while most of the answer is still to come (loading the
    page in between took long enough, under load, that the rest came in one burst)."""
    page.goto(server.url + "/")


def _read_in_browser(
    page: Page, server, chat: ChatClient, message_id: str, last_event_id: str | None, initial_text: str = ""
) -> dict:
    url = f"{server.url}{chat.events_url(message_id)}?token={chat.token}"
    if last_event_id is not None:
        url += f"&last_event_id={last_event_id}"
    return page.evaluate(READ_WITH_EVENTSOURCE, {"url": url, "initialText": initial_text, "guardMs": 20_000})


def _assert_exact(seen: dict, answer: str, message_id: str, first_seq: int, server) -> None:
    """The rebuilt text is the answer exactly, and every digest agrees."""
    encoded = answer.encode("utf-8")
    completed = seen["completed"]
    assert completed is not None, seen["events"]
    assert seen["openedAfterMs"] is not None and seen["errors"] == 0
    # Every event is this message's, in order, none skipped or repeated, from our origin.
    seqs = [event["seq"] for event in seen["events"]]
    assert seqs == list(range(first_seq, first_seq + len(seqs))), seqs
    assert [event["id"] for event in seen["events"]] == [f"{message_id}:{seq}" for seq in seqs]
    assert {event["origin"] for event in seen["events"]} == {server.url}
    assert seen["events"][-1]["type"] == "message.completed"
    # Delivered progressively, as produced, not in one burst at the end
    # (a buffering or compressing layer would deliver them all at once).
    arrivals = [event["atMs"] for event in seen["events"]]
    assert arrivals[-1] - arrivals[0] >= 0.75 * PACE_SECONDS * 1000, arrivals
    assert seen["text"] == answer
    # The browser's SHA-256 of its UTF-8 bytes is the one the server announced.
    assert seen["utf8Bytes"] == len(encoded) == completed["utf8_bytes"]
    assert seen["sha256"] == completed["sha256"] == hashlib.sha256(encoded).hexdigest()
    assert completed["length"] == len(answer)


def test_eventsource_from_the_start_rebuilds_the_answer(page: Page, slow_server, seed_answers):
    seed = seed_answers["improvisation"]
    assert seed["question"] == QUESTION
    _on_the_servers_origin(page, slow_server)
    chat, message_id, _ = _ask(slow_server)
    try:
        seen = _read_in_browser(page, slow_server, chat, message_id, last_event_id=None)
    finally:
        chat.close()
    assert [event["type"] for event in seen["events"][:2]] == ["message.started", "text.delta"]
    _assert_exact(seen, seed["answer"], message_id, first_seq=1, server=slow_server)


def test_eventsource_resumes_after_the_events_python_read(page: Page, slow_server, seed_answers):
    seed = seed_answers["improvisation"]
    _on_the_servers_origin(page, slow_server)
    chat, message_id, first_payloads = _ask(slow_server)
    try:
        # Python applied events 1 (started) and 2 (the first delta); the
        # browser continues from there and must get exactly the rest.
        head = first_payloads[1]["text"]
        assert head and head != seed["answer"]
        seen = _read_in_browser(page, slow_server, chat, message_id, last_event_id=f"{message_id}:2", initial_text=head)
    finally:
        chat.close()
    assert seen["events"][0]["type"] == "text.delta"
    _assert_exact(seen, seed["answer"], message_id, first_seq=3, server=slow_server)
