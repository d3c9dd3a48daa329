"""Load and soak: N concurrent event streams against widget-server and a baseline.

Run from the repository root (loopback only; every run has a hard deadline;
every server it starts is killed when the run ends; it stops by itself):

    .venv/bin/python bench/load.py --quick         # N = 100 and 500, no soak (~1.5 min)
    .venv/bin/python bench/load.py                 # N = 100, 500, 1000, 2000 + a 2-minute soak (~7 min)
    .venv/bin/python bench/load.py --n 100,500 --soak-seconds 60
    .venv/bin/python bench/load.py --server-env WIDGET_SERVER_MAX_STREAMS=1000   # try other limits
    .venv/bin/python bench/load.py --n 0 --soak-seconds 300 --budget 480          # a longer soak only
    .venv/bin/python bench/load.py --n 500,2000 --soak-seconds 0 --budget 1800 \
        --setups baseline,memory-1w,redis-2w,redis-cluster-2w                       # docs/performance.md's table

Needs sse-starlette and uvicorn (+ uvloop, httptools) in the venv for the baseline.
Writes bench/results/load.json (rewritten after every run, so an interrupted
run keeps what it measured) and prints markdown tables.

Setups, each started fresh (own free port, own redis-server or cluster) for
every N, in this order for each N whatever the order of --setups (so the
baseline a row is compared with is measured in the same invocation):

- `redis, 2 workers`: the production setup, `widget-server --store
  redis://127.0.0.1:<port>/0 --workers 2` (gunicorn + 2 gevent workers), with
  a redis-server of our own (`--save '' --appendonly no`).
- `redis cluster (3 masters), 2 workers`: the same with `--store
  redis+cluster://127.0.0.1:<p1>,127.0.0.1:<p2>,127.0.0.1:<p3>` (seed nodes),
  a Redis Cluster of our own made fresh for every run: three redis-servers
  `--cluster-enabled yes --cluster-node-timeout 1000 --save '' --appendonly
  no`, each with its own temporary --dir (nodes.conf) and a free port whose
  bus port (port + 10000) is free too, joined by `redis-cli --cluster create
  ... --cluster-replicas 0 --cluster-yes` (no replicas); the server starts
  once every node's CLUSTER INFO says cluster_state:ok. Its ratios to the
  baseline compare 2 processes + 3 redis-servers with one baseline process.
- `memory, 1 worker`: `widget-server --store memory --workers 1`.
- `baseline`: bench/baseline_app.py, sse-starlette on ONE uvicorn process
  (uvloop + httptools). It streams the same events (names, ids, one-line JSON,
  the demo backend's own chunks for the same text, the same pacing, the same
  completed fields) but keeps no store, no log, no limits: it is the floor.
  One uvicorn process is the fair match for ONE gevent worker, so the
  ratios that compare like with like are `memory, 1 worker` / baseline. The
  ratios of `redis, 2 workers` / baseline compare our production deployment
  (2 processes + redis) with one baseline process.

The servers run a copy of widget_server/ (+ static/, templates/) frozen when
the invocation starts (`--live-code`: the work tree), so every run measures
the same code while others edit it; load.json records HEAD, the files changed
since and a digest of the copy.

Both widget setups get WIDGET_SERVER_MAX_STREAMS=10000,
WIDGET_SERVER_MAX_STREAMS_PER_CLIENT=10000 (every client is one address) and
WIDGET_SERVER_WORKER_CONNECTIONS=10000 (the defaults, 1000 and 2000 per
worker, would refuse or queue part of N = 2000), and any RATE_LIMIT setting
found in widget_server.settings is turned off or raised to its bound.

The answer: each client POSTs `/echo <text>`, where <text> is a fixed
50-word text with multi-byte characters (é, →, —, 🎸, 日本語, a combining
accent, a tab and a newline). The demo backend answers it exactly, one word
per `text.delta`, DEMO_DELAY_SECONDS = 0.2 apart: 52 events (started, 50
deltas, completed) over 9.8 s. Word-sized deltas give 49 inter-delta gaps
per stream (the 5-chunk `/scenario improvisation` gives 4), and a 9.8 s
answer keeps all N streams open at once long enough to measure memory.

Each client (raw asyncio sockets on uvloop, a minimal HTTP/1.1 reader, one
connection per request; `--client httpx` for httpx, one AsyncClient per
request as bench/serving.py does): POST /api/v1/conversations, then, after all N exist, POST
/api/v1/conversations/<cid>/messages {"text", "request_id": uuid} with the
Bearer token, read the stream with the project's reader
(widget_server.sse.EventStreamParser) to `message.completed`, rebuild the
text (a delta appends, a snapshot replaces), and check length (code points),
utf8_bytes and sha256 against the completed event and against the text it
expects; `seq` must rise by exactly 1 from 1 and `id` be `<message_id>:<seq>`.

Figures, per setup and N:

- completed/total; exact = rebuilt text matches the completed event's digest
  and the expected text; lost / duplicated characters = difflib opcodes
  between the expected and rebuilt text of completed streams (0/0 if equal);
  seq errors = gaps + repeats (a row's first few: seq_error_examples).
  Pass: all completed, exact, 0 lost, 0 dup.
- events/s = events received by all clients / wall time of the streaming
  phase (first message POST to last stream end). It is bounded by the
  offered load, N x 52 events per ~9.8 s; below that the server is saturated.
- delta latency ("extra gap"): the server sleeps DEMO_DELAY_SECONDS between
  two deltas and no server timestamp is in the events, so for every pair of
  consecutive `text.delta` events of a stream the client measures their
  inter-arrival time and subtracts the pace: extra = (t_k - t_(k-1)) - pace.
  0 means the delta arrived exactly one pace after the previous one; a
  positive value is the delay added by generating, storing, fanning out,
  writing and reading it (and by the client being late to read); deltas that
  arrive together after a stall give one large and some negative values. p50
  and p99 over all gaps of all streams, in ms. Also TTFD, the time from
  sending the message POST to its first `text.delta`, and, within it, the
  time to the POST's status line and headers (`headers_p50_s`, `_p99_s`): how
  long the POST waited for the server and was handled; the rest is the
  answer's start.
- memory per stream: VmRSS (/proc/<pid>/status) of all server processes
  (gunicorn master + workers, + redis-server for the redis setup, + all three
  redis-servers, summed, for the cluster; the uvicorn process for the
  baseline), sampled every 0.5 s. Idle = after a warm-up of
  20 short answers, before the load; loaded = the sample with the most
  streams open at once (max RSS among those); (loaded - idle) / open.
- server CPU = user+system seconds of those processes during the run,
  by kind (`server`: the widget-server master and workers, or the baseline's
  process; `redis`: redis-server, or the three of a cluster summed); CPU per
  event = those seconds / events delivered, in µs, per kind and in total, and
  its ratio to the baseline's total in the same run (a target of
  docs/performance.md, "Targets", with memory per stream and TTFD p50);
  client CPU = this process. Client and server SHARE the machine's 2 cores.
  The raw client is used because httpx cost too much of them: against
  `memory, 1 worker`, its client CPU was several times the raw client's,
  and at N = 2000 it also cut the measured events/s.
- per shard (the cluster only): each redis-server's CPU seconds during the
  run, its share of the three's sum, and the largest share
  (`redis_shard_cpu_share_max`; docs/performance.md, "Targets", asks for at
  most 45 % with 3 shards: a key space spread evenly gives 33 %), plus each
  one's RSS idle and at the loaded sample, and its most called commands
  (`redis_shard_calls`).
  The table gets a column for them when a cluster ran. INFO figures of a
  cluster (commandstats calls, connected clients, used memory, keys) are the
  three nodes' summed; redis_maxclients is per node.
- Each run's hard deadline is 3 answer lengths + 20 s + N/20 s (149 s at
  N = 2000); streams unfinished by then count as not completed.

Soak (default 120 s, `redis, 2 workers`): 500 clients, each with one
conversation, send an answer, read it to completion, check it, send the
next, until the time is up (starts spread over one answer's length so they
do not move in lock step). Reports answers, events, lost/dup characters, and
RSS (server processes / redis-server): idle before; under load at the start
(mean of the samples 2-22 s after the first answer length) and at the end
(mean of the last 20 s); idle after; the server's drift end - start per
answer completed in between; and redis `used_memory` (redis grows by design:
conversations are kept RETENTION, 24 h).
"""

