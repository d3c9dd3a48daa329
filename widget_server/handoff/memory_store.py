"""The hand-off store in this process's memory (with the `memory` chat store: one process).

A record expires the longer of RETENTION and IDENTIFIED_RETENTION after its last write, and
goes with its conversation when the chat store forgets it (services.py), so a forgotten
conversation's hand-off does not stay forever.

Its bytes are counted and bounded (HANDOFF_MEMORY_STORE_MAX_BYTES; docs/security.md,
"Memory"), as the chat memory store bounds its own (stores/memory.py). Records are kept as
their JSON text and events are JSON already, so what a record or an event holds is
`sys.getsizeof` of that text (exact for the text, as the chat store counts an answer's text),
plus a fixed estimate for the containers around it (RECORD_BYTES, EVENT_BYTES, LOG_BYTES,
calibrated against a `sys.getsizeof` walk of the store: tests/security/test_handoff_memory_bounds.py).
Over the budget, what is safe goes first, oldest write first: the event logs of conversations
whose hand-off is not queued or assigned (a reader behind gets a `conversation.snapshot`, still
exact), then those conversations' records (their hand-off then reads as never requested, as an
expired one). A queued or assigned hand-off is never evicted; when nothing else is left, a
commit that brings something new is refused (HandoffStoreFull, store.py).
"""

from __future__ import annotations

import bisect
import json
import sys
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Iterator
from dataclasses import dataclass

from .events import ACTIVE_STATES
from .store import (
    CONVERSATION_PREFIX,
    Commit,
    HandoffRecord,
    HandoffStore,
    HandoffStoreFull,
    InboxPage,
    StoredRecord,
    as_record,
    inbox_score,
    left_key,
)

# How often expired records are looked for (at a commit).
_PURGE_SECONDS = 60.0

# What the byte budget counts besides the JSON texts (estimates; the calibration test checks
# that the count is never below what a sys.getsizeof walk of the store finds): a record's
# entry (its name, its slot in the ordered dict, its _Record), an event's (its tuple, seq and
# deque slot), and a log (the deque and its dict entries).
RECORD_BYTES = 400
EVENT_BYTES = 100
LOG_BYTES = 800
# An inbox index entry: its score, its id's slot in two lists and in the unreplied set.
INBOX_ENTRY_BYTES = 200


@dataclass(slots=True)
class _Record:
    version: int
    text: str  # the value's JSON: what load() parses, what the budget counts
    expires: float
    active: bool  # a conversation's hand-off that is queued or assigned: never evicted
    seq: int  # a conversation's newest event's seq (0 for the desk and the inbox)
    stored_bytes: int


def _record_bytes(name: str, text: str) -> int:
    return RECORD_BYTES + sys.getsizeof(name) + sys.getsizeof(text)


def _event_bytes(raw: str) -> int:
    return EVENT_BYTES + sys.getsizeof(raw)


