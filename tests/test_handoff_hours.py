"""Opening hours of the hand-off (HANDOFF_HOURS, HANDOFF_TIMEZONE; widget_server/handoff/hours.py).

The parser and the schedule are pure: each test says when "now" is. The service's part runs
over real HTTP on the memory store and a real redis-server, with the app's HandoffService
given a clock the test sets (its injectable `now`), so "Friday evening" needs no waiting.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import jsonschema_rs  # schemathesis's validator (tests/test_openapi_schemathesis.py)
import pytest

from widget_server.handoff import events as ev
from widget_server.handoff.hours import OpeningHours, parse_hours
from widget_server.openapi import build_document
from widget_server.settings import ConfigError, load_settings

from .test_api_handoff import ask, handoff_of, post, url
from .test_scale_out import metric_value


def at(text: str) -> float:
    """'2026-11-27 17:00' (UTC) → Unix seconds."""
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def hours(schedule: str, zone: str = "UTC") -> OpeningHours:
    return OpeningHours(parse_hours(schedule), zone)


def opens(schedule: str, now: str, zone: str = "UTC") -> str | None:
    found = hours(schedule, zone).closed_until(at(now))
    return None if found is None else found.isoformat()


# -- the parser ---------------------------------------------------------------------------


def test_empty_is_always_open():
    for empty in ("", "   "):
        assert parse_hours(empty).always_open
        assert opens(empty, "2026-11-29 03:00") is None
    assert load_settings({}, environ={})["HANDOFF_HOURS"].always_open
    assert load_settings({}, environ={})["HANDOFF_TIMEZONE"] == "UTC"


def test_a_weekly_schedule_with_lists_ranges_and_loose_spacing():
    schedule = parse_hours("mon - fri 09:00-12:00, 13:00 - 17:30 ; Sat,Sun 10:00-14:00")
    assert repr(schedule) == "'mon - fri 09:00-12:00, 13:00 - 17:30 ; Sat,Sun 10:00-14:00'"
    # 2026-11-30 is a Monday.
    assert opens(str(schedule), "2026-11-30 08:59") == "2026-11-30T09:00:00+00:00"
    assert opens(str(schedule), "2026-11-30 09:00") is None
    assert opens(str(schedule), "2026-11-30 12:30") == "2026-11-30T13:00:00+00:00"  # lunch
    assert opens(str(schedule), "2026-12-04 17:30") == "2026-12-05T10:00:00+00:00"  # Friday → Saturday
    assert opens(str(schedule), "2026-12-06 14:00") == "2026-12-07T09:00:00+00:00"  # Sunday → Monday
    assert opens(str(schedule), "2026-12-06 13:59") is None


def test_a_day_range_may_wrap_the_week():
    schedule = "Sat-Mon 10:00-12:00"
    assert opens(schedule, "2026-12-06 11:00") is None  # Sunday
    assert opens(schedule, "2026-11-30 11:59") is None  # Monday
    assert opens(schedule, "2026-12-01 11:00") == "2026-12-05T10:00:00+00:00"  # Tuesday → Saturday


def test_a_range_over_midnight_ends_the_next_day_also_across_the_week_end():
    assert opens("Fri 22:00-02:00", "2026-12-05 01:59") is None  # Saturday early
    assert opens("Fri 22:00-02:00", "2026-12-05 02:00") == "2026-12-11T22:00:00+00:00"
    assert opens("Sun 22:00-02:00", "2026-11-30 01:00") is None  # Monday early, the week wrapped
    # 24:00 ends a day: Monday and Tuesday whole are one stretch.
    assert opens("Mon 00:00-24:00; Tue 00:00-24:00", "2026-11-30 23:59:59") is None
    assert opens("Mon 00:00-24:00; Tue 00:00-24:00", "2026-12-01 00:00") is None
    assert opens("Mon 00:00-24:00; Tue 00:00-24:00", "2026-12-02 00:00") == "2026-12-07T00:00:00+00:00"


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("Mon-Fry 09:00-17:00", "'Fry' is not a day"),
        ("Mon 9:00-17:00", "'9:00' is not a time HH:MM"),
        ("Mon 09:00-24:30", "'24:30' is not a time HH:MM"),
        ("Mon 09:60-10:00", "'09:60' is not a time HH:MM"),
        ("Mon 24:00-02:00", "starts at 24:00"),
        ("Mon 09:00-09:00", "'09:00-09:00' starts where it ends; write 00:00-24:00"),
        ("Mon", "'Mon': expected days then times"),
        ("09:00-17:00", "expected days then times"),
        ("Mon 09:00", "'09:00' is not a time range"),
        ("Mon,,Tue 09:00-10:00", "'' is not a day or a range of days"),
        ("Mon-Fri 09:00-17:00; Sat 10-14", "'Sat 10-14': '10' is not a time"),
        (";", "no opening hours in it"),
    ],
)
def test_a_bad_schedule_stops_the_start_naming_the_setting_and_the_part(value, says):
    with pytest.raises(ConfigError) as caught:
        load_settings({"HANDOFF_HOURS": value}, environ={})
    message = str(caught.value)
    assert message.startswith("HANDOFF_HOURS (from configuration): invalid value"), message
    assert says in message, message
    assert "Traceback" not in message


@pytest.mark.parametrize("zone", ["Europe/Madird", "../etc/passwd", "Mars/Olympus_Mons", "UTC+2"])
def test_an_unknown_time_zone_stops_the_start(zone):
    with pytest.raises(ConfigError) as caught:
        load_settings({}, environ={"WIDGET_SERVER_HANDOFF_TIMEZONE": zone})
    assert str(caught.value) == (
        f"HANDOFF_TIMEZONE (from environment variable WIDGET_SERVER_HANDOFF_TIMEZONE): invalid value {zone!r}: "
        f"{zone!r} is not an IANA time zone name such as Europe/Madrid or UTC"
    )


# -- local time in a zone with daylight saving time (Europe/Madrid, 2026) --------------------


def test_the_opening_follows_the_zone_across_the_spring_change():
    # Friday 27 March 18:00 CET (+01:00) is closed; Monday 30 March opens at 09:00 CEST (+02:00).
    assert opens("Mon-Fri 09:00-17:30", "2026-03-27 17:00", "Europe/Madrid") == "2026-03-30T09:00:00+02:00"
    assert opens("Mon-Fri 09:00-17:30", "2026-03-30 06:59", "Europe/Madrid") == "2026-03-30T09:00:00+02:00"
    assert opens("Mon-Fri 09:00-17:30", "2026-03-30 07:00", "Europe/Madrid") is None


def test_a_time_in_the_skipped_hour_is_the_moment_the_clocks_jump():
    # Sunday 29 March 2026: 02:00 CET becomes 03:00 CEST (01:00 UTC); 02:30 never shows.
    schedule = "Sun 02:30-04:00"
    assert opens(schedule, "2026-03-28 12:00", "Europe/Madrid") == "2026-03-29T03:00:00+02:00"
    assert opens(schedule, "2026-03-29 00:59", "Europe/Madrid") == "2026-03-29T03:00:00+02:00"
    assert opens(schedule, "2026-03-29 01:00", "Europe/Madrid") is None
    assert opens(schedule, "2026-03-29 02:00", "Europe/Madrid") == "2026-04-05T02:30:00+02:00"
    # A range wholly inside the skipped hour has no opening that day: the next is a week later.
    assert opens("Sun 02:10-02:50", "2026-03-28 12:00", "Europe/Madrid") == "2026-04-05T02:10:00+02:00"


def test_a_time_in_the_repeated_hour_is_its_first_occurrence():
    # Sunday 25 October 2026: 03:00 CEST becomes 02:00 CET (01:00 UTC); 02:00–03:00 shows twice.
    assert opens("Sun 02:30-05:00", "2026-10-25 00:29", "Europe/Madrid") == "2026-10-25T02:30:00+02:00"
    assert opens("Sun 02:30-05:00", "2026-10-25 00:30", "Europe/Madrid") is None
    assert opens("Sun 02:30-05:00", "2026-10-25 01:15", "Europe/Madrid") is None  # 02:15 CET, the second time
    # A range ending in the repeated hour ends at the first 02:30: closed again the second time round.
    assert opens("Sun 01:00-02:30", "2026-10-25 00:29", "Europe/Madrid") is None
    assert opens("Sun 01:00-02:30", "2026-10-25 01:15", "Europe/Madrid") == "2026-11-01T01:00:00+01:00"


# -- the service, over HTTP, on both stores -----------------------------------------------

WEEKDAYS_MADRID = {"HANDOFF": "on", "HANDOFF_HOURS": "Mon-Fri 09:00-17:30", "HANDOFF_TIMEZONE": "Europe/Madrid"}


@pytest.fixture(params=["memory", "redis"])
def store_kind(request) -> str:
    if request.param == "redis":
        request.getfixturevalue("redis_server").flush()  # the desk and presence are the store's
    return request.param


def assert_conforms(value: Any, schema_name: str) -> None:
    document = build_document()
    schema = {"$ref": f"#/components/schemas/{schema_name}", "components": document["components"]}
    validator = jsonschema_rs.Draft202012Validator(schema, validate_formats=True)
    validator.validate(value)
    assert not validator.is_valid({**value, "opens_at": "Monday at nine"})  # the check can fail


class Clock:
    """The service's `now`, set by the test (Unix seconds)."""

    def __init__(self, when: str) -> None:
        self.value = at(when)

    def set(self, when: str) -> None:
        self.value = at(when)

    def __call__(self) -> float:
        return self.value