from __future__ import annotations

import argparse
import array
import asyncio
import atexit
import datetime as dt
import difflib
import hashlib
import json
import os
import platform
import random
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from widget_server.backends.demo import split_words  # noqa: E402
from widget_server.sse import EventStreamParser, ServerSentEvent  # noqa: E402

HOST = "127.0.0.1"  # loopback only, by construction
PACE = 0.2  # DEMO_DELAY_SECONDS: the pause between two deltas
WORDS = [
    "Arpeggio",
    "café",
    "naïve",
    "→",
    "señor",
    "—",
    "🎸",
    "日本語",
    "fa\u0301cil",
    "Ωmega",
    "over",
    "Am",
    "F",
    "C",
    "G:",
    "play",
    "**slowly**,",
    "then",
    "`faster`",
    "tab\there",
]
ECHOED = " ".join(WORDS[i % len(WORDS)] for i in range(47)) + "\nEnd."  # 50 word chunks (a tab cuts one), one newline
QUESTION = "/echo " + ECHOED
CHUNKS = split_words(ECHOED)
ANSWER_SECONDS = (len(CHUNKS) - 1) * PACE
# Every client of the bench is one address (loopback): the per-client stream
# cap (MAX_STREAMS_PER_CLIENT, docs/security.md) is raised with the others.
SERVER_LIMITS = {
    "WIDGET_SERVER_MAX_STREAMS": "10000",
    "WIDGET_SERVER_MAX_STREAMS_PER_CLIENT": "10000",
    "WIDGET_SERVER_WORKER_CONNECTIONS": "10000",
}
BIN = Path(sys.executable).parent
assert "".join(CHUNKS) == ECHOED and len(CHUNKS) == 50


@dataclass(frozen=True)
class Setup:
    key: str
    label: str
    store: str | None  # "redis", "redis-cluster" (3 masters), "memory", or None for the baseline
    workers: int


SETUPS = [
    Setup("redis-2w", "widget-server, redis, 2 workers", "redis", 2),
    Setup("redis-cluster-2w", "widget-server, redis cluster (3 masters), 2 workers", "redis-cluster", 2),
    Setup("memory-1w", "widget-server, memory, 1 worker", "memory", 1),
    Setup("baseline", "baseline: sse-starlette + uvicorn, 1 process", None, 1),
]


# -- processes: start, watch, always kill ---------------------------------------------

_CHILDREN: list[subprocess.Popen] = []


def _kill_group(process: subprocess.Popen, first: int = signal.SIGINT, grace: float = 3.0) -> None:
    if process.poll() is None:
        try:
            os.killpg(process.pid, first)
            process.wait(timeout=grace)
        except (subprocess.TimeoutExpired, ProcessLookupError, PermissionError):
            pass
    try:
        os.killpg(process.pid, signal.SIGKILL)  # workers left behind, if any
    except (ProcessLookupError, PermissionError):
        pass
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass
    if process in _CHILDREN:
        _CHILDREN.remove(process)


def _kill_all() -> None:
    for process in list(_CHILDREN):
        _kill_group(process, signal.SIGKILL, 0)


atexit.register(_kill_all)


def start_watchdog(seconds: float) -> None:
    """The whole invocation's hard deadline: kill every server we started, then exit."""

    def fire() -> None:
        print(
            f"\nload.py: hard deadline of {seconds:.0f} s reached; killing servers and exiting",
            file=sys.stderr,
            flush=True,
        )
        _kill_all()
        os._exit(3)

    timer = threading.Timer(seconds, fire)
    timer.daemon = True
    timer.start()


