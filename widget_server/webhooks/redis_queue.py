"""The webhook queue in the chat store's Redis: a delivery waiting there outlives the worker
that queued it, and any worker's sender may send it.

Keys (prefix `cw:webhooks:`; on a Redis Cluster `cw:{webhooks}:`, one hash slot for all of
them, stores/keyspace.py WEBHOOKS_TAG, since a claim moves a lane between the shared sets):
  lane:<url index>:<conversation id>  list  the lane's deliveries, oldest first; expires
                                            WEBHOOK_RETRY_FOR and an hour after its last push
  ready    sorted set  lanes waiting for a sender, scored by when they are due (unix ms)
  leased   sorted set  lanes a sender holds, scored by when its lease ends (unix ms)
  leases   hash        lane → the holding sender's token
  attempts hash        lane → attempts made at its head
Each change is one Lua script (lua/push.lua, lua/claim.lua, lua/settle.lua), so two senders
never hold one lane at once and a lease that ran out is given to the next claim.
"""

from __future__ import annotations

from typing import Any

from ..stores.keyspace import Keyspace
from ..stores.lua import load_script
from ..stores.redis import unavailable_on_connection_errors
from ..stores.redis_connection import is_cluster
from .queue import Claimed, WebhookQueue

_PUSH = load_script("widget_server.webhooks", "push")
_CLAIM = load_script("widget_server.webhooks", "claim")
_SETTLE = load_script("widget_server.webhooks", "settle")


def _text(reply: bytes | str) -> str:
    return reply.decode() if isinstance(reply, bytes) else reply


@unavailable_on_connection_errors
class RedisWebhookQueue(WebhookQueue):
    def __init__(self, client: Any, *, lane_ttl_seconds: float) -> None:
        self.redis = client
        self._prefix = Keyspace(cluster=is_cluster(client)).webhooks_prefix
        self._ready, self._leased = self._prefix + "ready", self._prefix + "leased"
        self._leases, self._attempts = self._prefix + "leases", self._prefix + "attempts"
        self._lane_ttl = max(1, int(lane_ttl_seconds))
        self._push = client.register_script(_PUSH)
        self._claim = client.register_script(_CLAIM)
        self._settle = client.register_script(_SETTLE)

    def _lane_key(self, lane: str) -> str:
        return f"{self._prefix}lane:{lane}"

    def push(self, lane: str, item: str, now: float) -> None:
        self._push(
            keys=[self._lane_key(lane), self._ready, self._leased],
            args=[lane, item, int(now * 1000), self._lane_ttl],
        )

    def claim(self, now: float, lease_seconds: float, token: str) -> Claimed | None:
        while True:
            found = self._claim(
                keys=[self._ready, self._leased, self._leases, self._attempts],
                args=[int(now * 1000), max(1, int(lease_seconds * 1000)), token],
            )
            if found is None:
                return None
            lane, attempts = _text(found[0]), int(found[1])
            head = self.redis.lindex(self._lane_key(lane), 0)
            claimed = Claimed(lane, "" if head is None else _text(head), attempts, token)
            if head is not None:
                return claimed
            # The lane's list expired (nobody sent it for longer than its ttl): forget the lane.
            self.done(claimed, now)

    def _settle_lane(self, claimed: Claimed, outcome: str, due: float) -> bool:
        settled = self._settle(
            keys=[self._lane_key(claimed.lane), self._ready, self._leased, self._leases, self._attempts],
            args=[claimed.lane, claimed.token, outcome, int(due * 1000)],
        )
        return bool(int(settled))

    def done(self, claimed: Claimed, now: float) -> bool:
        return self._settle_lane(claimed, "done", now)

    def retry(self, claimed: Claimed, due: float) -> bool:
        return self._settle_lane(claimed, "retry", due)

    def pending(self) -> int:
        lanes = {_text(lane) for key in (self._ready, self._leased) for lane in self.redis.zrange(key, 0, -1)}
        return sum(int(self.redis.llen(self._lane_key(lane))) for lane in lanes)
