"""What the widget costs a browser: bytes, main-thread time per streamed chunk, time to first text.

Run from the repository root (Chromium only, about two minutes on 2 cores):

    .venv/bin/python bench/widget.py

In one run it

1. measures gzipped bytes (gzip level 9) of the loader (GET /widget.js) and of
   the whole widget on first open: the /panel HTML and every static asset the
   browser loads for it (recorded from the browser's responses; cross-checked
   by following the module imports as tests/test_budgets.py does);
2. embeds the widget on a host page on another origin (tests/e2e/hosting.py),
   sends `/scenario bulk` (a ~200 KB markdown answer in ~5,000 deltas) and
   times, from the bench (frame.evaluate; chat.js is not edited), each
   `AnswerRun.onEvent`, each network read of the stream (parse + apply), and
   each `AnswerRun.render` (split into the markdown view, the scroll
   read/write and the announcer) with performance.now(), plus the panel
   frame's long tasks (a PerformanceObserver installed before any page
   script), and a Chromium trace of the run gives each long task's CPU time
   (wall time minus CPU is time the OS gave to other processes). Render is time-sliced (chat.js, a per-frame budget), so a render
   is one frame's slice and "chars drawn" is what that frame took from the
   pending text. Three runs:
   - DEMO_DELAY_SECONDS=0 with LOG_MAX_EVENTS=10000 (every delta stays in the
     log, so the widget applies all of them; the browser is the bottleneck);
   - the same with the default LOG_MAX_EVENTS (4096): what a reader that
     starts after the whole answer was produced gets (a snapshot);
   - DEMO_DELAY_SECONDS=0.001: the same deltas spread over hundreds of
     animation frames, so the answer grows frame by frame;
3. measures the time from Enter to the first answer text in the widget (a
   MutationObserver on the answer body) for the seed question, at
   DEMO_DELAY_SECONDS=0.05, against a bare page on the chat server's origin
   that POSTs a conversation, then the same message, with fetch() and sets a
   div's textContent on the first text.delta; interleaved, a fresh browser
   context each time, median of --reps (15). The widget creates its
   conversation when the first message is sent (chat.js; it once did on the
   first input event), so the bench fills the composer (one input event) and,
   as a person typing the question would, lets up to TYPING_PAUSE_S pass
   (until a conversation exists, which no longer happens) before Enter; a second widget series presses Enter right after fill(), the
   conversation request still in flight. Each rep ends at the first text's
   next animation frame (the answer's end is not waited for: the bulk runs
   check exactness).

The chat server is `widget-server` (gunicorn + gevent, as shipped) on a free
127.0.0.1 port, one per configuration; the host site is
http://localhost:<port>. Every phase has a hard deadline; a watchdog ends the
run if the whole exceeds TOTAL_DEADLINE_S. Results go to
bench/results/widget.json and a markdown table is printed. Times are
reported, never asserted. performance.now() in the (non-isolated) panel frame
has a 0.1 ms resolution: single-delta times are at that floor, so means over
hundreds of deltas and per-read sums carry the comparison, not p95s.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import html
import json
import logging
import math
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

import httpx

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from tests.e2e.hosting import HostSite  # noqa: E402
from tests.test_budgets import ASSET_PATTERN, IMPORT_PATTERN, ready_parts  # noqa: E402  (the budget's own first open)
from widget_server.backends.demo import BULK_CHUNK_CHARS, bulk_answer, group_chunks, split_words  # noqa: E402

HOST = "127.0.0.1"  # loopback only, by construction
from widget_server.testing import CHROMIUM, CHROMIUM_ARGS  # noqa: E402  (the same launch as the e2e tests)

BULK_QUESTION = "/scenario bulk"
SEED_QUESTION = "which arpeggio fits Am F C G"
TTFT_DELAY = 0.05
PACED_DELAY = 0.001  # the bulk answer again, ~1 ms apart: about 5-10 s, many frames
TYPING_PAUSE_S = 0.5  # at most; a person takes seconds to type the seed question
TOTAL_DEADLINE_S = 300.0
PHASE_DEADLINES_S = {"bytes": 30.0, "bulk": 60.0, "ttft": 180.0}
TERMINAL = ("completed", "cancelled", "failed", "incomplete")

# In every frame before any page script: long tasks, as they happen.
LONGTASK_SCRIPT = """
(() => {
  if (window.__benchLongTasks) return;
  const tasks = (window.__benchLongTasks = []);
  try {
    new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) tasks.push([entry.startTime, entry.duration]);
    }).observe({ type: 'longtask', buffered: true });
  } catch (error) {
    window.__benchLongTaskError = String(error);
  }
})();
"""

# In the panel frame, before sending: wrap the next run's onEvent and render
# with performance.now(); note Enter, the first answer text, and the end.
INSTRUMENT_SCRIPT = r"""
() => {
  const panel = window.chatPanel;
  if (!panel) throw new Error('window.chatPanel is missing');
  const B = (window.__bench = { events: [], renders: [], enter: null, firstText: null, firstFrame: null, end: null, runs: 0 });
  const original = panel.startRun;
  panel.startRun = function (options) {
    const run = original.call(this, options);
    B.runs += 1;
    const onEvent = run.onEvent;
    const render = run.render;
    run.onEvent = function (type, data, controller) {
      const t0 = performance.now();
      const result = onEvent.call(this, type, data, controller);
      const t1 = performance.now();
      B.events.push([type === 'text.delta' ? 'd' : type, t1 - t0, t0, type === 'text.delta' ? data.text.length : 0]);
      if (type === 'text.delta') B.deltaCount += 1;
      return result;
    };
    // Where a render's time goes: the markdown view, the two scroll reads/writes
    // (they force layout), the announcer.
    const parts = (B.parts = { append: 0, update: 0, atBottom: 0, scrollToEnd: 0, announcer: 0 });
    const timed = (object, name, key) => {
      const original = object[name];
      object[name] = function (...args) {
        const t0 = performance.now();
        try {
          return original.apply(this, args);
        } finally {
          B.parts[key] += performance.now() - t0;
        }
      };
    };
    timed(run.view, 'append', 'append');
    timed(run.view, 'update', 'update');
    if (!this.__benchTimed) {
      this.__benchTimed = true;
      timed(this, 'atBottom', 'atBottom');
      timed(this, 'scrollToEnd', 'scrollToEnd');
      timed(this.announcer, 'update', 'announcer');
    }
    // Characters this render drew: what it took from the pending text (a
    // time-sliced render leaves the rest for the next frame); -1 for a snapshot.
    run.render = function (snapshot) {
      const before = this.pendingText.length;
      for (const key in parts) parts[key] = 0;
      const t0 = performance.now();
      const result = render.call(this, snapshot);
      const chars = snapshot ? -1 : before - this.pendingText.length;
      B.renders.push([performance.now() - t0, chars, t0, { ...parts }]);
      return result;
    };
    return run;
  };
  const fetchOriginal = window.fetch;
  B.fetches = [];
  window.fetch = function (input, init) {
    const entry = [String(input).replace(/^https?:\/\/[^/]+/, '').replace(/[0-9a-f-]{16,}/g, ':id'), performance.now(), null];
    B.fetches.push(entry);
    const promise = fetchOriginal.call(this, input, init);
    promise.then(() => (entry[2] = performance.now()), () => {});
    return promise;
  };
  // Main-thread time from each network read of the stream to the next read:
  // the reader's parse plus every event applied from that chunk.
  B.reads = [];
  B.deltaCount = 0;
  const reader = ReadableStreamDefaultReader.prototype;
  const read = reader.read;
  reader.read = function () {
    const now = performance.now();
    const open = this.__benchOpen;
    if (open) B.reads.push([open[0], now - open[0], B.deltaCount - open[1]]);
    this.__benchOpen = null;
    const promise = read.call(this);
    promise.then((chunk) => {
      if (!chunk.done) this.__benchOpen = [performance.now(), B.deltaCount];
    }, () => {});
    return promise;
  };
  window.addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && B.enter === null) B.enter = performance.now();
  }, true);
  const transcript = document.querySelector('[data-chat-transcript]');
  const observer = new MutationObserver(() => {
    const bodies = transcript.querySelectorAll('li.turn--assistant .turn__body');
    const body = bodies[bodies.length - 1];
    if (B.firstText === null && body && body.textContent.trim()) {
      B.firstText = performance.now();
      requestAnimationFrame(() => (B.firstFrame = performance.now()));
      observer.disconnect();
    }
  });
  observer.observe(transcript, { childList: true, characterData: true, subtree: true });
  document.addEventListener('chatwidget:state', (event) => {
    if (__TERMINAL_STATES__.includes(event.detail.state) && B.enter !== null && B.end === null) B.end = [event.detail.state, performance.now()];
  });
  // The timer's resolution here (a non-isolated frame coarsens it).
  let step = Infinity;
  for (let i = 0, last = performance.now(); i < 200000 && step === Infinity; i++) {
    const now = performance.now();
    if (now !== last) step = now - last;
    last = now;
  }
  B.resolution = step;
  return { visibility: document.visibilityState, resolution: step };
}
""".replace("__TERMINAL_STATES__", json.dumps(list(TERMINAL)))

# On the chat server's own origin: the least a page can do to show the first words.
BARE_SCRIPT = """
async (question) => {
  const out = document.body.appendChild(document.createElement('div'));
  const t0 = performance.now();
  const created = await fetch('/api/v1/conversations', { method: 'POST' });
  const conversation = await created.json();
  const response = await fetch(`/api/v1/conversations/${conversation.conversation_id}/messages`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${conversation.token}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ request_id: crypto.randomUUID(), text: question }),
  });
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = '', first = null, firstFrame = null, last = null, text = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true }).replace(/\\r\\n?/g, '\\n');
    for (let end; (end = buffer.indexOf('\\n\\n')) >= 0; ) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let type = 'message', data = '';
      for (const line of block.split('\\n')) {
        if (line.startsWith('event:')) type = line.slice(6).trim();
        else if (line.startsWith('data:')) data += line.slice(5).replace(/^ /, '');
      }
      if (type === 'text.delta') {
        text += JSON.parse(data).text;
        if (first === null) {
          out.textContent = text;
          first = performance.now() - t0;
          requestAnimationFrame(() => (firstFrame = performance.now() - t0));
        }
      } else if (type.startsWith('message.') && type !== 'message.started') {
        last = type;
      }
    }
    if (last || first !== null) break; // the first text is what is timed
  }
  await reader.cancel().catch(() => {});
  while (firstFrame === null) await new Promise((resolve) => requestAnimationFrame(resolve));
  return { first, firstFrame, last, chars: text.length };
}
"""


class Deadline:
    def __init__(self, name: str) -> None:
        self.name = name
        self.seconds = PHASE_DEADLINES_S[name]
        self.end = time.monotonic() + self.seconds

    def ms(self, cap_s: float | None = None) -> float:
        """Remaining time in ms for a Playwright timeout; raises once the phase is over."""
        left = self.end - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"phase {self.name!r} exceeded its {self.seconds:.0f} s deadline")
        return 1000 * (left if cap_s is None else min(left, cap_s))


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


class ChatServer:
    """`widget-server` (gunicorn + gevent) in its own process group on 127.0.0.1."""

    def __init__(self, *, delay: float, embed_origin: str, extra: dict[str, str] | None = None) -> None:
        self.port = free_port()
        self.url = f"http://{HOST}:{self.port}"
        assert self.url.startswith("http://127.0.0.1:")
        env = {
            **os.environ,
            "WIDGET_SERVER_DEMO_DELAY_SECONDS": str(delay),
            "WIDGET_SERVER_EMBED_ORIGINS": embed_origin,
            "WIDGET_SERVER_LOG_LEVEL": "WARNING",
            "WIDGET_SERVER_HOST": HOST,
            "WIDGET_SERVER_PORT": str(self.port),
            **(extra or {}),
        }
        self.process = subprocess.Popen(
            [sys.executable, "-m", "widget_server"],
            cwd=REPO,
            env=env,
            start_new_session=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        _live_servers.append(self)

    def wait_ready(self, seconds: float = 20.0) -> ChatServer:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited: {self.process.stderr.read().decode(errors='replace')[-2000:]}")
            try:
                if httpx.get(self.url + "/healthz", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise RuntimeError("server not ready in time")

    def stop(self) -> None:
        """SIGINT (gunicorn's quick shutdown), then SIGKILL to its own process group."""
        process = self.process
        if process.poll() is None:
            try:
                os.killpg(process.pid, signal.SIGINT)
                process.wait(timeout=5)
            except (subprocess.TimeoutExpired, ProcessLookupError):
                pass
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait(timeout=5)
        if self in _live_servers:
            _live_servers.remove(self)


_live_servers: list[ChatServer] = []


def watchdog() -> None:
    """If the whole run overruns, stop the servers and leave (Playwright's driver then closes Chromium)."""
    time.sleep(TOTAL_DEADLINE_S)
    print(f"bench/widget.py: over {TOTAL_DEADLINE_S:.0f} s in total; stopping", file=sys.stderr, flush=True)
    for server in list(_live_servers):
        try:
            server.stop()
        except Exception:
            pass
    os._exit(2)


def gz(body: bytes) -> int:
    return len(gzip.compress(body, compresslevel=9))


def percentile(values: list[float], p: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, math.ceil(p / 100 * len(ordered)) - 1))  # nearest rank
    return ordered[index]


