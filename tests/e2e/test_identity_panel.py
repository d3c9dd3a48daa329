"""Known visitors in the panel (docs/embedding.md, "Known visitors"; docs/protocol.md, "Known
visitors"): the site's identity token given by `data-identity-token` or
`ChatWidget.identify()`, the visitor's conversations on two devices, the Conversations view by
keyboard, a refused token told to the site, the sign-out, and anonymous panels as before."""

from __future__ import annotations

import re
import uuid

import pytest
from playwright.sync_api import Browser, Page, expect

from widget_server.backends.demo import SLOW_ANSWER
from widget_server.testing import IDENTITY_TEST_SECRET, ChatWidget, mint_identity_token

from ..helpers import HTTP, http_client
from .conftest import ANNOUNCE_INTERVAL_MS, chat_base_url
from .test_attachments_widget import attach_with_button

pytestmark = pytest.mark.e2e

# The host page counts the loader's event (docs/events.md), heard on `document`.
EXPIRED_COUNT = """
window.__expired = 0;
document.addEventListener('chatwidget:identity-expired', () => { window.__expired += 1; });
"""


# What the panel says of a refused, expired token (static/widget/i18n/refusals/en.json).
EXPIRED_SAID = "Your sign-in for this chat has expired. Sign in again on this site to continue."


@pytest.fixture
def identity_server(chat_server_factory):
    return chat_server_factory(IDENTITY_SECRET=IDENTITY_TEST_SECRET)


def token(subject: str = "customer-42", **claims) -> str:
    return mint_identity_token(subject, secret=IDENTITY_TEST_SECRET, **claims)


def refused_once(embed, server, page: Page) -> ChatWidget:
    """A known visitor whose token has expired, their question sent once and refused: the alert
    says why, the text waits in the composer; the page counts the loader's event."""
    page.add_init_script(EXPIRED_COUNT)
    widget = embed(server, identity_token=token(expires_in=-600))
    widget.open()
    widget.input.fill("Where is my parcel?")
    widget.input.press("Enter")
    expect(widget.frame.locator("[data-chat-alert]")).to_have_text(EXPIRED_SAID)
    return widget


def panel_model_text(widget: ChatWidget) -> str:
    return widget.panel_frame().evaluate("() => window.chatPanel.current.model.text")


def conversations_control(widget: ChatWidget):
    return widget.frame.locator("[data-chat-conversations]")


def own_conversation(server, subject: str, question: str) -> str:
    """A conversation of `subject` with one completed answer, made over HTTP as another device."""
    with http_client(base_url=server.url, timeout=30) as http:
        created = http.post("/api/v1/conversations", json={"identity_token": token(subject)}).json()
        headers = {"Authorization": f"Bearer {created['token']}"}
        url = f"/api/v1/conversations/{created['conversation_id']}/messages"
        with http.stream("POST", url, json={"request_id": str(uuid.uuid4()), "text": question}, headers=headers) as r:
            assert r.status_code == 200
            body = "".join(r.iter_text())
        assert "message.completed" in body
        return created["conversation_id"]


def device(browser: Browser, host_site, server, browser_name: str, path: str, **data) -> ChatWidget:
    """Another browser profile (its own storage and cookies) on a host page embedding the chat."""
    context = browser.new_context()
    ChatWidget.install_recorder(context)
    page = context.new_page()
    data.setdefault("announce_interval", ANNOUNCE_INTERVAL_MS)
    page.goto(host_site.embed_page(chat_base_url(server, browser_name), path=path, **data))
    widget = ChatWidget(page)
    widget.launcher.wait_for()
    return widget


def test_two_devices_of_one_visitor_share_the_list_and_the_second_resumes_the_answer_exactly(
    embed, chat_server_factory, browser: Browser, host_site, browser_name
):
    # Five sentences 3 s apart: still being written when the second device opens it.
    identity_server = chat_server_factory(IDENTITY_SECRET=IDENTITY_TEST_SECRET, DEMO_DELAY_SECONDS=0.3)
    first = embed(identity_server, identity_token=token())
    first.open()
    first.send("/scenario slow")
    expect(first.last_answer().locator(".turn__body")).not_to_be_empty()  # under way
    second = device(browser, host_site, identity_server, browser_name, "/other-device", identity_token=token())
    try:
        second.open()
        control = conversations_control(second)
        expect(control).to_be_visible()
        control.click()
        choices = second.frame.locator("#chat-conversations li button")
        expect(choices).to_have_count(1)
        expect(choices.first).to_have_text(re.compile(r"^/scenario slow — "))
        choices.first.click()
        # Its history, and the answer still being written followed from where it is.
        expect(second.turns.first).to_have_text(re.compile("/scenario slow"))
        expect(second.last_answer()).to_have_attribute("data-state", "streaming")
        assert second.wait_until_complete() == "completed"  # its SHA-256 checked by the panel
        assert first.wait_until_complete() == "completed"
        assert panel_model_text(second) == panel_model_text(first) == SLOW_ANSWER
        expect(second.turns).to_have_count(2)
        expect(second.input).to_be_focused()
        # Reloaded, the second device shows the chosen conversation again: kept by its id alone,
        # drawn once the page's token has come (identity.js).
        second.page.reload()
        second.launcher.wait_for()
        second.open()
        expect(second.turns).to_have_count(2)
        expect(second.answers.first).to_have_attribute("data-state", "completed")
    finally:
        second.page.context.close()


