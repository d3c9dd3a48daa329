"""docs/accessibility.md, line by line: one test per contract id (A1…A19).

Every test embeds the widget in a host page on another origin and drives
it in real Chromium and Firefox ESR. tests/test_docs.py checks that no id
of the contract is left without its test here.
"""

from __future__ import annotations

import itertools
import json
import re

import pytest
from playwright.sync_api import Page, expect

from ..helpers import REPO_ROOT

pytestmark = pytest.mark.e2e

STRINGS = {
    lang: json.loads((REPO_ROOT / "static" / "widget" / "i18n" / f"{lang}.json").read_text(encoding="utf-8"))
    for lang in ("en", "es")
}
EN = STRINGS["en"]

IMPROVISATION_SPOKEN = (
    "Over Am – F – C – G, for each chord: "
    "Am → arpeggio Am, play A Aeolian (natural minor) (diatonic minor — fits most i chords). "
    "F → arpeggio F, play F Ionian (major) (diatonic, includes the 7 — careful on the IV chord). "
    "C → arpeggio C, play C Ionian (major) (diatonic, includes the 7 — careful on the IV chord). "
    "G → arpeggio G, play G Ionian (major) (diatonic, includes the 7 — careful on the IV chord). "
    "Each arpeggio spells the chord tones; the scale adds the passing notes for lines between them."
)

LIVE_ROLES = ("log", "status", "alert", "marquee", "timer")


def polite(widget) -> list[str]:
    return [entry["text"] for entry in widget.announcements() if entry["politeness"] == "polite"]


def assertive(widget) -> list[str]:
    return [entry["text"] for entry in widget.announcements() if entry["politeness"] == "assertive"]


def ask(widget, text: str) -> str:
    widget.send(text)
    return widget.wait_until_complete()


# -- Structure ----------------------------------------------------------------


def test_A1_transcript_is_a_labelled_list_of_turns_with_speakers(embed):
    widget = embed()
    widget.open()
    transcript = widget.frame.get_by_role("list", name=EN["transcriptLabel"])
    expect(transcript).to_have_count(1)
    assert transcript.evaluate("n => n.tagName") == "OL"
    assert ask(widget, "/echo Hello there.") == "completed"
    expect(widget.turns).to_have_count(2)
    expect(widget.turns.nth(0).locator(".turn__who")).to_have_text(EN["you"])
    expect(widget.turns.nth(1).locator(".turn__who")).to_have_text(EN["assistant"])
    # The speaker label comes first in each turn.
    assert widget.turns.nth(1).evaluate("li => li.firstElementChild.className") == "turn__who"


def test_A2_the_transcript_never_announces_by_itself(embed, chat_server_factory):
    widget = embed(chat_server_factory(DEMO_DELAY_SECONDS=0.2))
    widget.open()
    widget.send("/scenario improvisation")
    expect(widget.last_answer()).to_have_attribute("aria-busy", "true")
    # No live attribute or live role on the transcript, its ancestors or anything inside.
    found = widget.panel_frame().evaluate(
        """(roles) => {
            const list = document.querySelector('[data-chat-transcript]');
            const bad = [];
            for (let n = list; n && n.nodeType === 1; n = n.parentElement) {
                if (n.hasAttribute('aria-live') || roles.includes(n.getAttribute('role'))) bad.push(n.tagName);
            }
            for (const n of list.querySelectorAll('*')) {
                if (n.hasAttribute('aria-live') || roles.includes(n.getAttribute('role'))) bad.push(n.tagName);
            }
            return bad;
        }""",
        list(LIVE_ROLES),
    )
    assert found == []
    widget.wait_until_complete()


@pytest.mark.parametrize("lang", ["en", "es"])
def test_A3_panel_language_and_strings_come_from_the_i18n_data(embed, lang):
    widget = embed(lang=lang)
    t = STRINGS[lang]
    expect(widget.launcher).to_have_attribute("aria-label", t["launcherLabel"])
    widget.open()
    assert widget.panel_frame().evaluate("() => document.documentElement.lang") == lang
    expect(widget.frame.locator("label[for=chat-input]")).to_have_text(t["composerLabel"])
    expect(widget.send_button).to_have_text(t["send"])
    expect(widget.stop_button).to_have_attribute("aria-label", t["stopLabel"])
    expect(widget.frame.locator("[data-chat-empty]")).to_have_text(t["empty"])
    expect(widget.frame.locator("#chat-hint")).to_have_text(t["composerHint"])
    assert ask(widget, "/echo Una frase.") == "completed"
    widget.wait_for_announcement(t["complete"])
    assert polite(widget) == [t["generating"], "Una frase.", t["complete"]]


