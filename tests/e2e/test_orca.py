"""A real screen reader hears the announcement contract (docs/accessibility.md A5, A6).

test_accessibility_contract.py checks what the widget writes into its live
regions; this module checks what Orca, listening to the browser through
AT-SPI, actually SPEAKS: the widget runs in the browser (headed, on a private
Xvfb display, accessibility forced on) while Orca runs on a private D-Bus
session, and every ``SPEECH OUTPUT: '…'`` line of Orca's debug file is read
back (no synthesizer is involved). See tests/e2e/orca/ and
docs/testing.md ("A real screen reader: Orca").

Orca says other things too (page loads, focus changes, labels): each test
keeps only the widget's cues, its errors and anything that is speech of the
answer, then asserts that every expected announcement is said exactly once,
that the answer is said in whole sentences (one or a batch of several per
utterance, never a fragment), each once and in order, and that nothing is
said twice after a resume. Within one live region the order is asserted;
across the polite and the assertive regions only membership.

Two tests guard what Orca found: Firefox speaks the error alert only because
it carries an explicit aria-live="assertive" (role=alert alone is no live
region there), and Chromium speaks the next answer's "Generating answer…"
after an error only because the announcer empties the region before writing
the same text again.

The Debian packages (tests/e2e/orca/desktop.py DEBIAN_PACKAGES) are installed
by .ci/test: when they are missing these tests FAIL, they do not skip.
"""

from __future__ import annotations

import json

import pytest

from widget_server.backends.demo import DEMO_SOURCES, SOURCES_PROGRESS
from widget_server.testing import ChatWidget

from ..helpers import REPO_ROOT
from .conftest import CHROMIUM, CHROMIUM_ARGS, FIREFOX, chat_base_url
from .orca.desktop import DEBIAN_PACKAGES, OrcaDesktop, missing_tools, parse_speech
from .orca.speech import check_whole_sentences, relevant, sentences
from .test_accessibility_contract import IMPROVISATION_SPOKEN
from .test_answer_tools import TOOLS, tab_to

# One screen reader at a time, on one worker: its speech is timed against
# the widget's pacing (docs/testing.md, "Parallel runs").
pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.xdist_group("orca")]

EN = json.loads((REPO_ROOT / "static" / "widget" / "i18n" / "en.json").read_text(encoding="utf-8"))
CUES = {
    EN[key] for key in ("generating", "complete", "cancelled", "incomplete", "reconnecting", "reconnected", "offline")
}
ERRORS = set(EN["errors"].values())

SLOW_SPOKEN = (
    "This answer arrives slowly, one sentence at a time. "
    "It gives you time to listen to each announcement. "
    "It also leaves time to press Stop. "
    "Nothing is lost while you wait. "
    "This is the last sentence."
)
FAIL_PROVIDER_SPOKEN = "This answer is about to fail. The model provider fails after this sentence."
# Streamed word by word (/echo): the test that per-token speech would fail.
ECHO_SPOKEN = (
    "Hold the pick loosely between thumb and index. "
    "Let the wrist move and keep the forearm still. "
    "Alternate strokes evenly at a slow tempo."
)


# -- the desktop, the browser, a page -----------------------------------------------


@pytest.fixture(scope="module")
def orca(browser_name, tmp_path_factory):
    """Xvfb + a D-Bus session + the accessibility bus + Orca, for one browser."""
    missing = missing_tools()
    if missing:
        pytest.fail(
            f"the screen-reader stack is not installed (missing: {', '.join(missing)}); "
            f".ci/test installs it: apt-get install -y --no-install-recommends {DEBIAN_PACKAGES}",
            pytrace=False,
        )
    desktop = OrcaDesktop(tmp_path_factory.mktemp(f"orca-{browser_name}")).start()
    prioritise(desktop)
    yield desktop
    desktop.stop()
    assert desktop.stragglers() == [], "processes of the Orca desktop survived SIGKILL"


@pytest.fixture(scope="module")
def orca_browser(orca, playwright, browser_name):
    """Our own browser on Orca's display and bus (conftest's launch args are
    shared by every e2e test and lack accessibility). Headed on the private
    Xvfb: a real window, as a screen reader user has; nothing shows on any
    screen."""
    if browser_name == "chromium":
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=[*CHROMIUM_ARGS, "--force-renderer-accessibility"],
            env=orca.env,
            headless=False,
        )
    else:
        # Firefox turns its AT-SPI support on when org.a11y.Status says a
        # screen reader runs (the desktop sets it). Headless, it exposes
        # nothing: Orca heard not a word (measured, Firefox ESR 153).
        # Its downloads panel would open on a download (Download my data, test_orca_visitors.py)
        # and take the window's focus from the page for the rest of the module: the panel's
        # keys would go to it, and the next test's composer could not be focused.
        browser = playwright.firefox.launch(
            executable_path=FIREFOX,
            channel="moz-firefox",
            env=orca.env,
            headless=False,
            firefox_user_prefs={"browser.download.alwaysOpenPanel": False},
        )
    prioritise(orca)  # the browser's processes carry the desktop's marker (orca.env)
    yield browser
    browser.close()


