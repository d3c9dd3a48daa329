"""The agent console at /agent (docs/agents.md), driven in real Chromium and
Firefox ESR against a real server: an agents file written by the accounts module, the visitor's
side through the visitor API over HTTP (httpx), the agent's in the browser by keyboard where a
person would use it. docs/accessibility.md "The agent console" (A46–A52) has its contract lines
in test_accessibility_contract_agent.py; this file covers the flows at length.
"""

from __future__ import annotations

import json
import re
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, Route, expect

from widget_server.agents.accounts import AgentAccounts
from widget_server.services import SERVICES_KEY
from widget_server.testing import ChatWidget

from ..helpers import HTTP

pytestmark = pytest.mark.e2e

# Firefox ESR's share (docs/testing.md): the cases marked chromium_only run in Chromium alone.
CONSOLE_FIREFOX = "in Firefox the console's sign-in, queue, claim, reply, end and notifications are its contract lines in test_accessibility_contract_agent.py (A46-A52), and its stream's resume, a granted notification and 320 px run in this module; what this case adds is the server's or the same console code's"

PASSWORD = "correct horse battery"


def console_url(server) -> str:
    """The console's origin: `localhost`, not 127.0.0.1. The session cookie is `__Host-` and so
    `Secure`; both browsers accept a Secure cookie over plain http only from localhost (a
    potentially trustworthy origin)."""
    return server.url.replace("127.0.0.1", "localhost")


def start_handoff_server(chat_server_factory, folder, **config: Any):
    """A chat server with hand-off on (and `config`), and an agents file with two agents (Ana
    and Bo) in `folder`, written by the accounts module as `widget-server agents add` writes it."""
    path = folder / "agents.json"
    accounts = AgentAccounts(str(path))
    accounts.add("ana", "Ana", PASSWORD)
    accounts.add("bo", "Bo", PASSWORD)
    return chat_server_factory(AGENTS_FILE=str(path), **config)


@pytest.fixture
def handoff_server(chat_server_factory, tmp_path):
    return start_handoff_server(chat_server_factory, tmp_path)


class Console:
    """The console page as an agent uses it."""

    # The sign-in form's names, in the console's language (a subclass names another's).
    SIGN_IN_LABEL, NAME_LABEL, PASSWORD_LABEL = "Sign in", "Name", "Password"

    def __init__(self, page: Page, base: str) -> None:
        self.page = page
        self.base = base
        self.root = page.locator("[data-agent-console]")
        self.queue = page.locator("[data-agent-queue] > li")
        self.mine = page.locator("[data-agent-mine] > li")
        self.transcript = page.locator("[data-agent-transcript] > li")
        self.reply = page.get_by_role("textbox", name="Reply", exact=True)
        self.status = page.locator("[data-agent-status]")
        self.alert = page.locator("[data-agent-alert]")

    def sign_in(self, name: str, password: str = PASSWORD) -> None:
        """By keyboard only: Tab to each field, type, Enter."""
        page = self.page
        page.goto(self.base + "/agent")
        expect(page.get_by_role("button", name=self.SIGN_IN_LABEL, exact=True)).to_be_visible()
        page.keyboard.press("Tab")
        expect(page.get_by_label(self.NAME_LABEL, exact=True)).to_be_focused()
        page.keyboard.type(name)
        page.keyboard.press("Tab")
        expect(page.get_by_label(self.PASSWORD_LABEL, exact=True)).to_be_focused()
        page.keyboard.type(password)
        page.keyboard.press("Enter")

    def wait_ready(self) -> None:
        self.page.locator("[data-agent-console][data-ready='true']").wait_for()

    def said(self, politeness: str | None = None) -> list[str]:
        """What the live regions said, in order (the widget's recorder, installed on the
        context by tests/e2e/conftest.py, hears the console's regions too)."""
        log = self.page.evaluate("() => window.__chatwidgetLog || []")
        return [entry["text"] for entry in log if politeness is None or entry["politeness"] == politeness]

    def wait_said(self, text: str, timeout: float = 10_000) -> None:
        self.page.wait_for_function(
            "(text) => (window.__chatwidgetLog || []).some((entry) => entry.text === text)", arg=text, timeout=timeout
        )

    def entry(self, conversation_id: str):
        return self.page.locator(f"[data-agent-queue] > li[data-conversation-id='{conversation_id}']")

    def assert_accessible(self) -> None:
        # The console is a top-level page: ChatWidget's axe runner scans every frame, this one.
        ChatWidget(self.page).assert_accessible()


