"""The dashboard's store on one Redis or a Redis Cluster (docs/dashboard.md, "Where the numbers live").

Per hour `H` (whole hours since the epoch, UTC), four keys, each bounded:
`…:counts` (a hash: counter name → count), `…:latency` (a hash: `<family>:<bucket>` → count,
buckets.py's fixed log-spaced buckets, so at most 2 × (MAX_BUCKET + 1) fields),
`…:questions` (a sorted set: normalised question → count, trimmed to TOP_PER_HOUR by rank) and
`…:comments` (a list trimmed to COMMENTS_PER_HOUR). On a cluster all four carry the hour's
hash tag, `cw:{dash:H}:…`, so one event's write is one pipeline to one node; on one Redis they
are `cw:dash:H:…` (keyspace.py's rule: tags only on a cluster). Each key expires
RETENTION_SECONDS after its hour ends (EXPIREAT, the same moment for every write of the hour).

A write is one pipelined round trip of plain commands (HINCRBY, ZINCRBY, ZREMRANGEBYRANK,
LPUSH, LTRIM, EXPIREAT): each is atomic, and nothing reads before writing, so no Lua is
needed. A read is one pipeline of four reads per hour of the period (on a cluster redis-py
sends each node its share).
"""

from __future__ import annotations

from typing import Any

from ..stores.base import StoreUnavailable
from ..stores.redis_connection import connection_trouble, is_cluster
from .buckets import COMMENTS_PER_HOUR, HOUR_SECONDS, RETENTION_SECONDS, TOP_PER_HOUR
from .store import HourChange, HourData

FAMILIES = ("counts", "latency", "questions", "comments")


class RedisDashboardStore:
    def __init__(self, redis: Any) -> None:
        self.redis = redis
        self.cluster = is_cluster(redis)
        self._trouble = connection_trouble()

    def key(self, hour: int, family: str) -> str:
        return f"cw:{{dash:{hour}}}:{family}" if self.cluster else f"cw:dash:{hour}:{family}"

    def record(self, hour: int, change: HourChange) -> None:
        expires_at = (hour + 1) * HOUR_SECONDS + RETENTION_SECONDS
        pipe = self.redis.pipeline(transaction=False)
        touched: list[str] = []
        if change.counts:
            key = self.key(hour, "counts")
            for name, amount in change.counts.items():
                pipe.hincrby(key, name, amount)
            touched.append(key)
        if change.latencies:
            key = self.key(hour, "latency")
            for family, index in change.latencies.items():
                pipe.hincrby(key, f"{family}:{index}", 1)
            touched.append(key)
        if change.question:
            key = self.key(hour, "questions")
            pipe.zincrby(key, 1, change.question)
            # Rank 0 is the least counted: keep the last TOP_PER_HOUR.
            pipe.zremrangebyrank(key, 0, -(TOP_PER_HOUR + 1))
            touched.append(key)
        if change.comment:
            key = self.key(hour, "comments")
            pipe.lpush(key, change.comment)
            pipe.ltrim(key, 0, COMMENTS_PER_HOUR - 1)
            touched.append(key)
        for key in touched:
            pipe.expireat(key, expires_at)
        if touched:
            self._run(pipe)

    def read(self, hours: range) -> dict[int, HourData]:
        pipe = self.redis.pipeline(transaction=False)
        for hour in hours:
            pipe.hgetall(self.key(hour, "counts"))
            pipe.hgetall(self.key(hour, "latency"))
            pipe.zrange(self.key(hour, "questions"), 0, -1, withscores=True)
            pipe.lrange(self.key(hour, "comments"), 0, -1)
        replies = self._run(pipe)
        found: dict[int, HourData] = {}
        for offset, hour in enumerate(hours):
            counts, latency, questions, comments = replies[offset * 4 : offset * 4 + 4]
            if not (counts or latency or questions or comments):
                continue
            data = HourData(
                counts={_text(name): int(value) for name, value in counts.items()},
                questions={_text(question): int(score) for question, score in questions},
                comments=[_text(comment) for comment in comments],
            )
            for field_name, value in latency.items():
                family, _, index = _text(field_name).rpartition(":")
                data.latencies.setdefault(family, {})[int(index)] = int(value)
            found[hour] = data
        return found

    def _run(self, pipe: Any) -> list[Any]:
        try:
            result: list[Any] = pipe.execute()
        except self._trouble as error:
            raise StoreUnavailable(f"redis: {type(error).__name__}: {error}") from error
        return result


def _text(value: bytes | str) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else value
