"""The admin role (docs/dashboard.md, "Who may see it"; docs/agents.md): `widget-server agents
add NAME --admin` marks the account in the agents file, `agents list` shows it, the file's
`admin` is read back, and a file whose `admin` is not true or false is refused."""

from __future__ import annotations

import json

import pytest

from widget_server.agents.accounts import AccountsError, AgentAccounts

from .test_agents_cli import run


def test_add_with_admin_marks_the_account_and_list_shows_it(tmp_path):
    path = tmp_path / "agents.json"
    added = run(["add", "carol", "--display-name", "Carol Owner", "--admin", "--password-stdin"], path, "password-c\n")
    assert added.returncode == 0, added.stderr
    assert added.stdout.strip() == f"Added carol (Carol Owner), an admin, to {path}."
    assert run(["add", "bob", "--password-stdin"], path, "password-b\n").returncode == 0
    assert run(["list"], path).stdout == "bob\tbob\ncarol\tCarol Owner\tadmin\n"
    entries = {entry["name"]: entry for entry in json.loads(path.read_text(encoding="utf-8"))["agents"]}
    assert entries["carol"]["admin"] is True
    assert "admin" not in entries["bob"]  # an agent's entry is as it always was
    accounts = AgentAccounts(str(path))
    assert accounts.get("carol").admin and not accounts.get("bob").admin
    # Added again without --admin, the account is an agent's only.
    assert run(["add", "carol", "--replace", "--password-stdin"], path, "password-c\n").returncode == 0
    assert not AgentAccounts(str(path)).get("carol").admin


def test_an_admin_that_is_not_true_or_false_is_refused(tmp_path):
    path = tmp_path / "agents.json"
    path.write_text(json.dumps({"agents": [{"name": "a", "display_name": "A", "password_hash": "x", "admin": "yes"}]}))
    with pytest.raises(AccountsError, match="admin is true or false"):
        AgentAccounts(str(path)).read()


def test_dashboard_requests_without_a_session_spend_the_unauthorized_budget(tmp_path):
    """docs/security.md, "The owner dashboard": counted as the console's API is."""
    from widget_server import create_app

    from .agent_support import write_agents
    from .conftest import TEST_CONFIG

    path = tmp_path / "agents.json"
    write_agents(path)
    config = {**TEST_CONFIG, "AGENTS_FILE": str(path), "RATE_LIMITS": True, "RATE_LIMIT_UNAUTHORIZED": "2/minute"}
    for url, refused in (("/admin", 302), ("/api/v1/admin/summary", 401), ("/admin/export/answers.csv", 302)):
        client = create_app(config, environ={}).test_client()
        assert [client.get(url).status_code for _ in range(3)] == [refused, refused, 429], url
        assert client.get(url).get_json()["error"]["code"] == "rate_limited"
