"""The dashboard's store on one Redis or a Redis Cluster (docs/dashboard.md, "Where the numbers live").

Per UTC day `D` (whole days since the epoch) four keys, each bounded: `…:day:counts` (a hash:
counter name → count), `…:day:latency` (a hash: `<family>:<bucket>` → count, buckets.py's
fixed log-spaced buckets, so at most 2 × (MAX_BUCKET + 1) fields), `…:day:questions` (a sorted
set: normalised question → count, trimmed to TOP_PER_DAY by rank) and `…:day:comments` (a list
trimmed to COMMENTS_PER_DAY); and per hour `H` of that day its own `…:h:H:counts` and
`…:h:H:latency`. On a cluster every key of a day, its hours' included, carries the day's hash
tag, `cw:{dash:D}:…`, so one event's write is one pipeline to one node; on one Redis they are
`cw:dash:D:…` (keyspace.py's rule: tags only on a cluster). Every key expires RETENTION_SECONDS
after its day ends (EXPIREAT, the same moment for every write of the day), but for the day's
questions and comments, the visitors' words, which go `text_seconds` (RETENTION) after the day
ends if that is sooner (store.texts_expire_at).

A write is one pipelined round trip of plain commands (HINCRBY, ZINCRBY, ZREMRANGEBYRANK,
LPUSH, LTRIM, EXPIREAT): each is atomic and nothing is read before it is written, so no Lua is
needed. A read is one pipeline of four reads per day of the period, or two per hour of today
(on a cluster redis-py sends each node its share).
"""

from __future__ import annotations

from typing import Any

from ..stores.base import StoreUnavailable
from ..stores.redis_connection import connection_trouble, is_cluster
from .buckets import COMMENTS_PER_DAY, DAY_HOURS, RETENTION_SECONDS, TOP_PER_DAY
from .store import Bucket, Change, comment_text, expires_at, texts_expire_at

DAY_FAMILIES = ("counts", "latency", "questions", "comments")
HOUR_FAMILIES = ("counts", "latency")


class RedisDashboardStore:
    def __init__(self, redis: Any, text_seconds: float = RETENTION_SECONDS) -> None:
        self.redis = redis
        self.text_seconds = text_seconds
        self.cluster = is_cluster(redis)
        self._trouble = connection_trouble()

    def key(self, day: int, family: str, hour: int | None = None) -> str:
        """The key of a day's family, or of one of its hours' (`hour`)."""
        prefix = f"cw:{{dash:{day}}}:" if self.cluster else f"cw:dash:{day}:"
        return f"{prefix}day:{family}" if hour is None else f"{prefix}h:{hour}:{family}"

    def record(self, hour: int, change: Change) -> None:
        day = hour // DAY_HOURS
        pipe = self.redis.pipeline(transaction=False)
        touched: list[str] = []
        for scope in (hour, None):
            if change.counts:
                key = self.key(day, "counts", scope)
                for name, amount in change.counts.items():
                    pipe.hincrby(key, name, amount)
                touched.append(key)
            if change.latencies:
                key = self.key(day, "latency", scope)
                for family, index in change.latencies.items():
                    pipe.hincrby(key, f"{family}:{index}", 1)
                touched.append(key)
        for key in touched:
            pipe.expireat(key, expires_at(day))
        texts_at = texts_expire_at(day, self.text_seconds)
        if change.question:
            key = self.key(day, "questions")
            pipe.zincrby(key, 1, change.question)
            # Rank 0 is the least counted: keep the last TOP_PER_DAY.
            pipe.zremrangebyrank(key, 0, -(TOP_PER_DAY + 1))
            pipe.expireat(key, texts_at)
            touched.append(key)
        if change.comment:
            key = self.key(day, "comments")
            pipe.lpush(key, change.comment)
            pipe.ltrim(key, 0, COMMENTS_PER_DAY - 1)
            pipe.expireat(key, texts_at)
            touched.append(key)
        if touched:
            self._run(pipe)

    def read_hours(self, hours: range) -> dict[int, Bucket]:
        pipe = self.redis.pipeline(transaction=False)
        for hour in hours:
            pipe.hgetall(self.key(hour // DAY_HOURS, "counts", hour))
            pipe.hgetall(self.key(hour // DAY_HOURS, "latency", hour))
        replies = self._run(pipe)
        found: dict[int, Bucket] = {}
        for offset, hour in enumerate(hours):
            counts, latency = replies[offset * 2 : offset * 2 + 2]
            if counts or latency:
                found[hour] = _bucket(counts, latency, [], [])
        return found

    def read_days(self, days: range) -> dict[int, Bucket]:
        pipe = self.redis.pipeline(transaction=False)
        for day in days:
            pipe.hgetall(self.key(day, "counts"))
            pipe.hgetall(self.key(day, "latency"))
            pipe.zrange(self.key(day, "questions"), 0, -1, withscores=True)
            pipe.lrange(self.key(day, "comments"), 0, -1)
        replies = self._run(pipe)
        found: dict[int, Bucket] = {}
        for offset, day in enumerate(days):
            counts, latency, questions, comments = replies[offset * 4 : offset * 4 + 4]
            if counts or latency or questions or comments:
                found[day] = _bucket(counts, latency, questions, comments)
        return found

    def forget_texts(self, days: range, questions: set[str], comments: set[str]) -> None:
        """One pipeline reads the days' comments, the next removes the questions (ZREM) and each
        matching entry (LREM): bounded by the days and COMMENTS_PER_DAY, whatever the traffic."""
        reading = self.redis.pipeline(transaction=False)
        for day in days:
            reading.lrange(self.key(day, "comments"), 0, -1)
        entries_by_day = self._run(reading)
        removing = self.redis.pipeline(transaction=False)
        for day, entries in zip(days, entries_by_day, strict=True):
            if questions:
                removing.zrem(self.key(day, "questions"), *questions)
            for entry in entries:
                if comment_text(_text(entry)) in comments:
                    removing.lrem(self.key(day, "comments"), 0, entry)
        self._run(removing)

    def _run(self, pipe: Any) -> list[Any]:
        try:
            result: list[Any] = pipe.execute()
        except self._trouble as error:
            raise StoreUnavailable(f"redis: {type(error).__name__}: {error}") from error
        return result


def _text(value: bytes | str) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else value


def _bucket(counts: dict, latency: dict, questions: list, comments: list) -> Bucket:
    bucket = Bucket(
        counts={_text(name): int(value) for name, value in counts.items()},
        questions={_text(question): int(score) for question, score in questions},
        comments=[_text(comment) for comment in comments],
    )
    for field_name, value in latency.items():
        family, _, index = _text(field_name).rpartition(":")
        bucket.latencies.setdefault(family, {})[int(index)] = int(value)
    return bucket
