"""The hand-off's counters at `/metrics` (docs/serving.md, "Metrics"), on the app's registry.

Counted by the process whose commit won the transition (store.py: one compare-and-set), so
summed across workers each hand-off is counted once, like an answer's ending (metrics.py).
"""

from __future__ import annotations

from ..metrics import Metrics

# Seconds: a visitor waits seconds to many minutes for a person.
QUEUE_BUCKETS = (1, 5, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600)


class HandoffMetrics:
    def __init__(self, metrics: Metrics) -> None:
        self.enabled = metrics.enabled
        if not self.enabled:
            return
        from prometheus_client import Counter, Histogram

        registry = metrics.registry
        self._requested = Counter(
            "chat_handoffs_requested",
            "Hand-off requests that were new (a retry is not counted), by outcome: queued, assigned or unavailable.",
            ["outcome"],
            registry=registry,
        )
        self._unavailable = Counter(
            "chat_handoffs_unavailable",
            "Hand-off requests nobody could take, by reason: no_agents (none present), disabled (HANDOFF off), closed (outside HANDOFF_HOURS) or busy (HANDOFF_QUEUE_MAX waiting).",
            ["reason"],
            registry=registry,
        )
        self._in_queue = Histogram(
            "chat_handoff_time_in_queue_seconds",
            "From a hand-off being queued to an agent claiming it.",
            buckets=QUEUE_BUCKETS,
            registry=registry,
        )
        self._first_reply = Histogram(
            "chat_handoff_time_to_first_agent_reply_seconds",
            "From a hand-off being queued to the claiming agent's first message.",
            buckets=QUEUE_BUCKETS,
            registry=registry,
        )
        self._left = Counter(
            "chat_handoff_messages_left",
            "Messages left for the site's team when nobody was available.",
            registry=registry,
        )
        for outcome in ("queued", "unavailable"):
            self._requested.labels(outcome=outcome)
        for reason in ("no_agents", "disabled", "closed", "busy"):
            self._unavailable.labels(reason=reason)
        self._refused = Counter(
            "chat_handoff_refusals",
            "Hand-off requests and messages refused with 503, by reason: store_full (the memory store's "
            "HANDOFF_MEMORY_STORE_MAX_BYTES holds only hand-offs still going on).",
            ["reason"],
            registry=registry,
        )
        self._refused.labels(reason="store_full")
        self._satisfaction = Counter(
            "chat_handoff_satisfaction",
            'Visitors\' answers to "How was your conversation?" after a person ended the hand-off, by rating: '
            "1 (very poor) to 5 (very good).",
            ["rating"],
            registry=registry,
        )
        for rating in range(1, 6):
            self._satisfaction.labels(rating=str(rating))

    def requested(self, outcome: str) -> None:
        if self.enabled:
            self._requested.labels(outcome=outcome).inc()

    def unavailable(self, reason: str) -> None:
        if self.enabled:
            self._unavailable.labels(reason=reason).inc()

    def refused(self, reason: str) -> None:
        if self.enabled:
            self._refused.labels(reason=reason).inc()

    def time_in_queue(self, seconds: float) -> None:
        if self.enabled:
            self._in_queue.observe(max(0.0, seconds))

    def first_reply(self, seconds: float) -> None:
        if self.enabled:
            self._first_reply.observe(max(0.0, seconds))

    def message_left(self) -> None:
        if self.enabled:
            self._left.inc()

    def satisfaction(self, rating: int) -> None:
        if self.enabled:
            self._satisfaction.labels(rating=str(rating)).inc()
