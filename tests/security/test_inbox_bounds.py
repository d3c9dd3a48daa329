"""The agents' inbox cannot be flooded (docs/security.md, "Rate limits" and "Memory";
docs/agents.md, "The inbox").

A left message is a record of its own with an entry in the inbox's index: leaving one never
rewrites the others, the console reads the inbox a page at a time, the index keeps at most
HANDOFF_INBOX_MAX and each entry CONVERSATION_TTL_SECONDS, and what it lets go is counted
(`expired`), never dropped in silence. A conversation holds at most HANDOFF_LEFT_MESSAGES_MAX
waiting for a reply, only the first of them mails the site's owner, and one client address
leaves at most RATE_LIMIT_LEFT_MESSAGES_CLIENT. On the memory store, one Redis and a Redis
Cluster.

Before, the inbox was one record rewritten whole by every left message and returned whole by
GET /agent/api/inbox (no `next_cursor`: the paging test fails), silently cut to its newest
1,000 (no `expired`), and every left message mailed the owner.
"""

from __future__ import annotations

import time
from contextlib import ExitStack
from typing import Any

import pytest

from widget_server.handoff.service import HandoffService
from widget_server.handoff.store import LEGACY_INBOX, Commit, inbox_score, left_key
from widget_server.services import SERVICES_KEY

from ..agent_support import SignedInAgent, agents_app


@pytest.fixture(params=["memory", "redis", "cluster"])
def store_kind(request) -> str:
    kind: str = request.param
    return kind


@pytest.fixture
def make_app(store_kind, tmp_path, store_config, shared_store, smtp):
    with ExitStack() as apps:

        def make(**config: Any) -> Any:
            smtp.inbox.mails.clear()
            return apps.enter_context(agents_app(tmp_path, **store_config, **smtp.settings(), **config))

        yield make


def handoff_of(app: Any) -> HandoffService:
    service: HandoffService = app.extensions[SERVICES_KEY].handoff
    return service


def new_conversation(client: Any) -> tuple[str, dict[str, str]]:
    created = client.post("/api/v1/conversations").get_json()
    return created["conversation_id"], {"Authorization": f"Bearer {created['token']}"}


def leave(client: Any, cid: str, headers: dict[str, str], text: str, request_id: str) -> Any:
    return client.post(
        f"/api/v1/conversations/{cid}/handoff/left-messages",
        json={"request_id": request_id, "text": text, "email": "visitor@example.org"},
        headers=headers,
    )


def leave_many(app: Any, count: int, per_conversation: int = 3) -> list[str]:
    """`count` left messages through the service, `per_conversation` a conversation; their ids,
    oldest first."""
    service = handoff_of(app)
    chat = app.extensions[SERVICES_KEY].chat
    ids: list[str] = []
    cid = ""
    for number in range(count):
        if number % per_conversation == 0:
            cid = chat.create_conversation()[0]
        ids.append(service.leave_message(cid, f"l{number}", None, f"message {number}")["left_message_id"])
    return ids


class Agent(SignedInAgent):
    def inbox(self, query: str = "") -> Any:
        return self.call("GET", f"/inbox{query}")

    def reply(self, left_id: str, text: str, request_id: str) -> Any:
        return self.call("POST", f"/inbox/{left_id}/reply", {"request_id": request_id, "text": text})


def test_the_inbox_is_read_a_page_at_a_time_and_each_left_message_is_its_own_record(make_app):
    app = make_app()
    left = leave_many(app, 120)
    agent = Agent(app)
    pages: list[list[str]] = []
    query = "?limit=50"
    while True:
        response = agent.inbox(query)
        assert response.status_code == 200
        body = response.get_json()
        pages.append([m["left_message_id"] for m in body["messages"]])
        assert body["unreplied"] == 120 and body["expired"] == 0
        if body["next_cursor"] is None:
            break
        query = f"?limit=50&cursor={body['next_cursor']}"
    assert [len(page) for page in pages] == [50, 50, 20]
    assert [i for page in pages for i in page] == left[::-1]  # each once, newest first
    # One record per left message, and no record holding them all.
    store = handoff_of(app).store
    assert store.load([LEGACY_INBOX])[LEGACY_INBOX][1] is None
    records = store.load([left_key(i) for i in left])
    assert all(records[left_key(i)][1]["left_message_id"] == i for i in left)
    assert agent.client.get("/agent/api/queue").get_json()["inbox_unreplied"] == 120


@pytest.mark.parametrize(
    "query,code",
    [
        ("?limit=0", "invalid_limit"),
        ("?limit=201", "invalid_limit"),
        ("?limit=x", "invalid_limit"),
        ("?cursor=abc", "invalid_cursor"),
        ("?cursor=" + "9" * 21, "invalid_cursor"),
        ("?page=2", "unknown_field"),
    ],
)
def test_a_bad_page_is_a_json_error(make_app, query, code):
    response = Agent(make_app()).inbox(query)
    assert response.status_code == 400 and response.get_json()["error"]["code"] == code


