"""Tabs in sync (docs/design.md, "Tabs in sync"): two pages of one browser context, each embedding the widget
from the host site, show one conversation live — and the server generates each answer once.

Both panels are iframes of the chat server's origin under the same top-level site, so they
share its storage partition and a BroadcastChannel (static/widget/tab-sync.js). In Chromium
the panel is a third-party iframe (127.0.0.1 under localhost), where Debian's Chromium
blocks third-party storage: the channel works there all the same (docs/testing.md, "System
browsers")."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import BrowserContext, Page, expect

from widget_server.testing import ChatWidget

from ..helpers import CountingBackend
from .conftest import ANNOUNCE_INTERVAL_MS, chat_base_url

pytestmark = pytest.mark.e2e

# Firefox ESR's share (docs/testing.md): the cases marked chromium_only run in Chromium alone.
SYNC_FIREFOX = "the tabs' channel carries every change alike; Firefox runs an answer streamed into another tab, an offline message and a new conversation across tabs in test_accessibility_contract_sync.py (A43-A45); what this module adds (one generation, a stop, a regeneration) is the server's"


def open_tab(context: BrowserContext, host_site, server, browser_name: str) -> ChatWidget:
    """Another tab of the same site, its chat opened (the loader loads the panel on open)."""
    page = context.new_page()
    page.goto(host_site.embed_page(chat_base_url(server, browser_name), announce_interval=ANNOUNCE_INTERVAL_MS))
    return focus(ChatWidget(page))


def focus(widget: ChatWidget) -> ChatWidget:
    """Bring the widget's tab to the front (only the front page has focus) and open the chat."""
    widget.page.bring_to_front()
    widget.open()
    return widget


class Requests:
    """The chat API requests one page made: [(method, path)]."""

    def __init__(self, page: Page) -> None:
        self.seen: list[tuple[str, str]] = []
        page.on("request", lambda request: self.seen.append((request.method, request.url)))

    def posts_to_messages(self) -> list[str]:
        return [url for method, url in self.seen if method == "POST" and url.endswith("/messages")]

    def resumes(self) -> list[str]:
        return [url for method, url in self.seen if method == "GET" and "/events" in url]


def streamed_deltas(widget: ChatWidget) -> list[dict[str, Any]]:
    return [
        e for e in widget.events() if e["name"] == "event" and e["type"] == "text.delta" and e["outcome"] == "applied"
    ]


def counting(server) -> CountingBackend:
    backend = CountingBackend(server.service.backend)
    server.service.backend = backend
    return backend


@pytest.mark.smoke
@pytest.mark.chromium_only(reason=SYNC_FIREFOX)
def test_a_message_sent_in_one_tab_streams_in_the_other_and_is_generated_once(
    embed, context, host_site, chat_server_factory, browser_name, seed_answers
):
    server = chat_server_factory(DEMO_DELAY_SECONDS=0.3)  # long enough to watch it stream in both
    backend = counting(server)
    one = embed(server)
    # The other tab opens before any conversation exists: it learns it from the first message.
    two = open_tab(context, host_site, server, browser_name)
    two_requests = Requests(two.page)
    focus(one)
    seed = seed_answers["improvisation"]
    one.send(seed["question"])
    expect(two.turns.first.locator(".turn__body")).to_have_text(seed["question"])
    expect(two.last_answer()).to_have_attribute("data-state", "streaming")
    expect(two.last_answer()).to_have_attribute("aria-busy", "true")
    two.page.bring_to_front()  # a person looks at the other tab
    expect(two.stop_button).to_be_visible()
    assert one.wait_until_complete() == "completed"
    assert two.wait_until_complete() == "completed"
    assert two.transcript() == one.transcript()
    assert len(streamed_deltas(two)) > 1  # streamed live, not drawn from the history at the end
    assert backend.calls == 1
    assert two_requests.posts_to_messages() == []
    assert two_requests.resumes()  # the GET resume stream, …/messages/{id}/events
    two.wait_for_announcement("Answer complete.")
    message_id = one.last_answer().get_attribute("data-message-id")
    expect(two.last_answer()).to_have_attribute("data-message-id", message_id or "")

    # And back: the second tab's message shows in the first.
    focus(two)
    two.send("/echo from the second tab")
    expect(one.turns.nth(2).locator(".turn__body")).to_have_text("/echo from the second tab")
    assert two.wait_until_complete() == "completed"
    assert one.wait_until_complete() == "completed"
    assert one.transcript() == two.transcript()
    assert backend.calls == 2


