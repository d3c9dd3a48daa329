"""Signing in to the agent console, sessions and CSRF (widget_server/agents/api.py,
sessions.py; docs/agents.md, "Sessions"; docs/security.md, "The agent console").

Through the real app and its real form: the sign-in page's token, the `__Host-` cookies, the
session record in the store's backend (memory here; Redis for the "any worker" test)."""

from __future__ import annotations

import pytest

from widget_server import create_app
from widget_server.agents.sessions import SESSION_COOKIE, SIGN_IN_COOKIE
from widget_server.services import SERVICES_KEY

from .agent_support import AGENTS, hidden_token, set_cookies, sign_in, sign_in_form, write_agents
from .conftest import TEST_CONFIG

WRONG = "That name and password do not match an agent account."


@pytest.fixture
def app(agents_file):
    return create_app({**TEST_CONFIG, "AGENTS_FILE": str(agents_file)}, environ={})


@pytest.fixture
def client(app):
    return app.test_client()


def _post_form(client, name, password, token):
    return client.post("/agent/sign-in", data={"name": name, "password": password, "csrf_token": token})


# -- the sign-in page ----------------------------------------------------------------------------


def test_signed_out_agent_gets_the_sign_in_form_with_strict_headers(client):
    page = client.get("/agent")
    assert page.status_code == 200
    html = page.get_data(as_text=True)
    assert 'action="/agent/sign-in"' in html and 'name="password"' in html
    csp = page.headers["Content-Security-Policy"]
    assert "frame-ancestors 'none'" in csp and "script-src 'self'" in csp and "'unsafe-inline'" not in csp
    assert page.headers["Cache-Control"] == "no-store"
    assert page.headers["X-Frame-Options"] == "DENY"
    assert page.headers["Referrer-Policy"] == "no-referrer"
    cookie = set_cookies(page)[SIGN_IN_COOKIE]
    assert cookie["value"] == hidden_token(html)
    assert cookie["path"] == "/" and cookie["secure"] and cookie["httponly"] and cookie["samesite"] == "Strict"
    assert "domain" not in cookie


def test_sign_in_sets_a_host_only_strict_session_cookie_and_shows_the_console(client):
    token = sign_in_form(client)
    response = _post_form(client, "alice", AGENTS["alice"][1], token)
    assert response.status_code == 303 and response.headers["Location"] == "/agent"
    cookie = set_cookies(response)[SESSION_COOKIE]
    assert cookie["path"] == "/" and cookie["secure"] and cookie["httponly"] and cookie["samesite"] == "Strict"
    assert "domain" not in cookie
    assert len(cookie["value"]) >= 43  # 256 random bits
    assert set_cookies(response)[SIGN_IN_COOKIE]["value"] == ""  # the form's token is spent

    console = client.get("/agent")
    assert console.status_code == 200
    html = console.get_data(as_text=True)
    assert 'id="agent-config"' in html
    session = client.get("/agent/api/session").get_json()
    assert session["name"] == "alice" and session["display_name"] == "Alice Agent"
    assert f'"csrfToken": "{session["csrf_token"]}"' in html
    assert '"apiBase": "/agent/api"' in html
    assert "frame-ancestors 'none'" in console.headers["Content-Security-Policy"]


def test_the_name_is_matched_without_case_or_surrounding_spaces(client):
    token = sign_in_form(client)
    assert _post_form(client, "  ALICE ", AGENTS["alice"][1], token).status_code == 303


@pytest.mark.parametrize(
    "name,password",
    [
        ("alice", "bob-password"),  # wrong password
        ("carol", "alice-password"),  # unknown name
        ("alice", ""),
        ("", ""),
        ("alice", "x" * 5000),
    ],
)
def test_a_wrong_name_or_password_is_refused_in_words_without_saying_which(client, name, password):
    token = sign_in_form(client)
    response = _post_form(client, name, password, token)
    assert response.status_code == 401
    html = response.get_data(as_text=True)
    assert WRONG in html
    assert 'role="alert"' in html
    assert f'value="{name.strip()}"' in html  # the name is kept, the password never
    assert SESSION_COOKIE not in set_cookies(response)
    assert client.get("/agent/api/session").status_code == 401


@pytest.mark.parametrize("token", [None, "", "not-the-token"])
def test_the_sign_in_form_without_its_token_is_refused(client, token):
    sign_in_form(client)
    data = {"name": "alice", "password": AGENTS["alice"][1]}
    if token is not None:
        data["csrf_token"] = token
    response = client.post("/agent/sign-in", data=data)
    assert response.status_code == 403
    assert "The sign-in form expired" in response.get_data(as_text=True)
    assert SESSION_COOKIE not in set_cookies(response)


