"""Real browsers for end-to-end tests: Debian's Chromium and Firefox ESR.

Browser downloads are impossible here, so Playwright drives the system
browsers: Chromium through `executable_path`, Firefox ESR through WebDriver
BiDi (any `moz-…` channel selects it). See docs/testing.md ("System browsers").
Run both with `pytest tests/e2e --browser chromium --browser firefox`.
"""

from __future__ import annotations

import pytest

# CHROMIUM, CHROMIUM_ARGS and FIREFOX: tests/e2e/test_orca.py imports them from here.
from widget_server.testing import CHROMIUM, CHROMIUM_ARGS, FIREFOX, ChatWidget  # noqa: F401

from ..conftest import TEST_CONFIG
from .hosting import HostSite


def pytest_collection_modifyitems(items):
    """A browser test that fails runs once more (docs/testing.md, "Reruns"): on two cores
    shared by three browsers, a step now and then outlasts a wait (the full runs of
    2026-11-30 and 2026-12-01 each had one to three such failures in about 1,200 browser
    tests, each passing when run again). The rerun is listed in the summary (`R`); a test
    that fails twice fails the run. Only tests/e2e/: the others have no reason to."""
    for item in items:
        if "/e2e/" in str(item.path).replace("\\", "/") and item.get_closest_marker("flaky") is None:
            item.add_marker(pytest.mark.flaky(reruns=1))


# The system browsers' launch arguments: tests/conftest.py `browser_type_launch_args`, for
# every test that uses pytest-playwright's fixtures.


@pytest.fixture(scope="session")
def host_site():
    site = HostSite()
    yield site
    site.stop()


# Our chat servers are the plugin's (widget_server.pytest_plugin: the
# fixtures site owners get), so every e2e test exercises the plugin and it
# cannot rot. This override narrows the plugin's test defaults to what our
# tests need: only the host site may embed (not `*`), fault injection on, a
# quick demo pace. The plugin's own `chat_server` fixture, used as is, is
# `chat_server_factory()` — this one.


@pytest.fixture
def chat_server_factory(chat_server_factory, host_site):
    """A chat server that allows the host site to embed it, faults enabled."""

    def start(**config):
        return chat_server_factory(
            **{**TEST_CONFIG, "DEMO_DELAY_SECONDS": 0.02, "EMBED_ORIGINS": host_site.origin, "FAULTS": True, **config}
        )

    return start


@pytest.fixture
def context(context):
    ChatWidget.install_recorder(context)
    return context


def chat_base_url(server, browser_name: str) -> str:
    """The chat server's URL as the host page names it.

    Chromium: http://127.0.0.1:P1 under a host at http://localhost:P2 —
    cross-site, as on a real site (third-party iframe, storage rules and all).
    Firefox ESR through WebDriver BiDi (Playwright 1.64) does not deliver
    clicks or keys into a cross-site iframe, which Fission runs in another
    process; http://localhost:P1 keeps it cross-origin (another port) but
    same-site, which BiDi drives. Measured on these machines, 2026-11-29.
    """
    return server.url if browser_name == "chromium" else server.url.replace("127.0.0.1", "localhost")


ANNOUNCE_INTERVAL_MS = 100


@pytest.fixture
def embed(request, page, host_site, browser_name):
    """Open a host page that embeds the widget; returns a ChatWidget. Without `server`, the
    test's `chat_server`, started only then: a test that brings its own server starts one."""

    def load(server=None, path="/", **data):
        if server is None:
            server = request.getfixturevalue("chat_server")
        # Sentences are announced at most every 100 ms (the panel's floor)
        # instead of the visitor's 1 s, so a test waits less for the
        # completion cue; tests about the pace pass announce_interval=1000
        # (test_accessibility_contract.py A5, test_orca.py).
        data.setdefault("announce_interval", ANNOUNCE_INTERVAL_MS)
        url = host_site.embed_page(chat_base_url(server, browser_name), path=path, **data)
        page.goto(url)
        widget = ChatWidget(page)
        widget.launcher.wait_for()
        return widget

    return load
