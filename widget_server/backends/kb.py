"""The knowledge-base backend: answers from a folder of Markdown documents.

At start (in `from_settings`, never at import) every `.md` file under `KB_DIR` is read and
cut into passages: a passage is a section between headings, titled by its heading path
("Configuration › Settings"); a long section is cut further at paragraph boundaries, and each
row of a table is a passage of its own (titled by its first cell), shown as a list of
"header: cell" lines. The passages are ranked with BM25 (`bm25.py`); title terms count twice.

An answer quotes the best passages faithfully (trimmed at a sentence boundary, marked
"[…]"), each followed by its marker ("Source [1]"), after a one-line lead; each passage's
document is yielded as a `Source` (its title, its link, the passage as plain text), which the
widget lists under the answer and the marker links to (docs/backends.md, "Sources"). Before
the first word it reports what it does (`Progress`: "Searching the documentation…",
"Reading 2 passages…"). When nothing scores
`KB_MIN_SCORE` or more, it says it does not know and how to reach a person (`KB_CONTACT`).
It never writes anything else: every other word comes from the documents.

Links: with `KB_BASE_URL`, to the owner's own site; without it, to this server's read-only
`/kb/<path>` route (kb_routes.py), as an absolute URL on the host the question was sent to,
the Turn's `server_url` (the widget only renders absolute links).

"I don't know" also offers a person (docs/backends.md, "Offering a person"): an
`ActionProposal("handoff")` after its text, which the widget shows as a "Talk to a person"
button, only while hand-off is on for this server (`Turn.offers_handoff`, which the service
sets from HandoffService.enabled: `HANDOFF`, and for `auto` whether the agents file lists
someone). Whether an agent is present is the hand-off request's to say.

Its settings (`KB_*`, and `DEMO_DELAY_SECONDS` for its pace) are declared, with their
defaults, in `KbSettings` below; `from_settings` reads them from the validated settings.
"""

from __future__ import annotations

import logging
import os
import posixpath
import re
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, unquote, urljoin, urlsplit

from ..chunking import split_sentences
from ..settings import ConfigError, Settings, setting
from ..settings.parsing import parse_float, parse_folder, parse_int, parse_optional_url, parse_str
from .base import ActionProposal, CancelToken, Progress, Source, Turn
from .bm25 import BM25, STOP_WORDS_EN, STOP_WORDS_ES, fold_accents, split_code, tokenize
from .demo import DemoSettings, group_chunks, split_words

log = logging.getLogger("widget_server.kb")

_PACKAGE_DIR = Path(__file__).resolve().parent.parent

TITLE_WEIGHT = 2  # title (heading path) terms count this many times
PASSAGE_CHARS = 1200  # a section longer than this is cut at paragraph boundaries
QUOTE_CHARS = 900  # a quoted passage is trimmed to about this many characters
RELATIVE_SCORE = 0.75  # a passage after the first must score at least this share of the best
CHUNK_CHARS = 48  # about this many characters per streamed piece
SNIPPET_CHARS = 300  # a source's passage, as plain text, is cut to this many characters
MAX_FILE_BYTES = 2_000_000  # larger files are skipped (with a warning)

ELISION = " \\[…\\]"  # renders "[…]": the quote goes on in the source

# The built-in action that offers a person (widget_server/actions/service.py HandoffOffer).
HANDOFF_ACTION = "handoff"


@dataclass(frozen=True)
class KbSettings(DemoSettings):
    """The `kb` backend's own settings; it streams at the demo's pace (DEMO_DELAY_SECONDS)."""

    folder: str = setting(
        "KB_DIR",
        parse_folder,
        "",
        "`kb` backend: folder of Markdown (.md) documents to answer from (empty: the sample, the project's docs).",
    )
    min_score: float = setting(
        "KB_MIN_SCORE",
        parse_float,
        0.3,
        '`kb` backend: least relevance (0–1) of the best passage; below it the answer is "I don\'t know".',
        0,
        1,
    )
    max_passages: int = setting(
        "KB_MAX_PASSAGES", parse_int, 3, "`kb` backend: most passages quoted in one answer.", 1, 10
    )
    base_url: str = setting(
        "KB_BASE_URL",
        parse_optional_url,
        "",
        "`kb` backend: URL prefix of the documents' pages for source links (empty: this server's /kb/<path>).",
    )
    contact: str = setting(
        "KB_CONTACT",
        parse_str,
        "contact the site's support team",
        '`kb` backend: how to reach a person, ending the "I don\'t know" answer ("To ask a person, …").',
    )


