"""Zoom and short screens (docs/accessibility.md A39; WCAG 1.4.10 Reflow).

At 400 % zoom on a 1280×1024 screen the panel's viewport is 320×256 CSS px; an
earlier layout gave its header 61 px and the composer 192 px, leaving the conversation 24 px.
Here, at 320×256 and 256×320, standalone (/chat) and embedded (the floating panel is
full-screen there): the transcript's visible height is at least half the viewport's,
nothing scrolls sideways, the collapsed hint is still the message box's description,
and the message box starts at one line and grows as typed, up to a limit.
"""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import Frame, Locator, Page, expect

from ..helpers import REPO_ROOT

pytestmark = pytest.mark.e2e

EN = json.loads((REPO_ROOT / "static" / "widget" / "i18n" / "en.json").read_text(encoding="utf-8"))

SIZES = [pytest.param(320, 256, id="320x256"), pytest.param(256, 320, id="256x320")]

# The transcript's box clipped to the viewport: what the reader really sees of it.
VISIBLE_HEIGHT_JS = """() => {
    const box = document.querySelector('[data-chat-scroller]').getBoundingClientRect();
    return Math.min(box.bottom, innerHeight) - Math.max(box.top, 0);
}"""
SIDEWAYS_JS = "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"


def check_layout(frame: Frame, input_box: Locator) -> None:
    height = frame.evaluate("() => innerHeight")
    visible = frame.evaluate(VISIBLE_HEIGHT_JS)
    assert visible >= height / 2, f"the transcript shows {visible} of {height} px"
    assert frame.evaluate(SIDEWAYS_JS) <= 0
    # The hint is collapsed, yet still what a screen reader hears as the box's description.
    expect(frame.locator("#chat-hint")).to_be_hidden()
    expect(input_box).to_have_accessible_description(EN["composerHint"])
    for control in ("[data-chat-input]", "[data-chat-send]"):
        expect(frame.locator(control)).to_be_in_viewport()


def check_the_box_grows(frame: Frame, input_box: Locator) -> None:
    one_line = input_box.evaluate("n => n.getBoundingClientRect().height")
    assert one_line <= 48  # one line (44 px: the target size, A13)
    input_box.press_sequentially("First line")
    for line in ("second line", "third line"):
        input_box.press("Shift+Enter")
        input_box.press_sequentially(line)
    grown = input_box.evaluate("n => n.getBoundingClientRect().height")
    assert grown > one_line + 20
    # It grows up to a limit, then scrolls inside: the conversation keeps its share.
    for _ in range(12):
        input_box.press("Shift+Enter")
        input_box.press_sequentially("more")
    height = frame.evaluate("() => innerHeight")
    assert input_box.evaluate("n => n.getBoundingClientRect().height") <= 0.3 * height + 1
    assert frame.evaluate(VISIBLE_HEIGHT_JS) >= 0.3 * height
    assert frame.evaluate(SIDEWAYS_JS) <= 0
    input_box.fill("")


@pytest.mark.firefox_sample(width=[320])
@pytest.mark.parametrize(("width", "height"), SIZES)
def test_standalone_panel_on_a_short_screen(chat_server, page: Page, width, height):
    page.set_viewport_size({"width": width, "height": height})
    page.goto(chat_server.url + "/chat")
    page.locator("[data-chat-panel][data-ready='true']").wait_for()
    frame = page.main_frame
    input_box = page.locator("[data-chat-input]")
    check_layout(frame, input_box)
    check_the_box_grows(frame, input_box)
    input_box.fill("/scenario markdown")
    input_box.press("Enter")
    expect(page.locator("li.turn--assistant").last).to_have_attribute("data-state", "completed", timeout=30_000)
    check_layout(frame, input_box)


@pytest.mark.firefox_sample(width=[320])
@pytest.mark.parametrize(("width", "height"), SIZES)
def test_embedded_panel_on_a_short_screen(embed, page: Page, width, height):
    page.set_viewport_size({"width": width, "height": height})
    widget = embed()
    widget.open()
    frame = widget.panel_frame()
    # The floating panel fills the small screen (widget.js), so the panel's viewport is the page's.
    assert frame.evaluate("() => innerHeight") == height
    check_layout(frame, widget.input)
    check_the_box_grows(frame, widget.input)
    widget.send("/scenario markdown")
    assert widget.wait_until_complete() == "completed"
    check_layout(frame, widget.input)
    assert page.evaluate(SIDEWAYS_JS) <= 0  # nor the host page
    widget.assert_accessible()


def test_a_control_in_the_transcript_stays_in_view_as_the_end_grows(chat_server, page: Page):
    """WCAG 2.2 2.4.11 (Focus Not Obscured): at 320×256, pressing Helpful opens the comment
    field below it; following the end must not push the focused Helpful out of view."""
    page.set_viewport_size({"width": 320, "height": 256})
    page.goto(chat_server.url + "/chat")
    page.locator("[data-chat-panel][data-ready='true']").wait_for()
    input_box = page.locator("[data-chat-input]")
    input_box.fill("/echo One short answer.")
    input_box.press("Enter")
    answer = page.locator("li.turn--assistant").last
    expect(answer).to_have_attribute("data-state", "completed", timeout=30_000)
    helpful = answer.get_by_role("button", name=EN["answerTools"]["helpful"], exact=True)
    for _ in range(20):  # Shift+Tab from the composer, as a keyboard user would
        if helpful.evaluate("node => node === document.activeElement"):
            break
        page.keyboard.press("Shift+Tab")
    expect(helpful).to_be_focused()
    page.keyboard.press("Enter")
    expect(helpful).to_have_attribute("aria-pressed", "true")
    expect(answer.get_by_role("textbox")).to_be_visible()  # the comment field opened below
    page.evaluate("() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")
    expect(helpful).to_be_focused()
    view = page.locator("[data-chat-scroller]").bounding_box()
    box = helpful.bounding_box()
    assert view and box
    assert box["y"] >= view["y"] - 1 and box["y"] + box["height"] <= view["y"] + view["height"] + 1, (box, view)
