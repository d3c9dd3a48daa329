"""The `openai` backend keeps the API key out of the log in any case or encoding
(docs/security.md, "Production defaults": an upper-cased echo of the key reached the log). A
real provider (a local OpenAI-compatible server speaking the wire format) echoes the key in the
forms a proxy, a gateway or an error page might, in each place the backend quotes provider
text: the error's message, type and code, a redirect's `Location`, an error event in the
stream, a line that is not JSON, and a plain-text error body.
"""

from __future__ import annotations

import base64
import json
import logging
import uuid
from collections.abc import Iterator
from urllib.parse import quote

import pytest

from tests.fake_openai import FakeOpenAI, Reply
from tests.helpers import ChatClient

API_KEY = "sk-proj-Redact_Me-" + "9fQz" * 8


def b64(text: str) -> str:
    return base64.b64encode(text.encode("utf-8")).decode("ascii")


# The key as an upstream may echo it, and the substrings that must never reach the log.
ECHOES = {
    "as is": API_KEY,
    "upper case": API_KEY.upper(),
    "lower case": API_KEY.lower(),
    "URL-encoded": quote(API_KEY, safe=""),
    "every byte %XX": "".join(f"%{byte:02X}" for byte in API_KEY.encode()),
    "base64": b64(API_KEY),
    "base64 of Bearer <key>": b64(f"Bearer {API_KEY}"),
    "base64 of user:<key>": b64(f"user:{API_KEY}"),
    "URL-safe base64, unpadded": base64.urlsafe_b64encode(b"x" + API_KEY.encode()).decode().rstrip("="),
}
# Long enough that a leak of any of them is the key's, not chance: each form's own core.
FORBIDDEN = [
    API_KEY,
    API_KEY.upper(),
    API_KEY.lower(),
    quote(API_KEY, safe=""),
    b64(API_KEY)[:-4],
    b64(f"Bearer {API_KEY}")[12:-4],
    b64(f"user:{API_KEY}")[8:-4],
    base64.urlsafe_b64encode(b"x" + API_KEY.encode()).decode()[4:-4],
]


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI().start()
    yield server
    server.stop()


def echo(form: str) -> str:
    return f"Upstream saw credential {form} (check it)"


def replies() -> dict[str, Reply]:
    """One failing reply per place the backend quotes provider text, for every echo."""
    cases: dict[str, Reply] = {}
    for name, form in ECHOES.items():
        cases[f"message, {name}"] = Reply(
            status=500, error={"message": echo(form), "type": "server_error", "param": None, "code": None}
        )
        cases[f"type and code, {name}"] = Reply(
            status=400, error={"message": "bad", "type": f"t-{form}", "param": None, "code": f"c-{form}"}
        )
        cases[f"Location, {name}"] = Reply(status=302, headers={"Location": f"https://gw.example/{form}"})
        cases[f"stream error event, {name}"] = Reply(
            content=["Hi"], raw_events=[b"data: " + json.dumps({"error": {"message": echo(form)}}).encode() + b"\n\n"]
        )
        cases[f"not JSON, {name}"] = Reply(content=["Hi"], raw_events=[f"data: {form} is not json\n\n".encode()])
        cases[f"plain-text body, {name}"] = Reply(status=503, body=echo(form).encode())
    return cases


def test_openai_backend_redacts_the_key_in_any_case_or_encoding_from_the_log(
    live_server_factory, fake, monkeypatch, caplog
):
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    caplog.set_level(logging.DEBUG)  # everything: widget_server, httpx, httpcore, werkzeug
    server = live_server_factory(
        BACKEND="openai", OPENAI_BASE_URL=fake.url + "/v1", OPENAI_TIMEOUT_SECONDS=10, LOG_LEVEL="DEBUG"
    )
    cases = replies()
    for question, reply in cases.items():
        fake.reply(question, reply)
    chat = ChatClient(server.url).new_conversation()
    try:
        for question in cases:
            result = chat.send(question, "r-" + uuid.uuid4().hex)
            assert result.kinds[-1] == "message.failed", (question, result.kinds)
            for secret in FORBIDDEN:
                assert secret not in result.raw.decode("utf-8"), question
    finally:
        chat.close()
    assert all(exchange.headers["authorization"] == f"Bearer {API_KEY}" for exchange in fake.exchanges)
    log = caplog.text
    # The failures were logged, with the provider's words around the removed key.
    assert log.count("[redacted]") >= len(cases), log
    assert "Upstream saw credential [redacted] (check it)" in log
    assert "https://gw.example/[redacted]" in log
    for secret in FORBIDDEN:
        assert secret not in log, secret