def prioritise(desktop: OrcaDesktop) -> None:
    """Keep Orca and the browser it listens to ahead of the other test workers: behind by
    more than a second, Orca skips the older of two announcements (orca/desktop.py)."""
    refused = desktop.raise_priority()
    if refused:
        print(f"could not raise the priority of {len(refused)} Orca desktop processes (not root)")


@pytest.fixture(scope="module")
def orca_page(orca_browser):
    """ONE window for the whole module, navigated from test to test: without
    a window manager, windows opened and closed one after another confuse
    Orca's idea of the active window (see also orca/launch_orca.py)."""
    context = orca_browser.new_context()
    ChatWidget.install_recorder(context)
    page = context.new_page()
    yield page
    context.close()


@pytest.fixture
def listen(orca, orca_page, host_site, chat_server_factory, browser_name):
    """listen(server_config, **embed_attributes) → (widget, mark): the widget
    open in the page, Orca done with the page load; `mark` is where in
    Orca's speech the test's own part starts. `server=` embeds a server the
    test started itself (to give it data first) instead of one of `server_config`."""

    def open_widget(config: dict | None = None, *, server=None, **data):
        if server is None:
            server = chat_server_factory(**(config or {}))
        orca_page.context.clear_cookies()  # no conversation from an earlier test
        orca_page.goto(host_site.embed_page(chat_base_url(server, browser_name), **data))
        widget = ChatWidget(orca_page)
        widget.launcher.wait_for()
        widget.open()
        # Orca says the page load, the focus, labels; then it must have
        # caught up with every event before the test acts.
        waited = orca.wait_until_idle()
        print(f"Orca idle {waited:.1f} s after the widget opened")
        prioritise(orca)  # content processes the navigation started
        return widget, orca.mark()

    yield open_widget
    orca_page.goto("about:blank")  # ends this test's streams before its server stops


def heard(orca, mark: int, answer: str, widget) -> list[str]:
    """What Orca said since `mark` that matters, once it has been quiet for a second."""
    said = orca.wait_for_silence(1.0, since=mark)
    lines = relevant(said, answer, CUES | ERRORS)
    print(f"\nOrca said: {json.dumps(said, ensure_ascii=False)}")
    print(f"filtered: {json.dumps(lines, ensure_ascii=False, indent=1)}")
    given = [e["text"] for e in widget.announcements()]
    print(f"the live regions said: {json.dumps(given, ensure_ascii=False)}")
    behind = orca.superseding(given)
    print(f"Orca was behind and skipped the announcement before each of: {json.dumps(behind, ensure_ascii=False)}")
    return lines


def once(lines: list[str], text: str) -> None:
    assert lines.count(text) == 1, f"{text!r} said {lines.count(text)} times, expected once: {lines!r}"


# Once the widget's DOM shows the end of an answer, Orca has at most the
# announcer's pending batches (a second apart) left to say.
SPEECH_TIMEOUT = 5.0


# -- the contract, as heard --------------------------------------------------------


def hears_cue_sentences_once_in_order_then_completion(orca, widget, mark: int, spoken: str) -> None:
    """The answer's whole story as Orca told it, once it completed: the cue once, each sentence
    whole and in order, the completion cue once and last (one region: in order)."""
    assert widget.wait_until_complete() == "completed"
    orca.wait_for_speech(EN["complete"], since=mark, timeout=SPEECH_TIMEOUT)
    lines = heard(orca, mark, spoken, widget)
    once(lines, EN["generating"])
    once(lines, EN["complete"])
    assert lines[0] == EN["generating"] and lines[-1] == EN["complete"], lines
    check_whole_sentences(lines[1:-1], sentences(spoken), complete=True)


def test_answer_is_heard_as_cue_sentences_once_in_order_then_completion(orca, listen):
    widget, mark = listen()
    widget.send("which arpeggio fits Am F C G")
    hears_cue_sentences_once_in_order_then_completion(orca, widget, mark, IMPROVISATION_SPOKEN)


def test_word_by_word_stream_is_heard_in_whole_sentences_never_per_token(orca, listen):
    widget, mark = listen({"DEMO_DELAY_SECONDS": 0.1})  # ~25 tokens over ~2.5 s: several batches
    widget.send(f"/echo {ECHO_SPOKEN}")
    hears_cue_sentences_once_in_order_then_completion(orca, widget, mark, ECHO_SPOKEN)


