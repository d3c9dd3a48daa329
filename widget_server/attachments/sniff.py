"""An attachment's type, by its content alone (docs/security.md, "Attachments").

The type is read from the bytes: the file's magic number, and for an image its dimensions
from its header. The file name and the client's `Content-Type` are never consulted for what
the bytes are; the name only tells CSV from plain text once the content is known to be text
and to be CSV (see `sniff`). Anything that is not one of the allowed types is refused with
415 `attachment_type`, naming them; an image whose header declares more than `max_pixels`
pixels (a decompression bomb: a few KB that decode to gigabytes) with 413
`attachment_image_too_large`.

Why headers are parsed here by hand instead of with Pillow: nothing is decoded (the server
never needs the pixels, only the declared width and height), every read is bounded (a fixed
header, or for JPEG a walk over segment lengths of at most `_JPEG_MAX_SEGMENTS` segments),
and it adds no native dependency to a server that has none. The formats' headers are small
and fixed by their specifications, cited at each parser; tests/test_attachments_sniff.py
checks them on files built byte by byte.

Pure: the caller hands a seekable binary file and gets a `Sniffed` or an `ApiError`.
"""

from __future__ import annotations

import codecs
import csv
import io
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from typing import BinaryIO

from ..errors import ApiError
from ..wire.errors import ATTACHMENT_IMAGE_TOO_LARGE, ATTACHMENT_TYPE

# Short name → the Content-Type the file is served with. Text is always UTF-8 (checked).
MEDIA_TYPES = {
    "png": "image/png",
    "jpeg": "image/jpeg",
    "webp": "image/webp",
    "gif": "image/gif",
    "pdf": "application/pdf",
    "text": "text/plain; charset=utf-8",
    "csv": "text/csv; charset=utf-8",
}
# The types a browser may show inline: raster images, which cannot run script.
IMAGE_TYPES = frozenset({"png", "jpeg", "webp", "gif"})
# Each type's file name extensions, the first the one a name without a matching one gets.
EXTENSIONS = {
    "png": (".png",),
    "jpeg": (".jpg", ".jpeg", ".jpe", ".jfif"),
    "webp": (".webp",),
    "gif": (".gif",),
    "pdf": (".pdf",),
    "text": (".txt", ".text", ".log", ".md", ".csv", ".tsv", ".json"),
    "csv": (".csv",),
}

_JPEG_MAX_SEGMENTS = 256  # before the frame header; a real file has a dozen
_TEXT_CHUNK = 65536
# C0 controls text may hold: tab, line feed, form feed, carriage return. Others (NUL above
# all) mark a binary file (the WHATWG MIME Sniffing standard's "binary data byte" set, §7.2).
_TEXT_CONTROLS = frozenset(b"\t\n\x0c\r")
_BINARY_BYTES = frozenset(range(0x20)) - _TEXT_CONTROLS
# CSV: how much of a file is parsed to confirm it, and the columns a row must have.
_CSV_CHECK_BYTES = 1 << 20
_CSV_MIN_COLUMNS = 2


@dataclass(frozen=True)
class Sniffed:
    type: str  # a key of MEDIA_TYPES
    width: int | None = None
    height: int | None = None

    @property
    def media_type(self) -> str:
        return MEDIA_TYPES[self.type]

    @property
    def is_image(self) -> bool:
        return self.type in IMAGE_TYPES


def parse_types(raw: str | Iterable[str]) -> tuple[str, ...]:
    """ATTACHMENT_TYPES: names from MEDIA_TYPES, space- or comma-separated, at least one."""
    items = raw.replace(",", " ").split() if isinstance(raw, str) else [str(item) for item in raw]
    names = tuple(dict.fromkeys(item.strip().lower() for item in items if item.strip()))
    unknown = [name for name in names if name not in MEDIA_TYPES]
    if unknown:
        raise ValueError(f"unknown type {', '.join(unknown)} (known: {', '.join(MEDIA_TYPES)})")
    return names


