"""docs/accessibility.md, "Satisfaction after a hand-off" (A125–A127): one test per contract id.

The widget is embedded in a host page on another origin and driven by keyboard in real
Chromium and Firefox ESR; the agent's side is the server's HandoffService in-process for the
panel's lines (tests/e2e/test_handoff_widget.py's `Agent`) and the real console at /agent for
the console's line (tests/e2e/test_agent_console.py). axe runs in every new state: asked, sent,
skipped, the console showing the rating. tests/test_docs.py checks that every id has its test.
"""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import BrowserContext, expect

from ..helpers import HTTP, REPO_ROOT
from .test_agent_console import claim, signed_in, start_handoff_server, waiting_visitor
from .test_handoff_widget import (
    HANDOFF,
    HANDOFF_SETTINGS,
    Agent,
    assertive,
    conversation_of,
    fmt,
    polite,
    tab_to,
    talk_to_a_person,
    wait_until,
)

pytestmark = pytest.mark.e2e

SATISFACTION = json.loads(
    (REPO_ROOT / "static" / "widget" / "i18n" / "satisfaction" / "en.json").read_text(encoding="utf-8")
)["satisfaction"]
WORDS = [SATISFACTION[f"rating{rating}"] for rating in range(1, 6)]


@pytest.fixture
def server(chat_server_factory):
    return chat_server_factory(**HANDOFF_SETTINGS)


def ended_by_ana(embed, server, reason: str = "ended"):
    """The visitor talked with Ana (asked by keyboard), and Ana ended it: the widget, the agent,
    the conversation id, once the question is on screen."""
    agent = Agent(server)
    agent.present()
    widget = embed(server)
    widget.open()
    talk_to_a_person(widget)
    widget.wait_for_announcement(HANDOFF["queuedNext"])
    cid, _ = conversation_of(widget)
    agent.claim(cid)
    widget.wait_for_announcement(fmt(HANDOFF["assigned"], agent="Ana"))
    agent.end(cid, reason)
    expect(question(widget)).to_be_visible()
    return widget, agent, cid


def question(widget):
    return widget.frame.get_by_role("group", name=SATISFACTION["question"])


def tab_into(widget, group) -> int:
    """Shift+Tab from where the focus is until it is on one of the group's radio buttons (the
    checked one, or the browser's pick of an unchecked group); returns which, from 0."""
    focused = "g => [...g.querySelectorAll('input[type=radio]')].indexOf(document.activeElement)"
    for _ in range(40):
        index = group.evaluate(focused)
        if index >= 0:
            return int(index)
        widget.page.keyboard.press("Shift+Tab")
    raise AssertionError("Shift+Tab never reached the rating's radio buttons")


def choose(widget, group, rating: int) -> None:
    """The rating `rating` (1–5), by keyboard: into the group, then the arrows."""
    index = tab_into(widget, group)
    key = "ArrowRight" if rating - 1 > index else "ArrowLeft"
    for _ in range(abs(rating - 1 - index)):
        widget.page.keyboard.press(key)  # an arrow checks the radio button it moves to
    if index == rating - 1:
        widget.page.keyboard.press("Space")  # landed on it: Space checks it
    expect(group.get_by_role("radio").nth(rating - 1)).to_be_checked()


def answers(agent, cid: str) -> list[tuple[int, str]]:
    record = agent.service.stored_record(cid) or {}
    return [(entry["rating"], entry["comment"]) for entry in record.get("satisfaction", [])]


def test_A125_the_question_is_a_labelled_radio_group_said_once_without_taking_focus(embed, server):
    widget, agent, cid = ended_by_ana(embed, server)
    group = question(widget)
    expect(group.locator("legend")).to_have_text(SATISFACTION["question"])
    radios = group.get_by_role("radio")
    expect(radios).to_have_count(5)
    for index, word in enumerate(WORDS):
        expect(radios.nth(index)).to_have_accessible_name(word)
        expect(group.get_by_text(word, exact=True)).to_be_visible()  # a visible word, not a star
    expect(widget.frame.get_by_role("textbox", name=SATISFACTION["comment"])).to_be_visible()
    expect(widget.frame.get_by_role("button", name=SATISFACTION["send"])).to_be_visible()
    expect(widget.frame.get_by_role("button", name=SATISFACTION["skip"])).to_be_visible()
    # It never took the focus: the composer has it, as it had when Ana left.
    expect(widget.input).to_be_focused()
    widget.wait_for_announcement(SATISFACTION["asked"])
    ended = fmt(HANDOFF["ended"], agent="Ana")
    said = polite(widget)
    assert said.count(SATISFACTION["asked"]) == 1 and said.index(ended) < said.index(SATISFACTION["asked"])
    widget.assert_accessible()
    # Shift+Tab from the composer reaches it; the arrows move within the group.
    tab_to(widget, widget.frame.get_by_role("button", name=SATISFACTION["skip"]))
    landed = tab_into(widget, group)
    step, moved = ("ArrowLeft", landed - 1) if landed > 0 else ("ArrowRight", 1)
    widget.page.keyboard.press(step)
    expect(radios.nth(moved)).to_be_focused()
    expect(radios.nth(moved)).to_be_checked()
    widget.page.wait_for_timeout(500)
    assert polite(widget).count(SATISFACTION["asked"]) == 1
    assert answers(agent, cid) == []  # choosing sends nothing
    # A visitor who ends the next hand-off themselves is not asked.
    said_before = len(widget.announcements())  # the first hand-off said "queued next" too
    talk_to_a_person(widget)
    expect(question(widget)).to_have_count(0)  # a new hand-off: the old question goes
    widget.wait_for_announcement(HANDOFF["queuedNext"], after=said_before)
    agent.claim(cid)
    end_chat = widget.frame.get_by_role("button", name=fmt(HANDOFF["endChat"], agent="Ana"))
    tab_to(widget, end_chat)
    widget.page.keyboard.press("Enter")
    expect(widget.frame.locator(".handoff-bar")).to_be_hidden()
    widget.page.wait_for_timeout(500)
    expect(question(widget)).to_have_count(0)


