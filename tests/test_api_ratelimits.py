"""Rate limits and quotas (widget_server/ratelimits.py), on the memory store
and on Redis (where every server sharing it enforces one limit)."""

from __future__ import annotations

import random

import pytest

from .helpers import ChatClient, assert_json_error, http_client

QUESTION = "/echo hi"


def client_address() -> str:
    """A fresh address per test: counters in Redis outlive a test's servers."""
    return f"10.{random.randrange(256)}.{random.randrange(256)}.{random.randrange(1, 255)}"


@pytest.fixture
def limited(live_server_factory):
    """A server that trusts one proxy hop, so a test picks its client address."""

    def start(**limits):
        config = {
            "RATE_LIMITS": True,
            "PROXY_HOPS": 1,
            "RATE_LIMIT_CLIENT": "",
            "RATE_LIMIT_NEW_CONVERSATIONS": "",
            "RATE_LIMIT_MESSAGES_CLIENT": "",
            "RATE_LIMIT_MESSAGES_CONVERSATION": "",
            **limits,
        }
        return live_server_factory(**config)

    return start


def as_client(server, address: str) -> ChatClient:
    chat = ChatClient(server.url)
    chat.http.headers["X-Forwarded-For"] = address
    return chat


def test_messages_per_conversation_is_a_quota_with_retry_after(limited):
    server = limited(RATE_LIMIT_MESSAGES_CONVERSATION="3/minute")
    chat = as_client(server, client_address()).new_conversation()
    for i in range(3):
        assert chat.send(QUESTION, f"r{i}").kinds[-1] == "message.completed"
    refused = chat.http.post(chat.messages_url(), json={"request_id": "r3", "text": QUESTION}, headers=chat.auth)
    body = assert_json_error(refused, 429, "rate_limited")
    assert body["error"]["details"] == {"limit": "messages_conversation", "allowed": "3 per 1 minute"}
    assert 1 <= int(refused.headers["Retry-After"]) <= 60
    assert "Wait" in body["error"]["message"]
    # Refused before anything was claimed: the history has three turns.
    assert len(chat.history().json()["messages"]) == 6
    # Another conversation of the same client has its own quota.
    other = as_client(server, chat.http.headers["X-Forwarded-For"]).new_conversation()
    assert other.send(QUESTION, "r0").kinds[-1] == "message.completed"
    chat.close()
    other.close()


def test_messages_per_client_count_across_conversations(limited):
    server = limited(RATE_LIMIT_MESSAGES_CLIENT="2/minute")
    address = client_address()
    first = as_client(server, address).new_conversation()
    second = as_client(server, address).new_conversation()
    assert first.send(QUESTION, "r0").status == 200
    assert second.send(QUESTION, "r0").status == 200
    refused = first.http.post(first.messages_url(), json={"request_id": "r1", "text": QUESTION}, headers=first.auth)
    assert assert_json_error(refused, 429, "rate_limited")["error"]["details"]["limit"] == "messages_client"
    # Another address is not affected.
    stranger = as_client(server, client_address()).new_conversation()
    assert stranger.send(QUESTION, "r0").status == 200
    for chat in (first, second, stranger):
        chat.close()


def test_new_conversations_and_all_requests_per_client(limited):
    server = limited(RATE_LIMIT_NEW_CONVERSATIONS="2/hour", RATE_LIMIT_CLIENT="5/minute")
    address = client_address()
    with http_client(base_url=server.url, headers={"X-Forwarded-For": address}) as http:
        assert http.post("/api/v1/conversations").status_code == 201
        created = http.post("/api/v1/conversations")
        assert created.status_code == 201
        refused = http.post("/api/v1/conversations")
        assert assert_json_error(refused, 429, "rate_limited")["error"]["details"]["limit"] == "new_conversations"
        # 3 requests so far count against the all-API limit of 5. (Requests that fail
        # authorization have their own budget, docs/security.md "Rate limits", so these are
        # authorized ones.)
        conversation = f"/api/v1/conversations/{created.json()['conversation_id']}"
        auth = {"Authorization": f"Bearer {created.json()['token']}"}
        assert http.get(conversation, headers=auth).status_code == 200
        assert http.get(conversation, headers=auth).status_code == 200
        over = http.get(conversation, headers=auth)
        assert assert_json_error(over, 429, "rate_limited")["error"]["details"]["limit"] == "client"
        # Pages, assets and health are never limited.
        assert http.get("/healthz").status_code == 200
        assert http.get("/widget.js").status_code == 200


def test_without_proxy_hops_the_forwarded_address_is_ignored(live_server_factory):
    server = live_server_factory(RATE_LIMITS=True, RATE_LIMIT_NEW_CONVERSATIONS="1/hour", RATE_LIMIT_CLIENT="")
    with http_client(base_url=server.url) as http:
        statuses = [
            http.post("/api/v1/conversations", headers={"X-Forwarded-For": client_address()}).status_code
            for _ in range(2)
        ]
    # Both came from 127.0.0.1, whatever the header claimed.
    assert statuses == [201, 429]


def test_limits_are_shared_by_servers_on_one_redis(limited, store_kind):
    if store_kind == "memory":
        pytest.skip("only a Redis store is shared between servers (memory limits are per process, by design)")
    a = limited(RATE_LIMIT_NEW_CONVERSATIONS="2/hour")
    b = limited(RATE_LIMIT_NEW_CONVERSATIONS="2/hour")
    address = client_address()
    statuses = []
    for server in (a, b, a):
        with http_client(base_url=server.url, headers={"X-Forwarded-For": address}) as http:
            statuses.append(http.post("/api/v1/conversations").status_code)
    assert statuses == [201, 201, 429]


def test_limit_settings_are_validated():
    from widget_server.settings import ConfigError, load_settings

    with pytest.raises(ConfigError, match="RATE_LIMIT_CLIENT"):
        load_settings({"RATE_LIMIT_CLIENT": "lots"}, environ={})
    assert (
        load_settings({"RATE_LIMIT_CLIENT": "5/second;100/hour"}, environ={})["RATE_LIMIT_CLIENT"]
        == "5/second;100/hour"
    )
