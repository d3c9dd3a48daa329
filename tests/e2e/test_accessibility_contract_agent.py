"""docs/accessibility.md, "The agent console", line by line: one test per contract id
(A46…A52).

The console at /agent against a real server (an agents file, the visitor API over HTTP), in
real Chromium and Firefox ESR, by keyboard where a person would use it, with axe in every new
state (tests/test_docs.py checks that no id is left without its test).
test_agent_console.py covers each flow at length.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect

from widget_server.services import SERVICES_KEY
from widget_server.testing import ChatWidget

from .test_agent_console import (
    Console,
    Visitor,
    browser_notifications,
    claim,
    console_url,
    queue_as_last_polled,
    signed_in,
    start_handoff_server,
    waiting_visitor,
)

pytestmark = pytest.mark.e2e


@pytest.fixture
def handoff_server(chat_server_factory, tmp_path):
    return start_handoff_server(chat_server_factory, tmp_path)


def test_A46_sign_in_by_keyboard_with_errors_said_in_words_and_focused(handoff_server, page: Page):
    console = Console(page, console_url(handoff_server))
    page.goto(console.base + "/agent")
    expect(page.get_by_role("textbox", name="Name", exact=True)).to_be_visible()
    expect(page.get_by_label("Password", exact=True)).to_have_attribute("type", "password")
    console.assert_accessible()
    console.sign_in("ana", "wrong password")
    summary = page.locator("[data-error-summary]")
    expect(summary).to_be_focused()
    expect(summary).to_have_attribute("role", "alert")
    expect(summary.get_by_role("heading", name="There is a problem")).to_be_visible()
    expect(summary).to_contain_text("That name and password do not match an agent account.")
    for label in ("Name", "Password"):
        field = page.get_by_label(label, exact=True)
        expect(field).to_have_attribute("aria-invalid", "true")
        expect(field).to_have_accessible_description(re.compile("do not match an agent account"))
    assert page.title().startswith("Error:")
    expect(page.get_by_label("Name", exact=True)).to_have_value("ana")
    expect(page.get_by_label("Password", exact=True)).to_have_value("")
    console.assert_accessible()
    # From the summary, by keyboard alone: Tab to the name (kept), Tab, the password, Enter.
    page.keyboard.press("Tab")
    expect(page.get_by_label("Name", exact=True)).to_be_focused()
    page.keyboard.press("Tab")
    page.keyboard.type("correct horse battery")
    page.keyboard.press("Enter")
    console.wait_ready()
    expect(page.get_by_role("heading", level=1, name="Agent console")).to_be_visible()


def test_A47_landmarks_and_headings(handoff_server, context: BrowserContext):
    console = signed_in(context, handoff_server, "ana")
    page = console.page
    expect(page.get_by_role("banner").get_by_role("heading", level=1)).to_have_text("Agent console")
    expect(page.get_by_role("banner").get_by_role("button", name="Sign out")).to_be_visible()
    expect(page.get_by_role("main")).to_have_count(1)
    headings = page.get_by_role("main").get_by_role("heading", level=2)
    expect(headings).to_have_text(["Queue", "Your conversations", "Conversation", "Inbox", "Notifications"])
    for name in ("Queue", "Your conversations", "Conversation", "Inbox", "Notifications"):
        expect(page.get_by_role("region", name=name, exact=True)).to_be_visible()
    expect(page.get_by_text("Nobody is waiting.")).to_be_visible()
    console.assert_accessible()


def test_A48_the_queue_oldest_first_with_wait_and_claim_said_once_per_visitor(handoff_server, context: BrowserContext):
    console = signed_in(context, handoff_server, "ana")
    first = waiting_visitor(handoff_server, console)
    second = waiting_visitor(handoff_server, console)
    queue = console.page.get_by_role("list", name="Queue")
    expect(queue.get_by_role("listitem")).to_have_count(2)
    ids = [console.queue.nth(i).get_attribute("data-conversation-id") for i in range(2)]
    assert ids == [first.conversation_id, second.conversation_id]
    expect(console.queue.nth(0)).to_contain_text("1. Waiting less than a minute")
    expect(console.queue.nth(1)).to_contain_text("No message yet.")
    for position in (1, 2):
        button = console.queue.nth(position - 1).get_by_role("button")
        expect(button).to_have_text("Claim")
        expect(button).to_have_accessible_name(f"Claim conversation {position}, waiting less than a minute")
    second.say("Hello?")
    expect(console.queue.nth(1)).to_contain_text("Last message: Hello?")
    # Focus on a Claim button survives the polls that redraw the queue.
    console.queue.nth(1).get_by_role("button").focus()
    console.wait_said("New message from a waiting visitor: Hello?")
    console.page.wait_for_timeout(3500)
    expect(console.queue.nth(1).get_by_role("button")).to_be_focused()
    said = console.said("polite")
    assert said.count("A new visitor is waiting.") == 2, said  # one per visitor
    assert said.count("New message from a waiting visitor: Hello?") == 1, said
    assert not console.said("assertive")
    console.assert_accessible()


def test_A49_claim_moves_focus_to_the_conversation_and_a_lost_claim_says_who_won(handoff_server, browser: Browser):
    ana_context, bo_context = browser.new_context(), browser.new_context()
    for context in (ana_context, bo_context):
        ChatWidget.install_recorder(context)
    try:
        ana = signed_in(ana_context, handoff_server, "ana")
        bo = signed_in(bo_context, handoff_server, "bo")
        visitor = waiting_visitor(handoff_server, ana)
        visitor.say("My parcel is late.")
        expect(bo.entry(visitor.conversation_id)).to_contain_text("My parcel is late.")
        with queue_as_last_polled(bo.page):  # Bo still sees the entry Ana claims
            ana.page.bring_to_front()
            ana.entry(visitor.conversation_id).get_by_role("button").press("Enter")
            expect(ana.page.locator("#conversation-heading")).to_be_focused()
            ana.wait_said("Conversation claimed.")
            transcript = ana.page.get_by_role("list", name=re.compile("^Conversation"))
            expect(transcript.get_by_role("listitem").last.locator(".transcript__who")).to_have_text("Visitor")
            expect(transcript.get_by_role("listitem").last).to_contain_text("My parcel is late.")
            ana.assert_accessible()
            bo.page.bring_to_front()
            bo.entry(visitor.conversation_id).get_by_role("button").press("Enter")
            expect(bo.page.locator("[data-agent-queue-note]")).to_have_text("Already taken by Ana.")
        bo.wait_said("Already taken by Ana.")
        assert bo.said("assertive").count("Already taken by Ana.") == 1
        expect(bo.page.locator("#queue-heading")).to_be_focused()
        expect(bo.queue).to_have_count(0)
        bo.assert_accessible()
    finally:
        ana_context.close()
        bo_context.close()


def test_A50_reply_box_enter_sends_exactly_and_end_hands_back(handoff_server, context: BrowserContext):
    console = signed_in(context, handoff_server, "ana")
    visitor = waiting_visitor(handoff_server, console)
    claim(console, visitor)
    expect(console.reply).to_have_accessible_description("Enter sends; Shift+Enter adds a line.")
    console.page.keyboard.press("Tab")  # from the heading, past the transcript, to the box
    expect(console.reply).to_be_focused()
    console.page.keyboard.type("Two lines:")
    console.page.keyboard.press("Shift+Enter")
    console.page.keyboard.type("<i>exactly</i> this.")
    console.page.keyboard.press("Enter")
    expect(console.reply).to_be_focused()
    expect(console.reply).to_have_value("")
    mine = console.transcript.last
    expect(mine).to_have_attribute("data-verified", "true")
    assert mine.locator(".transcript__text").text_content() == "Two lines:\n<i>exactly</i> this."
    visitor.say("Thanks!")
    console.wait_said("Visitor: Thanks!")
    expect(console.transcript.filter(has_text="Thanks!")).to_have_attribute("data-verified", "true")
    console.assert_accessible()
    console.page.keyboard.press("Tab")  # Send
    console.page.keyboard.press("Tab")  # End
    expect(console.page.get_by_role("button", name="End", exact=True)).to_be_focused()
    console.page.keyboard.press("Enter")
    expect(console.page.locator("#queue-heading")).to_be_focused()
    console.wait_said("Conversation ended.")
    console.page.wait_for_timeout(1000)
    assert console.said("polite").count("Visitor: Thanks!") == 1
    assert console.said("polite").count("Conversation ended.") == 1
    console.assert_accessible()


def test_A51_sound_and_desktop_notifications_are_opt_in(handoff_server, context: BrowserContext):
    context.add_init_script(browser_notifications("denied"))
    console = signed_in(context, handoff_server, "ana")
    page = console.page
    notifications = page.get_by_role("region", name="Notifications")
    sound = notifications.get_by_role("checkbox", name="Play a sound for a new visitor or message")
    desktop = notifications.get_by_role("checkbox", name="Show a desktop notification for a new visitor or message")
    expect(sound).not_to_be_checked()
    expect(desktop).not_to_be_checked()
    waiting_visitor(handoff_server, console)
    console.wait_said("A new visitor is waiting.")
    assert page.evaluate("window.__permissionRequests") == 0
    desktop.focus()
    page.keyboard.press("Space")
    page.wait_for_function("window.__permissionRequests === 1")
    # The agent refused the browser's prompt: unchecked again, and why is said.
    expect(desktop).not_to_be_checked()
    console.wait_said(
        "Desktop notifications are blocked by the browser. Allow them in the site's settings to use them."
    )
    assert "Desktop notifications are blocked by the browser." in " ".join(console.said("assertive"))
    expect(desktop).to_be_focused()
    console.assert_accessible()


def test_A52_inbox_reply_is_a_labelled_box_that_returns_focus(handoff_server, context: BrowserContext):
    visitor = Visitor.start(handoff_server)
    assert visitor.ask_for_a_person()["state"] == "unavailable"
    visitor.leave_message("Call me, please.")
    console = signed_in(context, handoff_server, "ana")
    inbox = console.page.get_by_role("list", name="Inbox")
    item = inbox.get_by_role("listitem")
    expect(item).to_have_count(1)
    expect(item).to_contain_text("No email address given")
    expect(item).to_contain_text("Call me, please.")
    reply = item.get_by_role("button", name=re.compile("^Reply"))
    expect(reply).to_have_attribute("aria-expanded", "false")
    console.assert_accessible()
    reply.press("Enter")
    box = item.get_by_role("textbox", name="Your reply")
    expect(box).to_be_focused()
    expect(reply).to_have_attribute("aria-expanded", "true")
    console.assert_accessible()
    item.get_by_role("button", name="Cancel").press("Enter")
    expect(reply).to_be_focused()
    expect(box).to_be_hidden()
    reply.press("Enter")
    console.page.keyboard.type("We called.")
    console.page.keyboard.press("Tab")
    console.page.keyboard.press("Enter")  # Send reply
    console.wait_said("Reply sent.")
    expect(item.get_by_text("Replied", exact=True)).to_be_visible()
    expect(reply).to_be_focused()
    assert console.said("polite").count("Reply sent.") == 1
    assert [m["text"] for m in visitor.history() if m["role"] == "agent"] == ["We called."]
    console.assert_accessible()


def test_A101_older_left_messages_come_a_page_at_a_time_and_what_expired_is_said(
    chat_server_factory, tmp_path, context: BrowserContext
):
    server = start_handoff_server(chat_server_factory, tmp_path, HANDOFF_INBOX_MAX=52)
    chat = server.app.extensions[SERVICES_KEY].chat
    service = server.app.extensions[SERVICES_KEY].handoff
    texts = []
    for number in range(55):  # 3 more than the inbox keeps: the oldest 3 are let go
        if number % 3 == 0:
            cid = chat.create_conversation()[0]
        texts.append(f"Left message number {number}.")
        service.leave_message(cid, f"l{number}", None, texts[-1])
    console = signed_in(context, server, "ana")
    page = console.page
    items = page.get_by_role("list", name="Inbox").get_by_role("listitem")
    expect(items).to_have_count(50)
    expect(items.first).to_contain_text(texts[-1])
    expect(page.get_by_text("3 older messages are no longer kept.", exact=True)).to_be_visible()
    older = page.get_by_role("button", name="Show older messages")
    console.assert_accessible()
    older.focus()
    page.keyboard.press("Enter")
    expect(items).to_have_count(52)
    expect(items.last).to_contain_text(texts[3])  # the oldest kept
    expect(older).to_be_hidden()
    expect(page.locator("#inbox-heading")).to_be_focused()
    console.assert_accessible()
