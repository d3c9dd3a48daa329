"""Reading what Orca said against the announcement contract (docs/accessibility.md A5, A6).

Orca speaks much more than the widget's live regions — the page title, focus
changes, field labels, "Focus mode" — so a test first keeps only the lines
that matter: the widget's cues and errors (exact strings) and anything that
is speech of the answer (a piece of its text, or a line sharing three
consecutive words with it). What is kept must then be whole sentences.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

_SENTENCE_END = re.compile(r"(?<=[.!?…:])\s+")


def sentences(spoken_answer: str) -> list[str]:
    """The units the announcer may speak: sentences, or a block's lead ending in ':'."""
    return [s for s in _SENTENCE_END.split(spoken_answer.strip()) if s]


def _trigrams(text: str) -> set[tuple[str, ...]]:
    words = text.split()
    return {tuple(words[i : i + 3]) for i in range(len(words) - 2)}


def is_answer_speech(line: str, answer: str) -> bool:
    text = line.strip()
    if not text:
        return False
    return text in answer or bool(_trigrams(text) & _trigrams(answer))


def relevant(said: Iterable[str], answer: str, cues: Iterable[str]) -> list[str]:
    """The lines of `said` that are a cue or speech of `answer`, in order."""
    cues = set(cues)
    return [line for line in said if line in cues or is_answer_speech(line, answer)]


def check_whole_sentences(lines: list[str], units: list[str], *, complete: bool) -> None:
    """Each line is one or more whole consecutive sentences; together they
    are the answer's sentences once each, in order (all of them if `complete`,
    else a prefix: a stopped answer)."""
    counts = Counter()
    for line in lines:
        for unit in units:
            if unit in line:
                counts[unit] += 1
    repeated = {unit: n for unit, n in counts.items() if n > 1}
    assert not repeated, f"sentences spoken more than once: {repeated}\nspoken: {lines!r}"

    position = 0
    for line in lines:
        end = next(
            (j for j in range(position + 1, len(units) + 1) if " ".join(units[position:j]) == line),
            None,
        )
        assert end is not None, (
            f"Orca said {line!r}: not whole sentences continuing the answer after sentence {position} "
            f"(a fragment, a repeat or out of order).\nexpected next: {units[position : position + 1]!r}\nspoken: {lines!r}"
        )
        position = end
    if complete:
        assert position == len(units), f"sentences never spoken: {units[position:]!r}\nspoken: {lines!r}"
