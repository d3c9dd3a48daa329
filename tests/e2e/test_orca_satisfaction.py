"""What Orca says when a person ends the hand-off and the panel asks "How was your
conversation?" (docs/accessibility.md A125–A126).

A real screen reader (tests/e2e/orca/, as tests/e2e/test_orca.py runs it): the visitor talks
with Ana, Ana ends the chat; Orca says the end, then the question, once each and in that
order, while the focus stays in the composer. A rating sent by keyboard is thanked once.
"""

from __future__ import annotations

import json

import pytest

from .test_accessibility_contract_satisfaction import SATISFACTION, choose, question
from .test_handoff_widget import HANDOFF, HANDOFF_SETTINGS, Agent, conversation_of, fmt, talk_to_a_person
from .test_orca import listen, orca, orca_browser, orca_page  # noqa: F401 - one Orca desktop per module

# ruff: noqa: F811 - the fixtures imported above are the tests' parameters

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.xdist_group("orca")]

# Firefox ESR's share (docs/testing.md): the panel's satisfaction question runs in Firefox in
# tests/e2e/test_accessibility_contract_satisfaction.py; Orca's speech of the same live region
# is heard in both browsers by tests/e2e/test_orca.py.
ORCA_FIREFOX = "the question's announcement runs in Firefox in test_accessibility_contract_satisfaction.py (A125, A126); what Orca adds here is the same announcer heard through Chromium's accessibility tree, as test_handoff_widget.py's Orca case does"


@pytest.mark.chromium_only(reason=ORCA_FIREFOX)
def test_orca_hears_the_end_then_the_question_once_and_the_thanks_once(orca, listen, chat_server_factory):
    server = chat_server_factory(**HANDOFF_SETTINGS)
    agent = Agent(server)
    agent.present()
    # The visitor's pace (an announcement at most every second), as the other Orca tests use.
    widget, mark = listen(server=server, announce_interval=1000)
    talk_to_a_person(widget)
    orca.wait_for_speech(HANDOFF["queuedNext"], since=mark, timeout=10)
    cid, _ = conversation_of(widget)
    agent.claim(cid)
    orca.wait_for_speech(fmt(HANDOFF["assigned"], agent="Ana"), since=mark, timeout=10)
    mark = orca.mark()
    agent.end(cid)
    ended = fmt(HANDOFF["ended"], agent="Ana")
    orca.wait_for_speech(SATISFACTION["asked"], since=mark, timeout=10)
    said = orca.wait_for_silence(1.5, since=mark)
    print(f"\nOrca said: {json.dumps(said, ensure_ascii=False)}")
    heard = [line.strip() for line in said if line.strip() in (ended, SATISFACTION["asked"])]
    assert heard == [ended, SATISFACTION["asked"]], said
    # The question did not take the focus: nothing of the form was read as a focus change.
    assert not [line for line in said if SATISFACTION["rating1"] in line], said
    # A rating sent by keyboard: the thanks, once.
    mark = orca.mark()
    choose(widget, question(widget), 5)
    widget.page.keyboard.press("Tab")  # the comment
    widget.page.keyboard.press("Tab")  # Send rating
    widget.page.keyboard.press("Enter")
    orca.wait_for_speech(SATISFACTION["thanks"], since=mark, timeout=10)
    said = orca.wait_for_silence(1.5, since=mark)
    print(f"Orca said: {json.dumps(said, ensure_ascii=False)}")
    assert [line.strip() for line in said].count(SATISFACTION["thanks"]) == 1, said
    # Focus went to the composer first (Orca reads it), and the thanks came after that settled
    # (handoff.js Handoff.say waits for a focus change), so it was not dropped.
    spoken = [line.strip() for line in said]
    assert spoken.index(SATISFACTION["thanks"]) > spoken.index("Message entry."), said