# -- While an answer streams ----------------------------------------------------


def test_A4_aria_busy_until_every_kind_of_end(embed, chat_server_factory, context):
    widget = embed(chat_server_factory(DEMO_DELAY_SECONDS=0.3, MESSAGE_TIME_LIMIT_SECONDS=1.5), incomplete_after=1500)
    widget.open()
    for command, end in (("/scenario improvisation", "completed"), ("/scenario hang", "failed")):
        widget.send(command)
        expect(widget.last_answer()).to_have_attribute("aria-busy", "true")
        assert widget.wait_until_complete() == end
        expect(widget.last_answer()).not_to_have_attribute("aria-busy", "true")
    widget.send("/scenario slow")
    expect(widget.last_answer()).to_have_attribute("aria-busy", "true")
    widget.stop()
    assert widget.wait_until_complete() == "cancelled"
    expect(widget.last_answer()).not_to_have_attribute("aria-busy", "true")
    widget.send("/scenario hang")
    expect(widget.last_answer().locator(".turn__body")).not_to_be_empty()
    context.set_offline(True)
    try:
        assert widget.wait_until_complete() == "incomplete"
        expect(widget.last_answer()).not_to_have_attribute("aria-busy", "true")
    finally:
        context.set_offline(False)


def test_A5_one_polite_region_speaks_sentences_then_the_cue(embed):
    widget = embed(announce_interval=1000)  # the visitor's pace: the whole answer fits in one batch
    widget.open()
    regions = widget.frame.locator("[aria-live=polite]")
    expect(regions).to_have_count(1)
    expect(regions).to_have_attribute("role", "status")
    expect(regions).to_have_attribute("aria-atomic", "false")  # each change read as it was made
    assert regions.evaluate("n => !n.closest('[data-chat-transcript]')")
    # Visually hidden: a 1×1 clipped box.
    assert regions.evaluate("n => n.getBoundingClientRect().width <= 1 && n.getBoundingClientRect().height <= 1")
    assert ask(widget, "which arpeggio fits Am F C G") == "completed"
    widget.wait_for_announcement(EN["complete"])
    # At this pace the whole answer arrives within one batching interval:
    # the cue, every sentence once in order as plain text, the completion cue.
    assert polite(widget) == [EN["generating"], IMPROVISATION_SPOKEN, EN["complete"]]


def test_A5_batches_are_paced_whole_sentences_and_code_is_summarised(embed, chat_server_factory):
    widget = embed(chat_server_factory(DEMO_DELAY_SECONDS=0.25), announce_interval=1000)  # the visitor's pace
    widget.open()
    assert ask(widget, "Show me Cmaj7 voicings") == "completed"
    widget.wait_for_announcement(EN["complete"])
    log = [entry for entry in widget.announcements() if entry["politeness"] == "polite"]
    texts = [entry["text"] for entry in log]
    assert texts[0] == EN["generating"] and texts[-1] == EN["complete"]
    spoken = " ".join(texts[1:-1])
    assert "Code block, vextab, 1 line." in spoken
    assert "```" not in spoken and "`" not in spoken and "**" not in spoken
    # Never more often than about once a second.
    gaps = [later["t"] - earlier["t"] for earlier, later in itertools.pairwise(log)]
    assert min(gaps) >= 900, gaps
    # Each batch ends at a sentence end (or is a cue): never mid-sentence.
    for text in texts:
        assert re.search(r"[.!?…:)]$", text), text


def test_A5_one_reconnecting_cue_and_nothing_said_twice_after_a_resume(embed, chat_server_factory):
    widget = embed(chat_server_factory(DEMO_DELAY_SECONDS=0.15), faults="drop-after=3")
    widget.open()
    assert ask(widget, "which arpeggio fits Am F C G") == "completed"
    widget.wait_for_announcement(EN["complete"])
    texts = polite(widget)
    assert texts.count(EN["reconnecting"]) == 1
    sentences = " ".join(t for t in texts if t not in (EN["generating"], EN["reconnecting"], EN["complete"]))
    assert sentences == IMPROVISATION_SPOKEN  # each sentence once, in order


