"""The API keeps every promise of /openapi.json, checked by schemathesis.

A live server on loopback (the real app, real sockets) serves the document;
schemathesis generates a few hundred requests from it, valid and invalid,
and every response must be documented: never a 5xx, a status code the
operation lists, the content type it declares, its documented headers, and
a body matching its schema. Event streams are read to their end and each
event is checked against `itemSchema`, including the JSON inside `data`.

Every case carries the bearer token of a real conversation (a known visitor's list, their
identity token); part of the
cases aim at that conversation and one of its answers (their ids pinned),
so the 200 paths are exercised, not only the 404 of an unknown id. That
answer proposes an action (its stream carries `action.proposed` and a
`message.completed` listing it), which the confirm cases aim at; the dismiss
cases aim at a second answer's action.
"""

from __future__ import annotations

import collections
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from widget_server.openapi import build_document
from widget_server.sse import parse_stream
from widget_server.testing import IDENTITY_TEST_SECRET, mint_identity_token

from .helpers import ChatClient, http_client

pytestmark = pytest.mark.slow

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]

TERMINAL_EVENTS = {"message.completed", "message.failed", "message.cancelled"}
# A conversation's event stream ends once the reader has every event and no hand-off is
# going on (docs/protocol.md, "The conversation event stream"): after one of these, or at
# once for a conversation that never asked for a person.
CONVERSATION_ENDINGS = {"handoff.ended", "handoff.unavailable", "conversation.snapshot"}

# Per operation and way of choosing ids; a few hundred requests in all.
EXAMPLES = {
    (GenerationMode.POSITIVE, "generated ids"): 25,
    (GenerationMode.POSITIVE, "real ids"): 60,
    (GenerationMode.NEGATIVE, "generated ids"): 25,
    (GenerationMode.NEGATIVE, "real ids"): 60,
}


def _settings(max_examples: int) -> settings:
    return settings(
        max_examples=max_examples,
        derandomize=True,  # the same cases on every run: fit for CI
        database=None,
        deadline=None,
        phases=[Phase.explicit, Phase.generate, Phase.shrink],
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
        print_blob=False,
    )


def _has_free_parameters(operation, fixed: set[str]) -> bool:
    """Whether anything is left to generate (a negative case needs something to break)."""
    return bool(operation.body) or any(parameter.name not in fixed for parameter in operation.iter_parameters())


def _check_cases(
    server_url: str, strategy: Any, pinned: dict[str, str], auth: dict[str, str], max_examples: int
) -> list[int]:
    """Send the cases `strategy` generates and check each response; their statuses."""
    seen: list[int] = []

    @given(case=strategy)
    @_settings(max_examples)
    def check(case: Any) -> None:
        response = case.call(base_url=server_url)
        assert response.request.headers.get("Authorization") == auth["Authorization"]
        for name, value in pinned.items():
            assert case.path_parameters[name] == value
        case.validate_response(response, checks=CHECKS)
        if response.status_code == 200 and response.headers.get("content-type", [""])[0].startswith(
            "text/event-stream"
        ):
            # Read whole, not cut short, and ended by a terminal event.
            assert not response.stream_cut_short
            kinds = [event.event for event in parse_stream([response.content])]
            if case.operation.path.endswith("/{conversation_id}/events"):
                assert not kinds or kinds[-1] in CONVERSATION_ENDINGS, kinds
            else:
                assert kinds and kinds[-1] in TERMINAL_EVENTS, kinds
        seen.append(response.status_code)

    check()
    return seen


