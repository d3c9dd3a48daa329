"""An attachment's type comes from its bytes, its name is made safe (widget_server/attachments/
sniff.py and names.py; docs/security.md, "Attachments").

Every type on real files (tests/attachment_samples.py: PNG, GIF and JPEG written after their
specifications, WebP's classic 1×1 images, all decoded by Chromium in the e2e-marked test
here; JPEG and WebP from Chromium's encoder too, e2e-marked), spoofed names, truncated and
malformed headers, images declaring more pixels than ATTACHMENT_IMAGE_MAX_PIXELS (a
decompression bomb is refused from its header, reading a few bytes), and names with paths,
controls and bidirectional overrides.
"""

from __future__ import annotations

import io
import struct
import zlib
from urllib.parse import unquote

import pytest

from widget_server.attachments.names import MAX_NAME_CHARS, content_disposition, display_name
from widget_server.attachments.sniff import MEDIA_TYPES, parse_types, sniff
from widget_server.errors import ApiError
from widget_server.settings import ConfigError, load_settings

from . import attachment_samples as samples

ALL = tuple(MEDIA_TYPES)
MAX_PIXELS = 40_000_000


@pytest.fixture
def encoded(page, browser_name) -> dict[str, bytes]:
    """JPEG and WebP (as the browser's canvas writes it: extended in Chromium, simple in Firefox;
    and its simple form) of a 37 × 21 canvas, from a real encoder (pytest-playwright's page)."""
    files = samples.encode_in_browser(page, 37, 21)
    files["webp_simple"] = samples.simple_webp(files["webp"])
    return files


def kind(data: bytes, name: str = "file", allowed: tuple[str, ...] = ALL, max_pixels: int = MAX_PIXELS):
    return sniff(io.BytesIO(data), name, allowed, max_pixels)


def refusal(data: bytes, name: str = "file", allowed: tuple[str, ...] = ALL, max_pixels: int = MAX_PIXELS) -> ApiError:
    with pytest.raises(ApiError) as raised:
        kind(data, name, allowed, max_pixels)
    return raised.value


class CountingFile(io.BytesIO):
    """Counts the bytes read: the header parsers must read a few, never the whole file."""

    read_bytes = 0

    def read(self, size: int | None = -1) -> bytes:
        data = super().read(size)
        self.read_bytes += len(data)
        return data


# -- each type ------------------------------------------------------------------------------


def test_png_and_its_dimensions():
    found = kind(samples.png(5, 3))
    assert (found.type, found.width, found.height, found.media_type) == ("png", 5, 3, "image/png")


def test_gif_and_its_logical_screen():
    found = kind(samples.gif(7, 9))
    assert (found.type, found.width, found.height, found.media_type) == ("gif", 7, 9, "image/gif")


def test_jpeg_and_its_frame_header():
    found = kind(samples.jpeg(37, 21))
    assert (found.type, found.width, found.height, found.media_type) == ("jpeg", 37, 21, "image/jpeg")


@pytest.mark.parametrize("data,chunk", [(samples.WEBP_LOSSY, b"VP8 "), (samples.WEBP_LOSSLESS, b"VP8L")])
def test_webp_lossy_and_lossless(data, chunk):
    assert data[12:16] == chunk
    found = kind(data)
    assert (found.type, found.width, found.height, found.media_type) == ("webp", 1, 1, "image/webp")


@pytest.mark.e2e
def test_the_samples_are_images_a_browser_decodes(page):
    decoded = samples.decode_in_browser(
        page,
        {
            "png": ("image/png", samples.png(5, 3)),
            "gif": ("image/gif", samples.gif(7, 9)),
            "jpeg": ("image/jpeg", samples.jpeg(37, 21)),
            "webp lossy": ("image/webp", samples.WEBP_LOSSY),
            "webp lossless": ("image/webp", samples.WEBP_LOSSLESS),
        },
    )
    assert decoded == {"png": [5, 3], "gif": [7, 9], "jpeg": [37, 21], "webp lossy": [1, 1], "webp lossless": [1, 1]}


@pytest.mark.e2e
def test_jpeg_from_a_real_encoder(encoded):
    found = kind(encoded["jpeg"])
    assert (found.type, found.width, found.height, found.media_type) == ("jpeg", 37, 21, "image/jpeg")


