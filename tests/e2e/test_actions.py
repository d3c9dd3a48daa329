"""Actions in the widget: offered only after completion, keyboard-operable, focus untouched,
announced once, executed exactly once, axe-clean (docs/accessibility.md, "Actions").

Real Chromium and Firefox ESR, the widget embedded in a host page on another
origin, a real chat server in this process (so a test can slow the action's
handler down), and the effect counted where it lands: the `callback_request`
action's record file.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
from playwright.sync_api import expect

from widget_server.actions import CallbackRequest
from widget_server.backends.demo import ACTION_ARGUMENTS
from widget_server.services import SERVICES_KEY

from ..helpers import REPO_ROOT

pytestmark = pytest.mark.e2e

# Firefox ESR's share (docs/testing.md): the cases marked chromium_only run in Chromium alone.
ACTIONS_FIREFOX = "in Firefox test_actions.py keeps an action confirmed by keyboard (English) and one dismissed, axe-clean, and model.js's rule; what this case adds (one execution, a stop, a reload's outcomes) is the server's and model.js's"

STRINGS = {
    lang: json.loads((REPO_ROOT / "static" / "widget" / "i18n" / f"{lang}.json").read_text(encoding="utf-8"))
    for lang in ("en", "es")
}
EN = STRINGS["en"]


def wording(t: dict) -> dict:
    """What the card says for the demo's call-back proposal, in the panel's language."""
    own = t["actions"]["callback_request"]
    description = own["descriptions"][0].format(**ACTION_ARGUMENTS)  # all three arguments are given
    return {
        "heading": t["actionHeading"].format(label=own["label"]),
        "description": description,
        "confirm": t["actionConfirmLabel"].format(label=own["label"]),
        "dismiss": t["actionDismissLabel"].format(label=own["label"]),
        "proposed": t["actionProposed"].format(description=description),
        "done": own["done"],
    }


def record_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()] if path.exists() else []


def polite(widget) -> list[str]:
    return [entry["text"] for entry in widget.announcements() if entry["politeness"] == "polite"]


def assertive(widget) -> list[str]:
    return [entry["text"] for entry in widget.announcements() if entry["politeness"] == "assertive"]


def focused(locator) -> bool:
    return locator.evaluate("n => n === document.activeElement")


def shift_tab_to(widget, target, limit: int = 8) -> int:
    """Press Shift+Tab (keyboard only) until `target` has focus; how many presses it took."""
    for presses in range(limit + 1):
        if focused(target):
            return presses
        widget.page.keyboard.press("Shift+Tab")
    raise AssertionError(f"{target} not reached with {limit} Shift+Tab presses")


class SlowCallback(CallbackRequest):
    """The real action, slowed down so a second press lands while the first is in flight; counted."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.calls = 0
        self._lock = threading.Lock()

    def execute(self, arguments, context):
        with self._lock:
            self.calls += 1
        time.sleep(self.delay)
        return super().execute(arguments, context)


@pytest.fixture
def record(tmp_path) -> Path:
    return tmp_path / "actions.jsonl"


@pytest.fixture
def action_server(chat_server_factory, record):
    return chat_server_factory(ACTIONS_RECORD_PATH=str(record))


def offered(widget, t: dict):
    """Ask for the demo's call back; wait until the completed answer offers it. The card."""
    widget.send("/scenario action")
    assert widget.wait_until_complete() == "completed"
    card = widget.last_answer().locator(".action")
    expect(card).to_have_count(1)
    words = wording(t)
    expect(card).to_have_attribute("role", "group")
    expect(card.locator(".action__title")).to_have_text(words["heading"])
    expect(card.locator(".action__description")).to_have_text(words["description"])
    widget.wait_for_announcement(words["proposed"])
    return card


