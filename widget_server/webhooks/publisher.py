"""What the services call when something a site's owner may want to hear about happens
(docs/webhooks.md): `publish(conversation_id, data)` queues one delivery per WEBHOOK_URLS
entry in the store and returns. It never touches the network to a receiver: the delivery
worker (delivery.py) sends it later, outside the request and the answer's stream. With no
WEBHOOK_URLS the services get `NO_WEBHOOKS`, whose publish does nothing.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from dataclasses import asdict
from datetime import UTC, datetime

from ..metrics import NO_METRICS, Metrics
from ..protocol import new_id
from ..stores.base import StoreUnavailable
from ..wire.webhooks import Envelope, WebhookData
from .queue import QueueFull, WebhookQueue, lane_name

log = logging.getLogger(__name__)

EVENT_ID_PREFIX = "evt_"


def iso_time(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Publisher:
    """Queues the events WEBHOOK_EVENTS chose, for every URL."""

    enabled = True

    def __init__(
        self, queue: WebhookQueue, url_count: int, events: tuple[str, ...], metrics: Metrics = NO_METRICS
    ) -> None:
        self.queue = queue
        self.url_count = url_count
        self.events = frozenset(events)
        self.metrics = metrics
        # Set by each publish, so this process's senders look at once instead of at their next
        # poll (delivery.py); another process's publish is found at that poll.
        self.published = threading.Event()

    def publish(self, conversation_id: str, data: WebhookData) -> None:
        """Queue `data`'s event for the conversation. Never raises: the request or the answer
        that made the event has happened, whatever becomes of its webhook (a store that cannot
        take it, or a full queue, is logged and counted as `not_queued`)."""
        event = data.EVENT
        if event not in self.events:
            return
        now = time.time()
        envelope = Envelope(
            id=new_id(EVENT_ID_PREFIX),
            type=event,
            created_at=iso_time(now),
            conversation_id=conversation_id,
            data=asdict(data),
        )
        item = json.dumps({"e": event, "at": now, "b": json.dumps(asdict(envelope), ensure_ascii=False)})
        for url_index in range(self.url_count):
            try:
                self.queue.push(lane_name(url_index, conversation_id), item, now)
            except (StoreUnavailable, QueueFull) as error:
                log.warning("webhook %s %s for URL %d not queued: %s", event, envelope.id, url_index, error)
                self.metrics.webhook_delivery(event, "not_queued")
        self.published.set()


class _NoWebhooks(Publisher):
    """WEBHOOK_URLS empty: nothing is queued, nothing is started."""

    enabled = False

    def __init__(self) -> None:
        self.published = threading.Event()

    def publish(self, conversation_id: str, data: WebhookData) -> None:
        return None


NO_WEBHOOKS: Publisher = _NoWebhooks()
