"""docs/accessibility.md, "Around an answer", line by line: one test per contract id (A20…A29).

Like test_accessibility_contract.py: the widget embedded in a host page on
another origin, real Chromium and Firefox ESR, axe in every new state
(tests/test_docs.py checks that no id is left without its test). The
controls are reached and pressed with the keyboard; test_answer_tools.py
covers each flow at length.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from .test_answer_tools import (
    EN,
    MARKDOWN_ANSWER,
    PASTE_BOX,
    TOOLS,
    ask,
    conversation_id,
    polite,
    press,
    reopen,
    tab_to,
    tools_of,
    wait_for_polite_ending,
)

pytestmark = pytest.mark.e2e

TOOL_NAMES = ("copy", "read", "regenerate", "helpful", "notHelpful")


def button(tools, key: str):
    return tools.get_by_role("button", name=TOOLS[key], exact=True)


def test_A20_each_turn_starts_with_a_heading_and_answer_headings_sit_below_it(embed):
    widget = embed()
    widget.open()
    ask(widget, f"/echo {MARKDOWN_ANSWER}")
    frame = widget.frame
    expect(frame.get_by_role("heading", level=1)).to_have_count(1)
    headings = frame.get_by_role("heading", level=2)
    expect(headings).to_have_count(2)
    assert headings.all_text_contents() == [EN["turnYou"], EN["turnAssistant"]]
    for turn in (widget.turns.nth(0), widget.turns.nth(1)):
        # The visible label first, hidden from assistive technology; then the heading.
        assert turn.evaluate("li => [li.children[0].getAttribute('aria-hidden'), li.children[1].tagName]") == [
            "true",
            "H2",
        ]
    expect(widget.last_answer().get_by_role("heading", level=3, name="Tuning")).to_have_count(1)
    widget.assert_accessible()


def test_A21_an_ended_answer_has_a_labelled_group_of_named_buttons_that_takes_no_focus(embed, chat_server_factory):
    widget = embed(chat_server_factory(MAX_TEXT_CHARS=40))
    widget.open()
    ask(widget, "/echo Done.")
    tools = tools_of(widget.last_answer())
    expect(tools).to_have_count(1)
    for key in TOOL_NAMES:
        expect(button(tools, key)).to_be_visible()
    expect(widget.input).to_be_focused()  # nothing moved focus
    wait_for_polite_ending(widget, ["Done.", EN["complete"]])
    assert not any(TOOLS[key] in text for text in polite(widget) for key in TOOL_NAMES)
    # Reached with the keyboard: Shift+Tab from the composer lands on the group's last button.
    widget.page.keyboard.press("Shift+Tab")
    expect(button(tools, "notHelpful")).to_be_focused()
    # Failed and stopped answers with some text have the group too; one without text has none.
    widget.send("/scenario fail-provider")
    assert widget.wait_until_complete() == "failed"
    expect(tools_of(widget.last_answer())).to_have_count(1)
    widget.send("/scenario slow")
    expect(widget.last_answer().locator(".turn__body")).not_to_be_empty()
    widget.stop()
    assert widget.wait_until_complete() == "cancelled"
    expect(tools_of(widget.last_answer())).to_have_count(1)
    widget.assert_accessible()
    # Over the server's limit (set past the field's maxlength): refused, nothing to copy or rate.
    widget.input.evaluate("(field, text) => { field.value = text; }", "/echo " + "x" * 40)
    widget.input.press("Enter")
    assert widget.wait_until_complete() == "failed"
    expect(widget.last_answer().locator(".turn__body")).to_be_empty()
    expect(widget.last_answer().locator(".tools")).to_have_count(0)


def test_A22_copy_answer_copies_the_exact_source_and_says_copied_once(embed, page: Page):
    widget = embed(body=PASTE_BOX)
    widget.open()
    ask(widget, f"/echo {MARKDOWN_ANSWER}")
    copy = button(tools_of(widget.last_answer()), "copy")
    press(widget, copy)
    widget.wait_for_announcement(TOOLS["copied"])
    expect(copy).to_be_focused()
    page.locator("#paste").focus()
    page.keyboard.press("ControlOrMeta+V")
    expect(page.locator("#paste")).to_have_value(MARKDOWN_ANSWER)
    assert polite(widget).count(TOOLS["copied"]) == 1
    assert not [e for e in widget.announcements() if e["politeness"] == "assertive"]
    widget.assert_accessible()


def test_A23_helpful_and_not_helpful_are_toggles_said_once_and_restored(embed, page: Page, chat_server):
    widget = embed()
    widget.open()
    ask(widget, "/echo Rate this.")
    tools = tools_of(widget.last_answer())
    helpful, not_helpful = button(tools, "helpful"), button(tools, "notHelpful")
    press(widget, helpful, "Space")
    expect(helpful).to_have_attribute("aria-pressed", "true")
    expect(helpful).to_be_focused()
    widget.wait_for_announcement(TOOLS["rated"])
    widget.assert_accessible()
    press(widget, not_helpful, "Enter", backwards=False)
    expect(not_helpful).to_have_attribute("aria-pressed", "true")
    expect(helpful).to_have_attribute("aria-pressed", "false")
    page.keyboard.press("Enter")  # the pressed one again: removed
    expect(not_helpful).to_have_attribute("aria-pressed", "false")
    widget.wait_for_announcement(TOOLS["unrated"])
    assert polite(widget).count(TOOLS["rated"]) == 2
    assert polite(widget).count(TOOLS["unrated"]) == 1
    press(widget, helpful, "Enter")
    expect(helpful).to_have_attribute("aria-pressed", "true")
    widget = reopen(page)
    expect(button(tools_of(widget.last_answer()), "helpful")).to_have_attribute("aria-pressed", "true")
    assert polite(widget) == []
    # Refused (the conversation is gone on the server): nothing changes, said once assertively.
    chat_server.service.store.delete_conversation(conversation_id(widget))
    press(widget, button(tools_of(widget.last_answer()), "notHelpful"), "Enter")
    widget.panel_frame().wait_for_function("() => window.__chatwidgetLog.some((e) => e.politeness === 'assertive')")
    expect(button(tools_of(widget.last_answer()), "helpful")).to_have_attribute("aria-pressed", "true")
    assert len([e for e in widget.announcements() if e["politeness"] == "assertive"]) == 1


def test_A24_the_optional_comment_follows_the_rating_and_gives_focus_back(embed, page: Page, chat_server):
    widget = embed()
    widget.open()
    ask(widget, "/echo Comment on this.")
    tools = tools_of(widget.last_answer())
    not_helpful = button(tools, "notHelpful")
    press(widget, not_helpful, "Enter")
    field = tools.get_by_role("textbox", name=TOOLS["comment"])
    expect(field).to_be_visible()
    expect(not_helpful).to_be_focused()  # never focused by itself
    assert field.get_attribute("maxlength") == "500"
    widget.assert_accessible()
    page.keyboard.press("Tab")
    expect(field).to_be_focused()  # next in the tab order
    page.keyboard.press("Escape")  # closes the field, not the panel
    expect(field).to_have_count(0)
    expect(widget.launcher).to_have_attribute("aria-expanded", "true")
    expect(not_helpful).to_be_focused()
    # Rated again: Enter in the field sends the comment.
    page.keyboard.press("Enter")  # removes the rating
    expect(not_helpful).to_have_attribute("aria-pressed", "false")
    page.keyboard.press("Enter")  # rates again; the field is back
    expect(field).to_be_visible()
    tab_to(widget, field, backwards=False)
    page.keyboard.type("Too long-winded.")
    page.keyboard.press("Enter")
    widget.wait_for_announcement(TOOLS["commentSent"])
    expect(field).to_have_count(0)
    expect(not_helpful).to_be_focused()
    assert polite(widget).count(TOOLS["commentSent"]) == 1
    (record,) = [
        m["feedback"] for m in chat_server.service.history(conversation_id(widget)) if m["role"] == "assistant"
    ]
    assert (record["rating"], record["comment"]) == ("down", "Too long-winded.")


def test_A25_regenerate_only_on_the_last_completed_answer_replaced_in_place(embed, chat_server_factory):
    widget = embed(chat_server_factory(DEMO_DELAY_SECONDS=0.3))
    widget.open()
    ask(widget, "/echo First.")
    second = "Second, and written slowly word by word."
    ask(widget, f"/echo {second}")
    expect(button(tools_of(widget.answers.nth(0)), "regenerate")).to_be_hidden()
    regenerate = button(tools_of(widget.answers.nth(1)), "regenerate")
    press(widget, regenerate)
    expect(widget.input).to_be_focused()
    expect(widget.last_answer()).to_have_attribute("aria-busy", "true")
    # While it is written, no answer offers Regenerate (nor any question Edit).
    expect(widget.frame.get_by_role("button", name=TOOLS["regenerate"])).to_have_count(0)
    expect(widget.frame.get_by_role("button", name=TOOLS["edit"])).to_have_count(0)
    assert widget.wait_until_complete() == "completed"
    expect(widget.answers).to_have_count(2)
    wait_for_polite_ending(widget, [EN["generating"], second, EN["complete"]])
    expect(widget.frame.get_by_role("button", name=TOOLS["regenerate"])).to_have_count(1)
    widget.assert_accessible()


def test_A26_edit_only_the_last_question_in_a_labelled_field(embed, page: Page):
    widget = embed()
    widget.open()
    ask(widget, "/echo Before.")
    edit = widget.frame.get_by_role("button", name=TOOLS["edit"])
    expect(edit).to_have_count(1)
    press(widget, edit)
    field = widget.frame.get_by_role("textbox", name=TOOLS["editLabel"])
    expect(field).to_be_focused()
    expect(field).to_have_value("/echo Before.")
    widget.assert_accessible()
    cancel = widget.frame.get_by_role("button", name=TOOLS["editCancel"])
    press(widget, cancel, backwards=False)
    expect(field).to_have_count(0)
    expect(edit).to_be_focused()
    page.keyboard.press("Space")
    expect(field).to_be_focused()
    page.keyboard.press("ControlOrMeta+A")
    page.keyboard.type("/echo After.")
    page.keyboard.press("Enter")
    expect(widget.input).to_be_focused()
    assert widget.wait_until_complete() == "completed"
    assert [(t["role"], t["text"]) for t in widget.transcript()] == [("user", "/echo After."), ("assistant", "After.")]
    wait_for_polite_ending(widget, [EN["generating"], "After.", EN["complete"]])


def test_A27_the_whole_answer_dialog_is_modal_traps_focus_and_gives_it_back(embed, page: Page):
    widget = embed()
    widget.open()
    ask(widget, f"/echo {MARKDOWN_ANSWER}")
    read = button(tools_of(widget.last_answer()), "read")
    press(widget, read)
    dialog = widget.frame.get_by_role("dialog", name=TOOLS["dialog"])
    text = dialog.get_by_role("region", name=TOOLS["dialog"])
    expect(text).to_be_focused()
    assert dialog.evaluate("d => d.matches(':modal')")
    assert text.evaluate("n => n.tabIndex") == 0
    # The answer as the transcript shows it, its headings below the dialog's h2.
    heading = text.get_by_role("heading", name="Tuning")
    expect(heading).to_have_count(1)
    assert heading.evaluate("n => n.tagName") == "H3"
    expect(text).to_contain_text("Use drop D — DADGBE:")
    close = dialog.get_by_role("button", name=TOOLS["close"])
    for key, expected in (("Tab", close), ("Tab", text), ("Shift+Tab", close), ("Shift+Tab", text)):
        page.keyboard.press(key)
        expect(expected).to_be_focused()
    widget.assert_accessible()
    page.keyboard.press("Escape")
    expect(dialog).to_have_count(0)
    expect(widget.launcher).to_have_attribute("aria-expanded", "true")
    expect(read).to_be_focused()
    page.keyboard.press("Space")  # the button's other key (it was opened with Enter)
    expect(text).to_be_focused()
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")  # Close
    expect(dialog).to_have_count(0)
    expect(read).to_be_focused()
    assert polite(widget)[-1] == EN["complete"]


def test_A28_targets_focus_and_pressed_state_do_not_rely_on_colour(embed, page: Page, browser_name):
    widget = embed()
    widget.open()
    ask(widget, "/echo Measure me.")
    tools = tools_of(widget.last_answer())
    helpful = button(tools, "helpful")
    press(widget, helpful, "Space")
    expect(helpful).to_have_attribute("aria-pressed", "true")
    sizes = widget.last_answer().evaluate(
        """li => Array.from(li.querySelectorAll('.tools button, .tools textarea'),
            (n) => [n.getAttribute('aria-label') || n.textContent || n.tagName,
                    n.getBoundingClientRect().width, n.getBoundingClientRect().height])"""
    )
    assert len(sizes) >= 7, sizes  # five tools, the comment field, Send and Skip
    for name, width, height in sizes:
        assert width >= 44 and height >= 44, (name, width, height)
    # The five icons are one row (5 × 44 px fits the narrowest panel, A16).
    tops = tools.evaluate("g => Array.from(g.querySelectorAll('.icon-tool'), (n) => n.offsetTop)")
    assert len(tops) == 5 and len(set(tops)) == 1, tops
    # The panel's 3 px outline on the focused (keyboard) button.
    assert helpful.evaluate("n => getComputedStyle(n).outlineWidth") == "3px"
    # Pressed: the thumb filled and a border kept, not only another colour; the name unchanged.
    fills = """n => Array.from(n.querySelectorAll('.icon-tool__fill'), (p) => getComputedStyle(p).fill)"""
    assert "none" not in helpful.evaluate(fills)
    assert set(button(tools, "notHelpful").evaluate(fills)) == {"none"}
    assert helpful.evaluate("n => getComputedStyle(n).borderTopColor") != "rgba(0, 0, 0, 0)"
    expect(helpful).to_have_accessible_name(TOOLS["helpful"])
    if browser_name == "chromium":  # media emulation is Chromium only (docs/testing.md, "System browsers")
        page.emulate_media(forced_colors="active")
        assert helpful.evaluate("n => getComputedStyle(n).borderTopStyle") == "double"
        # Unpressed icon buttons keep a visible border too.
        copy = button(tools, "copy")
        assert copy.evaluate("n => [getComputedStyle(n).borderTopStyle, getComputedStyle(n).borderTopWidth]") == [
            "solid",
            "1px",
        ]
        page.emulate_media(forced_colors="none", color_scheme="dark")
        widget.assert_accessible()  # contrast in the dark scheme
        page.emulate_media(color_scheme="light")
    widget.assert_accessible()


def test_A29_axe_finds_nothing_in_any_state_around_an_answer(embed, page: Page):
    page.set_viewport_size({"width": 320, "height": 640})
    widget = embed()
    widget.open()
    ask(widget, f"/echo {MARKDOWN_ANSWER}")
    widget.assert_accessible()  # the tools shown
    tools = tools_of(widget.last_answer())
    press(widget, button(tools, "helpful"), "Space")
    expect(tools.get_by_role("textbox", name=TOOLS["comment"])).to_be_visible()
    widget.assert_accessible()  # the comment field open
    press(widget, widget.frame.get_by_role("button", name=TOOLS["edit"]))
    expect(widget.frame.get_by_role("textbox", name=TOOLS["editLabel"])).to_be_focused()
    widget.assert_accessible()  # a question being edited
    page.keyboard.press("Escape")
    press(widget, button(tools, "read"), backwards=False)
    expect(widget.frame.get_by_role("dialog", name=TOOLS["dialog"])).to_be_visible()
    widget.assert_accessible()  # the dialog open
    # Nothing scrolls the page sideways at 320 px (A16).
    assert widget.panel_frame().evaluate("() => document.documentElement.scrollWidth <= innerWidth")
