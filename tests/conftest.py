from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from widget_server import create_app

from .firefox_share import firefox_keeps
from .helpers import ChatClient, LiveServer, load_seed_answers
from .hung_browsers import (  # noqa: F401  # hooks: a hung browser is killed, its test rerun
    RelaunchingBrowser,
    add_ini,
    browser_fixture,
    pytest_runtest_call,
    pytest_runtest_makereport,
    pytest_runtest_setup,
    pytest_runtest_teardown,
)

_ROOT = Path(__file__).resolve().parents[1]
# Loaded into Playwright's driver: headless Firefox ESR opens a test's page as a tab, not a new
# window (tests/e2e/firefox_tabs.cjs says why; tests/test_firefox_tabs.py that it still applies).
FIREFOX_TABS = _ROOT / "tests" / "e2e" / "firefox_tabs.cjs"


def with_firefox_tabs(node_options: str) -> str:
    """NODE_OPTIONS with the hook required (once), what was there kept."""
    required = f'--require "{FIREFOX_TABS}"'
    return node_options if required in node_options else f"{node_options} {required}".strip()


def pytest_configure(config):
    # Every process that starts a Playwright driver (the workers; the controller, which starts
    # none, too: it costs nothing) passes its environment on to it (playwright/_impl/_driver.py).
    os.environ["NODE_OPTIONS"] = with_firefox_tabs(os.environ.get("NODE_OPTIONS", ""))
    rebuild_minified(config)


def rebuild_minified(config):
    """Tests run what visitors are sent: static/min/ (ASSETS=minified, docs/configuration.md),
    rebuilt here from the sources when one changed, once, before xdist starts its workers (a
    worker has `workerinput`). Without Node.js and the pinned esbuild (`bash .ci/test` installs
    both) nothing is rebuilt; the gate `node .ci/js/build.mjs --check` still tells staleness."""
    node = shutil.which("node")
    if hasattr(config, "workerinput") or node is None:
        return
    if not (_ROOT / ".ci" / "js" / "node_modules" / "esbuild").is_dir():
        return
    subprocess.run([node, str(_ROOT / ".ci" / "js" / "build.mjs")], check=True, timeout=120)


# Tests run with a fast demo pace; tests that need pacing set their own.
# Rate limits off: a test makes more requests from 127.0.0.1 in a second
# than a visitor does in an hour (tests/test_rate_limits.py turns them on).
TEST_CONFIG = {"DEMO_DELAY_SECONDS": 0.0, "LOG_LEVEL": "WARNING", "RATE_LIMITS": False}


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args, browser_name):
    """Debian's browsers for any test that uses pytest-playwright's fixtures, inside tests/e2e or
    not (docs/testing.md, "System browsers"), as the plugin's --chat-system-browsers does."""
    from widget_server.pytest_plugin import with_system_browser

    return with_system_browser(browser_type_launch_args, browser_name)


@pytest.fixture(scope="session")
def browser(launch_browser) -> Iterator[RelaunchingBrowser]:
    """pytest-playwright's browser, launched again for the tests after one was killed as hung
    (tests/hung_browsers.py)."""
    yield from browser_fixture(launch_browser)


@pytest.fixture
def app():
    return create_app(TEST_CONFIG, environ={})


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture(scope="session")
def seed_answers() -> dict:
    return load_seed_answers()


# The API's integration tests (tests/test_api_*.py) run once per store: the
# embedded memory store, a real redis-server and a real Redis Cluster of three
# masters (tests/redis_support.py), so all keep the same promises.
STORE_KINDS = ("memory", "redis", "cluster")
# …and those that serve the chat over HTTP run once more mounted at /chat inside a site's own
# Flask app (widget_server/mount.py `init_app`), on the memory store: the same behaviour and
# tests as the stand-alone server (docs/serving.md, "Inside your own app"). (store kind, mount
# path), by id.
SERVINGS = {
    "memory": ("memory", ""),
    "redis": ("redis", ""),
    "cluster": ("cluster", ""),
    "mounted": ("memory", "/chat"),
}


def pytest_addoption(parser):
    add_ini(parser)
    parser.addoption(
        "--firefox-every-test",
        action="store_true",
        help="run every browser test in Firefox ESR too, the Chromium-only ones and whole matrices "
        'included (docs/testing.md, "Firefox ESR\'s share")',
    )
    parser.addoption(
        "--memory-store-only",
        action="store_true",
        help="leave out the tests that need a redis-server (the quick loop: docs/testing.md); "
        "the store-parametrized ones still run on the memory store",
    )


def pytest_collection_modifyitems(config, items):
    """Both browsers, without twice the time (tests/firefox_share.py): Chromium runs every
    browser test; Firefox ESR the cases `firefox_keeps` keeps, or all of them with
    --firefox-every-test. Deselected, not skipped: nothing was left unsaid, the share is the plan.
    With --memory-store-only (the quick loop's), the tests that need a redis-server are
    deselected too: every store-parametrized test still runs on the memory store. Then the
    tests marked slow are put first."""
    every_test = config.getoption("--firefox-every-test")
    memory_only = config.getoption("--memory-store-only")
    kept, dropped = [], []
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        if memory_only and needs_redis(item, params):
            dropped.append(item)
            continue
        if params.get("browser_name") != "firefox":
            kept.append(item)
            continue
        try:
            keeps = firefox_keeps(item)
        except ValueError as error:
            raise pytest.UsageError(str(error)) from None
        if not keeps and not every_test:
            dropped.append(item)
        else:
            kept.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept
    # The longest first (docs/testing.md, "Parallel runs"): xdist hands out tests, and each
    # xdist_group whole, in this order, so a slow group or test collected late (they are mostly
    # tests/test_*.py, collected after tests/e2e/) would run while the other workers had nothing
    # left. A stable sort: the order is otherwise the collection's.
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


