"""Scale-out with real processes: `widget-server` (gunicorn + gevent workers)
on a shared real redis-server, and again on a real Redis Cluster of three masters.
What only separate processes can show:

- a worker killed mid-answer: every reader gets `worker_lost` within the bound;
- Redis killed mid-run: clear 503s and a resumable end of the stream, then
  recovery by itself when Redis is back;
- SIGTERM: open streams end resumably and the answer still completes, read
  from another server;
- resume, cancel and a double submit across two server processes;
- /metrics summed over the workers of one server.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time

import httpx
import pytest

from .helpers import ChatClient, assert_json_error, assert_sound_events, http_client, wait_until
from .processes import ServerProcess
from .redis_support import keyspace_of

# Whole widget-server process trees (gunicorn master + gevent workers) whose
# lease timing must not be starved: slow (not in the quick loop), and one
# worker runs every such test in turn (docs/testing.md, "Parallel runs").
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("processes")]

QUESTION = "which arpeggio fits Am F C G"

# Each chunk of the demo's answers 0.4 s apart: slow enough to act mid-answer.
SETTINGS = {
    "DEMO_DELAY_SECONDS": 0.4,
    "RATE_LIMITS": 0,
    "LOG_LEVEL": "WARNING",
    "WORKER_LEASE_SECONDS": 2,
    "SHUTDOWN_GRACE_SECONDS": 15,
}

# The bound for a worker's death to reach its readers (docs/serving.md, "When a
# worker dies": within the 15 s the design allows; the lease above makes it about 3 s).
WORKER_LOST_BOUND_SECONDS = 15


@pytest.fixture(params=["redis", "cluster"])
def store(request):
    """The shared store the servers run on, emptied: a redis-server, then a Redis Cluster of
    three masters (every scale-out promise of docs/serving.md holds on both)."""
    kind = request.param
    server = request.getfixturevalue("redis_cluster" if kind == "cluster" else "redis_server")
    server.flush()
    return server


@pytest.fixture
def servers(store):
    redis_url = store.url
    started: list[ServerProcess] = []

    def start(workers: int = 1, **settings) -> ServerProcess:
        server = ServerProcess({**SETTINGS, "STORE": redis_url, **settings}, workers=workers).start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


def client_for(server: ServerProcess, like: ChatClient | None = None) -> ChatClient:
    chat = ChatClient(server.url)
    if like is None:
        return chat.new_conversation()
    chat.conversation_id, chat.token = like.conversation_id, like.token
    return chat


def test_killing_the_generating_server_fails_the_answer_with_worker_lost(servers):
    a, b = servers(), servers()
    on_a = client_for(a)
    first = on_a.send("/scenario slow", "r1", max_events=2)  # started + first delta, then cut
    message_id = first.message_id
    on_b = client_for(b, like=on_a)
    readers: dict[str, object] = {}

    def read_on_b(name: str) -> None:
        readers[name] = on_b.resume(message_id, first.events[-1].id)

    threads = [threading.Thread(target=read_on_b, args=(f"reader{i}",)) for i in range(2)]
    for thread in threads:
        thread.start()
    time.sleep(0.5)  # the readers are tailing the log on B
    killed_at = time.monotonic()
    a.kill()  # master and worker: SIGKILL, no chance to clean up
    for thread in threads:
        thread.join(timeout=WORKER_LOST_BOUND_SECONDS + 5)
    took = time.monotonic() - killed_at
    assert all(not thread.is_alive() for thread in threads), "a reader still waits after the bound"
    assert took <= WORKER_LOST_BOUND_SECONDS, took
    for result in readers.values():
        assert result.kinds[-1] == "message.failed", result.kinds
        failed = result.payloads[-1]
        assert failed["error"]["code"] == "worker_lost" and failed["error"]["retryable"] is True
        assert failed["incomplete"] is True
        seqs = assert_sound_events(result, message_id)
        assert seqs[0] == first.payloads[-1]["seq"] + 1
    # Every reader got the same failure event (the same seq), written once.
    assert len({result.events[-1].id for result in readers.values()}) == 1
    state = on_b.http.get(f"{on_b.messages_url()}/{message_id}", headers=on_b.auth).json()
    assert state["state"] == "failed" and state["error"]["code"] == "worker_lost"
    # Not in the history, and the conversation is free for the next message.
    assert on_b.history().json()["messages"] == []
    again = on_b.send(QUESTION, "r2")
    assert again.kinds[-1] == "message.completed"
    on_a.close()
    on_b.close()


def test_an_orphaned_answer_nobody_reads_is_failed_when_next_looked_at(servers):
    a, b = servers(MAX_RUNNING_PER_CONVERSATION=1), servers(MAX_RUNNING_PER_CONVERSATION=1)
    on_a = client_for(a)
    first = on_a.send("/scenario slow", "r1", max_events=2)
    a.kill()
    on_b = client_for(b, like=on_a)
    # The conversation's running limit counts the orphan only until its lease
    # runs out; then the new message is accepted and the orphan is failed.
    refused = on_b.send(QUESTION, "r2")
    assert refused.status == 429 and refused.json["error"]["code"] == "too_many_running"
    assert wait_until(lambda: on_b.send(QUESTION, "r2").status == 200, timeout=WORKER_LOST_BOUND_SECONDS, interval=0.5)
    state = on_b.http.get(f"{on_b.messages_url()}/{first.message_id}", headers=on_b.auth).json()
    assert state["error"]["code"] == "worker_lost"
    on_a.close()
    on_b.close()


def test_resume_cancel_and_double_submit_across_two_server_processes(servers, seed_answers):
    a, b = servers(DEMO_DELAY_SECONDS=0.15), servers(DEMO_DELAY_SECONDS=0.15)
    # Resume on B what started on A: exact, every seq once.
    on_a = client_for(a)
    first = on_a.send(QUESTION, "r1", max_events=2)
    on_b = client_for(b, like=on_a)
    rest = on_b.resume(first.message_id, first.events[-1].id)
    assert [p["seq"] for p in first.payloads + rest.payloads] == list(range(1, 8))
    assert first.text + rest.text == seed_answers["improvisation"]["answer"]
    completed = rest.payloads[-1]
    assert completed["sha256"] == hashlib.sha256((first.text + rest.text).encode()).hexdigest()
    # Cancel on B what runs on A: A's stream ends with message.cancelled.
    slow = on_a.send("/scenario slow", "r2", max_events=2)
    assert on_b.cancel(slow.message_id).json()["state"] == "cancelled"
    tail = on_a.resume(slow.message_id, slow.events[-1].id)
    assert tail.kinds[-1] == "message.cancelled"
    # A double submit, one POST to each: one answer, read by both.
    results = {}
    threads = [
        threading.Thread(target=lambda name=name, chat=chat: results.__setitem__(name, chat.send(QUESTION, "r3")))
        for name, chat in (("a", on_a), ("b", on_b))
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results["a"].message_id == results["b"].message_id
    assert results["a"].text == results["b"].text == seed_answers["improvisation"]["answer"]
    history = on_b.history().json()["messages"]
    assert [m["role"] for m in history] == ["user", "assistant", "user", "assistant"]
    on_a.close()
    on_b.close()


def test_a_redis_restart_gives_clear_errors_then_recovers_by_itself(store, servers):
    a = servers()
    chat = client_for(a)
    first = chat.send("/scenario slow", "r1", max_events=2)
    result: dict[str, object] = {}
    reader = threading.Thread(
        target=lambda: result.setdefault("rest", chat.resume(first.message_id, first.events[-1].id))
    )
    reader.start()
    time.sleep(0.3)
    # On a cluster: the master holding this conversation (the others keep theirs).
    store.crash_serving(keyspace_of(store.url).conversation(chat.conversation_id))
    try:
        # The open stream ends without a terminal event: the client resumes.
        reader.join(timeout=10)
        assert not reader.is_alive()
        rest = result["rest"]
        assert rest.status == 200
        assert rest.kinds[-1:] != ["message.completed"] and "message.failed" not in rest.kinds
        assert b"store unavailable" in rest.raw
        # Requests fail fast with a typed 503 and Retry-After, never a traceback.
        with http_client(base_url=a.url, timeout=10) as http:
            started = time.monotonic()
            refused = http.post("/api/v1/conversations")
            assert time.monotonic() - started < 5
            if store.url.startswith("redis+cluster://") and refused.status_code == 201:
                # A new conversation whose slot a live master serves is created (until the
                # cluster marks the lost master as failed, after cluster-node-timeout: then
                # every master refuses, CLUSTERDOWN); one whose slot was the lost master's is
                # refused, as below. Random ids: a few tries reach such a slot.
                tries: list[httpx.Response] = []
                assert wait_until(
                    lambda: tries.append(http.post("/api/v1/conversations")) or tries[-1].status_code == 503,
                    timeout=10,
                    interval=0.05,
                ), [response.status_code for response in tries]
                refused = tries[-1]
            assert_json_error(refused, 503, "store_unavailable")
            assert refused.headers["Retry-After"] == "2"
            resume = http.get(
                chat.events_url(first.message_id), headers={**chat.auth, "Last-Event-ID": first.events[-1].id}
            )
            assert_json_error(resume, 503, "store_unavailable")
            health = http.get("/healthz")
            assert health.status_code == 503 and health.json()["store"] == "unavailable"
    finally:
        store.recover()  # same port, empty: it had no persistence
    # Recovery needs no restart of the server: the next requests reconnect.
    with http_client(base_url=a.url, timeout=10) as http:
        assert wait_until(lambda: http.get("/healthz").status_code == 200, timeout=10, interval=0.1)
    # What a restart without persistence loses: the conversation (404, as for
    # any unknown conversation) — documented in docs/serving.md.
    assert chat.history().status_code == 404
    fresh = client_for(a)
    answer = fresh.send(QUESTION, "r1")
    assert answer.kinds[-1] == "message.completed"
    chat.close()
    fresh.close()


def test_sigterm_ends_streams_resumably_and_the_answer_completes_elsewhere(servers, seed_answers):
    a, b = servers(), servers()
    on_a = client_for(a)
    result: dict[str, object] = {}
    reader = threading.Thread(target=lambda: result.setdefault("first", on_a.send(QUESTION, "r1")))
    reader.start()
    time.sleep(1.0)  # a couple of deltas in
    a.terminate()
    reader.join(timeout=10)
    assert not reader.is_alive(), "the stream did not end at SIGTERM"
    first = result["first"]
    assert first.status == 200
    assert first.kinds[-1] not in ("message.completed", "message.failed", "message.cancelled"), first.kinds
    assert b"server restarting; resume" in first.raw
    # The worker lets its answer finish into Redis before it exits...
    assert a.wait(timeout=SETTINGS["SHUTDOWN_GRACE_SECONDS"] + 5) == 0
    # ...so a resume on B gets exactly the rest.
    on_b = client_for(b, like=on_a)
    rest = on_b.resume(first.message_id, first.events[-1].id)
    assert rest.kinds[-1] == "message.completed"
    assert first.text + rest.text == seed_answers["improvisation"]["answer"]
    assert [p["seq"] for p in first.payloads + rest.payloads] == list(range(1, 8))
    on_a.close()
    on_b.close()


def test_sigterm_with_the_memory_store_lets_open_answers_finish(seed_answers):
    """Nothing can resume elsewhere with the memory store: SIGTERM lets the
    open stream run to its end (within the grace) instead of cutting it."""
    server = ServerProcess({**SETTINGS, "STORE": "memory"}).start()
    try:
        chat = client_for(server)
        result: dict[str, object] = {}
        reader = threading.Thread(target=lambda: result.setdefault("answer", chat.send(QUESTION, "r1")))
        reader.start()
        time.sleep(1.0)
        server.terminate()
        reader.join(timeout=SETTINGS["SHUTDOWN_GRACE_SECONDS"])
        answer = result["answer"]
        assert answer.kinds[-1] == "message.completed"
        assert answer.text == seed_answers["improvisation"]["answer"]
        assert server.wait(timeout=10) == 0
        chat.close()
    finally:
        server.stop()


def metric_value(text: str, name: str, **labels: str) -> float:
    """The value of one series in Prometheus text format (0 if absent)."""
    wanted = ",".join(f'{key}="{value}"' for key, value in sorted(labels.items()))
    for line in text.splitlines():
        if line.startswith("#") or not line.startswith(name):
            continue
        series, _, value = line.rpartition(" ")
        series_name, _, rest = series.partition("{")
        if series_name != name:
            continue
        found = ",".join(sorted(rest.rstrip("}").split(","))) if rest else ""
        if found == wanted:
            return float(value)
    return 0.0


def test_metrics_are_summed_over_the_workers_of_a_server(servers):
    server = servers(workers=2, DEMO_DELAY_SECONDS=0)
    assert len(server.worker_pids()) == 2
    chats = [client_for(server) for _ in range(6)]
    for i, chat in enumerate(chats):
        assert chat.send(QUESTION, f"r{i}").kinds[-1] == "message.completed"
    with http_client(base_url=server.url, timeout=10) as http:
        # The worker that ends an answer counts it right after storing the end, which a reader
        # may see first (chat/generation.py): counted once, by the winner of the store's
        # compare-and-set. So the six are waited for once (by the completion histogram, which
        # Metrics.ended writes last); then whichever worker answers /metrics, it reports all six.
        assert wait_until(
            lambda: metric_value(http.get("/metrics").text, "chat_time_to_completion_seconds_count") == 6,
            timeout=10,
            interval=0.05,
        )
        for _ in range(4):
            text = http.get("/metrics").text
            assert metric_value(text, "chat_messages_ended_total", state="completed", code="") == 6
            assert metric_value(text, "chat_time_to_completion_seconds_count") == 6
    for chat in chats:
        chat.close()


def test_a_second_worker_serves_while_the_first_holds_many_streams(servers, seed_answers):
    """Two workers on Redis behind one port: many concurrent readers, all exact."""
    server = servers(workers=2, DEMO_DELAY_SECONDS=0.05)
    results = []

    def one(i: int) -> None:
        chat = client_for(server)
        results.append(chat.send(QUESTION, f"r{i}"))
        chat.close()

    threads = [threading.Thread(target=one, args=(i,)) for i in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len(results) == 20
    for result in results:
        assert result.kinds[-1] == "message.completed"
        assert result.text == seed_answers["improvisation"]["answer"]
        assert json.loads(result.events[-1].data)["sha256"] == hashlib.sha256(result.text.encode()).hexdigest()
