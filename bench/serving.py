"""How many concurrent event streams one worker serves, per gunicorn worker class.

Run from the repository root:

    .venv/bin/python bench/serving.py            # the full run
    .venv/bin/python bench/serving.py --quick    # N = 1 and 10 only

For each worker class (gunicorn `sync`, `gthread` with 8 threads, and
`gevent` through `widget-server`), and for each N, it starts a fresh server
with one worker on a free 127.0.0.1 port, opens N concurrent streams, then
stops the server. Each stream creates a conversation, POSTs
`/scenario improvisation` (5 chunks, DEMO_DELAY_SECONDS=0.05 apart), reads
the event stream with the project's standard reader (widget_server.sse) up to
`message.completed`, rebuilds the text (deltas append, a snapshot replaces)
and checks length, UTF-8 bytes and SHA-256 against the completed event, and
that sequence numbers rise by exactly 1.

Every run has a hard deadline; streams unfinished by then count as not
completed, and the server is killed. Results go to bench/results/serving.json
and a markdown table is printed.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import hashlib
import json
import os
import platform
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from widget_server.sse import EventStreamParser, ServerSentEvent  # noqa: E402

HOST = "127.0.0.1"  # loopback only, by construction
DEMO_DELAY = 0.05
QUESTION = "/scenario improvisation"

# (label, how to start it, N values, per-run deadline in seconds)
CLASSES = [
    ("sync", ["-k", "sync"], [1, 3, 10], 30.0),
    ("gthread (threads=8)", ["-k", "gthread", "--threads", "8"], [1, 10, 50, 200], 60.0),
    ("gevent (widget-server)", None, [1, 10, 50, 200], 60.0),
]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


def start_server(gunicorn_args: list[str] | None, port: int) -> subprocess.Popen:
    env = {
        **os.environ,
        "WIDGET_SERVER_DEMO_DELAY_SECONDS": str(DEMO_DELAY),
        "WIDGET_SERVER_LOG_LEVEL": "WARNING",
        "WIDGET_SERVER_HOST": HOST,
        "WIDGET_SERVER_PORT": str(port),
    }
    if gunicorn_args is None:
        command = [sys.executable, "-m", "widget_server"]  # gunicorn + gevent, as shipped
    else:
        command = [
            sys.executable,
            "-m",
            "gunicorn",
            "-w",
            "1",
            *gunicorn_args,
            "-b",
            f"{HOST}:{port}",
            "--no-control-socket",
            "--log-level",
            "warning",
            "widget_server.app:create_app()",
        ]
    return subprocess.Popen(
        command,
        cwd=REPO,
        env=env,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def stop_server(process: subprocess.Popen) -> None:
    """SIGINT (gunicorn's quick shutdown), then SIGKILL to its own process group."""
    if process.poll() is None:
        try:
            os.killpg(process.pid, signal.SIGINT)
            process.wait(timeout=5)
        except (subprocess.TimeoutExpired, ProcessLookupError):
            pass
    try:
        os.killpg(process.pid, signal.SIGKILL)  # any worker left behind
    except ProcessLookupError:
        pass
    process.wait(timeout=5)


def wait_ready(process: subprocess.Popen, base: str, deadline: float) -> None:
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited: {process.stderr.read().decode(errors='replace')[-2000:]}")
        try:
            if httpx.get(base + "/healthz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise RuntimeError("server not ready in time")


async def one_stream(client: httpx.AsyncClient, base: str) -> dict:
    result = {"completed": False, "exact": False, "ttfd": None, "error": None}
    try:
        response = await client.post(base + "/api/v1/conversations")
        response.raise_for_status()
        conversation = response.json()
        headers = {"Authorization": f"Bearer {conversation['token']}"}
        url = f"{base}/api/v1/conversations/{conversation['conversation_id']}/messages"
        body = {"request_id": uuid.uuid4().hex, "text": QUESTION}
        events: list[ServerSentEvent] = []
        parser = EventStreamParser(events.append)
        text, seqs, completed = "", [], None
        sent = time.monotonic()
        async with client.stream("POST", url, json=body, headers=headers) as stream:
            if stream.status_code != 200:
                result["error"] = f"HTTP {stream.status_code}"
                return result
            async for chunk in stream.aiter_raw():
                parser.feed(chunk)
                for event in events:
                    data = json.loads(event.data)
                    seqs.append(data["seq"])
                    if event.event == "text.delta":
                        if result["ttfd"] is None:
                            result["ttfd"] = time.monotonic() - sent
                        text += data["text"]
                    elif event.event == "message.snapshot":
                        text = data["text"]
                    elif event.event == "message.completed":
                        completed = data
                    elif event.event in ("message.failed", "message.cancelled"):
                        result["error"] = event.event
                events.clear()
                if completed is not None or result["error"]:
                    break
        if completed is None:
            result["error"] = result["error"] or "closed without message.completed"
            return result
        result["completed"] = True
        encoded = text.encode("utf-8")
        result["exact"] = (
            completed["sha256"] == hashlib.sha256(encoded).hexdigest()
            and completed["length"] == len(text)
            and completed["utf8_bytes"] == len(encoded)
            and seqs == list(range(seqs[0], seqs[0] + len(seqs)))
        )
    except Exception as error:  # counted, not raised: one broken stream must not hide the others
        result["error"] = f"{type(error).__name__}: {error}"
    return result


async def run_streams(base: str, n: int, deadline_s: float) -> tuple[float, list[dict]]:
    # One AsyncClient per stream: a single shared client with N open streams
    # spent more CPU in httpcore's pool bookkeeping (it scans every
    # connection per request) than the server spent serving, so it measured
    # the client. One SSL context shared by all clients keeps creating them
    # cheap (plain http is used; httpx builds a context anyway).
    ssl_context = ssl.create_default_context()
    timeout = httpx.Timeout(deadline_s)

    async def stream() -> dict:
        async with httpx.AsyncClient(timeout=timeout, verify=ssl_context) as client:
            return await one_stream(client, base)

    tasks = [asyncio.create_task(stream()) for _ in range(n)]
    start = time.monotonic()
    done, pending = await asyncio.wait(tasks, timeout=deadline_s)
    wall = time.monotonic() - start
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)
    results = [t.result() for t in done]
    results += [{"completed": False, "exact": False, "ttfd": None, "error": "deadline"}] * len(pending)
    return wall, results


def percentile(values: list[float], p: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(p / 100 * len(ordered) + 0.5) - 1))  # nearest rank
    return ordered[index]


