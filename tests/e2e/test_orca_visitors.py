"""What Orca says to a known visitor and about privacy (docs/accessibility.md A117, A118, A120–A122).

A real screen reader (tests/e2e/orca/, as tests/e2e/test_orca.py runs it), by keyboard only:

- consent before the first message (A120): a send without "I agree" says why once and sends
  nothing; Space checks the box, and the same text then goes and its answer is heard;
- a refused identity token (A118): the reason said once, the typed text kept; with a fresh token
  the same text goes; then the Conversations view (A117) is read item by item, each by its title;
- the visitor's own data (A121, A122): Erase my data asks in a dialog (Orca names it in
  Chromium), Escape says nothing more, the erasure is said once; after the next message,
  "Your data was downloaded." once (last: Chromium's download bubble speaks too, and Firefox's
  downloads panel is kept shut, test_orca.py `orca_browser`).

Each announcement is heard exactly once and in the order the visitor caused them; nothing of
the identity token, nor any markup of the panel, is ever spoken (the site's consent text is
heard as it was written, its "<em>" as characters).
"""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from widget_server.testing import IDENTITY_TEST_SECRET

from ..helpers import REPO_ROOT
from .test_accessibility_contract_consent import CONSENT, CONSENT_TEXT, CONSENT_URL
from .test_accessibility_contract_conversation import open_options, tab_to
from .test_accessibility_contract_my_data import MY_DATA, REFUSALS, confirmation, your_data
from .test_identity_panel import conversations_control, own_conversation, token
from .test_orca import (  # noqa: F401 - one Orca desktop per module
    EN,
    SPEECH_TIMEOUT,
    listen,
    once,
    orca,
    orca_browser,
    orca_page,
)

# ruff: noqa: F811 - the fixtures imported above are the tests' parameters

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.xdist_group("orca")]

VIEW = json.loads((REPO_ROOT / "static/widget/i18n/conversations/en.json").read_text(encoding="utf-8"))["conversations"]
EXPIRED = REFUSALS["refusals"]["identity_expired"]

# The consent test checks that "Generating answer…" is heard before a short echoed answer: its
# words two seconds apart, as a model's first words may come, so the cue's change and the
# answer's reach Orca two seconds apart, not the announcer's one. The send's own events (the box
# emptied, the question shown) reach Orca with the cue, and on two loaded cores Orca falls behind
# by more than a second; given two changes of the region together it drops the older
# (orca/desktop.py says why). With the answer paced, Orca stopped (SIGSTOP) for 1.6 s at the
# send still hears all four announcements.
WORD_BY_WORD = {"DEMO_DELAY_SECONDS": 2.0}


def said_since(orca, mark: int) -> list[str]:
    """Everything Orca said since `mark`, once it has been quiet for a second."""
    said = orca.wait_for_silence(1.0, since=mark)
    print(f"\nOrca said: {json.dumps(said, ensure_ascii=False, indent=1)}")
    return said


def in_order(said: list[str], *expected: str) -> None:
    """Each of `expected` said exactly once, in this order."""
    for text in expected:
        once(said, text)
    positions = [said.index(text) for text in expected]
    assert positions == sorted(positions), f"said out of order: {expected!r}\nspoken: {said!r}"


def nothing_of(token: str, said: list[str]) -> None:
    """No piece of the identity token (its header, claims or signature) and no markup was spoken."""
    pieces = [piece for piece in token.split(".") if len(piece) >= 8]
    assert not [line for line in said if any(piece[:16] in line for piece in pieces)], said
    assert not [line for line in said if "<" in line or ">" in line], said


