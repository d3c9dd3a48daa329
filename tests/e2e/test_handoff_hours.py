"""Talking to a person outside the opening hours (HANDOFF_HOURS; static/widget/handoff.js).

Real Chromium and Firefox ESR, a real chat server on loopback whose hours are closed now by
construction: one weekday three days ahead, in Europe/Madrid. The visitor's browser is in
America/New_York, so the opening time they hear is the server's answer (`opens_at`, with
Madrid's offset) turned into their own clock, computed here with zoneinfo on the other side.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from playwright.sync_api import expect

from widget_server.services import SERVICES_KEY

from ..helpers import http_client
from .test_handoff_widget import (
    HANDOFF,
    HANDOFF_RECORDER,
    HANDOFF_SETTINGS,
    Agent,
    assertive,
    conversation_of,
    fmt,
    handoff_events,
    polite,
    talk_to_a_person,
    wait_until,
)

pytestmark = pytest.mark.e2e

SERVER_ZONE = ZoneInfo("Europe/Madrid")
DAY_NAMES = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
ENGLISH_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def closed_now(days_ahead: int = 3) -> tuple[dict[str, Any], datetime]:
    """Settings open only on the weekday `days_ahead` from today in Madrid, 09:00-17:30, so
    closed now (and for the next days), and the opening they lead to, in Madrid."""
    today = datetime.now(SERVER_ZONE).date()
    day = today + timedelta(days=days_ahead)
    opening = datetime(day.year, day.month, day.day, 9, 0, tzinfo=SERVER_ZONE)
    settings = {
        **HANDOFF_SETTINGS,
        "HANDOFF_HOURS": f"{DAY_NAMES[day.weekday()]} 09:00-17:30",
        "HANDOFF_TIMEZONE": "Europe/Madrid",
    }
    return settings, opening


def english_time(moment: datetime) -> str:
    """What Intl.DateTimeFormat('en', {hour: 'numeric', minute: '2-digit'}) writes, spaces
    made plain (ICU puts a narrow no-break space before AM/PM)."""
    return f"{moment.hour % 12 or 12}:{moment.minute:02d} {'AM' if moment.hour < 12 else 'PM'}"


def plain(text: str) -> str:
    return text.replace("\u202f", " ").replace("\u00a0", " ")


@pytest.mark.browser_context_args(timezone_id="America/New_York")
def test_closed_says_when_it_opens_in_the_visitors_time_and_a_message_is_left(embed, chat_server_factory, context):
    settings, opening = closed_now()
    server = chat_server_factory(**settings)
    Agent(server).present()  # someone is signed in, but it is outside the hours
    context.add_init_script(HANDOFF_RECORDER)
    widget = embed(server)
    assert widget.page.evaluate("() => Intl.DateTimeFormat().resolvedOptions().timeZone") == "America/New_York"
    widget.open()
    talk_to_a_person(widget)

    visitor_time = opening.astimezone(ZoneInfo("America/New_York"))
    closed = fmt(HANDOFF["closedOn"], day=ENGLISH_DAYS[visitor_time.weekday()], time=english_time(visitor_time))
    wait_until(lambda: closed in [plain(text) for text in polite(widget)])
    form = widget.frame.get_by_role("form", name=HANDOFF["formTitle"])
    expect(form).to_be_visible()
    assert plain(widget.frame.locator(".handoff-leave__text").inner_text()) == closed
    email = form.get_by_role("textbox", name=HANDOFF["email"])
    expect(email).to_be_focused()
    widget.assert_accessible()

    # The same form as when nobody is there: the message reaches the agents' inbox.
    widget.page.keyboard.type("visitor@example.com")
    widget.page.keyboard.press("Tab")
    widget.page.keyboard.type("Please call me when you open.")
    widget.page.keyboard.press("Tab")
    widget.page.keyboard.press("Enter")
    widget.wait_for_announcement(HANDOFF["leftWithEmail"])
    cid, _ = conversation_of(widget)
    inbox = server.app.extensions[SERVICES_KEY].handoff.inbox()
    assert [(m["conversation_id"], m["email"], m["text"]) for m in inbox] == [
        (cid, "visitor@example.com", "Please call me when you open.")
    ]
    # Said once each; nothing went to the assertive region; the page heard `closed`.
    assert [plain(text) for text in polite(widget)].count(closed) == 1
    assert polite(widget).count(HANDOFF["leftWithEmail"]) == 1
    assert not assertive(widget)
    assert [event.get("reason") for event in handoff_events(widget)] == ["closed", "left"]
    widget.assert_accessible()


def test_the_server_answer_names_the_next_opening_with_the_schedule_zone_offset(chat_server_factory):
    """The wire side of the test above, without a browser: what the widget was given."""

    settings, opening = closed_now()
    server = chat_server_factory(**settings)
    with http_client(base_url=server.url) as http:
        created = http.post("/api/v1/conversations").json()
        answer = http.post(
            f"/api/v1/conversations/{created['conversation_id']}/handoff",
            json={"request_id": f"r{time.time_ns()}"},
            headers={"Authorization": f"Bearer {created['token']}"},
        ).json()
    assert answer["state"] == "unavailable" and answer["reason"] == "closed"
    assert datetime.fromisoformat(answer["opens_at"]) == opening
    assert answer["opens_at"] == opening.isoformat()  # Madrid's offset, to the second
    assert opening > datetime.now(UTC)
