"""docs/accessibility.md, "Refusals in the visitor's language" (A89–A90), one test per id, in
real Chromium and Firefox ESR against a real server: a message longer than MAX_TEXT_CHARS (413
`text_too_long`, the composer's own limit taken off) and a rating of an answer whose
conversation was deleted elsewhere (404 `not_found`); for A90 the refusal texts are refused to
the panel, and the rating's request gets no answer at all.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from widget_server.testing import ChatWidget

from .test_refusal_language import (
    MAX_TEXT_CHARS,
    alerts,
    assert_no_english,
    refusals,
    send_past_the_servers_limit,
    strings,
)

pytestmark = pytest.mark.e2e


def wait_for_alerts(widget: ChatWidget, count: int) -> list[str]:
    widget.panel_frame().wait_for_function(
        "(count) => (window.__chatwidgetLog || []).filter((e) => e.politeness === 'assertive').length >= count",
        arg=count,
        timeout=10_000,
    )
    return alerts(widget)


def rate_the_last_answer(widget: ChatWidget, lang: str):
    """Press "Helpful" under a fresh answer; returns the button."""
    widget.send("/echo Rate me.")
    assert widget.wait_until_complete() == "completed"
    helpful = widget.last_answer().get_by_role("button", name=strings(lang)["answerTools"]["helpful"], exact=True)
    helpful.wait_for()
    return helpful


@pytest.mark.firefox_sample(lang=["ar"])
@pytest.mark.parametrize("lang", ["es", "ar", "he"])
def test_A89_a_refusal_is_explained_once_in_the_panels_language(embed, chat_server_factory, lang):
    server = chat_server_factory(MAX_TEXT_CHARS=MAX_TEXT_CHARS)
    widget = embed(server, lang=lang)
    widget.open()
    texts = refusals(lang)

    send_past_the_servers_limit(widget)
    assert wait_for_alerts(widget, 1) == [texts["text_too_long"]]
    status = widget.last_answer().locator(".turn__status")
    expect(status).to_have_text(f"{strings(lang)['stateFailed']}: {texts['text_too_long']}")
    expect(widget.input).to_be_focused()
    expected_direction = "rtl" if lang in ("ar", "he") else "ltr"
    assert status.evaluate("node => getComputedStyle(node).direction") == expected_direction
    widget.assert_accessible()

    helpful = rate_the_last_answer(widget, lang)
    conversation_id = widget.panel_frame().evaluate("() => window.chatPanel.client.conversationId")
    server.service.store.delete_conversation(conversation_id)  # deleted in another tab
    helpful.click()
    feedback_failed = strings(lang)["answerTools"]["feedbackFailed"].replace("{reason}", texts["not_found"])
    assert wait_for_alerts(widget, 2) == [texts["text_too_long"], feedback_failed]
    expect(helpful).to_be_focused()
    expect(helpful).to_have_attribute("aria-pressed", "false")
    assert_no_english(widget)
    widget.assert_accessible()


@pytest.mark.parametrize("lang", ["fr", "ar"])
def test_A90_without_its_texts_or_an_answer_the_panel_still_says_why_in_its_language(
    embed, chat_server_factory, page: Page, lang
):
    page.route("**/i18n/refusals/*.json", lambda route: route.abort())
    server = chat_server_factory(MAX_TEXT_CHARS=MAX_TEXT_CHARS)
    widget = embed(server, lang=lang)
    widget.open()
    errors = strings(lang)["errors"]

    # Refused as sent (413), its text not to be had: the panel's general "the request as sent".
    send_past_the_servers_limit(widget)
    assert wait_for_alerts(widget, 1) == [errors["validation"]]
    widget.assert_accessible()

    # No answer at all (the connection fails): the panel's general "the connection".
    helpful = rate_the_last_answer(widget, lang)
    page.route("**/feedback", lambda route: route.abort())
    helpful.click()
    feedback_failed = strings(lang)["answerTools"]["feedbackFailed"].replace("{reason}", errors["network"])
    assert wait_for_alerts(widget, 2) == [errors["validation"], feedback_failed]
    assert_no_english(widget)
    widget.assert_accessible()
