"""The owner dashboard at `/admin` (docs/dashboard.md): what the chat did over a period.

One concern per module (docs/architecture.md): `buckets.py` (pure: hours and days of UTC,
periods, the latency histogram's fixed log-spaced buckets and percentiles from them, a
question's normalised form), `store.py` (the aggregation store's interface, per hour and per
day, and the memory store), `redis_store.py` (one Redis or a Redis Cluster: one key per day,
or hour, per metric family, every key of a day under one hash tag), `recorder.py`
(`DashboardRecorder.publish`, the one call the services make), `summary.py` (a period's days
merged into its numbers and tables),
`charts.py` (pure: SVG charts from those tables), `api.py` (the Flask adapter: the page, the
CSV downloads, the JSON summary).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .store import DashboardStore


def create_dashboard_store(chat_store: Any, text_seconds: float) -> DashboardStore:
    """The dashboard's store beside the chat store: in memory with the memory store, on the same
    Redis (the chat store's client) with a Redis one, so every worker counts into one place.
    `text_seconds`: how long after its day a comment or a question is kept (RETENTION)."""
    if getattr(chat_store, "shared", False) and hasattr(chat_store, "redis"):
        from .redis_store import RedisDashboardStore

        return RedisDashboardStore(chat_store.redis, text_seconds)
    from .store import MemoryDashboardStore

    return MemoryDashboardStore(text_seconds=text_seconds)
