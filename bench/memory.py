"""Bytes a store holds per finished 4,000-character answer, before and after compaction.

    .venv/bin/python bench/memory.py            # memory store; Redis too if redis-server is installed

The answer is streamed as a model does (4 characters a delta, 1,000 deltas), with
non-ASCII characters in it. "Whole log" is what the store holds once the answer has
ended and before its log is compacted (what every finished answer held before
compaction existed); "compacted" is what it holds after (FINISHED_LOG_GRACE_SECONDS
later, or at once with 0). Memory store: tracemalloc's count of the bytes allocated
for the message, and a sys.getsizeof walk of its log; the budget's own estimate
(MessageLog.stored_bytes) beside them. Redis: MEMORY USAGE of the message's keys.
"""

from __future__ import annotations

import shutil
import sys
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.memory_walk import deep_size  # the same walk the memory-bound tests use
from tests.redis_support import RedisServer
from widget_server.stores.base import Conversation
from widget_server.stores.memory import MemoryStore

ANSWER = ("Arpeggios — «Am F C G» — spell the chord tones; scales fill the gaps. " * 60)[:4000]
DELTA = 4


def play(store, mid: str) -> None:
    store.claim_request("c_1", f"r{mid}", "fp", "a long answer, please", f"u{mid}", mid)
    store.start(mid)
    for start in range(0, len(ANSWER), DELTA):
        store.append_text(mid, ANSWER[start : start + DELTA])
    store.complete(mid)


def memory_figures() -> dict[str, int]:
    figures = {}
    for label, grace in (("whole log", 3600.0), ("compacted", 0.0)):
        store = MemoryStore(finished_log_grace=grace)
        store.create_conversation(Conversation("c_1", "hash", 0.0))
        tracemalloc.start()
        before = tracemalloc.take_snapshot()
        play(store, "m_1")
        after = tracemalloc.take_snapshot()
        tracemalloc.stop()
        allocated = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
        log = store._messages["m_1"].log
        figures[f"memory, {label}, tracemalloc"] = allocated
        figures[f"memory, {label}, getsizeof walk"] = deep_size(log)
        figures[f"memory, {label}, budget estimate"] = log.stored_bytes
    return figures


def redis_figures() -> dict[str, int]:
    if shutil.which("redis-server") is None:
        return {}
    import redis

    from widget_server.stores.redis import RedisStore

    figures = {}
    server = RedisServer().start()
    try:
        client = redis.Redis.from_url(server.url)
        for label, grace in (("whole log", 3600.0), ("compacted", 0.0)):
            store = RedisStore(server.url, finished_log_grace=grace)
            store.create_conversation(Conversation("c_1", "hash", 0.0))
            mid = f"m_{int(grace)}"
            play(store, mid)
            key = f"cw:msg:{mid}"
            usage = sum(client.memory_usage(k) or 0 for k in (key, key + ":text", key + ":events", key + ":actions"))
            figures[f"redis, {label}, MEMORY USAGE"] = usage
            store.close()
        client.close()
    finally:
        server.stop()
    return figures


def main() -> None:
    print(
        f"one finished answer: {len(ANSWER)} characters, {len(ANSWER.encode())} UTF-8 bytes, {len(ANSWER) // DELTA} deltas"
    )
    for name, value in {**memory_figures(), **redis_figures()}.items():
        print(f"{name:40} {value:>9,} bytes  ({value / 1024:,.1f} KiB)")


if __name__ == "__main__":
    main()