def test_a_sign_in_from_a_browser_without_the_form_cookie_is_refused(app):
    # Another site's page posting the form: its browser has no __Host-agent_sign_in cookie
    # from this server (SameSite=Strict would not send it anyway).
    token = sign_in_form(app.test_client())
    stranger = app.test_client()
    response = _post_form(stranger, "alice", AGENTS["alice"][1], token)
    assert response.status_code == 403


def test_a_sign_in_that_is_not_a_form_is_refused(client):
    sign_in_form(client)
    response = client.post("/agent/sign-in", json={"name": "alice", "password": AGENTS["alice"][1]})
    assert response.status_code == 403


# -- the API without a session, or without its CSRF token -----------------------------------------


API_READS = ["/agent/api/session", "/agent/api/queue", "/agent/api/inbox", "/agent/api/conversations/c_x"]
API_WRITES = [
    ("/agent/api/conversations/c_x/claim", None),
    ("/agent/api/conversations/c_x/messages", {"request_id": "r1", "text": "hi"}),
    ("/agent/api/conversations/c_x/typing", None),
    ("/agent/api/conversations/c_x/end", {"reason": "ended"}),
    ("/agent/api/inbox/l_x/reply", {"request_id": "r1", "text": "hi"}),
]


@pytest.mark.parametrize("path", API_READS)
def test_reads_without_a_session_are_401_json(client, path):
    response = client.get(path)
    assert response.status_code == 401
    assert response.get_json()["error"]["code"] == "not_signed_in"
    assert response.headers["Cache-Control"] == "no-store"


@pytest.mark.parametrize("path,body", API_WRITES)
def test_writes_without_a_session_are_401_json(client, path, body):
    response = client.post(path, json=body, headers={"X-CSRF-Token": "anything"})
    assert response.status_code == 401
    assert response.get_json()["error"]["code"] == "not_signed_in"


@pytest.mark.parametrize("path,body", API_WRITES)
@pytest.mark.parametrize("header", [None, "", "wrong-token"])
def test_writes_without_the_sessions_csrf_token_are_403_json(client, path, body, header):
    csrf = sign_in(client)
    headers = {} if header is None else {"X-CSRF-Token": header}
    response = client.post(path, json=body, headers=headers)
    assert response.status_code == 403
    assert response.get_json()["error"]["code"] == "csrf_failed"
    assert csrf != header


def test_another_sessions_csrf_token_does_not_count(app):
    alice, bob = app.test_client(), app.test_client()
    sign_in(alice, "alice")
    bobs_token = sign_in(bob, "bob")
    response = alice.post("/agent/api/conversations/c_x/typing", headers={"X-CSRF-Token": bobs_token})
    assert response.status_code == 403


def test_a_made_up_session_cookie_is_401(client):
    client.set_cookie(SESSION_COOKIE, "x" * 43)
    assert client.get("/agent/api/session").status_code == 401
    client.set_cookie(SESSION_COOKIE, "x" * 3000)
    assert client.get("/agent/api/session").status_code == 401


# -- session ends -------------------------------------------------------------------------------


def test_a_session_expires_after_agent_session_seconds(app, client):
    sign_in(client)
    sessions = app.extensions[SERVICES_KEY].sessions
    assert sessions.lifetime == 8 * 3600  # the default
    started = sessions.clock()
    sessions.clock = lambda: started + 8 * 3600 - 1
    assert client.get("/agent/api/session").status_code == 200
    sessions.clock = lambda: started + 8 * 3600 + 1
    response = client.get("/agent/api/session")
    assert response.status_code == 401 and response.get_json()["error"]["code"] == "not_signed_in"
    assert 'action="/agent/sign-in"' in client.get("/agent").get_data(as_text=True)


def test_sign_out_needs_the_token_then_ends_the_session_for_every_copy_of_the_cookie(app, client):
    csrf = sign_in(client)
    cookie = client.get_cookie(SESSION_COOKIE).value
    refused = client.post("/agent/sign-out", data={"csrf_token": "wrong"})
    assert refused.status_code == 403 and refused.get_json()["error"]["code"] == "csrf_failed"
    assert client.get("/agent/api/session").status_code == 200

    response = client.post("/agent/sign-out", data={"csrf_token": csrf})
    assert response.status_code == 303 and response.headers["Location"] == "/agent"
    assert set_cookies(response)[SESSION_COOKIE]["value"] == ""
    # A copy of the old cookie (another tab, a thief) is worth nothing: the record is gone.
    replay = app.test_client()
    replay.set_cookie(SESSION_COOKIE, cookie)
    assert replay.get("/agent/api/session").status_code == 401
    assert replay.post("/agent/api/conversations/c_x/typing", headers={"X-CSRF-Token": csrf}).status_code == 401


def test_a_removed_agents_session_stops_working_at_its_next_request(agents_file, client):
    sign_in(client, "bob")
    from widget_server.agents.accounts import AgentAccounts

    AgentAccounts(str(agents_file)).remove("bob")
    assert client.get("/agent/api/session").status_code == 401


