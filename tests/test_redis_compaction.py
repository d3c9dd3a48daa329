"""When the Redis store compacts a finished answer's log (RedisStore.compact_due), against a
real redis-server and a real 3-master Redis Cluster.

A finished answer keeps its exact events for its grace (a reader catching up gets them, not
the whole text again), then only its terminal entry. Looking for what is due is a round trip,
so a process looks at a compaction set when an end of grace it wrote has come, or when
COMPACT_LOOK_SECONDS have passed since it last looked: a log another process ended is
compacted by this one's next activity after that (docs/serving.md, "Memory per finished
answer": at most once a second under load, not twice per answer)."""

from __future__ import annotations

import time

import pytest

from widget_server.stores import redis as redis_module
from widget_server.stores.base import Conversation
from widget_server.stores.redis import RedisStore

from .redis_support import redis_client


@pytest.fixture
def server(redis_or_cluster):
    return redis_or_cluster


@pytest.fixture
def make_store(server):
    made: list[RedisStore] = []

    def make(grace: float) -> RedisStore:
        store = RedisStore(server.url, finished_log_grace=grace)
        made.append(store)
        return store

    yield make
    for store in made:
        store.close()


def claim(store: RedisStore, conversation_id: str, request_id: str) -> str:
    """A new answer in `conversation_id` (made if new), accepted: its message id."""
    if store.get_conversation(conversation_id) is None:
        store.create_conversation(Conversation(conversation_id, "hash", 0.0))
    # An id made for a conversation ends with its last character: the same bucket (keyspace.py).
    message_id = f"m_{request_id}{conversation_id[-1]}"
    assert store.claim_request(conversation_id, request_id, "fp", "question", "u_" + message_id, message_id).created
    return message_id


def finished(store: RedisStore, conversation_id: str, request_id: str) -> str:
    message_id = claim(store, conversation_id, request_id)
    store.start(message_id)
    store.append_text(message_id, "Am, ")
    store.append_text(message_id, "then F.")
    store.complete(message_id)
    return message_id


def log_length(server, store: RedisStore, message_id: str) -> int:
    client = server.client() if hasattr(server, "client") else redis_client(server.url)
    return client.xlen(store._msg(message_id) + ":events")


def test_a_log_keeps_its_events_for_the_grace_and_is_compacted_at_the_next_write_after_it(server, make_store):
    store = make_store(grace=0.5)
    message_id = finished(store, "c_one1", "r1")
    assert log_length(server, store, message_id) == 4  # started, two deltas, completed
    time.sleep(0.6)
    # Less than COMPACT_LOOK_SECONDS since this process looked (at the end), but the end of
    # grace it wrote has come: it looks.
    claim(store, "c_two1", "r2")
    assert log_length(server, store, message_id) == 1
    # Read by a process that did not write it: the writer's own readers may still take the
    # exact events from its buffer for a while (redis_tail.py, TailHub.own; IDLE_SECONDS).
    reader = make_store(grace=0.5)
    events = reader.read_events(message_id, 2, 0)
    assert [event.kind.value for event in events] == ["message.snapshot", "message.completed"]
    assert events[0].payload["text"] == "Am, then F."


def test_a_busy_process_looks_at_each_compaction_set_once_within_the_look_interval(server, make_store, monkeypatch):
    store = make_store(grace=30)
    looks: list[str] = []
    zrangebyscore = store.redis.zrangebyscore

    def counted(key, *args, **kwargs):
        looks.append(key)
        return zrangebyscore(key, *args, **kwargs)

    monkeypatch.setattr(store.redis, "zrangebyscore", counted)
    monkeypatch.setattr(redis_module, "COMPACT_LOOK_SECONDS", 30.0)
    for number in range(10):  # 20 occasions to look: 10 new answers, 10 endings
        finished(store, f"c_busy{number}", f"r{number}")
    assert looks  # the first occasion looks
    assert len(looks) == len(set(looks)) <= len(store.keys.compact_sets())  # each set once at most


def test_a_log_another_process_ended_is_compacted_by_this_ones_first_write_after_the_look_interval(
    server, make_store, monkeypatch
):
    monkeypatch.setattr(redis_module, "COMPACT_LOOK_SECONDS", 2.0)
    this, other = make_store(grace=0.2), make_store(grace=0.2)
    claim(this, "c_shared3", "r1")  # this process looks now
    looked_at = time.monotonic()
    message_id = finished(other, "c_shared3", "r2")  # ended by the other one, which then stops
    time.sleep(0.3)
    claim(this, "c_shared3", "r3")  # the grace has passed, but this process looked < 2 s ago
    if time.monotonic() - looked_at < 2.0:
        assert log_length(server, other, message_id) == 4
    time.sleep(max(0.0, 2.05 - (time.monotonic() - looked_at)))
    claim(this, "c_shared3", "r4")
    assert log_length(server, other, message_id) == 1
