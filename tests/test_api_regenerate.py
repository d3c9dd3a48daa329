"""POST …/messages/{message_id}/regenerate (docs/protocol.md, "Regenerate and edit"), on the
memory store and on Redis: a new answer to the last turn, streamed like a send, idempotent
on its request_id, replacing the old answer in the history and in what the backend sees.

Backend runs and the history each run was given are observed with tests/revision_support.py
ScriptedBackend, whose every answer differs, so the old answer is told from the new one.
"""

from __future__ import annotations

import threading

import pytest

from .helpers import (
    ChatClient,
    StreamResult,
    assert_completed,
    assert_json_error,
    assert_sound_events,
    message_state,
    wait_until,
)
from .revision_support import edit, history_ids, listed, regenerate, same_conversation, scripted


def test_regenerate_streams_a_new_answer_that_replaces_the_old_one(live_server, chat_factory):
    backend = scripted(live_server)
    chat = chat_factory(live_server)
    first = assert_completed(chat.send("q1", "r1"))
    second = assert_completed(chat.send("q2", "r2"))
    user_ids = history_ids(chat)[0::2]

    new = assert_completed(regenerate(chat, second.message_id, "r3"))

    assert new.message_id != second.message_id
    assert new.text == "q2 #3."
    assert new.headers["content-type"].startswith("text/event-stream")
    assert new.headers["cache-control"] == "no-store"
    # The backend answered the same user turn, with only the turns before it as history.
    assert backend.turns[-1].text == "q2"
    assert backend.turns[-1].message_id == new.message_id
    assert backend.turns[-1].history == [("user", "q1"), ("assistant", "q1 #1.")]
    # The history lists the new answer in the old one's place; the user turn is the same one.
    assert listed(chat) == [
        ("user", "q1", "completed"),
        ("assistant", "q1 #1.", "completed"),
        ("user", "q2", "completed"),
        ("assistant", "q2 #3.", "completed"),
    ]
    assert history_ids(chat) == [user_ids[0], first.message_id, user_ids[1], new.message_id]
    # The old answer stays in the store (diagnostics), ended as it was.
    assert message_state(chat, second.message_id) == "completed"

    # The next turn's backend sees the new answer, never the old one.
    assert_completed(chat.send("q3", "r4"))
    assert backend.turns[-1].history == [
        ("user", "q1"),
        ("assistant", "q1 #1."),
        ("user", "q2"),
        ("assistant", "q2 #3."),
    ]
    assert backend.runs == 4


def test_regenerate_twice_keeps_one_answer_in_the_history(live_server, chat_factory):
    backend = scripted(live_server)
    chat = chat_factory(live_server)
    only = assert_completed(chat.send("q1", "r1"))
    again = assert_completed(regenerate(chat, only.message_id, "r2"))
    third = assert_completed(regenerate(chat, again.message_id, "r3"))
    assert backend.turns[-1].history == []  # the only turn is the one being answered
    assert listed(chat) == [("user", "q1", "completed"), ("assistant", "q1 #3.", "completed")]
    assert history_ids(chat)[1] == third.message_id
    # A replaced answer is no longer the last one.
    refused = regenerate(chat, only.message_id, "r4")
    assert refused.status == 409 and refused.json["error"]["code"] == "not_last_answer"


def test_a_retry_with_the_same_request_id_streams_the_same_answer_and_starts_nothing(live_server, chat_factory):
    backend = scripted(live_server)
    chat = chat_factory(live_server)
    old = assert_completed(chat.send("q1", "r1"))
    first = assert_completed(regenerate(chat, old.message_id, "regen-1"))
    retry = assert_completed(regenerate(chat, old.message_id, "regen-1"))

    assert retry.message_id == first.message_id
    assert retry.payloads == first.payloads  # the same log replayed: same seqs, same digest
    assert backend.runs == 2  # the send and one regenerate
    assert len(listed(chat)) == 2


def test_concurrent_retries_run_the_backend_once(live_server, chat_factory):
    backend = scripted(live_server)
    chat = chat_factory(live_server)
    old = assert_completed(chat.send("q1", "r1"))
    twin = same_conversation(chat)
    barrier = threading.Barrier(2)
    results: dict[str, StreamResult] = {}
    errors: list[BaseException] = []

    def post(name: str, client: ChatClient) -> None:
        try:
            barrier.wait(timeout=5)
            results[name] = regenerate(client, old.message_id, "same-regen")
        except BaseException as error:  # reported below, not lost in the thread
            errors.append(error)

    threads = [threading.Thread(target=post, args=(name, c)) for name, c in (("a", chat), ("b", twin))]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=20)
    finally:
        twin.close()
    assert not errors, errors
    a, b = assert_completed(results["a"]), assert_completed(results["b"])
    assert a.message_id == b.message_id and a.text == b.text == "q1 #2."
    assert backend.runs == 2


