"""The conversation event stream, GET /api/v1/conversations/{cid}/events (docs/protocol.md,
"The conversation event stream"), on the memory store and a real redis-server: a reader
dropped after ANY event resumes with Last-Event-ID and gets exactly the rest (no duplicate, no
gap); a position evicted from the log gets one `conversation.snapshot`; heartbeats while quiet;
every bad position a JSON error.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest

from widget_server.handoff import events as ev
from widget_server.handoff.service import HandoffService
from widget_server.services import SERVICES_KEY

from .conftest import TEST_CONFIG
from .helpers import REPO_ROOT, ChatClient, LiveServer, StreamResult, assert_json_error

ON = {"HANDOFF": "on"}


@pytest.fixture(params=["memory", "redis"])
def start_server(request):
    servers: list[LiveServer] = []
    store: dict[str, Any] = {}
    if request.param == "redis":
        redis_server = request.getfixturevalue("redis_server")
        redis_server.flush()  # nobody present or queued from another test
        store = {"STORE": redis_server.url}

    def start(**config: Any) -> LiveServer:
        server = LiveServer({**TEST_CONFIG, **ON, **store, **config}).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


def handoff_of(server: LiveServer) -> HandoffService:
    service: HandoffService = server.app.extensions[SERVICES_KEY].handoff
    return service


def events_url(chat: ChatClient) -> str:
    return f"/api/v1/conversations/{chat.conversation_id}/events"


def read(chat: ChatClient, count: int, last_event_id: str | None = None, **params: str) -> StreamResult:
    """`count` events of the stream (then the connection is dropped), from `last_event_id`."""
    headers = {"Last-Event-ID": last_event_id} if last_event_id else {}
    return chat.stream("GET", events_url(chat), headers=headers, params=params, max_events=count)


def a_whole_hand_off(server: LiveServer, chat: ChatClient) -> None:
    """Every kind of event but the snapshot, through HTTP on the visitor's side."""
    handoff = handoff_of(server)
    handoff.agent_seen("ana")
    cid = chat.conversation_id
    assert (
        chat.http.post(f"/api/v1/conversations/{cid}/handoff", json={"request_id": "h"}, headers=chat.auth).json()[
            "state"
        ]
        == "queued"
    )
    for n, text in enumerate(["first\nline", "\u00e9t\u00e9 🙂", "  spaced  "]):
        sent = chat.http.post(
            f"/api/v1/conversations/{cid}/handoff/messages",
            json={"request_id": f"v{n}", "text": text},
            headers=chat.auth,
        )
        assert sent.status_code == 201
    handoff.claim(cid, "ana", "Ana")
    handoff.typing(cid, "ana")
    handoff.agent_message(cid, "ana", "a1", "Hello\r\nthere")
    handoff.agent_message(cid, "ana", "a2", "data: not a field\n\nid: 9")
    handoff.end(cid, "ana")


def signature(result: StreamResult) -> list[tuple[str, str, str]]:
    return [(event.id, event.event, event.data) for event in result.events]


def test_a_reader_dropped_after_any_event_resumes_exactly(start_server):
    server = start_server()
    chat = ChatClient(server.url).new_conversation()
    a_whole_hand_off(server, chat)
    total = handoff_of(server).last_seq(chat.conversation_id)
    assert total == 9
    whole = read(chat, total)
    assert whole.status == 200 and whole.headers["content-type"].startswith("text/event-stream")
    assert [e.id for e in whole.events] == [f"{chat.conversation_id}:{n}" for n in range(1, total + 1)]
    assert whole.kinds == [
        "handoff.queued",
        "visitor.message",
        "visitor.message",
        "visitor.message",
        "handoff.assigned",
        "agent.typing",
        "agent.message",
        "agent.message",
        "handoff.ended",
    ]
    data = [json.loads(e.data) for e in whole.events]
    assert [d["seq"] for d in data] == list(range(1, total + 1))
    assert data[7]["text"] == "data: not a field\n\nid: 9" and data[7]["agent"] == "Ana"
    # Sent with CRLF, stored with LF (docs/protocol.md, "Conventions"); JSON escapes the LF.
    assert data[6]["text"] == "Hello\nthere"
    for dropped_after in range(total + 1):
        first = read(chat, dropped_after) if dropped_after else None
        last_id = first.events[-1].id if first else None
        rest = read(chat, total - dropped_after, last_id) if dropped_after < total else None
        got = (signature(first) if first else []) + (signature(rest) if rest else [])
        assert got == signature(whole), f"dropped after {dropped_after}"
    # ?after=<seq> is the same position as Last-Event-ID (for a reader that cannot set headers)
    assert signature(read(chat, 2, after="7")) == signature(whole)[7:]
    chat.close()


def test_a_reader_at_the_end_gets_the_next_event_live_and_heartbeats_while_quiet(start_server):
    server = start_server(HEARTBEAT_SECONDS=0.1)
    chat = ChatClient(server.url).new_conversation()
    handoff = handoff_of(server)
    handoff.agent_seen("ana")
    handoff.request(chat.conversation_id, "h")
    later = threading.Timer(0.5, lambda: handoff.claim(chat.conversation_id, "ana", "Ana"))
    later.start()
    try:
        live = read(chat, 1, f"{chat.conversation_id}:1")
    finally:
        later.join()
    assert [(e.id, e.event) for e in live.events] == [(f"{chat.conversation_id}:2", "handoff.assigned")]
    assert live.raw.startswith(b"retry: ")
    assert b": heartbeat\n\n" in live.raw
    chat.close()


