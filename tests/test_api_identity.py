"""Known visitors over HTTP (docs/protocol.md, "Known visitors"; docs/security.md, "Known
visitors"): a conversation started with an identity token belongs to its subject, who lists it
(`GET /api/v1/me/conversations`) and reads, continues and deletes it from another device with
the same token; another subject's token, and any identity token on an anonymous conversation,
gets the 404 a wrong token gets, on every conversation route. Named tests/test_api_*.py, so it
runs on the memory store, a real redis-server, a real Redis Cluster and mounted.
"""

from __future__ import annotations

import re
import time
from typing import Any

import pytest

from widget_server.errors import CONVERSATION_NOT_FOUND
from widget_server.identity.service import LIST_MAX, TITLE_MAX_CHARS
from widget_server.protocol import ACTION_PREFIX, ATTACHMENT_PREFIX, new_id
from widget_server.testing import IDENTITY_TEST_SECRET, mint_identity_token
from widget_server.wire.routes import ROUTES

from .helpers import REPO_ROOT, ChatClient, assert_json_error, http_client

SECRET = IDENTITY_TEST_SECRET


def token_for(subject: str, **options: Any) -> str:
    return mint_identity_token(subject, secret=SECRET, **options)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def server(live_server_factory, shared_store):
    # shared_store empties the worker's Redis first: a subject's list is the store's, so another
    # module's conversations for the same subject ("bob") would be listed here too.
    return live_server_factory(IDENTITY_SECRET=SECRET)


class Device:
    """One of a visitor's devices: its own HTTP client, holding only the identity token."""

    def __init__(self, base_url: str, token: str) -> None:
        self.http = http_client(base_url=base_url, timeout=30)
        self.token = token

    def close(self) -> None:
        self.http.close()

    def start(self) -> ChatClient:
        """A new conversation started with the identity token, as a ChatClient holding its own token."""
        response = self.http.post("/api/v1/conversations", json={"identity_token": self.token})
        assert response.status_code == 201, response.text
        chat = ChatClient(str(self.http.base_url))
        chat.conversation_id, chat.token = response.json()["conversation_id"], response.json()["token"]
        return chat

    def listed(self) -> list[dict[str, Any]]:
        response = self.http.get("/api/v1/me/conversations", headers=bearer(self.token))
        assert response.status_code == 200, response.text
        assert response.headers["cache-control"] == "no-store"
        conversations: list[dict[str, Any]] = response.json()["conversations"]
        return conversations

    def as_chat(self, conversation_id: str) -> ChatClient:
        """A ChatClient on `conversation_id` that authorises with the identity token."""
        chat = ChatClient(str(self.http.base_url))
        chat.conversation_id, chat.token = conversation_id, self.token
        return chat


def test_one_subject_on_two_devices_sees_one_list_and_one_history(server):
    phone, laptop = Device(server.url, token_for("user-7", name="Ada")), Device(server.url, token_for("user-7"))
    try:
        first = phone.start()
        first_answer = first.send("Which arpeggio fits Am F C G?", "phone-req-0001")
        assert first_answer.kinds[-1] == "message.completed"
        second = phone.start()
        long_question = "Please explain " + "the circle of fifths " * 10
        assert second.send(long_question, "phone-req-0002").kinds[-1] == "message.completed"
        empty = phone.start()

        listed = laptop.listed()
        # Most recently active first: created last, then the one whose question came later.
        assert [entry["conversation_id"] for entry in listed] == [
            empty.conversation_id,
            second.conversation_id,
            first.conversation_id,
        ]
        by_id = {entry["conversation_id"]: entry for entry in listed}
        assert set(by_id) == {first.conversation_id, second.conversation_id, empty.conversation_id}
        assert by_id[first.conversation_id]["title"] == "Which arpeggio fits Am F C G?"
        assert by_id[first.conversation_id]["state"] == "completed"
        title = by_id[second.conversation_id]["title"]
        assert len(title) <= TITLE_MAX_CHARS and title.endswith("…") and title.startswith("Please explain the circle")
        assert by_id[empty.conversation_id] == {**by_id[empty.conversation_id], "title": "", "state": "empty"}
        times = [entry["last_activity"] for entry in listed]
        assert times == sorted(times, reverse=True)

        # The laptop resumes the first conversation with the identity token alone.
        resumed = laptop.as_chat(first.conversation_id)
        assert resumed.history().json() == first.history().json()
        follow_up = resumed.send("And in G major?", "laptop-req-0001")
        assert follow_up.kinds[-1] == "message.completed"
        assert laptop.listed()[0]["conversation_id"] == first.conversation_id  # active last
        # Both devices, and the conversation's own token, see one history.
        assert [m["text"] for m in first.history().json()["messages"]][-2] == "And in G major?"
        assert first.history().json() == resumed.history().json()
        # The phone's stream of the laptop's answer, by the identity token too.
        replay = resumed.resume(follow_up.message_id, None)
        assert replay.kinds[-1] == "message.completed" and replay.text == follow_up.text
    finally:
        phone.close()
        laptop.close()


