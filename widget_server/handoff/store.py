"""The hand-off store's interface: versioned records, one atomic commit, event logs.

The hand-off's rules live in HandoffService (service.py), once; a store only keeps JSON
records under names (`conv:<cid>`, the one `desk` with the queue and the claims, each left
message as `left:<id>`), each with a version, and commits a change to several of them
together with the events it appends only if none of the records it read changed meanwhile
(optimistic concurrency: a compare-and-set on every version read). So a claim that races
nineteen others, on any worker of any host, is decided by the store once (docs/design.md,
"Hand-off"). The memory store does it under a lock; the Redis store in one Lua script.

Each conversation's events are a log bounded to CONVERSATION_EVENTS_MAX entries; a reader
behind the bound learns it (read_events returns None) and gets a snapshot from the service.

The agents' inbox is an index of the left messages' ids, newest first, kept by the store beside
their records and changed in the same commit (`Commit.inbox_add`, `inbox_replied`,
`inbox_remove`): a left message costs one record and one index entry, whatever the inbox holds,
and the console reads it a page at a time (`inbox_page`). The index keeps a left message
RETENTION from when it was left and at most HANDOFF_INBOX_MAX of them; what it
lets go, by age or by that bound, is counted (`InboxPage.expired`), never dropped in silence
(docs/agents.md, "The inbox").

A commit that brings something new into the store (a hand-off request, a message) says so
(`Commit.needs_room`): a store with a byte budget (the memory store: HANDOFF_MEMORY_STORE_MAX_BYTES)
refuses it with HandoffStoreFull when even after evicting what is safe to evict it would go
over, and the service answers 503 `handoff_store_full`. Transitions of hand-offs already in
the store (claim, end, cancel, a lapsed claim's release, delete) are never refused: they add
a few events at most, and most of them make a conversation evictable (docs/security.md, "Memory").
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, NotRequired, TypedDict, TypeVar, cast

# A record's name for a conversation's hand-off, the shared desk, and a left message.
DESK = "desk"
# The inbox as one record of every left message, as earlier versions kept it: its entries are
# moved into records of their own, and it is deleted, at the first read of the inbox
# (HandoffService.inbox_page).
LEGACY_INBOX = "inbox"
CONVERSATION_PREFIX = "conv:"
LEFT_PREFIX = "left:"


# -- the records, as their JSON is stored ------------------------------------------------------
# Storage shapes: what the service keeps between requests, not what it answers (the answers'
# shapes are wire/records.py's). TypedDicts, so a record is the same JSON object as ever, and
# the memory and Redis stores write it byte for byte as before.


class KnownRequest(TypedDict):
    """A request already answered, by its request_id: a retry with the same fingerprint gets
    the same `result` (an answer of wire/records.py: HandoffStateRecord, HandoffMessageCreated,
    LeftMessageCreated); another fingerprint is a 409."""

    fingerprint: str
    result: dict[str, Any]


class HandoffMessageRecord(TypedDict):
    """A hand-off message (the visitor's or an agent's), in its conversation's record.
    `after_exchanges`: how many exchanges the conversation had when it was sent, its place
    in the history (service.merge_history)."""

    message_id: str
    role: str  # "visitor" or "agent"
    text: str
    sha256: str
    after_exchanges: int
    agent: NotRequired[str]  # an agent's message: the agent's display name
    # Files sent with it, as the history lists them (TurnAttachment.to_json).
    attachments: NotRequired[list[dict[str, Any]]]


class KnownVisitor(TypedDict):
    """The visitor as their identity token named them (widget_server/identity/), copied from the
    conversation when it is queued, for the agents' console: text, never markup."""

    subject: str
    name: str
    email: str


class RateableHandoff(TypedDict):
    """The conversation's latest hand-off that a person ended (`ended` or `returned`): what the
    visitor may rate (handoff/satisfaction.py). `handoff` is the seq of its `handoff.ended`
    event, the hand-off's identifier on the wire; `agent` the ending agent's account name and
    `agent_display` their display name."""

    handoff: int
    agent: str
    agent_display: str


