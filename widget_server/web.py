"""Transport: the pages. `/` is the demo host page, `/widget.js` the loader,
`/panel` the chat panel (the iframe), `/chat` the same panel full-page."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from flask import Blueprint, Flask, Response, current_app, render_template, request, url_for
from markupsafe import Markup

from . import theme
from .attachments.sniff import MEDIA_TYPES
from .chat.service import consent_sha256
from .errors import ApiError
from .i18n import accepted_languages, load_strings, loader_languages, pick_language, text_direction
from .settings import Settings
from .settings.parsing import parse_greeting, parse_starters
from .stores.base import Conversation, StoreUnavailable
from .transport import (
    CONVERSATION_COOKIE,
    chat_service,
    content_security_policy,
    handoff_service,
    satisfaction_service,
    settings,
)

bp = Blueprint("web", __name__)

_LOADER_KEYS = ("launcher", "launcherLabel", "panelTitle")

# String groups that only lazily loaded modules use: rendered into the panel's markup where
# needed but left out of its JSON config, which is part of the first open's bytes
# (tests/test_budgets.py); the module fetches its group itself (code-blocks.js; conversation-tools.js; outbox.js
# while online, for a message typed offline; tab-sync.js; handoff.js), or the page has it
# (consent: templates/panel.html draws the step with its words, only when CONSENT_TEXT is set).
LAZY_STRING_GROUPS = (
    "answerTools",
    "codeBlocks",
    "sources",
    "conversationTools",
    "offlineOutbox",
    "syncTabs",
    "handoff",
    "consent",
)


def _attachment_limits(values: Settings) -> dict[str, Any]:
    """What attachments.js checks before uploading (the server checks again, by content):
    docs/protocol.md, "Attachments". Types as the media types a browser claims for a file."""
    return {
        "maxBytes": values.attachments.max_bytes,
        "perMessage": values.attachments.per_message,
        "types": [MEDIA_TYPES[name].split(";")[0] for name in values.attachments.types],
        "budgetBytes": values.attachments.max_bytes_per_conversation,
    }


def _static_folder() -> str:
    # Set by create_app (app.py), never None here.
    folder = current_app.static_folder
    assert folder is not None
    return folder


def _strings() -> dict[str, dict[str, Any]]:
    return load_strings(_static_folder())


def _frame_ancestors() -> str:
    origins = settings().web.embed_origins
    return "*" if "*" in origins else " ".join(origins)


# Absolute URLs here use `request.host_url`: `PUBLIC_URL` when it is set (app.py `PublicHost`
# puts it in place of the request's Host and scheme), else the host the request named; and
# `request.url_root`, the same plus the path a host app mounted the chat at (mount.py).


def _host_origins() -> list[str]:
    origins = settings().web.embed_origins
    own = request.host_url.rstrip("/")
    return [own if origin == "'self'" else origin for origin in origins]


def _bounded_int(name: str, default: int, low: int, high: int) -> int:
    try:
        return min(high, max(low, int(request.args.get(name, default))))
    except ValueError:
        return default


def _flag(name: str) -> bool:
    """An embed option that is on (`data-reduced-motion="true"`, `1`, `yes`, `on`, `reduce`)."""
    return request.args.get(name, "").strip().lower() in {"1", "true", "yes", "on", "reduce"}


def _remembered_conversation() -> tuple[dict[str, str], Conversation] | None:
    """The conversation this browser started here, from its partitioned cookie.

    A third-party iframe often may not use localStorage (Chromium blocks it
    with third-party cookies), but a `Partitioned` (CHIPS) cookie is kept per
    embedding site. It is HttpOnly and only ever read here, into the panel's
    own page, which the host page cannot read.
    """
    raw = request.cookies.get(CONVERSATION_COOKIE, "")
    conversation_id, _, token = raw.partition(".")
    if not conversation_id or not token:
        return None
    try:
        record = chat_service().authorize(conversation_id, token)
    except ApiError:
        return None
    return {"conversation_id": conversation_id, "token": token}, record


# The visitor's announcement preference (docs/accessibility.md A34), written by the panel
# (conversation-tools.js) as a partitioned cookie: kept per browser and embedding site even
# where a third-party iframe may not use storage, and read here so the first answer after a
# reload is announced the chosen way.
ANNOUNCE_COOKIE = "chatwidget_announce"
ANNOUNCE_MODES = ("sentence", "complete", "off")


def _announce_mode() -> str:
    mode = request.cookies.get(ANNOUNCE_COOKIE, "")
    return mode if mode in ANNOUNCE_MODES else "sentence"


def _empty_state(values: Settings, warnings: list[str]) -> tuple[list[str], str]:
    """The starters and greeting: the settings, or the embed's data-starters / data-greeting
    when they pass the same checks. A bad one is ignored (the setting stands) and named in
    `warnings`, which the panel writes to the console: never an error page."""
    starters, greeting = list(values.chat.starters), values.chat.greeting
    if "starters" in request.args:
        try:
            starters = list(parse_starters(request.args["starters"]))
        except ValueError as error:
            warnings.append(f"data-starters ignored: {error}")
    if "greeting" in request.args:
        try:
            greeting = parse_greeting(request.args["greeting"])
        except ValueError as error:
            warnings.append(f"data-greeting ignored: {error}")
    return starters, greeting


def _handoff(conversation: dict[str, str] | None) -> bool | dict[str, Any]:
    """The panel's `handoff`: false, or true where the server hands conversations to people
    ("Talk to a person" is offered) — or, while the remembered conversation's hand-off is
    queued or assigned, its state and the newest event's `seq`, so a reloaded panel resumes it
    (static/widget/handoff.js) without a request, and the first open pays nothing otherwise."""
    service = handoff_service()
    if not service.enabled():
        return False
    if conversation is not None:
        cid = conversation["conversation_id"]
        try:
            # The seq first: an event between the two reads is sent again, never missed.
            seq = service.last_seq(cid)
            state = service.state(cid)
            # A hand-off a person ended that the visitor has not rated: a reloaded panel asks
            # "How was your conversation?" again (handoff/satisfaction.py).
            rateable = satisfaction_service().open_for(cid) if state["state"] == "ended" else None
        except StoreUnavailable:
            return True  # the panel still opens; the hand-off is not resumed
        if state["state"] in ("queued", "assigned"):
            return {**state, "conversation_id": cid, "seq": seq}
        if rateable is not None:
            return {**state, "conversation_id": cid, "seq": seq, "satisfaction": rateable}
    return True


def _consent(values: Settings, remembered: Conversation | None) -> dict[str, Any] | None:
    """The panel's `consent`: None without CONSENT_TEXT; else the text, the privacy notice's
    address and the text's SHA-256, which the first conversation's request sends back
    (docs/protocol.md, "Consent"). `given`: the remembered conversation recorded agreement to
    this very text, so a reload asks nothing again and a start-over carries it on."""
    text = values.chat.consent_text
    if not text:
        return None
    digest = consent_sha256(text)
    given = remembered is not None and remembered.consent_sha256 == digest
    return {"text": text, "url": values.chat.consent_url, "sha256": digest, "given": given}


def _render_panel(standalone: bool) -> Response:
    values = settings()
    strings = _strings()
    # ?lang= (the loader always sends it), else the browser's Accept-Language (a /chat link).
    lang = pick_language(request.args.get("lang"), strings, accepted_languages(request.accept_languages))
    t = strings[lang]
    title = (request.args.get("title") or t["panelTitle"]).strip()[:80] or t["panelTitle"]
    host_origins = _host_origins()
    host = request.args.get("host", "")
    host_origin = host if host and ("*" in host_origins or host in host_origins) else ""
    warnings: list[str] = []
    starters, greeting = _empty_state(values, warnings)
    found = _remembered_conversation()
    remembered, record = found if found is not None else (None, None)
    # Theming (docs/theming.md): the embed's levers over the THEME_* settings, as a stylesheet
    # of custom properties (the panel's CSP allows no inline style); its contrast notes go to
    # the console with the other warnings.
    panel_theme = theme.resolve(values.theme.as_theme(), request.args, warnings)
    for note in dict.fromkeys(theme.palette_notes(panel_theme)):
        warnings.append(note)
    config = {
        "lang": lang,
        "strings": {key: value for key, value in t.items() if key not in LAZY_STRING_GROUPS},
        "apiBase": request.url_root + "api/v1",
        "standalone": standalone,
        "hostOrigin": host_origin,
        "hostOrigins": host_origins,
        "faults": request.args.get("faults", "") if values.server.faults else "",
        "retryMs": values.chat.retry_ms,
        "maxBackoffMs": 8000,
        "stallTimeoutMs": int(values.chat.heartbeat_seconds * 3000) + 5000,
        "incompleteAfterMs": _bounded_int("incompleteAfter", 30000, 1000, 600000),
        "announceIntervalMs": _bounded_int("announceInterval", 1000, 100, 10000),
        # Each turn's heading level (data-heading-level): the panel title is h1, so 2 is the
        # top; a site whose page puts the chat under its own h2 may choose 3.
        "turnHeadingLevel": _bounded_int("headingLevel", 2, 2, 5),
        "feedbackCommentMaxChars": values.chat.feedback_comment_max_chars,
        "reducedMotion": _flag("reducedMotion"),
        "conversation": remembered,
        "announceMode": _announce_mode(),
        "starters": starters,
        "greeting": greeting,
        "warnings": warnings,
        "handoff": _handoff(remembered),
        "attachments": _attachment_limits(values),
        "consent": _consent(values, record),
    }
    html = render_template(
        "panel.html",
        lang=lang,
        dir=text_direction(lang),
        t=t,
        title=title,
        standalone=standalone,
        # Inline (data-target): part of the host page, nothing to close.
        closable=not standalone and request.args.get("inline") != "1",
        config=config,
        config_json=_script_json(config),
        max_chars=values.chat.max_text_chars,
        reduced_motion=config["reducedMotion"],
        theme_css=url_for("web.theme_css", **panel_theme.query()),  # type: ignore[arg-type]
    )
    response = Response(html, mimetype="text/html")
    response.headers["Content-Security-Policy"] = content_security_policy(
        "'none'" if standalone else _frame_ancestors()
    )
    response.headers["Referrer-Policy"] = "no-referrer"
    response.headers["Cache-Control"] = "no-store"
    return response


def _script_json(value: Any) -> Markup:
    """`value` as JSON for a `<script type="application/json">`, as Jinja's `tojson` writes it
    (`<`, `>`, `&` and `'` escaped, so no text in it can end the element) but compact and in
    UTF-8: the panel's config rides in every first open (tests/test_budgets.py)."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    for character, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("'", "\\u0027")):
        text = text.replace(character, escaped)
    return Markup(text)