# KB_CONTACT's default, in English (KbSettings). Left at it, an answer says it in the
# question's language: TEXTS[language]["contact"].
DEFAULT_CONTACT: str = KbSettings.contact

TEXTS = {
    "en": {
        "lead": "Here is what I found in the documentation:",
        "source": "Source",
        "searching": "Searching the documentation…",
        "reading_one": "Reading 1 passage…",
        "reading_other": "Reading {count} passages…",
        "unknown": "I don't know: I found nothing about that in the documentation. To ask a person, {contact}.",
        "contact": DEFAULT_CONTACT,
    },
    "es": {
        "lead": "Esto es lo que he encontrado en la documentación:",
        "source": "Fuente",
        "searching": "Buscando en la documentación…",
        "reading_one": "Leyendo 1 pasaje…",
        "reading_other": "Leyendo {count} pasajes…",
        "unknown": "No lo sé: no he encontrado nada sobre eso en la documentación. Para preguntar a una persona, {contact}.",
        "contact": "contacta con el equipo de soporte del sitio",
    },
}


def sample_dir() -> Path:
    """The sample knowledge base, the project's own docs: inside the package when installed
    from a wheel (`widget_server/kb_sample`), `docs/` at the repository root in a checkout."""
    for candidate in (_PACKAGE_DIR / "kb_sample", _PACKAGE_DIR.parent / "docs"):
        if candidate.is_dir():
            return candidate
    raise ConfigError(f"KB_DIR: not set, and the sample knowledge base is not next to {_PACKAGE_DIR}")


# -- Markdown: documents → sections → blocks -----------------------------------------------

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_NOT_PARAGRAPH = re.compile(r"^(?: {4}|\t| {0,3}(?:[-+*>|#]|\d{1,9}[.)]|`{3}|~{3}))")
_DELIMITER_CELL = re.compile(r"^:?-+:?$")


@dataclass(frozen=True)
class Block:
    kind: str  # "text" (paragraphs, lists, quotes), "code" (a fenced block) or "row" (a table row)
    text: str
    label: str = ""  # a row's first cell, as plain text


@dataclass(frozen=True)
class Section:
    path: tuple[str, ...]  # heading path, the document's title first
    anchor: str  # GitHub-style slug of the deepest heading; "" at the document's top
    blocks: tuple[Block, ...]


def plain_inline(text: str) -> str:
    """Inline Markdown as plain text (for titles): links and images → their text, no code
    ticks, emphasis stars or HTML tags, `\\|` → `|`, whitespace collapsed."""
    parts = split_code(text)
    for k in range(0, len(parts), 2):  # outside code
        piece = re.sub(r"!?\[([^\]\n]*)\]\([^)\n]*\)", r"\1", parts[k])
        parts[k] = re.sub(r"<[A-Za-z/!?][^<>\n]*>", "", piece).replace("*", "")
    text = "".join(parts).replace("\\|", "|").replace("`", "")
    return " ".join(text.split())


def github_slug(text: str, seen: Counter[str]) -> str:
    slug = re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")
    count = seen[slug]
    seen[slug] += 1
    return f"{slug}-{count}" if count else slug


def _front_matter(lines: list[str]) -> tuple[str, list[str]]:
    """A YAML front matter block's `title:` (or ""), and the lines after it."""
    if not lines or lines[0].strip() != "---":
        return "", lines
    for end in range(1, min(len(lines), 200)):
        if lines[end].strip() in ("---", "..."):
            title = ""
            for line in lines[1:end]:
                key, sep, value = line.partition(":")
                if sep and key.strip().lower() == "title":
                    title = value.strip().strip("\"'")
            return title, lines[end + 1 :]
    return "", lines