def test_racing_regenerates_with_different_request_ids_replace_the_turn_once(
    live_server_factory, chat_factory, store_kind
):
    """Two regenerates of one answer: one wins, the other is told its target is no longer
    the last answer. On Redis the two run on two servers (no lock in common: only the
    store's one Lua script decides); in memory, on one."""
    first_server = live_server_factory()
    second_server = live_server_factory() if store_kind != "memory" else first_server
    backends = (
        [scripted(first_server)]
        if second_server is first_server
        else [scripted(s) for s in (first_server, second_server)]
    )
    chat = chat_factory(first_server)
    old = assert_completed(chat.send("q1", "r1"))
    twin = same_conversation(chat, second_server.url)
    barrier = threading.Barrier(2)
    results: dict[str, StreamResult] = {}
    errors: list[BaseException] = []

    def post(name: str, client: ChatClient) -> None:
        try:
            barrier.wait(timeout=5)
            results[name] = regenerate(client, old.message_id, f"regen-{name}")
        except BaseException as error:  # reported below, not lost in the thread
            errors.append(error)

    threads = [threading.Thread(target=post, args=(name, c)) for name, c in (("a", chat), ("b", twin))]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=20)
    finally:
        twin.close()
    assert not errors, errors
    statuses = sorted(result.status for result in results.values())
    assert statuses == [200, 409], [(r.status, r.json) for r in results.values()]
    winner = next(r for r in results.values() if r.status == 200)
    loser = next(r for r in results.values() if r.status == 409)
    assert loser.json["error"]["code"] == "not_last_answer"
    assert_completed(winner)
    assert sum(backend.runs for backend in backends) == 2
    assert history_ids(chat)[1] == winner.message_id


def test_a_request_id_used_for_another_request_is_a_conflict(live_server, chat_factory):
    scripted(live_server)
    chat = chat_factory(live_server)
    first = assert_completed(chat.send("q1", "r1"))
    # A send's request id is not a regenerate's.
    reused = regenerate(chat, first.message_id, "r1")
    assert reused.status == 409 and reused.json["error"]["code"] == "request_id_conflict"
    new = assert_completed(regenerate(chat, first.message_id, "regen"))
    # Nor is it an edit's, or a send's, afterwards.
    user_id = history_ids(chat)[0]
    assert edit(chat, user_id, "regen", "q1").json["error"]["code"] == "request_id_conflict"
    assert chat.send("q1", "regen").json["error"]["code"] == "request_id_conflict"
    assert history_ids(chat)[1] == new.message_id


def test_only_the_last_answer_may_be_regenerated(live_server, chat_factory):
    backend = scripted(live_server)
    chat = chat_factory(live_server)
    first = assert_completed(chat.send("q1", "r1"))
    assert_completed(chat.send("q2", "r2"))
    refused = regenerate(chat, first.message_id, "r3")
    assert refused.status == 409 and refused.json["error"]["code"] == "not_last_answer"
    assert "last answer" in refused.json["error"]["message"]
    assert backend.runs == 2 and len(listed(chat)) == 4


def test_an_answer_still_generating_cannot_be_regenerated(live_server, chat_factory):
    backend = scripted(live_server)
    backend.gate = threading.Event()
    chat = chat_factory(live_server)
    running = chat.send("q1", "r1", max_events=2)  # started, first delta: then the reader leaves
    assert running.kinds == ["message.started", "text.delta"]
    refused = regenerate(chat, running.message_id, "r2")
    assert refused.status == 409 and refused.json["error"]["code"] == "message_not_finished"
    backend.gate.set()
    assert wait_until(lambda: message_state(chat, running.message_id) == "completed")
    assert_completed(regenerate(chat, running.message_id, "r2"))
    assert backend.runs == 2


def test_a_failed_or_cancelled_answer_may_be_regenerated(live_server, chat_factory):
    backend = scripted(live_server)
    chat = chat_factory(live_server)
    backend.fail_next = True
    failed = chat.send("q1", "r1")
    assert failed.kinds[-1] == "message.failed"
    assert listed(chat) == []  # a failed turn is never listed
    new = assert_completed(regenerate(chat, failed.message_id, "r2"))
    assert new.text == "q1 #2."
    assert listed(chat) == [("user", "q1", "completed"), ("assistant", "q1 #2.", "completed")]


