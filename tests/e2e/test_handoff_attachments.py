"""Files sent to a person during a hand-off (docs/protocol.md, "Hand-off to
a person": "Files to the person").

Real Chromium and Firefox ESR, a real chat server: while an agent holds the conversation the
visitor drops a screenshot on the panel, describes it and sends it with a line of text; it
goes to the person (the console's transcript lists it with the bytes' SHA-256), never to the
assistant; the pending list empties, the visitor's turn shows the file; after a reload the
history shows it again. axe finds nothing with the file pending and sent.
"""

from __future__ import annotations

import hashlib

import pytest
from playwright.sync_api import expect

from ..attachment_samples import png
from .test_attachments_widget import drop, pending, row, wait_until_ready
from .test_handoff_widget import Agent, joined_by, wait_until, waiting_in_line

pytestmark = pytest.mark.e2e

SHOT = ("error.png", "image/png", png(36, 20))


@pytest.fixture
def handoff_server(chat_server_factory):
    return chat_server_factory(HANDOFF="on", HEARTBEAT_SECONDS=1)


def test_a_screenshot_goes_to_the_person_exactly_and_stays_after_a_reload(embed, handoff_server):
    agent = Agent(handoff_server)
    agent.present()
    widget, cid = waiting_in_line(embed, handoff_server)
    joined_by(agent, widget, cid)
    drop(widget, SHOT)
    wait_until_ready(widget, "error.png")
    row(widget, "error.png").get_by_label("Describe this image (optional)").fill("The payment error")
    widget.assert_accessible()  # a file pending during a hand-off
    widget.input.fill("This is what I see")
    widget.input.press("Enter")
    expect(pending(widget)).to_have_count(0)
    turn = widget.frame.locator(".turn--user").last
    expect(turn.get_by_role("img", name="The payment error")).to_be_visible()

    def reached() -> list[dict]:
        return [m for m in agent.service.transcript(cid) if m.get("role") == "visitor" and m.get("attachments")]

    wait_until(lambda: bool(reached()))
    (message,) = reached()
    assert message["text"] == "This is what I see"
    (file,) = message["attachments"]
    assert file["name"] == "error.png" and file["description"] == "The payment error"
    assert file["sha256"] == hashlib.sha256(SHOT[2]).hexdigest()
    assert handoff_server.service.store.exchanges(cid) == []  # the assistant never saw it
    widget.assert_accessible()  # sent
    widget.page.reload()
    widget.launcher.wait_for()
    widget.open()
    restored = widget.frame.locator(".turn--user").filter(has_text="This is what I see")
    expect(restored.get_by_role("img", name="The payment error")).to_be_visible()
    expect(restored).to_contain_text("error.png")
