"""The files a visitor sent, in the agents' console (docs/agents.md, "Files the visitor sent";
docs/accessibility.md A94 and on are the widget's; this is the console's side).

In real Chromium and Firefox ESR against a real server: a visitor uploads a screenshot and a
log and sends them with a question, then asks for a person; the agent opens the conversation
and finds each file listed under the question (its name, kind and size), the screenshot shown
with the visitor's description as its alternative text, and each link downloading exactly
the bytes sent (SHA-256) with the agent's session. axe finds nothing in the console.
"""

from __future__ import annotations

import hashlib
import re
import uuid

import pytest
from playwright.sync_api import expect

from .. import attachment_samples as samples
from ..helpers import HTTP
from .test_agent_console import Visitor, claim, signed_in, start_handoff_server

pytestmark = pytest.mark.e2e


@pytest.fixture
def handoff_server(chat_server_factory, tmp_path):
    return start_handoff_server(chat_server_factory, tmp_path)


def upload(visitor: Visitor, data: bytes, name: str) -> dict:
    response = HTTP.post(visitor.url + "/attachments", files={"file": (name, data)}, headers=visitor.headers)
    assert response.status_code == 201, response.text
    body: dict = response.json()
    return body


def test_the_agent_sees_and_downloads_the_files_sent_with_a_question(handoff_server, context):
    console = signed_in(context, handoff_server, "ana")
    visitor = Visitor.start(handoff_server)
    image, log = samples.png(40, 24), b"Error 0x80070005 at step 3\n"
    shot = upload(visitor, image, "screen.png")
    text = upload(visitor, log, "install.log")
    body = {
        "request_id": uuid.uuid4().hex,
        "text": "It fails here",
        "attachments": [
            {"attachment_id": shot["attachment_id"], "description": "The installer's error"},
            text["attachment_id"],
        ],
    }
    with HTTP.stream("POST", visitor.url + "/messages", json=body, headers=visitor.headers) as answer:
        assert answer.status_code == 200
        assert b"message.completed" in answer.read()
    assert visitor.ask_for_a_person()["state"] == "queued"
    expect(console.entry(visitor.conversation_id)).to_be_visible()
    claim(console, visitor)
    question = console.transcript.filter(has_text="It fails here")
    files = question.get_by_role("list", name="Files sent")
    expect(files.get_by_role("listitem")).to_have_count(2)
    screenshot = files.get_by_role("img", name="The installer's error")
    expect(screenshot).to_be_visible()
    expect(screenshot).to_have_js_property("naturalWidth", 40)  # decoded: the real bytes arrived
    # Name, kind and size, the size in the console's language (Intl.NumberFormat, CLDR units).
    image_link = files.get_by_role("link", name=re.compile(r"^screen\.png \(PNG, \d+ bytes\)$"))
    log_link = files.get_by_role("link", name=f"install.log (text, {len(log)} bytes)", exact=True)
    expect(image_link).to_have_attribute("download", "screen.png")
    expect(log_link).to_have_attribute("download", "install.log")
    for link, data in ((image_link, image), (log_link, log)):
        fetched = console.page.request.get(link.evaluate("link => link.href"))
        assert fetched.status == 200
        assert hashlib.sha256(fetched.body()).hexdigest() == hashlib.sha256(data).hexdigest()
        assert fetched.headers["content-security-policy"] == "sandbox"
    console.assert_accessible()
