"""The QA page (/qa) in real Chromium and Firefox, driven with the keyboard only.

The page embeds the widget inline with the loader's script tag, re-mounts it
with new data-* attributes (faults, language, reduced motion, pacing), and
logs what the panel reports through its chatwidget:* events. These tests
press only Tab, Shift+Tab, arrows, Enter, Space and digits on it (page
evaluation is used to read, never to act), and check the log against the
contract — and the expected script (static/qa/expected.js, computed in the
browser) against what the browser really announced.
"""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import Page, expect

from widget_server.backends.demo import SCENARIOS, SOURCES_PROGRESS
from widget_server.expected import scenario_answer
from widget_server.i18n import ui_strings
from widget_server.testing import ChatWidget

from ..announcements import sentences_heard
from ..conftest import TEST_CONFIG
from ..helpers import REPO_ROOT, LiveServer, load_seed_answers
from .expected_script import ExpectedScripts
from .test_markdown import CONSTRUCTS

pytestmark = pytest.mark.e2e

QA = {
    lang: json.loads((REPO_ROOT / "static" / "qa" / "i18n" / f"{lang}.json").read_text(encoding="utf-8"))
    for lang in ("en", "es")
}
EN = ui_strings()["en"]
SEED = load_seed_answers()

ROWS_JS = """() => Array.from(document.querySelectorAll('#qa-log-body tr'), (row) => ({
    kind: row.dataset.kind,
    cells: Array.from(row.cells, (cell) => cell.textContent),
}))"""


# What the panel's live regions really hold, per document. Installed into the
# panel by the test (record_live_regions) once the panel is ready: in Firefox
# (BiDi) an init script does not run in a same-origin iframe's document, which
# reuses the Window of its initial about:blank (widget_server.testing's recorder
# misses it there for the same reason).
LIVE_RECORDER = """
(() => {
  if (document.__qaLiveRecorder) return;
  document.__qaLiveRecorder = true;
  const log = (window.__qaLive = []);
  const seen = new WeakSet();
  const watch = () => {
    for (const region of document.querySelectorAll('[data-chat-announcer], [data-chat-alert]')) {
      if (seen.has(region)) continue;
      seen.add(region);
      const politeness = region.matches('[data-chat-alert]') ? 'assertive' : 'polite';
      new MutationObserver(() => region.textContent && log.push({ politeness, text: region.textContent }))
        .observe(region, { childList: true, characterData: true, subtree: true });
    }
  };
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', watch);
  else watch();
  new MutationObserver(watch).observe(document, { childList: true, subtree: true });
})();
"""


def record_live_regions(page: Page) -> None:
    ChatWidget(page).panel_frame().evaluate(LIVE_RECORDER)


def remount(page: Page) -> None:
    """Press "Re-mount the widget" (focus must be before it), wait for the new panel, record it."""
    ready = page.locator("#qa-log-body tr[data-kind=ready]").count()
    tab_to(page, "qa-remount")
    page.keyboard.press("Enter")
    expect(page.locator("#qa-log-body tr[data-kind=ready]")).to_have_count(ready + 1)
    record_live_regions(page)


def live_polite(page: Page) -> list[str]:
    """The polite region's texts in the current panel, as written."""
    entries = ChatWidget(page).panel_frame().evaluate("() => window.__qaLive || []")
    return [entry["text"] for entry in entries if entry["politeness"] == "polite"]


@pytest.fixture
def qa_server():
    server = LiveServer(
        {**TEST_CONFIG, "QA": True, "FAULTS": True, "DEMO_DELAY_SECONDS": 0.15, "RETRY_MS": 500}
    ).start()
    yield server
    server.stop()


@pytest.fixture
def qa_page(page: Page, qa_server):
    def load(lang: str = "en") -> Page:
        page.goto(f"{qa_server.url}/qa?lang={lang}")
        expect(page.locator("#qa-log-body tr[data-kind=ready]")).to_have_count(1)
        record_live_regions(page)
        return page

    return load


# -- keyboard helpers -----------------------------------------------------------


def focused_id(page: Page) -> str:
    return page.evaluate("() => document.activeElement ? document.activeElement.id : ''")


