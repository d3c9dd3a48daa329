"""What a backend yields besides text and action proposals: the sources an answer rests on
and the progress lines it shows while it is prepared (docs/backends.md, "Sources" and
"Progress"; docs/protocol.md, "Sources" and "`message.progress`").

Pure: each part is checked and bounded here, once, into the JSON the stream and the history
carry, so a store keeps it as it is and a client never gets a source it could not show safely
(a link that is not http or https, a title of a megabyte).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from .messages import clean_text

# An answer cites at most this many sources: more is a backend's mistake, not a reading list.
MAX_SOURCES = 20
MAX_SOURCE_ID_CHARS = 64
MAX_TITLE_CHARS = 300
MAX_URL_CHARS = 2048
MAX_SNIPPET_CHARS = 1000
# A progress line is one short status ("Searching the help centre…").
MAX_PROGRESS_CHARS = 200

_SPACES = re.compile(r"\s+")


class InvalidPart(ValueError):
    """A backend yielded a source or a progress line that cannot be shown: the answer fails as
    `internal` (the backend's mistake), never shows it half checked."""


@dataclass(frozen=True)
class Source:
    """A document an answer rests on, yielded between text pieces.

    `id` is what the answer's inline markers name: a source whose id is "1" is cited as `[1]`
    in the text. `url`, when given, must be http or https; `snippet` is the passage used.
    The sources yielded arrive with the answer's `message.completed`, in the order yielded,
    and stay in the history; a cancelled or failed answer lists none."""

    id: str
    title: str
    url: str | None = None
    snippet: str | None = None


@dataclass(frozen=True)
class Progress:
    """What the backend is doing now ("Reading 3 documents…"), yielded before or between text
    pieces: streamed as `message.progress`, shown and announced while the answer is busy, and
    never part of the answer's text or history."""

    text: str


def _one_line(text: str, limit: int) -> str:
    """Whitespace runs as one space, trimmed, cut at `limit` characters with an ellipsis."""
    flat = _SPACES.sub(" ", clean_text(text)).strip()
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def safe_url(url: str) -> str | None:
    """`url` if it is an absolute http(s) URL a link may point to, else None (docs/security.md,
    "Links in answers")."""
    if len(url) > MAX_URL_CHARS or any(character.isspace() or ord(character) < 0x20 for character in url):
        return None
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        return None
    return url


def source_json(source: Source, known_ids: set[str]) -> dict[str, Any]:
    """The source as the stream and the history carry it ({id, title, url?, snippet?});
    `known_ids` are the ids already yielded by this answer, which this one joins.
    Raises InvalidPart for a source that cannot be shown."""
    if not isinstance(source, Source):
        raise InvalidPart(f"expected a Source, got {type(source).__name__}")
    if not isinstance(source.id, str) or not isinstance(source.title, str):
        raise InvalidPart("a source's id and title are text")
    source_id = _one_line(source.id, MAX_SOURCE_ID_CHARS + 1)
    if not source_id or len(source_id) > MAX_SOURCE_ID_CHARS:
        raise InvalidPart(f"a source's id is 1 to {MAX_SOURCE_ID_CHARS} characters: {source.id[:80]!r}")
    if source_id in known_ids:
        raise InvalidPart(f"source id {source_id!r} given twice")
    if len(known_ids) >= MAX_SOURCES:
        raise InvalidPart(f"an answer lists at most {MAX_SOURCES} sources")
    title = _one_line(source.title, MAX_TITLE_CHARS)
    if not title:
        raise InvalidPart(f"source {source_id!r} has no title")
    found: dict[str, Any] = {"id": source_id, "title": title}
    if source.url is not None:
        url = safe_url(source.url) if isinstance(source.url, str) else None
        if url is None:
            raise InvalidPart(f"source {source_id!r}: only an absolute http or https URL may be linked")
        found["url"] = url
    if source.snippet:
        found["snippet"] = _one_line(str(source.snippet), MAX_SNIPPET_CHARS)
    known_ids.add(source_id)
    return found


def progress_text(progress: Progress) -> str | None:
    """The line as `message.progress` carries it, or None for an empty one (nothing to say)."""
    if not isinstance(progress, Progress) or not isinstance(progress.text, str):
        raise InvalidPart("a progress line is text")
    return _one_line(progress.text, MAX_PROGRESS_CHARS) or None
