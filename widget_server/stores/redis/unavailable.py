"""Redis connection trouble as StoreUnavailable, for every Redis-backed store.

Redis errors (refused connection, reset, loading: redis_connection.py connection_trouble)
become StoreUnavailable, which the transport answers with 503 `store_unavailable`. Commands are
never retried by the client library: a script whose reply was lost may have run, and running
an APPEND twice would duplicate text. The next command reconnects, so a store recovers by
itself when Redis is back.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from ..base import StoreUnavailable
from ..redis_connection import connection_trouble

StoreClass = TypeVar("StoreClass", bound=type)


def unavailable_on_connection_errors(cls: StoreClass) -> StoreClass:
    """Every public method `cls` itself defines raises StoreUnavailable for Redis connection
    trouble (the chat store's sections here, the hand-off store in handoff/redis_store.py, the
    attachment store in attachments/redis_store.py), so the transport answers 503."""
    trouble = connection_trouble()

    def wrap(method: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(method)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                return method(*args, **kwargs)
            except trouble as error:
                raise StoreUnavailable(f"redis: {type(error).__name__}: {error}") from error

        return wrapper

    for name, value in list(vars(cls).items()):
        if callable(value) and not name.startswith("_"):
            setattr(cls, name, wrap(value))
    return cls
