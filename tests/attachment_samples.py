"""Real files of each attachment type, made in the tests (tests/test_attachments_sniff.py,
tests/test_api_attachments.py).

PNG, GIF and JPEG are written byte by byte after their specifications, as files any viewer
opens (the PNG's chunks carry their CRCs, its pixels are zlib-compressed scanlines; the GIF
has a real LZW-coded frame; the JPEG is baseline with its own one-code Huffman tables); the
WebP samples are the two 1×1 images feature detection has long used (Modernizr's).
tests/test_attachments_sniff.py decodes each in Chromium (`test_the_samples_are_images_a_browser_decodes`,
marked e2e). `encode_in_chromium` gets JPEG and WebP from a real encoder, for the e2e-marked
tests. A PDF is a minimal one-page document.
"""

from __future__ import annotations

import base64
import struct
import zlib
from typing import Any


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


def _segment(marker: int, payload: bytes) -> bytes:
    return b"\xff" + bytes([marker]) + struct.pack(">H", len(payload) + 2) + payload


def jpeg(width: int, height: int) -> bytes:
    """A baseline greyscale JPEG (ITU T.81) of flat mid-grey 8×8 blocks: each block's DC
    difference is 0 and its AC coefficients end at once (EOB), one 1-bit code each."""
    app0 = _segment(0xE0, b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00")
    dqt = _segment(0xDB, b"\x00" + bytes([1] * 64))
    sof0 = _segment(0xC0, struct.pack(">BHHB", 8, height, width, 1) + b"\x01\x11\x00")
    one_code = bytes([1] + [0] * 15) + b"\x00"  # one code of length 1, for symbol 0
    dht = _segment(0xC4, b"\x00" + one_code + b"\x10" + one_code)  # DC table 0, AC table 0
    sos = _segment(0xDA, b"\x01\x01\x00\x00\x3f\x00")
    bits = "00" * (((width + 7) // 8) * ((height + 7) // 8))
    bits += "1" * (-len(bits) % 8)  # padded with 1-bits (T.81 §F.1.2.3)
    scan = bytes(int(bits[i : i + 8], 2) for i in range(0, len(bits), 8)).replace(b"\xff", b"\xff\x00")
    return b"\xff\xd8" + app0 + dqt + sof0 + dht + sos + scan + b"\xff\xd9"


# 1×1 WebP images, lossy (a `VP8 ` chunk) and lossless (`VP8L`).
WEBP_LOSSY = base64.b64decode("UklGRiIAAABXRUJQVlA4IBYAAAAwAQCdASoBAAEADsD+JaQAA3AAAAAA")
WEBP_LOSSLESS = base64.b64decode("UklGRhoAAABXRUJQVlA4TA0AAAAvAAAAEAcQERGIiP4HAA==")


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


def decode_in_browser(page: Any, files: dict[str, tuple[str, bytes]]) -> dict[str, list[int] | str]:
    """{name: [naturalWidth, naturalHeight]} of each (media type, bytes) as the browser of
    `page` (pytest-playwright's) decodes it, or "error"."""
    script = """url => new Promise(resolve => {
      const image = new Image();
      image.onload = () => resolve([image.naturalWidth, image.naturalHeight]);
      image.onerror = () => resolve('error');
      image.src = url;
    })"""
    return {
        name: page.evaluate(script, f"data:{kind};base64,{base64.b64encode(data).decode()}")
        for name, (kind, data) in files.items()
    }


def encode_in_browser(page: Any, width: int, height: int) -> dict[str, bytes]:
    """{"jpeg": …, "webp": …}: a width × height canvas with a gradient, encoded by the browser
    of `page`."""
    script = """([width, height]) => {
      const canvas = document.createElement('canvas');
      canvas.width = width; canvas.height = height;
      const context = canvas.getContext('2d');
      const gradient = context.createLinearGradient(0, 0, width, height);
      gradient.addColorStop(0, '#c33'); gradient.addColorStop(1, '#36c');
      context.fillStyle = gradient; context.fillRect(0, 0, width, height);
      return [canvas.toDataURL('image/jpeg', 0.9), canvas.toDataURL('image/webp', 0.9)];
    }"""
    jpeg, webp = page.evaluate(script, [width, height])
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
