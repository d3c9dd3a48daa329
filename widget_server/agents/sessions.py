"""Agents' sign-in sessions and their CSRF tokens (docs/agents.md, "Sessions"; docs/security.md).

A session is a record in the store's own backend — the process's memory with the memory
store, the store's Redis otherwise — so a console signed in through one worker is accepted
by every other worker and host. The browser holds only the session's id, a 256-bit random
value, in the `__Host-agent_session` cookie (HttpOnly, Secure, SameSite=Strict, Path=/: the
`__Host-` prefix makes browsers refuse it unless it is Secure, host-only and Path=/, RFC
6265bis §4.1.3.2). The store keys the record by the id's SHA-256, so a copy of the store's
data signs nobody in.

A session lasts AGENT_SESSION_SECONDS from sign-in (an absolute lifetime, like a shift, not
renewed by use); signing out deletes the record, so the cookie is worthless at once, on every
worker. Each session has its own CSRF token, sent back by the console as the `X-CSRF-Token`
header on every state-changing API request and as the hidden `csrf_token` field of the
sign-out form; tokens are compared in constant time (`tokens_match`).

Before there is a session, the sign-in form is protected the same way by a second cookie,
`__Host-agent_sign_in`, whose random value the form repeats in its hidden field (a
double-submit token): another site cannot sign a visitor's browser in to an account of its
choosing ("login CSRF").
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from ..stores.base import Store, StoreUnavailable

SESSION_COOKIE = "__Host-agent_session"
SIGN_IN_COOKIE = "__Host-agent_sign_in"
CSRF_HEADER = "X-CSRF-Token"
CSRF_FIELD = "csrf_token"
# 32 random bytes as URL-safe base64: 43 characters. Longer cookies are not looked up.
_TOKEN_BYTES = 32
MAX_TOKEN_CHARS = 64
REDIS_PREFIX = "cw:agent_session:"


def new_token() -> str:
    return secrets.token_urlsafe(_TOKEN_BYTES)


def tokens_match(sent: str | None, expected: str) -> bool:
    """Constant-time comparison (hmac.compare_digest), so the time taken does not reveal how
    much of a guessed token was right."""
    if not sent or not expected:
        return False
    return hmac.compare_digest(sent.encode("utf-8"), expected.encode("utf-8"))


def _key(session_id: str) -> str:
    return hashlib.sha256(session_id.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class AgentSession:
    agent_name: str
    csrf_token: str
    created_at: float
    expires_at: float


class SessionStore(ABC):
    """Where sessions live. `clock` is the time in seconds (tests move it forward)."""

    def __init__(self, lifetime: float, clock: Callable[[], float] = time.time) -> None:
        self.lifetime = lifetime
        self.clock = clock

    def create(self, agent_name: str) -> tuple[str, AgentSession]:
        """A new session for the agent: (the cookie's value, the record)."""
        now = self.clock()
        session_id = new_token()
        session = AgentSession(agent_name, new_token(), now, now + self.lifetime)
        self._put(_key(session_id), session)
        return session_id, session

    def get(self, session_id: str | None) -> AgentSession | None:
        """The live session the cookie names, or None (none, unknown, signed out, expired)."""
        if not session_id or len(session_id) > MAX_TOKEN_CHARS:
            return None
        session = self._get(_key(session_id))
        if session is None or session.expires_at <= self.clock():
            return None
        return session

    def delete(self, session_id: str | None) -> None:
        if session_id and len(session_id) <= MAX_TOKEN_CHARS:
            self._delete(_key(session_id))

    @abstractmethod
    def _put(self, key: str, session: AgentSession) -> None: ...

    @abstractmethod
    def _get(self, key: str) -> AgentSession | None: ...

    @abstractmethod
    def _delete(self, key: str) -> None: ...


class MemorySessions(SessionStore):
    """One process's sessions (the memory store's server runs one worker)."""

    def __init__(self, lifetime: float, clock: Callable[[], float] = time.time) -> None:
        super().__init__(lifetime, clock)
        self._sessions: dict[str, AgentSession] = {}
        self._lock = threading.Lock()

    def _put(self, key: str, session: AgentSession) -> None:
        now = self.clock()
        with self._lock:
            # Expired records go when a new one comes: sign-ins are rate-limited, so this
            # dict is as small as the number of recent sign-ins.
            for old in [k for k, s in self._sessions.items() if s.expires_at <= now]:
                del self._sessions[old]
            self._sessions[key] = session

    def _get(self, key: str) -> AgentSession | None:
        with self._lock:
            return self._sessions.get(key)

    def _delete(self, key: str) -> None:
        with self._lock:
            self._sessions.pop(key, None)


class RedisSessions(SessionStore):
    """Sessions in the store's Redis: one JSON string per session, expiring with it (`PX`)."""

    def __init__(self, client: Any, lifetime: float, clock: Callable[[], float] = time.time) -> None:
        super().__init__(lifetime, clock)
        self.redis = client

    def _call(self, operation: Callable[[], Any]) -> Any:
        from ..stores.redis_connection import connection_trouble

        try:
            return operation()
        except connection_trouble() as error:
            # errorhandlers.py answers 503 `store_unavailable`, as for the chat store itself.
            raise StoreUnavailable(f"redis: {type(error).__name__}: {error}") from error

    def _put(self, key: str, session: AgentSession) -> None:
        milliseconds = max(1, int((session.expires_at - self.clock()) * 1000))
        self._call(lambda: self.redis.set(REDIS_PREFIX + key, json.dumps(asdict(session)), px=milliseconds))

    def _get(self, key: str) -> AgentSession | None:
        raw = self._call(lambda: self.redis.get(REDIS_PREFIX + key))
        if raw is None:
            return None
        try:
            return AgentSession(**json.loads(raw))
        except (ValueError, TypeError):
            return None  # not a record this code wrote: no session

    def _delete(self, key: str) -> None:
        self._call(lambda: self.redis.delete(REDIS_PREFIX + key))


def create_sessions(chat_store: Store, lifetime: float) -> SessionStore:
    """Sessions in the chat store's backend: its Redis client when it has one, else memory."""
    client = getattr(chat_store, "redis", None)
    return RedisSessions(client, lifetime) if client is not None else MemorySessions(lifetime)
