"""docs/accessibility.md, "Sources and progress", line by line: one test per contract id
(A110…A113).

Like test_accessibility_contract.py: the widget embedded in a host page on another origin, real
Chromium and Firefox ESR, axe in every new state (tests/test_docs.py checks that no id is left
without its test). The demo's `/scenario progress` and `/scenario sources` are what a visitor
would play; `PartsBackend` below, loaded by its path as a site's own backend is, sends what the
demo does not: progress lines closer than 2 s and sources without a link.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import expect

from widget_server.answer_parts import Progress, Source
from widget_server.backends.base import CancelToken, Turn
from widget_server.backends.demo import (
    DEMO_SOURCES,
    PROGRESS_ANSWER,
    PROGRESS_LINES,
    SOURCES_ANSWER,
    SOURCES_PROGRESS,
)

from .test_answer_tools import EN, ask, polite, press, reopen, server_history

pytestmark = pytest.mark.e2e

WORDS = EN["sources"]
TWO_SOURCES = WORDS["count"]["other"].format(count=2)  # "2 sources"


class PartsBackend:
    """`throttled`: progress lines closer than the panel's 2 s, one of them twice; `mixed`: a
    source with an http link, one with none, one the panel must not link (answer_parts.py only
    lets http and https through, so this one comes as a plain title)."""

    name = "parts"

    def stream(self, turn: Turn, cancel: CancelToken) -> Iterator[str | Source | Progress]:
        if turn.text == "throttled":
            yield Progress("Searching…")
            yield Progress("Still searching…")  # within 2 s of the last said: shown only
            if cancel.wait(2.3):
                return
            yield Progress("Searching…")  # said already in this answer
            yield Progress("Reading 1 document…")  # more than 2 s after the last said
            if cancel.wait(1.5):  # long enough for a loaded machine's test to see it shown
                return
            yield "Done.\n"
        elif turn.text == "mixed":
            yield "Plain [a], linked [b], and [c] with no source.\n"
            yield Source("a", "A title without a link", None, "The passage used.")
            yield Source("b", "Linked over http", "http://example.com/b")


@pytest.fixture
def parts_server(chat_server_factory):
    return chat_server_factory(BACKEND="tests.e2e.test_accessibility_contract_sources:PartsBackend")


def status_of(widget) -> str:
    return widget.last_answer().locator(".turn__status").inner_text()


def test_A110_progress_is_the_busy_answers_status_said_once_per_line_at_most_every_2_s(
    embed, chat_server, parts_server
):
    widget = embed()
    widget.open()
    widget.send("/scenario progress")
    answer = widget.last_answer()
    expect(answer.locator(".turn__status")).to_have_text(PROGRESS_LINES[0])
    expect(answer).to_have_attribute("aria-busy", "true")
    widget.assert_accessible()  # busy, its progress line showing
    expect(answer.locator(".turn__status")).to_have_text(PROGRESS_LINES[1], timeout=10_000)
    assert widget.wait_until_complete() == "completed"
    expect(answer.locator(".turn__status")).to_be_hidden()
    widget.wait_for_announcement(EN["complete"])
    said = polite(widget)
    # Each line once, on its own, after the start cue and before the first sentence.
    assert said[:3] == [EN["generating"], *PROGRESS_LINES], said
    assert said[-1] == EN["complete"]
    # Never the answer's text: not shown in it, not in the history.
    assert answer.locator(".turn__body").inner_text().strip() == PROGRESS_ANSWER.strip()
    (_, reply) = server_history(chat_server, widget)
    assert reply["text"] == PROGRESS_ANSWER and "Searching" not in str(reply)

    # Closer than 2 s, or said before in this answer: shown, not said.
    widget = embed(parts_server)
    widget.open()
    widget.send("throttled")
    answer = widget.last_answer()
    expect(answer.locator(".turn__status")).to_have_text("Reading 1 document…", timeout=10_000)
    assert widget.wait_until_complete() == "completed"
    widget.wait_for_announcement(EN["complete"])
    said = polite(widget)
    assert said == [EN["generating"], "Searching…", "Reading 1 document…", "Done.", EN["complete"]], said


def test_A111_sources_show_closed_under_the_answer_and_their_count_is_said_once_after_the_end(embed, page, chat_server):
    widget = embed()
    widget.open()
    ask(widget, "/scenario sources")
    answer = widget.last_answer()
    toggle = answer.get_by_role("button", name=WORDS["toggle"].format(count=2), exact=True)
    expect(toggle).to_have_attribute("aria-expanded", "false")
    listed = answer.locator(f"#{toggle.get_attribute('aria-controls')}")
    expect(listed).to_be_hidden()
    # Right under the answer's text.
    assert answer.locator(".turn__body + .sources").count() == 1
    widget.wait_for_announcement(TWO_SOURCES)
    said = polite(widget)
    assert said.count(TWO_SOURCES) == 1
    assert said[-2:] == [EN["complete"], TWO_SOURCES], said  # on its own, after the cue
    assert said[:2] == [EN["generating"], SOURCES_PROGRESS], said
    assert not [text for text in said[2:-2] if "source" in text.lower() and "[" not in text], said
    widget.assert_accessible()
    # Restored: shown as they were, not said again.
    widget = reopen(page)
    answer = widget.last_answer()
    expect(answer.get_by_role("button", name=WORDS["toggle"].format(count=2), exact=True)).to_have_attribute(
        "aria-expanded", "false"
    )
    expect(answer.locator(".sources__item")).to_have_count(2)
    page.wait_for_timeout(300)  # the restored part draws in a task of its own: nothing is said then
    assert TWO_SOURCES not in polite(widget)
    # A stopped answer shows none.
    widget.send("/scenario slow")
    widget.stop()
    assert widget.wait_until_complete() == "cancelled"
    expect(widget.last_answer().locator(".sources")).to_have_count(0)


def test_A112_the_sources_button_toggles_by_keyboard_and_links_open_in_a_new_tab(embed, parts_server, chat_server):
    widget = embed()
    widget.open()
    ask(widget, "/scenario sources")
    answer = widget.last_answer()
    toggle = answer.get_by_role("button", name=WORDS["toggle"].format(count=2), exact=True)
    listed = answer.locator(".sources__list")
    press(widget, toggle, "Enter")
    expect(toggle).to_have_attribute("aria-expanded", "true")
    expect(listed).to_be_visible()
    expect(toggle).to_be_focused()
    assert toggle.evaluate("n => getComputedStyle(n).outlineWidth") == "3px"  # A12
    box = toggle.bounding_box()
    assert box and box["width"] >= 44 and box["height"] >= 44  # A13
    widget.assert_accessible()  # open
    links = listed.get_by_role("link")
    expect(links).to_have_count(2)
    for link, source in zip(links.all(), DEMO_SOURCES, strict=True):
        expect(link).to_have_accessible_name(f"{source.title} {WORDS['newTab']}")
        expect(link).to_have_attribute("href", source.url)
        expect(link).to_have_attribute("target", "_blank")
        expect(link).to_have_attribute("rel", "noopener noreferrer")
    expect(listed.locator(".sources__snippet")).to_have_text([source.snippet for source in DEMO_SOURCES])
    expect(listed.locator(".sources__id")).to_have_text(["[1]", "[2]"])
    widget.page.keyboard.press("Space")
    expect(toggle).to_have_attribute("aria-expanded", "false")
    expect(listed).to_be_hidden()
    widget.assert_accessible()  # closed again

    # A source without an address is its title as text; an http one is a link.
    widget = embed(parts_server)
    widget.open()
    ask(widget, "mixed")
    answer = widget.last_answer()
    press(widget, answer.get_by_role("button", name=WORDS["toggle"].format(count=2), exact=True), "Enter")
    items = answer.locator(".sources__item")
    expect(items.nth(0).get_by_role("link")).to_have_count(0)
    expect(items.nth(0).locator(".sources__title")).to_have_text("A title without a link")
    expect(items.nth(1).get_by_role("link")).to_have_attribute("href", "http://example.com/b")
    widget.assert_accessible()


def test_A113_a_marker_links_to_its_source_and_the_answers_text_is_unchanged(embed, chat_server, parts_server):
    widget = embed()
    widget.open()
    ask(widget, "/scenario sources")
    answer = widget.last_answer()
    first, second = DEMO_SOURCES
    marker = answer.get_by_role("link", name=f"Source 1: {first.title}", exact=True)
    expect(marker).to_have_text("[1]")
    expect(answer.get_by_role("link", name=f"Source 2: {second.title}", exact=True)).to_have_text("[2]")
    press(widget, marker, "Enter")
    expect(answer.locator(".sources__toggle")).to_have_attribute("aria-expanded", "true")
    expect(answer.locator(".sources__item").first).to_be_focused()
    widget.assert_accessible()
    # The text as it came: the view's text, the history and what was said keep the markers.
    assert answer.locator(".turn__body").inner_text().strip() == SOURCES_ANSWER.strip()
    (_, reply) = server_history(chat_server, widget)
    assert reply["text"] == SOURCES_ANSWER
    assert any("[1]" in text for text in polite(widget))
    # A marker naming no listed source stays text.
    widget = embed(parts_server)
    widget.open()
    ask(widget, "mixed")
    answer = widget.last_answer()
    expect(answer.locator(".sources__marker")).to_have_text(["[a]", "[b]"])
    assert "[c]" in answer.locator(".turn__body").inner_text()