def type_refused(allowed: Iterable[str]) -> ApiError:
    listed = list(allowed)
    return ATTACHMENT_TYPE(
        f"This kind of file is not accepted. Allowed: {', '.join(listed) or 'none'}.",
        details={"allowed": listed},
    )


class _Unrecognised(Exception):
    """The bytes start like no known type, or like one whose header is cut short."""


def _read_at(file: BinaryIO, offset: int, size: int) -> bytes:
    file.seek(offset)
    data = file.read(size)
    if len(data) != size:
        raise _Unrecognised("truncated header")
    return data


def _png(file: BinaryIO) -> tuple[int, int]:
    # PNG (ISO/IEC 15948 §5.2, §11.2.2): the signature, then IHDR first: length 13, "IHDR",
    # width and height as 4-byte big-endian integers.
    length, kind, width, height = struct.unpack(">I4sII", _read_at(file, 8, 16))
    if length != 13 or kind != b"IHDR":
        raise _Unrecognised("PNG without IHDR first")
    return width, height


def _gif(file: BinaryIO) -> tuple[int, int]:
    # GIF89a §18: the logical screen descriptor right after the 6-byte header, width and
    # height as 2-byte little-endian integers. Frames are drawn within the logical screen.
    width, height = struct.unpack("<HH", _read_at(file, 6, 4))
    return width, height


