"""docs/accessibility.md, "Attachments" (A94–A100), one test per id, in real Chromium and
Firefox ESR against a real server: files attached with the Attach button (a real file
chooser), dropped and pasted (tests/e2e/test_attachments_widget.py has the helpers and the
byte-exact round trips)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.helpers import REPO_ROOT

from .test_attachments_widget import (
    NOTES,
    SCREENSHOT,
    attach_with_button,
    drop,
    pending,
    row,
    said,
    send_scenario,
    wait_until_ready,
)

pytestmark = pytest.mark.e2e

I18N = REPO_ROOT / "static" / "widget" / "i18n"


def texts(lang: str) -> dict[str, Any]:
    return json.loads((I18N / "attachments" / f"{lang}.json").read_text(encoding="utf-8"))["attachments"]


def panel_strings(lang: str) -> dict[str, Any]:
    return json.loads((I18N / f"{lang}.json").read_text(encoding="utf-8"))


def test_A94_attach_is_one_labelled_button_and_the_file_input_is_never_a_tab_stop(embed, page: Page):
    widget = embed()
    widget.open()
    attach = widget.frame.get_by_role("button", name="Attach files", exact=True)
    expect(attach).to_be_visible()
    # Before any press there is no file input at all; the press makes one, hidden.
    expect(widget.frame.locator("input[type=file]")).to_have_count(0)
    attach_with_button(widget, page, NOTES)
    wait_until_ready(widget, "notes.txt")
    picker = widget.frame.locator("input[type=file]")
    expect(picker).to_have_count(1)
    expect(picker).to_be_hidden()
    expect(picker).to_have_attribute("tabindex", "-1")
    # Tab from the textarea: Send, Attach, then the file's own controls; never the input.
    widget.input.focus()
    reached = []
    for _ in range(4):
        page.keyboard.press("Tab")
        reached.append(
            widget.panel_frame().evaluate(
                "() => document.activeElement.matches('[data-chat-attach]') ? 'attach' : document.activeElement.type"
            )
        )
    assert reached[:3] == ["submit", "attach", "button"], reached  # Send, Attach, Remove notes.txt
    assert "file" not in reached
    # And by keyboard alone the button opens the chooser (Chromium reports it to Playwright).
    if page.context.browser.browser_type.name == "chromium":
        attach.focus()
        with page.expect_file_chooser() as chooser:
            page.keyboard.press("Enter")
        chooser.value.set_files([{"name": "second.txt", "mimeType": "text/plain", "buffer": b"two"}])
        wait_until_ready(widget, "second.txt")
    widget.assert_accessible()


def test_A95_a_pending_file_shows_its_progress_and_is_announced_at_start_and_end_only(embed, page: Page):
    held: list[Any] = []
    page.route(
        "**/attachments", lambda route: held.append(route) if route.request.method == "POST" else route.continue_()
    )
    widget = embed()
    widget.open()
    attach_with_button(widget, page, NOTES)
    files = widget.frame.get_by_role("list", name="Files to send")
    expect(files.get_by_role("listitem")).to_have_count(1)
    bar = files.get_by_role("progressbar", name="Uploading notes.txt")
    expect(bar).to_have_attribute("aria-valuetext", re.compile(r"^\d+% of 46 bytes$"))
    expect(bar).to_have_attribute("aria-valuemin", "0")
    expect(bar).to_have_attribute("aria-valuemax", "100")
    widget.wait_for_announcement("Uploading notes.txt")
    widget.assert_accessible()  # uploading
    for _ in range(200):
        if held:
            break
        page.wait_for_timeout(25)
    assert held, "the upload's POST was not seen"
    held[0].continue_()
    wait_until_ready(widget, "notes.txt")
    expect(row(widget, "notes.txt")).to_contain_text("notes.txt plain text, 46 bytes")
    expect(row(widget, "notes.txt").locator("bdi")).to_have_text("notes.txt")
    widget.wait_for_announcement("notes.txt ready")
    assert said(widget) == ["Uploading notes.txt", "notes.txt ready"]
    widget.assert_accessible()  # ready


def test_A96_remove_by_keyboard_moves_focus_to_the_next_file_else_attach(embed, page: Page):
    widget = embed()
    widget.open()
    attach_with_button(widget, page, NOTES, SCREENSHOT, ("third.txt", "text/plain", b"three"))
    wait_until_ready(widget, "notes.txt", "screenshot.png", "third.txt")
    row(widget, "screenshot.png").get_by_role("button", name="Remove screenshot.png").focus()
    page.keyboard.press("Enter")
    expect(row(widget, "third.txt").get_by_role("button", name="Remove third.txt")).to_be_focused()
    page.keyboard.press("Enter")  # the last row: the one before it
    expect(row(widget, "notes.txt").get_by_role("button", name="Remove notes.txt")).to_be_focused()
    page.keyboard.press("Enter")
    expect(widget.frame.get_by_role("button", name="Attach files")).to_be_focused()
    expect(pending(widget)).to_have_count(0)
    expect(widget.frame.get_by_role("list", name="Files to send")).to_have_count(0)  # hidden when empty
    widget.assert_accessible()


def test_A97_a_refused_file_says_why_with_the_limit_once(embed, chat_server_factory, page: Page):
    server = chat_server_factory(ATTACHMENT_MAX_BYTES=1_000_000)
    widget = embed(server)
    widget.open()
    big = ("video.txt", "text/plain", b"v" * 1_234_567)
    attach_with_button(widget, page, big)
    too_big = "video.txt is too big (1.2 MB). The limit is 1 MB."
    expect(row(widget, "video.txt")).to_contain_text(too_big)
    expect(row(widget, "video.txt")).to_have_attribute("data-state", "refused")
    expect(widget.frame.locator("[data-chat-alert]")).to_have_text(too_big)
    # The server's refusal by content, in the same words.
    attach_with_button(widget, page, ("photo.png", "image/png", b"\x00\x01 not an image"))
    wrong = "photo.png can't be sent: only PNG, JPEG, WebP, GIF, PDF, plain text, and CSV files are accepted."
    expect(row(widget, "photo.png")).to_contain_text(wrong)
    widget.panel_frame().wait_for_function(
        "() => window.__chatwidgetLog.filter((e) => e.politeness === 'assertive').length >= 2"
    )
    assert said(widget, "assertive") == [too_big, wrong]
    widget.assert_accessible()  # refused
    row(widget, "video.txt").get_by_role("button", name="Remove video.txt").press("Enter")
    expect(pending(widget)).to_have_count(1)


def test_A98_an_images_text_alternative_is_its_name_or_the_visitors_description(embed, page: Page):
    widget = embed()
    widget.open()
    attach_with_button(widget, page, SCREENSHOT)
    wait_until_ready(widget, "screenshot.png")
    image_row = row(widget, "screenshot.png")
    expect(image_row.get_by_role("img", name="screenshot.png")).to_be_visible()
    description = image_row.get_by_role("textbox", name="Describe this image (optional)")
    expect(description).to_have_attribute("maxlength", "1000")
    expect(description).to_have_accessible_description("screenshot.png")
    description.fill("Checkout page: card declined")
    expect(image_row.get_by_role("img", name="Checkout page: card declined")).to_be_visible()
    widget.assert_accessible()
    send_scenario(widget)
    sent = widget.turns.nth(0).get_by_role("list", name="Attached files")
    expect(sent.get_by_role("img", name="Checkout page: card declined")).to_be_visible()
    page.reload()
    widget.open()
    sent = widget.turns.nth(0).get_by_role("list", name="Attached files")
    expect(sent.get_by_role("img", name="Checkout page: card declined")).to_be_visible()
    widget.assert_accessible()


def test_A99_files_go_with_the_message_and_stay_if_it_is_refused(embed, chat_server_factory, page: Page):
    widget = embed()
    widget.open()
    drop(widget, NOTES)
    wait_until_ready(widget, "notes.txt")
    widget.wait_for_announcement("Drop files here to attach them")
    assert said(widget).count("Drop files here to attach them") == 1
    # The file is deleted on the server behind the panel's back: the message is refused, and
    # the file stays pending (nothing the visitor chose is lost).
    attachment_id = row(widget, "notes.txt").evaluate(
        "(item) => window.chatPanel.attachments.rows.find((r) => r.item === item).attachment.attachment_id"
    )
    client = widget.panel_frame().evaluate(
        "() => [window.chatPanel.client.conversationUrl, window.chatPanel.client.token]"
    )
    response = page.request.delete(
        f"{client[0]}/attachments/{attachment_id}", headers={"Authorization": f"Bearer {client[1]}"}
    )
    assert response.status == 204
    widget.send("Here is the log.")
    assert widget.wait_until_complete() == "failed"
    expect(pending(widget)).to_have_count(1)
    widget.assert_accessible()
    # Removed and attached again, it goes with the next message; the list empties.
    row(widget, "notes.txt").get_by_role("button", name="Remove notes.txt").click()
    attach_with_button(widget, page, NOTES)
    wait_until_ready(widget, "notes.txt")
    widget.input.fill("")
    widget.input.press("Enter")  # no words needed with a file
    assert widget.wait_until_complete() == "completed"
    expect(pending(widget)).to_have_count(0)
    files = widget.turns.last.locator("xpath=preceding-sibling::li[1]").get_by_role("list", name="Attached files")
    expect(files.get_by_role("listitem")).to_have_count(1)
    widget.assert_accessible()  # sent

    # Offline, a message with files waits for the visitor, words and files kept.
    attach_with_button(widget, page, SCREENSHOT)
    wait_until_ready(widget, "screenshot.png")
    page.context.set_offline(True)
    widget.panel_frame().wait_for_function("() => !navigator.onLine")
    widget.send("And a screenshot.")
    offline = "You are offline. Files go only while online: send again once the connection is back."
    expect(widget.frame.locator("[data-chat-alert]")).to_have_text(offline)
    expect(widget.input).to_have_value("And a screenshot.")
    expect(pending(widget)).to_have_count(1)
    page.context.set_offline(False)


@pytest.mark.firefox_sample(lang=["ar"])
@pytest.mark.parametrize("lang", ["fr", "ar"])
def test_A100_every_word_and_size_is_in_the_panels_language(embed, chat_server_factory, page: Page, lang):
    server = chat_server_factory(ATTACHMENT_MAX_BYTES=1_000_000)
    widget = embed(server, lang=lang)
    widget.open()
    words = texts(lang)
    attach = widget.frame.get_by_role("button", name=panel_strings(lang)["attach"], exact=True)
    expect(attach).to_be_visible()
    attach_with_button(widget, page, NOTES, ("video.txt", "text/plain", b"v" * 1_500_000))
    wait_until_ready(widget, "notes.txt")
    expect(widget.frame.get_by_role("list", name=words["listLabel"])).to_be_visible()
    expect(
        row(widget, "notes.txt").get_by_role("button", name=words["removeLabel"].replace("{name}", "notes.txt"))
    ).to_be_visible()
    refused = row(widget, "video.txt").locator(".chat-file__status")
    expected_limit = widget.panel_frame().evaluate(
        "(lang) => new Intl.NumberFormat(lang, { style: 'unit', unit: 'megabyte', maximumFractionDigits: 1 }).format(1)",
        lang,
    )
    expect(refused).to_contain_text(expected_limit)
    assert "is too big" not in refused.inner_text() and "The limit is" not in refused.inner_text()
    direction = "rtl" if lang == "ar" else "ltr"
    assert refused.evaluate("(node) => getComputedStyle(node).direction") == direction
    assert "Uploading" not in " ".join(said(widget))
    widget.assert_accessible()
