"""Attachments over HTTP (docs/protocol.md, "Attachments").

`POST …/attachments` (multipart/form-data, one file in `file`), `GET …/attachments/{aid}`,
`DELETE …/attachments/{aid}`. Named tests/test_api_*.py: every test runs on the memory store
(attachments in a directory), on Redis (in the chat store's keys) and mounted at /chat.

Round trips are byte-exact (SHA-256 of what was sent = the answer's `sha256` = SHA-256 of
what comes back); every refusal has its status, stable code and fields; another
conversation's attachment is the same 404 as an unknown one; a retried upload with its
idempotency key stores nothing twice; deleting the conversation or letting it expire leaves
no file in the directory and no Redis key naming it (SCAN).
"""

from __future__ import annotations

import hashlib
import io
import os
import socket
import threading
import time
from typing import Any, BinaryIO

import httpx
import pytest

from widget_server.app import create_app
from widget_server.attachments.directory_store import MARKER, DirectoryAttachmentStore
from widget_server.attachments.redis_store import BYTES_SUFFIX, META_SUFFIX
from widget_server.attachments.store import AttachmentMeta, AttachmentStore, BudgetExceeded
from widget_server.services import SERVICES_KEY
from widget_server.settings import ConfigError, load_settings

from . import attachment_samples as samples
from .conftest import TEST_CONFIG
from .helpers import ChatClient, assert_json_error, http_client, wait_until
from .processes import ServerProcess
from .redis_support import keys_naming, keyspace_of, redis_client

ALLOWED = ["png", "jpeg", "webp", "gif", "pdf", "text", "csv"]


def attachments_url(chat: ChatClient) -> str:
    return f"/api/v1/conversations/{chat.conversation_id}/attachments"


def upload(
    chat: ChatClient,
    data: bytes,
    name: str = "file.bin",
    content_type: str = "application/octet-stream",
    *,
    headers: dict[str, str] | None = None,
    fields: dict[str, str] | None = None,
) -> httpx.Response:
    return chat.http.post(
        attachments_url(chat),
        files={"file": (name, data, content_type)},
        data=fields or {},
        headers={**chat.auth, **(headers or {})},
    )


def download(chat: ChatClient, attachment_id: str, token: str | None = None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token or chat.token}"}
    return chat.http.get(f"{attachments_url(chat)}/{attachment_id}", headers=headers)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def attachment_store(server):
    return server.app.extensions[SERVICES_KEY].attachments


def traces(server, store_kind: str, conversation_id: str) -> list[str]:
    """What is left of the conversation's attachments: files under the directory store's
    folder, or Redis keys naming the conversation (SCAN over all keys)."""
    store = attachment_store(server)
    if store_kind != "memory":
        return keys_naming(server.app.config["WIDGET_SERVER"]["STORE"], {conversation_id})
    left = []
    for folder, _dirs, files in os.walk(store.root):
        left += [os.path.join(folder, name) for name in files if conversation_id in folder]
        left += [folder] if conversation_id in folder else []
    return left


def attachment_traces(server, store_kind: str, conversation_id: str, attachment_id: str) -> list[str]:
    """What is left of one attachment: its file, or on Redis the hash fields naming it (its
    meta, the entry of its idempotency key, its chunks)."""
    if store_kind == "memory":
        return [trace for trace in traces(server, store_kind, conversation_id) if attachment_id in trace]
    url = server.app.config["WIDGET_SERVER"]["STORE"]
    client = redis_client(url, decode_responses=True)
    try:
        conv = keyspace_of(url).conversation(conversation_id)
        meta = client.hgetall(conv + META_SUFFIX)
        found = [f"{field}={value}" for field, value in meta.items() if attachment_id in field + value]
        found += [field for field in client.hkeys(conv + BYTES_SUFFIX) if attachment_id in field]
        return found
    finally:
        client.close()


# -- round trips ----------------------------------------------------------------------------


