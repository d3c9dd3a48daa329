"""The dashboard's store (widget_server/dashboard/store.py, redis_store.py) on memory, one
Redis and a Redis Cluster: counts per hour and per day, percentiles within the sketch's bound,
expiry, the top questions and comments bounded; and the recorder's events as the summary's
numbers (docs/dashboard.md)."""

from __future__ import annotations

import json
import math
import random
import time

import pytest

from widget_server.dashboard.buckets import (
    COMMENTS_PER_DAY,
    DAY_HOURS,
    HOUR_SECONDS,
    PERIODS,
    RELATIVE_ERROR,
    RETENTION_SECONDS,
    TOP_PER_DAY,
    day_of,
    hour_of,
    latency_bucket,
    normalise_question,
    percentile,
    period_days,
)
from widget_server.dashboard.recorder import DashboardRecorder
from widget_server.dashboard.redis_store import RedisDashboardStore
from widget_server.dashboard.store import Change, MemoryDashboardStore, expires_at, texts_expire_at
from widget_server.dashboard.summary import read_summary
from widget_server.stores.redis_connection import connect

from .redis_support import redis_client

# 10:30 UTC today: mid-day, so a few hours before it are the same day; today, because Redis
# expires keys by the real clock (an EXPIREAT in the past deletes the key at once).
NOW = (time.time() // 86400) * 86400 + 10.5 * 3600
HOUR = hour_of(NOW)
DAY = day_of(NOW)


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


def test_counts_land_in_their_hour_and_their_day_and_add_up(store_and_server):
    store, _, _ = store_and_server
    store.record(HOUR, Change(counts={"conversations": 1}))
    store.record(HOUR, Change(counts={"conversations": 1, "completed": 1}))
    store.record(HOUR - 1, Change(counts={"conversations": 5}))
    store.record(HOUR - DAY_HOURS, Change(counts={"conversations": 7}))  # yesterday
    hours = store.read_hours(range(HOUR - 3, HOUR + 1))
    assert sorted(hours) == [HOUR - 1, HOUR]
    assert hours[HOUR].counts == {"conversations": 2, "completed": 1}
    assert hours[HOUR - 1].counts == {"conversations": 5}
    assert store.read_hours(range(HOUR + 1, HOUR + 5)) == {}
    days = store.read_days(range(DAY - 5, DAY + 1))
    assert sorted(days) == [DAY - 1, DAY]
    assert days[DAY].counts == {"conversations": 7, "completed": 1}
    assert days[DAY - 1].counts == {"conversations": 7}


def test_percentiles_from_the_merged_hours_are_within_the_sketchs_bound(store_and_server):
    store, _, _ = store_and_server
    generator = random.Random(7)
    values = [generator.lognormvariate(6, 1.2) for _ in range(3000)]  # ms, around 400 ms
    for index, value in enumerate(values):
        store.record(HOUR - index % 5, Change(latencies={"ttfd": latency_bucket(value)}))
    merged: dict[int, int] = {}
    for data in store.read_hours(range(HOUR - 10, HOUR + 1)).values():
        for bucket, count in data.latencies["ttfd"].items():
            merged[bucket] = merged.get(bucket, 0) + count
    assert store.read_days(range(DAY, DAY + 1))[DAY].latencies["ttfd"] == merged
    assert sum(merged.values()) == len(values)
    ordered = sorted(values)
    for fraction in (0.5, 0.95):
        exact = ordered[math.ceil(fraction * len(values)) - 1]  # the nearest rank
        estimate = percentile(merged, fraction)
        assert estimate is not None
        assert abs(estimate - exact) / exact <= RELATIVE_ERROR + 0.001, (fraction, estimate, exact)


def test_the_top_questions_of_a_day_stay_bounded_and_keep_the_most_counted(store_and_server):
    store, _, _ = store_and_server
    for _ in range(5):
        store.record(HOUR, Change(question="how do i reset my password"))
    for index in range(TOP_PER_DAY * 2):
        store.record(HOUR - index % 3, Change(question=f"rare question {index:03d}"))
    questions = store.read_days(range(DAY, DAY + 1))[DAY].questions
    assert len(questions) == TOP_PER_DAY
    assert questions["how do i reset my password"] == 5
    assert store.read_hours(range(HOUR, HOUR + 1)) == {}  # a day's, not an hour's


def test_comments_of_a_day_keep_the_newest(store_and_server):
    store, _, _ = store_and_server
    for index in range(COMMENTS_PER_DAY + 5):
        store.record(HOUR, Change(comment=json.dumps({"n": index})))
    comments = store.read_days(range(DAY, DAY + 1))[DAY].comments
    assert [json.loads(entry)["n"] for entry in comments] == list(range(COMMENTS_PER_DAY + 4, 4, -1))


def test_a_deleted_conversations_questions_and_comments_are_forgotten_on_every_day(store_and_server):
    store, _, _ = store_and_server
    said = json.dumps({"at": "2026-12-07T10:00:00Z", "helpful": False, "comment": "My card ends 4242"})
    other = json.dumps({"at": "2026-12-07T10:01:00Z", "helpful": True, "comment": "Thanks"})
    for hour in (HOUR, HOUR - DAY_HOURS):
        store.record(hour, Change(question="my card number is 4242", comment=said))
        store.record(hour, Change(question="opening hours", comment=other))
    store.forget_texts(range(DAY - 1, DAY + 1), {"my card number is 4242"}, {"My card ends 4242"})
    for day in (DAY - 1, DAY):
        bucket = store.read_days(range(day, day + 1))[day]
        assert bucket.questions == {"opening hours": 1}
        assert bucket.comments == [other]


def test_a_day_and_its_hours_expire_after_the_retention(store_and_server):
    store, server, clock = store_and_server
    store.record(HOUR, Change(counts={"conversations": 1}, question="q", latencies={"ttfd": 3}, comment="{}"))
    end_of_retention = (DAY + 1) * DAY_HOURS * HOUR_SECONDS + RETENTION_SECONDS
    assert expires_at(DAY) == end_of_retention
    assert RETENTION_SECONDS >= 31 * DAY_HOURS * HOUR_SECONDS
    if server is None:
        clock.now = end_of_retention - 1
        assert store.read_days(range(DAY, DAY + 1)) and store.read_hours(range(HOUR, HOUR + 1))
        clock.now = end_of_retention + HOUR_SECONDS
        assert store.read_days(range(DAY, DAY + 1)) == {} and store.read_hours(range(HOUR, HOUR + 1)) == {}
        return
    client = redis_client(server.url)
    keys = [store.key(DAY, family) for family in ("counts", "latency", "questions", "comments")]
    keys += [store.key(DAY, family, HOUR) for family in ("counts", "latency")]
    for key in keys:
        assert client.expiretime(key) == end_of_retention, key


def test_on_a_cluster_every_key_of_a_day_and_its_hours_shares_one_slot(redis_cluster):
    from redis.crc import key_slot

    store = RedisDashboardStore(connect(redis_cluster.url))
    keys = [store.key(DAY, family) for family in ("counts", "latency", "questions", "comments")]
    keys += [
        store.key(DAY, family, hour)
        for hour in range(DAY * DAY_HOURS, (DAY + 1) * DAY_HOURS)
        for family in ("counts", "latency")
    ]
    assert len({key_slot(key.encode()) for key in keys}) == 1
    assert key_slot(store.key(DAY + 1, "counts").encode()) != key_slot(keys[0].encode())


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
    summary = read_summary(store, PERIODS["today"], NOW)
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


def test_periods_are_whole_utc_days_ending_today():
    assert period_days(PERIODS["today"], NOW) == range(DAY, DAY + 1)
    assert period_days(PERIODS["7d"], NOW) == range(DAY - 6, DAY + 1)
    assert period_days(PERIODS["30d"], NOW) == range(DAY - 29, DAY + 1)


def test_a_summary_of_days_reads_each_day_once_whatever_was_counted():
    """The read is days × families: 30 days of many events or of one cost the same reads."""
    reads: list[range] = []

    class Counting(MemoryDashboardStore):
        def read_days(self, days):
            reads.append(days)
            return super().read_days(days)

        def read_hours(self, hours):
            raise AssertionError("a 30-day period is read by its days")

    store = Counting(Clock())
    for index in range(5000):
        store.record(HOUR - index % (29 * DAY_HOURS), Change(counts={"conversations": 1}))
    summary = read_summary(store, PERIODS["30d"], NOW)
    assert reads == [range(DAY - 29, DAY + 1)]
    assert summary["conversations"] == 5000 and len(summary["series"]) == 30


def test_questions_are_normalised():
    assert normalise_question("  How do I\tRESET?? ") == normalise_question("how do i reset") == "how do i reset"
    assert len(normalise_question("x" * 1000)) == 200


def test_comments_and_questions_go_when_conversations_would_the_counts_stay(request):
    """docs/privacy.md: the visitors' words are kept no longer after their day than RETENTION."""
    day_seconds = DAY_HOURS * HOUR_SECONDS
    retention = 3600  # one hour after the day ends
    change = Change(counts={"completed": 1}, question="why", comment='{"comment": "slow"}')
    texts_gone = (DAY + 1) * day_seconds + retention
    assert texts_expire_at(DAY, retention) == texts_gone

    clock = Clock()
    memory = MemoryDashboardStore(clock, text_seconds=retention)
    memory.record(HOUR, change)
    clock.now = texts_gone - 1
    assert memory.read_days(range(DAY, DAY + 1))[DAY].comments
    clock.now = texts_gone + HOUR_SECONDS  # the next hour's sweep
    kept = memory.read_days(range(DAY, DAY + 1))[DAY]
    assert (kept.counts, kept.questions, kept.comments) == ({"completed": 1}, {}, [])

    for fixture in ("redis_server", "redis_cluster"):
        server = request.getfixturevalue(fixture)
        server.flush()
        store = RedisDashboardStore(connect(server.url), text_seconds=retention)
        store.record(HOUR, change)
        client = redis_client(server.url)
        assert client.expiretime(store.key(DAY, "questions")) == texts_gone
        assert client.expiretime(store.key(DAY, "comments")) == texts_gone
        assert client.expiretime(store.key(DAY, "counts")) == expires_at(DAY)
