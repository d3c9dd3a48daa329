"""Shared by the agent tests: an agents file, and signing in through the real form."""

from __future__ import annotations

import re
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Any

from widget_server.agents.accounts import AgentAccounts

AGENTS = {"alice": ("Alice Agent", "alice-password"), "bob": ("Bob Agent", "bob-password")}


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
