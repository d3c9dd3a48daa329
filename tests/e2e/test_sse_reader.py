"""static/widget/sse.js, the widget's event-stream reader, in real browsers.

Every case of sse_cases.json is run in the page, cut exactly as the Python
reader's corpus test cuts it (tests/test_sse_corpus.py): whole, byte by byte,
at the case's own chunk boundaries and at 20 seeded random sets of cut points.
The module is imported from the live server, same origin, by a page of that
server (/healthz); no test page is added to static/.
"""

from __future__ import annotations

import base64
import gzip
import re
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page

from ..helpers import LiveServer
from ..test_sse_corpus import CASE_IDS, CASES, describe, expected, runs_for, streams_of

pytestmark = pytest.mark.e2e

SSE_JS = Path(__file__).resolve().parents[2] / "static" / "widget" / "sse.js"
MODULE_PATH = "/static/widget/sse.js"

# Runs one case: every run feeds the streams' bytes (Uint8Array views) at
# the given cut points to a fresh parser; end() or reset() between streams.
RUN_CASE_JS = """
async ({ url, streams, between, runs }) => {
  const { createEventStreamParser } = await import(url);
  const bytes = streams.map((b64) => Uint8Array.from(atob(b64), (c) => c.charCodeAt(0)));
  return runs.map(({ mode, cuts }) => {
    const events = [];
    const parser = createEventStreamParser((event) => events.push(event));
    bytes.forEach((data, i) => {
      let from = 0;
      for (const to of [...cuts[i], data.length]) {
        parser.feed(data.subarray(from, to));
        from = to;
      }
      if (between === "reset" && i < bytes.length - 1) parser.reset();
      else parser.end();
    });
    return { mode, events, lastEventId: parser.lastEventId, retry: parser.retry };
  });
}
"""


@pytest.fixture(scope="module")
def sse_server():
    server = LiveServer({"DEMO_DELAY_SECONDS": 0.0, "LOG_LEVEL": "WARNING"}).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def sse_page(browser: Browser, sse_server: LiveServer):
    """One page per browser for the whole module: the corpus is 100+ cases."""
    context = browser.new_context()
    page = context.new_page()
    page.goto(sse_server.url + "/healthz")
    yield page
    context.close()


def module_url(server: LiveServer) -> str:
    return server.url + MODULE_PATH


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_corpus_case(sse_page: Page, sse_server: LiveServer, case):
    runs = runs_for(case)
    results = sse_page.evaluate(
        RUN_CASE_JS,
        {
            "url": module_url(sse_server),
            "streams": [base64.b64encode(s.data).decode("ascii") for s in streams_of(case)],
            "between": case.get("between", "end"),
            "runs": [{"mode": mode, "cuts": cuts} for mode, cuts in runs],
        },
    )
    assert len(results) == len(runs)
    for (mode, cuts), result in zip(runs, results, strict=True):
        assert result["mode"] == mode
        got = {k: result[k] for k in ("events", "lastEventId", "retry")}
        assert got == expected(case), describe(case, mode, cuts)


def test_last_event_id_changes_only_at_dispatch(sse_page: Page, sse_server: LiveServer):
    """`lastEventId` is what to reconnect with: an id counts once its event's blank line is read."""
    seen = sse_page.evaluate(
        """async (url) => {
          const { createEventStreamParser } = await import(url);
          const events = [];
          const p = createEventStreamParser((e) => events.push(e));
          const enc = new TextEncoder();
          const seen = [p.lastEventId, p.retry];
          p.feed(enc.encode("id: 5\\nretry: 250\\ndata: a\\n"));
          seen.push(p.lastEventId, p.retry, events.length);
          p.feed(enc.encode("\\n"));
          seen.push(p.lastEventId, events.length, events[0].id);
          p.feed(enc.encode("id: 6\\ndata: b\\n"));
          p.reset();  // the connection drops before b's blank line
          seen.push(p.lastEventId, p.retry);
          p.feed(enc.encode("data: c\\n\\n"));
          seen.push(events.map((e) => e.data + "@" + e.id).join(","));
          return seen;
        }""",
        module_url(sse_server),
    )
    assert seen == ["", None, "", 250, 0, "5", 1, "5", "5", 250, "a@5,c@5"]


