"""The expected script (static/qa/expected.js) and its page (/qa/script), in real Chromium and Firefox.

The script is computed in the browser with the panel's own renderer and
announcer, so these tests run there. tests/e2e/test_qa_page.py checks it
against what the panel really announced; tests/test_qa.py checks the server
side (the scenarios' answers, the page's status and policy) without a browser.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page

from widget_server.backends.demo import SCENARIOS
from widget_server.i18n import ui_strings
from widget_server.qa import SCRIPT_MAX_SENTENCES

from ..conftest import TEST_CONFIG
from ..helpers import REPO_ROOT, LiveServer
from .expected_script import ExpectedScripts, script_page_steps

pytestmark = pytest.mark.e2e

WIDGET = {lang: ui_strings()[lang] for lang in ("en", "es", "ar", "he")}
QA_STRINGS = {
    lang: json.loads((REPO_ROOT / "static" / "qa" / "i18n" / f"{lang}.json").read_text(encoding="utf-8"))
    for lang in ("en", "es")
}

# What the contract test A5 hears for the improvisation answer (tests/e2e/test_accessibility_contract.py).
IMPROVISATION_SENTENCES = [
    "Over Am – F – C – G, for each chord:",
    "Am → arpeggio Am, play A Aeolian (natural minor) (diatonic minor — fits most i chords).",
    "F → arpeggio F, play F Ionian (major) (diatonic, includes the 7 — careful on the IV chord).",
    "C → arpeggio C, play C Ionian (major) (diatonic, includes the 7 — careful on the IV chord).",
    "G → arpeggio G, play G Ionian (major) (diatonic, includes the 7 — careful on the IV chord).",
    "Each arpeggio spells the chord tones; the scale adds the passing notes for lines between them.",
]

VOICINGS_EN = [
    "Found 2 voicings matching chord Cmaj7:",
    "Cmaj7 3-0-x-2-3-x (guitar, score 0.369)",
    "Code block, vextab, 1 line.",
    "Cmaj7 3-0-0-2-3-x (guitar, score 0.369)",
    "Code block, vextab, 1 line.",
]


@pytest.fixture(scope="module")
def qa_server():
    server = LiveServer({**TEST_CONFIG, "QA": True, "FAULTS": True}).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def module_page(browser: Browser, qa_server):
    """One page of the QA server for the whole module: its modules load once."""
    context = browser.new_context()
    page = context.new_page()
    page.goto(qa_server.url + "/healthz")
    yield page
    context.close()


@pytest.fixture
def expected(module_page: Page) -> ExpectedScripts:
    return ExpectedScripts(module_page)


def qa_format(template: str, **values: object) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: str(values[m[1]]) if m[1] in values else m[0], template)


def open_script_page(page: Page, server: LiveServer, scenario: str, lang: str) -> list[dict]:
    page.goto(f"{server.url}/qa/script?scenario={scenario}&lang={lang}")
    return script_page_steps(page)


# -- the two seed answers, English and Spanish --------------------------------------------


def test_improvisation_in_english(expected, seed_answers):
    script = expected.script(seed_answers["improvisation"]["answer"], "en")
    assert script["generating"] == "Generating answer…"
    assert script["sentences"] == IMPROVISATION_SENTENCES
    assert script["completion"] == "Answer complete."
    assert script["error"] is None and script["outcome"] == "completed"
    assert script["sentencesMayBeDropped"] is False


def test_improvisation_in_spanish(expected, seed_answers):
    script = expected.script(seed_answers["improvisation"]["answer"], "es")
    assert script["generating"] == "Generando respuesta…"
    assert script["sentences"] == IMPROVISATION_SENTENCES  # the answer itself is not translated
    assert script["completion"] == "Respuesta completa."


def test_improvisation_joined_is_what_the_contract_test_hears(expected, seed_answers):
    # test_A5_one_polite_region_speaks_sentences_then_the_cue: one batch at full speed.
    contract = Path(REPO_ROOT / "tests" / "e2e" / "test_accessibility_contract.py").read_text(encoding="utf-8")
    spoken = "".join(
        re.findall(r'^\s+"(.*)"$', contract.split("IMPROVISATION_SPOKEN = (", 1)[1].split(")\n\n", 1)[0], re.M)
    )
    assert " ".join(expected.script(seed_answers["improvisation"]["answer"], "en")["sentences"]) == spoken


def test_voicings_in_english(expected, seed_answers):
    script = expected.script(seed_answers["voicings"]["answer"], "en")
    assert script["generating"] == "Generating answer…"
    assert script["sentences"] == VOICINGS_EN
    assert script["completion"] == "Answer complete."
    assert not any("`" in s or "**" in s or "```" in s for s in script["sentences"])


def test_voicings_in_spanish(expected, seed_answers):
    script = expected.script(seed_answers["voicings"]["answer"], "es")
    assert script["generating"] == "Generando respuesta…"
    assert script["sentences"] == [
        s.replace("Code block, vextab, 1 line.", "Bloque de código, vextab, 1 línea.") for s in VOICINGS_EN
    ]
    assert script["completion"] == "Respuesta completa."


def test_seed_scenarios_play_the_seed_answers(expected, seed_answers):
    for name in ("improvisation", "voicings"):
        for lang in ("en", "es"):
            assert expected.scenario_script(name, lang) == expected.script(seed_answers[name]["answer"], lang)


# -- the rules: the panel's renderer and announcer ----------------------------------------


def test_markdown_is_stripped_as_the_panel_strips_it(expected):
    text = (
        "# Title with *emphasis*\n\nA [link](https://example.com) and <https://auto.example> and `code`.\n\n"
        "1. first\n   - nested **bold**\n\n| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |\n\n"
        "```python\nx = 1\ny = 2\n```\n\n> quoted _text_\n\n---\n\n![alt text](https://example.com/i.png)\n"
    )
    assert expected.plain_blocks(text, "en") == [
        ("heading", "Title with emphasis"),
        ("paragraph", "A link and https://auto.example and code."),
        ("list-item", "first"),
        ("list-item", "nested bold"),
        ("table", "Table, 2 columns, 2 rows."),
        ("code", "Code block, python, 2 lines."),
        ("quote", "quoted text"),
        ("rule", ""),
        ("paragraph", "alt text"),
    ]
    assert [plain for _, plain in expected.plain_blocks("```\none\n```\n", "es")] == ["Bloque de código, 1 línea."]


def test_sentences_follow_the_browsers_rules(expected):
    def split(text: str) -> list[str]:
        return expected.sentences_of_plain_text(text, "en")

    assert split("One. Two! Three? Four") == ["One.", "Two!", "Three?", "Four"]
    assert split("Use e.g. the cat. Then stop.") == ["Use e.g. the cat.", "Then stop."]
    assert split("Score 0.369 today. Yes.") == ["Score 0.369 today.", "Yes."]
    assert split("Wait… Then go.") == ["Wait… Then go."]  # no break after an ellipsis
    assert split('He said "Stop." Then left.') == ['He said "Stop."', "Then left."]
    assert split("End. 12 apples.") == ["End. 12 apples."]


@pytest.mark.parametrize(
    ("lang", "text", "sentences"),
    [
        # ؟ (U+061F) and ۔ (U+06D4) end a sentence, the Arabic comma ، does not (UAX #29).
        ("ar", "ما هذا؟ هذا سطر، وفيه فاصلة. انتهى!", ["ما هذا؟", "هذا سطر، وفيه فاصلة.", "انتهى!"]),
        ("ar", "هذا سطر۔ استخدم Python 3. ثم اكتب.", ["هذا سطر۔", "استخدم Python 3.", "ثم اكتب."]),
        ("ar", "الإصدار 3.14 جديد. انتظر… ثم اذهب.", ["الإصدار 3.14 جديد.", "انتظر… ثم اذهب."]),
        ("he", "מה זה? זו שורה, עם פסיק. סוף!", ["מה זה?", "זו שורה, עם פסיק.", "סוף!"]),
        ("he", "הגרסה 3.14 חדשה. The model is new. כן.", ["הגרסה 3.14 חדשה.", "The model is new.", "כן."]),
    ],
)
def test_sentences_in_arabic_and_hebrew(expected, lang, text, sentences):
    assert expected.sentences_of_plain_text(text, lang) == sentences
    # Through the renderer, with the language's summaries: a two-line code block in Arabic.
    code = "```\na\nb\n```\n"
    summary = {"ar": "كتلة برمجية، سطران.", "he": "קטע קוד, שתי שורות."}[lang]
    assert expected.sentences_of(f"{text}\n\n{code}", lang) == [*sentences, summary]


def test_sentences_of_is_plain_blocks_split(expected):
    text = "Para one. Para two.\n\n- item\n"
    assert expected.sentences_of(text, "en") == ["Para one.", "Para two.", "item"]


# -- the demo's scenarios ------------------------------------------------------------------


@pytest.mark.parametrize("name", [n for n in SCENARIOS if n.startswith("fail-")])
@pytest.mark.parametrize("lang", ["en", "es"])
def test_failing_scenarios_end_with_their_error_said_assertively(expected, module_page, qa_server, name, lang):
    script = expected.scenario_script(name, lang)
    code = name.removeprefix("fail-")
    assert script["error"] == WIDGET[lang]["errors"][code]
    assert script["completion"] is None and script["outcome"] == "failed"
    assert script["sentencesMayBeDropped"]  # the error drops what was not said yet
    # The page's last step heard is the error, said assertively; the sentences are only possibly heard.
    heard = [step for step in open_script_page(module_page, qa_server, name, lang) if step["politeness"]]
    q = QA_STRINGS[lang]
    assert heard[-1] == {
        "step": "error",
        "politeness": "assertive",
        "text": qa_format(q["stepError"], text=WIDGET[lang]["errors"][code]),
    }
    assert heard[1]["step"] == "sentences" and heard[1]["optional"] is True
    assert heard[1]["heading"] == q["stepSentencesMaybe"]


def test_hang_fails_at_the_time_limit_after_its_sentence(expected, module_page, qa_server):
    script = expected.scenario_script("hang", "en")
    assert script["error"] == WIDGET["en"]["errors"]["timeout"]
    assert script["sentences"] == ["This answer starts, then hangs until the time limit stops it."]
    assert not script["sentencesMayBeDropped"]
    steps = {step["step"]: step for step in open_script_page(module_page, qa_server, "hang", "en")}
    q = QA_STRINGS["en"]
    assert steps["sentences"]["heading"] == qa_format(q["stepSentences"]["one"], count=1)
    assert steps["sentences"]["optional"] is False
    seconds = f"{qa_server.app.config['WIDGET_SERVER']['MESSAGE_TIME_LIMIT_SECONDS']:g}"
    assert steps["error"]["text"] == (
        qa_format(q["stepError"], text=WIDGET["en"]["errors"]["timeout"])
        + " "
        + qa_format(q["stepErrorLate"], seconds=seconds)
    )


def test_every_scenario_has_a_script_in_each_language(expected):
    for name in SCENARIOS:
        for lang in ("en", "es", "ar", "he"):
            script = expected.scenario_script(name, lang)
            assert script["generating"] == WIDGET[lang]["generating"]
            assert script["sentences"], name
            assert all(s == s.strip() and s for s in script["sentences"])


# -- the script page -------------------------------------------------------------------------


@pytest.mark.parametrize("lang", ["en", "es"])
def test_the_script_page_is_a_checklist_of_what_to_hear(page: Page, qa_server, lang):
    steps = open_script_page(page, qa_server, "improvisation", lang)
    q, t = QA_STRINGS[lang], WIDGET[lang]
    assert page.locator("html").get_attribute("lang") == lang
    # The press step, the script in the order it is heard, then the notes that hold throughout.
    assert steps == [
        {
            "step": "press",
            "politeness": None,
            "text": qa_format(q["stepPress"], label="improvisation", command="/scenario improvisation"),
        },
        {"step": "generating", "politeness": "polite", "text": qa_format(q["stepGenerating"], text=t["generating"])},
        {
            "step": "sentences",
            "politeness": "polite",
            "heading": qa_format(q["stepSentences"]["other"], count=len(IMPROVISATION_SENTENCES)),
            "optional": False,
            "sentences": IMPROVISATION_SENTENCES,
        },
        {"step": "complete", "politeness": "polite", "text": qa_format(q["stepComplete"], text=t["complete"])},
        {"step": "focus", "politeness": None, "text": q["stepFocus"]},
        {"step": "no-repeat", "politeness": None, "text": q["stepNoRepeat"]},
    ]
    assert page.locator("#qa-steps").get_attribute("data-outcome") == "completed"
    text = page.locator("main").inner_text()
    assert "/scenario improvisation" in text
    assert t["reconnecting"] in text  # the note on the drop fault
    assert text.index(t["generating"]) < text.index(IMPROVISATION_SENTENCES[0]) < text.index(t["complete"])


def test_the_script_page_of_a_failure_says_its_error(page: Page, qa_server):
    steps = open_script_page(page, qa_server, "fail-safety", "es")
    assert any(WIDGET["es"]["errors"]["safety"] in step["text"] for step in steps if "text" in step)
    assert page.locator("#qa-steps").get_attribute("data-outcome") == "failed"


def test_the_bulk_script_lists_the_first_sentences_and_counts_the_rest(page: Page, qa_server, expected):
    steps = {step["step"]: step for step in open_script_page(page, qa_server, "bulk", "en")}
    sentences = expected.scenario_script("bulk", "en")["sentences"]
    assert len(sentences) > SCRIPT_MAX_SENTENCES
    assert steps["sentences"]["sentences"] == sentences[:SCRIPT_MAX_SENTENCES]
    more = page.locator("#qa-steps [data-step=sentences] > p").last.text_content()
    assert more == qa_format(
        QA_STRINGS["en"]["stepSentencesMore"]["other"], count=len(sentences) - SCRIPT_MAX_SENTENCES
    )
