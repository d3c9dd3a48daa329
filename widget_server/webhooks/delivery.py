"""The delivery worker: a few senders per process that take deliveries off the store's queue
and POST them, signed, to their URL (docs/webhooks.md).

Each sender is a greenlet under gevent, a daemon thread otherwise (waiting.spawn), apart from
every request and stream: a receiver that hangs holds up its sender for WEBHOOK_TIMEOUT, never
an answer (bench/webhooks.py). A sender claims one lane at a time (queue.py) under a lease longer
than one attempt can take, sends its head, and then takes it off (2xx; a 4xx other than 408 and
429, which retrying would not change; an address refused) or puts it back for an exponential
backoff (a 5xx, 408, 429, a timeout, no connection) until WEBHOOK_RETRY_FOR after the event,
when it is given up. Every outcome is counted: `chat_webhook_deliveries_total{event,outcome}`.
"""

from __future__ import annotations

import http.client
import json
import logging
import random
import secrets
import threading
import time
from typing import Any

from ..dashboard.recorder import NO_EVENTS, EventPublisher
from ..metrics import NO_METRICS, Metrics
from ..settings.areas import WebhookSettings
from ..stores.base import StoreUnavailable
from ..waiting import spawn
from ..wire.webhooks import DELIVERY_HEADER, EVENT_HEADER, SIGNATURE_HEADER
from .addresses import RefusedAddress, connection, resolve
from .publisher import Publisher
from .queue import Claimed, WebhookQueue, lane_url_index
from .signing import signature

log = logging.getLogger(__name__)

# Senders per process: a receiver that hangs takes one for WEBHOOK_TIMEOUT per attempt, and
# the others go on with the other lanes.
SENDERS = 4
# How often an idle sender looks for deliveries queued by another process (this process's own
# wake it at once: Publisher.published).
POLL_SECONDS = 0.5
# The backoff between attempts: 1 s, 2 s, 4 s, … at most 5 minutes, each ±20 % so that the
# lanes of a receiver that was down do not all come back in the same instant.
FIRST_BACKOFF_SECONDS = 1.0
MOST_BACKOFF_SECONDS = 300.0
# A delivery found this long past WEBHOOK_RETRY_FOR (the queue fell behind: a receiver that
# hangs holds a sender for WEBHOOK_TIMEOUT per attempt) is given up unsent, so a queue that fell
# behind catches up instead of spending an attempt on each.
LATE_SECONDS = 60.0
# What is read of a receiver's answer: its status is what counts.
ANSWER_READ_BYTES = 4096
USER_AGENT = "widget-server-webhooks/1"

# Outcomes, as counted (docs/webhooks.md, "Monitoring").
DELIVERED, RETRIED, FAILED, REJECTED, REFUSED = "delivered", "retried", "failed", "rejected", "refused"
OUTCOMES = (DELIVERED, RETRIED, FAILED, REJECTED, REFUSED, "not_queued")


def backoff_seconds(attempts: int) -> float:
    """The wait before attempt `attempts + 1` (after `attempts` failed ones, from 1)."""
    base = min(MOST_BACKOFF_SECONDS, FIRST_BACKOFF_SECONDS * 2 ** min(attempts - 1, 20))
    return base * random.uniform(0.8, 1.2)


def send(url: str, body: bytes, headers: dict[str, str], *, timeout: float, allow_private: bool) -> int:
    """POST `body` to `url`'s checked address; the answer's status. Raises RefusedAddress, or
    OSError / http.client.HTTPException when no answer came."""
    target = resolve(url, allow_private=allow_private)
    connected = connection(target, timeout)
    try:
        connected.request("POST", target.path, body=body, headers=headers)
        answer = connected.getresponse()
        answer.read(ANSWER_READ_BYTES)
        return answer.status
    finally:
        connected.close()


