"""The panel's conversation cookie cannot be planted (docs/security.md, "Controls").

A `__Host-` cookie is one that only this host set, Secure, Path=/ and without Domain
(RFC 6265bis §4.1.3.2), so a page on a sibling subdomain cannot fixate the visitor on a
conversation it can read. The panel page adopts a cookie only if its token verifies for
its conversation; the old unprefixed name, which any sibling could set with
`Domain=`, is never read. The browser side of it: tests/e2e/test_cookie_fixation.py.
"""

from __future__ import annotations

from widget_server.transport import CONVERSATION_COOKIE

from .helpers import panel_config_of

LEGACY_COOKIE = "chatwidget_conversation"


def panel_conversation(client) -> dict | None:
    conversation: dict | None = panel_config_of(client.get("/panel?lang=en").get_data(as_text=True))["conversation"]
    return conversation


def start_conversation(client) -> tuple[dict, str]:
    response = client.post("/api/v1/conversations")
    assert response.status_code == 201
    return response.get_json(), response.headers["Set-Cookie"]


def test_the_cookie_is_host_prefixed_secure_and_bound_to_the_host(client):
    conversation, header = start_conversation(client)
    name, _, rest = header.partition("=")
    assert name == "__Host-chatwidget_conversation" == CONVERSATION_COOKIE
    value, *attributes = [part.strip() for part in rest.split(";")]
    assert value == f"{conversation['conversation_id']}.{conversation['token']}"
    lowered = {attribute.split("=")[0].lower(): attribute for attribute in attributes}
    assert {"secure", "httponly", "partitioned", "path", "samesite"} <= set(lowered)
    assert lowered["path"] == "Path=/"
    assert "domain" not in lowered, "a __Host- cookie must not name a Domain (browsers refuse it)"


def test_the_panel_adopts_its_own_verified_cookie(client):
    conversation, _ = start_conversation(client)  # the test client keeps the cookie
    assert panel_conversation(client) == conversation


def test_the_old_unprefixed_cookie_is_never_read(client):
    # The cookie a sibling subdomain could plant with Domain=: a real conversation, a valid
    # token, and still not adopted.
    planted, _ = start_conversation(client)
    client.delete_cookie(CONVERSATION_COOKIE)
    client.set_cookie(LEGACY_COOKIE, f"{planted['conversation_id']}.{planted['token']}")
    assert panel_conversation(client) is None


def test_a_cookie_whose_token_does_not_verify_is_ignored(client):
    mine, _ = start_conversation(client)
    other, _ = start_conversation(client)
    for value in (
        f"{mine['conversation_id']}.{other['token']}",  # another conversation's token
        f"{mine['conversation_id']}.not-the-token",
        f"c_doesnotexist0000.{mine['token']}",
        "no-dot-at-all",
        "",
    ):
        client.set_cookie(CONVERSATION_COOKIE, value)
        assert panel_conversation(client) is None, value