def tab_to(page: Page, element_id: str, *, backwards: bool = False, limit: int = 80) -> None:
    """Press Tab (or Shift+Tab) until the element has focus: as a keyboard user would."""
    key = "Shift+Tab" if backwards else "Tab"
    for _ in range(limit):
        if focused_id(page) == element_id:
            return
        page.keyboard.press(key)
    raise AssertionError(f"{key} never reached #{element_id} (focus is on #{focused_id(page)})")


def rows(page: Page) -> list[dict]:
    return page.evaluate(ROWS_JS)


def since_last_play(log: list[dict]) -> list[dict]:
    last = max(i for i, row in enumerate(log) if row["kind"] == "play")
    return log[last + 1 :]


def wait_for_log_text(page: Page, text: str, timeout: float = 30_000) -> None:
    page.wait_for_function(
        "(text) => Array.from(document.querySelectorAll('#qa-log-body tr[data-kind=announce] td:last-child')).some((c) => c.textContent === text)",
        arg=text,
        timeout=timeout,
    )


def polite(log: list[dict]) -> list[str]:
    return [row["cells"][3] for row in log if row["kind"] == "announce" and row["cells"][2] == "polite"]


def applied_seqs(log: list[dict]) -> list[int]:
    seqs = []
    for row in log:
        if row["kind"] == "event" and row["cells"][2] == "applied":
            seqs.append(int(re.search(r"#(\d+)$", row["cells"][3]).group(1)))
    return seqs


def export_with_the_keyboard(page: Page, browser_name: str) -> tuple[str, dict]:
    """Press Enter on "Export JSON" (focused); the downloaded file's name and JSON.

    Chromium reports the download. Firefox ESR through WebDriver BiDi reports
    no download for a blob: URL (measured: from an HTML page, with or without
    a CSP), so there the test reads the very Blob the download link points
    to, from another page of the same origin (the QA page's CSP keeps fetch()
    to 'self').
    """
    if browser_name == "chromium":
        with page.expect_download() as download_info:
            page.keyboard.press("Enter")
        download = download_info.value
        with open(download.path(), encoding="utf-8") as file:
            return download.suggested_filename, json.load(file)
    page.keyboard.press("Enter")
    link = page.locator("a.qa-download")
    expect(link).to_have_count(1)
    href = link.get_attribute("href")
    assert href.startswith("blob:")
    reader = page.context.new_page()
    try:
        # A same-origin document without a page CSP (the demo page's connect-src
        # is 'self', which excludes blob:): the JSON health check.
        reader.goto(page.url.split("/qa", 1)[0] + "/healthz")
        text = reader.evaluate("async (url) => (await fetch(url)).text()", href)
    finally:
        reader.close()
    return link.get_attribute("download"), json.loads(text)


def assert_axe_clean(page: Page) -> None:
    ChatWidget(page).assert_accessible()


# -- the scenario: improvisation, drop after 3, keyboard only ------------------