def signed_in(context: BrowserContext, server, name: str) -> Console:
    console = Console(context.new_page(), console_url(server))
    console.sign_in(name)
    console.wait_ready()
    return console


@dataclass
class Visitor:
    """A visitor through the visitor API (docs/protocol.md): the widget's requests, over HTTP."""

    base: str
    conversation_id: str
    token: str

    @classmethod
    def start(cls, server) -> Visitor:
        response = HTTP.post(server.url + "/api/v1/conversations")
        response.raise_for_status()
        body = response.json()
        return cls(server.url, body["conversation_id"], body["token"])

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    @property
    def url(self) -> str:
        return f"{self.base}/api/v1/conversations/{self.conversation_id}"

    def ask_for_a_person(self) -> dict[str, Any]:
        response = HTTP.post(self.url + "/handoff", json={"request_id": uuid.uuid4().hex}, headers=self.headers)
        response.raise_for_status()
        return response.json()

    def say(self, text: str) -> dict[str, Any]:
        response = HTTP.post(
            self.url + "/handoff/messages", json={"request_id": uuid.uuid4().hex, "text": text}, headers=self.headers
        )
        response.raise_for_status()
        return response.json()

    def leave_message(self, text: str, email: str | None = None) -> dict[str, Any]:
        body = {"request_id": uuid.uuid4().hex, "text": text, **({"email": email} if email else {})}
        response = HTTP.post(self.url + "/handoff/left-messages", json=body, headers=self.headers)
        response.raise_for_status()
        return response.json()

    def history(self) -> list[dict[str, Any]]:
        response = HTTP.get(self.url, headers=self.headers)
        response.raise_for_status()
        messages: list[dict[str, Any]] = response.json()["messages"]
        return messages


def waiting_visitor(server, console: Console) -> Visitor:
    """A visitor who asked for a person while `console`'s agent is present, seen in its queue."""
    visitor = Visitor.start(server)
    assert visitor.ask_for_a_person()["state"] == "queued"
    expect(console.entry(visitor.conversation_id)).to_be_visible()
    return visitor


@contextmanager
def queue_as_last_polled(page: Page) -> Iterator[None]:
    """While the block runs, the console's queue stays as its last poll left it: its next polls
    are held in the browser's network (never reach the server) and go on when the block ends.

    Two agents pressing Claim within one poll (3 s, static/agent/console.js) is what the lost-claim
    cases show; waiting for a poll and racing the next one failed under load (a loaded machine
    takes longer than a poll between the two presses, and the entry is gone before the second)."""
    held: list[Route] = []

    def hold(route: Route) -> None:
        held.append(route)

    page.route("**/agent/api/queue", hold)
    try:
        yield
    finally:
        if not page.is_closed():
            # Before unroute, which would settle the held routes itself.
            for route in held:
                route.continue_()
            page.unroute("**/agent/api/queue", hold)


def claim(console: Console, visitor: Visitor) -> None:
    console.entry(visitor.conversation_id).get_by_role("button", name=re.compile("^Claim")).click()
    expect(console.root).to_have_attribute("data-conversation-state", "assigned")


# -- signing in ------------------------------------------------------------------------------


@pytest.mark.chromium_only(reason=CONSOLE_FIREFOX)
def test_sign_in_by_keyboard_shows_the_console(handoff_server, context):
    console = signed_in(context, handoff_server, "ana")
    page = console.page
    expect(page.get_by_role("heading", level=1, name="Agent console")).to_be_visible()
    expect(page.locator("[data-agent-who]")).to_have_text("Signed in as Ana")
    for name in ("Queue", "Your conversations", "Conversation", "Inbox"):
        expect(page.get_by_role("heading", level=2, name=name, exact=True)).to_be_visible()
    expect(page.get_by_text("Nobody is waiting.")).to_be_visible()


