"""The QA page's sample files (widget_server/qa.py `sample_files`): each is listed with a
download link and the SHA-256 of the very bytes that link serves, and each is a file the server
accepts as what its name says, so a tester who attaches it and sends `/scenario attachments`
hears that same SHA-256
(tests/e2e/test_attachments_widget.py plays it in a browser)."""

from __future__ import annotations

import hashlib
import re
from io import BytesIO

import pytest

from widget_server.attachments.sniff import sniff
from widget_server.qa import SAMPLE_FILES

from .test_qa import QA_STRINGS, get, qa_client

SAMPLE = re.compile(
    r'<a href="([^"]+)" download>([^<]+)</a>, (\d+) [^,]+, SHA-256 <code class="qa-sha" data-sample="[^"]+">([0-9a-f]{64})</code>'
)


@pytest.mark.parametrize("lang", ["en", "es"])
def test_the_page_lists_each_sample_with_the_sha256_of_the_bytes_its_link_serves(lang):
    client = qa_client(QA=True, FAULTS=True)
    _, body = get(client, f"/qa?lang={lang}")
    listed = SAMPLE.findall(body)
    assert [name for _, name, _, _ in listed] == list(SAMPLE_FILES)
    for url, name, size, digest in listed:
        response = client.get(url)
        data = response.data
        response.close()
        assert response.status_code == 200
        assert int(size) == len(data) and digest == hashlib.sha256(data).hexdigest(), name
    for key in ("samplesHeading", "samplesStepAttach", "samplesStepSend", "samplesStepHear"):
        assert QA_STRINGS[lang][key] in body.replace("&#34;", '"')
    assert "/scenario attachments" in QA_STRINGS[lang]["samplesStepSend"]


def test_the_samples_are_what_their_names_say_by_content():
    client = qa_client(QA=True, FAULTS=True)
    for name, kind in zip(SAMPLE_FILES, ("png", "text"), strict=True):
        response = client.get(f"/static/qa/samples/{name}")
        data = response.data
        response.close()
        assert sniff(BytesIO(data), name, (kind,), 10**6).type == kind


def test_the_samples_are_404_when_qa_is_off():
    response, _ = get(qa_client(), f"/static/qa/samples/{SAMPLE_FILES[0]}")
    assert response.status_code == 404
