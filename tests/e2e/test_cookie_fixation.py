"""A sibling subdomain cannot fixate the visitor on a conversation it reads
(docs/security.md, "Controls"), shown in real Chromium and Firefox ESR.

The attacker starts a conversation of their own (they hold its token), then, from a page on
a sibling host (`evil.example.localhost`, a sibling of the chat's `chat.example.localhost`: both
browsers resolve every `*.localhost` name to loopback and treat it as a secure context),
plants cookies for the shared parent domain naming that conversation. With the old
unprefixed cookie the visitor's panel adopted it and the attacker read the visitor's next
message; the `__Host-` cookie cannot be set with `Domain=` and the unprefixed one is never
read, so the visitor's message lands in a conversation of their own. The server side:
tests/test_conversation_cookie.py.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from ..helpers import http_client

pytestmark = pytest.mark.e2e

PLANT = """([name, value]) => {
    document.cookie = `${name}=${value}; Domain=example.localhost; Path=/; Secure; SameSite=None`;
}"""


def test_a_cookie_planted_by_a_sibling_subdomain_is_not_adopted(chat_server, page):
    port = chat_server.url.rsplit(":", 1)[1]
    chat_origin = f"http://chat.example.localhost:{port}"
    with http_client(base_url=chat_server.url) as http:
        attacker = http.post("/api/v1/conversations").json()
        planted = f"{attacker['conversation_id']}.{attacker['token']}"

        # The attacker's page, on a sibling host (cookies ignore ports: any page there will do).
        page.goto(f"http://evil.example.localhost:{port}/healthz")
        for name in ("chatwidget_conversation", "__Host-chatwidget_conversation"):
            page.evaluate(PLANT, [name, planted])
        names = {cookie["name"] for cookie in page.context.cookies(chat_origin)}
        # The plant itself works (so this test would catch the old cookie name), and the
        # browser refuses a __Host- cookie that names a Domain.
        assert names == {"chatwidget_conversation"}

        # The visitor opens the chat on the chat's own host and asks something private.
        page.goto(f"{chat_origin}/chat")
        expect(page.locator("[data-chat-panel]")).to_have_attribute("data-ready", "true")
        page.locator("#chat-input").fill("/echo my card ends 4242")
        page.locator("#chat-input").press("Enter")
        expect(page.locator('[data-state="completed"]')).to_have_count(1, timeout=20_000)

        visitor_conversation = page.evaluate("() => window.chatPanel.client.conversationId")
        assert visitor_conversation and visitor_conversation != attacker["conversation_id"]
        # What the attacker can read: nothing of the visitor's.
        history = http.get(
            f"/api/v1/conversations/{attacker['conversation_id']}",
            headers={"Authorization": f"Bearer {attacker['token']}"},
        ).json()
        assert history["messages"] == []
        # The visitor's own, now host-only, cookie is the one a reload restores.
        names = {cookie["name"] for cookie in page.context.cookies(chat_origin)}
        assert "__Host-chatwidget_conversation" in names
        page.reload()
        expect(page.locator("[data-chat-panel]")).to_have_attribute("data-ready", "true")
        assert page.evaluate("() => window.chatPanel.client.conversationId") == visitor_conversation
