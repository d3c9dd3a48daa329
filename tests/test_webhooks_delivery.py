"""One sender's attempt (widget_server/webhooks/delivery.py DeliveryWorker.deliver) against a
real receiver on loopback: which answers are delivered, retried or given up, the backoff's
bounds, and a delivery queued too long ago given up unsent."""

from __future__ import annotations

import json
import time

import pytest

from widget_server.settings import load_settings
from widget_server.webhooks.delivery import (
    DELIVERED,
    FAILED,
    MOST_BACKOFF_SECONDS,
    REJECTED,
    RETRIED,
    DeliveryWorker,
    backoff_seconds,
)
from widget_server.webhooks.memory_queue import MemoryWebhookQueue
from widget_server.webhooks.publisher import Publisher
from widget_server.webhooks.queue import lane_name
from widget_server.wire.webhooks import WEBHOOK_EVENTS, HandoffQueued

from .webhook_support import SECRET, Receiver


@pytest.fixture
def receiver():
    started = Receiver().start()
    yield started
    started.stop()


def worker_for(receiver: Receiver, **more) -> tuple[DeliveryWorker, MemoryWebhookQueue]:
    settings = load_settings(
        {"WEBHOOK_URLS": receiver.url, "WEBHOOK_SECRET": SECRET, "WEBHOOK_ALLOW_PRIVATE": True, **more}, environ={}
    )
    queue = MemoryWebhookQueue()
    publisher = Publisher(queue, 1, WEBHOOK_EVENTS)
    return DeliveryWorker(queue, settings.webhooks, publisher), queue


def attempt(worker: DeliveryWorker, queue: MemoryWebhookQueue) -> str:
    claimed = queue.claim(time.time(), worker.lease_seconds, "sender")
    assert claimed is not None
    return worker.deliver(claimed)


@pytest.mark.parametrize(
    ("status", "outcome", "left"),
    [
        (200, DELIVERED, 0),
        (204, DELIVERED, 0),
        (400, REJECTED, 0),
        (404, REJECTED, 0),
        (408, RETRIED, 1),
        (429, RETRIED, 1),
        (500, RETRIED, 1),
        (503, RETRIED, 1),
    ],
)
def test_each_answer_settles_the_delivery(receiver, status, outcome, left):
    worker, queue = worker_for(receiver)
    worker.publisher.publish("c_answer", HandoffQueued(position=2))
    receiver.statuses.append(status)
    assert attempt(worker, queue) == outcome
    assert queue.pending() == left
    assert receiver.received[0].json["data"] == {"position": 2}


def test_a_receiver_slower_than_the_timeout_is_retried(receiver):
    receiver.hang()
    worker, queue = worker_for(receiver, WEBHOOK_TIMEOUT=0.2)
    worker.publisher.publish("c_slow", HandoffQueued(position=1))
    assert attempt(worker, queue) == RETRIED
    assert queue.pending() == 1
    receiver.release()


def test_a_delivery_queued_too_long_ago_is_given_up_unsent(receiver):
    worker, queue = worker_for(receiver, WEBHOOK_RETRY_FOR=60)
    stale = {"e": "handoff.queued", "at": time.time() - 3600, "b": json.dumps({"id": "evt_stale"})}
    queue.push(lane_name(0, "c_stale"), json.dumps(stale), time.time())
    assert attempt(worker, queue) == FAILED
    assert queue.pending() == 0 and receiver.received == []


def test_a_url_no_longer_configured_is_given_up(receiver):
    worker, queue = worker_for(receiver)
    queue.push(lane_name(3, "c_gone"), json.dumps({"e": "handoff.queued", "at": time.time(), "b": "{}"}), time.time())
    assert attempt(worker, queue) == FAILED
    assert receiver.received == []


def test_the_backoff_doubles_and_is_bounded():
    for attempts, middle in ((1, 1.0), (2, 2.0), (3, 4.0), (6, 32.0)):
        assert 0.8 * middle <= backoff_seconds(attempts) <= 1.2 * middle
    assert backoff_seconds(40) <= 1.2 * MOST_BACKOFF_SECONDS