def _closes_fence(line: str, marker: str) -> bool:
    stripped = line.strip()
    return (
        bool(stripped)
        and set(stripped) == {marker[0]}
        and len(stripped) >= len(marker)
        and len(line) - len(line.lstrip(" ")) < 4
    )


def _cells(line: str) -> list[str]:
    line = line.strip()
    if line.startswith("|"):
        line = line[1:]
    if line.endswith("|") and not line.endswith("\\|"):
        line = line[:-1]
    return [cell.strip() for cell in re.split(r"(?<!\\)\|", line)]


def _is_delimiter_row(line: str) -> bool:
    if "-" not in line:
        return False
    cells = _cells(line)
    return bool(cells) and all(_DELIMITER_CELL.match(cell) for cell in cells)


def _row_block(header: list[str], row: list[str]) -> Block:
    lines = []
    # A row may have fewer or more cells than the header: the missing ones are empty (and
    # empty cells are left out here), the excess is ignored (GitHub Flavored Markdown,
    # "Tables (extension)", https://github.github.com/gfm/#tables-extension-).
    for name, cell in zip(header, row, strict=False):
        if cell:
            lines.append(f"- **{name}:** {cell}" if name else f"- {cell}")
    label = plain_inline(row[0]) if row else ""
    return Block("row", "\n".join(lines), label[:80])


def split_blocks(lines: list[str]) -> list[Block]:
    """A section's body as blocks: fenced code whole, each table row alone, and paragraph-like
    runs of lines (paragraphs, lists, quotes) between blank lines."""
    blocks: list[Block] = []
    run: list[str] = []

    def flush() -> None:
        if run:
            text = "\n".join(run).strip("\n")
            if text.strip():
                blocks.append(Block("text", text))
            run.clear()

    i, n = 0, len(lines)
    while i < n:
        line = lines[i]
        if not line.strip():
            flush()
            i += 1
            continue
        fence = _FENCE.match(line)
        if fence:
            flush()
            j = i + 1
            while j < n and not _closes_fence(lines[j], fence.group(1)):
                j += 1
            code = lines[i : j + 1] if j < n else [*lines[i:], fence.group(1)]
            blocks.append(Block("code", "\n".join(code)))
            i = j + 1
            continue
        if "|" in line and i + 1 < n and _is_delimiter_row(lines[i + 1]):
            flush()
            header = [plain_inline(cell) for cell in _cells(line)]
            j = i + 2
            while j < n and lines[j].strip() and "|" in lines[j] and not _FENCE.match(lines[j]):
                row = _row_block(header, _cells(lines[j]))
                if row.text:
                    blocks.append(row)
                j += 1
            i = j
            continue
        run.append(line.rstrip())
        i += 1
    flush()
    return blocks


