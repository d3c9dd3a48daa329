"""Compaction: an ended answer's log keeps its whole stream for FINISHED_LOG_GRACE_SECONDS, then
only its terminal entry (a resume gets one `message.snapshot` and the ending, exact).

An ending with no grace compacts at once, in append.lua itself; else it adds the message to a
compaction set (`compact`, one per bucket on a cluster: keyspace.py), scored by when to
compact it, and any worker's next ending or new message compacts what is due (compact.lua).
"""

from __future__ import annotations

import time
from typing import cast

from .. import redis as package
from ..lua import load_script
from ..script_batches import ScriptBatches
from .core import SCRIPTS, RedisStoreBase, _text
from .unavailable import unavailable_on_connection_errors

_COMPACT = load_script(SCRIPTS, "compact")


@unavailable_on_connection_errors
class RedisCompaction(RedisStoreBase):
    def _register_compaction_scripts(self) -> None:
        self._compact = self.redis.register_script(_COMPACT)
        # (On a cluster the logs of one look are on several masters: no pipeline, a batch each.)
        self._compact_batches = ScriptBatches(
            self.redis, _COMPACT, lambda keys, args: self._compact(keys=keys, args=args)
        )

    def compact_due(self, near: str = "", limit: int = 64) -> int:
        """Compact the logs whose grace after their end has passed: each stream
        keeps only its terminal entry (the newest: nothing is written after an
        end). Run after each ending and each new message, by any worker;
        trimming twice is harmless. Returns how many were compacted.
        On a cluster each bucket has its own set (keyspace.py): this looks at
        the bucket of `near` (the message or conversation just written) and at
        one more, in turn, so every bucket's set is looked at while any writes.

        A set is looked at (one round trip) when an end of grace this process wrote has
        come, or when COMPACT_LOOK_SECONDS have passed since this process last looked:
        under load that is once a second instead of twice per answer, and a log any
        worker ended is compacted at most that much later than its grace
        (tests/test_redis_compaction.py)."""
        buckets = self.keys.compact_sets()
        looked = {self._compact_index(near) if near else buckets[0]}
        if self.keys.cluster:
            self._next_compact_bucket = (self._next_compact_bucket + 1) % len(buckets)
            looked.add(self._next_compact_bucket)
        return sum(self._compact_bucket(index, limit) for index in looked if self._compact_look_due(index))

    def _compact_look_due(self, index: int) -> bool:
        # COMPACT_LOOK_SECONDS is the package's (stores/redis/__init__.py), read at each look.
        look_seconds = package.COMPACT_LOOK_SECONDS
        now = time.monotonic()
        own_due = self._compact_own_due.get(index)
        if own_due is not None and time.time() * 1000 >= own_due:
            return True
        return now - self._compact_looked.get(index, -look_seconds) >= look_seconds

    def _compact_bucket(self, index: int, limit: int) -> int:
        compact_key = self.keys.compact(index)
        now_ms = int(time.time() * 1000)
        due = self.redis.zrangebyscore(compact_key, "-inf", now_ms, start=0, num=limit)
        if len(due) < limit:  # all that was due is being compacted: the next look can wait
            self._compact_looked[index] = time.monotonic()
            if self._compact_own_due.get(index, now_ms + 1) <= now_ms:
                del self._compact_own_due[index]
        else:
            self._compact_looked.pop(index, None)
        if not due:
            return 0
        logs = [self._msg(_text(cast("bytes", raw))) + ":events" for raw in due]
        if not self.keys.cluster:  # scripts in a pipeline: one Redis only (keep_runs)
            pipe = self.redis.pipeline(transaction=False)
            for log_key in logs:
                self._compact(keys=[log_key], client=pipe)
            pipe.zrem(compact_key, *due)
            pipe.execute()
        else:
            for call in [self._compact_batches.submit([log_key], []) for log_key in logs]:
                call.result()
            self.redis.zrem(compact_key, *due)
        return len(due)
