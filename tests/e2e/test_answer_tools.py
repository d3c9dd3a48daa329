"""Around an answer: copy, feedback, regenerate, edit, the whole
answer in a dialog, and a heading per turn (static/widget/answer-tools.js;
the contract lines are docs/accessibility.md A20–A29, tested one by one in
test_accessibility_contract_answer_tools.py).

Every control is reached and pressed with the keyboard only (Tab, Shift+Tab,
Enter, Space, Escape), in Chromium and Firefox ESR, against the real server:
the feedback is read back from the server's history, the clipboard by a
real paste, regenerate and edit through the server's own routes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from widget_server.testing import ChatWidget

from ..helpers import REPO_ROOT

pytestmark = pytest.mark.e2e

# Firefox ESR's share (docs/testing.md): the cases marked chromium_only run in Chromium alone.
TOOLS_FIREFOX = "its browser side is a contract line that runs in Firefox in test_accessibility_contract_answer_tools.py (A20-A29: headings, copy, feedback, regenerate, edit, the dialog); this longer case adds the server's side or the same code's"

STRINGS = {
    lang: json.loads((REPO_ROOT / "static" / "widget" / "i18n" / f"{lang}.json").read_text(encoding="utf-8"))
    for lang in ("en", "es")
}
EN = STRINGS["en"]
TOOLS = EN["answerTools"]  # answer-tools.js's own strings

# Markdown whose source differs from what is shown: copying must give the source, exactly
# (emphasis markers, a list, a code span, a trailing newline, non-ASCII).
MARKDOWN_ANSWER = "# Tuning\n\nUse **drop D** — `DADGBE`:\n\n- lower the 6th string\n- check with a tuner\n"

PASTE_BOX = '<label for="paste">Paste here</label> <textarea id="paste"></textarea>'


# -- keyboard and page helpers -------------------------------------------------------------


def is_focused(locator) -> bool:
    return locator.evaluate("node => node === document.activeElement")


def tab_to(widget: ChatWidget, target, *, backwards: bool = True, limit: int = 40) -> None:
    """Move focus with Tab (or Shift+Tab) until `target` has it, as a keyboard user would."""
    key = "Shift+Tab" if backwards else "Tab"
    for _ in range(limit):
        if is_focused(target):
            return
        widget.page.keyboard.press(key)
    raise AssertionError(f"{key} × {limit} never reached {target}")


def press(widget: ChatWidget, target, key: str = "Enter", *, backwards: bool = True) -> None:
    tab_to(widget, target, backwards=backwards)
    widget.page.keyboard.press(key)


def tools_of(answer):
    return answer.get_by_role("group", name=TOOLS["group"])


def polite(widget: ChatWidget) -> list[str]:
    return [entry["text"] for entry in widget.announcements() if entry["politeness"] == "polite"]


def wait_for_polite_ending(widget: ChatWidget, expected: list[str]) -> None:
    """Wait until the polite region has said `expected` last, its final cue on its own.

    Sentences that complete within one throttle interval go out together (announcer.js
    `_flush()`, joined by a space), and how they group depends on the machine's pace: the
    spoken text is compared, not the grouping. The cue ("Answer complete.") is always
    its own announcement.
    """
    try:
        widget.panel_frame().wait_for_function(
            """(expected) => {
                const said = window.__chatwidgetLog.filter((e) => e.politeness === 'polite').map((e) => e.text);
                return said.length > 0 && said[said.length - 1] === expected[expected.length - 1]
                    && said.join(' ').endsWith(expected.join(' '));
            }""",
            arg=expected,
            timeout=10_000,
        )
    except PlaywrightTimeoutError:
        raise AssertionError(f"the polite region said {polite(widget)!r}, not ending with {expected!r}") from None


def ask(widget: ChatWidget, text: str) -> None:
    widget.send(text)
    assert widget.wait_until_complete() == "completed"


def reopen(page: Page) -> ChatWidget:
    page.reload()
    widget = ChatWidget(page)
    widget.launcher.wait_for()
    widget.open()
    return widget


def conversation_id(widget: ChatWidget) -> str:
    return widget.panel_frame().evaluate("() => window.chatPanel.client.conversationId")


def server_history(server, widget: ChatWidget) -> list[dict[str, Any]]:
    return server.service.history(conversation_id(widget))


class NumberedAnswers:
    """A backend whose every run says which run it is: a regenerated answer is new text."""

    name = "numbered"

    def __init__(self) -> None:
        self.runs = 0

    def stream(self, turn: Any, cancel: Any) -> Iterator[str]:
        self.runs += 1
        yield f"Answer number {self.runs}. "
        yield f"You asked: {turn.text}\n"


# -- copy -------------------------------------------------------------------------------------


@pytest.mark.chromium_only(reason=TOOLS_FIREFOX)
def test_copy_answer_puts_the_exact_markdown_source_on_the_clipboard_and_says_copied_once(embed, page, chat_server):
    widget = embed(body=PASTE_BOX)
    widget.open()
    ask(widget, f"/echo {MARKDOWN_ANSWER}")
    answer = widget.last_answer()
    copy = tools_of(answer).get_by_role("button", name=TOOLS["copy"])
    press(widget, copy)
    widget.wait_for_announcement(TOOLS["copied"])
    expect(copy).to_be_focused()  # the button keeps focus
    # The server's text, whose SHA-256 the widget verified, is what was copied.
    message_id = answer.get_attribute("data-message-id")
    stored = chat_server.service.store.message(message_id).text
    assert stored == MARKDOWN_ANSWER
    # Read the clipboard by pasting it, as a person would (works in both browsers;
    # reading navigator.clipboard in the panel's cross-origin frame is blocked by
    # its permissions policy, and Firefox asks the user before any readText()).
    paste = page.locator("#paste")
    paste.focus()
    page.keyboard.press("ControlOrMeta+V")
    expect(paste).to_have_value(MARKDOWN_ANSWER)
    assert polite(widget).count(TOOLS["copied"]) == 1
    # A second press says it again (the region is emptied first): once per press.
    copy.focus()
    page.keyboard.press("Space")
    widget.panel_frame().wait_for_function(
        "(text) => window.__chatwidgetLog.filter((e) => e.text === text).length === 2", arg=TOOLS["copied"]
    )


# -- feedback ---------------------------------------------------------------------------------


@pytest.mark.smoke
@pytest.mark.chromium_only(reason=TOOLS_FIREFOX)
def test_feedback_by_keyboard_is_changeable_takes_a_comment_and_survives_a_reload(embed, page, chat_server):
    widget = embed()
    widget.open()
    ask(widget, "/echo A useful answer.")
    tools = tools_of(widget.last_answer())
    helpful = tools.get_by_role("button", name=TOOLS["helpful"], exact=True)
    not_helpful = tools.get_by_role("button", name=TOOLS["notHelpful"])
    expect(helpful).to_have_attribute("aria-pressed", "false")
    press(widget, helpful, "Space")
    expect(helpful).to_have_attribute("aria-pressed", "true")
    expect(not_helpful).to_have_attribute("aria-pressed", "false")
    widget.wait_for_announcement(TOOLS["rated"])
    expect(helpful).to_be_focused()  # the comment field opens but takes no focus
    comment = tools.get_by_role("textbox", name=TOOLS["comment"])
    expect(comment).to_be_visible()
    assert comment.get_attribute("maxlength") == "500"
    widget.assert_accessible()
    (record,) = [m["feedback"] for m in server_history(chat_server, widget) if m["role"] == "assistant"]
    assert record["rating"] == "up" and record["comment"] == ""

    tab_to(widget, comment, backwards=False)
    page.keyboard.type("Clear and short.")
    page.keyboard.press("Tab")
    expect(tools.get_by_role("button", name=TOOLS["commentSend"])).to_be_focused()
    page.keyboard.press("Enter")
    widget.wait_for_announcement(TOOLS["commentSent"])
    expect(comment).to_have_count(0)
    expect(helpful).to_be_focused()  # back to the pressed button
    (record,) = [m["feedback"] for m in server_history(chat_server, widget) if m["role"] == "assistant"]
    assert (record["rating"], record["comment"]) == ("up", "Clear and short.")

    # Changeable: the other rating replaces it; Skip closes its comment field.
    press(widget, not_helpful, "Enter", backwards=False)
    expect(not_helpful).to_have_attribute("aria-pressed", "true")
    expect(helpful).to_have_attribute("aria-pressed", "false")
    skip = tools.get_by_role("button", name=TOOLS["commentSkip"])
    press(widget, skip, "Enter", backwards=False)
    expect(skip).to_have_count(0)
    expect(not_helpful).to_be_focused()
    (record,) = [m["feedback"] for m in server_history(chat_server, widget) if m["role"] == "assistant"]
    assert record["rating"] == "down"
    assert polite(widget).count(TOOLS["rated"]) == 2  # once per press that rated

    widget = reopen(page)
    tools = tools_of(widget.last_answer())
    expect(tools.get_by_role("button", name=TOOLS["notHelpful"])).to_have_attribute("aria-pressed", "true")
    expect(tools.get_by_role("button", name=TOOLS["helpful"], exact=True)).to_have_attribute("aria-pressed", "false")
    assert polite(widget) == []  # restored silently

    # Pressing the pressed button takes the feedback back (DELETE).
    not_helpful = tools.get_by_role("button", name=TOOLS["notHelpful"])
    press(widget, not_helpful, "Space")
    expect(not_helpful).to_have_attribute("aria-pressed", "false")
    widget.wait_for_announcement(TOOLS["unrated"])
    (record,) = [m["feedback"] for m in server_history(chat_server, widget) if m["role"] == "assistant"]
    assert record is None
    widget = reopen(page)
    for name in (TOOLS["helpful"], TOOLS["notHelpful"]):
        expect(tools_of(widget.last_answer()).get_by_role("button", name=name, exact=True)).to_have_attribute(
            "aria-pressed", "false"
        )


@pytest.mark.chromium_only(reason=TOOLS_FIREFOX)
def test_a_refused_feedback_is_said_once_and_changes_nothing(embed, chat_server_factory, page):
    server = chat_server_factory()
    widget = embed(server)
    widget.open()
    ask(widget, "/echo Rate me.")
    helpful = tools_of(widget.last_answer()).get_by_role("button", name=TOOLS["helpful"], exact=True)
    # The conversation is gone on the server (deleted elsewhere): the PUT gets a 404.
    server.service.store.delete_conversation(conversation_id(widget))
    press(widget, helpful, "Enter")
    widget.panel_frame().wait_for_function(
        "() => window.__chatwidgetLog.some((e) => e.politeness === 'assertive')", timeout=10_000
    )
    expect(helpful).to_have_attribute("aria-pressed", "false")
    (alert,) = [e["text"] for e in widget.announcements() if e["politeness"] == "assertive"]
    assert alert.startswith(TOOLS["feedbackFailed"].split("{")[0])
    assert TOOLS["rated"] not in polite(widget)


# -- regenerate -------------------------------------------------------------------------------


@pytest.mark.smoke
@pytest.mark.chromium_only(reason=TOOLS_FIREFOX)
def test_regenerate_replaces_the_last_answer_and_announces_the_new_one(embed, chat_server, page):
    backend = NumberedAnswers()
    chat_server.service.backend = backend
    widget = embed()
    widget.open()
    ask(widget, "first question")
    ask(widget, "second question")
    first, last = widget.answers.nth(0), widget.answers.nth(1)
    # Only the last answer offers it.
    expect(tools_of(first).get_by_role("button", name=TOOLS["regenerate"])).to_be_hidden()
    regenerate = tools_of(last).get_by_role("button", name=TOOLS["regenerate"])
    old_id = last.get_attribute("data-message-id")
    press(widget, regenerate, "Enter")
    expect(widget.input).to_be_focused()  # the button left with its turn (A8)
    assert widget.wait_until_complete() == "completed"
    expect(widget.turns).to_have_count(4)
    expect(widget.answers).to_have_count(2)
    expect(widget.answers.nth(1).locator(".turn__body")).to_have_text("Answer number 3. You asked: second question")
    assert widget.answers.nth(1).get_attribute("data-message-id") != old_id
    wait_for_polite_ending(widget, [EN["generating"], "Answer number 3. You asked: second question", EN["complete"]])
    # The server lists the new answer in the old one's place; so does a reload.
    assistant = [m["text"] for m in server_history(chat_server, widget) if m["role"] == "assistant"]
    assert assistant == [
        "Answer number 1. You asked: first question\n",
        "Answer number 3. You asked: second question\n",
    ]
    widget = reopen(page)
    expect(widget.answers).to_have_count(2)
    expect(widget.answers.nth(1).locator(".turn__body")).to_have_text("Answer number 3. You asked: second question")
    expect(tools_of(widget.answers.nth(1)).get_by_role("button", name=TOOLS["regenerate"])).to_be_visible()
    expect(tools_of(widget.answers.nth(0)).get_by_role("button", name=TOOLS["regenerate"])).to_be_hidden()


# -- edit -------------------------------------------------------------------------------------


@pytest.mark.chromium_only(reason=TOOLS_FIREFOX)
def test_edit_replaces_the_last_question_and_its_answer(embed, chat_server, page):
    widget = embed()
    widget.open()
    ask(widget, "/echo One.")
    ask(widget, "/echo Two.")
    questions = widget.frame.locator("[data-chat-transcript] > li.turn--user")
    expect(questions.nth(0).get_by_role("button", name=TOOLS["edit"])).to_have_count(0)  # the last only
    edit = questions.nth(1).get_by_role("button", name=TOOLS["edit"])
    press(widget, edit, "Enter")
    field = widget.frame.get_by_role("textbox", name=TOOLS["editLabel"])
    expect(field).to_be_focused()
    expect(field).to_have_value("/echo Two.")
    widget.assert_accessible()
    # Escape cancels (and leaves the panel open); focus back on Edit.
    page.keyboard.press("Escape")
    expect(field).to_have_count(0)
    expect(widget.launcher).to_have_attribute("aria-expanded", "true")
    expect(edit).to_be_focused()
    expect(questions.nth(1).locator(".turn__body")).to_have_text("/echo Two.")

    page.keyboard.press("Enter")
    expect(field).to_be_focused()
    page.keyboard.press("ControlOrMeta+A")
    page.keyboard.type("/echo Two, edited.")
    page.keyboard.press("Enter")
    expect(widget.input).to_be_focused()
    assert widget.wait_until_complete() == "completed"
    expected = [
        {"role": "user", "text": "/echo One.", "state": "completed"},
        {"role": "assistant", "text": "One.", "state": "completed"},
        {"role": "user", "text": "/echo Two, edited.", "state": "completed"},
        {"role": "assistant", "text": "Two, edited.", "state": "completed"},
    ]
    assert widget.transcript() == expected
    wait_for_polite_ending(widget, [EN["generating"], "Two, edited.", EN["complete"]])
    history = server_history(chat_server, widget)
    assert [(m["role"], m["text"]) for m in history] == [
        ("user", "/echo One."),
        ("assistant", "One."),
        ("user", "/echo Two, edited."),
        ("assistant", "Two, edited."),
    ]
    widget = reopen(page)
    assert widget.transcript() == expected
    expect(widget.frame.get_by_role("button", name=TOOLS["edit"])).to_have_count(1)


# -- headings ---------------------------------------------------------------------------------


@pytest.mark.chromium_only(reason=TOOLS_FIREFOX)
def test_each_turn_has_a_heading_and_the_answers_headings_sit_below_it(embed):
    widget = embed()
    widget.open()
    ask(widget, f"/echo {MARKDOWN_ANSWER}")
    ask(widget, "/echo Second.")
    frame = widget.frame
    expect(frame.get_by_role("heading", level=1)).to_have_count(1)  # the panel's title
    turn_headings = frame.get_by_role("heading", level=2)
    expect(turn_headings).to_have_count(4)
    assert turn_headings.all_inner_texts() == [EN["turnYou"], EN["turnAssistant"]] * 2
    expect(widget.answers.nth(0).get_by_role("heading", level=3, name="Tuning")).to_have_count(1)
    # The visible speaker label is not heard as well as the heading.
    assert widget.turns.nth(0).locator(".turn__who").get_attribute("aria-hidden") == "true"


@pytest.mark.chromium_only(reason=TOOLS_FIREFOX)
def test_the_turn_heading_level_comes_from_the_panel_configuration(embed, page):
    widget = embed()
    widget.open()
    # What a site setting would give the panel (config.turnHeadingLevel): the next turns use it.
    widget.panel_frame().evaluate("() => { window.chatPanel.config.turnHeadingLevel = 3; }")
    ask(widget, f"/echo {MARKDOWN_ANSWER}")
    expect(widget.frame.get_by_role("heading", level=3)).to_have_count(2)
    expect(widget.last_answer().get_by_role("heading", level=4, name="Tuning")).to_have_count(1)


# -- Spanish ----------------------------------------------------------------------------------


@pytest.mark.chromium_only(reason=TOOLS_FIREFOX)
def test_the_tools_speak_spanish_in_a_spanish_panel(embed):
    t = STRINGS["es"]
    widget = embed(lang="es")
    widget.open()
    # Where the server leaves this module's strings out of the panel's config (web.py
    # LAZY_STRING_GROUPS), the module fetches them from the same i18n file.
    widget.panel_frame().evaluate("() => { delete window.chatPanel.strings.answerTools; }")
    ask(widget, "/echo Una respuesta.")
    tools = widget.last_answer().get_by_role("group", name=t["answerTools"]["group"])
    for key in ("copy", "read", "regenerate", "helpful", "notHelpful"):
        expect(tools.get_by_role("button", name=t["answerTools"][key], exact=True)).to_be_visible()
    expect(widget.frame.get_by_role("heading", name=t["turnAssistant"])).to_have_count(1)
    expect(widget.frame.get_by_role("button", name=t["answerTools"]["edit"])).to_be_visible()


# -- one compact row of icons, named by tooltips ------------------------------------------

ICON_TOOLS = ("copy", "read", "regenerate", "helpful", "notHelpful")

# The shown tooltip (the button's `::after`, answer-tools.css) in the frame's coordinates,
# with its button and the transcript's scroller; None while it is hidden. Its text is the
# generated content before the empty alternative text (`"Helpful" / ""`; a browser that
# keeps `attr()` unresolved in the computed value says `attr(data-tip) / ""`).
TOOLTIP = """(n) => {
    const tip = getComputedStyle(n, '::after');
    if (tip.display === 'none') return null;
    const box = n.getBoundingClientRect();
    const own = getComputedStyle(n);
    const left = box.left + parseFloat(own.borderLeftWidth) + parseFloat(tip.left);
    const top = box.top + parseFloat(own.borderTopWidth) + parseFloat(tip.top);
    const [source, alternative] = tip.content.split(' / ');
    const scroller = n.closest('.chat__main');
    const frame = scroller.getBoundingClientRect();
    return {
        text: source.startsWith('attr(') ? n.dataset.tip : JSON.parse(source),
        alternative,
        left, top, right: left + parseFloat(tip.width), bottom: top + parseFloat(tip.height),
        button: {left: box.left, top: box.top, right: box.right, bottom: box.bottom},
        scroller: {left: frame.left, top: frame.top, right: frame.left + scroller.clientWidth,
                   bottom: frame.top + scroller.clientHeight},
    };
}"""


def tooltip(target) -> dict[str, Any] | None:
    return target.evaluate(TOOLTIP)


def assert_tooltip_names(target, name: str) -> None:
    """Shown, saying `name` (heard only once: empty alternative text), fully inside the
    transcript's scroller, and clear of the 3 px focus outline drawn 2 px outside the button."""
    tip = tooltip(target)
    assert tip is not None, f"no tooltip on {name!r}"
    assert (tip["text"], tip["alternative"]) == (name, '""'), tip
    scroller = tip["scroller"]
    assert scroller["left"] <= tip["left"] and tip["right"] <= scroller["right"], (name, tip)
    assert scroller["top"] <= tip["top"] and tip["bottom"] <= scroller["bottom"], (name, tip)
    assert tip["bottom"] <= tip["button"]["top"] - 5, (name, tip)  # the outline: 3 px at 2 px offset


