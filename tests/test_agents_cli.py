"""`widget-server agents add|remove|list` (widget_server/agents/commands.py), run as the real
command in a child process: the password from standard input, or typed at a real terminal
(a pseudo-terminal, so getpass reads it without echo, as it does for a person)."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time

import pytest

from widget_server.agents.accounts import AgentAccounts

COMMAND = [sys.executable, "-m", "widget_server", "agents"]


def env_with(path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("WIDGET_SERVER_")}
    return {**env, "WIDGET_SERVER_AGENTS_FILE": str(path)}


def run(args: list[str], path, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run(
        [*COMMAND, *args], input=stdin, capture_output=True, text=True, env=env_with(path), timeout=60
    )


def test_add_with_password_stdin_then_list_and_remove(tmp_path):
    path = tmp_path / "agents.json"
    added = run(["add", "alice", "--display-name", "Alice Example", "--password-stdin"], path, "correct horse\n")
    assert added.returncode == 0, added.stderr
    assert added.stdout.strip() == f"Added alice (Alice Example) to {path}."
    assert AgentAccounts(str(path)).verify("alice", "correct horse") is not None

    assert run(["add", "bob", "--password-stdin"], path, "password-b").returncode == 0  # no final newline
    listed = run(["list"], path)
    assert listed.returncode == 0
    assert listed.stdout == "alice\tAlice Example\nbob\tbob\n"
    assert "correct horse" not in path.read_text(encoding="utf-8")

    removed = run(["remove", "bob"], path)
    assert removed.returncode == 0 and removed.stdout.strip() == f"Removed bob from {path}."
    assert run(["list"], path).stdout == "alice\tAlice Example\n"


def test_agents_file_option_wins_over_the_environment(tmp_path):
    chosen = tmp_path / "chosen.json"
    result = run(
        ["add", "carol", "--password-stdin", "--agents-file", str(chosen)], tmp_path / "env.json", "password-c\n"
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(chosen.read_text(encoding="utf-8"))["agents"][0]["name"] == "carol"
    assert not (tmp_path / "env.json").exists()


@pytest.mark.parametrize(
    "args,stdin,message",
    [
        (["add", "alice", "--password-stdin"], "short\n", "a password has 8 to 1024 characters"),
        (["add", "Not A Name", "--password-stdin"], "password-x\n", "is not an agent name"),
        (["remove", "nobody"], "", "there is no agents file at"),
        (["list"], "", "create it with `widget-server agents add NAME`"),
    ],
)
def test_refusals_say_why_and_exit_1(tmp_path, args, stdin, message):
    result = run(args, tmp_path / "agents.json", stdin)
    assert result.returncode == 1
    assert message in result.stderr
    assert result.stderr.startswith("widget-server: error: ")
    assert not (tmp_path / "agents.json").exists()


def test_a_taken_name_exits_1_and_replace_changes_the_password(tmp_path):
    path = tmp_path / "agents.json"
    assert run(["add", "alice", "--password-stdin"], path, "password-1\n").returncode == 0
    again = run(["add", "alice", "--password-stdin"], path, "password-2\n")
    assert again.returncode == 1 and "already an agent named 'alice'" in again.stderr
    assert run(["add", "alice", "--replace", "--password-stdin"], path, "password-2\n").returncode == 0
    assert AgentAccounts(str(path)).verify("alice", "password-2") is not None


def test_a_corrupt_file_is_named_and_left_alone(tmp_path):
    path = tmp_path / "agents.json"
    path.write_text("{oops", encoding="utf-8")
    result = run(["add", "alice", "--password-stdin"], path, "password-1\n")
    assert result.returncode == 1
    assert f"the agents file {path} is not valid JSON" in result.stderr
    assert path.read_text(encoding="utf-8") == "{oops"


def test_without_an_agents_file_setting_it_says_which_to_set(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("WIDGET_SERVER_")}
    result = subprocess.run([*COMMAND, "list"], capture_output=True, text=True, env=env, timeout=60)
    assert result.returncode == 1
    assert "--agents-file or WIDGET_SERVER_AGENTS_FILE" in result.stderr


def test_usage_errors_exit_2(tmp_path):
    assert run(["add"], tmp_path / "a.json").returncode == 2  # NAME missing
    assert run([], tmp_path / "a.json").returncode == 2  # ACTION missing


# -- the prompt, at a real terminal ------------------------------------------------------------


def _read_until(fd: int, expected: bytes, timeout: float = 30.0) -> bytes:
    seen = b""
    deadline = time.monotonic() + timeout
    while expected not in seen:
        remaining = deadline - time.monotonic()
        assert remaining > 0, f"never saw {expected!r}; saw {seen!r}"
        ready, _, _ = select.select([fd], [], [], remaining)
        if ready:
            try:
                chunk = os.read(fd, 1024)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            seen += chunk
    return seen


def _prompted(path, first: str, second: str) -> tuple[int, bytes]:
    pid, fd = pty.fork()
    if pid == 0:  # the child: its controlling terminal is the pty, so getpass uses it
        os.execve(sys.executable, [*COMMAND, "add", "dave", "--display-name", "Dave"], env_with(path))
    try:
        transcript = _read_until(fd, b"Password: ")
        os.write(fd, first.encode() + b"\n")
        transcript += _read_until(fd, b"Password again: ")
        os.write(fd, second.encode() + b"\n")
        transcript += _read_until(fd, b"\n", timeout=30)
        while True:
            try:
                chunk = os.read(fd, 1024)
            except OSError:
                break
            if not chunk:
                break
            transcript += chunk
    finally:
        _, status = os.waitpid(pid, 0)
        os.close(fd)
    return os.waitstatus_to_exitcode(status), transcript


def test_the_password_is_asked_twice_at_the_terminal_without_echo(tmp_path):
    path = tmp_path / "agents.json"
    code, transcript = _prompted(path, "typed secret", "typed secret")
    assert code == 0, transcript
    assert b"typed secret" not in transcript  # getpass turned echo off
    assert b"Added dave (Dave)" in transcript
    assert AgentAccounts(str(path)).verify("dave", "typed secret") is not None


def test_two_different_passwords_change_nothing(tmp_path):
    path = tmp_path / "agents.json"
    code, transcript = _prompted(path, "typed secret", "another one")
    assert code == 1
    assert b"the two passwords differ; nothing was changed" in transcript
    assert not path.exists()


def _agents_options() -> set[str]:
    """Every option of `widget-server agents …` (tests/test_docs.py reads only the top level)."""
    import argparse

    from widget_server.cli import build_parser

    def subparsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
        return [
            child
            for action in parser._actions
            if isinstance(action, argparse._SubParsersAction)
            for child in action.choices.values()
        ]

    (agents,) = [p for p in subparsers(build_parser()) if p.prog.endswith(" agents")]
    return {
        option
        for command in subparsers(agents)
        for action in command._actions
        for option in action.option_strings
        if option not in ("-h", "--help")
    }


def test_every_agents_option_is_documented():
    from pathlib import Path

    options = _agents_options()
    assert {"--display-name", "--password-stdin", "--replace", "--agents-file"} <= options
    text = (Path(__file__).resolve().parent.parent / "docs" / "configuration.md").read_text(encoding="utf-8")
    section = text.split("### `widget-server agents`", 1)[1]
    assert [option for option in sorted(options) if f"`{option}" not in section] == []


def test_serving_with_a_corrupt_agents_file_stops_at_once_naming_it(tmp_path):
    path = tmp_path / "agents.json"
    path.write_text('{"agents": 3}', encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "widget_server", "--port", "0"],
        capture_output=True,
        text=True,
        env=env_with(path),
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stderr.strip() == (
        f'widget-server: error: AGENTS_FILE: the agents file {path} is not an agents file: expected {{"agents": [...]}}'
    )
