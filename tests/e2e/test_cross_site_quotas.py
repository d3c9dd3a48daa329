"""Another site the visitor browses cannot lock them out of the chat (docs/security.md,
"Rate limits"), shown in real Chromium: a page on another origin
fires token-less cross-site POSTs at the chat server, as any page could, to create
conversations and to send messages into a conversation whose id it knows. They are
refused (403 `origin_not_allowed`) before anything is counted, so the visitor's widget,
on that same page and from the same address, still starts its conversation and gets its
answers. The HTTP-level cases: tests/security/test_cross_site_quotas.py."""

from __future__ import annotations

import pytest

from ..helpers import HTTP, http_client

pytestmark = pytest.mark.e2e

ATTACK = """async ([base, conversation]) => {
    const shots = [];
    for (let i = 0; i < 10; i++) {
        shots.push(fetch(`${base}/api/v1/conversations`, {method: 'POST', mode: 'no-cors'}));
        shots.push(fetch(`${base}/api/v1/conversations/${conversation}/messages`, {
            method: 'POST', mode: 'no-cors', headers: {'Content-Type': 'text/plain'},
            body: JSON.stringify({request_id: `x${i}`, text: 'spam'}),
        }));
    }
    const answers = await Promise.allSettled(shots);
    return answers.filter((a) => a.status === 'fulfilled').length;
}"""


@pytest.mark.only_browser("chromium")
def test_another_sites_page_cannot_spend_the_visitors_quotas(embed, chat_server_factory, page, host_site):
    server = chat_server_factory(
        RATE_LIMITS=True,
        RATE_LIMIT_CLIENT="",
        RATE_LIMIT_NEW_CONVERSATIONS="2/hour",
        RATE_LIMIT_MESSAGES_CLIENT="3/minute",
        RATE_LIMIT_MESSAGES_CONVERSATION="3/minute",
        RATE_LIMIT_UNAUTHORIZED="",
    )
    # The visitor's own conversation from another client (1 of the 2 new conversations);
    # the attacking page knows its id.
    visitor = HTTP.post(server.url + "/api/v1/conversations").json()
    widget = embed(server)
    assert page.url.startswith(host_site.origin) and not server.url.startswith(host_site.origin)
    # What the server answered, as the browser's network log saw it (the page itself
    # only gets opaque responses).
    answered: list[int] = []
    page.on("response", lambda response: answered.append(response.status) if "/api/v1/" in response.url else None)
    assert page.evaluate(ATTACK, [server.url, visitor["conversation_id"]]) == 20
    page.wait_for_timeout(300)
    assert answered == [403] * 20
    # The widget on the page starts its conversation (the 2nd) and gets answers.
    widget.open()
    for question in ("/echo one", "/echo two"):
        widget.send(question)
        assert widget.wait_until_complete() == "completed"
    # The visitor's conversation still takes messages (the address's 3rd this minute).
    auth = {"Authorization": f"Bearer {visitor['token']}"}
    with http_client(base_url=server.url, headers=auth) as http:
        sent = http.post(
            f"/api/v1/conversations/{visitor['conversation_id']}/messages",
            json={"request_id": "r0", "text": "/echo hi"},
        )
        assert sent.status_code == 200 and "message.completed" in sent.text
