"""A refused request is explained in the visitor's language (docs/accessibility.md A89–A90):
the panel words the reason from the error's `code` (static/widget/refusals.js and
static/widget/i18n/refusals/<lang>.json), never from the server's English `message`.

Real refusals from a real server, in Spanish and Arabic panels, in Chromium and Firefox:
a message longer than the server's MAX_TEXT_CHARS (the composer's own limit taken off, as
an older page or another client would send it), feedback on an answer whose conversation
was deleted elsewhere, and the same long message when the refusal texts cannot be fetched
(the panel's own general text, still not English).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from playwright.sync_api import expect

from widget_server.testing import ChatWidget

from ..helpers import REPO_ROOT

pytestmark = pytest.mark.e2e

I18N = REPO_ROOT / "static" / "widget" / "i18n"
LANGS = ("es", "ar")


def strings(lang: str) -> dict[str, Any]:
    return json.loads((I18N / f"{lang}.json").read_text(encoding="utf-8"))


def refusals(lang: str) -> dict[str, str]:
    return json.loads((I18N / "refusals" / f"{lang}.json").read_text(encoding="utf-8"))["refusals"]


# Words of the server's English messages for these refusals (chat/api.py user_text, errors.py
# MESSAGE_NOT_FOUND / CONVERSATION_NOT_FOUND): none may reach a Spanish or Arabic panel.
ENGLISH_SERVER_WORDS = ("characters", "the limit is", "Shorten the message", "No such", "token")

MAX_TEXT_CHARS = 40
TOO_LONG = "¿Qué acorde sigue a La menor en esta progresión tan larga?"  # 58 characters


def alerts(widget: ChatWidget) -> list[str]:
    return [entry["text"] for entry in widget.announcements() if entry["politeness"] == "assertive"]


def wait_for_alert(widget: ChatWidget) -> str:
    widget.panel_frame().wait_for_function(
        "() => (window.__chatwidgetLog || []).some((e) => e.politeness === 'assertive')", timeout=10_000
    )
    (alert,) = alerts(widget)
    return alert


def assert_no_english(widget: ChatWidget) -> None:
    said = " ".join(entry["text"] for entry in widget.announcements())
    shown = widget.panel_frame().evaluate("() => document.body.innerText")
    for words in ENGLISH_SERVER_WORDS:
        assert words not in said, f"{words!r} was announced: {said}"
        assert words not in shown, f"{words!r} is shown: {shown}"


def send_past_the_servers_limit(widget: ChatWidget) -> None:
    # The composer stops typing at MAX_TEXT_CHARS (its maxlength); without it the server's
    # own limit refuses the message (413 `text_too_long`).
    widget.input.evaluate("node => node.removeAttribute('maxlength')")
    assert len(TOO_LONG) > MAX_TEXT_CHARS
    widget.send(TOO_LONG)
    assert widget.wait_until_complete() == "failed"


@pytest.mark.firefox_sample(lang=["ar"])
@pytest.mark.parametrize("lang", LANGS)
def test_a_message_too_long_for_the_server_is_refused_in_the_panels_language(embed, chat_server_factory, lang):
    server = chat_server_factory(MAX_TEXT_CHARS=MAX_TEXT_CHARS)
    widget = embed(server, lang=lang)
    widget.open()
    send_past_the_servers_limit(widget)
    reason = refusals(lang)["text_too_long"]
    assert wait_for_alert(widget) == reason
    expect(widget.last_answer().locator(".turn__status")).to_have_text(f"{strings(lang)['stateFailed']}: {reason}")
    assert_no_english(widget)
    widget.assert_accessible()


@pytest.mark.firefox_sample(lang=["ar"])
@pytest.mark.parametrize("lang", LANGS)
def test_feedback_on_a_conversation_deleted_elsewhere_is_refused_in_the_panels_language(
    embed, chat_server_factory, lang
):
    server = chat_server_factory()
    widget = embed(server, lang=lang)
    widget.open()
    widget.send("/echo Rate me.")
    assert widget.wait_until_complete() == "completed"
    words = strings(lang)["answerTools"]
    helpful = widget.last_answer().get_by_role("button", name=words["helpful"], exact=True)
    conversation_id = widget.panel_frame().evaluate("() => window.chatPanel.client.conversationId")
    # Deleted elsewhere (another tab, the site's own tools): the rating's PUT gets 404 `not_found`.
    server.service.store.delete_conversation(conversation_id)
    helpful.click()
    expected = words["feedbackFailed"].replace("{reason}", refusals(lang)["not_found"])
    assert wait_for_alert(widget) == expected
    expect(helpful).to_have_attribute("aria-pressed", "false")
    assert_no_english(widget)
    widget.assert_accessible()


@pytest.mark.firefox_sample(lang=["ar"])
@pytest.mark.parametrize("lang", LANGS)
def test_without_the_refusal_texts_the_panel_says_its_own_general_reason(embed, chat_server_factory, page, lang):
    """The refusal texts cannot be fetched (offline just then, a proxy refusing them): the
    reason is the panel's own general text in its language, never the English message."""
    fetched: list[str] = []

    def refuse(route):
        fetched.append(route.request.url)
        route.abort()

    page.route("**/i18n/refusals/*.json", refuse)
    server = chat_server_factory(MAX_TEXT_CHARS=MAX_TEXT_CHARS)
    widget = embed(server, lang=lang)
    widget.open()
    send_past_the_servers_limit(widget)
    # A 413: the request as sent was refused (errors.validation, in every panel's strings).
    reason = strings(lang)["errors"]["validation"]
    assert wait_for_alert(widget) == reason
    assert fetched, "the panel never asked for its refusal texts"
    assert_no_english(widget)
    widget.assert_accessible()
