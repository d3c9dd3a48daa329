"""Actions: proposed with an answer, actionable only once it completed, executed exactly once.

docs/design.md ("Partial answers never trigger actions"): a tool's effect
needs its own idempotent action id, a permission check and a visible
confirmation, and a reconnection never runs the same effect again; and case 5
of "The cases every change must keep passing": cancel while an action is
being prepared, with no effect executed.

Named tests/test_api_*.py, so every test runs on the memory store and on a
real redis-server. Effects are counted where they land: the built-in
`callback_request` action appends one line per execution to
ACTIONS_RECORD_PATH.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from widget_server.actions import ActionError, CallbackRequest, InvalidArguments
from widget_server.actions import service as actions
from widget_server.backends.base import ActionProposal
from widget_server.backends.demo import ACTION_ARGUMENTS
from widget_server.errors import ChatError
from widget_server.services import SERVICES_KEY

from .helpers import ChatClient, assert_json_error, assert_sound_events, http_client, wait_until


def record_lines(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture
def record(tmp_path) -> Path:
    return tmp_path / "actions.jsonl"


@pytest.fixture
def server(live_server_factory, record):
    return live_server_factory(ACTIONS_RECORD_PATH=str(record))


def action_url(chat: ChatClient, message_id: str, action_id: str, verb: str) -> str:
    return f"{chat.messages_url()}/{message_id}/actions/{action_id}/{verb}"


def confirm(chat: ChatClient, message_id: str, action_id: str, key: str | None = "key-1", **kwargs) -> httpx.Response:
    headers = {**chat.auth, **({"Idempotency-Key": key} if key is not None else {}), **kwargs.pop("headers", {})}
    return chat.http.post(action_url(chat, message_id, action_id, "confirm"), headers=headers, **kwargs)


def dismiss(chat: ChatClient, message_id: str, action_id: str) -> httpx.Response:
    return chat.http.post(action_url(chat, message_id, action_id, "dismiss"), headers=chat.auth)


def list_actions(chat: ChatClient) -> httpx.Response:
    return chat.http.get(f"/api/v1/conversations/{chat.conversation_id}/actions", headers=chat.auth)


def proposed(chat: ChatClient, request_id: str = "r-action") -> tuple[str, dict]:
    """Send `/scenario action`; the completed answer's message id and its one proposal."""
    result = chat.send("/scenario action", request_id)
    assert result.kinds[-1] == "message.completed", result.kinds
    (proposal,) = result.payloads[-1]["actions"]
    return result.message_id, proposal


class SlowCallback(CallbackRequest):
    """The real action, slowed down (so concurrent confirms overlap its execution) and counted."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.calls = 0
        self._count = threading.Lock()

    def execute(self, arguments, context):
        with self._count:
            self.calls += 1
        time.sleep(self.delay)
        return super().execute(arguments, context)


def installed_actions(server) -> dict:
    """The server's installed actions (loaded once per application: widget_server/services.py)."""
    return server.app.extensions[SERVICES_KEY].chat.actions


@pytest.fixture
def slow_callback(monkeypatch):
    """install(delay, *servers): one slow handler as the servers' `callback_request` action."""

    def install(delay: float, *servers) -> SlowCallback:
        handler = SlowCallback(delay)
        for server in servers:
            monkeypatch.setitem(installed_actions(server), "callback_request", handler)
        return handler

    return install


# -- the happy path ------------------------------------------------------------------------------