def test_runs_in_a_module_worker(sse_page: Page, sse_server: LiveServer):
    """A worker has no document and no window: the module must not need them."""
    result = sse_page.evaluate(
        """async (url) => {
          const source = `import { createEventStreamParser } from ${JSON.stringify(url)};
            const events = [];
            const p = createEventStreamParser((e) => events.push(e));
            p.feed(new TextEncoder().encode("event: t\\\\r\\\\nid: 9\\\\r\\\\ndata: \\u00e9\\\\r\\\\n\\\\r\\\\n"));
            p.end();
            postMessage(events);`;
          const worker = new Worker(URL.createObjectURL(new Blob([source], { type: "text/javascript" })), { type: "module" });
          try {
            return await new Promise((resolve, reject) => {
              worker.onmessage = (e) => resolve(e.data);
              worker.onerror = (e) => reject(new Error("worker failed: " + (e.message || "error")));
            });
          } finally {
            worker.terminate();
          }
        }""",
        module_url(sse_server),
    )
    assert result == [{"type": "t", "data": "\u00e9", "id": "9"}]


def test_time_is_linear_in_the_length_of_a_line(sse_page: Page, sse_server: LiveServer):
    """One 256 KiB line fed a byte at a time costs about what 256 KiB of short lines does.

    A reader that re-searched or re-joined the whole pending line on every
    chunk would take time quadratic in the line's length: tens of times
    longer here. Each input is timed three times, interleaved; the best counts.
    """
    timing = sse_page.evaluate(
        """async (url) => {
          const { createEventStreamParser } = await import(url);
          const size = 256 * 1024;
          const enc = new TextEncoder();
          const longLine = enc.encode("data: " + "x".repeat(size - 8) + "\\n\\n");
          const shortLines = enc.encode("data: x\\n\\n".repeat(Math.floor(size / 9)) + "\\n".repeat(size % 9));
          function run(bytes) {
            let count = 0, chars = 0;
            const p = createEventStreamParser((e) => { count++; chars += e.data.length; });
            const t0 = performance.now();
            for (let i = 0; i < bytes.length; i++) p.feed(bytes.subarray(i, i + 1));
            p.end();
            return { ms: performance.now() - t0, count, chars };
          }
          const long = [], short = [];
          for (let i = 0; i < 3; i++) { long.push(run(longLine)); short.push(run(shortLines)); }
          const best = (runs) => Math.min(...runs.map((r) => r.ms));
          return { longMs: best(long), shortMs: best(short), long: long[0], short: short[0], sizes: [longLine.length, shortLines.length] };
        }""",
        module_url(sse_server),
    )
    assert timing["sizes"][0] == timing["sizes"][1] == 256 * 1024
    assert (timing["long"]["count"], timing["long"]["chars"]) == (1, 256 * 1024 - 8)
    assert timing["short"]["count"] == 256 * 1024 // 9
    ratio = timing["longMs"] / max(timing["shortMs"], 1.0)
    assert ratio < 5, (
        f"one long line took {ratio:.1f}x as long as many short lines: {timing['longMs']:.0f} ms vs {timing['shortMs']:.0f} ms"
    )


# -- the source itself: plain Python checks, no browser needed ---------------


def _code_without_comments(source: str) -> str:
    source = re.sub(r"/\*.*?\*/", "", source, flags=re.S)
    return re.sub(r"//[^\n]*", "", source)


def test_module_uses_no_dom_window_or_fetch():
    source = SSE_JS.read_text(encoding="utf-8")
    for name in ("document", "window", "fetch", "XMLHttpRequest", "EventSource", "globalThis", "navigator"):
        assert not re.search(rf"\b{name}\b", source), f"sse.js mentions {name!r}"
    code = _code_without_comments(source)
    assert re.search(r"^export function createEventStreamParser\(onEvent\)", code, re.M)
    assert "import " not in code, "sse.js must stand alone"


def test_gzipped_size_budget():
    size = len(gzip.compress(SSE_JS.read_bytes(), compresslevel=9))
    assert size <= 2048, f"sse.js is {size} bytes gzipped (budget 2048)"
