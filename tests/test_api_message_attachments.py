"""A message that carries files (docs/protocol.md, "Sending files with a message").

`POST …/messages` with `"attachments": [...]` next to `text`. Named tests/test_api_*.py: every
test runs on the memory store (files in a directory), on Redis and mounted at /chat.

The demo backend's `/scenario attachments` answers with the SHA-256 of the bytes it read, so
the tests prove each file reached the backend exactly; the history lists a turn's files and
a reload shows them; a retry with the same request_id starts nothing, one with other files is
a conflict; a regenerate and an edit keep the turn's files; every refusal is checked before
anything is claimed; a sent file cannot be deleted alone, and goes with the conversation.
"""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from . import attachment_samples as samples
from .helpers import ChatClient, StreamResult, assert_json_error
from .revision_support import edit, regenerate, scripted
from .test_api_attachments import attachments_url, traces, upload

SCENARIO = "/scenario attachments"


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def uploaded(chat: ChatClient, data: bytes, name: str, content_type: str = "application/octet-stream") -> str:
    response = upload(chat, data, name, content_type)
    assert response.status_code == 201, response.text
    assert response.json()["sha256"] == sha256(data)
    attachment_id: str = response.json()["attachment_id"]
    return attachment_id


def send(chat: ChatClient, request_id: str, text: str, attachments: list[Any]) -> StreamResult:
    body = {"request_id": request_id, "text": text, "attachments": attachments}
    return chat.stream("POST", chat.messages_url(), json=body)


def completed(result: StreamResult) -> StreamResult:
    assert result.status == 200, (result.status, result.raw)
    assert result.kinds[-1] == "message.completed", result.kinds
    return result


def refused(chat: ChatClient, status: int, code: str, text: str, attachments: Any) -> dict[str, Any]:
    body = {"request_id": "refused-1", "text": text, "attachments": attachments}
    response = chat.http.post(chat.messages_url(), json=body, headers=chat.auth)
    error: dict[str, Any] = assert_json_error(response, status, code)["error"]
    return error


def user_turns(chat: ChatClient) -> list[dict[str, Any]]:
    response = chat.history()
    assert response.status_code == 200, response.text
    return [message for message in response.json()["messages"] if message["role"] == "user"]


FILES = {
    "screenshot.png": (samples.png(16, 9), "png", "image/png"),
    "notes.txt": ("Ünïcode line one\nline two\n".encode(), "text", "text/plain"),
    "invoice.pdf": (samples.pdf(), "pdf", "application/pdf"),
}


def test_the_backend_reads_every_file_exactly_and_the_history_lists_them(live_server, chat_factory):
    chat = chat_factory(live_server)
    ids = {name: uploaded(chat, data, name, mime) for name, (data, _kind, mime) in FILES.items()}
    attachments = [
        {"attachment_id": ids["screenshot.png"], "description": "The error dialog, red"},
        ids["notes.txt"],
        {"attachment_id": ids["invoice.pdf"]},
    ]
    answer = completed(send(chat, "with-files", SCENARIO, attachments)).text
    for name, (data, kind, _mime) in FILES.items():
        assert f"`{name}`: {kind}, {len(data)} bytes, SHA-256 {sha256(data)}." in answer or (
            f"`{name}`: {kind}, {len(data)} bytes, SHA-256 {sha256(data)}, described as" in answer
        ), answer
    assert "described as “The error dialog, red”" in answer
    assert "NOT the bytes" not in answer
    (turn,) = user_turns(chat)
    assert turn["text"] == SCENARIO
    assert turn["attachments"] == [
        {
            "attachment_id": ids["screenshot.png"],
            "name": "screenshot.png",
            "type": "png",
            "size": len(FILES["screenshot.png"][0]),
            "sha256": sha256(FILES["screenshot.png"][0]),
            "description": "The error dialog, red",
        },
        {
            "attachment_id": ids["notes.txt"],
            "name": "notes.txt",
            "type": "text",
            "size": len(FILES["notes.txt"][0]),
            "sha256": sha256(FILES["notes.txt"][0]),
        },
        {
            "attachment_id": ids["invoice.pdf"],
            "name": "invoice.pdf",
            "type": "pdf",
            "size": len(FILES["invoice.pdf"][0]),
            "sha256": sha256(FILES["invoice.pdf"][0]),
        },
    ]


def test_files_without_words_are_a_message_and_the_backend_gets_empty_text(live_server, chat_factory):
    backend = scripted(live_server)
    chat = chat_factory(live_server)
    image = samples.png(4, 4)
    attachment_id = uploaded(chat, image, "only.png", "image/png")
    for request_id, text in (("no-words", ""), ("blank", " \n\t ")):
        completed(send(chat, request_id, text, [attachment_id]))
    assert [turn.text for turn in backend.turns] == ["", ""]
    assert [[(a.name, a.type, a.size, a.sha256) for a in turn.attachments] for turn in backend.turns] == [
        [("only.png", "png", len(image), sha256(image))]
    ] * 2
    assert backend.turns[0].attachments[0].read() == image
    assert [turn["text"] for turn in user_turns(chat)] == ["", ""]


def test_a_message_without_files_has_no_attachments_in_the_history(live_server, chat_factory):
    chat = chat_factory(live_server)
    completed(chat.send("plain words", "plain"))
    (turn,) = user_turns(chat)
    assert "attachments" not in turn