def test_deleting_a_conversation_takes_it_off_its_subjects_list(server):
    device = Device(server.url, token_for("user-del"))
    try:
        kept, gone = device.start(), device.start()
        response = device.http.delete(f"/api/v1/conversations/{gone.conversation_id}", headers=bearer(device.token))
        assert response.status_code == 204
        assert [entry["conversation_id"] for entry in device.listed()] == [kept.conversation_id]
        # Deleted with its own token: off the list as well.
        assert kept.http.delete(f"/api/v1/conversations/{kept.conversation_id}", headers=kept.auth).status_code == 204
        assert device.listed() == []
        assert_json_error(gone.history(), 404, "not_found")
    finally:
        device.close()


def test_the_list_is_bounded_newest_first(server):
    device = Device(server.url, token_for("user-many"))
    try:
        started = [device.start().conversation_id for _ in range(LIST_MAX + 3)]
        listed = device.listed()
        assert len(listed) == LIST_MAX
        assert {entry["conversation_id"] for entry in listed} <= set(started)
        assert started[0] not in {entry["conversation_id"] for entry in listed}  # the oldest left out
    finally:
        device.close()


def test_anonymous_conversations_and_conversation_tokens_work_as_before(server):
    http = http_client(base_url=server.url, timeout=30)
    try:
        for request in (
            lambda: http.post("/api/v1/conversations"),  # what the panel sends: no body at all
            lambda: http.post("/api/v1/conversations", json={}),
            lambda: http.post("/api/v1/conversations", content=b"", headers={"Content-Type": "application/json"}),
        ):
            response = request()
            assert response.status_code == 201, response.text
            assert set(response.json()) == {"conversation_id", "token"}
        chat = ChatClient(server.url).new_conversation()
        assert chat.send("Which arpeggio fits Am F C G?", "anon-req-0001").kinds[-1] == "message.completed"
        assert len(chat.history().json()["messages"]) == 2
        # An identified conversation's own token keeps working beside the identity token.
        device = Device(server.url, token_for("user-both"))
        mine = device.start()
        assert mine.send("Hello", "both-req-0001").kinds[-1] == "message.completed"
        assert mine.history().status_code == 200
        device.close()
        chat.close()
    finally:
        http.close()


