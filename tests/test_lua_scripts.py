"""The Redis stores' Lua scripts are `.lua` files (widget_server/stores/lua.py).

- Each starts with a `--` comment block that says what its KEYS and ARGV are and what it
  returns, before its first line of code.
- Each is loaded by its package's code (`load_script(<package>, "<name>")`): no file is left
  behind when a script is renamed or removed, and no call names a file that is not there.
- load_script reads a file once (the stores load their scripts at import).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from widget_server.stores.lua import load_script

from .helpers import REPO_ROOT

PACKAGE_DIR = REPO_ROOT / "widget_server"
SCRIPTS = sorted(PACKAGE_DIR.rglob("lua/*.lua"))
# A call in the code: load_script("widget_server.handoff", "commit"), or with the chat store's
# SCRIPTS constant (stores/redis/core.py).
CALL = re.compile(r"""load_script\((?:"(?P<package>[\w.]+)"|(?P<constant>SCRIPTS)), "(?P<name>\w+)"\)""")


def package_of(script: Path) -> str:
    """The dotted package whose lua/ folder holds `script`."""
    return ".".join(script.parent.parent.relative_to(REPO_ROOT).parts)


def loaded_scripts() -> set[tuple[str, str]]:
    found = set()
    for path in PACKAGE_DIR.rglob("*.py"):
        for match in CALL.finditer(path.read_text(encoding="utf-8")):
            package = match["package"] or "widget_server.stores.redis"
            found.add((package, match["name"]))
    return found


def test_there_are_scripts():
    assert len(SCRIPTS) >= 20, SCRIPTS


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda path: path.relative_to(PACKAGE_DIR).as_posix())
def test_a_script_starts_with_what_its_keys_and_argv_are_and_what_it_returns(script):
    lines = script.read_text(encoding="utf-8").splitlines()
    header = []
    for line in lines:
        if not line.startswith("--"):
            break
        header.append(line)
    assert header, f"{script.name} does not start with a -- comment block"
    text = "\n".join(header)
    for part in ("-- KEYS", "-- ARGV", "-- Returns"):
        assert part in text, f"{script.name}'s header does not say {part!r}"
    assert len(header) < len(lines), f"{script.name} has no code"


def test_every_script_is_loaded_and_every_load_finds_its_script():
    files = {(package_of(script), script.stem) for script in SCRIPTS}
    assert sorted(files - loaded_scripts()) == [], "a .lua file no code loads"
    assert sorted(loaded_scripts() - files) == [], "a load_script() call whose file is missing"


def test_load_script_reads_the_file_once():
    script = PACKAGE_DIR / "handoff" / "lua" / "commit.lua"
    assert load_script("widget_server.handoff", "commit") == script.read_text(encoding="utf-8")
    assert load_script("widget_server.handoff", "commit") is load_script("widget_server.handoff", "commit")
