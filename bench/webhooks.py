"""Does a webhook receiver that hangs slow the chat's streams? The same streams, in the same run,
with no webhooks, with a receiver that answers at once, and with one that never answers.

    .venv/bin/python bench/webhooks.py            # about a minute
    .venv/bin/python bench/webhooks.py --n 50 --rounds 1

For each setup it starts `widget-server` (gunicorn + gevent, one worker, the memory store, as
shipped) on a free 127.0.0.1 port and opens N concurrent streams as bench/serving.py does (each
creates a conversation, asks `/scenario improvisation`, 5 chunks 0.05 s apart, and checks the
rebuilt text against `message.completed`). With webhooks, every event goes to a real receiver
on loopback (tests/webhook_support.py, WEBHOOK_ALLOW_PRIVATE): `ok` answers 200 at once,
`stuck` holds every request until the run ends (WEBHOOK_TIMEOUT=60, so every sender of the
worker is stuck on it within the run's first moments). Each conversation queues two events
(conversation.created, message.completed). Setups alternate, ROUNDS times; the figures are
medians over the rounds, and the ratios are to `none` of the same run. Raw figures go to
bench/results/webhooks.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from load import cpu_seconds, descendants  # noqa: E402
from serving import HOST, free_port, percentile, run_streams, start_server, stop_server, wait_ready  # noqa: E402

from tests.webhook_support import SECRET, Receiver  # noqa: E402

SETUPS = ("none", "ok", "stuck")
RESULTS = REPO / "bench" / "results" / "webhooks.json"
DEADLINE_S = 60.0


def webhook_env(setup: str, receiver: Receiver | None) -> dict[str, str]:
    # N conversations from one address in a second: far past RATE_LIMIT_NEW_CONVERSATIONS.
    # and MAX_STREAMS_PER_CLIENT: every stream comes from 127.0.0.1.
    limits_off = {"WIDGET_SERVER_RATE_LIMITS": "0", "WIDGET_SERVER_MAX_STREAMS_PER_CLIENT": "100000"}
    if setup == "none" or receiver is None:
        return limits_off
    return {
        **limits_off,
        "WIDGET_SERVER_WEBHOOK_URLS": receiver.url,
        "WIDGET_SERVER_WEBHOOK_SECRET": SECRET,
        "WIDGET_SERVER_WEBHOOK_ALLOW_PRIVATE": "1",
        "WIDGET_SERVER_WEBHOOK_TIMEOUT": "60",
    }


def measure(setup: str, n: int) -> dict[str, Any]:
    receiver = None if setup == "none" else Receiver().start()
    if setup == "stuck" and receiver is not None:
        receiver.hang()
    saved = dict(os.environ)
    os.environ.update(webhook_env(setup, receiver))
    port = free_port()
    base = f"http://{HOST}:{port}"
    process = start_server(None, port)
    os.environ.clear()
    os.environ.update(saved)
    try:
        wait_ready(process, base, time.monotonic() + 30)
        processes = descendants(process.pid)
        cpu_before = sum(cpu_seconds(pid) for pid in processes)
        wall, results = asyncio.run(run_streams(base, n, DEADLINE_S))
        server_cpu = sum(cpu_seconds(pid) for pid in processes) - cpu_before
        received = len(receiver.received) if receiver else 0
        hanging = receiver.hanging if receiver else 0
    finally:
        stop_server(process)
        if receiver is not None:
            receiver.stop()
    ttfd = [r["ttfd"] for r in results if r["ttfd"] is not None]
    return {
        "setup": setup,
        "n": n,
        "wall_s": round(wall, 3),
        "server_cpu_s": round(server_cpu, 3),
        "completed": sum(r["completed"] for r in results),
        "exact": sum(r["exact"] for r in results),
        "ttfd_p50_s": round(statistics.median(ttfd), 4) if ttfd else None,
        "ttfd_p99_s": round(percentile(ttfd, 99) or 0, 4) if ttfd else None,
        "delivered_during_run": received,
        "requests_hanging": hanging,
        "errors": sorted({r["error"] for r in results if r["error"]})[:5],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=200, help="concurrent streams per run")
    parser.add_argument("--rounds", type=int, default=3, help="times each setup runs, alternating")
    options = parser.parse_args()
    runs: list[dict[str, Any]] = []
    for _ in range(options.rounds):
        for setup in SETUPS:
            runs.append(measure(setup, options.n))
            print(json.dumps(runs[-1]), flush=True)
    summary = []
    baselines = [run for run in runs if run["setup"] == "none"]
    for setup in SETUPS:
        mine = [run for run in runs if run["setup"] == setup]
        # Each round's ratio to its own `none`: the machine's load changes between rounds more
        # than webhooks change anything (docs/performance.md, "How to read these figures").
        ratios = {
            key: statistics.median(run[key] / base[key] for run, base in zip(mine, baselines, strict=True) if base[key])
            for key in ("wall_s", "server_cpu_s", "ttfd_p50_s", "ttfd_p99_s")
        }
        summary.append(
            {
                "setup": setup,
                **{key: statistics.median(run[key] for run in mine) for key in ratios},
                **{f"{key}_ratio": round(value, 2) for key, value in ratios.items()},
                "completed": min(run["completed"] for run in mine),
                "exact": min(run["exact"] for run in mine),
                "delivered_during_run": statistics.median(run["delivered_during_run"] for run in mine),
            }
        )
    print(f"\nN={options.n}, {options.rounds} rounds: medians, and the median of each round's ratio to its `none`\n")
    print(
        "| setup | wall s | ratio | server CPU s | ratio | TTFD p50 s | ratio | TTFD p99 s | ratio | completed / exact |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for row in summary:
        print(
            f"| {row['setup']} | {row['wall_s']:.2f} | {row['wall_s_ratio']:.2f} | {row['server_cpu_s']:.2f} | "
            f"{row['server_cpu_s_ratio']:.2f} | {row['ttfd_p50_s']:.3f} | {row['ttfd_p50_s_ratio']:.2f} | "
            f"{row['ttfd_p99_s']:.3f} | {row['ttfd_p99_s_ratio']:.2f} | {row['completed']} / {row['exact']} |"
        )
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps({"n": options.n, "runs": runs, "summary": summary}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
