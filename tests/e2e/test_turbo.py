"""Real Turbo Drive (Hotwire's @hotwired/turbo, from npm, pinned in .ci/js/package.json) on a
host page, in real Chromium and Firefox ESR: a page that swaps its <body> on navigation, as
Turbo Drive does, keeps the launcher (docs/embedding.md, "Page machinery: Turbo Drive and
single-page apps").

tests/e2e/test_host_pages.py replays what Turbo does to a page (`swap_body`); this module
runs Turbo itself: a click on a link is a Turbo visit (fetch, then the new <body> in place of
the old one, its scripts run again, history pushed), and Back is a restoration visit from
Turbo's snapshot cache. Each keeps one launcher and the same panel, and a running answer goes
on without a second generation or a repeated announcement.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from widget_server.testing import ChatWidget

from ..helpers import REPO_ROOT
from .conftest import chat_base_url
from .test_host_pages import EN, history_of, loader_tag, one_widget

pytestmark = pytest.mark.e2e

TURBO_JS = REPO_ROOT / ".ci" / "js" / "node_modules" / "@hotwired" / "turbo" / "dist" / "turbo.es2017-umd.js"


def turbo_script() -> bytes:
    # .ci/test installs it (npm ci in .ci/js); a plain pytest run without it says how.
    if not TURBO_JS.is_file():
        pytest.fail(f"{TURBO_JS.relative_to(REPO_ROOT)} is missing: run `npm ci` in .ci/js (bash .ci/test does)")
    return Path(TURBO_JS).read_bytes()


def turbo_page(title: str, link: tuple[str, str], chat_url: str) -> str:
    """A Rails-like page: Turbo in <head>, the loader at the end of <body> (so every Turbo
    visit runs it again, as it runs every script of a new body)."""
    href, text = link
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<title>{title}</title><script src="/turbo.js"></script></head>'
        f'<body><main><h1>{title}</h1><p><a href="{href}">{text}</a></p></main>'
        f"{loader_tag(chat_url)}</body></html>"
    )


def test_turbo_drive_visits_and_back_keep_the_chat_and_its_running_answer(
    page: Page, host_site, chat_server, browser_name
):
    chat_url = chat_base_url(chat_server, browser_name)
    host_site.scripts["/turbo.js"] = turbo_script()
    host_site.pages["/shop"] = turbo_page("Shop", ("/shop/orders", "Your orders"), chat_url)
    host_site.pages["/shop/orders"] = turbo_page("Your orders", ("/shop", "Back to the shop"), chat_url)
    ChatWidget.install_recorder(page.context)
    page.goto(host_site.origin + "/shop")
    widget = ChatWidget(page)
    assert page.evaluate("() => typeof Turbo === 'object' && Turbo.session.drive === true")
    page.evaluate("() => { window.__sameDocument = true; }")  # gone if a visit were a full load
    widget.open()
    widget.send("/scenario slow")  # five sentences, a second apart: running across the visits
    expect(widget.last_answer()).to_have_attribute("data-state", "streaming")
    widget.wait_for_announcement(EN["generating"])
    widget.panel_frame().evaluate("() => { window.__beforeVisit = true; }")

    # A Turbo visit: the link is followed by fetch, and the new page's <body> replaces this one.
    page.get_by_role("link", name="Your orders").click()
    expect(page).to_have_url(host_site.origin + "/shop/orders")
    expect(page.get_by_role("heading", level=1)).to_have_text("Your orders")
    assert page.evaluate("() => window.__sameDocument === true"), "Turbo did not keep the document"
    one_widget(page)
    expect(widget.launcher).to_have_attribute("aria-expanded", "true")
    # The same panel document: never moved, so never reloaded, and the answer runs on.
    assert widget.panel_frame().evaluate("() => window.__beforeVisit === true")
    assert widget.wait_until_complete() == "completed"
    assert [m["role"] for m in history_of(chat_server, widget)] == ["user", "assistant"]  # one generation
    # The last sentence and the completion cue are said at the announcer's pace, after the
    # state changes (A5): wait for the cue, then count.
    widget.wait_for_announcement(EN["complete"])
    spoken = [entry["text"] for entry in widget.announcements()]
    assert len(spoken) == len(set(spoken)), spoken  # nothing said twice
    assert spoken.count(EN["complete"]) == 1

    # Back: Turbo restores /shop from its snapshot cache. Closed, the launcher still opens the
    # same conversation, axe-clean.
    # (The click left focus in the page, where Turbo put it; Escape is the panel's key.)
    widget.input.focus()
    page.keyboard.press("Escape")
    expect(widget.launcher).to_be_focused()
    page.go_back()
    expect(page).to_have_url(host_site.origin + "/shop")
    expect(page.get_by_role("heading", level=1)).to_have_text("Shop")
    assert page.evaluate("() => window.__sameDocument === true")
    one_widget(page)
    widget.open()
    expect(widget.answers).to_have_count(1)
    widget.assert_accessible()