def clocked_server(live_server_factory, when: str, **settings: Any):
    server = live_server_factory(**{**WEEKDAYS_MADRID, **settings})
    clock = Clock(when)
    handoff_of(server).now = clock
    return server, clock


def test_closed_says_when_it_opens_and_a_message_may_be_left(live_server_factory, chat_factory):
    server, _ = clocked_server(live_server_factory, "2026-11-27 17:00")  # Friday 18:00 in Madrid
    service = handoff_of(server)
    service.agent_seen("ana")  # someone is there, but it is after hours
    chat = chat_factory(server)
    closed = {"state": "unavailable", "reason": "closed", "opens_at": "2026-11-30T09:00:00+01:00", "seq": 1}
    response = ask(chat)
    assert response.status_code == 200 and response.json() == closed
    assert ask(chat).json() == closed  # a retry: the same answer
    [event] = service.read_events(chat.conversation_id, 0, 0)
    assert (event.type, event.payload) == (ev.UNAVAILABLE, {"reason": "closed", "opens_at": closed["opens_at"]})
    # Both as the OpenAPI document describes them (`opens_at` a date-time).
    assert_conforms(response.json(), "HandoffState")
    assert_conforms(event.data(), "HandoffUnavailableData")
    left = post(chat, url(chat, "/left-messages"), {"request_id": "l1", "text": "Call me on Monday."})
    assert left.status_code == 201
    assert [m["text"] for m in service.inbox()] == ["Call me on Monday."]
    metrics = chat.http.get("/metrics").text
    assert metric_value(metrics, "chat_handoffs_unavailable_total", reason="closed") == 1
    assert metric_value(metrics, "chat_handoffs_unavailable_total", reason="no_agents") == 0
    assert metric_value(metrics, "chat_handoffs_requested_total", outcome="unavailable") == 1


