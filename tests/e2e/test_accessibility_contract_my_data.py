"""docs/accessibility.md, "A known visitor's own data" (A121–A123): one test per contract id.

A known visitor's Download my data and Erase my data in the panel's Options
(static/widget/my-data.js), driven by keyboard only in real Chromium and Firefox ESR, with axe in
each state (Options open, the confirmation open, after the erasure, after a refusal), and the
server checked over HTTP: the visitor's list and export are empty after an erasure, whole after
a cancel or a refusal. tests/test_docs.py checks that every id has its test.
"""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import Page, expect

from widget_server.testing import IDENTITY_TEST_SECRET

from ..helpers import HTTP, REPO_ROOT
from .test_accessibility_contract import assertive, polite
from .test_accessibility_contract_conversation import (
    TOOLS,
    WATCH_DOWNLOAD_LINK,
    download_transcript,
    open_options,
    tab_to,
)
from .test_identity_panel import EXPIRED_COUNT, own_conversation, token

pytestmark = pytest.mark.e2e

I18N = REPO_ROOT / "static" / "widget" / "i18n"
MY_DATA = json.loads((I18N / "conversations" / "en.json").read_text(encoding="utf-8"))["myData"]
REFUSALS = json.loads((I18N / "refusals" / "en.json").read_text(encoding="utf-8"))
TODAY = (
    "() => { const d = new Date(); return [d.getFullYear(), d.getMonth() + 1, d.getDate()]"
    ".map((n) => String(n).padStart(2, '0')).join('-'); }"
)


@pytest.fixture
def identity_server(chat_server_factory):
    return chat_server_factory(IDENTITY_SECRET=IDENTITY_TEST_SECRET)


def own_list(server, subject: str) -> list[str]:
    response = HTTP.get(
        server.url + "/api/v1/me/conversations", headers={"Authorization": f"Bearer {token(subject)}"}, timeout=10
    )
    assert response.status_code == 200
    return [entry["conversation_id"] for entry in response.json()["conversations"]]


def own_export(server, subject: str) -> list[dict]:
    response = HTTP.get(
        server.url + "/api/v1/me/export", headers={"Authorization": f"Bearer {token(subject)}"}, timeout=10
    )
    assert response.status_code == 200
    return [json.loads(line) for line in response.text.splitlines()]


def your_data(widget):
    return widget.frame.get_by_role("group", name=MY_DATA["legend"])


def confirmation(widget):
    return widget.frame.get_by_role("dialog", name=MY_DATA["confirmTitle"])


def press_erase(widget):
    """Tab from the Options' button to Erase my data and press it: the confirmation opens."""
    erase = your_data(widget).get_by_role("button", name=MY_DATA["erase"])
    tab_to(widget, erase, key="Tab")
    widget.page.keyboard.press("Enter")
    expect(confirmation(widget)).to_be_visible()
    return erase


def test_A121_download_my_data_saves_the_visitors_json_lines(embed, identity_server, page: Page, browser_name):
    fetched: list[str] = []
    page.on("request", lambda request: fetched.append(request.url))
    # An anonymous visitor's Options: no group, and its module never loaded.
    widget = embed(identity_server)
    widget.open()
    open_options(widget)
    expect(widget.frame.get_by_role("button", name=TOOLS["download"])).to_be_visible()
    expect(your_data(widget)).to_have_count(0)
    assert not [url for url in fetched if url.endswith("/my-data.js")]

    # A visitor the chat holds nothing of: said so, and no file.
    widget = embed(identity_server, identity_token=token("customer-new"))
    widget.open()
    open_options(widget)
    download = your_data(widget).get_by_role("button", name=MY_DATA["download"])
    tab_to(widget, download, key="Tab")
    widget.panel_frame().evaluate(WATCH_DOWNLOAD_LINK)
    widget.page.keyboard.press("Enter")
    widget.wait_for_announcement(MY_DATA["downloadEmpty"])
    expect(download).to_be_focused()
    assert widget.panel_frame().evaluate("() => window.__downloadLink") is None

    own_conversation(identity_server, "customer-7", "Where is my order?")
    widget = embed(identity_server, identity_token=token("customer-7"))
    widget.open()
    options = open_options(widget)
    group = your_data(widget)
    expect(group).to_be_visible()
    download = group.get_by_role("button", name=MY_DATA["download"])
    expect(group.get_by_role("button")).to_have_count(2)
    # After Download transcript in the tab order.
    tab_to(widget, widget.frame.get_by_role("button", name=TOOLS["download"]), key="Tab")
    widget.page.keyboard.press("Tab")
    expect(download).to_be_focused()
    widget.assert_accessible()
    name, content = download_transcript(widget, page, browser_name, download)
    assert name == f"my-chat-data-{widget.panel_frame().evaluate(TODAY)}.jsonl"
    records = [json.loads(line) for line in content.splitlines()]
    assert records == own_export(identity_server, "customer-7")
    assert {record["kind"] for record in records} >= {"conversation", "message"}
    assert "Where is my order?" in [record.get("text") for record in records]
    widget.wait_for_announcement(MY_DATA["downloaded"])
    assert polite(widget).count(MY_DATA["downloaded"]) == 1
    expect(options).to_have_attribute("aria-expanded", "true")