@pytest.mark.firefox_sample(width=[320])
@pytest.mark.parametrize("width", [320, 420])
def test_the_tools_are_one_row_of_icon_buttons_at_least_44_px(embed, page: Page, width):
    page.set_viewport_size({"width": width, "height": 700})
    widget = embed()
    widget.open()
    ask(widget, "/echo One row.")
    tools = tools_of(widget.last_answer())
    buttons = [tools.get_by_role("button", name=TOOLS[key], exact=True) for key in ICON_TOOLS]
    for node in buttons:
        expect(node).to_be_visible()
    rows = tools.evaluate(
        """group => Array.from(group.querySelectorAll('button'), (n) => ({
            name: n.getAttribute('aria-label'), top: n.offsetTop, text: n.textContent,
            width: n.getBoundingClientRect().width, height: n.getBoundingClientRect().height,
            icon: n.querySelector('svg')?.getAttribute('aria-hidden')}))"""
    )
    assert [row["name"] for row in rows] == [TOOLS[key] for key in ICON_TOOLS]
    assert len({row["top"] for row in rows}) == 1, rows  # one line, nothing wrapped
    for row in rows:
        assert row["width"] >= 44 and row["height"] >= 44, row
        assert (row["text"], row["icon"]) == ("", "true"), row  # an icon, its name in aria-label
    edit = widget.frame.get_by_role("button", name=TOOLS["edit"])
    assert edit.evaluate("n => [n.textContent, n.querySelector('svg').getAttribute('aria-hidden')]") == ["", "true"]
    box = edit.bounding_box()
    assert box and box["width"] >= 44 and box["height"] >= 44
    # Nothing scrolls sideways (A16), the transcript included.
    assert widget.panel_frame().evaluate(
        "() => document.querySelector('.chat__main').scrollWidth <= document.querySelector('.chat__main').clientWidth"
    )


