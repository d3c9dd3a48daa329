"""A real redis-server on a free loopback port, for tests (Debian's package; .ci/test installs it)."""

from __future__ import annotations

import random
import shutil
import socket
import subprocess
import tempfile
import time
from typing import Any

import redis
from redis.cluster import ClusterNode
from redis.crc import key_slot

from widget_server.store_url import CLUSTER_SCHEME, cluster_nodes
from widget_server.stores.keyspace import Keyspace


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def free_cluster_port() -> int:
    """A free port whose cluster bus port (the port + 10000) is free too, so below 55536."""
    for _ in range(200):
        with socket.socket() as sock, socket.socket() as bus:
            port = random.randrange(20000, 55000)
            try:
                sock.bind(("127.0.0.1", port))
                bus.bind(("127.0.0.1", port + 10000))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port pair for a cluster node")


def _accepting(port: int) -> bool:
    """Whether a server listens on the loopback `port`. A connection whose two ends are the same
    address is no server: while nothing listens on a port of the ephemeral range, Linux may give
    the connecting socket that very port, and it connects to itself (TCP simultaneous open, RFC 9293
    §3.5); a Redis client then reads its own HELLO back. Once redis-server listens, the kernel
    no longer hands out its port to a connecting socket."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as probe:
            return probe.getsockname() != probe.getpeername()
    except OSError:
        return False


class RedisServer:
    def __init__(self, port: int | None = None) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError(
                "redis-server is not installed: `bash .ci/test` installs it (apt-get install redis-server)"
            )
        self.port = port or free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self._dir = tempfile.TemporaryDirectory()
        self._binary = binary
        self.process: subprocess.Popen | None = None
        self.extra_arguments: list[str] = []  # e.g. cluster mode (RedisClusterServers)

    def start(self) -> RedisServer:
        # No persistence: each test run starts empty, as a restart without it would.
        self.process = subprocess.Popen(
            [
                self._binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                self._dir.name,
                *self.extra_arguments,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while not _accepting(self.port):
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise RuntimeError("redis-server did not start")
            time.sleep(0.05)
        client = redis.Redis.from_url(self.url)
        client.ping()
        client.close()
        return self

    def crash(self) -> None:
        """SIGKILL, as a crash or an OOM kill would; start() brings it back on
        the same port, empty (no persistence)."""
        if self.process is not None:
            self.process.kill()
            self.process.wait(timeout=10)
            self.process = None

    def crash_serving(self, key: str) -> None:
        """Crash the server that holds `key` (this one): see RedisClusterServers.crash_serving."""
        self.crash()

    def recover(self) -> None:
        self.start()

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=10)
            self.process = None
        self._dir.cleanup()

    def flush(self) -> None:
        client = redis.Redis.from_url(self.url)
        client.flushall()
        client.close()


class RedisClusterServers:
    """A real Redis Cluster of `masters` redis-servers in cluster mode on free loopback ports
    (no replicas, no persistence), created with `redis-cli --cluster create`, for the store's
    `redis+cluster://` tests. Each node keeps its nodes.conf in its own directory,
    so crash() then start() brings a node back into the cluster with its slots, empty."""

    def __init__(self, masters: int = 3) -> None:
        self.nodes = [RedisServer(free_cluster_port()) for _ in range(masters)]
        self.url = "redis+cluster://" + ",".join(f"127.0.0.1:{node.port}" for node in self.nodes)
        self._crashed = self.nodes[0]

    def start(self) -> RedisClusterServers:
        for node in self.nodes:
            node.extra_arguments = ["--cluster-enabled", "yes", "--cluster-node-timeout", "1000"]
            node.start()
        binary = shutil.which("redis-cli") or "redis-cli"
        created = subprocess.run(
            [
                binary,
                "--cluster",
                "create",
                *(f"127.0.0.1:{node.port}" for node in self.nodes),
                "--cluster-replicas",
                "0",
                "--cluster-yes",
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        if created.returncode != 0:
            raise RuntimeError(f"redis-cli --cluster create failed: {created.stdout}{created.stderr}")
        self.wait_ok()
        return self

    def wait_ok(self, timeout: float = 30) -> None:
        """Until every node says cluster_state:ok and knows all the masters."""
        deadline = time.monotonic() + timeout
        for node in self.nodes:
            client = redis.Redis(port=node.port)
            while True:
                try:
                    info = client.cluster("info")
                    known = client.cluster("nodes")
                    if info.get("cluster_state") == "ok" and len(known) == len(self.nodes):
                        break
                except redis.RedisError:
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the cluster did not become ok (node {node.port})")
                time.sleep(0.05)
            client.close()

    def crash_serving(self, key: str) -> None:
        """SIGKILL the master that serves `key`'s slot; recover() restarts it on its port with
        its nodes.conf, so it rejoins the cluster with its slots, empty (no persistence)."""
        slot = key_slot(key.encode())
        client = redis.Redis(port=self.nodes[0].port)
        served = client.execute_command("CLUSTER", "SLOTS")  # [[first, last, [host, port, id]], …]
        client.close()
        ports = {int(master[1]) for first, last, master, *_ in served if first <= slot <= last}
        for node in self.nodes:
            if node.port in ports:
                node.crash()
                self._crashed = node
                return
        raise RuntimeError(f"no node serves slot {slot}")

    def recover(self) -> None:
        self._crashed.start()
        self.wait_ok()

    def client(self) -> redis.RedisCluster:
        return redis.RedisCluster(host="127.0.0.1", port=self.nodes[0].port)

    def flush(self) -> None:
        for node in self.nodes:
            client = redis.Redis(port=node.port)
            client.flushall()
            client.close()

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()


def redis_client(url: str, **options: Any) -> Any:
    """A client of the STORE at `url`: a Redis, or a RedisCluster for `redis+cluster://`."""
    if not url.startswith(CLUSTER_SCHEME):
        return redis.Redis.from_url(url, **options)
    nodes, _username, _password = cluster_nodes(url)
    return redis.RedisCluster(startup_nodes=[ClusterNode(host, port) for host, port in nodes], **options)


def keyspace_of(url: str) -> Keyspace:
    """The store's key names for `url` (with a cluster's hash tags, or without)."""
    return Keyspace(cluster=url.startswith(CLUSTER_SCHEME))


def keys_naming(url: str, names: set[str]) -> list[str]:
    """Every key of the store at `url` (every master of a cluster) whose name contains one of
    `names`, and the compaction sets' members among them (SCAN, all of it)."""
    client = redis_client(url, decode_responses=True)
    keys = keyspace_of(url)
    try:
        found = [key for key in client.scan_iter(count=1000) if any(name in key for name in names)]
        for index in keys.compact_sets():
            compact = keys.compact(index)
            found += [f"{compact} member {member}" for member in client.zrange(compact, 0, -1) if member in names]
        return sorted(found)
    finally:
        client.close()
