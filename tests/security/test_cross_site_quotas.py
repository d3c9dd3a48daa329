"""Rate limits that strangers cannot spend (docs/security.md, "Rate limits"):
requests that fail authorization count only against their own budget,
a conversation's quota only against requests carrying its token, another site's
browser requests are refused before anything is counted, and the counters' keys are
validated values only. Live servers, on the memory store and on Redis. The same
attack from a real Chromium page on another origin: tests/e2e/test_cross_site_quotas.py.
"""

from __future__ import annotations

import random
import secrets

import pytest

from ..helpers import ChatClient, assert_json_error, http_client

QUESTION = "/echo hi"


@pytest.fixture(params=["memory", "redis"])
def store_kind(request) -> str:
    return request.param


def client_address() -> str:
    """A fresh address per test: counters in Redis outlive a test's servers."""
    return f"10.{random.randrange(256)}.{random.randrange(256)}.{random.randrange(1, 255)}"


def stranger_id() -> str:
    return "c_" + secrets.token_hex(8)


@pytest.fixture
def limited(live_server_factory):
    """A server that trusts one proxy hop (a test picks its client addresses), no limit
    unless the test sets it."""

    def start(**limits):
        no_limits = dict.fromkeys(
            (
                "RATE_LIMIT_CLIENT",
                "RATE_LIMIT_NEW_CONVERSATIONS",
                "RATE_LIMIT_MESSAGES_CLIENT",
                "RATE_LIMIT_MESSAGES_CONVERSATION",
                "RATE_LIMIT_UNAUTHORIZED",
            ),
            "",
        )
        return live_server_factory(RATE_LIMITS=True, PROXY_HOPS=1, **{**no_limits, **limits})

    return start


def as_client(server, address: str) -> ChatClient:
    chat = ChatClient(server.url)
    chat.http.headers["X-Forwarded-For"] = address
    return chat


def test_requests_that_fail_authorization_spend_only_their_own_budget_never_the_clients_quotas(limited):
    server = limited(
        RATE_LIMIT_CLIENT="8/minute",
        RATE_LIMIT_MESSAGES_CLIENT="3/minute",
        RATE_LIMIT_MESSAGES_CONVERSATION="3/minute",
        RATE_LIMIT_UNAUTHORIZED="5/minute",
    )
    address = client_address()  # the visitor and the stranger share it (one NAT, one browser)
    visitor = as_client(server, address).new_conversation()
    body = {"request_id": "x", "text": QUESTION}
    with http_client(base_url=server.url, headers={"X-Forwarded-For": address}) as stranger:
        statuses = []
        for i in range(12):
            # Without a token, with a wrong one, on the visitor's conversation and on others.
            conversation = visitor.conversation_id if i % 2 else stranger_id()
            headers = {"Authorization": "Bearer wrong"} if i % 3 else {}
            response = stranger.post(f"/api/v1/conversations/{conversation}/messages", json=body, headers=headers)
            statuses.append(response.status_code)
        assert statuses == [404] * 5 + [429] * 7
        assert assert_json_error(response, 429, "rate_limited")["error"]["details"] == {
            "limit": "unauthorized",
            "allowed": "5 per 1 minute",
        }
        assert 1 <= int(response.headers["Retry-After"]) <= 60
        # Malformed ids and unknown paths are the same budget, not the client's.
        assert stranger.get("/api/v1/conversations/not-an-id").status_code == 429
        assert stranger.get("/api/v1/nothing-here").status_code == 429
    # The visitor, at the same address, still has every quota whole: 3 messages, and the
    # client's 8 requests (1 create + 3 sends + history + 3 more) all pass.
    for i in range(3):
        assert visitor.send(QUESTION, f"r{i}").kinds[-1] == "message.completed"
    for _ in range(4):
        assert visitor.history().status_code == 200
    over = visitor.history()
    assert assert_json_error(over, 429, "rate_limited")["error"]["details"]["limit"] == "client"
    visitor.close()