def r(value: float | None, digits: int = 4) -> float | None:
    return None if value is None else round(value, digits)


# -- phase 1: bytes ----------------------------------------------------------


def static_first_open(base: str, deadline: Deadline) -> dict[str, int]:
    """Gzipped bytes of what tests/test_budgets.py counts as the first open (its patterns)."""
    with httpx.Client(base_url=base, timeout=deadline.ms(10) / 1000) as client:
        panel = client.get("/panel", params={"lang": "en"})
        panel.raise_for_status()
        fetched = {"/panel": panel.content}
        queue = [
            "/static/widget/embed.js",
            *ready_parts(),
            "/static/widget/i18n/en.json",
            *map(html.unescape, ASSET_PATTERN.findall(panel.text)),
        ]
        while queue:
            path = queue.pop()
            if path in fetched:
                continue
            response = client.get(path)
            response.raise_for_status()
            fetched[path] = response.content
            if path.endswith(".js"):
                folder = path.rsplit("/", 1)[0]
                queue.extend(f"{folder}/{name[2:]}" for name in IMPORT_PATTERN.findall(response.text))
    return {path: gz(body) for path, body in sorted(fetched.items())}


# -- phase 2: the bulk answer in the embedded widget -------------------------


def panel_frame(page, deadline: Deadline):
    while True:
        for frame in page.frames:
            if urlsplit(frame.url).path == "/panel":
                return frame
        page.wait_for_timeout(min(50, deadline.ms()))