@pytest.mark.chromium_only(reason=CONSOLE_FIREFOX)
def test_a_wrong_password_is_said_in_words_and_focused(handoff_server, page):
    console = Console(page, console_url(handoff_server))
    console.sign_in("ana", "not the password")
    summary = page.locator("[data-error-summary]")
    expect(summary).to_be_focused()
    expect(summary).to_have_attribute("role", "alert")
    expect(summary).to_contain_text("That name and password do not match an agent account.")
    assert page.title().startswith("Error:")
    # Never which of the two was wrong: both fields point at the same sentence.
    for label in ("Name", "Password"):
        expect(page.get_by_label(label, exact=True)).to_have_attribute("aria-invalid", "true")
    expect(page.get_by_label("Name", exact=True)).to_have_value("ana")
    expect(page.get_by_label("Password", exact=True)).to_have_value("")


@pytest.mark.chromium_only(reason=CONSOLE_FIREFOX)
def test_sign_out_ends_the_session(handoff_server, context):
    console = signed_in(context, handoff_server, "ana")
    console.page.get_by_role("button", name="Sign out").click()
    expect(console.page.get_by_role("button", name="Sign in")).to_be_visible()
    # The old session is gone on the server: the API refuses the browser's requests now.
    status = console.page.evaluate("async () => (await fetch('/agent/api/queue')).status")
    assert status == 401


# -- the queue, claiming and the conversation ----------------------------------------------------


@pytest.mark.chromium_only(reason=CONSOLE_FIREFOX)
def test_a_waiting_visitor_is_listed_said_once_and_claimed(handoff_server, context):
    console = signed_in(context, handoff_server, "ana")
    visitor = waiting_visitor(handoff_server, console)
    entry = console.entry(visitor.conversation_id)
    expect(entry).to_contain_text("1. Waiting less than a minute")
    expect(entry).to_contain_text("No message yet.")
    claim_button = entry.get_by_role("button", name="Claim conversation 1, waiting less than a minute")
    expect(claim_button).to_have_text("Claim")
    console.wait_said("A new visitor is waiting.")

    visitor.say("Is anyone there?")
    expect(entry).to_contain_text("Last message: Is anyone there?")
    console.wait_said("New message from a waiting visitor: Is anyone there?")
    # Several polls later, each was said once: news, never per poll.
    console.page.wait_for_timeout(3500)
    said = console.said("polite")
    assert said.count("A new visitor is waiting.") == 1, said
    assert said.count("New message from a waiting visitor: Is anyone there?") == 1, said

    claim_button.click()
    expect(console.root).to_have_attribute("data-conversation-state", "assigned")
    expect(console.page.locator("#conversation-heading")).to_be_focused()
    console.wait_said("Conversation claimed.")
    expect(console.queue).to_have_count(0)
    expect(console.mine).to_have_count(1)
    expect(console.transcript.last).to_contain_text("Is anyone there?")


@pytest.mark.chromium_only(reason=CONSOLE_FIREFOX)
def test_the_queue_lists_the_oldest_first(handoff_server, context):
    console = signed_in(context, handoff_server, "ana")
    first = waiting_visitor(handoff_server, console)
    second = waiting_visitor(handoff_server, console)
    ids = [console.queue.nth(i).get_attribute("data-conversation-id") for i in range(2)]
    assert ids == [first.conversation_id, second.conversation_id]
    expect(console.queue.nth(1).get_by_role("button")).to_have_accessible_name(
        "Claim conversation 2, waiting less than a minute"
    )


