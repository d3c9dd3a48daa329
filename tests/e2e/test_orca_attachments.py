"""What Orca says while files are attached and sent (docs/accessibility.md A94–A100).

A real screen reader (tests/e2e/orca/, as tests/e2e/test_orca.py runs it): a screenshot and a
text file are dropped on the panel, a file that is too big is pasted; Orca says each upload's
start and end once ("Uploading notes.txt", "notes.txt ready"), never a percentage, and the
refusal once, with its limit in words. Then `/scenario attachments` is sent and its answer is
heard in whole sentences, as every answer is.
"""

from __future__ import annotations

import json

import pytest

from .. import attachment_samples as samples
from ..helpers import REPO_ROOT
from .orca.speech import relevant
from .test_attachments_widget import drop, paste
from .test_orca import CUES, EN, ERRORS, listen, orca, orca_browser, orca_page  # noqa: F401 - one Orca desktop per module

# ruff: noqa: F811 - the fixtures imported above are the tests' parameters

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.xdist_group("orca")]

STRINGS = json.loads((REPO_ROOT / "static/widget/i18n/attachments/en.json").read_text(encoding="utf-8"))["attachments"]

NOTES = ("notes.txt", "text/plain", b"Order 1042 arrived damaged.\n")
SCREENSHOT = ("screen.png", "image/png", samples.png(30, 20))
# Over the 2 KB limit this server is given, so the refusal names both sizes.
TOO_BIG = ("huge.log", "text/plain", b"x" * 5000)


def test_orca_hears_each_upload_start_and_end_once_and_a_refusal_once(orca, listen):
    # listen(): the panel open, Orca caught up, the page's new content processes given Orca's
    # priority (test_orca.py), the page left for about:blank after the test.
    widget, mark = listen({"ATTACHMENT_MAX_BYTES": 4096})
    drop(widget, NOTES, SCREENSHOT)
    for name in ("notes.txt", "screen.png"):
        orca.wait_for_speech(STRINGS["ready"].replace("{name}", name), since=mark, timeout=10)
    paste(widget, TOO_BIG)
    refusal = STRINGS["tooBig"].replace("{name}", "huge.log").replace("{size}", "5 kB").replace("{limit}", "4.1 kB")
    orca.wait_for_speech(refusal, since=mark, timeout=10)
    said = orca.wait_for_silence(1.0, since=mark)
    print(f"\nOrca said: {json.dumps(said, ensure_ascii=False)}")
    for name in ("notes.txt", "screen.png"):
        assert said.count(STRINGS["uploading"].replace("{name}", name)) == 1, said
        assert said.count(STRINGS["ready"].replace("{name}", name)) == 1, said
    assert said.count(refusal) == 1, said
    assert not [line for line in said if "%" in line], said  # never a percentage
    mark = orca.mark()
    widget.send("/scenario attachments")
    assert widget.wait_until_complete() == "completed"
    orca.wait_for_speech(EN["complete"], since=mark, timeout=10)
    answer = widget.last_answer().locator(".turn__body").inner_text()
    lines = relevant(orca.wait_for_silence(1.0, since=mark), answer, CUES | ERRORS)
    print(f"filtered: {json.dumps(lines, ensure_ascii=False, indent=1)}")
    assert lines[0] == EN["generating"] and lines[-1] == EN["complete"], lines
    assert lines.count(EN["complete"]) == 1, lines
    assert any("screen.png" in line for line in lines) and any("notes.txt" in line for line in lines), lines
