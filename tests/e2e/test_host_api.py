"""The host page's API (docs/embedding.md, "Driving the widget from your page"), in real
Chromium and Firefox ESR, from a host page on another origin (tests/e2e/hosting.py).

A host page's own script listens with `ChatWidget.on()` from the moment the loader runs and
sets its context; the test then opens the chat, sends a message typed and one through
`ChatWidget.send()`, asks for a person whom an agent takes and lets go, and closes it. Every
event the page heard is checked at once, in order, each exactly once: `answer-completed`
carries the very text the server stored and its SHA-256 (hashlib's, of the stored text),
`answer-failed` the server's code, and the backend got the page's context. Then: a send
before the panel was ever opened, and `setComposer()`, which fills the composer and moves no
focus. The contract lines (A128–A130) are test_accessibility_contract_host_api.py's.
"""

from __future__ import annotations

import hashlib
import json
import urllib.request
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from widget_server.i18n import ui_strings
from widget_server.testing import HOST_EVENTS, ChatWidget

from .conftest import chat_base_url
from .test_handoff_widget import HANDOFF_SETTINGS, Agent, conversation_of, fmt, talk_to_a_person
from .test_host_pages import history_of, loader_tag, publish

pytestmark = pytest.mark.e2e

EN = ui_strings()["en"]
HANDOFF = EN["handoff"]
CONTEXT = {"page": "/pricing", "plan": "pro", "seats": 3, "trial": False}

# The host page's own script, after the loader (module scripts run after `defer` ones, in
# document order): it listens to every event from the start, and sets its context.
PAGE_SCRIPT = f"""<script type="module">
window.hostEvents = [];
for (const name of {json.dumps(list(HOST_EVENTS))})
  ChatWidget.on(name, (event) => hostEvents.push({{ name, detail: event.detail ?? null }}));
ChatWidget.setContext({json.dumps(CONTEXT)});
</script>"""


def host_page(
    page: Page, host_site, server, browser_name: str, path: str, *, body: str = "", **data: str
) -> ChatWidget:
    chat_url = chat_base_url(server, browser_name)
    page.goto(publish(host_site, path, body=body + loader_tag(chat_url, **data) + PAGE_SCRIPT))
    widget = ChatWidget(page, chat_url=chat_url)
    widget.wait_for_widget()
    return widget


def heard(page: Page) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = page.evaluate("() => hostEvents")
    return events


def wait_for(page: Page, name: str, count: int = 1) -> None:
    page.wait_for_function(
        "([name, count]) => hostEvents.filter((e) => e.name === name).length >= count", arg=[name, count]
    )


def stored_answers(server, widget: ChatWidget) -> list[dict[str, Any]]:
    return [message for message in history_of(server, widget) if message["role"] == "assistant"]


def stored_message(server, widget: ChatWidget, message_id: str) -> dict[str, Any]:
    """`GET …/messages/<id>`: an answer as the server stored it (a failed one too, which the
    history leaves out)."""
    cid, token = conversation_of(widget)
    request = urllib.request.Request(
        f"{server.url}/api/v1/conversations/{cid}/messages/{message_id}", headers={"Authorization": f"Bearer {token}"}
    )
    with urllib.request.urlopen(request) as response:
        message: dict[str, Any] = json.load(response)
    return message


def test_events_fire_once_in_order_with_the_stored_texts_sha256(
    page: Page, host_site, chat_server_factory, browser_name
):
    server = chat_server_factory(**HANDOFF_SETTINGS)
    agent = Agent(server)
    agent.present()
    widget = host_page(page, host_site, server, browser_name, "/events")

    widget.open()
    wait_for(page, "ready")
    widget.send("/scenario context")  # typed: the demo backend answers with the context it got
    assert widget.wait_until_complete() == "completed"
    wait_for(page, "answer-completed")
    widget.send_from_page("/scenario fail-provider")
    assert widget.wait_until_complete() == "failed"
    wait_for(page, "answer-failed")

    talk_to_a_person(widget)
    widget.wait_for_announcement(HANDOFF["queuedNext"])
    cid, _ = conversation_of(widget)
    agent.claim(cid)
    widget.wait_for_announcement(fmt(HANDOFF["assigned"], agent="Ana"))
    agent.end(cid)
    wait_for(page, "handoff-state", 3)
    widget.page.keyboard.press("Escape")
    expect(widget.launcher).to_have_attribute("aria-expanded", "false")
    wait_for(page, "close")

    events = heard(page)
    assert [event["name"] for event in events] == [
        "show",
        "open",
        "ready",
        "message-sent",
        "answer-started",
        "answer-completed",
        "message-sent",
        "answer-started",
        "answer-failed",
        "handoff-state",
        "handoff-state",
        "handoff-state",
        "hide",
        "close",
    ]
    (completed_answer,) = stored_answers(server, widget)
    (failed,) = [event["detail"] for event in events if event["name"] == "answer-failed"]
    failed_answer = stored_message(server, widget, failed["messageId"])
    assert failed_answer["state"] == "failed" and failed_answer["error"]["code"] == "provider"
    sent = [event["detail"] for event in events if event["name"] == "message-sent"]
    assert [detail["text"] for detail in sent] == ["/scenario context", "/scenario fail-provider"]
    started = [event["detail"]["messageId"] for event in events if event["name"] == "answer-started"]
    assert started == [completed_answer["message_id"], failed_answer["message_id"]]

    (completed,) = [event["detail"] for event in events if event["name"] == "answer-completed"]
    assert completed["messageId"] == completed_answer["message_id"]
    assert completed["text"] == completed_answer["text"]
    assert completed["sha256"] == hashlib.sha256(completed_answer["text"].encode("utf-8")).hexdigest()
    # The page's context reached the backend (Turn.context), exactly.
    for key, value in CONTEXT.items():
        assert f"- {json.dumps(key)}: {json.dumps(value)}\n" in completed["text"]

    assert failed == {"messageId": failed_answer["message_id"], "code": "provider"}
    states = [event["detail"] for event in events if event["name"] == "handoff-state"]
    assert states == [{"state": "queued"}, {"state": "assigned"}, {"state": "none"}]


