"""docs/accessibility.md, "Consent before the first message" (A120): one test per contract id.

The widget is embedded in a host page on another origin, with CONSENT_TEXT and CONSENT_URL set,
and driven by keyboard only in real Chromium and Firefox ESR, with axe in the consent state and
after a held send. tests/test_docs.py checks that every id has its test.
"""

from __future__ import annotations

import hashlib
import json

import pytest
from playwright.sync_api import expect

from ..helpers import REPO_ROOT
from .test_accessibility_contract import STRINGS
from .test_accessibility_contract_conversation import TOOLS, start_over, tab_to
from .test_agent_console import start_handoff_server
from .test_handoff_widget import talk_to_a_person

pytestmark = pytest.mark.e2e

EN = STRINGS["en"]
CONSENT = EN["consent"]
# Markup in the site's text must stay text (docs/security.md: site text never becomes markup).
CONSENT_TEXT = "We keep your messages for 30 days <em>to answer you</em> & to improve this help."
CONSENT_URL = "https://www.example.com/privacy"
DIGEST = hashlib.sha256(CONSENT_TEXT.encode("utf-8")).hexdigest()
CONVERSATIONS_PATH = "/api/v1/conversations"
STARTERS = ["/echo Opening hours?", "Track my order"]


def conversations(server) -> dict:
    return dict(server.service.store._conversations)


def test_A120_consent_is_asked_before_the_first_message_by_keyboard(embed, page, context, chat_server_factory):
    server = chat_server_factory(CONSENT_TEXT=CONSENT_TEXT, CONSENT_URL=CONSENT_URL)
    creations: list[str] = []
    context.on(
        "request",
        lambda r: creations.append(r.url) if r.method == "POST" and r.url.endswith(CONVERSATIONS_PATH) else None,
    )
    widget = embed(server)
    widget.launcher.focus()
    widget.page.keyboard.press("Enter")
    widget.ready.wait_for()
    expect(widget.input).to_be_focused()
    widget.panel_frame().wait_for_function("() => !!window.chatPanel.consent")  # consent.js is in
    frame = widget.frame
    step = frame.locator("[data-chat-consent]")
    box = frame.get_by_role("checkbox", name=CONSENT["agree"])
    link = step.get_by_role("link", name=f"{CONSENT['link']} {EN['sources']['newTab']}")
    # The site's words, as text; its privacy notice in a new tab; a native, labelled checkbox
    # described by those words.
    expect(step.locator("#chat-consent-text > span")).to_have_text(CONSENT_TEXT)
    assert step.locator("em").count() == 0
    expect(link).to_have_attribute("href", CONSENT_URL)
    expect(link).to_have_attribute("target", "_blank")
    expect(box).not_to_be_checked()
    expect(box).to_have_accessible_description(f"{CONSENT_TEXT} {CONSENT['link']} {EN['sources']['newTab']}")
    widget.assert_accessible()

    # A send without the agreement is held: the text stays, focus goes to the box, the reason
    # is said once (assertive, A6), and nothing is created.
    widget.input.press_sequentially("/echo agreed first")
    widget.page.keyboard.press("Enter")
    expect(box).to_be_focused()
    expect(widget.input).to_have_value("/echo agreed first")
    expect(frame.locator("[data-chat-alert]")).to_have_text(CONSENT["required"])
    said = [entry["text"] for entry in widget.announcements() if entry["politeness"] == "assertive"]
    assert said == [CONSENT["required"]]
    expect(widget.turns).to_have_count(0)
    widget.assert_accessible()
    assert creations == [] and conversations(server) == {}

    # Space checks it; Tab goes on to the composer; Enter sends, with the agreement.
    widget.page.keyboard.press("Space")
    expect(box).to_be_checked()
    widget.page.keyboard.press("Tab")
    expect(widget.input).to_be_focused()
    widget.page.keyboard.press("Enter")
    assert widget.wait_until_complete() == "completed"
    expect(widget.last_answer().locator(".turn__body")).to_have_text("agreed first")
    expect(step).to_have_count(0)  # the line went with the first send
    expect(widget.input).to_be_focused()
    assert len(creations) == 1
    ((conversation_id, record),) = conversations(server).items()
    assert record.conversation.consent_sha256 == DIGEST and record.conversation.consented_at > 0

    # A reload of that conversation asks nothing again.
    page.reload()
    widget.launcher.focus()
    widget.page.keyboard.press("Enter")
    widget.ready.wait_for()
    frame = widget.frame  # the reloaded page's panel (ChatWidget.frame)
    expect(widget.turns.first).to_contain_text("agreed first")
    expect(frame.locator("[data-chat-consent]")).to_have_count(0)
    config = json.loads(frame.locator("#chat-config").text_content())
    assert config["consent"]["given"] is True
    widget.send("/echo again")
    assert widget.wait_until_complete() == "completed"
    assert list(conversations(server)) == [conversation_id] and len(creations) == 1