def measure(label: str, gunicorn_args: list[str] | None, n: int, deadline_s: float) -> dict:
    port = free_port()
    base = f"http://{HOST}:{port}"
    assert base.startswith("http://127.0.0.1:")
    process = start_server(gunicorn_args, port)
    try:
        wait_ready(process, base, time.monotonic() + 20)
        cpu_before = time.process_time()
        wall, results = asyncio.run(run_streams(base, n, deadline_s))
        client_cpu = time.process_time() - cpu_before
    finally:
        stop_server(process)
    ttfd = [r["ttfd"] for r in results if r["ttfd"] is not None]
    errors = sorted({r["error"] for r in results if r["error"]})
    return {
        "server": label,
        "n": n,
        "deadline_s": deadline_s,
        "wall_s": round(wall, 3),
        "completed": sum(r["completed"] for r in results),
        "exact": sum(r["exact"] for r in results),
        "ttfd_p50_s": None if not ttfd else round(statistics.median(ttfd), 3),
        "ttfd_p99_s": None if not ttfd else round(percentile(ttfd, 99), 3),
        "client_cpu_s": round(client_cpu, 2),
        "errors": errors[:5],
    }


def markdown(rows: list[dict]) -> str:
    lines = [
        "| server (1 worker) | N | wall (s) | completed | exact | TTFD p50 (s) | TTFD p99 (s) | wall / N=1 | client CPU (s) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    fmt = lambda v: "—" if v is None else f"{v:.3f}"  # noqa: E731
    for row in rows:
        ratio = "—" if row.get("ratio") is None else f"{row['ratio']:.1f}×"
        lines.append(
            f"| {row['server']} | {row['n']} | {row['wall_s']:.2f} | {row['completed']}/{row['n']} | "
            f"{row['exact']}/{row['n']} | {fmt(row['ttfd_p50_s'])} | {fmt(row['ttfd_p99_s'])} | {ratio} | {row['client_cpu_s']:.2f} |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="N = 1 and 10 only")
    parser.add_argument("--output", default=str(REPO / "bench" / "results" / "serving.json"))
    args = parser.parse_args()
    started = time.monotonic()
    rows: list[dict] = []
    for label, gunicorn_args, ns, deadline_s in CLASSES:
        baseline = None
        for n in ns:
            if args.quick and n > 10:
                continue
            row = measure(label, gunicorn_args, n, deadline_s)
            if n == 1:
                baseline = row["wall_s"] if row["completed"] == 1 else None
            row["ratio"] = None if baseline is None else round(row["wall_s"] / baseline, 2)
            rows.append(row)
            print(
                f"{label:24} N={n:<4} wall {row['wall_s']:.2f}s  completed {row['completed']}/{n}"
                f"  exact {row['exact']}/{n}  {'; '.join(row['errors'])}",
                file=sys.stderr,
                flush=True,
            )
    import gevent
    import gunicorn

    report = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "gunicorn": gunicorn.__version__,
            "gevent": gevent.__version__,
            "httpx": httpx.__version__,
        },
        "scenario": {"text": QUESTION, "demo_delay_seconds": DEMO_DELAY, "chunks": 5},
        "ttfd": "time from sending the message POST to the first text.delta event",
        "ratio": "wall time / wall time at N=1, same server class, same run",
        "client_cpu": "CPU seconds the benchmark client itself used during the run (it shares the cores)",
        "total_seconds": round(time.monotonic() - started, 1),
        "rows": rows,
    }
    output = Path(args.output)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(markdown(rows))
    print(
        f"\n{report['date']}, {report['machine']['cpus']} CPUs, {report['machine']['platform']}, "
        f"Python {report['machine']['python']}, gunicorn {report['machine']['gunicorn']}, "
        f"gevent {report['machine']['gevent']}; total {report['total_seconds']} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
