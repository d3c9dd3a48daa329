"""Host header hardening (docs/security.md, "Production defaults"): absolute URLs come from `PUBLIC_URL`, never
from the request, and with `ENV=production` a request for any other host name is refused.

Against a live server: the panel's `apiBase`, the demo page's snippet, the `kb` backend's
source links and routing's redirects are read from real responses to requests that name
another host; the refusal is read from the wire, and the start-up error from the real
`widget-server` command.
"""

from __future__ import annotations

import json
import re
import socket
import uuid
from typing import Any

import pytest

from tests.conftest import TEST_CONFIG
from tests.helpers import HTTP, ChatClient, http_client
from tests.security.test_production_defaults import PRODUCTION, run_cli

PUBLIC = "https://chat.example.com"
HOSTILE = "evil.example"


def test_production_without_public_url_refuses_to_start_with_one_line_and_exit_2():
    settings = {key: value for key, value in PRODUCTION.items() if key != "PUBLIC_URL"}
    result = run_cli(**settings)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("widget-server: error: PUBLIC_URL: required"), result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""


@pytest.mark.parametrize("value", ["chat.example.com", "https://chat.example.com/chat", "https://u:p@chat.example.com"])
def test_a_public_url_that_is_not_an_origin_is_a_start_up_error(value):
    result = run_cli(**{**PRODUCTION, "PUBLIC_URL": value})
    assert result.returncode == 2
    assert result.stderr.startswith("widget-server: error: PUBLIC_URL (from environment variable"), result.stderr


def raw_request(port: int, head: bytes) -> tuple[int, dict[str, Any]]:
    """An HTTP/1.0 request written by hand (httpx always sends a Host): (status, JSON body)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(head)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    header, _, body = data.partition(b"\r\n\r\n")
    return int(header.split()[1]), json.loads(body)


def test_production_refuses_a_host_that_is_neither_public_nor_trusted_with_400_json(live_server_factory):
    server = live_server_factory(**PRODUCTION)  # TRUSTED_HOSTS: 127.0.0.1
    refused = [HOSTILE, f"{HOSTILE}:{server.port}", "chat.example.com.evil.example", "127.0.0.1.nip.io", "localhost"]
    for host in refused:
        for method, path in [("GET", "/"), ("GET", "/panel"), ("GET", "/healthz"), ("POST", "/api/v1/conversations")]:
            response = HTTP.request(method, server.url + path, headers={"Host": host}, timeout=10)
            assert response.status_code == 400, (host, path)
            assert response.headers["content-type"] == "application/json"
            assert response.json()["error"]["code"] == "invalid_host", (host, path)
            assert HOSTILE not in response.text
    status, body = raw_request(server.port, b"GET /healthz HTTP/1.0\r\n\r\n")  # no Host at all
    assert (status, body["error"]["code"]) == (400, "invalid_host")
    for host in ["chat.example.com", "CHAT.example.com:443", "chat.example.com.", f"127.0.0.1:{server.port}"]:
        assert HTTP.get(server.url + "/healthz", headers={"Host": host}, timeout=10).status_code == 200, host
        created = HTTP.post(server.url + "/api/v1/conversations", headers={"Host": host}, timeout=10)
        assert created.status_code in (200, 201), (host, created.text)


def panel_config(html: str) -> dict[str, Any]:
    match = re.search(r'<script type="application/json" id="chat-config">(.*?)</script>', html, re.DOTALL)
    assert match, html
    return json.loads(match.group(1))


@pytest.fixture
def faq_dir(tmp_path):
    (tmp_path / "faq.md").write_text(
        "# Opening hours\n\nThe shop is open from nine to five on weekdays, and closed on Sundays.\n",
        encoding="utf-8",
    )
    return tmp_path


@pytest.mark.parametrize("env", ["production", "development"])
def test_absolute_urls_come_from_public_url_never_from_the_host_header(live_server_factory, faq_dir, env):
    settings = {**TEST_CONFIG, "ENV": env, "PUBLIC_URL": PUBLIC, "BACKEND": "kb", "KB_DIR": str(faq_dir)}
    if env == "production":
        settings["TRUSTED_HOSTS"] = "127.0.0.1"  # the name the test reaches the server by
    server = live_server_factory(**settings)
    host = f"127.0.0.1:{server.port}" if env == "production" else HOSTILE
    headers = {"Host": host, "X-Forwarded-Host": HOSTILE, "X-Forwarded-Proto": "http"}
    http = http_client(base_url=server.url, headers=headers, timeout=10)
    try:
        # The panel: the API base it calls, and its own origin among its host origins ('self').
        config = panel_config(http.get("/panel").text)
        assert config["apiBase"] == f"{PUBLIC}/api/v1"
        assert PUBLIC in config["hostOrigins"]
        assert not [origin for origin in config["hostOrigins"] if "127.0.0.1" in origin or HOSTILE in origin]
        # The demo page's snippet.
        page = http.get("/").text
        assert f'src="{PUBLIC}/widget.js"' in page
        assert HOSTILE not in page and f"127.0.0.1:{server.port}" not in page
        # Routing's redirects (a doubled slash is merged by a redirect).
        redirect = http.get("/static//site.css")
        assert redirect.status_code == 308
        assert redirect.headers["location"] == f"{PUBLIC}/static/site.css"
        # The kb backend's source links, made from the Turn's server_url.
        chat = ChatClient(server.url)
        chat.http.headers.update(headers)
        try:
            chat.new_conversation()
            answer = chat.send("When is the shop open on weekdays?", "r-" + uuid.uuid4().hex)
        finally:
            chat.close()
        assert answer.kinds[-1] == "message.completed", answer.kinds
        # The sources come with message.completed (docs/protocol.md, "Sources").
        links = [source["url"] for source in answer.payloads[-1]["sources"]]
        assert links, answer.payloads[-1]
        assert all(link.startswith(f"{PUBLIC}/kb/faq.md") for link in links), links
        assert HOSTILE not in answer.text and "127.0.0.1" not in answer.text
    finally:
        http.close()


def test_development_without_public_url_keeps_the_requests_host(live_server):
    config = panel_config(HTTP.get(live_server.url + "/panel", timeout=10).text)
    assert config["apiBase"] == f"{live_server.url}/api/v1"
    assert f'src="{live_server.url}/widget.js"' in HTTP.get(live_server.url + "/", timeout=10).text
