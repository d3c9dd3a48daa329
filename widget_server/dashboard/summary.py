"""A period's numbers from its days, and the tables the page, the CSV downloads and the
charts all show (docs/dashboard.md, "What each number means").

`read_summary()` reads a period's days (and, for today, its hours) from the store, once;
`summarise()`, pure, merges them into the JSON `GET /api/v1/admin/summary` answers with;
`tables()`, pure, lays that same summary out as the page's tables, so a chart, its
table, its CSV and the JSON cannot disagree (tests/test_dashboard_api.py,
tests/e2e/test_accessibility_contract_dashboard.py).
"""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from . import recorder as names
from .buckets import DAY_HOURS, HOUR_SECONDS, Period, hour_of, percentile, period_days
from .store import Bucket, DashboardStore, merged_counts

TOP_QUESTIONS = 20
COMMENTS_SHOWN = 50


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _latency(days: dict[int, Bucket], family: str) -> dict[str, Any]:
    merged: Counter[int] = Counter()
    for bucket in days.values():
        merged.update(bucket.latencies.get(family, {}))
    return {"p50": percentile(merged, 0.5), "p95": percentile(merged, 0.95), "count": sum(merged.values())}


def _series(span: range, buckets: dict[int, Bucket], seconds: int, label: str) -> list[dict[str, Any]]:
    """One row per hour or day of `span` (each `seconds` long), zeros where nothing was counted."""
    rows = []
    for index in span:
        counted = buckets[index].counts if index in buckets else {}
        moment = datetime.fromtimestamp(index * seconds, UTC).strftime(label)
        rows.append({"label": moment, **{name: counted.get(name, 0) for name in _SERIES_FIELDS}})
    return rows


def summarise(
    period: Period,
    span: range,
    days: dict[int, Bucket],
    hours_span: range | None = None,
    hours: dict[int, Bucket] | None = None,
) -> dict[str, Any]:
    """The period's numbers (JSON-ready) from the days of `span` the store had; its chart's
    rows by day, or by hour of `hours_span` when the store's `hours` are given (today)."""
    counts = merged_counts(days)
    prefix = names.FAILED + ":"
    failed_by_code = {name[len(prefix) :]: count for name, count in counts.items() if name.startswith(prefix)}
    helpful, not_helpful = counts[names.HELPFUL], counts[names.NOT_HELPFUL]
    rated = helpful + not_helpful
    comments: list[dict[str, Any]] = []
    for day in sorted(days, reverse=True):
        for raw in days[day].comments:
            if len(comments) < COMMENTS_SHOWN:
                comments.append(json.loads(raw))
    questions: Counter[str] = Counter()
    for bucket in days.values():
        questions.update(bucket.questions)
    top = sorted(questions.items(), key=lambda item: (-item[1], item[0]))[:TOP_QUESTIONS]
    rating_prefix = names.SATISFACTION + ":"
    by_rating = {
        name[len(rating_prefix) :]: count for name, count in sorted(counts.items()) if name.startswith(rating_prefix)
    }
    ratings = sum(by_rating.values())
    webhook_prefix = names.WEBHOOK + ":"
    webhooks = {
        name[len(webhook_prefix) :]: count for name, count in sorted(counts.items()) if name.startswith(webhook_prefix)
    }
    score = sum(int(rating) * count for rating, count in by_rating.items())
    day_seconds = DAY_HOURS * HOUR_SECONDS
    if hours_span is not None and hours is not None:
        series = _series(hours_span, hours, HOUR_SECONDS, "%H:00")
    else:
        series = _series(span, days, day_seconds, "%Y-%m-%d")
    return {
        "period": period.key,
        "label": period.label,
        "timezone": "UTC",
        "from": _iso(span.start * day_seconds),
        "to": _iso(span.stop * day_seconds),
        "conversations": counts[names.CONVERSATIONS],
        "answers": {
            "completed": counts[names.COMPLETED],
            "failed": counts[names.FAILED],
            "cancelled": counts[names.CANCELLED],
            "incomplete": counts[names.INCOMPLETE],
            "failed_by_code": dict(sorted(failed_by_code.items(), key=lambda item: (-item[1], item[0]))),
        },
        "time_to_first_delta_ms": _latency(days, names.TIME_TO_FIRST_DELTA),
        "feedback": {
            "helpful": helpful,
            "not_helpful": not_helpful,
            "helpful_rate": round(helpful / rated, 3) if rated else None,
            "comments": comments,
        },
        "handoffs": {
            "queued": counts[names.HANDOFF_QUEUED],
            "answered": counts[names.HANDOFF_ANSWERED],
            "ended": counts[names.HANDOFF_ENDED],
            "left_messages": counts[names.LEFT_MESSAGES],
            "wait_ms": _latency(days, names.HANDOFF_WAIT),
        },
        "satisfaction": {
            "count": ratings,
            "average": round(score / ratings, 2) if ratings else None,
            "by_rating": by_rating,
        },
        "top_questions": [{"question": question, "count": count} for question, count in top],
        # Webhook delivery attempts by outcome (docs/webhooks.md, "Monitoring").
        "webhooks": webhooks,
        "series": series,
    }