@pytest.mark.smoke
def test_A6_errors_are_said_once_through_the_assertive_region(embed):
    # The visitor's pace: the sentence before the failure is still queued
    # when the error comes, so it is dropped (at 100 ms it may be said first).
    widget = embed(announce_interval=1000)
    widget.open()
    alert = widget.frame.get_by_role("alert")
    expect(alert).to_have_count(1)
    assert ask(widget, "/scenario fail-safety") == "failed"
    expect(alert).to_have_text(EN["errors"]["safety"])
    widget.page.wait_for_timeout(1500)  # let any throttled polite update land
    assert assertive(widget) == [EN["errors"]["safety"]]
    # After the generating cue the polite region says nothing for this answer.
    assert polite(widget) == [EN["generating"]]


def test_A7_failed_answer_is_distinct_offers_retry_and_is_never_kept(embed, chat_server_factory, page: Page):
    widget = embed()
    widget.open()
    assert ask(widget, "/scenario fail-provider") == "failed"
    answer = widget.last_answer()
    status = answer.locator(".turn__status")
    expect(status).to_contain_text(EN["stateFailed"])
    expect(status).to_contain_text(EN["errors"]["provider"])
    border = answer.evaluate("n => parseFloat(getComputedStyle(n).borderTopWidth)")
    assert border >= 2  # marked by shape and words, not colour alone
    retry = answer.get_by_role("button", name=EN["retry"])
    retry.click()
    assert widget.wait_until_complete() == "failed"  # the scenario fails again, as a new request
    page.reload()
    widget.launcher.wait_for()
    widget.open()
    expect(widget.frame.locator("[data-chat-empty]")).to_be_visible()
    expect(widget.turns).to_have_count(0)


# -- Keyboard and focus ---------------------------------------------------------


def test_A8_focus_stays_in_the_composer_while_streaming(embed, chat_server_factory):
    widget = embed(chat_server_factory(DEMO_DELAY_SECONDS=0.2))
    widget.open()
    widget.send("/scenario markdown")
    expect(widget.last_answer()).to_have_attribute("data-state", "streaming")
    for _ in range(5):
        expect(widget.input).to_be_focused()
        widget.page.wait_for_timeout(200)
    widget.stop()
    widget.wait_until_complete()
    expect(widget.input).to_be_focused()
    assert {entry["focus"] for entry in widget.announcements()} == {"chat-input"}


def test_A9_enter_sends_and_shift_enter_adds_a_line(embed):
    widget = embed()
    widget.open()
    widget.input.type("/echo one")
    widget.input.press("Shift+Enter")
    widget.input.type("two")
    expect(widget.turns).to_have_count(0)
    widget.input.press("Enter")
    assert widget.wait_until_complete() == "completed"
    expect(widget.turns.first.locator(".turn__body")).to_have_text("/echo one\ntwo")


def test_A10_a_labelled_stop_button_cancels_on_the_server(embed, chat_server_factory):
    server = chat_server_factory(DEMO_DELAY_SECONDS=0.05)
    widget = embed(server)
    widget.open()
    widget.send("/scenario slow")
    stop = widget.frame.get_by_role("button", name=EN["stopLabel"])
    expect(stop).to_be_visible()
    widget.input.press("Tab")  # the hint is not focusable; Send is hidden while streaming
    expect(stop).to_be_focused()
    stop.press("Enter")
    assert widget.wait_until_complete() == "cancelled"
    message_id = widget.last_answer().get_attribute("data-message-id")
    assert server.service.store.message(message_id).state.value == "cancelled"
    expect(stop).to_be_hidden()


def test_A11_launcher_expanded_state_escape_and_close_return_focus(embed):
    widget = embed()
    expect(widget.launcher).to_have_attribute("aria-expanded", "false")
    panel_id = widget.launcher.get_attribute("aria-controls")
    assert widget.launcher.evaluate("n => n.tagName") == "BUTTON"
    widget.open()
    assert widget.launcher.evaluate("(n, id) => !!n.getRootNode().getElementById(id)", panel_id)
    widget.input.press("Escape")
    expect(widget.launcher).to_be_focused()
    expect(widget.launcher).to_have_attribute("aria-expanded", "false")
    widget.launcher.press("Enter")
    expect(widget.input).to_be_focused()
    widget.frame.get_by_role("button", name=EN["close"]).press("Enter")
    expect(widget.launcher).to_be_focused()


def _focus_ring(locator) -> tuple[str, float]:
    return locator.evaluate("n => [getComputedStyle(n).outlineStyle, parseFloat(getComputedStyle(n).outlineWidth)]")


