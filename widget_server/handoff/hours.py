"""Opening hours of the hand-off (settings HANDOFF_HOURS and HANDOFF_TIMEZONE;
docs/configuration.md, "Opening hours").

Pure: no I/O, no clock of its own (the caller says when "now" is, so tests set it). A
schedule is a week of local (wall-clock) times in one IANA time zone:

    Mon-Fri 09:00-17:30; Sat 10:00-14:00

- Entries are separated by `;`. Each is days, then one or more time ranges (separated by `,`
  or spaces). Days: `Mon` … `Sun` (any case), a range `Mon-Fri` (it may wrap the week:
  `Sat-Mon`), or a list `Mon,Wed,Fri`. Times: 24-hour `HH:MM`; `24:00` ends a day.
- A range whose end is before its start runs over midnight: `Fri 22:00-02:00` is open from
  Friday 22:00 to Saturday 02:00. A range that starts where it ends is refused (ambiguous:
  write `00:00-24:00` for a whole day).
- Ranges may overlap or touch; the schedule is their union. Empty: always open.
- Local times across a DST change: a time in the hour the clocks skip (spring forward) is
  the moment the clocks jump (02:30 on Europe/Madrid's last Sunday of March is 03:00 CEST);
  a time in the hour that happens twice (fall back) is its first occurrence. So a day's
  range is as long as the clock on the wall says, an hour shorter or longer on those days.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")  # datetime.weekday() order
MINUTES_PER_DAY = 24 * 60
_TIME = re.compile(r"([01][0-9]|2[0-4]):([0-5][0-9])")
# The local days looked at around "now": the day before (a range over midnight), and a week
# and a day ahead (the same weekday next week, when this week's range was skipped by DST).
_DAYS_BEFORE, _DAYS_AFTER = 1, 8


@dataclass(frozen=True)
class OpenRange:
    """Open on `weekday` (0 = Monday) from `start` to `end`, minutes after that day's local
    midnight; `end` > MINUTES_PER_DAY runs into the next day."""

    weekday: int
    start: int
    end: int


@dataclass(frozen=True, repr=False)
class WeeklyHours:
    """The parsed HANDOFF_HOURS: its ranges (none: always open) and the text they came from."""

    ranges: tuple[OpenRange, ...] = ()
    text: str = ""

    @property
    def always_open(self) -> bool:
        return not self.ranges

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:  # as the setting was written (the CLI's help shows the default)
        return repr(self.text)


ALWAYS_OPEN = WeeklyHours()


def parse_hours(raw: object) -> WeeklyHours:
    """HANDOFF_HOURS → WeeklyHours. A ValueError names the entry and the part that is wrong."""
    if isinstance(raw, WeeklyHours):
        return raw
    text = " ".join(str(raw or "").split())
    ranges: list[OpenRange] = []
    for entry in (part.strip() for part in text.split(";")):
        if entry:
            ranges.extend(_parse_entry(entry))
    if text and not ranges:
        raise ValueError("no opening hours in it; write e.g. `Mon-Fri 09:00-17:30`, or leave it empty (always open)")
    return WeeklyHours(tuple(ranges), text)


def _parse_entry(entry: str) -> list[OpenRange]:
    # Spaces around `-` and `,` do not matter: "Mon - Fri 09:00 - 17:00" is "Mon-Fri 09:00-17:00".
    tight = re.sub(r"\s*([,-])\s*", r"\1", entry)
    days_text, _, ranges_text = tight.partition(" ")
    if not ranges_text:
        raise ValueError(f"{entry!r}: expected days then times, such as `Mon-Fri 09:00-17:30`")
    weekdays = _parse_days(days_text, entry)
    found: list[OpenRange] = []
    for range_text in re.split(r"[,\s]+", ranges_text.strip()):
        start, end = _parse_range(range_text, entry)
        found.extend(OpenRange(weekday, start, end) for weekday in weekdays)
    return found


def _day(name: str, entry: str) -> int:
    try:
        return DAYS.index(name.lower())
    except ValueError:
        raise ValueError(f"{entry!r}: {name!r} is not a day (use Mon, Tue, Wed, Thu, Fri, Sat, Sun)") from None


def _parse_days(text: str, entry: str) -> list[int]:
    weekdays: list[int] = []
    for item in text.split(","):
        first, dash, last = item.partition("-")
        if not first or (dash and not last):
            raise ValueError(f"{entry!r}: {item!r} is not a day or a range of days such as Mon-Fri")
        start = _day(first, entry)
        count = (_day(last, entry) - start) % 7 + 1 if dash else 1  # Sat-Mon wraps the week
        weekdays.extend((start + offset) % 7 for offset in range(count))
    return sorted(set(weekdays))


def _minutes(text: str, entry: str) -> int:
    match = _TIME.fullmatch(text)
    if match is None or (match[1] == "24" and match[2] != "00"):
        raise ValueError(f"{entry!r}: {text!r} is not a time HH:MM from 00:00 to 24:00")
    return int(match[1]) * 60 + int(match[2])


def _parse_range(text: str, entry: str) -> tuple[int, int]:
    first, dash, last = text.partition("-")
    if not dash:
        raise ValueError(f"{entry!r}: {text!r} is not a time range such as 09:00-17:30")
    start, end = _minutes(first, entry), _minutes(last, entry)
    if start == MINUTES_PER_DAY:
        raise ValueError(f"{entry!r}: {text!r} starts at 24:00; start the next day at 00:00")
    if start == end:
        raise ValueError(f"{entry!r}: {text!r} starts where it ends; write 00:00-24:00 for a whole day")
    if end < start:
        end += MINUTES_PER_DAY  # over midnight: ends the next day
    return start, end


def parse_timezone(raw: object) -> str:
    """HANDOFF_TIMEZONE: an IANA time zone name the system's time zone database knows."""
    name = str(raw or "").strip() or "UTC"
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"{name!r} is not an IANA time zone name such as Europe/Madrid or UTC") from None
    return name


