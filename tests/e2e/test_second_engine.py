"""A second accessibility engine besides axe: IBM Equal Access (accessibility-checker-engine).

An engine other than axe flagged the transcript's scroll container, a
focusable `<main>` ("The tabbable element's role 'main' is not a widget role"), and the
QA page's log, a focusable `region` (same rule). IBM's rule element_tabbable_role_valid
accepts a tab stop without a widget role only while the element scrolls; axe's
scrollable-region-focusable asks for a stop once it does. So the transcript, the QA log,
a wide table's box and a code block are tab stops exactly while they scroll
(docs/accessibility.md A37, A40).

The engine is `.ci/js/node_modules/accessibility-checker-engine/ace.js`, installed by
`npm ci --prefix .ci/js` (.ci/test does it), pinned in .ci/js/package.json. It bundles
its rules and runs offline; the `accessibility-checker` wrapper would download its
rule archive, which these machines cannot. It is injected into each frame (the panel's
too) and run with the IBM_Accessibility policy.

Asserted in every state: no result of level "violation" fails (any rule), and none of
RELEVANT_RULES fails at any level. test_the_engine_flags_the_old_markup proves the scan
reaches the panel and that the old markup (a focusable container that scrolls nothing)
fails it.
"""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Frame, Page, expect

from widget_server.testing import ChatWidget

from ..conftest import TEST_CONFIG
from ..helpers import REPO_ROOT, LiveServer

pytestmark = [
    pytest.mark.e2e,
    # Firefox ESR's share (docs/testing.md)
    pytest.mark.chromium_only(
        reason="in Firefox IBM's engine scans the embedded panel in four states and the QA page in A41 (test_accessibility_contract_layout.py), and axe scans every state (A19, A29); these further pages and states are the same markup"
    ),
]

ACE_JS = REPO_ROOT / ".ci" / "js" / "node_modules" / "accessibility-checker-engine" / "ace.js"

# The rules about tab stops, scroll containers, landmarks and regions: none may fail,
# not even as a recommendation.
RELEVANT_RULES = (
    "element_tabbable_role_valid",  # a tab stop has a widget role, or scrolls
    "element_scrollable_tabbable",  # a scrolling element is reachable by keyboard
    "element_tabbable_visible",
    "element_tabbable_unobscured",
    "aria_region_labelled",  # a region has a name
    "aria_region_label_unique",
    "aria_landmark_name_unique",
    "aria_content_in_landmark",
    "skip_main_exists",  # one main landmark
)

RUN_ACE_JS = """async () => {
    const report = await new ace.Checker().check(document, ['IBM_Accessibility']);
    return report.results.map((r) => ({
        rule: r.ruleId, reason: r.reasonId, level: r.value[0], outcome: r.value[1],
        path: r.path.dom, message: r.message,
    }));
}"""


def ace_results(frame: Frame) -> list[dict[str, Any]]:
    if not ACE_JS.exists():
        pytest.fail(f"{ACE_JS} is missing: run `npm ci --prefix .ci/js` (bash .ci/test does)")
    if not frame.evaluate("() => typeof ace !== 'undefined'"):
        frame.evaluate(ACE_JS.read_text(encoding="utf-8") + "\n;window.ace = ace; 0")
    return frame.evaluate(RUN_ACE_JS)


def failures(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in results if r["outcome"] == "FAIL" and (r["level"] == "VIOLATION" or r["rule"] in RELEVANT_RULES)]


def assert_clean(frame: Frame) -> list[dict[str, Any]]:
    results = ace_results(frame)
    assert failures(results) == [], frame.url
    return results


def scroller_tabindex(frame: Frame) -> str | None:
    return frame.evaluate("() => document.querySelector('[data-chat-scroller]').getAttribute('tabindex')")


def ask(page_or_frame: Any, text: str) -> None:
    page_or_frame.locator("[data-chat-input]").fill(text)
    page_or_frame.locator("[data-chat-input]").press("Enter")


def test_the_engine_flags_the_old_markup(chat_server, page: Page):
    """The transcript's old markup: a focusable <main> that scrolls nothing."""
    page.goto(chat_server.url + "/chat")
    page.locator("[data-chat-panel][data-ready='true']").wait_for()
    ace_results(page.main_frame)
    results = page.evaluate(
        """async () => {
            const scroller = document.querySelector('[data-chat-scroller]');
            const old = document.createElement('main');
            old.tabIndex = 0;
            old.setAttribute('aria-label', scroller.getAttribute('aria-label'));
            old.textContent = 'Ask a question';
            scroller.replaceWith(old);
            const report = await new ace.Checker().check(document, ['IBM_Accessibility']);
            old.replaceWith(scroller);
            return report.results.filter((r) => r.value[1] === 'FAIL').map((r) => r.ruleId);
        }"""
    )
    assert "element_tabbable_role_valid" in results


def test_standalone_panel_empty_short_and_long(chat_server, page: Page):
    page.goto(chat_server.url + "/chat")
    page.locator("[data-chat-panel][data-ready='true']").wait_for()
    frame = page.main_frame
    results = assert_clean(frame)
    assert any(r["rule"] == "skip_main_exists" and r["outcome"] == "PASS" for r in results)
    assert scroller_tabindex(frame) is None  # nothing to scroll: no stop

    ask(page, "/echo Hello.")
    expect(page.locator("li.turn--assistant").last).to_have_attribute("data-state", "completed")
    assert_clean(frame)

    # A long answer with a wide table and code: the transcript scrolls, so it is a stop.
    ask(page, "/scenario markdown")
    expect(page.locator("li.turn--assistant").last).to_have_attribute("data-state", "completed", timeout=30_000)
    expect(page.locator("[data-chat-scroller]")).to_have_attribute("tabindex", "0")
    results = assert_clean(frame)
    tabbable = [r for r in results if r["rule"] == "element_tabbable_role_valid"]
    assert all(r["outcome"] != "FAIL" for r in tabbable)


def test_embedded_panel_empty_and_answered(embed):
    widget = embed()
    widget.open()
    frame = widget.panel_frame()
    assert_clean(frame)
    widget.send("/scenario markdown")
    assert widget.wait_until_complete() == "completed"
    expect(widget.frame.locator("[data-chat-scroller]")).to_have_attribute("tabindex", "0")
    assert_clean(frame)
    widget.send("/scenario fail-provider")
    assert widget.wait_until_complete() == "failed"
    assert_clean(frame)
    widget.assert_accessible()


@pytest.fixture
def qa_server():
    server = LiveServer({**TEST_CONFIG, "QA": True, "FAULTS": True, "DEMO_DELAY_SECONDS": 0.0}).start()
    yield server
    server.stop()


def test_qa_page_and_its_log(qa_server, page: Page):
    page.goto(f"{qa_server.url}/qa?lang=en")
    expect(page.locator("#qa-log-body tr[data-kind=ready]")).to_have_count(1)
    log = page.locator(".qa-log__scroller")
    expect(log).not_to_have_attribute("tabindex", "0")  # one row: nothing to scroll
    for frame in page.frames:
        assert_clean(frame)
    # Play answers until the log scrolls: then it is a stop, and still clean.
    widget = ChatWidget(page)
    widget.ready.wait_for()
    for _ in range(6):
        if log.evaluate("n => n.scrollHeight > n.clientHeight"):
            break
        page.locator("#qa-play").click()
        widget.wait_until_complete()
    expect(log).to_have_attribute("tabindex", "0")
    for frame in page.frames:
        assert_clean(frame)
