"""The Redis stores' Lua scripts, read from the `.lua` files beside their code.

Each script is a file of its package's `lua/` folder (`stores/redis/lua/append.lua`,
`handoff/lua/commit.lua`, …) that starts with a `--` comment block: what its KEYS and ARGV
are and what it returns. A store reads its scripts once, when its module is imported, and
registers them once per client: nothing is read per call. The files are package data, so an
installed wheel finds them as the checkout does (importlib.resources; tests/test_install.py).
"""

from __future__ import annotations

import functools
from importlib.resources import files


@functools.cache
def load_script(package: str, name: str) -> str:
    """The source of `<package>/lua/<name>.lua` (`package` is a dotted package name)."""
    return (files(package) / "lua" / f"{name}.lua").read_text(encoding="utf-8")