def _instant(day: date, minutes: int, zone: ZoneInfo) -> datetime:
    """The moment a wall clock in `zone` shows `day` + `minutes` (the first one, if twice);
    in the hour the clocks skip, the moment they jump (module docstring)."""
    wall = datetime(day.year, day.month, day.day) + timedelta(minutes=minutes)
    for _ in range(2 * MINUTES_PER_DAY):  # a skip is an hour or so; Pacific/Apia once skipped a day
        moment = wall.replace(tzinfo=zone)
        if moment.astimezone(UTC).astimezone(zone).replace(tzinfo=None) == wall:
            return moment
        wall += timedelta(minutes=1)
    raise AssertionError("no wall-clock time exists for two days")  # no zone does this


class OpeningHours:
    """A WeeklyHours in a time zone: whether it is open at a moment, and when it opens next."""

    def __init__(self, hours: WeeklyHours, timezone: str) -> None:
        self.hours = hours
        self.zone = ZoneInfo(timezone)

    def _intervals(self, now: datetime) -> list[tuple[datetime, datetime]]:
        today = now.astimezone(self.zone).date()
        found = []
        for offset in range(-_DAYS_BEFORE, _DAYS_AFTER + 1):
            day = today + timedelta(days=offset)
            for open_range in self.hours.ranges:
                if open_range.weekday == day.weekday():
                    start = _instant(day, open_range.start, self.zone)
                    end = _instant(day, open_range.end, self.zone)
                    if start < end:  # a range inside the skipped hour is empty that day
                        found.append((start, end))
        return sorted(found)

    def closed_until(self, now: float) -> datetime | None:
        """None while open at `now` (Unix seconds); else when it opens next, in the zone."""
        if self.hours.always_open:
            return None
        moment = datetime.fromtimestamp(now, UTC)
        intervals = self._intervals(moment)
        if any(start <= moment < end for start, end in intervals):
            return None
        upcoming = [start for start, _ in intervals if start > moment]
        # A non-empty schedule opens at least once a week, and the window reaches 8 days ahead.
        return min(upcoming).astimezone(self.zone)
