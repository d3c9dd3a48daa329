"""Signed webhooks to the site's own servers (docs/webhooks.md).

One concern per module (docs/architecture.md): `queue.py` (the queue's lanes and leases),
`memory_queue.py` and `redis_queue.py` (where it lives, beside the chat store), `publisher.py`
(what the services call: queues, never sends), `delivery.py` (the senders), `signing.py` (the
signature), `addresses.py` (where a webhook may go: SSRF). The event types and their data are
`wire/webhooks.py`'s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..settings import Settings
    from .queue import WebhookQueue


# A lane's list outlives its last push by WEBHOOK_RETRY_FOR and this (redis_queue.py).
LANE_TTL_MARGIN_SECONDS = 3600


def create_webhook_queue(settings: Settings, chat_store: Any) -> WebhookQueue:
    """The queue beside the chat store: in the process with the memory store, in the same Redis
    (the chat store's client) with a Redis one, so a delivery outlives the worker that queued it."""
    if getattr(chat_store, "shared", False) and hasattr(chat_store, "redis"):
        from .redis_queue import RedisWebhookQueue

        return RedisWebhookQueue(
            chat_store.redis, lane_ttl_seconds=settings.webhooks.retry_for_seconds + LANE_TTL_MARGIN_SECONDS
        )
    from .memory_queue import MemoryWebhookQueue

    return MemoryWebhookQueue()
