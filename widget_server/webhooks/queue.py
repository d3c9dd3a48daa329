"""The webhook queue: deliveries waiting in the store, in order per lane (docs/webhooks.md).

A lane is one receiver URL and one conversation (`lane_name`): its deliveries go out one at a
time, oldest first, so a receiver sees a conversation's events in the order they happened, and a
slow or failing receiver holds up only its own lanes. A sender claims a lane for a while (a
lease); only the lease's holder may take its head off (`done`) or put it back for later
(`retry`). A sender that dies holding a lease loses it when the lease runs out, and another
sends the same delivery again: at least once, never lost, the receiver de-duplicating by the
envelope's id. `memory_queue.py` keeps the queue in the process, `redis_queue.py` in the chat
store's Redis, where it outlives a worker's restart.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass


def lane_name(url_index: int, conversation_id: str) -> str:
    """The lane of a conversation's deliveries to the `url_index`-th WEBHOOK_URLS entry."""
    return f"{url_index}:{conversation_id}"


def lane_url_index(lane: str) -> int:
    return int(lane.split(":", 1)[0])


class QueueFull(Exception):
    """The queue holds as many deliveries as it may (the memory queue's bound)."""


@dataclass(frozen=True)
class Claimed:
    """The head of a claimed lane: `item` as pushed, `attempts` made so far, `token` the lease."""

    lane: str
    item: str
    attempts: int
    token: str


class WebhookQueue(ABC):
    """Lanes of pushed items; each lane's items leave one at a time, in order, under a lease."""

    @abstractmethod
    def push(self, lane: str, item: str, now: float) -> None:
        """Add `item` at the end of `lane` (O(1); the lane is ready now unless it waits already);
        QueueFull when the queue is at its bound."""

    @abstractmethod
    def claim(self, now: float, lease_seconds: float, token: str) -> Claimed | None:
        """The head of a lane due by `now`, leased for `lease_seconds` to `token`; lanes whose lease
        ran out are due again first. None when nothing is due."""

    @abstractmethod
    def done(self, claimed: Claimed, now: float) -> bool:
        """Take the claimed head off its lane (sent, or given up); False when the lease was lost."""

    @abstractmethod
    def retry(self, claimed: Claimed, due: float) -> bool:
        """Keep the head and its lane waiting until `due`, one more attempt counted; False when
        the lease was lost."""

    @abstractmethod
    def pending(self) -> int:
        """How many items wait in every lane (tests; a dashboard)."""