def parse_markdown(text: str, fallback_title: str) -> list[Section]:
    """The sections of a Markdown document (ATX and setext headings; none inside code)."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    title, lines = _front_matter(lines)
    headings: list[tuple[int, int, int, str]] = []  # (first line, line after, level, text)
    fence = ""
    for i, line in enumerate(lines):
        if fence:
            if _closes_fence(line, fence):
                fence = ""
            continue
        opening = _FENCE.match(line)
        if opening:
            fence = opening.group(1)
            continue
        atx = _ATX.match(line)
        if atx:
            headings.append((i, i + 1, len(atx.group(1)), atx.group(2) or ""))
            continue
        setext = _SETEXT.match(line)
        if (
            setext
            and i > 0
            and lines[i - 1].strip()
            and not _NOT_PARAGRAPH.match(lines[i - 1])
            and (i == 1 or not lines[i - 2].strip() or (headings and headings[-1][1] == i - 1))
        ):
            headings.append((i - 1, i + 1, 1 if setext.group(1)[0] == "=" else 2, lines[i - 1].strip()))

    first_h1 = next((plain_inline(h[3]) for h in headings if h[2] == 1 and plain_inline(h[3])), "")
    root = title or first_h1 or fallback_title
    stack: list[tuple[int, str]] = []
    slugs: Counter[str] = Counter()
    sections: list[Section] = []
    path: tuple[str, ...] = (root,)
    anchor, position = "", 0
    for start, end, level, raw in [*headings, (len(lines), len(lines), 0, "")]:
        blocks = split_blocks(lines[position:start])
        if blocks:
            sections.append(Section(path, anchor, tuple(blocks)))
        if level == 0:
            break
        position = end
        heading = plain_inline(raw)
        slug = github_slug(heading, slugs)
        if level == 1:
            root, stack, anchor = (heading or root), [], ""
        else:
            while stack and stack[-1][0] >= level:
                stack.pop()
            if heading:
                stack.append((level, heading))
            anchor = slug
        path = (root, *(text for _, text in stack))
    return sections


# -- the knowledge base ----------------------------------------------------------------------


@dataclass(frozen=True)
class Document:
    path: str  # relative to the folder, with "/" separators: the key of /kb/<path>
    text: str
    title: str


@dataclass(frozen=True)
class Passage:
    doc: str  # Document.path
    path: tuple[str, ...]
    anchor: str
    blocks: tuple[Block, ...]

    @property
    def title(self) -> str:
        return " › ".join(self.path)

    @property
    def text(self) -> str:
        return "\n\n".join(block.text for block in self.blocks)


def passages_of(doc: str, sections: list[Section]) -> list[Passage]:
    return [passage for section in sections for passage in _section_passages(doc, section)]


def _section_passages(doc: str, section: Section) -> list[Passage]:
    """Each table row alone; other blocks grouped while they fit in PASSAGE_CHARS."""
    passages: list[Passage] = []
    group: list[Block] = []

    def close() -> None:
        if group:
            passages.append(Passage(doc, section.path, section.anchor, tuple(group)))
            group.clear()

    for block in section.blocks:
        if block.kind == "row":
            close()
            path = section.path + ((block.label,) if block.label else ())
            passages.append(Passage(doc, path, section.anchor, (block,)))
            continue
        if group and sum(len(b.text) + 2 for b in group) + len(block.text) > PASSAGE_CHARS:
            close()
        group.append(block)
    close()
    return passages


def _humanise(stem: str) -> str:
    words = stem.replace("_", " ").replace("-", " ").strip()
    return words[:1].upper() + words[1:] if words else stem


def markdown_files(root: Path) -> list[tuple[str, Path]]:
    """(relative path, file) for every .md file under `root`, sorted; hidden files and folders
    and anything that resolves outside `root` (a symbolic link) are left out."""
    found: list[tuple[str, Path]] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in files:
            if name.startswith(".") or not name.lower().endswith(".md"):
                continue
            file = Path(folder, name)
            resolved = file.resolve()
            if not resolved.is_file() or not resolved.is_relative_to(root):
                continue
            found.append((file.relative_to(root).as_posix(), resolved))
    return sorted(found)


@dataclass
class KnowledgeBase:
    root: Path
    documents: dict[str, Document]
    passages: list[Passage]
    index: BM25
    seconds: float = 0.0

    @classmethod
    def load(cls, folder: Path | str) -> KnowledgeBase:
        started = time.perf_counter()
        root = Path(folder).expanduser()
        if not root.is_dir():
            raise ConfigError(f"KB_DIR: {str(root)!r} is not a folder (set it to a folder of Markdown files)")
        root = root.resolve()
        documents: dict[str, Document] = {}
        passages: list[Passage] = []
        for relative, file in markdown_files(root):
            if file.stat().st_size > MAX_FILE_BYTES:
                log.warning("kb: skipping %s: larger than %d bytes", relative, MAX_FILE_BYTES)
                continue
            text = file.read_bytes().decode("utf-8-sig", errors="replace")
            sections = parse_markdown(text, _humanise(Path(relative).stem))
            title = sections[0].path[0] if sections else _humanise(Path(relative).stem)
            documents[relative] = Document(relative, text, title)
            passages.extend(passages_of(relative, sections))
        if not documents:
            raise ConfigError(f"KB_DIR: {str(root)!r} has no Markdown (.md) files")
        if not passages:
            raise ConfigError(f"KB_DIR: the Markdown files in {str(root)!r} have no text")
        index = BM25(tokenize(p.title) * TITLE_WEIGHT + tokenize(p.text) for p in passages)
        return cls(root, documents, passages, index, time.perf_counter() - started)

    def search(self, question: str, limit: int) -> list[tuple[Passage, float]]:
        """The best passages for `question` with their relevance: the BM25 score divided by
        the most the question's terms could score (`BM25.ceiling`), from 0 to 1."""
        query = tokenize(question)
        ceiling = self.index.ceiling(query) or 1.0
        return [(self.passages[i], score / ceiling) for i, score in self.index.top(query, limit)]