@pytest.mark.chromium_only(reason=CONSOLE_FIREFOX)
def test_a_second_agent_hears_already_taken(handoff_server, browser: Browser):
    ana_context = browser.new_context()
    bo_context = browser.new_context()
    for context in (ana_context, bo_context):
        ChatWidget.install_recorder(context)
    try:
        ana = signed_in(ana_context, handoff_server, "ana")
        bo = signed_in(bo_context, handoff_server, "bo")
        visitor = waiting_visitor(handoff_server, ana)
        expect(bo.entry(visitor.conversation_id)).to_be_visible()
        # Ana claims; Bo presses Claim on the entry he still sees, as two agents pressing
        # within one poll would.
        with queue_as_last_polled(bo.page):
            ana.page.bring_to_front()
            claim(ana, visitor)
            bo.page.bring_to_front()
            bo.entry(visitor.conversation_id).get_by_role("button", name=re.compile("^Claim")).click()
            expect(bo.page.locator("[data-agent-queue-note]")).to_have_text("Already taken by Ana.")
        bo.wait_said("Already taken by Ana.")
        assert "Already taken by Ana." in bo.said("assertive")
        expect(bo.entry(visitor.conversation_id)).to_have_count(0)
        expect(bo.page.locator("#queue-heading")).to_be_focused()
        expect(bo.root).not_to_have_attribute("data-conversation-state", "assigned")
        bo.assert_accessible()
    finally:
        ana_context.close()
        bo_context.close()


@pytest.mark.smoke
@pytest.mark.chromium_only(reason=CONSOLE_FIREFOX)
def test_replies_and_visitor_messages_are_exact_both_ways(handoff_server, context):
    console = signed_in(context, handoff_server, "ana")
    visitor = waiting_visitor(handoff_server, console)
    claim(console, visitor)
    # Shift+Enter adds a line, Enter sends; the text arrives exactly, checked by its SHA-256.
    reply = "Hello, I'm Ana — ¿en qué puedo ayudar? 👋\n<b>not bold</b> & **not markdown**"
    console.reply.click()
    first, second = reply.split("\n")
    console.reply.press_sequentially(first)
    console.reply.press("Shift+Enter")
    console.reply.press_sequentially(second)
    expect(console.reply).to_have_value(reply)
    console.reply.press("Enter")
    expect(console.reply).to_have_value("")
    mine = console.transcript.last
    expect(mine).to_have_attribute("data-verified", "true")
    expect(mine.locator(".transcript__who")).to_have_text("You")
    assert mine.locator(".transcript__text").text_content() == reply
    assert mine.locator("b").count() == 0  # text, never markup
    agent_messages = [m for m in visitor.history() if m["role"] == "agent"]
    assert [m["text"] for m in agent_messages] == [reply]

    visitor.say("I need a refund\nfor order 42.")
    theirs = console.transcript.filter(has_text="for order 42.")
    expect(theirs).to_have_attribute("data-verified", "true")
    expect(theirs.locator(".transcript__who")).to_have_text("Visitor")
    assert theirs.locator(".transcript__text").text_content() == "I need a refund\nfor order 42."
    console.wait_said("Visitor: I need a refund\nfor order 42.")
    # Once each, in the transcript and in the region.
    console.page.wait_for_timeout(1500)
    texts = console.transcript.locator(".transcript__text").all_text_contents()
    assert texts.count(reply) == 1
    assert texts.count("I need a refund\nfor order 42.") == 1
    assert console.said("polite").count("Visitor: I need a refund\nfor order 42.") == 1


@pytest.mark.chromium_only(reason=CONSOLE_FIREFOX)
def test_enter_pressed_while_a_reply_is_sending_is_sent_after_it(handoff_server, context):
    """An agent who sends again before the previous reply's POST has answered loses nothing:
    the second reply follows the first, in order, once each (the case CI caught: the stream
    confirmed a reply before its POST answered, and the next Enter was dropped)."""
    console = signed_in(context, handoff_server, "ana")
    visitor = waiting_visitor(handoff_server, console)
    claim(console, visitor)
    held = []

    def hold_the_first(route):
        if held:
            route.continue_()
        else:
            held.append(route)

    console.page.route(f"**/agent/api/conversations/{visitor.conversation_id}/messages", hold_the_first)
    console.reply.fill("First reply.")
    console.reply.press("Enter")
    # The route handler runs while the sync API waits; wait for it, bounded.
    for _ in range(200):
        if held:
            break
        console.page.wait_for_timeout(25)
    assert len(held) == 1, "the first reply's POST was not seen"
    console.reply.fill("Second reply.")
    console.reply.press("Enter")
    held[0].continue_()
    expect(console.transcript.filter(has_text="Second reply.")).to_have_attribute("data-verified", "true")
    expect(console.reply).to_have_value("")
    texts = console.transcript.locator(".transcript__text").all_text_contents()
    assert texts == ["First reply.", "Second reply."]
    assert [m["text"] for m in visitor.history() if m["role"] == "agent"] == ["First reply.", "Second reply."]


