"""The embedded default store: everything in this process's memory.

Good for one worker process (any number of threads or greenlets). It cannot
be shared between processes, so the server refuses to start it with several
workers rather than silently breaking resume.
"""

from __future__ import annotations

import sys
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..errors import ErrorInfo
from ..messages import InvalidTransition, MessageLog, MessageState, StreamEvent
from ..waiting import condition, rlock
from .base import (
    CLAIMED,
    CONFIRMED,
    DISMISSED,
    OTHER_KEY,
    SAME_KEY,
    ActionRecord,
    ActionStatus,
    Claim,
    Conversation,
    Exchange,
    FeedbackRecord,
    MessageInfo,
    RequestConflict,
    Revision,
    RevisionRefused,
    SentAttachment,
    Store,
    SubjectConversation,
    UnknownMessage,
    backend_history,
    revision_refusal,
)

# What the byte budget counts for a conversation and for each exchange (its records and
# ids; the user's text is counted apart). Estimates, calibrated with bench/memory.py.
CONVERSATION_BYTES = 1024
EXCHANGE_BYTES = 1024
FEEDBACK_BYTES = 256  # a feedback record and its ids (its comment is counted apart)


@dataclass
class _ConversationRecord:
    conversation: Conversation
    exchanges: list[Exchange] = field(default_factory=list)
    by_request: dict[str, Exchange] = field(default_factory=dict)
    last_used: float = 0.0
    stored_bytes: int = 0  # what the byte budget counts for it: itself, its turns and its logs
    feedback: dict[str, FeedbackRecord] = field(default_factory=dict)  # by message id (put_feedback)


@dataclass
class _MessageRecord:
    conversation_id: str
    log: MessageLog
    changed: Any  # waiting.condition(): threading.Condition's wait and notify_all
    reported: bool = False  # a client report was counted (claim_report)