def test_signing_in_replaces_a_session_cookie_the_browser_already_had(app):
    # Session fixation: a cookie planted in the browser before sign-in is never the session after.
    attacker = app.test_client()
    sign_in(attacker, "bob")
    planted = attacker.get_cookie(SESSION_COOKIE).value
    victim = app.test_client()
    token = sign_in_form(victim)
    victim.set_cookie(SESSION_COOKIE, planted)
    assert _post_form(victim, "alice", AGENTS["alice"][1], token).status_code == 303
    assert victim.get_cookie(SESSION_COOKIE).value != planted
    assert victim.get("/agent/api/session").get_json()["name"] == "alice"
    assert attacker.get("/agent/api/session").status_code == 401  # the planted session was ended


# -- the login rate limit -------------------------------------------------------------------------


def test_sign_in_attempts_are_rate_limited_per_address_and_per_name(agents_file):
    app = create_app(
        {**TEST_CONFIG, "AGENTS_FILE": str(agents_file), "RATE_LIMITS": True, "RATE_LIMIT_AGENT_SIGN_IN": "3/minute"},
        environ={},
    )
    client = app.test_client()
    for _ in range(3):
        assert _post_form(client, "alice", "wrong-password", sign_in_form(client)).status_code == 401
    limited = _post_form(client, "alice", AGENTS["alice"][1], sign_in_form(client))
    assert limited.status_code == 429  # even the right password, now
    assert int(limited.headers["Retry-After"]) >= 1
    assert "Too many sign-in attempts" in limited.get_data(as_text=True)
    assert SESSION_COOKIE not in set_cookies(limited)

    # From another address, the name's own budget is spent too (a guesser with many addresses).
    elsewhere = app.test_client()
    token = sign_in_form(elsewhere)
    response = elsewhere.post(
        "/agent/sign-in",
        data={"name": "alice", "password": AGENTS["alice"][1], "csrf_token": token},
        environ_base={"REMOTE_ADDR": "192.0.2.7"},
    )
    assert response.status_code == 429
    # Another name from that address is still let in.
    token = sign_in_form(elsewhere)
    response = elsewhere.post(
        "/agent/sign-in",
        data={"name": "bob", "password": AGENTS["bob"][1], "csrf_token": token},
        environ_base={"REMOTE_ADDR": "192.0.2.7"},
    )
    assert response.status_code == 303


def test_api_requests_without_a_session_spend_the_unauthorized_budget(agents_file):
    app = create_app(
        {**TEST_CONFIG, "AGENTS_FILE": str(agents_file), "RATE_LIMITS": True, "RATE_LIMIT_UNAUTHORIZED": "2/minute"},
        environ={},
    )
    client = app.test_client()
    assert [client.get("/agent/api/queue").status_code for _ in range(3)] == [401, 401, 429]
    assert client.get("/agent/api/queue").get_json()["error"]["code"] == "rate_limited"


# -- any worker ---------------------------------------------------------------------------------


def test_a_session_made_on_one_worker_is_accepted_by_another_on_the_same_redis(agents_file, redis_server):
    redis_server.flush()  # no failed sign-ins counted by another test make this one wait
    config = {**TEST_CONFIG, "AGENTS_FILE": str(agents_file), "STORE": redis_server.url}
    first, second = create_app(config, environ={}), create_app(config, environ={})
    one = first.test_client()
    csrf = sign_in(one)
    other = second.test_client()
    other.set_cookie(SESSION_COOKIE, one.get_cookie(SESSION_COOKIE).value)
    assert other.get("/agent/api/session").get_json()["csrf_token"] == csrf
    # Signed out on the second, refused on the first.
    assert other.post("/agent/sign-out", data={"csrf_token": csrf}).status_code == 303
    assert one.get("/agent/api/session").status_code == 401


# -- the agents file at start ---------------------------------------------------------------------


def test_a_corrupt_agents_file_stops_the_app_at_start(tmp_path):
    from widget_server.settings import ConfigError

    path = tmp_path / "agents.json"
    path.write_text("{", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"^AGENTS_FILE: the agents file .*agents\.json is not valid JSON"):
        create_app({**TEST_CONFIG, "AGENTS_FILE": str(path)}, environ={})


def test_no_agents_file_yet_serves_the_form_and_signs_nobody_in(tmp_path):
    app = create_app({**TEST_CONFIG, "AGENTS_FILE": str(tmp_path / "later.json")}, environ={})
    client = app.test_client()
    token = sign_in_form(client)
    assert _post_form(client, "alice", AGENTS["alice"][1], token).status_code == 401
    write_agents(tmp_path / "later.json")  # added while the server runs: no restart needed
    assert _post_form(client, "alice", AGENTS["alice"][1], sign_in_form(client)).status_code == 303
