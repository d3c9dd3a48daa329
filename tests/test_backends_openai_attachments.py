"""The `openai` backend sends a turn's files (docs/backends.md, "Files with a question").

Through the real chat server to tests/fake_openai.py (a provider-format server on loopback
that records each request body): an image goes as an `image_url` part whose base64 `data:` URL
decodes to the exact bytes uploaded, a PDF as a `file` part, a text file inline in a text part
(cut at OPENAI_INLINE_TEXT_MAX_CHARS, and the model told so); the provider refusing a file is
the `validation` error with a sentence that names the file, never saved as an answer.
"""

# The provider and server fixtures are test_backends_openai.py's, imported: their names are
# then parameters of the tests here (F811).
# ruff: noqa: F811

from __future__ import annotations

import base64
import hashlib

from . import attachment_samples as samples
from .fake_openai import Reply
from .helpers import ChatClient, StreamResult
from .test_api_attachments import upload
from .test_backends_openai import api_key, fake, openai_server  # noqa: F401 - fixtures


def uploaded(chat: ChatClient, data: bytes, name: str) -> str:
    response = upload(chat, data, name)
    assert response.status_code == 201, response.text
    attachment_id: str = response.json()["attachment_id"]
    return attachment_id


def send(chat: ChatClient, text: str, attachments: list) -> StreamResult:
    body = {"request_id": "with-files", "text": text, "attachments": attachments}
    return chat.stream("POST", chat.messages_url(), json=body)


def data_url_bytes(url: str, media_type: str) -> bytes:
    prefix = f"data:{media_type};base64,"
    assert url.startswith(prefix), url[:80]
    return base64.b64decode(url[len(prefix) :], validate=True)


def test_the_request_carries_the_image_the_pdf_and_the_text_file_exactly(openai_server, fake, chat_factory):
    server = openai_server()
    chat = chat_factory(server)
    image, pdf = samples.png(12, 7), samples.pdf()
    text = "col one,col two\nÜmlaut,✓\n" * 3
    ids = [
        uploaded(chat, image, "screen.png"),
        uploaded(chat, pdf, "invoice.pdf"),
        uploaded(chat, text.encode(), "notes.txt"),
    ]
    attachments = [{"attachment_id": ids[0], "description": "the error dialog"}, ids[1], ids[2]]
    result = send(chat, "What is wrong here?", attachments)
    assert result.kinds[-1] == "message.completed", result.payloads[-1]
    body = fake.exchanges[0].body
    parts = body["messages"][-1]["content"]
    assert body["messages"][-1]["role"] == "user"
    assert [part["type"] for part in parts] == ["text", "text", "image_url", "text", "file", "text"]
    assert parts[0] == {"type": "text", "text": "What is wrong here?"}
    assert parts[1]["text"] == (
        f"Attached file: screen.png (png, {len(image)} bytes). The visitor describes it: the error dialog"
    )
    assert data_url_bytes(parts[2]["image_url"]["url"], "image/png") == image
    assert parts[3]["text"] == f"Attached file: invoice.pdf (pdf, {len(pdf)} bytes)"
    assert parts[4]["file"]["filename"] == "invoice.pdf"
    assert hashlib.sha256(data_url_bytes(parts[4]["file"]["file_data"], "application/pdf")).digest() == (
        hashlib.sha256(pdf).digest()
    )
    assert parts[5]["text"] == f"Attached file: notes.txt (text, {len(text.encode())} bytes):\n\n{text}"


def test_a_long_text_file_is_cut_and_the_model_is_told(openai_server, fake, chat_factory):
    server = openai_server(OPENAI_INLINE_TEXT_MAX_CHARS=1000)
    chat = chat_factory(server)
    text = "".join(f"line {n:05d}\n" for n in range(500))  # 5,500 characters
    result = send(chat, "", [uploaded(chat, text.encode(), "long.log")])
    assert result.kinds[-1] == "message.completed"
    (part,) = fake.exchanges[0].body["messages"][-1]["content"]
    head = (
        f"Attached file: long.log (text, {len(text)} bytes). Only its first 1000 of {len(text)} characters follow:\n\n"
    )
    assert part == {"type": "text", "text": head + text[:1000]}


def test_words_only_stay_a_plain_string(openai_server, fake, chat_factory):
    chat = chat_factory(openai_server())
    chat.send("just words", "words")
    assert fake.exchanges[0].body["messages"][-1] == {"role": "user", "content": "just words"}


def test_a_provider_refusing_a_file_is_a_validation_error_never_an_answer(openai_server, fake, chat_factory):
    server = openai_server()
    chat = chat_factory(server)
    fake.reply(
        "Can you see this?",
        Reply(
            status=400,
            error={
                "message": "You uploaded an unsupported image.",
                "type": "invalid_request_error",
                "code": "invalid_image_format",
            },
        ),
    )
    result = send(chat, "Can you see this?", [uploaded(chat, samples.gif(2, 2), "anim.gif")])
    assert result.kinds[-1] == "message.failed"
    error = result.payloads[-1]["error"]
    assert error["code"] == "validation"
    assert error["message"] == (
        "The answer service could not take a file sent with this message. "
        "Send the question without it, or the file in another format."
    )
    history = chat.history().json()["messages"]
    assert [message["role"] for message in history] == []