def test_nothing_is_said_twice_after_a_resume(orca, listen):
    widget, mark = listen({"DEMO_DELAY_SECONDS": 0.15}, faults="drop-after=3")
    widget.send("which arpeggio fits Am F C G")
    assert widget.wait_until_complete() == "completed"
    orca.wait_for_speech(EN["complete"], since=mark, timeout=SPEECH_TIMEOUT)
    lines = heard(orca, mark, IMPROVISATION_SPOKEN, widget)
    once(lines, EN["generating"])
    once(lines, EN["reconnecting"])
    once(lines, EN["complete"])
    assert lines[0] == EN["generating"] and lines[-1] == EN["complete"], lines
    answer = [line for line in lines if line not in CUES]
    check_whole_sentences(answer, sentences(IMPROVISATION_SPOKEN), complete=True)


def test_an_error_is_heard_once_and_the_polite_region_says_nothing_more(orca, listen):
    # Firefox ESR 153 exposes role=alert WITHOUT aria-live as no live region
    # at all (no container-live attribute): Orca 43 said nothing until the
    # region got an explicit aria-live="assertive".
    # 0.5 s between the two sentences before the failure: Orca speaks the
    # polite cue before the alert arrives (an assertive message drops polite
    # ones still queued), and the announcer's 1 s pace holds the sentences
    # until the failure discards them.
    widget, mark = listen({"DEMO_DELAY_SECONDS": 0.5})
    widget.send("/scenario fail-provider")
    assert widget.wait_until_complete() == "failed"
    widget.wait_for_announcement(EN["errors"]["provider"])  # in the alert region now
    orca.wait_for_speech(EN["errors"]["provider"], since=mark, timeout=SPEECH_TIMEOUT)
    lines = heard(orca, mark, FAIL_PROVIDER_SPOKEN, widget)
    # Two regions: membership, not order.
    once(lines, EN["generating"])
    once(lines, EN["errors"]["provider"])
    assert sorted(lines) == sorted([EN["generating"], EN["errors"]["provider"]]), lines


def test_the_answer_after_an_error_is_announced_again(orca, listen):
    # After a failure the polite region still holds "Generating answer…"; the
    # next answer writing the same text again is no change to Chromium, and
    # Orca said nothing, until the announcer emptied the region first.
    widget, _ = listen({"DEMO_DELAY_SECONDS": 0.3})
    widget.send("/scenario fail-provider")
    assert widget.wait_until_complete() == "failed"
    widget.wait_for_announcement(EN["errors"]["provider"])
    orca.wait_until_idle()  # the failure said and done
    mark = orca.mark()
    widget.send("/echo All good.")
    assert widget.wait_until_complete() == "completed"
    orca.wait_for_speech(EN["complete"], since=mark, timeout=SPEECH_TIMEOUT)
    lines = heard(orca, mark, "All good.", widget)
    assert lines == [EN["generating"], "All good.", EN["complete"]], lines


def test_stop_is_heard_as_answer_stopped_once(orca, listen):
    widget, mark = listen()  # /scenario slow: a sentence a second
    widget.send("/scenario slow")
    first = sentences(SLOW_SPOKEN)[0]
    orca.wait_for_speech(first, since=mark, timeout=SPEECH_TIMEOUT)
    widget.stop()
    assert widget.wait_until_complete() == "cancelled"
    orca.wait_for_speech(EN["cancelled"], since=mark, timeout=SPEECH_TIMEOUT)
    lines = heard(orca, mark, SLOW_SPOKEN, widget)
    once(lines, EN["generating"])
    once(lines, EN["cancelled"])
    assert EN["complete"] not in lines
    assert lines[0] == EN["generating"] and lines[-1] == EN["cancelled"], lines
    check_whole_sentences(lines[1:-1], sentences(SLOW_SPOKEN), complete=False)
    assert lines[1] == first, lines


def test_copy_answer_and_helpful_pressed_by_keyboard_are_each_heard_once(orca, listen):
    # docs/accessibility.md A22, A23: after a completed answer, "Copy answer" and then
    # "Helpful", reached with Shift+Tab from the composer and pressed with Enter and Space,
    # each say their outcome once (one polite cue each), and nothing else of the widget
    # is said twice.
    widget, mark = listen()
    widget.send("/echo All good.")
    assert widget.wait_until_complete() == "completed"
    orca.wait_for_speech(EN["complete"], since=mark, timeout=SPEECH_TIMEOUT)
    tools = widget.last_answer().get_by_role("group", name=TOOLS["group"])
    copy = tools.get_by_role("button", name=TOOLS["copy"])
    helpful = tools.get_by_role("button", name=TOOLS["helpful"], exact=True)
    copy.wait_for()
    orca.wait_until_idle()
    mark = orca.mark()
    tab_to(widget, copy)
    widget.page.keyboard.press("Enter")
    orca.wait_for_speech(TOOLS["copied"], since=mark, timeout=SPEECH_TIMEOUT)
    tab_to(widget, helpful, backwards=False)
    widget.page.keyboard.press("Space")
    orca.wait_for_speech(TOOLS["rated"], since=mark, timeout=SPEECH_TIMEOUT)
    said = orca.wait_for_silence(1.0, since=mark)
    print(f"\nOrca said: {json.dumps(said, ensure_ascii=False)}")
    outcomes = [line for line in said if line in (TOOLS["copied"], TOOLS["rated"])]
    assert outcomes == [TOOLS["copied"], TOOLS["rated"]], said  # one region: in order, once each
    assert not [line for line in said if line in CUES | ERRORS], said  # no answer cue said again


