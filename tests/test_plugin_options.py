"""The plugin's `--chat-system-browsers` option (README, "Testing your site's embed").

It fills pytest-playwright's `browser_type_launch_args` with Debian's browsers
(docs/testing.md, "System browsers"); a browser it cannot find is a one-line
usage error before any test runs. Each check runs a separate pytest in a
folder with no conftest, as a site owner runs it, and launches no browser:
tests/e2e/test_plugin_example.py runs the README's example with the option
in real browsers. Like the e2e tests, these need Debian's browsers installed
(`.ci/test` installs them).
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from widget_server import pytest_plugin, testing

LAUNCH_ARGS_TEST = """
def test_launch_args(browser_name, browser_type_launch_args):
    print("LAUNCH", browser_name, repr(browser_type_launch_args))
"""

# pytest-playwright launches headless unless --headed: Chromium from its headless shell where
# Debian's chromium-headless-shell is installed (`bash .ci/test` installs it).
HEADLESS_CHROMIUM = (
    testing.CHROMIUM_HEADLESS_SHELL if Path(testing.CHROMIUM_HEADLESS_SHELL).exists() else testing.CHROMIUM
)
CHROMIUM_LAUNCH = {"executable_path": HEADLESS_CHROMIUM, "args": testing.CHROMIUM_ARGS}
FIREFOX_LAUNCH = {"executable_path": testing.FIREFOX, "channel": "moz-firefox"}


def run_site_pytest(folder: Path, *args: str, before_pytest: str = "") -> subprocess.CompletedProcess:
    """pytest in `folder` with its own (empty) ini, plugins loaded from their
    entry points; `before_pytest` is Python run first in the same process."""
    (folder / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    (folder / "test_launch_args.py").write_text(LAUNCH_ARGS_TEST, encoding="utf-8")
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("WIDGET_SERVER_", "PYTEST_"))}
    code = before_pytest + "\nimport sys, pytest\nsys.exit(pytest.main(sys.argv[1:]))\n"
    return subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            "-p",
            "no:cacheprovider",
            "-s",
            "-c",
            str(folder / "pytest.ini"),
            str(folder),
            *args,
        ],
        cwd=folder,
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
    )


def launch_args_by_browser(result: subprocess.CompletedProcess) -> dict[str, dict]:
    # With -s a test's print follows pytest's progress on the same line.
    found = re.finditer(r"LAUNCH (\w+) (\{.*\})$", result.stdout, re.M)
    return {match[1]: ast.literal_eval(match[2]) for match in found}


# -- the option fills the launch arguments -------------------------------------


def test_the_option_fills_pytest_playwrights_launch_args_with_the_system_browsers(tmp_path):
    result = run_site_pytest(tmp_path, "--chat-system-browsers", "--browser", "chromium", "--browser", "firefox")
    assert result.returncode == 0, result.stdout + result.stderr
    assert launch_args_by_browser(result) == {"chromium": CHROMIUM_LAUNCH, "firefox": FIREFOX_LAUNCH}


def test_without_the_option_the_launch_args_are_pytest_playwrights(tmp_path):
    result = run_site_pytest(tmp_path, "--browser", "chromium", "--browser", "firefox")
    assert result.returncode == 0, result.stdout + result.stderr
    assert launch_args_by_browser(result) == {"chromium": {}, "firefox": {}}


@pytest.mark.parametrize(
    "plugin_order",
    [
        # pytest loads `-p` plugins before those from entry points: each
        # order, made explicit by blocking one's entry point and naming its module.
        pytest.param(["-p", "no:widget_server", "-p", "widget_server.pytest_plugin"], id="widget_server-first"),
        pytest.param(["-p", "no:playwright", "-p", "pytest_playwright.pytest_playwright"], id="playwright-first"),
    ],
)
def test_the_option_wins_whichever_plugin_pytest_loads_first(tmp_path, plugin_order):
    result = run_site_pytest(tmp_path, *plugin_order, "--chat-system-browsers", "--browser", "chromium")
    assert result.returncode == 0, result.stdout + result.stderr
    assert launch_args_by_browser(result) == {"chromium": CHROMIUM_LAUNCH}


def test_pytest_playwrights_own_options_stay(tmp_path):
    result = run_site_pytest(tmp_path, "--chat-system-browsers", "--headed", "--slowmo", "5")
    assert result.returncode == 0, result.stdout + result.stderr
    # Headed: the whole browser, not its headless shell.
    headed = {"executable_path": testing.CHROMIUM, "args": testing.CHROMIUM_ARGS}
    assert launch_args_by_browser(result) == {"chromium": {"headless": False, "slow_mo": 5, **headed}}


# -- a browser it cannot find is a one-line usage error ------------------------


def usage_error_lines(result: subprocess.CompletedProcess) -> list[str]:
    assert result.returncode == pytest.ExitCode.USAGE_ERROR, result.stdout + result.stderr
    assert "LAUNCH" not in result.stdout, "a test ran"
    return [line for line in result.stderr.splitlines() if line.strip()]


def test_a_missing_system_browser_is_a_one_line_usage_error(tmp_path):
    missing = tmp_path / "no-firefox-esr"
    result = run_site_pytest(
        tmp_path,
        "--chat-system-browsers",
        "--browser",
        "chromium",
        "--browser",
        "firefox",
        before_pytest=f"import widget_server.testing\nwidget_server.testing.FIREFOX = {str(missing)!r}",
    )
    assert usage_error_lines(result) == [
        f"ERROR: --chat-system-browsers: no system firefox at {missing} (on Debian: apt-get install firefox-esr);"
        " or leave the option out and run `playwright install firefox`"
    ]


def test_a_browser_without_a_system_build_is_a_one_line_usage_error(tmp_path):
    result = run_site_pytest(tmp_path, "--chat-system-browsers", "--browser", "webkit")
    assert usage_error_lines(result) == [
        "ERROR: --chat-system-browsers: no system browser for 'webkit'; system browsers exist for: chromium, firefox;"
        " or leave the option out and run `playwright install webkit`"
    ]


def test_the_option_without_pytest_playwright_is_a_one_line_usage_error(tmp_path):
    result = run_site_pytest(tmp_path, "-p", "no:playwright", "--chat-system-browsers")
    assert usage_error_lines(result) == [
        "ERROR: --chat-system-browsers sets pytest-playwright's launch arguments: pip install pytest-playwright"
    ]


# -- the one definition, in process --------------------------------------------


def test_the_launch_args_of_each_system_browser(monkeypatch, tmp_path):
    for name in ("chromium", "firefox-esr"):
        executable = tmp_path / name
        executable.write_text("#!/bin/sh\n")
        executable.chmod(0o755)
    monkeypatch.setattr(testing, "CHROMIUM", str(tmp_path / "chromium"))
    monkeypatch.setattr(testing, "FIREFOX", str(tmp_path / "firefox-esr"))
    assert testing.system_browser_launch_args("chromium") == {
        "executable_path": str(tmp_path / "chromium"),
        "args": testing.CHROMIUM_ARGS,
    }
    assert testing.system_browser_launch_args("firefox") == {
        "executable_path": str(tmp_path / "firefox-esr"),
        "channel": "moz-firefox",
    }
    # Each caller gets its own list: a test that adds a flag changes no other launch.
    testing.system_browser_launch_args("chromium")["args"].append("--force-renderer-accessibility")
    assert "--force-renderer-accessibility" not in testing.CHROMIUM_ARGS


def test_headless_chromium_starts_from_the_headless_shell_when_it_is_installed(monkeypatch, tmp_path):
    chromium = tmp_path / "chromium"
    chromium.write_text("#!/bin/sh\n")
    chromium.chmod(0o755)
    shell = tmp_path / "chromium-headless-shell"
    monkeypatch.setattr(testing, "CHROMIUM", str(chromium))
    monkeypatch.setattr(testing, "CHROMIUM_HEADLESS_SHELL", str(shell))
    # Not installed: full Chromium, headless or not.
    assert testing.system_browser_launch_args("chromium", headless=True)["executable_path"] == str(chromium)
    shell.write_text("#!/bin/sh\n")
    shell.chmod(0o755)
    assert testing.system_browser_launch_args("chromium", headless=True) == {
        "executable_path": str(shell),
        "args": testing.CHROMIUM_ARGS,
    }
    # A headed launch (Orca, --headed) needs the whole browser.
    assert testing.system_browser_launch_args("chromium", headless=False)["executable_path"] == str(chromium)
    assert testing.system_browser_launch_args("chromium")["executable_path"] == str(chromium)


@pytest.mark.parametrize("kind", ["absent", "not executable"])
def test_an_executable_that_cannot_run_is_missing(monkeypatch, tmp_path, kind):
    chromium = tmp_path / "chromium"
    if kind == "not executable":
        chromium.write_text("")
    monkeypatch.setattr(testing, "CHROMIUM", str(chromium))
    with pytest.raises(testing.SystemBrowserError, match=r"^no system chromium at .* apt-get install chromium\)$"):
        testing.system_browser_launch_args("chromium")
    with pytest.raises(pytest.UsageError) as raised:
        pytest_plugin.system_browser_launch_args("chromium")
    assert "\n" not in str(raised.value) and str(raised.value).startswith("--chat-system-browsers: no system chromium")
