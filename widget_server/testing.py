"""Test helpers for sites that embed the widget (and for our own e2e tests).

`ChatWidget(page)` finds the widget on any page — its launcher in the host
page, its panel inside the iframe — and drives it as a person would.
Requires Playwright (sync API); axe-playwright-python for `assert_accessible`.
"""

from __future__ import annotations

import json
from typing import Any

TERMINAL_STATES = ("completed", "cancelled", "failed", "incomplete")

# Installed in every frame before any page script runs: records what the
# live regions actually contain (what a screen reader is given), with time.
RECORDER_SCRIPT = """
(() => {
  if (window.__chatwidgetLog) return;
  const log = (window.__chatwidgetLog = []);
  const seen = new WeakSet();
  const watch = () => {
    for (const region of document.querySelectorAll('[data-chat-announcer], [data-chat-alert]')) {
      if (seen.has(region)) continue;
      seen.add(region);
      const politeness = region.matches('[data-chat-alert]') ? 'assertive' : 'polite';
      new MutationObserver(() => {
        const text = region.textContent;
        if (text) log.push({ t: performance.now(), politeness, text, focus: document.activeElement ? document.activeElement.id || document.activeElement.tagName : '' });
      }).observe(region, { childList: true, characterData: true, subtree: true });
    }
  };
  const events = (window.__chatwidgetEvents = []);
  for (const name of ['event', 'state']) {
    document.addEventListener('chatwidget:' + name, (e) => events.push({ t: performance.now(), name, ...e.detail }));
  }
  document.addEventListener('DOMContentLoaded', watch);
  new MutationObserver(watch).observe(document, { childList: true, subtree: true });
})();
"""


class ChatWidget:
    """Page object for an embedded chat widget (launcher + iframe panel)."""

    def __init__(self, page: Any, *, lang: str = "en") -> None:
        self.page = page
        self.launcher = page.locator("[data-chatwidget] .launcher")
        self.frame = page.frame_locator("iframe[src*='/panel']")
        self.input = self.frame.locator("[data-chat-input]")
        self.send_button = self.frame.locator("[data-chat-send]")
        self.stop_button = self.frame.locator("[data-chat-stop]")
        self.turns = self.frame.locator("[data-chat-transcript] > li")
        self.answers = self.frame.locator("[data-chat-transcript] > li.turn--assistant")

    @staticmethod
    def install_recorder(context: Any) -> None:
        """Call once per browser context, before opening pages."""
        context.add_init_script(RECORDER_SCRIPT)

    def panel_frame(self) -> Any:
        for frame in self.page.frames:
            if "/panel" in frame.url:
                return frame
        raise AssertionError("the chat panel's frame is not loaded")

    def open(self) -> None:
        from playwright.sync_api import expect

        self.launcher.click()
        expect(self.launcher).to_have_attribute("aria-expanded", "true")
        self.frame.locator("[data-chat-panel][data-ready='true']").wait_for()
        expect(self.input).to_be_focused()

    def send(self, text: str) -> None:
        self.input.fill(text)
        self.input.press("Enter")

    def stop(self) -> None:
        self.stop_button.click()

    def last_answer(self) -> Any:
        return self.answers.last

    def wait_until_complete(self, timeout: float = 30_000) -> str:
        """Wait until the last answer reaches a terminal state; return that state."""
        answer = self.last_answer()
        answer.and_(self.frame.locator(",".join(f"[data-state='{s}']" for s in TERMINAL_STATES))).wait_for(timeout=timeout)
        return answer.get_attribute("data-state")

    def transcript(self) -> list[dict[str, str]]:
        return self.panel_frame().evaluate(
            """() => Array.from(document.querySelectorAll('[data-chat-transcript] > li'), (li) => ({
                role: li.classList.contains('turn--user') ? 'user' : 'assistant',
                text: li.querySelector('.turn__body').innerText,
                state: li.dataset.state || 'completed',
            }))"""
        )

    def wait_for_announcement(self, text: str, timeout: float = 10_000) -> None:
        """Wait until a live region has said `text` (announcements are throttled)."""
        self.panel_frame().wait_for_function(
            "(text) => (window.__chatwidgetLog || []).some((entry) => entry.text === text)", arg=text, timeout=timeout
        )

    def events(self) -> list[dict[str, Any]]:
        """Stream events as the widget applied them ({name: 'event', type, seq, outcome})
        and state changes ({name: 'state', state, messageId}), in order."""
        return self.panel_frame().evaluate("() => window.__chatwidgetEvents || []")

    def announcements(self) -> list[dict[str, Any]]:
        """What the live regions said, in order: [{politeness, text, t, focus}]."""
        return self.panel_frame().evaluate("() => window.__chatwidgetLog || []")

    def axe_violations(
        self, *, tags: tuple[str, ...] = ("wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa", "best-practice")
    ) -> list[dict[str, Any]]:
        """Run axe in the host page AND inside every frame (the panel's included).

        axe-playwright-python injects axe into the top frame only, and axe
        there skips a cross-origin iframe (its default `allowedOrigins` is
        the same origin), so the panel would silently go unscanned. We
        inject axe into each frame and run it there; every violation says
        which frame (`frame_url`) it was found in.
        """
        from axe_playwright_python.sync_playwright import Axe

        script = Axe().axe_script
        options = {"runOnly": {"type": "tag", "values": list(tags)}, "resultTypes": ["violations"], "iframes": False}
        violations: list[dict[str, Any]] = []
        for frame in self.page.frames:
            if frame.url in ("", "about:blank"):
                continue
            frame.evaluate(script)
            for violation in frame.evaluate("(options) => axe.run(document, options)", options)["violations"]:
                violations.append({**violation, "frame_url": frame.url})
        return violations

    def assert_accessible(self, **kwargs: Any) -> None:
        violations = self.axe_violations(**kwargs)
        if violations:
            summary = [
                {
                    "id": v["id"],
                    "impact": v["impact"],
                    "help": v["help"],
                    "frame": v["frame_url"],
                    "targets": [n["target"] for n in v["nodes"]][:5],
                }
                for v in violations
            ]
            raise AssertionError(f"axe found {len(violations)} violation(s): {json.dumps(summary, indent=1)}")
