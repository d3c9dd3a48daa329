"""POST /api/v1/conversations with CONSENT_TEXT (docs/protocol.md, "Consent"): a creation
without the visitor's agreement to the current text is refused (403 `consent_required`) and
creates nothing; one with it records the text's SHA-256 and the moment, with the
conversation, in every store; without CONSENT_TEXT an empty request creates a conversation
exactly as before and records no consent. Named tests/test_api_*.py: every test runs on the
memory store, one redis-server and the Redis Cluster.
"""

from __future__ import annotations

import hashlib
import time

import httpx
import pytest

from widget_server.settings import ConfigError, load_settings
from widget_server.transport import CONVERSATION_COOKIE

from .helpers import assert_json_error, http_client, panel_config_of

CONSENT_TEXT = "We keep your messages for 30 days to answer you and to improve this help."
CONSENT_URL = "https://www.example.com/privacy"
DIGEST = hashlib.sha256(CONSENT_TEXT.encode("utf-8")).hexdigest()
CONVERSATIONS = "/api/v1/conversations"


@pytest.fixture
def consenting(live_server_factory):
    return live_server_factory(CONSENT_TEXT=CONSENT_TEXT, CONSENT_URL=CONSENT_URL)


def count_creations(server) -> list[str]:
    """Every conversation the server's store is asked to create from now on."""
    created: list[str] = []
    store = server.service.store
    original = store.create_conversation

    def create_conversation(conversation):
        created.append(conversation.conversation_id)
        return original(conversation)

    store.create_conversation = create_conversation
    return created


def create(server, body: dict | None = None) -> httpx.Response:
    with http_client(base_url=server.url) as http:
        return http.post(CONVERSATIONS, json=body) if body is not None else http.post(CONVERSATIONS)


@pytest.mark.parametrize(
    "body",
    [
        None,
        {},
        {"consent_sha256": None},
        {"consent_sha256": ""},
        {"consent_sha256": hashlib.sha256(b"other").hexdigest()},
    ],
    ids=["no body", "empty object", "null", "empty string", "another text"],
)
def test_without_the_agreement_to_this_text_nothing_is_created(consenting, body):
    created = count_creations(consenting)
    response = create(consenting, body)
    error = assert_json_error(response, 403, "consent_required")["error"]
    assert "consent_sha256" in error["message"]
    assert CONVERSATION_COOKIE not in response.headers.get("set-cookie", "")
    assert created == []
    # The same server creates one as soon as the agreement comes (the counter sees it).
    assert create(consenting, {"consent_sha256": DIGEST}).status_code == 201
    assert len(created) == 1


def test_a_malformed_agreement_is_refused_like_a_missing_one(consenting):
    assert_json_error(create(consenting, {"consent_sha256": DIGEST.upper()}), 403, "consent_required")
    assert_json_error(create(consenting, {"consent_sha256": 1}), 400, "invalid_body")
    assert_json_error(create(consenting, {"consent_sha256": DIGEST, "extra": 1}), 400, "unknown_field")


def test_the_agreement_is_recorded_with_the_conversation(consenting):
    before = time.time()
    response = create(consenting, {"consent_sha256": DIGEST})
    assert response.status_code == 201, response.text
    conversation_id = response.json()["conversation_id"]
    record = consenting.service.store.get_conversation(conversation_id)
    assert record is not None
    assert record.consent_sha256 == DIGEST
    assert before <= record.consented_at <= time.time()
    assert record.consented_at == record.created_at  # recorded by the server, at the creation
    # The conversation works as any other: its token opens it.
    token = response.json()["token"]
    with http_client(base_url=consenting.url) as http:
        history = http.get(f"{CONVERSATIONS}/{conversation_id}", headers={"Authorization": f"Bearer {token}"})
    assert history.status_code == 200 and history.json()["messages"] == []


def test_a_reloaded_panel_knows_its_conversation_agreed_and_asks_nothing(consenting):
    created = create(consenting, {"consent_sha256": DIGEST})
    cookie = f"{created.json()['conversation_id']}.{created.json()['token']}"
    with http_client(base_url=consenting.url) as http:
        fresh = http.get("/panel?lang=en")
        reloaded = http.get("/panel?lang=en", headers={"Cookie": f"{CONVERSATION_COOKIE}={cookie}"})
    fresh_config = panel_config_of(fresh.text)
    assert fresh_config["consent"] == {"text": CONSENT_TEXT, "url": CONSENT_URL, "sha256": DIGEST, "given": False}
    assert "data-chat-consent" in fresh.text and 'id="chat-consent"' in fresh.text
    assert "data-chat-consent" not in reloaded.text  # no new consent asked
    assert panel_config_of(reloaded.text)["consent"]["given"] is True


def test_without_consent_text_an_empty_request_creates_as_before_and_records_nothing(live_server):
    response = create(live_server)
    assert response.status_code == 201
    assert set(response.json()) == {"conversation_id", "token"}
    record = live_server.service.store.get_conversation(response.json()["conversation_id"])
    assert record is not None and record.consent_sha256 == "" and record.consented_at == 0.0
    # A body naming a consent is accepted and ignored: nothing was asked of the visitor.
    response = create(live_server, {"consent_sha256": DIGEST})
    assert response.status_code == 201
    record = live_server.service.store.get_conversation(response.json()["conversation_id"])
    assert record is not None and record.consent_sha256 == ""
    with http_client(base_url=live_server.url) as http:
        page = http.get("/panel?lang=en").text
    assert "data-chat-consent" not in page and panel_config_of(page)["consent"] is None


def test_consent_text_needs_its_privacy_notice():
    with pytest.raises(ConfigError, match="CONSENT_URL"):
        load_settings({"CONSENT_TEXT": CONSENT_TEXT}, environ={})
    with pytest.raises(ConfigError, match="CONSENT_URL"):
        load_settings({"CONSENT_TEXT": CONSENT_TEXT, "CONSENT_URL": "javascript:alert(1)"}, environ={})
    with pytest.raises(ConfigError, match="CONSENT_TEXT"):
        load_settings({"CONSENT_TEXT": "x" * 501, "CONSENT_URL": CONSENT_URL}, environ={})
    values = load_settings({"CONSENT_TEXT": f"  {CONSENT_TEXT}\n", "CONSENT_URL": CONSENT_URL}, environ={})
    assert values.chat.consent_text == CONSENT_TEXT and values.chat.consent_url == CONSENT_URL