def test_a_conversations_quota_counts_only_requests_that_carry_its_token(limited):
    server = limited(RATE_LIMIT_MESSAGES_CONVERSATION="2/minute")
    visitor = as_client(server, client_address()).new_conversation()
    body = {"request_id": "x", "text": QUESTION}
    # Someone who knows the conversation id, from many addresses, without its token.
    for _ in range(10):
        with http_client(base_url=server.url, headers={"X-Forwarded-For": client_address()}) as stranger:
            for headers in ({}, {"Authorization": "Bearer " + secrets.token_urlsafe(32)}):
                response = stranger.post(visitor.messages_url(), json=body, headers=headers)
                assert_json_error(response, 404, "not_found")
    assert visitor.send(QUESTION, "r0").kinds[-1] == "message.completed"
    assert visitor.send(QUESTION, "r1").kinds[-1] == "message.completed"
    # The quota itself still holds for the token's holder.
    refused = visitor.http.post(
        visitor.messages_url(), json={"request_id": "r2", "text": QUESTION}, headers=visitor.auth
    )
    assert assert_json_error(refused, 429, "rate_limited")["error"]["details"]["limit"] == "messages_conversation"
    visitor.close()


def test_another_sites_browser_requests_are_refused_with_403_before_any_counting(limited):
    server = limited(
        RATE_LIMIT_NEW_CONVERSATIONS="2/hour",
        RATE_LIMIT_UNAUTHORIZED="2/hour",
        RATE_LIMIT_CLIENT="20/minute",
        API_ORIGINS="https://partner.example",
    )
    address = client_address()
    visitor = as_client(server, address).new_conversation()  # 1 of the 2 new conversations
    with http_client(base_url=server.url, headers={"X-Forwarded-For": address}) as http:
        for origin in ("https://evil.example", "http://127.0.0.1:1", "null", "https://partner.example.evil.example"):
            for _ in range(5):
                created = http.post("/api/v1/conversations", headers={"Origin": origin})
                body = assert_json_error(created, 403, "origin_not_allowed")
                sent = http.post(
                    visitor.messages_url(), json={"request_id": "r", "text": QUESTION}, headers={"Origin": origin}
                )
                assert_json_error(sent, 403, "origin_not_allowed")
        assert "API_ORIGINS" in body["error"]["message"]
        # Nothing was counted: neither the new conversations, nor the refused budget.
        assert http.post("/api/v1/conversations", headers={"Origin": "https://partner.example"}).status_code == 201
        assert http.get(f"/api/v1/conversations/{stranger_id()}").status_code == 404
        # The server's own pages (its origin) and clients that send no Origin
        # (server-to-server) are unaffected.
        history = http.get(
            f"/api/v1/conversations/{visitor.conversation_id}", headers={**visitor.auth, "Origin": server.url}
        )
        assert history.status_code == 200
    assert visitor.send(QUESTION, "r0", headers={"Origin": server.url}).kinds[-1] == "message.completed"
    assert visitor.send(QUESTION, "r1").kinds[-1] == "message.completed"
    visitor.close()


def _limit_keys(server, redis_server) -> list[str]:
    if server.app.config["WIDGET_SERVER"]["STORE"] == "memory":
        return list(server.app.extensions["widget_server.rate_limits"].storage.events)
    import redis

    with redis.Redis.from_url(redis_server.url) as client:
        return [key.decode() for key in client.scan_iter(match="cw:rl*")]


def test_rate_limit_keys_are_validated_ids_and_addresses_never_raw_request_text(limited, request, store_kind):
    redis_server = request.getfixturevalue("redis_server") if store_kind == "redis" else None
    server = limited(
        RATE_LIMIT_CLIENT="100/day", RATE_LIMIT_MESSAGES_CONVERSATION="100/day", RATE_LIMIT_UNAUTHORIZED="100/day"
    )
    strangers = [stranger_id() for _ in range(3)]
    junk_address = "not-an-address-" + secrets.token_hex(4)
    with http_client(base_url=server.url, headers={"X-Forwarded-For": junk_address}) as http:
        for conversation in strangers:
            http.post(f"/api/v1/conversations/{conversation}/messages", json={"request_id": "r", "text": QUESTION})
            http.get(f"/api/v1/conversations/{conversation}", headers={"Authorization": "Bearer wrong"})
        http.get("/api/v1/conversations/" + "x" * 300 + "/messages")
    address = client_address()
    visitor = as_client(server, address).new_conversation()
    assert visitor.send(QUESTION, "r0").kinds[-1] == "message.completed"
    keys = _limit_keys(server, redis_server)
    assert keys, "nothing was counted"
    for key in keys:
        assert junk_address not in key and "x" * 300 not in key
        assert not any(conversation in key for conversation in strangers), key
    # What is counted is keyed by the parsed address and the authorized conversation.
    assert any(visitor.conversation_id in key for key in keys)
    assert any(f"/{address}/" in key for key in keys)
    assert any("/unparsable/" in key for key in keys)
    visitor.close()
