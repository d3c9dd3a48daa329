"""A known visitor's data as a whole over HTTP (docs/privacy.md; docs/protocol.md, "Your data"):
`GET /api/v1/me/export` answers exactly the caller's subject's records as JSON Lines, and
`DELETE /api/v1/me` erases them, leaving nothing of the subject anywhere in the store (every
Redis key, every map of the memory stores, the attachments' folder) while another subject's and
an anonymous visitor's data stay whole; one subject's token never reaches another's data. On a
Redis store every key a realistic conversation leaves expires within the retention that applies
to it (Redis's clock cannot be moved: its TTLs are read; tests/test_retention.py moves the memory
store's). Named tests/test_api_*.py: memory, a real redis-server, a real Redis Cluster, mounted."""

from __future__ import annotations

import json
from typing import Any

import pytest

from .helpers import HTTP
from .privacy_support import (
    PRIVACY_CONFIG,
    bearer,
    realistic_conversation,
    redis_client_for,
    subject_digest,
    token_for,
    traces,
)

RETENTION = 7200
IDENTIFIED_RETENTION = 30 * 86400


@pytest.fixture
def server(live_server_factory, shared_store):
    # shared_store empties the worker's Redis first: an export or an erase takes every
    # conversation of its subject in the store, another module's for the same subject included.
    return live_server_factory(**PRIVACY_CONFIG, RETENTION="2h", IDENTIFIED_RETENTION="30d")


def export_of(server: Any, token: str) -> list[dict[str, Any]]:
    response = HTTP.get(f"{server.url}/api/v1/me/export", headers=bearer(token), timeout=30)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/x-ndjson")
    assert response.headers["cache-control"] == "no-store"
    return [json.loads(line) for line in response.text.splitlines()]


def test_the_export_is_exactly_the_subjects_data(server):
    ada_token, bob_token = token_for("ada", name="Ada", email="ada@example.com"), token_for("bob")
    ada = [realistic_conversation(server, ada_token, tag=f"ada{i}") for i in range(2)]
    bob = realistic_conversation(server, bob_token, tag="bob")
    anonymous = realistic_conversation(server, None, tag="anon")

    records = export_of(server, ada_token)
    kinds = [record["kind"] for record in records]
    assert kinds.count("conversation") == 2
    assert kinds.count("message") == 12  # three questions and three answers each
    assert kinds.count("rating") == 2
    assert kinds.count("attachment") == 2
    assert kinds.count("handoff_message") == 4  # Ana's and the visitor's, each
    assert kinds.count("left_message") == 2
    assert {record["conversation_id"] for record in records} == {made.conversation_id for made in ada}
    conversation = next(record for record in records if record["kind"] == "conversation")
    assert (conversation["subject"], conversation["name"], conversation["email"]) == ("ada", "Ada", "ada@example.com")
    rating = next(record for record in records if record["kind"] == "rating")
    assert (rating["rating"], rating["comment"]) == ("up", "Spot on")
    texts = {record.get("text") for record in records}
    assert {"Which arpeggio fits Am F C G?", "Hello, Ana here", "Thanks Ana", "Call me back"} <= texts
    # Nothing of anyone else: no id of Bob's or the anonymous visitor's appears anywhere.
    whole = json.dumps(records)
    for other in (bob, anonymous):
        assert not any(name in whole for name in other.names)
    assert len(export_of(server, bob_token)) == len(records) // 2


