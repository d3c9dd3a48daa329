"""Firefox ESR's share of the browser tests (tests/firefox_share.py; docs/testing.md,
"Firefox ESR's share"): what is left out of Firefox is left out on purpose, with a reason that
points at tests that exist, and `--firefox-every-test` brings every case back."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from .firefox_share import MIN_REASON_WORDS, TESTS_DIR, reason_problems

GOOD = "the same browser side runs in Firefox in test_widget.py and A19, and the rest is the server's"


def test_a_reason_that_names_existing_tests_and_lines_passes():
    assert reason_problems(GOOD) == []
    assert reason_problems(GOOD.replace("A19", "A46-A52")) == []


@pytest.mark.parametrize(
    ("reason", "problem"),
    [
        (None, f"at least {MIN_REASON_WORDS} words"),
        ("Chromium is enough here", f"at least {MIN_REASON_WORDS} words"),
        (
            "the same browser side runs in Firefox elsewhere in this suite and the rest is the server's",
            "names no test file",
        ),
        (GOOD.replace("test_widget.py", "test_no_such_module.py"), "no test file test_no_such_module.py"),
        (GOOD.replace("A19", "A999"), "docs/accessibility.md has no line A999"),
        (GOOD.replace("A19", "A46-A999"), "docs/accessibility.md has no line A999"),
    ],
)
def test_a_reason_that_points_nowhere_is_refused(reason, problem):
    problems = reason_problems(reason)
    assert any(problem in line for line in problems), problems


def collected(*options: str) -> set[str]:
    """The browser tests' ids as the full run would collect them (both browsers)."""
    command = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:randomly"]
    browsers = ["--browser", "chromium", "--browser", "firefox"]
    result = subprocess.run(
        [*command, *browsers, *options, str(TESTS_DIR / "e2e")],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=TESTS_DIR.parent,
        # Not the outer run's options (a --junitxml would be written by this collection too).
        env={name: value for name, value in os.environ.items() if name != "PYTEST_ADDOPTS"},
    )
    # Exit 0, so every chromium_only reason in the suite passed reason_problems.
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    return {line for line in result.stdout.splitlines() if "::" in line}


@pytest.fixture(scope="module")
def shared():
    return collected()


@pytest.fixture(scope="module")
def every_test():
    return collected("--firefox-every-test")


def firefox_twin(node_id: str) -> str:
    return node_id.replace("[chromium", "[firefox", 1)


def test_chromium_runs_every_browser_test_and_firefox_a_share(shared, every_test):
    chromium = {node for node in every_test if "[chromium" in node}
    assert chromium and chromium <= shared
    firefox = {node for node in shared if "[firefox" in node}
    assert firefox < {firefox_twin(node) for node in chromium}
    # A module left to Chromium, a case of one, and a matrix sampled.
    left_out = {
        "tests/e2e/test_scale_out_widget.py::test_stop_cancels_the_generation_wherever_it_runs[firefox]",
        "tests/e2e/test_scroll_follow.py::test_a_failure_after_the_reader_scrolled_up_leaves_them_there[firefox]",
        "tests/e2e/test_refusal_language.py::test_a_message_too_long_for_the_server_is_refused_in_the_panels_language[firefox-es]",
    }
    assert left_out <= every_test
    assert not left_out & shared
    # Each contract line stays in both.
    contract = {node for node in chromium if "/test_accessibility_contract" in node}
    missing = {firefox_twin(node) for node in contract} - shared
    sampled = {node for node in missing if "-" in node.rsplit("[", 1)[1]}
    assert missing == sampled, sorted(missing - sampled)


def test_firefox_every_test_runs_every_case_in_firefox_too(every_test):
    chromium = {node for node in every_test if "[chromium" in node}
    firefox = {node for node in every_test if "[firefox" in node}
    assert firefox == {firefox_twin(node) for node in chromium}
