"""Attachments in the widget (static/widget/attachments.js): files attached with the
Attach button (a real file chooser), dropped on the panel (a DragEvent carrying a DataTransfer
with real File objects) and pasted into the composer (a ClipboardEvent), uploaded to the real
server, sent with `/scenario attachments`, whose answer reports the SHA-256 of the bytes the
backend read: compared with hashlib's of the file attached, it proves every byte arrived."""

from __future__ import annotations

import base64
import hashlib
import re
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.attachment_samples import png
from tests.conftest import TEST_CONFIG
from tests.helpers import LiveServer
from widget_server.testing import ChatWidget

pytestmark = pytest.mark.e2e

# Firefox ESR's share (docs/testing.md): the cases marked chromium_only run in Chromium alone.
ATTACH_FIREFOX = "in Firefox the file chooser, a drop, a paste and byte-exact arrival run in this module's kept cases, and progress, remove by keyboard, refusals and text alternatives in test_accessibility_contract_attachments.py (A94-A100); this case adds the server's limits or the same upload code's"

NOTES = ("notes.txt", "text/plain", b"Order 1042 arrived damaged.\nThe box was open.\n")
SCREENSHOT = ("screenshot.png", "image/png", png(48, 32))


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def pending(widget) -> Any:
    """The rows of the files waiting to be sent."""
    return widget.frame.locator("[data-chat-composer] .chat-files > li")


def row(widget, name: str) -> Any:
    return pending(widget).filter(has=widget.frame.locator("bdi", has_text=re.compile(f"^{re.escape(name)}$")))


def attach_with_button(widget, page: Page, *files: tuple[str, str, bytes]) -> None:
    """Press Attach and choose `files` in the file chooser it opens. Firefox ESR through
    WebDriver BiDi reports no file chooser to Playwright (measured 2026-12-01): there the files
    are set on the input the press made and clicked, the same input, change event and code."""
    payloads = [{"name": name, "mimeType": kind, "buffer": data} for name, kind, data in files]
    attach = widget.frame.locator("[data-chat-attach]")
    if page.context.browser.browser_type.name == "chromium":
        with page.expect_file_chooser() as chooser:
            attach.click()
        chooser.value.set_files(payloads)
    else:
        attach.click()
        widget.frame.locator("input[type=file]").set_input_files(payloads)


# A DataTransfer of real File objects, made in the panel's frame (what a drag from the desktop
# or a paste delivers to the page).
TRANSFER = """(files) => {
  const transfer = new DataTransfer();
  for (const [name, type, data] of files) {
    const bytes = Uint8Array.from(atob(data), (c) => c.charCodeAt(0));
    transfer.items.add(new File([bytes], name, { type }));
  }
  return transfer;
}"""


def transfer(widget, files: tuple[tuple[str, str, bytes], ...]) -> Any:
    encoded = [[name, kind, base64.b64encode(data).decode()] for name, kind, data in files]
    return widget.panel_frame().evaluate_handle(TRANSFER, encoded)


def drop(widget, *files: tuple[str, str, bytes]) -> None:
    """Drag files over the panel (its hint shows), then drop them."""
    carried = transfer(widget, files)
    widget.panel.dispatch_event("dragenter", {"dataTransfer": carried})
    expect(widget.frame.locator(".chat-drop")).to_be_visible()
    widget.panel.dispatch_event("dragover", {"dataTransfer": carried})
    widget.panel.dispatch_event("drop", {"dataTransfer": carried})
    expect(widget.frame.locator(".chat-drop")).to_be_hidden()


# Firefox copies only the strings of ClipboardEventInit's DataTransfer into the event (its
# files are lost; measured with Firefox ESR 2026-12-01): there the event's clipboardData is
# the DataTransfer itself, as a real paste of an image delivers it.
PASTE = """(input, transfer) => {
  const event = new ClipboardEvent('paste', { clipboardData: transfer, bubbles: true, cancelable: true });
  if (!event.clipboardData?.files.length) Object.defineProperty(event, 'clipboardData', { value: transfer });
  input.dispatchEvent(event);
}"""


def paste(widget, *files: tuple[str, str, bytes]) -> None:
    carried = transfer(widget, files)
    widget.input.focus()
    widget.input.evaluate(PASTE, carried)


def said(widget, politeness: str = "polite") -> list[str]:
    return [entry["text"] for entry in widget.announcements() if entry["politeness"] == politeness]


