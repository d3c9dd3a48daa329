"""The chat inside a site's own Flask app (widget_server/mount.py, docs/serving.md "Inside your
own app"): `init_app(app, url_prefix="/chat", **settings)`.

Over real HTTP on loopback: a small site app (tests/helpers.py `site_app`) with the chat
mounted at /chat. The API's integration tests run mounted too (tests/conftest.py `SERVINGS`,
the `mounted` cases of tests/test_api_*.py); these check what only a mount has: every URL the
chat writes starts with the prefix, and neither app's app-wide settings reach the other.
"""

from __future__ import annotations

import re

import pytest
from flask import Flask, render_template_string

from widget_server import init_app
from widget_server.mount import MountedChat
from widget_server.services import SERVICES_KEY
from widget_server.settings import ConfigError

from .conftest import TEST_CONFIG
from .helpers import ChatClient, LiveServer, assert_completed, http_client, panel_config_of, site_app

PREFIX = "/chat"


@pytest.fixture(scope="module")
def mounted():
    server = LiveServer({**TEST_CONFIG, "EMBED_ORIGINS": "'self'"}, PREFIX).start()
    yield server
    server.stop()


@pytest.fixture
def http(mounted):
    with http_client(base_url=mounted.origin, timeout=10) as client:
        yield client


def test_the_sites_own_pages_stay_the_sites(http):
    home = http.get("/")
    assert home.status_code == 200 and "The site's own home page." in home.text
    # None of the chat's app-wide response headers reach the site's pages.
    assert "Content-Security-Policy" not in home.headers
    assert "X-Content-Type-Options" not in home.headers
    missing = http.get("/nowhere")
    assert (missing.status_code, missing.text) == (404, "The site's own 404 page.")
    # A path that only starts like the prefix is the site's too.
    assert http.get("/chatroom").text == "The site's own 404 page."


def test_the_chat_keeps_its_own_error_pages_and_body_limit_under_the_prefix(http, mounted):
    missing = http.get(f"{PREFIX}/nowhere")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
    too_big = http.post(
        f"{PREFIX}/api/v1/conversations",
        content=b"x" * (mounted.app.config["MAX_CONTENT_LENGTH"] + 1),
        headers={"Content-Type": "application/json"},
    )
    assert too_big.status_code == 413 and too_big.json()["error"]["code"] == "body_too_large"


def test_a_site_with_its_own_body_limit_and_json_keeps_them():
    site = site_app()
    site.config["MAX_CONTENT_LENGTH"] = 10

    @site.post("/echo")
    def echo() -> dict[str, str]:
        from flask import request

        return {"text": request.get_data(as_text=True)}

    init_app(site, PREFIX, environ={}, **TEST_CONFIG)
    client = site.test_client()
    assert client.post("/echo", data="0123456789").json == {"text": "0123456789"}
    assert client.post("/echo", data="0123456789+").status_code == 413  # the site's limit, not the chat's
    assert site.json.dumps({"text": "é"}) == '{"text": "\\u00e9"}'  # the site's JSON encoding is its own


def test_a_whole_answer_streams_under_the_prefix(mounted):
    chat = ChatClient(mounted.url).new_conversation()
    try:
        result = assert_completed(chat.send("Hello", "r-1"))
        assert result.text
    finally:
        chat.close()


def test_every_url_the_chat_writes_starts_with_the_prefix(http, mounted):
    panel = http.get(f"{PREFIX}/panel", params={"lang": "en"})
    assert panel.status_code == 200
    assert panel_config_of(panel.text)["apiBase"] == f"{mounted.url}/api/v1"
    links = re.findall(r'(?:href|src)="([^"]+)"', panel.text)
    assert links and all(link.startswith(f"{PREFIX}/") for link in links), links
    for link in links:
        assert http.get(link.replace("&amp;", "&")).status_code == 200, link
    # The demo page's snippet, and the loader it names.
    index = http.get(f"{PREFIX}/")
    assert f'&lt;script src="{mounted.url}/widget.js"' in index.text
    assert http.get(f"{PREFIX}/widget.js").headers["Content-Type"].startswith("text/javascript")
    # The loader's second half, which host pages import.
    assert http.get(f"{PREFIX}/static/widget/embed.js").status_code == 200
    # The API description names the path its operations are under.
    assert http.get(f"{PREFIX}/openapi.json").json()["servers"] == [{"url": PREFIX}]
    assert http.get(f"{PREFIX}/healthz").json()["status"] == "ok"


