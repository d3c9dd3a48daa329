"""docs/accessibility.md, "Talking to a person", A59: outside the opening hours.

The panel in Spanish in a browser in Asia/Tokyo, the server's hours in Europe/Madrid, open
only tomorrow there: whether that is "today", "tomorrow" or a weekday for the visitor depends
on the hour, so the expected words are computed here from the visitor's own clock, in real
Chromium and Firefox ESR, by keyboard, with axe. tests/test_docs.py checks the id has its test.
"""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest
from playwright.sync_api import expect

from .test_handoff_hours import closed_now, plain
from .test_handoff_widget import STRINGS, Agent, assertive, fmt, polite, talk_to_a_person, wait_until

pytestmark = pytest.mark.e2e

VISITOR_ZONE = ZoneInfo("Asia/Tokyo")
SPANISH_DAYS = ("lunes", "martes", "miércoles", "jueves", "viernes", "sábado", "domingo")


def spanish_closed(opening: datetime) -> str:
    """The words A59 promises, for a visitor in VISITOR_ZONE reading Spanish (Intl's `es`
    writes 24-hour H:mm)."""
    strings = STRINGS["es"]["handoff"]
    local = opening.astimezone(VISITOR_ZONE)
    days = (local.date() - datetime.now(VISITOR_ZONE).date()).days
    time = f"{local.hour}:{local.minute:02d}"
    if days <= 0:
        return fmt(strings["closedToday"], time=time)
    if days == 1:
        return fmt(strings["closedTomorrow"], time=time)
    return fmt(strings["closedOn"], day=SPANISH_DAYS[local.weekday()], time=time)


@pytest.mark.browser_context_args(timezone_id="Asia/Tokyo")
def test_A59_closed_is_said_once_with_the_opening_in_the_visitors_time_and_the_form_follows(embed, chat_server_factory):
    settings, opening = closed_now(days_ahead=1)
    server = chat_server_factory(**settings)
    Agent(server).present()  # signed in, but outside the hours
    es = STRINGS["es"]
    widget = embed(server, lang="es")
    widget.open()
    talk_to_a_person(widget, es)
    closed = spanish_closed(opening)
    wait_until(lambda: closed in [plain(text) for text in polite(widget)])
    notice = widget.frame.locator(".handoff-leave__text")
    expect(notice).to_have_count(1)
    assert plain(notice.inner_text()) == closed
    form = widget.frame.get_by_role("form", name=es["handoff"]["formTitle"])
    expect(form).to_be_visible()
    expect(form.get_by_role("textbox", name=es["handoff"]["email"])).to_be_focused()
    # The form follows the words in the transcript's order (what a screen reader reads next).
    assert notice.evaluate("(n) => !!(n.compareDocumentPosition(n.parentNode.querySelector('form')) & 4)")
    widget.assert_accessible()
    assert [plain(text) for text in polite(widget)].count(closed) == 1
    assert es["handoff"]["unavailable"] not in polite(widget)
    assert not assertive(widget)
