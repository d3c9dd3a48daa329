"""Shared by the agent tests: an agents file, an app with it, and signing in through the
real form."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Any

import httpx
from werkzeug.security import generate_password_hash

from widget_server import create_app
from widget_server.agents.accounts import AgentAccounts
from widget_server.services import SERVICES_KEY

from .helpers import http_client

AGENTS = {"alice": ("Alice Agent", "alice-password"), "bob": ("Bob Agent", "bob-password")}


# scrypt with N = 2**10 instead of werkzeug's 2**15: a millisecond a check, not a tenth of a second.
TEST_PASSWORD_HASH = "scrypt:1024:8:1"

_WRITTEN: dict[tuple[tuple[str, str, str], ...], bytes] = {}


def write_agents(path: Path, agents: dict[str, tuple[str, str]] = AGENTS) -> AgentAccounts:
    """An agents file with these accounts, written by `AgentAccounts.add` the first time and
    copied after that (each scrypt hash takes a noticeable fraction of a second)."""
    key = tuple((name, display, password) for name, (display, password) in sorted(agents.items()))
    accounts = AgentAccounts(str(path))
    if key in _WRITTEN:
        path.write_bytes(_WRITTEN[key])
        path.chmod(0o600)
        return accounts
    for name, (display_name, password) in agents.items():
        accounts.add(name, display_name, password)
    # The same scrypt at a smaller cost (werkzeug reads the cost from the hash): every sign-in
    # of a test checks a password, and the suite signs in hundreds of times. The production
    # cost is what `add` writes, checked by tests/test_agents_accounts.py.
    document = json.loads(path.read_text(encoding="utf-8"))
    for entry in document["agents"]:
        entry["password_hash"] = generate_password_hash(agents[entry["name"]][1], TEST_PASSWORD_HASH)
    path.write_text(json.dumps(document, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    _WRITTEN[key] = path.read_bytes()
    return accounts


def hidden_token(html: str) -> str:
    match = re.search(r'name="csrf_token" value="([^"]*)"', html)
    assert match, "the form has no csrf_token field"
    return match[1]


def set_cookies(response: Any) -> dict[str, dict[str, str]]:
    """A Flask test response's Set-Cookie headers by name (parse_set_cookies)."""
    return parse_set_cookies(response.headers.getlist("Set-Cookie"))


def parse_set_cookies(headers: list[str]) -> dict[str, dict[str, str]]:
    """Set-Cookie headers by name: {"value": …, attribute (lower-case): value or ""}."""
    found: dict[str, dict[str, str]] = {}
    for header in headers:
        parsed = SimpleCookie()
        parsed.load(header)
        for name, morsel in parsed.items():
            attributes = {key: str(value) for key, value in morsel.items() if value}
            lowered = header.lower()
            # SimpleCookie drops flags it does not know (Partitioned); keep what the header says.
            for flag in ("secure", "httponly"):
                if f"; {flag}" in lowered:
                    attributes[flag] = "true"
            found[name] = {"value": morsel.value, **attributes}
    return found


def sign_in_form(client: Any) -> str:
    """GET /agent signed out: the sign-in page's CSRF token (its cookie is now in the client)."""
    page = client.get("/agent")
    assert page.status_code == 200
    return hidden_token(page.get_data(as_text=True))


def sign_in(client: Any, name: str = "alice", password: str | None = None) -> str:
    """Sign in through the form; the session's CSRF token (from GET /agent/api/session)."""
    token = sign_in_form(client)
    password = AGENTS[name][1] if password is None else password
    response = client.post("/agent/sign-in", data={"name": name, "password": password, "csrf_token": token})
    assert response.status_code == 303, response.get_data(as_text=True)[:500]
    session = client.get("/agent/api/session")
    assert session.status_code == 200
    csrf: str = session.get_json()["csrf_token"]
    return csrf


@contextmanager
def agents_app(folder: Path, **config: Any) -> Iterator[Any]:
    """The app with AGENTS (tests/conftest.py's TEST_CONFIG, then `config`), its mailer
    closed after."""
    from .conftest import TEST_CONFIG

    path = folder / "agents.json"
    write_agents(path)
    app = create_app({**TEST_CONFIG, "AGENTS_FILE": str(path), **config}, environ={})
    try:
        yield app
    finally:
        app.extensions[SERVICES_KEY].mailer.close()


class SignedInAgent:
    """One agent's browser on `app`: the test client with its session and CSRF token."""

    def __init__(self, app: Any, name: str = "alice") -> None:
        self.client = app.test_client()
        self.csrf = sign_in(self.client, name)

    def call(self, method: str, path: str, body: Any = None) -> Any:
        """`/agent/api{path}`, with the CSRF token (as the console sends it) and `body` as JSON."""
        return self.client.open(f"/agent/api{path}", method=method, json=body, headers={"X-CSRF-Token": self.csrf})


class HandoffVisitor:
    """A visitor's browser on `app`: a new conversation and its token, as the widget has them."""

    def __init__(self, app: Any) -> None:
        self.client = app.test_client()
        created = self.client.post("/api/v1/conversations").get_json()
        self.cid = created["conversation_id"]
        self.headers = {"Authorization": f"Bearer {created['token']}"}

    def url(self, tail: str = "") -> str:
        return f"/api/v1/conversations/{self.cid}{tail}"

    def post(self, tail: str, body: dict[str, Any]) -> Any:
        """POST `/api/v1/conversations/{cid}{tail}` with the token and `body` as JSON."""
        return self.client.post(self.url(tail), json=body, headers=self.headers)

    def history(self) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = self.client.get(self.url(), headers=self.headers).get_json()["messages"]
        return messages


class HttpAgent:
    """An agent's browser over real HTTP: the cookies kept by hand, because a cookie jar (rightly)
    never sends a `__Host-`/Secure cookie over the loopback's plain http. `passwords`: name →
    password of the agents file the server reads (AGENTS' by default)."""

    def __init__(self, base_url: str, passwords: dict[str, str] | None = None) -> None:
        self.http = http_client(base_url=base_url, timeout=30)
        self.passwords = passwords or {name: password for name, (_, password) in AGENTS.items()}
        self.cookies: dict[str, str] = {}
        self.csrf = ""

    def _keep(self, response: httpx.Response) -> httpx.Response:
        for name, attributes in parse_set_cookies(response.headers.get_list("set-cookie")).items():
            self.cookies[name] = attributes["value"]
        return response

    def cookie_header(self) -> dict[str, str]:
        return {"Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items() if v)}

    def sign_in(self, name: str) -> None:
        token = hidden_token(self._keep(self.http.get("/agent", headers=self.cookie_header())).text)
        form = {"name": name, "password": self.passwords[name], "csrf_token": token}
        response = self._keep(self.http.post("/agent/sign-in", data=form, headers=self.cookie_header()))
        assert response.status_code == 303, response.text[:300]
        self.csrf = self.http.get("/agent/api/session", headers=self.cookie_header()).json()["csrf_token"]

    def get(self, path: str, **params: str) -> httpx.Response:
        """Any page or route of the server, as this agent."""
        return self.http.get(path, params=params, headers=self.cookie_header())

    def agent_api(self, path: str, body: dict | None = None) -> httpx.Response:
        """A POST to the agent API (`/agent/api…`), with the session's CSRF token."""
        headers = {**self.cookie_header(), "X-CSRF-Token": self.csrf}
        return self.http.post(f"/agent/api{path}", json=body, headers=headers)