_SERIES_FIELDS = (names.CONVERSATIONS, names.COMPLETED, names.FAILED, names.CANCELLED, names.INCOMPLETE)


def read_summary(store: DashboardStore, period: Period, now: float | None = None) -> dict[str, Any]:
    """The period's numbers: one read of its days, and for today of its hours so far (days or
    hours × families, whatever the traffic)."""
    moment = time.time() if now is None else now
    span = period_days(period, moment)
    if period.days > 1:
        return summarise(period, span, store.read_days(span))
    hours = range(span.start * DAY_HOURS, hour_of(moment) + 1)
    return summarise(period, span, store.read_days(span), hours, store.read_hours(hours))


@dataclass(frozen=True)
class Table:
    """One table of the page: `name` is its CSV's (`/admin/export/<name>.csv`); `chart`, how
    charts.py draws it (`columns`: a bar per row and series, `bars`: one bar per row), or ""."""

    name: str
    caption: str
    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    chart: str = ""


def _blank(value: Any) -> Any:
    """A number not measured (no rating, no latency) is shown as an empty cell, not 0."""
    return "" if value is None else value


def tables(summary: dict[str, Any]) -> list[Table]:
    """The summary as the page's tables, in the page's order."""
    answers, feedback, handoffs = summary["answers"], summary["feedback"], summary["handoffs"]
    first, wait = summary["time_to_first_delta_ms"], handoffs["wait_ms"]
    when = "Hour (UTC)" if summary["period"] == "today" else "Day (UTC)"
    rate = feedback["helpful_rate"]
    return [
        Table(
            "activity",
            "Conversations and answers over time",
            (when, "Conversations", "Completed", "Failed", "Cancelled", "Incomplete"),
            tuple(
                (
                    row["label"],
                    row["conversations"],
                    row["completed"],
                    row["failed"],
                    row["cancelled"],
                    row["incomplete"],
                )
                for row in summary["series"]
            ),
            chart="columns",
        ),
        Table(
            "answers",
            "How answers ended",
            ("Outcome", "Answers"),
            (
                ("Completed", answers["completed"]),
                ("Failed", answers["failed"]),
                ("Cancelled", answers["cancelled"]),
                ("Incomplete", answers["incomplete"]),
            ),
            chart="bars",
        ),
        Table(
            "failures",
            "Failed and incomplete answers by error code",
            ("Error code", "Answers"),
            tuple(answers["failed_by_code"].items()),
            chart="bars",
        ),
        Table(
            "latency",
            "Waiting times in milliseconds",
            ("Measure", "p50 (ms)", "p95 (ms)", "Measured"),
            (
                ("Time to first delta", _blank(first["p50"]), _blank(first["p95"]), first["count"]),
                ("Hand-off wait for a person", _blank(wait["p50"]), _blank(wait["p95"]), wait["count"]),
            ),
        ),
        Table(
            "feedback",
            "Ratings of answers" + ("" if rate is None else f" (helpful rate {rate * 100:.1f} %)"),
            ("Rating", "Answers"),
            (("Helpful", feedback["helpful"]), ("Not helpful", feedback["not_helpful"])),
            chart="bars",
        ),
        Table(
            "comments",
            "Newest comments with ratings",
            ("Time (UTC)", "Rating", "Comment"),
            tuple(
                (entry["at"], "Helpful" if entry["helpful"] else "Not helpful", entry["comment"])
                for entry in feedback["comments"]
            ),
        ),
        Table(
            "handoffs",
            "Hand-offs to a person",
            ("Measure", "Conversations"),
            (
                ("Asked for a person", handoffs["queued"]),
                ("Answered by a person", handoffs["answered"]),
                ("Hand-offs ended", handoffs["ended"]),
                ("Messages left", handoffs["left_messages"]),
            ),
            chart="bars",
        ),
        Table(
            "satisfaction",
            "Satisfaction after a hand-off"
            + (
                "" if summary["satisfaction"]["average"] is None else f" (average {summary['satisfaction']['average']})"
            ),
            ("Rating", "Ratings"),
            tuple(summary["satisfaction"]["by_rating"].items()),
            chart="bars",
        ),
        Table(
            "webhooks",
            "Webhook deliveries",
            ("Outcome", "Attempts"),
            tuple(summary["webhooks"].items()),
            chart="bars",
        ),
        Table(
            "questions",
            "Top questions with no helpful answer",
            ("Question", "Not helpful or failed"),
            tuple((entry["question"], entry["count"]) for entry in summary["top_questions"]),
        ),
    ]


TABLE_NAMES = (
    "activity",
    "answers",
    "failures",
    "latency",
    "feedback",
    "comments",
    "handoffs",
    "satisfaction",
    "webhooks",
    "questions",
)