def spawn(command: list[str], env: dict[str, str]) -> subprocess.Popen:
    process = subprocess.Popen(
        command,
        cwd=REPO,
        env=env,
        start_new_session=True,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    _CHILDREN.append(process)
    # Drain stderr in a thread (a full pipe would block the server); keep the tail.
    process.stderr_tail = []  # type: ignore[attr-defined]

    def drain() -> None:
        for line in process.stderr:
            tail = process.stderr_tail  # type: ignore[attr-defined]
            tail.append(line.decode(errors="replace").rstrip())
            del tail[:-40]

    threading.Thread(target=drain, daemon=True).start()
    return process


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


def descendants(pid: int) -> list[int]:
    """pid and all its descendants, from /proc/*/stat."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        ppid = int(stat.rsplit(b")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(children.get(current, []))
    return found


def rss_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status", "rb") as handle:
            for line in handle:
                if line.startswith(b"VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            fields = handle.read().rsplit(b")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / _TICKS  # utime + stime
    except OSError:
        return 0.0


def rate_limit_env() -> tuple[dict[str, str], list[str]]:
    """Turn off / raise any RATE_LIMIT setting of the server code under test (read in a subprocess)."""
    script = (
        "import json; from widget_server.settings import all_settings; print(json.dumps([[s.name, s.env_var, s.default, "
        "s.minimum, s.maximum] for s in all_settings() if 'RATE_LIMIT' in s.name], default=repr))"
    )
    found = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(CODE_DIR)},
    ).stdout
    env, notes = {}, []
    for name, env_var, default, minimum, maximum in json.loads(found):
        setting = argparse.Namespace(name=name, env_var=env_var, default=default, minimum=minimum, maximum=maximum)
        if isinstance(default, bool):
            value = "0"
        elif isinstance(default, (int, float)):
            loosen_by_lowering = any(w in setting.name for w in ("SECONDS", "WINDOW", "PERIOD", "INTERVAL"))
            bound = setting.minimum if loosen_by_lowering else setting.maximum
            if bound is None:
                bound = 1 if loosen_by_lowering else 10**9
            value = str(int(bound) if isinstance(default, int) else float(bound))
        else:
            notes.append(f"{setting.env_var}: left at {default!r}")
            continue
        env[setting.env_var] = value
        notes.append(f"{setting.env_var}={value}")
    return env, notes


CODE_DIR = REPO  # where the servers import widget_server from; main() points it at a frozen copy


def snapshot_code() -> Path:
    """Copy widget_server/, static/ and templates/ as they are now, so every run of this
    invocation measures the same code even while someone edits the work tree."""
    target = Path(tempfile.mkdtemp(prefix="load-code-"))
    atexit.register(shutil.rmtree, target, True)
    for name in ("widget_server", "static", "templates"):
        shutil.copytree(REPO / name, target / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return target


def code_state(code_dir: Path) -> dict:
    """Which server code was measured: HEAD, files changed since, a digest of the copy (read-only git)."""

    def git(*arguments: str) -> str:
        return subprocess.run(
            ["git", "--no-optional-locks", *arguments], cwd=REPO, capture_output=True, text=True
        ).stdout.strip()

    digest = hashlib.sha256()
    for path in sorted((code_dir / "widget_server").rglob("*.py")):
        digest.update(str(path.relative_to(code_dir)).encode() + b"\0" + path.read_bytes())
    return {
        "head": git("rev-parse", "HEAD"),
        "changed": git("status", "--porcelain", "--", "widget_server").splitlines(),
        "widget_server_sha256": digest.hexdigest()[:16],
        "frozen_copy": code_dir != REPO,
    }


def free_cluster_port() -> int:
    """A free loopback port whose cluster bus port (the port + 10000) is free too, so below 55536."""
    for _ in range(200):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind((HOST, 0))
            port = sock.getsockname()[1]
            if port + 10000 > 65535:
                continue
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as bus:
                try:
                    bus.bind((HOST, port + 10000))
                except OSError:
                    continue
            return port
    raise RuntimeError("no free port pair (port, port + 10000) for a cluster node")


class Redis:
    def __init__(self, port: int | None = None, extra_arguments: tuple[str, ...] = ()) -> None:
        import redis

        self.port = port or free_port()
        self.process = spawn(
            [
                "/usr/bin/redis-server",
                "--port",
                str(self.port),
                "--bind",
                HOST,
                "--save",
                "",
                "--appendonly",
                "no",
                "--maxclients",
                "10000",
                "--loglevel",
                "warning",
                "--daemonize",
                "no",
                *extra_arguments,
            ],
            dict(os.environ),
        )
        self.client = redis.Redis(host=HOST, port=self.port, socket_timeout=2)
        deadline = time.monotonic() + 10
        while True:
            try:
                self.client.ping()
                break
            except redis.RedisError as error:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    raise RuntimeError(f"redis-server did not start: {self.process.stderr_tail}") from error  # type: ignore[attr-defined]
                time.sleep(0.05)
        self.maxclients = int(self.client.config_get("maxclients")["maxclients"])

    @property
    def url(self) -> str:
        return f"redis://{HOST}:{self.port}/0"

    def info(self, section: str) -> dict:
        try:
            return self.client.info(section)
        except Exception:
            return {}

    def dbsize(self) -> int | None:
        try:
            return self.client.dbsize()
        except Exception:
            return None

    def pids(self) -> list[int]:
        return [self.process.pid]

    def stop(self) -> None:
        try:
            self.client.close()
        except Exception:
            pass
        _kill_group(self.process, signal.SIGTERM, 2.0)


def _merge_info(parts: list[dict]) -> dict:
    """INFO of several redis-servers as one: numbers summed (nested dicts too, e.g. commandstats)."""
    merged: dict = {}
    for part in parts:
        for key, value in part.items():
            if isinstance(value, dict):
                merged[key] = _merge_info([merged.get(key) or {}, value])
            elif isinstance(value, (int, float)) and not isinstance(value, bool):
                merged[key] = merged.get(key, 0) + value
            else:
                merged.setdefault(key, value)
    return merged


class RedisCluster:
    """A fresh Redis Cluster of `masters` redis-servers (no replicas, no persistence), each on
    its own free port pair (port, bus port = port + 10000) with its own directory for its
    nodes.conf, made with `redis-cli --cluster create`. Same face as Redis for the bench:
    url, info() (summed over the nodes), dbsize(), pids(), maxclients (per node), stop()."""

    def __init__(self, masters: int = 3) -> None:
        import redis

        self.directory = Path(tempfile.mkdtemp(prefix="load-cluster-"))
        self.nodes: list[Redis] = []
        try:
            for index in range(masters):
                directory = self.directory / f"node{index}"
                directory.mkdir()
                arguments = ("--cluster-enabled", "yes", "--cluster-node-timeout", "1000", "--dir", str(directory))
                self.nodes.append(Redis(free_cluster_port(), arguments))
            created = subprocess.run(
                [
                    shutil.which("redis-cli") or "/usr/bin/redis-cli",
                    "--cluster",
                    "create",
                    *(f"{HOST}:{node.port}" for node in self.nodes),
                    "--cluster-replicas",
                    "0",
                    "--cluster-yes",
                ],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=60,
            )
            if created.returncode != 0:
                raise RuntimeError(f"redis-cli --cluster create failed: {(created.stdout + created.stderr)[-800:]}")
            # Until every node says cluster_state:ok and knows every master.
            deadline = time.monotonic() + 30
            for node in self.nodes:
                while True:
                    try:
                        info = node.client.cluster("info")
                        known = node.client.cluster("nodes")
                        if info.get("cluster_state") == "ok" and len(known) == masters:
                            break
                    except redis.RedisError:
                        pass
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"the cluster did not become ok (node {node.port})")
                    time.sleep(0.05)
        except BaseException:
            self.stop()
            raise
        self.maxclients = min(node.maxclients for node in self.nodes)

    @property
    def url(self) -> str:
        return "redis+cluster://" + ",".join(f"{HOST}:{node.port}" for node in self.nodes)

    def info(self, section: str) -> dict:
        return _merge_info([node.info(section) for node in self.nodes])

    def dbsize(self) -> int | None:
        sizes = [node.dbsize() for node in self.nodes]
        return sum(size for size in sizes if size is not None) if None not in sizes else None

    def pids(self) -> list[int]:
        return [node.process.pid for node in self.nodes]

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()
        shutil.rmtree(self.directory, ignore_errors=True)


class Server:
    """One server under test (and its redis), its processes and their RSS."""

    def __init__(self, setup: Setup, extra_env: dict[str, str]) -> None:
        self.setup = setup
        self.port = free_port()
        self.redis: Redis | RedisCluster | None = None
        if setup.store == "redis":
            self.redis = Redis()
        elif setup.store == "redis-cluster":
            self.redis = RedisCluster(3)
        env = {
            **os.environ,
            "WIDGET_SERVER_DEMO_DELAY_SECONDS": str(PACE),
            "PYTHONPATH": os.pathsep.join(
                dict.fromkeys(
                    [str(CODE_DIR), str(REPO), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
                )
            ),
        }
        if setup.store is None:
            command = [
                sys.executable,
                "-m",
                "uvicorn",
                "bench.baseline_app:app",
                "--host",
                HOST,
                "--port",
                str(self.port),
                "--loop",
                "uvloop",
                "--http",
                "httptools",
                "--no-access-log",
                "--log-level",
                "warning",
                "--timeout-graceful-shutdown",
                "1",
            ]
        else:
            store = self.redis.url if self.redis else "memory"
            env.update(SERVER_LIMITS)
            env.update(extra_env)
            env["WIDGET_SERVER_LOG_LEVEL"] = "WARNING"
            command = [
                str(BIN / "widget-server"),
                "--host",
                HOST,
                "--port",
                str(self.port),
                "--store",
                store,
                "--workers",
                str(setup.workers),
                "--log-level",
                "warning",
            ]
        self.process = spawn(command, env)
        self.base = f"http://{HOST}:{self.port}"
        assert self.base.startswith("http://127.0.0.1:")

    def wait_ready(self, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError("server exited: " + "\n".join(self.process.stderr_tail))  # type: ignore[attr-defined]
            try:
                with socket.create_connection((HOST, self.port), timeout=1) as sock:
                    sock.sendall(f"GET /healthz HTTP/1.1\r\nHost: {HOST}\r\nConnection: close\r\n\r\n".encode())
                    # Healthy, and all workers up? gunicorn forks them right after binding.
                    processes = self.setup.workers + (0 if self.setup.store is None else 1)
                    if sock.recv(64).startswith(b"HTTP/1.1 200") and len(self.server_pids()) >= processes:
                        return
            except OSError:
                pass
            time.sleep(0.1)
        raise RuntimeError("server not ready in time")

    def server_pids(self) -> list[int]:
        return descendants(self.process.pid)

    def rss(self) -> dict:
        """KiB per role: server (master + workers, or uvicorn) and redis (a cluster's three
        summed, and each of them in `redis_shards`)."""
        sizes: dict = {"server": sum(rss_kib(pid) for pid in self.server_pids())}
        if self.redis:
            sizes["redis"] = sum(rss_kib(pid) for pid in self.redis.pids())
        sizes["total"] = sizes["server"] + sizes.get("redis", 0)
        if isinstance(self.redis, RedisCluster):
            sizes["redis_shards"] = [rss_kib(pid) for pid in self.redis.pids()]
        return sizes

    def cpu_by_pid(self) -> dict[int, float]:
        return {pid: cpu_seconds(pid) for pid in self.server_pids()}

    def cpu(self) -> dict[str, float]:
        times = {"server": sum(cpu_seconds(pid) for pid in self.server_pids())}
        if self.redis:
            times["redis"] = sum(cpu_seconds(pid) for pid in self.redis.pids())
        return times

    def redis_shard_cpu(self) -> list[float]:
        """CPU seconds of each redis-server of a cluster (its shards); [] otherwise."""
        return [cpu_seconds(pid) for pid in self.redis.pids()] if isinstance(self.redis, RedisCluster) else []

    def stop(self) -> list[str]:
        tail = list(self.process.stderr_tail)  # type: ignore[attr-defined]
        _kill_group(self.process, signal.SIGINT, 3.0)
        if self.redis:
            self.redis.stop()
        return tail


# -- the client -------------------------------------------------------------------------


class HttpError(Exception):
    pass


class RawResponse:
    """A response read with asyncio streams: status, headers, body chunks as they arrive."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, status: int, headers: dict) -> None:
        self.reader, self.writer, self.status, self.headers = reader, writer, status, headers

    async def chunks(self):
        reader = self.reader
        if "chunked" in self.headers.get("transfer-encoding", ""):
            while True:
                line = await reader.readline()
                if not line:
                    return  # EOF without the last chunk: the caller sees no terminal event
                size = int(line.split(b";", 1)[0], 16)
                if size == 0:
                    return
                data = await reader.readexactly(size + 2)
                yield data[:-2]
        elif "content-length" in self.headers:
            yield await reader.readexactly(int(self.headers["content-length"]))
        else:
            while True:
                data = await reader.read(65536)
                if not data:
                    return
                yield data

    async def body(self) -> bytes:
        return b"".join([chunk async for chunk in self.chunks()])

    async def aclose(self) -> None:
        self.writer.close()
        try:
            await self.writer.wait_closed()
        except Exception:
            pass


async def raw_request(port: int, method: str, path: str, headers: dict[str, str], body: bytes = b"") -> RawResponse:
    reader, writer = await asyncio.open_connection(HOST, port)
    try:
        head = [
            f"{method} {path} HTTP/1.1",
            f"Host: {HOST}:{port}",
            "Connection: close",
            f"Content-Length: {len(body)}",
        ]
        head += [f"{name}: {value}" for name, value in headers.items()]
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body)
        raw = await reader.readuntil(b"\r\n\r\n")
        lines = raw.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        parsed = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            if name:
                parsed[name.strip().lower()] = (
                    value.strip().lower() if name.lower() == "transfer-encoding" else value.strip()
                )
        return RawResponse(reader, writer, status, parsed)
    except BaseException:
        writer.close()
        raise


