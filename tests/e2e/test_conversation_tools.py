"""The conversation's tools beyond their contract lines (docs/accessibility.md A30–A36, tested
in test_accessibility_contract_conversation.py): starters from the setting, an embed's invalid
data-starters, starting over while an answer streams, the Spanish panel, 320 px, and what
loads when. Real Chromium and Firefox ESR, real server, keyboard only where a person acts.
"""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import expect

from widget_server.backends.demo import DEMO_SOURCES, SOURCES_ANSWER, SOURCES_PROGRESS

from .test_accessibility_contract import STRINGS, ask
from .test_accessibility_contract_conversation import (
    TOOLS,
    conversation_of,
    download_transcript,
    open_options,
    start_over,
    tab_to,
)

pytestmark = pytest.mark.e2e

# Firefox ESR's share (docs/testing.md): the cases marked chromium_only run in Chromium alone.
CONVERSATION_FIREFOX = "the dialog, the options, start over, delete and download run in Firefox in test_accessibility_contract_conversation.py (A30-A36) and in this module's 320 px, dark, start-over-while-streaming and first-press cases; this one adds words or settings the same code reads"

EN = STRINGS["en"]
ES = STRINGS["es"]


def starter_buttons(widget, label: str = TOOLS["starterLabel"]):
    return widget.frame.get_by_role("list", name=label).get_by_role("button")


@pytest.mark.smoke
@pytest.mark.chromium_only(reason=CONVERSATION_FIREFOX)
def test_starters_from_the_setting_are_sent_and_come_back_after_a_start_over(embed, chat_server_factory):
    server = chat_server_factory(STARTERS='["/echo Opening hours?", "/echo Returns."]', GREETING="Welcome!")
    widget = embed(server)
    widget.open()
    expect(widget.frame.locator(".chat__greeting")).to_have_text("Welcome!")
    expect(starter_buttons(widget)).to_have_text(["/echo Opening hours?", "/echo Returns."])
    tab_to(widget, starter_buttons(widget).first)
    widget.page.keyboard.press("Enter")
    assert widget.wait_until_complete() == "completed"
    expect(widget.turns).to_have_count(2)
    expect(widget.turns.first.locator(".turn__body")).to_have_text("/echo Opening hours?")
    expect(widget.input).to_be_focused()
    expect(widget.frame.locator("[data-chat-starters] button")).to_have_count(2)  # kept, hidden with the empty state
    expect(widget.frame.locator("[data-chat-empty]")).to_be_hidden()
    start_over(widget, TOOLS["startOver"])
    expect(starter_buttons(widget).first).to_be_visible()
    tab_to(widget, starter_buttons(widget).last)
    widget.page.keyboard.press("Enter")
    assert widget.wait_until_complete() == "completed"
    expect(widget.answers.last.locator(".turn__body")).to_have_text("Returns.")


@pytest.mark.chromium_only(reason=CONVERSATION_FIREFOX)
def test_an_invalid_data_starters_is_ignored_with_a_console_warning(embed, chat_server_factory, page):
    server = chat_server_factory(STARTERS='["From the setting"]')
    widget = embed(server, starters='["one", "two", "three", "four", "five"]', greeting="Hi from the embed")
    with page.expect_console_message(lambda message: "data-starters ignored" in message.text) as info:
        widget.open()
    assert info.value.type == "warning"
    assert "at most 4 starters (got 5)" in info.value.text
    expect(starter_buttons(widget)).to_have_text(["From the setting"])
    expect(widget.frame.locator(".chat__greeting")).to_have_text("Hi from the embed")


def test_start_over_while_an_answer_streams_stops_it_first(embed, chat_server_factory):
    server = chat_server_factory(DEMO_DELAY_SECONDS=0.2)
    widget = embed(server)
    widget.open()
    widget.send("/scenario slow")
    expect(widget.last_answer()).to_have_attribute("data-state", "streaming")
    # Its id arrives with its first event (message.started).
    expect(widget.last_answer()).to_have_attribute("data-message-id", re.compile(r".+"))
    old_id, _ = conversation_of(widget)
    message_id = widget.last_answer().get_attribute("data-message-id")
    start_over(widget, TOOLS["startOver"])
    expect(widget.turns).to_have_count(0)
    expect(widget.stop_button).to_be_hidden()
    expect(widget.send_button).to_be_visible()
    widget.wait_for_announcement(TOOLS["started"])
    # The old answer was cancelled on the server, not left running; nothing was said as an error.
    assert server.service.store.message(message_id).state.value == "cancelled"
    assert [a for a in widget.announcements() if a["politeness"] == "assertive"] == []
    assert conversation_of(widget)[0] not in ("", old_id)
    assert ask(widget, "/echo Fresh start.") == "completed"
    expect(widget.turns).to_have_count(2)


@pytest.mark.chromium_only(reason=CONVERSATION_FIREFOX)
def test_start_over_and_delete_with_no_conversation_yet_just_says_so(embed, chat_server):
    widget = embed()
    widget.open()
    start_over(widget, TOOLS["startOverDelete"])
    widget.wait_for_announcement(TOOLS["deleted"])
    expect(widget.input).to_be_focused()
    assert conversation_of(widget) == ("", "")