def test_keyboard_only_drop_after_3_logs_one_reconnect_each_seq_once_and_exports_the_log(qa_page, browser_name):
    page = qa_page()
    assert_axe_clean(page)  # the page as it loads, with the panel inside
    script = ExpectedScripts(page).scenario_script("improvisation", "en")

    tab_to(page, "qa-scenario")
    page.keyboard.press("ArrowDown")
    expect(page.locator("#qa-scenario")).to_have_value("voicings")
    page.keyboard.press("ArrowUp")
    expect(page.locator("#qa-scenario")).to_have_value("improvisation")
    expect(page.locator("#qa-command-text")).to_have_text("/scenario improvisation")

    tab_to(page, "qa-drop-after")
    page.keyboard.type("3")
    expect(page.locator("#qa-faults-value")).to_have_text("drop-after=3")
    remount(page)  # (Play would re-mount by itself; here the test records the new panel first)
    assert focused_id(page) == "qa-remount"

    tab_to(page, "qa-play", backwards=True)
    page.keyboard.press("Enter")
    wait_for_log_text(page, EN["complete"])
    assert focused_id(page) == "qa-play"  # nothing pulled the tester's focus away

    log = rows(page)
    mounts = [row for row in log if row["kind"] == "mount"]
    assert 'data-faults="drop-after=3"' in mounts[-1]["cells"][3]
    run = since_last_play(log)
    said = polite(run)
    assert said.count(EN["reconnecting"]) == 1
    assert said[0] == EN["generating"] and said[-1] == EN["complete"]
    batches = [text for text in said if text not in (EN["generating"], EN["reconnecting"], EN["complete"])]
    heard = sentences_heard(batches, script["sentences"])
    assert len(heard) == len(set(heard))  # no sentence twice
    assert heard == script["sentences"]
    assert applied_seqs(run) == [1, 2, 3, 4, 5, 6, 7]  # each applied once, in order
    states = [row["cells"][2] for row in run if row["kind"] == "state"]
    assert states[0] == "streaming" and "reconnecting" in states and states[-1] == "completed"
    busy = {row["cells"][2]: row["cells"][3] for row in run if row["kind"] == "state"}
    assert busy["reconnecting"] == QA["en"]["busyOn"] and busy["completed"] == QA["en"]["busyOff"]
    # The log says what the live regions really held, in the same order.
    assert live_polite(page) == polite(run)

    assert_axe_clean(page)  # after a run: a full log, a completed answer

    tab_to(page, "qa-export")
    filename, session = export_with_the_keyboard(page, browser_name)
    assert re.fullmatch(r"chatwidget-qa-improvisation-.+\.json", filename)
    assert session["scenario"] == {
        "id": "improvisation",
        "scenario": "improvisation",
        "command": "/scenario improvisation",
    }
    assert session["faults"] == "drop-after=3"
    assert session["language"] == "en"
    table = rows(page)
    assert len(session["log"]) == len(table)
    for entry, row in zip(session["log"], table, strict=True):
        assert row["kind"] == entry["kind"]
        assert row["cells"] == [
            f"{entry['ms'] / 1000:.3f}",
            QA["en"]["kinds"][entry["kind"]],
            entry["value"],
            entry["text"],
        ]
    expect(page.locator("#qa-status")).to_contain_text(filename)


# -- the expected script is what the browser says -------------------------------------------


@pytest.mark.firefox_sample(lang=["en"])
@pytest.mark.parametrize("lang", ["en", "es"])
def test_the_expected_script_for_improvisation_is_what_the_browser_announced(qa_page, lang):
    page = qa_page(lang)
    t = ui_strings()[lang]
    script = ExpectedScripts(page).script(SEED["improvisation"]["answer"], lang)
    # Faster pacing, so the answer comes in several announcements: set with the keyboard.
    tab_to(page, "qa-announce-interval")
    page.keyboard.press("ControlOrMeta+a")
    page.keyboard.type("100")
    remount(page)
    tab_to(page, "qa-play", backwards=True)
    page.keyboard.press("Space")
    wait_for_log_text(page, t["complete"])

    run = since_last_play(rows(page))
    said = polite(run)
    assert said[0] == script["generating"] and said[-1] == script["completion"]
    between = said[1:-1]
    assert len(between) >= 3  # really batched in several announcements at this pace
    assert sentences_heard(between, script["sentences"]) == script["sentences"]
    # What the live region held (the recorder) is the same.
    assert live_polite(page) == said
    assert 'data-announce-interval="100"' in page.locator("#qa-mounted").text_content()


def test_the_expected_script_for_sources_is_what_the_browser_announced(qa_page):
    # The progress line after the start cue, the sentences, then the completion cue and the
    # source count, each on its own (docs/accessibility.md A110, A111).
    page = qa_page("en")
    script = ExpectedScripts(page).scenario_script("sources", "en")
    assert script["progress"] == [SOURCES_PROGRESS] and script["sources"] == "2 sources"
    tab_to(page, "qa-scenario")
    page.locator("#qa-scenario").select_option("sources")
    tab_to(page, "qa-play")
    page.keyboard.press("Space")
    wait_for_log_text(page, script["sources"])
    said = polite(since_last_play(rows(page)))
    assert said[:2] == [script["generating"], *script["progress"]], said
    assert said[-2:] == [script["completion"], script["sources"]], said
    assert sentences_heard(said[2:-2], script["sentences"]) == script["sentences"]
    assert live_polite(page)[-len(said) :] == said


