"""pytest plugin for sites that embed the chat widget.

Installed with the package and loaded by pytest automatically (entry point
`pytest11`, name `widget_server`; `-p no:widget_server` turns it off). It
gives a test a live chat server and a page object for the widget:

- `chat_server`: a live chat server on a free loopback port, with `.url`,
  `.app`, `.service` and `.embed_snippet(**data_attrs)`, the one-line
  `<script src=… defer data-…>` tag for a host page. It is the real app in
  a background thread of the test process, not a `widget-server`
  subprocess, so that `.app` and `.service` are the live objects the
  browser talks to (`widget_server.testing.ChatServer` says more).
- `chat_server_factory(**settings)`: more servers, or other settings
  (`chat_server_factory(DEMO_DELAY_SECONDS=0.3)`); all stop after the test.
- `chat_widget`: a `ChatWidget` for pytest-playwright's `page`, with the
  announcement recorder installed on the page's context, so `announcements()`
  and `events()` work on whatever page the test then opens.

Settings of the servers, lowest first: the server's defaults <
`WIDGET_SERVER_*` environment variables (read as `widget-server` reads them)
< the plugin's test default `EMBED_ORIGINS="*"` < `--chat-backend` /
`--chat-store` < the factory's keyword arguments. `EMBED_ORIGINS` is `*`
(any site may frame the panel) ONLY inside these test servers, because a
test's host page lives on an origin nobody knows in advance (a random
port); a deployed server keeps its own allow-list. Pass `EMBED_ORIGINS` to
the factory to test the allow-list itself.

Playwright and axe are optional: nothing here imports them until a test
uses `chat_widget` (which needs pytest-playwright's `page` fixture), so
the plugin costs nothing to anyone who does not drive a browser.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from .config import ENV_PREFIX
from .testing import RECORDER_SCRIPT, ChatServer, ChatWidget

__all__ = ["RECORDER_SCRIPT", "TEST_DEFAULTS", "ChatServer", "ChatWidget", "chat_server_settings"]

# Only for servers started by the fixtures; see the module docstring.
TEST_DEFAULTS: dict[str, Any] = {"EMBED_ORIGINS": "*"}

# command-line option dest -> setting name (its env fallback is WIDGET_SERVER_<name>)
_OPTIONS = {"chat_backend": "BACKEND", "chat_store": "STORE"}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("widget_server", "widget_server chat server (the chat_server fixtures)")
    group.addoption(
        "--chat-backend",
        dest="chat_backend",
        default=None,
        metavar="NAME",
        help="Answer backend of the chat_server fixtures: a registered name (demo) or package.module:Class "
        "[env WIDGET_SERVER_BACKEND; default demo].",
    )
    group.addoption(
        "--chat-store",
        dest="chat_store",
        default=None,
        metavar="NAME",
        help="Store of the chat_server fixtures [env WIDGET_SERVER_STORE; default memory].",
    )


def chat_server_settings(config: pytest.Config, environ: Any = None, **overrides: Any) -> dict[str, Any]:
    """The explicit settings a fixture server gets: the test defaults, then
    `--chat-backend`/`--chat-store` (else `WIDGET_SERVER_BACKEND`/`_STORE`),
    then `overrides`. The rest of the environment applies beneath them."""
    environ = os.environ if environ is None else environ
    settings = dict(TEST_DEFAULTS)
    for dest, name in _OPTIONS.items():
        value = config.getoption(dest) or environ.get(ENV_PREFIX + name)
        if value:
            settings[name] = value
    settings.update(overrides)
    return settings


@pytest.fixture
def chat_server_factory(request: pytest.FixtureRequest) -> Iterator[Callable[..., ChatServer]]:
    """Start live chat servers: `chat_server_factory(**settings)`; stopped after the test."""
    servers: list[ChatServer] = []

    def start(**settings: Any) -> ChatServer:
        server = ChatServer(chat_server_settings(request.config, **settings), environ=os.environ).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def chat_server(chat_server_factory: Callable[..., ChatServer]) -> ChatServer:
    """A live chat server with the session's backend and store."""
    return chat_server_factory()


@pytest.fixture
def chat_widget(page: Any) -> ChatWidget:
    """A `ChatWidget` for `page`, recording announcements from its next load on.

    Needs pytest-playwright (the `page` fixture). Install the recorder
    before the page loads the widget, i.e. request this fixture before
    `page.goto(...)`. For another page: `ChatWidget.install_recorder(context)`
    then `ChatWidget(other_page)`.
    """
    ChatWidget.install_recorder(page.context)
    return ChatWidget(page)
