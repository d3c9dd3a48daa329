"""Ownership of a generating answer: its lease (`msg:{mid}:lease`, the generating process's id).

The claim that creates a message also creates its lease, in the same script (claim.lua), so
there is no instant at which a new message looks orphaned. The generating process renews it
(chat/generation.py RunKeeper: keep_runs); when it dies, the lease expires, and the first reader or
request that notices fails the message with `worker_lost` (reap_if_lost, event_log.py: one
compare-and-set, the same script as every other ending).
"""

from __future__ import annotations

from typing import Any

from ...messages import MessageState
from ..lua import load_script
from ..script_batches import ScriptBatches
from .core import SCRIPTS, RedisStoreBase, _text
from .unavailable import unavailable_on_connection_errors

_RENEW = load_script(SCRIPTS, "renew")


@unavailable_on_connection_errors
class RedisLeases(RedisStoreBase):
    def _register_lease_scripts(self) -> None:
        self._renew = self.redis.register_script(_RENEW)
        self._renew_batches = ScriptBatches(self.redis, _RENEW, lambda keys, args: self._renew(keys=keys, args=args))

    def renew_lease(self, message_id: str) -> None:
        self.redis.set(self._lease(message_id), self.owner, px=self._lease_ms)

    def keep_runs(self, message_ids: list[str], *, renew: bool) -> dict[str, MessageState | None]:
        states: list[Any]
        if renew and self.keys.cluster:
            # A pipeline holds scripts only on one Redis: redis-py's Script loads a script a
            # restarted node lost for a plain pipeline, not for a cluster's. The renewals go
            # in batches, one per master (script_batches.py): one at a time, their round trips
            # showed in a worker's CPU profile (bench/load.py redis-cluster-2w, py-spy).
            owner = self.owner
            calls = [
                self._renew_batches.submit([self._msg(message_id), self._lease(message_id)], [owner, self._lease_ms])
                for message_id in message_ids
            ]
            states = [call.result() for call in calls]
        else:
            pipe = self.redis.pipeline(transaction=False)
            for message_id in message_ids:
                if renew:
                    keys = [self._msg(message_id), self._lease(message_id)]
                    self._renew(keys=keys, args=[self.owner, self._lease_ms], client=pipe)
                else:
                    pipe.hget(self._msg(message_id), "state")
            states = pipe.execute()
        found = {
            message_id: MessageState(_text(state)) if state is not None else None
            for message_id, state in zip(message_ids, states, strict=True)
        }
        for message_id, state in found.items():
            if state is None or state.terminal:  # ended elsewhere: this process did not write it
                self._tail.disown(self._events_key(message_id))
        return found
