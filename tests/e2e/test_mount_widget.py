"""The chat mounted inside a site's own Flask app (widget_server/mount.py `init_app`), in real
Chromium and Firefox ESR: the site's page names the loader with `chat_loader_url()`, and the
widget works under /chat as it does on a server of its own (tests/test_mount.py checks the
HTTP side; the API's integration tests run mounted too)."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Page, expect

from widget_server.testing import ChatWidget

from ..conftest import TEST_CONFIG
from ..helpers import LiveServer

pytestmark = pytest.mark.e2e

PREFIX = "/chat"


@pytest.fixture
def mounted():
    # The panel is framed by the site itself: its own origin, 'self' (docs/serving.md).
    server = LiveServer({**TEST_CONFIG, "DEMO_DELAY_SECONDS": 0.02, "EMBED_ORIGINS": "'self'"}, PREFIX).start()
    yield server
    server.stop()


def test_a_site_with_the_chat_mounted_at_chat_answers_and_keeps_the_conversation(mounted, page: Page, seed_answers):
    ChatWidget.install_recorder(page.context)
    paths: list[str] = []
    page.on("request", lambda request: paths.append(urlsplit(request.url).path))
    page.goto(f"{mounted.origin}/help")
    widget = ChatWidget(page, chat_url=mounted.url)
    widget.open()
    seed = seed_answers["improvisation"]
    widget.send(seed["question"])
    assert widget.wait_until_complete() == "completed"
    expect(widget.last_answer().locator("ul > li")).to_have_count(4)
    widget.assert_accessible()
    # Everything the widget fetched came from under the prefix: the loader, its second half,
    # the panel, its modules, styles and strings, the API.
    assert paths[0] == "/help"
    assert all(path.startswith(f"{PREFIX}/") for path in paths[1:]), paths
    assert {f"{PREFIX}/widget.js", f"{PREFIX}/panel", f"{PREFIX}/static/widget/embed.js"} <= set(paths)
    assert any(path.startswith(f"{PREFIX}/api/v1/conversations/") for path in paths)
    # A reload keeps the conversation: the panel finds it again from the server, under /chat.
    page.reload()
    widget.open()
    expect(widget.answers).to_have_count(1)
    expect(widget.last_answer().locator("ul > li")).to_have_count(4)
    widget.assert_accessible()
