"""Rate limits and quotas on /api/v1, per client address and per conversation.

Built on `limits` (the library under Flask-Limiter, same maintainers), used
directly: our limits are a handful of settings keyed by the client address
or by the conversation in the URL, checked in one `before_request`, and
refused with the API's own JSON error (`rate_limited`, 429, Retry-After).

Who pays (docs/security.md, "Rate limits"): a request is first checked for
its browser `Origin` (another site's page is refused with 403 before
anything is counted), then for its token. A request that fails
authorization (no token, a wrong one, an unknown or malformed id, an unknown
path) counts only against its own cheaper budget, RATE_LIMIT_UNAUTHORIZED,
never against the client's or a conversation's quotas: a stranger cannot
spend them. Keys are validated values only: the client address parsed as an
IP address, and a conversation id whose token the request carried.
Counting is a moving window (exact: no burst at a window's edge). The
counters live in the store's Redis when the store is Redis — every worker
and host enforces one shared limit — and in the process otherwise.

The client address is the socket's peer, or, behind PROXY_HOPS reverse
proxies, the address that many hops back in X-Forwarded-For (Werkzeug's
ProxyFix, applied in app.py). Trusting X-Forwarded-For without a proxy
would let any client pick its own address, so it is off by default.

If the limit storage is unreachable, requests are let through (logged): the
store itself will answer 503 in that case, and a limit must never be the
reason an otherwise healthy server refuses everyone.
"""

from __future__ import annotations

import ipaddress
import logging
import math
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from flask import Flask, current_app, request

from .errors import ApiError
from .metrics import Metrics
from .services import SERVICES_KEY
from .settings import Settings
from .transport import authorize, bearer_identity, settings
from .wire.errors import ORIGIN_NOT_ALLOWED, RATE_LIMITED

if TYPE_CHECKING:
    from limits import RateLimitItem
    from limits.strategies import MovingWindowRateLimiter

log = logging.getLogger(__name__)

KEY_PREFIX = "cw:rl"


@dataclass(frozen=True)
class Limit:
    name: str  # the setting's name, lowercased: what the error and the metric say
    setting: str
    scope: str  # "client" or "conversation"
    message: str


_ALL_API = Limit(
    "client",
    "RATE_LIMIT_CLIENT",
    "client",
    "Too many requests from your connection. Wait {seconds} s, then try again.",
)
_NEW_CONVERSATIONS = Limit(
    "new_conversations",
    "RATE_LIMIT_NEW_CONVERSATIONS",
    "client",
    "Too many new conversations from your connection. Wait {seconds} s, then try again.",
)
_MESSAGES_CLIENT = Limit(
    "messages_client",
    "RATE_LIMIT_MESSAGES_CLIENT",
    "client",
    "You are sending messages faster than this chat allows. Wait {seconds} s, then send again.",
)
_MESSAGES_CONVERSATION = Limit(
    "messages_conversation",
    "RATE_LIMIT_MESSAGES_CONVERSATION",
    "conversation",
    "This conversation has reached its limit of messages for now. Wait {seconds} s, then send again.",
)

_UNAUTHORIZED = Limit(
    "unauthorized",
    "RATE_LIMIT_UNAUTHORIZED",
    "client",
    "Too many refused requests from your connection. Wait {seconds} s, then try again.",
)

# The agent console's sign-in (widget_server/agents/api.py): counted per client address
# and, under its own key space, per agent name, so neither many names from one address nor one
# name from many addresses guesses faster than this (docs/security.md, "The agent console").
_AGENT_SIGN_IN = Limit(
    "agent_sign_in",
    "RATE_LIMIT_AGENT_SIGN_IN",
    "client",
    "Too many sign-in attempts. Wait {seconds} s, then try again.",
)

# Left messages (widget_server/handoff/api.py), per client address: each lands in the
# agents' inbox and may mail the site's owner, so one address may leave only a few, whatever
# conversations it opens (a conversation's own bound is HANDOFF_LEFT_MESSAGES_MAX).
_LEFT_MESSAGES_CLIENT = Limit(
    "left_messages_client",
    "RATE_LIMIT_LEFT_MESSAGES_CLIENT",
    "client",
    "You have left several messages for the team already. Wait {seconds} s before leaving another.",
)

# Attachment uploads (widget_server/attachments/api.py), per conversation: its byte budget
# bounds what it holds, this how fast it may upload, delete and upload again.
_ATTACHMENTS = Limit(
    "attachments",
    "RATE_LIMIT_ATTACHMENTS",
    "conversation",
    "This conversation has reached its limit of attachments for now. Wait {seconds} s, then try again.",
)

_LIMITS = (
    _ALL_API,
    _NEW_CONVERSATIONS,
    _MESSAGES_CLIENT,
    _MESSAGES_CONVERSATION,
    _UNAUTHORIZED,
    _AGENT_SIGN_IN,
    _LEFT_MESSAGES_CLIENT,
    _ATTACHMENTS,
)

