"""docs/accessibility.md, "Languages and direction" (A64–A72), one test per id, in real Chromium
and Firefox ESR: the panel in each of its languages, right to left for Arabic and Hebrew,
mixed-direction answers, plural forms, the language choice and the announcer's sentences in
Arabic and Hebrew (with and without Intl.Segmenter).

The demo backend answers in English; `/echo <markdown>` makes it stream the given text word by
word (widget_server/backends/demo.py), which is how Arabic and Hebrew answers arrive here.
"""

from __future__ import annotations

import html
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from widget_server.i18n import ui_strings
from widget_server.testing import ChatWidget

from ..announcements import sentences_heard
from .conftest import chat_base_url
from .expected_script import ExpectedScripts
from .test_handoff_widget import HANDOFF_SETTINGS, Agent, conversation_of, talk_to_a_person

pytestmark = pytest.mark.e2e

STRINGS = ui_strings()
LANGUAGES = ("en", "es", "fr", "de", "pt", "ar", "he")
RTL = ("ar", "he")

# Answers as a model would write them in Arabic and Hebrew: sentences ending with ؟ (the Arabic
# question mark), ۔ (the Arabic full stop), . and !, an Arabic comma ، that ends nothing, an
# English sentence in the middle, a list and a last paragraph.
ANSWERS = {
    "ar": (
        "مرحبًا بك في متجرنا. هل تبحث عن غيتار جديد؟ لدينا نماذج كثيرة، وكلها بأسعار جيدة!\n\n"
        "- الطراز الأول خفيف۔ يناسب المبتدئين.\n"
        "- The second model is made in Spain. إنه أثقل قليلًا.\n\n"
        "اكتب لنا إن احتجت إلى مساعدة.\n"
    ),
    "he": (
        "ברוכים הבאים לחנות שלנו. מחפשים גיטרה חדשה? יש לנו דגמים רבים, וכולם במחירים טובים!\n\n"
        "- הדגם הראשון קל. הוא מתאים למתחילים.\n"
        "- The second model is made in Spain. הוא כבד מעט יותר.\n\n"
        "כתבו לנו אם צריך עזרה.\n"
    ),
}
# What the polite region must say for them, sentence by sentence (UAX #29's sentence ends).
SENTENCES = {
    "ar": [
        "مرحبًا بك في متجرنا.",
        "هل تبحث عن غيتار جديد؟",
        "لدينا نماذج كثيرة، وكلها بأسعار جيدة!",
        "الطراز الأول خفيف۔",
        "يناسب المبتدئين.",
        "The second model is made in Spain.",
        "إنه أثقل قليلًا.",
        "اكتب لنا إن احتجت إلى مساعدة.",
    ],
    "he": [
        "ברוכים הבאים לחנות שלנו.",
        "מחפשים גיטרה חדשה?",
        "יש לנו דגמים רבים, וכולם במחירים טובים!",
        "הדגם הראשון קל.",
        "הוא מתאים למתחילים.",
        "The second model is made in Spain.",
        "הוא כבד מעט יותר.",
        "כתבו לנו אם צריך עזרה.",
    ],
}

# An Arabic answer with an English paragraph, a mixed list, a table and code (A68).
MIXED_ANSWER = (
    "# عنوان عربي\n\n"
    "هذه فقرة عربية.\n\n"
    "This paragraph is English.\n\n"
    "- بند عربي\n"
    "- An English item\n\n"
    "| العمود | Column |\n|---|---|\n| خلية | cell |\n\n"
    "```python\nprint('hi')\n```\n"
)


def polite(widget: ChatWidget) -> list[str]:
    return [entry["text"] for entry in widget.announcements() if entry["politeness"] == "polite"]


def answer(widget: ChatWidget, markdown: str) -> None:
    widget.send(f"/echo {markdown}")
    assert widget.wait_until_complete() == "completed"


def box(locator: Any) -> dict[str, float]:
    found = locator.bounding_box()
    assert found is not None
    return found


