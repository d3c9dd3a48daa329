"""HandoffService: hand-off to a person, transport-free (docs/design.md, "Hand-off").

A conversation's hand-off goes none → queued → assigned → ended (and may queue again);
`unavailable` is a request's outcome, never a state. Every transition is one transaction
(`_transact`): it reads the records it needs, changes them and appends its events, and the
store commits it only if none of what it read changed meanwhile (store.py), else it runs
again on fresh records. So the claim is decided exactly once across workers and hosts, and a
transition's events are in the log exactly when its state is.

The service raises ApiError for refusals, as ChatService does; the blueprints
(handoff/api.py, the agents' API) stay thin adapters.
"""

from __future__ import annotations

import json
import logging
import random
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any, TypeVar

from ..dashboard.recorder import NO_EVENTS, EventPublisher
from ..errors import ApiError
from ..messages import clean_text
from ..metrics import NO_METRICS, Metrics
from ..protocol import new_id
from ..settings import Settings
from ..stores.base import SentAttachment, Store, StoreUnavailable, listed_exchanges
from ..stream_loop import follow_log
from ..webhooks.publisher import NO_WEBHOOKS, Publisher
from ..wire.errors import (
    ALREADY_CLAIMED,
    HANDOFF_ACTIVE,
    HANDOFF_BUSY,
    HANDOFF_NOT_ACTIVE,
    HANDOFF_STORE_FULL,
    INVALID_LAST_EVENT_ID,
    INVALID_REASON,
    NOT_FOUND,
    NOT_YOUR_CONVERSATION,
    REQUEST_ID_CONFLICT,
    TOO_MANY_LEFT_MESSAGES,
)
from ..wire.webhooks import HandoffAssigned, HandoffEnded, HandoffQueued, MessageLeft
from . import events as ev
from .events import ConversationEvent, text_sha256
from .hours import OpeningHours
from .metrics import HandoffMetrics
from .store import (
    DESK,
    LEGACY_INBOX,
    Claim,
    Commit,
    DeskRecord,
    HandoffMessageRecord,
    HandoffRecord,
    HandoffStore,
    HandoffStoreFull,
    KnownRequest,
    KnownVisitor,
    LeftMessageRecord,
    LeftReply,
    LegacyInbox,
    QueueEntry,
    RateableHandoff,
    RepliedLeftMessage,
    StoredRecord,
    as_record,
    conversation_key,
    inbox_score,
    left_key,
)

log = logging.getLogger(__name__)

# What a transition's change returns, and so its transaction (HandoffService._transact).
ResultT = TypeVar("ResultT")

# Ids of hand-off messages (visitor's and agent's) and of left messages.
VISITOR_MESSAGE_PREFIX = "hv_"
AGENT_MESSAGE_PREFIX = "ha_"
LEFT_MESSAGE_PREFIX = "l_"
# A transaction that keeps losing its compare-and-set to others gives up (503) after this many tries.
MAX_ATTEMPTS = 100
# The most left messages one page of the inbox holds (GET /agent/api/inbox?limit=).
INBOX_PAGE_MAX = 200
# agent.typing is appended at most this often per conversation (the console may send more).
TYPING_EVERY_SECONDS = 2.0
# How often an open conversation stream looks for lapsed claims and a deleted conversation.
HOUSEKEEPING_SECONDS = 5.0
# While quiet, how often a stream with a disconnect probe looks whether its reader left.
DISCONNECT_PROBE_SECONDS = 1.0


def iso(when: float) -> str:
    """Unix seconds → ISO 8601 UTC with milliseconds (as feedback's `updated_at`)."""
    return datetime.fromtimestamp(when, UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{int(when * 1000) % 1000:03d}Z"


def _fingerprint(kind: str, **fields: Any) -> str:
    return json.dumps({"kind": kind, **fields}, ensure_ascii=False, sort_keys=True)


def new_record() -> HandoffRecord:
    """A conversation's hand-off record before any request (store.py says each field)."""
    return {
        "state": ev.NONE,
        "agent": "",
        "agent_display": "",
        "queued_at": 0.0,
        "assigned_at": 0.0,
        "replied": False,
        "typing_at": 0.0,
        "seq": 0,
        "messages": [],
        "requests": {},
    }


def new_desk() -> DeskRecord:
    return {"queue": [], "assigned": {}}


class _Transaction:
    """The records one transition reads (each loaded once, with its version) and what it
    changes; `commit()` is what the store applies, all or nothing."""

    def __init__(self, store: HandoffStore) -> None:
        self.store = store
        self.versions: dict[str, int] = {}
        self.values: dict[str, StoredRecord | None] = {}
        self.written: set[str] = set()
        self.events: dict[str, list[ConversationEvent]] = {}
        self.drop_logs: list[str] = []
        self.after: list[Callable[[], None]] = []  # run once the commit succeeded
        self.positions_before: dict[str, int] | None = None
        # It brings something new (a request's outcome, a message): a store over its byte
        # budget may refuse it (store.py, HandoffStoreFull), never a transition of one it holds.
        self.needs_room = False
        # The inbox index's changes (store.py), applied with the rest.
        self.inbox_add: list[tuple[str, int]] = []
        self.inbox_replied: list[str] = []
        self.inbox_remove: list[str] = []

    def get(self, key: str) -> StoredRecord | None:
        if key not in self.values:
            version, value = self.store.load([key])[key]
            self.versions[key], self.values[key] = version, value
        return self.values[key]

    def prefetch(self, keys: list[str]) -> None:
        """Load at once (one round trip on Redis) the records `get` would load one by one."""
        missing = [key for key in keys if key not in self.values]
        for key, (version, value) in (self.store.load(missing) if missing else {}).items():
            self.versions[key], self.values[key] = version, value

    def put(self, key: str, value: StoredRecord | None) -> None:
        self.get(key)
        self.values[key] = value
        self.written.add(key)

    # Each kind of record read through its own accessor, under its own kind of name (store.py,
    # `as_record`): the records are typed from here on.

    def existing_conversation(self, conversation_id: str) -> HandoffRecord | None:
        return as_record(HandoffRecord, self.get(conversation_key(conversation_id)))

    def conversation(self, conversation_id: str) -> HandoffRecord:
        record = self.existing_conversation(conversation_id)
        if record is None:
            record = new_record()
            self.values[conversation_key(conversation_id)] = record
        return record

    def desk(self) -> DeskRecord:
        desk = as_record(DeskRecord, self.get(DESK))
        if desk is None:
            desk = new_desk()
            self.values[DESK] = desk
        if self.positions_before is None:
            self.positions_before = positions(desk)
        return desk

    def left_message(self, left_message_id: str) -> LeftMessageRecord | None:
        return as_record(LeftMessageRecord, self.get(left_key(left_message_id)))

    def legacy_inbox(self) -> LegacyInbox | None:
        return as_record(LegacyInbox, self.get(LEGACY_INBOX))

    def emit(self, conversation_id: str, kind: str, payload: dict[str, Any]) -> ConversationEvent:
        record = self.conversation(conversation_id)
        record["seq"] += 1
        event = ConversationEvent(conversation_id, record["seq"], kind, payload)
        self.events.setdefault(conversation_id, []).append(event)
        self.put(conversation_key(conversation_id), record)
        return event

    @property
    def changed(self) -> bool:
        return bool(
            self.written or self.events or self.drop_logs or self.inbox_add or self.inbox_replied or self.inbox_remove
        )

    def commit(self) -> Commit:
        return Commit(
            expected=dict(self.versions),
            writes={key: self.values[key] for key in self.written},
            events={cid: [(e.seq, e.to_json()) for e in found] for cid, found in self.events.items()},
            drop_logs=list(self.drop_logs),
            needs_room=self.needs_room,
            inbox_add=list(self.inbox_add),
            inbox_replied=list(self.inbox_replied),
            inbox_remove=list(self.inbox_remove),
        )


def positions(desk: DeskRecord) -> dict[str, int]:
    """Each queued conversation's place in line, from 1."""
    return {entry["conversation_id"]: index + 1 for index, entry in enumerate(desk["queue"])}


def merge_history(
    chat_entries: list[dict[str, Any]], exchange_index: dict[str, int], handoff: list[HandoffMessageRecord]
) -> list[dict[str, Any]]:
    """The history with the hand-off messages in place (docs/protocol.md, "History").

    `exchange_index`: each chat entry's message id → the index of its exchange among all the
    conversation's exchanges. A hand-off message sent when the conversation had k exchanges
    goes before the first chat entry of an exchange at index ≥ k.
    """
    merged: list[dict[str, Any]] = []
    pending = list(handoff)
    for entry in chat_entries:
        index = exchange_index.get(entry["message_id"], 0)
        while pending and pending[0]["after_exchanges"] <= index:
            merged.append(history_entry(pending.pop(0)))
        merged.append(entry)
    merged.extend(history_entry(message) for message in pending)
    return merged


def history_entry(message: HandoffMessageRecord) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "message_id": message["message_id"],
        "role": message["role"],
        "text": message["text"],
        "state": "completed",
    }
    if message["role"] == "agent":
        entry["agent"] = message["agent"]
    if message.get("attachments"):  # files sent to the person (docs/protocol.md, "Hand-off to a person")
        entry["attachments"] = message["attachments"]
    return entry


