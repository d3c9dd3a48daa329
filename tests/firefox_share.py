"""Which cases of the browser tests Firefox ESR runs (docs/testing.md, "Firefox ESR's share").

Chromium runs every browser test. Firefox ESR, driven through WebDriver BiDi, costs about
four CPU-seconds a test on these 2-core machines against Chromium's one and a half
(docs/performance.md, "The test suite"), so the full run gives it the cases where the engine is what is tested:

- `chromium_only(reason=...)`, on a test or a whole module (`pytestmark`), leaves the Firefox
  case out. The reason says which tests prove the same browser side in Firefox (by file, or
  by contract line A<n> of docs/accessibility.md) and why the rest is the server's or code
  both engines run alike; `reason_problems` checks that every file and line it names exists,
  so a reason cannot outlive what it points to.
- `firefox_sample(name=[...])` keeps the Firefox cases of a matrix whose parameter has one of
  the values listed.

tests/conftest.py deselects what is left out (deselected, not skipped: the share is the plan),
unless pytest runs with `--firefox-every-test`.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any

TESTS_DIR = Path(__file__).resolve().parent
ACCESSIBILITY_CONTRACT = TESTS_DIR.parent / "docs" / "accessibility.md"

# A reason must say at least this much: which Firefox tests, and why this case adds nothing.
MIN_REASON_WORDS = 12

_FILE = re.compile(r"\b(test_[a-z0-9_]+\.py)\b")
# "A38", and ranges written "A46-A52" (both ends are checked).
_LINE = re.compile(r"\bA(\d{1,3})\b")


@cache
def _contract_lines() -> set[str]:
    return set(re.findall(r"\*\*A(\d{1,3})\*\*", ACCESSIBILITY_CONTRACT.read_text(encoding="utf-8")))


@cache
def _test_files() -> set[str]:
    return {path.name for path in TESTS_DIR.rglob("test_*.py")}


def reason_problems(reason: Any) -> list[str]:
    """What is wrong with a `chromium_only` reason: empty list when nothing."""
    if not isinstance(reason, str) or len(reason.split()) < MIN_REASON_WORDS:
        return [
            f"the reason must say, in at least {MIN_REASON_WORDS} words, which Firefox tests prove its browser side"
        ]
    files, lines = _FILE.findall(reason), _LINE.findall(reason)
    if not files and not lines:
        return ["the reason names no test file (test_….py) and no contract line (A<n>) that Firefox runs"]
    problems = [f"no test file {name}" for name in files if name not in _test_files()]
    known = _contract_lines()
    problems += [f"docs/accessibility.md has no line A{number}" for number in lines if number not in known]
    return problems


def firefox_keeps(item: Any) -> bool:
    """Whether Firefox ESR runs this (Firefox) case of a browser test. Raises ValueError,
    naming the test, for a mark that is used wrongly."""
    chromium_only = item.get_closest_marker("chromium_only")
    if chromium_only is not None:
        problems = reason_problems(chromium_only.kwargs.get("reason"))
        if problems:
            raise ValueError(f"{item.nodeid}: chromium_only: {'; '.join(problems)}")
        return False
    sample = item.get_closest_marker("firefox_sample")
    if sample is not None:
        params = item.callspec.params
        for name, values in sample.kwargs.items():
            if name not in params:
                raise ValueError(f"{item.nodeid}: firefox_sample names {name!r}, not a parameter")
            if params[name] not in values:
                return False
    return True