@pytest.mark.chromium_only(reason=CONVERSATION_FIREFOX)
def test_download_with_nothing_completed_says_so(embed):
    widget = embed()
    widget.open()
    open_options(widget)
    button = widget.frame.get_by_role("button", name=TOOLS["download"])
    tab_to(widget, button, key="Tab")
    widget.page.keyboard.press("Enter")
    widget.wait_for_announcement(TOOLS["downloadEmpty"])
    expect(button).to_be_focused()


@pytest.mark.chromium_only(reason=CONVERSATION_FIREFOX)
def test_the_spanish_panel_names_everything_in_spanish_and_its_file(embed, page, browser_name):
    tools = ES["conversationTools"]
    widget = embed(lang="es")
    widget.open()
    expect(widget.frame.get_by_role("button", name=tools["newLabel"])).to_be_visible()
    assert ask(widget, "/echo Una pregunta.") == "completed"
    toggle = widget.frame.get_by_role("button", name=tools["settingsLabel"])
    tab_to(widget, toggle)
    widget.page.keyboard.press("Enter")
    group = widget.frame.get_by_role("group", name=tools["announceLegend"])
    expect(group.get_by_role("radio", name=tools["announceSentence"])).to_be_checked()
    button = widget.frame.get_by_role("button", name=tools["download"])
    tab_to(widget, button, key="Tab")
    name, content = download_transcript(widget, page, browser_name, button)
    assert name.startswith("conversacion-") and name.endswith(".md")
    assert f"\n\n## {ES['you']}\n\n/echo Una pregunta.\n\n## {ES['assistant']}\n\nUna pregunta.\n" in content
    widget.wait_for_announcement(tools["downloaded"])


@pytest.mark.chromium_only(reason=CONVERSATION_FIREFOX)
def test_the_transcript_lists_an_answers_sources_under_it(embed, page, browser_name):
    widget = embed()
    widget.open()
    assert ask(widget, "/scenario sources") == "completed"
    open_options(widget)
    button = widget.frame.get_by_role("button", name=TOOLS["download"])
    tab_to(widget, button, key="Tab")
    _, content = download_transcript(widget, page, browser_name, button)
    listed = "\n".join(f"- [{source.id}] {source.title} <{source.url}>" for source in DEMO_SOURCES)
    assert f"## {EN['assistant']}\n\n{SOURCES_ANSWER}" in content
    assert content.endswith(f"{TOOLS['transcriptSources']}\n\n{listed}\n")
    assert SOURCES_PROGRESS not in content  # a progress line is never the answer


def test_at_320_px_the_dialog_and_the_options_fit_and_are_clean(embed, page):
    page.set_viewport_size({"width": 320, "height": 640})
    widget = embed(starters=json.dumps(["/echo A starter that is long enough to wrap at this width."]))
    widget.open()
    frame = widget.panel_frame()
    no_sideways = "() => document.documentElement.scrollWidth <= document.documentElement.clientWidth"
    assert frame.evaluate(no_sideways)
    widget.assert_accessible()
    toggle = open_options(widget)
    assert frame.evaluate(no_sideways)
    widget.assert_accessible()
    # Escape on the open disclosure's button closes the section, not the chat.
    widget.page.keyboard.press("Escape")
    expect(toggle).to_have_attribute("aria-expanded", "false")
    expect(widget.launcher).to_have_attribute("aria-expanded", "true")
    new = widget.frame.get_by_role("button", name=TOOLS["newLabel"])
    tab_to(widget, new)
    widget.page.keyboard.press("Enter")
    dialog = widget.frame.get_by_role("dialog", name=TOOLS["confirmTitle"])
    expect(dialog).to_be_visible()
    box = dialog.bounding_box()
    viewport = frame.evaluate("() => [innerWidth, innerHeight]")
    assert box["x"] >= 0 and box["x"] + box["width"] <= viewport[0]
    assert frame.evaluate(no_sideways)
    widget.assert_accessible()
    # Every button in it is at least 44×44 (A13).
    for button in dialog.get_by_role("button").all():
        size = button.bounding_box()
        assert size["width"] >= 44 and size["height"] >= 44


def test_the_tools_load_only_on_first_press(embed, page):
    requested = []
    page.on("request", lambda request: requested.append(request.url))
    widget = embed()
    widget.open()
    assert ask(widget, "/echo Hello.") == "completed"
    assert not [url for url in requested if "conversation-tools" in url]
    open_options(widget)
    assert [url for url in requested if url.endswith("/static/widget/conversation-tools.js")]
    assert [url for url in requested if url.endswith("/static/widget/conversation-tools.css")]
    # Its strings come from the same i18n file the server reads.
    assert [url for url in requested if url.endswith("/static/widget/i18n/en.json")]


def test_dark_scheme_dialog_and_options_are_clean(embed, page, browser_name):
    if browser_name == "firefox":
        pytest.skip("WebDriver BiDi cannot emulate prefers-color-scheme in Firefox ESR 153 (docs/testing.md)")
    page.emulate_media(color_scheme="dark")
    widget = embed(starters=json.dumps(["/echo A starter."]), greeting="Hello in the dark.")
    widget.open()
    assert widget.panel_frame().evaluate("() => matchMedia('(prefers-color-scheme: dark)').matches")
    widget.assert_accessible()
    open_options(widget)
    widget.assert_accessible()
    new = widget.frame.get_by_role("button", name=TOOLS["newLabel"])
    tab_to(widget, new)
    widget.page.keyboard.press("Enter")
    expect(widget.frame.get_by_role("dialog", name=TOOLS["confirmTitle"])).to_be_visible()
    widget.assert_accessible()