# -- answers ---------------------------------------------------------------------------------

_ES_HINTS = (STOP_WORDS_ES - STOP_WORDS_EN) | {"hola", "gracias", "puedo", "quiero", "necesito", "hago"}
_EN_HINTS = STOP_WORDS_EN - STOP_WORDS_ES


def detect_language(text: str) -> str:
    """ "es" for Spanish, else "en" (the default): ¿, ¡ or ñ, or more Spanish than English
    function words."""
    if any(c in text for c in "¿¡ñÑ"):
        return "es"
    words = re.findall(r"[^\W\d_]+", fold_accents(text))
    spanish = sum(word in _ES_HINTS for word in words)
    english = sum(word in _EN_HINTS for word in words)
    return "es" if spanish > english else "en"


_IMAGE = re.compile(r"!\[([^\]\n]*)\]\([^)\n]*\)")
_LINK = re.compile(r"\[([^\]\n]*)\]\(\s*(<[^<>\n]*>|(?:[^\s()]|\([^\s()]*\))*)(?:\s+(?:\"[^\"\n]*\"|'[^'\n]*'))?\s*\)")
_DEFINITION = re.compile(r"^ {0,3}\[([^\]\n]+)\]:[ \t]*(<[^<>\n]*>|\S+)(.*)$", re.MULTILINE)
_AUTOLINK = re.compile(r"<([A-Za-z][A-Za-z0-9+.-]{1,31}:[^<>\s]*)>")
_SAFE_SCHEMES = ("http", "https", "mailto")
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
# "](" before a scheme other than the safe ones, left by a link the patterns above missed
# (brackets nested in its text): "\(" there unmakes the link.
_UNSAFE_TARGET = re.compile(r"\]\((?=[\s<]*(?!(?:https?|mailto):)[A-Za-z][A-Za-z0-9+.-]*:)")


def _safe_inline(text: str, resolve: Callable[[str], str | None]) -> str:
    def link(match: re.Match) -> str:
        target = resolve(match.group(2).strip("<>"))
        return f"[{match.group(1)}]({target})" if target else match.group(1)

    def autolink(match: re.Match) -> str:
        scheme = match.group(1).split(":", 1)[0].lower()
        return match.group(0) if scheme in _SAFE_SCHEMES else "\\" + match.group(0)

    def definition(match: re.Match) -> str:
        target = resolve(match.group(2).strip("<>"))
        return f"[{match.group(1)}]: {target}{match.group(3)}" if target else ""

    out = split_code(text)
    for k in range(0, len(out), 2):  # even items are outside code spans
        piece = _IMAGE.sub(r"\1", _COMMENT.sub("", out[k]))
        piece = _DEFINITION.sub(definition, _LINK.sub(link, piece))
        piece = _UNSAFE_TARGET.sub("]\\\\(", piece)
        piece = _AUTOLINK.sub(autolink, piece)
        # Raw HTML is text, not markup: "<b>" becomes "\<b>" (skipping the autolinks kept).
        piece = re.sub(r"(?<!\\)<(?=[A-Za-z/!?])(?![A-Za-z][A-Za-z0-9+.-]{1,31}:[^<>\s]*>)", r"\\<", piece)
        out[k] = piece
    return "".join(out)


def safe_markdown(text: str, resolve: Callable[[str], str | None]) -> str:
    """`text` with links kept only to http(s)/mailto targets (relative ones resolved by
    `resolve`), images as their alt text, and raw HTML escaped; code left exactly as is."""
    out: list[str] = []
    run: list[str] = []
    fence = ""
    for line in text.split("\n"):
        if fence:
            out.append(line)
            if _closes_fence(line, fence):
                fence = ""
            continue
        opening = _FENCE.match(line)
        if opening:
            if run:
                out.append(_safe_inline("\n".join(run), resolve))
                run = []
            fence = opening.group(1)
            out.append(line)
            continue
        run.append(line)
    if run:
        out.append(_safe_inline("\n".join(run), resolve))
    return "\n".join(out)


