"""docs/accessibility.md, "The conversation" (A30–A36): one test per contract id.

Each embeds the widget in a host page on another origin and drives it by keyboard in real
Chromium and Firefox ESR, with axe in every new state (dialog open, options open, starters
shown). tests/test_docs.py checks that every id has its test (it reads every
tests/e2e/test_accessibility_contract*.py).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest
from playwright.sync_api import expect

from .test_accessibility_contract import IMPROVISATION_SPOKEN, STRINGS, ask, polite

pytestmark = pytest.mark.e2e

EN = STRINGS["en"]
TOOLS = EN["conversationTools"]
STARTERS = ["Opening hours?", "/echo Track my order."]
GREETING = "Hello! Ask me anything about the shop."


def conversation_of(widget) -> tuple[str, str]:
    return tuple(widget.panel_frame().evaluate("() => [chatPanel.client.conversationId, chatPanel.client.token]"))


def history_status(server, conversation_id: str, token: str) -> int:
    request = urllib.request.Request(
        f"{server.url}/api/v1/conversations/{conversation_id}", headers={"Authorization": f"Bearer {token}"}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def tab_to(widget, locator, key: str = "Shift+Tab", limit: int = 40) -> None:
    """Press `key` (Shift+Tab: the header's controls come before the composer) until
    `locator` has focus: keyboard only, never a click."""
    for _ in range(limit):
        if locator.evaluate("n => n === document.activeElement"):
            return
        widget.page.keyboard.press(key)
    expect(locator).to_be_focused()


def open_options(widget):
    toggle = widget.frame.get_by_role("button", name=TOOLS["settingsLabel"])
    tab_to(widget, toggle)
    if toggle.get_attribute("aria-expanded") != "true":
        widget.page.keyboard.press("Enter")
    expect(toggle).to_have_attribute("aria-expanded", "true")
    return toggle


def choose_announcements(widget, label: str) -> None:
    open_options(widget)
    radio = widget.frame.get_by_role("radio", name=label)
    tab_to(widget, widget.frame.get_by_role("radio", checked=True), key="Tab")
    # Arrow keys move through a radio group and check what they reach.
    for _ in range(3):
        if radio.is_checked():
            break
        widget.page.keyboard.press("ArrowDown")
    expect(radio).to_be_checked()


def ask_again_after_reload(widget, page):
    page.reload()
    widget.launcher.wait_for()
    widget.open()


def test_A30_new_conversation_asks_first_in_a_modal_dialog(embed):
    widget = embed()
    widget.open()
    assert ask(widget, "/echo First question.") == "completed"
    new = widget.frame.get_by_role("button", name=TOOLS["newLabel"])
    expect(new).to_have_attribute("aria-haspopup", "dialog")
    tab_to(widget, new)
    widget.page.keyboard.press("Enter")
    dialog = widget.frame.get_by_role("dialog", name=TOOLS["confirmTitle"])
    expect(dialog).to_be_visible()
    expect(dialog).to_have_accessible_description(TOOLS["confirmText"])
    for name in (TOOLS["startOver"], TOOLS["startOverDelete"], TOOLS["cancel"]):
        expect(dialog.get_by_role("button", name=name, exact=True)).to_be_visible()
    # Focus starts on the choice that changes nothing, and stays in the dialog.
    expect(dialog.get_by_role("button", name=TOOLS["cancel"])).to_be_focused()
    for key in ("Tab", "Tab", "Shift+Tab", "Shift+Tab", "Shift+Tab"):
        widget.page.keyboard.press(key)
        assert dialog.evaluate("d => d.contains(document.activeElement)"), key
    widget.assert_accessible()
    # Escape closes it (not the whole chat), focus returns, nothing changed.
    widget.page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    expect(new).to_be_focused()
    expect(widget.launcher).to_have_attribute("aria-expanded", "true")
    expect(widget.turns).to_have_count(2)
    # Cancel does the same.
    widget.page.keyboard.press("Enter")
    expect(dialog).to_be_visible()
    widget.page.keyboard.press("Enter")  # on Cancel
    expect(dialog).to_be_hidden()
    expect(new).to_be_focused()
    expect(widget.turns).to_have_count(2)


def start_over(widget, choice: str) -> None:
    new = widget.frame.get_by_role("button", name=TOOLS["newLabel"])
    tab_to(widget, new)
    widget.page.keyboard.press("Enter")
    dialog = widget.frame.get_by_role("dialog", name=TOOLS["confirmTitle"])
    target = dialog.get_by_role("button", name=choice, exact=True)
    tab_to(widget, target)
    widget.page.keyboard.press("Enter")
    expect(dialog).to_be_hidden()


def test_A31_start_over_empties_the_panel_focuses_the_composer_and_says_so(embed, chat_server, page):
    widget = embed()
    widget.open()
    assert ask(widget, "/echo First question.") == "completed"
    widget.wait_for_announcement(EN["complete"])
    old_id, old_token = conversation_of(widget)
    start_over(widget, TOOLS["startOver"])
    expect(widget.turns).to_have_count(0)
    expect(widget.frame.locator("[data-chat-empty]")).to_be_visible()
    expect(widget.input).to_be_focused()
    widget.wait_for_announcement(TOOLS["started"])
    assert polite(widget).count(TOOLS["started"]) == 1
    new_id, _ = conversation_of(widget)
    assert new_id and new_id != old_id
    # The old conversation still exists on the server (only forgotten here) ...
    assert history_status(chat_server, old_id, old_token) == 200
    # ... and a reload, before anything else is sent, does not bring it back.
    ask_again_after_reload(widget, page)
    expect(widget.frame.locator("[data-chat-empty]")).to_be_visible()
    expect(widget.turns).to_have_count(0)
    assert conversation_of(widget)[0] == new_id
    assert ask(widget, "/echo Second question.") == "completed"
    assert conversation_of(widget)[0] == new_id


def test_A32_start_over_and_delete_removes_the_conversation_from_the_server(embed, chat_server, page):
    widget = embed()
    widget.open()
    assert ask(widget, "/echo Something private.") == "completed"
    old_id, old_token = conversation_of(widget)
    assert history_status(chat_server, old_id, old_token) == 200
    start_over(widget, TOOLS["startOverDelete"])
    expect(widget.turns).to_have_count(0)
    expect(widget.input).to_be_focused()
    widget.wait_for_announcement(TOOLS["deleted"])
    assert history_status(chat_server, old_id, old_token) == 404
    assert conversation_of(widget) == ("", "")
    ask_again_after_reload(widget, page)
    expect(widget.frame.locator("[data-chat-empty]")).to_be_visible()
    expect(widget.turns).to_have_count(0)
    assert conversation_of(widget) == ("", "")


def test_A33_starters_and_greeting_from_the_embed(embed):
    widget = embed(starters=json.dumps(STARTERS), greeting=GREETING)
    widget.open()
    empty = widget.frame.locator("[data-chat-empty]")
    expect(empty.locator(".chat__greeting")).to_have_text(GREETING)
    starters = widget.frame.get_by_role("list", name=TOOLS["starterLabel"])
    expect(starters.get_by_role("button")).to_have_text(STARTERS)
    widget.assert_accessible()
    # By keyboard: Shift+Tab from the composer reaches the last starter.
    expect(widget.input).to_be_focused()
    widget.page.keyboard.press("Shift+Tab")
    expect(starters.get_by_role("button", name=STARTERS[1])).to_be_focused()
    widget.page.keyboard.press("Enter")
    expect(widget.turns.first).to_contain_text(STARTERS[1])
    assert widget.wait_until_complete() == "completed"
    expect(widget.last_answer().locator(".turn__body")).to_have_text("Track my order.")
    expect(widget.input).to_be_focused()
    expect(empty).to_be_hidden()


def test_A34_options_is_a_disclosure_whose_choice_survives_a_reload(embed, page, browser_name):
    widget = embed()
    widget.open()
    toggle = open_options(widget)
    section = widget.frame.locator(f"#{toggle.get_attribute('aria-controls')}")
    expect(section).to_be_visible()
    group = section.get_by_role("group", name=TOOLS["announceLegend"])
    expect(group.get_by_role("radio")).to_have_count(3)
    expect(group.get_by_role("radio", name=TOOLS["announceSentence"])).to_be_checked()  # the default
    widget.assert_accessible()
    choose_announcements(widget, TOOLS["announceOff"])
    # Escape closes the section (not the chat) and returns focus to its button.
    widget.page.keyboard.press("Escape")
    expect(section).to_be_hidden()
    expect(toggle).to_have_attribute("aria-expanded", "false")
    expect(toggle).to_be_focused()
    expect(widget.launcher).to_have_attribute("aria-expanded", "true")
    # Stored per browser in a partitioned cookie, which Chromium keeps even though it blocks
    # the third-party frame's storage; the server reads it into the panel's config.
    ask_again_after_reload(widget, page)
    assert widget.panel_frame().evaluate("() => chatPanel.announcer.mode") == "off"
    open_options(widget)
    expect(widget.frame.get_by_role("radio", name=TOOLS["announceOff"])).to_be_checked()


def test_A35_announcements_when_complete_or_off(embed):
    widget = embed(announce_interval=1000)
    widget.open()
    choose_announcements(widget, TOOLS["announceComplete"])
    widget.page.keyboard.press("Escape")
    widget.input.focus()
    assert ask(widget, "which arpeggio fits Am F C G") == "completed"
    widget.wait_for_announcement(IMPROVISATION_SPOKEN)
    widget.page.wait_for_timeout(1500)  # anything else throttled would have landed by now
    # The start cue, then exactly one announcement: the whole answer as plain text.
    assert polite(widget) == [EN["generating"], IMPROVISATION_SPOKEN]
    choose_announcements(widget, TOOLS["announceOff"])
    widget.page.keyboard.press("Escape")
    widget.input.focus()
    before = len(polite(widget))
    assert ask(widget, "which arpeggio fits Am F C G") == "completed"
    widget.wait_for_announcement(EN["complete"])
    widget.page.wait_for_timeout(1500)
    # Only the cues.
    assert polite(widget)[before:] == [EN["generating"], EN["complete"]]


# Records the link the panel clicks to download (a capturing listener: nothing is replaced).
WATCH_DOWNLOAD_LINK = """() => {
  window.__downloadLink = null;
  document.addEventListener('click', (event) => {
    if (event.target.matches('a[download]'))
      window.__downloadLink = { name: event.target.download, href: event.target.href };
  }, true);
}"""


def download_transcript(widget, page, browser_name, button) -> tuple[str, str]:
    """Press Download transcript (`button`, focused); returns the file's name and content.
    Focus stays on the button."""
    if browser_name == "firefox":
        # Playwright 1.64 over WebDriver BiDi reports no download from Firefox ESR 153 at all
        # (measured: not even a top-level page's <a download>; test_qa_page.py too), so the
        # file is read from the very Blob the link the panel clicked points to, from another
        # page of the panel's origin without a page CSP (the panel's connect-src 'self'
        # excludes blob:): the JSON health check.
        frame = widget.panel_frame()
        frame.evaluate(WATCH_DOWNLOAD_LINK)
        widget.page.keyboard.press("Enter")
        frame.wait_for_function("() => window.__downloadLink")
        # Firefox's own downloads panel takes the window's focus; in the panel's document
        # the button is still the focused element, where focus returns.
        assert button.evaluate("n => n === document.activeElement")
        link = frame.evaluate("() => window.__downloadLink")
        assert link["href"].startswith("blob:")
        reader = page.context.new_page()
        try:
            reader.goto(frame.url.split("/panel", 1)[0] + "/healthz")
            content = reader.evaluate("async (url) => (await fetch(url)).text()", link["href"])
        finally:
            reader.close()
        return link["name"], content
    with page.expect_download() as info:
        widget.page.keyboard.press("Enter")
    download = info.value
    expect(button).to_be_focused()
    return download.suggested_filename, download.path().read_text(encoding="utf-8")


def test_A36_download_transcript_gives_the_markdown_of_the_completed_turns(embed, page, browser_name):
    widget = embed()
    widget.open()
    assert ask(widget, "/echo First question.") == "completed"
    assert ask(widget, "/scenario markdown") == "completed"
    texts = widget.panel_frame().evaluate(
        "() => chatPanel.client.history().then((messages) => messages.map((m) => m.text))"
    )
    open_options(widget)
    download_button = widget.frame.get_by_role("button", name=TOOLS["download"])
    tab_to(widget, download_button, key="Tab")
    name, content = download_transcript(widget, page, browser_name, download_button)
    date = widget.panel_frame().evaluate(
        "() => { const d = new Date(); return [d.getFullYear(), d.getMonth() + 1, d.getDate()]"
        ".map((n) => String(n).padStart(2, '0')).join('-'); }"
    )
    assert name == f"conversation-{date}.md"
    expected = (
        f"# {EN['panelTitle']} ({date})\n\n"
        f"## {EN['you']}\n\n{texts[0]}\n\n## {EN['assistant']}\n\n{texts[1]}\n\n"
        f"## {EN['you']}\n\n{texts[2]}\n\n## {EN['assistant']}\n\n{texts[3]}\n"
    )
    assert texts[0] == "/echo First question." and "```" in texts[3]
    assert content == expected
    widget.wait_for_announcement(TOOLS["downloaded"])
