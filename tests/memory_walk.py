"""How many bytes of Python objects a structure holds: the walk the memory-bound tests
(tests/security/) and bench/memory.py compare the stores' own byte estimates with."""

from __future__ import annotations

import sys
from collections import deque
from enum import Enum


def deep_size(root: object) -> int:
    """Bytes of every object reachable from `root` through containers and attributes, each once
    (sys.getsizeof each; types, numbers, booleans and enum members are shared, not counted)."""
    seen: set[int] = set()
    total = 0
    stack = [root]
    while stack:
        obj = stack.pop()
        if id(obj) in seen or obj is None or isinstance(obj, (type, int, float, bool, Enum)):
            continue
        seen.add(id(obj))
        total += sys.getsizeof(obj)
        if isinstance(obj, dict):
            stack.extend(obj.keys())
            stack.extend(obj.values())
        elif isinstance(obj, (list, tuple, set, frozenset, deque)):
            stack.extend(obj)
        elif hasattr(obj, "__dict__"):
            stack.append(vars(obj))
        elif hasattr(obj, "__slots__"):
            stack.extend(getattr(obj, slot) for slot in obj.__slots__ if hasattr(obj, slot))
    return total