def test_a_regenerate_that_fails_leaves_the_old_answer_listed(live_server, chat_factory):
    """A replacement that fails (or is stopped) is not listed, so it hides nothing: the
    turn stays as it was, as a failed send leaves the history as it was."""
    backend = scripted(live_server)
    chat = chat_factory(live_server)
    old = assert_completed(chat.send("q1", "r1"))
    backend.fail_next = True
    failed = regenerate(chat, old.message_id, "r2")
    assert failed.kinds[-1] == "message.failed"
    assert listed(chat) == [("user", "q1", "completed"), ("assistant", "q1 #1.", "completed")]
    assert history_ids(chat)[1] == old.message_id
    # The old answer is the last listed one again: it may be regenerated once more, and
    # then the failed one has a later listed turn.
    again = assert_completed(regenerate(chat, old.message_id, "r3"))
    assert backend.turns[-1].history == []
    assert listed(chat) == [("user", "q1", "completed"), ("assistant", "q1 #3.", "completed")]
    assert history_ids(chat)[1] == again.message_id
    assert regenerate(chat, failed.message_id, "r4").json["error"]["code"] == "not_last_answer"


def test_regenerating_a_failed_replacement_replaces_the_whole_turn(live_server, chat_factory):
    backend = scripted(live_server)
    chat = chat_factory(live_server)
    old = assert_completed(chat.send("q1", "r1"))
    backend.fail_next = True
    failed = regenerate(chat, old.message_id, "r2")
    assert failed.kinds[-1] == "message.failed"
    last = assert_completed(regenerate(chat, failed.message_id, "r3"))
    assert backend.turns[-1].history == []  # neither the old answer nor the failed one
    assert listed(chat) == [("user", "q1", "completed"), ("assistant", "q1 #3.", "completed")]
    assert history_ids(chat)[1] == last.message_id
    assert_completed(chat.send("q2", "r4"))
    assert backend.turns[-1].history == [("user", "q1"), ("assistant", "q1 #3.")]


def test_the_new_answer_resumes_like_any_answer(live_server, chat_factory):
    backend = scripted(live_server)
    chat = chat_factory(live_server)
    old = assert_completed(chat.send("q1", "r1"))
    backend.gate = threading.Event()
    cut = regenerate(chat, old.message_id, "r2", max_events=2)  # the connection drops after 2 events
    assert cut.kinds == ["message.started", "text.delta"]
    backend.gate.set()
    resumed = chat.resume(cut.message_id, cut.events[-1].id)
    assert resumed.status == 200
    assert resumed.kinds == ["text.delta", "message.completed"]
    assert_sound_events(resumed, cut.message_id)
    assert resumed.payloads[0]["seq"] == cut.payloads[-1]["seq"] + 1
    assert cut.text + resumed.text == "q1 #2."
    # A retry of the POST may say where it got to, exactly like a send's.
    retried = regenerate(chat, old.message_id, "r2", headers={"Last-Event-ID": cut.events[-1].id})
    assert retried.kinds == ["text.delta", "message.completed"]
    assert retried.payloads == resumed.payloads
    assert backend.runs == 2


def test_an_unknown_or_foreign_message_is_not_found(live_server, chat_factory):
    backend = scripted(live_server)
    chat = chat_factory(live_server)
    mine = assert_completed(chat.send("q1", "r1"))
    other = chat_factory(live_server)
    theirs = assert_completed(other.send("q2", "r1"))
    user_id = history_ids(chat)[0]
    for message_id in (theirs.message_id, "m_unknown000000000000", user_id):
        result = regenerate(chat, message_id, f"r-{message_id}")
        assert result.status == 404 and result.json["error"]["code"] == "not_found", (message_id, result.json)
    # A malformed id is refused while routing, the same way.
    malformed = chat.http.post(
        f"{chat.messages_url()}/bad%20id/regenerate", json={"request_id": "x"}, headers=chat.auth
    )
    assert_json_error(malformed, 404, "not_found")
    assert backend.runs == 2
    assert history_ids(chat)[1] == mine.message_id