def _cut_at_sentence(text: str, room: int) -> str:
    kept = ""
    for sentence in split_sentences(text):
        if len(kept) + len(sentence.rstrip()) > room:
            break
        kept += sentence
    return kept.rstrip()


def _cut_at_word(text: str, room: int) -> str:
    kept = ""
    for word in split_words(text):
        if len(kept) + len(word.rstrip()) > room:
            break
        kept += word
    return kept.rstrip() or text[:room]


def _cut_code(text: str, room: int) -> str:
    lines = text.split("\n")
    kept = [lines[0]]
    for line in lines[1:-1]:
        if sum(len(x) + 1 for x in kept) + len(line) > room:
            break
        kept.append(line)
    opening = _FENCE.match(lines[0])
    assert opening is not None, "a code block starts with its fence (split_blocks)"
    return "\n".join([*kept, opening.group(1)])


def trim_passage(blocks: tuple[Block, ...], limit: int = QUOTE_CHARS) -> str:
    """The passage's blocks, whole while they fit in `limit` characters; the first block that
    does not fit is cut at a sentence boundary (a word one if it is the first and has no
    sentence end in reach); anything left out is marked "[…]"."""
    kept: list[str] = []
    used = 0
    for block in blocks:
        extra = len(block.text) + (2 if kept else 0)
        if used + extra <= limit:
            kept.append(block.text)
            used += extra
            continue
        room = limit - used - (2 if kept else 0)
        if block.kind == "code":
            if not kept:
                kept.append(_cut_code(block.text, room))
        else:
            cut = _cut_at_sentence(block.text, room)
            if not cut and not kept:
                cut = _cut_at_word(block.text, room)
            if cut:
                kept.append(cut)
        # After a closing fence the mark needs a paragraph of its own.
        after_code = bool(kept) and bool(_FENCE.match(kept[-1].rsplit("\n", 1)[-1]))
        return "\n\n".join(kept) + ("\n\n" + ELISION.strip() if after_code else ELISION)
    return "\n\n".join(kept)


def _quote(markdown: str) -> str:
    """Markdown as a block quote: every line behind "> " (an empty one behind ">")."""
    return "\n".join(f"> {line}" if line.strip() else ">" for line in markdown.split("\n"))


@dataclass(frozen=True)
class KbAnswer:
    """An answer: its Markdown, the documents its markers cite, whether it is "I don't know"."""

    text: str
    sources: tuple[Source, ...] = ()
    unknown: bool = False


