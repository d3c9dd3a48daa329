"""Nothing is stored before the visitor speaks (docs/security.md, "Nothing stored before the
first message"), in Chromium and Firefox ESR, on a real host page with the loader.

Opening the panel and moving around it (the composer focused, words typed and not sent, the
panel closed and opened again) writes no cookie for any origin, nothing in localStorage or
sessionStorage of the host page or of the panel's frame, no IndexedDB database, no Cache
Storage entry, and sends no request that creates a conversation, and the server's store holds
none. The first message (or a starter) then creates exactly one conversation, and the panel
keeps it the way it is designed to (chat.js `remember()`, chat/api.py's cookie): a
`Partitioned` HttpOnly cookie that names it, and, where the panel's frame may use
localStorage, that entry too (measured 2026-12-06: Firefox ESR 153, and Chromium 156's headless
shell, whose third-party frame got a partitioned localStorage here, not a SecurityError). With CONSENT_TEXT, checking "I agree" stores nothing either:
the agreement goes with the first message.

What each engine lets the panel's frame use (docs/testing.md, "System browsers"): a store the
engine refuses to the frame throws, and the probe says "blocked" (nothing can be written
there). Firefox ESR 153 has `indexedDB.databases()` (since Firefox 126), and so has Chromium:
it is asked in both frames of both engines; where an engine lacked it the probe would say
"unsupported" and the test fail, rather than pass without looking.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from playwright.sync_api import expect

from widget_server.transport import CONVERSATION_COOKIE

pytestmark = pytest.mark.e2e

CONVERSATIONS_PATH = "/api/v1/conversations"
STARTERS = ["Opening hours?", "Track my order"]

# Everything a page can keep, as the frame sees it. A store the engine refuses to this frame
# throws: "blocked", nothing can be in it. No `await` is skipped: databases() and caches.keys()
# are asked, not assumed.
STORAGE_PROBE = """async () => {
  const probe = async (read) => {
    try {
      return await read();
    } catch (error) {
      return 'blocked: ' + error.name;
    }
  };
  const entries = (storage) => Object.fromEntries(
    Array.from({ length: storage.length }, (_, i) => [storage.key(i), storage.getItem(storage.key(i))]));
  return {
    localStorage: await probe(() => entries(window.localStorage)),
    sessionStorage: await probe(() => entries(window.sessionStorage)),
    indexedDB: await probe(async () => {
      if (!window.indexedDB) return 'blocked: no indexedDB';
      if (typeof indexedDB.databases !== 'function') return 'unsupported';
      return (await indexedDB.databases()).map((db) => db.name);
    }),
    caches: await probe(async () => (window.caches ? await caches.keys() : 'blocked: no caches')),
    serviceWorkers: await probe(async () =>
      navigator.serviceWorker ? (await navigator.serviceWorker.getRegistrations()).length : 0),
    documentCookie: await probe(() => document.cookie),
  };
}"""


def storage(frame: Any) -> dict[str, Any]:
    return frame.evaluate(STORAGE_PROBE)


def assert_nothing_stored(frame: Any, where: str) -> None:
    seen = storage(frame)
    for kind in ("localStorage", "sessionStorage"):
        assert seen[kind] == {} or str(seen[kind]).startswith("blocked"), f"{where} {kind}: {seen[kind]}"
    assert seen["indexedDB"] != "unsupported", f"{where}: indexedDB.databases() missing; cannot check"
    assert seen["indexedDB"] == [] or str(seen["indexedDB"]).startswith("blocked"), f"{where}: {seen}"
    assert seen["caches"] == [] or str(seen["caches"]).startswith("blocked"), f"{where}: {seen}"
    assert seen["serviceWorkers"] == 0, f"{where}: {seen}"
    assert seen["documentCookie"] in ("", "blocked: SecurityError"), f"{where}: {seen}"


class Requests:
    """Every request the context's pages, their frames and workers make."""

    def __init__(self, context: Any) -> None:
        self.seen: list[tuple[str, str]] = []
        context.on("request", lambda request: self.seen.append((request.method, request.url)))

    def creations(self) -> list[str]:
        return [url for method, url in self.seen if method == "POST" and url.endswith(CONVERSATIONS_PATH)]


def conversation_ids(server: Any) -> list[str]:
    return list(server.service.store._conversations)


def settled(widget: Any) -> None:
    """Everything the panel loads once ready has run (outbox.js last: its `hold` hook), so a
    panel that stored or created something on open would have done so by now."""
    widget.panel_frame().wait_for_function("() => typeof window.chatPanel.hold === 'function'")


