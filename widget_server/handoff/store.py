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
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

# A record's name for a conversation's hand-off, and the two shared records.
DESK = "desk"
INBOX = "inbox"


def conversation_key(conversation_id: str) -> str:
    return f"conv:{conversation_id}"


@dataclass
class Commit:
    """What one transaction changes: `expected` versions of every record it read (0: absent),
    the records it `writes` (None deletes), the events it appends per conversation (seq, JSON)
    and the conversations whose logs it deletes."""

    expected: dict[str, int] = field(default_factory=dict)
    writes: dict[str, dict[str, Any] | None] = field(default_factory=dict)
    events: dict[str, list[tuple[int, str]]] = field(default_factory=dict)
    drop_logs: list[str] = field(default_factory=list)


class HandoffStore(ABC):
    # Several processes share it: presence and claims must be looked at, not remembered.
    shared = False

    @abstractmethod
    def load(self, keys: list[str]) -> dict[str, tuple[int, dict[str, Any] | None]]:
        """Each record's (version, value); (0, None) for one that does not exist."""

    @abstractmethod
    def commit(self, change: Commit) -> bool:
        """Apply `change` at once if every record's version is still `expected`; else False
        and nothing changes."""

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