def test_every_type_round_trips_byte_exact(live_server, chat_factory):
    chat = chat_factory(live_server)
    files = {
        "screenshot.png": (samples.png(16, 9), "png", "image/png"),
        "anim.gif": (samples.gif(3, 2), "gif", "image/gif"),
        "photo.jpg": (samples.jpeg(37, 21), "jpeg", "image/jpeg"),
        "photo.webp": (samples.WEBP_LOSSY, "webp", "image/webp"),
        "lossless.webp": (samples.WEBP_LOSSLESS, "webp", "image/webp"),
        "invoice.pdf": (samples.pdf(), "pdf", "application/pdf"),
        "error.log": ("Traceback: ошибка ✓\n".encode(), "text", "text/plain; charset=utf-8"),
        "export.csv": (b"id,total\n1,3.50\n2,4.00\n", "csv", "text/csv; charset=utf-8"),
    }
    for name, (data, kind, media_type) in files.items():
        # The client's Content-Type is a guess the server ignores.
        response = upload(chat, data, name, "application/x-anything")
        assert response.status_code == 201, response.text
        body = response.json()
        assert set(body) == {"attachment_id", "name", "type", "size", "sha256"}
        assert (body["name"], body["type"], body["size"], body["sha256"]) == (name, kind, len(data), sha256(data))
        got = download(chat, body["attachment_id"])
        assert got.status_code == 200
        assert sha256(got.content) == body["sha256"]
        assert got.headers["content-type"] == media_type
        assert got.headers["content-length"] == str(len(data))
        disposition = "inline" if kind in ("png", "gif", "jpeg", "webp") else "attachment"
        assert got.headers["content-disposition"].startswith(f'{disposition}; filename="{name}"')


def test_a_large_file_round_trips_byte_exact_also_chunked(live_server_factory, chat_factory):
    server = live_server_factory(ATTACHMENT_MAX_BYTES=4_000_000)
    chat = chat_factory(server)
    data = b"".join(b"line %07d: the quick brown fox\n" % i for i in range(100_000))  # 3.4 MB
    assert 3_000_000 < len(data) < 4_000_000
    sent = upload(chat, data, "big.txt")
    assert sent.status_code == 201, sent.text
    assert sent.json()["sha256"] == sha256(data)
    assert sha256(download(chat, sent.json()["attachment_id"]).content) == sha256(data)

    # The same through a chunked body (no Content-Length): httpx streams a generator so.
    boundary = "b0undary"
    head = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="chunked.txt"\r\n'
        "Content-Type: text/plain\r\n\r\n"
    ).encode()
    tail = f"\r\n--{boundary}--\r\n".encode()

    def pieces():
        yield head
        for start in range(0, len(data), 65536):
            yield data[start : start + 65536]
        yield tail

    chunked = chat.http.post(
        attachments_url(chat),
        content=pieces(),
        headers={**chat.auth, "Content-Type": f"multipart/form-data; boundary={boundary}"},
    )
    assert chunked.status_code == 201, chunked.text
    assert chunked.json()["sha256"] == sha256(data)


def test_names_are_sanitised_and_the_type_wins_over_the_extension(live_server, chat_factory):
    chat = chat_factory(live_server)
    body = upload(chat, samples.png(2, 2), "../../x/\u202eevil.pdf").json()
    assert body["name"] == "evil.pdf.png"
    got = download(chat, body["attachment_id"])
    assert got.headers["content-disposition"] == "inline; filename=\"evil.pdf.png\"; filename*=UTF-8''evil.pdf.png"


# -- refusals -------------------------------------------------------------------------------


def test_too_large_is_refused_with_the_limit(live_server_factory, chat_factory):
    server = live_server_factory(ATTACHMENT_MAX_BYTES=1000, ATTACHMENTS_MAX_BYTES_PER_CONVERSATION=10_000)
    chat = chat_factory(server)
    assert upload(chat, b"a" * 1000, "exact.txt").status_code == 201
    error = assert_json_error(upload(chat, b"a" * 1001, "over.txt"), 413, "attachment_too_large")
    assert error["error"]["details"] == {"limit": 1000}
    # A body far over: refused from its Content-Length, before it is read.
    error = assert_json_error(upload(chat, b"a" * 200_000, "far.txt"), 413, "attachment_too_large")
    assert error["error"]["details"] == {"limit": 1000}
    assert attachment_store(server).used_bytes(chat.conversation_id) == 1000