def open_widget(context, host_url: str, deadline: Deadline, responses: list | None = None):
    page = context.new_page()
    if responses is not None:
        page.on("response", lambda response: responses.append(response))
    page.goto(host_url, timeout=deadline.ms(20))
    launcher = page.locator("[data-chatwidget] .launcher")
    launcher.click(timeout=deadline.ms(20))
    frame = panel_frame(page, deadline)
    frame.locator("[data-chat-panel][data-ready='true']").wait_for(timeout=deadline.ms(20))
    return page, frame


def head_tail(values: list[float], fraction: float = 0.1) -> dict:
    """Mean and p95 of the first and the last `fraction` of `values`, and last/first of the means."""
    if not values:
        return {"n": 0}
    k = max(1, int(len(values) * fraction))
    head, tail = values[:k], values[-k:]
    head_mean, tail_mean = statistics.fmean(head), statistics.fmean(tail)
    head_median, tail_median = statistics.median(head), statistics.median(tail)
    return {
        "n": len(values),
        "first_mean": r(head_mean),
        "first_median": r(head_median),
        "first_p95": r(percentile(head, 95)),
        "last_mean": r(tail_mean),
        "last_median": r(tail_median),
        "last_p95": r(percentile(tail, 95)),
        "last_over_first": r(tail_mean / head_mean, 2) if head_mean else None,
        "last_over_first_median": r(tail_median / head_median, 2) if head_median else None,
    }


