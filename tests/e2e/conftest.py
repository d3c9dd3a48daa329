"""Real browsers for end-to-end tests: Debian's Chromium and Firefox ESR.

Browser downloads are impossible here, so Playwright drives the system
browsers: Chromium through `executable_path`, Firefox ESR through WebDriver
BiDi (any `moz-…` channel selects it). See ../shared/notes/.
Run both with `pytest tests/e2e --browser chromium --browser firefox`.
"""

from __future__ import annotations

import pytest

CHROMIUM = "/usr/bin/chromium"
FIREFOX = "/usr/bin/firefox-esr"

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    # Without these Chromium keeps trying to reach hosts this network refuses.
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args, browser_name):
    if browser_name == "chromium":
        return {**browser_type_launch_args, "executable_path": CHROMIUM, "args": CHROMIUM_ARGS}
    if browser_name == "firefox":
        return {**browser_type_launch_args, "executable_path": FIREFOX, "channel": "moz-firefox"}
    raise pytest.UsageError(f"no system browser for {browser_name!r}; use --browser chromium or firefox")
