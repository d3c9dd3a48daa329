"""`widget-server data export|erase --subject SUB` (docs/privacy.md, "Answering a request"), run as
a real subprocess against a real redis-server and a real Redis Cluster holding what a live
server stored: the export is the subject's records and none of another's, a conversation the
subject's list let go is found by the walk of the store, erase asks to be confirmed and then
leaves no key naming the subject while the others' stay; bad input is one line, never a
traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import TEST_CONFIG
from .helpers import LiveServer
from .privacy_support import PRIVACY_CONFIG, realistic_conversation, redis_traces, subject_digest, token_for
from .redis_support import keyspace_of, redis_client


def widget_server_command() -> list[str]:
    """The installed `widget-server` script next to this interpreter, else `python -m widget_server`."""
    script = Path(sys.executable).with_name("widget-server")
    return [str(script)] if script.exists() else [sys.executable, "-m", "widget_server"]


def run_data(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    # Only what a shell would give it: no WIDGET_SERVER_* from the test's environment.
    env = {key: value for key, value in os.environ.items() if not key.startswith("WIDGET_SERVER_")}
    return subprocess.run(
        [*widget_server_command(), "data", *args], input=stdin, capture_output=True, env=env, timeout=120, check=False
    )


@pytest.fixture(params=["redis", "cluster"])
def stored(request):
    """A live server on a real Redis (or cluster), emptied first, with Ada's two conversations,
    Bob's one and an anonymous one; the CLI runs against its store."""
    redis = request.getfixturevalue("redis_cluster" if request.param == "cluster" else "redis_server")
    redis.flush()
    server = LiveServer({**TEST_CONFIG, **PRIVACY_CONFIG, "STORE": redis.url}).start()
    ada_token = token_for("ada-cli", name="Ada")
    made = {
        "ada": [realistic_conversation(server, ada_token, tag=f"cli{i}") for i in range(2)],
        "bob": [realistic_conversation(server, token_for("bob-cli"), tag="clib")],
        "anonymous": [realistic_conversation(server, None, tag="clin")],
    }
    yield server, redis.url, made
    server.stop()


def test_export_writes_the_subjects_records_even_those_its_list_let_go(stored, tmp_path):
    _server, url, made = stored
    # The list keeps the newest entries only: one of Ada's conversations taken off it is still hers.
    client = redis_client(url)
    client.zrem(keyspace_of(url).subject("ada-cli"), made["ada"][0].conversation_id)
    client.close()
    done = run_data("export", "--subject", "ada-cli", "--store", url)
    assert done.returncode == 0, done.stderr.decode()
    records = [json.loads(line) for line in done.stdout.decode("utf-8").splitlines()]
    assert {record["conversation_id"] for record in records} == {m.conversation_id for m in made["ada"]}
    assert sorted({record["kind"] for record in records}) == sorted(
        ["conversation", "message", "rating", "attachment", "handoff_message", "left_message"]
    )
    assert len(records) == 24
    whole = done.stdout.decode("utf-8")
    assert not any(name in whole for other in (*made["bob"], *made["anonymous"]) for name in other.names)
    # --output FILE: the same lines in the file, nothing on stdout.
    output = tmp_path / "ada.jsonl"
    done = run_data("export", "--subject", "ada-cli", "--store", url, "--output", str(output))
    assert done.returncode == 0 and done.stdout == b"", done.stderr.decode()
    assert len(output.read_text(encoding="utf-8").splitlines()) == 24


def test_erase_asks_then_deletes_everything_of_the_subject(stored):
    server, url, made = stored
    ada_names = {name for m in made["ada"] for name in m.names} | {subject_digest("ada-cli")}
    assert redis_traces(server, ada_names)
    # Not on a terminal and no --yes: refused, nothing deleted.
    refused = run_data("erase", "--subject", "ada-cli", "--store", url)
    assert refused.returncode == 2
    assert refused.stderr.decode().strip() == (
        "widget-server: error: erase deletes the subject's data for good: confirm with --yes"
    )
    assert redis_traces(server, ada_names)

    done = run_data("erase", "--subject", "ada-cli", "--store", url, "--yes")
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode().strip() == (
        "Deleted: 2 conversations, 12 messages, 2 ratings, 2 attachments, 4 handoff messages, 2 left messages, 0 satisfactions"
    )
    assert redis_traces(server, ada_names) == []
    for other in (*made["bob"], *made["anonymous"]):
        assert redis_traces(server, {other.conversation_id})
    again = run_data("export", "--subject", "ada-cli", "--store", url)
    assert again.returncode == 0 and again.stdout == b""
    bob = run_data("export", "--subject", "bob-cli", "--store", url)
    assert len(bob.stdout.splitlines()) == 12


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["export", "--subject", "ada", "--store", "memory"],
            "widget-server: error: data export works on a shared store",
        ),
        (["erase", "--subject", "ada", "--yes"], "widget-server: error: data erase works on a shared store"),
        (["export", "--subject", " ", "--store", "redis://127.0.0.1:1/0"], "a subject is the identity token's `sub`"),
        (["export", "--subject", "x" * 201, "--store", "redis://127.0.0.1:1/0"], "1 to 200 characters"),
        (["export", "--store", "redis://127.0.0.1:1/0"], "the following arguments are required: --subject"),
        (["export", "--subject", "ada", "--store", "redis://127.0.0.1:1/0"], "the store cannot be reached"),
    ],
)
def test_bad_input_is_one_clear_line(args, message):
    done = run_data(*args)
    stderr = done.stderr.decode()
    assert done.returncode in (1, 2), stderr
    assert message in stderr
    assert "Traceback" not in stderr


def run_on_a_terminal(args: list[str], answer: bytes) -> tuple[int, str]:
    """`widget-server data …` with a terminal for stdin and stdout (a pty), `answer` typed at
    its question; its exit status and all it wrote."""
    import pty
    import select

    env = {key: value for key, value in os.environ.items() if not key.startswith("WIDGET_SERVER_")}
    controller, terminal = pty.openpty()
    process = subprocess.Popen(
        [*widget_server_command(), "data", *args], stdin=terminal, stdout=terminal, stderr=terminal, env=env
    )
    os.close(terminal)
    written = b""
    answered = False
    try:
        while True:
            ready, _, _ = select.select([controller], [], [], 60)
            if not ready:
                break
            try:
                chunk = os.read(controller, 4096)
            except OSError:  # the child closed the terminal: it has exited
                break
            if not chunk:
                break
            written += chunk
            if not answered and b"[y/N]" in written:
                os.write(controller, answer)
                answered = True
        return process.wait(timeout=60), written.decode("utf-8", "replace")
    finally:
        os.close(controller)
        if process.poll() is None:
            process.kill()


def test_erase_on_a_terminal_asks_and_does_nothing_unless_told_yes(stored):
    server, url, made = stored
    ada_names = {name for m in made["ada"] for name in m.names}
    status, said = run_on_a_terminal(["erase", "--subject", "ada-cli", "--store", url], b"n\n")
    assert "Delete every conversation of 'ada-cli' and all that goes with them? [y/N]" in said
    assert status == 1 and "Nothing deleted." in said
    assert redis_traces(server, ada_names)
    status, said = run_on_a_terminal(["erase", "--subject", "ada-cli", "--store", url], b"y\n")
    assert status == 0 and "Deleted: 2 conversations" in said, said
    assert redis_traces(server, ada_names) == []