class SatisfactionEntry(TypedDict):
    """A visitor's answer to "How was your conversation?" for one hand-off (handoff/satisfaction.py):
    kept in the conversation's record, so it expires and is erased with it."""

    handoff: int  # the seq of that hand-off's `handoff.ended` event
    rating: int  # 1 (very poor) … 5 (very good)
    comment: str  # "" when none
    agent: str  # the ending agent's display name
    created_at: str  # ISO 8601 UTC with milliseconds


class HandoffRecord(TypedDict):
    """A conversation's hand-off (`conv:<cid>`): its state, the agent holding it, its messages,
    the newest event's seq and the requests it answered."""

    state: str  # events.NONE, STATE_QUEUED, STATE_ASSIGNED or STATE_ENDED
    agent: str  # the claiming agent's name ("" when none)
    agent_display: str
    queued_at: float
    assigned_at: float
    replied: bool  # the claiming agent has sent a message (time to first reply)
    typing_at: float
    seq: int  # the newest event's seq
    messages: list[HandoffMessageRecord]
    requests: dict[str, KnownRequest]
    # The ids of its left messages still kept; absent until the first one.
    left: NotRequired[list[str]]
    # A known visitor's subject, name and email (docs/agents.md, "Known visitors"); absent for
    # an anonymous one.
    visitor: NotRequired[KnownVisitor]
    # The latest hand-off a person ended, while the visitor may rate it; absent before one and
    # once a new hand-off is queued (handoff/satisfaction.py).
    rateable: NotRequired[RateableHandoff]
    # The visitor's answers, oldest first, at most SATISFACTION_KEPT (handoff/satisfaction.py).
    satisfaction: NotRequired[list[SatisfactionEntry]]


class QueueEntry(TypedDict):
    conversation_id: str
    since: float  # when it was queued (unix seconds)


class Claim(TypedDict):
    agent: str  # the agent's name
    display: str  # their display name
    since: float  # when they claimed it


class DeskRecord(TypedDict):
    """The one desk (`desk`): the queue, oldest first, and the claims by conversation id."""

    queue: list[QueueEntry]
    assigned: dict[str, Claim]


class LeftMessageRecord(TypedDict):
    """A message left when nobody was there (`left:<id>`), as the agents' inbox lists it."""

    left_message_id: str
    conversation_id: str
    email: str | None
    text: str
    created_at: str  # ISO 8601 UTC with milliseconds
    replied: bool
    # A known visitor's (widget_server/identity/): kept as long as their conversation
    # (IDENTIFIED_RETENTION, redis_store.py) and exported with it (widget_server/privacy/).
    visitor: NotRequired[KnownVisitor]


class LeftReply(TypedDict):
    """An agent's reply to a left message, as the `on_left_reply` hook gets it."""

    message_id: str
    sha256: str
    text: str
    agent: str  # the agent's display name


class RepliedLeftMessage(LeftMessageRecord):
    """A left message with the reply just sent to it (the `on_left_reply` hook's first argument)."""

    reply: LeftReply


class LegacyInbox(TypedDict, total=False):
    """The inbox as one record (LEGACY_INBOX), as earlier versions kept it."""

    messages: list[LeftMessageRecord]


# Any record the store keeps. Its name says which (conversation_key, DESK, left_key,
# LEGACY_INBOX): the JSON carries no tag of its kind.
StoredRecord = HandoffRecord | DeskRecord | LeftMessageRecord | LegacyInbox
RecordT = TypeVar("RecordT", HandoffRecord, DeskRecord, LeftMessageRecord, LegacyInbox)


def as_record(shape: type[RecordT], value: StoredRecord | None) -> RecordT | None:
    """`value`, loaded under a name of `shape`'s kind, as that shape: the one place a loaded
    record is trusted to be what its name says. It is, because only a `shape` is ever written
    under such a name (Commit.writes; HandoffService's transactions read and write each kind
    through their own accessors), and JSON has no other way to tell."""
    del shape  # says the type; the value is not converted (the hot path reads records as parsed)
    return cast("RecordT | None", value)


def conversation_key(conversation_id: str) -> str:
    return f"{CONVERSATION_PREFIX}{conversation_id}"


