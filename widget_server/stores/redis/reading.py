"""Reading a message: its record and text (snapshot.lua), and its event log.

Readers do not each block in Redis: every append also publishes its entry, and one subscriber
per process hears the logs its readers wait on and hands them the entries (redis_tail.py); a
reader it cannot serve reads the stream itself.
"""

from __future__ import annotations

import json

from ...errors import ErrorInfo
from ...messages import EventKind, MessageState, StreamEvent
from ..base import MessageInfo, UnknownMessage
from ..lua import load_script
from ..script_batches import ScriptBatches
from .core import SCRIPTS, RedisStoreBase, _entry_event, _entry_seq, _events, _text
from .unavailable import unavailable_on_connection_errors

_SNAPSHOT = load_script(SCRIPTS, "snapshot")
_CLAIM_REPORT = load_script(SCRIPTS, "claim_report")


@unavailable_on_connection_errors
class RedisReading(RedisStoreBase):
    def _register_reading_scripts(self) -> None:
        # Once per question, as the conversation's reads (conversations.py), and before each ending.
        snapshot = self.redis.register_script(_SNAPSHOT)
        self._snapshot_batches = ScriptBatches(self.redis, _SNAPSHOT, lambda keys, args: snapshot(keys=keys, args=args))
        self._claim_report = self.redis.register_script(_CLAIM_REPORT)

    def message(self, message_id: str) -> MessageInfo | None:
        key = self._msg(message_id)
        values = self._snapshot_batches([key, key + ":text"], [])
        if values is None:
            return None
        state, last_seq, text, conversation_id, error, sources = (
            v.decode() if isinstance(v, bytes) else v for v in values
        )
        info = ErrorInfo(**json.loads(error)) if error else None
        listed = tuple(json.loads(sources)) if sources else ()
        return MessageInfo(message_id, conversation_id, MessageState(state), text, int(last_seq), info, listed)

    def snapshot(self, message_id: str) -> StreamEvent | None:
        info = self.message(message_id)
        if info is None:
            return None
        terminal = info.state.terminal
        seq = info.last_seq - 1 if terminal else info.last_seq
        state = MessageState.RUNNING if terminal else info.state
        return StreamEvent(message_id, seq, EventKind.SNAPSHOT, {"text": info.text, "state": state.value})

    def read_events(self, message_id: str, after_seq: int, timeout: float) -> list[StreamEvent]:
        # Readers wait in this process's one subscriber (redis_tail.py) and take events from
        # its buffer; a reader it cannot serve (behind the buffer, a log not followed yet, or
        # nothing heard for the whole wait) reads Redis itself.
        tail_key = self._events_key(message_id)
        buffered = self._tail.peek(tail_key, after_seq)
        if buffered:
            return _events(buffered)
        if buffered is None and self._tail.follows(tail_key):  # followed, this position not kept
            events = self._events_after(message_id, tail_key.decode(), after_seq)
            if events:
                return events
        # (A log not followed yet: wait() subscribes, then reads its newest entries itself.)
        buffered = self._tail.wait(tail_key, after_seq, timeout)
        if buffered:
            return _events(buffered)
        events = self._events_after(message_id, tail_key.decode(), after_seq)
        if events:
            return events
        if not self.redis.exists(self._msg(message_id)):
            raise UnknownMessage(message_id)
        return []

    def _events_after(self, message_id: str, key: str, after_seq: int) -> list[StreamEvent]:
        """Events after `after_seq`, read from Redis without waiting; a
        snapshot first if the ones right after it were trimmed away."""
        entries = self.redis.xrange(key, min=f"({after_seq}-1", max="+")
        if not entries:
            return []
        if _entry_seq(entries[0]) == after_seq + 1:
            return [_entry_event(entry) for entry in entries]
        snapshot = self.snapshot(message_id)
        if snapshot is None:
            return []
        later = self.redis.xrange(key, min=f"({snapshot.seq}-1", max="+") or []
        if later and _entry_seq(later[0]) != snapshot.seq + 1:
            # Trimmed again between the two reads (a fast answer and a small LOG_MAX_EVENTS):
            # the snapshot alone, and the reader's next read, from its seq, gets a newer one.
            # Never a gap (tests/test_redis_store.py).
            return [snapshot]
        return [snapshot, *(_entry_event(entry) for entry in later)]

    def claim_report(self, message_id: str) -> bool:
        return bool(self._claim_report(keys=[self._msg(message_id)]))

    def message_state(self, message_id: str) -> MessageState | None:
        """Just the state (one HGET), for pollers that need nothing else."""
        state = self.redis.hget(self._msg(message_id), "state")
        return MessageState(_text(state)) if state is not None else None