def test_the_proposal_travels_with_the_answer_and_runs_once_when_confirmed(server, chat_factory, record):
    chat = chat_factory(server)
    result = chat.send("/scenario action", "r1")
    assert_sound_events(result)
    assert result.kinds == ["message.started", "text.delta", "text.delta", "action.proposed", "message.completed"]
    announced = result.payloads[3]
    listed = result.payloads[-1]["actions"]
    assert listed == [{k: v for k, v in announced.items() if k not in ("message_id", "seq")}]
    (proposal,) = listed
    assert proposal["name"] == "callback_request"
    assert proposal["arguments"] == ACTION_ARGUMENTS
    assert proposal["label"] == "Request a call back"
    assert proposal["description"] == "Request a call back to Ana García at +34 600 123 456, preferably mornings."
    assert proposal["action_id"].startswith("a_")
    # The text is what was streamed, untouched by the proposal.
    assert (
        result.text
        == "I can ask our team to call you back. Check the details below, then confirm or dismiss the request.\n"
    )
    assert record_lines(record) == []  # proposing runs nothing

    listing = list_actions(chat)
    assert listing.status_code == 200
    assert [a["status"] for a in listing.json()["actions"]] == ["proposed"]

    response = confirm(chat, result.message_id, proposal["action_id"], "key-1")
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["status"] == "succeeded"
    assert body["result"] == {"reference": proposal["action_id"]}
    assert body["message_id"] == result.message_id and body["arguments"] == ACTION_ARGUMENTS
    (line,) = record_lines(record)
    assert line["action_id"] == proposal["action_id"] and line["message_id"] == result.message_id
    assert {k: line[k] for k in ACTION_ARGUMENTS} == ACTION_ARGUMENTS
    assert [a["status"] for a in list_actions(chat).json()["actions"]] == ["succeeded"]


def test_the_key_may_come_in_the_body(server, chat_factory, record):
    chat = chat_factory(server)
    message_id, proposal = proposed(chat)
    response = confirm(chat, message_id, proposal["action_id"], None, json={"idempotency_key": "body-key"})
    assert response.status_code == 200 and response.json()["status"] == "succeeded"
    again = confirm(chat, message_id, proposal["action_id"], "body-key")  # the same key, as a header
    assert again.json() == response.json()
    assert len(record_lines(record)) == 1


# -- docs/design.md case 5: cancel while the action is being prepared ----------------------------


def test_cancel_while_the_backend_prepares_the_action_executes_nothing(server, chat_factory, record):
    chat = chat_factory(server)
    # Read the first sentence, then leave: the backend is now "preparing the action" (2 s).
    first = chat.send("/scenario action-slow", "r-slow", max_events=2)
    assert first.kinds == ["message.started", "text.delta"]
    message_id = first.message_id
    cancelled = chat.cancel(message_id)
    assert cancelled.status_code == 200 and cancelled.json()["state"] == "cancelled"
    # The run ends (the cancel woke the backend's wait) without ever proposing.
    assert wait_until(lambda: message_id not in server.service._runs, timeout=5)
    time.sleep(0.3)
    rest = chat.resume(message_id, f"{message_id}:2")
    assert rest.kinds == ["message.cancelled"]
    assert server.service.store.message_actions(message_id) == []
    assert list_actions(chat).json()["actions"] == []
    # Nothing to confirm: no id was ever given out, and a guessed one is unknown.
    assert_json_error(confirm(chat, message_id, "a_guessedGuessed00"), 404, "not_found")
    assert record_lines(record) == []
    assert not record.exists()


def test_a_proposal_made_before_a_cancel_is_never_actionable(server, chat_factory, record):
    chat = chat_factory(server)
    early = chat.send("/scenario action-slow", "r-slow", max_events=3)
    assert early.kinds == ["message.started", "text.delta", "action.proposed"]
    message_id, action_id = early.message_id, early.payloads[-1]["action_id"]
    # While the answer still runs, its proposal is not actionable.
    error = assert_json_error(confirm(chat, message_id, action_id), 409, "message_not_completed")
    assert "running" in error["error"]["message"]
    assert chat.cancel(message_id).json()["state"] == "cancelled"
    # Cancelled: never actionable, by confirm or dismiss, and not listed.
    assert_json_error(confirm(chat, message_id, action_id), 409, "message_not_completed")
    assert_json_error(dismiss(chat, message_id, action_id), 409, "message_not_completed")
    assert list_actions(chat).json()["actions"] == []
    full = chat.resume(message_id, None)
    assert full.kinds[-1] == "message.cancelled" and "message.completed" not in full.kinds
    assert wait_until(lambda: message_id not in server.service._runs, timeout=5)
    assert record_lines(record) == []


