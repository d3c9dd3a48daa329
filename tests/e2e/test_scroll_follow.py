"""Every end state is scrolled into view while the reader follows the end, never after
they scrolled up to re-read (docs/accessibility.md A38).

Each end state — a failure, a stop, an offered action, a completed answer — comes
below a long answer, so it lands out of view unless the panel follows it. Following:
the last answer's bottom and every control in it are inside the transcript's visible
rectangle. Scrolled up: the transcript's scrollTop is exactly what the reader left.
The defect this pins: an answer refused at once (a rate limit) after a long
answer kept its Retry button 206–228 px below the visible area.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.e2e

# Firefox ESR's share (docs/testing.md): the cases marked chromium_only run in Chromium alone.
SCROLL_FIREFOX = "one follow-or-stay decision (scroll-follow.js) for every end state; Firefox scrolls and measures it with the completed answer's two cases, scrolling back to the end, and A38"

# Bottom of the last answer and each of its controls, against the transcript's visible box.
OUT_OF_VIEW_JS = """() => {
    const scroller = document.querySelector('[data-chat-scroller]');
    const view = scroller.getBoundingClientRect();
    const answers = document.querySelectorAll('[data-chat-transcript] > li.turn--assistant');
    const last = answers[answers.length - 1];
    const out = [];
    const answerBox = last.getBoundingClientRect();
    if (answerBox.bottom > view.bottom + 1) out.push(['answer bottom', answerBox.bottom - view.bottom]);
    // The end state's own controls: Retry or an action card's (.turn__actions), else the
    // answer's tools. All of them may not fit together in a short panel.
    const shown = (scope) => [...last.querySelectorAll(scope)].filter((n) => n.getClientRects().length);
    const endControls = shown('.turn__actions button');
    for (const control of endControls.length ? endControls : shown('button')) {
        const box = control.getBoundingClientRect();
        if (box.top < view.top - 1 || box.bottom > view.bottom + 1)
            out.push([control.textContent, box.bottom - view.bottom]);
    }
    return out;
}"""

# Let the panel finish laying out and scrolling (ResizeObserver callbacks run before paint).
SETTLE_JS = "() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(() => done(true))))"


def long_answer_first(widget) -> None:
    widget.open()
    widget.send("/scenario markdown")
    assert widget.wait_until_complete() == "completed"
    frame = widget.panel_frame()
    assert frame.evaluate(
        "() => { const s = document.querySelector('[data-chat-scroller]'); return s.scrollHeight > 2 * s.clientHeight; }"
    )


def scroll_up_as_a_reader(widget, page) -> int:
    """Wheel up over the transcript, as a person re-reading would; returns the scrollTop left."""
    box = widget.frame.locator("[data-chat-scroller]").bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    scroller = widget.frame.locator("[data-chat-scroller]")
    before = scroller.evaluate("s => s.scrollTop")
    page.mouse.wheel(0, -600)
    widget.panel_frame().wait_for_function(
        "(before) => document.querySelector('[data-chat-scroller]').scrollTop < before - 300", arg=before
    )
    widget.panel_frame().evaluate(SETTLE_JS)
    return scroller.evaluate("s => s.scrollTop")


def assert_in_view(widget) -> None:
    frame = widget.panel_frame()
    frame.evaluate(SETTLE_JS)
    # Controls may arrive a little after the state (an action card, the answer's tools):
    # wait until nothing is out of view.
    try:
        frame.wait_for_function(f"() => ({OUT_OF_VIEW_JS})().length === 0", timeout=5_000)
    except Exception:
        raise AssertionError(f"out of view: {frame.evaluate(OUT_OF_VIEW_JS)}") from None


def assert_left_where_they_were(widget, top: int) -> None:
    frame = widget.panel_frame()
    frame.evaluate(SETTLE_JS)
    frame.evaluate(SETTLE_JS)
    assert frame.evaluate("() => document.querySelector('[data-chat-scroller]').scrollTop") == top
    assert frame.evaluate(OUT_OF_VIEW_JS) != []  # the end state really is out of view


# -- a failure ----------------------------------------------------------------


@pytest.mark.chromium_only(reason=SCROLL_FIREFOX)
def test_a_failure_at_once_below_a_long_answer_is_scrolled_into_view(embed, chat_server_factory):
    server = chat_server_factory(RATE_LIMITS=True, RATE_LIMIT_MESSAGES_CONVERSATION="1/minute", RATE_LIMIT_CLIENT="")
    widget = embed(server)
    long_answer_first(widget)
    widget.send("/echo refused at once")
    assert widget.wait_until_complete() == "failed"
    expect(widget.last_answer().get_by_role("button")).not_to_have_count(0)  # Retry
    assert_in_view(widget)
    widget.assert_accessible()


@pytest.mark.chromium_only(reason=SCROLL_FIREFOX)
def test_a_failure_after_the_reader_scrolled_up_leaves_them_there(embed, chat_server_factory, page):
    # `hang` streams a sentence, then the time limit fails it: time to scroll up meanwhile.
    widget = embed(chat_server_factory(MESSAGE_TIME_LIMIT_SECONDS=12))
    long_answer_first(widget)
    widget.send("/scenario hang")
    expect(widget.last_answer()).to_have_attribute("data-state", "streaming")
    top = scroll_up_as_a_reader(widget, page)
    assert widget.wait_until_complete() == "failed"
    assert_left_where_they_were(widget, top)


# -- a stop -------------------------------------------------------------------


@pytest.mark.chromium_only(reason=SCROLL_FIREFOX)
def test_a_stopped_answer_is_scrolled_into_view(embed):
    widget = embed()
    long_answer_first(widget)
    widget.send("/scenario slow")
    expect(widget.last_answer().locator(".turn__body")).not_to_be_empty()
    widget.stop_button.press("Enter")
    assert widget.wait_until_complete() == "cancelled"
    assert_in_view(widget)


@pytest.mark.chromium_only(reason=SCROLL_FIREFOX)
def test_a_stop_after_the_reader_scrolled_up_leaves_them_there(embed, page):
    widget = embed()
    long_answer_first(widget)
    widget.send("/scenario slow")
    expect(widget.last_answer().locator(".turn__body")).not_to_be_empty()
    top = scroll_up_as_a_reader(widget, page)
    widget.stop_button.press("Enter")
    assert widget.wait_until_complete() == "cancelled"
    assert_left_where_they_were(widget, top)


# -- an offered action ------------------------------------------------------------


@pytest.mark.chromium_only(reason=SCROLL_FIREFOX)
def test_an_offered_action_is_scrolled_into_view(embed):
    widget = embed()
    long_answer_first(widget)
    widget.send("/scenario action")
    assert widget.wait_until_complete() == "completed"
    expect(widget.last_answer().locator(".action")).to_have_count(1)
    assert_in_view(widget)
    widget.assert_accessible()


@pytest.mark.chromium_only(reason=SCROLL_FIREFOX)
def test_an_offered_action_after_the_reader_scrolled_up_leaves_them_there(embed, page):
    widget = embed()
    long_answer_first(widget)
    widget.send("/scenario action-slow")  # 4 s before the card: time to scroll up
    expect(widget.last_answer().locator(".turn__body")).not_to_be_empty()
    top = scroll_up_as_a_reader(widget, page)
    assert widget.wait_until_complete() == "completed"
    expect(widget.last_answer().locator(".action")).to_have_count(1)
    assert_left_where_they_were(widget, top)


# -- a completed answer -----------------------------------------------------------


def test_a_completed_answer_is_scrolled_into_view(embed):
    widget = embed()
    long_answer_first(widget)
    widget.send("which arpeggio fits Am F C G")
    assert widget.wait_until_complete() == "completed"
    assert_in_view(widget)


def test_a_completed_answer_after_the_reader_scrolled_up_leaves_them_there(embed, page):
    widget = embed()
    long_answer_first(widget)
    widget.send("/scenario slow")  # a sentence a second: time to scroll up
    expect(widget.last_answer().locator(".turn__body")).not_to_be_empty()
    top = scroll_up_as_a_reader(widget, page)
    assert widget.wait_until_complete() == "completed"
    assert_left_where_they_were(widget, top)


def test_scrolling_back_to_the_end_follows_again(embed, page):
    widget = embed()
    long_answer_first(widget)
    widget.send("/scenario slow")
    expect(widget.last_answer().locator(".turn__body")).not_to_be_empty()
    scroll_up_as_a_reader(widget, page)
    page.mouse.wheel(0, 100_000)  # back to the bottom
    widget.stop_button.press("Enter")
    assert widget.wait_until_complete() == "cancelled"
    assert_in_view(widget)