def test_a_tooltip_names_each_tool_on_keyboard_focus_and_escape_hides_it(embed, page: Page):
    page.set_viewport_size({"width": 320, "height": 640})
    widget = embed()
    widget.open()
    ask(widget, "/echo A tooltip for each.")
    tools = tools_of(widget.last_answer())
    # Shift+Tab from the composer walks the row backwards; each tooltip shows on focus.
    for key in reversed(ICON_TOOLS):
        target = tools.get_by_role("button", name=TOOLS[key], exact=True)
        assert tooltip(target) is None
        widget.page.keyboard.press("Shift+Tab")
        expect(target).to_be_focused()
        assert_tooltip_names(target, TOOLS[key])
    edit = widget.frame.get_by_role("button", name=TOOLS["edit"])
    tab_to(widget, edit)
    assert_tooltip_names(edit, TOOLS["edit"])
    # Escape hides it and moves nothing: focus stays, the panel stays open (WCAG 1.4.13).
    page.keyboard.press("Escape")
    assert tooltip(edit) is None
    expect(edit).to_be_focused()
    expect(widget.launcher).to_have_attribute("aria-expanded", "true")
    # Focus leaving and coming back shows it again; with it hidden, Escape closes the panel as anywhere.
    page.keyboard.press("Tab")
    page.keyboard.press("Shift+Tab")
    expect(edit).to_be_focused()
    assert_tooltip_names(edit, TOOLS["edit"])
    page.keyboard.press("Escape")
    assert tooltip(edit) is None
    page.keyboard.press("Escape")
    expect(widget.launcher).to_have_attribute("aria-expanded", "false")