class HttpxResponse:
    def __init__(self, client, response) -> None:
        self.client, self.response, self.status = client, response, response.status_code
        self.headers = {k.lower(): v for k, v in response.headers.items()}

    async def chunks(self):
        async for chunk in self.response.aiter_raw():
            yield chunk

    async def body(self) -> bytes:
        return await self.response.aread()

    async def aclose(self) -> None:
        await self.response.aclose()
        await self.client.aclose()


_HTTPX_SSL = None


async def httpx_request(port: int, method: str, path: str, headers: dict[str, str], body: bytes = b"") -> HttpxResponse:
    # One client per request, as bench/serving.py found (a shared client's pool measured itself).
    import ssl

    import httpx

    global _HTTPX_SSL
    if _HTTPX_SSL is None:
        _HTTPX_SSL = ssl.create_default_context()
    client = httpx.AsyncClient(timeout=httpx.Timeout(600), verify=_HTTPX_SSL)
    try:
        request = client.build_request(method, f"http://{HOST}:{port}{path}", headers=headers, content=body)
        return HttpxResponse(client, await client.send(request, stream=True))
    except BaseException:
        await client.aclose()
        raise


REQUEST = raw_request  # --client httpx swaps it


async def error_of(response) -> str:
    try:
        code = json.loads(await response.body())["error"]["code"]
    except Exception:
        code = "?"
    return f"HTTP {response.status} {code}"


async def create_conversation(port: int) -> tuple[str, str]:
    response = await REQUEST(port, "POST", "/api/v1/conversations", {})
    try:
        if response.status != 201:
            raise HttpError("create: " + await error_of(response))
        data = json.loads(await response.body())
        return data["conversation_id"], data["token"]
    finally:
        await response.aclose()


@dataclass
class Totals:
    """Shared by all clients of one run; lists of floats kept as compact arrays."""

    open: int = 0
    max_open: int = 0
    events: int = 0
    gaps: array.array = field(default_factory=lambda: array.array("d"))
    ttfd: array.array = field(default_factory=lambda: array.array("d"))
    # Message POST sent -> its response's status line and headers: how long the POST waited
    # and was handled; TTFD less this is the answer's start (generation, store, reader).
    headers: array.array = field(default_factory=lambda: array.array("d"))
    results: list = field(default_factory=list)


def char_diff(expected: str, got: str) -> tuple[int, int]:
    """(lost, duplicated/extra) code points between the expected and the rebuilt text."""
    if expected == got:
        return 0, 0
    lost = extra = 0
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, expected, got, autojunk=False).get_opcodes():
        if op in ("delete", "replace"):
            lost += i2 - i1
        if op in ("insert", "replace"):
            extra += j2 - j1
    return lost, extra