# Endpoint → the limits it counts against, besides the all-API one.
_ENDPOINT_LIMITS = {
    "api.create_conversation": (_NEW_CONVERSATIONS,),
    "api.post_message": (_MESSAGES_CLIENT, _MESSAGES_CONVERSATION),
    # A regenerate or an edit starts an answer like a send, so it spends the same quotas.
    "revisions_api.regenerate": (_MESSAGES_CLIENT, _MESSAGES_CONVERSATION),
    "revisions_api.edit": (_MESSAGES_CLIENT, _MESSAGES_CONVERSATION),
    # Hand-off (widget_server/handoff/api.py): a request, a message to the person and
    # a left message are messages too, and spend the same quotas.
    "handoff_visitor.request_handoff": (_MESSAGES_CLIENT, _MESSAGES_CONVERSATION),
    "handoff_visitor.post_handoff_message": (_MESSAGES_CLIENT, _MESSAGES_CONVERSATION),
    "handoff_visitor.post_left_message": (_MESSAGES_CLIENT, _MESSAGES_CONVERSATION, _LEFT_MESSAGES_CLIENT),
    "attachments.upload_attachment": (_ATTACHMENTS,),
}


class RateLimits:
    def __init__(self, settings: Settings, metrics: Metrics) -> None:
        from limits import parse_many

        self.metrics = metrics
        self.items = {
            limit.name: parse_many(settings[limit.setting]) if settings[limit.setting] else [] for limit in _LIMITS
        }
        self._store_url = settings.store.url
        self._storage: Any = None
        self._limiter: MovingWindowRateLimiter | None = None
        self._made = threading.Lock()

    @property
    def storage(self) -> Any:
        self._ready()
        return self._storage

    def _ready(self) -> MovingWindowRateLimiter:
        """The limiter, its storage made on first use: a Redis Cluster's client reads the
        cluster's slot map when it is made, so a server (or a worker restarted) while the
        cluster is down starts anyway, and limits are counted once it answers (as _hit says)."""
        if self._limiter is not None:  # every request after the first: no lock, no imports
            return self._limiter
        from limits.errors import StorageError
        from limits.storage import storage_from_string
        from limits.strategies import MovingWindowRateLimiter

        with self._made:
            if self._limiter is None:
                try:
                    if self._store_url == "memory":
                        self._storage = storage_from_string("memory://")
                    else:
                        self._storage = storage_from_string(
                            self._store_url, key_prefix=KEY_PREFIX, wrap_exceptions=True, socket_connect_timeout=1
                        )
                except Exception as error:  # the library's own, or redis-py's for an unreachable cluster
                    raise StorageError(error) from error
                self._limiter = MovingWindowRateLimiter(self._storage)
            return self._limiter

    def check(self) -> None:
        if not request.path.startswith("/api/v1/"):
            return
        client = client_key()
        conversation_id = _conversation_id()
        if (
            request.endpoint is None
            or (conversation_id is None and "conversation_id" in (request.view_args or {}))
            or (request.endpoint in _IDENTITY_ENDPOINTS and not _identified())
        ):
            # Refused by routing (an unknown path, a malformed id, a method not
            # allowed), a conversation's endpoint without its token, or a known visitor's
            # route without a valid identity token.
            for item in self.items[_UNAUTHORIZED.name]:
                self._hit(_UNAUTHORIZED, item, client)
            return
        for limit in (_ALL_API, *_ENDPOINT_LIMITS.get(request.endpoint, ())):
            key = conversation_id if limit.scope == "conversation" else client
            if key is None:  # no conversation in this endpoint's URL: nothing to count it against
                continue
            for item in self.items[limit.name]:
                self._hit(limit, item, key)

    def _hit(self, limit: Limit, item: RateLimitItem, key: str) -> None:
        from limits.errors import StorageError

        try:
            limiter = self._ready()
            if limiter.hit(item, limit.name, key):
                return
            reset = limiter.get_window_stats(item, limit.name, key).reset_time
        except StorageError as error:
            log.warning("rate limit %s not checked: its storage is unavailable: %s", limit.name, error)
            return
        seconds = max(1, math.ceil(reset - time.time()))
        self.metrics.rate_limited(limit.name)
        raise RATE_LIMITED(
            limit.message.format(seconds=seconds),
            retry_after=seconds,
            details={"limit": limit.name, "allowed": str(item)},
        )

    def check_sign_in(self, agent_name: str, *, per_name: bool = True) -> None:
        """An agent sign-in attempt: 429 `rate_limited` past RATE_LIMIT_AGENT_SIGN_IN from this
        address, or for this name from anywhere. The name is the one typed (bounded, lower-cased
        by the caller), known or not: an unknown name is limited like a known one.

        `per_name` false: a browser holding the device cookie of this name (agents/sign_in_delay.py)
        is counted by its address only, so a stranger spending the name's budget cannot keep the
        agent's own browser out (docs/security.md, "The agent console")."""
        for item in self.items[_AGENT_SIGN_IN.name]:
            self._hit(_AGENT_SIGN_IN, item, client_key())
            if per_name:
                self._hit(_AGENT_SIGN_IN, item, "name:" + agent_name)

    def check_agent_request(self, agent_name: str | None) -> None:
        """A request to /agent/api: a signed-in agent's count against RATE_LIMIT_CLIENT under
        their name; one without a session against RATE_LIMIT_UNAUTHORIZED, by address."""
        if agent_name is None:
            for item in self.items[_UNAUTHORIZED.name]:
                self._hit(_UNAUTHORIZED, item, client_key())
            return
        for item in self.items[_ALL_API.name]:
            self._hit(_ALL_API, item, "agent:" + agent_name)

    def forget_conversation(self, conversation_id: str) -> None:
        """Remove the counters kept for a deleted conversation (api.delete_conversation): no
        key naming it may remain (docs/protocol.md, "Deleting a conversation")."""
        from limits.errors import StorageError

        for limit in _LIMITS:
            if limit.scope != "conversation":
                continue
            for item in self.items[limit.name]:
                try:
                    self.storage.clear(item.key_for(limit.name, conversation_id))
                except StorageError as error:  # as in _hit: the limits' storage is not the store
                    log.warning("rate limit %s of %s not cleared: %s", limit.name, conversation_id, error)