def test_logout_forgets_everything_the_panel_kept_on_this_browser(embed, identity_server, page: Page):
    # A single-page app: signed in after the page loaded, so a reload after the sign-out is the
    # next visitor's page, without a token.
    widget = embed(identity_server)
    widget.open()
    page.evaluate("(fresh) => ChatWidget.identify(fresh)", token())
    expect(conversations_control(widget)).to_be_visible()
    widget.send("/echo A private question")
    assert widget.wait_until_complete() == "completed"
    widget.input.fill("half typed")
    attach_with_button(widget, page, ("receipt.txt", "text/plain", b"order 1234"))
    files = widget.frame.locator(".chat-files > li")
    expect(files).to_have_count(1)
    page.evaluate("() => ChatWidget.logout()")
    expect(widget.turns).to_have_count(0)
    expect(widget.input).to_have_value("")
    expect(files).to_have_count(0)
    expect(conversations_control(widget)).to_be_hidden()
    stored = """() => {
      try { return localStorage.length + sessionStorage.length; } catch { return 0; }
    }"""
    widget.panel_frame().wait_for_function(f"() => ({stored})() === 0")
    # The next visitor on this browser starts fresh, after a reload too (the cookie included).
    page.reload()
    widget.launcher.wait_for()
    widget.open()
    expect(widget.frame.locator("[data-chat-empty]")).to_be_visible()
    expect(widget.turns).to_have_count(0)
    expect(conversations_control(widget)).to_be_hidden()


def test_an_anonymous_panel_has_no_conversations_control_nor_identity_code(embed, identity_server, page: Page):
    fetched: list[str] = []
    page.on("request", lambda request: fetched.append(request.url))
    widget = embed(identity_server)
    widget.open()
    widget.send("/echo Hello")
    assert widget.wait_until_complete() == "completed"
    expect(conversations_control(widget)).to_be_hidden()
    assert not [url for url in fetched if re.search(r"/(identity|conversations)\.js", url)]
    # A token given later, as a single-page app signs its visitor in, shows it.
    page.evaluate("(fresh) => ChatWidget.identify(fresh)", token())
    expect(conversations_control(widget)).to_be_visible()


def test_the_identity_outlasts_closing_and_reopening_the_panel(embed, identity_server, page: Page):
    widget = embed(identity_server, identity_token=token("customer-5"))
    widget.open()
    expect(conversations_control(widget)).to_be_visible()
    page.keyboard.press("Escape")
    expect(widget.launcher).to_have_attribute("aria-expanded", "false")
    widget.open()  # the loader's `chatwidget:opened` again: not a sign-out
    expect(conversations_control(widget)).to_be_visible()
    widget.send("/echo Mine")
    assert widget.wait_until_complete() == "completed"
    listed = HTTP.get(
        identity_server.url + "/api/v1/me/conversations", headers={"Authorization": f"Bearer {token('customer-5')}"}
    ).json()["conversations"]
    assert [conversation["title"] for conversation in listed] == ["/echo Mine"]


def test_a_send_after_a_fresh_token_is_not_answered_by_the_old_tokens_refusal(embed, identity_server, page: Page):
    # The visitor presses Enter again while the site is fetching a fresh token: that send's
    # creation, with the expired token, is still in flight when ChatWidget.identify() gives the
    # fresh one and the visitor sends once more. The last send is made with the fresh token,
    # not answered by the refusal of the one in flight (chat.js ensureConversation).
    widget = refused_once(embed, identity_server, page)
    held = []

    def hold_the_first_creation(route):
        if not held and route.request.method == "POST":
            held.append(route)
        else:
            route.continue_()

    page.route(re.compile(r".*/api/v1/conversations$"), hold_the_first_creation)
    with page.expect_request(lambda request: request.method == "POST" and request.url.endswith("/conversations")):
        widget.input.press("Enter")
    fresh = token()
    page.evaluate("(fresh) => ChatWidget.identify(fresh)", fresh)
    widget.panel_frame().wait_for_function("(fresh) => window.chatPanel.client.identity === fresh", arg=fresh)
    widget.input.press("Enter")
    assert len(held) == 1
    held[0].continue_()  # the old token's creation ends now: refused
    assert widget.wait_until_complete() == "completed"
    expect(widget.turns.first).to_have_text(re.compile("Where is my parcel"))
    expect(widget.input).to_have_value("")
    # The old token's second refusal was neither told to the site nor said to the visitor.
    assert page.evaluate("() => window.__expired") == 1
    said = [entry["text"] for entry in widget.announcements() if entry["politeness"] == "assertive"]
    assert [text for text in said if "expired" in text] == [EXPIRED_SAID], said