def publish_host_page(host_site, path: str, chat_url: str, *, html_lang: str | None, **data: str) -> str:
    """A host page like HostSite.embed_page, with the page's own <html lang> (or none)."""
    attributes = "".join(f' data-{name}="{html.escape(value)}"' for name, value in data.items())
    lang = f' lang="{html_lang}"' if html_lang is not None else ""
    host_site.pages[path] = (
        f'<!doctype html><html{lang}><head><meta charset="utf-8"><title>Host</title></head>'
        f"<body><main><h1>Host</h1></main>"
        f'<script src="{chat_url}/widget.js" defer{attributes}></script></body></html>'
    )
    return host_site.origin + path


# -- A64: lang and dir, axe clean in every language --------------------------------------------


@pytest.mark.firefox_sample(lang=["en", "ar", "he"])
@pytest.mark.parametrize("lang", LANGUAGES)
def test_A64_panel_document_has_the_languages_lang_and_dir_and_is_axe_clean(embed, lang):
    widget = embed(lang=lang)
    widget.open()
    root = widget.frame.locator("html")
    expect(root).to_have_attribute("lang", lang)
    expect(root).to_have_attribute("dir", "rtl" if lang in RTL else "ltr")
    direction = widget.panel.evaluate("n => getComputedStyle(n).direction")
    assert direction == ("rtl" if lang in RTL else "ltr")
    answer(widget, ANSWERS.get(lang, "Hello. **Bold** and `code`.\n\n- one\n- two\n"))
    widget.assert_accessible()


# -- A65: every string and cue in the language -------------------------------------------------


@pytest.mark.firefox_sample(lang=["de", "ar"])
@pytest.mark.parametrize("lang", ["fr", "de", "pt", "ar", "he"])
def test_A65_controls_labels_and_cues_are_in_the_panels_language(embed, lang):
    t = STRINGS[lang]
    widget = embed(lang=lang)
    expect(widget.launcher).to_have_text(t["launcher"])
    expect(widget.launcher).to_have_attribute("aria-label", t["launcherLabel"])
    widget.open()
    expect(widget.frame.locator("h1")).to_have_text(t["panelTitle"])
    expect(widget.send_button).to_have_text(t["send"])
    expect(widget.input).to_have_accessible_name(t["composerLabel"])
    expect(widget.frame.locator("#chat-hint")).to_have_text(t["composerHint"])
    expect(widget.frame.get_by_role("button", name=t["conversationTools"]["newLabel"])).to_have_count(1)
    expect(widget.frame.get_by_role("button", name=t["close"])).to_have_count(1)
    answer(widget, ANSWERS.get(lang, "Une phrase. Ein Satz. Uma frase.\n"))
    widget.wait_for_announcement(t["complete"])
    said = polite(widget)
    assert said[0] == t["generating"] and said[-1] == t["complete"]
    expect(widget.last_answer().locator(".turn__who")).to_have_text(t["assistant"])
    # An error is said in the language too.
    widget.send("/scenario fail-safety")
    assert widget.wait_until_complete() == "failed"
    expect(widget.frame.get_by_role("alert")).to_have_text(t["errors"]["safety"])


# -- A66: right to left, mirrored ---------------------------------------------------------------