def test_a_send_before_the_first_open_answers_with_the_panel_still_closed(
    page: Page, host_site, chat_server, browser_name
):
    widget = host_page(page, host_site, chat_server, browser_name, "/early")
    widget.send_from_page("/echo Sent by the page before anyone opened the chat.")
    wait_for(page, "answer-completed")
    expect(widget.launcher).to_have_attribute("aria-expanded", "false")
    expect(widget.iframe).to_be_hidden()
    assert [event["name"] for event in heard(page)] == ["ready", "message-sent", "answer-started", "answer-completed"]
    (stored,) = stored_answers(chat_server, widget)
    completed = heard(page)[-1]["detail"]
    assert completed["text"] == stored["text"] == "Sent by the page before anyone opened the chat."
    assert completed["sha256"] == hashlib.sha256(stored["text"].encode("utf-8")).hexdigest()
    # The answer came while closed: counted unread, shown once opened.
    expect(widget.launcher).to_have_attribute("data-unread", "1")
    widget.open()
    expect(widget.turns).to_have_count(2)
    expect(widget.answers.last).to_have_attribute("data-state", "completed")
    assert [event["name"] for event in heard(page)][-2:] == ["show", "open"]
    assert [event["name"] for event in heard(page)].count("ready") == 1


def test_set_composer_fills_the_composer_and_leaves_focus_where_it_was(
    page: Page, host_site, chat_server, browser_name
):
    widget = host_page(page, host_site, chat_server, browser_name, "/composer", body='<input id="search">')
    page.locator("#search").focus()
    widget.set_composer("A draft from the page")
    expect(widget.input).to_have_value("A draft from the page")
    expect(page.locator("#search")).to_be_focused()
    expect(widget.launcher).to_have_attribute("aria-expanded", "false")
    # Open: the draft waits in the composer, and sending it is the visitor's choice.
    widget.open()
    expect(widget.input).to_have_value("A draft from the page")
    page.locator("#search").focus()
    widget.set_composer("Another draft")
    expect(widget.input).to_have_value("Another draft")
    expect(page.locator("#search")).to_be_focused()
    expect(widget.turns).to_have_count(0)


def test_values_out_of_bounds_are_ignored_and_the_page_is_told(page: Page, host_site, chat_server, browser_name):
    widget = host_page(page, host_site, chat_server, browser_name, "/bounds")
    errors: list[str] = []
    page.on("console", lambda message: message.type == "error" and errors.append(message.text))
    widget.open()
    wait_for(page, "ready")
    # Too long for the composer, not a string: ignored. A nested context: refused, the previous
    # one stays (the page's, set by PAGE_SCRIPT).
    page.evaluate("() => ChatWidget.send('x'.repeat(4001))")
    page.evaluate("() => ChatWidget.setComposer({ text: 'not a string' })")
    page.evaluate("() => ChatWidget.setContext({ nested: { plan: 'pro' } })")
    page.evaluate("() => ChatWidget.setContext({ page: 'x'.repeat(2100) })")
    page.evaluate("() => ChatWidget.setContext({ page: 'bell\\u0007' })")  # the server would refuse it
    widget.send_from_page("/scenario context")
    wait_for(page, "answer-completed")
    assert [event["name"] for event in heard(page)].count("message-sent") == 1
    text = heard(page)[-1]["detail"]["text"]
    assert '- "plan": "pro"' in text and "nested" not in text
    expect(widget.input).to_have_value("")
    assert len([error for error in errors if "setContext() ignored" in error]) == 3, errors


def test_a_message_the_server_refuses_fails_with_the_refusals_code(page: Page, host_site, chat_server, browser_name):
    # Fault injection the server cannot read (widget_server/faults.py): every request that
    # carries it is refused, 400 `invalid_faults`, before any answer exists.
    widget = host_page(page, host_site, chat_server, browser_name, "/refused", faults="bogus")
    widget.send_from_page("/echo Never answered.")
    wait_for(page, "answer-failed")
    assert [event["name"] for event in heard(page)] == ["ready", "message-sent", "answer-failed"]
    assert heard(page)[-1]["detail"] == {"messageId": "", "code": "invalid_faults"}