def move_around(widget: Any, page: Any) -> None:
    """A visitor who looks but does not speak: focus the composer, type, tab through the
    panel, close it with Escape and open it again, type more, erase it."""
    widget.open()
    settled(widget)
    widget.input.press_sequentially("Do you keep what I")
    page.keyboard.press("Tab")
    expect(widget.send_button).to_be_focused()
    page.keyboard.press("Shift+Tab")
    expect(widget.input).to_be_focused()
    widget.input.press("Escape")
    expect(widget.launcher).to_have_attribute("aria-expanded", "false")
    widget.open()
    widget.input.press_sequentially(" type?")
    expect(widget.input).to_have_value("Do you keep what I type?")
    widget.input.fill("")
    widget.input.press_sequentially("/echo")


def assert_nothing_kept(widget: Any, page: Any, context: Any, server: Any, requests: Requests) -> None:
    assert context.cookies() == [], context.cookies()  # every origin's, partitioned ones too
    assert_nothing_stored(page.main_frame, "host page")
    assert_nothing_stored(widget.panel_frame(), "panel")
    assert requests.creations() == []
    assert conversation_ids(server) == []


def assert_kept_as_designed(widget: Any, context: Any, server: Any, requests: Requests) -> None:
    (created,) = conversation_ids(server)
    assert len(requests.creations()) == 1
    # The server's Partitioned, HttpOnly cookie names the conversation (chat/api.py), for the
    # panel's page after a reload where the frame may not use storage.
    cookies = [cookie for cookie in context.cookies() if cookie["name"] == CONVERSATION_COOKIE]
    assert len(cookies) == 1, context.cookies()
    assert cookies[0]["value"].startswith(f"{created}.") and cookies[0]["httpOnly"]
    assert {cookie["name"] for cookie in context.cookies()} == {CONVERSATION_COOKIE}
    panel = storage(widget.panel_frame())
    # Where the frame may use localStorage (Firefox ESR; Chromium's headless shell too), chat.js
    # `remember()` keeps the conversation's id and token there, under one key, and nothing else;
    # where it is blocked, the cookie above is all.
    if not str(panel["localStorage"]).startswith("blocked"):
        ((key, value),) = panel["localStorage"].items()
        assert key == f"chatwidget:{widget.panel_frame().url.split('/panel')[0]}/api/v1"
        assert json.loads(value)["conversation_id"] == created
    assert panel["sessionStorage"] == {} or str(panel["sessionStorage"]).startswith("blocked")
    assert panel["indexedDB"] == [] or str(panel["indexedDB"]).startswith("blocked")


@pytest.mark.smoke
def test_opening_and_typing_store_nothing_until_the_first_message(embed, page, context, chat_server_factory):
    server = chat_server_factory()
    requests = Requests(context)
    widget = embed(server)
    move_around(widget, page)
    assert_nothing_kept(widget, page, context, server, requests)
    # The first message: now, and only now, the conversation exists and is kept.
    widget.input.fill("/echo first words")
    widget.input.press("Enter")
    assert widget.wait_until_complete() == "completed"
    expect(widget.last_answer().locator(".turn__body")).to_have_text("first words")
    assert_kept_as_designed(widget, context, server, requests)
    assert_nothing_stored(page.main_frame, "host page")  # the host page's storage stays empty


def test_a_starter_is_the_first_message(embed, page, context, chat_server_factory):
    server = chat_server_factory()
    requests = Requests(context)
    widget = embed(server, starters=json.dumps(STARTERS))
    move_around(widget, page)
    widget.input.fill("")
    starters = widget.frame.locator("[data-chat-starters] button")
    expect(starters).to_have_text(STARTERS)
    starters.first.focus()  # reached, not pressed: still nothing
    assert_nothing_kept(widget, page, context, server, requests)
    page.keyboard.press("Enter")
    expect(widget.turns.first).to_contain_text(STARTERS[0])
    assert widget.wait_until_complete() == "completed"
    assert_kept_as_designed(widget, context, server, requests)


def test_checking_the_consent_box_stores_nothing_either(embed, page, context, chat_server_factory):
    # With CONSENT_TEXT (docs/accessibility.md A120): agreeing is not yet speaking; the
    # agreement goes with the first message, and is recorded with its conversation.
    server = chat_server_factory(CONSENT_TEXT="We keep your messages for 30 days.", CONSENT_URL="https://example.com/p")
    requests = Requests(context)
    widget = embed(server)
    move_around(widget, page)
    box = widget.frame.get_by_role("checkbox")
    box.focus()
    page.keyboard.press("Space")
    expect(box).to_be_checked()
    assert_nothing_kept(widget, page, context, server, requests)
    widget.input.fill("/echo agreed")
    widget.input.press("Enter")
    assert widget.wait_until_complete() == "completed"
    assert_kept_as_designed(widget, context, server, requests)
    ((record),) = [r.conversation for r in server.service.store._conversations.values()]
    assert record.consent_sha256 and record.consented_at
