"""Download transcript lists a question's files (docs/accessibility.md A36).

Real Chromium and Firefox ESR: a screenshot is dropped on the panel and sent, without words,
with `/scenario attachments` in a second message; the Markdown transcript names each file
under its question with its size and the SHA-256 the server computed, so the visitor's copy
of a file can be checked against the one they sent.
"""

from __future__ import annotations

import hashlib

import pytest

from ..attachment_samples import png
from .test_accessibility_contract_conversation import TOOLS, download_transcript, open_options, tab_to
from .test_attachments_widget import drop, wait_until_ready

pytestmark = pytest.mark.e2e

SHOT = ("screen.png", "image/png", png(24, 12))


def test_the_transcript_names_each_file_with_its_sha256(embed, page, browser_name):
    widget = embed()
    widget.open()
    drop(widget, SHOT)
    wait_until_ready(widget, "screen.png")
    widget.send("/scenario attachments")
    assert widget.wait_until_complete() == "completed"
    open_options(widget)
    button = widget.frame.get_by_role("button", name=TOOLS["download"])
    tab_to(widget, button, key="Tab")
    _name, content = download_transcript(widget, page, browser_name, button)
    digest = hashlib.sha256(SHOT[2]).hexdigest()
    assert f"/scenario attachments\n\nFiles sent:\n\n- screen.png ({len(SHOT[2])} bytes, SHA-256 {digest})\n\n" in (
        content
    ), content