def test_A122_erase_my_data_asks_first_then_erases_and_empties_the_panel(embed, identity_server, page: Page):
    own_conversation(identity_server, "customer-8", "Where is my order?")
    widget = embed(identity_server, identity_token=token("customer-8"))
    widget.open()
    widget.send("/echo A private question")
    assert widget.wait_until_complete() == "completed"
    assert len(own_list(identity_server, "customer-8")) == 2

    open_options(widget)
    erase = press_erase(widget)
    dialog = confirmation(widget)
    expect(dialog).to_have_accessible_description(MY_DATA["confirmText"])
    cancel = dialog.get_by_role("button", name=MY_DATA["cancel"])
    confirm = dialog.get_by_role("button", name=MY_DATA["confirmErase"])
    expect(cancel).to_be_focused()
    widget.assert_accessible()
    # Focus stays inside: Tab from the last button wraps to the first, Shift+Tab back.
    page.keyboard.press("Tab")
    expect(confirm).to_be_focused()
    page.keyboard.press("Shift+Tab")
    expect(cancel).to_be_focused()
    # Escape closes the dialog, not the chat; nothing is erased.
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    expect(erase).to_be_focused()
    expect(widget.launcher).to_have_attribute("aria-expanded", "true")
    expect(widget.turns).to_have_count(2)  # the question and its answer
    assert len(own_list(identity_server, "customer-8")) == 2
    # Cancel, likewise.
    page.keyboard.press("Enter")
    expect(cancel).to_be_focused()
    page.keyboard.press("Enter")
    expect(dialog).to_be_hidden()
    expect(erase).to_be_focused()
    assert len(own_list(identity_server, "customer-8")) == 2

    # Erase my data: gone on the server, forgotten here, said once; still signed in.
    page.keyboard.press("Enter")
    page.keyboard.press("Shift+Tab")
    expect(confirm).to_be_focused()
    page.keyboard.press("Enter")
    widget.wait_for_announcement(MY_DATA["erased"])
    expect(dialog).to_be_hidden()
    expect(widget.turns).to_have_count(0)
    expect(widget.input).to_be_focused()
    assert own_list(identity_server, "customer-8") == []
    assert own_export(identity_server, "customer-8") == []
    assert widget.panel_frame().evaluate("() => chatPanel.client.conversationId") == ""
    stored = "() => { try { return localStorage.length + sessionStorage.length; } catch { return 0; } }"
    widget.panel_frame().wait_for_function(f"() => ({stored})() === 0")
    assert polite(widget).count(MY_DATA["erased"]) == 1
    widget.assert_accessible()
    # The next message starts a conversation of theirs again.
    widget.send("/echo After the erasure")
    assert widget.wait_until_complete() == "completed"
    assert len(own_list(identity_server, "customer-8")) == 1


def test_A123_a_refused_download_or_erasure_loses_nothing_and_says_why(embed, identity_server, page: Page):
    page.add_init_script(EXPIRED_COUNT)
    own_conversation(identity_server, "customer-9", "Where is my order?")
    widget = embed(identity_server, identity_token=token("customer-9"))
    widget.open()
    widget.send("/echo Still here")
    assert widget.wait_until_complete() == "completed"
    # The site's token expires while the panel is open.
    page.evaluate("(stale) => ChatWidget.identify(stale)", token("customer-9", expires_in=-600))
    open_options(widget)
    reason = REFUSALS["refusals"]["identity_expired"]
    alert = widget.frame.locator("[data-chat-alert]")

    download = your_data(widget).get_by_role("button", name=MY_DATA["download"])
    tab_to(widget, download, key="Tab")
    page.keyboard.press("Enter")
    expect(alert).to_have_text(MY_DATA["downloadFailed"].replace("{reason}", reason))
    expect(download).to_be_focused()

    erase = press_erase(widget)
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Enter")
    failed = MY_DATA["eraseFailed"]
    expect(alert).to_have_text(failed.replace("{reason}", reason))
    expect(confirmation(widget)).to_be_hidden()
    expect(erase).to_be_focused()
    assert assertive(widget).count(failed.replace("{reason}", reason)) == 1
    # Nothing lost: the transcript as it was, no answer added, everything still on the server.
    expect(widget.turns).to_have_count(2)  # the question and its answer
    expect(widget.answers).to_have_count(1)
    assert len(own_list(identity_server, "customer-9")) == 2
    widget.assert_accessible()
    # The site is told once that its token was refused, as for a send (A118).
    page.wait_for_function("() => window.__expired === 1")