def test_a_chunked_body_over_the_limit_is_cut_and_refused(live_server_factory, chat_factory):
    server = live_server_factory(ATTACHMENT_MAX_BYTES=1000)
    chat = chat_factory(server)

    def pieces():
        yield b'--b\r\nContent-Disposition: form-data; name="file"; filename="x.txt"\r\n\r\n'
        for _ in range(100):
            yield b"a" * 1000
        yield b"\r\n--b--\r\n"

    response = chat.http.post(
        attachments_url(chat),
        content=pieces(),
        headers={**chat.auth, "Content-Type": "multipart/form-data; boundary=b"},
    )
    assert_json_error(response, 413, "attachment_too_large")
    assert "close" in response.headers.get("connection", "")  # the rest of the body was never read


def test_the_conversation_budget_is_kept_and_freed_by_delete(live_server_factory, chat_factory):
    server = live_server_factory(ATTACHMENT_MAX_BYTES=1000, ATTACHMENTS_MAX_BYTES_PER_CONVERSATION=2500)
    chat, other = chat_factory(server), chat_factory(server)
    first = upload(chat, b"1" * 900, "1.txt").json()
    assert upload(chat, b"2" * 900, "2.txt").status_code == 201
    error = assert_json_error(upload(chat, b"3" * 900, "3.txt"), 413, "attachments_budget_exceeded")
    assert error["error"]["details"] == {"limit": 2500, "used": 1800}
    assert upload(chat, b"4" * 700, "4.txt").status_code == 201  # 2500: exactly the budget
    assert upload(other, b"5" * 900, "5.txt").status_code == 201  # another conversation's own budget
    assert chat.http.delete(f"{attachments_url(chat)}/{first['attachment_id']}", headers=chat.auth).status_code == 204
    assert upload(chat, b"3" * 900, "3.txt").status_code == 201
    assert attachment_store(server).used_bytes(chat.conversation_id) == 2500


def test_types_are_judged_by_content_and_refusals_name_the_allowed(live_server_factory, chat_factory):
    server = live_server_factory(ATTACHMENT_TYPES="png pdf")
    chat = chat_factory(server)
    cases = [
        (b"MZ\x90\x00" + b"\x00" * 100, "photo.png", "image/png"),  # an executable named as a PNG
        (b"hello\n", "notes.pdf", "application/pdf"),  # text, not allowed here
        (samples.gif(1, 1), "a.gif", "image/gif"),
    ]
    for data, name, content_type in cases:
        error = assert_json_error(upload(chat, data, name, content_type), 415, "attachment_type")
        assert error["error"]["details"] == {"allowed": ["png", "pdf"]}
    assert upload(chat, samples.pdf(), "looks-like.png", "image/png").json()["type"] == "pdf"


def test_oversize_image_dimensions_are_refused(live_server_factory, chat_factory):
    server = live_server_factory(ATTACHMENT_IMAGE_MAX_PIXELS=1_000_000)
    chat = chat_factory(server)
    error = assert_json_error(upload(chat, samples.png(2000, 1000, pixels=False), "bomb.png"), 413)
    assert error["error"]["code"] == "attachment_image_too_large"
    assert error["error"]["details"] == {"width": 2000, "height": 1000, "max_pixels": 1_000_000}
    assert upload(chat, samples.png(1000, 1000, pixels=False), "edge.png").status_code == 201


