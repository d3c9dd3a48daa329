"""The outbox (docs/design.md, "The outbox"): a message typed while the browser is offline — the first
one too, before any conversation exists — waits visibly ("Waiting for connection", said
once), is kept across a reload of the panel, and reaches the server exactly once, with the
request_id it was given when it was typed (static/widget/outbox.js)."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import BrowserContext, Page, expect

from widget_server.testing import ChatWidget

from ..helpers import CountingBackend

pytestmark = pytest.mark.e2e

QUEUED = "You are offline. Your message will be sent when the connection is back."


class MessagePosts:
    """Every POST …/messages the page sends, whether or not it gets through. (Only the URL:
    Firefox through WebDriver BiDi gives no request body; the server records the ids.)"""

    def __init__(self, page: Page) -> None:
        self.urls: list[str] = []
        page.on("request", self._seen)

    def _seen(self, request) -> None:
        if request.method == "POST" and request.url.endswith("/messages"):
            self.urls.append(request.url)


def record_submits(server) -> list[str]:
    """The request_id of every message the server's API submitted (ChatService.submit)."""
    submitted: list[str] = []
    submit = server.service.submit

    def recording(conversation_id: str, request_id: str, text: str, **options: Any):
        submitted.append(request_id)
        return submit(conversation_id, request_id, text, **options)

    server.service.submit = recording
    return submitted


def open_with_outbox(widget: ChatWidget) -> None:
    """Open the chat and wait until its outbox is in place: outbox.js is loaded (with its
    strings) right after the panel is ready, while online — a browser that goes offline within
    those milliseconds has no outbox yet (docs/design.md, "The outbox")."""
    widget.open()
    widget.panel_frame().wait_for_function("() => typeof window.chatPanel.hold === 'function'")


def held_request_ids(widget: ChatWidget) -> list[str]:
    """The request ids the panel keeps for later, from where it keeps them (outbox.js)."""
    return widget.panel_frame().evaluate(
        """() => {
          let raw = null;
          try { raw = localStorage.getItem('chatwidget_outbox'); } catch {}
          if (raw == null) {
            const pair = document.cookie.split('; ').find((part) => part.startsWith('chatwidget_outbox='));
            raw = pair ? decodeURIComponent(pair.slice('chatwidget_outbox='.length)) : '[]';
          }
          return JSON.parse(raw).map((entry) => entry.request_id);
        }"""
    )


def history(server) -> list[dict[str, Any]]:
    store = server.service.store
    (conversation_id,) = list(store._conversations)
    return server.service.history(conversation_id)


def assert_waiting(widget: ChatWidget, text: str) -> None:
    turn = widget.turns.last
    expect(turn.locator(".turn__body")).to_have_text(text)
    expect(turn).to_have_attribute("data-state", "waiting")
    expect(turn.locator(".turn__status")).to_have_text("Waiting for connection")
    widget.wait_for_announcement(QUEUED)


@pytest.mark.smoke
def test_a_first_message_typed_offline_survives_a_reload_and_is_sent_once(
    embed, page: Page, context: BrowserContext, chat_server_factory
):
    server = chat_server_factory()
    backend = CountingBackend(server.service.backend)
    server.service.backend = backend
    submitted = record_submits(server)
    widget = embed(server)
    open_with_outbox(widget)
    url = page.url
    context.set_offline(True)
    widget.send("/echo typed while offline")
    assert_waiting(widget, "/echo typed while offline")
    polite = [a for a in widget.announcements() if a["text"] == QUEUED]
    assert [a["politeness"] for a in polite] == ["polite"]  # said once, politely
    expect(widget.input).to_be_focused()
    (request_id,) = held_request_ids(widget)
    assert not server.service.store._conversations  # nothing reached the server
    # The tab goes away while offline (a reload cannot load a page offline), and the site
    # is opened again once the browser is back online.
    page.close()
    context.set_offline(False)
    page = context.new_page()
    posts = MessagePosts(page)
    page.goto(url)
    widget = ChatWidget(page)
    widget.open()
    assert widget.wait_until_complete() == "completed"
    expect(widget.last_answer().locator(".turn__body")).to_have_text("typed while offline")
    assert len(posts.urls) == 1
    assert submitted == [request_id]
    assert backend.calls == 1
    assert [(m["role"], m["text"]) for m in history(server)] == [
        ("user", "/echo typed while offline"),
        ("assistant", "typed while offline"),
    ]
    expect(widget.turns.first).not_to_have_attribute("data-state", "waiting")
    assert held_request_ids(widget) == []  # sent: nothing kept for later
    # Reloaded again, online: nothing is sent twice.
    page.reload()
    widget.open()
    expect(widget.turns).to_have_count(2)
    expect(widget.last_answer()).to_have_attribute("data-state", "completed")
    assert len(posts.urls) == 1 and submitted == [request_id] and backend.calls == 1


