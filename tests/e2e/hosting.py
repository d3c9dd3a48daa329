"""A host website on another origin that embeds the chat, as a real site would.

The chat server listens on http://127.0.0.1:P1; the host page is served from
http://localhost:P2 — another origin and another site, so the panel runs as
a third-party iframe (partitioned storage, frame-ancestors enforced).
"""

from __future__ import annotations

import html
import threading
from typing import Any

from werkzeug.serving import make_server
from werkzeug.wrappers import Request, Response

from widget_server.testing import SHUTDOWN_POLL_SECONDS


class HostSite:
    def __init__(self) -> None:
        self.pages: dict[str, str] = {}
        self.scripts: dict[str, bytes] = {}  # path → a classic script the pages load (real Turbo)
        self._server = make_server("127.0.0.1", 0, self._app, threaded=True)
        self.origin = f"http://localhost:{self._server.server_port}"
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": SHUTDOWN_POLL_SECONDS}, daemon=True
        )
        self._thread.start()

    @Request.application
    def _app(self, request: Request) -> Response:
        if request.path in self.scripts:
            return Response(self.scripts[request.path], mimetype="text/javascript")
        page = self.pages.get(request.path)
        if page is None:
            return Response("not found", status=404)
        return Response(page, mimetype="text/html")

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def embed_page(self, chat_url: str, *, path: str = "/", body: str = "", head: str = "", **data: Any) -> str:
        """Publish a host page with the one-line embed; returns its URL."""
        attributes = "".join(
            f' data-{name.replace("_", "-")}="{html.escape(str(value))}"' for name, value in data.items()
        )
        self.pages[path] = (
            '<!doctype html><html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>Host site</title>{head}</head><body><main><h1>A host site</h1>"
            f"<p>Some content of the host page.</p>{body}</main>"
            f'<script src="{chat_url}/widget.js" defer{attributes}></script></body></html>'
        )
        return self.origin + path