@bp.get("/")
def index() -> Response:
    response = Response(render_template("index.html", chat_url=request.url_root.rstrip("/")), mimetype="text/html")
    # The panel's policy (no inline code; framed by nobody), plus the panel's own iframe.
    response.headers["Content-Security-Policy"] = content_security_policy("'none'") + "; frame-src 'self'"
    response.headers["Referrer-Policy"] = "no-referrer"
    return response


@bp.get("/panel")
def panel() -> Response:
    return _render_panel(standalone=False)


@bp.get("/chat")
def standalone_chat() -> Response:
    return _render_panel(standalone=True)


@bp.get("/panel/theme.css")
def theme_css() -> Response:
    """The panel's `--chatwidget-…` custom properties for one theme (docs/theming.md). Public
    and the same for everyone who asks the same query: cached, with an ETag. Each value is
    checked (theme.py); an unknown or invalid one is the default, never echoed into the CSS."""
    css = theme.stylesheet(theme.theme_from_query(request.args))
    response = Response(css, mimetype="text/css")
    response.set_etag(theme.etag(css))
    response.headers["Cache-Control"] = "public, max-age=86400"
    response.make_conditional(request)
    return response


@bp.get("/widget.js")
def loader() -> Response:
    cache: dict[str, Any] = current_app.extensions.setdefault("widget_server.loader", {})
    if "body" not in cache:
        source = (Path(_static_folder()) / "widget.js").read_text(encoding="utf-8")
        strings = {lang: {key: t[key] for key in _LOADER_KEYS} for lang, t in _strings().items()}
        body = source.replace("__CHATWIDGET_STRINGS__", json.dumps(strings, ensure_ascii=False, separators=(",", ":")))
        body = body.replace(
            "__CHATWIDGET_LANGUAGES__", json.dumps(loader_languages(), ensure_ascii=False, separators=(",", ":"))
        )
        theme_defaults = settings().theme.loader_defaults()
        body = body.replace(
            "__CHATWIDGET_THEME__", json.dumps(theme_defaults, ensure_ascii=False, separators=(",", ":"))
        )
        cache["body"] = body.encode("utf-8")
        cache["etag"] = hashlib.sha256(cache["body"]).hexdigest()[:32]
    response = Response(cache["body"], mimetype="text/javascript")
    response.set_etag(cache["etag"])
    response.headers["Cache-Control"] = "public, max-age=300"
    # Host pages that isolate themselves (COEP) may still load the loader.
    response.headers["Cross-Origin-Resource-Policy"] = "cross-origin"
    # A tag manager may insert it as `type="module"`, a CORS fetch: it is public, no credentials.
    response.headers["Access-Control-Allow-Origin"] = "*"
    response.make_conditional(request)  # 304 when the ETag matches (in place)
    return response


# The loader's second half, which host pages of any origin import on first open
# (static/widget.js): a module script is fetched in CORS mode (HTML, "fetch a single module
# script"), so it needs Access-Control-Allow-Origin; public, sent without credentials.
_HOST_PAGE_MODULES = frozenset({"/static/widget/embed.js"})


def security_headers(response: Response) -> Response:
    response.headers.setdefault("X-Content-Type-Options", "nosniff")
    response.headers.setdefault("Referrer-Policy", "strict-origin-when-cross-origin")
    if request.path in _HOST_PAGE_MODULES:
        response.headers["Access-Control-Allow-Origin"] = "*"
        response.headers["Cross-Origin-Resource-Policy"] = "cross-origin"  # host pages with COEP
    return response


def init_app(app: Flask) -> None:
    app.register_blueprint(bp)
    app.after_request(security_headers)