@pytest.mark.chromium_only(reason=CONSOLE_FIREFOX)
def test_end_returns_the_conversation_and_focus_to_the_queue(handoff_server, context):
    console = signed_in(context, handoff_server, "ana")
    visitor = waiting_visitor(handoff_server, console)
    claim(console, visitor)
    console.page.get_by_role("button", name="End", exact=True).click()
    expect(console.page.locator("#queue-heading")).to_be_focused()
    console.wait_said("Conversation ended.")
    # The ended conversation stays on screen, read-only, for the visitor's rating
    # (docs/agents.md, "Satisfaction"; tests/e2e/test_accessibility_contract_satisfaction.py).
    expect(console.page.get_by_text("This conversation is back with the assistant.")).to_be_visible()
    expect(console.reply).to_be_hidden()
    expect(console.mine).to_have_count(0)


@pytest.mark.chromium_only(reason=CONSOLE_FIREFOX)
def test_return_to_assistant(handoff_server, context):
    console = signed_in(context, handoff_server, "ana")
    visitor = waiting_visitor(handoff_server, console)
    claim(console, visitor)
    console.page.get_by_role("button", name="Return to assistant").click()
    console.wait_said("Conversation returned to the assistant.")
    expect(console.mine).to_have_count(0)


@pytest.mark.chromium_only(reason=CONSOLE_FIREFOX)
def test_the_visitor_leaving_is_said_and_closes_the_reply_box(handoff_server, context):
    console = signed_in(context, handoff_server, "ana")
    visitor = waiting_visitor(handoff_server, console)
    claim(console, visitor)
    console.reply.focus()
    HTTP.delete(visitor.url + "/handoff", headers=visitor.headers).raise_for_status()
    console.wait_said("The visitor left the conversation.")
    expect(console.reply).to_be_hidden()
    expect(console.page.locator("#conversation-heading")).to_be_focused()


# -- the inbox ---------------------------------------------------------------------------------


@pytest.mark.chromium_only(reason=CONSOLE_FIREFOX)
def test_a_left_message_is_in_the_inbox_and_answered(handoff_server, context):
    # Nobody is signed in yet: the visitor's request finds no agent and leaves a message.
    visitor = Visitor.start(handoff_server)
    assert visitor.ask_for_a_person()["state"] == "unavailable"
    visitor.leave_message("Please call me back about my order.", email="visitor@example.org")
    console = signed_in(context, handoff_server, "ana")
    item = console.page.locator("[data-agent-inbox] > li")
    expect(item).to_have_count(1)
    expect(item).to_contain_text("From visitor@example.org")
    expect(item).to_contain_text("Please call me back about my order.")
    reply_button = item.get_by_role("button", name="Reply to the message from visitor@example.org")
    reply_button.click()
    box = item.get_by_role("textbox", name="Your reply")
    expect(box).to_be_focused()
    box.press("Escape")
    expect(reply_button).to_be_focused()
    expect(box).to_be_hidden()
    reply_button.press("Enter")
    box.fill("We will call you today.")
    item.get_by_role("button", name="Send reply").click()
    console.wait_said("Reply sent.")
    expect(item).to_have_attribute("data-replied", "true")
    expect(item.get_by_text("Replied", exact=True)).to_be_visible()
    expect(reply_button).to_be_focused()
    assert [m["text"] for m in visitor.history() if m["role"] == "agent"] == ["We will call you today."]


# -- notifications -------------------------------------------------------------------------------