def client_key() -> str:
    """The client address as a rate-limit key: a parsed IP address, never raw header text
    (behind PROXY_HOPS the address comes from X-Forwarded-For, which a client may pad)."""
    try:
        return ipaddress.ip_address(request.remote_addr or "").compressed
    except ValueError:
        return "unparsable"


# Endpoints whose token may also come in the query (EventSource cannot set headers): the
# same rule as api.get_events' own authorize(…, allow_query_token=True).
_QUERY_TOKEN_ENDPOINTS = frozenset({"api.get_events", "handoff_visitor.conversation_events"})


# A known visitor's own routes (identity/api.py): authorised by an identity token alone.
_IDENTITY_ENDPOINTS = frozenset({"identity.list_conversations", "privacy.export_my_data", "privacy.erase_my_data"})


def _identified() -> bool:
    """Whether the request carries a valid identity token (verified once: transport caches it)."""
    try:
        bearer_identity()
    except ApiError:
        return False
    return True


def _conversation_id() -> str | None:
    """The URL's conversation id if the request carries its token, else None."""
    conversation_id = (request.view_args or {}).get("conversation_id")
    if not isinstance(conversation_id, str):
        return None
    try:
        authorize(conversation_id, allow_query_token=request.endpoint in _QUERY_TOKEN_ENDPOINTS)
    except ApiError:
        return None
    return conversation_id


def _origin(url: str) -> tuple[str, str, int | None] | None:
    """scheme, host and port (the scheme's default filled in) of an origin or a URL."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname:
        return None
    return scheme, parts.hostname.lower(), port or (443 if scheme == "https" else 80)


def check_origin() -> None:
    """403 for a browser request to /api/v1 from another site's page.

    Browsers send `Origin` with every cross-origin request and every POST; the panel, the
    full-page chat and the QA page run on the server's own origin. A request without
    `Origin` (a server-to-server client, or a same-origin GET) is not a browser's
    cross-site request and passes. Runs before any counting, so such a page cannot spend
    anyone's quota (docs/security.md, "Rate limits").
    """
    if not request.path.startswith("/api/v1/"):
        return
    origin = request.headers.get("Origin")
    if origin is None:
        return
    allowed = settings().web.api_origins
    if "*" in allowed:
        return
    sent = _origin(origin)
    trusted = [request.host_url, *(o for o in allowed if o != "'self'")]
    public_url = settings().web.public_url
    if public_url:
        trusted.append(public_url)
    if sent is not None and sent in {_origin(url) for url in trusted}:
        return
    raise ORIGIN_NOT_ALLOWED(
        "This API accepts browser requests only from the chat's own pages and the origins in API_ORIGINS.",
    )


def init_app(app: Flask) -> None:
    app.before_request(check_origin)  # first: a refused origin is never counted
    values = app.config["WIDGET_SERVER"]
    if not values.rate_limits.enabled:
        return
    limits = RateLimits(values, app.extensions[SERVICES_KEY].metrics)
    app.extensions["widget_server.rate_limits"] = limits
    app.before_request(limits.check)


def current_limits() -> RateLimits | None:
    return current_app.extensions.get("widget_server.rate_limits")
