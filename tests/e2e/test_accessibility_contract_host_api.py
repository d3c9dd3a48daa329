"""docs/accessibility.md, "The host page's API" (A128–A130), one test per id, in real Chromium
and Firefox ESR, from a host page on another origin, with axe in each new state: a message the
page sends is announced as a typed one; the page's composer text moves no focus; the agent
console lists a question's page context as text.

The API's events and bounds: test_host_api.py.
"""

from __future__ import annotations

import uuid

import pytest
from playwright.sync_api import BrowserContext, Page, expect

from widget_server.i18n import ui_strings
from widget_server.testing import ChatWidget

from ..helpers import HTTP
from .conftest import chat_base_url
from .test_agent_console import Visitor, claim, signed_in, start_handoff_server
from .test_host_pages import loader_tag, publish

pytestmark = pytest.mark.e2e

EN = ui_strings()["en"]


def host_page(page: Page, host_site, server, browser_name: str, path: str, body: str = "") -> ChatWidget:
    chat_url = chat_base_url(server, browser_name)
    page.goto(publish(host_site, path, body=f"<main><h1>Shop</h1>{body}</main>" + loader_tag(chat_url)))
    widget = ChatWidget(page, chat_url=chat_url)
    widget.wait_for_widget()
    widget.record_host_events()
    return widget


def said_since(widget: ChatWidget, start: int) -> list[tuple[str, str]]:
    return [(entry["politeness"], entry["text"]) for entry in widget.announcements()[start:]]


def test_A128_a_message_the_page_sends_is_announced_as_a_typed_one(page: Page, host_site, chat_server, browser_name):
    widget = host_page(page, host_site, chat_server, browser_name, "/a128")
    widget.open()
    text = "/echo The page can ask this."
    before = len(widget.announcements())
    widget.send(text)  # typed, Enter
    assert widget.wait_until_complete() == "completed"
    widget.wait_for_announcement(EN["complete"])
    typed = said_since(widget, before)

    before = len(widget.announcements())
    widget.send_from_page(text)
    widget.wait_for_host_event("answer-completed", count=2)
    assert widget.wait_until_complete() == "completed"
    widget.panel_frame().wait_for_function(
        "([start, text]) => (window.__chatwidgetLog || []).slice(start).some((e) => e.text === text)",
        arg=[before, EN["complete"]],
    )
    by_page = said_since(widget, before)
    assert typed == by_page, (typed, by_page)
    assert ("polite", "The page can ask this.") in by_page and by_page[-1] == ("polite", EN["complete"])
    # The same user turns, and focus still in the composer.
    expect(widget.frame.locator("[data-chat-transcript] > li.turn--user .turn__body")).to_have_text(
        ["/echo The page can ask this.", "/echo The page can ask this."]
    )
    expect(widget.input).to_be_focused()
    widget.assert_accessible()


def test_A128_a_page_send_while_an_answer_runs_is_refused_as_busy_once(
    page: Page, host_site, chat_server_factory, browser_name
):
    server = chat_server_factory(DEMO_DELAY_SECONDS=0.3)
    widget = host_page(page, host_site, server, browser_name, "/a128-busy")
    widget.open()
    widget.send("/echo " + " ".join(f"word{n}" for n in range(40)))
    widget.wait_for_host_event("answer-started")
    widget.send_from_page("/echo Too soon.")
    widget.wait_for_announcement(EN["busy"])
    assert [text for politeness, text in said_since(widget, 0) if politeness == "assertive"] == [EN["busy"]]
    expect(widget.frame.locator("[data-chat-transcript] > li.turn--user")).to_have_count(1)
    expect(widget.input).to_be_focused()
    widget.assert_accessible()
    widget.stop()


def test_A129_set_composer_never_moves_focus_and_says_nothing(page: Page, host_site, chat_server, browser_name):
    widget = host_page(page, host_site, chat_server, browser_name, "/a129", body='<label>Search <input id="q"></label>')
    search = page.get_by_label("Search")
    search.focus()
    widget.set_composer("Is the blue one in stock?")  # closed: the panel loads, still closed
    expect(widget.input).to_have_value("Is the blue one in stock?")
    expect(search).to_be_focused()
    widget.open()
    expect(widget.input).to_be_focused()
    expect(widget.input).to_have_value("Is the blue one in stock?")
    before = len(widget.announcements())
    widget.set_composer("Is the red one in stock?")  # open, focus in the composer: it stays
    expect(widget.input).to_have_value("Is the red one in stock?")
    expect(widget.input).to_be_focused()
    search.focus()
    widget.set_composer("And the green one?")  # open, focus on the page: it stays there
    expect(widget.input).to_have_value("And the green one?")
    expect(search).to_be_focused()
    assert said_since(widget, before) == []
    expect(widget.turns).to_have_count(0)
    widget.assert_accessible()


def test_A130_the_agent_sees_the_page_context_as_text(chat_server_factory, tmp_path, context: BrowserContext):
    server = start_handoff_server(chat_server_factory, tmp_path)
    console = signed_in(context, server, "ana")
    visitor = Visitor.start(server)
    context_sent = {"page": "/pricing", "plan": "<b>Pro</b>", "seats": 3, "trial": False}
    response = HTTP.post(
        visitor.url + "/messages",
        json={"request_id": uuid.uuid4().hex, "text": "Is it monthly?", "context": context_sent},
        headers=visitor.headers,
    )
    assert response.status_code == 200 and "event: message.completed" in response.text
    assert visitor.ask_for_a_person()["state"] == "queued"
    expect(console.entry(visitor.conversation_id)).to_be_visible()
    claim(console, visitor)
    question = console.transcript.filter(has_text="Is it monthly?")
    listed = question.get_by_role("list", name="Page context (from the site)")
    # The server's JSON lists the keys sorted; each "key: value" as plain text.
    expect(listed.get_by_role("listitem")).to_have_text(
        ["page: /pricing", "plan: <b>Pro</b>", "seats: 3", "trial: false"]
    )
    expect(listed.locator("b")).to_have_count(0)  # markup stays characters
    expect(listed.locator("bdi")).to_have_count(8)
    console.assert_accessible()
