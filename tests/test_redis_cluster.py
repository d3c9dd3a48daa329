"""The store on a real Redis Cluster of three masters, beyond the API suite that runs on it
(tests/conftest.py STORE_KINDS): where conversations land, and a server that starts while its
cluster is down (docs/serving.md, "Past one Redis: a Redis Cluster";
widget_server/stores/keyspace.py, redis_connection.py)."""

from __future__ import annotations

import collections

import redis

from widget_server.app import create_app
from widget_server.services import SERVICES_KEY

from .conftest import TEST_CONFIG
from .redis_support import RedisClusterServers


def test_conversations_spread_over_the_masters_each_wholly_on_one(redis_cluster):
    redis_cluster.flush()
    app = create_app({**TEST_CONFIG, "STORE": redis_cluster.url}, environ={})
    client = app.test_client()
    created = [client.post("/api/v1/conversations").get_json() for _ in range(60)]
    for conversation in created:
        auth = {"Authorization": f"Bearer {conversation['token']}"}
        sent = client.post(
            f"/api/v1/conversations/{conversation['conversation_id']}/messages",
            json={"text": "hello", "request_id": "r1"},
            headers=auth,
        )
        assert sent.status_code == 200, sent.get_data(as_text=True)
        assert "event: message.completed" in sent.get_data(as_text=True)  # read to its end
    where: dict[str, set[int]] = collections.defaultdict(set)
    per_master = collections.Counter()
    for node in redis_cluster.nodes:
        master = redis.Redis(port=node.port, decode_responses=True)
        for key in master.scan_iter(count=1000):
            per_master[node.port] += 1
            for conversation in created:
                if conversation["conversation_id"] in key:
                    where[conversation["conversation_id"]].add(node.port)
        master.close()
    assert len(where) == 60
    # Each conversation's keys (its messages' too) on one master; every master holds some.
    assert all(len(ports) == 1 for ports in where.values()), where
    assert len({next(iter(ports)) for ports in where.values()}) == 3, per_master
    app.extensions[SERVICES_KEY].chat.store.close()


def test_a_server_starts_while_its_cluster_is_down_and_serves_once_it_is_up():
    cluster = RedisClusterServers()  # its ports chosen, nothing started yet
    app = create_app({**TEST_CONFIG, "STORE": cluster.url}, environ={})
    client = app.test_client()
    refused = client.post("/api/v1/conversations")
    assert refused.status_code == 503, refused.get_data(as_text=True)
    assert refused.get_json()["error"]["code"] == "store_unavailable"
    assert client.get("/healthz").status_code == 503
    cluster.start()
    try:
        assert client.post("/api/v1/conversations").status_code == 201
        assert client.get("/healthz").status_code == 200
    finally:
        app.extensions[SERVICES_KEY].chat.store.close()
        cluster.stop()
