"""docs/accessibility.md, "Reading and layout" (A37–A42), one test per id.

Each runs in Chromium and Firefox ESR (the default parametrization) with the widget
embedded on another origin, and runs axe in each new state. The fuller checks are in
tests/e2e/test_scroll_follow.py (A38), tests/e2e/test_short_screens.py (A39, A42) and
tests/e2e/test_second_engine.py (A37, A41).
"""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import Page, expect

from widget_server.testing import ChatWidget

from ..conftest import TEST_CONFIG
from ..helpers import REPO_ROOT, LiveServer
from .test_scroll_follow import (
    OUT_OF_VIEW_JS,
    assert_in_view,
    assert_left_where_they_were,
    long_answer_first,
    scroll_up_as_a_reader,
)
from .test_second_engine import assert_clean
from .test_short_screens import check_layout, check_the_box_grows

pytestmark = pytest.mark.e2e

EN = json.loads((REPO_ROOT / "static" / "widget" / "i18n" / "en.json").read_text(encoding="utf-8"))

# Words of every table cell drawn on more than one line: a word split across lines
# ("Minut es") has client rects on two lines.
SPLIT_WORDS_JS = """(root) => {
    const split = [];
    for (const cell of root.querySelectorAll('th, td')) {
        const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
        for (let node = walker.nextNode(); node; node = walker.nextNode()) {
            for (const match of node.data.matchAll(/\\S+/g)) {
                const range = document.createRange();
                range.setStart(node, match.index);
                range.setEnd(node, match.index + match[0].length);
                const lines = new Set(Array.from(range.getClientRects(), (r) => Math.round(r.top)));
                if (lines.size > 1) split.push(match[0]);
            }
        }
    }
    return split;
}"""


def focus_ring(locator) -> tuple[str, float]:
    return locator.evaluate("n => [getComputedStyle(n).outlineStyle, parseFloat(getComputedStyle(n).outlineWidth)]")


def test_A37_the_transcript_is_a_labelled_region_and_a_tab_stop_only_while_it_scrolls(embed, page: Page):
    widget = embed()
    widget.open()
    frame = widget.panel_frame()
    scroller = widget.frame.locator("[data-chat-scroller]")
    # One main landmark (the panel); the transcript is a region named "Conversation" in it.
    expect(widget.frame.get_by_role("main")).to_have_count(1)
    region = widget.frame.get_by_role("region", name=EN["transcriptLabel"])
    expect(region).to_have_count(1)
    assert region.evaluate("n => n.matches('[data-chat-scroller]')")
    # Empty, it scrolls nothing: no tab stop.
    expect(scroller).not_to_have_attribute("tabindex", "0")
    widget.assert_accessible()
    assert_clean(frame)
    # A long answer: it scrolls, so it is a stop, the next one after the header's last button.
    long_answer_first(widget)
    expect(scroller).to_have_attribute("tabindex", "0")
    widget.frame.locator("[data-chat-close]").focus()
    page.keyboard.press("Tab")
    expect(scroller).to_be_focused()
    style, thickness = focus_ring(scroller)
    assert style != "none" and thickness >= 3
    # The keyboard scrolls it.
    bottom = scroller.evaluate("n => n.scrollTop")
    page.keyboard.press("PageUp")
    frame.wait_for_function("(b) => document.querySelector('[data-chat-scroller]').scrollTop < b", arg=bottom)
    widget.assert_accessible()
    assert_clean(frame)


def test_A38_end_states_come_into_view_only_for_a_reader_at_the_end(embed, chat_server_factory, page: Page):
    # Following: an answer refused at once below a long answer shows its Retry button.
    server = chat_server_factory(RATE_LIMITS=True, RATE_LIMIT_MESSAGES_CONVERSATION="2/minute", RATE_LIMIT_CLIENT="")
    widget = embed(server)
    long_answer_first(widget)
    widget.send("/scenario slow")
    expect(widget.last_answer().locator(".turn__body")).not_to_be_empty()
    # Scrolled up to re-read: the stop leaves them where they were.
    top = scroll_up_as_a_reader(widget, page)
    widget.stop_button.press("Enter")
    assert widget.wait_until_complete() == "cancelled"
    assert_left_where_they_were(widget, top)
    widget.assert_accessible()
    # Back at the end, a refusal (the third message in a minute) is brought into view.
    page.mouse.wheel(0, 100_000)
    widget.panel_frame().wait_for_function(f"() => ({OUT_OF_VIEW_JS})().length === 0")
    widget.send("/echo refused at once")
    assert widget.wait_until_complete() == "failed"
    assert_in_view(widget)
    widget.assert_accessible()


