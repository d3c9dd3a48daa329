"""The widget's side of the hand-off's bounds (docs/protocol.md, "Bounds of the hand-off").

Real Chromium and Firefox ESR, a real chat server on loopback, the queue and the store filled
through the server's own HandoffService. A full queue (`unavailable`, reason `busy`) offers the
leave-a-message form, as nobody there does; a full memory store (503 `handoff_store_full`)
is said as an error, in the alert region, never as an answer or a hand-off state.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from widget_server.errors import ApiError
from widget_server.services import SERVICES_KEY

from .test_handoff_widget import HANDOFF, assertive, conversation_of, fmt, talk_to_a_person
from .test_refusal_language import refusals

pytestmark = pytest.mark.e2e


def test_a_full_queue_offers_to_leave_a_message(embed, chat_server_factory):
    server = chat_server_factory(HANDOFF="on", HANDOFF_QUEUE_MAX=1)
    service = server.app.extensions[SERVICES_KEY].handoff
    service.agent_seen("ana")
    assert service.request(server.service.create_conversation()[0], "r")["state"] == "queued"
    widget = embed(server)
    widget.open()
    talk_to_a_person(widget)
    widget.wait_for_announcement(HANDOFF["unavailable"])
    form = widget.frame.get_by_role("form", name=HANDOFF["formTitle"])
    form.get_by_role("textbox", name=HANDOFF["message"]).fill("Call me when there is room.")
    form.get_by_role("button", name=HANDOFF["submit"]).press("Enter")
    widget.wait_for_announcement(HANDOFF["left"])
    cid, _ = conversation_of(widget)
    assert service.state(cid) == {"state": "none"}
    assert [(m["conversation_id"], m["text"]) for m in service.inbox()] == [(cid, "Call me when there is room.")]
    assert not assertive(widget)
    widget.assert_accessible()


def test_a_full_store_is_said_as_an_error_not_an_answer(embed, chat_server_factory):
    server = chat_server_factory(HANDOFF="on", HANDOFF_MEMORY_STORE_MAX_BYTES=65536)
    service = server.app.extensions[SERVICES_KEY].handoff
    service.agent_seen("ana")
    refusal = None
    for n in range(400):  # queued hand-offs, each going on, until the store has no room for one more
        try:
            service.request(server.service.create_conversation()[0], f"r{n}")
        except ApiError as error:
            refusal = error
            break
    assert refusal is not None and refusal.code == "handoff_store_full"
    widget = embed(server)
    widget.open()
    talk_to_a_person(widget)
    # Worded from the code in the panel's language (static/widget/refusals.js), not the message.
    said = fmt(HANDOFF["failed"], reason=refusals("en")[refusal.code])
    widget.wait_for_announcement(said)
    assert assertive(widget) == [said]
    expect(widget.frame.get_by_role("form", name=HANDOFF["formTitle"])).to_have_count(0)
    # Nothing in the transcript: neither an answer nor a hand-off notice.
    expect(widget.frame.locator("[data-chat-transcript] > li")).to_have_count(0)
    cid, _ = conversation_of(widget)
    assert service.state(cid) == {"state": "none"}
    widget.assert_accessible()