def wait_until_ready(widget, *names: str) -> None:
    for name in names:
        expect(row(widget, name)).to_have_attribute("data-state", "ready")


def send_scenario(widget) -> str:
    widget.send("/scenario attachments")
    assert widget.wait_until_complete() == "completed"
    return widget.last_answer().locator(".turn__body").inner_text()


@pytest.mark.smoke
def test_files_attached_with_the_button_arrive_byte_exact(embed, page: Page):
    widget = embed()
    widget.open()
    attach_with_button(widget, page, NOTES, SCREENSHOT)
    wait_until_ready(widget, "notes.txt", "screenshot.png")
    expect(row(widget, "notes.txt")).to_contain_text(f"plain text, {len(NOTES[2])} bytes")
    preview = row(widget, "screenshot.png").locator("img")
    expect(preview).to_have_attribute("alt", "screenshot.png")
    widget.assert_accessible()  # files pending

    answer = send_scenario(widget)
    assert f"notes.txt: text, {len(NOTES[2])} bytes, SHA-256 {sha256(NOTES[2])}" in answer
    assert f"screenshot.png: png, {len(SCREENSHOT[2])} bytes, SHA-256 {sha256(SCREENSHOT[2])}" in answer
    expect(pending(widget)).to_have_count(0)
    sent = widget.turns.nth(0).locator(".chat-files > li")
    expect(sent).to_have_count(2)
    expect(sent.nth(1).locator("img")).to_have_attribute("alt", "screenshot.png")
    widget.assert_accessible()  # sent

    # The start and the end of each upload are said, once each; never a percentage.
    polite = said(widget)
    for name in ("notes.txt", "screenshot.png"):
        assert polite.count(f"Uploading {name}") == 1
        assert polite.count(f"{name} ready") == 1
    assert not [text for text in polite if "%" in text]


def test_dropped_and_pasted_files_arrive_byte_exact(embed):
    widget = embed()
    widget.open()
    drop(widget, NOTES)
    widget.wait_for_announcement("Drop files here to attach them")
    assert said(widget).count("Drop files here to attach them") == 1
    paste(widget, ("image.png", "image/png", SCREENSHOT[2]))
    # A pasted screenshot has no name of its own: it gets one.
    wait_until_ready(widget, "notes.txt", "pasted-image-1.png")
    answer = send_scenario(widget)
    assert f"notes.txt: text, {len(NOTES[2])} bytes, SHA-256 {sha256(NOTES[2])}" in answer
    assert f"pasted-image-1.png: png, {len(SCREENSHOT[2])} bytes, SHA-256 {sha256(SCREENSHOT[2])}" in answer


def test_a_description_is_the_images_text_alternative_and_survives_a_reload(embed, page: Page):
    widget = embed()
    widget.open()
    attach_with_button(widget, page, SCREENSHOT, NOTES)
    wait_until_ready(widget, "screenshot.png", "notes.txt")
    description = row(widget, "screenshot.png").get_by_label("Describe this image (optional)")
    description.fill("The error dialog: disk full")
    expect(row(widget, "screenshot.png").locator("img")).to_have_attribute("alt", "The error dialog: disk full")
    answer = send_scenario(widget)
    assert "described as “The error dialog: disk full”" in answer

    page.reload()
    widget.open()
    expect(widget.answers).to_have_count(1)
    files = widget.turns.nth(0).locator(".chat-files > li")
    expect(files).to_have_count(2)
    expect(files.nth(0)).to_contain_text("screenshot.png")
    expect(files.nth(0)).to_contain_text(f"PNG, {len(SCREENSHOT[2])} bytes")
    expect(files.nth(1)).to_contain_text("notes.txt")
    image = files.nth(0).locator("img")
    expect(image).to_have_attribute("alt", "The error dialog: disk full")
    # Its bytes were fetched with the conversation's token and decoded.
    expect(image).to_have_js_property("complete", True)
    assert image.evaluate("(image) => image.naturalWidth") == 48
    widget.assert_accessible()


@pytest.mark.chromium_only(reason=ATTACH_FIREFOX)
def test_remove_by_keyboard_moves_focus_to_the_next_remove_then_attach(embed, page: Page):
    widget = embed()
    widget.open()
    attach_with_button(widget, page, NOTES, SCREENSHOT)
    wait_until_ready(widget, "notes.txt", "screenshot.png")
    first = row(widget, "notes.txt").get_by_role("button", name="Remove notes.txt")
    first.focus()
    page.keyboard.press("Enter")
    expect(pending(widget)).to_have_count(1)
    expect(row(widget, "screenshot.png").get_by_role("button", name="Remove screenshot.png")).to_be_focused()
    page.keyboard.press("Space")
    expect(pending(widget)).to_have_count(0)
    expect(widget.frame.locator("[data-chat-attach]")).to_be_focused()
    # Nothing left to send: the answer says so.
    answer = send_scenario(widget)
    assert answer.startswith("No files came with this message.")