def _webp(file: BinaryIO) -> tuple[int, int]:
    # RFC 9649 §2.5-2.7: "RIFF" size "WEBP", then the first chunk: "VP8 " (lossy), "VP8L"
    # (lossless) or "VP8X" (extended, with the canvas size).
    kind = _read_at(file, 12, 4)
    data = _read_at(file, 20, 10)
    if kind == b"VP8X":
        # Flags (1), reserved (3), canvas width - 1 and height - 1, 24-bit little-endian.
        return int.from_bytes(data[4:7], "little") + 1, int.from_bytes(data[7:10], "little") + 1
    if kind == b"VP8L":
        # RFC 9649 §3.2.1: signature 0x2f, then 14 bits width - 1, 14 bits height - 1.
        if data[0] != 0x2F:
            raise _Unrecognised("VP8L without its signature")
        bits = int.from_bytes(data[1:5], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if kind == b"VP8 ":
        # RFC 6386 §9.1: a 3-byte frame tag, the start code 9d 01 2a, then 14-bit width and
        # height (the top 2 bits of each are a scale).
        if data[3:6] != b"\x9d\x01\x2a":
            raise _Unrecognised("VP8 without its start code")
        width, height = struct.unpack("<HH", data[6:10])
        return width & 0x3FFF, height & 0x3FFF
    raise _Unrecognised("WebP with an unknown first chunk")


# SOFn markers (ITU T.81 Table B.1): every frame type but DHT (C4), JPG (C8) and DAC (CC).
_JPEG_SOF = frozenset({0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF})
# Markers without a length (T.81 §B.1.1.3, Table B.1): TEM, RST0-7.
_JPEG_STANDALONE = frozenset({0x01, *range(0xD0, 0xD8)})


def _jpeg(file: BinaryIO) -> tuple[int, int]:
    # ITU T.81 Annex B: after SOI, segments of a marker (FF xx, any number of FF fills) and a
    # 2-byte big-endian length that counts itself; the frame header (SOFn) holds precision
    # (1), height (2), width (2). Each step reads 2 to 7 bytes and seeks over the rest.
    offset = 2
    for _ in range(_JPEG_MAX_SEGMENTS):
        byte = _read_at(file, offset, 1)
        if byte != b"\xff":
            raise _Unrecognised("JPEG segment without a marker")
        while byte == b"\xff":
            offset += 1
            byte = _read_at(file, offset, 1)
        marker = byte[0]
        offset += 1
        if marker in _JPEG_STANDALONE:
            continue
        if marker in (0xD9, 0xDA):  # EOI or SOS before any frame header
            raise _Unrecognised("JPEG without a frame header")
        (length,) = struct.unpack(">H", _read_at(file, offset, 2))
        if length < 2:
            raise _Unrecognised("JPEG segment length below 2")
        if marker in _JPEG_SOF:
            _precision, height, width = struct.unpack(">BHH", _read_at(file, offset + 2, 5))
            return width, height
        offset += length
    raise _Unrecognised("JPEG with too many segments before its frame header")


def _is_utf8_text(file: BinaryIO) -> bool:
    """The whole file is UTF-8 (an initial BOM allowed) without binary control bytes."""
    file.seek(0)
    decoder = codecs.getincrementaldecoder("utf-8")(errors="strict")
    while chunk := file.read(_TEXT_CHUNK):
        if not _BINARY_BYTES.isdisjoint(chunk):
            return False
        try:
            decoder.decode(chunk)
        except UnicodeDecodeError:
            return False
    try:
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return False
    return True


def _is_csv(file: BinaryIO) -> bool:
    """The text parses as CSV (RFC 4180, or `;`/tab-separated) with at least two columns and
    the same number in every row, judged on its first `_CSV_CHECK_BYTES` (a cut last line is
    dropped)."""
    file.seek(0)
    head = file.read(_CSV_CHECK_BYTES)
    cut = len(head) == _CSV_CHECK_BYTES and file.read(1) != b""
    text = head.decode("utf-8", errors="ignore").removeprefix("\ufeff")
    if cut:
        text = text.rpartition("\n")[0]
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return False
    for delimiter in (",", ";", "\t"):
        try:
            rows = list(csv.reader(io.StringIO("\n".join(lines)), delimiter=delimiter, strict=True))
        except csv.Error:
            continue
        widths = {len(row) for row in rows if row}
        if len(widths) == 1 and widths.pop() >= _CSV_MIN_COLUMNS:
            return True
    return False


def _recognise(file: BinaryIO, name: str) -> Sniffed:
    file.seek(0)
    head = file.read(16)
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return Sniffed("png", *_png(file))
    if head.startswith((b"GIF87a", b"GIF89a")):
        return Sniffed("gif", *_gif(file))
    if head.startswith(b"RIFF") and head[8:12] == b"WEBP":
        return Sniffed("webp", *_webp(file))
    if head.startswith(b"\xff\xd8\xff"):
        return Sniffed("jpeg", *_jpeg(file))
    if head.startswith(b"%PDF-"):
        # ISO 32000-2 §7.5.2: the header is the file's first line. (Readers tolerate it within
        # the first 1024 bytes; we do not, so nothing else can pose as a PDF.)
        return Sniffed("pdf")
    if head and _is_utf8_text(file):
        # The name decides only between two labels for text already checked: a `.csv` name
        # and content that parses as CSV make it `csv`; anything else stays `text`.
        if name.lower().endswith(".csv") and _is_csv(file):
            return Sniffed("csv")
        return Sniffed("text")
    raise _Unrecognised("unknown type")


def sniff(file: BinaryIO, name: str, allowed: Iterable[str], max_pixels: int) -> Sniffed:
    """What `file` (seekable, read from its start) is, if it is one of `allowed`; else 415
    `attachment_type` (unknown, a truncated or malformed header, or not allowed), or 413
    `attachment_image_too_large` for an image of more than `max_pixels` pixels."""
    allowed = tuple(allowed)
    try:
        found = _recognise(file, name)
    except _Unrecognised:
        raise type_refused(allowed) from None
    finally:
        file.seek(0)
    if found.type == "csv" and "csv" not in allowed and "text" in allowed:
        found = Sniffed("text")
    if found.type not in allowed:
        raise type_refused(allowed)
    if found.width is not None and found.height is not None:
        if found.width == 0 or found.height == 0:
            raise type_refused(allowed)
        if found.width * found.height > max_pixels:
            raise ATTACHMENT_IMAGE_TOO_LARGE(
                f"The image is {found.width}×{found.height} pixels; the limit is {max_pixels} pixels.",
                details={"width": found.width, "height": found.height, "max_pixels": max_pixels},
            )
    return found