def test_malformed_uploads_are_refused(live_server, chat_factory):
    chat = chat_factory(live_server)
    url, auth = attachments_url(chat), chat.auth
    assert_json_error(chat.http.post(url, json={"file": "x"}, headers=auth), 415, "unsupported_media_type")
    assert_json_error(
        chat.http.post(url, data={"other": "x"}, files={"x": ("a", b"b")}, headers=auth), 400, "unknown_field"
    )
    assert_json_error(
        chat.http.post(url, data={"file": "not a file part"}, files={"x-file": ("a", b"b")}, headers=auth),
        400,
        "unknown_field",
    )
    boundary = "--x"
    text_field = f'--{boundary}\r\nContent-Disposition: form-data; name="file"\r\n\r\ntext\r\n--{boundary}--\r\n'
    multipart = {**auth, "Content-Type": f"multipart/form-data; boundary={boundary}"}
    assert_json_error(chat.http.post(url, content=text_field, headers=multipart), 400, "missing_file")
    two = [("file", ("a.txt", b"a")), ("file", ("b.txt", b"b"))]
    assert_json_error(chat.http.post(url, files=two, headers=auth), 400, "invalid_upload")
    no_boundary = {**auth, "Content-Type": "multipart/form-data"}
    assert_json_error(chat.http.post(url, content=text_field, headers=no_boundary), 400, "invalid_upload")
    cut = f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="a"\r\n\r\nno end'
    assert_json_error(chat.http.post(url, content=cut, headers=multipart), 400, "invalid_upload")
    assert_json_error(upload(chat, b"", "empty.txt"), 400, "empty_file")


def test_missing_file_field(live_server, chat_factory):
    chat = chat_factory(live_server)
    response = chat.http.post(
        attachments_url(chat), data={"request_id": "r1"}, files={"x": ("a", b"b")}, headers=chat.auth
    )
    assert_json_error(response, 400, "unknown_field")
    boundary = "x"
    only_id = f'--{boundary}\r\nContent-Disposition: form-data; name="request_id"\r\n\r\nr1\r\n--{boundary}--\r\n'
    response = chat.http.post(
        attachments_url(chat),
        content=only_id,
        headers={**chat.auth, "Content-Type": f"multipart/form-data; boundary={boundary}"},
    )
    assert_json_error(response, 400, "missing_file")


def test_unknown_foreign_and_unauthorised_ids_are_the_same_404(live_server, chat_factory):
    chat, stranger = chat_factory(live_server), chat_factory(live_server)
    mine = upload(chat, b"mine\n", "mine.txt").json()["attachment_id"]
    theirs = upload(stranger, b"theirs\n", "theirs.txt").json()["attachment_id"]
    bodies = []
    for attachment_id in (theirs, "f_unknownunknown1", "not!an id"):
        for method in ("GET", "DELETE"):
            response = chat.http.request(method, f"{attachments_url(chat)}/{attachment_id}", headers=chat.auth)
            bodies.append(assert_json_error(response, 404, "not_found"))
    assert len({str(body) for body in bodies}) == 1, bodies
    # The stranger's token on my conversation, or none: the conversation's 404.
    assert_json_error(download(chat, mine, token=stranger.token), 404, "not_found")
    assert_json_error(chat.http.get(f"{attachments_url(chat)}/{mine}"), 404, "not_found")
    assert_json_error(upload(chat, b"x\n", headers={"Authorization": f"Bearer {stranger.token}"}), 404, "not_found")
    # Nothing of theirs was touched.
    assert download(stranger, theirs).content == b"theirs\n"


def test_delete_removes_the_attachment(live_server, chat_factory, store_kind):
    chat = chat_factory(live_server)
    body = upload(chat, samples.png(4, 4), "a.png").json()
    url = f"{attachments_url(chat)}/{body['attachment_id']}"
    response = chat.http.delete(url, headers=chat.auth)
    assert response.status_code == 204 and response.content == b""
    assert_json_error(chat.http.get(url, headers=chat.auth), 404, "not_found")
    assert_json_error(chat.http.delete(url, headers=chat.auth), 404, "not_found")
    assert attachment_store(live_server).used_bytes(chat.conversation_id) == 0
    assert attachment_traces(live_server, store_kind, chat.conversation_id, body["attachment_id"]) == []


