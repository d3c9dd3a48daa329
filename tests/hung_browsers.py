"""A bound on each phase of a browser test that ends only the hung browser (docs/testing.md,
"A hung test").

Some Playwright calls have no timeout (`page.evaluate`, `context.close`), so a browser that stops
answering holds its test, its worker and the run. When a phase (setup, call or teardown) of a
test that drives a browser runs longer than `browser_hang_seconds`, a timer thread kills the
browser processes this worker started: the pending Playwright call then fails ("browser has
been closed"), the test fails like any other, pytest-rerunfailures runs it once more in the same
worker if it is in tests/e2e/ (tests/e2e/conftest.py), and `RelaunchingBrowser` gives the rerun
and the tests after it a new browser. Nothing
ends the worker, which xdist could not recover from under `--dist loadgroup`. The log names the
test, the browser killed and the stack the test waited in. tests/conftest.py imports the
hooks; tests/e2e/test_hung_browsers.py runs a hung browser test in a child run.
"""

from __future__ import annotations

import faulthandler
import gc
import os
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Generator, Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

import pytest

from .processes import process_table

DEFAULT_BOUND_SECONDS = 120.0  # four times the slowest browser test of a full run
# The name each browser's processes carry in /proc/PID/comm (Debian's binaries and
# Playwright's own builds alike); its first process is the one Playwright's driver started.
# The kernel keeps 15 bytes of a name: "chromium-headle" is Debian's chromium-headless-shell.
BROWSER_COMMANDS = {
    "chromium": ("chromium", "chromium-headle", "chrome", "headless_shell"),
    "firefox": ("firefox", "firefox-esr"),
}
HUNG_SECTION = "hung browser"


def add_ini(parser: pytest.Parser) -> None:
    """The bound's setting; tests/conftest.py's `pytest_addoption` calls it."""
    parser.addini(
        "browser_hang_seconds",
        "seconds a phase of a browser test may take before its browser is killed (0: no bound)",
        default=str(DEFAULT_BOUND_SECONDS),
    )


class RelaunchingBrowser:
    """pytest-playwright's session-wide browser, launched again when it is gone: every
    attribute is the live browser's, so a context made after a kill gets a new browser."""

    def __init__(self, launch: Callable[[], Any]) -> None:
        self._launch = launch
        self._browser = launch()
        self.launches = 1

    def _live(self) -> Any:
        if not self._browser.is_connected():
            self._browser = self._launch()
            self.launches += 1
        return self._browser

    def __getattr__(self, name: str) -> Any:
        return getattr(self._live(), name)

    def close(self) -> None:
        if self._browser.is_connected():
            self._browser.close()


def browser_fixture(launch_browser: Callable[[], Any]) -> Generator[RelaunchingBrowser, None, None]:
    browser = RelaunchingBrowser(launch_browser)
    yield browser
    browser.close()


def browser_roots(browser_name: str | None) -> list[int]:
    """The first process of each browser this process started (through Playwright's driver) that
    `browser_name` names, or of every browser when it is None."""
    names = [
        command for name, commands in BROWSER_COMMANDS.items() if browser_name in (None, name) for command in commands
    ]
    table = list(process_table())
    parents = {pid: parent for pid, parent, _ in table}
    browser_pids = {pid for pid, _, command in table if command in names}

    def descends_from_us(pid: int) -> bool:
        seen = set()
        while pid > 1 and pid not in seen:
            seen.add(pid)
            pid = parents.get(pid, 0)
            if pid == os.getpid():
                return True
        return False

    return sorted(pid for pid in browser_pids if parents.get(pid) not in browser_pids and descends_from_us(pid))


def kill_browsers(browser_name: str | None) -> list[int]:
    """SIGKILL each browser's whole process group (Playwright starts a browser as its own group)."""
    killed = []
    for pid in browser_roots(browser_name):
        try:
            if os.getpgid(pid) == pid:
                os.killpg(pid, signal.SIGKILL)
            else:
                os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            continue
        killed.append(pid)
    return killed