def test_A120_a_starter_waits_for_consent_too_and_a_start_over_keeps_it(embed, chat_server_factory):
    server = chat_server_factory(CONSENT_TEXT=CONSENT_TEXT, CONSENT_URL=CONSENT_URL)
    widget = embed(server, starters=json.dumps(STARTERS))
    widget.open()
    widget.panel_frame().wait_for_function("() => !!window.chatPanel.consent")
    box = widget.frame.get_by_role("checkbox", name=CONSENT["agree"])
    starter = widget.frame.get_by_role("button", name=STARTERS[0])
    # From the composer, Shift+Tab reaches the last starter... and the box before the composer.
    widget.page.keyboard.press("Shift+Tab")
    expect(box).to_be_focused()
    tab_to(widget, starter)
    widget.page.keyboard.press("Enter")
    expect(box).to_be_focused()  # held: the starter's words wait in the composer
    expect(widget.input).to_have_value(STARTERS[0])
    # Attach too: files go with the first message, so it waits for the agreement as well.
    widget.frame.locator("[data-chat-attach]").focus()
    widget.page.keyboard.press("Enter")
    expect(box).to_be_focused()
    assert conversations(server) == {}
    widget.page.keyboard.press("Space")
    tab_to(widget, starter)
    widget.page.keyboard.press("Enter")
    assert widget.wait_until_complete() == "completed"
    expect(widget.last_answer().locator(".turn__body")).to_have_text(STARTERS[0].removeprefix("/echo "))
    # A start-over's new conversation records the agreement the visitor gave in this panel.
    start_over(widget, TOOLS["startOver"])
    expect(widget.turns).to_have_count(0)
    expect(widget.frame.locator("[data-chat-consent]")).to_have_count(0)
    records = [record.conversation for record in conversations(server).values()]
    assert len(records) == 2 and all(record.consent_sha256 == DIGEST for record in records)


def test_A120_in_hebrew_the_step_is_right_to_left_in_the_panels_words(embed, chat_server_factory):
    he = json.loads((REPO_ROOT / "static" / "widget" / "i18n" / "he.json").read_text(encoding="utf-8"))
    server = chat_server_factory(CONSENT_TEXT=CONSENT_TEXT, CONSENT_URL=CONSENT_URL)
    widget = embed(server, lang="he")
    widget.open()
    widget.panel_frame().wait_for_function("() => !!window.chatPanel.consent")
    frame = widget.frame
    assert frame.locator("html").get_attribute("dir") == "rtl"
    box = frame.get_by_role("checkbox", name=he["consent"]["agree"])
    expect(frame.get_by_role("link", name=f"{he['consent']['link']} {he['sources']['newTab']}")).to_be_visible()
    # The site's own words keep their direction (English here) inside the right-to-left line.
    expect(frame.locator("#chat-consent-text > span")).to_have_attribute("dir", "auto")
    # The box sits at the line's start, the right edge, before its label.
    box_x = box.bounding_box()["x"]
    label_x = frame.locator("label[for='chat-consent']").bounding_box()["x"]
    assert box_x > label_x
    widget.assert_accessible()
    widget.input.press_sequentially("/echo שלום")
    widget.page.keyboard.press("Enter")
    expect(box).to_be_focused()
    expect(frame.locator("[data-chat-alert]")).to_have_text(he["consent"]["required"])


def test_A120_talk_to_a_person_waits_for_consent_too(embed, chat_server_factory, tmp_path):
    # Asking for a person before any message makes the conversation, as a first send does
    # (handoff.js request): it is held the same way, nothing reaching the server.
    server = start_handoff_server(chat_server_factory, tmp_path, CONSENT_TEXT=CONSENT_TEXT, CONSENT_URL=CONSENT_URL)
    widget = embed(server)
    widget.open()
    widget.panel_frame().wait_for_function("() => !!window.chatPanel.consent")
    box = widget.frame.get_by_role("checkbox", name=CONSENT["agree"])
    talk_to_a_person(widget)
    expect(box).to_be_focused()
    expect(widget.frame.locator("[data-chat-alert]")).to_have_text(CONSENT["required"])
    said = [entry["text"] for entry in widget.announcements() if entry["politeness"] == "assertive"]
    assert said == [CONSENT["required"]]
    expect(widget.turns).to_have_count(0)
    widget.assert_accessible()
    assert conversations(server) == {}
    # Space checks it; asked again, the hand-off's request goes, and the conversation it makes
    # records the agreement.
    widget.page.keyboard.press("Space")
    expect(box).to_be_checked()
    with widget.page.expect_response(
        lambda response: response.request.method == "POST" and response.url.endswith("/handoff")
    ) as asked:
        talk_to_a_person(widget)
    assert asked.value.ok
    expect(widget.frame.locator("[data-chat-consent]")).to_have_count(0)
    ((_conversation_id, record),) = conversations(server).items()
    assert record.conversation.consent_sha256 == DIGEST