def test_large_files_are_kept_and_deleted_whole(live_server_factory, chat_factory, store_kind):
    # On Redis in chunks (a download holds one at a time): every chunk goes with the delete.
    server = live_server_factory(ATTACHMENT_MAX_BYTES=2_000_000)
    chat = chat_factory(server)
    data = bytes(range(32, 127)) * 20_000 + b"\n"  # 1.9 MB of text
    body = upload(chat, data, "big.txt", headers={"Idempotency-Key": "big-1"}).json()
    assert sha256(download(chat, body["attachment_id"]).content) == sha256(data)
    left = attachment_traces(server, store_kind, chat.conversation_id, body["attachment_id"])
    # Redis: its meta, its key's entry and 8 chunks of 256 KiB; the directory: its file.
    assert len(left) == (2 + 8 if store_kind != "memory" else 1), left
    assert chat.http.delete(f"{attachments_url(chat)}/{body['attachment_id']}", headers=chat.auth).status_code == 204
    assert attachment_traces(server, store_kind, chat.conversation_id, body["attachment_id"]) == []
    again = upload(chat, data, "big.txt", headers={"Idempotency-Key": "big-1"}).json()  # the key was freed too
    assert again["attachment_id"] != body["attachment_id"]


# -- idempotency ----------------------------------------------------------------------------


def test_a_retried_upload_with_its_key_is_stored_once(live_server, chat_factory):
    chat = chat_factory(live_server)
    data = samples.png(5, 5)
    first = upload(chat, data, "a.png", headers={"Idempotency-Key": "up-1"})
    again = upload(chat, data, "a.png", headers={"Idempotency-Key": "up-1"})
    assert first.status_code == again.status_code == 201
    assert first.json() == again.json()
    by_field = upload(chat, data, "a.png", fields={"request_id": "up-1"})
    assert by_field.json() == first.json()
    assert attachment_store(live_server).used_bytes(chat.conversation_id) == len(data)
    other_key = upload(chat, data, "a.png", headers={"Idempotency-Key": "up-2"})
    assert other_key.json()["attachment_id"] != first.json()["attachment_id"]


def test_idempotency_key_refusals(live_server, chat_factory):
    chat = chat_factory(live_server)
    first = upload(chat, b"one\n", "a.txt", headers={"Idempotency-Key": "k1"}).json()
    conflict = assert_json_error(upload(chat, b"two\n", "a.txt", headers={"Idempotency-Key": "k1"}), 409)
    assert conflict["error"]["code"] == "request_id_conflict"
    assert conflict["error"]["details"] == {"attachment_id": first["attachment_id"]}
    mismatch = upload(chat, b"x\n", headers={"Idempotency-Key": "k2"}, fields={"request_id": "k3"})
    assert_json_error(mismatch, 400, "idempotency_key_mismatch")
    assert_json_error(upload(chat, b"x\n", headers={"Idempotency-Key": "no spaces"}), 400, "invalid_idempotency_key")
    assert_json_error(upload(chat, b"x\n", fields={"request_id": ""}), 400, "invalid_idempotency_key")


# -- the conversation's end -----------------------------------------------------------------


def test_deleting_the_conversation_removes_its_attachments(live_server, chat_factory, store_kind):
    chat, keep = chat_factory(live_server), chat_factory(live_server)
    for index in range(3):
        assert upload(chat, samples.png(3 + index, 3), f"{index}.png").status_code == 201
    kept = upload(keep, b"kept\n", "kept.txt").json()
    assert traces(live_server, store_kind, chat.conversation_id)
    response = chat.http.delete(f"/api/v1/conversations/{chat.conversation_id}", headers=chat.auth)
    assert response.status_code == 204
    assert traces(live_server, store_kind, chat.conversation_id) == []
    assert attachment_store(live_server).used_bytes(chat.conversation_id) == 0
    assert download(keep, kept["attachment_id"]).content == b"kept\n"


