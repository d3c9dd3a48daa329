"""Hours, periods and bounded latency sketches for the dashboard (docs/dashboard.md). Pure.

Everything the dashboard keeps is counted per hour of UTC (`hour_of`: whole hours since the
Unix epoch) and per day of UTC (`day_of`), the day's own totals beside its hours. A period is
a range of whole UTC days ending today (`period_days`), read from its days' totals, and today's
hourly chart from its hours: reading one costs days × metric families, never the number of
conversations in it.

A latency is kept as a count in one of a fixed set of log-spaced buckets (`latency_bucket`):
bucket `i` holds the values in [GROWTH**i, GROWTH**(i+1)) milliseconds. Percentiles are read
from the merged counts (`percentile`) and reported as the bucket's geometric middle, so the
figure is within a relative error of sqrt(GROWTH) - 1 (under 5 %) of the true value of that
rank (tests/test_dashboard_store.py checks this bound).
"""

from __future__ import annotations

import math
import re
import time
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass

HOUR_SECONDS = 3600
DAY_HOURS = 24
# Kept 32 days after its hour: a 30-day period, its first day whole, and a day's slack.
RETENTION_SECONDS = 32 * 24 * HOUR_SECONDS

GROWTH = 1.1
# 1.1**170 ms is about 3.7 hours: no latency the server measures is longer (MESSAGE_TIME_LIMIT,
# a queue's wait); a longer one counts in the last bucket.
MAX_BUCKET = 170
RELATIVE_ERROR = math.sqrt(GROWTH) - 1

# Top questions: per day, at most this many distinct questions (the least counted go first).
TOP_PER_DAY = 100
QUESTION_MAX_CHARS = 200
# Comments: per day, the newest this many.
COMMENTS_PER_DAY = 50
COMMENT_MAX_CHARS = 1000


@dataclass(frozen=True)
class Period:
    """A named period the page offers: `key` as in `?period=`, its label, how it starts."""

    key: str
    label: str
    days: int  # whole UTC days, today the last of them


PERIODS: dict[str, Period] = {
    "today": Period("today", "Today (UTC)", 1),
    "7d": Period("7d", "Last 7 days (UTC, today included)", 7),
    "30d": Period("30d", "Last 30 days (UTC, today included)", 30),
}
DEFAULT_PERIOD = "7d"


def hour_of(seconds: float) -> int:
    """Whole hours since the Unix epoch (UTC) of a Unix time."""
    return int(seconds // HOUR_SECONDS)


def day_of(seconds: float) -> int:
    """Whole days since the Unix epoch (UTC) of a Unix time."""
    return int(seconds // (DAY_HOURS * HOUR_SECONDS))


def period_days(period: Period, now: float | None = None) -> range:
    """The UTC days of `period`, today the last: today alone, or the 7 or 30 days to today."""
    today = day_of(time.time() if now is None else now)
    return range(today - period.days + 1, today + 1)


def hours_of_day(day: int) -> range:
    return range(day * DAY_HOURS, (day + 1) * DAY_HOURS)


def latency_bucket(milliseconds: float) -> int:
    """The histogram bucket of a latency in milliseconds (below 1 ms: bucket 0)."""
    if milliseconds < 1:
        return 0
    return min(MAX_BUCKET, int(math.log(milliseconds) / math.log(GROWTH)))


def bucket_value(index: int) -> float:
    """What a bucket's values are reported as: its geometric middle, in milliseconds."""
    return GROWTH ** (index + 0.5)


def percentile(counts: Mapping[int, int], fraction: float) -> float | None:
    """The nearest-rank percentile (`fraction` 0.5 is p50) of the merged bucket counts, in
    milliseconds rounded to 1; None when nothing was measured."""
    total = sum(counts.values())
    if total <= 0:
        return None
    rank = max(1, math.ceil(fraction * total))
    seen = 0
    for index in sorted(counts):
        seen += counts[index]
        if seen >= rank:
            return round(bucket_value(index), 1)
    return round(bucket_value(max(counts)), 1)  # unreachable: seen reaches total


_SPACES = re.compile(r"\s+")


def normalise_question(text: str) -> str:
    """A question as the top list counts it: NFKC, case-folded, runs of whitespace as one space,
    trailing `?`, `!`, `.` and spaces dropped, at most QUESTION_MAX_CHARS characters. So "How do
    I reset?" and "how do i  reset" are one question."""
    folded = _SPACES.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()
    return folded.rstrip("?!.¿¡。？！ ").strip()[:QUESTION_MAX_CHARS]