class MemoryHandoffStore(HandoffStore):
    def __init__(
        self,
        *,
        max_events: int = 500,
        ttl: float = 86400.0,
        max_bytes: int = 64 * 1024 * 1024,
        max_inbox: int = 10_000,
    ) -> None:
        self.max_events = max_events
        self.ttl = ttl
        self.max_bytes = max_bytes
        self.max_inbox = max_inbox
        self.stored_bytes = 0
        self.evicted = 0  # conversations whose log or record the budget evicted (for tests and the bench)
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        # name → record, the least recently written first (eviction's order)
        self._records: OrderedDict[str, _Record] = OrderedDict()
        # conversation id → its newest events, (seq, JSON); and what each log counts
        self._logs: dict[str, deque[tuple[int, str]]] = {}
        self._log_bytes: dict[str, int] = {}
        self._presence: dict[str, float] = {}
        self._visitors: dict[str, float] = {}  # conversation id → its visitor's stream last open
        self._purged_at = time.monotonic()
        # The inbox index (store.py): scores ascending, the ids in the same order, and those
        # no agent has replied to; how many it has let go.
        self._inbox_scores: list[int] = []
        self._inbox_ids: list[str] = []
        self._unreplied: set[str] = set()
        self._inbox_expired = 0

    def load(self, keys: list[str]) -> dict[str, tuple[int, StoredRecord | None]]:
        now = time.time()
        found: dict[str, tuple[int, StoredRecord | None]] = {}
        with self._lock:
            held = {key: self._records.get(key) for key in keys}
        for key, record in held.items():
            if record is None or record.expires <= now:
                found[key] = (0, None)
            else:
                # Parsed afresh: the service changes what it loaded before committing it.
                found[key] = (record.version, json.loads(record.text))
        return found

    def _version(self, key: str, now: float) -> int:
        record = self._records.get(key)
        return 0 if record is None or record.expires <= now else record.version

    def commit(self, change: Commit) -> bool:
        # Encoded outside the lock: the desk's JSON grows with the queue (HANDOFF_QUEUE_MAX).
        texts = {
            key: None if value is None else json.dumps(value, ensure_ascii=False, separators=(",", ":"))
            for key, value in change.writes.items()
        }
        touched = {
            key.removeprefix(CONVERSATION_PREFIX) for key in change.writes if key.startswith(CONVERSATION_PREFIX)
        }
        touched.update(change.events)
        now = time.time()
        with self._lock:
            if any(self._version(key, now) != version for key, version in change.expected.items()):
                return False
            if change.needs_room:
                needed = self.stored_bytes + self._growth(change, texts) - self.max_bytes
                if needed > 0:
                    self._evict(needed, keep=touched)
                    if self.stored_bytes + self._growth(change, texts) > self.max_bytes:
                        raise HandoffStoreFull(
                            f"the hand-off store holds {self.stored_bytes} of {self.max_bytes} bytes"
                        )
            for key, text in texts.items():
                self._drop_record(key)
                if text is not None:
                    handoff = (
                        as_record(HandoffRecord, change.writes[key]) if key.startswith(CONVERSATION_PREFIX) else None
                    )
                    record = _Record(
                        # Version 0 is "absent": a re-created record continues from 1.
                        version=change.expected.get(key, 0) + 1,
                        text=text,
                        expires=now + self.ttl,
                        active=handoff is not None and handoff["state"] in ACTIVE_STATES,
                        seq=handoff["seq"] if handoff is not None else 0,
                        stored_bytes=_record_bytes(key, text),
                    )
                    self._records[key] = record
                    self.stored_bytes += record.stored_bytes
            for conversation_id in change.drop_logs:
                self._drop_log(conversation_id)
            for conversation_id, events in change.events.items():
                self._append(conversation_id, events)
            self._change_inbox(change, now)
            if change.events:
                self._changed.notify_all()
            if time.monotonic() - self._purged_at > _PURGE_SECONDS:
                self._purge(now)
            if self.stored_bytes > self.max_bytes:
                self._evict(self.stored_bytes - self.max_bytes, keep=touched)
        return True

    def _growth(self, change: Commit, texts: dict[str, str | None]) -> int:
        """At most how many bytes applying `change` adds (a log's trimmed events not deducted)."""
        growth = 0
        for key, text in texts.items():
            old = self._records.get(key)
            growth -= old.stored_bytes if old is not None else 0
            growth += _record_bytes(key, text) if text is not None else 0
        for conversation_id, events in change.events.items():
            growth += sum(_event_bytes(raw) for _, raw in events)
            if conversation_id not in self._logs or conversation_id in change.drop_logs:
                growth += LOG_BYTES
        return growth

    def _append(self, conversation_id: str, events: list[tuple[int, str]]) -> None:
        log = self._logs.get(conversation_id)
        if log is None:
            log = self._logs[conversation_id] = deque(maxlen=self.max_events)
            self._log_bytes[conversation_id] = LOG_BYTES
            self.stored_bytes += LOG_BYTES
        added = 0
        for event in events:
            if len(log) == log.maxlen:
                added -= _event_bytes(log[0][1])  # about to be trimmed (CONVERSATION_EVENTS_MAX)
            log.append(event)
            added += _event_bytes(event[1])
        self._log_bytes[conversation_id] += added
        self.stored_bytes += added

    def _drop_record(self, key: str) -> None:
        record = self._records.pop(key, None)
        if record is not None:
            self.stored_bytes -= record.stored_bytes

    def _drop_log(self, conversation_id: str) -> bool:
        if self._logs.pop(conversation_id, None) is None:
            return False
        self.stored_bytes -= self._log_bytes.pop(conversation_id)
        return True

    def _evict(self, needed: int, keep: set[str]) -> None:
        """Free at least `needed` bytes if that can be done safely: first the logs of
        conversations whose hand-off is over (not queued or assigned), then their records,
        the least recently written first; never one in `keep` (what the commit writes)."""
        goal = self.stored_bytes - needed
        for conversation_id in self._evictable(keep):
            if self.stored_bytes <= goal:
                return
            if self._drop_log(conversation_id):
                self.evicted += 1
        doomed: list[str] = []
        freed = 0
        for conversation_id in self._evictable(keep):
            if self.stored_bytes - freed <= goal:
                break
            doomed.append(conversation_id)
            freed += self._records[CONVERSATION_PREFIX + conversation_id].stored_bytes
        for conversation_id in doomed:
            self._drop_record(CONVERSATION_PREFIX + conversation_id)
            self.evicted += 1

    def _evictable(self, keep: set[str]) -> Iterator[str]:
        """Conversations whose hand-off is not going on (or expired), least recently written first."""
        now = time.time()
        for key, record in self._records.items():
            if key.startswith(CONVERSATION_PREFIX) and (not record.active or record.expires <= now):
                conversation_id = key.removeprefix(CONVERSATION_PREFIX)
                if conversation_id not in keep:
                    yield conversation_id

    def _change_inbox(self, change: Commit, now: float) -> None:
        for left_message_id in change.inbox_remove:
            self._unindex(left_message_id)
        for left_message_id, score in change.inbox_add:
            index = bisect.bisect(self._inbox_scores, score)
            self._inbox_scores.insert(index, score)
            self._inbox_ids.insert(index, left_message_id)
            self._unreplied.add(left_message_id)
            self.stored_bytes += INBOX_ENTRY_BYTES + sys.getsizeof(left_message_id)
        self._unreplied.difference_update(change.inbox_replied)
        if change.inbox_add:
            self._let_inbox_go(now)

    def _unindex(self, left_message_id: str) -> None:
        if left_message_id in self._inbox_ids:
            index = self._inbox_ids.index(left_message_id)
            del self._inbox_scores[index], self._inbox_ids[index]
            self._unreplied.discard(left_message_id)
            self.stored_bytes -= INBOX_ENTRY_BYTES + sys.getsizeof(left_message_id)

    def _let_inbox_go(self, now: float) -> None:
        """Let go of the index's entries older than the ttl and those past its bound, oldest
        first, with their records; counted in `expired`."""
        horizon = inbox_score(now - self.ttl)
        gone = max(bisect.bisect_left(self._inbox_scores, horizon), len(self._inbox_ids) - self.max_inbox)
        for left_message_id in self._inbox_ids[:gone]:
            self._unreplied.discard(left_message_id)
            self._drop_record(left_key(left_message_id))
            self.stored_bytes -= INBOX_ENTRY_BYTES + sys.getsizeof(left_message_id)
        del self._inbox_scores[:gone], self._inbox_ids[:gone]
        self._inbox_expired += gone

    def inbox_page(self, limit: int, before: int | None) -> InboxPage:
        with self._lock:
            self._let_inbox_go(time.time())
            end = len(self._inbox_scores) if before is None else bisect.bisect_left(self._inbox_scores, before)
            start = max(0, end - limit)
            entries = list(zip(self._inbox_scores[start:end], self._inbox_ids[start:end], strict=True))
            entries.reverse()
            return InboxPage(entries, len(self._unreplied), self._inbox_expired)

    def _purge(self, now: float) -> None:
        self._purged_at = time.monotonic()
        for key in [key for key, record in self._records.items() if record.expires <= now]:
            self._drop_record(key)
            if key.startswith(CONVERSATION_PREFIX):
                self._drop_log(key.removeprefix(CONVERSATION_PREFIX))

    def read_events(self, conversation_id: str, after_seq: int, timeout: float) -> list[tuple[int, str]] | None:
        deadline = time.monotonic() + timeout
        with self._lock:
            while True:
                log = self._logs.get(conversation_id)
                if log and log[-1][0] > after_seq:
                    if log[0][0] > after_seq + 1:
                        return None  # evicted: the bound kept only newer ones
                    return [event for event in log if event[0] > after_seq]
                if log is None:
                    record = self._records.get(CONVERSATION_PREFIX + conversation_id)
                    if record is not None and record.seq > after_seq:
                        return None  # the budget evicted the log, not the record: a snapshot
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return []
                self._changed.wait(remaining)

    def seen(self, agent_name: str, when: float) -> None:
        with self._lock:
            self._presence[agent_name] = when

    def presence(self) -> dict[str, float]:
        with self._lock:
            return dict(self._presence)

    # At most one entry per conversation whose hand-off is queued or assigned, and those marked
    # since the service last forgot the rest (HandoffService.release_lapsed): a few bytes each,
    # bounded by HANDOFF_QUEUE_MAX and the agents' claims, so not counted in the byte budget.

    def visitor_seen(self, conversation_id: str, when: float) -> None:
        with self._lock:
            self._visitors[conversation_id] = when

    def visitors_seen(self, conversation_ids: list[str] | None = None) -> dict[str, float]:
        with self._lock:
            if conversation_ids is None:
                return dict(self._visitors)
            return {cid: self._visitors[cid] for cid in conversation_ids if cid in self._visitors}

    def forget_visitors(self, conversation_ids: list[str]) -> None:
        with self._lock:
            for conversation_id in conversation_ids:
                self._visitors.pop(conversation_id, None)
