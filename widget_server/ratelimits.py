"""Rate limits and quotas on /api/v1, per client address and per conversation.

Built on `limits` (the library under Flask-Limiter, same maintainers), used
directly: our limits are a handful of settings keyed by the client address
or by the conversation in the URL, checked in one `before_request`, and
refused with the API's own JSON error (`rate_limited`, 429, Retry-After).
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

import logging
import math
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from flask import Flask, current_app, request

from .config import Settings
from .errors import ApiError
from .metrics import Metrics

if TYPE_CHECKING:
    from limits import RateLimitItem

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

# Endpoint → the limits it counts against, besides the all-API one.
_ENDPOINT_LIMITS = {
    "api.create_conversation": (_NEW_CONVERSATIONS,),
    "api.post_message": (_MESSAGES_CLIENT, _MESSAGES_CONVERSATION),
}


class RateLimits:
    def __init__(self, settings: Settings, metrics: Metrics) -> None:
        from limits import parse_many
        from limits.storage import storage_from_string
        from limits.strategies import MovingWindowRateLimiter

        self.metrics = metrics
        self.items = {
            limit.name: parse_many(settings[limit.setting]) if settings[limit.setting] else []
            for limit in (_ALL_API, _NEW_CONVERSATIONS, _MESSAGES_CLIENT, _MESSAGES_CONVERSATION)
        }
        store = settings["STORE"]
        if store == "memory":
            self.storage = storage_from_string("memory://")
        else:
            self.storage = storage_from_string(
                store, key_prefix=KEY_PREFIX, wrap_exceptions=True, socket_connect_timeout=1
            )
        self.limiter = MovingWindowRateLimiter(self.storage)

    def check(self) -> None:
        if not request.path.startswith("/api/v1/"):
            return
        limits = (_ALL_API, *_ENDPOINT_LIMITS.get(request.endpoint or "", ()))
        for limit in limits:
            if limit.scope == "conversation":
                key = (request.view_args or {}).get("conversation_id", "")
            else:
                key = request.remote_addr or "unknown"
            for item in self.items[limit.name]:
                self._hit(limit, item, key)

    def _hit(self, limit: Limit, item: RateLimitItem, key: str) -> None:
        from limits.errors import StorageError

        try:
            if self.limiter.hit(item, limit.name, key):
                return
            reset = self.limiter.get_window_stats(item, limit.name, key).reset_time
        except StorageError as error:
            log.warning("rate limit %s not checked: its storage is unavailable: %s", limit.name, error)
            return
        seconds = max(1, math.ceil(reset - time.time()))
        self.metrics.rate_limited(limit.name)
        raise ApiError(
            429,
            "rate_limited",
            limit.message.format(seconds=seconds),
            retry_after=seconds,
            details={"limit": limit.name, "allowed": str(item)},
        )


def init_app(app: Flask) -> None:
    settings = app.config["WIDGET_SERVER"]
    if not settings["RATE_LIMITS"]:
        return
    limits = RateLimits(settings, app.extensions["widget_server.metrics"])
    app.extensions["widget_server.rate_limits"] = limits
    app.before_request(limits.check)


def current_limits() -> RateLimits | None:
    return current_app.extensions.get("widget_server.rate_limits")