REDIS_FIXTURES = {"redis_server", "redis_cluster", "redis_or_cluster"}


def needs_redis(item: pytest.Item, params: dict[str, Any]) -> bool:
    """A test that starts or uses a redis-server: one of the Redis fixtures, or a store-kind
    parameter ("redis", "cluster", or the `serving` pair that starts with one)."""
    if REDIS_FIXTURES & set(getattr(item, "fixturenames", ())):
        return True
    for value in params.values():
        kind = value[0] if isinstance(value, tuple) and value else value
        if isinstance(kind, str) and kind in ("redis", "cluster"):
            return True
    return False


# pytest-playwright's fixtures: a test parametrized under one of these names keeps the fixture's
# dependencies, so each of its cases would also run once per browser, for nothing.
PLAYWRIGHT_FIXTURES = frozenset({"page", "context", "browser", "browser_name", "browser_type", "playwright"})


def pytest_generate_tests(metafunc):
    for marker in metafunc.definition.iter_markers("parametrize"):
        names = marker.args[0]
        names = [name.strip() for name in names.split(",")] if isinstance(names, str) else list(names)
        clash = PLAYWRIGHT_FIXTURES.intersection(names)
        if clash:
            raise pytest.UsageError(
                f"{metafunc.definition.nodeid}: the parameter {sorted(clash)} is named after a "
                "pytest-playwright fixture; name it otherwise"
            )
    if metafunc.module.__name__.rsplit(".", 1)[-1].startswith("test_api_") and "serving" in metafunc.fixturenames:
        over_http = {"live_server", "live_server_factory"} & set(metafunc.fixturenames)
        ids = list(SERVINGS) if over_http else list(STORE_KINDS)
        metafunc.parametrize("serving", [SERVINGS[i] for i in ids], ids=ids, scope="module", indirect=True)


@pytest.fixture(scope="module")
def smtp():
    """A real SMTP server on loopback (tests/smtp_support.py) for the tests of the mail an
    agent's inbox sends; its `inbox.mails`, what it received."""
    from .smtp_support import SmtpServer

    server = SmtpServer().start()
    yield server
    server.stop()


@pytest.fixture
def agents_file(tmp_path):
    """An agents file with tests/agent_support.py's AGENTS (alice and bob)."""
    from .agent_support import write_agents

    path = tmp_path / "agents.json"
    write_agents(path)
    return path


@pytest.fixture(scope="session")
def redis_server():
    from .redis_support import RedisServer

    server = RedisServer().start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def redis_cluster():
    from .redis_support import RedisClusterServers

    cluster = RedisClusterServers().start()
    yield cluster
    cluster.stop()


@pytest.fixture(params=["redis", "cluster"])
def redis_or_cluster(request):
    """One redis-server, then the 3-master cluster, emptied: for tests of the Redis store's
    parts that must hold on both (tests/test_redis_tail.py, tests/test_redis_compaction.py)."""
    server = request.getfixturevalue("redis_cluster" if request.param == "cluster" else "redis_server")
    server.flush()
    return server


@pytest.fixture
def shared_store(request, store_kind):
    """The Redis (or Redis Cluster) the test's servers share, emptied: for tests of what every
    conversation of a store shares (the hand-off desk, presence). None on the memory store."""
    if store_kind == "memory":
        return None
    server = request.getfixturevalue("redis_cluster" if store_kind == "cluster" else "redis_server")
    server.flush()
    return server


@pytest.fixture(scope="module")
def serving(request) -> tuple[str, str]:
    """(store kind, mount path): tests outside tests/test_api_*.py use the memory store, stand-alone,
    unless they say otherwise."""
    return getattr(request, "param", ("memory", ""))


@pytest.fixture(scope="module")
def store_kind(serving) -> str:
    return serving[0]


@pytest.fixture(scope="module")
def url_prefix(serving) -> str:
    return serving[1]


@pytest.fixture
def store_config(request, store_kind) -> dict[str, Any]:
    if store_kind == "memory":
        return {}
    server = request.getfixturevalue("redis_cluster" if store_kind == "cluster" else "redis_server")
    return {"STORE": server.url}


@pytest.fixture
def live_server_factory(store_config, url_prefix, tmp_path) -> Callable[..., LiveServer]:
    servers: list[LiveServer] = []
    # A confirmed action is recorded in the test's own folder, never in the working directory
    # (the setting's default, docs/configuration.md).
    records = {"ACTIONS_RECORD_PATH": str(tmp_path / "widget-server-actions.jsonl")}

    def start(**config: Any) -> LiveServer:
        server = LiveServer({**TEST_CONFIG, **records, **store_config, **config}, url_prefix).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def live_server(live_server_factory) -> LiveServer:
    return live_server_factory()


@pytest.fixture
def chat_factory():
    clients: list[ChatClient] = []

    def make(server: LiveServer) -> ChatClient:
        chat = ChatClient(server.url).new_conversation()
        clients.append(chat)
        return chat

    yield make
    for chat in clients:
        chat.close()
