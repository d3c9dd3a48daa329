"""The dashboard's aggregation store: its interface, and the one-process memory store
(docs/dashboard.md, "Where the numbers live").

Every event is one `record()` of a `Change` in its hour. Counters (a name to a count:
`conversations`, `completed`, `failed:<code>`, …) and latency histograms (a family, `ttfd` or
`wait`, to counts per fixed bucket of buckets.py) are added to the hour and to its UTC day; the
top questions with no helpful answer (at most buckets.TOP_PER_DAY, the least counted evicted)
and the newest comments (at most buckets.COMMENTS_PER_DAY) to the day only. A period is read
from its days (`read_days`), today's hourly chart from its hours (`read_hours`). Neither read
looks at a conversation: a page costs days × families (bench/dashboard.py).
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from .buckets import (
    COMMENTS_PER_DAY,
    DAY_HOURS,
    HOUR_SECONDS,
    RETENTION_SECONDS,
    TOP_PER_DAY,
    hour_of,
)


@dataclass(frozen=True)
class Change:
    """What one event adds."""

    counts: dict[str, int] = field(default_factory=dict)
    # A latency family (`ttfd`, `wait`) to the bucket of the one value observed.
    latencies: dict[str, int] = field(default_factory=dict)
    question: str = ""  # a question with no helpful answer, normalised (buckets.normalise_question)
    comment: str = ""  # a comment entry, JSON (recorder.py)

    def empty(self) -> bool:
        return not (self.counts or self.latencies or self.question or self.comment)


@dataclass
class Bucket:
    """An hour or a day as read back (an hour has no questions or comments)."""

    counts: dict[str, int] = field(default_factory=dict)
    latencies: dict[str, dict[int, int]] = field(default_factory=dict)
    questions: dict[str, int] = field(default_factory=dict)
    comments: list[str] = field(default_factory=list)  # newest first

    def copy(self) -> Bucket:
        return Bucket(
            dict(self.counts),
            {family: dict(counts) for family, counts in self.latencies.items()},
            dict(self.questions),
            list(self.comments),
        )


class DashboardStore(Protocol):
    def record(self, hour: int, change: Change) -> None:
        """Add `change` to `hour` (whole hours since the epoch, UTC) and to its day."""

    def read_hours(self, hours: range) -> dict[int, Bucket]:
        """The hours of `hours` that hold anything: their counters and latencies."""

    def read_days(self, days: range) -> dict[int, Bucket]:
        """The days of `days` (whole days since the epoch, UTC) that hold anything."""

    def forget_texts(self, days: range, questions: set[str], comments: set[str]) -> None:
        """Remove from `days` the normalised `questions` and every comment entry whose text is
        one of `comments`: a deleted conversation's words (docs/privacy.md)."""


def keep_top(questions: dict[str, int], limit: int = TOP_PER_DAY) -> None:
    """Drop the least counted questions past `limit` (ties: the smallest text first, as a Redis
    sorted set's ZREMRANGEBYRANK does), so both stores keep the same ones."""
    if len(questions) <= limit:
        return
    ranked = sorted(questions.items(), key=lambda item: (item[1], item[0]))
    for question, _ in ranked[: len(questions) - limit]:
        del questions[question]


def comment_text(entry: str) -> str:
    """The visitor's words in a day's comment entry (recorder.py writes it as JSON)."""
    try:
        text = json.loads(entry).get("comment", "")
    except (ValueError, AttributeError):
        return ""
    return text if isinstance(text, str) else ""


def expires_at(day: int) -> int:
    """When a day's counts, and its hours', go: RETENTION_SECONDS after the day ends."""
    return (day + 1) * DAY_HOURS * HOUR_SECONDS + RETENTION_SECONDS


def texts_expire_at(day: int, text_seconds: float) -> int:
    """When a day's comments and questions go: the visitors' words, copied apart from their
    conversations, are kept no longer after the day than the conversations themselves
    (`RETENTION`, docs/privacy.md), and never past the day's counts."""
    return min(expires_at(day), (day + 1) * DAY_HOURS * HOUR_SECONDS + int(text_seconds))


class MemoryDashboardStore:
    """In this process (STORE=memory): dicts of hours and days, the ones past their retention
    dropped as new hours begin; a day's comments and questions once `text_seconds` after the
    day have passed (texts_expire_at)."""

    def __init__(self, clock: Callable[[], float] = time.time, text_seconds: float = RETENTION_SECONDS) -> None:
        self._clock = clock
        self._text_seconds = text_seconds
        self._lock = threading.Lock()
        self._hours: dict[int, Bucket] = {}
        self._days: dict[int, Bucket] = {}
        self._swept_hour = 0

    def record(self, hour: int, change: Change) -> None:
        with self._lock:
            self._sweep()
            day = self._days.setdefault(hour // DAY_HOURS, Bucket())
            counted = [day, self._hours.setdefault(hour, Bucket())] if change.counts or change.latencies else [day]
            for bucket in counted:
                for name, amount in change.counts.items():
                    bucket.counts[name] = bucket.counts.get(name, 0) + amount
                for family, index in change.latencies.items():
                    histogram = bucket.latencies.setdefault(family, {})
                    histogram[index] = histogram.get(index, 0) + 1
            if change.question:
                day.questions[change.question] = day.questions.get(change.question, 0) + 1
                keep_top(day.questions)
            if change.comment:
                day.comments.insert(0, change.comment)
                del day.comments[COMMENTS_PER_DAY:]

    def read_hours(self, hours: range) -> dict[int, Bucket]:
        with self._lock:
            self._sweep()
            return {hour: self._hours[hour].copy() for hour in hours if hour in self._hours}

    def read_days(self, days: range) -> dict[int, Bucket]:
        with self._lock:
            self._sweep()
            return {day: self._days[day].copy() for day in days if day in self._days}

    def forget_texts(self, days: range, questions: set[str], comments: set[str]) -> None:
        with self._lock:
            for day in days:
                bucket = self._days.get(day)
                if bucket is None:
                    continue
                for question in questions:
                    bucket.questions.pop(question, None)
                bucket.comments[:] = [entry for entry in bucket.comments if comment_text(entry) not in comments]

    def _sweep(self) -> None:
        """Forget the hours and days whose retention ran out: once per hour of the clock."""
        now = self._clock()
        if hour_of(now) == self._swept_hour:
            return
        self._swept_hour = hour_of(now)
        for day in [day for day in self._days if expires_at(day) <= now]:
            del self._days[day]
        for day, bucket in self._days.items():
            if texts_expire_at(day, self._text_seconds) <= now:
                bucket.questions.clear()
                bucket.comments.clear()
        for hour in [hour for hour in self._hours if expires_at(hour // DAY_HOURS) <= now]:
            del self._hours[hour]


def merged_counts(buckets: dict[int, Bucket]) -> Counter[str]:
    total: Counter[str] = Counter()
    for bucket in buckets.values():
        total.update(bucket.counts)
    return total