def _route_request(route: Any, ids: dict[str, str]) -> dict[str, Any]:
    """A request for `route` with a plausible body, so that on the owner's conversation it does
    what it says (or is refused for its own reasons, never the conversation's 404)."""
    path = route.path.format(**ids)
    request: dict[str, Any] = {"method": route.method.upper(), "url": path}
    name = getattr(route.body, "__name__", route.body)
    bodies = {
        "NewMessage": {"request_id": "idor-send-0001", "text": "Hello"},
        "ClientReport": {"duplicates": 0, "dropped": 0},
        "ConfirmAction": {},
        "PutFeedback": {"rating": "up"},
        "RegenerateMessage": {"request_id": "idor-regen-0001"},
        "EditMessage": {"request_id": "idor-edit-0001", "text": "Hello again"},
        "HandoffRequest": {"request_id": "idor-handoff-0001"},
        "HandoffMessage": {"request_id": "idor-handoff-msg-0001", "text": "Hi"},
        "LeftMessage": {"request_id": "idor-left-0001", "text": "Call me"},
    }
    if name == "upload":
        request["files"] = {"file": ("note.txt", b"note\n")}
    elif name in bodies:
        request["json"] = bodies[name]
    return request


CONVERSATION_ROUTES = sorted(
    (route for route in ROUTES if "{conversation_id}" in route.path),
    # Deleting the conversation goes last, so every other route reaches it alive.
    key=lambda route: route.method == "delete" and route.path.endswith("{conversation_id}"),
)


def test_an_identity_token_opens_only_its_subjects_conversations_on_every_route(server):
    alice, bob = Device(server.url, token_for("alice")), Device(server.url, token_for("bob"))
    anonymous = ChatClient(server.url).new_conversation()
    try:
        owned = alice.start()
        answer = owned.send("/scenario action", "alice-req-0001")
        assert answer.kinds[-1] == "message.completed"
        anonymous_answer = anonymous.send("Hello", "anon-req-0001")
        before = owned.history().json()
        targets = [
            (owned.conversation_id, answer.message_id, bob.token),  # another subject's conversation
            (anonymous.conversation_id, anonymous_answer.message_id, alice.token),  # an anonymous one
        ]
        for conversation_id, message_id, token in targets:
            ids = {
                "conversation_id": conversation_id,
                "message_id": message_id,
                "action_id": new_id(ACTION_PREFIX, conversation_id),
                "attachment_id": new_id(ATTACHMENT_PREFIX, conversation_id),
            }
            for route in CONVERSATION_ROUTES:
                request = _route_request(route, ids)
                response = bob.http.request(**request, headers=bearer(token))
                body = assert_json_error(response, 404, "not_found")
                assert body["error"]["message"] == CONVERSATION_NOT_FOUND, (route.path, body)
                if route.query_token:  # the query form takes no identity token, even the owner's
                    own = alice.token if conversation_id == owned.conversation_id else token
                    response = bob.http.request(request["method"], request["url"], params={"token": own})
                    assert_json_error(response, 404, "not_found")
        # Nothing of Alice's conversation changed, and Bob's list stays empty.
        assert owned.history().json() == before
        assert bob.listed() == []
        assert [entry["conversation_id"] for entry in alice.listed()] == [owned.conversation_id]

        # The owner's identity token passes every one of those routes' authorisation.
        ids = {
            "conversation_id": owned.conversation_id,
            "message_id": answer.message_id,
            "action_id": answer.payloads[-1]["actions"][0]["action_id"],
            "attachment_id": new_id(ATTACHMENT_PREFIX, owned.conversation_id),
        }
        for route in CONVERSATION_ROUTES:
            request = _route_request(route, ids)
            headers = bearer(alice.token)
            if route.path.endswith("/confirm"):
                headers["Idempotency-Key"] = "idor-confirm-key-0001"
            response = alice.http.request(**request, headers=headers, timeout=30)
            if response.status_code == 404:
                assert response.json()["error"]["message"] != CONVERSATION_NOT_FOUND, route.path
            else:
                assert response.status_code < 500, (route.path, response.status_code, response.text)
        assert alice.listed() == []  # the last route deleted it
    finally:
        alice.close()
        bob.close()
        anonymous.close()