def test_every_response_conforms_to_the_document(live_server_factory, tmp_path):
    server = live_server_factory(
        DEMO_DELAY_SECONDS=0, ACTIONS_RECORD_PATH=str(tmp_path / "actions.jsonl"), IDENTITY_SECRET=IDENTITY_TEST_SECRET
    )
    # A known visitor with a conversation, for the routes under /api/v1/me, which take their
    # identity token instead of a conversation's (docs/protocol.md, "Known visitors", "Your data").
    identity = mint_identity_token("schemathesis-visitor", secret=IDENTITY_TEST_SECRET, expires_in=3000)
    with http_client(base_url=server.url) as http:
        assert http.post("/api/v1/conversations", json={"identity_token": identity}).status_code == 201
    chat = ChatClient(server.url).new_conversation()
    try:
        first = chat.send("/scenario action", "schemathesis-seed")
        second = chat.send("/scenario action", "schemathesis-seed-2")
        # An attachment for the download and delete cases (docs/protocol.md, "Attachments").
        attachment = chat.http.post(
            f"/api/v1/conversations/{chat.conversation_id}/attachments",
            files={"file": ("seed.txt", b"seed\n")},
            headers={"Authorization": f"Bearer {chat.token}"},
        )
    finally:
        chat.close()
    assert first.status == 200 and first.kinds[-1] == "message.completed"
    assert "action.proposed" in first.kinds and second.kinds[-1] == "message.completed"
    real_ids = {
        "conversation_id": chat.conversation_id,
        "message_id": first.message_id,
        "action_id": first.payloads[-1]["actions"][0]["action_id"],
        "attachment_id": attachment.json()["attachment_id"],
    }
    # Dismissing aims at another answer's action, so confirming can still succeed.
    dismiss_ids = {"message_id": second.message_id, "action_id": second.payloads[-1]["actions"][0]["action_id"]}

    def last_turn(suffix: str) -> tuple[dict[str, str], dict[str, str]]:
        """The ids and auth of a new conversation's only turn, for regenerate (its answer) or
        edit (its user message): the first case replaces it (200), later ones get the
        documented 409 (docs/protocol.md, "Regenerate and edit"). A conversation of their own:
        the generated request ids repeat from operation to operation, and a send's id is a
        409 `request_id_conflict` for a regenerate or an edit."""
        seeder = ChatClient(server.url).new_conversation()
        try:
            turn = seeder.send("/echo the last turn", "schemathesis-last-turn")
            assert turn.kinds[-1] == "message.completed"
            user_message_id = seeder.history().json()["messages"][-2]["message_id"]
        finally:
            seeder.close()
        message_id = turn.message_id if suffix == "/regenerate" else user_message_id
        ids = {"conversation_id": seeder.conversation_id, "message_id": message_id}
        return ids, {"Authorization": f"Bearer {seeder.token}"}

    auth = {"Authorization": f"Bearer {chat.token}"}

    config = schemathesis.Config.from_dict(
        {
            # Read every stream to its end (an answer is a few dozen events;
            # the default stops at 20), so the terminal event is checked too.
            "max-stream-events": 100_000,
            "request-timeout": 10,
        }
    )
    schema = schemathesis.openapi.from_url(server.url + "/openapi.json", config=config)
    # The server serves the document this module builds.
    assert schema.raw_schema == build_document()

    operations = [result.ok() for result in schema.get_all_operations()]
    # Every operation of the document: the API, /healthz and /metrics.
    assert len(operations) == sum(len(methods) for methods in build_document()["paths"].values())
    # Deleting the conversation ends it for every later case: it goes last, so the other
    # operations reach it alive (its own later cases get the documented 404).
    # Deleting the attachment goes just before, after its downloads.
    # Erasing the known visitor's data goes after everything, their list and export included.
    operations.sort(
        key=lambda operation: (
            operation.label == "DELETE /api/v1/me",
            operation.label == "DELETE /api/v1/conversations/{conversation_id}",
            operation.label == "DELETE /api/v1/conversations/{conversation_id}/attachments/{attachment_id}",
        )
    )

    sent = collections.Counter()
    statuses: dict[tuple[str, str], set[int]] = collections.defaultdict(set)

    for operation in operations:
        path_names = {parameter.name for parameter in operation.path_parameters}
        for (mode, ids), max_examples in EXAMPLES.items():
            suffix = "/" + operation.label.rpartition("/")[2]
            ids_here = {**real_ids, **dismiss_ids} if suffix == "/dismiss" else real_ids
            auth_here = auth
            if operation.label.split(" ")[1].startswith("/api/v1/me"):
                auth_here = {"Authorization": f"Bearer {identity}"}
            if suffix in ("/regenerate", "/edit") and ids == "real ids":
                ids_here, auth_here = last_turn(suffix)
            pinned = (
                {name: value for name, value in ids_here.items() if name in path_names} if ids == "real ids" else {}
            )
            if ids == "real ids" and not path_names:
                continue  # same as "generated ids" for an operation without ids
            if mode is GenerationMode.NEGATIVE and not _has_free_parameters(operation, {*pinned, *auth_here}):
                continue
            strategy = operation.as_strategy(generation_mode=mode, path_parameters=pinned, headers=auth_here)
            seen = _check_cases(server.url, strategy, pinned, auth_here, max_examples)
            sent[operation.label] += len(seen)
            statuses[(operation.label, ids)].update(seen)

    total = sum(sent.values())
    assert total >= 300, sent
    # The pinned ids reached the real conversation: every operation answered 200/201 there...
    for operation in operations:
        ids = "real ids" if operation.path_parameters else "generated ids"
        expected = {
            "POST /api/v1/conversations": 201,
            "POST /api/v1/conversations/{conversation_id}/handoff/left-messages": 201,
            "POST /api/v1/conversations/{conversation_id}/attachments": 201,
            # Nobody is ever present here, so no hand-off is going on: a message to the person
            # is the documented 409 `handoff_not_active` (tests/test_api_handoff.py sends them).
            "POST /api/v1/conversations/{conversation_id}/handoff/messages": 409,
            # Likewise no person ever ended a hand-off here: nothing to rate, the documented 409
            # `satisfaction_not_open` (tests/test_api_satisfaction.py stores answers).
            "POST /api/v1/conversations/{conversation_id}/satisfaction": 409,
            # An admin agent's session cookie is what it takes, which no case carries: the
            # documented 401 `not_signed_in` (tests/test_dashboard_api.py reads its 200).
            "GET /api/v1/admin/summary": 401,
        }.get(operation.label, 200)
        if operation.label.endswith("/report") or operation.label.startswith("DELETE "):
            expected = 204
        assert expected in statuses[(operation.label, ids)], (operation.label, statuses)
    # ...and generated ids name nothing that exists.
    for operation in operations:
        if operation.path_parameters:
            assert statuses[(operation.label, "generated ids")] == {404}, (operation.label, statuses)