@pytest.mark.e2e
@pytest.mark.parametrize("form", ["webp", "webp_simple"])
def test_webp_extended_and_simple_from_a_real_encoder(encoded, form, browser_name):
    data = encoded[form]
    # Chromium's canvas writes the extended form (a VP8X header first), Firefox's the simple one.
    written = b"VP8X" if browser_name == "chromium" else b"VP8 "
    assert data[12:16] == (written if form == "webp" else b"VP8 ")
    found = kind(data)
    assert (found.type, found.width, found.height, found.media_type) == ("webp", 37, 21, "image/webp")


def test_webp_lossless_header_of_any_size():
    found = kind(samples.webp_vp8l(300, 200))
    assert (found.type, found.width, found.height) == ("webp", 300, 200)


def test_pdf():
    found = kind(samples.pdf())
    assert (found.type, found.media_type, found.is_image) == ("pdf", "application/pdf", False)


def test_plain_text_in_any_language_with_tabs_and_line_ends():
    text = "Fehler:\tZeile 3\r\nخطأ في السطر\n错误 ✓\n".encode()
    assert kind(text, "log.txt").type == "text"
    assert kind(b"\xef\xbb\xbf" + text).type == "text"  # a UTF-8 byte order mark
    assert kind(text).media_type == "text/plain; charset=utf-8"


def test_a_character_split_across_read_chunks_is_still_text():
    text = ("a" * 65535 + "é" * 10).encode()  # é's two bytes straddle the 64 KiB chunk edge
    assert kind(text).type == "text"


def test_csv_needs_a_csv_name_and_content_that_parses_with_constant_columns():
    table = b'name,amount\nAda,3\n"Grace, Rear Admiral",5\n'
    assert kind(table, "export.CSV").type == "csv"
    assert kind(table, "export.CSV").media_type == "text/csv; charset=utf-8"
    assert kind(b"a;b;c\n1;2;3\n", "semicolons.csv").type == "csv"
    assert kind(table, "export.txt").type == "text"  # the content alone does not make it csv
    assert kind(b"name,amount\nAda\n", "ragged.csv").type == "text"  # columns differ: text
    assert kind(b"just words\nno columns\n", "words.csv").type == "text"


def test_csv_follows_the_allowed_types():
    table = b"name,amount\nAda,3\n"
    assert kind(table, "t.csv", allowed=("text",)).type == "text"  # csv not allowed: still text
    assert kind(table, "t.csv", allowed=("csv",)).type == "csv"
    assert refusal(b"name,amount\nAda\n", "ragged.csv", allowed=("csv",)).code == "attachment_type"


# -- what is refused ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(b"MZ\x90\x00\x03\x00\x00\x00\x04\x00", id="windows-executable"),
        pytest.param(b"\x7fELF\x02\x01\x01\x00" + b"\x00" * 8, id="elf"),
        pytest.param(b"PK\x03\x04\x14\x00\x00\x00\x08\x00", id="zip"),
        pytest.param("caf\xe9".encode("latin-1") + b" au lait\n", id="latin-1-not-utf8"),
        pytest.param(b"text with a \x1b[31m terminal escape\n", id="escape-control"),
        pytest.param(b"text\x00with a NUL", id="nul"),
        pytest.param(b"\xe2\x82", id="cut-utf8-sequence"),
    ],
)
def test_other_contents_are_refused_naming_the_allowed_types(data):
    error = refusal(data)
    assert (error.status, error.code) == (415, "attachment_type")
    assert error.details == {"allowed": list(ALL)}
    for name in ALL:
        assert name in error.message


def test_a_type_not_allowed_is_refused():
    error = refusal(samples.pdf(), "doc.pdf", allowed=("png", "jpeg"))
    assert (error.status, error.code, error.details) == (415, "attachment_type", {"allowed": ["png", "jpeg"]})


@pytest.mark.parametrize(
    "name,data,expected",
    [
        ("holiday.pdf", samples.png(2, 2), "png"),  # the name says PDF, the bytes PNG
        ("report.png", samples.pdf(), "pdf"),
        ("photo.jpg", b"plain words\n", "text"),
        ("notes.txt", samples.gif(1, 1), "gif"),
        # SVG (scriptable XML) is never an image here: it is text, served as text/plain.
        ("logo.svg", b'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>', "text"),
        ("page.png", b"<!doctype html><script>alert(1)</script>", "text"),
    ],
)
def test_the_name_never_decides_the_type(name, data, expected):
    assert kind(data, name).type == expected