def test_a_retry_starts_nothing_and_other_files_under_the_same_request_id_conflict(live_server, chat_factory):
    backend = scripted(live_server)
    chat = chat_factory(live_server)
    first_id = uploaded(chat, b"first file\n", "a.txt", "text/plain")
    second_id = uploaded(chat, b"second file\n", "b.txt", "text/plain")
    first = completed(send(chat, "once", "look", [first_id]))
    again = completed(send(chat, "once", "look", [first_id]))
    assert again.message_id == first.message_id and again.text == first.text
    assert backend.runs == 1
    for attachments in ([second_id], [first_id, second_id], [], [{"attachment_id": first_id, "description": "x"}]):
        error = refused_with(chat, "once", "look", attachments)
        assert error["details"] == {"message_id": first.message_id}
    assert backend.runs == 1
    assert len(user_turns(chat)) == 1


def refused_with(chat: ChatClient, request_id: str, text: str, attachments: list[Any]) -> dict[str, Any]:
    body = {"request_id": request_id, "text": text, "attachments": attachments}
    response = chat.http.post(chat.messages_url(), json=body, headers=chat.auth)
    error: dict[str, Any] = assert_json_error(response, 409, "request_id_conflict")["error"]
    return error


def test_regenerate_and_edit_keep_the_turns_files(live_server, chat_factory):
    chat = chat_factory(live_server)
    data = b"kept across revisions\n"
    attachment_id = uploaded(chat, data, "kept.txt", "text/plain")
    first = completed(send(chat, "r1", SCENARIO, [{"attachment_id": attachment_id, "description": "a log"}]))
    again = completed(regenerate(chat, first.message_id, "r2"))
    assert f"SHA-256 {sha256(data)}, described as “a log”" in again.text
    (turn,) = user_turns(chat)
    edited = completed(edit(chat, turn["message_id"], "r3", SCENARIO + " "))
    assert f"SHA-256 {sha256(data)}" in edited.text
    (turn,) = user_turns(chat)
    assert [attachment["attachment_id"] for attachment in turn["attachments"]] == [attachment_id]
    assert turn["attachments"][0]["description"] == "a log"


@pytest.mark.parametrize(
    ("attachments", "status", "code"),
    [
        ("f_notalist", 400, "invalid_attachments"),
        ({"attachment_id": "f_x"}, 400, "invalid_attachments"),
        ([7], 400, "invalid_attachments"),
        ([{"id": "f_x"}], 400, "invalid_attachments"),
        ([{"attachment_id": "f_AAAAAAAAAAAAAAAA", "extra": 1}], 400, "invalid_attachments"),
        ([{"attachment_id": "f_AAAAAAAAAAAAAAAA", "description": 3}], 400, "invalid_attachments"),
        (["f_AAAAAAAAAAAAAAAA"], 404, "attachment_not_found"),
        (["../../etc/passwd"], 404, "attachment_not_found"),
        (["c_AAAAAAAAAAAAAAAA"], 404, "attachment_not_found"),
    ],
)
def test_a_malformed_or_unknown_attachment_is_refused_and_nothing_is_claimed(
    live_server, chat_factory, attachments, status, code
):
    chat = chat_factory(live_server)
    refused(chat, status, code, "look", attachments)
    assert user_turns(chat) == []
    # Nothing was claimed: the same request_id then works.
    completed(chat.send("look", "refused-1"))


def test_another_conversations_file_is_not_found_here(live_server, chat_factory):
    owner, other = chat_factory(live_server), chat_factory(live_server)
    foreign = uploaded(owner, b"private\n", "private.txt", "text/plain")
    error = refused(other, 404, "attachment_not_found", "look", [foreign])
    assert error["details"] == {"attachment_id": foreign}
    assert user_turns(other) == []


def test_limits_count_duplicates_descriptions_and_words(live_server_factory, chat_factory):
    server = live_server_factory(ATTACHMENTS_PER_MESSAGE=2)
    chat = chat_factory(server)
    ids = [uploaded(chat, f"file {n}\n".encode(), f"{n}.txt", "text/plain") for n in range(3)]
    error = refused(chat, 400, "too_many_attachments", "look", ids)
    assert error["details"] == {"limit": 2}
    refused(chat, 400, "duplicate_attachment", "look", [ids[0], {"attachment_id": ids[0]}])
    error = refused(chat, 413, "description_too_long", "look", [{"attachment_id": ids[0], "description": "d" * 1001}])
    assert error["details"] == {"limit": 1000}
    # Without files, words are still needed; an empty list is no files.
    refused(chat, 400, "empty_text", "  ", [])
    refused(chat, 400, "empty_text", "", [])
    assert user_turns(chat) == []
    completed(send(chat, "at-limit", "two", ids[:2]))
    completed(send(chat, "long-description", "one", [{"attachment_id": ids[2], "description": "d" * 1000}]))


def test_a_sent_file_stays_until_the_conversation_goes(live_server, chat_factory, store_kind):
    chat = chat_factory(live_server)
    sent_id = uploaded(chat, samples.png(3, 3), "sent.png", "image/png")
    unsent_id = uploaded(chat, b"never sent\n", "unsent.txt", "text/plain")
    completed(send(chat, "sent", "here", [sent_id]))
    response = chat.http.delete(f"{attachments_url(chat)}/{sent_id}", headers=chat.auth)
    assert_json_error(response, 409, "attachment_in_message")
    assert chat.http.get(f"{attachments_url(chat)}/{sent_id}", headers=chat.auth).status_code == 200
    assert chat.http.delete(f"{attachments_url(chat)}/{unsent_id}", headers=chat.auth).status_code == 204
    assert chat.http.delete(f"/api/v1/conversations/{chat.conversation_id}", headers=chat.auth).status_code == 204
    assert traces(live_server, store_kind, chat.conversation_id) == []