def test_the_agents_console_forms_and_redirects_stay_under_the_prefix(http):
    sign_in = http.get(f"{PREFIX}/agent")
    assert sign_in.status_code == 200
    assert f'action="{PREFIX}/agent/sign-in"' in sign_in.text
    assert f'action="{PREFIX}/agent#language"' in sign_in.text
    assert all(src.startswith(f"{PREFIX}/static/") for src in re.findall(r'src="([^"]+)"', sign_in.text))


def test_the_agents_mail_links_to_the_console_under_the_prefix():
    site = Flask("site")
    chat = init_app(site, PREFIX, environ={}, **TEST_CONFIG, PUBLIC_URL="https://shop.example")
    assert chat.app.extensions[SERVICES_KEY].mailer.console_url == "https://shop.example/chat/agent"


def test_the_site_reaches_the_chats_service_and_settings_and_names_its_loader():
    site = Flask("site")

    @site.get("/")
    def home() -> str:
        return render_template_string('<script src="{{ chat_loader_url() }}" defer></script>')

    chat = init_app(site, "/help/chat", environ={}, **TEST_CONFIG, backend="demo")
    assert isinstance(site.extensions["widget_server"], MountedChat)
    assert site.extensions["widget_server"] is chat
    assert chat.settings["BACKEND"] == "demo" and chat.service is chat.app.extensions[SERVICES_KEY].chat
    client = site.test_client()
    assert client.get("/").text == '<script src="/help/chat/widget.js" defer></script>'
    # The site itself served under a path of its own: the chat is under it.
    assert (
        client.get("/", base_url="http://localhost/shop").text
        == '<script src="/shop/help/chat/widget.js" defer></script>'
    )


def test_production_host_checks_guard_the_chat_only():
    site = site_app()
    init_app(
        site, PREFIX, environ={}, ENV="production", PUBLIC_URL="https://shop.example", ALLOW_DEMO_IN_PRODUCTION=True
    )
    client = site.test_client()
    # The site answers for whatever hosts it answers for; the chat only for its public one.
    assert client.get("/", headers={"Host": "elsewhere.example"}).status_code == 200
    refused = client.get(f"{PREFIX}/healthz", headers={"Host": "elsewhere.example"})
    assert refused.status_code == 400 and refused.json["error"]["code"] == "invalid_host"
    assert client.get(f"{PREFIX}/healthz", headers={"Host": "shop.example"}).status_code == 200


@pytest.mark.parametrize(
    "prefix",
    ["", "/", "chat", "/chat/", "/chat//x", "/ch at", "/../chat", "/chat/..", "/./chat", "/chat?x=1", "/chat#x", 7],
)
def test_a_bad_prefix_is_refused_with_what_to_write(prefix):
    with pytest.raises(
        ConfigError, match=r"url_prefix: .* is not a path to mount the chat at; use one such as '/chat'"
    ):
        init_app(Flask("site"), prefix, environ={})


def test_a_site_route_under_the_prefix_is_refused_with_its_name():
    site = Flask("site")

    @site.get("/chat/rooms")
    def rooms() -> str:
        return "rooms"

    with pytest.raises(ConfigError, match=r"the site's route /chat/rooms \(rooms\) is under /chat"):
        init_app(site, PREFIX, environ={})
    # Elsewhere it mounts, and the site's route still answers.
    init_app(site, "/help", environ={}, **TEST_CONFIG)
    assert site.test_client().get("/chat/rooms").text == "rooms"


def test_two_chats_at_the_same_path_are_refused_and_settings_are_checked():
    site = Flask("site")
    init_app(site, PREFIX, environ={}, **TEST_CONFIG)
    with pytest.raises(ConfigError, match="a chat is already mounted at /chat"):
        init_app(site, PREFIX, environ={}, **TEST_CONFIG)
    with pytest.raises(ConfigError, match="NOT_A_SETTING: unknown setting"):
        init_app(Flask("site"), PREFIX, environ={}, NOT_A_SETTING=1)