def test_a_spoofed_name_does_not_pass_a_refused_type():
    assert refusal(b"MZ\x90\x00" + b"\x00" * 60, "cat.png").code == "attachment_type"
    assert refusal(b"#!/bin/sh\nrm -rf /\n", "script.pdf", allowed=("png", "pdf")).code == "attachment_type"


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(b"\x89PNG\r\n\x1a\n", id="png-signature-only"),
        pytest.param(samples.png(3, 3)[:20], id="png-ihdr-cut"),
        pytest.param(
            b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IDAT" + b"\x00" * 13, id="png-without-ihdr-first"
        ),
        pytest.param(b"GIF89a\x01", id="gif-screen-cut"),
        pytest.param(b"RIFF\x00\x00\x00\x00WEBPVP8 ", id="webp-chunk-cut"),
        pytest.param(b"RIFF\x20\x00\x00\x00WEBPALPH" + b"\x00" * 14, id="webp-unknown-first-chunk"),
        pytest.param(samples.webp_vp8l(5, 5)[:20] + b"\x00" * 10, id="webp-vp8l-bad-signature"),
        pytest.param(b"\xff\xd8\xff", id="jpeg-soi-only"),
        pytest.param(b"\xff\xd8\xff\xe0\x00\x10JFIF", id="jpeg-app0-cut"),
        pytest.param(b"\xff\xd8\xff\xda\x00\x08" + b"\x00" * 8, id="jpeg-scan-before-frame"),
        pytest.param(b"\xff\xd8\xff\xc0\x00\x01" + b"\x00" * 8, id="jpeg-length-below-2"),
    ],
)
def test_truncated_or_malformed_headers_are_refused(data):
    error = refusal(data)
    assert (error.status, error.code) == (415, "attachment_type")


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(samples.png(0, 4, pixels=False), id="png"),
        pytest.param(samples.gif(5, 0), id="gif"),
    ],
)
def test_an_image_without_pixels_is_refused(data):
    assert refusal(data).code == "attachment_type"


def _jpeg_declaring(encoded_jpeg: bytes, width: int, height: int) -> bytes:
    """The encoder's JPEG with its frame header (SOF0) patched to declare another size."""
    at = encoded_jpeg.index(b"\xff\xc0")
    return encoded_jpeg[: at + 5] + struct.pack(">HH", height, width) + encoded_jpeg[at + 9 :]


def test_images_declaring_more_pixels_than_allowed_are_refused():
    bombs = {
        "png": samples.png(10_000, 5_000, pixels=False),
        "gif": samples.gif(65_535, 65_535),
        "jpeg": _jpeg_declaring(samples.jpeg(8, 8), 60_000, 60_000),
        "webp": samples.webp_vp8x(16_384, 16_384),
    }
    for name, data in bombs.items():
        error = refusal(data)
        assert (error.status, error.code) == (413, "attachment_image_too_large"), name
        assert error.details["max_pixels"] == MAX_PIXELS
        assert error.details["width"] * error.details["height"] > MAX_PIXELS


def test_the_pixel_limit_is_inclusive():
    assert kind(samples.png(8, 5), max_pixels=40).type == "png"
    error = refusal(samples.png(8, 5), max_pixels=39)
    assert error.details == {"width": 8, "height": 5, "max_pixels": 39}


def test_a_png_bomb_is_refused_from_its_header_without_inflating_it():
    # 10000 × 10000 grey pixels: 100 MB once inflated, about 100 KB of zlib here.
    header = struct.pack(">IIBBBBB", 10_000, 10_000, 8, 0, 0, 0, 0)
    compressor = zlib.compressobj(9)
    row = b"\x00" * 10_001  # a filter byte and the row's pixels
    idat = b"".join(compressor.compress(row) for _ in range(10_000)) + compressor.flush()
    assert len(idat) < 200_000
    data = b"\x89PNG\r\n\x1a\n" + samples._chunk(b"IHDR", header) + samples._chunk(b"IDAT", idat)
    file = CountingFile(data)
    with pytest.raises(ApiError) as raised:
        sniff(file, "bomb.png", ALL, MAX_PIXELS)
    assert raised.value.code == "attachment_image_too_large"
    assert file.read_bytes <= 64, "the header is read, not the pixels"