def test_a_token_given_in_chatwidgetconfig_makes_the_visitor_known(embed, identity_server, page: Page):
    # docs/embedding.md, "Known visitors": `window.ChatWidgetConfig = { identityToken }` before
    # the loader runs, the way a site without data-* attributes gives it. The test host sends no
    # CSP, so an inline script may set it (as test_theming.py's ChatWidgetConfig does).
    own_conversation(identity_server, "customer-11", "Where is my order?")
    config = f"<script>window.ChatWidgetConfig = {{identityToken: '{token('customer-11')}'}};</script>"
    widget = embed(identity_server, head=config)
    widget.open()
    control = conversations_control(widget)
    expect(control).to_be_visible()
    control.click()
    choices = widget.frame.locator("#chat-conversations").get_by_role("listitem").get_by_role("button")
    expect(choices).to_have_count(1)
    expect(choices.first.locator("bdi")).to_have_text("Where is my order?")
    # A new conversation from this panel is the visitor's too.
    page.keyboard.press("Escape")
    widget.send("/echo From the config")
    assert widget.wait_until_complete() == "completed"
    listed = HTTP.get(
        identity_server.url + "/api/v1/me/conversations", headers={"Authorization": f"Bearer {token('customer-11')}"}
    ).json()["conversations"]
    assert [conversation["title"] for conversation in listed] == ["/echo From the config", "Where is my order?"]


def test_logout_in_one_tab_makes_the_sites_other_tabs_forget_too(
    embed, identity_server, context, host_site, browser_name
):
    # Two tabs of one site, the visitor known in both; the site signs them out in the first.
    first = embed(identity_server, identity_token=token("customer-12"))
    first.open()
    first.send("/echo A private question")
    assert first.wait_until_complete() == "completed"
    page = context.new_page()
    page.goto(
        host_site.embed_page(
            chat_base_url(identity_server, browser_name),
            identity_token=token("customer-12"),
            announce_interval=ANNOUNCE_INTERVAL_MS,
        )
    )
    second = ChatWidget(page)
    page.bring_to_front()
    second.open()
    expect(second.turns).to_have_count(2)  # the same conversation, followed (tab-sync.js)
    expect(conversations_control(second)).to_be_visible()
    second.input.fill("half typed in the second tab")
    first.page.bring_to_front()
    first.page.evaluate("() => ChatWidget.logout()")
    expect(first.turns).to_have_count(0)
    # The second tab forgets the visitor too: no list, no conversation, no draft, no token.
    expect(conversations_control(second)).to_be_hidden()
    expect(second.turns).to_have_count(0)
    expect(second.input).to_have_value("")
    second.panel_frame().wait_for_function("() => chatPanel.client.identity === '' && !chatPanel.client.conversationId")
    # The next message in it is anonymous: the visitor's list keeps only their first conversation.
    page.bring_to_front()
    second.send("/echo Someone else now")
    assert second.wait_until_complete() == "completed"
    listed = HTTP.get(
        identity_server.url + "/api/v1/me/conversations", headers={"Authorization": f"Bearer {token('customer-12')}"}
    ).json()["conversations"]
    assert [conversation["title"] for conversation in listed] == ["/echo A private question"]


def test_logout_takes_your_data_out_of_the_open_options(embed, identity_server, page: Page):
    # my-data.js's group is the known visitor's only: a sign-out with the Options open hides it
    # at once (identity.js), and it stays hidden when they open again.
    widget = embed(identity_server, identity_token=token("customer-13"))
    widget.open()
    options = widget.frame.get_by_role("button", name="Options")
    options.click()
    group = widget.frame.get_by_role("group", name="Your data in this chat")
    expect(group).to_be_visible()
    page.evaluate("() => ChatWidget.logout()")
    expect(group).to_be_hidden()
    options.click()
    expect(options).to_have_attribute("aria-expanded", "false")
    options.click()
    expect(options).to_have_attribute("aria-expanded", "true")
    expect(widget.frame.get_by_role("button", name="Download transcript")).to_be_visible()
    expect(group).to_be_hidden()
