"""Test helpers for sites that embed the widget (and for our own e2e tests).

- `ChatServer(settings)`: the real chat app on a free loopback port, in a
  background thread, with `.url`, `.app`, `.service` and `.embed_snippet()`.
- `mint_identity_token(subject, secret=…)` signs a known visitor's identity token as a site
  would (docs/protocol.md, "Known visitors"), for a server started with that IDENTITY_SECRET.
- `ChatWidget(page)` finds the widget on any page — its launcher in the
  host page's shadow root and the panel inside its iframe, or an inline
  panel (`data-target`, no launcher) — and drives it as a person would.

The pytest plugin (`widget_server.pytest_plugin`, loaded automatically once
the package is installed) wraps these as the `chat_server`,
`chat_server_factory` and `chat_widget` fixtures.

Nothing here imports Playwright at import time: `ChatWidget` needs it (sync
API) only when driving a page, and axe-playwright-python only for
`assert_accessible`. Neither is a dependency of the package.
"""

from __future__ import annotations

import html
import json
import os
import re
import threading
from collections.abc import Mapping
from typing import Any

# Debian's system browsers, which Playwright drives where it cannot download
# its own: Chromium by executable path, Firefox ESR through WebDriver BiDi
# (any `moz-…` channel selects it). docs/testing.md, "System browsers", has
# the facts, including which Playwright versions drive Firefox ESR.
CHROMIUM = "/usr/bin/chromium"
# Debian's package chromium-headless-shell: the same Chromium build's "old headless" shell,
# which Playwright itself launches for headless Chromium (https://playwright.dev/docs/browsers,
# "Chromium: headless shell"). Headless runs use it when it is installed: it runs the e2e
# tests in less time and CPU than full Chromium (docs/testing.md, "System browsers", has the
# measurement). Headed runs (Orca) need full Chromium.
CHROMIUM_HEADLESS_SHELL = "/usr/bin/chromium-headless-shell"
FIREFOX = "/usr/bin/firefox-esr"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    # Without these Chromium keeps trying to reach hosts a closed network refuses.
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
FIREFOX_BIDI_CHANNEL = "moz-firefox"
# pytest-playwright's browser name -> the Debian package that provides the system browser.
SYSTEM_BROWSER_PACKAGES = {"chromium": "chromium", "firefox": "firefox-esr"}


class SystemBrowserError(LookupError):
    """There is no system browser for a browser name (or it is not installed)."""


def _runnable(executable: str) -> bool:
    return os.path.isfile(executable) and os.access(executable, os.X_OK)


def system_browser_launch_args(browser_name: str, *, headless: bool = False) -> dict[str, Any]:
    """Playwright launch arguments that start the OS's browser for
    `browser_name` ("chromium" or "firefox") instead of a downloaded one.
    `headless` (Playwright's own launch option, which the caller still passes): Chromium
    then starts from its headless shell when that is installed, as Playwright's
    downloaded Chromium does, and from full Chromium otherwise.

    The one definition of how this project launches Debian's browsers: the
    plugin's `--chat-system-browsers` and tests/e2e/conftest.py both use it.
    Raises `SystemBrowserError` (one line, saying what to install) when the
    executable is missing or the name has no system browser.
    """
    if browser_name == "chromium":
        executable = CHROMIUM_HEADLESS_SHELL if headless and _runnable(CHROMIUM_HEADLESS_SHELL) else CHROMIUM
        launch_args = {"executable_path": executable, "args": list(CHROMIUM_ARGS)}
    elif browser_name == "firefox":
        executable, launch_args = FIREFOX, {"executable_path": FIREFOX, "channel": FIREFOX_BIDI_CHANNEL}
    else:
        known = ", ".join(SYSTEM_BROWSER_PACKAGES)
        raise SystemBrowserError(f"no system browser for {browser_name!r}; system browsers exist for: {known}")
    if not _runnable(executable):
        package = SYSTEM_BROWSER_PACKAGES[browser_name]
        raise SystemBrowserError(f"no system {browser_name} at {executable} (on Debian: apt-get install {package})")
    return launch_args


TERMINAL_STATES = ("completed", "cancelled", "failed", "incomplete")
# The assistant's answers in the panel's transcript (`ChatWidget.answers`).
ANSWERS = "[data-chat-transcript] > li.turn--assistant"