# The browser's side of a desktop notification, answered as the agent would answer its prompt.
# A headless browser cannot: Chromium refuses at once, Firefox ESR leaves the prompt open for
# ever. So the Notification API is replaced by one that records the permission requests and the
# notifications shown, and answers `answer`; what is tested is the console's side of it.
def browser_notifications(answer: str) -> str:
    return """
(() => {
  const answer = __ANSWER__;
  let permission = 'default';
  window.__permissionRequests = 0;
  window.__notifications = [];
  window.Notification = class {
    constructor(title, options = {}) {
      window.__notifications.push({ title, body: options.body });
    }
    static get permission() {
      return permission;
    }
    static requestPermission() {
      window.__permissionRequests += 1;
      permission = answer;
      return Promise.resolve(answer);
    }
  };
})();
""".replace("__ANSWER__", json.dumps(answer))


@pytest.mark.chromium_only(reason=CONSOLE_FIREFOX)
def test_sound_and_desktop_notifications_are_off_until_chosen(handoff_server, context):
    context.add_init_script(browser_notifications("denied"))
    console = signed_in(context, handoff_server, "ana")
    page = console.page
    sound = page.get_by_role("checkbox", name="Play a sound for a new visitor or message")
    desktop = page.get_by_role("checkbox", name="Show a desktop notification for a new visitor or message")
    expect(sound).not_to_be_checked()
    expect(desktop).not_to_be_checked()
    waiting_visitor(handoff_server, console)
    console.wait_said("A new visitor is waiting.")
    assert page.evaluate("window.__permissionRequests") == 0  # never asked unprompted
    assert page.evaluate("window.__notifications") == []
    sound.check()
    expect(sound).to_be_checked()
    desktop.click()
    page.wait_for_function("window.__permissionRequests === 1")
    # Refused: the box is unchecked again and the reason is said.
    expect(desktop).not_to_be_checked()
    console.wait_said(
        "Desktop notifications are blocked by the browser. Allow them in the site's settings to use them."
    )
    # The sound choice is kept for the next visit; nothing is asked for on a reload.
    page.reload()
    console.wait_ready()
    expect(sound).to_be_checked()
    expect(desktop).not_to_be_checked()
    assert page.evaluate("window.__permissionRequests") == 0


def test_a_granted_desktop_notification_tells_of_a_new_visitor(handoff_server, context):
    context.add_init_script(browser_notifications("granted"))
    console = signed_in(context, handoff_server, "ana")
    page = console.page
    desktop = page.get_by_role("checkbox", name="Show a desktop notification for a new visitor or message")
    desktop.click()
    page.wait_for_function("window.__permissionRequests === 1")
    expect(desktop).to_be_checked()
    waiting_visitor(handoff_server, console)
    console.wait_said("A new visitor is waiting.")
    page.wait_for_function("window.__notifications.length === 1")
    assert page.evaluate("window.__notifications") == [{"title": "Agent console", "body": "A new visitor is waiting."}]


# -- the conversation's stream ---------------------------------------------------------------------


def test_a_dropped_stream_resumes_from_its_last_event_without_duplicates(handoff_server, context):
    console = signed_in(context, handoff_server, "ana")
    visitor = waiting_visitor(handoff_server, console)
    streams: list[str | None] = []
    console.page.on(
        "request",
        lambda request: (
            streams.append(request.headers.get("last-event-id"))
            if request.url.endswith(f"/conversations/{visitor.conversation_id}/events")
            else None
        ),
    )
    # The hand-off's streams get a stop signal of their own (the chat's, which share the
    # app's `stopping`, go on), given before the stream opens: a stream reads its signal's
    # state through the signal it found when it began (widget_server/stream_loop.py).
    handoff = handoff_server.app.extensions[SERVICES_KEY].handoff
    app_stopping = handoff.stopping
    handoff.stopping = threading.Event()
    try:
        stream_drops_and_resumes(console, visitor, handoff.stopping, streams)
    finally:
        handoff.stopping = app_stopping