async def one_answer(port: int, cid: str, token: str, totals: Totals) -> dict:
    result = {"completed": False, "exact": False, "lost": 0, "dup": 0, "seq_errors": 0, "events": 0, "error": None}
    body = json.dumps({"text": QUESTION, "request_id": str(uuid.uuid4())}, ensure_ascii=False).encode()
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    opened = False
    response = None
    try:
        sent = time.monotonic()
        response = await REQUEST(port, "POST", f"/api/v1/conversations/{cid}/messages", headers, body)
        if response.status != 200:
            result["error"] = await error_of(response)
            return result
        totals.headers.append(time.monotonic() - sent)
        opened = True
        totals.open += 1
        totals.max_open = max(totals.max_open, totals.open)
        events: list[ServerSentEvent] = []
        parser = EventStreamParser(events.append)
        text, last_seq, message_id, completed, previous = "", 0, None, None, None
        gaps = totals.gaps
        async for chunk in response.chunks():
            now = time.monotonic()
            parser.feed(chunk)
            for event in events:
                data = json.loads(event.data)
                seq = data["seq"]
                result["events"] += 1
                message_id = message_id or data["message_id"]
                if seq != last_seq + 1 or event.id != f"{message_id}:{seq}":
                    result["seq_errors"] += 1
                    if len(result.setdefault("seq_error_examples", [])) < 3:
                        result["seq_error_examples"].append(
                            f"{event.event} seq {seq} after {last_seq}, id {event.id!r} (message {message_id})"
                        )
                last_seq = max(last_seq, seq)
                kind = event.event
                if kind == "text.delta":
                    text += data["text"]
                    if previous is None:
                        totals.ttfd.append(now - sent)
                        result["ttfd"] = now - sent
                    else:
                        gaps.append(now - previous - PACE)
                    previous = now
                elif kind == "message.snapshot":
                    text = data["text"]
                elif kind == "message.completed":
                    completed = data
                elif kind in ("message.failed", "message.cancelled"):
                    result["error"] = kind + ": " + json.dumps(data.get("error", {}).get("code"))
            totals.events += len(events)
            events.clear()
        if completed is None:
            result["error"] = result["error"] or "closed without message.completed"
            return result
        result["completed"] = True
        encoded = text.encode("utf-8")
        result["lost"], result["dup"] = char_diff(ECHOED, text)
        result["exact"] = (
            completed["sha256"] == hashlib.sha256(encoded).hexdigest()
            and completed["length"] == len(text)
            and completed["utf8_bytes"] == len(encoded)
            and text == ECHOED
            and result["seq_errors"] == 0
            and last_seq == completed["seq"]
        )
    except asyncio.CancelledError:
        result["error"] = "deadline"
        raise
    except Exception as error:  # counted, not raised: one broken stream must not hide the others
        result["error"] = f"{type(error).__name__}: {error}"[:200]
    finally:
        if opened:
            totals.open -= 1
        if response is not None:
            await response.aclose()
    return result


def percentile(values, p: float) -> float | None:
    if not len(values):
        return None
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(p / 100 * len(ordered) + 0.5) - 1))  # nearest rank
    return ordered[index]


class Sampler:
    """Every 0.5 s: open streams (client side), RSS per role, redis clients."""

    def __init__(self, server: Server, totals: Totals) -> None:
        self.server, self.totals, self.samples = server, totals, []
        self.started = time.monotonic()

    def sample(self) -> dict:
        entry = {"t": round(time.monotonic() - self.started, 2), "open": self.totals.open, **self.server.rss()}
        if self.server.redis:
            entry["redis_clients"] = self.server.redis.info("clients").get("connected_clients")
        self.samples.append(entry)
        return entry

    async def run(self) -> None:
        while True:
            self.sample()
            await asyncio.sleep(0.5)

    def loaded(self) -> dict | None:
        if not self.samples:
            return None
        most = max(s["open"] for s in self.samples)
        return max((s for s in self.samples if s["open"] == most), key=lambda s: s["total"])


