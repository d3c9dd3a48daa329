"""The completed event's SHA-256 is checked: a mismatch is an error, never a silent success."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, Route, expect

pytestmark = pytest.mark.e2e


# Chromium only, said on purpose: under Firefox's WebDriver BiDi (Playwright
# 1.64), route.fetch() of a text/event-stream response never returns, so the
# stream cannot be rewritten in flight there.
@pytest.mark.only_browser("chromium")
def test_a_hash_mismatch_fails_the_answer_instead_of_completing_it(embed, page: Page):
    def corrupt(route: Route) -> None:
        # Deliver the real stream with one changed character in one delta:
        # what the widget would show is no longer what the server computed.
        response = route.fetch()
        body = response.text().replace("arpeggio", "arpeggi0", 1)
        route.fulfill(response=response, body=body)

    page.route(re.compile(r".*/api/v1/conversations/[^/]+/messages$"), corrupt)
    widget = embed()
    widget.open()
    widget.send("which arpeggio fits Am F C G")
    assert widget.wait_until_complete() == "failed"
    answer = widget.last_answer()
    expect(answer.locator(".turn__status")).to_contain_text("did not arrive intact")
    widget.wait_for_announcement("The answer did not arrive intact. Ask again to get a fresh copy.")
    assert "Answer complete." not in [a["text"] for a in widget.announcements()]
