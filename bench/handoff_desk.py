"""What a claim costs with 1 and with 200 conversations waiting: does the desk need per-entry keys?

    .venv/bin/python bench/handoff_desk.py          # a real redis-server on loopback, and the memory store

The queue and the claims are one record, the desk (widget_server/handoff/store.py): every
request, claim and end reads it and writes it back whole, in one compare-and-set (on Redis one
Lua script, handoff/lua/commit.lua), so its cost grows with the queue, which HANDOFF_QUEUE_MAX
bounds (default 200). This measures, in the same run, with N = 1 and N = 200 waiting:

- `desk read + commit`: the store alone, what per-entry keys would change: load the desk, then
  commit it back changed (one waiting entry moved to the claims), no events;
- `claim`, `request`, `end`: HandoffService's whole transitions. A claim of the head of the
  queue also tells every other waiting visitor their new place (one `handoff.queued` each,
  docs/protocol.md), which no key layout avoids; the claim of the newest (the tail) shows
  the claim without them. The fan-out's records are read in one go (`_Transaction.prefetch`);
  the row `N=200, read one by one` is the same claim with that turned off, as it was before.

Each figure is the median of ROUNDS rounds, in ms, and its ratio N=200 / N=1. Raw figures go
to bench/results/handoff_desk.json.
"""

from __future__ import annotations

import json
import shutil
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.redis_support import RedisServer
from widget_server.backends.base import create_backend
from widget_server.chat.service import ChatService
from widget_server.handoff import create_handoff_store
from widget_server.handoff import service as service_module
from widget_server.handoff.service import HandoffService
from widget_server.handoff.store import DESK, Commit
from widget_server.settings import load_settings
from widget_server.stores import create_store

ROUNDS = 200
WAITING = (1, 200)
ONE_BY_ONE = "200, read one by one"
RESULTS = Path(__file__).resolve().parent / "results" / "handoff_desk.json"


@contextmanager
def redis_server() -> Iterator[str | None]:
    """A real redis-server on a free loopback port (the tests' own), or None without one."""
    if shutil.which("redis-server") is None:
        yield None
        return
    server = RedisServer().start()
    try:
        yield server.url
    finally:
        server.stop()


def timed(call: Callable[[], Any]) -> float:
    start = time.perf_counter()
    call()
    return (time.perf_counter() - start) * 1000


def measure(store_url: str, waiting: int) -> dict[str, float]:
    settings = load_settings(
        {"HANDOFF": "on", "STORE": store_url, "HANDOFF_QUEUE_MAX": 1000, "AGENT_PRESENCE_SECONDS": 3600},
        environ={},
    )
    chat_store = create_store(settings)
    if getattr(chat_store, "shared", False):
        chat_store.redis.flushdb()
    chat = ChatService(chat_store, create_backend("demo", settings), settings)
    service = HandoffService(create_handoff_store(settings, chat_store), chat_store, settings)
    service.agent_seen("ana")
    try:
        queue = [chat.create_conversation()[0] for _ in range(waiting)]
        for cid in queue:
            service.request(cid, "r")
        times: dict[str, list[float]] = {"desk read + commit": [], "request": [], "claim (head)": [], "end": []}
        times["claim (tail)"] = []
        store = service.store
        for n in range(ROUNDS):
            # The store alone: read the desk, move the head into the claims, commit it back.
            def desk_round() -> None:
                version, desk = store.load([DESK])[DESK]
                assert desk is not None
                head = desk["queue"][0]
                desk["assigned"][head["conversation_id"]] = {"agent": "x", "display": "X", "since": 0.0}
                desk["assigned"].pop(head["conversation_id"])
                assert store.commit(Commit(expected={DESK: version}, writes={DESK: desk}))

            times["desk read + commit"].append(timed(desk_round))
            newcomer = chat.create_conversation()[0]
            times["request"].append(timed(lambda newcomer=newcomer: service.request(newcomer, "r")))
            # Alternate the head (every other visitor moves up) and the tail (nobody moves).
            if n % 2 == 0:
                taken = queue.pop(0)
                label = "claim (head)"
            else:
                taken = newcomer
                label = "claim (tail)"
            queue.append(newcomer)
            if taken in queue:
                queue.remove(taken)
            times[label].append(timed(lambda taken=taken: service.claim(taken, "ana", "Ana")))
            times["end"].append(timed(lambda taken=taken: service.end(taken, "ana")))
        assert len(service.queue()) == waiting
        return {name: round(statistics.median(values), 3) for name, values in times.items()}
    finally:
        service.store.close()
        chat_store.close()


def main() -> None:
    figures: dict[str, dict[str, dict[str, float]]] = {}
    with redis_server() as redis_url:
        stores = {"memory": "memory"}
        if redis_url is not None:
            stores["redis"] = redis_url
        else:
            print("redis-server not found: the memory store only")
        for kind, url in stores.items():
            figures[kind] = {str(n): measure(url, n) for n in WAITING}
            batched = service_module._Transaction.prefetch
            service_module._Transaction.prefetch = lambda self, keys: None  # type: ignore[method-assign]
            try:
                figures[kind][ONE_BY_ONE] = measure(url, WAITING[-1])
            finally:
                service_module._Transaction.prefetch = batched  # type: ignore[method-assign]
    low, high = (str(n) for n in WAITING)
    print(f"median ms of {ROUNDS} rounds; ratio N={high} / N={low} waiting, same run")
    for kind, by_waiting in figures.items():
        for name in by_waiting[low]:
            a, b = by_waiting[low][name], by_waiting[high][name]
            print(f"{kind:7} {name:20} N={low}: {a:7.3f}  N={high}: {b:7.3f}  ratio {b / a:5.2f}×")
        slow = by_waiting[ONE_BY_ONE]["claim (head)"]
        print(f"{kind:7} claim (head), N={high}, records read one by one: {slow:7.3f}")
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps({"rounds": ROUNDS, "median_ms": figures}, indent=2) + "\n")


if __name__ == "__main__":
    main()
