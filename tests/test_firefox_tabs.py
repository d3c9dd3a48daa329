"""tests/e2e/firefox_tabs.cjs, the hook that opens headless Firefox ESR's test pages as tabs: it
still finds, exactly once, the text of Playwright's driver it replaces (else it changes nothing
and every Firefox ESR test pays for a new window again: the hook's comment says how much), and
the test run's driver loads it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from .conftest import FIREFOX_TABS, with_firefox_tabs

NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="needs Node.js (bash .ci/test installs it)")


def driver_bundle() -> Path:
    import playwright

    return Path(playwright.__file__).parent / "driver" / "package" / "lib" / "coreBundle.js"


def run_node(script: str) -> dict:
    done = subprocess.run(
        [NODE, "-e", script], capture_output=True, text=True, timeout=60, check=True, env={"PATH": os.environ["PATH"]}
    )
    return json.loads(done.stdout)


def test_the_hook_replaces_exactly_one_passage_of_the_pinned_playwright_driver():
    script = f"""
        const fs = require('node:fs');
        const hook = require({json.dumps(str(FIREFOX_TABS))});
        const source = fs.readFileSync({json.dumps(str(driver_bundle()))}, 'utf8');
        const patched = hook.withTabs(source);
        console.log(JSON.stringify({{
          found: source.split(hook.WINDOW).length - 1,
          changed: patched !== source,
          tabs: patched.split(hook.TAB_WHEN_ALONE).length - 1,
          windowsLeft: patched.split(hook.WINDOW).length - 1,
        }}));
    """
    result = run_node(script)
    assert result["found"] == 1, "Playwright's doCreateNewPage changed: update tests/e2e/firefox_tabs.cjs"
    assert result["changed"] and result["tabs"] == 1 and result["windowsLeft"] == 0


def test_the_hook_leaves_text_without_the_passage_alone():
    script = f"""
        const hook = require({json.dumps(str(FIREFOX_TABS))});
        const twice = hook.WINDOW + '\\n' + hook.WINDOW;
        console.log(JSON.stringify({{
          other: hook.withTabs('const x = 1;') === 'const x = 1;',
          twice: hook.withTabs(twice) === twice,
        }}));
    """
    assert run_node(script) == {"other": True, "twice": True}


def test_the_test_runs_playwright_driver_loads_the_hook():
    assert with_firefox_tabs("") in os.environ["NODE_OPTIONS"]
    assert with_firefox_tabs(with_firefox_tabs("--max-old-space-size=512")) == with_firefox_tabs(
        "--max-old-space-size=512"
    )
    assert with_firefox_tabs("--max-old-space-size=512").startswith("--max-old-space-size=512 --require ")
