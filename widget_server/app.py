"""The application factory: `create_app(config)` wires settings, store, backend and blueprints."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from flask import Flask
from flask.json.provider import DefaultJSONProvider
from werkzeug.middleware.proxy_fix import ProxyFix

from . import (
    errorhandlers,
    kb_routes,
    monitoring,
    openapi,
    qa,
    ratelimits,
    transport,
    web,
)
from .actions import api as actions_api
from .agents import api as agents_api
from .agents.sign_in_delay import create_sign_in_delays
from .attachments import api as attachments_api
from .attachments import create_attachment_store
from .backends.base import create_backend
from .chat import api as chat_api
from .chat.service import ChatService
from .feedback import api as feedback_api
from .flask_app import WidgetFlask
from .handoff import api as handoff_api
from .handoff import create_handoff_store
from .handoff.service import HandoffService
from .metrics import Metrics
from .resources import resource_dir, static_folder
from .revisions import api as revisions_api
from .settings import load_settings
from .stores import create_store
from .wire.errors import INVALID_HOST

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment

log = logging.getLogger("widget_server")


def _host_name(host: str) -> str:
    """The name part of a Host header, lower-cased, without the port or a final dot."""
    host = host.strip().lower()
    if host.startswith("["):  # [IPv6]:port
        return host.partition("]")[0] + "]"
    return host.rpartition(":")[0].rstrip(".") if ":" in host else host.rstrip(".")


class PublicHost:
    """WSGI middleware: every request sees the configured public origin, never its own Host.

    With `PUBLIC_URL` set, the request's Host and scheme are replaced by `PUBLIC_URL`'s before
    Flask sees them, so every absolute URL the server writes (the panel's `apiBase`, the demo
    page's snippet, the kb backend's links through `Turn.server_url`, routing's redirects)
    is built on it. With `enforce` (ENV=production), a request whose Host names neither
    `PUBLIC_URL`'s host nor one of `TRUSTED_HOSTS` (ports are not compared) is refused
    first, with 400 `invalid_host`, before anything counts or reads it.
    """

    def __init__(self, app: WSGIApplication, public_url: str, trusted_hosts: Iterable[str], enforce: bool) -> None:
        self.app = app
        self.scheme, _, self.netloc = public_url.partition("://")
        self.allowed = {_host_name(self.netloc), *trusted_hosts} - {""}
        self.enforce = enforce

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        if self.enforce and _host_name(environ.get("HTTP_HOST", "")) not in self.allowed:
            refusal = INVALID_HOST("This server does not answer for that host name. Use its public address.")
            body = json.dumps(refusal.to_json()).encode("utf-8")
            start_response(
                "400 Bad Request",
                [
                    ("Content-Type", "application/json"),
                    ("Content-Length", str(len(body))),
                    ("Cache-Control", "no-store"),
                    ("X-Content-Type-Options", "nosniff"),
                ],
            )
            return [body]
        if self.netloc:
            environ["HTTP_HOST"] = self.netloc
            environ["wsgi.url_scheme"] = self.scheme
        return self.app(environ, start_response)


def create_app(
    config: Mapping[str, Any] | None = None, *, environ: Mapping[str, str] | None = None, url_prefix: str = ""
) -> Flask:
    """The chat server. `url_prefix` is the path a host app mounts it at (mount.py `init_app`,
    which dispatches requests under it here with that path in SCRIPT_NAME): "" stand-alone."""
    settings = load_settings(config, environ)
    app = WidgetFlask(
        __name__,
        static_folder=str(static_folder(settings.server.assets)),
        static_url_path="/static",  # whichever copy is served (ASSETS), at the same URLs
        template_folder=str(resource_dir("templates")),
    )
    app.config["WIDGET_SERVER"] = settings
    # What links written outside a request (the agents' mail) put after PUBLIC_URL.
    app.config["WIDGET_SERVER_URL_PREFIX"] = url_prefix
    # Werkzeug refuses larger bodies with 413 before we read them.
    app.config["MAX_CONTENT_LENGTH"] = settings.web.max_body_bytes
    if isinstance(app.json, DefaultJSONProvider):
        app.json.ensure_ascii = False  # docs/protocol.md: non-ASCII characters are sent as is
    logging.getLogger("widget_server").setLevel(settings.server.log_level)
    if "*" in settings.web.embed_origins:
        log.warning("EMBED_ORIGINS is '*': any website may embed this chat panel")

    if settings.web.proxy_hops:
        # The client address (rate limits, logs) from X-Forwarded-For, set by
        # exactly this many trusted proxies; never trusted without them.
        # Flask's documented way to add WSGI middleware is to replace this method.
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=settings.web.proxy_hops)  # type: ignore[method-assign]

    if settings.web.public_url or settings.server.env == "production":
        # Outermost: the Host is checked, and replaced, before anything else reads it.
        app.wsgi_app = PublicHost(  # type: ignore[method-assign]
            app.wsgi_app,
            settings.web.public_url,
            settings.web.trusted_hosts,
            enforce=settings.server.env == "production",
        )

    store = create_store(settings)
    backend = create_backend(settings.server.backend, settings)
    metrics = Metrics(enabled=settings.server.metrics)
    app.extensions["widget_server.metrics"] = metrics
    chat = app.extensions["widget_server.service"] = ChatService(store, backend, settings, metrics)
    # Hand-off to a person (widget_server/handoff/): its store beside the chat store.
    handoff = HandoffService(create_handoff_store(settings, store), store, settings, metrics)
    handoff.shutting_down = lambda: chat.shutting_down  # its streams end resumably at SIGTERM too
    app.extensions["widget_server.handoff"] = handoff
    chat.handoff_enabled = handoff.enabled  # what Turn.offers_handoff tells a backend

    errorhandlers.init_app(app)
    transport.init_app(app)  # the id converters, before the blueprints whose rules name them
    ratelimits.init_app(app)
    monitoring.init_app(app)
    chat_api.init_app(app)
    openapi.init_app(app)
    web.init_app(app)
    app.register_blueprint(qa.bp)  # /qa: 404 unless the QA setting is on
    kb_routes.init_app(app)  # /kb/<path>: the kb backend's sources (404 with another backend)
    app.register_blueprint(actions_api.bp)  # actions: confirm, dismiss, list (widget_server/actions/)
    app.register_blueprint(feedback_api.bp)  # feedback on answers: put, delete (widget_server/feedback/)
    app.register_blueprint(revisions_api.bp)  # regenerate and edit the last turn (widget_server/revisions/)
    # /agent: the agents' console, sign-in and API; after the hand-off service, whose hooks it sets.
    agents_api.init_app(app, store)
    # The wait after failed sign-ins, in the sessions' backend (agents/sign_in_delay.py).
    app.extensions[agents_api.SIGN_IN_DELAYS_KEY] = create_sign_in_delays(store, metrics)
    app.register_blueprint(handoff_api.bp)  # hand-off: request, messages, the conversation stream
    # Attachments (widget_server/attachments/): upload, download, delete; the store beside the chat store.
    # The service reads a message's files through it (Turn.attachments, the history).
    chat.attachment_store = create_attachment_store(settings, store)
    # ... and the console's transcript lists a turn's files as the visitor's history does.
    handoff.turn_attachments = lambda cid, sent: [found.to_json() for found in chat.turn_attachments(cid, sent)]
    attachments_api.init_app(app, chat.attachment_store, chat.deleted_listeners)
    return app