@pytest.mark.chromium_only(reason=SYNC_FIREFOX)
def test_stop_in_the_other_tab_stops_the_one_answer(embed, context, host_site, chat_server_factory, browser_name):
    # `/scenario slow` at 3 s a sentence (10 × the demo delay): 15 s in which Stop is pressed,
    # however loaded the machine (at 1 s a sentence a loaded quick run once finished first).
    server = chat_server_factory(DEMO_DELAY_SECONDS=0.3)
    backend = counting(server)
    one = embed(server)
    one.open()
    one.send("/echo a conversation exists")
    assert one.wait_until_complete() == "completed"
    # A tab that joins late restores the conversation from the server (config.conversation).
    two = open_tab(context, host_site, server, browser_name)
    expect(two.turns).to_have_count(2)
    focus(one)
    one.send("/scenario slow")
    expect(two.last_answer().locator(".turn__body")).not_to_be_empty()
    focus(two)
    two.stop_button.focus()
    two.stop_button.press("Enter")
    assert two.wait_until_complete() == "cancelled"
    assert one.wait_until_complete() == "cancelled"
    one.wait_for_announcement("Answer stopped.")
    assert backend.calls == 2
    message_id = one.last_answer().get_attribute("data-message-id")
    assert message_id and server.service.store.message(message_id).state.value == "cancelled"


def start_over(widget: ChatWidget, *, delete: bool) -> None:
    """New conversation, through the header button and its confirmation dialog (conversation-tools.js)."""
    widget.frame.get_by_role("button", name="New conversation").click()
    name = "Start over and delete this conversation" if delete else "Start over"
    widget.frame.get_by_role("dialog").get_by_role("button", name=name, exact=True).click()


@pytest.mark.chromium_only(reason=SYNC_FIREFOX)
@pytest.mark.parametrize("delete", [False, True], ids=["new", "delete"])
def test_new_conversation_in_one_tab_resets_the_other(
    embed, context, host_site, chat_server_factory, browser_name, delete
):
    server = chat_server_factory()
    one = embed(server)
    one.open()
    one.send("/echo before starting over")
    assert one.wait_until_complete() == "completed"
    two = open_tab(context, host_site, server, browser_name)
    expect(two.turns).to_have_count(2)
    two.input.fill("a draft of mine")
    focus(one)
    start_over(one, delete=delete)
    expect(one.turns).to_have_count(0)
    expect(two.turns).to_have_count(0)
    expect(two.frame.locator("[data-chat-empty]")).to_be_visible()
    said = (
        "The conversation was deleted in another tab."
        if delete
        else "The conversation was started over in another tab."
    )
    two.wait_for_announcement(said)
    expect(two.input).to_have_value("a draft of mine")  # the other tab's draft is its own
    # Both tabs now write into the same new conversation.
    one.send("/echo after starting over")
    expect(two.turns).to_have_count(2)
    assert two.wait_until_complete() == "completed"
    assert two.transcript() == one.transcript()


@pytest.mark.chromium_only(reason=SYNC_FIREFOX)
def test_a_regenerated_answer_replaces_the_old_one_in_the_other_tab(
    embed, context, host_site, chat_server_factory, browser_name
):
    server = chat_server_factory()
    backend = counting(server)
    one = embed(server)
    one.open()
    one.send("/scenario voicings")
    assert one.wait_until_complete() == "completed"
    two = open_tab(context, host_site, server, browser_name)
    expect(two.turns).to_have_count(2)
    old_id = two.last_answer().get_attribute("data-message-id")
    two_requests = Requests(two.page)
    focus(one)
    one.last_answer().get_by_role("button", name="Regenerate answer").click()
    assert one.wait_until_complete() == "completed"
    new_id = one.last_answer().get_attribute("data-message-id")
    assert new_id and new_id != old_id
    # The other tab draws the conversation again from the history: the new answer in the old one's place.
    expect(two.last_answer()).to_have_attribute("data-message-id", new_id)
    expect(two.turns).to_have_count(2)
    assert two.wait_until_complete() == "completed"
    assert two.transcript() == one.transcript()
    assert backend.calls == 2
    assert two_requests.posts_to_messages() == [] and not [u for m, u in two_requests.seen if m == "POST"]