def _unobscured(frame, selector: str) -> bool:
    return frame.evaluate(
        """(selector) => {
            const n = document.querySelector(selector);
            const r = n.getBoundingClientRect();
            const x = r.left + r.width / 2, y = r.top + r.height / 2;
            const inView = r.top >= 0 && r.left >= 0 && r.bottom <= innerHeight && r.right <= innerWidth;
            const top = document.elementFromPoint(x, y);
            return inView && (top === n || n.contains(top));
        }""",
        selector,
    )


@pytest.mark.parametrize("width", [1280, 320])
def test_A12_focus_is_visible_and_never_obscured(embed, page: Page, width):
    page.set_viewport_size({"width": width, "height": 640})
    widget = embed()
    page.keyboard.press("Tab")  # the host page's first focusable is the launcher
    expect(widget.launcher).to_be_focused()
    style, thickness = _focus_ring(widget.launcher)
    assert style != "none" and thickness >= 3
    widget.launcher.press("Enter")
    expect(widget.input).to_be_focused()
    frame = widget.panel_frame()
    # Walk the panel by keyboard, as a person would, checking each stop.
    walk = [
        ("Tab", "[data-chat-send]"),
        ("Shift+Tab", "#chat-input"),
        # The empty transcript scrolls nothing, so it is no stop (A37; its focus ring is
        # checked where it scrolls, in test_accessibility_contract_layout.py).
        ("Shift+Tab", "[data-chat-close]"),
    ]
    for key, selector in walk:
        page.keyboard.press(key)
        assert frame.evaluate("(s) => document.activeElement === document.querySelector(s)", selector), selector
        style, thickness = frame.evaluate(
            "(s) => { const c = getComputedStyle(document.querySelector(s)); return [c.outlineStyle, parseFloat(c.outlineWidth)]; }",
            selector,
        )
        assert style != "none" and thickness >= 3, selector
        assert _unobscured(frame, selector), selector


def test_A13_targets_are_at_least_24_by_24(embed):
    widget = embed()
    box = widget.launcher.bounding_box()
    assert box["width"] >= 24 and box["height"] >= 24
    widget.open()
    widget.send("/scenario fail-network")
    widget.wait_until_complete()
    sizes = widget.panel_frame().evaluate(
        "() => Array.from(document.querySelectorAll('button:not([hidden]), textarea'), n => [n.textContent.trim() || n.tagName, n.getBoundingClientRect().width, n.getBoundingClientRect().height])"
    )
    assert len(sizes) >= 3
    for name, width, height in sizes:
        assert width >= 24 and height >= 24, (name, width, height)


# -- Display ------------------------------------------------------------------
# Media emulation is Chromium only, said here on purpose: Firefox ESR 153
# lacks WebDriver BiDi's emulation.setMediaFeaturesOverride, so Playwright
# cannot emulate media features there (docs/testing.md, "System browsers").


@pytest.mark.only_browser("chromium")
def test_A14_reduced_motion_turns_animation_off(embed, chat_server_factory, page: Page):
    page.emulate_media(reduced_motion="reduce")
    widget = embed(chat_server_factory(DEMO_DELAY_SECONDS=0.5))
    widget.open()
    widget.send("/scenario slow")
    answer = widget.last_answer()
    expect(answer).to_have_attribute("data-state", "streaming")
    assert answer.locator(".turn__status").evaluate("n => getComputedStyle(n, '::after').animationName") == "none"
    page.emulate_media(reduced_motion="no-preference")
    assert answer.locator(".turn__status").evaluate("n => getComputedStyle(n, '::after').animationName") == "blink"
    widget.stop()


@pytest.mark.only_browser("chromium")
def test_A15_forced_colours_keep_borders_focus_and_failure_marking(embed, page: Page):
    page.emulate_media(forced_colors="active")
    widget = embed()
    widget.open()
    assert ask(widget, "/scenario fail-provider") == "failed"
    failed = widget.last_answer().evaluate(
        "n => [getComputedStyle(n).borderTopStyle, parseFloat(getComputedStyle(n).borderTopWidth)]"
    )
    assert failed[0] != "none" and failed[1] >= 3
    widget.input.focus()
    style, thickness = widget.input.evaluate(
        "n => [getComputedStyle(n).outlineStyle, parseFloat(getComputedStyle(n).outlineWidth)]"
    )
    assert style != "none" and thickness >= 3
    button_border = widget.send_button.evaluate("n => getComputedStyle(n).borderTopStyle")
    assert button_border != "none"