def stream_drops_and_resumes(console, visitor, stopping: threading.Event, streams: list[str | None]) -> None:
    claim(console, visitor)
    visitor.say("Before the drop.")
    expect(console.transcript.filter(has_text="Before the drop.")).to_have_count(1)
    # The stream's worker stops (as at SIGTERM: the stream ends without an ending, to be
    # resumed) and keeps refusing to stream while the visitor writes.
    stopping.set()
    console.page.wait_for_function(
        "() => performance.getEntriesByType('resource').filter((e) => e.name.endsWith('/events')).length >= 2"
    )
    visitor.say("During the drop.")
    stopping.clear()
    during = console.transcript.filter(has_text="During the drop.")
    # Each refused resume doubles the console's backoff, to 8 s ± 20 % (static/agent/api.js
    # maxBackoffMs, static/widget/follow.js): on loaded cores the drop lasts long enough to reach
    # it, and the next resume, the first after the worker is back, can come that late.
    expect(during).to_have_count(1, timeout=15_000)
    expect(during).to_have_attribute("data-verified", "true")
    console.wait_said("Visitor: During the drop.")
    # Each reconnection named the last event it had (`<conversation id>:<seq>`), so nothing
    # came twice: each message once in the transcript, and said once.
    resumed = streams[1:]
    assert resumed, streams
    assert all(header and header.startswith(visitor.conversation_id + ":") for header in resumed), streams
    console.page.wait_for_timeout(1500)
    texts = console.transcript.locator(".transcript__text").all_text_contents()
    assert texts.count("Before the drop.") == 1
    assert texts.count("During the drop.") == 1
    said = console.said("polite")
    assert said.count("Visitor: Before the drop.") == 1, said
    assert said.count("Visitor: During the drop.") == 1, said


# -- the session and the page ------------------------------------------------------------------


@pytest.mark.chromium_only(reason=CONSOLE_FIREFOX)
def test_a_session_ended_elsewhere_is_said_and_polling_stops(handoff_server, context):
    console = signed_in(context, handoff_server, "ana")
    other = context.new_page()  # the same browser: the same session cookie
    other.goto(console.base + "/agent")
    other.get_by_role("button", name="Sign out").click()
    expect(other.get_by_role("button", name="Sign in")).to_be_visible()
    console.page.bring_to_front()
    console.wait_said("Your session has ended. Sign in again to continue.")
    link = console.page.get_by_role("link", name="Sign in again")
    expect(link).to_have_attribute("href", "/agent")
    assert console.said("assertive").count("Your session has ended. Sign in again to continue.") == 1
    polls: list[str] = []
    console.page.on("request", lambda request: polls.append(request.url) if "/agent/api/" in request.url else None)
    console.page.wait_for_timeout(4000)  # more than a poll's interval: none is sent
    assert polls == []
    console.assert_accessible()


def test_the_console_reflows_at_320_px(handoff_server, context):
    console = signed_in(context, handoff_server, "ana")
    console.page.set_viewport_size({"width": 320, "height": 640})
    visitor = waiting_visitor(handoff_server, console)
    visitor.say("A long message without spaces: " + "x" * 80)
    claim(console, visitor)
    expect(console.transcript.filter(has_text="x" * 80)).to_have_count(1)
    assert console.page.evaluate("document.documentElement.scrollWidth") <= 320
    for name in ("Send", "End", "Return to assistant"):
        box = console.page.get_by_role("button", name=name, exact=True).bounding_box()
        assert box and box["width"] >= 44 and box["height"] >= 44, (name, box)
    console.assert_accessible()


# -- the console and the widget, two servers on one Redis ------------------------------------------

from .test_handoff_widget import (  # noqa: E402  (the widget's side, and its cluster fixture)
    CLUSTER_PASSWORD,
    HANDOFF,
    agent_texts,
    agent_turns,
    fmt,
    handoff_cluster,  # noqa: F401
    polite,
    talk_to_a_person,
)


