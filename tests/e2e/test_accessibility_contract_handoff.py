"""docs/accessibility.md, "Talking to a person" (A53–A58): one test per contract id.

Each embeds the widget in a host page on another origin and drives it by keyboard in real
Chromium and Firefox ESR, with axe in every new state (queued, assigned, an agent's message
shown, ended, nobody available with the form, the form's errors, the message left). The
agent's side is the server's HandoffService, in-process (tests/e2e/test_handoff_widget.py).
tests/test_docs.py checks that every id has its test.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from .test_accessibility_contract_conversation import choose_announcements
from .test_handoff_widget import (
    EN,
    HANDOFF,
    HANDOFF_SETTINGS,
    Agent,
    agent_turns,
    assertive,
    conversation_of,
    fmt,
    polite,
    queue_someone_else,
    tab_to,
    talk_to_a_person,
    wait_until,
)

pytestmark = pytest.mark.e2e


@pytest.fixture
def server(chat_server_factory):
    return chat_server_factory(**HANDOFF_SETTINGS)


def queued_widget(embed, server, *, ahead: int = 0):
    """The visitor asked for a person by keyboard and waits in line behind `ahead` others."""
    agent = Agent(server)
    agent.present()
    others = [queue_someone_else(server) for _ in range(ahead)]
    widget = embed(server)
    widget.open()
    talk_to_a_person(widget)
    return widget, agent, others


def assigned_widget(embed, server):
    widget, agent, _ = queued_widget(embed, server)
    widget.wait_for_announcement(HANDOFF["queuedNext"])
    cid, _ = conversation_of(widget)
    agent.claim(cid)
    widget.wait_for_announcement(fmt(HANDOFF["assigned"], agent="Ana"))
    return widget, agent, cid


def test_A53_talk_to_a_person_is_in_options_and_the_queue_is_said_once(embed, server):
    widget, agent, others = queued_widget(embed, server, ahead=2)
    number_three = fmt(HANDOFF["queued"], position=3)
    widget.wait_for_announcement(number_three)
    # The Options section closed; focus went to the composer, where messages to the person go.
    expect(widget.frame.get_by_role("button", name=EN["conversationTools"]["settingsLabel"])).to_have_attribute(
        "aria-expanded", "false"
    )
    expect(widget.input).to_be_focused()
    expect(widget.frame.locator(".handoff-bar__status")).to_have_text(number_three)
    leave = widget.frame.get_by_role("button", name=HANDOFF["leaveQueue"])
    expect(leave).to_be_visible()
    widget.assert_accessible()
    # Someone ahead is served: the new place is shown at once, but not said again within 30 s.
    agent.claim(others[0])
    number_two = fmt(HANDOFF["queued"], position=2)
    expect(widget.frame.locator(".handoff-bar__status")).to_have_text(number_two)
    assert polite(widget).count(number_three) == 1
    assert number_two not in polite(widget)
    assert not assertive(widget)
    # No second live region: the panel's own two are all there is.
    assert widget.frame.locator("[aria-live], [role=status], [role=alert], [role=log]").count() == 2


def test_A54_an_agent_joining_is_said_once_and_typing_is_only_shown(embed, server):
    widget, agent, cid = assigned_widget(embed, server)
    joined = fmt(HANDOFF["assigned"], agent="Ana")
    expect(widget.frame.locator(".handoff-notice").last).to_have_text(joined)
    expect(widget.frame.locator(".handoff-bar__status")).to_have_text(fmt(HANDOFF["talking"], agent="Ana"))
    expect(widget.frame.get_by_role("button", name=fmt(HANDOFF["endChat"], agent="Ana"))).to_be_visible()
    agent.typing(cid)
    typing = fmt(HANDOFF["typing"], agent="Ana")
    expect(widget.frame.get_by_text(typing)).to_be_visible()
    widget.assert_accessible()
    assert polite(widget).count(joined) == 1
    assert not any(typing in text for text in polite(widget))
    expect(widget.input).to_be_focused()


def test_A55_an_agent_message_is_a_turn_said_once_whole(embed, server):
    widget, agent, cid = assigned_widget(embed, server)
    text = "Your order left today. It arrives on Thursday!\nAnything else?"
    agent.say(cid, text)
    turn = agent_turns(widget).last
    expect(turn).to_be_visible()
    heading = turn.get_by_role("heading", name=fmt(HANDOFF["agentSaid"], agent="Ana"))
    expect(heading).to_have_count(1)
    assert heading.evaluate("h => h.tagName") == "H2"  # the turns' level (A20)
    assert turn.locator(".turn__body").evaluate("n => n.textContent") == text
    spoken = fmt(HANDOFF["agentMessage"], agent="Ana", text=text)
    widget.wait_for_announcement(spoken)
    assert polite(widget).count(spoken) == 1
    # Whole, never in parts: no other announcement holds a piece of it.
    assert [t for t in polite(widget) if "Thursday" in t] == [spoken]
    expect(widget.input).to_be_focused()
    widget.assert_accessible()
    widget.send("Thanks, that's all.")
    wait_until(lambda: agent.visitor_messages(cid) == ["Thanks, that's all."])
    # With announcements "Off" (A35), a short cue instead of the text.
    choose_announcements(widget, EN["conversationTools"]["announceOff"])
    agent.say(cid, "You're welcome. Bye!")
    expect(agent_turns(widget)).to_have_count(2)
    cue = fmt(HANDOFF["agentMessageCue"], agent="Ana")
    widget.wait_for_announcement(cue)
    assert polite(widget).count(cue) == 1
    assert not [t for t in polite(widget) if "welcome" in t]


def test_A56_the_end_is_said_once_and_the_assistant_answers_again(embed, server):
    widget, agent, cid = assigned_widget(embed, server)
    agent.end(cid)
    ended = fmt(HANDOFF["ended"], agent="Ana")
    widget.wait_for_announcement(ended)
    expect(widget.frame.locator(".handoff-bar")).to_be_hidden()
    expect(widget.input).to_be_focused()
    widget.assert_accessible()
    assert polite(widget).count(ended) == 1
    widget.send("/echo Back again.")
    assert widget.wait_until_complete() == "completed"
    # The visitor's own way back: Leave the line, by keyboard.
    talk_to_a_person(widget)
    widget.wait_for_announcement(HANDOFF["queuedNext"])
    leave = widget.frame.get_by_role("button", name=HANDOFF["leaveQueue"])
    tab_to(widget, leave)
    widget.page.keyboard.press("Enter")
    widget.wait_for_announcement(HANDOFF["endedQueue"])
    expect(widget.input).to_be_focused()
    expect(widget.frame.locator(".handoff-bar")).to_be_hidden()
    assert polite(widget).count(HANDOFF["endedQueue"]) == 1


def test_A57_nobody_available_offers_a_labelled_form_with_errors_in_words(embed, chat_server_factory):
    server = chat_server_factory(**HANDOFF_SETTINGS)  # nobody signed in
    widget = embed(server)
    widget.open()
    talk_to_a_person(widget)
    widget.wait_for_announcement(HANDOFF["unavailable"])
    form = widget.frame.get_by_role("form", name=HANDOFF["formTitle"])
    expect(form).to_be_visible()
    email = form.get_by_role("textbox", name=HANDOFF["email"])
    message = form.get_by_role("textbox", name=HANDOFF["message"])
    expect(email).to_be_focused()
    expect(email).to_have_attribute("type", "email")
    expect(email).to_have_accessible_description(HANDOFF["emailHint"])
    widget.assert_accessible()
    # Sent empty, with a bad address: both errors, in words, focus on the first.
    email.fill("not-an-address")
    form.get_by_role("button", name=HANDOFF["submit"]).focus()
    widget.page.keyboard.press("Enter")
    expect(email).to_have_attribute("aria-invalid", "true")
    expect(message).to_have_attribute("aria-invalid", "true")
    expect(email).to_have_accessible_description(f"{HANDOFF['emailHint']} {HANDOFF['emailInvalid']}")
    expect(message).to_have_accessible_description(HANDOFF["textRequired"])
    expect(email).to_be_focused()
    both = f"{HANDOFF['emailInvalid']} {HANDOFF['textRequired']}"
    widget.wait_for_announcement(both)
    assert assertive(widget).count(both) == 1
    widget.assert_accessible()


def test_A58_a_message_left_is_confirmed_once(embed, chat_server_factory):
    server = chat_server_factory(**HANDOFF_SETTINGS)
    widget = embed(server)
    widget.open()
    talk_to_a_person(widget)
    form = widget.frame.get_by_role("form", name=HANDOFF["formTitle"])
    expect(form).to_be_visible()
    widget.page.keyboard.type("visitor@example.com")
    widget.page.keyboard.press("Tab")
    widget.page.keyboard.type("Please call me back about order 1042.")
    widget.page.keyboard.press("Tab")
    widget.page.keyboard.press("Enter")  # Leave message
    widget.wait_for_announcement(HANDOFF["leftWithEmail"])
    expect(form).to_have_count(0)
    expect(widget.frame.locator(".handoff-leave__text")).to_have_text(HANDOFF["leftWithEmail"])
    expect(widget.input).to_be_focused()
    assert polite(widget).count(HANDOFF["leftWithEmail"]) == 1
    assert not assertive(widget)
    widget.assert_accessible()
