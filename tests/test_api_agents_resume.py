"""Opening a conversation in the console without replaying its events (docs/agents.md,
"Opening a conversation"): `GET /agent/api/conversations/{cid}` carries `last_seq`, the seq of
the newest event its state and transcript include, read with them in one store read; the
console reads the stream after it. On the memory store and a real Redis (tests/conftest.py
runs tests/test_api_*.py on both), through the real routes with a signed-in agent.
"""

from __future__ import annotations

import threading

import pytest

from widget_server import create_app
from widget_server.services import SERVICES_KEY

from .agent_support import write_agents
from .conftest import TEST_CONFIG
from .test_api_agents import Agent, Visitor, sse_events


@pytest.fixture
def app(request, store_kind, tmp_path, store_config, shared_store):
    # shared_store: the queue and presence are shared by every conversation of a store: start empty.
    path = tmp_path / "agents.json"
    write_agents(path)
    return create_app({**TEST_CONFIG, **store_config, "AGENTS_FILE": str(path)}, environ={})


@pytest.fixture
def alice(app):
    return Agent(app, "alice")


@pytest.fixture
def claimed(app, alice):
    """A visitor who wrote to the person twice, claimed by alice, who replied once."""
    assert alice.get("/queue").status_code == 200  # alice is present: the visitor queues
    visitor = Visitor(app)
    assert visitor.ask_for_a_person()["state"] == "queued"
    assert visitor.say("First question", "v1").status_code == 201
    assert visitor.say("Second question", "v2").status_code == 201
    assert alice.post(f"/conversations/{visitor.cid}/claim").status_code == 200
    assert (
        alice.post(f"/conversations/{visitor.cid}/messages", {"request_id": "a1", "text": "Hello"}).status_code == 201
    )
    return visitor


def seq_of(event_id: str) -> int:
    return int(event_id.rsplit(":", 1)[1])


# The visitor's last message in each test: a stream is read up to it (the stream of a
# conversation the agent holds stays open; an ended one the agent may no longer read).
LAST = "That is all."


def events_after(agent: Agent, cid: str, last_seq: int) -> list[tuple[str, dict]]:
    """The agent's stream of `cid` read as the console opens it (`Last-Event-ID:
    <cid>:<last_seq>`), up to the visitor's message LAST."""
    response = agent.client.get(
        f"/agent/api/conversations/{cid}/events", headers={"Last-Event-ID": f"{cid}:{last_seq}"}, buffered=False
    )
    assert response.status_code == 200, response.get_data(as_text=True)
    return list(sse_events(response, until=lambda _kind, data: data.get("text") == LAST, most=500))


def hand_off_messages(view: dict) -> list[str]:
    return [m["text"] for m in view["messages"] if m["role"] in ("visitor", "agent")]


def test_the_detail_names_the_newest_event_of_the_log(app, alice, claimed):
    view = alice.get(f"/conversations/{claimed.cid}").get_json()
    assert app.extensions[SERVICES_KEY].handoff.last_seq(claimed.cid) == view["last_seq"]
    # Every event of the log, from the start: the one before LAST is the detail's last_seq.
    assert claimed.say(LAST, "last").status_code == 201
    everything = events_after(alice, claimed.cid, 0)
    assert isinstance(view["last_seq"], int) and view["last_seq"] > 0
    assert seq_of(everything[-2][1]["_id"]) == view["last_seq"]
    assert seq_of(everything[-1][1]["_id"]) == view["last_seq"] + 1
    assert view["state"] == "assigned" and view["agent"] == "Alice Agent"
    assert hand_off_messages(view) == ["First question", "Second question", "Hello"]


def test_a_waiting_conversation_has_its_last_seq_too(app, alice):
    assert alice.get("/queue").status_code == 200
    visitor = Visitor(app)
    asked = visitor.ask_for_a_person()
    view = alice.get(f"/conversations/{visitor.cid}").get_json()
    assert view["state"] == "queued" and view["last_seq"] == asked["seq"]


def test_events_after_last_seq_arrive_once_and_nothing_before(alice, claimed):
    view = alice.get(f"/conversations/{claimed.cid}").get_json()
    last_seq = view["last_seq"]
    assert claimed.say("Third question", "v3").status_code == 201
    assert (
        alice.post(f"/conversations/{claimed.cid}/messages", {"request_id": "a2", "text": "Answer"}).status_code == 201
    )
    assert claimed.say(LAST, "last").status_code == 201

    after = events_after(alice, claimed.cid, last_seq)
    assert [seq_of(data["_id"]) for _, data in after] == list(range(last_seq + 1, last_seq + 1 + len(after)))
    assert [(kind, data.get("text")) for kind, data in after] == [
        ("visitor.message", "Third question"),
        ("agent.message", "Answer"),
        ("visitor.message", LAST),
    ]
    # Transcript + stream: each message once, in order.
    texts = hand_off_messages(view) + [data["text"] for kind, data in after if "text" in data]
    assert texts == ["First question", "Second question", "Hello", "Third question", "Answer", LAST]


def test_messages_written_while_the_detail_is_read_are_each_in_one_of_the_two(app, alice, claimed):
    """A visitor writes without pause while the console opens the conversation again and
    again: for every opening, its transcript and its stream after last_seq hold every
    message exactly once and in order (the transcript and last_seq are one read)."""
    written = [f"Burst message {n}" for n in range(40)]
    start = threading.Event()

    def write() -> None:
        start.wait()
        for n, text in enumerate(written):
            assert claimed.say(text, f"burst{n}").status_code == 201

    writer = threading.Thread(target=write)
    writer.start()
    views = []
    start.set()
    while writer.is_alive() or not views:
        views.append(alice.get(f"/conversations/{claimed.cid}").get_json())
    writer.join()
    assert claimed.say(LAST, "last").status_code == 201
    expected = ["First question", "Second question", "Hello", *written, LAST]
    # Some openings fell between the writes (else this test would prove nothing).
    assert any(0 < len(hand_off_messages(v)) - 3 < len(written) for v in views), [len(v["messages"]) for v in views]
    for view in views:
        after = events_after(alice, claimed.cid, view["last_seq"])
        streamed = [data["text"] for kind, data in after if kind == "visitor.message"]
        assert hand_off_messages(view) + streamed == expected, (view["last_seq"], len(view["messages"]))
