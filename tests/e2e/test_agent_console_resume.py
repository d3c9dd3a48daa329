"""Opening a conversation in the console reads its stream after the transcript, not from the
start (docs/agents.md, "Opening a conversation"), in real Chromium against a real server
(Firefox ESR opens and resumes a conversation in test_agent_console.py; docs/testing.md,
"Firefox ESR's share"): a conversation with many earlier events opens with each message once and no
earlier event asked for again, and messages written while it opens all arrive, once each, in
order. tests/test_api_agents_resume.py holds the server's side on both stores.
"""

from __future__ import annotations

import threading

import pytest
from playwright.sync_api import Page, Route, expect

from .test_agent_console import Console, Visitor, claim, signed_in, start_handoff_server, waiting_visitor

pytestmark = [
    pytest.mark.e2e,
    # Firefox ESR's share (docs/testing.md)
    pytest.mark.chromium_only(
        reason="how the console opens a long conversation is its requests to the server; Firefox opens, resumes and streams one in test_agent_console.py"
    ),
]


@pytest.fixture
def handoff_server(chat_server_factory, tmp_path):
    return start_handoff_server(chat_server_factory, tmp_path)


def agent_replies(page: Page, conversation_id: str, texts: list[str]) -> None:
    """The signed-in agent's replies, one after another, through the console's own API (the
    session cookie and the page's CSRF token), as the reply box sends them."""
    statuses = page.evaluate(
        """async ([cid, texts]) => {
            const config = JSON.parse(document.getElementById('agent-config').textContent);
            const statuses = [];
            for (const text of texts) {
                const response = await fetch(`/agent/api/conversations/${cid}/messages`, {
                    method: 'POST',
                    headers: {'Content-Type': 'application/json', 'X-CSRF-Token': config.csrfToken},
                    body: JSON.stringify({request_id: crypto.randomUUID(), text}),
                });
                statuses.push(response.status);
            }
            return statuses;
        }""",
        [conversation_id, texts],
    )
    assert statuses == [201] * len(texts)


def count_transcript_additions(page: Page) -> None:
    """From now on, window.__transcriptAdded counts the items ever added to the transcript
    (a replayed message removed and drawn again would count twice)."""
    page.evaluate(
        """() => {
            window.__transcriptAdded = 0;
            new MutationObserver((records) => {
                for (const record of records) window.__transcriptAdded += record.addedNodes.length;
            }).observe(document.querySelector('[data-agent-transcript]'), {childList: true});
        }"""
    )


def stream_requests(page: Page, conversation_id: str) -> list[str | None]:
    """The Last-Event-ID of each request for the conversation's stream, in order."""
    found: list[str | None] = []
    page.on(
        "request",
        lambda request: (
            found.append(request.headers.get("last-event-id"))
            if request.url.endswith(f"/conversations/{conversation_id}/events")
            else None
        ),
    )
    return found


def reopen(console: Console, visitor: Visitor):
    """Reload the console (as an agent coming back to it) and open the held conversation with
    its Open button; the detail's JSON."""
    page = console.page
    page.reload()
    console.wait_ready()
    count_transcript_additions(page)
    detail_url = f"/agent/api/conversations/{visitor.conversation_id}"
    with page.expect_response(lambda response: response.url.endswith(detail_url)) as detail:
        console.mine.get_by_role("button", name="Open").click()
    return detail.value.json()


def test_a_long_conversation_opens_without_replaying_its_events(handoff_server, context):
    console = signed_in(context, handoff_server, "ana")
    visitor = waiting_visitor(handoff_server, console)
    before_claim = [f"Visitor line {n}" for n in range(25)]
    for text in before_claim:
        visitor.say(text)
    claim(console, visitor)
    replies = [f"Agent line {n}" for n in range(10)]
    agent_replies(console.page, visitor.conversation_id, replies)
    after_claim = [f"Visitor again {n}" for n in range(15)]
    for text in after_claim:
        visitor.say(text)
    expected = before_claim + replies + after_claim
    expect(console.transcript).to_have_count(len(expected))

    requests = stream_requests(console.page, visitor.conversation_id)
    detail = reopen(console, visitor)
    assert detail["last_seq"] >= len(expected)  # every message an event, and the queue/claim ones
    expect(console.transcript).to_have_count(len(expected))
    expect(console.root).to_have_attribute("data-conversation-state", "assigned")
    visitor.say("After opening.")
    expect(console.transcript.last).to_contain_text("After opening.")
    # The stream was opened after the transcript's last event, not from the start.
    assert requests[0] == f"{visitor.conversation_id}:{detail['last_seq']}", requests
    texts = console.transcript.locator(".transcript__text").all_text_contents()
    assert texts == [*expected, "After opening."]
    # Each item drawn once: the transcript's, then the one new message; nothing redrawn.
    assert console.page.evaluate("() => window.__transcriptAdded") == len(expected) + 1
    console.wait_said("Visitor: After opening.")
    said = console.said("polite")
    assert said.count("Visitor: After opening.") == 1, said
    assert not [text for text in said if text.startswith("Visitor: Visitor")], said
    console.assert_accessible()


def test_messages_written_while_the_conversation_opens_all_arrive_once_in_order(handoff_server, context):
    console = signed_in(context, handoff_server, "ana")
    visitor = waiting_visitor(handoff_server, console)
    claim(console, visitor)
    written: list[str] = []
    lock = threading.Lock()

    def say(text: str) -> None:
        with lock:  # one writer at a time, so `written` is in the server's order
            visitor.say(text)
            written.append(text)

    for n in range(5):
        say(f"Earlier {n}")
    expect(console.transcript).to_have_count(5)
    page = console.page
    # The window that matters, made certain: messages written after the detail was read and
    # before its stream is asked for (the first stream request waits while they are written).
    # Meanwhile another writer never pauses, so others land anywhere in the opening.
    held = []

    def write_then_stream(route: Route) -> None:
        if not held:
            held.append(route.request.url)
            for n in range(3):
                say(f"Between read and stream {n}")
        route.continue_()

    page.route(f"**/agent/api/conversations/{visitor.conversation_id}/events", write_then_stream)
    start = threading.Event()

    def keep_writing() -> None:
        start.wait()
        for n in range(20):
            say(f"While opening {n}")

    writer = threading.Thread(target=keep_writing)
    writer.start()
    start.set()
    reopen(console, visitor)
    # Route handlers run only while this thread is inside a Playwright call: wait (through one)
    # until the held stream request has been let through, or "The last one." below could be
    # written before the three messages the handler writes, and not be the last.
    expect(console.transcript.filter(has_text="Between read and stream 2")).to_have_count(1)
    writer.join()
    say("The last one.")
    expect(console.transcript.last).to_contain_text("The last one.")
    assert held, "the stream was never asked for"
    texts = console.transcript.locator(".transcript__text").all_text_contents()
    assert texts == written, texts
    assert len(set(texts)) == len(texts) == 5 + 3 + 20 + 1
    console.assert_accessible()