@pytest.mark.smoke
@pytest.mark.firefox_sample(lang=["he"])
@pytest.mark.parametrize("lang", ["ar", "he", "en"])
def test_A66_right_to_left_layout_is_the_mirror_image(embed, lang):
    rtl = lang in RTL
    widget = embed(lang=lang)
    widget.open()
    answer(widget, ANSWERS.get(lang, "Hello there.\n"))
    send, field = box(widget.send_button), box(widget.input)
    title = box(widget.frame.locator("h1"))
    close = box(widget.frame.locator("[data-chat-close]"))
    user = box(widget.turns.first)
    transcript = box(widget.frame.locator("[data-chat-transcript]"))
    if rtl:
        assert send["x"] + send["width"] <= field["x"], "Send is to the left of the message field"
        assert close["x"] + close["width"] <= title["x"], "Close is at the left, the title at the right"
        assert abs(user["x"] - transcript["x"]) <= 1, "the visitor's turn sits at the left"
        assert user["x"] + user["width"] < transcript["x"] + transcript["width"] - 1
    else:
        assert field["x"] + field["width"] <= send["x"]
        assert title["x"] + title["width"] <= close["x"]
        assert abs(user["x"] + user["width"] - transcript["x"] - transcript["width"]) <= 1
    # Text starts at the inline start: the right edge in RTL (the words' box against the block's).
    direction, words_gap = widget.frame.locator("[data-chat-transcript] .md p").first.evaluate(
        """p => {
            const range = document.createRange();
            range.selectNodeContents(p);
            const words = range.getBoundingClientRect(), block = p.getBoundingClientRect();
            const rtl = getComputedStyle(p).direction === 'rtl';
            return [getComputedStyle(p).direction, rtl ? block.right - words.right : words.left - block.left];
        }"""
    )
    assert direction == ("rtl" if rtl else "ltr")
    assert abs(words_gap) <= 1
    widget.assert_accessible()


# -- A67: the launcher ------------------------------------------------------------------------


@pytest.mark.firefox_sample(lang=["ar", "en"])
@pytest.mark.parametrize(
    ("lang", "position", "side"),
    [
        ("ar", None, "left"),
        ("he", None, "left"),
        ("en", None, "right"),
        ("he", "right", "right"),
        ("en", "left", "left"),
    ],
)
def test_A67_launcher_speaks_the_language_and_sits_on_the_mirrored_side(embed, page: Page, lang, position, side):
    data = {"lang": lang} | ({"position": position} if position else {})
    widget = embed(**data)
    launcher = box(widget.launcher)
    width = page.viewport_size["width"]
    gap = launcher["x"] if side == "left" else width - launcher["x"] - launcher["width"]
    assert gap == pytest.approx(16, abs=1), launcher
    host = page.locator("[data-chatwidget]")
    expect(host).to_have_attribute("lang", lang)
    expect(host).to_have_attribute("dir", "rtl" if lang in RTL else "ltr")
    assert widget.launcher.evaluate("n => getComputedStyle(n).direction") == ("rtl" if lang in RTL else "ltr")
    # The speech bubble's tail (its square lower corner) is at the start side: mirrored in RTL.
    corners = widget.launcher.evaluate(
        """n => { const s = getComputedStyle(n, '::before');
                  return [s.borderBottomLeftRadius, s.borderBottomRightRadius]; }"""
    )
    assert corners == (["6px", "0px"] if lang in RTL else ["0px", "6px"])
    widget.open()
    panel = box(page.locator("[data-chatwidget] .panel"))
    panel_gap = panel["x"] if side == "left" else width - panel["x"] - panel["width"]
    assert panel_gap == pytest.approx(16, abs=1)
    widget.assert_accessible()


# -- A68: mixed-direction text isolated ---------------------------------------------------------