def test_A16_reflows_at_320_px_with_nothing_lost(embed, page: Page):
    page.set_viewport_size({"width": 320, "height": 640})
    widget = embed()
    widget.open()
    assert ask(widget, "/scenario markdown") == "completed"
    frame = widget.panel_frame()
    overflow = frame.evaluate("() => document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 0
    # Wide content scrolls inside its own box (a table's is .md-wide, A40), never the page.
    for selector in ("pre", ".md-wide"):
        assert frame.evaluate("(s) => document.querySelector(s).getBoundingClientRect().right <= innerWidth", selector)
    # The panel fills the small screen, and its controls are all reachable.
    expect(widget.send_button).to_be_visible()
    expect(widget.frame.locator("[data-chat-close]")).to_be_visible()
    assert not widget.launcher.is_visible()  # hidden behind the full-screen panel, not covering it


def test_A17_text_spacing_overrides_clip_nothing(embed):
    widget = embed()
    widget.open()
    assert ask(widget, "/scenario fail-timeout") == "failed"
    clipped = widget.panel_frame().evaluate(
        """() => {
            // A constructed sheet, as a user stylesheet or bookmarklet would add
            // (the panel's CSP refuses inline <style>).
            const sheet = new CSSStyleSheet();
            sheet.replaceSync('* { line-height: 1.5 !important; letter-spacing: 0.12em !important; word-spacing: 0.16em !important; } p { margin-bottom: 2em !important; }');
            document.adoptedStyleSheets = [...document.adoptedStyleSheets, sheet];
            return Array.from(document.querySelectorAll('button:not([hidden]), label, .turn__status, .turn__who, .chat__title'))
                .filter(n => n.scrollWidth > n.clientWidth + 1 || n.scrollHeight > n.clientHeight + 1)
                .map(n => n.outerHTML.slice(0, 80));
        }"""
    )
    assert clipped == []


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_A18_contrast_meets_AA_in_light_and_dark(embed, page: Page, scheme, browser_name):
    if browser_name == "chromium":
        page.emulate_media(color_scheme=scheme)
    widget = embed()
    widget.open()
    assert ask(widget, "/scenario fail-provider") == "failed"
    widget.send("/scenario markdown")
    widget.wait_until_complete()
    violations = widget.axe_violations(tags=("wcag2aa",))
    assert [v for v in violations if v["id"] == "color-contrast"] == []


# -- Axe in every state -----------------------------------------------------------


def _settle(widget, state: str) -> None:
    expect(widget.last_answer()).to_have_attribute("data-state", state)


@pytest.mark.parametrize("width", [1280, 320])
def test_A19_axe_finds_nothing_in_any_state(embed, chat_server_factory, page: Page, context, width):
    page.set_viewport_size({"width": width, "height": 720})
    widget = embed(chat_server_factory(DEMO_DELAY_SECONDS=0.3, MESSAGE_TIME_LIMIT_SECONDS=30), incomplete_after=1500)
    checked = []

    def check(state):
        widget.assert_accessible()
        checked.append(state)

    check("closed")
    widget.open()
    check("open-empty")
    widget.send("/scenario markdown")
    _settle(widget, "streaming")
    check("streaming")
    widget.stop()
    _settle(widget, "cancelled")
    check("cancelled")
    widget.send("/echo Done.")
    _settle(widget, "completed")
    check("completed")
    widget.send("/scenario fail-provider")
    _settle(widget, "failed")
    check("error")
    widget.send("/scenario hang")
    expect(widget.last_answer().locator(".turn__body")).not_to_be_empty()
    context.set_offline(True)
    try:
        _settle(widget, "reconnecting")
        check("reconnecting")
        _settle(widget, "incomplete")
        check("incomplete")
    finally:
        context.set_offline(False)
    assert checked == [
        "closed",
        "open-empty",
        "streaming",
        "cancelled",
        "completed",
        "error",
        "reconnecting",
        "incomplete",
    ]


def test_A19_the_axe_scan_reaches_inside_the_panel(embed):
    """A deliberately broken panel must fail: proof that axe is not only scanning the host page."""
    widget = embed()
    widget.open()
    widget.assert_accessible()
    widget.panel_frame().evaluate(
        "() => { document.querySelector('label[for=chat-input]').remove(); document.querySelector('[data-chat-send]').textContent = ''; }"
    )
    violations = widget.axe_violations()
    ids = {v["id"] for v in violations if "/panel" in v["frame_url"]}
    assert {"label", "button-name"} <= ids
    with pytest.raises(AssertionError, match="violation"):
        widget.assert_accessible()