def test_the_jpeg_walk_reads_segment_headers_not_their_contents():
    # Padding segments (COM, 64 KiB each) before the frame: skipped by their length.
    comment = b"\xff\xfe" + struct.pack(">H", 65_535) + b"x" * 65_533
    jpeg = samples.jpeg(37, 21)
    data = jpeg[:2] + comment * 20 + jpeg[2:]
    file = CountingFile(data)
    found = sniff(file, "big.jpg", ALL, MAX_PIXELS)
    assert (found.width, found.height) == (37, 21)
    assert file.read_bytes < 4096


def test_the_jpeg_walk_is_bounded_in_segments():
    comment = b"\xff\xfe\x00\x04ab"
    jpeg = samples.jpeg(8, 8)
    assert kind(jpeg[:2] + comment * 200 + jpeg[2:]).type == "jpeg"
    assert refusal(jpeg[:2] + comment * 300 + jpeg[2:]).code == "attachment_type"


# -- ATTACHMENT_TYPES -----------------------------------------------------------------------


def test_the_types_setting_is_validated():
    assert parse_types("png, pdf  text") == ("png", "pdf", "text")
    assert load_settings({"ATTACHMENT_TYPES": "PNG jpeg"})["ATTACHMENT_TYPES"] == ("png", "jpeg")
    assert load_settings({})["ATTACHMENT_TYPES"] == ALL
    with pytest.raises(ConfigError, match="unknown type svg"):
        load_settings({"ATTACHMENT_TYPES": "png svg"})
    with pytest.raises(ConfigError, match="at least one"):
        load_settings({"ATTACHMENT_TYPES": " "})


# -- names ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw,type_name,expected",
    [
        ("screenshot.png", "png", "screenshot.png"),
        ("C:\\Users\\ada\\Desktop\\error.PNG", "png", "error.PNG"),
        ("../../etc/passwd", "text", "passwd.txt"),
        ("/var/log/app.log", "text", "app.log"),
        ("invoice\u202efdp.exe", "pdf", "invoicefdp.exe.pdf"),  # a right-to-left override
        ("a\u2066b\u2069c\u200e.txt", "text", "abc.txt"),  # isolates and marks
        ("bell\x07 and\nnew line.txt", "text", "bell and new line.txt"),
        ("tab\there.csv", "csv", "tab here.csv"),
        ("zero\u200bwidth.gif", "gif", "zerowidth.gif"),
        (".hidden.png", "png", "hidden.png"),
        ("trailing dots...", "pdf", "trailing dots.pdf"),
        ("photo.jpeg", "jpeg", "photo.jpeg"),
        ("photo", "jpeg", "photo.jpg"),
        ("report.pdf", "png", "report.pdf.png"),
        ("", "png", "attachment.png"),
        (None, "pdf", "attachment.pdf"),
        ("\u202e\u202e", "text", "attachment.txt"),
        ("Cafe\u0301 menu.pdf", "pdf", "Caf\u00e9 menu.pdf"),  # NFC
        ("données.csv", "csv", "données.csv"),
    ],
)
def test_display_names(raw, type_name, expected):
    assert display_name(raw, type_name) == expected


def test_long_names_are_bounded_keeping_the_extension():
    name = display_name("x" * 500 + ".pdf", "pdf")
    assert len(name) == MAX_NAME_CHARS and name.endswith("x.pdf")
    assert len(display_name("é" * 500, "text")) == MAX_NAME_CHARS


def test_content_disposition_has_an_ascii_name_and_the_exact_one():
    header = content_disposition('Résumé "final"; 100%.pdf')
    kind_, ascii_part, exact = header.split("; filename")
    assert kind_ == "attachment"
    assert ascii_part == '="Resume _final_; 100_.pdf"'  # quotes, backslashes and % replaced
    assert exact.startswith("*=UTF-8''")
    assert unquote(exact.removeprefix("*=UTF-8''")) == 'Résumé "final"; 100%.pdf'
    assert all(32 < ord(char) < 127 for char in exact)
    assert content_disposition("a.png", inline=True) == "inline; filename=\"a.png\"; filename*=UTF-8''a.png"