# Installed in every frame before any page script runs: records what the
# live regions actually contain (what a screen reader is given), with time.
RECORDER_SCRIPT = """
(() => {
  if (window.__chatwidgetLog) return;
  const log = (window.__chatwidgetLog = []);
  const seen = new WeakSet();
  const watch = () => {
    for (const region of document.querySelectorAll('[data-chat-announcer], [data-chat-alert]')) {
      if (seen.has(region)) continue;
      seen.add(region);
      const politeness = region.matches('[data-chat-alert]') ? 'assertive' : 'polite';
      new MutationObserver(() => {
        const text = region.textContent;
        if (text) log.push({ t: performance.now(), politeness, text, focus: document.activeElement ? document.activeElement.id || document.activeElement.tagName : '' });
      }).observe(region, { childList: true, characterData: true, subtree: true });
    }
  };
  const events = (window.__chatwidgetEvents = []);
  for (const name of ['event', 'state']) {
    document.addEventListener('chatwidget:' + name, (e) => events.push({ t: performance.now(), name, ...e.detail }));
  }
  document.addEventListener('DOMContentLoaded', watch);
  new MutationObserver(watch).observe(document, { childList: true, subtree: true });
})();
"""


_DATA_NAME = re.compile(r"[a-z][a-z0-9_-]*")


# How often a test server's loop looks for shutdown() (ChatServer.stop()).
SHUTDOWN_POLL_SECONDS = 0.05


# A secret for test servers' IDENTITY_SECRET (the `identity_token` fixture's default): 32 bytes or
# more, as HS256 needs (RFC 7518 §3.2). For tests only: a real site's secret is random and kept.
IDENTITY_TEST_SECRET = "widget-server-test-identity-secret-0123456789"


def mint_identity_token(
    subject: str,
    *,
    secret: str | None = None,
    name: str | None = None,
    email: str | None = None,
    expires_in: float = 600,
    issuer: str | None = None,
    audience: str | None = None,
    algorithm: str = "HS256",
    key: Any = None,
    kid: str | None = None,
    claims: Mapping[str, Any] | None = None,
) -> str:
    """A visitor's identity token, signed as the site signs it: HS256 with `secret` (the
    server's IDENTITY_SECRET), or RS256/ES256 with `key`, the private key (a PEM string or a
    `cryptography` key) whose public half the server has (IDENTITY_PUBLIC_KEY_FILE, or in
    IDENTITY_JWKS_URL under `kid`). `iat` is now and `exp` `expires_in` seconds later (negative:
    already expired); `claims` are added last, so a test can set or override any."""
    import time

    import jwt

    signing_key = secret if algorithm.startswith("HS") else key
    if signing_key is None:
        raise ValueError(f"{algorithm} needs {'secret' if algorithm.startswith('HS') else 'key'}")
    now = int(time.time())
    payload: dict[str, Any] = {"sub": subject, "iat": now, "exp": now + int(expires_in)}
    for claim, value in (("name", name), ("email", email), ("iss", issuer), ("aud", audience)):
        if value is not None:
            payload[claim] = value
    payload.update(claims or {})
    headers = {"kid": kid} if kid is not None else None
    return jwt.encode(payload, signing_key, algorithm=algorithm, headers=headers)


