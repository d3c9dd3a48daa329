"""The application factory: `create_app(config)`: settings, the services built from them
(services.py), and the blueprints."""

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
    monitoring,
    openapi,
    plugins,
    qa,
    ratelimits,
    transport,
    web,
)
from .actions import api as actions_api
from .agents import api as agents_api
from .attachments import api as attachments_api
from .chat import api as chat_api
from .dashboard import api as dashboard_api
from .feedback import api as feedback_api
from .flask_app import WidgetFlask
from .handoff import api as handoff_api
from .identity import api as identity_api
from .privacy import api as privacy_api
from .resources import resource_dir, static_folder
from .revisions import api as revisions_api
from .services import SERVICES_KEY, build_services
from .settings import load_settings
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

    # Every store and service, built once (services.py); mail links to the console at its
    # public address under the path the chat is mounted at.
    services = build_services(settings, console_url=settings.web.public_url + url_prefix + "/agent")
    app.extensions[SERVICES_KEY] = services
    if services.webhook_delivery is not None:
        # Per serving process (gunicorn builds the app in each worker): queued webhooks, this
        # process's and those a stopped worker left in a Redis store, go out from here.
        services.webhook_delivery.start()

    errorhandlers.init_app(app)
    transport.init_app(app)  # the id converters, before the blueprints whose rules name them
    ratelimits.init_app(app)
    monitoring.init_app(app)
    chat_api.init_app(app)
    openapi.init_app(app)
    web.init_app(app)
    app.register_blueprint(qa.bp)  # /qa: 404 unless the QA setting is on
    # The backend's own routes, if it names them (the kb backend's sources at /kb/<path>).
    backend_routes = getattr(services.backend, "routes", None)
    if backend_routes:
        app.register_blueprint(plugins.load(plugins.BACKENDS, backend_routes))
    app.register_blueprint(actions_api.bp)  # actions: confirm, dismiss, list (widget_server/actions/)
    app.register_blueprint(feedback_api.bp)  # feedback on answers: put, delete (widget_server/feedback/)
    app.register_blueprint(revisions_api.bp)  # regenerate and edit the last turn (widget_server/revisions/)
    app.register_blueprint(agents_api.bp)  # /agent: the agents' console, sign-in and API
    app.register_blueprint(dashboard_api.bp)  # /admin: the owner dashboard (widget_server/dashboard/)
    app.register_blueprint(handoff_api.bp)  # hand-off: request, messages, the conversation stream
    attachments_api.init_app(app)  # attachments: upload, download, delete (widget_server/attachments/)
    identity_api.init_app(app)  # a known visitor's own conversations (widget_server/identity/)
    privacy_api.init_app(app)  # a known visitor's own data: export and erase (widget_server/privacy/)
    return app
