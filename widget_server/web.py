"""Transport: pages and health. The demo host page lives at `/`."""

from __future__ import annotations

from flask import Blueprint, Flask, current_app, jsonify, render_template

bp = Blueprint("web", __name__)


@bp.get("/")
def index():
    return render_template("index.html")


@bp.get("/healthz")
def healthz():
    chat = current_app.extensions["widget_server.service"]
    return jsonify({"status": "ok", "backend": chat.backend.name, "open_streams": chat.open_streams})


def init_app(app: Flask) -> None:
    app.register_blueprint(bp)
