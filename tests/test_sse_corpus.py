"""The event-stream corpus (tests/e2e/sse_cases.json) through the Python reader.

The same cases, cut the same ways, also run through the browser reader
static/widget/sse.js in tests/e2e/test_sse_reader.py; the helpers here load
the corpus and make the cuts for both.

Every case is fed whole, byte by byte, at its own explicit chunk boundaries
(if it has any) and at 20 seeded random sets of cut points (repeated points
feed empty chunks). A case of several streams is one parser reading several
connections: `end()` between them (the Python reader has no `reset()`).
"""

from __future__ import annotations

import itertools
import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from widget_server.sse import EventStreamParser, ServerSentEvent

CORPUS_PATH = Path(__file__).resolve().parent / "e2e" / "sse_cases.json"
RANDOM_SPLITS = 20
SEED = "sse-corpus-v1"


def load_cases() -> list[dict[str, Any]]:
    return json.loads(CORPUS_PATH.read_text(encoding="utf-8"))["cases"]


CASES = load_cases()
CASE_IDS = [case["name"] for case in CASES]


@dataclass(frozen=True)
class Stream:
    data: bytes
    boundaries: list[int] | None  # the case's explicit chunk boundaries, if any


def _stream(spec: dict[str, Any]) -> Stream:
    if "input" in spec:
        return Stream(spec["input"].encode("utf-8"), None)
    if "input_hex" in spec:
        return Stream(bytes.fromhex(spec["input_hex"]), None)
    if "chunks" in spec or "chunks_hex" in spec:
        chunks = (
            [c.encode("utf-8") for c in spec["chunks"]]
            if "chunks" in spec
            else [bytes.fromhex(c) for c in spec["chunks_hex"]]
        )
        cuts, at = [], 0
        for chunk in chunks[:-1]:
            at += len(chunk)
            cuts.append(at)
        return Stream(b"".join(chunks), cuts)
    raise ValueError(f"a stream needs input, input_hex, chunks or chunks_hex: {spec!r}")


def streams_of(case: dict[str, Any]) -> list[Stream]:
    return [_stream(s) for s in case.get("streams", [case])]


def runs_for(case: dict[str, Any]) -> list[tuple[str, list[list[int]]]]:
    """(mode, cut points per stream): whole, byte by byte, explicit, random."""
    streams = streams_of(case)
    runs: list[tuple[str, list[list[int]]]] = [
        ("whole", [[] for _ in streams]),
        ("byte-by-byte", [list(range(1, len(s.data))) for s in streams]),
    ]
    if any(s.boundaries is not None for s in streams):
        runs.append(("explicit-chunks", [s.boundaries or [] for s in streams]))
    rng = random.Random(f"{SEED}:{case['name']}")
    for i in range(RANDOM_SPLITS):
        cuts = []
        for s in streams:
            n = len(s.data)
            k = rng.randint(1, max(1, min(n, 12)))
            cuts.append(sorted(rng.randint(0, n) for _ in range(k)))
        runs.append((f"random-{i}", cuts))
    return runs


def chunks_at(data: bytes, cuts: list[int]) -> list[bytes]:
    edges = [0, *cuts, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(edges)]


def expected(case: dict[str, Any]) -> dict[str, Any]:
    return {"events": case["events"], "lastEventId": case["lastEventId"], "retry": case["retry"]}


def describe(case: dict[str, Any], mode: str, cuts: list[list[int]]) -> str:
    return f"case {case['name']!r} ({case['source']}), run {mode}, cuts {cuts}"


# -- the Python reader ------------------------------------------------------


def _as_dict(event: ServerSentEvent) -> dict[str, str]:
    return {"type": event.event, "data": event.data, "id": event.id}


def run_python(case: dict[str, Any], cuts: list[list[int]]) -> dict[str, Any]:
    events: list[ServerSentEvent] = []
    parser = EventStreamParser(events.append)
    for stream, stream_cuts in zip(streams_of(case), cuts, strict=True):
        for chunk in chunks_at(stream.data, stream_cuts):
            parser.feed(chunk)
        parser.end()
    return {
        "events": [_as_dict(e) for e in events],
        "lastEventId": parser.last_event_id,
        "retry": parser.retry,
    }


def test_corpus_is_well_formed():
    assert len(CASES) >= 60
    assert len(set(CASE_IDS)) == len(CASE_IDS)
    for case in CASES:
        assert set(case) >= {"name", "source", "events", "lastEventId", "retry"}, case["name"]
        assert case.get("between", "end") in ("end", "reset"), case["name"]
        for event in case["events"]:
            assert set(event) == {"type", "data", "id"}, case["name"]
        assert streams_of(case)


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_python_reader_events(case):
    """The events dispatched, however the bytes are cut."""
    for mode, cuts in runs_for(case):
        got = run_python(case, cuts)["events"]
        assert got == case["events"], describe(case, mode, cuts)


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_python_reader_reconnection_state(case):
    """After the last stream: the last event ID to reconnect with, and retry."""
    for mode, cuts in runs_for(case):
        got = run_python(case, cuts)
        assert (got["lastEventId"], got["retry"]) == (case["lastEventId"], case["retry"]), describe(case, mode, cuts)