def test_erasing_leaves_nothing_of_the_subject_and_keeps_the_others(server, store_kind):
    ada_token, bob_token = token_for("ada-erase"), token_for("bob-erase")
    ada = [realistic_conversation(server, ada_token, tag=f"era{i}") for i in range(2)]
    bob = realistic_conversation(server, bob_token, tag="erb")
    anonymous = realistic_conversation(server, None, tag="ern")
    ada_names = {name for made in ada for name in made.names} | {subject_digest("ada-erase")}
    assert traces(server, store_kind, ada_names)

    response = HTTP.delete(f"{server.url}/api/v1/me", headers=bearer(ada_token), timeout=30)
    assert response.status_code == 204, response.text
    assert traces(server, store_kind, ada_names) == []
    assert export_of(server, ada_token) == []
    for made in ada:  # the conversation's own token opens nothing any more
        gone = HTTP.get(
            f"{server.url}/api/v1/conversations/{made.conversation_id}", headers=bearer(made.token), timeout=30
        )
        assert gone.status_code == 404
    # Bob's and the anonymous visitor's data are whole.
    assert len(export_of(server, bob_token)) == 12  # one realistic conversation
    for made in (bob, anonymous):
        history = HTTP.get(
            f"{server.url}/api/v1/conversations/{made.conversation_id}", headers=bearer(made.token), timeout=30
        )
        # Three questions, their answers, and the two hand-off messages in place.
        assert history.status_code == 200 and len(history.json()["messages"]) == 8
        assert traces(server, store_kind, {made.conversation_id})
        download = HTTP.get(
            f"{server.url}/api/v1/conversations/{made.conversation_id}/attachments/{made.attachment_ids[0]}",
            headers=bearer(made.token),
            timeout=30,
        )
        assert download.status_code == 200


def test_one_subjects_token_never_reaches_anothers_data(server):
    ada_token, bob_token = token_for("ada-idor"), token_for("bob-idor")
    ada = realistic_conversation(server, ada_token, tag="ida")
    mallory = token_for("mallory")
    # Mallory's export and erase are of Mallory's (empty) data: Ada's is untouched.
    assert export_of(server, mallory) == []
    assert HTTP.delete(f"{server.url}/api/v1/me", headers=bearer(mallory), timeout=30).status_code == 204
    records = export_of(server, ada_token)
    assert {record["conversation_id"] for record in records} == {ada.conversation_id}
    assert export_of(server, bob_token) == []
    # A conversation's own token is no identity token: refused, nothing exported or erased.
    for method in ("GET", "DELETE"):
        path = "/api/v1/me/export" if method == "GET" else "/api/v1/me"
        refused = HTTP.request(method, f"{server.url}{path}", headers=bearer(ada.token), timeout=30)
        assert refused.status_code == 401 and refused.json()["error"]["code"] == "identity_invalid"
    assert len(export_of(server, ada_token)) == len(records)


def test_every_key_of_a_conversation_expires_within_its_retention(server, store_kind):
    if store_kind == "memory":
        pytest.skip("the memory store's retention runs on a clock the test moves: tests/test_retention.py")
    identified = realistic_conversation(server, token_for("ada-ttl"), tag="ttli")
    anonymous = realistic_conversation(server, None, tag="ttla")
    client = redis_client_for(server)
    try:
        for made, retention in ((identified, IDENTIFIED_RETENTION), (anonymous, RETENTION)):
            names = made.names | ({subject_digest("ada-ttl")} if made is identified else set())
            keys = [key for key in traces(server, store_kind, names) if " member " not in key]
            suffixes = {key.rsplit(made.conversation_id, 1)[-1] for key in keys if made.conversation_id in key}
            # The record, its exchanges, requests, feedback, attachments (two keys), its hand-off
            # record and events: all there, then each with its TTL.
            assert {"", ":exchanges", ":requests", ":feedback", ":attachments", ":attachment_bytes"} <= suffixes
            assert {":handoff", ":handoff:events"} <= suffixes
            assert any(made.left_message_ids[0] in key for key in keys)
            assert any(made.message_ids[0] in key for key in keys)
            assert any(made.action_ids[0] in key for key in keys)
            for key in keys:
                ttl = client.pttl(key)
                assert 0 < ttl <= retention * 1000, f"{key}: PTTL {ttl}, retention {retention} s"
            # The long retention is the one that applies: a known visitor's keys outlive a day.
            if made is identified:
                assert min(client.pttl(key) for key in keys) > RETENTION * 1000
    finally:
        client.close()