class ChatServer:
    """The real chat app served on a free loopback port by Werkzeug's
    threaded server, in a background thread of the test process.

    In-process on purpose (not a `widget-server` subprocess): `.app` and
    `.service` are the live objects, so a test can read the store or wrap
    the backend of the very server the browser talks to. Werkzeug's
    threaded server streams each Server-Sent Event as it is written and
    serves streams in parallel (measured alongside gunicorn's gevent worker,
    ../docs/serving.md), and it needs no gevent monkey-patching of the test
    process. Production serving (gunicorn + gevent) is tested elsewhere.

    Settings: `create_app`'s layers — defaults < `WIDGET_SERVER_*`
    environment variables (`environ`, none by default) < `settings`. Rate
    limits are off unless `settings` turns them on: a test suite sends more
    from one address in a minute than a visitor does in a day.
    """

    def __init__(
        self,
        settings: Mapping[str, Any] | None = None,
        *,
        environ: Mapping[str, str] | None = None,
        host: str = "127.0.0.1",
    ) -> None:
        from werkzeug.serving import make_server

        from .app import create_app
        from .services import SERVICES_KEY

        self.app = create_app({"RATE_LIMITS": False, **(settings or {})}, environ={} if environ is None else environ)
        self.service = self.app.extensions[SERVICES_KEY].chat
        self._server = make_server(host, 0, self.app, threaded=True)
        self.host = host
        self.port = self._server.server_port
        self.url = f"http://{host}:{self.port}"
        # serve_forever checks for shutdown() every poll_interval: at the default 0.5 s, stopping a
        # server took 0.45 s on average, once per test (socketserver.BaseServer.serve_forever).
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": SHUTDOWN_POLL_SECONDS},
            name=f"chat-server-{self.port}",
            daemon=True,
        )

    @property
    def settings(self) -> dict[str, Any]:
        """The validated settings the server runs with."""
        return self.app.config["WIDGET_SERVER"]

    def start(self) -> ChatServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread.is_alive():  # shutdown() waits for serve_forever to notice
            self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> ChatServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def embed_snippet(self, *, base_url: str | None = None, **data: Any) -> str:
        """The one-line tag a host page embeds the widget with, e.g.
        `embed_snippet(lang="es", title="Ayuda", target="#help")` gives
        `<script src="http://127.0.0.1:P/widget.js" defer data-lang="es" data-title="Ayuda" data-target="#help"></script>`.

        Keyword names become `data-*` attributes (`_` → `-`, so
        `incomplete_after` is `data-incomplete-after`); `None` leaves one
        out; values are HTML-escaped. `base_url` is the chat server's URL as
        the page should name it (default `.url`; e.g. `localhost` for
        `127.0.0.1`, to keep the page same-site with the chat).
        """
        attributes = []
        for name, value in data.items():
            if not _DATA_NAME.fullmatch(name):
                raise ValueError(f"{name!r} is not a data-* attribute name (lowercase letters, digits, _ and -)")
            if value is not None:
                attributes.append(f' data-{name.replace("_", "-")}="{html.escape(str(value), quote=True)}"')
        src = html.escape((base_url or self.url).rstrip("/") + "/widget.js", quote=True)
        return f'<script src="{src}" defer{"".join(attributes)}></script>'


PANEL_IFRAME = "iframe[src*='/panel?']"

# Every event the widget dispatches on its script element (docs/events.md, "On the loader's
# <script> element"), as `ChatWidget.on()` names them.
HOST_EVENTS = (
    "show",
    "open",
    "ready",
    "message-sent",
    "answer-started",
    "answer-completed",
    "answer-failed",
    "handoff-state",
    "hide",
    "close",
    "identity-expired",
)


def _in_panel(selector: str) -> Any:
    """A ChatWidget attribute: the locator of `selector` inside the panel, made from
    `ChatWidget.frame` at each use (see its docstring)."""
    return property(lambda widget: widget.frame.locator(selector), doc=f"The panel's {selector!r}.")