def run_bulk(browser, host: HostSite, server: ChatServer, deadline: Deadline) -> dict:
    context = browser.new_context()
    context.add_init_script(LONGTASK_SCRIPT)
    try:
        responses: list = []
        host_url = host.embed_page(server.url, path="/bulk")
        page, frame = open_widget(context, host_url, deadline, responses)
        page.wait_for_load_state("networkidle", timeout=deadline.ms(10))
        first_open: dict[str, int] = {}
        for response in responses:
            parts = urlsplit(response.url)
            if f"{parts.scheme}://{parts.netloc}" != server.url or parts.path.startswith("/api/"):
                continue
            if response.status != 200 or parts.path == "/widget.js":
                continue
            first_open[parts.path] = gz(response.body())
        setup = frame.evaluate(INSTRUMENT_SCRIPT)
        composer = frame.locator("[data-chat-input]")
        composer.fill(BULK_QUESTION, timeout=deadline.ms(10))
        browser.start_tracing(page=page, categories=TRACE_CATEGORIES)
        composer.press("Enter", timeout=deadline.ms(10))
        # Half a second past the end, so the end's own work (verify, tools) is in the long tasks.
        frame.wait_for_function(
            "() => window.__bench.end !== null && performance.now() - window.__bench.end[1] > 500",
            timeout=deadline.ms(),
            polling=100,
        )
        # Stopped before the bench reads its records back (serialising them is a task of its own).
        trace = cpu_of_long_tasks(browser.stop_tracing())
        data = frame.evaluate(
            """() => ({ bench: window.__bench, longTasks: window.__benchLongTasks || [],
                        longTaskError: window.__benchLongTaskError || null,
                        text: window.chatPanel.current.model.text,
                        nodes: document.querySelector('[data-chat-transcript]').getElementsByTagName('*').length,
                        state: window.chatPanel.current.turn.item.dataset.state })"""
        )
    finally:
        context.close()
    bench = data["bench"]
    expected = bulk_answer()
    deltas = [e[1] for e in bench["events"] if e[0] == "d"]
    # Each read's time shared among the deltas it carried (reads without a delta are left out).
    amortized: list[float] = []
    for _, ms, count in bench["reads"]:
        if count:
            amortized.extend([ms / count] * count)
    renders = [(ms, chars) for ms, chars, _, _ in bench["renders"] if chars > 0]
    with_parts = [(parts, chars) for _, chars, _, parts in bench["renders"] if chars > 0]
    # Render cost per KB drawn, over the first and the last 10% of the characters drawn by frames.
    total_chars = sum(chars for _, chars in renders) or 1
    drawn, head_r, tail_r = 0, [0.0, 0], [0.0, 0]
    for ms, chars in renders:
        if drawn < total_chars * 0.1:
            head_r[0] += ms
            head_r[1] += chars
        if drawn + chars > total_chars * 0.9:
            tail_r[0] += ms
            tail_r[1] += chars
        drawn += chars
    # The same split by part of render (ms per KB drawn, first and last 10% of the text).
    part_kb: dict[str, list[float | None]] = {}
    for key in with_parts[0][0] if with_parts else {}:
        drawn, head_p, tail_p = 0, [0.0, 0], [0.0, 0]
        for parts, chars in with_parts:
            if drawn < total_chars * 0.1:
                head_p[0] += parts[key]
                head_p[1] += chars
            if drawn + chars > total_chars * 0.9:
                tail_p[0] += parts[key]
                tail_p[1] += chars
            drawn += chars
        part_kb[key] = [r(head_p[0] / head_p[1] * 1000, 3), r(tail_p[0] / tail_p[1] * 1000, 3)]
    part_frame = {key: head_tail([parts[key] for parts, _ in with_parts]) for key in part_kb}
    head_kb = head_r[0] / head_r[1] * 1000 if head_r[1] else None
    tail_kb = tail_r[0] / tail_r[1] * 1000 if tail_r[1] else None
    start, end = bench["enter"], bench["end"][1]
    streaming_tasks = [d for s, d in data["longTasks"] if start <= s <= end]
    after_enter_tasks = [d for s, d in data["longTasks"] if s >= start]
    all_renders = bench["renders"]
    return {
        "first_open_gzip_bytes": dict(sorted(first_open.items())),
        "visibility": setup["visibility"],
        "timer_resolution_ms": r(setup["resolution"], 5),
        "state": data["state"],
        "exact": data["text"] == expected,
        "answer_chars": len(expected),
        "deltas_sent": len(group_chunks(split_words(expected), BULK_CHUNK_CHARS)),
        "deltas_applied": len(deltas),
        "snapshots": sum(1 for e in bench["events"] if e[0] == "message.snapshot"),
        "events_applied": len(bench["events"]),
        "network_reads": len(bench["reads"]),
        "transcript_elements": data["nodes"],
        "enter_to_completed_ms": r(end - start, 1),
        "on_event_ms_per_delta": {**head_tail(deltas), "total": r(sum(deltas), 1)},
        "read_ms_per_delta": {**head_tail(amortized), "total": r(sum(ms for _, ms, _ in bench["reads"]), 1)},
        "render": {
            "count": len(all_renders),
            "with_new_text": len(renders),
            "total_ms": r(sum(ms for ms, _, _, _ in all_renders), 1),
            "max_ms": r(max((ms for ms, _, _, _ in all_renders), default=None), 1),
            "per_frame_ms": head_tail([ms for ms, _ in renders]),
            "ms_per_kb_first_10pct_text": r(head_kb, 3),
            "ms_per_kb_last_10pct_text": r(tail_kb, 3),
            "ms_per_kb_last_over_first": r(tail_kb / head_kb, 2) if head_kb and tail_kb else None,
            "parts_ms_per_kb_first_last_10pct_text": part_kb,
            "parts_ms_per_frame_median": {
                key: [v.get("first_median"), v.get("last_median"), v.get("last_over_first_median")]
                for key, v in part_frame.items()
            },
        },
        "long_tasks": {
            "observer_error": data["longTaskError"],
            "while_streaming_count": len(streaming_tasks),
            "while_streaming_total_ms": r(sum(streaming_tasks), 1),
            "while_streaming_max_ms": r(max(streaming_tasks, default=0), 1),
            "traced": trace,
            "after_enter_count": len(after_enter_tasks),
            "after_enter_max_ms": r(max(after_enter_tasks, default=0), 1),
            "whole_page_count": len(data["longTasks"]),
        },
    }