def test_orca_hears_why_a_send_waits_for_consent_once_then_the_answer(orca, listen):
    widget, _ = listen({"CONSENT_TEXT": CONSENT_TEXT, "CONSENT_URL": CONSENT_URL, **WORD_BY_WORD})
    widget.panel_frame().wait_for_function("() => !!window.chatPanel.consent")  # consent.js is in
    orca.wait_until_idle()
    mark = orca.mark()
    box = widget.frame.get_by_role("checkbox", name=CONSENT["agree"])
    widget.input.fill("/echo Agreed first.")
    widget.page.keyboard.press("Enter")
    orca.wait_for_speech(CONSENT["required"], since=mark, timeout=SPEECH_TIMEOUT)
    expect(box).to_be_focused()
    expect(widget.input).to_have_value("/echo Agreed first.")
    widget.page.keyboard.press("Space")
    expect(box).to_be_checked()
    widget.page.keyboard.press("Tab")
    expect(widget.input).to_be_focused()
    widget.page.keyboard.press("Enter")
    assert widget.wait_until_complete() == "completed"
    orca.wait_for_speech(EN["complete"], since=mark, timeout=SPEECH_TIMEOUT)
    said = said_since(orca, mark)
    # The reason once, before anything of the answer; the answer then as any answer is heard.
    in_order(said, CONSENT["required"], EN["generating"], "Agreed first.", EN["complete"])
    # The site's text is heard as it was written (the checkbox's description): its "<em>" is
    # characters, never an element that would have swallowed them.
    assert [line for line in said if CONSENT_TEXT in line], said


def test_orca_hears_a_refused_sign_in_once_then_reads_the_conversations_by_title(orca, listen, chat_server_factory):
    server = chat_server_factory(IDENTITY_SECRET=IDENTITY_TEST_SECRET)
    own_conversation(server, "customer-7", "Where is my order?")  # from another device
    stale, fresh = token("customer-7", expires_in=-600), token("customer-7")
    widget, mark = listen(server=server, identity_token=stale)
    widget.input.fill("/echo Where is my parcel?")
    widget.page.keyboard.press("Enter")
    orca.wait_for_speech(EXPIRED, since=mark, timeout=SPEECH_TIMEOUT)
    expect(widget.input).to_have_value("/echo Where is my parcel?")  # nothing lost
    expect(widget.input).to_be_focused()
    # The site signs the visitor in again; Enter sends the very same text.
    widget.page.evaluate("(fresh) => ChatWidget.identify(fresh)", fresh)
    widget.page.keyboard.press("Enter")
    assert widget.wait_until_complete() == "completed"
    orca.wait_for_speech(EN["complete"], since=mark, timeout=SPEECH_TIMEOUT)
    said = said_since(orca, mark)
    in_order(said, EXPIRED, EN["generating"], "Where is my parcel?", EN["complete"])

    # The Conversations view, by keyboard: its region and each conversation by its title, the
    # most recent first.
    tab_to(widget, conversations_control(widget))
    orca.wait_until_idle()
    mark = orca.mark()
    widget.page.keyboard.press("Enter")
    choices = widget.frame.get_by_role("region", name=VIEW["heading"]).get_by_role("listitem").get_by_role("button")
    expect(choices.nth(0)).to_be_focused()
    orca.wait_until_idle()  # the first conversation said before Tab moves on
    widget.page.keyboard.press("Tab")
    expect(choices.nth(1)).to_be_focused()
    listed = said_since(orca, mark)
    items = [
        next((line for line in listed if line.startswith(f"{title} — ")), None)
        for title in ("/echo Where is my parcel?", "Where is my order?")
    ]
    assert None not in items, listed
    in_order(listed, *items)
    assert [line for line in listed if VIEW["heading"] in line], listed  # the region, by its name
    assert listed.index(next(line for line in listed if VIEW["heading"] in line)) < listed.index(items[0])
    nothing_of(stale, said + listed)
    nothing_of(fresh, said + listed)