def left_key(left_message_id: str) -> str:
    return f"{LEFT_PREFIX}{left_message_id}"


def inbox_score(left_at: float) -> int:
    """A left message's place in the inbox index: when it was left, in microseconds (exact in
    a double, which Redis keeps a sorted set's scores as, until the year 2255)."""
    return int(left_at * 1_000_000)


@dataclass(frozen=True)
class InboxPage:
    """One page of the inbox index, newest first: each left message's (score, id); `unreplied`,
    how many in the whole index no agent has replied to; `expired`, how many the index has let
    go since it began, by age or by its bound."""

    entries: list[tuple[int, str]]
    unreplied: int
    expired: int


class HandoffStoreFull(Exception):
    """A commit with `needs_room` does not fit the store's byte budget, even after evicting
    every conversation whose hand-off is over; nothing was applied."""


@dataclass
class Commit:
    """What one transaction changes: `expected` versions of every record it read (0: absent),
    the records it `writes` (None deletes), the events it appends per conversation (seq, JSON),
    the conversations whose logs it deletes, and the inbox index's changes. `needs_room`: it
    brings something new (a request, a message), so a store over its byte budget may refuse it
    (HandoffStoreFull). An index entry added beyond the store's bound lets the oldest go, with
    its record."""

    expected: dict[str, int] = field(default_factory=dict)
    writes: dict[str, StoredRecord | None] = field(default_factory=dict)
    events: dict[str, list[tuple[int, str]]] = field(default_factory=dict)
    drop_logs: list[str] = field(default_factory=list)
    needs_room: bool = False
    # The inbox index: left messages added (id, score), replied to, removed (with their records).
    inbox_add: list[tuple[str, int]] = field(default_factory=list)
    inbox_replied: list[str] = field(default_factory=list)
    inbox_remove: list[str] = field(default_factory=list)


class HandoffStore(ABC):
    # Several processes share it: presence and claims must be looked at, not remembered.
    shared = False

    @abstractmethod
    def load(self, keys: list[str]) -> dict[str, tuple[int, StoredRecord | None]]:
        """Each record's (version, value); (0, None) for one that does not exist."""

    @abstractmethod
    def commit(self, change: Commit) -> bool:
        """Apply `change` at once if every record's version is still `expected`; else False
        and nothing changes. Raises HandoffStoreFull (nothing applied) when `change.needs_room`
        and it does not fit the store's byte budget."""

    @abstractmethod
    def read_events(self, conversation_id: str, after_seq: int, timeout: float) -> list[tuple[int, str]] | None:
        """Events after `after_seq`, waiting up to `timeout` s for the first ([] then); None
        if the one right after `after_seq` was evicted (the caller sends a snapshot)."""

    @abstractmethod
    def inbox_page(self, limit: int, before: int | None) -> InboxPage:
        """Up to `limit` entries of the inbox index with a score below `before` (all when None),
        newest first, after letting go of (and counting) the entries older than the store's ttl."""

    @abstractmethod
    def seen(self, agent_name: str, when: float) -> None:
        """An agent's console was seen at `when` (unix seconds)."""

    @abstractmethod
    def presence(self) -> dict[str, float]:
        """When each agent was last seen."""

    # A visitor's presence, as an agent's: when their conversation stream was last open (the
    # service's HANDOFF_QUEUE_IDLE_SECONDS lets a queued visitor gone that long leave the queue).
    # Outside the records and their versions, like the agents' presence: marking a visitor seen
    # every few seconds rewrites no record and conflicts with no transaction.

    @abstractmethod
    def visitor_seen(self, conversation_id: str, when: float) -> None:
        """The conversation's visitor had its stream open at `when` (unix seconds)."""

    @abstractmethod
    def visitors_seen(self, conversation_ids: list[str] | None = None) -> dict[str, float]:
        """When these conversations' visitors were last seen (each one not forgotten since);
        None: every conversation's."""

    @abstractmethod
    def forget_visitors(self, conversation_ids: list[str]) -> None:
        """Forget when these conversations' visitors were seen (their hand-off is over)."""

    def close(self) -> None:  # noqa: B027 - nothing to release by default
        """Release connections."""
