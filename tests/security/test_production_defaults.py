"""Safe production defaults: what `ENV=production` refuses or
closes by default, against a real `widget-server` command and a live server.

docs/security.md, "Production defaults", says why each one is so.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest

from tests.conftest import TEST_CONFIG
from tests.processes import ServerProcess

from ..helpers import HTTP

# What a production deployment of these tests sets: the demo backend (the only one that needs
# no provider) explicitly allowed, a public URL, and the loopback address the tests use as a
# trusted host name.
PRODUCTION: dict[str, Any] = {
    **TEST_CONFIG,
    "ENV": "production",
    "ALLOW_DEMO_IN_PRODUCTION": True,
    "PUBLIC_URL": "https://chat.example.com",
    "TRUSTED_HOSTS": "127.0.0.1",
}


def run_cli(*args: str, **settings: Any) -> subprocess.CompletedProcess[str]:
    """`python -m widget_server ARGS` with only these WIDGET_SERVER_* variables set."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("WIDGET_SERVER_")}
    env.update({f"WIDGET_SERVER_{key}": str(value) for key, value in settings.items()})
    return subprocess.run(
        [sys.executable, "-m", "widget_server", "--host", "127.0.0.1", "--port", "0", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


# -- the demo backend ---------------------------------------------------------------------


def test_production_refuses_the_demo_backend_with_one_line_and_exit_2():
    result = run_cli("--env", "production")
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("widget-server: error: BACKEND:"), lines[0]
    assert "ALLOW_DEMO_IN_PRODUCTION=1" in lines[0]
    assert "Traceback" not in result.stderr
    assert result.stdout == ""  # never reached "is ready"


@pytest.mark.slow
@pytest.mark.xdist_group("processes")
def test_production_serves_the_demo_backend_only_when_explicitly_allowed():
    settings = {key: value for key, value in PRODUCTION.items() if key != "ALLOW_DEMO_IN_PRODUCTION"}
    assert run_cli(**settings).returncode == 2
    server = ServerProcess({**settings, "ALLOW_DEMO_IN_PRODUCTION": "1"}).start()
    try:
        health = HTTP.get(server.url + "/healthz", timeout=10)
        assert health.status_code == 200
        assert health.json()["backend"] == "demo"
    finally:
        server.stop()


# -- /metrics -----------------------------------------------------------------------------


def test_metrics_are_off_by_default_in_production(live_server_factory):
    server = live_server_factory(**PRODUCTION)
    response = HTTP.get(server.url + "/metrics", timeout=10)
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"
    assert "chat_" not in response.text


def test_metrics_stay_open_in_development_without_a_token(live_server):
    response = HTTP.get(live_server.url + "/metrics", timeout=10)
    assert response.status_code == 200
    assert "chat_open_streams" in response.text


@pytest.mark.parametrize("env", ["production", "development"])
def test_metrics_with_a_token_are_served_only_to_its_bearer(live_server_factory, env):
    token = "m3tr1cs-Token_value"
    server = live_server_factory(**{**PRODUCTION, "ENV": env, "METRICS_TOKEN": token})
    refused = [
        {},
        {"Authorization": "Bearer wrong"},
        {"Authorization": f"Bearer {token[:-1]}"},
        {"Authorization": f"Bearer {token.upper()}"},
        {"Authorization": f"Basic {token}"},
    ]
    for headers in refused:
        response = HTTP.get(server.url + "/metrics", headers=headers, timeout=10)
        assert response.status_code == 404, headers
        assert response.json()["error"]["code"] == "not_found", headers
        assert "chat_" not in response.text
    response = HTTP.get(server.url + "/metrics", headers={"Authorization": f"Bearer {token}"}, timeout=10)
    assert response.status_code == 200
    assert "chat_open_streams" in response.text
    assert response.headers["Cache-Control"] == "no-store"