async def warm_up(port: int) -> None:
    """20 short answers, so both workers have imported and allocated what a stream needs."""

    async def one() -> None:
        cid, token = await create_conversation(port)
        body = json.dumps({"text": "/echo warm up", "request_id": str(uuid.uuid4())}).encode()
        response = await REQUEST(
            port,
            "POST",
            f"/api/v1/conversations/{cid}/messages",
            {"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
            body,
        )
        try:
            await response.body()
        finally:
            await response.aclose()

    await asyncio.wait_for(asyncio.gather(*(one() for _ in range(20))), 30)


async def load_run(server: Server, n: int, deadline_s: float) -> dict:
    port = server.port
    await warm_up(port)
    await asyncio.sleep(1.0)
    idle = server.rss()
    totals = Totals()
    sampler = Sampler(server, totals)
    sampling = asyncio.create_task(sampler.run())
    cpu_server, cpu_client, cpu_pids = server.cpu(), time.process_time(), server.cpu_by_pid()
    cpu_shards = server.redis_shard_cpu()
    hard = time.monotonic() + deadline_s
    try:
        # Phase 1: N conversations (not timed as streaming).
        created_at = time.monotonic()
        made = await asyncio.wait_for(
            asyncio.gather(*(create_conversation(port) for _ in range(n)), return_exceptions=True),
            max(5, hard - time.monotonic()),
        )
        create_s = time.monotonic() - created_at
        conversations = [c for c in made if isinstance(c, tuple)]
        create_errors = [f"{type(e).__name__}: {e}"[:120] for e in made if not isinstance(e, tuple)]
        # Phase 2: all N message POSTs at once; read every stream to its end.
        start = time.monotonic()
        tasks = [asyncio.create_task(one_answer(port, cid, token, totals)) for cid, token in conversations]
        done, pending = await asyncio.wait(tasks, timeout=max(1, hard - time.monotonic())) if tasks else (set(), set())
        wall = time.monotonic() - start
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        results = [t.result() for t in done]
        results += [
            {"completed": False, "exact": False, "lost": 0, "dup": 0, "seq_errors": 0, "events": 0, "error": "deadline"}
        ] * len(pending)
        results += [
            {"completed": False, "exact": False, "lost": 0, "dup": 0, "seq_errors": 0, "events": 0, "error": e}
            for e in create_errors
        ]
    finally:
        sampling.cancel()
        await asyncio.gather(sampling, return_exceptions=True)
    cpu_after = server.cpu()
    shards_used = [after - before for after, before in zip(server.redis_shard_cpu(), cpu_shards, strict=True)]
    loaded = sampler.loaded()
    errors: dict[str, int] = {}
    for r in results:
        if r["error"]:
            errors[r["error"]] = errors.get(r["error"], 0) + 1
    per_stream = None
    if loaded and loaded["open"]:
        per_stream = (loaded["total"] - idle["total"]) / loaded["open"]
    gaps, ttfd = totals.gaps, totals.ttfd
    ms = lambda v: None if v is None else round(v * 1000, 1)  # noqa: E731
    row = {
        "n": n,
        "create_s": round(create_s, 2),
        "wall_s": round(wall, 2),
        "completed": sum(r["completed"] for r in results),
        "exact": sum(r["exact"] for r in results),
        "lost_chars": sum(r["lost"] for r in results),
        "dup_chars": sum(r["dup"] for r in results),
        "seq_errors": sum(r["seq_errors"] for r in results),
        "events": totals.events,
        "events_per_s": round(totals.events / wall, 1) if wall else None,
        "offered_events_per_s": round(n * (len(CHUNKS) + 2) / ANSWER_SECONDS, 1),
        "extra_gap_p50_ms": ms(percentile(gaps, 50)),
        "extra_gap_p99_ms": ms(percentile(gaps, 99)),
        "extra_gap_max_ms": ms(max(gaps) if gaps else None),
        "gaps": len(gaps),
        "ttfd_p50_s": None if not ttfd else round(percentile(ttfd, 50), 3),
        "ttfd_p99_s": None if not ttfd else round(percentile(ttfd, 99), 3),
        "headers_p50_s": None if not totals.headers else round(percentile(totals.headers, 50), 3),
        "headers_p99_s": None if not totals.headers else round(percentile(totals.headers, 99), 3),
        "max_open": totals.max_open,
        "rss_idle_kib": idle,
        "rss_loaded_kib": loaded,
        "kib_per_stream": None if per_stream is None else round(per_stream, 1),
        # To the clock tick (/proc's 0.01 s), not to 0.1 s: CPU per event is computed from
        # these, and at N=500 a server spends only a second or two, so a tenth of a second
        # was a step of several percent in every ratio to the baseline.
        "server_cpu_s": {k: round(cpu_after[k] - cpu_server[k], 2) for k in cpu_after},
        "client_cpu_s": round(time.process_time() - cpu_client, 2),
        "cpu_per_server_process_s": sorted(
            (round(v - cpu_pids.get(pid, 0.0), 2) for pid, v in server.cpu_by_pid().items()), reverse=True
        ),
        "errors": dict(sorted(errors.items(), key=lambda kv: -kv[1])[:6]),
    }
    if server.redis:
        stats = server.redis.info("commandstats")
        row["redis_calls"] = {
            k.removeprefix("cmdstat_"): v["calls"] for k, v in sorted(stats.items(), key=lambda kv: -kv[1]["calls"])
        }
        row["redis_maxclients"] = server.redis.maxclients
        row["redis_peak_clients"] = max((s.get("redis_clients") or 0) for s in sampler.samples)
    examples = [e for r in results for e in r.get("seq_error_examples", [])]
    if examples:
        row["seq_error_examples"] = examples[:6]  # what the first few seq / id errors were
    if shards_used and isinstance(server.redis, RedisCluster):
        # A cluster: each shard's (redis-server's) CPU and its share of the cluster's
        # (docs/performance.md, "Targets": no shard of 3 carries more than 45 %). RSS per shard:
        # idle and at the loaded sample.
        redis_total = sum(shards_used)
        row["redis_shard_cpu_s"] = [round(v, 2) for v in shards_used]
        row["redis_shard_cpu_share"] = [round(v / redis_total, 3) if redis_total else None for v in shards_used]
        row["redis_shard_cpu_share_max"] = round(max(shards_used) / redis_total, 3) if redis_total else None
        row["redis_shard_rss_idle_kib"] = idle.get("redis_shards")
        row["redis_shard_rss_loaded_kib"] = loaded.get("redis_shards") if loaded else None
        row["redis_shard_calls"] = [
            {
                k.removeprefix("cmdstat_"): v["calls"]
                for k, v in sorted(node.info("commandstats").items(), key=lambda kv: -kv[1]["calls"])[:8]
            }
            for node in server.redis.nodes
        ]
    row["passed"] = row["completed"] == n and row["exact"] == n and not row["lost_chars"] and not row["dup_chars"]
    return row


async def soak_run(server: Server, n: int, seconds: float, deadline_s: float) -> dict:
    port = server.port
    await warm_up(port)
    await asyncio.sleep(1.0)
    idle_before = server.rss()
    redis_before = server.redis.info("memory").get("used_memory") if server.redis else None
    totals = Totals()
    sampler = Sampler(server, totals)
    sampling = asyncio.create_task(sampler.run())
    start = time.monotonic()
    stop_at, hard = start + seconds, start + deadline_s
    rng = random.Random(1)

    async def client(offset: float) -> None:
        await asyncio.sleep(offset)
        conversation = None
        while time.monotonic() < stop_at:
            try:
                conversation = conversation or await create_conversation(port)
            except Exception as error:
                totals.results.append(
                    {
                        "completed": False,
                        "exact": False,
                        "lost": 0,
                        "dup": 0,
                        "seq_errors": 0,
                        "events": 0,
                        "error": f"create: {type(error).__name__}: {error}"[:120],
                    }
                )
                await asyncio.sleep(1)
                continue
            result = await one_answer(port, *conversation, totals)
            result["ended_at"] = time.monotonic() - sampler.started
            totals.results.append(result)
            if not result["completed"]:
                conversation = None  # start afresh, after a pause
                await asyncio.sleep(1)

    tasks = [asyncio.create_task(client(rng.uniform(0, ANSWER_SECONDS))) for _ in range(n)]
    cpu_server, cpu_client = server.cpu(), time.process_time()
    _done, pending = await asyncio.wait(tasks, timeout=max(1, hard - time.monotonic()))
    wall = time.monotonic() - start
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)
    cpu_after = server.cpu()
    sampling.cancel()
    await asyncio.gather(sampling, return_exceptions=True)
    await asyncio.sleep(2.0)
    idle_after = server.rss()
    redis_after = server.redis.info("memory").get("used_memory") if server.redis else None
    redis_keys = server.redis.dbsize() if server.redis else None
    results = totals.results
    full = [s for s in sampler.samples if s["open"] >= n * 0.95]
    first, last = (full[0], full[-1]) if full else (None, None)
    # the same-load samples: first and last 20 s of the steady part
    errors: dict[str, int] = {}
    for r in results:
        if r["error"]:
            errors[r["error"]] = errors.get(r["error"], 0) + 1
    window = [s for s in sampler.samples if s["t"] <= seconds]
    early = [s for s in window if ANSWER_SECONDS + 2 <= s["t"] <= ANSWER_SECONDS + 22]
    late = [s for s in window if seconds - 20 <= s["t"]]
    mean = lambda xs, k: round(sum(s[k] for s in xs) / len(xs)) if xs else None  # noqa: E731
    row = {
        "n": n,
        "seconds": seconds,
        "wall_s": round(wall, 1),
        "answers": len(results),
        "completed": sum(r["completed"] for r in results),
        "exact": sum(r["exact"] for r in results),
        "lost_chars": sum(r["lost"] for r in results),
        "dup_chars": sum(r["dup"] for r in results),
        "seq_errors": sum(r["seq_errors"] for r in results),
        "events": totals.events,
        "events_per_s": round(totals.events / wall, 1),
        "extra_gap_p50_ms": None if not totals.gaps else round(percentile(totals.gaps, 50) * 1000, 1),
        "extra_gap_p99_ms": None if not totals.gaps else round(percentile(totals.gaps, 99) * 1000, 1),
        "rss_idle_before_kib": idle_before,
        "rss_idle_after_kib": idle_after,
        "rss_first_full_kib": first,
        "rss_last_full_kib": last,
        "rss_mean_early_kib": {k: mean(early, k) for k in ("server", "redis", "total") if early and k in early[0]},
        "rss_mean_late_kib": {k: mean(late, k) for k in ("server", "redis", "total") if late and k in late[0]},
        "redis_used_memory_before": redis_before,
        "redis_used_memory_after": redis_after,
        "redis_keys_after": redis_keys,
        "server_cpu_s": {k: round(cpu_after[k] - cpu_server[k], 2) for k in cpu_after},
        "client_cpu_s": round(time.process_time() - cpu_client, 2),
        "errors": dict(sorted(errors.items(), key=lambda kv: -kv[1])[:6]),
        "rss_samples": sampler.samples[:: max(1, len(sampler.samples) // 60)],
    }
    windows = {}
    for r in results:
        if r.get("ended_at") is not None:
            windows.setdefault(int(r["ended_at"] // 30), []).append(r)
    row["per_30s"] = [
        {
            "from_s": k * 30,
            "answers": len(v),
            "ttfd_p50_s": round(percentile([r["ttfd"] for r in v if r.get("ttfd")], 50) or 0, 3),
        }
        for k, v in sorted(windows.items())
    ]
    if early and late:
        drift = row["rss_mean_late_kib"]["server"] - row["rss_mean_early_kib"]["server"]
        between = sum(1 for r in results if r.get("ended_at") and early[-1]["t"] <= r["ended_at"] <= late[0]["t"])
        row["server_drift_kib"] = drift
        row["answers_between_windows"] = between
        row["server_drift_bytes_per_answer"] = round(drift * 1024 / between) if between else None
    row["passed"] = (
        row["answers"] > 0
        and row["completed"] == row["answers"]
        and row["exact"] == row["answers"]
        and not row["lost_chars"]
        and not row["dup_chars"]
    )
    return row


# -- driving it ---------------------------------------------------------------------


def run_in_fresh_server(setup: Setup, extra_env: dict[str, str], coroutine_factory) -> tuple[dict, list[str]]:
    server = None
    tail: list[str] = []
    try:
        server = Server(setup, extra_env)
        server.wait_ready()
        row = asyncio.run(coroutine_factory(server), debug=False)
    except Exception as error:
        row = {"failed_to_run": f"{type(error).__name__}: {error}"[:500]}
    finally:
        if server is not None:
            tail = server.stop()
    return row, tail


def fmt(value, spec: str = "", dash: str = "—") -> str:
    return dash if value is None else format(value, spec)


def ratio(a, b) -> str:
    if a is None or b is None or b == 0:
        return "—"
    return f"{a / b:.2f}×"


def cpu_per_event_us(row: dict) -> dict[str, float]:
    """Server CPU per delivered event, in µs: each kind of server process (`server`: the
    workers and their master, or the baseline's process; `redis`) and their `total` (issue
    16's measure: what a site pays per event, whatever runs it)."""
    events = row.get("events") or 0
    if not events:
        return {}
    per = {kind: seconds / events * 1e6 for kind, seconds in row["server_cpu_s"].items()}
    per["total"] = sum(row["server_cpu_s"].values()) / events * 1e6
    return per


def shard_cell(row: dict) -> str:
    """A cluster's redis CPU per shard, s (share), and the largest share; "—" without shards."""
    if not row.get("redis_shard_cpu_s"):
        return "—"
    shares = row["redis_shard_cpu_share"]
    per = " / ".join(
        f"{cpu:.1f}" + ("" if share is None else f" ({share * 100:.0f} %)")
        for cpu, share in zip(row["redis_shard_cpu_s"], shares, strict=True)
    )
    largest = row.get("redis_shard_cpu_share_max")
    return f"{per}; max {'—' if largest is None else format(largest * 100, '.0f')} %"


def markdown(rows: list[dict]) -> str:
    # The shard column only when a cluster setup ran (the table of the other setups is unchanged).
    shards = any(r.get("redis_shard_cpu_s") for r in rows)
    lines = [
        "| setup | N | completed | exact | lost / dup chars | events/s (offered) | extra gap p50 / p99 (ms) "
        "| TTFD p50 / p99 (s) | KiB per stream (open) | ratio vs baseline: ev/s, p50, p99, mem | CPU server / client (s) "
        "| CPU per event, µs: server + redis = total | ratio vs baseline: CPU/event, mem, TTFD p50 |"
        + (" redis CPU per shard, s (share of redis CPU); largest share |" if shards else ""),
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
        + (" ---: |" if shards else ""),
    ]
    baselines = {r["n"]: r for r in rows if r.get("setup") == "baseline" and "completed" in r}
    for row in rows:
        if "completed" not in row:
            lines.append(
                f"| {row['label']} | {row['n']} | {row.get('failed_to_run', row.get('skipped', '?'))} | | | | | | | | | | |"
                + (" |" if shards else "")
            )
            continue
        base = baselines.get(row["n"])
        ratios = "—"
        if base and row["setup"] != "baseline":
            ratios = ", ".join(
                [
                    ratio(row["events_per_s"], base["events_per_s"]),
                    ratio(row["extra_gap_p50_ms"], base["extra_gap_p50_ms"]),
                    ratio(row["extra_gap_p99_ms"], base["extra_gap_p99_ms"]),
                    ratio(row["kib_per_stream"], base["kib_per_stream"]),
                ]
            )
        cpu = "+".join(f"{v:.2f}" for v in row["server_cpu_s"].values())
        per_event = cpu_per_event_us(row)
        parts = [f"{per_event[kind]:.0f}" for kind in row["server_cpu_s"]]
        cost = " + ".join(parts) + (f" = {per_event['total']:.0f}" if len(parts) > 1 else "") if per_event else "—"
        cost_ratios = "—"
        if base and row["setup"] != "baseline" and per_event and cpu_per_event_us(base):
            cost_ratios = ", ".join(
                [
                    ratio(per_event["total"], cpu_per_event_us(base)["total"]),
                    ratio(row["kib_per_stream"], base["kib_per_stream"]),
                    ratio(row["ttfd_p50_s"], base["ttfd_p50_s"]),
                ]
            )
        lines.append(
            f"| {row['label']} | {row['n']} | {row['completed']}/{row['n']} | {row['exact']}/{row['n']} "
            f"| {row['lost_chars']} / {row['dup_chars']} | {row['events_per_s']:.0f} ({row['offered_events_per_s']:.0f}) "
            f"| {fmt(row['extra_gap_p50_ms'], '.1f')} / {fmt(row['extra_gap_p99_ms'], '.1f')} "
            f"| {fmt(row['ttfd_p50_s'], '.3f')} / {fmt(row['ttfd_p99_s'], '.3f')} "
            f"| {fmt(row['kib_per_stream'], '.1f')} ({row['rss_loaded_kib']['open'] if row['rss_loaded_kib'] else '—'}) "
            f"| {ratios} | {cpu} / {row['client_cpu_s']:.1f} | {cost} | {cost_ratios} |"
            + (f" {shard_cell(row)} |" if shards else "")
        )
    return "\n".join(lines)


def soak_markdown(row: dict) -> str:
    if "answers" not in row:
        return f"soak: {row}"
    mib = lambda s, k: "—" if not s or s.get(k) is None else f"{s[k] / 1024:.1f}"  # noqa: E731
    pair = lambda s: f"{mib(s, 'server')} / {mib(s, 'redis')}"  # noqa: E731
    lines = [
        "| setup | clients | s | answers completed | exact | lost / dup chars | events | events/s "
        "| extra gap p50 / p99 (ms) | RSS MiB server / redis: idle before | loaded, start | loaded, end | idle after "
        "| server drift end − start |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        f"| {row['label']} | {row['n']} | {row['seconds']:.0f} | {row['completed']}/{row['answers']} | {row['exact']} "
        f"| {row['lost_chars']} / {row['dup_chars']} | {row['events']} | {row['events_per_s']:.0f} "
        f"| {fmt(row['extra_gap_p50_ms'], '.1f')} / {fmt(row['extra_gap_p99_ms'], '.1f')} "
        f"| {pair(row['rss_idle_before_kib'])} | {pair(row['rss_mean_early_kib'])} | {pair(row['rss_mean_late_kib'])} "
        f"| {pair(row['rss_idle_after_kib'])} | {fmt(row.get('server_drift_kib'), '+.0f')} KiB "
        f"({fmt(row.get('server_drift_bytes_per_answer'), '+.0f')} B/answer) |",
        "",
        "answers completed per 30 s (TTFD p50): "
        + ", ".join(f"{w['answers']} ({w['ttfd_p50_s']:.2f} s)" for w in row.get("per_30s", [])),
    ]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="N = 100 and 500, no soak")
    parser.add_argument("--n", help="comma-separated N values (default 100,500,1000,2000; 0: none, soak only)")
    parser.add_argument("--soak-seconds", type=float, default=None, help="soak length (default 120; 0: no soak)")
    parser.add_argument("--soak-n", type=int, default=500)
    parser.add_argument(
        "--setups",
        default=",".join(s.key for s in SETUPS),
        help="comma-separated subset of " + ", ".join(s.key for s in SETUPS),
    )
    parser.add_argument("--soak-setup", default="redis-2w")
    parser.add_argument("--client", choices=("raw", "httpx"), default="raw")
    parser.add_argument(
        "--server-env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="extra environment for the widget servers (after the raised limits)",
    )
    parser.add_argument(
        "--live-code", action="store_true", help="run the servers from the work tree, not from a copy frozen at start"
    )
    parser.add_argument("--budget", type=float, default=None, help="hard deadline of the whole invocation, s")
    parser.add_argument("--output", default=str(REPO / "bench" / "results" / "load.json"))
    args = parser.parse_args()

    ns = (
        [int(v) for v in args.n.split(",") if int(v) > 0]
        if args.n
        else ([100, 500] if args.quick else [100, 500, 1000, 2000])
    )
    soak_seconds = args.soak_seconds if args.soak_seconds is not None else (0 if args.quick else 120.0)
    budget = args.budget or (170.0 if args.quick else 900.0)
    start_watchdog(budget)
    started = time.monotonic()
    setups = [s for s in SETUPS if s.key in args.setups.split(",")]
    global REQUEST
    if args.client == "httpx":
        REQUEST = httpx_request
    try:
        import uvloop

        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
        loop_name = f"uvloop {uvloop.__version__}"
    except ImportError:
        loop_name = "asyncio"
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    global CODE_DIR
    if not args.live_code:
        # A frozen copy that starts: retry a few times if it was caught mid-edit.
        for _attempt in range(4):
            CODE_DIR = snapshot_code()
            probe = Server(Setup("probe", "probe", "memory", 1), {})
            try:
                probe.wait_ready(20)
                break
            except RuntimeError as error:
                print(f"the server copy does not start ({error}); copying again in 10 s", file=sys.stderr)
                time.sleep(10)
            finally:
                probe.stop()
    extra_env, limit_notes = rate_limit_env()
    for item in args.server_env:
        name, _, value = item.partition("=")
        extra_env[name] = value
    if limit_notes:
        print("rate limits: " + "; ".join(limit_notes), file=sys.stderr)

    import gevent
    import gunicorn
    import redis as redis_py

    versions = {
        "python": platform.python_version(),
        "gunicorn": gunicorn.__version__,
        "gevent": gevent.__version__,
        "redis-py": redis_py.__version__,
        "redis-server": subprocess.run(["/usr/bin/redis-server", "--version"], capture_output=True, text=True)
        .stdout.split()[2]
        .removeprefix("v="),
    }
    for name in ("uvicorn", "sse_starlette", "starlette", "uvloop", "httptools", "httpx"):
        try:
            versions[name] = __import__(name).__version__
        except Exception:
            versions[name] = None
    report = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "nofile": [soft, hard],
            "somaxconn": Path("/proc/sys/net/core/somaxconn").read_text().strip(),
            **versions,
        },
        "code": code_state(CODE_DIR),
        "rate_limit_overrides": limit_notes,
        "client": f"{args.client} on {loop_name}, one connection per request, in this process (shares the cores)",
        "answer": {
            "question": QUESTION,
            "deltas": len(CHUNKS),
            "events": len(CHUNKS) + 2,
            "pace_s": PACE,
            "answer_s": ANSWER_SECONDS,
            "chars": len(ECHOED),
            "utf8_bytes": len(ECHOED.encode()),
        },
        "server_env": {**SERVER_LIMITS, **extra_env, "WIDGET_SERVER_DEMO_DELAY_SECONDS": str(PACE)},
        "definitions": {
            "events_per_s": "events received by all clients / wall time from the first message POST to the last stream end",
            "extra_gap": "(arrival of text.delta k - arrival of text.delta k-1) - pace, client side, all gaps of all streams",
            "ttfd": "message POST sent -> first text.delta received",
            "headers": "message POST sent -> its response's status line and headers received (the POST's wait and handling)",
            "kib_per_stream": "(RSS of all server processes incl. redis at the sample with most streams open - idle RSS) / open",
            "redis_shard_cpu_share": "a cluster's: each redis-server's CPU seconds during the run / all of them (redis_shard_cpu_share_max: the largest)",
            "ratio": "this setup / baseline at the same N",
        },
        "rows": [],
        "soak": None,
    }
    output = Path(args.output)
    output.parent.mkdir(parents=True, exist_ok=True)

    def save() -> None:
        report["total_seconds"] = round(time.monotonic() - started, 1)
        tmp = output.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        tmp.replace(output)

    soak_reserve = (soak_seconds + ANSWER_SECONDS * 3 + 45) if soak_seconds else 0
    for n in ns:
        deadline_s = ANSWER_SECONDS * 3 + 20 + n / 20
        for setup in setups:
            remaining = budget - (time.monotonic() - started) - soak_reserve
            if remaining < deadline_s + 15:
                row = {"skipped": "skipped: out of time budget"}
            else:
                row, tail = run_in_fresh_server(
                    setup, extra_env, lambda server, n=n, d=deadline_s: load_run(server, n, d)
                )
                if tail:
                    row["server_stderr_tail"] = tail[-15:]
            row.update({"setup": setup.key, "label": setup.label})
            row.setdefault("n", n)
            if "server_cpu_s" in row and row.get("events"):
                row["cpu_per_event_us"] = {k: round(v, 1) for k, v in cpu_per_event_us(row).items()}
            report["rows"].append(row)
            save()
            if "completed" in row:
                print(
                    f"{setup.label:46} N={n:<5} completed {row['completed']}/{n} exact {row['exact']} "
                    f"lost/dup {row['lost_chars']}/{row['dup_chars']} ev/s {row['events_per_s']:.0f} "
                    f"gap p50/p99 {row['extra_gap_p50_ms']}/{row['extra_gap_p99_ms']} ms "
                    f"TTFD p50 {row['ttfd_p50_s']} s (headers {row['headers_p50_s']} s) "
                    f"KiB/stream {row['kib_per_stream']} cpu {row['server_cpu_s']}/{row['client_cpu_s']} "
                    + (f"redis shards {shard_cell(row)} " if row.get("redis_shard_cpu_s") else "")
                    + f"{row['errors'] or ''}",
                    file=sys.stderr,
                    flush=True,
                )
            else:
                print(
                    f"{setup.label:46} N={n:<5} {row.get('failed_to_run') or row.get('skipped')}",
                    file=sys.stderr,
                    flush=True,
                )
    if soak_seconds:
        setup = next(s for s in SETUPS if s.key == args.soak_setup)
        deadline_s = soak_seconds + ANSWER_SECONDS * 3 + 30
        row, tail = run_in_fresh_server(
            setup, extra_env, lambda server: soak_run(server, args.soak_n, soak_seconds, deadline_s)
        )
        if tail:
            row["server_stderr_tail"] = tail[-15:]
        row.update({"setup": setup.key, "label": setup.label})
        report["soak"] = row
        save()
    save()
    print(markdown(report["rows"]))
    if report["soak"]:
        print()
        print(soak_markdown(report["soak"]))
    m = report["machine"]
    print(
        f"\n{report['date']}, {m['cpus']} CPUs, {m['platform']}, Python {m['python']}, gunicorn {m['gunicorn']}, "
        f"gevent {m['gevent']}, redis {m['redis-server']}, uvicorn {m['uvicorn']}, sse-starlette {m['sse_starlette']}; "
        f"client {report['client']}; total {report['total_seconds']} s"
    )
    failed = [r for r in report["rows"] if not r.get("passed")]
    if report["soak"] and not report["soak"].get("passed"):
        failed.append(report["soak"])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
