"""docs/accessibility.md, "The console in every language" (A91…A93), one test each.

The console at /agent against a real server (an agents file, the visitor API over HTTP), in
real Chromium and Firefox ESR, with axe in every new state. Firefox runs a sample of the
languages (docs/testing.md, "Firefox ESR's share"). The flow at length, per language, is
tests/e2e/test_agent_console_languages.py.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import Browser, expect

from .test_agent_console import (
    Console,
    console_url,
    queue_as_last_polled,
    signed_in,
    start_handoff_server,
    waiting_visitor,
)
from .test_agent_console_languages import (
    RTL,
    STRINGS,
    LanguageConsole,
    browser_in,
    english_left,
    fill,
    plural,
)

pytestmark = pytest.mark.e2e

LANGUAGES = ["en", "es", "fr", "de", "pt", "ar", "he"]

# The banner's h1 against the banner's content box: how far each of its sides is from the
# banner's, and the margins the browser computed for it.
BANNER_GEOMETRY = """() => {
  const title = document.querySelector('.console__title');
  const banner = document.querySelector('.console__header');
  const box = title.getBoundingClientRect();
  const outer = banner.getBoundingClientRect();
  const padding = getComputedStyle(banner);
  return {
    fromStart: box.left - outer.left - parseFloat(padding.paddingLeft),
    fromEnd: outer.right - box.right - parseFloat(padding.paddingRight),
    marginLeft: parseFloat(getComputedStyle(title).marginLeft),
    marginRight: parseFloat(getComputedStyle(title).marginRight),
    direction: getComputedStyle(document.body).direction,
  };
}"""


@pytest.fixture
def handoff_server(chat_server_factory, tmp_path):
    return start_handoff_server(chat_server_factory, tmp_path)


@pytest.mark.firefox_sample(lang=["fr", "ar"])
@pytest.mark.parametrize("lang", LANGUAGES)
def test_A91_both_pages_in_each_language_with_its_direction(handoff_server, browser: Browser, lang):
    s = STRINGS[lang]
    direction = "rtl" if lang in RTL else "ltr"
    context = browser_in(browser, lang)
    try:
        page = context.new_page()
        console = LanguageConsole(page, console_url(handoff_server), lang)
        page.goto(console.base + "/agent")
        console.expect_language()
        assert page.evaluate("() => getComputedStyle(document.body).direction") == direction
        assert page.title() == s["signInTitle"]
        expect(page.get_by_role("heading", level=1)).to_have_text(s["signInHeading"])
        expect(page.get_by_label(s["nameLabel"], exact=True)).to_be_visible()
        expect(page.get_by_label(s["passwordLabel"], exact=True)).to_be_visible()
        expect(page.get_by_role("combobox", name=s["languageLabel"], exact=True)).to_have_value(lang)
        assert english_left(page, lang) == []
        console.assert_accessible()

        console.sign_in("ana")
        console.wait_ready()
        console.expect_language()
        assert page.evaluate("() => getComputedStyle(document.body).direction") == direction
        assert page.title() == s["title"]
        visitor = waiting_visitor(handoff_server, console)
        console.wait_said(plural(s["announceNewVisitor"], 1, lang))
        expect(console.entry(visitor.conversation_id).get_by_role("button")).to_have_text(s["claim"])
        assert english_left(page, lang) == []
        console.assert_accessible()
    finally:
        context.close()


@pytest.mark.firefox_sample(lang=["he"])
@pytest.mark.parametrize("lang", sorted(RTL))
def test_A92_right_to_left_the_console_mirrors_and_names_and_text_keep_their_direction(
    handoff_server, browser: Browser, lang
):
    s = STRINGS[lang]
    english, native = browser_in(browser, "en"), browser_in(browser, lang)
    try:
        ana = signed_in(english, handoff_server, "ana")
        bo = LanguageConsole(native.new_page(), console_url(handoff_server), lang)
        bo.sign_in("bo")
        bo.wait_ready()
        page = bo.page
        # The banner is the mirror image: the title at the right (the start), the rest pushed
        # to the left by the title's margin at its end (margin-inline-end: auto).
        geometry = page.evaluate(BANNER_GEOMETRY)
        assert geometry["direction"] == "rtl"
        assert abs(geometry["fromEnd"]) <= 1 and geometry["fromStart"] > 100, geometry
        assert geometry["marginRight"] == 0 and geometry["marginLeft"] > 100, geometry
        left_to_right = ana.page.evaluate(BANNER_GEOMETRY)
        assert abs(left_to_right["fromStart"]) <= 1 and left_to_right["marginLeft"] == 0, left_to_right
        sign_out = page.get_by_role("banner").get_by_role("button", name=s["signOut"], exact=True)
        title_box, sign_out_box = page.locator(".console__title").bounding_box(), sign_out.bounding_box()
        assert title_box and sign_out_box and sign_out_box["x"] + sign_out_box["width"] <= title_box["x"]
        # The agent's own name, isolated in the sentence that says who is signed in.
        expect(page.locator("[data-agent-who] bdi")).to_have_text("Bo")
        expect(page.locator("[data-agent-who]")).to_have_text(fill(s["signedInAs"], name="Bo"))

        # A waiting visitor's English message, in a <bdi> inside the right-to-left sentence.
        visitor = waiting_visitor(handoff_server, bo)
        visitor.say("Where is my order #42?")
        last = bo.entry(visitor.conversation_id).locator(".queue__last")
        expect(last).to_have_text(fill(s["lastMessage"], text="Where is my order #42?"))
        expect(last.locator("bdi")).to_have_text("Where is my order #42?")
        assert last.locator("bdi").evaluate("n => getComputedStyle(n).direction") == "ltr"
        assert last.evaluate("n => getComputedStyle(n).direction") == "rtl"
        bo.assert_accessible()

        # Ana (English) claims it first; Bo's claim is told who won, Ana's name isolated.
        note = page.locator("[data-agent-queue-note]")
        with queue_as_last_polled(page):  # Bo still sees the entry Ana claims
            ana.page.bring_to_front()  # Firefox sends keys to the page in front only
            ana.entry(visitor.conversation_id).get_by_role("button").press("Enter")
            expect(ana.root).to_have_attribute("data-conversation-state", "assigned")
            page.bring_to_front()
            bo.entry(visitor.conversation_id).get_by_role("button").press("Enter")
            expect(note).to_have_text(fill(s["alreadyTaken"], agent="Ana"))
        expect(note.locator("bdi")).to_have_text("Ana")
        bo.wait_said(fill(s["alreadyTaken"], agent="Ana"))
        bo.assert_accessible()

        # In a conversation, each message reads in its own direction (dir=auto), and the reply
        # buttons run from the right: the first, Send, is the rightmost.
        second = waiting_visitor(handoff_server, bo)
        bo.entry(second.conversation_id).get_by_role("button").press("Enter")
        expect(bo.root).to_have_attribute("data-conversation-state", "assigned")
        native_text = {"ar": "هل وصل طلبي؟", "he": "האם ההזמנה שלי הגיעה?"}[lang]
        second.say("My order has not arrived.")
        second.say(native_text)
        for text, direction in (("My order has not arrived.", "ltr"), (native_text, "rtl")):
            message = bo.transcript.filter(has_text=text).locator(".transcript__text")
            expect(message).to_have_attribute("dir", "auto")
            assert message.evaluate("n => getComputedStyle(n).direction") == direction, text
        send = page.get_by_role("button", name=s["send"], exact=True).bounding_box()
        end = page.get_by_role("button", name=s["end"], exact=True).bounding_box()
        assert send and end and send["x"] > end["x"] + end["width"] - 1
        bo.assert_accessible()
    finally:
        english.close()
        native.close()


def test_A93_the_language_control_lists_every_language_in_itself_and_plurals_follow_it(
    handoff_server, browser: Browser
):
    context = browser_in(browser, "en")
    try:
        page = context.new_page()
        base = console_url(handoff_server)
        page.goto(base + "/agent")
        language = page.get_by_role("combobox", name="Language", exact=True)
        codes = sorted(STRINGS)
        expect(language.locator("option")).to_have_text([STRINGS[code]["languageName"] for code in codes])
        for code in codes:
            expect(language.locator(f"option[value='{code}']")).to_have_attribute("lang", code)
        Console(page, base).assert_accessible()
        # By keyboard: up from English to Arabic (the list is in code order), then the button.
        language.focus()
        page.keyboard.press("ArrowUp")
        page.keyboard.press("ArrowUp")
        expect(language).to_have_value("ar")
        expect(page.locator("html")).to_have_attribute("lang", "en")
        page.keyboard.press("Tab")
        page.keyboard.press("Enter")
        arabic = LanguageConsole(page, base, "ar")
        arabic.expect_language()
        control = page.get_by_role("combobox", name=STRINGS["ar"]["languageLabel"], exact=True)
        expect(control).to_have_value("ar")
        page.keyboard.press("Tab")
        expect(control).to_be_focused()
        arabic.assert_accessible()

        # Two visitors wait: on opening, the count in Arabic's dual, then in Hebrew's.
        arabic.sign_in("ana")
        arabic.wait_ready()
        waiting_visitor(handoff_server, arabic)
        waiting_visitor(handoff_server, arabic)
        page.reload()
        arabic.wait_ready()
        arabic.wait_said(plural(STRINGS["ar"]["announceWaiting"], 2, "ar"))
        assert plural(STRINGS["ar"]["announceWaiting"], 2, "ar") == "زائران في الانتظار."
        arabic.assert_accessible()
        page.get_by_role("banner").get_by_role("combobox").select_option("he")
        page.get_by_role("button", name=STRINGS["ar"]["languageChange"], exact=True).click()
        hebrew = LanguageConsole(page, base, "he")
        hebrew.wait_ready()
        hebrew.expect_language()
        hebrew.wait_said("שני מבקרים ממתינים.")
        assert plural(STRINGS["he"]["announceWaiting"], 2, "he") == "שני מבקרים ממתינים."
        hebrew.assert_accessible()
    finally:
        context.close()