def test_A68_each_block_and_the_visitors_message_take_their_own_direction(embed):
    widget = embed(lang="ar")
    widget.open()
    answer(widget, MIXED_ANSWER)
    body = widget.last_answer().locator(".turn__body")
    blocks = body.evaluate(
        """b => Array.from(b.querySelectorAll('p, li, h3, h4, h5, th, td, pre'), (n) => ({
            tag: n.localName, dir: n.getAttribute('dir'), text: n.textContent.trim(),
            direction: getComputedStyle(n).direction }))"""
    )
    by_text = {block["text"]: block for block in blocks}
    for block in blocks:
        if block["tag"] != "pre":
            assert block["dir"] == "auto", block
    assert by_text["عنوان عربي"]["direction"] == "rtl"
    assert by_text["هذه فقرة عربية."]["direction"] == "rtl"
    assert by_text["This paragraph is English."]["direction"] == "ltr"
    assert by_text["بند عربي"]["direction"] == "rtl"
    assert by_text["An English item"]["direction"] == "ltr"
    assert by_text["Column"]["direction"] == "ltr" and by_text["العمود"]["direction"] == "rtl"
    assert by_text["print('hi')"]["direction"] == "ltr"  # code reads left to right
    # The list keeps the panel's direction; the English item has room for its marker on its left.
    english_item = body.locator("li", has_text="An English item")
    assert english_item.evaluate("li => getComputedStyle(li.parentNode).direction") == "rtl"
    assert english_item.evaluate("li => parseFloat(getComputedStyle(li).marginLeft)") >= 16
    # The visitor's own message: dir=auto; this one starts with Latin letters ("/echo …").
    message = widget.turns.first.locator(".turn__body")
    expect(message).to_have_attribute("dir", "auto")
    assert message.evaluate("n => getComputedStyle(n).direction") == "ltr"
    widget.send("هل عندكم أوتار؟")
    widget.wait_until_complete()
    mine = widget.frame.locator("[data-chat-transcript] > li.turn--user").last.locator(".turn__body")
    assert mine.evaluate("n => getComputedStyle(n).direction") == "rtl"
    # A message of two lines, English then Arabic: each line starts on its own side.
    widget.input.fill("An English line.\nسطر عربي.")
    widget.input.press("Enter")
    widget.wait_until_complete()
    mine = widget.frame.locator("[data-chat-transcript] > li.turn--user").last.locator(".turn__body")
    english_gap, arabic_gap = mine.evaluate(
        """p => {
            const text = p.firstChild, cut = text.data.indexOf('\\n'), block = p.getBoundingClientRect();
            const rect = (from, to) => {
                const range = document.createRange();
                range.setStart(text, from);
                range.setEnd(text, to);
                return range.getBoundingClientRect();
            };
            return [rect(0, cut).left - block.left, block.right - rect(cut + 1, text.data.length).right];
        }"""
    )
    assert abs(english_gap) <= 1 and abs(arabic_gap) <= 1, (english_gap, arabic_gap)
    # Model text is never markup: an Arabic "<b>" stays text.
    answer(widget, "نص <b>ليس</b> عريضًا.")
    assert widget.last_answer().locator(".turn__body b").count() == 0
    widget.assert_accessible()


# -- A69: plural forms ---------------------------------------------------------------------------

PLURAL_JS = """async ([lang, strings]) => {
  const { plural } = await import(new URL('/static/widget/i18n.js', location.href).href);
  return [0, 1, 2, 3, 11, 100].map((n) => plural(strings.lines, n, lang));
}"""


def test_A69_numbers_take_the_languages_plural_forms(embed):
    ar, he = STRINGS["ar"], STRINGS["he"]
    widget = embed(lang="ar")
    widget.open()
    frame = widget.panel_frame()
    # CLDR: Arabic zero, one, two, few (3–10), many (11–99), other (100…); Hebrew one, two, other.
    assert frame.evaluate(PLURAL_JS, ["ar", ar]) == [
        "0 سطر",
        "سطر واحد",
        "سطران",
        "3 أسطر",
        "11 سطرًا",
        "100 سطر",
    ]
    assert frame.evaluate(PLURAL_JS, ["he", he]) == [
        "0 שורות",
        "שורה אחת",
        "שתי שורות",
        "3 שורות",
        "11 שורות",
        "100 שורות",
    ]
    # In the panel: a two-line code block and a 2 × 3 table are summarised with those forms.
    answer(widget, "```python\na = 1\nb = 2\n```\n\n| أ | ب |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |\n| 5 | 6 |\n")
    widget.wait_for_announcement(ar["complete"])
    spoken = " ".join(polite(widget))
    assert "كتلة برمجية، python، سطران." in spoken
    assert "جدول، عمودان، 3 صفوف." in spoken


# -- A70: which language -------------------------------------------------------------------------


