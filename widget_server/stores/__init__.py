"""Stores: `memory` (the embedded default, one process) or `redis://…` (shared)."""

from __future__ import annotations

from typing import Any

from .base import Store


def create_store(settings: dict[str, Any]) -> Store:
    store = _create_store(settings)
    store.max_answer_chars = settings["MAX_ANSWER_CHARS"]
    return store


def _create_store(settings: dict[str, Any]) -> Store:
    url = settings["STORE"]
    if url == "memory":
        from .memory import MemoryStore

        return MemoryStore(
            max_events=settings["LOG_MAX_EVENTS"],
            conversation_ttl=settings["CONVERSATION_TTL_SECONDS"],
            finished_log_grace=settings["FINISHED_LOG_GRACE_SECONDS"],
            max_bytes=settings["MEMORY_STORE_MAX_BYTES"],
        )
    from .redis import RedisStore

    return RedisStore(
        url,
        max_events=settings["LOG_MAX_EVENTS"],
        conversation_ttl=settings["CONVERSATION_TTL_SECONDS"],
        lease_seconds=settings["WORKER_LEASE_SECONDS"],
        finished_log_grace=settings["FINISHED_LOG_GRACE_SECONDS"],
    )
