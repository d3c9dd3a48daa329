"""The application factory: `create_app(config)` wires settings, store, backend and blueprints."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from flask import Flask
from flask.json.provider import DefaultJSONProvider
from werkzeug.middleware.proxy_fix import ProxyFix

from . import actions_api, api, errorhandlers, kb_routes, monitoring, openapi, qa, ratelimits, transport, web
from .backends.base import create_backend
from .config import load_settings
from .metrics import Metrics
from .resources import resource_dir
from .service import ChatService
from .stores import create_store

log = logging.getLogger("widget_server")


def create_app(config: Mapping[str, Any] | None = None, *, environ: Mapping[str, str] | None = None) -> Flask:
    settings = load_settings(config, environ)
    app = Flask(
        __name__,
        static_folder=str(resource_dir("static")),
        template_folder=str(resource_dir("templates")),
    )
    app.config["WIDGET_SERVER"] = settings
    # Werkzeug refuses larger bodies with 413 before we read them.
    app.config["MAX_CONTENT_LENGTH"] = settings["MAX_BODY_BYTES"]
    if isinstance(app.json, DefaultJSONProvider):
        app.json.ensure_ascii = False  # docs/protocol.md: non-ASCII characters are sent as is
    logging.getLogger("widget_server").setLevel(settings["LOG_LEVEL"])
    if "*" in settings["EMBED_ORIGINS"]:
        log.warning("EMBED_ORIGINS is '*': any website may embed this chat panel")

    if settings["PROXY_HOPS"]:
        # The client address (rate limits, logs) from X-Forwarded-For, set by
        # exactly this many trusted proxies; never trusted without them.
        # Flask's documented way to add WSGI middleware is to replace this method.
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=settings["PROXY_HOPS"])  # type: ignore[method-assign]

    store = create_store(settings)
    backend = create_backend(settings["BACKEND"], settings)
    metrics = Metrics(enabled=settings["METRICS"])
    app.extensions["widget_server.metrics"] = metrics
    app.extensions["widget_server.service"] = ChatService(store, backend, settings, metrics)

    errorhandlers.init_app(app)
    transport.init_app(app)  # the id converters, before the blueprints whose rules name them
    ratelimits.init_app(app)
    monitoring.init_app(app)
    api.init_app(app)
    openapi.init_app(app)
    web.init_app(app)
    app.register_blueprint(qa.bp)  # /qa: 404 unless the QA setting is on
    kb_routes.init_app(app)  # /kb/<path>: the kb backend's sources (404 with another backend)
    app.register_blueprint(actions_api.bp)  # actions: confirm, dismiss, list (widget_server/actions.py)
    return app
