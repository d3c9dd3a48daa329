"""The response records of widget_server/wire/records.py, as openapi.py publishes them: what the
server writes passes, what it never writes does not (tests/test_openapi_schemathesis.py checks
every live response against the same schemas)."""

from __future__ import annotations

import jsonschema_rs
import pytest

from widget_server.openapi import build_document
from widget_server.stores import base
from widget_server.wire import records

ANSWER = {"message_id": "m_1", "role": "assistant", "text": "Hi.", "state": "completed"}
FEEDBACK = {"rating": "up", "comment": "", "updated_at": "2026-12-06T01:00:00.000Z"}
PROPOSAL = {
    "action_id": "a_1",
    "name": "callback_request",
    "label": "Call me",
    "description": "We call.",
    "arguments": {},
}


def valid(component: str, value: object) -> bool:
    document = build_document()
    # The component inside its document, so that its $refs resolve.
    schema = {**document["components"]["schemas"][component], "components": document["components"]}
    return jsonschema_rs.Draft202012Validator(schema).is_valid(value)


@pytest.mark.parametrize(
    ("component", "value", "expected"),
    [
        ("HistoryMessage", ANSWER, True),
        ("HistoryMessage", {**ANSWER, "feedback": None}, True),
        ("HistoryMessage", {**ANSWER, "feedback": FEEDBACK}, True),
        ("HistoryMessage", {**ANSWER, "feedback": {"rating": "up"}}, False),
        ("HistoryMessage", {**ANSWER, "role": "system"}, False),
        ("ConversationHistory", {"conversation_id": "c_1", "messages": [ANSWER]}, True),
        ("StoredFeedback", {**FEEDBACK, "message_id": "m_1"}, True),
        ("StoredFeedback", FEEDBACK, False),  # the answer it is on is always said
        ("Feedback", {**FEEDBACK, "updated_at": "2026-12-06T01:00:00+01:00"}, False),  # UTC, with a Z
        ("Action", {**PROPOSAL, "message_id": "m_1", "status": "proposed"}, True),
        (
            "Action",
            {**PROPOSAL, "message_id": "m_1", "status": "failed", "error": {"code": "action_failed", "message": "No."}},
            True,
        ),
        (
            "Action",
            {**PROPOSAL, "message_id": "m_1", "status": "failed", "error": {"code": "other", "message": "No."}},
            False,
        ),
        ("Action", {"message_id": "m_1", "status": "proposed"}, False),  # an action is its proposal too
        (
            "MessageState",
            {
                "message_id": "m_1",
                "state": "failed",
                "last_seq": 3,
                "error": {"code": "timeout", "message": "Slow.", "retryable": True},
            },
            True,
        ),
        ("MessageState", {"message_id": "m_1", "state": "running", "last_seq": -1}, False),
        ("Attachment", {"attachment_id": "f_1", "name": "a.txt", "type": "text", "size": 1, "sha256": "0" * 64}, True),
        # An attachment record is closed: a description belongs to a sent one only.
        (
            "Attachment",
            {
                "attachment_id": "f_1",
                "name": "a.txt",
                "type": "text",
                "size": 1,
                "sha256": "0" * 64,
                "description": "d",
            },
            False,
        ),
        (
            "SentAttachment",
            {
                "attachment_id": "f_1",
                "name": "a.txt",
                "type": "text",
                "size": 1,
                "sha256": "0" * 64,
                "description": "d",
            },
            True,
        ),
        (
            "HandoffState",
            {"state": "unavailable", "seq": 0, "reason": "closed", "opens_at": "2026-12-07T09:00:00+01:00"},
            True,
        ),
        ("HandoffState", {"state": "unavailable", "seq": 0, "reason": "lunch"}, False),
        ("NewConversation", {"conversation_id": "c_1", "token": "t" * 31}, False),
    ],
)
def test_a_record_describes_what_the_server_writes(component, value, expected):
    assert valid(component, value) is expected


def test_the_stores_keep_the_wires_action_statuses():
    assert base.ActionStatus is records.ActionStatus
    assert build_document()["components"]["schemas"]["Action"]["properties"]["status"]["enum"] == list(
        records.ActionStatus.ALL
    )
