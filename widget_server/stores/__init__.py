"""Stores: `memory` (the embedded default, one process) or `redis://…` (shared)."""

from __future__ import annotations

from ..settings import Settings
from .base import Store


def create_store(settings: Settings) -> Store:
    store = _create_store(settings)
    store.max_answer_chars = settings.chat.max_answer_chars
    return store


def _create_store(settings: Settings) -> Store:
    url = settings.store.url
    if url == "memory":
        from .memory import MemoryStore

        return MemoryStore(
            max_events=settings.store.log_max_events,
            conversation_ttl=settings.store.retention_seconds,
            identified_ttl=settings.store.identified_retention_seconds,
            finished_log_grace=settings.store.finished_log_grace_seconds,
            max_bytes=settings.store.memory_max_bytes,
        )
    from .redis import RedisStore

    return RedisStore(
        url,
        max_events=settings.store.log_max_events,
        conversation_ttl=settings.store.retention_seconds,
        identified_ttl=settings.store.identified_retention_seconds,
        lease_seconds=settings.store.worker_lease_seconds,
        finished_log_grace=settings.store.finished_log_grace_seconds,
    )