def _bound(item: pytest.Item, when: str) -> float:
    """The bound of a phase of a test that drives a browser: every pytest-playwright fixture
    (page, context, browser, the Orca tests' own launches) depends on `playwright`. Other tests:
    none. The marker `browser_hang_seconds(N)` sets the bound of a test's own call, over the ini
    option; its setup and teardown keep the ini option's, as they may launch a browser."""
    if "playwright" not in getattr(item, "fixturenames", ()):
        return 0.0
    marker = item.get_closest_marker("browser_hang_seconds")
    if marker is not None and when == "call":
        return float(marker.args[0])
    return float(item.config.getini("browser_hang_seconds"))


def _report(item: pytest.Item, when: str, seconds: float) -> None:
    callspec = getattr(item, "callspec", None)
    browser_name = callspec.params.get("browser_name") if callspec is not None else None
    waiting = _waiting_stacks()  # before the kill, which wakes the test
    killed = kill_browsers(browser_name)
    message = (
        f"{item.nodeid}: its {when} ran over {seconds:g} s; killed {browser_name or 'every'} browser "
        f"(process groups {killed or 'none found'}) so that the test fails and is run once more"
    )
    item.stash.setdefault(_hangs, []).append(message)
    # The run's log, not the test's captured output: standard error with capture suspended (xdist
    # keeps a worker's standard output for its channel; its standard error is the run's).
    capture = item.config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled() if capture is not None else nullcontext():
        sys.stderr.write(f"\n+++ Hung browser: {message}. Where the test waited:\n")
        if waiting:
            sys.stderr.write("\n".join(waiting))
        else:
            faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
        sys.stderr.flush()


def _waiting_stacks() -> list[str]:
    """The main thread's stack and those of the suspended greenlets: Playwright's sync API runs
    the test in one greenlet and its event loop in another, and either may be the one running,
    so a thread dump alone may show only the loop, not the test's line."""
    try:
        from greenlet import greenlet
    except ImportError:
        return []
    running = sys._current_frames().get(threading.main_thread().ident or 0)
    frames = [running] if running is not None else []
    frames += [
        suspended.gr_frame
        for suspended in gc.get_objects()
        if isinstance(suspended, greenlet) and suspended.gr_frame is not None
    ]
    return ["".join(traceback.format_stack(frame)) for frame in frames]


_hangs = pytest.StashKey[list]()


@contextmanager
def _watch(item: pytest.Item, when: str) -> Iterator[None]:
    seconds = _bound(item, when)
    if seconds <= 0:
        yield
        return
    timer = threading.Timer(seconds, _report, (item, when, seconds))
    timer.name = f"hang bound of {item.nodeid} ({when})"
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        timer.join()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, None, None]:
    with _watch(item, "setup"):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    with _watch(item, "call"):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, None, None]:
    with _watch(item, "teardown"):
        try:
            return (yield)
        except Exception as error:
            # A killed browser's contexts cannot be closed (pytest-playwright's teardown stops
            # their tracing): expected after a kill, and the test has failed already.
            if item.stash.get(_hangs, []) and _only_closed_targets(error):
                return None
            raise


def _only_closed_targets(error: BaseException) -> bool:
    """Playwright's TargetClosedError, alone or in a group; by name, as Playwright exports it
    only from its private `_impl` package."""
    if isinstance(error, BaseExceptionGroup):
        return all(_only_closed_targets(part) for part in error.exceptions)
    return type(error).__name__ == "TargetClosedError"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Generator[None, Any, Any]:
    """Each report of a test whose browser was killed carries why (a `hung browser` section,
    printed with the failure's details)."""
    report = yield
    hangs = item.stash.get(_hangs, [])
    if hangs:
        report.sections.append((HUNG_SECTION, "\n".join(hangs)))
        if call.when == "teardown":
            item.stash[_hangs] = []
    return report
