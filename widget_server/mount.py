"""The chat inside a site's own Flask app: `init_app(app, url_prefix="/chat", **settings)`.

A site that already runs Flask serves the chat from its own process instead of a second
service. The chat is mounted as the whole application `create_app` builds, the one the
stand-alone server runs, behind werkzeug's `DispatcherMiddleware`: a request under the
prefix goes to the chat with the prefix moved from PATH_INFO to SCRIPT_NAME (PEP 3333,
"environ Variables"), so `url_for`, `request.url_root` and every URL the chat writes (the
panel's API base, the loader's, the console's, the kb links) start with it; every other
request goes to the site's app untouched.

Why a mounted application rather than the chat's blueprints registered on the site's app:
the chat's Content-Security-Policy and security headers, its JSON error pages (404, 405,
413, 500), its body limit (MAX_CONTENT_LENGTH), its JSON encoding, rate limits and Host
checks are app-wide in Flask; registered on the site's app they would reach the site's own
pages, and the site's would reach the chat's. Mounted, each keeps its own
(tests/test_mount.py checks both directions), and the site still reaches the chat's
service and settings through `app.extensions["widget_server"]`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from flask import Flask, request
from werkzeug.middleware.dispatcher import DispatcherMiddleware

from .app import create_app
from .chat.service import ChatService
from .handoff.service import HandoffService
from .services import SERVICES_KEY, Services
from .settings import ConfigError

EXTENSION_KEY = "widget_server"

# Path segments of unreserved characters (RFC 3986 §2.3), none of them "." or "..": the
# prefix is written into URLs as it is, and a browser resolves dot segments.
_PREFIX = re.compile(r"(/(?!\.{1,2}(?:/|$))[A-Za-z0-9._~-]+)+")


def parse_url_prefix(raw: str) -> str:
    """`/chat` or `/help/chat`: a path that starts with "/" and does not end with one."""
    if not isinstance(raw, str) or not _PREFIX.fullmatch(raw):
        raise ConfigError(
            f"url_prefix: {raw!r} is not a path to mount the chat at; use one such as '/chat' "
            "(starting with '/', no final '/', letters, digits and . _ ~ - between slashes)"
        )
    return raw


@dataclass(frozen=True)
class MountedChat:
    """What `init_app` put in the site's app: `app.extensions["widget_server"]`."""

    url_prefix: str
    app: Flask  # the chat's own application, as create_app built it

    @property
    def services(self) -> Services:
        built: Services = self.app.extensions[SERVICES_KEY]
        return built

    @property
    def service(self) -> ChatService:
        return self.services.chat

    @property
    def handoff(self) -> HandoffService:
        return self.services.handoff

    @property
    def settings(self) -> Mapping[str, Any]:
        settings: Mapping[str, Any] = self.app.config["WIDGET_SERVER"]
        return settings

    def loader_url(self) -> str:
        """The loader's path for the site's pages (`<script src="…">`), under the site's own
        mount point if a server mounted the site under one."""
        return f"{request.script_root}{self.url_prefix}/widget.js"


def init_app(
    app: Flask, url_prefix: str = "/chat", *, environ: Mapping[str, str] | None = None, **settings: Any
) -> MountedChat:
    """Serve the chat under `url_prefix` of `app`, configured by `settings` (the names of
    docs/configuration.md, `BACKEND="kb"` or `backend="kb"`) over the WIDGET_SERVER_*
    environment, as the stand-alone server is. Returns what it registered.

    The site's templates get `chat_loader_url()`. A site route under the prefix would never be
    reached, so one is refused here with its name (docs/serving.md, "Inside your own app").
    """
    prefix = parse_url_prefix(url_prefix)
    for rule in app.url_map.iter_rules():
        if rule.rule == prefix or rule.rule.startswith(prefix + "/"):
            raise ConfigError(
                f"url_prefix: the site's route {rule.rule} ({rule.endpoint}) is under {prefix}, "
                "where the chat answers instead; mount the chat at another path"
            )
    mounted: dict[str, MountedChat] = app.extensions.setdefault(EXTENSION_KEY + ".mounts", {})
    if prefix in mounted:
        raise ConfigError(f"url_prefix: a chat is already mounted at {prefix}")
    chat = MountedChat(prefix, create_app(settings, environ=environ, url_prefix=prefix))
    # Outermost, like the chat's own middleware (app.py): the site's middleware, installed
    # before or after, sees only the site's requests.
    app.wsgi_app = DispatcherMiddleware(app.wsgi_app, {prefix: chat.app})  # type: ignore[method-assign]
    mounted[prefix] = chat
    app.extensions[EXTENSION_KEY] = chat
    app.add_template_global(chat.loader_url, "chat_loader_url")
    return chat
