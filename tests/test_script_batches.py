"""Concurrent calls of one script, sent together (widget_server/stores/script_batches.py),
against a real redis-server and a real 3-master Redis Cluster.

What a batch must not change: each call's own reply, a script that errors failing only its own
call, a script Redis lost (a restart, SCRIPT FLUSH) run exactly once after loading it, and a
restarted Redis served again without the server restarting."""

from __future__ import annotations

import threading

import pytest
import redis
from redis.commands.core import Script

from widget_server.stores.keyspace import BUCKETS, ID_ALPHABET, Keyspace
from widget_server.stores.redis_connection import connect
from widget_server.stores.script_batches import ScriptBatches, pack_command

from .helpers import wait_until

# Counts its calls in KEYS[1] and answers with its argument; 'fail' is an error reply.
COUNTING = """
if ARGV[1] == 'fail' then return redis.error_reply('ERR asked to fail') end
redis.call('INCR', KEYS[1])
return ARGV[1]
"""


def batches_for(client) -> ScriptBatches:
    script: Script = client.register_script(COUNTING)
    return ScriptBatches(client, COUNTING, lambda keys, args: script(keys=keys, args=args))


@pytest.fixture
def one_redis(redis_server):
    redis_server.flush()
    client = connect(redis_server.url)
    yield client
    client.close()


def call_together(batches: ScriptBatches, calls: list[tuple[str, str]]) -> dict[str, object]:
    """Make `calls` (key, argument) from one thread each while the lane's first batch is held
    on the wire, so the rest queue behind it; the replies (or errors) by argument."""
    lane = batches._lane(calls[0][0])
    results: dict[str, object] = {}

    def one(key: str, argument: str) -> None:
        try:
            results[argument] = batches([key], [argument])
        except Exception as error:  # the error is the result under test
            results[argument] = error

    with lane._turn:  # as if a batch were on the wire
        threads = [threading.Thread(target=one, args=call) for call in calls]
        for thread in threads:
            thread.start()
        assert wait_until(lambda: len(lane._next.calls) == len(calls), timeout=10)
    for thread in threads:
        thread.join(timeout=10)
    return results


def test_commands_are_packed_as_redis_reads_them():
    assert pack_command(("EVALSHA", "ab", 1, "k", "café")) == (
        b"*5\r\n$7\r\nEVALSHA\r\n$2\r\nab\r\n$1\r\n1\r\n$1\r\nk\r\n$5\r\ncaf\xc3\xa9\r\n"
    )
    assert pack_command((b"\r\n", -3)) == b"*2\r\n$2\r\n\r\n\r\n$2\r\n-3\r\n"


def test_calls_queued_behind_a_batch_go_as_one_and_each_gets_its_own_reply(one_redis):
    batches = batches_for(one_redis)
    assert batches(["count"], ["alone"]) == b"alone"  # a lone call goes at once
    sent_before = batches.batches_sent
    results = call_together(batches, [("count", f"call-{index}") for index in range(40)])
    assert results == {f"call-{index}": f"call-{index}".encode() for index in range(40)}
    assert batches.batches_sent - sent_before == 1
    assert one_redis.get("count") == b"41"


def test_an_error_reply_fails_only_its_own_call(one_redis):
    batches = batches_for(one_redis)
    results = call_together(batches, [("count", "before"), ("count", "fail"), ("count", "after")])
    assert results["before"] == b"before" and results["after"] == b"after"
    assert isinstance(results["fail"], redis.ResponseError) and "asked to fail" in str(results["fail"])
    assert one_redis.get("count") == b"2"


def test_a_script_redis_lost_is_loaded_and_each_call_runs_once(one_redis):
    batches = batches_for(one_redis)
    assert batches(["count"], ["first"]) == b"first"
    one_redis.script_flush()  # as a restarted Redis would have lost it
    results = call_together(batches, [("count", f"call-{index}") for index in range(10)])
    assert results == {f"call-{index}": f"call-{index}".encode() for index in range(10)}
    assert one_redis.get("count") == b"11"


def test_a_restarted_redis_is_served_again_without_a_new_client(redis_server):
    redis_server.flush()
    client = connect(redis_server.url)
    try:
        batches = batches_for(client)
        assert batches(["count"], ["before"]) == b"before"
        redis_server.crash()
        with pytest.raises(redis.ConnectionError):
            batches(["count"], ["while down"])
        redis_server.recover()
        # The pool makes the connection Redis closed again before the next batch uses it.
        assert batches(["count"], ["after"]) == b"after"
        assert client.get("count") == b"1"
    finally:
        client.close()


