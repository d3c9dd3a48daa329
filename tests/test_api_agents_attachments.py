"""The files a visitor sent, for the agent who takes the conversation (docs/agents.md, "Files
the visitor sent").

The console's transcript lists a turn's files as the visitor's history does, and
`GET /agent/api/conversations/<cid>/attachments/<aid>` gives the exact bytes, with the
visitor's download headers, only to an agent who may see the conversation (waiting, or held
by them); another agent, no session, a malformed id and another conversation's file are
refused. On the memory store and on Redis (tests/test_api_*.py run both).
"""

from __future__ import annotations

import hashlib

from . import attachment_samples as samples
from .test_api_agents import Agent, Visitor, alice, app, bob, sse_events  # noqa: F401 - fixtures and helpers

# ruff: noqa: F811 - the fixtures imported above are the tests' parameters


def fetch(agent: Agent, path: str):
    """GET under /agent/api, its body read and the response closed (a file response holds its
    file open until closed, as a WSGI server does after sending it)."""
    response = agent.get(path)
    response.get_data()
    response.close()
    return response


def assert_refused(response, status: int, code: str) -> None:
    response.close()
    assert response.status_code == status, response.get_data()
    assert response.get_json()["error"]["code"] == code


def upload(visitor: Visitor, data: bytes, name: str) -> dict:
    response = visitor.client.post(
        f"/api/v1/conversations/{visitor.cid}/attachments",
        data={"file": (__import__("io").BytesIO(data), name)},
        headers=visitor.headers,
        content_type="multipart/form-data",
    )
    assert response.status_code == 201, response.get_json()
    body: dict = response.get_json()
    return body


def send_with(visitor: Visitor, text: str, attachments: list) -> None:
    response = visitor.client.post(
        f"/api/v1/conversations/{visitor.cid}/messages",
        json={"request_id": "with-files", "text": text, "attachments": attachments},
        headers=visitor.headers,
    )
    assert response.status_code == 200
    assert b"event: message.completed" in response.get_data()


def visitor_with_files(app, alice: Agent) -> tuple[Visitor, dict, dict, bytes]:
    assert alice.get("/queue").status_code == 200  # alice is present: the hand-off queues
    visitor = Visitor(app)
    image = samples.png(20, 10)
    shot = upload(visitor, image, "screen.png")
    log = upload(visitor, b"error 42 at line 7\n", "app.log")
    send_with(visitor, "", [{"attachment_id": shot["attachment_id"], "description": "the error"}, log["attachment_id"]])
    assert visitor.ask_for_a_person()["state"] == "queued"
    return visitor, shot, log, image


def test_the_transcript_lists_the_files_and_the_holder_downloads_them_exactly(app, alice, bob):
    visitor, shot, log, image = visitor_with_files(app, alice)
    assert alice.post(f"/conversations/{visitor.cid}/claim").status_code == 200
    detail = alice.get(f"/conversations/{visitor.cid}").get_json()
    (turn,) = [entry for entry in detail["messages"] if entry["role"] == "user"]
    assert turn["text"] == ""
    assert turn["attachments"] == [{**shot, "description": "the error"}, log]
    response = fetch(alice, f"/conversations/{visitor.cid}/attachments/{shot['attachment_id']}")
    assert response.status_code == 200
    assert hashlib.sha256(response.get_data()).hexdigest() == shot["sha256"] == hashlib.sha256(image).hexdigest()
    assert response.headers["Content-Type"] == "image/png"
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["Content-Security-Policy"] == "sandbox"
    assert response.headers["Content-Disposition"].startswith("inline")
    text = fetch(alice, f"/conversations/{visitor.cid}/attachments/{log['attachment_id']}")
    assert text.get_data() == b"error 42 at line 7\n"
    assert text.headers["Content-Disposition"].startswith("attachment")
    # Claimed by alice: another agent may not read it.
    refused = bob.get(f"/conversations/{visitor.cid}/attachments/{shot['attachment_id']}")
    assert_refused(refused, 403, "not_your_conversation")


def test_a_waiting_conversations_files_are_readable_and_strangers_are_refused(app, alice):
    visitor, shot, _log, _image = visitor_with_files(app, alice)
    path = f"/conversations/{visitor.cid}/attachments/{shot['attachment_id']}"
    assert fetch(alice, path).status_code == 200  # waiting: any present agent may look before claiming
    other = Visitor(app)
    foreign = upload(other, b"someone else's\n", "other.txt")
    assert_refused(alice.get(f"/conversations/{visitor.cid}/attachments/{foreign['attachment_id']}"), 404, "not_found")
    assert_refused(alice.get(f"/conversations/{visitor.cid}/attachments/f_AAAAAAAAAAAAAAAA"), 404, "not_found")
    assert_refused(alice.get(f"/conversations/{visitor.cid}/attachments/not-an-id!"), 404, "not_found")
    # The visitor's token is no agent session.
    anonymous = app.test_client().get(f"/agent/api{path}", headers=visitor.headers)
    assert_refused(anonymous, 401, "not_signed_in")


# -- files sent to the person during a hand-off ----------------------------------------------


def say_with(visitor: Visitor, request_id: str, text: str, attachments: list):
    return visitor.client.post(
        f"/api/v1/conversations/{visitor.cid}/handoff/messages",
        json={"request_id": request_id, "text": text, "attachments": attachments},
        headers=visitor.headers,
    )


def test_files_sent_to_the_person_reach_the_console_the_stream_and_the_history(app, alice):
    assert alice.get("/queue").status_code == 200
    visitor = Visitor(app)
    assert visitor.ask_for_a_person()["state"] == "queued"
    assert alice.post(f"/conversations/{visitor.cid}/claim").status_code == 200
    image = samples.png(8, 8)
    shot = upload(visitor, image, "bug.png")
    first = say_with(visitor, "to-person", "", [{"attachment_id": shot["attachment_id"], "description": "the bug"}])
    assert first.status_code == 201, first.get_json()
    # A retry is the same message; other files under the same request_id are a conflict.
    again = say_with(visitor, "to-person", "", [{"attachment_id": shot["attachment_id"], "description": "the bug"}])
    assert again.get_json() == first.get_json()
    other = upload(visitor, b"other\n", "other.txt")
    assert_refused(say_with(visitor, "to-person", "", [other["attachment_id"]]), 409, "request_id_conflict")
    assert_refused(say_with(visitor, "unknown", "look", ["f_AAAAAAAAAAAAAAAA"]), 404, "attachment_not_found")
    assert_refused(say_with(visitor, "words", " ", []), 400, "empty_text")
    listed = {**shot, "description": "the bug"}
    (to_person,) = [m for m in visitor.history() if m["role"] == "visitor"]
    assert to_person["text"] == "" and to_person["attachments"] == [listed]
    detail = alice.get(f"/conversations/{visitor.cid}").get_json()
    (in_console,) = [m for m in detail["messages"] if m["role"] == "visitor"]
    assert in_console["attachments"] == [listed]
    stream = alice.get(f"/conversations/{visitor.cid}/events")
    (event,) = [data for kind, data in sse_events(stream, "visitor.message") if kind == "visitor.message"]
    assert event["attachments"] == [listed] and event["text"] == ""
    # Sent to a person, the file stays with the conversation.
    delete = visitor.client.delete(
        f"/api/v1/conversations/{visitor.cid}/attachments/{shot['attachment_id']}", headers=visitor.headers
    )
    assert_refused(delete, 409, "attachment_in_message")
    assert fetch(alice, f"/conversations/{visitor.cid}/attachments/{shot['attachment_id']}").get_data() == image
