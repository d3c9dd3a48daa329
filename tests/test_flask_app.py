"""widget_server.flask_app: Flask's `ensure_sync` answered once per function,
with what Flask's own gives: the function itself, or for `async def` Flask's wrapper (or
its error when the `async` extra is missing); and every route's URL builders made at their
first use, building what Werkzeug's own would."""

from __future__ import annotations

import functools

import pytest
from flask import Flask
from werkzeug.routing import Rule

from widget_server import flask_app, transport, web
from widget_server.chat import api
from widget_server.flask_app import LazyBuilderRule, WidgetFlask


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


def _werkzeugs_own_app():
    """The server's app as Werkzeug's own rule class would make it."""
    from widget_server import create_app

    from .conftest import TEST_CONFIG

    original = WidgetFlask.url_rule_class
    WidgetFlask.url_rule_class = Rule
    try:
        return create_app(TEST_CONFIG, environ={})
    finally:
        WidgetFlask.url_rule_class = original


def _sample_values(rule):
    return {name: f"v{index}-é/x" for index, name in enumerate(sorted(rule.arguments))}


def test_every_route_builds_the_url_werkzeugs_own_rule_builds(app):
    own = _werkzeugs_own_app()
    rules = list(app.url_map.iter_rules())
    assert len(rules) == len(list(own.url_map.iter_rules())) > 40
    assert all(isinstance(rule, LazyBuilderRule) for rule in rules)
    with app.test_request_context(), own.test_request_context():
        for rule in rules:
            values = _sample_values(rule)
            for extra in ({}, {"page": "2", "q": "a b"}):  # a query string: the other builder
                for external in (False, True):
                    ours = app.url_for(rule.endpoint, **values, **extra, _external=external)
                    theirs = own.url_for(rule.endpoint, **values, **extra, _external=external)
                    assert ours == theirs, rule.rule
    # Without unknown values appended: the builder url_for does not use.
    adapter, own_adapter = app.url_map.bind("localhost"), own.url_map.bind("localhost")
    for rule in rules:
        values = {**_sample_values(rule), "page": "2"}
        ours = adapter.build(rule.endpoint, values, append_unknown=False)
        assert ours == own_adapter.build(rule.endpoint, values, append_unknown=False), rule.rule


def test_a_builder_is_compiled_when_first_used_and_then_kept(app, monkeypatch):
    compiled = []
    original = Rule._compile_builder

    def counting(rule, append_unknown=True):
        compiled.append((rule.endpoint, append_unknown))
        return original(rule, append_unknown)

    monkeypatch.setattr(Rule, "_compile_builder", counting)
    rule = next(rule for rule in app.url_map.iter_rules() if rule.arguments)
    with app.test_request_context():
        first = app.url_for(rule.endpoint, **_sample_values(rule))  # with unknown values appended
        assert compiled == [(rule.endpoint, True)]
        assert app.url_for(rule.endpoint, **_sample_values(rule), page="2").startswith(first + "?")
    assert compiled == [(rule.endpoint, True)]
    adapter = app.url_map.bind("localhost")
    assert adapter.build(rule.endpoint, _sample_values(rule), append_unknown=False) == first
    assert compiled == [(rule.endpoint, True), (rule.endpoint, False)]
