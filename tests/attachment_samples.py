"""Real files of each attachment type, made in the tests (tests/test_attachments_sniff.py,
tests/test_api_attachments.py).

PNG and GIF are written byte by byte after their specifications (a valid file any viewer
opens: the PNG's chunks carry their CRCs, its pixels are zlib-compressed scanlines; the GIF
has a real LZW-coded frame). JPEG and WebP come from a real encoder: Chromium's
`canvas.toDataURL`, in `encode_in_chromium`. A PDF is a minimal one-page document.
"""

from __future__ import annotations

import base64
import struct
import zlib


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def png(width: int, height: int, *, pixels: bool = True) -> bytes:
    """A greyscale 8-bit PNG (ISO/IEC 15948). Without `pixels`, no IDAT: only a header that
    claims the size (what a decompression bomb's header is; its pixels would be a few KB
    of zlib that inflate to width × height bytes)."""
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    body = _chunk(b"IHDR", header)
    if pixels:
        rows = b"".join(b"\x00" + bytes((x * 37 + y * 11) % 256 for x in range(width)) for y in range(height))
        body += _chunk(b"IDAT", zlib.compress(rows, 9))
    return b"\x89PNG\r\n\x1a\n" + body + _chunk(b"IEND", b"")


def gif(width: int, height: int) -> bytes:
    """A GIF89a whose logical screen is width × height, with one 1×1 frame (two-colour table;
    LZW code size 2: clear, index 0, end = 0x44 0x01)."""
    screen = struct.pack("<HHBBB", width, height, 0x80, 0, 0)
    palette = b"\x00\x00\x00\xff\xff\xff"
    frame = b"," + struct.pack("<HHHHB", 0, 0, 1, 1, 0) + b"\x02\x02\x44\x01\x00"
    return b"GIF89a" + screen + palette + frame + b";"


def pdf() -> bytes:
    """A one-page PDF (ISO 32000): header, three objects, cross-reference table, trailer."""
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def webp_vp8l(width: int, height: int) -> bytes:
    """A lossless WebP's header (RFC 9649 §3.2.1): signature, 14-bit width - 1 and height - 1."""
    bits = (width - 1) | ((height - 1) << 14)
    data = b"\x2f" + bits.to_bytes(4, "little") + b"\x00" * 5
    return b"RIFF" + struct.pack("<I", 4 + 8 + len(data)) + b"WEBP" + b"VP8L" + struct.pack("<I", len(data)) + data


def webp_vp8x(width: int, height: int) -> bytes:
    """An extended WebP's header (RFC 9649 §2.7): the canvas size, 24 bits each, minus one."""
    data = b"\x10\x00\x00\x00" + (width - 1).to_bytes(3, "little") + (height - 1).to_bytes(3, "little")
    return b"RIFF" + struct.pack("<I", 4 + 8 + len(data)) + b"WEBP" + b"VP8X" + struct.pack("<I", len(data)) + data


def encode_in_chromium(width: int, height: int) -> dict[str, bytes]:
    """{"jpeg": …, "webp": …}: a width × height canvas with a gradient, encoded by Chromium."""
    from playwright.sync_api import sync_playwright

    from widget_server.testing import system_browser_launch_args

    script = """([width, height]) => {
      const canvas = document.createElement('canvas');
      canvas.width = width; canvas.height = height;
      const context = canvas.getContext('2d');
      const gradient = context.createLinearGradient(0, 0, width, height);
      gradient.addColorStop(0, '#c33'); gradient.addColorStop(1, '#36c');
      context.fillStyle = gradient; context.fillRect(0, 0, width, height);
      return [canvas.toDataURL('image/jpeg', 0.9), canvas.toDataURL('image/webp', 0.9)];
    }"""
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(**system_browser_launch_args("chromium"))
        try:
            jpeg, webp = browser.new_page().evaluate(script, [width, height])
        finally:
            browser.close()
    return {
        "jpeg": base64.b64decode(jpeg.split(",", 1)[1]),
        "webp": base64.b64decode(webp.split(",", 1)[1]),
    }


def simple_webp(extended: bytes) -> bytes:
    """The simple (lossy) form of an extended WebP without alpha (RFC 9649 §2.5): its `VP8 `
    chunk alone in the RIFF container, the ICC profile and the VP8X header left out."""
    offset = 12
    while offset + 8 <= len(extended):
        kind, size = extended[offset : offset + 4], struct.unpack("<I", extended[offset + 4 : offset + 8])[0]
        if kind == b"VP8 ":
            chunk = extended[offset : offset + 8 + size + (size & 1)]
            return b"RIFF" + struct.pack("<I", 4 + len(chunk)) + b"WEBP" + chunk
        offset += 8 + size + (size & 1)
    raise ValueError("no VP8 chunk")