class MemoryStore(Store):
    def __init__(
        self,
        *,
        max_events: int = 2048,
        conversation_ttl: float = 86400.0,
        identified_ttl: float | None = None,
        max_conversations: int = 100_000,
        finished_log_grace: float = 30.0,
        max_bytes: int = 256 * 1024 * 1024,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_events = max_events
        # The byte budget: beyond it, the least recently used conversations
        # with no answer running are forgotten (a running answer never is).
        self.max_bytes = max_bytes
        self.stored_bytes = 0
        # A finished answer keeps its whole log this long (readers catching up
        # get the exact events), then only its text and terminal event.
        self._grace = finished_log_grace
        self._ended: deque[tuple[float, str]] = deque()  # (when to compact, message id), oldest first
        # Retention (docs/privacy.md): an anonymous conversation is forgotten `conversation_ttl`
        # (RETENTION) after its last use, a known visitor's `identified_ttl`
        # (IDENTIFIED_RETENTION). The clock is injectable so tests move time instead of
        # sleeping (tests/test_retention.py); the answer waits below keep the real one.
        self._ttl = conversation_ttl
        self._identified_ttl = conversation_ttl if identified_ttl is None else identified_ttl
        self._clock = clock
        # Each retention's conversations, least recently used first: expiry walks each from
        # its oldest and stops at the first one still kept, never past it.
        self._by_retention: dict[float, OrderedDict[str, None]] = {}
        self._max_conversations = max_conversations
        self._lock = rlock()
        self._conversations: OrderedDict[str, _ConversationRecord] = OrderedDict()
        self._messages: dict[str, _MessageRecord] = {}
        self._actions: dict[str, ActionRecord] = {}
        self._action_changed = threading.Condition(self._lock)
        # Called with the id of each conversation the store forgets (expired, evicted by the
        # byte budget, or deleted), under its lock: what is kept beside it (the attachments'
        # directory, attachments/directory_store.py) goes with the conversation.
        self.forget_listeners: list[Callable[[str], None]] = []
        # Each subject's conversations by id, with their last activity (unix seconds): entries
        # go with their conversation (_forget), so a list is never longer than what is stored.
        self._subjects: dict[str, dict[str, float]] = {}

    # -- conversations -----------------------------------------------------

    def create_conversation(self, conversation: Conversation) -> None:
        with self._lock:
            now = self._clock()
            self._expire(now, making_room=True)
            record = _ConversationRecord(conversation, last_used=now)
            self._conversations[conversation.conversation_id] = record
            self._by_retention.setdefault(self.retention_of(conversation), OrderedDict())[
                conversation.conversation_id
            ] = None
            if conversation.subject:
                listed = self._subjects.setdefault(conversation.subject, {})
                listed[conversation.conversation_id] = conversation.created_at
            self._add_bytes(record, CONVERSATION_BYTES)

    def retention_of(self, conversation: Conversation) -> float:
        """Seconds `conversation` is kept after its last use: IDENTIFIED_RETENTION for a known
        visitor's, RETENTION for an anonymous one (docs/privacy.md)."""
        return self._identified_ttl if conversation.subject else self._ttl

    def _add_bytes(self, record: _ConversationRecord, count: int) -> None:
        record.stored_bytes += count
        self.stored_bytes += count
        if count > 0 and self.stored_bytes > self.max_bytes:
            self._within_budget(keep=record.conversation.conversation_id)

    def _compact(self, message_id: str) -> None:
        record = self._messages.get(message_id)
        conversation = self._conversations.get(record.conversation_id) if record is not None else None
        if record is None or conversation is None or record.log.compacted:
            return
        before = record.log.stored_bytes
        record.log.compact()
        self._add_bytes(conversation, record.log.stored_bytes - before)

    def _compact_due(self, now: float) -> None:
        while self._ended and self._ended[0][0] <= now:
            self._compact(self._ended.popleft()[1])

    def _within_budget(self, keep: str) -> None:
        """Over the byte budget: compact every ended log at once, then forget the
        least recently used conversations that have no answer accepted or running
        (never `keep`, the one that grew)."""
        while self._ended and self.stored_bytes > self.max_bytes:
            self._compact(self._ended.popleft()[1])
        for cid, record in list(self._conversations.items()):
            if self.stored_bytes <= self.max_bytes:
                return
            if cid != keep and not any(self._running(e.assistant_message_id) for e in record.exchanges):
                self._forget(cid)

    def _running(self, message_id: str) -> bool:
        message = self._messages.get(message_id)
        return message is not None and not message.log.state.terminal

    def _forget(self, conversation_id: str) -> None:
        record = self._conversations.pop(conversation_id)
        self._by_retention.get(self.retention_of(record.conversation), OrderedDict()).pop(conversation_id, None)
        subject = record.conversation.subject
        listed = self._subjects.get(subject) if subject else None
        if listed is not None:
            listed.pop(conversation_id, None)
            if not listed:
                del self._subjects[subject]
        for listener in self.forget_listeners:
            listener(conversation_id)
        self.stored_bytes -= record.stored_bytes
        # Every answer the conversation ever claimed, a replaced one (by_request only) too:
        # nothing of it may outlive it (docs/privacy.md; tests/test_retention.py).
        message_ids = {e.assistant_message_id for e in (*record.exchanges, *record.by_request.values())}
        for message_id in message_ids:
            message = self._messages.pop(message_id, None)
            for proposal in message.log.actions if message is not None else ():
                self._actions.pop(proposal["action_id"], None)
        if self._ended:  # logs waiting to be compacted: their ids go too (only within the grace)
            self._ended = deque(entry for entry in self._ended if entry[1] not in message_ids)

    def _expire(self, now: float, *, making_room: bool = False) -> None:
        self._compact_due(now)
        # Least recently used first: drop the expired, and the oldest beyond
        # the cap, so memory stays bounded however long the server runs.
        # `making_room`: a conversation is about to be added, keep one slot free.
        limit = self._max_conversations - 1 if making_room else self._max_conversations
        for ttl, order in list(self._by_retention.items()):
            while order:
                cid = next(iter(order))
                if now - self._conversations[cid].last_used < ttl:
                    break
                self._forget(cid)
        while len(self._conversations) > limit:
            self._forget(next(iter(self._conversations)))

    def _record(self, conversation_id: str) -> _ConversationRecord | None:
        # Expire here too, not only on create: an idle conversation must be
        # forgotten after its TTL even if no new conversation is created.
        now = self._clock()
        self._expire(now)
        return self._touch(conversation_id, now)

    def _touch(self, conversation_id: str, now: float) -> _ConversationRecord | None:
        record = self._conversations.get(conversation_id)
        if record is not None:
            record.last_used = now
            self._conversations.move_to_end(conversation_id)
            self._by_retention[self.retention_of(record.conversation)].move_to_end(conversation_id)
        return record

    def get_conversation(self, conversation_id: str) -> Conversation | None:
        with self._lock:
            record = self._record(conversation_id)
            return record.conversation if record else None

    def claim_request(
        self,
        conversation_id: str,
        request_id: str,
        fingerprint: str,
        user_text: str,
        new_user_message_id: str,
        new_assistant_message_id: str,
        attachments: tuple[SentAttachment, ...] = (),
        context: tuple[tuple[str, str | int | float | bool], ...] = (),
    ) -> Claim:
        with self._lock:
            record = self._record(conversation_id)
            if record is None:
                raise UnknownMessage(conversation_id)
            existing = record.by_request.get(request_id)
            if existing is not None:
                if existing.fingerprint != fingerprint:
                    raise RequestConflict(existing)
                return Claim(existing, created=False)
            history = self._completed_history(record)
            exchange = Exchange(
                request_id,
                fingerprint,
                new_user_message_id,
                user_text,
                new_assistant_message_id,
                attachments=attachments,
                context=context,
            )
            self._add_exchange(conversation_id, record, exchange)
            return Claim(exchange, created=True, history=history)

    def _add_exchange(self, conversation_id: str, record: _ConversationRecord, exchange: Exchange) -> None:
        """Record a new exchange and its answer's empty log (under the lock)."""
        record.exchanges.append(exchange)
        record.by_request[exchange.request_id] = exchange
        log = MessageLog(exchange.assistant_message_id, self.max_events)
        self._messages[exchange.assistant_message_id] = _MessageRecord(conversation_id, log, condition(self._lock))
        context_bytes = sum(sys.getsizeof(key) + sys.getsizeof(value) for key, value in exchange.context)
        self._add_bytes(record, EXCHANGE_BYTES + sys.getsizeof(exchange.user_text) + context_bytes + log.stored_bytes)

    def _state_of(self, message_id: str) -> MessageState | None:
        message = self._messages.get(message_id)
        return message.log.state if message is not None else None

    def _completed_history(self, record: _ConversationRecord) -> list[tuple[str, str]]:
        return backend_history(record.exchanges, lambda message_id: self.message(message_id))

    def exchanges(self, conversation_id: str) -> list[Exchange]:
        with self._lock:
            record = self._record(conversation_id)
            return list(record.exchanges) if record else []

    def message(self, message_id: str) -> MessageInfo | None:
        with self._lock:
            record = self._messages.get(message_id)
            if record is None:
                return None
            log = record.log
            return MessageInfo(
                message_id, record.conversation_id, log.state, log.text, log.last_seq, log.error, tuple(log.sources)
            )

    # -- writing -----------------------------------------------------------

    def _write(self, message_id: str, operation: Callable[..., Any], *arguments: Any, ends: bool = False) -> Any:
        """`operation(log, *arguments)` on the message's log, under the lock, and what it
        returns; None if the message is unknown or already ended (the first ending wins).
        `ends`: the operation writes the terminal event."""
        with self._lock:
            record = self._messages.get(message_id)
            if record is None:
                return None
            log = record.log
            before = log.stored_bytes
            try:
                result = operation(log, *arguments)
            except InvalidTransition:
                return None
            # A generating answer is activity: its conversation stays alive.
            now = self._clock()
            conversation = self._touch(record.conversation_id, now)
            if conversation is not None:
                self._add_bytes(conversation, log.stored_bytes - before)
            if ends:
                self._ended.append((now + self._grace, message_id))
                self._compact_due(now)
            record.changed.notify_all()
            return result

    def start(self, message_id: str) -> StreamEvent | None:
        return self._write(message_id, MessageLog.start)

    def append_text(self, message_id: str, text: str) -> StreamEvent | None:
        return self._write(message_id, MessageLog.add_text, text)

    def append_text_soon(self, message_id: str, text: str) -> bool:
        # The generator's write of every delta: no event made for it (MessageLog.add_delta).
        return self._write(message_id, MessageLog.add_delta, text) is not None

    def complete(self, message_id: str, sources: Sequence[dict[str, Any]] = ()) -> StreamEvent | None:
        return self._write(message_id, MessageLog.complete, list(sources), ends=True)

    def add_progress(self, message_id: str, text: str) -> StreamEvent | None:
        return self._write(message_id, MessageLog.add_progress, text)

    def fail(self, message_id: str, error: ErrorInfo) -> StreamEvent | None:
        return self._write(message_id, MessageLog.fail, error, ends=True)

    def cancel(self, message_id: str) -> StreamEvent | None:
        return self._write(message_id, MessageLog.cancel, ends=True)

    # -- reading -----------------------------------------------------------

    def snapshot(self, message_id: str) -> StreamEvent | None:
        with self._lock:
            record = self._messages.get(message_id)
            return record.log.snapshot() if record is not None else None

    def read_events(self, message_id: str, after_seq: int, timeout: float) -> list[StreamEvent]:
        deadline = time.monotonic() + timeout
        with self._lock:
            while True:
                record = self._messages.get(message_id)
                if record is None:
                    raise UnknownMessage(message_id)
                events = record.log.events_after(after_seq)
                remaining = deadline - time.monotonic()
                if events or remaining <= 0:
                    return events
                record.changed.wait(remaining)

    # -- client reports ----------------------------------------------------

    def claim_report(self, message_id: str) -> bool:
        with self._lock:
            record = self._messages.get(message_id)
            if record is None or record.reported:
                return False
            record.reported = True
            return True

    # -- actions -----------------------------------------------------------
    # Every transition happens under the store's lock, so two confirms
    # racing for one action see one winner: it alone runs execute().

    def add_action(self, message_id: str, action: ActionRecord) -> StreamEvent | None:
        with self._lock:
            event = self._write(message_id, MessageLog.add_action, action.proposal())
            if event is not None:
                self._actions[action.action_id] = action
            return event

    def action(self, action_id: str) -> ActionRecord | None:
        with self._lock:
            return self._actions.get(action_id)

    def message_actions(self, message_id: str) -> list[ActionRecord]:
        with self._lock:
            record = self._messages.get(message_id)
            if record is None:
                return []
            found = (self._actions.get(p["action_id"]) for p in record.log.actions)
            return [action for action in found if action is not None]

    def claim_action(self, action_id: str, idempotency_key: str) -> tuple[str | None, ActionRecord | None]:
        with self._lock:
            action = self._actions.get(action_id)
            if action is None:
                return None, None
            if action.status == ActionStatus.PROPOSED:
                action = self._actions[action_id] = replace(
                    action, status=ActionStatus.EXECUTING, idempotency_key=idempotency_key
                )
                return CLAIMED, action
            if action.status == ActionStatus.DISMISSED:
                return DISMISSED, action
            return (SAME_KEY if action.idempotency_key == idempotency_key else OTHER_KEY), action

    def finish_action(
        self,
        action_id: str,
        idempotency_key: str,
        status: str,
        *,
        result: dict | None = None,
        error: dict | None = None,
    ) -> ActionRecord | None:
        with self._lock:
            action = self._actions.get(action_id)
            if action is None or action.status != ActionStatus.EXECUTING or action.idempotency_key != idempotency_key:
                return action
            action = self._actions[action_id] = replace(action, status=status, result=result, error=error)
            self._action_changed.notify_all()
            return action

    def dismiss_action(self, action_id: str) -> tuple[str | None, ActionRecord | None]:
        with self._lock:
            action = self._actions.get(action_id)
            if action is None:
                return None, None
            if action.status == ActionStatus.PROPOSED:
                action = self._actions[action_id] = replace(action, status=ActionStatus.DISMISSED)
                self._action_changed.notify_all()
            return (DISMISSED if action.status == ActionStatus.DISMISSED else CONFIRMED), action

    def wait_action(self, action_id: str, timeout: float) -> ActionRecord | None:
        deadline = time.monotonic() + timeout
        with self._lock:
            while True:
                action = self._actions.get(action_id)
                remaining = deadline - time.monotonic()
                if action is None or action.status != ActionStatus.EXECUTING or remaining <= 0:
                    return action
                self._action_changed.wait(remaining)

    # -- feedback and deleting a conversation (widget_server/feedback/) ---
    # A conversation's feedback lives in its record, so expiry and the byte
    # budget forget it with the conversation (_forget).

    @staticmethod
    def _feedback_bytes(record: FeedbackRecord | None) -> int:
        return FEEDBACK_BYTES + sys.getsizeof(record.comment) if record is not None else 0

    def put_feedback(self, record: FeedbackRecord) -> FeedbackRecord | None:
        with self._lock:
            conversation = self._record(record.conversation_id)
            if conversation is None:
                raise UnknownMessage(record.conversation_id)
            previous = conversation.feedback.get(record.message_id)
            conversation.feedback[record.message_id] = record
            self._add_bytes(conversation, self._feedback_bytes(record) - self._feedback_bytes(previous))
            return previous

    def delete_feedback(self, conversation_id: str, message_id: str) -> None:
        with self._lock:
            conversation = self._record(conversation_id)
            if conversation is not None:
                self._add_bytes(conversation, -self._feedback_bytes(conversation.feedback.pop(message_id, None)))

    def conversation_feedback(self, conversation_id: str) -> dict[str, FeedbackRecord]:
        with self._lock:
            conversation = self._record(conversation_id)
            return dict(conversation.feedback) if conversation is not None else {}

    def feedback_conversations(self) -> list[str]:
        with self._lock:
            self._expire(self._clock())
            return [cid for cid, record in self._conversations.items() if record.feedback]

    def delete_conversation(self, conversation_id: str) -> bool:
        with self._lock:
            record = self._conversations.get(conversation_id)
            if record is None:
                return False
            # Every exchange the conversation ever claimed (by_request), not only those
            # listed: a replaced answer stays in the store until the conversation goes.
            message_ids = {e.assistant_message_id for e in (*record.exchanges, *record.by_request.values())}
            for message_id in message_ids:
                message = self._messages.get(message_id)
                if message is not None:
                    message.changed.notify_all()  # a reader waiting on it looks again, finds it gone
            self._forget(conversation_id)
            for message_id in message_ids:
                message = self._messages.pop(message_id, None)
                for proposal in message.log.actions if message is not None else ():
                    self._actions.pop(proposal["action_id"], None)
            return True

    # -- a subject's conversations (widget_server/identity/) ----------------

    def touch_subject_conversation(self, conversation: Conversation, at: float) -> None:
        with self._lock:
            listed = self._subjects.get(conversation.subject)
            if listed is not None and conversation.conversation_id in listed:
                listed[conversation.conversation_id] = max(listed[conversation.conversation_id], at)

    def find_subject_conversations(self, subject: str) -> list[str]:
        with self._lock:
            self._expire(self._clock())
            return [cid for cid, record in self._conversations.items() if record.conversation.subject == subject]

    def forget_subject(self, subject: str) -> None:
        with self._lock:
            self._subjects.pop(subject, None)

    def subject_conversations(self, subject: str, limit: int) -> list[SubjectConversation]:
        with self._lock:
            self._expire(self._clock())
            listed = self._subjects.get(subject, {})
            newest = sorted(listed.items(), key=lambda item: (item[1], item[0]), reverse=True)[:limit]
            return [
                SubjectConversation(self._conversations[cid].conversation, at)
                for cid, at in newest
                if cid in self._conversations
            ]

    # -- revisions (widget_server/revisions/) --------------------------------

    def claim_revision(
        self,
        conversation_id: str,
        request_id: str,
        fingerprint: str,
        revision: Revision,
        new_assistant_message_id: str,
    ) -> Claim:
        with self._lock:  # the refusal's reads and the new exchange: one step
            record = self._record(conversation_id)
            if record is None:
                raise UnknownMessage(conversation_id)
            existing = record.by_request.get(request_id)
            if existing is not None:
                if existing.fingerprint != fingerprint:
                    raise RequestConflict(existing)
                return Claim(existing, created=False)
            refusal, index = revision_refusal(record.exchanges, self._state_of, revision)
            if refusal is not None:
                raise RevisionRefused(refusal)
            exchange = revision.replacing(record.exchanges[index], request_id, fingerprint, new_assistant_message_id)
            self._add_exchange(conversation_id, record, exchange)
            # After the new exchange: it hides the one it replaces from the backend too.
            return Claim(exchange, created=True, history=self._completed_history(record))