def test_a_tooltip_stays_while_the_pointer_is_over_it_and_a_click_there_presses_nothing(embed, page: Page):
    widget = embed()
    widget.open()
    ask(widget, "/echo Hover me.")
    helpful = tools_of(widget.last_answer()).get_by_role("button", name=TOOLS["helpful"], exact=True)
    helpful.hover()
    widget.panel_frame().wait_for_function(
        "() => getComputedStyle(document.querySelector('[data-chat-role=answer-up]'), '::after').display === 'block'"
    )
    assert_tooltip_names(helpful, TOOLS["helpful"])
    tip = tooltip(helpful)
    assert tip is not None
    box = helpful.bounding_box()
    assert box
    # Page coordinates of the tooltip's middle (the frame's offset is the button's page box minus its frame box).
    x = box["x"] + (tip["left"] + tip["right"]) / 2 - tip["button"]["left"]
    y = box["y"] + (tip["top"] + tip["bottom"]) / 2 - tip["button"]["top"]
    page.mouse.move(x, box["y"] + box["height"] / 2)
    page.mouse.move(x, y, steps=5)  # across the gap, onto the tooltip
    assert_tooltip_names(helpful, TOOLS["helpful"])
    page.mouse.click(x, y)
    expect(helpful).to_have_attribute("aria-pressed", "false")
    widget.input.hover()  # the pointer leaves: the tooltip goes
    widget.panel_frame().wait_for_function(
        "() => getComputedStyle(document.querySelector('[data-chat-role=answer-up]'), '::after').display === 'none'"
    )