def test_messages_typed_offline_are_sent_in_order_when_the_browser_is_back_online(
    embed, page: Page, context: BrowserContext, chat_server_factory
):
    server = chat_server_factory()
    backend = CountingBackend(server.service.backend)
    server.service.backend = backend
    widget = embed(server)
    open_with_outbox(widget)
    widget.send("/echo online first")
    assert widget.wait_until_complete() == "completed"
    submitted = record_submits(server)
    posts = MessagePosts(page)
    context.set_offline(True)
    widget.send("/echo one")
    assert_waiting(widget, "/echo one")
    widget.send("/echo two")
    expect(widget.frame.locator("[data-state='waiting']")).to_have_count(2)
    ids = held_request_ids(widget)
    assert len(ids) == 2
    context.set_offline(False)  # the `online` event
    expect(widget.answers).to_have_count(3)
    expect(widget.answers.last).to_have_attribute("data-state", "completed")
    expect(widget.frame.locator("[data-state='waiting']")).to_have_count(0)
    assert len(posts.urls) == 2
    assert submitted == ids
    assert backend.calls == 3
    assert [m["text"] for m in history(server)] == [
        "/echo online first",
        "online first",
        "/echo one",
        "one",
        "/echo two",
        "two",
    ]
    # Each answer under its own question, as the history has them.
    assert [(turn["role"], turn["text"]) for turn in widget.transcript()] == [
        (m["role"], m["text"]) for m in history(server)
    ]


def test_in_spanish_the_waiting_message_speaks_spanish(embed, context: BrowserContext, chat_server_factory):
    server = chat_server_factory()
    submitted = record_submits(server)
    widget = embed(server, lang="es")
    open_with_outbox(widget)
    context.set_offline(True)
    widget.send("/echo hola")
    turn = widget.turns.last
    expect(turn).to_have_attribute("data-state", "waiting")
    expect(turn.locator(".turn__status")).to_have_text("Esperando conexión")
    widget.wait_for_announcement("No hay conexión. Tu mensaje se enviará cuando vuelva la conexión.")
    context.set_offline(False)
    assert widget.wait_until_complete() == "completed"
    assert len(submitted) == 1


def test_starting_over_drops_the_messages_still_waiting(
    embed, page: Page, context: BrowserContext, chat_server_factory
):
    from .test_tab_sync import start_over

    server = chat_server_factory()
    submitted = record_submits(server)
    widget = embed(server)
    open_with_outbox(widget)
    # The dialog's module loads on the first press (conversation-tools.js): once while online.
    widget.frame.get_by_role("button", name="New conversation").click()
    widget.frame.get_by_role("dialog").get_by_role("button", name="Cancel").click()
    context.set_offline(True)
    widget.send("/echo never mind")
    assert_waiting(widget, "/echo never mind")
    start_over(widget, delete=False)  # no conversation yet: nothing to ask the server
    expect(widget.turns).to_have_count(0)
    assert held_request_ids(widget) == []
    context.set_offline(False)
    widget.send("/echo a fresh start")
    assert widget.wait_until_complete() == "completed"
    expect(widget.turns).to_have_count(2)
    assert len(submitted) == 1
    assert [m["text"] for m in history(server)] == ["/echo a fresh start", "a fresh start"]
