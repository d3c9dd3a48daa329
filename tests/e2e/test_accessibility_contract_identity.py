"""docs/accessibility.md, "Known visitors", line by line: one test per contract id (A117…A119).

A site's signed-in visitor in the panel (the Conversations view, a refused identity token) and in
the agent console, in real Chromium and Firefox ESR, by keyboard, with axe in each new state
(tests/test_docs.py checks that no id is left without its test). test_identity_panel.py covers
the flows: two devices, the sign-out, anonymous panels.
"""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import Page, expect

from widget_server.testing import IDENTITY_TEST_SECRET

from ..helpers import HTTP, REPO_ROOT
from .test_agent_console import Visitor, claim, signed_in, start_handoff_server
from .test_identity_panel import conversations_control, own_conversation, refused_once, token

pytestmark = pytest.mark.e2e

I18N = REPO_ROOT / "static" / "widget" / "i18n"
# A conversation made a moment ago, as Intl.RelativeTimeFormat words it (numeric: "auto").
JUST_NOW = {"en": r"(now|\d+ seconds? ago)", "ar": r"(الآن|قبل .+)"}


def strings(lang: str) -> dict[str, str]:
    panel = json.loads((I18N / f"{lang}.json").read_text(encoding="utf-8"))
    view = json.loads((I18N / "conversations" / f"{lang}.json").read_text(encoding="utf-8"))["conversations"]
    return {
        "label": panel["conversationTools"]["conversationsLabel"],
        "heading": view["heading"],
        "when": JUST_NOW[lang],
    }


@pytest.fixture
def identity_server(chat_server_factory):
    return chat_server_factory(IDENTITY_SECRET=IDENTITY_TEST_SECRET)


@pytest.mark.parametrize("lang", ["en", "ar"])
def test_A117_the_conversations_view_by_keyboard_alone(embed, identity_server, page: Page, lang):
    words = strings(lang)
    own_conversation(identity_server, "customer-7", "Where is my order?")
    own_conversation(identity_server, "customer-7", "/echo Opening hours?")
    widget = embed(identity_server, identity_token=token("customer-7"), lang=lang)
    widget.open()
    control = conversations_control(widget)
    expect(control).to_be_visible()
    expect(control).to_have_accessible_name(words["label"])
    for _ in range(10):  # back from the composer through the header's tools
        if control.evaluate("(node) => node === document.activeElement"):
            break
        page.keyboard.press("Shift+Tab")
    expect(control).to_be_focused()
    page.keyboard.press("Enter")
    expect(control).to_have_attribute("aria-expanded", "true")
    view = widget.frame.get_by_role("region", name=words["heading"])
    expect(view).to_be_visible()
    choices = view.get_by_role("listitem").get_by_role("button")
    expect(choices).to_have_count(2)
    # Most recent first; the title, in its own direction, and the last activity in words.
    when = words["when"]
    expect(choices.nth(0)).to_have_accessible_name(re.compile(r"^/echo Opening hours\? — " + when + "$"))
    expect(choices.nth(1)).to_have_accessible_name(re.compile(r"^Where is my order\? — " + when + "$"))
    expect(choices.nth(1).locator("bdi")).to_have_text("Where is my order?")
    expect(choices.nth(0)).to_be_focused()  # focus moved into the view
    expect(widget.input).to_be_hidden()
    widget.assert_accessible()
    page.keyboard.press("Escape")  # closes the view, not the chat
    expect(view).to_be_hidden()
    expect(control).to_be_focused()
    expect(control).to_have_attribute("aria-expanded", "false")
    expect(widget.launcher).to_have_attribute("aria-expanded", "true")
    page.keyboard.press("Enter")
    expect(choices.nth(0)).to_be_focused()
    page.keyboard.press("Tab")
    expect(choices.nth(1)).to_be_focused()
    page.keyboard.press("Enter")
    expect(view).to_be_hidden()
    expect(widget.input).to_be_focused()
    expect(widget.turns).to_have_count(2)
    expect(widget.turns.first).to_have_text(re.compile("Where is my order"))
    expect(widget.answers.first).to_have_attribute("data-state", "completed")
    widget.assert_accessible()


def test_A118_a_refused_token_keeps_the_text_says_why_once_and_tells_the_site_once(embed, identity_server, page: Page):
    widget = refused_once(embed, identity_server, page)
    expect(widget.input).to_have_value("Where is my parcel?")
    expect(widget.turns).to_have_count(0)
    expect(widget.input).to_be_focused()
    widget.assert_accessible()
    page.wait_for_function("() => window.__expired >= 1")
    widget.input.press("Enter")  # again, with the same token: said again, not told again
    expect(widget.input).to_have_value("Where is my parcel?")
    fresh = token()
    page.evaluate("(fresh) => ChatWidget.identify(fresh)", fresh)
    # identify() reaches the panel as a message, which a key press may overtake: the send
    # waits until the panel has the token, as a person's next key press would.
    widget.panel_frame().wait_for_function("(fresh) => window.chatPanel.client.identity === fresh", arg=fresh)
    widget.input.press("Enter")
    assert widget.wait_until_complete() == "completed"
    expect(widget.input).to_have_value("")
    expect(widget.turns.first).to_have_text(re.compile("Where is my parcel"))
    assert page.evaluate("() => window.__expired") == 1


def test_A119_the_console_names_a_known_visitor_as_text(chat_server_factory, tmp_path, context):
    server = start_handoff_server(chat_server_factory, tmp_path, IDENTITY_SECRET=IDENTITY_TEST_SECRET)
    console = signed_in(context, server, "ana")
    created = HTTP.post(
        server.url + "/api/v1/conversations",
        json={"identity_token": token("customer-9", name="<b>Zoë</b> Ødegaard", email="zoe@example.com")},
    ).json()
    known = Visitor(server.url, created["conversation_id"], created["token"])
    anonymous = Visitor.start(server)
    for visitor in (known, anonymous):
        assert visitor.ask_for_a_person()["state"] == "queued"
    known_entry = console.entry(known.conversation_id).locator(".queue__visitor")
    # The name's characters, markup and all, as text in its own <bdi>: no <b> element made.
    expect(known_entry).to_have_text("Visitor: <b>Zoë</b> Ødegaard, zoe@example.com")
    expect(known_entry.locator("bdi").first).to_have_text("<b>Zoë</b> Ødegaard")
    expect(known_entry.locator("b")).to_have_count(0)
    expect(console.entry(anonymous.conversation_id).locator(".queue__visitor")).to_have_text("Anonymous visitor")
    console.assert_accessible()
    claim(console, known)
    shown = console.page.locator("[data-agent-visitor]")
    expect(shown).to_have_text("Visitor: <b>Zoë</b> Ødegaard, zoe@example.com")
    expect(shown.locator("b")).to_have_count(0)
    held = console.page.locator(f"[data-agent-mine] > li[data-conversation-id='{known.conversation_id}']")
    expect(held.locator(".queue__visitor")).to_have_text("Visitor: <b>Zoë</b> Ødegaard, zoe@example.com")
    console.assert_accessible()
