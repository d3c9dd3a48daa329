"""The dashboard's per-hour aggregation store: its interface, and the one-process memory store
(docs/dashboard.md, "Where the numbers live").

Each hour holds four bounded families: counters (a name to a count: `conversations`,
`completed`, `failed:<code>`, …), latency histograms (a family, `ttfd` or `wait`, to counts
per fixed bucket of buckets.py), the top questions with no helpful answer (at most
buckets.TOP_PER_HOUR per hour, the least counted evicted) and the newest comments (at most
buckets.COMMENTS_PER_HOUR). A write is one `record()` of one hour's `HourChange`; a read is
`read()` of a range of hours. Neither ever looks at a conversation: a page's cost is hours ×
families (bench/dashboard.py).
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from .buckets import COMMENTS_PER_HOUR, HOUR_SECONDS, RETENTION_SECONDS, TOP_PER_HOUR, hour_of


@dataclass(frozen=True)
class HourChange:
    """What one event adds to its hour."""

    counts: dict[str, int] = field(default_factory=dict)
    # A latency family (`ttfd`, `wait`) to the bucket of the one value observed.
    latencies: dict[str, int] = field(default_factory=dict)
    question: str = ""  # a question with no helpful answer, normalised (buckets.normalise_question)
    comment: str = ""  # a comment entry, JSON (recorder.py)

    def empty(self) -> bool:
        return not (self.counts or self.latencies or self.question or self.comment)


@dataclass
class HourData:
    """One hour as read back."""

    counts: dict[str, int] = field(default_factory=dict)
    latencies: dict[str, dict[int, int]] = field(default_factory=dict)
    questions: dict[str, int] = field(default_factory=dict)
    comments: list[str] = field(default_factory=list)  # newest first


class DashboardStore(Protocol):
    def record(self, hour: int, change: HourChange) -> None:
        """Add `change` to `hour` (whole hours since the epoch, UTC)."""

    def read(self, hours: range) -> dict[int, HourData]:
        """The hours of `hours` that hold anything."""


def keep_top(questions: dict[str, int], limit: int = TOP_PER_HOUR) -> None:
    """Drop the least counted questions past `limit` (ties: the greatest text first, as a
    Redis sorted set's ZREMRANGEBYRANK does), so both stores keep the same ones."""
    if len(questions) <= limit:
        return
    ranked = sorted(questions.items(), key=lambda item: (item[1], item[0]))
    for question, _ in ranked[: len(questions) - limit]:
        del questions[question]


class MemoryDashboardStore:
    """In this process (STORE=memory): a dict of hours, the ones past RETENTION_SECONDS dropped
    as new hours begin."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._hours: dict[int, HourData] = {}
        self._swept_hour = 0

    def record(self, hour: int, change: HourChange) -> None:
        with self._lock:
            self._sweep()
            data = self._hours.setdefault(hour, HourData())
            for name, amount in change.counts.items():
                data.counts[name] = data.counts.get(name, 0) + amount
            for family, index in change.latencies.items():
                histogram = data.latencies.setdefault(family, {})
                histogram[index] = histogram.get(index, 0) + 1
            if change.question:
                data.questions[change.question] = data.questions.get(change.question, 0) + 1
                keep_top(data.questions)
            if change.comment:
                data.comments.insert(0, change.comment)
                del data.comments[COMMENTS_PER_HOUR:]

    def read(self, hours: range) -> dict[int, HourData]:
        with self._lock:
            self._sweep()
            found: dict[int, HourData] = {}
            for hour in hours:
                data = self._hours.get(hour)
                if data is not None:
                    found[hour] = HourData(
                        dict(data.counts),
                        {family: dict(counts) for family, counts in data.latencies.items()},
                        dict(data.questions),
                        list(data.comments),
                    )
            return found

    def _sweep(self) -> None:
        """Forget the hours whose retention ran out: once per hour of the clock."""
        now = self._clock()
        current = hour_of(now)
        if current == self._swept_hour:
            return
        self._swept_hour = current
        for hour in [hour for hour in self._hours if (hour + 1) * HOUR_SECONDS + RETENTION_SECONDS <= now]:
            del self._hours[hour]


def merged_counts(hours: dict[int, HourData]) -> Counter[str]:
    total: Counter[str] = Counter()
    for data in hours.values():
        total.update(data.counts)
    return total