class DeliveryWorker:
    """The senders of one process; `start()` once the process serves (app.py), `stop()` ends
    them at their next look (a SIGTERM's `stopping` does too)."""

    def __init__(
        self,
        queue: WebhookQueue,
        settings: WebhookSettings,
        publisher: Publisher,
        metrics: Metrics = NO_METRICS,
        *,
        stopping: threading.Event | None = None,
        dashboard: EventPublisher = NO_EVENTS,
    ) -> None:
        self.queue = queue
        self.settings = settings
        self.publisher = publisher
        self.metrics = metrics
        # Each attempt's outcome is counted in /metrics and on the owner dashboard
        # (docs/webhooks.md, "Monitoring").
        self.dashboard = dashboard
        self.stopping = stopping if stopping is not None else threading.Event()
        self._stopped = threading.Event()
        self._started = False
        # Longer than one attempt can take (the connect and each read get WEBHOOK_TIMEOUT), so
        # only a sender that died or stalled loses its lane to another.
        self.lease_seconds = 3 * settings.timeout_seconds + 10

    def start(self) -> None:
        if self._started or not self.settings.enabled:
            return
        self._started = True
        for number in range(SENDERS):
            spawn(self._run, f"webhook-sender-{number}")

    def stop(self) -> None:
        self._stopped.set()
        self.publisher.published.set()  # idle senders look now, and see it

    def _over(self) -> bool:
        return self._stopped.is_set() or self.stopping.is_set()

    def _run(self) -> None:
        token = secrets.token_hex(8)
        while not self._over():
            try:
                claimed = self.queue.claim(time.time(), self.lease_seconds, token)
            except StoreUnavailable as error:
                log.warning("webhook queue unreachable: %s", error)
                self._stopped.wait(POLL_SECONDS)
                continue
            except Exception:
                log.exception("webhook sender: claim failed")
                self._stopped.wait(POLL_SECONDS)
                continue
            if claimed is None:
                self.publisher.published.wait(POLL_SECONDS)
                self.publisher.published.clear()
                continue
            try:
                self.deliver(claimed)
            except StoreUnavailable as error:
                # Settled by nobody: the lease runs out and the delivery is sent again.
                log.warning("webhook %s: not settled, the store is unreachable: %s", claimed.lane, error)
            except Exception:
                log.exception("webhook sender: delivery of lane %s failed", claimed.lane)

    def deliver(self, claimed: Claimed) -> str:
        """One attempt at the lane's head, settled in the queue; its outcome."""
        item: dict[str, Any] = json.loads(claimed.item)
        event, body = item["e"], item["b"].encode("utf-8")
        index = lane_url_index(claimed.lane)
        if index >= len(self.settings.urls):
            # WEBHOOK_URLS lost an entry since this was queued: nowhere to send it.
            self.queue.done(claimed, time.time())
            self._settled(event, FAILED)
            return FAILED
        url = self.settings.urls[index]
        envelope_id = json.loads(item["b"])["id"]
        if time.time() > item["at"] + self.settings.retry_for_seconds + LATE_SECONDS:
            self.queue.done(claimed, time.time())
            log.warning(
                "webhook %s %s to URL %d: failed (given up unsent: queued too long ago)", event, envelope_id, index
            )
            self._settled(event, FAILED)
            return FAILED
        headers = {
            "Content-Type": "application/json",
            "User-Agent": USER_AGENT,
            EVENT_HEADER: event,
            DELIVERY_HEADER: envelope_id,
            SIGNATURE_HEADER: signature(self.settings.secret, body, int(time.time())),
        }
        try:
            status = send(
                url, body, headers, timeout=self.settings.timeout_seconds, allow_private=self.settings.allow_private
            )
            outcome = (
                DELIVERED if 200 <= status < 300 else RETRIED if status in (408, 429) or status >= 500 else REJECTED
            )
            reason = f"HTTP {status}"
        except RefusedAddress as refused:
            outcome, reason = REFUSED, str(refused)
        except (OSError, http.client.HTTPException) as error:
            outcome, reason = RETRIED, f"{type(error).__name__}: {error}"
        now = time.time()
        if outcome == RETRIED:
            wait = backoff_seconds(claimed.attempts + 1)
            if now + wait > item["at"] + self.settings.retry_for_seconds:
                outcome = FAILED
            else:
                self.queue.retry(claimed, now + wait)
        if outcome != RETRIED:
            self.queue.done(claimed, now)
        if outcome != DELIVERED:
            log.warning("webhook %s %s to URL %d: %s (%s)", event, envelope_id, index, outcome, reason)
        self._settled(event, outcome)
        return outcome

    def _settled(self, event: str, outcome: str) -> None:
        self.metrics.webhook_delivery(event, outcome)
        self.dashboard.publish("webhook.delivery", "", {"event": event, "outcome": outcome})