def test_a_reader_dropped_while_messages_arrive_live_resumes_exactly(start_server):
    """Events written while the reader is connected (not only a log read afterwards): it drops
    after its third event, resumes with Last-Event-ID while more arrive, and has each once."""
    server = start_server()
    chat = ChatClient(server.url).new_conversation()
    handoff = handoff_of(server)
    handoff.agent_seen("ana")
    handoff.request(chat.conversation_id, "h")
    handoff.claim(chat.conversation_id, "ana", "Ana")
    texts = [f"reply {n} 🙂" for n in range(8)]
    written = threading.Event()

    def write() -> None:
        for n, text in enumerate(texts):
            handoff.agent_message(chat.conversation_id, "ana", f"a{n}", text)
            time.sleep(0.05)
        handoff.end(chat.conversation_id, "ana")
        written.set()

    writer = threading.Thread(target=write)
    writer.start()
    try:
        first = read(chat, 3)  # handoff.queued, handoff.assigned, the first reply: then dropped
        rest = read(chat, 2 + len(texts) + 1 - 3, first.events[-1].id)
    finally:
        writer.join()
    assert written.is_set()
    events = first.events + rest.events
    assert [e.id for e in events] == [f"{chat.conversation_id}:{n}" for n in range(1, len(texts) + 4)]
    got = [json.loads(e.data)["text"] for e in events if e.event == "agent.message"]
    assert got == texts
    assert events[-1].event == "handoff.ended"
    chat.close()


def test_an_open_stream_returns_a_lapsed_claim_to_the_queue_with_a_notice(start_server):
    """Nobody polls the agents' queue here: the visitor's own stream looks for lapsed claims
    (every few seconds), so an agent whose console went away cannot strand the visitor."""
    server = start_server(AGENT_GRACE_SECONDS=0.5)
    chat = ChatClient(server.url).new_conversation()
    handoff = handoff_of(server)
    handoff.agent_seen("ana")
    handoff.request(chat.conversation_id, "h")
    handoff.claim(chat.conversation_id, "ana", "Ana")  # and ana's console is never seen again
    result = read(chat, 2, f"{chat.conversation_id}:2")
    assert [(e.event, json.loads(e.data)) for e in result.events] == [
        (
            "handoff.ended",
            {"conversation_id": chat.conversation_id, "seq": 3, "agent": "Ana", "reason": "timeout"},
        ),
        ("handoff.queued", {"conversation_id": chat.conversation_id, "seq": 4, "position": 1}),
    ]
    assert handoff.state(chat.conversation_id) == {"state": "queued", "position": 1}
    chat.close()


def test_a_position_evicted_from_the_log_gets_a_snapshot_then_the_rest(start_server):
    server = start_server(CONVERSATION_EVENTS_MAX=3)
    chat = ChatClient(server.url).new_conversation()
    a_whole_hand_off(server, chat)
    resumed = read(chat, 1, f"{chat.conversation_id}:2")
    (snapshot,) = resumed.events
    assert (snapshot.event, snapshot.id) == ("conversation.snapshot", f"{chat.conversation_id}:9")
    data = json.loads(snapshot.data)
    assert data["state"] == "ended"
    assert [(m["role"], m["text"]) for m in data["messages"]] == [
        ("visitor", "first\nline"),
        ("visitor", "\u00e9t\u00e9 🙂"),
        ("visitor", "  spaced  "),
        ("agent", "Hello\nthere"),  # sent with CRLF
        ("agent", "data: not a field\n\nid: 9"),
    ]
    assert data["messages"][3]["agent"] == "Ana"
    # still in the log: exact events, no snapshot
    assert [e.event for e in read(chat, 3, f"{chat.conversation_id}:6").events] == [
        "agent.message",
        "agent.message",
        "handoff.ended",
    ]
    chat.close()


def test_bad_positions_and_tokens_are_json_errors(start_server):
    server = start_server()
    chat = ChatClient(server.url).new_conversation()
    other = ChatClient(server.url).new_conversation()
    for headers, params, status, code in [
        ({"Last-Event-ID": "nonsense"}, {}, 400, "invalid_last_event_id"),
        ({"Last-Event-ID": f"{other.conversation_id}:1"}, {}, 400, "invalid_last_event_id"),
        ({"Last-Event-ID": f"{chat.conversation_id}:5"}, {}, 400, "invalid_last_event_id"),
        ({}, {"after": "x"}, 400, "invalid_after"),
        ({}, {"after": "01"}, 400, "invalid_after"),
        ({}, {"after": "3"}, 400, "invalid_last_event_id"),
        ({"Authorization": f"Bearer {other.token}"}, {}, 404, "not_found"),
    ]:
        response = chat.http.get(events_url(chat), headers={**chat.auth, **headers}, params=params)
        assert_json_error(response, status, code)
    # the token may come in the query (EventSource cannot set headers)
    handoff_of(server).request(chat.conversation_id, "h")
    by_query = chat.http.stream("GET", events_url(chat), params={"token": chat.token})
    with by_query as response:
        assert response.status_code == 200
    chat.close()
    other.close()


@pytest.mark.parametrize("kind", ev.ALL_TYPES)
def test_every_conversation_event_type_is_documented(kind):
    assert f"| `{kind}` |" in (REPO_ROOT / "docs" / "protocol.md").read_text(encoding="utf-8")
