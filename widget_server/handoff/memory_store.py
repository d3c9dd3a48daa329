"""The hand-off store in this process's memory (with the `memory` chat store: one process).

A record expires CONVERSATION_TTL_SECONDS after its last write, as the chat store's
conversations do, so a forgotten conversation's hand-off does not stay forever.
"""

from __future__ import annotations

import copy
import threading
import time
from collections import deque
from typing import Any

from .store import Commit, HandoffStore

# How often expired records are looked for (at a commit).
_PURGE_SECONDS = 60.0


class MemoryHandoffStore(HandoffStore):
    def __init__(self, *, max_events: int = 500, ttl: float = 86400.0) -> None:
        self.max_events = max_events
        self.ttl = ttl
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        # name → (version, value, expires at)
        self._records: dict[str, tuple[int, dict[str, Any], float]] = {}
        # conversation id → its newest events, (seq, JSON)
        self._logs: dict[str, deque[tuple[int, str]]] = {}
        self._presence: dict[str, float] = {}
        self._purged_at = time.monotonic()

    def load(self, keys: list[str]) -> dict[str, tuple[int, dict[str, Any] | None]]:
        now = time.time()
        found: dict[str, tuple[int, dict[str, Any] | None]] = {}
        with self._lock:
            for key in keys:
                record = self._records.get(key)
                if record is None or record[2] <= now:
                    found[key] = (0, None)
                else:
                    # A copy: the service changes what it loaded before committing it.
                    found[key] = (record[0], copy.deepcopy(record[1]))
        return found

    def _version(self, key: str, now: float) -> int:
        record = self._records.get(key)
        return 0 if record is None or record[2] <= now else record[0]

    def commit(self, change: Commit) -> bool:
        now = time.time()
        with self._lock:
            if any(self._version(key, now) != version for key, version in change.expected.items()):
                return False
            for key, value in change.writes.items():
                if value is None:
                    self._records.pop(key, None)
                else:
                    # Version 0 is "absent": a re-created record continues from 1.
                    self._records[key] = (change.expected.get(key, 0) + 1, copy.deepcopy(value), now + self.ttl)
            for conversation_id in change.drop_logs:
                self._logs.pop(conversation_id, None)
            for conversation_id, events in change.events.items():
                log = self._logs.setdefault(conversation_id, deque(maxlen=self.max_events))
                log.extend(events)
            if change.events:
                self._changed.notify_all()
            if time.monotonic() - self._purged_at > _PURGE_SECONDS:
                self._purge(now)
        return True

    def _purge(self, now: float) -> None:
        self._purged_at = time.monotonic()
        for key in [key for key, record in self._records.items() if record[2] <= now]:
            del self._records[key]
            if key.startswith("conv:"):
                self._logs.pop(key.removeprefix("conv:"), None)

    def read_events(self, conversation_id: str, after_seq: int, timeout: float) -> list[tuple[int, str]] | None:
        deadline = time.monotonic() + timeout
        with self._lock:
            while True:
                log = self._logs.get(conversation_id)
                if log and log[-1][0] > after_seq:
                    if log[0][0] > after_seq + 1:
                        return None  # evicted: the bound kept only newer ones
                    return [event for event in log if event[0] > after_seq]
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return []
                self._changed.wait(remaining)

    def seen(self, agent_name: str, when: float) -> None:
        with self._lock:
            self._presence[agent_name] = when

    def presence(self) -> dict[str, float]:
        with self._lock:
            return dict(self._presence)