def test_identity_required_refuses_anonymous_conversations(live_server_factory):
    server = live_server_factory(IDENTITY_SECRET=SECRET, IDENTITY_REQUIRED=True)
    http = http_client(base_url=server.url, timeout=30)
    try:
        body = assert_json_error(http.post("/api/v1/conversations"), 401, "identity_required")
        assert "signed-in" in body["error"]["message"]
        assert_json_error(http.post("/api/v1/conversations", json={}), 401, "identity_required")
        created = http.post("/api/v1/conversations", json={"identity_token": token_for("member")})
        assert created.status_code == 201
    finally:
        http.close()


@pytest.mark.parametrize(
    "body,status,code",
    [
        ({"identity_token": "not-a-jwt"}, 401, "identity_invalid"),
        ({"identity_token": 42}, 400, "invalid_body"),
        ({"identity_token": "x" * 9000}, 401, "identity_invalid"),
        ({"identity_token": "x", "extra": 1}, 400, "unknown_field"),
        ([], 400, "invalid_body"),
    ],
)
def test_a_bad_body_is_a_clear_json_error(server, body, status, code):
    with http_client(base_url=server.url, timeout=30) as http:
        assert_json_error(http.post("/api/v1/conversations", json=body), status, code)


def test_bad_identity_tokens_are_refused_with_what_is_wrong(server):
    now = int(time.time())
    cases = {
        "identity_expired": token_for("u", expires_in=-300),
        "identity_invalid": token_for("u", expires_in=10 * 3600),  # beyond IDENTITY_MAX_AGE (1 h)
    }
    forged = mint_identity_token("u", secret="another-secret-that-is-long-enough-0123")
    with http_client(base_url=server.url, timeout=30) as http:
        for code, token in cases.items():
            assert_json_error(http.post("/api/v1/conversations", json={"identity_token": token}), 401, code)
            assert_json_error(http.get("/api/v1/me/conversations", headers=bearer(token)), 401, code)
        error = assert_json_error(http.get("/api/v1/me/conversations", headers=bearer(forged)), 401, "identity_invalid")
        assert "signature" in error["error"]["message"] and SECRET not in error["error"]["message"]
        body = assert_json_error(http.get("/api/v1/me/conversations"), 401, "identity_invalid")
        assert "Authorization: Bearer" in body["error"]["message"]
        # A conversation's own token is no identity token.
        chat = ChatClient(server.url).new_conversation()
        assert_json_error(http.get("/api/v1/me/conversations", headers=chat.auth), 401, "identity_invalid")
        # On a conversation route, an identity token that does not verify is a 401 that names
        # no conversation (so says nothing of whether it exists).
        response = http.get(f"/api/v1/conversations/{chat.conversation_id}", headers=bearer(forged))
        assert_json_error(response, 401, "identity_invalid")
        chat.close()
        assert now  # (the tokens above are minted relative to now)


def test_without_an_identity_key_a_jwt_is_only_a_wrong_token(live_server_factory):
    server = live_server_factory()
    chat = ChatClient(server.url).new_conversation()
    try:
        response = chat.http.get(f"/api/v1/conversations/{chat.conversation_id}", headers=bearer(token_for("u")))
        assert_json_error(response, 404, "not_found")
        created = chat.http.post("/api/v1/conversations", json={"identity_token": token_for("u")})
        body = assert_json_error(created, 401, "identity_invalid")
        assert "no identity key is configured" in body["error"]["message"]
    finally:
        chat.close()


def test_the_plugins_example_in_docs_testing_runs(chat_server_factory, identity_token):
    """docs/testing.md, "Testing a site's known visitors": its block, read from the page and run
    with the plugin's own fixtures, as a site's test suite would."""
    page = (REPO_ROOT / "docs" / "testing.md").read_text(encoding="utf-8")
    section = page.split("## Testing a site's known visitors", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert block, "docs/testing.md's known-visitors section has no python block"
    namespace: dict[str, Any] = {}
    exec(compile(block.group(1), "docs/testing.md", "exec"), namespace)
    tests = [value for name, value in namespace.items() if name.startswith("test_")]
    assert len(tests) == 1
    tests[0](chat_server_factory, identity_token)