TRACE_CATEGORIES = ["toplevel", "devtools.timeline"]
CPU_ROW = "the same tasks in a trace: with over 50 ms of CPU / most CPU in one (ms)"


def cpu_of_long_tasks(trace_bytes: bytes) -> dict:
    """From a Chromium trace of the run: the panel renderer's main-thread tasks over 50 ms of
    wall time, and how much CPU (thread time) each had. A task the OS preempted on a loaded
    machine is long in wall time with little CPU; one with over 50 ms of CPU is the page's work."""
    events = json.loads(trace_bytes)
    events = events["traceEvents"] if isinstance(events, dict) else events
    # The panel is a cross-site iframe: its own renderer process (site isolation), the one
    # that runs the panel's modules.
    panel_pids = set()
    for e in events:
        data = e.get("args", {}).get("data", {})
        if e.get("name") == "FunctionCall" and "/static/widget/" in str(data.get("url", "")):
            panel_pids.add(e["pid"])
    main_threads = {
        (e["pid"], e["tid"])
        for e in events
        if e.get("ph") == "M"
        and e.get("name") == "thread_name"
        and e["args"].get("name") == "CrRendererMain"
        and e["pid"] in panel_pids
    }
    long_tasks = [
        e
        for e in events
        if e.get("ph") == "X"
        and e.get("name") in ("RunTask", "ThreadControllerImpl::RunTask")
        and (e.get("pid"), e.get("tid")) in main_threads
        and e.get("dur", 0) > 50_000
    ]
    cpu_ms = [e.get("tdur", 0) / 1000 for e in long_tasks]
    return {
        "panel_renderer_found": bool(main_threads),
        "long_tasks_wall_ms": [round(e["dur"] / 1000, 1) for e in long_tasks],
        "long_tasks_cpu_ms": [round(ms, 1) for ms in cpu_ms],
        "over_50_ms_of_cpu": sum(1 for ms in cpu_ms if ms > 50),
        "max_cpu_ms": round(max(cpu_ms, default=0), 1),
    }


# -- phase 3: time to first text, widget vs a bare page ----------------------


