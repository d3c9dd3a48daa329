"""Satisfaction after a hand-off (docs/protocol.md, "Satisfaction") over real HTTP, on the
memory store, a real redis-server and a Redis Cluster (tests/conftest.py parametrizes
tests/test_api_*.py with `store_kind`).

The agent's side is driven through the app's HandoffService, as tests/test_api_handoff.py
does; the visitor's only through HTTP, as the widget does. What the agent's console reads is
checked through the agents' HTTP API (tests/agent_support.py).
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from widget_server.handoff.satisfaction import SATISFACTION_KEPT, SatisfactionService
from widget_server.privacy.export import export_records
from widget_server.services import SERVICES_KEY
from widget_server.transport import CONVERSATION_COOKIE

from .agent_support import HandoffVisitor, SignedInAgent, agents_app
from .helpers import ChatClient, assert_json_error, panel_config_of
from .test_api_handoff import ask, chat, empty_store, handoff_of, history, server  # noqa: F401
from .test_scale_out import metric_value

# ruff: noqa: F811 - the hand-off's fixtures imported above (an empty desk, a server with
# hand-off on, a visitor) are the tests' parameters


def rate(chat: ChatClient, body: Any) -> httpx.Response:
    return chat.http.post(f"/api/v1/conversations/{chat.conversation_id}/satisfaction", json=body, headers=chat.auth)


def ended_by_agent(server, chat: ChatClient, request_id: str = "h1", reason: str = "ended") -> int:
    """A hand-off that Ana claims and ends: the seq of its handoff.ended event."""
    handoff = handoff_of(server)
    handoff.agent_seen("ana")
    assert ask(chat, request_id).json()["state"] == "queued"
    handoff.claim(chat.conversation_id, "ana", "Ana")
    handoff.end(chat.conversation_id, "ana", reason)
    return handoff.last_seq(chat.conversation_id)


def events_of(chat: ChatClient, after: int) -> list[tuple[str, dict[str, Any]]]:
    response = chat.http.get(
        f"/api/v1/conversations/{chat.conversation_id}/events", params={"after": after}, headers=chat.auth
    )
    assert response.status_code == 200
    found = []
    for block in response.text.split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines() if line.startswith(("event: ", "data: ")))
        if "event" in lines:
            found.append((lines["event"], json.loads(lines["data"])))
    return found


def test_a_rating_after_the_person_ended_is_stored_once_and_an_identical_retry_gets_it(server, chat):
    handoff_seq = ended_by_agent(server, chat)
    first = rate(chat, {"handoff": handoff_seq, "rating": 4, "comment": "Quick and kind."})
    assert first.status_code == 201, first.text
    record = first.json()
    assert record == {
        "conversation_id": chat.conversation_id,
        "handoff": handoff_seq,
        "rating": 4,
        "comment": "Quick and kind.",
        "agent": "Ana",
        "created_at": record["created_at"],
    }
    assert record["created_at"].endswith("Z")
    # A retry after a lost response: the same record, 200, and no second event.
    again = rate(chat, {"handoff": handoff_seq, "rating": 4, "comment": "Quick and kind."})
    assert again.status_code == 200 and again.json() == record
    # The stream says it once, to every tab and to the console.
    assert events_of(chat, handoff_seq) == [
        (
            "handoff.satisfaction",
            {
                "conversation_id": chat.conversation_id,
                "seq": handoff_seq + 1,
                "handoff": handoff_seq,
                "rating": 4,
                "comment": "Quick and kind.",
                "agent": "Ana",
            },
        )
    ]
    metrics = chat.http.get("/metrics").text
    assert metric_value(metrics, "chat_handoff_satisfaction_total", rating="4") == 1
    assert metric_value(metrics, "chat_handoff_satisfaction_total", rating="1") == 0


def test_a_different_second_answer_is_refused_and_the_first_stands(server, chat):
    handoff_seq = ended_by_agent(server, chat, reason="returned")
    assert rate(chat, {"handoff": handoff_seq, "rating": 2}).status_code == 201
    refused = rate(chat, {"handoff": handoff_seq, "rating": 5})
    assert_json_error(refused, 409, "satisfaction_already_given")
    assert refused.json()["error"]["details"] == {"rating": 2}
    assert_json_error(rate(chat, {"handoff": handoff_seq, "rating": 2, "comment": "Changed my mind"}), 409)
    stored = handoff_of(server).stored_record(chat.conversation_id)
    assert stored is not None
    assert [(entry["rating"], entry["comment"]) for entry in stored["satisfaction"]] == [(2, "")]


def test_nothing_to_rate_before_a_hand_off_while_one_goes_on_or_when_the_visitor_ended_it(server, chat):
    assert_json_error(rate(chat, {"handoff": 1, "rating": 3}), 409, "satisfaction_not_open")
    handoff = handoff_of(server)
    handoff.agent_seen("ana")
    assert ask(chat).json()["state"] == "queued"
    assert_json_error(rate(chat, {"handoff": 1, "rating": 3}), 409, "satisfaction_not_open")
    handoff.claim(chat.conversation_id, "ana", "Ana")
    assert_json_error(rate(chat, {"handoff": 2, "rating": 3}), 409, "satisfaction_not_open")
    # The visitor ending it themselves: no person ended it, nothing is asked.
    assert chat.http.delete(f"/api/v1/conversations/{chat.conversation_id}/handoff", headers=chat.auth).status_code
    ended = handoff.last_seq(chat.conversation_id)
    assert_json_error(rate(chat, {"handoff": ended, "rating": 3}), 409, "satisfaction_not_open")


def test_only_the_latest_hand_off_a_person_ended_until_a_new_one_is_queued(server, chat):
    first = ended_by_agent(server, chat, "h1")
    second = ended_by_agent(server, chat, "h2")
    assert second > first
    # The earlier hand-off is no longer asked about; a seq that names no ending neither.
    assert_json_error(rate(chat, {"handoff": first, "rating": 5}), 409, "satisfaction_not_open")
    assert_json_error(rate(chat, {"handoff": second - 1, "rating": 5}), 409, "satisfaction_not_open")
    # A new hand-off queued: the one before can no longer be rated.
    assert ask(chat, "h3").json()["state"] == "queued"
    assert_json_error(rate(chat, {"handoff": second, "rating": 5}), 409, "satisfaction_not_open")


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"rating": 3}, 400, "invalid_handoff"),
        ({"handoff": 0, "rating": 3}, 400, "invalid_handoff"),
        ({"handoff": "7", "rating": 3}, 400, "invalid_handoff"),
        ({"handoff": 7}, 400, "invalid_rating"),
        ({"handoff": 7, "rating": 0}, 400, "invalid_rating"),
        ({"handoff": 7, "rating": 6}, 400, "invalid_rating"),
        ({"handoff": 7, "rating": 4.5}, 400, "invalid_rating"),
        ({"handoff": 7, "rating": True}, 400, "invalid_rating"),
        ({"handoff": 7, "rating": "5"}, 400, "invalid_rating"),
        ({"handoff": 7, "rating": 5, "comment": 3}, 400, "invalid_comment"),
        ({"handoff": 7, "rating": 5, "comment": "x" * 1001}, 413, "comment_too_long"),
        ({"handoff": 7, "rating": 5, "stars": 5}, 400, "unknown_field"),
    ],
)
def test_a_malformed_answer_is_refused_by_its_field(chat, body, status, code):
    assert_json_error(rate(chat, body), status, code)


def test_the_token_is_required_and_the_body_bounded(server, chat):
    handoff_seq = ended_by_agent(server, chat)
    path = f"/api/v1/conversations/{chat.conversation_id}/satisfaction"
    assert_json_error(chat.http.post(path, json={"handoff": handoff_seq, "rating": 5}), 404, "not_found")
    wrong = {"Authorization": "Bearer " + "x" * 43}
    assert_json_error(chat.http.post(path, json={"handoff": handoff_seq, "rating": 5}, headers=wrong), 404)
    huge = json.dumps({"handoff": handoff_seq, "rating": 5, "comment": "x" * 2_000_000})
    too_large = chat.http.post(path, content=huge, headers={**chat.auth, "Content-Type": "application/json"})
    assert_json_error(too_large, 413, "body_too_large")
    # A comment is cleaned as a message is: controls other than tab and line breaks go.
    stored = rate(chat, {"handoff": handoff_seq, "rating": 5, "comment": "Great\x1b[31m!\r\nThanks"})
    assert stored.status_code == 201 and stored.json()["comment"] == "Great[31m!\nThanks"


def test_a_reloaded_panel_is_asked_again_until_it_is_answered(server, chat):
    handoff_seq = ended_by_agent(server, chat)
    cookie = {"Cookie": f"{CONVERSATION_COOKIE}={chat.conversation_id}.{chat.token}"}

    def panel_handoff() -> Any:
        page = chat.http.get("/panel?lang=en", headers=cookie)
        assert page.status_code == 200
        return panel_config_of(page.text)["handoff"]

    assert panel_handoff() == {
        "state": "ended",
        "conversation_id": chat.conversation_id,
        "seq": handoff_seq,
        "satisfaction": handoff_seq,
    }
    assert rate(chat, {"handoff": handoff_seq, "rating": 5}).status_code == 201
    assert panel_handoff() is True


def test_the_answers_go_to_the_console_of_the_agent_who_ended_it_the_export_and_go_with_the_conversation(
    server, chat, store_kind
):
    handoff_seq = ended_by_agent(server, chat)
    assert rate(chat, {"handoff": handoff_seq, "rating": 1, "comment": "Nobody answered my question."}).status_code
    services = server.app.extensions[SERVICES_KEY]
    view = services.handoff.console_view(chat.conversation_id)
    assert [(entry["rating"], entry["comment"], entry["agent"]) for entry in view["satisfaction"]] == [
        (1, "Nobody answered my question.", "Ana")
    ]
    exported = list(export_records(services.chat, services.handoff, services.attachments, "", [chat.conversation_id]))
    # export_records is a subject's (the subject check is privacy/subjects.py's and
    # tests/test_api_privacy.py's); here, what it writes of this conversation's answer.
    assert [record for record in exported if record["kind"] == "satisfaction"] == [
        {
            "kind": "satisfaction",
            "conversation_id": chat.conversation_id,
            "handoff": handoff_seq,
            "rating": 1,
            "comment": "Nobody answered my question.",
            "agent": "Ana",
            "created_at": view["satisfaction"][0]["created_at"],
        }
    ]
    assert history(chat) == []  # the answer is no message of the history
    assert chat.http.delete(f"/api/v1/conversations/{chat.conversation_id}", headers=chat.auth).status_code == 204
    assert services.handoff.stored_record(chat.conversation_id) is None


def test_a_conversation_keeps_a_bounded_number_of_answers(server, chat):
    for index in range(SATISFACTION_KEPT + 2):
        handoff_seq = ended_by_agent(server, chat, f"h{index}")
        assert rate(chat, {"handoff": handoff_seq, "rating": 1 + index % 5}).status_code == 201
    stored = handoff_of(server).stored_record(chat.conversation_id)
    assert stored is not None and len(stored["satisfaction"]) == SATISFACTION_KEPT
    assert stored["satisfaction"][-1]["handoff"] == handoff_seq


def test_the_agent_who_ended_it_reads_the_answer_in_the_console_and_nobody_else_does(tmp_path, store_config):
    with agents_app(tmp_path, HANDOFF="on", **store_config) as app:
        alice, bob = SignedInAgent(app, "alice"), SignedInAgent(app, "bob")
        visitor = HandoffVisitor(app)
        alice.call("GET", "/queue")  # present
        assert visitor.post("/handoff", {"request_id": "h1"}).get_json()["state"] == "queued"
        assert alice.call("POST", f"/conversations/{visitor.cid}/claim").status_code == 200
        assert alice.call("POST", f"/conversations/{visitor.cid}/end", {"reason": "ended"}).status_code == 204
        before = alice.call("GET", f"/conversations/{visitor.cid}")
        assert before.status_code == 200 and before.get_json()["state"] == "ended"
        assert before.get_json()["satisfaction"] == []
        handoff_seq = before.get_json()["last_seq"]
        given = visitor.post("/satisfaction", {"handoff": handoff_seq, "rating": 5, "comment": "Thank you, Alice"})
        assert given.status_code == 201
        view = alice.call("GET", f"/conversations/{visitor.cid}").get_json()
        assert [(entry["rating"], entry["comment"], entry["agent"]) for entry in view["satisfaction"]] == [
            (5, "Thank you, Alice", "Alice Agent")
        ]
        # The stream the console follows carries it after the transcript's last_seq.
        stream = alice.call("GET", f"/conversations/{visitor.cid}/events?after={handoff_seq}")
        assert stream.status_code == 200 and b"event: handoff.satisfaction" in stream.data
        # Another agent never held it: not theirs to read.
        assert_json_error_of(bob.call("GET", f"/conversations/{visitor.cid}"), 403, "not_your_conversation")
        # A new hand-off: Alice's read-only view of the ended one is over until she claims it.
        assert visitor.post("/handoff", {"request_id": "h2"}).get_json()["state"] == "queued"
        assert alice.call("GET", f"/conversations/{visitor.cid}").status_code == 200  # waiting: any agent
        assert bob.call("POST", f"/conversations/{visitor.cid}/claim").status_code == 200
        assert_json_error_of(alice.call("GET", f"/conversations/{visitor.cid}"), 403, "not_your_conversation")
        # Bob, who now holds it, sees the earlier answer too.
        earlier = bob.call("GET", f"/conversations/{visitor.cid}").get_json()["satisfaction"]
        assert [entry["rating"] for entry in earlier] == [5]


def assert_json_error_of(response: Any, status: int, code: str) -> None:
    assert response.status_code == status, response.data
    assert response.get_json()["error"]["code"] == code


def test_the_hook_hears_each_new_answer_once_and_its_failure_is_not_the_visitors(server, chat, caplog):
    handoff_seq = ended_by_agent(server, chat)
    heard: list[tuple[str, dict[str, Any]]] = []
    service = SatisfactionService(
        handoff_of(server), on_submitted=lambda cid, answer: heard.append((cid, dict(answer)))
    )
    record, created = service.give(chat.conversation_id, handoff_seq, 3, "Fine.")
    assert created and heard == [(chat.conversation_id, {key: record[key] for key in heard[0][1]})]
    assert heard[0][1]["rating"] == 3 and heard[0][1]["agent"] == "Ana"
    assert service.give(chat.conversation_id, handoff_seq, 3, "Fine.") == (record, False)
    assert len(heard) == 1  # a retry is not a new answer

    def broken(_cid: str, _answer: Any) -> None:
        raise RuntimeError("the webhook's queue is down")

    next_seq = ended_by_agent(server, chat, "h2")
    failing = SatisfactionService(handoff_of(server), on_submitted=broken)
    stored, created = failing.give(chat.conversation_id, next_seq, 5, "")
    assert created and stored["rating"] == 5
    assert "the satisfaction hook failed" in caplog.text
