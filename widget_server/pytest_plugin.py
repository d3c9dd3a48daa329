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
  and `events()` work on whatever page the test then opens; what a site's own
  script does goes through the page's public `window.ChatWidget`
  (`send_from_page()`, `set_composer()`, `set_context()`, `record_host_events()`:
  docs/testing.md, "The host page's API in tests").

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

`--chat-system-browsers` is for machines whose browsers come from the OS
(Debian's `chromium` and `firefox-esr`) rather than `playwright install`:
it adds `widget_server.testing.system_browser_launch_args` to
pytest-playwright's `browser_type_launch_args`. Which Playwright versions
drive Firefox ESR: docs/testing.md, "System browsers".
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from . import testing
from .settings import ENV_PREFIX
from .testing import RECORDER_SCRIPT, ChatServer, ChatWidget

__all__ = [
    "RECORDER_SCRIPT",
    "TEST_DEFAULTS",
    "ChatServer",
    "ChatWidget",
    "chat_server_settings",
    "system_browser_launch_args",
    "with_system_browser",
]

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
    group.addoption(
        "--chat-system-browsers",
        dest="chat_system_browsers",
        action="store_true",
        default=False,
        help="Run pytest-playwright's browsers from the OS instead of `playwright install`: Chromium "
        f"{testing.CHROMIUM}, Firefox ESR {testing.FIREFOX} through WebDriver BiDi (Firefox ESR 153 needs "
        "playwright==1.64.1).",
    )


SYSTEM_BROWSERS_PLUGIN = "widget_server_system_browsers"


def pytest_configure(config: pytest.Config) -> None:
    """With `--chat-system-browsers`, check every browser the run asks for
    now (a missing one is a one-line usage error, before any test runs),
    then register the fixture that launches them."""
    if not config.getoption("chat_system_browsers"):
        return
    try:
        browser_names = config.getoption("browser")  # pytest-playwright's --browser
    except ValueError:  # no such option: pytest-playwright is not loaded
        raise pytest.UsageError(
            "--chat-system-browsers sets pytest-playwright's launch arguments: pip install pytest-playwright"
        ) from None
    for browser_name in browser_names or ["chromium"]:  # pytest-playwright's default
        system_browser_launch_args(browser_name)
    # Registered here, after every plugin pytest loaded from an entry point
    # (pytest-playwright's included): of two fixtures of one name registered
    # by plugins, the later one overrides the earlier, and entry points load
    # in no fixed order. tests/test_plugin_options.py checks the override.
    config.pluginmanager.register(SystemBrowserFixtures, SYSTEM_BROWSERS_PLUGIN)


def system_browser_launch_args(browser_name: str, *, headless: bool = False) -> dict[str, Any]:
    """`widget_server.testing.system_browser_launch_args`, its failure a
    one-line `pytest.UsageError` that says what to install."""
    try:
        return testing.system_browser_launch_args(browser_name, headless=headless)
    except testing.SystemBrowserError as error:
        raise pytest.UsageError(
            f"--chat-system-browsers: {error}; or leave the option out and run `playwright install {browser_name}`"
        ) from None


def with_system_browser(browser_type_launch_args: dict[str, Any], browser_name: str) -> dict[str, Any]:
    """pytest-playwright's launch arguments with the system browser's on top, headless
    (its default) unless they say otherwise: the plugin's fixture and tests/conftest.py."""
    headless = browser_type_launch_args.get("headless", True)
    return {**browser_type_launch_args, **system_browser_launch_args(browser_name, headless=headless)}


class SystemBrowserFixtures:
    """The plugin object `pytest_configure` registers for `--chat-system-browsers`."""

    @pytest.fixture(scope="session")
    @staticmethod
    def browser_type_launch_args(browser_type_launch_args: dict[str, Any], browser_name: str) -> dict[str, Any]:
        """pytest-playwright's launch arguments, with the system browser's on top."""
        return with_system_browser(browser_type_launch_args, browser_name)


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


class IdentityTokens:
    """The `identity_token` fixture: `identity_token("user-42", name="Ada")` signs a known
    visitor's token with `.secret` (give it to the server: `chat_server_factory(IDENTITY_SECRET=
    identity_token.secret)`); the other arguments are `testing.mint_identity_token`'s."""

    def __init__(self, secret: str) -> None:
        self.secret = secret

    def __call__(self, subject: str, **options: Any) -> str:
        options.setdefault("secret", self.secret)
        return testing.mint_identity_token(subject, **options)


@pytest.fixture
def identity_token() -> IdentityTokens:
    """Mint identity tokens for a chat server started with `IDENTITY_SECRET=identity_token.secret`."""
    return IdentityTokens(testing.IDENTITY_TEST_SECRET)


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
