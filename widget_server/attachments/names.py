"""An attachment's name, safe to show and to download under (docs/security.md, "Attachments").

The name a client sends is a claim, never a path: only its last path segment is kept;
control characters, bidirectional overrides and isolates (which can make
"invoice‮fdp.exe" read as "invoiceexe.pdf", Unicode TR #36 §2.1.3) and invisible
format characters are removed; it is bounded to `MAX_NAME_CHARS` with its extension kept.
An extension that does not match the type the content was sniffed as gets the type's own
appended ("report.pdf" holding a PNG is downloaded as "report.pdf.png"), so the file a
visitor or agent saves opens as what it is.

`content_disposition` writes the header of RFC 6266 §4 with both an ASCII `filename` and the
exact name as `filename*` (RFC 8187, UTF-8, percent-encoded).
"""

from __future__ import annotations

import unicodedata
from urllib.parse import quote

from .sniff import EXTENSIONS

MAX_NAME_CHARS = 120
_MAX_EXTENSION_CHARS = 16
FALLBACK_STEM = "attachment"


def _kept(char: str) -> bool:
    # Cc: C0/C1 controls. Cf: format characters, among them the bidi embeddings, overrides
    # and isolates (U+202A-202E, U+2066-2069), the marks (U+200E, U+200F, U+061C), zero-width
    # joiners and the BOM. Zl/Zp: line and paragraph separators. Cs/Co/Cn: surrogates,
    # private use and unassigned code points, which no font shows the same way.
    return unicodedata.category(char) not in {"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"}


def _split_extension(name: str) -> tuple[str, str]:
    stem, dot, extension = name.rpartition(".")
    if not dot or not stem or not 1 <= len(extension) <= _MAX_EXTENSION_CHARS or not extension.isalnum():
        return name, ""
    return stem, "." + extension


def display_name(raw: str | None, type_name: str) -> str:
    """The name to show and to download under, for content sniffed as `type_name`."""
    name = (raw or "").replace("\\", "/").rsplit("/", 1)[-1]
    name = unicodedata.normalize("NFC", name)
    # White space of any kind (tabs, line breaks, NBSP…) becomes one space; other controls go.
    name = "".join(" " if char.isspace() else char if _kept(char) else "" for char in name)
    name = " ".join(name.split())
    name = name.strip(" .")  # no hidden ".name", no "name." that Windows trims
    stem, extension = _split_extension(name)
    if not stem:
        stem, extension = FALLBACK_STEM, ""
    own = EXTENSIONS[type_name]
    if extension.lower() not in own:
        stem, extension = stem + extension, own[0]
    return stem[: MAX_NAME_CHARS - len(extension)].rstrip(" .") + extension


def content_disposition(name: str, *, inline: bool = False) -> str:
    """`attachment; filename="…"; filename*=UTF-8''…` (RFC 6266 §4.1, RFC 8187 §3.2)."""
    fallback = "".join(
        char if " " <= char <= "~" and char not in '"\\%' else "_"
        for char in unicodedata.normalize("NFKD", name)
        if not unicodedata.combining(char)
    )
    encoded = quote(name, safe="!#$&+-.^_`|~")  # RFC 8187 attr-char, everything else %XX
    return f"{'inline' if inline else 'attachment'}; filename=\"{fallback}\"; filename*=UTF-8''{encoded}"