def test_the_expected_script_for_math_is_what_the_browser_announced(qa_page):
    # Each formula said as its TeX, once, in its sentence (docs/accessibility.md A115): the
    # expected script comes from the same renderer, so the two agree word for word.
    page = qa_page("en")
    script = ExpectedScripts(page).scenario_script("math", "en")
    assert "A note n semitones above A4 sounds at f = 440 \\cdot 2^{n/12} hertz." in script["sentences"]
    assert "A tuner costs $5 and a metronome $10." in script["sentences"]
    tab_to(page, "qa-scenario")
    page.locator("#qa-scenario").select_option("math")
    tab_to(page, "qa-play")
    page.keyboard.press("Space")
    wait_for_log_text(page, script["completion"])
    said = polite(since_last_play(rows(page)))
    assert said[0] == script["generating"] and said[-1] == script["completion"], said
    assert sentences_heard(said[1:-1], script["sentences"]) == script["sentences"]


# -- settings re-mount the widget -----------------------------------------------------------


def streaming_animation(page: Page) -> str:
    frame = ChatWidget(page).panel_frame()
    frame.wait_for_selector("[data-chat-transcript] > li.turn--assistant[data-state=streaming]")
    return frame.evaluate(
        "() => getComputedStyle(document.querySelector('li.turn--assistant[data-state=streaming] .turn__status'), '::after').animationName"
    )


def panel_focus(page: Page) -> str:
    return (
        ChatWidget(page)
        .panel_frame()
        .evaluate(
            "() => { const n = document.activeElement; return n ? n.id || (n.hasAttribute('data-chat-stop') ? 'stop' : n.tagName) : ''; }"
        )
    )


def stop_from_the_composer(page: Page) -> None:
    """Focus is in the panel's composer (Play moved it there): Tab to Stop, press Enter."""
    assert panel_focus(page) == "chat-input"
    page.keyboard.press("Tab")
    assert panel_focus(page) == "stop"
    page.keyboard.press("Enter")


def wait_for_run_text(page: Page, text: str, timeout: float = 30_000) -> None:
    """Wait until the current run (after the last Play) announced `text`."""
    page.wait_for_function(
        """(text) => {
            const rows = Array.from(document.querySelectorAll('#qa-log-body tr'));
            const last = rows.map((r) => r.dataset.kind).lastIndexOf('play');
            return last >= 0 && rows.slice(last + 1).some((r) => r.dataset.kind === 'announce' && r.cells[3].textContent === text);
        }""",
        arg=text,
        timeout=timeout,
    )


def test_language_and_reduced_motion_remount_the_widget_with_the_keyboard(qa_page):
    page = qa_page()
    tab_to(page, "qa-scenario")
    for _ in range(len(SCENARIOS)):
        if page.locator("#qa-scenario").input_value() == "slow":
            break
        page.keyboard.press("ArrowDown")
    expect(page.locator("#qa-scenario")).to_have_value("slow")
    tab_to(page, "qa-focus-composer")
    page.keyboard.press("Space")
    expect(page.locator("#qa-focus-composer")).to_be_checked()
    tab_to(page, "qa-play")
    page.keyboard.press("Enter")
    assert streaming_animation(page) == "blink"
    stop_from_the_composer(page)
    wait_for_run_text(page, EN["cancelled"])

    tab_to(page, "qa-lang", backwards=True)  # out of the panel, back to the page's controls
    page.keyboard.press("ArrowDown")
    expect(page.locator("#qa-lang")).to_have_value("es")
    tab_to(page, "qa-reduced-motion")
    page.keyboard.press("Space")
    expect(page.locator("#qa-reduced-motion")).to_be_checked()
    tab_to(page, "qa-remount")
    page.keyboard.press("Enter")
    expect(page.locator("#qa-log-body tr[data-kind=ready]")).to_have_count(2)
    frame = ChatWidget(page).panel_frame()
    assert frame.evaluate("() => [document.documentElement.lang, document.documentElement.className]") == [
        "es",
        "reduce-motion",
    ]
    mounted = page.locator("#qa-mounted").text_content()
    assert 'data-lang="es"' in mounted and 'data-reduced-motion="true"' in mounted
    assert focused_id(page) == "qa-remount"  # the re-mount kept the tester's focus

    tab_to(page, "qa-play", backwards=True)
    page.keyboard.press("Enter")
    assert streaming_animation(page) == "none"  # the panel honours data-reduced-motion
    es = ui_strings()["es"]
    wait_for_run_text(page, es["generating"])
    stop_from_the_composer(page)
    wait_for_run_text(page, es["cancelled"])
    assert_axe_clean(page)


# -- the script page ---------------------------------------------------------------------------


