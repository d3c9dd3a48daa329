"""The dashboard's per-hour store (widget_server/dashboard/store.py, redis_store.py) on memory,
one Redis and a Redis Cluster: counts per hour, percentiles within the sketch's bound, expiry,
the top questions bounded; and the recorder's events as counts (docs/dashboard.md)."""

from __future__ import annotations

import json
import math
import random

import pytest

from widget_server.dashboard.buckets import (
    COMMENTS_PER_HOUR,
    HOUR_SECONDS,
    PERIODS,
    RELATIVE_ERROR,
    RETENTION_SECONDS,
    TOP_PER_HOUR,
    hour_of,
    latency_bucket,
    normalise_question,
    percentile,
    period_hours,
)
from widget_server.dashboard.recorder import DashboardRecorder
from widget_server.dashboard.redis_store import RedisDashboardStore
from widget_server.dashboard.store import HourChange, MemoryDashboardStore
from widget_server.dashboard.summary import summarise
from widget_server.stores.redis_connection import connect

from .redis_support import redis_client

# 2026-12-07 10:30 UTC.
NOW = 1796639400.0
HOUR = hour_of(NOW)


class Clock:
    def __init__(self, now: float = NOW) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture(params=["memory", "redis", "cluster"])
def store_and_server(request):
    if request.param == "memory":
        clock = Clock()
        return MemoryDashboardStore(clock), None, clock
    server = request.getfixturevalue("redis_cluster" if request.param == "cluster" else "redis_server")
    server.flush()
    return RedisDashboardStore(connect(server.url)), server, None


def test_counts_land_in_their_hour_and_add_up(store_and_server):
    store, _, _ = store_and_server
    store.record(HOUR, HourChange(counts={"conversations": 1}))
    store.record(HOUR, HourChange(counts={"conversations": 1, "completed": 1}))
    store.record(HOUR - 1, HourChange(counts={"conversations": 5}))
    hours = store.read(range(HOUR - 3, HOUR + 1))
    assert sorted(hours) == [HOUR - 1, HOUR]
    assert hours[HOUR].counts == {"conversations": 2, "completed": 1}
    assert hours[HOUR - 1].counts == {"conversations": 5}
    assert store.read(range(HOUR + 1, HOUR + 5)) == {}


def test_percentiles_from_the_merged_hours_are_within_the_sketchs_bound(store_and_server):
    store, _, _ = store_and_server
    generator = random.Random(7)
    values = [generator.lognormvariate(6, 1.2) for _ in range(3000)]  # ms, around 400 ms
    for index, value in enumerate(values):
        store.record(HOUR - index % 5, HourChange(latencies={"ttfd": latency_bucket(value)}))
    merged: dict[int, int] = {}
    for data in store.read(range(HOUR - 10, HOUR + 1)).values():
        for bucket, count in data.latencies["ttfd"].items():
            merged[bucket] = merged.get(bucket, 0) + count
    assert sum(merged.values()) == len(values)
    ordered = sorted(values)
    for fraction in (0.5, 0.95):
        exact = ordered[math.ceil(fraction * len(values)) - 1]  # the nearest rank
        estimate = percentile(merged, fraction)
        assert estimate is not None
        assert abs(estimate - exact) / exact <= RELATIVE_ERROR + 0.001, (fraction, estimate, exact)


def test_the_top_questions_of_an_hour_stay_bounded_and_keep_the_most_counted(store_and_server):
    store, _, _ = store_and_server
    for _ in range(5):
        store.record(HOUR, HourChange(question="how do i reset my password"))
    for index in range(TOP_PER_HOUR * 2):
        store.record(HOUR, HourChange(question=f"rare question {index:03d}"))
    questions = store.read(range(HOUR, HOUR + 1))[HOUR].questions
    assert len(questions) == TOP_PER_HOUR
    assert questions["how do i reset my password"] == 5


def test_comments_of_an_hour_keep_the_newest(store_and_server):
    store, _, _ = store_and_server
    for index in range(COMMENTS_PER_HOUR + 5):
        store.record(HOUR, HourChange(comment=json.dumps({"n": index})))
    comments = store.read(range(HOUR, HOUR + 1))[HOUR].comments
    assert [json.loads(entry)["n"] for entry in comments] == list(range(COMMENTS_PER_HOUR + 4, 4, -1))


def test_an_hour_expires_after_the_retention(store_and_server):
    store, server, clock = store_and_server
    store.record(HOUR, HourChange(counts={"conversations": 1}, question="q", latencies={"ttfd": 3}, comment="{}"))
    end_of_retention = (HOUR + 1) * HOUR_SECONDS + RETENTION_SECONDS
    if server is None:
        clock.now = end_of_retention - 1
        assert store.read(range(HOUR, HOUR + 1))
        clock.now = end_of_retention + HOUR_SECONDS
        assert store.read(range(HOUR, HOUR + 1)) == {}
        return
    client = redis_client(server.url)
    for family in ("counts", "latency", "questions", "comments"):
        key = store.key(HOUR, family)
        assert client.expiretime(key) == end_of_retention, key
    assert RETENTION_SECONDS >= 31 * 24 * HOUR_SECONDS


