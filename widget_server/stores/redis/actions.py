"""Actions an answer proposes and a user confirms (widget_server/actions/).

A proposal is an event of the answer's log and a record (`action:{aid}`) at once
(add_action.lua). An action's execution is claimed by one Lua compare-and-set (proposed →
executing, recording the idempotency key: claim_action.lua), so however many confirms race,
on however many workers, exactly one runs it.
"""

from __future__ import annotations

import json
import time

from ...messages import StreamEvent
from ..base import ActionRecord, ActionStatus
from ..lua import load_script
from .core import SCRIPTS, RedisStoreBase, _event_from_json
from .unavailable import unavailable_on_connection_errors

_ADD_ACTION = load_script(SCRIPTS, "add_action")
_CLAIM_ACTION = load_script(SCRIPTS, "claim_action")
_FINISH_ACTION = load_script(SCRIPTS, "finish_action")
_DISMISS_ACTION = load_script(SCRIPTS, "dismiss_action")


@unavailable_on_connection_errors
class RedisActions(RedisStoreBase):
    # How often a confirm waiting for another worker's execution looks again.
    ACTION_POLL_SECONDS = 0.05

    def _register_action_scripts(self) -> None:
        self._add_action = self.redis.register_script(_ADD_ACTION)
        self._claim_action = self.redis.register_script(_CLAIM_ACTION)
        self._finish_action = self.redis.register_script(_FINISH_ACTION)
        self._dismiss_action = self.redis.register_script(_DISMISS_ACTION)

    def _action_key(self, action_id: str) -> str:
        return self.keys.action(action_id)

    def add_action(self, message_id: str, action: ActionRecord) -> StreamEvent | None:
        key = self._msg(message_id)
        proposal = json.dumps(action.proposal(), ensure_ascii=False, separators=(",", ":"))
        events_key = self._events_key(message_id)
        try:
            raw = self._add_action(
                keys=[key, key + ":events", key + ":actions", self._action_key(action.action_id)],
                args=[
                    proposal,
                    self.max_events,
                    self._ttl,
                    message_id,
                    action.conversation_id,
                    action.name,
                    self._publish,
                ],
            )
        except BaseException:
            self._tail.disown(events_key)  # it may have run: the log is read from Redis again
            raise
        if raw is None:
            self._tail.disown(events_key)  # ended elsewhere
            return None
        event = _event_from_json(raw)
        self._tail.feed(events_key, event.seq, raw)
        return event

    def action(self, action_id: str) -> ActionRecord | None:
        values = self.redis.hmget(
            self._action_key(action_id), "conversation_id", "message_id", "proposal", "status", "key", "result", "error"
        )
        if values[0] is None:
            return None
        conversation_id, message_id, proposal, status, key, result, error = (
            v.decode() if isinstance(v, bytes) else (v or "") for v in values
        )
        data = json.loads(proposal)
        return ActionRecord(
            action_id,
            conversation_id,
            message_id,
            data["name"],
            data["arguments"],
            data["label"],
            data["description"],
            status,
            key,
            json.loads(result) if result else None,
            json.loads(error) if error else None,
        )

    def message_actions(self, message_id: str) -> list[ActionRecord]:
        ids = [json.loads(raw)["action_id"] for raw in self.redis.lrange(self._msg(message_id) + ":actions", 0, -1)]
        found = (self.action(action_id) for action_id in ids)
        return [action for action in found if action is not None]

    def claim_action(self, action_id: str, idempotency_key: str) -> tuple[str | None, ActionRecord | None]:
        outcome = self._claim_action(keys=[self._action_key(action_id)], args=[idempotency_key, self._ttl])
        if outcome is None:
            return None, None
        return outcome.decode(), self.action(action_id)

    def finish_action(
        self,
        action_id: str,
        idempotency_key: str,
        status: str,
        *,
        result: dict | None = None,
        error: dict | None = None,
    ) -> ActionRecord | None:
        encode = lambda value: json.dumps(value, ensure_ascii=False) if value is not None else ""  # noqa: E731
        self._finish_action(
            keys=[self._action_key(action_id)], args=[idempotency_key, status, encode(result), encode(error), self._ttl]
        )
        return self.action(action_id)

    def dismiss_action(self, action_id: str) -> tuple[str | None, ActionRecord | None]:
        outcome = self._dismiss_action(keys=[self._action_key(action_id)])
        if outcome is None:
            return None, None
        return outcome.decode(), self.action(action_id)

    def wait_action(self, action_id: str, timeout: float) -> ActionRecord | None:
        deadline = time.monotonic() + timeout
        while True:
            action = self.action(action_id)
            if action is None or action.status != ActionStatus.EXECUTING or time.monotonic() >= deadline:
                return action
            time.sleep(min(self.ACTION_POLL_SECONDS, max(0.0, deadline - time.monotonic())))
