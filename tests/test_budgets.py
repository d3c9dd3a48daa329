"""Byte budgets, which are deterministic and so asserted (timings are only reported, in bench/).

The loader is all a host page pays before anyone opens the chat: ≤ 3 KB
gzipped. The whole widget on first open — panel HTML, CSS, every JS module
it imports, the markdown renderer included — is ≤ 30 KB gzipped.
"""

from __future__ import annotations

import gzip
import html
import re

from .helpers import REPO_ROOT

LOADER_BUDGET = 3 * 1024
FIRST_OPEN_BUDGET = 30 * 1024

# A static import or re-export, as written (`import { x } from './chat.js';`) or minified
# (`import{x as y}from"./chat.js";`); not a dynamic `import('./x.js')`, which is lazy.
IMPORT_PATTERN = re.compile(
    r"""(?:^|[;}\s])(?:import|export)\s*(?:[^'"();]*?\sfrom\s*|[^'"();]*?\}from|\*\s*from)?\s*['"](\./[^'"]+)['"]"""
)
# Static files and the panel's theme stylesheet (/panel/theme.css?…, widget_server/theme.py).
ASSET_PATTERN = re.compile(r"""(?:href|src)="(/static/[^"]+|/panel/theme\.css[^"]*)\"""")


def gzipped_size(body: bytes) -> int:
    return len(gzip.compress(body, compresslevel=9))


def test_loader_fits_its_budget(client):
    response = client.get("/widget.js")
    assert response.status_code == 200
    assert response.mimetype == "text/javascript"
    size = gzipped_size(response.data)
    assert size <= LOADER_BUDGET, f"loader is {size} B gzipped; budget {LOADER_BUDGET} B"


# The parts chat.js imports as soon as the panel is ready (its `parts` list), and the strings
# file they fetch (lazy-parts.js): loaded on every first open, so counted. The hand-off's
# module is not among them: it loads when a hand-off is asked for or resumed.
_READY_PARTS = re.compile(r"const parts = \[([^\]]*)\]")


def ready_parts() -> list[str]:
    source = (REPO_ROOT / "static" / "widget" / "chat.js").read_text(encoding="utf-8")
    match = _READY_PARTS.search(source)
    assert match, "chat.js no longer lists the parts it imports when ready"
    return [f"/static/widget/{name}.js" for name in re.findall(r"'([\w-]+)'", match.group(1))]


def first_open_assets(client) -> dict[str, bytes]:
    """Everything the browser fetches when the panel first opens (bench/widget.py records what
    a real one fetches in Chromium: the same files)."""
    panel = client.get("/panel?lang=en")
    assert panel.status_code == 200
    fetched = {"/panel": panel.data}
    # The loader's second half, which the host page imports on first open (static/widget.js),
    # the parts imported once ready, and their strings.
    queue = [
        "/static/widget/embed.js",
        *ready_parts(),
        "/static/widget/i18n/en.json",
        *map(html.unescape, ASSET_PATTERN.findall(panel.get_data(as_text=True))),
    ]
    while queue:
        path = queue.pop()
        if path in fetched:
            continue
        with client.get(path) as response:  # static files are streamed: close them
            assert response.status_code == 200, path
            fetched[path] = response.data
        if path.endswith(".js"):
            base = path.rsplit("/", 1)[0]
            queue.extend(f"{base}/{name[2:]}" for name in IMPORT_PATTERN.findall(fetched[path].decode("utf-8")))
    return fetched


def test_whole_widget_on_first_open_fits_its_budget(client):
    assets = first_open_assets(client)
    # The module graph must really be followed from the entry module: the panel, the
    # renderer and the reader are in it; the action cards (loaded on demand) are not.
    assert {
        "/static/widget/panel.js",
        "/static/widget/chat.js",
        "/static/widget/markdown.js",
        "/static/widget/sse.js",
        "/static/widget/panel.css",
        "/static/widget/embed.js",
        "/static/widget/protocol.js",
    } <= set(assets)
    assert any(path.startswith("/panel/theme.css") for path in assets)
    assert "/static/widget/actions.js" not in assets
    assert {"/static/widget/outbox.js", "/static/widget/lazy-parts.js", "/static/widget/i18n/en.json"} <= set(assets)
    assert "/static/widget/handoff.js" not in assets
    # The consent step (CONSENT_TEXT, off by default) is its own module and stylesheet.
    assert not [path for path in assets if "consent" in path]
    sizes = {path: gzipped_size(body) for path, body in assets.items()}
    total = sum(sizes.values())
    assert total <= FIRST_OPEN_BUDGET, f"first open is {total} B gzipped; budget {FIRST_OPEN_BUDGET} B: {sizes}"
