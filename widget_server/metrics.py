"""Prometheus metrics at `/metrics`: what users experienced, counted once.

Every ending is counted by the process whose compare-and-set won it (the
store refuses every later attempt), so however many workers and hosts share
a Redis store, a message is counted in exactly one of them: summing the
series across the cluster gives the true totals.

Under gunicorn with several workers, prometheus-client's multi-process mode
is used: `widget-server` sets PROMETHEUS_MULTIPROC_DIR (a fresh folder)
before any worker starts, each worker writes its series to files there, and
`/metrics` on any worker reports the sum over all of them (serving.py marks
a dead worker's live gauges gone). In one process (tests, the pytest
plugin), each app has its own registry, so two apps never share a series.

prometheus_client is imported lazily: its multi-process switch is read when
it is first imported, which must be after the environment variable is set.
"""

from __future__ import annotations

import os
from typing import Any

# Seconds. Time to first delta is dominated by the backend's first token;
# completion by the answer's length.
FIRST_DELTA_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60)
COMPLETION_BUCKETS = (0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600)

MULTIPROCESS_ENV = "PROMETHEUS_MULTIPROC_DIR"


class Metrics:
    """The server's metrics; every method is a no-op when `enabled` is false."""

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        if not enabled:
            return
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

        self.multiprocess = bool(os.environ.get(MULTIPROCESS_ENV))
        self.registry = CollectorRegistry(auto_describe=True)
        registry = self.registry
        self._first_delta = Histogram(
            "chat_time_to_first_delta_seconds",
            "From the message being accepted to its first text delta being stored.",
            buckets=FIRST_DELTA_BUCKETS,
            registry=registry,
        )
        self._completion = Histogram(
            "chat_time_to_completion_seconds",
            "From the message being accepted to message.completed.",
            buckets=COMPLETION_BUCKETS,
            registry=registry,
        )
        self._ended = Counter(
            "chat_messages_ended",
            "Answers by terminal state; `code` is the error code of failed ones (empty otherwise).",
            ["state", "code"],
            registry=registry,
        )
        self._resumes = Counter(
            "chat_resumes",
            "Streams opened to resume a message from a position (GET …/events after seq 0).",
            registry=registry,
        )
        self._snapshots = Counter(
            "chat_snapshots_served",
            "message.snapshot events sent (asked for after a gap, or after eviction).",
            registry=registry,
        )
        self._client_reports = Counter(
            "chat_client_sequence_anomalies",
            "Sequence anomalies the widget saw and repaired: duplicate events ignored, gaps (dropped events) repaired by a snapshot.",
            ["kind"],
            registry=registry,
        )
        self._cancels = Counter(
            "chat_cancel_requests",
            "Cancel requests by outcome: `cancelled` (this request stopped the answer) or `already_ended`.",
            ["outcome"],
            registry=registry,
        )
        self._rate_limited = Counter(
            "chat_rate_limited", "Requests refused with 429 `rate_limited`, by limit.", ["limit"], registry=registry
        )
        self._store_unavailable = Counter(
            "chat_store_unavailable", "Requests and streams that found the store unreachable.", registry=registry
        )
        gauge_options: dict[str, Any] = {"multiprocess_mode": "livesum"} if self.multiprocess else {}
        self._open_streams = Gauge(
            "chat_open_streams", "Event streams open now (all live workers).", registry=registry, **gauge_options
        )
        # Every label combination the dashboards expect exists from the start
        # (a counter that is absent reads as "no data", not as 0).
        for state in ("completed", "cancelled"):
            self._ended.labels(state=state, code="")
        for kind in ("duplicate", "dropped"):
            self._client_reports.labels(kind=kind)
        for outcome in ("cancelled", "already_ended"):
            self._cancels.labels(outcome=outcome)
        # Feedback on answers (widget_server/feedback/): each rating given, by its value.
        self._feedback = Counter(
            "chat_feedback",
            "Ratings given to answers: a new feedback, or one whose rating changed (a comment alone is not counted).",
            ["rating"],
            registry=registry,
        )
        for rating in ("up", "down"):
            self._feedback.labels(rating=rating)
        # The agent console's sign-in (widget_server/agents/sign_in_delay.py): guessing shows
        # here before any account falls (docs/security.md, "The agent console").
        self._agent_sign_in_refused = Counter(
            "chat_agent_sign_ins_refused",
            "Agent sign-ins refused: `wrong_credentials` (name and password did not match), `delayed` (refused unread during the wait after failures).",
            ["reason"],
            registry=registry,
        )
        for reason in ("wrong_credentials", "delayed"):
            self._agent_sign_in_refused.labels(reason=reason)
        # Webhooks (widget_server/webhooks/delivery.py): each attempt's outcome, by event type
        # (docs/webhooks.md, "Monitoring").
        self._webhook_deliveries = Counter(
            "chat_webhook_deliveries",
            "Webhook delivery attempts by event type and outcome: `delivered` (2xx), `retried` (5xx, 408, 429, timeout or no connection; sent again later), `failed` (given up after WEBHOOK_RETRY_FOR), `rejected` (another 4xx), `refused` (the URL's address is private), `not_queued` (the store could not take it).",
            ["event", "outcome"],
            registry=registry,
        )

    # -- recording ---------------------------------------------------------

    def first_delta(self, seconds: float) -> None:
        if self.enabled:
            self._first_delta.observe(seconds)

    def ended(self, state: str, *, code: str = "", seconds: float | None = None) -> None:
        if not self.enabled:
            return
        self._ended.labels(state=state, code=code).inc()
        if state == "completed" and seconds is not None:
            self._completion.observe(seconds)

    def resumed(self) -> None:
        if self.enabled:
            self._resumes.inc()

    def snapshot_served(self) -> None:
        if self.enabled:
            self._snapshots.inc()

    def client_report(self, *, duplicates: int, dropped: int) -> None:
        if not self.enabled:
            return
        if duplicates:
            self._client_reports.labels(kind="duplicate").inc(duplicates)
        if dropped:
            self._client_reports.labels(kind="dropped").inc(dropped)

    def cancel_request(self, outcome: str) -> None:
        if self.enabled:
            self._cancels.labels(outcome=outcome).inc()

    def rate_limited(self, limit: str) -> None:
        if self.enabled:
            self._rate_limited.labels(limit=limit).inc()

    def agent_sign_in_refused(self, reason: str) -> None:
        if self.enabled:
            self._agent_sign_in_refused.labels(reason=reason).inc()

    def store_unavailable(self) -> None:
        if self.enabled:
            self._store_unavailable.inc()

    def stream_opened(self) -> None:
        if self.enabled:
            self._open_streams.inc()

    def stream_closed(self) -> None:
        if self.enabled:
            self._open_streams.dec()

    def webhook_delivery(self, event: str, outcome: str) -> None:
        if self.enabled:
            self._webhook_deliveries.labels(event=event, outcome=outcome).inc()

    def feedback(self, rating: str) -> None:
        if self.enabled:
            self._feedback.labels(rating=rating).inc()

    # -- exposition --------------------------------------------------------

    def exposition(self) -> tuple[bytes, str]:
        """The text format, summed over every worker process in multi-process mode."""
        from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
        from prometheus_client.multiprocess import MultiProcessCollector

        if self.multiprocess:
            registry = CollectorRegistry()
            MultiProcessCollector(registry)
            return generate_latest(registry), CONTENT_TYPE_LATEST
        return generate_latest(self.registry), CONTENT_TYPE_LATEST


NO_METRICS = Metrics(enabled=False)
