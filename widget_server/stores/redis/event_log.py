"""Writing an answer's event log: every event is one call of append.lua, which appends it to
the message's stream, makes its state transition (terminal states are compare-and-set: the
first ending wins, whichever process sends it) and publishes it to the readers of every
process (redis_tail.py). Concurrent appends go to Redis together (script_batches.py).

The answer's text is a plain string key grown with APPEND, so a long answer costs O(1) per
delta. Commands are never retried: a script whose reply was lost may have run, and running an
APPEND twice would duplicate text.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

from ...errors import ErrorInfo
from ...messages import EventKind, MessageState, StreamEvent, replace_lone_surrogates, text_digest
from ..lua import load_script
from ..script_batches import Call, ScriptBatches
from .compaction import RedisCompaction
from .core import SCRIPTS, _event_from_json
from .unavailable import unavailable_on_connection_errors

_APPEND = load_script(SCRIPTS, "append")


@unavailable_on_connection_errors
class RedisEventLog(RedisCompaction):
    def _register_event_log_scripts(self) -> None:
        self._append = self.redis.register_script(_APPEND)
        # Every delta is one call of append.lua: concurrent calls go to Redis together.
        self._append_batches = ScriptBatches(
            self.redis, _APPEND, lambda keys, args: self._append(keys=keys, args=args), answered=self._appended
        )

    def _write(self, message_id: str, op: str, payload: dict, text: str = "") -> StreamEvent | None:
        raw = self._append_raw(message_id, op, payload, text)
        return _event_from_json(raw) if raw is not None else None

    def _appended(self, call: Call) -> None:
        """Each append.lua's outcome, in write order (script_batches.py `answered`): an entry of
        a log this process owns is fed to its readers here; a refusal (another process ended
        the answer) or an error (the write may have run, its reply lost) disowns the log, so
        its readers read what Redis holds."""
        events_key = call.keys[2].encode()
        raw = call.reply
        if call.error is not None or not isinstance(raw, bytes):
            self._tail.disown(events_key)
            return
        if call.args[0] in ("start", "text", "progress"):
            # seq was spliced in last but one (append.lua; append_text says why this finds it)
            start = raw.rindex(b',"seq":') + 7
            seq = int(raw[start : raw.index(b",", start)])
        else:
            seq = json.loads(raw)["seq"]
        self._tail.feed(events_key, seq, raw)

    def _append_raw(self, message_id: str, op: str, payload: dict, text: str) -> bytes | None:
        """One append.lua: the new event's JSON, or None if the transition is refused."""
        ending = op not in ("start", "text", "progress")
        compact_at = int(time.time() * 1000) + self._grace_ms if ending and self._grace_ms else 0
        raw = self._append_batches(
            self._append_keys(message_id),
            [op, json.dumps(payload, ensure_ascii=False), text, *self._append_args(message_id, compact_at)],
        )
        if ending:
            if compact_at:
                index = self._compact_index(message_id)
                self._compact_own_due[index] = min(compact_at, self._compact_own_due.get(index, compact_at))
            self.compact_due(message_id)
        return raw

    def _append_keys(self, message_id: str) -> list[str]:
        key = self._msg(message_id)
        return [key, key + ":text", key + ":events", key + ":actions", key + ":lease", self._compact_key(message_id)]

    def _append_args(self, message_id: str, compact_at: int) -> list[str | int]:
        """append.lua's arguments after op, payload and text."""
        return [self.max_events, self._ttl, message_id, compact_at, self._publish]

    def start(self, message_id: str) -> StreamEvent | None:
        return self._write(message_id, "start", {"kind": EventKind.STARTED.value})

    def append_text(self, message_id: str, text: str) -> StreamEvent | None:
        text = replace_lone_surrogates(text)
        raw = self._append_raw(message_id, "text", {"kind": EventKind.DELTA.value, "text": text}, text)
        if raw is None:
            return None
        # The event is known but for its seq, which append.lua spliced in last but one: read it
        # there instead of decoding the whole event per delta (inside the JSON string of the
        # text every '"' is escaped, so the last ',"seq":' is the spliced one).
        start = raw.rindex(b',"seq":') + 7
        seq = int(raw[start : raw.index(b",", start)])
        return StreamEvent(message_id, seq, EventKind.DELTA, {"text": text})

    def append_text_soon(self, message_id: str, text: str) -> bool:
        # The generating run's next delta waits for nothing but the previous one's outcome,
        # which came back while its pacing or its upstream ran: at N=2,000 a delta's round
        # trip under load had stretched every answer (bench/load.py, events/s).
        if not self.settle(message_id):
            return False
        text = replace_lone_surrogates(text)
        payload = json.dumps({"kind": EventKind.DELTA.value, "text": text}, ensure_ascii=False)
        self._unsettled[message_id] = self._append_batches.submit(
            self._append_keys(message_id), ["text", payload, text, *self._append_args(message_id, 0)]
        )
        return True

    def settle(self, message_id: str) -> bool:
        call = self._unsettled.pop(message_id, None)
        return call is None or call.result() is not None

    def add_progress(self, message_id: str, text: str) -> StreamEvent | None:
        # After the deltas before it, in order (as an action's proposal: RedisActions.add_action).
        if not self.settle(message_id):
            return None
        return self._write(message_id, "progress", {"kind": EventKind.PROGRESS.value, "text": text})

    def complete(self, message_id: str, sources: Sequence[dict[str, Any]] = ()) -> StreamEvent | None:
        # The digest is over the text as stored; computed here once, from Redis.
        if not self.settle(message_id):
            return None
        info = self.message(message_id)
        if info is None or info.state is not MessageState.RUNNING:
            return None
        listed = json.dumps(list(sources), ensure_ascii=False, separators=(",", ":")) if sources else ""
        raw = self._append_raw(
            message_id, "complete", {"kind": EventKind.COMPLETED.value, **text_digest(info.text)}, listed
        )
        return _event_from_json(raw) if raw is not None else None

    def fail(self, message_id: str, error: ErrorInfo) -> StreamEvent | None:
        payload = {"kind": EventKind.FAILED.value, "error": error.to_json(), "incomplete": True}
        return self._write(message_id, "fail", payload)

    def cancel(self, message_id: str) -> StreamEvent | None:
        return self._write(message_id, "cancel", {"kind": EventKind.CANCELLED.value, "incomplete": True})

    def reap_if_lost(self, message_id: str, error: ErrorInfo) -> StreamEvent | None:
        # `lost`: a `fail` that append.lua allows only once the lease has expired (leases.py).
        payload = {"kind": EventKind.FAILED.value, "error": error.to_json(), "incomplete": True}
        return self._write(message_id, "lost", payload)