def test_past_its_bound_the_inbox_lets_the_oldest_go_and_counts_them(make_app):
    app = make_app(HANDOFF_INBOX_MAX=10)
    left = leave_many(app, 15)
    body = Agent(app).inbox().get_json()
    assert [m["left_message_id"] for m in body["messages"]] == left[:4:-1]
    assert body["expired"] == 5 and body["unreplied"] == 10 and body["next_cursor"] is None
    store = handoff_of(app).store
    records = store.load([left_key(i) for i in left[:5]])
    assert all(value is None for _, value in records.values())  # gone with their index entries


def test_left_messages_older_than_the_ttl_are_let_go_and_counted(make_app):
    app = make_app()
    store = handoff_of(app).store
    ttl = app.config["WIDGET_SERVER"]["RETENTION"]
    old, new = "l_old", "l_new"
    entries = {i: {"left_message_id": i, "conversation_id": "c_x", "text": i, "replied": False} for i in (old, new)}
    assert store.commit(
        Commit(
            writes={left_key(i): entry for i, entry in entries.items()},
            inbox_add=[(old, inbox_score(time.time() - ttl - 5)), (new, inbox_score(time.time()))],
        )
    )
    page = store.inbox_page(10, None)
    assert [i for _, i in page.entries] == [new] and page.expired == 1 and page.unreplied == 1
    assert store.load([left_key(old)])[left_key(old)][1] is None


def test_a_conversation_holds_few_left_messages_waiting_and_mails_the_owner_once(make_app, smtp):
    app = make_app(HANDOFF_LEFT_MESSAGES_MAX=3)
    client = app.test_client()
    cid, headers = new_conversation(client)
    left = [leave(client, cid, headers, f"note {n}", f"l{n}") for n in range(3)]
    assert [response.status_code for response in left] == [201, 201, 201]
    refused = leave(client, cid, headers, "note 4", "l4")
    assert refused.status_code == 409
    error = refused.get_json()["error"]
    assert error["code"] == "too_many_left_messages" and error["details"] == {"waiting": 3, "limit": 3}
    app.extensions[SERVICES_KEY].mailer.flush(10)
    assert len(smtp.inbox.mails) == 1  # the first one mailed the owner; the inbox shows the rest
    agent = Agent(app)
    ids = [response.get_json()["left_message_id"] for response in left]
    assert agent.reply(ids[0], "Looking into it.", "r0").status_code == 201
    assert leave(client, cid, headers, "note 4", "l4").status_code == 201  # a place was freed
    assert leave(client, cid, headers, "note 5", "l5").status_code == 409
    # Once every one is answered, the next left message mails the owner again.
    body = agent.inbox().get_json()
    for number, message in enumerate(m for m in body["messages"] if not m["replied"]):
        assert agent.reply(message["left_message_id"], "Done.", f"r{number + 1}").status_code == 201
    assert leave(client, cid, headers, "one more thing", "l6").status_code == 201
    app.extensions[SERVICES_KEY].mailer.flush(10)
    to_owner = [mail for mail in smtp.inbox.mails if mail.recipients == ["owner@example.com"]]
    assert len(to_owner) == 2


def test_one_client_leaves_few_left_messages_whatever_the_conversation(make_app):
    app = make_app(RATE_LIMITS=True, RATE_LIMIT_LEFT_MESSAGES_CLIENT="2/hour")
    client = app.test_client()
    statuses = []
    for number in range(3):
        cid, headers = new_conversation(client)
        statuses.append(leave(client, cid, headers, "hello", f"l{number}"))
    assert [response.status_code for response in statuses] == [201, 201, 429]
    error = statuses[2].get_json()["error"]
    assert error["code"] == "rate_limited" and error["details"]["limit"] == "left_messages_client"
    assert Agent(app).inbox().get_json()["unreplied"] == 2


def test_an_inbox_kept_as_one_record_moves_into_records_of_its_own(make_app):
    app = make_app()
    service = handoff_of(app)
    chat = app.extensions[SERVICES_KEY].chat
    cid = chat.create_conversation()[0]
    # Within the inbox's age limit, whatever today's date: an entry past it would be let go.
    minutes_ago = [time.gmtime(time.time() - 60 * (10 - n)) for n in range(2)]
    legacy = [
        {
            "left_message_id": f"l_legacy{n}",
            "conversation_id": cid,
            "email": None,
            "text": f"kept before the upgrade {n}",
            "created_at": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", minutes_ago[n]),
            "replied": n == 0,
        }
        for n in range(2)
    ]
    assert service.store.commit(Commit(writes={LEGACY_INBOX: {"messages": legacy}}))
    body = Agent(app).inbox().get_json()
    assert [m["text"] for m in body["messages"]] == ["kept before the upgrade 1", "kept before the upgrade 0"]
    assert body["unreplied"] == 1
    assert service.store.load([LEGACY_INBOX])[LEGACY_INBOX][1] is None
    assert Agent(app, "bob").reply("l_legacy1", "Answered after the upgrade.", "r1").status_code == 201
    service.forget(cid)  # the moved entries go with their conversation
    assert Agent(app).inbox().get_json()["messages"] == []
