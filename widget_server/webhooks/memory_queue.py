"""The webhook queue in the process (the memory store's): lost with it, as its conversations are."""

from __future__ import annotations

import threading
from collections import deque

from .queue import Claimed, QueueFull, WebhookQueue

# Most deliveries the process keeps waiting (docs/security.md, "Memory"): a receiver that hangs
# drains about 4 / WEBHOOK_TIMEOUT a second, and a busy site queues more than that. Beyond it an
# event is not queued (counted `not_queued`): a few KB each, about 100 MB at most.
MEMORY_QUEUE_MAX_ITEMS = 50_000


class MemoryWebhookQueue(WebhookQueue):
    def __init__(self, max_items: int = MEMORY_QUEUE_MAX_ITEMS) -> None:
        self.max_items = max_items
        self._items = 0
        self._lock = threading.Lock()
        self._lanes: dict[str, deque[str]] = {}
        self._due: dict[str, float] = {}  # lanes waiting for a sender, by when they are due
        self._leases: dict[str, tuple[str, float]] = {}  # claimed lanes: token, until when
        self._attempts: dict[str, int] = {}

    def push(self, lane: str, item: str, now: float) -> None:
        with self._lock:
            if self._items >= self.max_items:
                raise QueueFull(f"{self._items} webhook deliveries are waiting already")
            self._items += 1
            self._lanes.setdefault(lane, deque()).append(item)
            if lane not in self._leases:
                self._due.setdefault(lane, now)

    def claim(self, now: float, lease_seconds: float, token: str) -> Claimed | None:
        with self._lock:
            for lane, (_, until) in list(self._leases.items()):
                if until <= now:
                    del self._leases[lane]
                    self._due[lane] = now
            due = [(when, lane) for lane, when in self._due.items() if when <= now]
            if not due:
                return None
            _, lane = min(due)
            del self._due[lane]
            self._leases[lane] = (token, now + lease_seconds)
            return Claimed(lane, self._lanes[lane][0], self._attempts.get(lane, 0), token)

    def _holds(self, claimed: Claimed) -> bool:
        lease = self._leases.get(claimed.lane)
        return lease is not None and lease[0] == claimed.token

    def done(self, claimed: Claimed, now: float) -> bool:
        with self._lock:
            if not self._holds(claimed):
                return False
            del self._leases[claimed.lane]
            self._attempts.pop(claimed.lane, None)
            items = self._lanes[claimed.lane]
            items.popleft()
            self._items -= 1
            if items:
                self._due[claimed.lane] = now
            else:
                del self._lanes[claimed.lane]
            return True

    def retry(self, claimed: Claimed, due: float) -> bool:
        with self._lock:
            if not self._holds(claimed):
                return False
            del self._leases[claimed.lane]
            self._attempts[claimed.lane] = claimed.attempts + 1
            self._due[claimed.lane] = due
            return True

    def pending(self) -> int:
        with self._lock:
            return self._items