@pytest.mark.chromium_only(reason=ATTACH_FIREFOX)
def test_refusals_are_said_once_in_words_with_the_limit(embed, chat_server_factory, page: Page):
    server = chat_server_factory(ATTACHMENT_MAX_BYTES=1000, ATTACHMENTS_PER_MESSAGE=2)
    widget = embed(server)
    widget.open()
    big = ("big.txt", "text/plain", b"x" * 1500)
    word = ("notes.docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document", b"PK\x03\x04")
    attach_with_button(widget, page, big, word)
    too_big = "big.txt is too big (1.5 kB). The limit is 1 kB."
    wrong = "notes.docx can't be sent: only PNG, JPEG, WebP, GIF, PDF, plain text, and CSV files are accepted."
    expect(row(widget, "big.txt")).to_contain_text(too_big)
    expect(row(widget, "notes.docx")).to_contain_text(wrong)
    expect(pending(widget)).to_have_count(2)
    widget.assert_accessible()  # refused
    assert said(widget, "assertive") == [f"{too_big} {wrong}"]

    # The server judges by content: a PDF that is not one is refused in the same words.
    fake = ("fake.pdf", "application/pdf", b"\x00\x01\x02 not a pdf")
    attach_with_button(widget, page, fake)
    fake_refused = "fake.pdf can't be sent: only PNG, JPEG, WebP, GIF, PDF, plain text, and CSV files are accepted."
    expect(row(widget, "fake.pdf")).to_contain_text(fake_refused)
    expect(row(widget, "fake.pdf")).to_have_attribute("data-state", "refused")
    assert said(widget, "assertive")[-1] == fake_refused

    # Refused rows do not count: two files may still go; the third is refused by count.
    attach_with_button(widget, page, NOTES, SCREENSHOT, ("third.txt", "text/plain", b"three"))
    wait_until_ready(widget, "notes.txt", "screenshot.png")
    too_many = "third.txt was not added: up to 2 files can go with one message."
    expect(row(widget, "third.txt")).to_contain_text(too_many)
    assert said(widget, "assertive")[-1] == too_many
    assert len(said(widget, "assertive")) == 3
    answer = send_scenario(widget)
    assert "I received 2 files" in answer
    expect(pending(widget)).to_have_count(0)


@pytest.mark.chromium_only(reason=ATTACH_FIREFOX)
def test_progress_is_a_progressbar_and_send_waits_for_the_upload(embed, page: Page):
    held: list[Any] = []
    page.route(
        "**/attachments", lambda route: held.append(route) if route.request.method == "POST" else route.continue_()
    )
    widget = embed()
    widget.open()
    # Every value the bar takes, from upload.onprogress (XMLHttpRequest fires one at least
    # when the body has gone out: XHR standard, "request body is transmitted").
    widget.panel_frame().evaluate("""() => {
      window.progressValues = [];
      new MutationObserver((records) => {
        for (const record of records) window.progressValues.push(record.target.getAttribute('aria-valuenow'));
      }).observe(document.body, { subtree: true, attributeFilter: ['aria-valuenow'] });
    }""")
    data = ("A line of a long log.\n" * 50_000).encode()
    attach_with_button(widget, page, ("server.log", "text/plain", data))
    bar = row(widget, "server.log").get_by_role("progressbar", name="Uploading server.log")
    expect(bar).to_be_visible()
    expect(bar).to_have_attribute("aria-valuenow", re.compile(r"^\d+$"))
    expect(bar).to_have_attribute("aria-valuetext", re.compile(r"^\d+% of 1\.1 MB$"))
    widget.assert_accessible()  # uploading

    # Send while the upload runs: nothing is sent, and the panel says to wait.
    widget.send("/scenario attachments")
    wait = "Wait until the files have finished uploading, then send."
    widget.wait_for_announcement(wait)
    expect(widget.turns).to_have_count(0)
    assert said(widget, "assertive") == [wait]
    assert widget.input.input_value() == "/scenario attachments"

    for _ in range(200):
        if held:
            break
        page.wait_for_timeout(25)
    assert held, "the upload's POST was not seen"
    held[0].continue_()
    wait_until_ready(widget, "server.log")
    values = [int(value) for value in widget.panel_frame().evaluate("() => window.progressValues")]
    assert values and values[-1] == 100 and values == sorted(values)
    expect(bar).to_have_count(0)  # a ready row has no bar
    widget.input.press("Enter")
    assert widget.wait_until_complete() == "completed"
    assert f"SHA-256 {sha256(data)}" in widget.last_answer().inner_text()