@pytest.mark.parametrize("lang", ["en", "es"])
def test_the_action_is_confirmed_by_keyboard_alone_without_moving_focus(embed, action_server, record, lang):
    t = STRINGS[lang]
    words = wording(t)
    widget = embed(action_server, lang=lang)
    widget.open()
    card = offered(widget, t)
    confirm = card.get_by_role("button", name=words["confirm"], exact=True)
    dismiss = card.get_by_role("button", name=words["dismiss"], exact=True)
    expect(confirm).to_have_text(t["actionConfirm"])  # the visible word starts the accessible name
    expect(dismiss).to_have_text(t["actionDismiss"])
    for button in (confirm, dismiss):
        box = button.bounding_box()
        assert box["width"] >= 44 and box["height"] >= 44, box
    # Offered without taking focus: it stays in the composer.
    expect(widget.input).to_be_focused()
    widget.assert_accessible()  # the proposed state

    # Keyboard only: from the composer, Shift+Tab reaches Dismiss, then Confirm.
    assert shift_tab_to(widget, confirm) == 2
    widget.page.keyboard.press("Enter")
    expect(card).to_have_attribute("data-status", "succeeded")
    expect(card.locator(".action__status")).to_have_text(words["done"])
    widget.wait_for_announcement(words["done"])
    # The widget moved nothing: focus is where the person left it.
    assert focused(confirm)
    expect(confirm).to_have_attribute("aria-disabled", "true")
    expect(dismiss).to_have_attribute("aria-disabled", "true")
    widget.page.wait_for_timeout(1200)  # let any throttled announcement land
    spoken = polite(widget)
    assert spoken.count(words["proposed"]) == 1 and spoken.count(words["done"]) == 1, spoken
    # Proposed after the answer's own completion cue, never before.
    assert spoken.index(words["proposed"]) > spoken.index(t["complete"])
    assert assertive(widget) == []
    widget.assert_accessible()  # the confirmed state

    (line,) = record_lines(record)
    assert {key: line[key] for key in ACTION_ARGUMENTS} == ACTION_ARGUMENTS


@pytest.mark.chromium_only(reason=ACTIONS_FIREFOX)
def test_pressing_confirm_again_and_again_records_one_execution(embed, action_server, record, monkeypatch, page):
    handler = SlowCallback(0.8)
    monkeypatch.setitem(action_server.app.extensions[SERVICES_KEY].chat.actions, "callback_request", handler)
    confirms: list[str] = []
    page.on("request", lambda request: request.url.endswith("/confirm") and confirms.append(request.method))
    widget = embed(action_server)
    widget.open()
    card = offered(widget, EN)
    confirm = card.get_by_role("button", name=wording(EN)["confirm"], exact=True)
    shift_tab_to(widget, confirm)
    for key in ("Enter", "Enter", "Space", "Enter"):  # a double (quadruple) press, in flight
        widget.page.keyboard.press(key)
    expect(confirm).to_have_attribute("aria-disabled", "true")
    expect(card).to_have_attribute("data-status", "succeeded", timeout=10_000)
    for key in ("Enter", "Space"):  # and after the outcome
        widget.page.keyboard.press(key)
    widget.page.wait_for_timeout(500)
    assert handler.calls == 1
    assert len(record_lines(record)) == 1
    assert confirms == ["POST"]  # the widget sent it once; the server would have run it once anyway
    assert polite(widget).count(wording(EN)["done"]) == 1


def test_dismiss_by_keyboard_runs_nothing(embed, action_server, record):
    widget = embed(action_server)
    widget.open()
    card = offered(widget, EN)
    dismiss = card.get_by_role("button", name=wording(EN)["dismiss"], exact=True)
    assert shift_tab_to(widget, dismiss) == 1
    widget.page.keyboard.press("Space")
    expect(card).to_have_attribute("data-status", "dismissed")
    expect(card.locator(".action__status")).to_have_text(EN["actionDismissed"])
    widget.wait_for_announcement(EN["actionDismissed"])
    assert focused(dismiss)
    assert record_lines(record) == []
    widget.assert_accessible()


@pytest.mark.chromium_only(reason=ACTIONS_FIREFOX)
def test_stopping_while_the_action_is_prepared_offers_nothing(embed, chat_server_factory, record):
    widget = embed(chat_server_factory(ACTIONS_RECORD_PATH=str(record)))
    widget.open()
    widget.send("/scenario action-slow")
    expect(widget.last_answer().locator(".turn__body")).to_contain_text("Preparing the request")
    widget.stop()
    assert widget.wait_until_complete() == "cancelled"
    widget.page.wait_for_timeout(2500)  # past the moment the backend would have proposed it
    expect(widget.frame.locator(".action")).to_have_count(0)
    assert not any(text.startswith(EN["actionProposed"].split("{")[0]) for text in polite(widget))
    assert record_lines(record) == []


