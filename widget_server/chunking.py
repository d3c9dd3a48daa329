"""Sentence-sized chunks of a whole text, for backends that have the full answer.

docs/design.md ("Sentence chunks split at a position, never on whitespace")
says why the split must be zero-width: splitting on `(?<=[.!?])\\s+` throws
away the whitespace between sentences, so list items merge into one bullet.
The expression `(?<=[.!?]\\s+)(?=\\S)` matches a position only, so every chunk keeps the
whitespace after it. Python's `re` refuses variable-width look-behind, so we
find the same positions with a forward scan: after a run of
`[.!?]` followed by whitespace, just before the next non-whitespace.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

# A sentence end, then the whitespace after it, up to the next visible
# character. Splitting at m.end() is exactly that zero-width position.
_SENTENCE_BOUNDARY = re.compile(r"[.!?]\s+(?=\S)")


def split_sentences(text: str) -> list[str]:
    """Split `text` into chunks whose concatenation is `text`, always."""
    return list(iter_sentences(text))


def iter_sentences(text: str) -> Iterator[str]:
    start = 0
    for match in _SENTENCE_BOUNDARY.finditer(text):
        yield text[start : match.end()]
        start = match.end()
    if start < len(text):
        yield text[start:]
