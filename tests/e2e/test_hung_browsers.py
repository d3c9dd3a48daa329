"""A browser that stops answering fails its test alone (tests/hung_browsers.py; docs/testing.md,
"A hung test"): the bound kills that browser, the test is run once more in the same worker on a
new one, and the tests after it get a live browser. Shown in a child run with the suite's own
fixtures and hooks, under xdist with `--dist loadgroup` as `.ci/test` runs it, in both browsers,
with a bound of 10 s on the test that hangs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ..helpers import run_pytest

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]

CONFTEST = """
# The suite's own: the relaunching browser, the system browsers' launch arguments, the bound.
from tests.conftest import browser, browser_type_launch_args, pytest_addoption
from tests.hung_browsers import (
    pytest_runtest_call,
    pytest_runtest_makereport,
    pytest_runtest_setup,
    pytest_runtest_teardown,
)
"""

HANGS = """
import os
from pathlib import Path

import pytest


def test_the_first_test_launches_the_browser(page):
    assert page.evaluate("() => 6 * 7") == 42


@pytest.mark.flaky(reruns=1)
@pytest.mark.browser_hang_seconds({bound})
def test_hangs_on_its_first_attempt(page):
    attempts = Path(os.environ["HANG_ATTEMPTS"])
    first = not attempts.exists()
    attempts.write_text("tried")
    if first:
        page.evaluate("() => new Promise(() => {})")  # a browser that never answers
    assert page.evaluate("() => 6 * 7") == 42


def test_the_next_test_gets_a_live_browser(page, browser):
    assert page.evaluate("() => 6 * 7") == 42
    assert browser.launches == 2
"""
WAITS_ON_LINE = 19  # the never-answered `page.evaluate` above, counted from 1

# The hanging test's own bound on its call (its marker), short enough for the suite; its setup,
# which launches the browser again for the rerun, keeps the suite's bound.
BOUND_SECONDS = 10


@pytest.mark.parametrize("engine", ["chromium", "firefox"])
def test_a_hung_browser_is_killed_its_test_rerun_on_a_new_one_and_the_run_goes_on(tmp_path, engine):
    (tmp_path / "conftest.py").write_text(CONFTEST, encoding="utf-8")
    # Not under an e2e/ folder: the bound goes by the fixtures a test uses, not by where it is.
    (tmp_path / "test_hangs.py").write_text(HANGS.replace("{bound}", str(BOUND_SECONDS)), encoding="utf-8")
    done = run_pytest(
        "-c",
        str(ROOT / "pyproject.toml"),
        "--rootdir",
        str(tmp_path),
        "-n",
        "1",
        "--dist",
        "loadgroup",
        "--browser",
        engine,
        str(tmp_path / "test_hangs.py"),
        cwd=tmp_path,
        environment={"PYTHONPATH": str(ROOT), "HANG_ATTEMPTS": str(tmp_path / "attempts")},
    )
    log = done.stdout + done.stderr
    assert done.returncode == 0, log
    assert "3 passed, 1 rerun" in done.stdout.strip().splitlines()[-1], log
    test = f"test_hangs.py::test_hangs_on_its_first_attempt[{engine}]"
    # The run's log names the test, the phase, the browser killed, and where the test waited.
    assert re.search(
        rf"\+\+\+ Hung browser: {re.escape(test)}: its call ran over {BOUND_SECONDS} s; "
        rf"killed {engine} browser \(process groups \[\d+\]\)",
        done.stderr,
    ), log
    assert f'test_hangs.py", line {WAITS_ON_LINE}, in test_hangs_on_its_first_attempt' in done.stderr, log
    # The summary lists the rerun.
    assert f"RERUN {test}" in done.stdout, log