def test_within_hours_it_queues_and_closing_time_cuts_no_one_off(live_server_factory, chat_factory):
    server, clock = clocked_server(live_server_factory, "2026-11-30 07:59")  # Monday 08:59 in Madrid
    service = handoff_of(server)
    service.agent_seen("ana")
    chat = chat_factory(server)
    assert ask(chat, "early").json()["opens_at"] == "2026-11-30T09:00:00+01:00"
    clock.set("2026-11-30 08:00")  # 09:00: open
    assert ask(chat, "h1").json() == {"state": "queued", "position": 1, "seq": 2}
    clock.set("2026-11-30 16:31")  # 17:31: closed, but the queued visitor stays queued
    assert ask(chat, "h2").json() == {"state": "queued", "position": 1, "seq": 2}
    late = chat_factory(server)
    assert ask(late).json() == {
        "state": "unavailable",
        "reason": "closed",
        "opens_at": "2026-12-01T09:00:00+01:00",
        "seq": 1,
    }
    service.claim(chat.conversation_id, "ana", "Ana")
    service.agent_message(chat.conversation_id, "ana", uuid.uuid4().hex, "Still here.")
    sent = post(chat, url(chat, "/messages"), {"request_id": "m1", "text": "Thanks!"})
    assert sent.status_code == 201
    assert ask(chat, "h3").json()["state"] == "assigned"


def test_hand_off_off_says_disabled_and_open_without_anyone_says_no_agents(live_server_factory, chat_factory):
    server, _ = clocked_server(live_server_factory, "2026-11-30 10:00")  # Monday 11:00: open
    assert ask(chat_factory(server)).json() == {"state": "unavailable", "reason": "no_agents", "seq": 1}
    # (After that one: on Redis both servers share the agents' presence.)
    off, _ = clocked_server(live_server_factory, "2026-11-28 12:00", HANDOFF="off")  # Saturday: closed
    handoff_of(off).agent_seen("ana")
    assert ask(chat_factory(off)).json() == {"state": "unavailable", "reason": "disabled", "seq": 1}