def test_a_failed_answer_never_offers_its_action(server, chat_factory, record):
    class ProposesThenFails:
        name = "proposes-then-fails"

        def stream(self, turn, cancel):
            yield "I will request a call back. "
            yield ActionProposal("callback_request", dict(ACTION_ARGUMENTS))
            raise ChatError("provider", "upstream died after the proposal")

    server.service.backend = ProposesThenFails()
    chat = chat_factory(server)
    result = chat.send("please call me", "r-fail")
    assert result.kinds == ["message.started", "text.delta", "action.proposed", "message.failed"]
    action_id = result.payloads[2]["action_id"]
    assert "actions" not in result.payloads[-1]
    assert_json_error(confirm(chat, result.message_id, action_id), 409, "message_not_completed")
    assert list_actions(chat).json()["actions"] == []
    assert record_lines(record) == []


# -- exactly once: double click, dropped connection, another key ------------------------------


def test_two_confirms_at_once_with_the_same_key_run_it_once_and_get_the_same_result(
    server, chat_factory, record, slow_callback
):
    handler = slow_callback(0.4, server)
    chat = chat_factory(server)
    message_id, proposal = proposed(chat)
    url = action_url(chat, message_id, proposal["action_id"], "confirm")
    headers = {**chat.auth, "Idempotency-Key": "double-click"}
    start = threading.Barrier(4)
    responses: list[httpx.Response] = []

    def click():
        with http_client(base_url=server.url, timeout=30) as http:
            start.wait()
            responses.append(http.post(url, headers=headers))

    threads = [threading.Thread(target=click) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [r.status_code for r in responses] == [200] * 4, [r.text for r in responses]
    assert all(r.json() == responses[0].json() for r in responses)
    assert responses[0].json()["status"] == "succeeded"
    assert handler.calls == 1
    assert len(record_lines(record)) == 1


def test_a_confirm_retried_after_its_connection_dropped_runs_once(server, chat_factory, record, slow_callback):
    handler = slow_callback(0.5, server)
    chat = chat_factory(server)
    message_id, proposal = proposed(chat)
    path = action_url(chat, message_id, proposal["action_id"], "confirm")
    # Send the confirm on a raw socket and hang up before any response: the
    # client cannot know whether it ran.
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.sendall(
            (
                f"POST {urlsplit(server.url).path}{path} HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
                f"Authorization: Bearer {chat.token}\r\nIdempotency-Key: flaky-1\r\n"
                "Content-Length: 0\r\nConnection: close\r\n\r\n"
            ).encode()
        )
    # It did start; the retry (same key) arrives while it runs, waits, and gets its outcome.
    assert wait_until(lambda: server.service.store.action(proposal["action_id"]).status != "proposed", timeout=5)
    retry = confirm(chat, message_id, proposal["action_id"], "flaky-1")
    assert retry.status_code == 200 and retry.json()["status"] == "succeeded"
    # And once more, after it finished: the same outcome, nothing run again.
    assert confirm(chat, message_id, proposal["action_id"], "flaky-1").json() == retry.json()
    assert handler.calls == 1
    assert len(record_lines(record)) == 1


def test_a_confirm_with_another_key_after_success_is_refused_and_runs_nothing(server, chat_factory, record):
    chat = chat_factory(server)
    message_id, proposal = proposed(chat)
    first = confirm(chat, message_id, proposal["action_id"], "tab-1")
    assert first.status_code == 200
    other = assert_json_error(
        confirm(chat, message_id, proposal["action_id"], "tab-2"), 409, "action_already_confirmed"
    )
    # It says what became of the action, so a client that lost its key can show it.
    assert other["error"]["details"]["action"] == first.json()
    assert_json_error(dismiss(chat, message_id, proposal["action_id"]), 409, "action_already_confirmed")
    assert len(record_lines(record)) == 1


def test_a_failed_execution_is_an_outcome_and_is_never_retried(server, chat_factory, record, monkeypatch):
    class Broken(CallbackRequest):
        calls = 0

        def execute(self, arguments, context):
            Broken.calls += 1
            raise ActionError("the CRM is down")

    monkeypatch.setitem(installed_actions(server), "callback_request", Broken())
    chat = chat_factory(server)
    message_id, proposal = proposed(chat)
    response = confirm(chat, message_id, proposal["action_id"], "k")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "failed" and body["error"]["code"] == "action_failed"
    assert "CRM" not in body["error"]["message"]  # the detail goes to the log only
    assert confirm(chat, message_id, proposal["action_id"], "k").json() == body
    assert_json_error(confirm(chat, message_id, proposal["action_id"], "k2"), 409, "action_already_confirmed")
    assert Broken.calls == 1
    assert record_lines(record) == []


# -- dismiss ---------------------------------------------------------------------------------------


def test_a_dismissed_action_can_never_be_confirmed(server, chat_factory, record):
    chat = chat_factory(server)
    message_id, proposal = proposed(chat)
    first = dismiss(chat, message_id, proposal["action_id"])
    assert first.status_code == 200 and first.json()["status"] == "dismissed"
    assert dismiss(chat, message_id, proposal["action_id"]).json() == first.json()  # idempotent
    refused = assert_json_error(confirm(chat, message_id, proposal["action_id"]), 409, "action_dismissed")
    assert refused["error"]["details"]["action"]["status"] == "dismissed"
    assert [a["status"] for a in list_actions(chat).json()["actions"]] == ["dismissed"]
    assert record_lines(record) == []


# -- validation and permission ----------------------------------------------------------------------


def test_invalid_arguments_are_refused_when_proposed(server, chat_factory, record):
    chat = chat_factory(server)
    result = chat.send("/scenario action-invalid", "r-invalid")
    # Never stored, never announced: the answer fails as `validation`.
    assert result.kinds == ["message.started", "text.delta", "message.failed"]
    assert result.payloads[-1]["error"]["code"] == "validation"
    assert server.service.store.message_actions(result.message_id) == []
    assert list_actions(chat).json()["actions"] == []
    assert record_lines(record) == []


@pytest.mark.parametrize(
    "arguments",
    [
        {"name": "Ana", "phone": "12"},  # too few digits
        {"name": "", "phone": "+34 600 123 456"},
        {"name": "A" * 101, "phone": "+34 600 123 456"},
        {"name": "Ana", "phone": "+34 600 123 456", "email": "ana@example.com"},  # unknown argument
        {"name": "Ana\u2028", "phone": "+34 600 123 456"},  # a control character
        {"name": "Ana"},
        {"name": 5, "phone": "+34 600 123 456"},
        ["Ana", "+34 600 123 456"],
    ],
)
def test_invalid_proposals_fail_the_answer_with_validation(server, chat_factory, arguments):
    class Proposes:
        name = "proposes"

        def stream(self, turn, cancel):
            yield "Shall I? "
            yield ActionProposal("callback_request", arguments)

    server.service.backend = Proposes()
    result = chat_factory(server).send("call me", "r")
    assert result.kinds == ["message.started", "text.delta", "message.failed"]
    assert result.payloads[-1]["error"]["code"] == "validation"


def test_an_unknown_action_fails_the_answer_as_internal(server, chat_factory):
    class Proposes:
        name = "proposes"

        def stream(self, turn, cancel):
            yield "Shall I? "
            yield ActionProposal("launch_rockets", {})

    server.service.backend = Proposes()
    result = chat_factory(server).send("go", "r")
    assert result.kinds == ["message.started", "text.delta", "message.failed"]
    assert result.payloads[-1]["error"]["code"] == "internal"


def test_arguments_are_validated_again_when_confirmed(server, chat_factory, record, monkeypatch):
    chat = chat_factory(server)
    message_id, proposal = proposed(chat)

    class Stricter(CallbackRequest):
        def validate(self, arguments):
            raise InvalidArguments(["phone: this country is no longer served"])

    monkeypatch.setitem(installed_actions(server), "callback_request", Stricter())
    refused = assert_json_error(confirm(chat, message_id, proposal["action_id"], "k"), 422, "invalid_arguments")
    assert refused["error"]["details"]["problems"] == ["phone: this country is no longer served"]
    assert record_lines(record) == []
    # Nothing was claimed: with the validation passing again, the same key runs it (once).
    monkeypatch.setitem(installed_actions(server), "callback_request", CallbackRequest())
    assert confirm(chat, message_id, proposal["action_id"], "k").json()["status"] == "succeeded"
    assert len(record_lines(record)) == 1


def test_the_token_guards_every_action_route(server, chat_factory, record):
    owner = chat_factory(server)
    message_id, proposal = proposed(owner)
    stranger = chat_factory(server)  # a real conversation, with its own token
    base = f"/api/v1/conversations/{owner.conversation_id}"
    action = f"{base}/messages/{message_id}/actions/{proposal['action_id']}"
    for wrong in ({"Authorization": "Bearer not-the-token"}, stranger.auth, {}):
        for response in (
            owner.http.post(f"{action}/confirm", headers={**wrong, "Idempotency-Key": "k"}),
            owner.http.post(f"{action}/dismiss", headers=wrong),
            owner.http.get(f"{base}/actions", headers=wrong),
        ):
            assert_json_error(response, 404, "not_found")
    # The stranger's own conversation, the owner's message and action: not theirs.
    path = f"/api/v1/conversations/{stranger.conversation_id}/messages/{message_id}/actions/{proposal['action_id']}/confirm"
    assert_json_error(stranger.http.post(path, headers={**stranger.auth, "Idempotency-Key": "k"}), 404, "not_found")
    # The right conversation, but the action named under another message of it.
    other_message, _ = proposed(owner, "r-other")
    assert_json_error(confirm(owner, other_message, proposal["action_id"]), 404, "not_found")
    assert_json_error(confirm(owner, message_id, "bad id!"), 404, "not_found")
    assert record_lines(record) == []
    assert list_actions(owner).json()["actions"][0]["status"] == "proposed"


@pytest.mark.parametrize(
    "headers,body,status,code",
    [
        ({}, None, 400, "missing_idempotency_key"),
        ({"Idempotency-Key": ""}, None, 400, "missing_idempotency_key"),
        ({"Idempotency-Key": "-starts-with-a-dash"}, None, 400, "invalid_idempotency_key"),
        ({"Idempotency-Key": "a" * 129}, None, 400, "invalid_idempotency_key"),
        ({"Idempotency-Key": "one"}, {"idempotency_key": "two"}, 400, "idempotency_key_mismatch"),
        ({}, {"idempotency_key": 7}, 400, "invalid_idempotency_key"),
        ({}, {"idempotency_key": "k", "arguments": {"phone": "1"}}, 400, "unknown_field"),
        ({}, [], 400, "invalid_body"),
    ],
)
def test_the_idempotency_key_is_required_and_checked(server, chat_factory, record, headers, body, status, code):
    chat = chat_factory(server)
    message_id, proposal = proposed(chat)
    kwargs = {"json": body} if body is not None else {}
    response = chat.http.post(
        action_url(chat, message_id, proposal["action_id"], "confirm"), headers={**chat.auth, **headers}, **kwargs
    )
    assert_json_error(response, status, code)
    assert record_lines(record) == []


def test_a_body_must_be_json(server, chat_factory, record):
    chat = chat_factory(server)
    message_id, proposal = proposed(chat)
    url = action_url(chat, message_id, proposal["action_id"], "confirm")
    response = chat.http.post(url, headers={**chat.auth, "Content-Type": "text/plain"}, content=b"idempotency_key=k")
    assert_json_error(response, 415, "unsupported_media_type")
    response = chat.http.post(url, headers={**chat.auth, "Content-Type": "application/json"}, content=b"{")
    assert_json_error(response, 400, "invalid_json")
    assert record_lines(record) == []


# -- several workers (a shared store) ----------------------------------------------------------


def test_a_resume_or_a_confirm_on_another_worker_never_runs_it_again(
    store_kind, live_server_factory, chat_factory, record, slow_callback
):
    if store_kind == "memory":
        pytest.skip("two workers share only a Redis store")
    worker_a = live_server_factory(ACTIONS_RECORD_PATH=str(record))
    worker_b = live_server_factory(ACTIONS_RECORD_PATH=str(record))
    handler = slow_callback(0.4, worker_a, worker_b)  # each server's actions are its own
    chat_a = chat_factory(worker_a)
    message_id, proposal = proposed(chat_a)
    chat_b = ChatClient(worker_b.url)
    chat_b.conversation_id, chat_b.token = chat_a.conversation_id, chat_a.token
    try:
        # The same confirm on both workers at once: one execution.
        start = threading.Barrier(2)
        responses: dict[str, httpx.Response] = {}

        def click(name, chat):
            start.wait()
            responses[name] = confirm(chat, message_id, proposal["action_id"], "cross-worker")

        threads = [threading.Thread(target=click, args=item) for item in (("a", chat_a), ("b", chat_b))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert responses["a"].status_code == responses["b"].status_code == 200
        assert responses["a"].json() == responses["b"].json()
        # A resume on the other worker replays the proposal; replaying runs nothing.
        replay = chat_b.resume(message_id, None)
        assert replay.kinds[-2:] == ["action.proposed", "message.completed"]
        assert replay.payloads[-1]["actions"][0]["action_id"] == proposal["action_id"]
        assert confirm(chat_b, message_id, proposal["action_id"], "cross-worker").json() == responses["a"].json()
    finally:
        chat_b.close()
    assert handler.calls == 1
    assert len(record_lines(record)) == 1


# -- the pure parts ----------------------------------------------------------------------------


def test_the_message_log_lists_proposals_only_in_its_completion():
    from widget_server.messages import EventKind, InvalidTransition, MessageLog

    proposal = {"action_id": "a_1", "name": "n", "label": "L", "description": "D", "arguments": {}}
    done = MessageLog("m_1", 16)
    done.start()
    event = done.add_action(proposal)
    assert event.kind is EventKind.ACTION_PROPOSED and event.data() == {"message_id": "m_1", "seq": 2, **proposal}
    assert not event.kind.terminal
    assert done.complete().payload["actions"] == [proposal]
    stopped = MessageLog("m_2", 16)
    stopped.start()
    stopped.add_action(proposal)
    assert "actions" not in stopped.cancel().payload
    with pytest.raises(InvalidTransition):
        stopped.add_action(proposal)  # a proposal after the end is refused, like a late delta
    plain = MessageLog("m_3", 16)
    plain.start()
    assert "actions" not in plain.complete().payload  # unchanged without proposals


def test_the_schema_subset():
    schema = {
        "type": "object",
        "required": ["n"],
        "properties": {
            "n": {"type": "integer", "minimum": 1, "maximum": 3},
            "x": {"type": "number"},
            "flag": {"type": "boolean"},
            "size": {"enum": ["s", "m"]},
        },
    }
    assert actions.validate_arguments(schema, {"n": 2, "x": 1.5, "flag": True, "size": "m"}) == {
        "n": 2, "x": 1.5, "flag": True, "size": "m"
    }  # fmt: skip
    for bad in (
        {"n": True},
        {"n": 0},
        {"n": 4},
        {"n": 1, "x": float("nan")},
        {"n": 1, "flag": 1},
        {"n": 1, "size": "l"},
        {},
    ):
        with pytest.raises(InvalidArguments):
            actions.validate_arguments(schema, bad)
    with pytest.raises(InvalidArguments, match="larger than"):
        actions.validate_arguments({"type": "object", "properties": {"t": {"type": "string"}}}, {"t": "x" * 5000})


@pytest.mark.parametrize("phone", ["+34 600 123 456", "(555) 123-4567", "0044.20.7946.0958", "600123"])
def test_phone_numbers_the_callback_accepts(phone):
    assert CallbackRequest().validate({"name": "Ana", "phone": phone})["phone"] == phone


@pytest.mark.parametrize("phone", ["12345", "call me maybe", "+34 600 123 456 789 012", "--600123--", "+", "1" * 16])
def test_phone_numbers_the_callback_refuses(phone):
    with pytest.raises(InvalidArguments):
        CallbackRequest().validate({"name": "Ana", "phone": phone})


def test_the_phone_pattern_cannot_be_made_to_backtrack():
    started = time.perf_counter()
    for attempt in ("1" * 29 + "x", "(" * 29 + "1", "+1 " * 10 + "a"):
        with pytest.raises(InvalidArguments):
            CallbackRequest().validate({"name": "Ana", "phone": attempt})
    assert time.perf_counter() - started < 0.5
