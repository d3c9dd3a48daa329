"""The expected script: what a screen-reader user should hear for an answer.

Computed from the same contract the browser tests assert (docs/accessibility.md, A5/A6):

1. the generating cue ("Generating answer…"), polite;
2. every sentence of the answer once, in order, as plain text — markdown
   stripped exactly as the panel's renderer (static/widget/markdown.js) makes
   its plain text: list markers and emphasis markers removed, link text kept,
   code blocks and tables summarised with the i18n strings — polite, and
   batched: several consecutive sentences may come in one announcement;
3. the completion cue on its own ("Answer complete."), polite; or, for an
   answer that fails, the error's message from the i18n `errors`, assertive,
   once (the polite region then says nothing more for that answer, and drops
   any sentence it had not said yet).

The sentences are listed per rendered block (a paragraph, a list item, a
heading, a code block's summary…), each block cut into sentences. The
browser cuts sentences with `Intl.Segmenter`; here a regular expression
follows the same Unicode rules for what answers contain (see
`split_sentences`). `sentences_heard()` turns what a
browser actually announced back into this list, for comparison.

Used by the QA page's printable script (/qa/script) and by the tests.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from .errors import ChatError, ErrorCode
from .i18n import ui_strings

# -- markdown → plain text: a port of static/widget/markdown.js ---------------------------
#
# Block structure (feed/start/end) and inline text (inline/out) follow the JS
# line by line, keeping only what the plain text needs: no DOM, no URLs.

_JS_SPACE = "[ \\f\\n\\r\\t\\v\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff]"
_WS = re.compile(_JS_SPACE)
_WS_RUN = re.compile(_JS_SPACE + "+")
_SPECIAL = re.compile(r"[\\`*_\[!<&\n]")
_ENT = re.compile(r"&(?:#(\d{1,7})|#[xX]([\da-fA-F]{1,6})|(amp|lt|gt|quot|apos|nbsp));", re.ASCII)
_NAMED = {"amp": "&", "lt": "<", "gt": ">", "quot": '"', "apos": "'", "nbsp": "\xa0"}
_AUTO = re.compile(
    r"<(?:([A-Za-z][A-Za-z\d+.-]{1,31}:[^<>\x00-\x20]*)|([\w.!#$%&'*+/=?^`{|}~-]+@[A-Za-z\d-]+(?:\.[A-Za-z\d-]+)*))>",
    re.ASCII,
)
_DEST = re.compile(
    r"""\([ \t\n]*(?:<([^<>\n]*)>|((?:\\.|[^\x00-\x20()\\]|\((?:\\.|[^\x00-\x20()\\])*\))*))"""
    r"""(?:[ \t\n]+(?:"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*'|\((?:\\.|[^()\\])*\)))?[ \t\n]*\)"""
)
_ASCII_PUNCT = re.compile(r"[!-/:-@\[-`{-~]")
_FENCE = re.compile(r"^(`{3,}|~{3,})[ \t]*(.*)$")
_FENCE_CLOSE = re.compile(r"^(`{3,}|~{3,})[ \t]*$")
_ATX = re.compile(r"^(#{1,6})(?:[ \t](.*))?$")
_ATX_CLOSE = re.compile(r"(^|[ \t]+)#+[ \t]*$")
_HR = re.compile(r"^([-*_])(?:[ \t]*\1){2,}[ \t]*$")
_LI = re.compile(r"^([*+-]|(\d{1,9})[.)])(?:([ \t]+)(.*))?$")
_TEXT = re.compile(r"[^ \t]")
_DELIM_CELL = re.compile(r"^:?-+:?$")
_LANG = re.compile(r"^[A-Za-z0-9_+-]+$")


_TRIM_START = re.compile(f"^{_JS_SPACE}+")
_TRIM = re.compile(f"^{_JS_SPACE}+|{_JS_SPACE}+$")


def _js_trim(text: str) -> str:  # String.prototype.trim
    return _TRIM.sub("", text)


def _js_trim_start(text: str) -> str:  # String.prototype.trimStart
    return _TRIM_START.sub("", text)


def format_string(template: str, **values: object) -> str:
    """static/widget/i18n.js's format(): `{name}` replaced when a value is given."""
    return re.sub(r"\{(\w+)\}", lambda m: str(values[m.group(1)]) if m.group(1) in values else m.group(0), template)


def _is_punct(ch: str) -> bool:  # JS /[\p{P}\p{S}]/u
    return unicodedata.category(ch)[0] in "PS"


def _entity(match: re.Match) -> str:
    if match.group(3):
        return _NAMED[match.group(3)]
    code = int(match.group(1)) if match.group(1) else int(match.group(2), 16)
    return chr(code if 0 < code < 0x110000 and not 0xD800 <= code <= 0xDFFF else 0xFFFD)


def _indent(text: str) -> int:
    columns = 0
    for ch in text:
        if ch == " ":
            columns += 1
        elif ch == "\t":
            columns += 4 - columns % 4
        else:
            break
    return columns


def _strip(text: str, n: int) -> str:
    """Removes n columns of indentation (tab stops of 4)."""
    columns, i = 0, 0
    while columns < n and i < len(text):
        if text[i] == " ":
            columns += 1
        elif text[i] == "\t":
            width = 4 - columns % 4
            if columns + width > n:
                return " " * (columns + width - n) + text[i + 1 :]
            columns += width
        else:
            break
        i += 1
    return text[i:]


def _cells(line: str) -> list[str]:
    inner = re.sub(r"^\||\|$", "", line.strip().replace("\\|", "\0"))
    return [cell.strip().replace("\0", "|") for cell in inner.split("|")]


def _delim(text: str) -> list[str] | None:
    if "|" not in text:
        return None
    cells = _cells(text)
    if all(_DELIM_CELL.match(cell) for cell in cells):
        return [
            "center"
            if c[0] == ":" and c.endswith(":")
            else "left"
            if c[0] == ":"
            else "right"
            if c.endswith(":")
            else ""
            for c in cells
        ]
    return None


def _bracket(src: str, i: int) -> int:
    depth = 0
    while i < len(src):
        c = src[i]
        if c == "\\":
            i += 1
        elif c == "`":
            e = i
            while e < len(src) and src[e] == "`":
                e += 1
            k = src.find(src[i:e], e)
            i = e - 1 if k < 0 else k + e - i - 1
        elif c == "[":
            depth += 1
        elif c == "]":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return -1


@dataclass
class _Delimiter:
    ch: str
    n: int
    length: int
    opens: bool
    closes: bool


def _inline(src: str, in_link: bool = False) -> str:
    """The text of src's inline content, as the renderer's DOM text nodes hold it."""
    items: list[object] = []
    buf = ""

    def push(node: object = None) -> None:
        nonlocal buf
        if buf:
            items.append(buf)
        buf = ""
        if node is not None:
            items.append(node)

    i = 0
    while i < len(src):
        m = _SPECIAL.search(src, i)
        j = m.start() if m else len(src)
        buf += src[i:j]
        if not m:
            break
        i = j
        c = src[i]
        if c == "\\":
            d = src[i + 1] if i + 1 < len(src) else ""
            if d == "\n":
                push(" ")  # <br>
            elif d and _ASCII_PUNCT.match(d):
                buf += d
            else:
                buf += c
                i -= 1
            i += 2
            continue
        if c == "`":
            e = i
            while e < len(src) and src[e] == "`":
                e += 1
            end, k = -1, e
            while (k := src.find("`", k)) >= 0:
                q = k
                while q < len(src) and src[q] == "`":
                    q += 1
                if q - k == e - i:
                    end = k
                    break
                k = q
            if end < 0:
                buf += src[i:e]
                i = e
                continue
            span = src[e:end].replace("\n", " ")
            if span.startswith(" ") and span.endswith(" ") and re.search(r"[^ ]", span):
                span = span[1:-1]
            push(span)
            i = end + e - i
            continue
        if c in "*_":
            e = i
            while e < len(src) and src[e] == c:
                e += 1
            before = src[i - 1] if i > 0 else " "
            after = src[e] if e < len(src) else " "
            bw, fw = bool(_WS.match(before)), bool(_WS.match(after))
            bp, fp = _is_punct(before), _is_punct(after)
            left = not fw and (not fp or bw or bp)
            right = not bw and (not bp or fw or fp)
            opens = left if c == "*" else left and (not right or bp)
            closes = right if c == "*" else right and (not left or fp)
            push(_Delimiter(c, e - i, e - i, opens, closes))
            i = e
            continue
        image = c == "!" and src[i + 1 : i + 2] == "["
        if c == "[" or image:
            a = _bracket(src, i + int(image)) if image or not in_link else -1
            if a > 0 and src[a + 1 : a + 2] == "(":
                dest = _DEST.match(src, a + 1)
                if dest:
                    inner = _inline(src[i + int(image) + 1 : a], True)
                    if image:
                        buf += inner
                    else:
                        push(inner)
                    i = dest.end()
                    continue
        if c == "<":
            auto = _AUTO.match(src, i)
            if auto:
                push(auto.group(1) or auto.group(2))
                i = auto.end()
                continue
        if c == "&":
            entity = _ENT.match(src, i)
            if entity:
                buf += _entity(entity)
                i = entity.end()
                continue
        if c == "\n":
            buf = buf.rstrip(" ") + "\n"  # a hard break is a <br>: whitespace either way
            i += 1
            continue
        buf += c
        i += 1
    push()
    # Emphasis: CommonMark's delimiter runs (flanking, rule of 3), as the JS.
    i = 0
    while i < len(items):
        closer = items[i]
        j = i - 1
        while isinstance(closer, _Delimiter) and closer.closes and closer.n and j >= 0:
            opener = items[j]
            if (
                not isinstance(opener, _Delimiter)
                or opener.ch != closer.ch
                or not opener.opens
                or not opener.n
                or (
                    (opener.closes or closer.opens)
                    and not (opener.length + closer.length) % 3
                    and (opener.length % 3 or closer.length % 3)
                )
            ):
                j -= 1
                continue
            k = 2 if opener.n > 1 and closer.n > 1 else 1
            opener.n -= k
            closer.n -= k
            items[j + 1 : i] = [_out(items[j + 1 : i])]
            i = j + 1
            break
        i += 1
    return _out(items)


def _out(items: Iterable[object]) -> str:
    return "".join(item.ch * item.n if isinstance(item, _Delimiter) else str(item) for item in items)


def _plain_of(text: str) -> str:
    """What a screen reader says of rendered text: whitespace collapsed, trimmed."""
    return _WS_RUN.sub(" ", text).strip(" ")


@dataclass
class _List:
    marker: str


@dataclass
class _Item:
    list: _List
    content_column: int


@dataclass
class _Block:
    kind: str
    lines: list[str] = field(default_factory=list)
    fence: str = ""
    fence_indent: int = 0
    info: str = ""
    level: int = 0
    align: list[str] = field(default_factory=list)


@dataclass
class _State:
    stack: list[_Item] = field(default_factory=list)
    leaf: _Block | None = None
    out: list[_Block] = field(default_factory=list)


def _end(st: _State) -> None:
    if st.leaf is not None:
        st.out.append(st.leaf)
    st.leaf = None


def _start(st: _State, depth: int, block: _Block) -> None:
    _end(st)
    del st.stack[depth:]
    st.leaf = block


def _feed(st: _State, raw: str) -> None:
    stack = st.stack
    s = re.sub(r"\r$", "", raw).replace("\0", "\ufffd")
    leaf = st.leaf
    depth, fresh = 0, False
    blank = not _TEXT.search(s)
    while depth < len(stack) and (blank or _indent(s) >= stack[depth].content_column):
        s = _strip(s, stack[depth].content_column)
        depth += 1
    if leaf is not None and leaf.kind == "code":
        if depth == len(stack):
            close = _FENCE_CLOSE.match(s.strip()) if _indent(s) < 4 else None
            if close and close.group(1)[0] == leaf.fence[0] and len(close.group(1)) >= len(leaf.fence):
                return _end(st)
            leaf.lines.append(_strip(s, leaf.fence_indent))
            return None
        _end(st)
        leaf = None
    if blank:
        return _end(st)
    while True:
        para = (
            leaf is not None and leaf.kind in ("paragraph", "list-item") and (bool(leaf.lines) or depth == len(stack))
        )
        strict = para and bool(leaf.lines) and depth == len(stack)
        i = _indent(s)
        t = _js_trim_start(s) if i < 4 else ""
        if t:
            align = _delim(t) if strict else None
            if align and len(align) == len(_cells(leaf.lines[-1])):
                header = leaf.lines[-1]
                leaf.lines = leaf.lines[:-1]
                if not leaf.lines:
                    st.leaf = None
                return _start(st, depth, _Block("table", [header, t], align=align))
            fence = _FENCE.match(t)
            if fence and not (fence.group(1)[0] == "`" and "`" in fence.group(2)):
                return _start(
                    st, depth, _Block("code", fence=fence.group(1), fence_indent=i, info=fence.group(2).strip())
                )
            atx = _ATX.match(t)
            if atx or _HR.match(t):
                if atx:
                    _start(
                        st, depth, _Block("heading", [_ATX_CLOSE.sub("", atx.group(2) or "")], level=len(atx.group(1)))
                    )
                else:
                    _start(st, depth, _Block("rule"))
                return _end(st)
            if t[0] == ">":
                quoted = re.sub(r"^[ \t]", "", t[1:])
                if leaf is not None and leaf.kind == "quote" and depth == len(stack):
                    leaf.lines.append(quoted)
                    return None
                return _start(st, depth, _Block("quote", [quoted]))
            item = _LI.match(t)
            if item and not (
                strict and (not _TEXT.search(item.group(4) or "") or (item.group(2) and int(item.group(2)) != 1))
            ):
                previous = stack[depth] if depth < len(stack) else None
                marker = item.group(1)[-1]
                width = len((item.group(3) or "").replace("\t", "    "))
                _end(st)
                del stack[depth:]
                depth += 1
                content = item.group(4) or ""
                stack.append(
                    _Item(
                        previous.list if previous and previous.list.marker == marker else _List(marker),
                        i + len(item.group(1)) + (width if width < 5 and _TEXT.search(content) else 1),
                    )
                )
                s, leaf, fresh = content, None, True
                if _TEXT.search(s):
                    continue
                return _start(st, depth, _Block("list-item"))
        if para:
            leaf.lines.append(_js_trim_start(s))
        elif leaf is not None and leaf.kind == "table" and depth == len(stack):
            leaf.lines.append(s)
        elif leaf is not None and leaf.kind == "quote" and _TEXT.search(leaf.lines[-1]):
            leaf.lines.append(_js_trim_start(s))
        else:
            _start(st, depth, _Block("list-item" if fresh else "paragraph", [_js_trim_start(s)]))
        return None


@dataclass(frozen=True)
class Block:
    """A rendered block and its plain text (what the announcer reads)."""

    kind: str
    plain: str


def plain_blocks(markdown: str, strings: dict, *, _depth: int = 0) -> list[Block]:
    """The finished answer's blocks with their plain text, as markdown.js's `blocks()`."""
    st = _State()
    lines = markdown.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for line in lines:
        _feed(st, line)
    _end(st)
    blocks = []
    for b in st.out:
        if b.kind == "code":
            words = b.info.split(" ")[0].split("\t")[0]
            lang = words if _LANG.match(words) else ""
            plain = code_block_summary(strings, lang, len(b.lines))
        elif b.kind == "table":
            plain = table_summary(strings, len(b.align), len(b.lines) - 2)
        elif b.kind == "rule":
            plain = ""
        elif b.kind == "quote" and _depth < 9:
            plain = " ".join(x.plain for x in plain_blocks("\n".join(b.lines), strings, _depth=_depth + 1))
        else:
            words = _js_trim("\n".join(b.lines))
            plain = _plain_of(_inline(words))  # a heading without words is drawn as nothing: ""
        blocks.append(Block(b.kind, plain))
    return blocks


def plural(forms: str | dict[str, str], count: int, lang: str) -> str:
    """static/widget/i18n.js's plural() for the languages the panel ships:
    `one` for exactly 1 (English and Spanish), `many` for Spanish millions
    (CLDR: https://cldr.unicode.org/index/cldr-spec/plural-rules)."""
    if isinstance(forms, str):
        return format_string(forms, count=count)
    category = "one" if count == 1 else "many" if lang == "es" and count and count % 1_000_000 == 0 else "other"
    return format_string(forms.get(category, forms["other"]), count=count)


def code_block_summary(strings: dict, lang: str, lines: int, ui_lang: str = "en") -> str:
    line_count = plural(strings["lines"], lines, ui_lang)
    if lang:
        return format_string(strings["codeBlock"], lang=lang, lines=line_count)
    return format_string(strings["codeBlockNoLang"], lines=line_count)


def table_summary(strings: dict, columns: int, rows: int, ui_lang: str = "en") -> str:
    return format_string(
        strings["table"],
        columns=plural(strings["columns"], columns, ui_lang),
        rows=plural(strings["rows"], rows, ui_lang),
    )


# -- sentences ------------------------------------------------------------------------------

_BOUNDARY = re.compile(r"([.!?]+)[\"'”’»)\]]*\s+")
_CONTINUE = set(",;:-–—")


def split_sentences(text: str) -> list[str]:
    """Sentences of one block's plain text, trimmed: Unicode's sentence rules (UAX #29),
    as the browser's Intl.Segmenter applies them, for the cases answers contain.

    A sentence ends after `.`, `!` or `?` (and closing quotes or brackets) and
    spaces, except before a comma-like mark or another terminator (SB8a), and
    except after a full stop when the next letter is lower case ("e.g. the",
    "see p. 3 below": SB8). `…` ends no sentence.
    """
    out, start = [], 0
    for match in _BOUNDARY.finditer(text):
        rest = text[match.end() :]
        if rest[:1] in _CONTINUE or rest[:1] in (".", "!", "?"):
            continue
        if set(match.group(1)) == {"."}:
            letter = next((ch for ch in rest if ch.isalpha() or ch in ".!?\n"), "")
            if letter.isalpha() and letter.islower():
                continue
        out.append(text[start : match.end()])
        start = match.end()
    out.append(text[start:])
    return [sentence.strip() for sentence in out if sentence.strip()]


def sentences_of(markdown: str, strings: dict) -> list[str]:
    """Every sentence the polite region should say for this answer, in order."""
    return [sentence for block in plain_blocks(markdown, strings) for sentence in split_sentences(block.plain)]


def sentences_heard(announcements: list[str], expected: list[str]) -> list[str]:
    """What was announced (batches of sentences joined by spaces), cut back into sentences.

    The expected sentences guide the cut: a batch that is consecutive expected
    sentences in order yields them; anything else is kept whole, so comparing
    the result with `expected` shows what was missing, extra or repeated.
    """
    heard: list[str] = []
    position = 0
    for batch in announcements:
        rest, taken = batch, []
        k = position
        while rest and k < len(expected):
            sentence = expected[k]
            if rest == sentence:
                rest = ""
            elif rest.startswith(sentence + " "):
                rest = rest[len(sentence) + 1 :]
            else:
                break
            taken.append(sentence)
            k += 1
        if rest:
            heard.append(batch)  # does not fit where the answer was: keep it whole
        else:
            heard.extend(taken)
            position = k
    return heard


# -- the script -------------------------------------------------------------------------------


@dataclass(frozen=True)
class ExpectedScript:
    """What a screen-reader user should hear for one answer, in order."""

    lang: str
    generating: str  # polite cue, first
    sentences: list[str]  # polite, in order, each once, possibly grouped
    completion: str | None  # polite cue, last, when the answer completes
    error: str | None  # assertive, once, when the answer fails
    error_code: str | None = None
    sentences_may_be_dropped: bool = False  # a fast failure drops what was not yet said

    @property
    def outcome(self) -> str:
        return "failed" if self.error else "completed"

    def steps(self) -> list[dict]:
        """[{politeness, text | sentences, …}] in the order they should be heard."""
        steps: list[dict] = [{"politeness": "polite", "text": self.generating}]
        if self.sentences:
            steps.append(
                {
                    "politeness": "polite",
                    "sentences": list(self.sentences),
                    "grouped": True,
                    "optional": self.sentences_may_be_dropped,
                }
            )
        if self.error:
            steps.append({"politeness": "assertive", "text": self.error})
        elif self.completion:
            steps.append({"politeness": "polite", "text": self.completion})
        return steps


def expected_script(
    answer: str,
    lang: str,
    *,
    error_code: str | None = None,
    sentences_may_be_dropped: bool | None = None,
    strings: dict | None = None,
) -> ExpectedScript:
    """The expected announcements for an answer's markdown in a language (`en`, `es`).

    `error_code` (an ErrorCode value) makes it a failed answer: its message from
    the i18n `errors` is said assertively instead of the completion cue, and the
    sentences are only possibly heard (by default): the widget drops what it had
    not said yet when the error arrives.
    """
    t = strings if strings is not None else widget_strings(lang)
    failed = error_code is not None
    return ExpectedScript(
        lang=lang,
        generating=t["generating"],
        sentences=sentences_of(answer, t),
        completion=None if failed else t["complete"],
        error=(t["errors"].get(error_code) or t["errors"]["internal"]) if failed else None,
        error_code=error_code,
        sentences_may_be_dropped=failed if sentences_may_be_dropped is None else sentences_may_be_dropped,
    )


def widget_strings(lang: str) -> dict:
    strings = ui_strings()
    if lang not in strings:
        raise KeyError(f"no widget strings for language {lang!r} (known: {', '.join(strings)})")
    return strings[lang]


# -- the demo's scenarios ------------------------------------------------------------------------


class _NoWait:
    """A cancel token that never sleeps: plays a scenario at once, noting long waits."""

    def __init__(self) -> None:
        self.longest_wait = 0.0
        self._lock = threading.Lock()

    @property
    def cancelled(self) -> bool:
        return False

    def cancel(self, reason: str = "cancelled") -> None:  # pragma: no cover - never cancelled
        pass

    def wait(self, timeout: float) -> bool:
        with self._lock:
            self.longest_wait = max(self.longest_wait, timeout)
        return False


# A wait this long only ends by the time limit (the `hang` scenario).
_FOREVER_SECONDS = 24 * 3600


@dataclass(frozen=True)
class ScenarioAnswer:
    text: str
    error_code: str | None  # how it fails, or None when it completes
    fails_late: bool  # fails only at the time limit: its sentences are said first


def play_scenario(play) -> ScenarioAnswer:
    """Run a demo scenario's generator without pauses; its text and how it ends."""
    from .backends.demo import DemoBackend

    backend = DemoBackend(delay=0)
    token = _NoWait()
    chunks: list[str] = []
    error_code = None
    try:
        for chunk in play(backend, token):
            chunks.append(chunk)
    except ChatError as error:
        error_code = error.code.value
    except Exception:  # a backend bug: the service reports `internal`
        error_code = ErrorCode.INTERNAL.value
    fails_late = token.longest_wait >= _FOREVER_SECONDS
    if fails_late and error_code is None:
        error_code = ErrorCode.TIMEOUT.value  # the message time limit ends it
    return ScenarioAnswer("".join(chunks), error_code, fails_late)


def scenario_answer(name: str) -> ScenarioAnswer:
    from .backends.demo import SCENARIOS

    return play_scenario(SCENARIOS[name].play)


def script_for_scenario(name: str, lang: str) -> ExpectedScript:
    answer = scenario_answer(name)
    return expected_script(
        answer.text,
        lang,
        error_code=answer.error_code,
        sentences_may_be_dropped=answer.error_code is not None and not answer.fails_late,
    )


def iter_scenario_names() -> Iterator[str]:
    from .backends.demo import SCENARIOS

    yield from SCENARIOS