def widget_first_text(browser, host: HostSite, server: ChatServer, deadline: Deadline, *, typing: bool) -> dict:
    """Enter → first answer text. `typing`: a pause after the input event, as a person typing the
    question leaves (up to TYPING_PAUSE_S, over once the conversation exists); else Enter at once."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    context = browser.new_context()
    try:
        _page, frame = open_widget(context, host.embed_page(server.url, path="/ttft"), deadline)
        frame.evaluate(INSTRUMENT_SCRIPT)
        composer = frame.locator("[data-chat-input]")
        composer.fill(SEED_QUESTION, timeout=deadline.ms(10))
        if typing:
            try:
                frame.wait_for_function(
                    "() => !!window.chatPanel.client.conversationId",
                    timeout=deadline.ms(TYPING_PAUSE_S),
                    polling=10,
                )
            except PlaywrightTimeout:
                pass  # a widget that creates nothing before Enter
        composer.press("Enter", timeout=deadline.ms(10))
        try:
            frame.wait_for_function("() => window.__bench.firstFrame !== null", timeout=deadline.ms(20), polling=20)
        except PlaywrightTimeout:
            seen = frame.evaluate(
                """() => ({ fetches: window.__bench.fetches, events: window.__bench.events.length,
                            transcript: document.querySelector('[data-chat-transcript]').textContent.slice(0, 500),
                            alert: document.querySelector('[data-chat-alert]').textContent })"""
            )
            raise RuntimeError(f"no first text in the widget: {seen}") from None
        bench = frame.evaluate("() => window.__bench")
        state = frame.evaluate("() => window.chatPanel.current.turn.item.dataset.state")
    finally:
        context.close()
    enter = bench["enter"]
    steps = {}
    for path, begun, resolved in bench["fetches"]:
        name = (
            "message_post"
            if path.endswith("/messages")
            else "conversation_post"
            if path.endswith("/conversations")
            else path
        )
        steps.setdefault(f"{name}_start_ms", begun - enter)
        if resolved is not None:
            steps.setdefault(f"{name}_headers_ms", resolved - enter)
    first_delta = next((e for e in bench["events"] if e[0] == "d"), None)
    if first_delta:
        steps["first_delta_applied_ms"] = first_delta[2] - enter
    if bench["renders"]:
        steps["first_render_ms"] = bench["renders"][0][2] - enter
    return {
        "first_text_ms": bench["firstText"] - enter,
        "first_frame_ms": bench["firstFrame"] - enter,
        "steps": steps,
        "state": state,
    }


def bare_first_text(browser, server: ChatServer, deadline: Deadline) -> dict:
    context = browser.new_context()
    try:
        page = context.new_page()
        page.set_default_timeout(deadline.ms(20))
        page.goto(server.url + "/healthz", timeout=deadline.ms(20))
        result = page.evaluate(BARE_SCRIPT, SEED_QUESTION)
    finally:
        context.close()
    return {
        "first_text_ms": result["first"],
        "first_frame_ms": result["firstFrame"],
        "state": result["last"],
        "chars": result["chars"],
    }


def run_ttft(browser, host: HostSite, server: ChatServer, deadline: Deadline, reps: int) -> dict:
    widget, at_once, bare = [], [], []
    for rep in range(reps + 1):  # rep 0 warms up every path and is not counted
        w = widget_first_text(browser, host, server, deadline, typing=True)
        b = bare_first_text(browser, server, deadline)
        a = widget_first_text(browser, host, server, deadline, typing=False)
        if w["state"] in ("failed", "incomplete") or a["state"] in ("failed", "incomplete"):
            raise RuntimeError(f"seed answer failed in the widget: {w}, {a}")
        if b["state"] not in (None, "message.completed"):
            raise RuntimeError(f"seed answer failed on the bare page: {b}")
        if rep:
            widget.append(w)
            at_once.append(a)
            bare.append(b)
    step_names = sorted(
        {k for x in widget for k in x["steps"]}, key=lambda k: statistics.median(x["steps"].get(k, 0) for x in widget)
    )
    steps = {k: round(statistics.median(x["steps"][k] for x in widget if k in x["steps"]), 1) for k in step_names}
    w_med = statistics.median(x["first_text_ms"] for x in widget)
    b_med = statistics.median(x["first_text_ms"] for x in bare)
    a_med = statistics.median(x["first_text_ms"] for x in at_once)
    return {
        "question": SEED_QUESTION,
        "demo_delay_seconds": TTFT_DELAY,
        "reps": reps,
        "typing_pause_max_s": TYPING_PAUSE_S,
        "widget_enter_at_once_first_text_ms": [round(x["first_text_ms"], 1) for x in at_once],
        "widget_enter_at_once_median_ms": round(a_med, 1),
        "widget_enter_at_once_over_bare": round(a_med / b_med, 2) if b_med else None,
        "widget_first_text_ms": [round(x["first_text_ms"], 1) for x in widget],
        "widget_first_frame_ms": [round(x["first_frame_ms"], 1) for x in widget],
        "bare_first_text_ms": [round(x["first_text_ms"], 1) for x in bare],
        "widget_median_ms": round(w_med, 1),
        "widget_first_frame_median_ms": round(statistics.median(x["first_frame_ms"] for x in widget), 1),
        "bare_median_ms": round(b_med, 1),
        "bare_first_frame_ms": [round(x["first_frame_ms"], 1) for x in bare],
        "widget_over_bare": round(w_med / b_med, 2) if b_med else None,
        "bare_first_frame_median_ms": round(statistics.median(x["first_frame_ms"] for x in bare), 1),
        "widget_over_bare_next_frame": round(
            statistics.median(x["first_frame_ms"] for x in widget)
            / statistics.median(x["first_frame_ms"] for x in bare),
            2,
        ),
        "widget_steps_median_ms": steps,
    }


# -- report ------------------------------------------------------------------


def markdown(report: dict) -> str:
    b, t = report["bytes"], report["first_text"]
    runs = [("bulk, no pacing", report["bulk"]), ("bulk, 1 ms pacing", report["bulk_paced"])]
    runs.append(("bulk, no pacing, default LOG_MAX_EVENTS (one snapshot)", report["bulk_default_log"]))
    lines = ["| measure | value |", "| --- | ---: |"]
    add = lambda name, value: lines.append(f"| {name} | {value} |")  # noqa: E731
    add("loader `/widget.js`, gzip -9", f"{b['loader_gzip_bytes']:,} B")
    add(
        "whole widget on first open, gzip -9 (browser-recorded / imports followed)",
        f"{b['first_open_gzip_bytes']:,} B / {b['first_open_static_gzip_bytes']:,} B ({b['first_open_files']} files)",
    )
    for label, s in runs:
        rr, lt = s["render"], s["long_tasks"]
        if "on_event_ms_per_delta" not in s:  # the snapshot run: what it drew and whether it blocked
            add(f"{label}: renders / total ms / longest", f"{rr['count']} / {rr['total_ms']} / {rr['max_ms']}")
            add(
                f"{label}: long tasks after Enter (count / longest ms)",
                f"{lt['after_enter_count']} / {lt['after_enter_max_ms']}",
            )
            add(f"{label}: {CPU_ROW}", f"{lt['traced']['over_50_ms_of_cpu']} / {lt['traced']['max_cpu_ms']}")
            continue
        e, rd = s["on_event_ms_per_delta"], s["read_ms_per_delta"]
        add(
            f"{label}: deltas applied / snapshots / state",
            f"{s['deltas_applied']:,} of {s['deltas_sent']:,} / {s['snapshots']} / "
            f"{s['state']}, {'exact' if s['exact'] else 'NOT exact'}",
        )
        add(
            f"{label}: onEvent ms per delta, first 10% → last 10% (mean; p95)",
            f"{e['first_mean']} → {e['last_mean']} ({e['last_over_first']}×); {e['first_p95']} → {e['last_p95']}",
        )
        add(
            f"{label}: parse + apply ms per delta, first 10% → last 10% (mean)",
            f"{rd['first_mean']} → {rd['last_mean']} ({rd['last_over_first']}×)",
        )
        add(f"{label}: renders / total ms / longest", f"{rr['count']} / {rr['total_ms']} / {rr['max_ms']}")
        if rr["ms_per_kb_last_over_first"] is not None:
            add(
                f"{label}: render ms per KB drawn, first 10% → last 10% of the text",
                f"{rr['ms_per_kb_first_10pct_text']} → {rr['ms_per_kb_last_10pct_text']} ({rr['ms_per_kb_last_over_first']}×)",
            )
        if rr["count"] > 10:
            parts, frame = rr["parts_ms_per_frame_median"], rr["per_frame_ms"]
            add(
                f"{label}: render ms per frame (median), first 10% → last 10% of frames: all / markdown view / scrollToEnd (layout)",
                f"{frame['first_median']} → {frame['last_median']} ({frame['last_over_first_median']}×) / "
                f"{parts['append'][0]} → {parts['append'][1]} ({parts['append'][2]}×) / "
                f"{parts['scrollToEnd'][0]} → {parts['scrollToEnd'][1]} ({parts['scrollToEnd'][2]}×)",
            )
        add(
            f"{label}: long tasks while streaming (count / total ms / longest)",
            f"{lt['while_streaming_count']} / {lt['while_streaming_total_ms']} / {lt['while_streaming_max_ms']}",
        )
        add(
            f"{label}: long tasks from Enter to 0.5 s after the end (count / longest ms)",
            f"{lt['after_enter_count']} / {lt['after_enter_max_ms']}",
        )
        add(f"{label}: {CPU_ROW}", f"{lt['traced']['over_50_ms_of_cpu']} / {lt['traced']['max_cpu_ms']}")
        add(f"{label}: Enter → completed", f"{s['enter_to_completed_ms']:.0f} ms")
    d = report["bulk_default_log"]
    add("bulk, no pacing, default LOG_MAX_EVENTS: deltas / snapshots", f"{d['deltas_applied']} / {d['snapshots']}")
    add(
        f"Enter → first text in the DOM, median of {t['reps']}: widget / bare page",
        f"{t['widget_median_ms']} / {t['bare_median_ms']} ms ({t['widget_over_bare']}×)",
    )
    add(
        f"the same, Enter right after the input event, median of {t['reps']}: widget / bare page",
        f"{t['widget_enter_at_once_median_ms']} / {t['bare_median_ms']} ms ({t['widget_enter_at_once_over_bare']}×)",
    )
    add(
        f"first text, next animation frame, median of {t['reps']}: widget / bare page",
        f"{t['widget_first_frame_median_ms']} / {t['bare_first_frame_median_ms']} ms ({t['widget_over_bare_next_frame']}×)",
    )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=15, help="timed first-text repetitions per path (default 15)")
    parser.add_argument("--output", default=str(REPO / "bench" / "results" / "widget.json"))
    parser.add_argument(
        "--log-max-events",
        type=int,
        default=10_000,
        help="LOG_MAX_EVENTS of the bulk server (default 10000: every delta stays in the log; "
        "a second bulk run uses the server's default, 4096)",
    )
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # the host site's request log
    threading.Thread(target=watchdog, daemon=True).start()
    started = time.monotonic()
    load_before = os.getloadavg()
    host = HostSite()
    report: dict = {}
    try:
        # -- bytes and bulk: no pacing; a log that keeps every delta -------------
        log_events = {"WIDGET_SERVER_LOG_MAX_EVENTS": str(args.log_max_events)}
        bulk_server = ChatServer(delay=0.0, embed_origin=host.origin, extra=log_events).wait_ready()
        deadline = Deadline("bytes")
        loader = httpx.get(bulk_server.url + "/widget.js", timeout=deadline.ms(10) / 1000)
        loader.raise_for_status()
        static = static_first_open(bulk_server.url, deadline)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                bulk = run_bulk(browser, host, bulk_server, Deadline("bulk"))
                bulk_server.stop()
                print(
                    f"bulk: {bulk['deltas_applied']} deltas, {bulk['snapshots']} snapshots, {bulk['state']}; "
                    f"{time.monotonic() - started:.1f} s",
                    file=sys.stderr,
                    flush=True,
                )
                # The same, with the server's default log (4096 events): as shipped.
                shipped_server = ChatServer(delay=0.0, embed_origin=host.origin).wait_ready()
                shipped = run_bulk(browser, host, shipped_server, Deadline("bulk"))
                shipped_server.stop()
                shipped.pop("first_open_gzip_bytes")
                print(
                    f"bulk, default log: {shipped['deltas_applied']} deltas, {shipped['snapshots']} snapshots, "
                    f"{shipped['state']}; {time.monotonic() - started:.1f} s",
                    file=sys.stderr,
                    flush=True,
                )
                # Paced: deltas spread over many frames, so the answer grows frame by frame.
                paced_server = ChatServer(delay=PACED_DELAY, embed_origin=host.origin, extra=log_events).wait_ready()
                paced = run_bulk(browser, host, paced_server, Deadline("bulk"))
                paced_server.stop()
                paced.pop("first_open_gzip_bytes")
                print(
                    f"bulk, paced: {paced['deltas_applied']} deltas, {paced['render']['count']} renders, "
                    f"{paced['state']}; {time.monotonic() - started:.1f} s",
                    file=sys.stderr,
                    flush=True,
                )
                # 3 × 16 messages from one address: over RATE_LIMIT_MESSAGES_CLIENT (30/minute).
                no_limits = {"WIDGET_SERVER_RATE_LIMITS": "0"}
                ttft_server = ChatServer(delay=TTFT_DELAY, embed_origin=host.origin, extra=no_limits).wait_ready()
                try:
                    first_text = run_ttft(browser, host, ttft_server, Deadline("ttft"), args.reps)
                finally:
                    ttft_server.stop()
                version = browser.version
            finally:
                browser.close()
        first_open = bulk.pop("first_open_gzip_bytes")
        report = {
            "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "machine": {
                "cpus": os.cpu_count(),
                "platform": platform.platform(),
                "python": platform.python_version(),
                "chromium": version,
                "playwright": __import__("importlib.metadata").metadata.version("playwright"),
                "load_average_1min_before_after": [round(load_before[0], 2), round(os.getloadavg()[0], 2)],
            },
            "server": "widget-server (gunicorn + gevent, 1 worker) on 127.0.0.1; host page on http://localhost:<port>",
            "bulk_server_log_max_events": args.log_max_events,
            "bytes": {
                "loader_gzip_bytes": gz(loader.content),
                "first_open_gzip_bytes": sum(first_open.values()),
                "first_open_files": len(first_open),
                "first_open_by_file": first_open,
                "first_open_static_gzip_bytes": sum(static.values()),
                "first_open_static_by_file": static,
            },
            "bulk": bulk,
            "bulk_default_log": {
                k: shipped[k]
                for k in (
                    "state",
                    "exact",
                    "deltas_applied",
                    "snapshots",
                    "events_applied",
                    "enter_to_completed_ms",
                    "render",
                    "long_tasks",
                )
            },
            "bulk_paced": {"demo_delay_seconds": PACED_DELAY, **paced},
            "first_text": first_text,
            "method": {
                "delta_ms": "main-thread time of AnswerRun.onEvent per text.delta (performance.now(), wrapped from the bench)",
                "render": "main-thread time of AnswerRun.render (once per animation frame); per KB = ms / KB of pending text drawn",
                "long_tasks": "PerformanceObserver 'longtask' in the panel frame: while streaming (Enter to the terminal "
                "state) and after Enter (to 0.5 s past the end); wall time, so a task the OS preempts on a loaded "
                "machine counts too (see machine.load_average_1min_before_after); long_tasks.traced: the renderers' "
                "main-thread tasks over 50 ms of wall time in a Chromium trace of the same run, with their CPU "
                "(thread) time",
                "first_text": "Enter keydown → MutationObserver sees non-empty answer text (widget); "
                "fetch() call → first textContent set (bare page on the chat origin; it creates its "
                "conversation, then posts the message); each in a fresh browser context, the first round not "
                "counted; the widget's composer is filled (one input event, which creates the conversation) and "
                "Enter pressed once the conversation exists (at most TYPING_PAUSE_S later), or at once "
                "(widget_enter_at_once_*)",
            },
            "total_seconds": round(time.monotonic() - started, 1),
        }
    finally:
        for server in list(_live_servers):
            server.stop()
        host.stop()
    output = Path(args.output)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(markdown(report))
    machine = report["machine"]
    print(
        f"\n{report['date']}, {machine['cpus']} CPUs, {machine['platform']}, Chromium {machine['chromium']}; "
        f"load average {machine['load_average_1min_before_after']}; total {report['total_seconds']} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