def test_attachments_expire_with_the_conversation(live_server_factory, chat_factory, store_kind, monkeypatch):
    server = live_server_factory(RETENTION="1m")
    store = server.app.extensions[SERVICES_KEY].store
    if store_kind == "memory":
        # The memory store's clock, moved by the test (MemoryStore(clock=…); tests/test_retention.py).
        now = [store._clock()]
        monkeypatch.setattr(store, "_clock", lambda: now[0])
    chat = chat_factory(server)
    assert upload(chat, samples.gif(2, 2), "a.gif").status_code == 201
    assert traces(server, store_kind, chat.conversation_id)
    if store_kind != "memory":
        # Redis's clock cannot be moved: the attachments' keys are under the conversation's
        # TTL, renewed with it, and within RETENTION (tests/test_api_privacy.py reads them all).
        url = server.app.config["WIDGET_SERVER"]["STORE"]
        client = redis_client(url)
        conv = keyspace_of(url).conversation(chat.conversation_id)
        assert 0 < client.pttl(conv) <= 60_000
        assert 0 < client.pttl(conv + META_SUFFIX) <= client.pttl(conv) + 50
        assert 0 < client.pttl(conv + BYTES_SUFFIX) <= client.pttl(conv) + 50
        client.close()
        return
    now[0] += 61
    probe = ChatClient(server.url)
    try:
        # The memory store forgets on its next access after the retention (a sweep): any request.
        assert probe.new_conversation()
        assert traces(server, store_kind, chat.conversation_id) == []
    finally:
        probe.close()
    assert_json_error(download(chat, "f_whatever000000"), 404, "not_found")


def test_uploads_count_against_the_conversations_rate_limit(live_server_factory, chat_factory):
    server = live_server_factory(RATE_LIMITS=True, RATE_LIMIT_ATTACHMENTS="2/minute")
    chat, other = chat_factory(server), chat_factory(server)
    assert upload(chat, b"1\n").status_code == 201
    assert upload(chat, b"2\n").status_code == 201
    limited = assert_json_error(upload(chat, b"3\n"), 429, "rate_limited")
    assert limited["error"]["details"]["limit"] == "attachments"
    assert upload(other, b"1\n").status_code == 201  # per conversation


# -- the directory store --------------------------------------------------------------------


def test_the_directory_store_is_bounded_in_total(live_server_factory, chat_factory, store_kind):
    if store_kind != "memory":
        pytest.skip("ATTACHMENTS_DIR_MAX_BYTES bounds the directory store; Redis is bounded by its maxmemory")
    server = live_server_factory(ATTACHMENTS_DIR_MAX_BYTES=2000)
    first, second = chat_factory(server), chat_factory(server)
    assert upload(first, b"a" * 1500, "a.txt").status_code == 201
    full = assert_json_error(upload(second, b"b" * 600, "b.txt"), 503, "attachment_store_full")
    assert full["error"]["message"]
    assert first.http.delete(f"/api/v1/conversations/{first.conversation_id}", headers=first.auth).status_code == 204
    assert upload(second, b"b" * 600, "b.txt").status_code == 201


def test_the_directory_store_refuses_a_foreign_folder_and_clears_its_own(tmp_path):
    foreign = tmp_path / "home"
    foreign.mkdir()
    (foreign / "thesis.tex").write_text("years of work")
    with pytest.raises(ConfigError, match="not an attachments folder"):
        load_settings({"ATTACHMENTS_DIR": str(foreign)})  # at start: one line, exit 2 from the CLI
    with pytest.raises(ConfigError, match="not an attachments folder"):
        DirectoryAttachmentStore(str(foreign), 1 << 20)
    assert (foreign / "thesis.tex").read_text() == "years of work"

    own = tmp_path / "attachments"
    store = DirectoryAttachmentStore(str(own), 1 << 20)
    assert (own / MARKER).exists()
    (own / "c_leftover").mkdir()
    (own / "c_leftover" / "f_old").write_bytes(b"old")
    DirectoryAttachmentStore(str(own), 1 << 20)  # a new process: the old conversations are gone
    assert sorted(os.listdir(own)) == [MARKER]
    store.close()