def test_on_a_cluster_every_key_of_an_hour_shares_one_slot(redis_cluster):
    redis_cluster.flush()
    store = RedisDashboardStore(connect(redis_cluster.url))
    from redis.crc import key_slot

    slots = {key_slot(store.key(HOUR, family).encode()) for family in ("counts", "latency", "questions", "comments")}
    assert len(slots) == 1


def test_the_recorder_turns_events_into_the_summarys_numbers():
    clock = Clock()
    store = MemoryDashboardStore(clock)
    recorder = DashboardRecorder(store, clock)
    recorder.publish("conversation.created", "c1", {})
    recorder.publish("conversation.created", "c2", {})
    recorder.publish("message.completed", "c1", {"time_to_first_delta_ms": 120.0, "question": "Hi"})
    recorder.publish("message.failed", "c2", {"code": "timeout", "question": "Why  is it slow?"})
    recorder.publish("message.incomplete", "c2", {"code": "answer_too_long", "question": "Tell me everything"})
    recorder.publish("message.cancelled", "c1", {})
    recorder.publish("feedback.submitted", "c1", {"helpful": False, "comment": "", "question": "why is it slow"})
    recorder.publish(
        "feedback.submitted", "c1", {"helpful": False, "comment": "=cmd", "question": "x", "rating_changed": False}
    )
    recorder.publish("feedback.submitted", "c2", {"helpful": True, "comment": "", "question": ""})
    recorder.publish("handoff.queued", "c1", {})
    recorder.publish("handoff.assigned", "c1", {"waited_ms": 30_000})
    recorder.publish("handoff.ended", "c1", {"reason": "ended"})
    recorder.publish("message.left", "c2", {})
    recorder.publish("satisfaction.submitted", "c1", {"rating": 4})
    recorder.publish("satisfaction.submitted", "c2", {"rating": 2})
    recorder.publish("something.else", "c2", {"rating": 2})
    period = PERIODS["today"]
    span = period_hours(period, NOW)
    summary = summarise(period, span, store.read(span))
    assert summary["conversations"] == 2
    assert summary["answers"] == {
        "completed": 1,
        "failed": 1,
        "cancelled": 1,
        "incomplete": 1,
        "failed_by_code": {"answer_too_long": 1, "timeout": 1},
    }
    assert summary["time_to_first_delta_ms"]["count"] == 1
    assert abs(summary["time_to_first_delta_ms"]["p50"] - 120) <= 120 * RELATIVE_ERROR
    assert summary["feedback"]["helpful"] == 1
    assert summary["feedback"]["not_helpful"] == 1
    assert summary["feedback"]["helpful_rate"] == 0.5
    assert [entry["comment"] for entry in summary["feedback"]["comments"]] == ["=cmd"]
    assert summary["handoffs"]["queued"] == summary["handoffs"]["answered"] == summary["handoffs"]["ended"] == 1
    assert summary["handoffs"]["left_messages"] == 1
    assert abs(summary["handoffs"]["wait_ms"]["p95"] - 30_000) <= 30_000 * RELATIVE_ERROR
    assert summary["satisfaction"] == {"count": 2, "average": 3.0, "by_rating": {"2": 1, "4": 1}}
    # The failed question and the not-helpful one are one question once normalised.
    assert summary["top_questions"] == [
        {"question": "why is it slow", "count": 2},
        {"question": "tell me everything", "count": 1},
    ]
    assert sum(row["conversations"] for row in summary["series"]) == 2
    assert len(summary["series"]) == HOUR % 24 + 1  # today: one row per hour since 00:00 UTC


def test_a_recorder_whose_store_is_down_does_not_fail_its_caller(caplog):
    class Down:
        def record(self, hour, change):
            raise ConnectionError("down")

        def read(self, hours):
            return {}

    DashboardRecorder(Down()).publish("conversation.created", "c1", {})
    assert "was not counted" in caplog.text


def test_periods_cover_their_hours():
    assert len(period_hours(PERIODS["7d"], NOW)) == 7 * 24
    assert len(period_hours(PERIODS["30d"], NOW)) == 30 * 24
    today = period_hours(PERIODS["today"], NOW)
    assert today.start * HOUR_SECONDS % 86400 == 0 and today.stop - 1 == HOUR


def test_questions_are_normalised():
    assert normalise_question("  How do I\tRESET?? ") == normalise_question("how do i reset") == "how do i reset"
    assert len(normalise_question("x" * 1000)) == 200
