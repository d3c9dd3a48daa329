"""What the visitor is told when the server refuses or has lost an answer:
a rate limit, an unreachable store, an answer gone after a store restart —
always a clear sentence in the visitor's language, in the alert region,
never a raw code or JSON, and never shown as the answer."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.e2e


def alert_texts(widget) -> list[str]:
    return [a["text"] for a in widget.announcements() if a["politeness"] == "assertive"]


@pytest.mark.parametrize(
    ("lang", "expected"),
    [
        ("en", r"You are sending messages faster than this chat allows\. Wait \d+ seconds, then send again\."),
        ("es", r"Estás enviando mensajes más rápido de lo que este chat permite\. Espera \d+ segundos"),
    ],
)
def test_a_rate_limited_message_says_how_long_to_wait(embed, chat_server_factory, lang, expected):
    server = chat_server_factory(RATE_LIMITS=True, RATE_LIMIT_MESSAGES_CONVERSATION="1/minute", RATE_LIMIT_CLIENT="")
    widget = embed(server, lang=lang)
    widget.open()
    widget.send("/echo first")
    assert widget.wait_until_complete() == "completed"
    widget.send("/echo second")
    assert widget.wait_until_complete() == "failed"
    answer = widget.last_answer()
    expect(answer).to_have_class(re.compile("turn--failed"))
    expect(answer.locator(".turn__status")).to_contain_text(re.compile(expected))
    expect(answer.locator(".turn__body")).to_be_empty()
    assert len(alert_texts(widget)) == 1 and re.search(expected, alert_texts(widget)[0])
    widget.assert_accessible()


def test_an_answer_lost_by_the_server_is_said_to_be_lost(embed, chat_server_factory):
    """A store restarted without persistence forgets the answer mid-stream:
    the resume gets 404, and the visitor hears that the answer is gone."""
    # A 1 s heartbeat: the open stream notices the vanished answer at its next
    # idle check instead of after the default 15 s.
    server = chat_server_factory(DEMO_DELAY_SECONDS=0.3, HEARTBEAT_SECONDS=1)
    widget = embed(server, faults="drop-after=3")
    widget.open()
    widget.send("which arpeggio fits Am F C G")
    expect(widget.last_answer().locator(".turn__body")).not_to_be_empty()
    store = server.service.store
    with store._lock:  # what a restart of the store without persistence does
        store._conversations.clear()
        store._messages.clear()
        for order in store._by_retention.values():  # each retention's least-recently-used order
            order.clear()
    assert widget.wait_until_complete() == "failed"
    expect(widget.last_answer().locator(".turn__status")).to_contain_text(
        "This answer is no longer available on the server. What arrived is incomplete; ask again."
    )
    assert alert_texts(widget)[-1].startswith("This answer is no longer available")
