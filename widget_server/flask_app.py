"""The Flask class the server runs: Flask's, with its per-request overhead trimmed.

Every request calls `Flask.ensure_sync` once for each before- and after-request hook, for
the view and for each teardown (seven times for a new conversation or a message), and each
call asks `inspect.iscoroutinefunction` whether the function is `async def`. The answer
for a given function never changes, so it is asked once per function here and kept. Flask
documents `ensure_sync` as the method to override to change how the app runs async views
(flask/app.py, `Flask.ensure_sync`). Measured with bench/stream_path.py `--through wsgi`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flask import Flask

# At most this many functions are kept: the app registers a few dozen hooks, views and error
# handlers; a caller making a new callable per request (a partial, a lambda) is then asked
# about every time instead of growing the table without end.
MOST_KEPT = 1024


class WidgetFlask(Flask):
    """Flask, with `ensure_sync`'s answer kept per function."""

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