def raw_upload_head(server, chat, *, content_length: int) -> tuple[str, int, bytes]:
    """(host, port, the request line and headers) of an upload written by hand on a socket,
    announcing `content_length` bytes of a multipart body (boundary `b`)."""
    host, port = server.origin.removeprefix("http://").split(":")
    path = server.url.removeprefix(server.origin) + attachments_url(chat)
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {chat.token}\r\n"
        f"Content-Type: multipart/form-data; boundary=b\r\nContent-Length: {content_length}\r\n\r\n"
    ).encode()
    return host, int(port), head


def test_an_upload_cut_short_leaves_no_file(live_server, chat_factory, store_kind):
    chat = chat_factory(live_server)
    host, port, head = raw_upload_head(live_server, chat, content_length=100000)
    with socket.create_connection((host, port)) as sock:
        sock.sendall(
            head + b'--b\r\nContent-Disposition: form-data; name="file"; filename="x.txt"\r\n\r\n' + b"a" * 1000
        )
    # The server read what came and found the body short: nothing stored, nothing left.
    assert wait_until(lambda: upload(chat, b"after\n").status_code == 201)
    assert attachment_store(live_server).used_bytes(chat.conversation_id) == len(b"after\n")


def test_racing_uploads_cannot_overrun_the_budget(live_server_factory, chat_factory):
    # Ten uploads of 900 bytes at once against a budget of 2500: the check and the write are
    # one step (a Lua script on Redis, a lock in the directory store), so exactly two fit.
    server = live_server_factory(ATTACHMENT_MAX_BYTES=1000, ATTACHMENTS_MAX_BYTES_PER_CONVERSATION=2500)
    chat = chat_factory(server)
    start = threading.Barrier(10)
    statuses: list[int] = []

    def send(index: int) -> None:
        with http_client(base_url=server.url, timeout=30) as client:
            start.wait()
            response = client.post(
                attachments_url(chat), files={"file": (f"{index}.txt", b"%d" % index * 900)}, headers=chat.auth
            )
            statuses.append(response.status_code)

    threads = [threading.Thread(target=send, args=(index,)) for index in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(statuses) == [201] * 2 + [413] * 8
    assert attachment_store(server).used_bytes(chat.conversation_id) == 1800


def test_an_upload_that_trickles_in_is_cut_with_408(live_server_factory, chat_factory):
    server = live_server_factory(ATTACHMENT_UPLOAD_TIMEOUT_SECONDS=1.0)
    chat = chat_factory(server)
    host, port, head = raw_upload_head(server, chat, content_length=1000)
    started = time.monotonic()
    received = b""
    with socket.create_connection((host, port), timeout=20) as sock:
        sock.sendall(head)
        sock.settimeout(0.3)
        while time.monotonic() - started < 15 and not received:
            try:
                sock.sendall(b"a")
                received = sock.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                break
        sock.settimeout(5)
        while received and (more := sock.recv(65536)):
            received += more
    assert time.monotonic() - started < 9  # cut near the 1 s timeout, not after the body's 300 s
    assert received.startswith(b"HTTP/1.1 408"), received[:200]
    assert b'"body_timeout"' in received
    assert attachment_store(server).used_bytes(chat.conversation_id) == 0


# -- a plugin store -------------------------------------------------------------------------


class PluginStore(AttachmentStore):
    """An attachment store as a plugin would be one (docs/serving.md, "Attachments"): named by
    ATTACHMENT_STORE as `package.module:Class`, built as Class(settings, chat_store)."""

    def __init__(self, settings: dict[str, Any], chat_store: Any) -> None:
        self.settings = settings
        self.files: dict[tuple[str, str], tuple[AttachmentMeta, bytes]] = {}
        self.lock = threading.Lock()
        self.deleted: list[str] = []

    def put(self, meta: AttachmentMeta, data: BinaryIO, budget: int) -> tuple[AttachmentMeta, bool]:
        data.seek(0)
        content = data.read(meta.size)
        with self.lock:
            for known, _ in self.files.values():
                if meta.idempotency_key and (known.conversation_id, known.idempotency_key) == (
                    meta.conversation_id,
                    meta.idempotency_key,
                ):
                    return known, False
            used = self.used_bytes(meta.conversation_id)
            if used + meta.size > budget:
                raise BudgetExceeded(used, budget)
            self.files[(meta.conversation_id, meta.attachment_id)] = (meta, content)
        return meta, True

    def get(self, conversation_id: str, attachment_id: str) -> AttachmentMeta | None:
        found = self.files.get((conversation_id, attachment_id))
        return found[0] if found else None

    def open(self, conversation_id: str, attachment_id: str) -> BinaryIO | None:
        found = self.files.get((conversation_id, attachment_id))
        return io.BytesIO(found[1]) if found else None

    def delete(self, conversation_id: str, attachment_id: str) -> bool:
        return self.files.pop((conversation_id, attachment_id), None) is not None

    def delete_conversation(self, conversation_id: str) -> None:
        self.deleted.append(conversation_id)
        for key in [key for key in self.files if key[0] == conversation_id]:
            del self.files[key]

    def used_bytes(self, conversation_id: str) -> int:
        return sum(meta.size for (cid, _), (meta, _) in list(self.files.items()) if cid == conversation_id)


def test_a_plugin_store_named_by_the_setting_keeps_the_files(live_server_factory, chat_factory):
    server = live_server_factory(ATTACHMENT_STORE=f"{__name__}:PluginStore")
    store = attachment_store(server)
    assert isinstance(store, PluginStore)
    chat = chat_factory(server)
    data = samples.png(6, 6)
    body = upload(chat, data, "plugged.png").json()
    assert store.files[(chat.conversation_id, body["attachment_id"])][1] == data
    assert download(chat, body["attachment_id"]).content == data
    assert chat.http.delete(f"/api/v1/conversations/{chat.conversation_id}", headers=chat.auth).status_code == 204
    assert chat.conversation_id in store.deleted and store.files == {}


def test_an_unknown_attachment_store_stops_the_server_at_start():
    with pytest.raises(ConfigError, match=r"ATTACHMENT_STORE.*no attachment store 's3'"):
        load_settings({"ATTACHMENT_STORE": "s3"})
    with pytest.raises(ConfigError, match="ATTACHMENT_STORE: cannot load"):
        create_app({**TEST_CONFIG, "ATTACHMENT_STORE": "no_such_module:Store"}, environ={})


# -- under widget-server (gunicorn, gevent) -------------------------------------------------


@pytest.mark.slow
@pytest.mark.xdist_group("processes")
def test_uploads_round_trip_under_widget_server_with_either_framing():
    server = ServerProcess({**TEST_CONFIG, "ATTACHMENT_MAX_BYTES": 3_000_000}).start()
    chat = ChatClient(server.url).new_conversation()
    try:
        data = b"".join(b"row %07d,%d\n" % (i, i * 7) for i in range(150_000))  # 2.3 MB
        sent = upload(chat, data, "rows.csv")
        assert sent.status_code == 201, sent.text
        assert (sent.json()["type"], sent.json()["sha256"]) == ("csv", sha256(data))
        assert sha256(download(chat, sent.json()["attachment_id"]).content) == sha256(data)

        def pieces():
            yield b'--b\r\nContent-Disposition: form-data; name="file"; filename="rows.txt"\r\n\r\n'
            for start in range(0, len(data), 100_000):
                yield data[start : start + 100_000]
            yield b"\r\n--b--\r\n"

        chunked = chat.http.post(
            attachments_url(chat),
            content=pieces(),
            headers={**chat.auth, "Content-Type": "multipart/form-data; boundary=b"},
        )
        assert chunked.status_code == 201, chunked.text
        assert chunked.json()["sha256"] == sha256(data)
        too_big = upload(chat, data + data, "twice.txt")
        assert_json_error(too_big, 413, "attachment_too_large")
    finally:
        chat.close()
        server.stop()
