"""docs/accessibility.md, "Offline and other tabs", line by line: one test per contract id
(A43…A45).

Like test_accessibility_contract.py: the widget embedded in a host page on another origin,
real Chromium and Firefox ESR, axe in every new state — with two tabs, in each (tests/
test_docs.py checks that no id is left without its test). test_offline.py and
test_tab_sync.py cover each flow at length.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import BrowserContext, Page, expect

from widget_server.testing import ChatWidget

from ..helpers import CountingBackend
from .test_offline import QUEUED, assert_waiting, held_request_ids, open_with_outbox, record_submits
from .test_tab_sync import focus, open_tab, start_over

pytestmark = pytest.mark.e2e


def polite_texts(widget: ChatWidget) -> list[str]:
    return [a["text"] for a in widget.announcements() if a["politeness"] == "polite"]


def spoken(widget: ChatWidget) -> str:
    """Everything the polite region said, as one run of words (batches may differ per tab)."""
    return re.sub(r"\s+", " ", " ".join(polite_texts(widget))).strip()


def test_A43_a_message_sent_offline_waits_visibly_is_said_once_and_is_sent_once_when_online(
    embed, page: Page, context: BrowserContext, chat_server_factory
):
    server = chat_server_factory()
    submitted = record_submits(server)
    widget = embed(server)
    open_with_outbox(widget)
    context.set_offline(True)
    widget.input.press_sequentially("/echo sent when back")
    widget.input.press("Enter")  # by keyboard, as A9
    assert_waiting(widget, "/echo sent when back")
    expect(widget.input).to_be_focused()
    expect(widget.input).to_have_value("")
    assert polite_texts(widget).count(QUEUED) == 1
    assert not [a for a in widget.announcements() if a["politeness"] == "assertive"]  # not an error
    widget.assert_accessible()
    (request_id,) = held_request_ids(widget)
    # Kept across a reload of the panel: the tab is left while offline and the site opened again.
    url = page.url
    page.close()
    context.set_offline(False)
    page = context.new_page()
    page.goto(url)
    widget = ChatWidget(page)
    widget.open()
    assert widget.wait_until_complete() == "completed"
    assert submitted == [request_id]
    expect(widget.turns.first).not_to_have_attribute("data-state", "waiting")
    expect(widget.turns.first.locator(".turn__status")).to_have_count(0)
    widget.wait_for_announcement("Answer complete.")
    assert QUEUED not in polite_texts(widget)  # said when it was typed, not again after the reload
    widget.assert_accessible()


def test_A44_an_answer_started_in_another_tab_streams_here_with_the_same_states_and_cues(
    embed, context: BrowserContext, host_site, chat_server_factory, browser_name, seed_answers
):
    server = chat_server_factory(DEMO_DELAY_SECONDS=0.3)
    backend = CountingBackend(server.service.backend)
    server.service.backend = backend
    one = embed(server)
    two = open_tab(context, host_site, server, browser_name)
    focus(one)
    seed = seed_answers["improvisation"]  # several sentences: long enough to watch it stream
    one.send(seed["question"])
    answer = two.last_answer()
    expect(answer).to_have_attribute("aria-busy", "true")
    two.page.bring_to_front()
    expect(two.stop_button).to_be_visible()
    expect(two.input).to_be_focused()  # nothing in the following tab moved its focus
    two.assert_accessible()
    # A background tab does no rendering work, so its ResizeObserver (scroll-follow.js: the
    # transcript becomes a tab stop once it scrolls) runs only when the tab is shown again.
    one.page.bring_to_front()
    one.panel_frame().evaluate("() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")
    one.assert_accessible()
    two.page.bring_to_front()  # the following tab is the one being watched again
    assert two.wait_until_complete() == "completed"
    assert one.wait_until_complete() == "completed"
    expect(answer).not_to_have_attribute("aria-busy", "true")
    two.wait_for_announcement("Answer complete.")
    one.wait_for_announcement("Answer complete.")
    # The same cues and sentences, each once, in both tabs.
    assert polite_texts(two)[0] == "Generating answer…"
    assert spoken(two) == spoken(one)
    assert backend.calls == 1
    expect(two.input).to_be_focused()
    two.assert_accessible()

    # Stop in the following tab stops the one answer, in both.
    one.send("/scenario slow")
    expect(answer := two.last_answer()).to_have_attribute("aria-busy", "true")
    expect(answer.locator(".turn__body")).not_to_be_empty()
    two.stop_button.focus()
    two.stop_button.press("Enter")
    assert two.wait_until_complete() == "cancelled"
    assert one.wait_until_complete() == "cancelled"
    two.wait_for_announcement("Answer stopped.")
    one.wait_for_announcement("Answer stopped.")
    expect(two.input).to_be_focused()
    two.assert_accessible()


@pytest.mark.parametrize(
    ("delete", "said"),
    [
        (False, "The conversation was started over in another tab."),
        (True, "The conversation was deleted in another tab."),
    ],
    ids=["new", "delete"],
)
def test_A45_a_new_conversation_in_another_tab_empties_this_one_and_says_so_once(
    embed, context: BrowserContext, host_site, chat_server_factory, browser_name, delete, said
):
    server = chat_server_factory()
    one = embed(server)
    one.open()
    one.send("/echo the old conversation")
    assert one.wait_until_complete() == "completed"
    two = open_tab(context, host_site, server, browser_name)
    expect(two.turns).to_have_count(2)
    two.input.fill("my draft")
    focus(one)
    start_over(one, delete=delete)
    expect(two.turns).to_have_count(0)
    two.wait_for_announcement(said)
    assert polite_texts(two).count(said) == 1
    two.page.bring_to_front()
    expect(two.input).to_be_focused()
    expect(two.input).to_have_value("my draft")
    expect(two.frame.locator("[data-chat-empty]")).to_be_visible()
    two.assert_accessible()