@pytest.mark.firefox_sample(picked=["pt", "he"])
@pytest.mark.parametrize(
    ("data_lang", "html_lang", "browser_languages", "picked"),
    [
        ("he", "fr", ["de"], "he"),  # data-lang first
        (None, "pt-BR", ["de"], "pt"),  # then the page's <html lang>, by base language
        (None, "ja", ["ja-JP", "iw", "en"], "he"),  # then the browser's first supported (iw: Hebrew's old code)
        (None, None, ["ar-EG", "en"], "ar"),
        ("xx", "yy", ["zz"], "en"),  # nothing supported: English
    ],
)
def test_A70_language_is_data_lang_else_the_pages_else_the_browsers(
    browser, host_site, chat_server, browser_name, data_lang, html_lang, browser_languages, picked
):
    context = browser.new_context()
    ChatWidget.install_recorder(context)
    # The visitor's browser languages, as navigator.languages reports them (the browser's
    # language preferences; Playwright's `locale` sets only one, WebDriver BiDi's none).
    context.add_init_script(
        f"Object.defineProperty(Navigator.prototype, 'languages', {{ get: () => {browser_languages!r} }});"
    )
    page = context.new_page()
    try:
        data = {"lang": data_lang} if data_lang else {}
        url = publish_host_page(
            host_site,
            f"/lang-{picked}-{html_lang}",
            chat_base_url(chat_server, browser_name),
            html_lang=html_lang,
            **data,
        )
        page.goto(url)
        widget = ChatWidget(page)
        t = STRINGS[picked]
        expect(widget.launcher).to_have_attribute("aria-label", t["launcherLabel"])
        widget.open()
        expect(widget.frame.locator("html")).to_have_attribute("lang", picked)
        expect(widget.send_button).to_have_text(t["send"])
        # The panel and the launcher are clean; these host pages lack a valid <html lang> on purpose.
        host_page_only = {"html-has-lang", "html-lang-valid"}
        violations = widget.axe_violations()
        assert not [v for v in violations if "/panel" in v["frame_url"] or v["id"] not in host_page_only], violations
    finally:
        context.close()


# -- A71: sentences, never tokens, in Arabic and Hebrew ------------------------------------------


@pytest.fixture
def qa_chat_server(chat_server_factory):
    # QA on: static/qa/expected.js (the expected script) is served; a slower pace, so the
    # answer is said in several announcements.
    return chat_server_factory(QA=True, DEMO_DELAY_SECONDS=0.06)


@pytest.mark.parametrize("lang", RTL)
def test_A71_arabic_and_hebrew_answers_are_said_sentence_by_sentence(embed, qa_chat_server, lang):
    t = STRINGS[lang]
    widget = embed(qa_chat_server, lang=lang)
    widget.open()
    answer(widget, ANSWERS[lang])
    widget.wait_for_announcement(t["complete"])
    said = polite(widget)
    assert said[0] == t["generating"] and said[-1] == t["complete"]
    between = said[1:-1]
    assert len(between) >= 2, between  # really said in several batches, as the answer streamed
    # Each batch is whole sentences, each sentence once and in order.
    assert sentences_heard(between, SENTENCES[lang]) == SENTENCES[lang]
    # The expected script (static/qa/expected.js, the QA page's) says the same.
    script = ExpectedScripts(widget.panel_frame()).script(ANSWERS[lang], lang)
    assert script["sentences"] == SENTENCES[lang]
    assert script["generating"] == t["generating"] and script["completion"] == t["complete"]


# -- A72: the same without Intl.Segmenter ---------------------------------------------------------


@pytest.mark.parametrize("lang", RTL)
def test_A72_without_intl_segmenter_the_sentences_are_the_same(embed, page: Page, chat_server_factory, lang):
    # A browser without Intl.Segmenter (Firefox before 125): the panel's fallback splitter.
    page.context.add_init_script("if (location.pathname === '/panel') delete Intl.Segmenter;")
    t = STRINGS[lang]
    widget = embed(chat_server_factory(DEMO_DELAY_SECONDS=0.06), lang=lang)
    widget.open()
    assert widget.panel_frame().evaluate("() => typeof Intl.Segmenter") == "undefined"
    answer(widget, ANSWERS[lang])
    widget.wait_for_announcement(t["complete"])
    between = polite(widget)[1:-1]
    assert len(between) >= 2, between
    assert sentences_heard(between, SENTENCES[lang]) == SENTENCES[lang]