def test_on_a_cluster_each_call_goes_to_the_master_of_its_slot(redis_cluster):
    redis_cluster.flush()
    client = connect(redis_cluster.url)
    keys = Keyspace(cluster=True)
    try:
        batches = batches_for(client)
        # One key per bucket: sixteen hash tags spread over the three masters.
        names = [keys.conversation(f"c_{char}") + ":count" for char in ID_ALPHABET[:: len(ID_ALPHABET) // BUCKETS]]
        results = {}
        threads = [
            threading.Thread(target=lambda name=name: results.__setitem__(name, batches([name], [name])))
            for name in names
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=10)
        assert results == {name: name.encode() for name in names}
        checker = redis_cluster.client()
        assert [checker.get(name) for name in names] == [b"1"] * len(names)
        assert len({checker.get_node_from_key(name).name for name in names}) == 3
        checker.close()
    finally:
        client.close()


def three_hundred_commands_at_once(client, names: list[str]) -> list[object]:
    """300 commands from a thread each, all released together, each holding its connection a
    while: a BLPOP of an empty list (named in turn from `names`) that gives up after 0.2 s.
    The replies (None), or the errors raised."""
    release = threading.Event()
    results: list[object] = []

    def one(index: int) -> None:
        release.wait(timeout=10)
        try:
            results.append(client.blpop([f"{names[index % len(names)]}:{index}"], timeout=0.2))
        except Exception as error:  # the failure is what the tests look for
            results.append(error)

    threads = [threading.Thread(target=one, args=(index,)) for index in range(300)]
    for thread in threads:
        thread.start()
    release.set()
    for thread in threads:
        thread.join(timeout=30)
    return results


def test_one_redis_pool_is_bounded_and_a_command_waits_for_a_free_connection(one_redis, redis_server):
    """No command blocks in Redis any more, so a process keeps at most POOL_CONNECTIONS
    connections (redis_connection.py): 300 commands at once all succeed, none refused."""
    from widget_server.stores.redis_connection import POOL_CONNECTIONS

    # The pool's connections name themselves (CLIENT SETNAME as each connects), so Redis
    # counts exactly these, whatever earlier tests of this worker open or close meanwhile.
    one_redis.connection_pool.connection_kwargs["client_name"] = "pool-bound-test"
    assert three_hundred_commands_at_once(one_redis, ["key"]) == [None] * 300
    # The pool's connections stay open; Redis counts them.
    checker = redis.Redis.from_url(redis_server.url)
    made = sum(1 for client in checker.client_list() if client["name"] == "pool-bound-test")
    checker.close()
    assert 0 < made <= POOL_CONNECTIONS, made


def test_each_cluster_master_pool_is_bounded_as_one_redis_is(redis_cluster):
    """The same on a cluster, per master: redis-py's plain pool would refuse the 65th
    concurrent command (MaxConnectionsError), an unbounded one opened a connection per
    concurrent command (about 2,300 at N=2,000 in bench/load.py)."""
    from widget_server.stores.redis_connection import POOL_CONNECTIONS

    redis_cluster.flush()
    client = connect(redis_cluster.url)
    keys = Keyspace(cluster=True)
    try:
        names = [keys.conversation(f"c_{char}") for char in ID_ALPHABET[:: len(ID_ALPHABET) // BUCKETS]]
        checker = redis_cluster.client()

        def clients_per_master() -> dict[str, int]:
            return {
                node.name: checker.get_redis_connection(node).info("clients")["connected_clients"]
                for node in checker.get_primaries()
            }

        before = clients_per_master()  # the checker's own, and what earlier tests left open
        assert three_hundred_commands_at_once(client, names) == [None] * 300
        made = {name: count - before[name] for name, count in clients_per_master().items()}
        checker.close()
        assert len(made) == 3
        assert all(0 < count <= POOL_CONNECTIONS for count in made.values()), made
    finally:
        client.close()


def test_a_call_answered_is_freed_when_its_caller_lets_go_without_the_cycle_collector(one_redis):
    import gc

    from widget_server.stores.script_batches import Call

    batches = batches_for(one_redis)
    gc.disable()  # only reference counting frees what follows
    try:
        before = {id(found) for found in gc.get_objects() if isinstance(found, Call)}
        results = call_together(batches, [("count", f"call-{index}") for index in range(20)])
        assert results == {f"call-{index}": f"call-{index}".encode() for index in range(20)}
        calls = [batches.submit(["count"], [f"soon-{index}"]) for index in range(20)]
        assert [call.result() for call in calls] == [f"soon-{index}".encode() for index in range(20)]
        del calls
        assert not [found for found in gc.get_objects() if isinstance(found, Call) and id(found) not in before]
    finally:
        gc.enable()
