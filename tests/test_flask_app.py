"""widget_server.flask_app: Flask's `ensure_sync` answered once per function,
with what Flask's own gives: the function itself, or for `async def` Flask's wrapper (or
its error when the `async` extra is missing)."""

from __future__ import annotations

import functools

import pytest
from flask import Flask

from widget_server import flask_app, transport, web
from widget_server.chat import api
from widget_server.flask_app import WidgetFlask


def _flasks_own(function):
    try:
        return ("made", Flask(__name__).ensure_sync(function))
    except Exception as error:  # no asgiref: Flask says to install the async extra
        return ("refused", type(error), str(error))


def test_a_plain_function_is_itself_and_asked_about_once(monkeypatch):
    app = WidgetFlask(__name__)
    asked = []
    original = Flask.ensure_sync

    def counting(self, function):
        asked.append(function)
        return original(self, function)

    monkeypatch.setattr(Flask, "ensure_sync", counting)

    def view():
        return "ok"

    assert app.ensure_sync(view) is view
    assert app.ensure_sync(view) is view
    assert asked == [view]


def test_a_bound_method_is_one_entry():
    class Limits:
        def check(self):
            return None

    limits = Limits()
    app = WidgetFlask(__name__)
    assert app.ensure_sync(limits.check) == limits.check
    assert app.ensure_sync(limits.check) == limits.check
    assert len(app._synchronous) == 1


def test_an_async_function_gets_what_flask_gives_it():
    async def view():
        return "ok"

    app = WidgetFlask(__name__)
    expected = _flasks_own(view)
    if expected[0] == "made":  # asgiref is installed: Flask's wrapper, made once and kept
        # (not called here: a test process may already run an event loop in this thread,
        # where asgiref refuses to run one).
        made = app.ensure_sync(view)
        assert made is not view and type(made) is type(expected[1])
        assert app.ensure_sync(view) is made
    else:
        with pytest.raises(expected[1], match="async"):
            app.ensure_sync(view)
        assert view not in app._synchronous  # refused, not kept: asked again next time


def test_an_unhashable_callable_is_asked_about_every_time():
    class Unhashable:
        __hash__ = None

        def __call__(self):
            return "ok"

    function = Unhashable()
    app = WidgetFlask(__name__)
    assert app.ensure_sync(function) is function
    assert app._synchronous == {}


def test_at_most_so_many_functions_are_kept(monkeypatch):
    monkeypatch.setattr(flask_app, "MOST_KEPT", 3)
    app = WidgetFlask(__name__)
    made = [functools.partial(print, index) for index in range(5)]  # new callables, as per request
    for function in made:
        assert app.ensure_sync(function) is function
    assert list(app._synchronous) == made[:3]


def test_the_server_and_its_requests_use_it(client):
    assert isinstance(client.application, WidgetFlask)
    response = client.post("/api/v1/conversations")
    assert response.status_code == 201
    # The hooks and the view that request ran are kept, each as itself (none is async).
    kept = client.application._synchronous
    assert {transport.read_bounded_body, web.security_headers, api.create_conversation} <= set(kept)
    assert all(made is function for function, made in kept.items())