@dataclass(frozen=True)
class KnowledgeBaseBackend:
    """Stateless between answers: what a link needs from the request comes with the Turn."""

    name = "kb"
    settings_class = KbSettings
    # Its own routes, which the app registers with this backend only (docs/backends.md, "Plugins").
    routes = "widget_server.kb_routes:bp"

    kb: KnowledgeBase
    min_score: float  # KB_MIN_SCORE
    max_passages: int  # KB_MAX_PASSAGES
    base_url: str  # KB_BASE_URL (validated with the settings), or "": this server's /kb/<path>
    contact: str  # KB_CONTACT
    delay: float  # DEMO_DELAY_SECONDS: the pause between streamed pieces

    @classmethod
    def from_settings(cls, settings: Settings) -> KnowledgeBaseBackend:
        own = settings.plugin(KbSettings)
        kb = KnowledgeBase.load(own.folder or sample_dir())
        log.info(
            "kb: %d passages from %d documents in %s, indexed in %.0f ms",
            len(kb.passages), len(kb.documents), kb.root, kb.seconds * 1000,
        )  # fmt: skip
        return cls(
            kb,
            min_score=own.min_score,
            max_passages=own.max_passages,
            base_url=own.base_url,
            contact=own.contact or DEFAULT_CONTACT,
            delay=own.delay_seconds,
        )

    # -- links --------------------------------------------------------------------------

    def link(self, doc: str, anchor: str = "", server_url: str = "") -> str:
        """Where a document (a section of it) is read: KB_BASE_URL + path (`{path}` in it is
        replaced by the path without `.md`), with the section's anchor; or this server's
        `/kb/<path>` (plain text, so no anchor)."""
        if not self.base_url:
            return f"{server_url}/kb/{quote(doc)}"
        if "{path}" in self.base_url:
            url = self.base_url.replace("{path}", quote(doc[:-3] if doc.lower().endswith(".md") else doc))
        else:
            url = self.base_url + ("" if self.base_url.endswith("/") else "/") + quote(doc)
        return f"{url}#{anchor}" if anchor else url

    def _resolver(self, doc: str, server_url: str) -> Callable[[str], str | None]:
        def resolve(target: str) -> str | None:
            target = re.sub(r"[\x00-\x20\x7f]", "", target)
            parts = urlsplit(target)
            if parts.scheme:
                return target if parts.scheme.lower() in _SAFE_SCHEMES else None
            if target.startswith("//"):
                return None
            if not parts.path:  # "#anchor": the same document
                return self.link(doc, parts.fragment, server_url) if parts.fragment else self.link(doc, "", server_url)
            joined = posixpath.normpath(posixpath.join(posixpath.dirname(doc), unquote(parts.path)))
            if joined in self.kb.documents:
                return self.link(joined, parts.fragment, server_url)
            if self.base_url:
                return urljoin(self.link(doc, "", server_url), target)
            return None  # a file this server does not serve

        return resolve

    # -- answering ------------------------------------------------------------------------

    def answer(self, question: str, server_url: str = "") -> str:
        """The whole answer to `question`, as Markdown."""
        return self._answer(question, server_url).text

    def sources(self, question: str, server_url: str = "") -> tuple[Source, ...]:
        """The documents the answer to `question` quotes, in the order of its markers."""
        return self._answer(question, server_url).sources

    def _answer(self, question: str, server_url: str = "") -> KbAnswer:
        language = detect_language(question)
        texts = TEXTS[language]
        found = self.kb.search(question, max(self.max_passages * 3, 10))
        if not found or found[0][1] < self.min_score:
            contact = self.contact
            if contact == DEFAULT_CONTACT:
                contact = texts["contact"]
            return KbAnswer(texts["unknown"].format(contact=contact.rstrip(".")) + "\n", unknown=True)
        best = found[0][1]
        chosen: list[Passage] = []
        for passage, score in found:
            if len(chosen) == self.max_passages or score < max(self.min_score, RELATIVE_SCORE * best):
                break
            if any(p.doc == passage.doc and p.path == passage.path and p.text == passage.text for p in chosen):
                continue
            chosen.append(passage)
        parts = [texts["lead"]]
        sources = []
        for number, passage in enumerate(chosen, start=1):
            quoted = safe_markdown(trim_passage(passage.blocks), self._resolver(passage.doc, server_url))
            parts.append(_quote(quoted))
            # The marker the widget links to the source's entry under the answer.
            parts.append(f"{texts['source']} [{number}]")
            link = self.link(passage.doc, passage.anchor, server_url)
            snippet = plain_inline(" ".join(block.text for block in passage.blocks))
            sources.append(Source(str(number), plain_inline(passage.title), link, snippet[:SNIPPET_CHARS]))
        return KbAnswer("\n\n".join(parts) + "\n", sources=tuple(sources))

    def stream(self, turn: Turn, cancel: CancelToken) -> Iterator[str | ActionProposal | Source | Progress]:
        texts = TEXTS[detect_language(turn.text)]
        yield Progress(texts["searching"])
        answer = self._answer(turn.text, turn.server_url)
        if answer.sources:
            count = len(answer.sources)
            yield Progress(texts["reading_one" if count == 1 else "reading_other"].format(count=count))
        for index, chunk in enumerate(group_chunks(split_words(answer.text), CHUNK_CHARS)):
            if index and self.delay and cancel.wait(self.delay):
                return
            if cancel.cancelled:
                return
            yield chunk
        yield from answer.sources
        if answer.unknown and turn.offers_handoff:
            yield ActionProposal(HANDOFF_ACTION, {})
