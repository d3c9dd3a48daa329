"""Hand-off to a person (docs/protocol.md, "Hand-off to a person"): a conversation's hand-off
state, its queue, the claim, and the conversation event stream that carries what the person
and the visitor say.

One concern per module (docs/architecture.md): `events.py` (pure: event types and their
SSE form), `memory_store.py` and `redis_store.py` (the hand-off store, apart from the chat
stores), `service.py` (`HandoffService`, transport-free), `metrics.py` (its counters),
`api.py` (the visitor's routes).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..settings import Settings
    from .store import HandoffStore


def create_handoff_store(settings: Settings, chat_store: Any) -> HandoffStore:
    """The hand-off store beside the chat store: in memory with the memory store, on the same
    Redis (the chat store's client) with a Redis one, so hand-offs are as shared as answers."""
    max_events = settings.handoff.conversation_events_max
    # Retention (docs/privacy.md): on Redis each record lives its conversation's (RETENTION, or
    # IDENTIFIED_RETENTION for a known visitor's); in memory the longer of the two, and each
    # hand-off goes with its conversation besides (services.py connects HandoffService.forget
    # to MemoryStore.forget_listeners).
    anonymous, identified = settings.store.retention_seconds, settings.store.identified_retention_seconds
    max_inbox = settings.handoff.inbox_max
    if getattr(chat_store, "shared", False) and hasattr(chat_store, "redis"):
        from .redis_store import RedisHandoffStore

        return RedisHandoffStore(
            chat_store.redis, max_events=max_events, ttl=anonymous, identified_ttl=identified, max_inbox=max_inbox
        )
    from .memory_store import MemoryHandoffStore

    return MemoryHandoffStore(
        max_events=max_events,
        ttl=max(anonymous, identified),
        max_bytes=settings.handoff.memory_store_max_bytes,
        max_inbox=max_inbox,
    )