class ChatWidget:
    """Page object for the chat widget on any page: floating (a launcher in
    the host page's shadow root, the panel in an iframe it creates on first
    open) or inline (`data-target`: the panel's iframe in the host page, no
    launcher).

    Locators are lazy, so one `ChatWidget(page)` can be made before the page
    is loaded and keeps working across navigations and reloads. Give
    `chat_url` (the chat server's URL as the page names it, with the path a site
    mounted it at, if any) to ignore any other frame whose path happens to be /panel.
    """

    def __init__(self, page: Any, *, lang: str = "en", chat_url: str | None = None) -> None:
        self.page = page
        self.lang = lang
        self.launcher = page.locator("[data-chatwidget] .launcher")
        # The chat's base, path included where a site mounts it under one (/chat, docs/serving.md).
        chat_base = chat_url.rstrip("/") if chat_url else None
        self._panel_url_prefix = f"{chat_base}/panel?" if chat_base else None
        self.iframe = page.locator(f"iframe[src^='{chat_base}/panel?']" if chat_base else PANEL_IFRAME)

    # The panel's locators start from `frame`, asked again at each use (see its docstring).

    @property
    def frame(self) -> Any:
        """Where locators inside the panel start: the panel's Frame once the page has its
        document, else the iframe's FrameLocator (which waits for the iframe to come).

        Both find the same elements, but a FrameLocator enters the iframe again on every call:
        four to six more protocol round trips each time (find the iframe, check it is visible,
        ask for its content frame), about twice the cost of the call itself in Firefox ESR
        through WebDriver BiDi and three times in Chromium (docs/testing.md, "Locators into
        the panel"). The Frame is picked from Playwright's own list of the page's frames, which
        costs no round trip. A locator made from a Frame stays with that document's frame: after
        the host page reloads or the iframe is made anew, ask `widget.frame` (or `widget.input`…)
        again rather than reuse a locator kept from before."""
        candidates = self._panel_frames()
        # None yet (the iframe is not there or its document has not come), or more than one
        # (the FrameLocator's strictness then says so): the FrameLocator.
        return candidates[0] if len(candidates) == 1 else self.iframe.content_frame

    def _panel_frames(self) -> list[Any]:
        """The page's frames holding a panel document, by the rule `iframe` finds the panel's
        iframe by (a child of the page whose document's URL is the panel's)."""
        return [
            frame
            for frame in self.page.main_frame.child_frames
            if not frame.is_detached()
            and (
                frame.url.startswith(self._panel_url_prefix)
                if self._panel_url_prefix
                else "/panel?" in frame.url  # PANEL_IFRAME's test, on the document's URL
            )
        ]

    panel = _in_panel("[data-chat-panel]")
    ready = _in_panel("[data-chat-panel][data-ready='true']")
    input = _in_panel("[data-chat-input]")
    send_button = _in_panel("[data-chat-send]")
    stop_button = _in_panel("[data-chat-stop]")
    turns = _in_panel("[data-chat-transcript] > li")
    answers = _in_panel(ANSWERS)

    @staticmethod
    def install_recorder(context: Any) -> None:
        """Record announcements and stream events in every frame of every page
        of `context` (idempotent). Call before the page loads the widget."""
        context.add_init_script(RECORDER_SCRIPT)

    def wait_for_widget(self, timeout: float | None = None) -> None:
        """Wait until the loader has mounted its launcher or an inline panel."""
        self.launcher.or_(self.iframe).first.wait_for(state="attached", timeout=timeout)

    @property
    def inline(self) -> bool:
        """True when the panel is mounted inline (no launcher)."""
        self.wait_for_widget()
        return self.launcher.count() == 0

    def panel_frame(self) -> Any:
        """The panel's Frame (for `evaluate`), found as `frame` finds it; it does not wait."""
        candidates = self._panel_frames()
        if len(candidates) != 1:
            found = "is not loaded" if not candidates else f"is ambiguous: {len(candidates)} frames hold a panel"
            raise AssertionError(f"the chat panel's frame {found}")
        return candidates[0]

    def open(self) -> None:
        """Open the chat as a person would and wait until it is ready.

        Floating: click the launcher (unless already open); focus must land
        in the composer. Inline: the panel is always shown; wait for it.
        """
        from playwright.sync_api import expect

        if not self.inline:
            if self.launcher.get_attribute("aria-expanded") != "true":
                self.launcher.click()
            expect(self.launcher).to_have_attribute("aria-expanded", "true")
            self.ready.wait_for()
            expect(self.input).to_be_focused()
        else:
            self.ready.wait_for()

    def send(self, text: str) -> None:
        self.input.fill(text)
        self.input.press("Enter")

    def stop(self) -> None:
        self.stop_button.click()

    # -- the host page's API (docs/embedding.md, "Driving the widget from your page") ---------
    # What a site's own script calls: `window.ChatWidget` in the host page, not the panel.

    def record_host_events(self) -> None:
        """Listen, with the page's `ChatWidget.on()`, to every event the widget dispatches on
        its script element (HOST_EVENTS), from now on and in order: `host_events()` lists them.
        Listening is what turns the panel's events on (docs/events.md). Idempotent."""
        self.page.wait_for_function("() => !!window.ChatWidget")
        self.page.evaluate(
            """(names) => {
                if (window.__chatwidgetHostEvents) return;
                const log = (window.__chatwidgetHostEvents = []);
                for (const name of names)
                    ChatWidget.on(name, (event) => log.push({ name, detail: event.detail ?? null }));
            }""",
            list(HOST_EVENTS),
        )

    def host_events(self) -> list[dict[str, Any]]:
        """The events `record_host_events()` heard: [{name, detail}], in order."""
        return self.page.evaluate("() => window.__chatwidgetHostEvents || []")

    def wait_for_host_event(self, name: str, count: int = 1, timeout: float = 30_000) -> dict[str, Any]:
        """Wait until `name` was heard `count` times; returns the last one heard."""
        self.page.wait_for_function(
            "([name, count]) => (window.__chatwidgetHostEvents || []).filter((e) => e.name === name).length >= count",
            arg=[name, count],
            timeout=timeout,
        )
        heard: dict[str, Any] = [event for event in self.host_events() if event["name"] == name][-1]
        return heard

    def send_from_page(self, text: str) -> None:
        """`ChatWidget.send(text)`: as if the visitor typed `text` and pressed Send; works
        before the panel was ever opened (it loads, still closed)."""
        self.page.evaluate("(text) => ChatWidget.send(text)", text)

    def set_composer(self, text: str) -> None:
        """`ChatWidget.setComposer(text)`: the composer's text, focus left where it is."""
        self.page.evaluate("(text) => ChatWidget.setComposer(text)", text)

    def set_context(self, context: dict[str, Any] | None) -> None:
        """`ChatWidget.setContext(context)`: sent with each new message from now on."""
        self.page.evaluate("(context) => ChatWidget.setContext(context)", context)

    def last_answer(self) -> Any:
        return self.answers.last

    def wait_until_complete(self, timeout: float = 30_000) -> str:
        """Wait until the last answer reaches a terminal state; return that state."""
        root = self.frame  # one root for both halves: `and_` needs them in the same frame
        answer = root.locator(ANSWERS).last
        answer.and_(root.locator(",".join(f"[data-state='{s}']" for s in TERMINAL_STATES))).wait_for(timeout=timeout)
        return answer.get_attribute("data-state")

    def transcript(self) -> list[dict[str, str]]:
        return self.panel_frame().evaluate(
            """() => Array.from(document.querySelectorAll('[data-chat-transcript] > li'), (li) => ({
                role: li.classList.contains('turn--user') ? 'user' : 'assistant',
                text: li.querySelector('.turn__body').innerText,
                state: li.dataset.state || 'completed',
            }))"""
        )

    def wait_for_announcement(self, text: str, timeout: float = 10_000, *, after: int = 0) -> None:
        """Wait until a live region has said `text` (announcements are throttled). `after`: only
        what was said after that many announcements (`len(widget.announcements())` taken before
        the step), so a text said earlier in the page's life cannot answer for a new one."""
        self.panel_frame().wait_for_function(
            "([text, after]) => (window.__chatwidgetLog || []).slice(after).some((entry) => entry.text === text)",
            arg=[text, after],
            timeout=timeout,
        )

    def events(self) -> list[dict[str, Any]]:
        """Stream events as the widget applied them ({name: 'event', type, seq, outcome})
        and state changes ({name: 'state', state, messageId}), in order."""
        return self.panel_frame().evaluate("() => window.__chatwidgetEvents || []")

    def announcements(self) -> list[dict[str, Any]]:
        """What the live regions said, in order: [{politeness, text, t, focus}]."""
        return self.panel_frame().evaluate("() => window.__chatwidgetLog || []")

    def axe_violations(
        self, *, tags: tuple[str, ...] = ("wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa", "best-practice")
    ) -> list[dict[str, Any]]:
        """Run axe in the host page AND inside every frame (the panel's included).

        axe-playwright-python injects axe into the top frame only, and axe
        there skips a cross-origin iframe (its default `allowedOrigins` is
        the same origin), so the panel would silently go unscanned. We
        inject axe into each frame and run it there; every violation says
        which frame (`frame_url`) it was found in.
        """
        # axe-playwright-python ships no type information (no py.typed marker).
        from axe_playwright_python.sync_playwright import Axe  # type: ignore[import-untyped]

        script = Axe().axe_script
        options = {"runOnly": {"type": "tag", "values": list(tags)}, "resultTypes": ["violations"], "iframes": False}
        violations: list[dict[str, Any]] = []
        for frame in self.page.frames:
            if frame.url in ("", "about:blank"):
                continue
            # Injected once per document: axe-core is about 550 KB of script to send and compile,
            # and a test checks several states of the same page.
            if not frame.evaluate("() => typeof window.axe === 'object' && typeof window.axe.run === 'function'"):
                frame.evaluate(script)
            for violation in frame.evaluate("(options) => axe.run(document, options)", options)["violations"]:
                violations.append({**violation, "frame_url": frame.url})
        return violations

    def assert_accessible(self, **kwargs: Any) -> None:
        """Fail with a readable summary if axe finds any violation in any frame."""
        violations = self.axe_violations(**kwargs)
        if violations:
            summary = [
                {
                    "id": v["id"],
                    "impact": v["impact"],
                    "help": v["help"],
                    "frame": v["frame_url"],
                    "targets": [n["target"] for n in v["nodes"]][:5],
                }
                for v in violations
            ]
            raise AssertionError(f"axe found {len(violations)} violation(s): {json.dumps(summary, indent=1)}")