@pytest.mark.chromium_only(reason=ACTIONS_FIREFOX)
def test_stopping_after_the_proposal_but_before_completion_offers_nothing(embed, chat_server_factory, record):
    widget = embed(chat_server_factory(ACTIONS_RECORD_PATH=str(record)))
    widget.open()
    widget.send("/scenario action-slow")
    # The proposal has arrived (as an event), the answer is not complete.
    widget.panel_frame().wait_for_function(
        "() => (window.__chatwidgetEvents || []).some((e) => e.type === 'action.proposed' && e.outcome === 'applied')",
        timeout=10_000,
    )
    widget.stop()
    assert widget.wait_until_complete() == "cancelled"
    widget.page.wait_for_timeout(500)
    expect(widget.frame.locator(".action")).to_have_count(0)
    assert record_lines(record) == []


@pytest.mark.chromium_only(reason=ACTIONS_FIREFOX)
def test_a_reload_shows_what_became_of_each_action_and_says_nothing(embed, action_server, record, page):
    widget = embed(action_server)
    widget.open()
    offered(widget, EN)
    widget.send("/scenario action")
    assert widget.wait_until_complete() == "completed"
    second = widget.last_answer().locator(".action")
    second.get_by_role("button", name=wording(EN)["confirm"], exact=True).click()
    expect(second).to_have_attribute("data-status", "succeeded")
    page.reload()
    widget.launcher.wait_for()
    widget.open()
    cards = widget.frame.locator(".action")
    expect(cards).to_have_count(2)
    # The first is still open to a decision; the second shows its outcome, and cannot run again.
    expect(cards.nth(0)).to_have_attribute("data-status", "proposed")
    expect(cards.nth(0).get_by_role("button", name=wording(EN)["confirm"], exact=True)).not_to_have_attribute(
        "aria-disabled", "true"
    )
    expect(cards.nth(1)).to_have_attribute("data-status", "succeeded")
    expect(cards.nth(1).locator(".action__status")).to_have_text(wording(EN)["done"])
    expect(widget.input).to_be_focused()
    widget.page.wait_for_timeout(1200)
    assert polite(widget) == []  # restored silently
    cards.nth(1).get_by_role("button", name=wording(EN)["confirm"], exact=True).click(
        force=True
    )  # aria-disabled: ignored
    cards.nth(0).get_by_role("button", name=wording(EN)["confirm"], exact=True).click()
    expect(cards.nth(0)).to_have_attribute("data-status", "succeeded")
    assert len(record_lines(record)) == 2
    widget.assert_accessible()


def test_the_model_makes_only_a_completed_answers_listed_actions_actionable(page, live_server):
    """model.js: `action.proposed` is applied once (by seq) and never actionable by itself."""
    page.goto(live_server.url + "/healthz")
    result = page.evaluate(
        """async (base) => {
            const { AnswerModel } = await import(base + 'model.js');
            const ev = (seq, extra) => ({ message_id: 'm_1', seq, ...extra });
            const proposal = { action_id: 'a_1', name: 'callback_request', label: 'L', description: 'D', arguments: {} };
            const ended = (terminal, data) => {
                const m = new AnswerModel();
                const out = [m.apply('message.started', ev(1)), m.apply('action.proposed', ev(2, proposal)),
                             m.apply('action.proposed', ev(2, proposal))];  // a duplicate
                const before = m.actionable.length;
                out.push(m.apply(terminal, ev(3, data)));
                return { out, before, proposed: m.proposed.size, actionable: m.actionable.map((a) => a.action_id) };
            };
            return {
                completed: ended('message.completed', { length: 0, utf8_bytes: 0, sha256: '', actions: [proposal] }),
                cancelled: ended('message.cancelled', { incomplete: true, length: 0 }),
                failed: ended('message.failed', { incomplete: true, length: 0, error: { code: 'provider' } }),
            };
        }""",
        live_server.url + "/static/widget/",
    )
    for name, outcome in result.items():
        assert outcome["out"] == ["applied", "applied", "duplicate", "applied"], name
        assert outcome["before"] == 0 and outcome["proposed"] == 1, name
    assert result["completed"]["actionable"] == ["a_1"]
    assert result["cancelled"]["actionable"] == [] and result["failed"]["actionable"] == []