@pytest.mark.firefox_sample(width=[320])
@pytest.mark.parametrize(("width", "height"), [(320, 256), (256, 320)])
def test_A39_short_screens_keep_half_the_height_for_the_conversation(embed, page: Page, width, height):
    page.set_viewport_size({"width": width, "height": height})
    widget = embed()
    widget.open()
    check_layout(widget.panel_frame(), widget.input)
    widget.assert_accessible()
    widget.send("/scenario markdown")
    assert widget.wait_until_complete() == "completed"
    check_layout(widget.panel_frame(), widget.input)
    widget.assert_accessible()


def test_A40_wide_tables_keep_words_whole_and_scroll_in_a_named_region(embed, page: Page):
    widget = embed()  # the floating panel: 400 px wide
    widget.open()
    assert widget.panel_frame().evaluate("() => innerWidth") == 400
    widget.send("/scenario markdown")
    assert widget.wait_until_complete() == "completed"
    frame = widget.panel_frame()
    box = widget.frame.locator(".md-wide")
    expect(box).to_have_count(1)
    assert box.evaluate("n => n.scrollWidth > n.clientWidth")  # wider than the answer
    assert box.evaluate(SPLIT_WORDS_JS) == []
    # The check sees a split word: with the old rule (any break point) it finds them.
    frame.evaluate(
        """() => {
            const sheet = new CSSStyleSheet();  // a constructed sheet: the CSP refuses inline <style>
            sheet.replaceSync('.md th, .md td { overflow-wrap: anywhere !important; }');
            document.adoptedStyleSheets = [...document.adoptedStyleSheets, sheet];
        }"""
    )
    assert box.evaluate(SPLIT_WORDS_JS) != []
    frame.evaluate("() => { document.adoptedStyleSheets = document.adoptedStyleSheets.slice(0, -1); }")
    assert box.evaluate(SPLIT_WORDS_JS) == []
    # A region named by the table's summary, a tab stop, scrolled by the keyboard.
    region = widget.frame.get_by_role("region", name="Table, 4 columns, 5 rows.")
    expect(region).to_have_attribute("tabindex", "0")
    region.focus()
    style, thickness = focus_ring(region)
    assert style != "none" and thickness >= 3
    page.keyboard.press("ArrowRight")
    frame.wait_for_function("() => document.querySelector('.md-wide').scrollLeft > 0")
    # The spoken text is unchanged: the announcer still summarises the table.
    assert any(entry["text"].find("Table, 4 columns, 5 rows.") >= 0 for entry in widget.announcements())
    widget.assert_accessible()
    # A narrow table is no region and no stop.
    widget.send("/echo | a | b |\n|---|---|\n| 1 | 2 |")
    assert widget.wait_until_complete() == "completed"
    narrow = widget.last_answer().locator(".md-wide")
    expect(narrow).not_to_have_attribute("role", "region")
    expect(narrow).not_to_have_attribute("tabindex", "0")
    widget.assert_accessible()


@pytest.fixture
def qa_server():
    server = LiveServer({**TEST_CONFIG, "QA": True, "DEMO_DELAY_SECONDS": 0.0}).start()
    yield server
    server.stop()


def test_A41_a_second_engine_finds_nothing(embed, qa_server, page: Page):
    widget = embed()
    widget.open()
    frame = widget.panel_frame()
    assert_clean(frame)
    widget.send("/scenario markdown")
    assert widget.wait_until_complete() == "completed"
    assert_clean(frame)
    widget.send("/scenario fail-provider")
    assert widget.wait_until_complete() == "failed"
    assert_clean(frame)
    widget.send("/scenario action")
    assert widget.wait_until_complete() == "completed"
    expect(widget.last_answer().locator(".action")).to_have_count(1)
    assert_clean(frame)
    widget.assert_accessible()
    # The QA page, its log and the panel it embeds.
    page.goto(f"{qa_server.url}/qa?lang=en")
    expect(page.locator("#qa-log-body tr[data-kind=ready]")).to_have_count(1)
    for qa_frame in page.frames:
        assert_clean(qa_frame)
    ChatWidget(page).assert_accessible()


def test_A42_the_message_box_starts_at_one_line_and_grows_as_typed(embed, page: Page):
    page.set_viewport_size({"width": 320, "height": 256})
    widget = embed()
    widget.open()
    check_the_box_grows(widget.panel_frame(), widget.input)
    widget.assert_accessible()
