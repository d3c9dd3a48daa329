"""The Flask class the server runs: Flask's, with its per-request and per-app overhead trimmed.

Every request calls `Flask.ensure_sync` once for each before- and after-request hook, for
the view and for each teardown (seven times for a new conversation or a message), and each
call asks `inspect.iscoroutinefunction` whether the function is `async def`. The answer
for a given function never changes, so it is asked once per function here and kept. Flask
documents `ensure_sync` as the method to override to change how the app runs async views
(flask/app.py, `Flask.ensure_sync`). Measured with bench/stream_path.py `--through wsgi`.

Every route, when the app is created, has Werkzeug generate and compile two URL builders
(Python source built as an AST, `compile`d: `Rule.compile` calls `Rule._compile_builder`
twice), which is most of what creating the app costs; a builder is used only by `url_for`,
which most routes never see. `LazyBuilderRule` makes each builder when it is first used,
the same function Werkzeug would have made. Flask documents `url_rule_class` as the way to
give the app its own rule class (flask/sansio/app.py, `App.url_rule_class`). Measured in
docs/performance.md ("Creating the app").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flask import Flask
from werkzeug.routing import Rule

# At most this many functions are kept: the app registers a few dozen hooks, views and error
# handlers; a caller making a new callable per request (a partial, a lambda) is then asked
# about every time instead of growing the table without end.
MOST_KEPT = 1024


class LazyBuilderRule(Rule):
    """A Werkzeug rule whose URL builders are compiled at their first use, not when it is added.

    `_compile_builder` is Werkzeug's own, not a documented hook: tests/test_flask_app.py builds
    every route's URL with this rule and with Werkzeug's and compares them, so a Werkzeug that
    changes it fails there rather than here."""

    def _compile_builder(self, append_unknown: bool = True) -> Callable[..., tuple[str, str]]:
        made: Callable[..., tuple[str, str]] | None = None

        # Bound to the rule by `Rule.compile` (`.__get__(rule, None)`), as Werkzeug's builder is:
        # the rule comes first, positionally, so no URL variable's name can clash with it.
        def build_when_first_used(*rule_and_arguments: Any, **values: Any) -> tuple[str, str]:
            nonlocal made
            if made is None:
                # Two threads may both make it: the same function, so either one will do.
                made = Rule._compile_builder(self, append_unknown)
            return made(*rule_and_arguments, **values)

        return build_when_first_used


class WidgetFlask(Flask):
    """Flask, with `ensure_sync`'s answer kept per function and URL builders made when used."""

    url_rule_class = LazyBuilderRule

    def __init__(self, *arguments: Any, **keywords: Any) -> None:
        super().__init__(*arguments, **keywords)
        # function → what Flask's ensure_sync made of it: the function itself, or for an
        # `async def` function its async_to_sync wrapper. Bound methods compare and hash
        # by their object and function, so a hook registered as `limits.check` is one entry.
        self._synchronous: dict[Callable[..., Any], Callable[..., Any]] = {}

    def ensure_sync(self, func: Callable[..., Any]) -> Callable[..., Any]:
        try:
            return self._synchronous[func]
        except KeyError:
            made = super().ensure_sync(func)
            if len(self._synchronous) < MOST_KEPT:
                self._synchronous[func] = made
            return made
        except TypeError:  # an unhashable callable: asked every time, as Flask does
            return super().ensure_sync(func)