@pytest.mark.chromium_only(reason=ATTACH_FIREFOX)
def test_starting_over_clears_the_files_waiting(embed, page: Page):
    widget = embed()
    widget.open()
    attach_with_button(widget, page, NOTES)
    wait_until_ready(widget, "notes.txt")
    widget.frame.locator("[data-chat-tool='new']").click()
    widget.frame.get_by_role("button", name="Start over", exact=True).click()
    expect(pending(widget)).to_have_count(0)
    expect(widget.input).to_be_focused()
    # The next file belongs to the new conversation and goes with its first message.
    attach_with_button(widget, page, SCREENSHOT)
    wait_until_ready(widget, "screenshot.png")
    answer = send_scenario(widget)
    assert "I received 1 file:" in answer and f"SHA-256 {sha256(SCREENSHOT[2])}" in answer


@pytest.mark.chromium_only(reason=ATTACH_FIREFOX)
def test_an_upload_cut_off_is_tried_again_with_the_same_idempotency_key(embed, page: Page):
    keys: list[str] = []

    def cut_the_first(route):
        if route.request.method != "POST":
            return route.continue_()
        keys.append(route.request.headers["idempotency-key"])
        if len(keys) == 1:
            return route.abort()
        return route.continue_()

    page.route("**/attachments", cut_the_first)
    widget = embed()
    widget.open()
    attach_with_button(widget, page, NOTES)
    failed = "notes.txt can't be sent: the connection was lost before the file arrived. Try again."
    expect(row(widget, "notes.txt")).to_have_attribute("data-state", "refused")
    again = row(widget, "notes.txt").get_by_role("button", name="Try uploading notes.txt again")
    expect(again).to_be_visible()
    expect(row(widget, "notes.txt")).to_contain_text(failed)
    assert said(widget, "assertive") == [failed]
    again.press("Enter")
    wait_until_ready(widget, "notes.txt")
    expect(row(widget, "notes.txt").get_by_role("button", name="Remove notes.txt")).to_be_focused()
    assert len(keys) == 2 and keys[0] == keys[1] and re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._~-]{0,127}", keys[0])
    answer = send_scenario(widget)
    assert f"SHA-256 {sha256(NOTES[2])}" in answer


@pytest.mark.chromium_only(reason=ATTACH_FIREFOX)
def test_the_conversations_byte_budget_is_checked_before_uploading(embed, chat_server_factory, page: Page):
    server = chat_server_factory(ATTACHMENTS_MAX_BYTES_PER_CONVERSATION=100)
    widget = embed(server)
    widget.open()
    attach_with_button(widget, page, NOTES, ("more.txt", "text/plain", b"m" * 60))
    wait_until_ready(widget, "notes.txt")
    refused = (
        "more.txt can't be sent: this conversation has no room for more files. Remove one, or send a smaller file."
    )
    expect(row(widget, "more.txt")).to_contain_text(refused)
    assert said(widget, "assertive") == [refused]


@pytest.mark.chromium_only(reason=ATTACH_FIREFOX)
def test_the_qa_pages_sample_files_read_back_with_the_sha256_it_prints(page: Page):
    """The QA tester's step (templates/qa.html, "Files to attach"): download a sample, attach
    it, send `/scenario attachments`, hear the SHA-256 the page prints."""
    server = LiveServer({**TEST_CONFIG, "QA": True, "DEMO_DELAY_SECONDS": 0.01}).start()
    try:
        page.goto(f"{server.url}/qa")
        samples = []
        for link in page.locator(".qa-samples a[download]").all():
            name = link.inner_text()
            data = page.request.get(server.url + link.get_attribute("href")).body()
            printed = page.locator(f"code[data-sample='{name}']").inner_text()
            assert printed == sha256(data)
            samples.append((name, "image/png" if name.endswith(".png") else "text/plain", data))
        assert [name for name, _, _ in samples] == ["qa-sample.png", "qa-sample.txt"]
        widget = ChatWidget(page)
        widget.open()
        attach_with_button(widget, page, *samples)
        wait_until_ready(widget, "qa-sample.png", "qa-sample.txt")
        answer = send_scenario(widget)
        for name, _, data in samples:
            assert f"{name}: " in answer and f"{len(data)} bytes, SHA-256 {sha256(data)}" in answer
    finally:
        server.stop()


