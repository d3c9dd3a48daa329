"""`widget-server feedback export` (docs/configuration.md): the site owner's JSON Lines of every rating.

Feedback is written through the API of a live server on a real redis-server, then the real
command (the installed console script, in its own process) reads the same Redis, as an
operator would run it next to the server. The memory store cannot be read from another
process: the command says so in one line, with no traceback.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from .helpers import ChatClient
from .redis_support import free_port

QUESTION = "which arpeggio fits Am F C G"
FIELDS = {"conversation_id", "message_id", "rating", "comment", "question", "answer", "time"}


def widget_server_command() -> list[str]:
    """The installed `widget-server` script next to this interpreter, else `python -m widget_server`."""
    script = Path(sys.executable).with_name("widget-server")
    return [str(script)] if script.exists() else [sys.executable, "-m", "widget_server"]


def run_cli(*args: str, store: str | None = None) -> subprocess.CompletedProcess[bytes]:
    # Only what a shell would give it: no WIDGET_SERVER_* from the test's environment.
    env = {key: value for key, value in os.environ.items() if not key.startswith("WIDGET_SERVER_")}
    command = [*widget_server_command(), "feedback", "export", *args]
    if store is not None:
        command += ["--store", store]
    return subprocess.run(command, capture_output=True, env=env, timeout=60, check=False)


def exported(*args: str, store: str) -> list[dict]:
    done = run_cli(*args, store=store)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stderr == b""
    text = done.stdout.decode("utf-8")  # UTF-8, non-ASCII as is
    assert text == "" or text.endswith("\n")
    rows = [json.loads(line) for line in text.splitlines()]
    for row in rows:
        assert set(row) == FIELDS, row
    return rows


def rate(chat: ChatClient, message_id: str, rating: str, comment: str = "") -> dict:
    response = chat.http.put(
        f"{chat.messages_url()}/{message_id}/feedback", json={"rating": rating, "comment": comment}, headers=chat.auth
    )
    assert response.status_code == 200, response.text
    return response.json()


def test_export_writes_every_rating_with_its_question_and_answer(live_server_factory, chat_factory, redis_server):
    redis_server.flush()  # the export reads the whole store: only this test's feedback in it
    server = live_server_factory(STORE=redis_server.url)
    first_chat = chat_factory(server)
    one = first_chat.send(QUESTION, "r1")
    two = first_chat.send("/help", "r2")
    failed = first_chat.send("/scenario fail-provider", "r3")
    second_chat = chat_factory(server)
    three = second_chat.send("¿Qué acorde es Cmaj7?", "r1")
    unrated = second_chat.send("/help", "r2")
    assert unrated.kinds[-1] == "message.completed"

    rate(first_chat, one.message_id, "up")
    first = rate(first_chat, one.message_id, "up", "Clear — ¡gracias! 👍")  # replaced: exported once
    rate(first_chat, failed.message_id, "down", "it broke")
    rate(second_chat, three.message_id, "down")
    between = time.time()
    later = rate(first_chat, two.message_id, "down", "not what I asked")

    rows = exported(store=redis_server.url)

    assert [row["message_id"] for row in rows] == [
        one.message_id,
        failed.message_id,
        three.message_id,
        two.message_id,
    ]  # oldest first
    assert rows[0] == {
        "conversation_id": first_chat.conversation_id,
        "message_id": one.message_id,
        "rating": "up",
        "comment": "Clear — ¡gracias! 👍",
        "question": QUESTION,
        "answer": one.text,
        "time": first["updated_at"],
    }
    assert rows[1]["answer"] == failed.text and rows[1]["question"] == "/scenario fail-provider"
    assert rows[2]["conversation_id"] == second_chat.conversation_id
    assert rows[2]["question"] == "¿Qué acorde es Cmaj7?" and rows[2]["answer"] == three.text
    assert rows[2]["comment"] == ""
    assert rows[3]["time"] == later["updated_at"] and rows[3]["rating"] == "down"

    # --since: an ISO date and time (to the microsecond), a date, a day still to come.
    since = datetime.fromtimestamp(between, UTC).isoformat().replace("+00:00", "Z")
    assert [row["message_id"] for row in exported("--since", since, store=redis_server.url)] == [two.message_id]
    today = datetime.now(UTC).date()
    assert len(exported("--since", today.isoformat(), store=redis_server.url)) == 4
    assert exported("--since", (today + timedelta(days=1)).isoformat(), store=redis_server.url) == []

    # A removed rating and a deleted conversation are no longer exported.
    response = first_chat.http.delete(f"{first_chat.messages_url()}/{two.message_id}/feedback", headers=first_chat.auth)
    assert response.status_code == 204
    response = second_chat.http.delete(f"/api/v1/conversations/{second_chat.conversation_id}", headers=second_chat.auth)
    assert response.status_code == 204
    assert [row["message_id"] for row in exported(store=redis_server.url)] == [one.message_id, failed.message_id]


def test_export_reads_the_store_from_the_environment_too(live_server_factory, chat_factory, redis_server):
    redis_server.flush()
    server = live_server_factory(STORE=redis_server.url)
    chat = chat_factory(server)
    answer = chat.send("/help", "r1")
    rate(chat, answer.message_id, "up")
    env = {key: value for key, value in os.environ.items() if not key.startswith("WIDGET_SERVER_")}
    env["WIDGET_SERVER_STORE"] = redis_server.url
    done = subprocess.run(
        [*widget_server_command(), "feedback", "export"], capture_output=True, env=env, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr.decode()
    assert [json.loads(line)["message_id"] for line in done.stdout.decode().splitlines()] == [answer.message_id]


@pytest.mark.parametrize(
    "args,store,status,says",
    [
        # The default store, and the memory store named: it lives in the server's process.
        ((), None, 2, "STORE is `memory`"),
        ((), "memory", 2, "STORE is `memory`"),
        (("--since", "last tuesday"), "redis://127.0.0.1:1/0", 2, "argument --since"),
        (("--since", "2026-13-01"), "redis://127.0.0.1:1/0", 2, "argument --since"),
        ((), "postgres://db", 2, "STORE"),
    ],
)
def test_export_refuses_what_it_cannot_read_in_one_line(args, store, status, says):
    done = run_cli(*args, store=store)
    assert done.returncode == status
    assert done.stdout == b""
    stderr = done.stderr.decode()
    assert says in stderr, stderr
    assert "Traceback" not in stderr
    assert stderr.strip().splitlines()[-1].startswith("widget-server"), stderr


def test_export_says_when_redis_cannot_be_reached():
    done = run_cli(store=f"redis://127.0.0.1:{free_port()}/0")
    stderr = done.stderr.decode()
    assert done.returncode == 1, stderr
    assert done.stdout == b""
    assert stderr.startswith("widget-server: error: the store cannot be reached"), stderr
    assert "Traceback" not in stderr and len(stderr.strip().splitlines()) == 1
