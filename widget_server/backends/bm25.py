"""Okapi BM25 ranking and the tokenizer it uses. Pure: no I/O, no state but the index.

score(D, Q) = Σ over the distinct terms q of Q present in D of

    idf(q) · f(q, D) · (k1 + 1) / (f(q, D) + k1 · (1 − b + b · |D| / avgdl))

    idf(q) = ln(1 + (N − n(q) + 0.5) / (n(q) + 0.5))

with f(q, D) the count of q in D, |D| the length of D in tokens, avgdl the mean length, N the
number of documents and n(q) how many contain q. This idf (Lucene's) is never negative, so a
term in most documents adds a little instead of subtracting.

The tokenizer drops Markdown markup (link targets, images, HTML tags, emphasis, code ticks),
folds case and accents (NFKD, then combining marks removed: "Configuración" → "configuracion"),
splits at anything that is not a letter or a digit (so `EMBED_ORIGINS` and `message.snapshot`
give two tokens each), drops a small English and Spanish stop-word list, and folds a few
regular English endings (plural `s`, `ed`, `ing`; see `fold`) so "allowed" finds "allow".
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence

K1 = 1.2
B = 0.75

STOP_WORDS_EN = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "for",
        "from",
        "had",
        "has",
        "have",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "me",
        "my",
        "no",
        "not",
        "of",
        "on",
        "or",
        "our",
        "she",
        "so",
        "than",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "to",
        "too",
        "us",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
    ]
)
STOP_WORDS_ES = frozenset(
    [
        "a",
        "al",
        "algo",
        "como",
        "con",
        "cual",
        "cuando",
        "de",
        "del",
        "donde",
        "el",
        "ella",
        "ellos",
        "en",
        "entre",
        "es",
        "esta",
        "este",
        "esto",
        "eso",
        "hay",
        "la",
        "las",
        "le",
        "les",
        "lo",
        "los",
        "me",
        "mi",
        "mis",
        "muy",
        "no",
        "nos",
        "o",
        "para",
        "pero",
        "por",
        "porque",
        "que",
        "se",
        "si",
        "sin",
        "sobre",
        "su",
        "sus",
        "te",
        "tu",
        "un",
        "una",
        "unas",
        "unos",
        "y",
        "ya",
        "yo",
    ]
)
STOP_WORDS = STOP_WORDS_EN | STOP_WORDS_ES

# Markup that is not text: image and link targets, autolinks and HTML tags (outside code).
_CODE_SPAN = re.compile(r"(`+)(?:(?!`).|\n)*?(?<!`)\1(?!`)")
_IMAGE = re.compile(r"!\[([^\]\n]*)\]\([^)\n]*\)")
_LINK = re.compile(r"\[([^\]\n]*)\]\([^)\n]*\)")
_TAG = re.compile(r"<!--.*?-->|<[A-Za-z/!?][^<>\n]*>", re.DOTALL)
# A word: letters and digits of any script. Underscores, dots, dashes and
# Markdown's punctuation (* _ ` # | > ~) all separate words.
_WORD = re.compile(r"[^\W_]+")


def split_code(text: str) -> list[str]:
    """`text` cut around its code spans (and fences): even items are outside code, odd ones
    are code, backticks included; joined they are `text`."""
    parts: list[str] = []
    position = 0
    for span in _CODE_SPAN.finditer(text):
        parts += [text[position : span.start()], span.group(0)]
        position = span.end()
    return [*parts, text[position:]]


def strip_markup(text: str) -> str:
    """Link and image targets and HTML tags removed, outside code (`<id>` in code is text)."""
    parts = split_code(text)
    for k in range(0, len(parts), 2):
        parts[k] = _TAG.sub(" ", _LINK.sub(r" \1 ", _IMAGE.sub(r" \1 ", parts[k])))
    return "".join(parts)


def fold_accents(text: str) -> str:
    """Lower case without accents: NFKD, combining marks removed, casefolded."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


def fold(token: str) -> str:
    """A light, conservative suffix folding (not a full stemmer).

    Plurals: "origins" → "origin", "policies" → "policy", "indexes" → "index",
    "processes" → "process"; words ending in "ss", "us" or "is" are kept ("status").
    Then `ing` and `ed` when 4+ letters remain, undoing a doubled last consonant:
    "allowed" → "allow", "embedding" → "embed", "settings" → "set".
    """
    if len(token) < 4 or not token.isalpha():
        return token
    if token.endswith("ies") and len(token) > 4:
        token = token[:-3] + "y"
    elif token.endswith(("sses", "xes")):
        token = token[:-2]
    elif token.endswith("s") and not token.endswith(("ss", "us", "is")):
        token = token[:-1]
    for suffix in ("ing", "ed"):
        if token.endswith(suffix) and len(token) - len(suffix) >= 4:
            stem = token[: -len(suffix)]
            if stem[-1] == stem[-2] and stem[-1] not in "aeioulsz":
                stem = stem[:-1]
            return stem
    return token


def tokenize(text: str) -> list[str]:
    """Index and query terms of `text` (Markdown or plain)."""
    words = _WORD.findall(fold_accents(strip_markup(text)))
    return [fold(w) for w in words if w not in STOP_WORDS and (len(w) > 1 or w.isdigit())]


class BM25:
    """An inverted index of tokenised documents, ranked by Okapi BM25."""

    def __init__(self, documents: Iterable[Sequence[str]], k1: float = K1, b: float = B) -> None:
        self.k1 = k1
        self.b = b
        self.lengths: list[int] = []
        self.postings: dict[str, list[tuple[int, int]]] = {}  # term → [(doc, count)]
        for doc, tokens in enumerate(documents):
            self.lengths.append(len(tokens))
            for term, count in Counter(tokens).items():
                self.postings.setdefault(term, []).append((doc, count))
        self.n = len(self.lengths)
        self.avgdl = (sum(self.lengths) / self.n) if self.n else 0.0
        self.idf = {term: math.log(1 + (self.n - len(p) + 0.5) / (len(p) + 0.5)) for term, p in self.postings.items()}

    def scores(self, query: Iterable[str]) -> dict[int, float]:
        """Every document that shares a term with `query`, with its score. A repeated query
        term counts once."""
        totals: dict[int, float] = {}
        avgdl = self.avgdl or 1.0
        for term in dict.fromkeys(query):
            postings = self.postings.get(term)
            if not postings:
                continue
            idf = self.idf[term]
            for doc, count in postings:
                norm = self.k1 * (1 - self.b + self.b * self.lengths[doc] / avgdl)
                totals[doc] = totals.get(doc, 0.0) + idf * count * (self.k1 + 1) / (count + norm)
        return totals

    def score(self, query: Iterable[str], doc: int) -> float:
        return self.scores(query).get(doc, 0.0)

    def ceiling(self, query: Iterable[str]) -> float:
        """An upper bound of any document's score for `query`: Σ idf(q) · (k1 + 1) over its
        distinct terms, a term no document has counting with the idf it would have in one.
        A score divided by it is a relevance in [0, 1) that does not grow with the corpus."""
        unseen = math.log(1 + (self.n + 0.5) / 0.5)
        return sum(self.idf.get(term, unseen) * (self.k1 + 1) for term in dict.fromkeys(query))

    def top(self, query: Iterable[str], limit: int) -> list[tuple[int, float]]:
        """The best `limit` (doc, score) pairs, best first; ties keep document order."""
        ranked = sorted(self.scores(query).items(), key=lambda item: (-item[1], item[0]))
        return ranked[:limit]