@pytest.mark.chromium_only(reason=ATTACH_FIREFOX)
def test_offline_a_message_with_files_is_not_sent_and_nothing_is_lost(embed, page: Page):
    """The outbox keeps a message typed offline as text only (outbox.js): with files, the panel
    says to send again once online instead, and keeps the words and the files."""
    widget = embed()
    widget.open()
    attach_with_button(widget, page, NOTES)
    wait_until_ready(widget, "notes.txt")
    page.context.set_offline(True)
    widget.panel_frame().wait_for_function("() => !navigator.onLine")
    widget.send("/scenario attachments")
    offline = "You are offline. Files go only while online: send again once the connection is back."
    expect(widget.frame.locator("[data-chat-alert]")).to_have_text(offline)
    expect(widget.turns).to_have_count(0)
    expect(widget.input).to_have_value("/scenario attachments")
    expect(pending(widget)).to_have_count(1)
    page.context.set_offline(False)
    widget.panel_frame().wait_for_function("() => navigator.onLine")
    widget.input.press("Enter")
    assert widget.wait_until_complete() == "completed"
    assert f"SHA-256 {sha256(NOTES[2])}" in widget.last_answer().inner_text()


@pytest.mark.chromium_only(reason=ATTACH_FIREFOX)
def test_retry_after_a_refused_send_sends_the_same_files_again(embed, page: Page):
    """The first POST of the message is refused (a 503 before any answer exists); Retry under
    the failed turn sends the same words with the same files, which arrive byte-exact."""
    refused: list[str] = []

    def refuse_the_first(route):
        if refused or route.request.method != "POST":
            return route.continue_()
        refused.append(route.request.url)
        route.fulfill(
            status=503,
            json={"error": {"code": "server_busy", "message": "Busy."}},
            headers={"Retry-After": "1"},
        )

    page.route("**/messages", refuse_the_first)
    widget = embed()
    widget.open()
    attach_with_button(widget, page, NOTES, SCREENSHOT)
    wait_until_ready(widget, "notes.txt", "screenshot.png")
    row(widget, "screenshot.png").get_by_label("Describe this image (optional)").fill("A chart")
    widget.send("/scenario attachments")
    assert widget.wait_until_complete() == "failed"
    assert refused
    expect(pending(widget)).to_have_count(2)  # refused: nothing chosen is lost
    widget.last_answer().get_by_role("button", name="Retry").click()
    expect(widget.answers).to_have_count(2)
    assert widget.wait_until_complete() == "completed"
    answer = widget.last_answer().inner_text()
    assert f"notes.txt: text, {len(NOTES[2])} bytes, SHA-256 {sha256(NOTES[2])}" in answer
    assert f"SHA-256 {sha256(SCREENSHOT[2])}, described as “A chart”" in answer
    expect(pending(widget)).to_have_count(0)  # the retry carried them


def test_a_drop_before_the_module_has_loaded_is_still_taken(embed, page: Page):
    """attachments.js loads on the first drag; a drop that comes before it (a slow network)
    must neither be lost nor left to the browser, which would open the file in the panel's
    frame: chat.js takes it and hands it over."""
    held: list[Any] = []
    page.route("**/widget/attachments.js", lambda route: held.append(route))
    widget = embed()
    widget.open()
    carried = transfer(widget, (NOTES,))
    prevented = widget.panel.evaluate(
        """(panel, transfer) => ['dragenter', 'dragover', 'drop'].map((type) => !panel.dispatchEvent(
             new DragEvent(type, { dataTransfer: transfer, bubbles: true, cancelable: true })))""",
        carried,
    )
    # dragover and drop cancelled (a drop is allowed, the browser does not open the file).
    assert prevented[1:] == [True, True]
    for _ in range(200):
        if held:
            break
        page.wait_for_timeout(25)
    assert held, "the module was not asked for"
    held[0].continue_()
    wait_until_ready(widget, "notes.txt")
    expect(widget.frame.locator(".chat-drop")).to_be_hidden()
