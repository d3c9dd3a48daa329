"""Fault injection for tests and QA: deterministic network trouble on demand.

Only when the `FAULTS` setting is on, which a production configuration
refuses at start. A client asks for faults per request with the header
`X-Chat-Faults: drop-after=3,duplicate=4,skip=5`. They apply to the first
stream of a message (the POST response), so the client's recovery — resume,
de-duplication, snapshot — is what the test observes:

- `drop-after=N`: close the connection after N events, without a terminal event;
- `duplicate=S`: send the event with sequence number S twice;
- `skip=S`: never send the event with sequence number S on this stream;
- `snapshot`: start a resume stream with a snapshot, as after eviction
  (applies to GET resumes).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_ITEM = re.compile(r"^(drop-after|duplicate|skip)=([1-9][0-9]{0,5})$|^(snapshot)$")


class InvalidFaults(ValueError):
    pass


@dataclass(frozen=True)
class FaultPlan:
    drop_after: int | None = None
    duplicate: frozenset[int] = field(default_factory=frozenset)
    skip: frozenset[int] = field(default_factory=frozenset)
    snapshot: bool = False

    def __bool__(self) -> bool:
        return bool(self.drop_after or self.duplicate or self.skip or self.snapshot)


NO_FAULTS = FaultPlan()


def parse_faults(header: str | None) -> FaultPlan:
    if not header or not header.strip():
        return NO_FAULTS
    drop_after = None
    duplicate: set[int] = set()
    skip: set[int] = set()
    snapshot = False
    for raw in header.split(","):
        item = raw.strip()
        match = _ITEM.match(item)
        if not match:
            raise InvalidFaults(
                f"unknown fault {item!r}; use drop-after=N, duplicate=SEQ, skip=SEQ or snapshot, comma separated"
            )
        name, value = match.group(1), match.group(2)
        if match.group(3):
            snapshot = True
        elif name == "drop-after":
            drop_after = int(value)
        elif name == "duplicate":
            duplicate.add(int(value))
        else:
            skip.add(int(value))
    return FaultPlan(drop_after, frozenset(duplicate), frozenset(skip), snapshot)