@pytest.mark.firefox_sample(lang=["en"])
@pytest.mark.parametrize("lang", ["en", "es"])
def test_the_script_page_is_axe_clean_and_lists_the_sentences(page: Page, qa_server, lang):
    page.goto(f"{qa_server.url}/qa/script?scenario=question-improvisation&lang={lang}")
    expect(page.locator("#qa-steps")).to_have_attribute("data-ready", "true")
    sentences = page.locator("[data-sentence]").all_text_contents()
    assert sentences == ExpectedScripts(page).scenario_script("improvisation", lang)["sentences"]
    expect(page.locator("html")).to_have_attribute("lang", lang)
    assert_axe_clean(page)
    # Choose another scenario with the keyboard, and show it.
    tab_to(page, "script-scenario")
    page.keyboard.press("ArrowDown")
    expect(page.locator("#script-scenario")).to_have_value("question-voicings")
    tab_to(page, "script-lang")
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"scenario=question-voicings"))
    expect(page.locator("#qa-steps")).to_have_attribute("data-ready", "true")
    sentences = page.locator("[data-sentence]").all_text_contents()
    assert sentences == ExpectedScripts(page).scenario_script("voicings", lang)["sentences"]


# -- the expected script's plain text is the panel renderer's --------------------------------------

PLAIN_JS = """async ([url, texts, t, lang]) => {
  const M = await import(url);
  const I18N = await import(url.replace('markdown.js', 'i18n.js'));
  const strings = I18N.markdownSummaries(t, lang);
  const segmenter = new Intl.Segmenter(lang, { granularity: 'sentence' });
  const out = {};
  for (const [name, text] of Object.entries(texts)) {
    const view = M.createMarkdownView(document.createElement('div'), { strings });
    view.update(text);
    view.finish();
    const plains = view.blocks().map((b) => b.plain);
    out[name] = {
      plains,
      sentences: plains.flatMap((p) => Array.from(segmenter.segment(p), (s) => s.segment.trim()).filter(Boolean)),
    };
  }
  return out;
}"""


@pytest.mark.firefox_sample(lang=["en", "ar"])
@pytest.mark.parametrize("lang", ["en", "es", "ar", "he"])
def test_expected_plain_text_and_sentences_match_the_panels_renderer(page: Page, qa_server, lang):
    """static/qa/expected.js's blocks and sentences, against markdown.js and Intl.Segmenter used directly."""
    texts = {f"scenario:{name}": scenario_answer(name).text for name in SCENARIOS if name != "bulk"}
    texts.update({f"construct:{name}": text for name, (text, _) in CONSTRUCTS.items()})
    texts.update({f"seed:{key}": SEED[key]["answer"] for key in ("improvisation", "voicings")})
    t = ui_strings()[lang]
    page.goto(qa_server.url + "/healthz")
    browser = page.evaluate(PLAIN_JS, [qa_server.url + "/static/widget/markdown.js", texts, t, lang])
    expected = ExpectedScripts(page)
    for name, text in texts.items():
        plains = [plain for _, plain in expected.plain_blocks(text, lang)]
        assert plains == browser[name]["plains"], name
        assert [s for p in plains for s in expected.sentences_of_plain_text(p, lang)] == browser[name]["sentences"], (
            name
        )
        assert expected.sentences_of(text, lang) == browser[name]["sentences"], name


# -- without fault injection -----------------------------------------------------------------


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_without_faults_the_page_says_so_and_stays_axe_clean(page: Page, browser_name, scheme):
    if scheme == "dark":
        if browser_name != "chromium":
            pytest.skip("Firefox ESR through BiDi cannot emulate media features (see test_accessibility_contract.py)")
        page.emulate_media(color_scheme="dark")
    server = LiveServer({**TEST_CONFIG, "QA": True}).start()
    try:
        page.goto(server.url + "/qa")
        expect(page.locator("#qa-log-body tr[data-kind=ready]")).to_have_count(1)
        expect(page.locator("#qa-notice-faults")).to_have_text(QA["en"]["faultsOff"])
        expect(page.locator("#qa-drop-after")).to_be_disabled()
        expect(page.locator("#qa-snapshot")).to_be_disabled()
        expect(page.locator("#qa-faults")).to_have_attribute("aria-describedby", "qa-notice-faults")
        assert "data-faults" not in page.locator("#qa-mounted").text_content()
        assert_axe_clean(page)
    finally:
        server.stop()