def test_a_progress_line_and_the_source_count_are_each_heard_once(orca, listen):
    # docs/accessibility.md A110, A111: the progress line once, before the answer; "2 sources"
    # once, on its own, after "Answer complete."; nothing of the sources list is read out.
    widget, mark = listen()
    widget.send("/scenario sources")
    assert widget.wait_until_complete() == "completed"
    count = EN["sources"]["count"]["other"].format(count=2)
    orca.wait_for_speech(count, since=mark, timeout=SPEECH_TIMEOUT)
    said = orca.wait_for_silence(1.0, since=mark)
    print(f"\nOrca said: {json.dumps(said, ensure_ascii=False)}")
    cues = [line for line in said if line in (EN["generating"], SOURCES_PROGRESS, EN["complete"], count)]
    assert cues == [EN["generating"], SOURCES_PROGRESS, EN["complete"], count], said  # one region: in order
    answer = [line for line in said if line not in cues and ("[1]" in line or "[2]" in line)]
    assert answer, said  # the sentences, markers and all, were heard between them
    assert not [line for line in said if any(source.title in line for source in DEMO_SOURCES)], said


def test_a_formula_is_heard_as_its_tex_once(orca, listen):
    # docs/accessibility.md A115: the announcer says each formula as its TeX, in its sentence,
    # once; the dollar amounts as written. Orca may voice the TeX's symbols in its own words
    # (its punctuation level), so the words around them are what is matched.
    widget, mark = listen()
    widget.send("/scenario math")
    assert widget.wait_until_complete() == "completed"
    orca.wait_for_speech(EN["complete"], since=mark, timeout=SPEECH_TIMEOUT)
    said = orca.wait_for_silence(1.0, since=mark)
    print(f"\nOrca said: {json.dumps(said, ensure_ascii=False)}")
    for words in ("semitones above A4", "880", "approx", "tuner costs", "does not parse"):
        assert sum(line.count(words) for line in said) == 1, (words, said)
    assert not [line for line in said if "$$" in line], said


# -- the checks themselves (no browser) ------------------------------------------------


def test_the_speech_checks_reject_fragments_repeats_and_disorder():
    units = sentences("One is here. Two follows: Three ends it.")
    assert units == ["One is here.", "Two follows:", "Three ends it."]
    check_whole_sentences(["One is here. Two follows:", "Three ends it."], units, complete=True)  # batches
    check_whole_sentences(["One is here."], units, complete=False)  # a stopped answer
    for spoken in (
        ["One is", "here.", "Two follows:", "Three ends it."],  # per token
        ["One is here.", "Two follows:", "Two follows:", "Three ends it."],  # repeated after a resume
        ["Two follows:", "One is here.", "Three ends it."],  # out of order
        ["One is here.", "Two follows:"],  # incomplete
    ):
        with pytest.raises(AssertionError):
            check_whole_sentences(spoken, units, complete=True)
    # What is kept: cues, and anything that is speech of the answer.
    said = ["Message entry.", "Generating answer…", "One is", "Focus mode", "follows: Three ends", "Answer complete."]
    assert relevant(said, "One is here. Two follows: Three ends it.", CUES) == [
        "Generating answer…", "One is", "follows: Three ends", "Answer complete.",
    ]  # fmt: skip


def test_speech_output_lines_are_read_from_orca_debug_output():
    log = (
        "23:09:02.931764 - SPEECH OUTPUT: 'Screen reader on.'{'established': False}\n"
        "23:09:03.000001 - BRAILLE LINE:  'Screen reader on.'\n"
        "23:09:04.100000 - SPEECH OUTPUT: 'It's a quote: 'x'.' voice=uppercase{'established': False}\n"
        "23:09:05.100000 - SPEECH OUTPUT: 'Answer complete.'\n"
    )
    assert parse_speech(log) == ["Screen reader on.", "It's a quote: 'x'.", "Answer complete."]
