"""Shared by the hand-off tests: HandoffService and ChatService built on a store of the
test's kind, as app.py builds them, without HTTP."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import pytest

from widget_server.backends.base import create_backend
from widget_server.chat.service import ChatService
from widget_server.handoff import create_handoff_store
from widget_server.handoff.service import HandoffService
from widget_server.metrics import Metrics
from widget_server.settings import load_settings
from widget_server.stores import create_store

MakeServices = Callable[..., tuple[HandoffService, ChatService]]


@contextmanager
def handoff_services(request: pytest.FixtureRequest, store_kind: str, **defaults: Any) -> Iterator[MakeServices]:
    """make(hooks=None, **settings) → (HandoffService, ChatService) with HANDOFF on, `defaults`,
    then `settings`, on `store_kind` ("memory", or a real "redis" / "cluster", emptied first);
    `hooks` are HandoffService's keyword arguments (`has_agents`, `on_left_message`, …), as
    widget_server/services.py passes them; every store made is closed after."""
    store_config: dict[str, Any] = {}
    if store_kind != "memory":
        server = request.getfixturevalue("redis_cluster" if store_kind == "cluster" else "redis_server")
        server.flush()
        store_config = {"STORE": server.url}
    made: list[HandoffService] = []

    def make(hooks: Mapping[str, Any] | None = None, **overrides: Any) -> tuple[HandoffService, ChatService]:
        settings = load_settings({"HANDOFF": "on", **store_config, **defaults, **overrides}, environ={})
        chat_store = create_store(settings)
        metrics = Metrics()
        service = HandoffService(
            create_handoff_store(settings, chat_store), chat_store, settings, metrics, **(hooks or {})
        )
        chat = ChatService(
            chat_store, create_backend("demo", settings), settings, metrics, handoff_enabled=service.enabled
        )
        made.append(service)
        return service, chat

    try:
        yield make
    finally:
        for service in made:
            service.store.close()
            service.chat_store.close()