def test_orca_hears_the_visitors_data_erased_once_and_downloaded_once(orca, listen, chat_server_factory, browser_name):
    server = chat_server_factory(IDENTITY_SECRET=IDENTITY_TEST_SECRET)
    signed_in = token("customer-8")
    widget, mark = listen(server=server, identity_token=signed_in)
    widget.input.fill("/echo A private question.")
    widget.page.keyboard.press("Enter")
    assert widget.wait_until_complete() == "completed"
    orca.wait_for_speech(EN["complete"], since=mark, timeout=SPEECH_TIMEOUT)
    open_options(widget)
    orca.wait_until_idle()

    # Erase my data asks first; Escape closes the question and nothing is erased. Tabbed to,
    # then pressed once Orca has said where Tab landed, as a listener does: Tabs and Enter all at
    # once leave a loaded Orca reading focus events of controls the dialog has made inert, and
    # it falls into browse mode without a word of the dialog.
    tab_to(widget, your_data(widget).get_by_role("button", name=MY_DATA["erase"]), key="Tab")
    orca.wait_until_idle()
    mark = orca.mark()
    widget.page.keyboard.press("Enter")
    expect(confirmation(widget)).to_be_visible()
    named = f"{MY_DATA['confirmTitle']} dialog {MY_DATA['confirmText']}"
    # Firefox ESR 153 says only "Cancel push button.": its tree drops the inert panel before
    # focus moves, and Orca, its focus gone, settles silently on the dialog's heading.
    for line in ([named] if browser_name == "chromium" else []) + [f"{MY_DATA['cancel']} push button."]:
        orca.wait_for_speech(line, since=mark, timeout=SPEECH_TIMEOUT)  # focus in the dialog
    orca.wait_until_idle()
    asked = said_since(orca, mark)
    if browser_name == "chromium":
        once(asked, named)
    mark = orca.mark()
    widget.page.keyboard.press("Escape")
    expect(confirmation(widget)).to_be_hidden()
    expect(widget.turns).to_have_count(2)  # the question and its answer, still there
    orca.wait_until_idle()
    escaped = said_since(orca, mark)

    # Asked again and confirmed: erased, said once.
    widget.page.keyboard.press("Enter")
    expect(confirmation(widget)).to_be_visible()
    orca.wait_until_idle()
    mark = orca.mark()
    widget.page.keyboard.press("Shift+Tab")  # from Cancel back to the dialog's Erase my data
    widget.page.keyboard.press("Enter")
    orca.wait_for_speech(MY_DATA["erased"], since=mark, timeout=SPEECH_TIMEOUT)
    expect(confirmation(widget)).to_be_hidden()
    expect(widget.turns).to_have_count(0)
    expect(widget.input).to_be_focused()
    erased = said_since(orca, mark)

    # The next message is theirs again, and Download my data says it saved it, once.
    mark = orca.mark()
    widget.input.fill("/echo Here again.")
    widget.page.keyboard.press("Enter")
    assert widget.wait_until_complete() == "completed"
    orca.wait_for_speech(EN["complete"], since=mark, timeout=SPEECH_TIMEOUT)
    open_options(widget)
    download = your_data(widget).get_by_role("button", name=MY_DATA["download"])
    tab_to(widget, download, key="Tab")
    orca.wait_until_idle()
    mark = orca.mark()
    widget.page.keyboard.press("Enter")  # Chromium also says its own download bubble
    orca.wait_for_speech(MY_DATA["downloaded"], since=mark, timeout=SPEECH_TIMEOUT)
    expect(download).to_be_focused()
    downloaded = said_since(orca, mark)
    once(downloaded, MY_DATA["downloaded"])
    nothing_of(signed_in, asked + escaped + erased + downloaded)

    # Closing the dialog repeats nothing: the panel empties its live regions before a modal
    # dialog opens (static/widget/dom.js showModal), or Chromium would expose their old text
    # again as the panel leaves `inert`, and Orca say it twice (docs/testing.md).
    assert not [line for line in escaped if line in (EN["complete"], MY_DATA["erased"])], escaped
    once(erased, MY_DATA["erased"])
