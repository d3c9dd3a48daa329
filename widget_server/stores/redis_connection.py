"""The Redis client of the STORE setting: one Redis (`redis://`, `rediss://`, `unix://`) or a
Redis Cluster (`redis+cluster://[USER:PASSWORD@]HOST:PORT[,HOST:PORT…]`: seed nodes, the
others are discovered; the scheme the `limits` library also reads, so ratelimits.py shares it).

Both clients are made the same way (stores/redis/unavailable.py says why): no retries of a
command (a script whose reply was lost may have run; running an APPEND twice would duplicate
text), a short connect timeout, and a bounded pool of connections per Redis server (each
master of a cluster) that a command waits for (POOL_CONNECTIONS). A
cluster's redirections (MOVED, ASK) are not retries: the command did not run, and redis-py
follows them (https://redis.io/docs/latest/operate/oss_and_stack/reference/cluster-spec/,
"Redirection and resharding").
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, cast

from ..store_url import CLUSTER_SCHEME, cluster_nodes

# Connections per process to each Redis server. No command blocks in Redis (readers wait in
# one subscriber per process: redis_tail.py; appends go in batches: script_batches.py), so a
# connection is held for one round trip, and a command waits for a free one instead of
# opening another: with an unbounded pool, 500 streams opening at once left about 250 idle
# connections per worker (bench/load.py: redis_peak_clients), each with its buffers.
POOL_CONNECTIONS = 64
# The longest a command waits for a free connection before it is `store_unavailable`.
POOL_WAIT_SECONDS = 10.0
# The longest a read waits for Redis's reply before it is `store_unavailable`; no command
# blocks in Redis, so a reply this late means a lost server. Said here, not left to
# redis-py's default (5 s in redis-py 8.1; there was none in 5.x): the subscriber's silent
# connection is read with it too (redis_tail.py, PING).
COMMAND_TIMEOUT_SECONDS = 5.0


def connect(url: str) -> Any:
    import redis
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    options: dict[str, Any] = {
        "max_connections": POOL_CONNECTIONS,
        "health_check_interval": 30,
        "socket_connect_timeout": 1.0,
        "socket_timeout": COMMAND_TIMEOUT_SECONDS,
        "socket_keepalive": True,
        "retry": Retry(NoBackoff(), 0),
    }
    if not url.startswith(CLUSTER_SCHEME):
        pool = redis.BlockingConnectionPool.from_url(url, timeout=POOL_WAIT_SECONDS, **options)
        return redis.Redis(connection_pool=pool)
    from redis.cluster import ClusterNode, RedisCluster

    nodes, username, password = cluster_nodes(url)
    (first_host, first_port), others = nodes[0], nodes[1:]
    # redis-py gives each master the pool class it is passed only for a client made from a
    # URL (NodesManager.create_redis_node, `from_url`); otherwise a plain pool, which refuses
    # a command past its size (MaxConnectionsError) instead of making it wait. So the first
    # seed node is passed as a URL: every master gets a BlockingConnectionPool, bounded as on
    # one Redis. Unbounded, 2,000 streams opening at once made about 2,300 connections to the
    # cluster, and their connects were a large share of a worker's CPU (bench/load.py, py-spy).
    first = f"[{first_host}]" if ":" in first_host else first_host
    return LazyCluster(
        lambda: RedisCluster(
            url=f"redis://{first}:{first_port}",
            startup_nodes=[ClusterNode(host, port) for host, port in others],
            username=username,
            password=password,
            connection_pool_class=redis.BlockingConnectionPool,
            timeout=POOL_WAIT_SECONDS,
            **options,
        )
    )


def is_cluster(client: Any) -> bool:
    from redis.cluster import RedisCluster

    return isinstance(client, (LazyCluster, RedisCluster))


class LazyCluster:
    """A RedisCluster made on first use, and made again on the next use after that failed.

    redis-py's RedisCluster reads the cluster's slot map when it is made, so making it while
    no seed node answers raises; one Redis's client connects on its first command instead.
    This gives a cluster the same behaviour: a server (or a worker gunicorn restarts) starts
    while the cluster is down, answers 503 `store_unavailable` (ConnectionError →
    StoreUnavailable), and serves as soon as a node answers (tests/test_scale_out.py)."""

    def __init__(self, make: Callable[[], Any]) -> None:
        self._make = make
        self._client: Any = None
        self._lock = threading.Lock()

    def _real(self) -> Any:
        client = self._client
        if client is None:
            from redis.exceptions import ConnectionError, RedisClusterException

            with self._lock:
                if self._client is None:
                    try:
                        self._client = self._make()
                    except RedisClusterException as error:
                        raise ConnectionError(f"no seed node of the Redis Cluster answered: {error}") from error
                client = self._client
        return client

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real(), name)

    def get_encoder(self) -> Any:  # for redis-py's Script, made before the first command
        from redis._parsers.encoders import Encoder

        return Encoder(encoding="utf-8", encoding_errors="strict", decode_responses=False)

    def register_script(self, script: str) -> Any:
        from redis.commands.core import Script

        return Script(cast("Any", self), script)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()


def connection_trouble() -> tuple[type[BaseException], ...]:
    """The errors that mean "Redis is not serving right now" (503 `store_unavailable`, retry
    later), not a bug: refused or reset connections, timeouts, a Redis loading its data or
    read-only, and a cluster that is down, moving slots (TRYAGAIN) or has a slot no node serves."""
    from redis.exceptions import (
        BusyLoadingError,
        ClusterDownError,
        ConnectionError,
        ReadOnlyError,
        RedisClusterException,
        TimeoutError,
        TryAgainError,
    )

    return (
        ConnectionError,
        TimeoutError,
        BusyLoadingError,
        ReadOnlyError,
        ClusterDownError,
        TryAgainError,
        RedisClusterException,
    )
