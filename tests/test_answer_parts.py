"""widget_server/answer_parts.py: what a backend yields besides text, checked and bounded once
(docs/backends.md, "Sources" and "Progress"; docs/security.md, "Links in answers"). The same
parts through a real server, on the memory store and Redis: tests/test_api_sources_progress.py."""

from __future__ import annotations

import pytest

from widget_server.answer_parts import (
    MAX_PROGRESS_CHARS,
    MAX_SNIPPET_CHARS,
    MAX_SOURCES,
    MAX_TITLE_CHARS,
    MAX_URL_CHARS,
    InvalidPart,
    Progress,
    Source,
    progress_text,
    safe_url,
    source_json,
)


@pytest.mark.parametrize(
    "url",
    [
        "https://example.com/help",
        "http://127.0.0.1:8000/kb/faq.md#opening-hours",
        "HTTPS://EXAMPLE.COM/a?b=1",
        "https://example.com/" + "a" * (MAX_URL_CHARS - 20),
    ],
)
def test_an_absolute_http_url_may_be_linked(url):
    assert safe_url(url) == url


@pytest.mark.parametrize(
    "url",
    [
        "javascript:alert(1)",
        "JaVaScRiPt:alert(1)",
        "data:text/html,<script>alert(1)</script>",
        "mailto:help@example.com",
        "ftp://example.com/file",
        "/kb/faq.md",
        "//evil.example/path",
        "https://",
        "https://exa mple.com/",
        "https://example.com/\nSet-Cookie: x",
        "https://example.com/\x00",
        "https://[::1",
        "https://example.com/" + "a" * MAX_URL_CHARS,
        "",
    ],
)
def test_anything_else_is_never_a_link(url):
    assert safe_url(url) is None


def test_a_source_is_one_line_of_each_and_bounded():
    known: set[str] = set()
    found = source_json(Source(" 1 ", "A\ttitle\r\nover\u0007 lines ", "https://example.com", "  a \n snippet "), known)
    assert found == {"id": "1", "title": "A title over lines", "url": "https://example.com", "snippet": "a snippet"}
    assert known == {"1"}
    long = source_json(Source("2", "t" * (MAX_TITLE_CHARS + 10), None, "s" * (MAX_SNIPPET_CHARS + 10)), known)
    assert len(long["title"]) == MAX_TITLE_CHARS and long["title"].endswith("…")
    assert len(long["snippet"]) == MAX_SNIPPET_CHARS and "url" not in long
    assert source_json(Source("3", "No snippet", None, ""), known) == {"id": "3", "title": "No snippet"}


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        (Source("1", "Title", "javascript:alert(1)"), "http or https"),
        (Source("", "Title"), "1 to 64"),
        (Source("x" * 65, "Title"), "1 to 64"),
        (Source("1", " \n "), "no title"),
        ("a string", "expected a Source"),
        (Source(1, "Title"), "text"),  # type: ignore[arg-type]
    ],
)
def test_a_source_no_client_could_show_is_refused(source, reason):
    with pytest.raises(InvalidPart, match=reason):
        source_json(source, set())


def test_ids_are_unique_and_sources_bounded_per_answer():
    known: set[str] = set()
    source_json(Source("1", "One"), known)
    with pytest.raises(InvalidPart, match="twice"):
        source_json(Source(" 1", "Again"), known)
    for number in range(2, MAX_SOURCES + 1):
        source_json(Source(str(number), "More"), known)
    with pytest.raises(InvalidPart, match=f"at most {MAX_SOURCES}"):
        source_json(Source("over", "Too many"), known)


def test_a_progress_line_is_one_bounded_line_or_nothing():
    assert progress_text(Progress("  Searching\n the\thelp centre…  ")) == "Searching the help centre…"
    assert progress_text(Progress(" \n ")) is None
    cut = progress_text(Progress("word " * 100))
    assert cut is not None and len(cut) == MAX_PROGRESS_CHARS and cut.endswith("…")
    with pytest.raises(InvalidPart):
        progress_text(Progress(None))  # type: ignore[arg-type]
