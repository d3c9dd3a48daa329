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
import socket
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections import deque
from enum import Enum
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from widget_server.stores.base import Conversation
from widget_server.stores.memory import MemoryStore

ANSWER = ("Arpeggios — «Am F C G» — spell the chord tones; scales fill the gaps. " * 60)[:4000]
DELTA = 4


def deep_size(root: object) -> int:
    seen: set[int] = set()
    total, stack = 0, [root]
    while stack:
        obj = stack.pop()
        if id(obj) in seen or obj is None or isinstance(obj, (type, int, float, bool, Enum)):
            continue
        seen.add(id(obj))
        total += sys.getsizeof(obj)
        if isinstance(obj, dict):
            stack.extend([*obj.keys(), *obj.values()])
        elif isinstance(obj, (list, tuple, set, frozenset, deque)):
            stack.extend(obj)
        elif hasattr(obj, "__dict__"):
            stack.append(vars(obj))
    return total


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
    binary = shutil.which("redis-server")
    if binary is None:
        return {}
    import redis

    from widget_server.stores.redis import RedisStore

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    figures = {}
    with tempfile.TemporaryDirectory() as folder:
        server = subprocess.Popen(
            [binary, "--port", str(port), "--save", "", "--appendonly", "no", "--dir", folder],
            stdout=subprocess.DEVNULL,
        )
        try:
            client = redis.Redis(port=port)
            for _ in range(100):
                try:
                    client.ping()
                    break
                except redis.ConnectionError:
                    time.sleep(0.05)
            for label, grace in (("whole log", 3600.0), ("compacted", 0.0)):
                store = RedisStore(f"redis://127.0.0.1:{port}/0", finished_log_grace=grace)
                store.create_conversation(Conversation("c_1", "hash", 0.0))
                mid = f"m_{int(grace)}"
                play(store, mid)
                key = f"cw:msg:{mid}"
                usage = sum(
                    client.memory_usage(k) or 0 for k in (key, key + ":text", key + ":events", key + ":actions")
                )
                figures[f"redis, {label}, MEMORY USAGE"] = usage
                store.close()
        finally:
            server.terminate()
            server.wait()
    return figures


def main() -> None:
    print(
        f"one finished answer: {len(ANSWER)} characters, {len(ANSWER.encode())} UTF-8 bytes, {len(ANSWER) // DELTA} deltas"
    )
    for name, value in {**memory_figures(), **redis_figures()}.items():
        print(f"{name:40} {value:>9,} bytes  ({value / 1024:,.1f} KiB)")


if __name__ == "__main__":
    main()
