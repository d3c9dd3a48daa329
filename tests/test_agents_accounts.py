"""The agents file (widget_server/agents/accounts.py; docs/agents.md, "Accounts")."""

from __future__ import annotations

import json
import os
import stat
import threading

import pytest

from widget_server.agents.accounts import AccountsError, AgentAccounts


@pytest.fixture
def accounts(tmp_path) -> AgentAccounts:
    return AgentAccounts(str(tmp_path / "agents.json"))


def test_add_writes_a_private_file_with_a_scrypt_hash_and_never_the_password(accounts):
    accounts.add("Alice", "Alice Agent", "correct horse")
    assert accounts.path is not None
    assert stat.S_IMODE(os.stat(accounts.path).st_mode) == 0o600
    raw = accounts.path.read_text(encoding="utf-8")
    assert "correct horse" not in raw
    (entry,) = json.loads(raw)["agents"]
    assert entry["name"] == "alice"  # names are lower-cased
    assert entry["display_name"] == "Alice Agent"
    assert entry["password_hash"].startswith("scrypt:")


def test_verify_accepts_the_password_and_refuses_others(accounts):
    accounts.add("alice", "Alice", "correct horse")
    assert accounts.verify("alice", "correct horse").name == "alice"
    assert accounts.verify("ALICE ", "correct horse").name == "alice"
    assert accounts.verify("alice", "correct horse ") is None
    assert accounts.verify("alice", "") is None
    assert accounts.verify("bob", "correct horse") is None
    assert accounts.verify("not a name!", "correct horse") is None
    assert accounts.verify("alice", "x" * 100_000) is None


def test_list_and_remove(accounts):
    accounts.add("bob", "Bob", "password-b")
    accounts.add("alice", "Alice", "password-a")
    assert [a.public() for a in accounts.list()] == [
        {"name": "alice", "display_name": "Alice"},
        {"name": "bob", "display_name": "Bob"},
    ]
    assert accounts.remove("bob").name == "bob"
    assert [a.name for a in accounts.list()] == ["alice"]
    with pytest.raises(AccountsError, match="no agent named 'bob'"):
        accounts.remove("bob")


def test_a_taken_name_is_refused_unless_replaced(accounts):
    accounts.add("alice", "Alice", "password-1")
    with pytest.raises(AccountsError, match="already an agent named 'alice'"):
        accounts.add("alice", "Alice again", "password-2")
    accounts.add("alice", "Alice again", "password-2", replace=True)
    assert accounts.verify("alice", "password-1") is None
    assert accounts.verify("alice", "password-2").display_name == "Alice again"


@pytest.mark.parametrize(
    "name,display_name,password,message",
    [
        ("", "A", "password", "not an agent name"),
        ("has space", "A", "password", "not an agent name"),
        ("-dash", "A", "password", "not an agent name"),
        ("a" * 65, "A", "password", "not an agent name"),
        ("ok", "", "password", "display name has 1 to 80"),
        ("ok", "x" * 81, "password", "display name has 1 to 80"),
        ("ok", "bell\x07", "password", "control characters"),
        ("ok", "Ok", "short", "a password has 8 to 1024"),
    ],
)
def test_invalid_values_are_refused_and_nothing_is_written(accounts, name, display_name, password, message):
    with pytest.raises(AccountsError, match=message):
        accounts.add(name, display_name, password)
    assert accounts.path is not None and not accounts.path.exists()


def test_a_missing_file_says_how_to_create_it(accounts):
    with pytest.raises(
        AccountsError, match=r"no agents file at .*agents\.json: create it with `widget-server agents add"
    ):
        accounts.list()
    assert accounts.current() == {}  # the server: no file yet is no agents


def test_no_file_set_names_the_setting():
    with pytest.raises(AccountsError, match="WIDGET_SERVER_AGENTS_FILE"):
        AgentAccounts("").list()
    assert AgentAccounts("").current() == {}


@pytest.mark.parametrize(
    "content,message",
    [
        ("{not json", "is not valid JSON"),
        ("[]", "is not an agents file"),
        ('{"agents": {}}', "is not an agents file"),
        ('{"agents": [{"name": "a"}]}', "entry 0 needs the strings name, display_name and password_hash"),
        ('{"agents": [{"name": "A B", "display_name": "x", "password_hash": "y"}]}', "entry 0: 'a b' is not"),
        (
            '{"agents": [{"name": "a", "display_name": "x", "password_hash": "y"},'
            ' {"name": "a", "display_name": "x", "password_hash": "y"}]}',
            "the name 'a' is there twice",
        ),
    ],
)
def test_a_corrupt_file_is_named_with_what_is_wrong(accounts, content, message):
    assert accounts.path is not None
    accounts.path.write_text(content, encoding="utf-8")
    with pytest.raises(AccountsError, match=message) as raised:
        accounts.list()
    assert str(accounts.path) in str(raised.value)
    with pytest.raises(AccountsError):
        accounts.add("b", "B", "password-b")  # never overwrites a file it cannot read


def test_the_server_sees_changes_and_keeps_the_last_good_list_over_a_corrupt_file(accounts):
    assert accounts.path is not None
    accounts.add("alice", "Alice", "password-a")
    assert list(accounts.current()) == ["alice"]
    writer = AgentAccounts(str(accounts.path))  # the CLI, another process in real life
    writer.add("bob", "Bob", "password-b")
    assert sorted(accounts.current()) == ["alice", "bob"]
    accounts.path.write_text('{"agents": [', encoding="utf-8")
    with pytest.raises(AccountsError, match="not valid JSON"):
        accounts.current()  # said once, when the change is seen ...
    assert sorted(accounts.current()) == ["alice", "bob"]  # ... then the last good list stands
    accounts.path.unlink()
    assert accounts.current() == {}


def test_a_write_leaves_no_temporary_file_behind(accounts, tmp_path):
    accounts.add("alice", "Alice", "password-a")
    accounts.remove("alice")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["agents.json", "agents.json.lock"]
    assert json.loads((tmp_path / "agents.json").read_text(encoding="utf-8")) == {"agents": []}


def test_concurrent_adds_keep_every_entry(tmp_path):
    path = str(tmp_path / "agents.json")
    errors: list[BaseException] = []

    def add(index: int) -> None:
        try:
            AgentAccounts(path).add(f"agent{index}", f"Agent {index}", f"password-{index}")
        except BaseException as error:  # reported below
            errors.append(error)

    threads = [threading.Thread(target=add, args=(i,)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert sorted(a.name for a in AgentAccounts(path).list()) == [f"agent{i}" for i in range(6)]


def test_the_server_sees_a_password_reset_at_once(accounts):
    assert accounts.path is not None
    accounts.add("alice", "Alice", "password-1")
    assert accounts.verify("alice", "password-1") is not None
    # The same size (a scrypt hash has one length), written right after: still seen.
    AgentAccounts(str(accounts.path)).add("alice", "Alice", "password-2", replace=True)
    assert accounts.verify("alice", "password-1") is None
    assert accounts.verify("alice", "password-2") is not None