def test_A126_send_by_keyboard_thanks_once_skip_is_remembered_and_a_reload_asks_quietly(embed, server, page):
    widget, agent, cid = ended_by_ana(embed, server)
    widget.wait_for_announcement(SATISFACTION["asked"])
    group = question(widget)
    radios = group.get_by_role("radio")
    send = widget.frame.get_by_role("button", name=SATISFACTION["send"])
    # Send without a rating: held, said once assertively, focus to the first choice.
    tab_to(widget, send)
    widget.page.keyboard.press("Enter")
    expect(radios.first).to_be_focused()
    expect(group).to_have_accessible_description(SATISFACTION["choose"])
    wait_until(lambda: SATISFACTION["choose"] in assertive(widget))
    assert answers(agent, cid) == []
    widget.assert_accessible()
    # A reload before answering asks again, shown and not said again.
    page.reload()
    widget.launcher.wait_for()
    widget.open()
    expect(question(widget)).to_be_visible()
    page.wait_for_timeout(500)
    assert SATISFACTION["asked"] not in polite(widget)
    # Good (the fourth), a comment, Send: by keyboard alone.
    choose(widget, question(widget), 4)
    widget.page.keyboard.press("Tab")
    expect(widget.frame.get_by_role("textbox", name=SATISFACTION["comment"])).to_be_focused()
    widget.page.keyboard.type("Ana was quick — merci!")
    widget.page.keyboard.press("Tab")
    send = widget.frame.get_by_role("button", name=SATISFACTION["send"])  # the reloaded panel's
    expect(send).to_be_focused()
    widget.page.keyboard.press("Enter")
    thanks = widget.frame.locator(".satisfaction__thanks")
    expect(thanks).to_have_text(SATISFACTION["thanks"])
    expect(question(widget)).to_have_count(0)
    expect(widget.input).to_be_focused()
    widget.wait_for_announcement(SATISFACTION["thanks"])
    assert answers(agent, cid) == [(4, "Ana was quick — merci!")]
    widget.assert_accessible()
    page.wait_for_timeout(500)
    assert polite(widget).count(SATISFACTION["thanks"]) == 1
    # Answered: a reload asks nothing.
    page.reload()
    widget.launcher.wait_for()
    widget.open()
    expect(widget.input).to_be_visible()
    page.wait_for_timeout(500)
    expect(question(widget)).to_have_count(0)

    # The next hand-off, skipped: the question goes, nothing is said or sent, and a reload
    # does not ask again.
    talk_to_a_person(widget)
    widget.wait_for_announcement(HANDOFF["queuedNext"])
    agent.claim(cid)
    widget.wait_for_announcement(fmt(HANDOFF["assigned"], agent="Ana"))
    agent.end(cid, "returned")
    skip = widget.frame.get_by_role("button", name=SATISFACTION["skip"])
    tab_to(widget, skip)
    widget.page.keyboard.press("Enter")
    expect(question(widget)).to_have_count(0)
    expect(widget.input).to_be_focused()
    widget.assert_accessible()
    assert answers(agent, cid) == [(4, "Ana was quick — merci!")]
    page.reload()
    widget.launcher.wait_for()
    widget.open()
    expect(widget.input).to_be_visible()
    page.wait_for_timeout(500)
    expect(question(widget)).to_have_count(0)


def test_A127_the_console_shows_the_rating_to_the_agent_who_ended_it_said_once(
    chat_server_factory, tmp_path, context: BrowserContext
):
    server = start_handoff_server(chat_server_factory, tmp_path)
    console = signed_in(context, server, "ana")
    visitor = waiting_visitor(server, console)
    claim(console, visitor)
    console.page.get_by_role("button", name="End", exact=True).click()
    console.wait_said("Conversation ended.")
    expect(console.root).to_have_attribute("data-conversation-state", "ended")
    handoff_seq = HTTP.get(f"{server.url}/api/v1/conversations/{visitor.conversation_id}", headers=visitor.headers)
    assert handoff_seq.status_code == 200
    events = HTTP.get(visitor.url + "/events", headers=visitor.headers).text
    ended_seq = max(int(seq) for seq in re.findall(rf"id: {visitor.conversation_id}:(\d+)", events))
    comment = "שלום — thanks, <b>Ana</b>!"
    given = HTTP.post(
        visitor.url + "/satisfaction",
        json={"handoff": ended_seq, "rating": 4, "comment": comment},
        headers=visitor.headers,
    )
    assert given.status_code == 201, given.text
    rating = console.transcript.last
    expect(rating).to_contain_text("Visitor's rating")
    expect(rating).to_contain_text("4 of 5, Good")
    shown = rating.locator(".transcript__comment")
    expect(shown).to_have_text(comment)  # as text: the <b> is characters
    expect(shown).to_have_attribute("dir", "auto")
    announced = "The visitor rated the conversation: 4 of 5, Good."
    console.wait_said(announced)
    console.assert_accessible()
    # Once: a resumed stream or a reopened conversation never says it again.
    console.page.wait_for_timeout(1500)
    assert console.said("polite").count(announced) == 1
    expect(console.page.locator("[data-agent-transcript] > li.transcript__item--satisfaction")).to_have_count(1)