@pytest.mark.chromium_only(reason=CONSOLE_FIREFOX)
@pytest.mark.slow
@pytest.mark.xdist_group("processes")
def test_the_console_and_the_widget_across_two_servers_on_redis(
    embed,
    handoff_cluster,  # noqa: F811 (the fixture imported above)
    browser: Browser,
    page: Page,
):
    """The issue's case with both UIs: the visitor in the embedded widget, the agent in the
    console, each request to either `widget-server` process behind the round-robin balancer;
    the visitor's stream dropped mid-conversation; axe in every state of both."""
    agent_context = browser.new_context()
    ChatWidget.install_recorder(agent_context)
    try:
        console = Console(agent_context.new_page(), console_url(handoff_cluster))
        console.sign_in("ana", CLUSTER_PASSWORD)
        console.wait_ready()
        console.assert_accessible()

        page.bring_to_front()
        widget = embed(handoff_cluster)
        widget.open()
        talk_to_a_person(widget)
        widget.wait_for_announcement(HANDOFF["queuedNext"])
        widget.assert_accessible()
        cid = widget.panel_frame().evaluate("() => chatPanel.client.conversationId")

        console.page.bring_to_front()
        entry = console.entry(cid)
        expect(entry).to_be_visible()
        console.wait_said("A new visitor is waiting.")
        console.assert_accessible()
        entry.get_by_role("button", name=re.compile("^Claim")).press("Enter")
        expect(console.root).to_have_attribute("data-conversation-state", "assigned")
        widget.wait_for_announcement(fmt(HANDOFF["assigned"], agent="Ana"))
        widget.assert_accessible()

        page.bring_to_front()
        widget.send("Hello from the visitor.")
        console.wait_said("Visitor: Hello from the visitor.")
        expect(console.transcript.filter(has_text="Hello from the visitor.")).to_have_attribute("data-verified", "true")

        replies = ["Hi, this is Ana.", "Let me look — one moment.", "Found it:\nyour parcel left today."]
        console.page.bring_to_front()
        console.reply.fill(replies[0])
        console.reply.press("Enter")
        expect(agent_turns(widget)).to_have_count(1)
        # The visitor's stream drops (as the stall timer drops a dead one); the agent writes on.
        widget.panel_frame().evaluate("() => chatPanel.handoff.controller.abort()")
        for reply in replies[1:]:
            console.reply.fill(reply)
            console.reply.press("Enter")
            expect(console.transcript.filter(has_text=reply.split("\n")[0])).to_have_attribute("data-verified", "true")
        expect(agent_turns(widget)).to_have_count(3)
        assert agent_texts(widget) == replies
        console.assert_accessible()

        console.page.get_by_role("button", name="End", exact=True).press("Enter")
        console.wait_said("Conversation ended.")
        ended = fmt(HANDOFF["ended"], agent="Ana")
        widget.wait_for_announcement(ended)
        widget.assert_accessible()
        console.assert_accessible()

        page.bring_to_front()
        widget.send("/echo The assistant again.")
        assert widget.wait_until_complete() == "completed"
        spoken = polite(widget)
        assert [spoken.count(fmt(HANDOFF["agentMessage"], agent="Ana", text=t)) for t in replies] == [1, 1, 1]
        assert console.said("polite").count("Visitor: Hello from the visitor.") == 1
        assert set(handoff_cluster.connections) == {0, 1}
    finally:
        agent_context.close()


@pytest.mark.chromium_only(reason=CONSOLE_FIREFOX)
def test_typing_is_sent_at_most_every_3_seconds(handoff_server, context):
    console = signed_in(context, handoff_server, "ana")
    visitor = waiting_visitor(handoff_server, console)
    typing: list[float] = []
    console.page.on(
        "request", lambda request: typing.append(time.monotonic()) if request.url.endswith("/typing") else None
    )
    claim(console, visitor)
    assert typing == []  # nothing typed yet
    console.reply.click()
    started = time.monotonic()
    while time.monotonic() - started < 4.0:  # a key every 0.2 s for 4 s: 20 keystrokes
        console.reply.press("a")
        console.page.wait_for_timeout(200)
    console.page.wait_for_timeout(500)
    assert len(typing) == 2, typing  # at 0 s and after 3 s, not per keystroke
    assert typing[1] - typing[0] >= 2.9
