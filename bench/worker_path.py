"""Instructions a widget-server worker executes per streamed event, through real HTTP: A/B of two trees.

    .venv/bin/python bench/worker_path.py --against /tmp/before      # 100 answers a tree (~2 min)
    .venv/bin/python bench/worker_path.py --answers 50               # this tree alone

Why beside bench/stream_path.py: that one counts the memory store's path (and, `--through
wsgi`, the Flask app's requests) in one process, without gunicorn. This one counts everything
a worker does: gunicorn parsing each request and writing each event, the app, the store. The
server is `python -m widget_server --store memory --workers 1` (the command bench/load.py's
`memory, 1 worker` runs) under callgrind with `--trace-children=yes`, so the gunicorn master and
its worker are each counted in a file of their own; the worker is the one that counted more.
The client is bench/load.py's, in this process: raw sockets, one connection per request, a new
conversation and the 50-word `/echo` at 0.2 s a delta for every answer, all answers at once,
each checked whole (load.py's `one_answer`).

Figure: the worker's instructions in a run of `--answers` answers, less those of the same run
with none (startup and five warm-up answers), over the events. What it leaves out: the kernel's
work in each socket call (callgrind counts user-space instructions) and other processes. From
run to run of one tree it moves by a fraction of a percent (docs/performance.md, "Instructions
per event"); a first run, not counted, compiles
every module's bytecode (into a temporary PYTHONPYCACHEPREFIX), so no counted run compiles. Needs valgrind
(`apt-get install valgrind`).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from bench.load import (  # noqa: E402
    HOST,
    PACE,
    SERVER_LIMITS,
    Totals,
    create_conversation,
    free_port,
    one_answer,
    rate_limit_env,
)

WARM_UP_ANSWERS = 5
EVENTS_PER_ANSWER = 52  # started, 50 deltas, completed (the client counts events, not `retry:`)


async def _answers(port: int, count: int) -> int:
    """`count` answers at once, as bench/load.py's load run makes them; the events read."""
    made = await asyncio.gather(*(create_conversation(port) for _ in range(count)))
    totals = Totals()
    results = await asyncio.gather(*(one_answer(port, cid, token, totals) for cid, token in made))
    broken = [result for result in results if not result["exact"]]
    if broken:
        raise SystemExit(f"{len(broken)} of {count} answers were not exact: {broken[0]}")
    return totals.events


def _wait_listening(port: int, process: subprocess.Popen, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"the server exited with {process.returncode}")
        try:
            socket.create_connection((HOST, port), 0.2).close()
            return
        except OSError:
            time.sleep(0.2)
    raise SystemExit("the server did not listen in time")


def worker_instructions(tree: Path, cache: Path, answers: int, *, counted: bool = True) -> int:
    """The worker's instructions in one run of the server under callgrind (`counted`), or 0 after
    a run without valgrind, which leaves every module's bytecode in `cache`."""
    with tempfile.TemporaryDirectory() as folder:
        port = free_port()
        environment = {
            **os.environ,
            **SERVER_LIMITS,
            **rate_limit_env()[0],
            "PYTHONPATH": str(tree),
            "PYTHONPYCACHEPREFIX": str(cache),
            "WIDGET_SERVER_DEMO_DELAY_SECONDS": str(PACE),
            "WIDGET_SERVER_LOG_LEVEL": "WARNING",
        }
        environment.pop("PYTHONDONTWRITEBYTECODE", None)
        valgrind = [
            "valgrind",
            "--tool=callgrind",
            "--trace-children=yes",
            f"--callgrind-out-file={folder}/callgrind.%p",
        ]
        command = [
            *(valgrind if counted else []),
            sys.executable,
            "-m",
            "widget_server",
            "--store",
            "memory",
            "--workers",
            "1",
            "--host",
            HOST,
            "--port",
            str(port),
        ]
        server = subprocess.Popen(
            command,
            env=environment,
            cwd=tree,  # `-m` puts the working folder first on sys.path: the tree's own package
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            _wait_listening(port, server, 180)
            asyncio.run(_answers(port, WARM_UP_ANSWERS))
            if answers:
                events = asyncio.run(_answers(port, answers))
                if events != answers * EVENTS_PER_ANSWER:
                    raise SystemExit(f"read {events} events of {answers} answers")
        finally:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(120)
        if not counted:
            return 0
        found = []
        for output in Path(folder).glob("callgrind.*"):
            for line in output.read_text(errors="replace").splitlines():
                if line.startswith(("summary:", "totals:")):
                    found.append(int(line.split()[1]))
                    break
        if len(found) < 2:
            raise SystemExit(f"callgrind counted {len(found)} processes; expected the master and a worker")
        return max(found)


def per_event(tree: Path, cache: Path, answers: int) -> float:
    # With PYTHONPYCACHEPREFIX, every module (the tree's, gunicorn's, Flask's) is compiled into
    # the cache by the first process that imports it: a first run, not counted, does that.
    worker_instructions(tree, cache, 0, counted=False)
    startup = worker_instructions(tree, cache, 0)
    whole = worker_instructions(tree, cache, answers)
    return (whole - startup) / (answers * EVENTS_PER_ANSWER)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", type=Path, help="another checkout to compare with (the baseline)")
    parser.add_argument("--answers", type=int, default=100, help="answers in the counted run (default 100)")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("this runs the server under valgrind: apt-get install valgrind")
    trees = {"this tree": REPO}
    if args.against is not None:
        if not (args.against / "widget_server").is_dir():
            raise SystemExit(f"{args.against} has no widget_server/ to import")
        trees["against"] = args.against.resolve()
    figures = {}
    with tempfile.TemporaryDirectory() as caches:
        for label, tree in trees.items():
            figures[label] = per_event(tree, Path(caches) / label, args.answers)
            print(f"{label} ({tree}): {figures[label]:,.0f} worker instructions per event", flush=True)
    if "against" in figures:
        print(f"this tree / against: {figures['this tree'] / figures['against']:.3f}×")


if __name__ == "__main__":
    main()
