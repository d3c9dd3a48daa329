"""A page for testing the panel's modules directly (markdown.js, code-blocks.js, math.js…): a
chat server of its own, one browser context, and the modules imported into the page by the
test module's setup script, shared by every case of that test module."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from playwright.sync_api import Browser, Page

from ..helpers import LiveServer


@contextmanager
def modules_page(
    browser: Browser, setup_js: str, *, page_path: str = "/chat", modules_path: str = "/static/widget/"
) -> Iterator[Page]:
    """`setup_js(modulesUrl)` runs in a page at `page_path` and must return true."""
    server = LiveServer({"DEMO_DELAY_SECONDS": 0.0, "LOG_LEVEL": "WARNING"}).start()
    context = browser.new_context()
    try:
        page = context.new_page()
        page.goto(server.url + page_path)
        assert page.evaluate(setup_js, server.url + modules_path)
        yield page
    finally:
        context.close()
        server.stop()