FALLBACK_JS = """async (texts) => {
  const { fallbackSentences } = await import(new URL('/static/widget/announcer.js', location.href).href);
  return texts.map(([lang, text]) => [
    Array.from(new Intl.Segmenter(lang, { granularity: 'sentence' }).segment(text), (s) => s.segment),
    fallbackSentences(text),
  ]);
}"""

FALLBACK_CORPUS = [
    ("en", "One. Two! Three? Four"),
    ("en", "Use e.g. the cat. Then stop."),
    ("en", "Score 0.369 today. Yes."),
    ("en", "Wait… Then go."),
    ("en", 'He said "Stop." Then left.'),
    ("en", "End. 12 apples."),
    ("ar", "ما هذا؟ هذا سطر، وفيه فاصلة. انتهى! نعم؛ لا"),
    ("ar", "هذا سطر۔ وذاك"),
    ("ar", "قال: «توقف.» ثم ذهب. آخر"),
    ("ar", "النسخة 3.14 جديدة. نعم"),
    ("ar", "استخدم Python 3. ثم اكتب الكود."),
    ("he", "מה זה? זו שורה. סוף! כן׃ לא"),
    ("he", "הגרסה 3.14 חדשה. כן"),
    ("he", "השתמשו ב-Python. אחר כך כתבו קוד."),
    *((lang, " ".join(SENTENCES[lang])) for lang in RTL),
]


def test_the_fallback_splitter_agrees_with_intl_segmenter(embed):
    widget = embed()
    widget.open()
    for (lang, text), (segmenter, fallback) in zip(
        FALLBACK_CORPUS, widget.panel_frame().evaluate(FALLBACK_JS, FALLBACK_CORPUS), strict=True
    ):
        assert fallback == segmenter, (lang, text)


def test_A68_agent_names_are_isolated_and_their_messages_take_their_own_direction(embed, chat_server_factory):
    ar = STRINGS["ar"]
    server = chat_server_factory(**HANDOFF_SETTINGS)
    # A Latin name with brackets: in an Arabic sentence, unisolated, the brackets would turn round.
    agent = Agent(server, display_name="Ana (Support)")
    agent.present()
    widget = embed(server, lang="ar")
    widget.open()
    talk_to_a_person(widget, ar)
    widget.wait_for_announcement(ar["handoff"]["queuedNext"])
    cid, _ = conversation_of(widget)
    agent.claim(cid)
    joined = ar["handoff"]["assigned"].replace("{agent}", "Ana (Support)")
    widget.wait_for_announcement(joined)  # said as plain text
    notice = widget.frame.locator(".handoff-notice").last
    expect(notice).to_have_text(joined)
    for named in (notice, widget.frame.locator(".handoff-bar__status"), widget.frame.locator(".handoff-bar__leave")):
        expect(named.locator("bdi")).to_have_text("Ana (Support)")
    agent.say(cid, "Your order left today.")
    body = widget.frame.locator("[data-chat-transcript] > li.turn--agent .turn__body").last
    expect(body).to_have_text("Your order left today.")
    expect(body).to_have_attribute("dir", "auto")
    assert body.evaluate("n => getComputedStyle(n).direction") == "ltr"
    widget.assert_accessible()


@pytest.mark.parametrize(("lang", "mark"), [("ar", "؟"), ("he", "?"), ("en", "?")])
def test_the_help_icon_is_the_languages_question_mark(embed, lang, mark):
    widget = embed(lang=lang, launcher_icon="help")
    content = widget.launcher.evaluate("n => getComputedStyle(n, '::before').content")
    assert content == f'"{mark}"'