@pytest.mark.parametrize("token", [None, "wrong-token"])
def test_without_the_conversation_token_nothing_is_found(live_server, chat_factory, token):
    backend = scripted(live_server)
    chat = chat_factory(live_server)
    old = assert_completed(chat.send("q1", "r1"))
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    response = chat.http.post(
        f"{chat.messages_url()}/{old.message_id}/regenerate", json={"request_id": "r2"}, headers=headers
    )
    assert_json_error(response, 404, "not_found")
    assert backend.runs == 1 and history_ids(chat)[1] == old.message_id


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({}, 400, "missing_request_id"),
        ({"request_id": ""}, 400, "missing_request_id"),
        ({"request_id": "has space"}, 400, "invalid_request_id"),
        ({"request_id": 7}, 400, "missing_request_id"),
        ({"request_id": "r2", "text": "a regenerate takes no text"}, 400, "unknown_field"),
        ([], 400, "invalid_body"),
    ],
)
def test_a_malformed_body_is_refused_before_anything_starts(live_server, chat_factory, body, status, code):
    backend = scripted(live_server)
    chat = chat_factory(live_server)
    old = assert_completed(chat.send("q1", "r1"))
    response = chat.http.post(f"{chat.messages_url()}/{old.message_id}/regenerate", json=body, headers=chat.auth)
    assert_json_error(response, status, code)
    assert backend.runs == 1 and history_ids(chat)[1] == old.message_id


def test_a_body_that_is_not_json_is_refused(live_server, chat_factory):
    scripted(live_server)
    chat = chat_factory(live_server)
    old = assert_completed(chat.send("q1", "r1"))
    response = chat.http.post(
        f"{chat.messages_url()}/{old.message_id}/regenerate",
        content=b"request_id=r2",
        headers={**chat.auth, "Content-Type": "application/x-www-form-urlencoded"},
    )
    assert_json_error(response, 415)


def test_faults_apply_as_to_a_send(live_server_factory, chat_factory):
    """The X-Chat-Faults header is handled as a send's (api.stream_new_answer): refused where
    the FAULTS setting is off, applied to the new answer's stream where it is on."""
    server = live_server_factory()
    scripted(server)
    chat = chat_factory(server)
    old = assert_completed(chat.send("q1", "r1"))
    refused = regenerate(chat, old.message_id, "r2", headers={"X-Chat-Faults": "drop-after=1"})
    assert refused.status == 403 and refused.json["error"]["code"] == "faults_disabled"
    assert history_ids(chat)[1] == old.message_id

    faulty_server = live_server_factory(FAULTS=True)
    scripted(faulty_server)
    faulty = chat_factory(faulty_server)
    old = assert_completed(faulty.send("q1", "r1"))
    dropped = regenerate(faulty, old.message_id, "r2", headers={"X-Chat-Faults": "drop-after=1"})
    assert dropped.kinds == ["message.started"]  # cut without a terminal event: the client resumes
    assert wait_until(lambda: message_state(faulty, dropped.message_id) == "completed")
    rest = faulty.resume(dropped.message_id, dropped.events[-1].id)
    assert rest.kinds[-1] == "message.completed" and rest.text == "q1 #2."


def test_regenerate_spends_the_conversations_message_quota(live_server_factory, chat_factory):
    """A regenerate starts an answer, so it counts as a send (ratelimits.py): with a quota of
    two messages per conversation, a send and a regenerate spend it."""
    import random

    server = live_server_factory(
        RATE_LIMITS=True,
        PROXY_HOPS=1,
        RATE_LIMIT_CLIENT="",
        RATE_LIMIT_NEW_CONVERSATIONS="",
        RATE_LIMIT_MESSAGES_CLIENT="",
        RATE_LIMIT_MESSAGES_CONVERSATION="2/minute",
    )
    backend = scripted(server)
    chat = ChatClient(server.url)
    # A fresh address: counters in Redis outlive a test's servers (tests/test_api_ratelimits.py).
    chat.http.headers["X-Forwarded-For"] = f"10.{random.randrange(256)}.{random.randrange(256)}.7"
    chat.new_conversation()
    try:
        old = assert_completed(chat.send("q1", "r1"))
        new = assert_completed(regenerate(chat, old.message_id, "r2"))
        refused = regenerate(chat, new.message_id, "r3")
        assert refused.status == 429
        assert refused.json["error"]["code"] == "rate_limited"
        assert refused.json["error"]["details"]["limit"] == "messages_conversation"
        assert 1 <= int(refused.headers["retry-after"]) <= 60
        assert backend.runs == 2 and history_ids(chat)[1] == new.message_id
    finally:
        chat.close()
