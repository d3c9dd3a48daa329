"""An attachment's download cannot run in the chat's origin (docs/security.md, "Attachments").

Every type is served with its sniffed Content-Type, `nosniff`, `Content-Security-Policy:
sandbox`, `Content-Disposition: attachment` (inline for raster images only), private and
uncached. In Chromium (marked e2e): an uploaded HTML page (text, whatever its name) is downloaded, never
rendered, under its sanitised name; an image opened inline is a sandboxed document (an opaque
origin, so nothing in it could reach the chat's token).
"""

from __future__ import annotations

import hashlib

import pytest

from .. import attachment_samples as samples
from ..conftest import TEST_CONFIG
from ..helpers import HTTP, ChatClient, LiveServer

HTML = b"<!doctype html><title>x</title><script>document.title = 'ran'; alert('xss')</script>\n"


@pytest.fixture(scope="module")
def server():
    live = LiveServer(dict(TEST_CONFIG)).start()
    yield live
    live.stop()


@pytest.fixture
def chat(server):
    client = ChatClient(server.url).new_conversation()
    yield client
    client.close()


def _upload(chat: ChatClient, data: bytes, name: str) -> dict:
    response = chat.http.post(
        f"/api/v1/conversations/{chat.conversation_id}/attachments",
        files={"file": (name, data, "text/html")},
        headers=chat.auth,
    )
    assert response.status_code == 201, response.text
    return response.json()


def _url(chat: ChatClient, attachment_id: str) -> str:
    return f"{chat.base_url}/api/v1/conversations/{chat.conversation_id}/attachments/{attachment_id}"


@pytest.mark.parametrize(
    "name,data,media_type,disposition",
    [
        ("a.png", samples.png(3, 3), "image/png", "inline"),
        ("a.gif", samples.gif(3, 3), "image/gif", "inline"),
        ("a.pdf", samples.pdf(), "application/pdf", "attachment"),
        ("page.html", HTML, "text/plain; charset=utf-8", "attachment"),
        ("t.csv", b"a,b\n1,2\n", "text/csv; charset=utf-8", "attachment"),
    ],
)
def test_every_download_carries_the_headers_that_keep_it_inert(chat, name, data, media_type, disposition):
    attachment = _upload(chat, data, name)
    response = HTTP.get(_url(chat, attachment["attachment_id"]), headers=chat.auth)
    assert response.status_code == 200
    assert hashlib.sha256(response.content).hexdigest() == attachment["sha256"]
    headers = response.headers
    assert headers["content-type"] == media_type
    assert headers["content-disposition"].split(";")[0] == disposition
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["content-security-policy"] == "sandbox"
    assert headers["cross-origin-resource-policy"] == "same-origin"
    assert headers["cache-control"] == "private, no-store"
    assert "access-control-allow-origin" not in headers  # no other site may read it


@pytest.mark.e2e
def test_an_uploaded_html_page_is_downloaded_never_rendered(chat, browser):
    attachment = _upload(chat, HTML, "../evil\u202elmth.txt")
    assert (attachment["type"], attachment["name"]) == ("text", "evillmth.txt")
    context = browser.new_context(accept_downloads=True, extra_http_headers=chat.auth)
    try:
        page = context.new_page()
        dialogs: list[str] = []
        page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
        with page.expect_download() as download_info:
            try:
                page.goto(_url(chat, attachment["attachment_id"]))
            except Exception as error:  # the browser aborts the navigation when it downloads
                assert (
                    "ERR_ABORTED" in str(error)
                    or "Download is starting" in str(error)
                    or "NS_BINDING_ABORTED" in str(error)
                )
        download = download_info.value
        assert download.suggested_filename == "evillmth.txt"
        assert hashlib.sha256(download.path().read_bytes()).hexdigest() == attachment["sha256"]
        assert dialogs == []
    finally:
        context.close()


@pytest.mark.e2e
def test_an_image_opened_inline_is_a_sandboxed_document(chat, browser):
    attachment = _upload(chat, samples.png(4, 4), "shot.png")
    context = browser.new_context(extra_http_headers=chat.auth)
    try:
        page = context.new_page()
        response = page.goto(_url(chat, attachment["attachment_id"]))
        assert response is not None and response.status == 200
        assert page.locator("img").evaluate("image => [image.naturalWidth, image.naturalHeight]") == [4, 4]
        # CSP sandbox: the document's origin is opaque, not the chat's.
        assert page.evaluate("self.origin") == "null"
    finally:
        context.close()
