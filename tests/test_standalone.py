"""The repository stands alone: a clone with nothing beside it collects and runs.

A `git clone` of the committed tree into an empty folder (no sibling folder
exists beside it) must collect the whole suite, and the tests
that read the project's data files must pass there. A static check keeps
code, tests, benches and CI scripts from naming a path outside the
repository.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from .helpers import REPO_ROOT

# Paths that climb out of the repository into a sibling folder (the samples below).
OUTSIDE_REFERENCE = re.compile(
    r"\.\./shared|\bshared/(fixtures|seeds|notes)\b|parents?(\[\d+\])?[^#\n]*[\"']shared[\"']"
)
CHECKED_FOLDERS = ("widget_server", "tests", "bench", ".ci", "static", "templates", "docs")


def tracked_files() -> list[Path]:
    listed = subprocess.run(["git", "ls-files", *CHECKED_FOLDERS], cwd=REPO_ROOT, capture_output=True, text=True)
    if listed.returncode != 0:
        pytest.skip("not a git checkout (an sdist): nothing to clone")  # the sdist has no .git
    return [REPO_ROOT / name for name in listed.stdout.splitlines()]


def test_no_file_names_a_path_outside_the_repository():
    this_file = Path(__file__).resolve()
    offenders = []
    for path in tracked_files():
        if path.resolve() == this_file or path.suffix not in {".py", ".js", ".md", ".toml", ".json", ".html", ""}:
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        offenders += [f"{path.relative_to(REPO_ROOT)}: {m.group(0)}" for m in OUTSIDE_REFERENCE.finditer(text)]
    assert offenders == []


def test_the_outside_reference_check_can_fail():
    # Built from parts, so this file holds no such path itself.
    sibling = "sha" + "red"
    assert OUTSIDE_REFERENCE.search(f'SEED = REPO_ROOT.parent / "{sibling}" / "fixtures"')
    assert OUTSIDE_REFERENCE.search(f"see ../{sibling}/notes/browsers.md")
    assert not OUTSIDE_REFERENCE.search("a store shared by several workers")


@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> Path:
    tracked_files()  # skips outside a git checkout
    folder = tmp_path_factory.mktemp("lonely") / "widget_server_clone"
    subprocess.run(["git", "clone", "--quiet", str(REPO_ROOT), str(folder)], check=True)
    assert list(folder.parent.iterdir()) == [folder]  # nothing beside the clone
    return folder


def run_pytest_in(clone: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # The clone's own package first, ahead of the editable install's.
    environment = {**os.environ, "PYTHONPATH": str(clone)}
    environment.pop("PYTEST_XDIST_WORKER", None)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "0", *args],
        cwd=clone,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_clone_with_nothing_beside_it_collects_the_whole_suite(clone):
    result = run_pytest_in(clone, "--collect-only", "-q", "--browser", "chromium", "--browser", "firefox")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    summary = result.stdout.strip().splitlines()[-1]
    collected = int(re.search(r"(\d+) tests? collected", summary).group(1))
    assert collected > 1000, summary


def test_a_clone_runs_the_tests_that_read_the_projects_data(clone):
    # The seed answers (tests/helpers.py → the package's data/), the docs and
    # the panel's strings: what once came from outside the repository.
    result = run_pytest_in(
        clone,
        "-q",
        "tests/test_sse.py::test_seed_answers_round_trip_exactly",
        "tests/test_chunking.py",
        "tests/test_docs.py",
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert " passed" in result.stdout.strip().splitlines()[-1]
