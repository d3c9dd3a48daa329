"""The webhook queue (widget_server/webhooks/queue.py) on each of its stores: in the process,
on a real redis-server and on a real Redis Cluster. A lane's items leave one at a time and in
order; a lane is held by one sender at a time; a lease that runs out gives the same item to
the next claim (at least once), and the sender that lost it can no longer settle it."""

from __future__ import annotations

import pytest

from widget_server.stores.redis_connection import connect
from widget_server.webhooks.memory_queue import MemoryWebhookQueue
from widget_server.webhooks.queue import QueueFull, WebhookQueue, lane_name, lane_url_index
from widget_server.webhooks.redis_queue import RedisWebhookQueue

NOW = 1_800_000_000.0
LEASE = 30.0


@pytest.fixture(params=["memory", "redis", "cluster"])
def queue(request) -> WebhookQueue:
    if request.param == "memory":
        return MemoryWebhookQueue()
    server = request.getfixturevalue("redis_cluster" if request.param == "cluster" else "redis_server")
    server.flush()
    return RedisWebhookQueue(connect(server.url), lane_ttl_seconds=3600)


def test_a_lane_gives_its_items_in_order_one_at_a_time(queue):
    lane = lane_name(0, "c_first")
    for number in range(3):
        queue.push(lane, f"item {number}", NOW)
    taken = []
    for _ in range(3):
        claimed = queue.claim(NOW, LEASE, "sender-a")
        assert claimed is not None and claimed.lane == lane and claimed.attempts == 0
        # Held: no other sender gets this lane, so no later item overtakes its head.
        assert queue.claim(NOW, LEASE, "sender-b") is None
        taken.append(claimed.item)
        assert queue.done(claimed, NOW)
    assert taken == ["item 0", "item 1", "item 2"]
    assert queue.claim(NOW, LEASE, "sender-a") is None
    assert queue.pending() == 0


def test_lanes_are_independent(queue):
    queue.push(lane_name(0, "c_one"), "one", NOW)
    queue.push(lane_name(0, "c_two"), "two", NOW)
    queue.push(lane_name(1, "c_one"), "one, second URL", NOW)
    held = [queue.claim(NOW, LEASE, f"sender-{number}") for number in range(3)]
    assert sorted(claimed.item for claimed in held if claimed) == ["one", "one, second URL", "two"]
    assert sorted(lane_url_index(claimed.lane) for claimed in held if claimed) == [0, 0, 1]


def test_a_retried_head_waits_its_backoff_and_keeps_its_place(queue):
    lane = lane_name(0, "c_retry")
    queue.push(lane, "first", NOW)
    claimed = queue.claim(NOW, LEASE, "sender-a")
    assert claimed is not None
    queue.push(lane, "second", NOW + 1)  # queued while the head is being sent
    assert queue.retry(claimed, NOW + 10)
    assert queue.claim(NOW + 5, LEASE, "sender-a") is None  # not due yet, nor is what is behind it
    again = queue.claim(NOW + 10, LEASE, "sender-a")
    assert again is not None and (again.item, again.attempts) == ("first", 1)
    assert queue.done(again, NOW + 10)
    after = queue.claim(NOW + 10, LEASE, "sender-a")
    assert after is not None and (after.item, after.attempts) == ("second", 0)


def test_a_lease_that_runs_out_gives_the_same_item_to_the_next_sender(queue):
    lane = lane_name(0, "c_lost")
    queue.push(lane, "only", NOW)
    lost = queue.claim(NOW, LEASE, "sender-that-died")
    assert lost is not None
    assert queue.claim(NOW + LEASE - 1, LEASE, "sender-b") is None  # still held
    taken = queue.claim(NOW + LEASE + 1, LEASE, "sender-b")
    assert taken is not None and taken.item == "only"  # sent again: at least once
    # The first sender, back, can no longer settle what it lost.
    assert not queue.done(lost, NOW + LEASE + 2)
    assert not queue.retry(lost, NOW + LEASE + 2)
    assert queue.pending() == 1
    assert queue.done(taken, NOW + LEASE + 2)
    assert queue.pending() == 0


def test_the_memory_queue_is_bounded():
    bounded = MemoryWebhookQueue(max_items=2)
    bounded.push(lane_name(0, "c_a"), "one", NOW)
    bounded.push(lane_name(0, "c_b"), "two", NOW)
    with pytest.raises(QueueFull):
        bounded.push(lane_name(0, "c_c"), "three", NOW)
    claimed = bounded.claim(NOW, LEASE, "sender-a")
    assert claimed is not None and bounded.done(claimed, NOW)
    bounded.push(lane_name(0, "c_c"), "three", NOW)  # room again
    assert bounded.pending() == 2