def exchange_indexes(chat_store: Store, conversation_id: str) -> dict[str, int]:
    """Every user and assistant message id of the conversation → its exchange's index."""
    found: dict[str, int] = {}
    for index, exchange in enumerate(chat_store.exchanges(conversation_id)):
        found[exchange.user_message_id] = index
        found[exchange.assistant_message_id] = index
    return found


def _nobody() -> bool:
    return False


def _no_files(_conversation_id: str, _sent: tuple[SentAttachment, ...]) -> list[dict[str, Any]]:
    return []


class HandoffService:
    """Hand-off to a person; every dependency is passed in (widget_server/services.py).

    `has_agents`: whether the agents file lists anyone (HANDOFF=auto). `on_left_message` and
    `on_left_reply`: the mail (widget_server/agents/mail.py), called after the commit, never
    inside it. `stopping`: set once this worker is stopping, so streams end resumably (the
    chat's own). `turn_attachments`: a turn's files as the history lists them, so the
    console's transcript shows what the visitor sent with each question.
    """

    def __init__(
        self,
        store: HandoffStore,
        chat_store: Store,
        settings: Settings,
        metrics: Metrics = NO_METRICS,
        *,
        now: Callable[[], float] = time.time,
        has_agents: Callable[[], bool] = _nobody,
        on_left_message: Callable[[LeftMessageRecord], None] | None = None,
        on_left_reply: Callable[[RepliedLeftMessage, LeftReply], None] | None = None,
        stopping: threading.Event | None = None,
        turn_attachments: Callable[[str, tuple[SentAttachment, ...]], list[dict[str, Any]]] = _no_files,
        webhooks: Publisher = NO_WEBHOOKS,
        dashboard: EventPublisher = NO_EVENTS,
    ) -> None:
        self.store = store
        # Webhooks (widget_server/webhooks/): each transition queued after its commit, with the
        # metrics (`tx.after`), so a transaction run again publishes once.
        self.webhooks = webhooks
        # The owner dashboard's counts (widget_server/dashboard/), told after each commit too.
        self.dashboard = dashboard
        self.chat_store = chat_store
        self.settings = settings
        # Opening hours (hours.py) are judged on `now`, Unix seconds: a test gives a clock it
        # sets (tests/test_handoff_hours.py) instead of waiting for a Monday.
        self.now = now
        self.hours = OpeningHours(settings.handoff.hours, settings.handoff.timezone)
        self.metrics = HandoffMetrics(metrics)
        self.app_metrics = metrics
        self.has_agents = has_agents
        self.on_left_message = on_left_message
        self.on_left_reply = on_left_reply
        self.stopping = stopping if stopping is not None else threading.Event()
        self.turn_attachments = turn_attachments
        self._housekept_at = 0.0

    # -- availability --------------------------------------------------------

    def enabled(self) -> bool:
        mode = self.settings.handoff.mode
        if mode == "auto":
            return bool(self.has_agents())
        return mode == "on"

    def present_agents(self) -> list[str]:
        horizon = time.time() - self.settings.handoff.agent_presence_seconds
        return sorted(name for name, seen in self.store.presence().items() if seen >= horizon)

    def available(self) -> bool:
        return self.enabled() and bool(self.present_agents())

    def agent_seen(self, agent_name: str) -> None:
        self.store.seen(agent_name, time.time())

    # -- transactions ----------------------------------------------------------

    def transact(self, change: Callable[[_Transaction], ResultT]) -> ResultT:
        """One transaction on the hand-off store, for a module beside this one that keeps its
        records in the conversation's (handoff/satisfaction.py): the same optimistic commit."""
        return self._transact(change)

    def _transact(self, change: Callable[[_Transaction], ResultT]) -> ResultT:
        for attempt in range(MAX_ATTEMPTS):
            tx = _Transaction(self.store)
            result = change(tx)
            if not tx.changed:
                return result
            self._announce_positions(tx)
            try:
                committed = self.store.commit(tx.commit())
            except HandoffStoreFull as full:
                log.warning("hand-off refused: %s", full)
                self.metrics.refused("store_full")
                raise HANDOFF_STORE_FULL(
                    "The hand-off desk is full right now. Try again in a few minutes, or keep asking the assistant.",
                    retry_after=60,
                ) from None
            if committed:
                for hook in tx.after:
                    hook()
                return result
            # Another worker's commit changed what this one read: run it again on fresh
            # records, after a short random pause so racing transactions spread out.
            time.sleep(random.uniform(0, 0.002 * min(attempt + 1, 10)))
        raise HANDOFF_BUSY("The hand-off desk is busy with other changes. Try again in a moment.", retry_after=1)

    def _announce_positions(self, tx: _Transaction) -> None:
        """Every queued conversation whose place in line this transaction changed gets a
        `handoff.queued` with its new position (and only one)."""
        if tx.positions_before is None or DESK not in tx.written:
            return
        desk = tx.desk()
        moved = {
            conversation_id: position
            for conversation_id, position in positions(desk).items()
            if tx.positions_before.get(conversation_id) != position
            and not any(e.type == ev.QUEUED for e in tx.events.get(conversation_id, []))
        }
        # Up to HANDOFF_QUEUE_MAX records: read in one go, not one round trip each
        # (bench/handoff_desk.py; docs/performance.md, "Hand-off desk").
        tx.prefetch([conversation_key(conversation_id) for conversation_id in moved])
        for conversation_id, position in moved.items():
            tx.emit(conversation_id, ev.QUEUED, {"position": position})

    # -- the visitor's side ----------------------------------------------------

    @staticmethod
    def _known_request(record: HandoffRecord, request_id: str, fingerprint: str) -> dict[str, Any] | None:
        known = record["requests"].get(request_id)
        if known is None:
            return None
        if known["fingerprint"] != fingerprint:
            raise REQUEST_ID_CONFLICT(
                "This request_id was already used with a different request. "
                "Generate a new request_id for a new one; reuse one only to retry the same request.",
            )
        return known["result"]

    def _current(self, tx: _Transaction, conversation_id: str) -> dict[str, Any]:
        record = tx.conversation(conversation_id)
        if record["state"] == ev.STATE_QUEUED:
            return {"state": ev.STATE_QUEUED, "position": positions(tx.desk()).get(conversation_id, 1)}
        if record["state"] == ev.STATE_ASSIGNED:
            return {"state": ev.STATE_ASSIGNED, "agent": record["agent_display"]}
        return {"state": record["state"]}

    def request(self, conversation_id: str, request_id: str) -> dict[str, Any]:
        """Ask for a person: queued (or already assigned), or unavailable. Idempotent on
        `request_id`; while a hand-off is queued or assigned, any request says where it is.

        The answer's `seq` is the conversation log's newest seq as of this transaction (0 when
        empty), its own event included: a reader of the event stream starts after it, so it
        never replays an earlier hand-off's ending (static/widget/handoff.js), and misses
        nothing later (an agent's claim right after is seq + 1). A retry of a finished
        request gets the seq of its first answer, so it reads what happened since."""
        enabled = self.enabled()
        present = bool(self.present_agents()) if enabled else False
        # Outside HANDOFF_HOURS a new request is `closed`, whoever is present; a hand-off already
        # queued or assigned goes on past closing time (docs/protocol.md, "Opening hours").
        opens_at = self.hours.closed_until(self.now()) if enabled else None
        fingerprint = _fingerprint("handoff")
        visitor = self._known_visitor(conversation_id)

        def change(tx: _Transaction) -> dict[str, Any]:
            record = tx.conversation(conversation_id)
            if visitor is not None:
                # Whatever the outcome, the record is a known visitor's: it lives as long as
                # their conversation (IDENTIFIED_RETENTION; handoff/redis_store.py).
                record["visitor"] = visitor
            known = self._known_request(record, request_id, fingerprint)
            if record["state"] in ev.ACTIVE_STATES:
                result = {**self._current(tx, conversation_id), "seq": record["seq"]}
                if known is None:
                    record["requests"][request_id] = KnownRequest(fingerprint=fingerprint, result=result)
                    tx.put(conversation_key(conversation_id), record)
                return result
            if known is not None:
                return known
            now = time.time()
            tx.needs_room = True  # a new outcome: refused (503) when the memory store is full
            # HANDOFF_QUEUE_MAX bounds the queue, and so the desk record (docs/security.md, "Memory").
            busy = enabled and present and len(tx.desk()["queue"]) >= self.settings.handoff.queue_max
            if not enabled or opens_at is not None or not present or busy:
                reason = (
                    "disabled"
                    if not enabled
                    else "closed"
                    if opens_at is not None
                    else "no_agents"
                    if not present
                    else "busy"
                )
                outcome: dict[str, Any] = {"reason": reason}
                if opens_at is not None:
                    outcome["opens_at"] = opens_at.isoformat(timespec="seconds")  # with the zone's offset
                result = {"state": "unavailable", **outcome}
                tx.emit(conversation_id, ev.UNAVAILABLE, outcome)
                tx.after += [lambda: self.metrics.requested("unavailable"), lambda: self.metrics.unavailable(reason)]
            else:
                desk = tx.desk()
                desk["queue"].append(QueueEntry(conversation_id=conversation_id, since=now))
                tx.put(DESK, desk)
                record["state"], record["agent"], record["agent_display"] = ev.STATE_QUEUED, "", ""
                record["queued_at"], record["replied"] = now, False
                # A new hand-off: the one before can no longer be rated (handoff/satisfaction.py).
                record.pop("rateable", None)
                if visitor is not None:
                    record["visitor"] = visitor
                else:
                    record.pop("visitor", None)
                position = len(desk["queue"])
                tx.emit(conversation_id, ev.QUEUED, {"position": position})
                result = {"state": ev.STATE_QUEUED, "position": position}
                tx.after.append(lambda: self.metrics.requested("queued"))
                tx.after.append(lambda: self.webhooks.publish(conversation_id, HandoffQueued(position=position)))
                tx.after.append(lambda: self.dashboard.publish("handoff.queued", conversation_id, {}))
            result["seq"] = record["seq"]  # after this request's own event (emit counted it)
            record["requests"][request_id] = KnownRequest(fingerprint=fingerprint, result=result)
            tx.put(conversation_key(conversation_id), record)
            return result

        return self._transact(change)

    def _known_visitor(self, conversation_id: str) -> KnownVisitor | None:
        """Who the conversation's identity token named (widget_server/identity/), for the
        agents; None for an anonymous conversation."""
        conversation = self.chat_store.get_conversation(conversation_id)
        if conversation is None or not conversation.subject:
            return None
        return KnownVisitor(subject=conversation.subject, name=conversation.name, email=conversation.email)

    def _leave(self, tx: _Transaction, conversation_id: str, reason: str) -> None:
        """End the conversation's hand-off (queued or assigned) with `reason`. Ended by its
        person (`ended`, `returned`), it becomes the one the visitor may rate, identified by its
        `handoff.ended` event's seq (handoff/satisfaction.py)."""
        record = tx.conversation(conversation_id)
        desk = tx.desk()
        desk["queue"] = [entry for entry in desk["queue"] if entry["conversation_id"] != conversation_id]
        desk["assigned"].pop(conversation_id, None)
        tx.put(DESK, desk)
        agent, agent_name = record["agent_display"], record["agent"]
        record["state"], record["agent"], record["agent_display"] = ev.STATE_ENDED, "", ""
        ended = tx.emit(conversation_id, ev.ENDED, {"agent": agent, "reason": reason})
        tx.after.append(lambda: self.webhooks.publish(conversation_id, HandoffEnded(agent=agent, reason=reason)))
        tx.after.append(lambda: self.dashboard.publish("handoff.ended", conversation_id, {"reason": reason}))
        if reason in ev.AGENT_END_REASONS:
            record["rateable"] = RateableHandoff(handoff=ended.seq, agent=agent_name, agent_display=agent)
        else:
            record.pop("rateable", None)

    def cancel(self, conversation_id: str) -> None:
        """The visitor leaves the queue, or ends the hand-off: `handoff.ended`, reason `visitor`.
        Nothing happens when no hand-off is queued or assigned."""

        def change(tx: _Transaction) -> None:
            if tx.conversation(conversation_id)["state"] in ev.ACTIVE_STATES:
                self._leave(tx, conversation_id, "visitor")

        self._transact(change)

    def check_not_active(self, conversation_id: str) -> None:
        """409 `handoff_active` while a person is asked for or handles the conversation: the
        visitor's messages then go to the person (…/handoff/messages), never to the backend."""
        record = self._stored_record(conversation_id)
        if record is not None and record["state"] in ev.ACTIVE_STATES:
            raise HANDOFF_ACTIVE(
                "A person is handling this conversation: send messages to its hand-off "
                "(POST …/handoff/messages) until the hand-off ends.",
                details={"state": record["state"]},
            )

    def visitor_message(
        self, conversation_id: str, request_id: str, text: str, files: list[dict[str, Any]] | None = None
    ) -> dict[str, Any]:
        """A message to the person: only while queued or assigned; idempotent on request_id.
        `files`: the attachments sent with it, as the history lists them (TurnAttachment.to_json),
        checked by the caller to be this conversation's; its text may then be ""."""
        text = clean_text(text)
        files = files or []
        # A message without files keeps the fingerprint it always had (a retry across an upgrade).
        fingerprint = _fingerprint(
            "visitor",
            text=text,
            **({"attachments": [[f["attachment_id"], f.get("description", "")] for f in files]} if files else {}),
        )
        after_exchanges = len(self.chat_store.exchanges(conversation_id))

        def change(tx: _Transaction) -> dict[str, Any]:
            record = tx.conversation(conversation_id)
            known = self._known_request(record, request_id, fingerprint)
            if known is not None:
                return known
            if record["state"] not in ev.ACTIVE_STATES:
                raise HANDOFF_NOT_ACTIVE(
                    "No person is asked for in this conversation: request a hand-off first, "
                    "or send the message to the assistant.",
                )
            tx.needs_room = True  # a new message: refused (503) when the memory store is full
            message = HandoffMessageRecord(
                message_id=new_id(VISITOR_MESSAGE_PREFIX),
                role="visitor",
                text=text,
                sha256=text_sha256(text),
                after_exchanges=after_exchanges,
            )
            event: dict[str, Any] = {"message_id": message["message_id"], "text": text, "sha256": message["sha256"]}
            if files:
                message["attachments"] = event["attachments"] = files
            record["messages"].append(message)
            tx.emit(conversation_id, ev.VISITOR_MESSAGE, event)
            result = {"message_id": message["message_id"], "sha256": message["sha256"]}
            record["requests"][request_id] = KnownRequest(fingerprint=fingerprint, result=result)
            return result

        return self._transact(change)

    def leave_message(self, conversation_id: str, request_id: str, email: str | None, text: str) -> dict[str, Any]:
        """A message for the site's team when nobody is there: a record of its own in the inbox;
        idempotent. Refused while a hand-off is queued or assigned (409 `handoff_active`: a
        person is there, and the message goes to them, docs/protocol.md "Hand-off to a person")
        and beyond HANDOFF_LEFT_MESSAGES_MAX unanswered in the conversation (409
        `too_many_left_messages`). Only the first unanswered one mails the site's owner: the
        inbox shows the rest (docs/agents.md, "Email")."""
        text = clean_text(text)
        fingerprint = _fingerprint("left", text=text, email=email or "")
        most = self.settings.handoff.left_messages_max
        visitor = self._known_visitor(conversation_id)
        to_mail: list[LeftMessageRecord] = []

        def change(tx: _Transaction) -> dict[str, Any]:
            to_mail.clear()
            record = tx.conversation(conversation_id)
            known = self._known_request(record, request_id, fingerprint)
            if known is not None:
                return known
            if record["state"] in ev.ACTIVE_STATES:
                raise HANDOFF_ACTIVE(
                    "A person is handling this conversation, or it waits for one: send the message "
                    "to its hand-off (POST …/handoff/messages) instead of leaving one.",
                    details={"state": record["state"]},
                )
            # The conversation's left messages still kept (the inbox lets old ones go).
            earlier = record.get("left", [])
            tx.prefetch([left_key(left_id) for left_id in earlier])
            kept = [entry for entry in map(tx.left_message, earlier) if entry is not None]
            waiting = sum(1 for entry in kept if not entry["replied"])
            if waiting >= most:
                raise TOO_MANY_LEFT_MESSAGES(
                    f"This conversation already has {waiting} messages waiting for the team's reply. "
                    "They will answer here or by email; you can leave another once they have.",
                    details={"waiting": waiting, "limit": most},
                )
            tx.needs_room = True  # a new left message: refused (503) when the memory store is full
            now = time.time()
            left_message_id = new_id(LEFT_MESSAGE_PREFIX)
            entry = LeftMessageRecord(
                left_message_id=left_message_id,
                conversation_id=conversation_id,
                email=email,
                text=text,
                created_at=iso(now),
                replied=False,
            )
            if visitor is not None:
                # Its owner's: kept as long as their conversation (docs/privacy.md).
                entry["visitor"] = visitor
                record["visitor"] = visitor
            tx.put(left_key(left_message_id), entry)
            tx.inbox_add.append((left_message_id, inbox_score(now)))
            record["left"] = [*(e["left_message_id"] for e in kept), left_message_id]
            result = {"left_message_id": left_message_id}
            record["requests"][request_id] = KnownRequest(fingerprint=fingerprint, result=result)
            tx.put(conversation_key(conversation_id), record)
            if waiting == 0:
                to_mail.append(entry)
            tx.after.append(self.metrics.message_left)
            tx.after.append(
                lambda: self.webhooks.publish(
                    conversation_id, MessageLeft(left_message_id=left_message_id, email=email, text=text)
                )
            )
            tx.after.append(lambda: self.dashboard.publish("message.left", conversation_id, {}))
            return result

        result: dict[str, Any] = self._transact(change)
        if to_mail and self.on_left_message is not None:
            self._call_hook("on_left_message", self.on_left_message, LeftMessageRecord(**to_mail[0]))
        return result

    @staticmethod
    def _call_hook(name: str, hook: Callable[..., None], *args: Any) -> None:
        # A hook (the mail) failing must not fail the request: what it was about is stored.
        try:
            hook(*args)
        except Exception:
            log.exception("hand-off hook %s failed", name)

    # -- the agents' side --------------------------------------------------------

    def _last_visitor_message(self, record: HandoffRecord | None) -> str | None:
        if record is None:
            return None
        for message in reversed(record["messages"]):
            if message["role"] == "visitor":
                return message["text"]
        return None

    def queue(self) -> list[dict[str, Any]]:
        """The conversations waiting for a person, oldest first."""
        desk = self._stored_desk()
        records = self._stored_records([entry["conversation_id"] for entry in desk["queue"]])
        now = time.time()
        return [
            {
                "conversation_id": entry["conversation_id"],
                "waiting_since": iso(entry["since"]),
                "waiting_seconds": max(0, int(now - entry["since"])),
                "position": index + 1,
                "last_visitor_message": self._last_visitor_message(records[entry["conversation_id"]]),
                "visitor": _visitor_of(records[entry["conversation_id"]]),
            }
            for index, entry in enumerate(desk["queue"])
        ]

    def claimed_by(self, agent_name: str) -> list[dict[str, Any]]:
        """The conversations this agent holds, oldest claim first."""
        desk = self._stored_desk()
        held = sorted(
            ((cid, claim) for cid, claim in desk["assigned"].items() if claim["agent"] == agent_name),
            key=lambda item: item[1]["since"],
        )
        records = self._stored_records([cid for cid, _ in held])
        return [
            {
                "conversation_id": cid,
                "claimed_at": iso(claim["since"]),
                "last_visitor_message": self._last_visitor_message(records[cid]),
                "visitor": _visitor_of(records[cid]),
            }
            for cid, claim in held
        ]

    def claim(self, conversation_id: str, agent_name: str, display_name: str) -> dict[str, Any]:
        """Take a waiting conversation: exactly once (the store's compare-and-set). Claiming
        again one's own is answered the same; another agent's: 409 `already_claimed`."""
        self.agent_seen(agent_name)  # claiming is being present

        def change(tx: _Transaction) -> dict[str, Any]:
            desk = tx.desk()
            holder = desk["assigned"].get(conversation_id)
            if holder is not None:
                if holder["agent"] == agent_name:
                    return {"conversation_id": conversation_id, "agent": holder["display"]}
                raise ALREADY_CLAIMED(
                    f"Already taken by {holder['display']}.",
                    details={"agent": holder["display"]},
                )
            if conversation_id not in positions(desk):
                raise HANDOFF_NOT_ACTIVE("This conversation is not waiting for a person.")
            now = time.time()
            desk["queue"] = [entry for entry in desk["queue"] if entry["conversation_id"] != conversation_id]
            desk["assigned"][conversation_id] = Claim(agent=agent_name, display=display_name, since=now)
            tx.put(DESK, desk)
            record = tx.conversation(conversation_id)
            waited = now - record["queued_at"]
            record["state"], record["agent"], record["agent_display"] = ev.STATE_ASSIGNED, agent_name, display_name
            record["assigned_at"] = now
            tx.emit(conversation_id, ev.ASSIGNED, {"agent": display_name})
            tx.after.append(lambda: self.webhooks.publish(conversation_id, HandoffAssigned(agent=display_name)))
            tx.after.append(lambda: self.metrics.time_in_queue(waited))
            tx.after.append(
                lambda: self.dashboard.publish("handoff.assigned", conversation_id, {"waited_ms": waited * 1000})
            )
            return {"conversation_id": conversation_id, "agent": display_name}

        return self._transact(change)

    @staticmethod
    def _authorize_agent_write(record: HandoffRecord, agent_name: str, *, needs_claim: bool) -> None:
        """The one rule for every agent's write into a conversation, checked inside the write's
        transaction (docs/security.md, "Who can reach what"): while a hand-off is assigned, only
        the agent who holds it writes there (403 `not_your_conversation`); while it is queued,
        nobody does before claiming it (409: `handoff_not_active` for a write that needs a claim,
        `handoff_active` for a reply to a left message, whose visitor now waits for a person).
        A write that `needs_claim` (a message, typing, an end) also needs one when no hand-off is
        going on; a reply to a left message does not (nobody is there: that is what it is for).
        tests/security/test_agent_ownership.py tries every agent route against it."""
        state = record["state"]
        if state == ev.STATE_ASSIGNED and record["agent"] != agent_name:
            raise NOT_YOUR_CONVERSATION(
                f"{record['agent_display']} is handling this conversation, not you.",
                details={"agent": record["agent_display"]},
            )
        if state == ev.STATE_ASSIGNED:
            return
        if needs_claim:
            raise HANDOFF_NOT_ACTIVE("No person is handling this conversation now.")
        if state == ev.STATE_QUEUED:
            raise HANDOFF_ACTIVE(
                "This visitor is waiting in the queue again: claim the conversation and answer them there.",
                details={"state": state},
            )

    def agent_message(self, conversation_id: str, agent_name: str, request_id: str, text: str) -> dict[str, Any]:
        """The claiming agent's message to the visitor; idempotent on request_id."""
        # Lone surrogates have no UTF-8 form (they would fail the store and the stream), control
        # characters would reach the visitor's screen and the site's logs: cleaned as every text
        # the service stores (chat.api.user_text does the same; docs/protocol.md, "Conventions").
        text = clean_text(text)
        fingerprint = _fingerprint("agent", text=text, agent=agent_name)
        after_exchanges = len(self.chat_store.exchanges(conversation_id))

        def change(tx: _Transaction) -> dict[str, Any]:
            record = tx.conversation(conversation_id)
            known = self._known_request(record, request_id, fingerprint)
            if known is not None:
                return known
            self._authorize_agent_write(record, agent_name, needs_claim=True)
            tx.needs_room = True  # a new message: refused (503) when the memory store is full
            result = self._append_agent_message(tx, conversation_id, record["agent_display"], text, after_exchanges)
            if not record["replied"]:
                record["replied"] = True
                waited = time.time() - record["queued_at"]
                tx.after.append(lambda: self.metrics.first_reply(waited))
            record["requests"][request_id] = KnownRequest(fingerprint=fingerprint, result=result)
            return result

        return self._transact(change)

    def _append_agent_message(
        self, tx: _Transaction, conversation_id: str, display_name: str, text: str, after_exchanges: int
    ) -> dict[str, Any]:
        record = tx.conversation(conversation_id)
        message = HandoffMessageRecord(
            message_id=new_id(AGENT_MESSAGE_PREFIX),
            role="agent",
            text=text,
            sha256=text_sha256(text),
            agent=display_name,
            after_exchanges=after_exchanges,
        )
        record["messages"].append(message)
        tx.emit(
            conversation_id,
            ev.AGENT_MESSAGE,
            {"message_id": message["message_id"], "text": text, "sha256": message["sha256"], "agent": display_name},
        )
        return {"message_id": message["message_id"], "sha256": message["sha256"]}

    def typing(self, conversation_id: str, agent_name: str) -> None:
        """`agent.typing`, at most every TYPING_EVERY_SECONDS (the widget shows it, never says it)."""

        def change(tx: _Transaction) -> None:
            record = tx.conversation(conversation_id)
            self._authorize_agent_write(record, agent_name, needs_claim=True)
            now = time.time()
            if now - record["typing_at"] < TYPING_EVERY_SECONDS:
                return
            record["typing_at"] = now
            tx.emit(conversation_id, ev.AGENT_TYPING, {"agent": record["agent_display"]})

        self._transact(change)

    def end(self, conversation_id: str, agent_name: str, reason: str = "ended") -> None:
        """The claiming agent ends the hand-off (`ended`) or returns the visitor to the
        assistant (`returned`); the visitor's next messages go to the backend again."""
        if reason not in ev.AGENT_END_REASONS:
            raise INVALID_REASON("reason must be 'ended' or 'returned'.")

        def change(tx: _Transaction) -> None:
            self._authorize_agent_write(tx.conversation(conversation_id), agent_name, needs_claim=True)
            self._leave(tx, conversation_id, reason)

        self._transact(change)

    def release_lapsed(self) -> int:
        """Claims whose agent has not been seen for AGENT_GRACE_SECONDS go back to the queue,
        in their original place (by when they were queued): the visitor is told with
        `handoff.ended` (reason `timeout`) and then `handoff.queued`. Then queued visitors gone
        for HANDOFF_QUEUE_IDLE_SECONDS leave the queue (`_release_idle`). Returns how many
        conversations either moved."""
        horizon = time.time() - self.settings.handoff.agent_grace_seconds
        presence = self.store.presence()
        desk = self._stored_desk()
        lapsed = [
            cid for cid, claim in desk["assigned"].items() if presence.get(claim["agent"], claim["since"]) < horizon
        ]
        released = 0
        for conversation_id in lapsed:

            def change(tx: _Transaction, conversation_id: str = conversation_id) -> bool:
                desk = tx.desk()
                claim = desk["assigned"].get(conversation_id)
                if claim is None or self.store.presence().get(claim["agent"], claim["since"]) >= horizon:
                    return False  # ended, or released by another worker, or the agent is back
                record = tx.conversation(conversation_id)
                self._leave(tx, conversation_id, "timeout")
                entry = QueueEntry(conversation_id=conversation_id, since=record["queued_at"] or time.time())
                queue = [*tx.desk()["queue"], entry]
                queue.sort(key=lambda item: item["since"])
                desk["queue"] = queue
                record["state"], record["replied"] = ev.STATE_QUEUED, False
                tx.put(DESK, desk)
                # Back in line, in its old place (its `handoff.queued` event comes from
                # _announce_positions, the place only known once the queue is sorted).
                place = queue.index(entry) + 1
                tx.after.append(lambda: self.webhooks.publish(conversation_id, HandoffQueued(position=place)))
                return True

            if self._transact(change):
                released += 1
        return released + self._release_idle()

    def _release_idle(self) -> int:
        """Queued conversations whose visitor has had no conversation stream open for
        HANDOFF_QUEUE_IDLE_SECONDS (since it was last open, or since they were queued when it
        never was) leave the queue: `handoff.ended` with reason `idle`, and those behind move up
        (`handoff.queued`), as when a visitor leaves it (`cancel`). So requests nobody waits on,
        a script's or a closed tab's, cannot hold the HANDOFF_QUEUE_MAX places and turn real
        visitors away as `busy` (docs/security.md, "Memory"). Returns how many left.

        All of them in one transaction, which re-checks each (still queued, still idle: another
        worker may have let it go, the visitor may be back): one desk rewrite and one position
        event per visitor who moved up, not one per visitor per leaver. Also forgets the visitor
        marks of hand-offs no longer queued or assigned, which keeps the store's marks to about
        the desk's size (store.py). Housekeeping: a desk too busy to commit waits for the next
        call rather than failing the queue poll or the stream that made this one."""
        idle = self.settings.handoff.queue_idle_seconds
        if idle <= 0:
            return 0
        marks = self.store.visitors_seen()  # read before the desk: a mark made after is kept
        desk = self._stored_desk()
        going_on = positions(desk).keys() | desk["assigned"].keys()
        over = [conversation_id for conversation_id in marks if conversation_id not in going_on]
        if over:
            self.store.forget_visitors(over)

        def gone(entries: list[QueueEntry], seen: dict[str, float]) -> list[str]:
            horizon = time.time() - idle
            return [
                entry["conversation_id"]
                for entry in entries
                if max(seen.get(entry["conversation_id"], 0.0), entry["since"]) < horizon
            ]

        if not gone(desk["queue"], marks):
            return 0

        def change(tx: _Transaction) -> int:
            queue = tx.desk()["queue"]
            leaving = gone(queue, self.store.visitors_seen([entry["conversation_id"] for entry in queue]))
            tx.prefetch([conversation_key(conversation_id) for conversation_id in leaving])
            for conversation_id in leaving:
                self._leave(tx, conversation_id, "idle")
            tx.after.append(lambda: self.store.forget_visitors(leaving))
            return len(leaving)

        try:
            left: int = self._transact(change)
        except ApiError as busy:
            log.warning("idle visitors stay queued until the next look: %s", busy.message)
            return 0
        return left

    def inbox(self) -> list[dict[str, Any]]:
        """The newest left messages, newest first (one page of the most a page holds)."""
        found: list[dict[str, Any]] = self.inbox_page(INBOX_PAGE_MAX)["messages"]
        return found

    def inbox_page(self, limit: int, before: int | None = None) -> dict[str, Any]:
        """Up to `limit` left messages older than the cursor `before` (None: the newest), newest
        first; `next_cursor`, where the next page starts (None after the oldest); `unreplied`,
        how many no agent has replied to; `expired`, how many the inbox has let go (age or
        HANDOFF_INBOX_MAX: docs/agents.md, "The inbox")."""
        self._move_legacy_inbox()
        page = self.store.inbox_page(limit, before)
        keys = [left_key(left_message_id) for _, left_message_id in page.entries]
        records = self.store.load(keys) if keys else {}
        # As the agents' inbox has always listed them: a known visitor's `visitor`, kept for
        # retention (docs/privacy.md), is not part of it.
        messages = [
            LeftMessageRecord(**{name: item for name, item in value.items() if name != "visitor"})  # type: ignore[typeddict-item]
            for key in keys
            if (value := as_record(LeftMessageRecord, records[key][1])) is not None
        ]
        full = limit > 0 and len(page.entries) == limit
        return {
            "messages": messages,
            "next_cursor": str(page.entries[-1][0]) if full else None,
            "unreplied": page.unreplied,
            "expired": page.expired,
        }

    def _move_legacy_inbox(self) -> None:
        """An inbox kept as one record (store.py, LEGACY_INBOX) becomes records of their own,
        in one transaction, once: an upgrade loses no left message."""
        if self.store.load([LEGACY_INBOX])[LEGACY_INBOX][1] is None:
            return

        def change(tx: _Transaction) -> None:
            legacy = tx.legacy_inbox()
            if legacy is None:
                return  # another worker moved it
            entries = legacy.get("messages", [])
            tx.prefetch([conversation_key(entry["conversation_id"]) for entry in entries])
            for entry in entries:
                left_message_id = entry["left_message_id"]
                tx.put(left_key(left_message_id), entry)
                created = datetime.strptime(entry["created_at"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
                tx.inbox_add.append((left_message_id, inbox_score(created.timestamp())))
                if entry.get("replied"):
                    tx.inbox_replied.append(left_message_id)
                record = tx.conversation(entry["conversation_id"])
                record["left"] = [*record.get("left", []), left_message_id]
                tx.put(conversation_key(entry["conversation_id"]), record)
            tx.put(LEGACY_INBOX, None)

        self._transact(change)

    def reply_to_left(
        self, left_message_id: str, agent_name: str, display_name: str, request_id: str, text: str
    ) -> dict[str, Any]:
        """An agent's reply to a left message: an `agent.message` in that conversation (the
        visitor sees it if they come back) and the `on_left_reply` hook (the mail). The agent
        writes into the conversation, so the rule of every agent write holds
        (`_authorize_agent_write`): not while another agent holds it, nor while it waits."""
        text = clean_text(text)
        fingerprint = _fingerprint("reply", text=text, left=left_message_id)
        replied: list[RepliedLeftMessage] = []

        def change(tx: _Transaction) -> dict[str, Any]:
            replied.clear()
            entry = tx.left_message(left_message_id)
            if entry is None:
                raise NOT_FOUND("No such left message.")
            conversation_id = entry["conversation_id"]
            record = tx.conversation(conversation_id)
            known = self._known_request(record, request_id, fingerprint)
            if known is not None:
                return known
            self._authorize_agent_write(record, agent_name, needs_claim=False)
            after_exchanges = len(self.chat_store.exchanges(conversation_id))
            tx.needs_room = True  # a new message: refused (503) when the memory store is full
            result = self._append_agent_message(tx, conversation_id, display_name, text, after_exchanges)
            record["requests"][request_id] = KnownRequest(fingerprint=fingerprint, result=result)
            entry["replied"] = True
            tx.put(left_key(left_message_id), entry)
            tx.inbox_replied.append(left_message_id)
            reply = LeftReply(message_id=result["message_id"], sha256=result["sha256"], text=text, agent=display_name)
            replied.append(RepliedLeftMessage(**entry, reply=reply))
            return result

        result: dict[str, Any] = self._transact(change)
        if replied and self.on_left_reply is not None:
            self._call_hook("on_left_reply", self.on_left_reply, replied[0], replied[0]["reply"])
        return result

    # -- reading -------------------------------------------------------------------

    def stored_record(self, conversation_id: str) -> HandoffRecord | None:
        """The conversation's hand-off record as stored, or None (handoff/satisfaction.py)."""
        return self._stored_record(conversation_id)

    def _stored_record(self, conversation_id: str) -> HandoffRecord | None:
        key = conversation_key(conversation_id)
        return as_record(HandoffRecord, self.store.load([key])[key][1])

    def _record(self, conversation_id: str) -> HandoffRecord:
        return self._stored_record(conversation_id) or new_record()

    def _stored_records(self, conversation_ids: list[str]) -> dict[str, HandoffRecord | None]:
        """Each conversation's hand-off record (None: none), in one read."""
        keys = [conversation_key(conversation_id) for conversation_id in conversation_ids]
        found = self.store.load(keys) if keys else {}
        return {
            conversation_id: as_record(HandoffRecord, found[key][1])
            for conversation_id, key in zip(conversation_ids, keys, strict=True)
        }

    def _stored_desk(self) -> DeskRecord:
        return as_record(DeskRecord, self.store.load([DESK])[DESK][1]) or new_desk()

    def state(self, conversation_id: str, record: HandoffRecord | None = None) -> dict[str, Any]:
        record = self._record(conversation_id) if record is None else record
        body: dict[str, Any] = {"state": record["state"]}
        if record["state"] == ev.STATE_ASSIGNED:
            body["agent"] = record["agent_display"]
        elif record["state"] == ev.STATE_QUEUED:
            desk = self._stored_desk()
            body["position"] = positions(desk).get(conversation_id, 1)
        return body

    def last_seq(self, conversation_id: str) -> int:
        return self._record(conversation_id)["seq"]

    def messages(self, conversation_id: str) -> list[HandoffMessageRecord]:
        """The hand-off messages, in order (as stored, with `after_exchanges`)."""
        return self._record(conversation_id)["messages"]

    def history(
        self, conversation_id: str, chat_entries: list[dict[str, Any]], record: HandoffRecord | None = None
    ) -> list[dict[str, Any]]:
        """The chat history (ChatService.history) with the hand-off messages in place (those of
        `record`, the hand-off record already read, when given)."""
        handoff = self.messages(conversation_id) if record is None else record["messages"]
        if not handoff:
            return chat_entries
        return merge_history(chat_entries, exchange_indexes(self.chat_store, conversation_id), handoff)

    def console_view(self, conversation_id: str) -> dict[str, Any]:
        """The console's conversation detail: the state, the transcript and `last_seq`, the seq of
        the newest event they include. All three come from one read of the hand-off record (a
        commit changes its state, messages and seq together, store.py), so a stream read after
        `last_seq` holds exactly what came since: nothing twice, nothing missed (docs/agents.md,
        "Opening a conversation")."""
        record = self._record(conversation_id)
        return {
            **self.state(conversation_id, record),
            "messages": self.transcript(conversation_id, record),
            "last_seq": record["seq"],
            "visitor": _visitor_of(record),
            # The visitor's answers to "How was your conversation?" (handoff/satisfaction.py).
            "satisfaction": record.get("satisfaction", []),
        }

    def transcript(self, conversation_id: str, record: HandoffRecord | None = None) -> list[dict[str, Any]]:
        """For the console: completed turns, the visitor's messages and the agents', in order."""
        store = self.chat_store
        entries: list[dict[str, Any]] = []

        def state_of(message_id: str) -> Any:
            info = store.message(message_id)
            return info.state if info is not None else None

        for exchange, answer_state in listed_exchanges(store.exchanges(conversation_id), state_of):
            user: dict[str, Any] = {
                "message_id": exchange.user_message_id,
                "role": "user",
                "text": exchange.user_text,
                "state": "completed",
            }
            if exchange.attachments:  # as the visitor's history lists them (docs/agents.md)
                user["attachments"] = self.turn_attachments(conversation_id, exchange.attachments)
            if exchange.context:  # the host page's (docs/agents.md, "The page's context")
                user["context"] = dict(exchange.context)
            entries.append(user)
            info = store.message(exchange.assistant_message_id)
            text = info.text if info is not None else ""
            entries.append(
                {
                    "message_id": exchange.assistant_message_id,
                    "role": "assistant",
                    "text": text,
                    "state": answer_state.value,
                }
            )
        return self.history(conversation_id, entries, record)

    def snapshot(self, conversation_id: str) -> ConversationEvent:
        """`conversation.snapshot`: the whole hand-off as it is, at the newest event's seq."""
        record = self._record(conversation_id)
        payload: dict[str, Any] = {"state": record["state"]}
        if record["state"] == ev.STATE_ASSIGNED:
            payload["agent"] = record["agent_display"]
        elif record["state"] == ev.STATE_QUEUED:
            desk = self._stored_desk()
            payload["position"] = positions(desk).get(conversation_id, 1)
        messages = []
        for message in record["messages"]:
            item: dict[str, Any] = {
                "message_id": message["message_id"],
                "role": message["role"],
                "text": message["text"],
                "sha256": message["sha256"],
            }
            if message["role"] == "agent":
                item["agent"] = message["agent"]
            if message.get("attachments"):
                item["attachments"] = message["attachments"]
            messages.append(item)
        payload["messages"] = messages
        return ConversationEvent(conversation_id, record["seq"], ev.SNAPSHOT, payload)

    def read_events(self, conversation_id: str, after_seq: int, timeout: float) -> list[ConversationEvent]:
        """Events after `after_seq`, waiting up to `timeout` s for the first; a snapshot first
        (then what follows it) when the events right after `after_seq` were evicted."""
        found = self.store.read_events(conversation_id, after_seq, timeout)
        if found is None:
            return self._snapshot_and_after(conversation_id)
        return [ConversationEvent.from_json(raw) for _, raw in found]

    def _snapshot_and_after(self, conversation_id: str) -> list[ConversationEvent]:
        snapshot = self.snapshot(conversation_id)
        later = self.store.read_events(conversation_id, snapshot.seq, 0) or []
        return [snapshot, *(ConversationEvent.from_json(raw) for _, raw in later)]

    def check_resume_position(self, conversation_id: str, after_seq: int) -> None:
        last = self.last_seq(conversation_id)
        if after_seq > last:
            raise INVALID_LAST_EVENT_ID(
                f"Last-Event-ID names sequence {after_seq}, but this conversation's events have only reached {last}.",
            )

    def event_stream(
        self,
        conversation_id: str,
        after_seq: int,
        *,
        client_gone: Callable[[], bool] | None = None,
        visitor: bool = False,
    ) -> Iterator[bytes]:
        """The conversation's SSE stream from `after_seq`: `retry:` first, then every event
        (a snapshot where the log no longer reaches back), heartbeats while quiet.

        It ends once the reader has every event and no hand-off is queued or assigned (after
        `handoff.ended` or `handoff.unavailable`, as an answer's stream ends after its terminal
        event: no idle connection), when the reader leaves, when the conversation is deleted,
        and when this worker stops (then without an ending: the reader resumes).

        `visitor`: the visitor's own stream (handoff/api.py), not an agent's. While it is open
        the visitor counts as waiting (HANDOFF_QUEUE_IDLE_SECONDS, `_release_idle`): marked in
        the store when it opens and then every `_visitor_mark_seconds`, events or not; a mark
        is one small write beside the records, never a transaction."""
        source = ConversationSource(self, conversation_id, client_gone=client_gone, visitor=visitor)
        chat = self.settings.chat
        return follow_log(source, after_seq, retry_ms=chat.retry_ms, heartbeat_seconds=chat.heartbeat_seconds)

    def _visitor_mark_seconds(self) -> float | None:
        """How often an open visitor stream marks its visitor seen: every HOUSEKEEPING_SECONDS,
        or a quarter of HANDOFF_QUEUE_IDLE_SECONDS when that is shorter, so that no idle time
        takes a visitor whose stream is open for gone; None when idle visitors stay queued."""
        idle: float = self.settings.handoff.queue_idle_seconds
        return min(HOUSEKEEPING_SECONDS, idle / 4) if idle > 0 else None

    def _over_for(self, conversation_id: str, seq: int) -> bool:
        """Whether a reader at `seq` has every event of a hand-off that is not going on."""
        record = self._record(conversation_id)
        return record["state"] not in ev.ACTIVE_STATES and seq >= record["seq"]

    def _release_lapsed_now_and_then(self) -> None:
        """release_lapsed, at most every HOUSEKEEPING_SECONDS per process (the queue poll of
        the agents' console calls it too)."""
        now = time.monotonic()
        if now - self._housekept_at >= HOUSEKEEPING_SECONDS:
            self._housekept_at = now
            self.release_lapsed()

    # -- deleting a conversation -------------------------------------------------

    def left_messages(self, conversation_id: str) -> list[LeftMessageRecord]:
        """The conversation's left messages still kept, oldest first (a subject's export:
        widget_server/privacy/)."""
        record = self._stored_record(conversation_id)
        keys = [left_key(left_message_id) for left_message_id in (record.get("left", []) if record else [])]
        found = self.store.load(keys) if keys else {}
        return [value for key in keys if (value := as_record(LeftMessageRecord, found[key][1])) is not None]

    def forget(self, conversation_id: str) -> None:
        """Everything of the conversation's hand-off, at once: its record and events, its
        place in the queue or its claim, and its left messages (DELETE /conversations/{cid})."""

        def change(tx: _Transaction) -> None:
            record = tx.existing_conversation(conversation_id)
            if record is not None:
                for left_message_id in record.get("left", []):
                    if tx.left_message(left_message_id) is not None:
                        tx.put(left_key(left_message_id), None)
                    tx.inbox_remove.append(left_message_id)
                tx.put(conversation_key(conversation_id), None)
            desk = tx.desk()
            if conversation_id in positions(desk) or conversation_id in desk["assigned"]:
                desk["queue"] = [e for e in desk["queue"] if e["conversation_id"] != conversation_id]
                desk["assigned"].pop(conversation_id, None)
                tx.put(DESK, desk)
            tx.drop_logs.append(conversation_id)

        self._move_legacy_inbox()  # its entries of this conversation are found through its record
        self._transact(change)


# A transaction, as a module beside this one writes its records through `transact`.
Transaction = _Transaction


class ConversationSource:
    """A conversation's event log as stream_loop.follow_log reads it (HandoffService.event_stream)."""

    def __init__(
        self, service: HandoffService, conversation_id: str, *, client_gone: Callable[[], bool] | None, visitor: bool
    ) -> None:
        self.service = service
        self.conversation_id = conversation_id
        self.client_gone = client_gone
        heartbeat = service.settings.chat.heartbeat_seconds
        self.poll = min(heartbeat, DISCONNECT_PROBE_SECONDS if client_gone is not None else HOUSEKEEPING_SECONDS)
        self.mark_every = service._visitor_mark_seconds() if visitor else None
        if self.mark_every is not None:
            self.poll = min(self.poll, self.mark_every)
        self.marked_at = self.looked_at = time.monotonic()

    def begin(self, after_seq: int) -> tuple[bytes, int] | None:
        service, conversation_id = self.service, self.conversation_id
        if self.mark_every is not None:
            service.store.visitor_seen(conversation_id, time.time())
            self.marked_at = time.monotonic()
        if (
            service.last_seq(conversation_id) > after_seq
            and service.store.read_events(conversation_id, after_seq, 0) == []
        ):
            # Behind the newest event, but its log is gone (expired apart): the state as it is.
            snapshot = service.snapshot(conversation_id)
            service.app_metrics.snapshot_served()
            return snapshot.encode(), snapshot.seq
        self.looked_at = time.monotonic()
        return b"", after_seq

    @property
    def stopping(self) -> threading.Event:
        return self.service.stopping

    def read(self, seq: int) -> tuple[bytes, int, bool] | None:
        service, conversation_id = self.service, self.conversation_id
        if self.mark_every is not None and time.monotonic() - self.marked_at >= self.mark_every:
            service.store.visitor_seen(conversation_id, time.time())
            self.marked_at = time.monotonic()
        if service._over_for(conversation_id, seq):
            return b"", seq, True
        found = service.read_events(conversation_id, seq, self.poll)
        if not found:
            return None
        if found[0].type == ev.SNAPSHOT:
            service.app_metrics.snapshot_served()
        return b"".join(event.encode() for event in found), found[-1].seq, False

    def quiet(self, seq: int) -> bool:
        if self.client_gone is not None and self.client_gone():
            return False
        if time.monotonic() - self.looked_at >= HOUSEKEEPING_SECONDS:
            self.looked_at = time.monotonic()
            self.service._release_lapsed_now_and_then()
            if self.service.chat_store.get_conversation(self.conversation_id) is None:
                return False  # deleted (or expired): nothing more will come
        return True

    def unavailable(self, error: StoreUnavailable) -> None:
        log.warning("conversation stream of %s ended: the store is unavailable: %s", self.conversation_id, error)
        self.service.app_metrics.store_unavailable()


def _visitor_of(record: HandoffRecord | None) -> dict[str, str] | None:
    """A hand-off's known visitor as the agent API says it (`visitor`: subject, name, email;
    null for an anonymous visitor: docs/agents.md, "Known visitors")."""
    if record is None or "visitor" not in record:
        return None
    visitor = record["visitor"]
    return {"subject": visitor["subject"], "name": visitor["name"], "email": visitor["email"]}
