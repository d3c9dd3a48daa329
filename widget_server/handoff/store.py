"""The hand-off store's interface: versioned records, one atomic commit, event logs.

The hand-off's rules live in HandoffService (service.py), once; a store only keeps JSON
records under names (`conv:<cid>`, the one `desk` with the queue and the claims, the
`inbox` of left messages), each with a version, and commits a change to several of them
together with the events it appends only if none of the records it read changed meanwhile
(optimistic concurrency: a compare-and-set on every version read). So a claim that races
nineteen others, on any worker of any host, is decided by the store once (docs/design.md,
"Hand-off"). The memory store does it under a lock; the Redis store in one Lua script.

Each conversation's events are a log bounded to CONVERSATION_EVENTS_MAX entries; a reader
behind the bound learns it (read_events returns None) and gets a snapshot from the service.

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
from typing import Any

# A record's name for a conversation's hand-off, and the two shared records.
DESK = "desk"
INBOX = "inbox"
CONVERSATION_PREFIX = "conv:"


def conversation_key(conversation_id: str) -> str:
    return f"{CONVERSATION_PREFIX}{conversation_id}"


class HandoffStoreFull(Exception):
    """A commit with `needs_room` does not fit the store's byte budget, even after evicting
    every conversation whose hand-off is over; nothing was applied."""


@dataclass
class Commit:
    """What one transaction changes: `expected` versions of every record it read (0: absent),
    the records it `writes` (None deletes), the events it appends per conversation (seq, JSON)
    and the conversations whose logs it deletes. `needs_room`: it brings something new (a
    request, a message), so a store over its byte budget may refuse it (HandoffStoreFull)."""

    expected: dict[str, int] = field(default_factory=dict)
    writes: dict[str, dict[str, Any] | None] = field(default_factory=dict)
    events: dict[str, list[tuple[int, str]]] = field(default_factory=dict)
    drop_logs: list[str] = field(default_factory=list)
    needs_room: bool = False


class HandoffStore(ABC):
    # Several processes share it: presence and claims must be looked at, not remembered.
    shared = False

    @abstractmethod
    def load(self, keys: list[str]) -> dict[str, tuple[int, dict[str, Any] | None]]:
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
    def seen(self, agent_name: str, when: float) -> None:
        """An agent's console was seen at `when` (unix seconds)."""

    @abstractmethod
    def presence(self) -> dict[str, float]:
        """When each agent was last seen."""

    def close(self) -> None:  # noqa: B027 - nothing to release by default
        """Release connections."""
