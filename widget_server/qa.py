"""The QA page for screen-reader testers: `/qa` and its expected scripts at `/qa/script`.

Served only when the `QA` setting is on (which a production configuration
refuses at start); otherwise `/qa`, `/qa/script` and the page's own assets
under `/static/qa/` are 404s like any unknown path. QA does not turn fault
injection on: the page explains when `FAULTS` is off and disables its fault
controls.

The page embeds the widget exactly as a site does — the loader's `<script>`
with `data-*` attributes, inline (`data-target`) so the panel stays next to
the log — and, being on the chat server's own origin, listens to the panel's
`chatwidget:*` events (docs/events.md) to build its log.
"""

from __future__ import annotations

import hashlib
import json
import re
from functools import cache
from pathlib import Path
from typing import Any

from flask import Blueprint, Response, abort, current_app, render_template, request, url_for

from . import expected
from .backends.demo import SCENARIOS, load_seed_answers
from .i18n import DEFAULT_LANGUAGE, load_strings, pick_language
from .settings import Settings
from .transport import content_security_policy as _csp

bp = Blueprint("qa", __name__)

# The seed answers' questions (docs/design.md), typed as a person would; each plays a scenario's answer.
SEED_QUESTIONS = ("improvisation", "voicings")
# A script lists at most this many sentences (the `bulk` answer has thousands).
SCRIPT_MAX_SENTENCES = 120

_PLACEHOLDER = re.compile(r"\{(\w+)\}")


def _settings() -> Settings:
    values: Settings = current_app.config["WIDGET_SERVER"]
    return values


@bp.before_app_request
def _only_when_qa_is_on() -> None:
    path = request.path
    if (path == "/qa" or path.startswith(("/qa/", "/static/qa/"))) and not _settings().server.qa:
        abort(404)


@cache
def qa_strings(static_dir: str) -> dict[str, dict]:
    folder = Path(static_dir) / "qa" / "i18n"
    return {path.stem: json.loads(path.read_text(encoding="utf-8")) for path in sorted(folder.glob("*.json"))}


def _page_strings() -> tuple[str, dict, dict[str, dict]]:
    strings = qa_strings(current_app.static_folder)
    lang = pick_language(request.args.get("lang"), strings)
    return lang, strings[lang], strings


def _format(template: str, **values: object) -> str:
    """static/widget/i18n.js's format(): each `{name}` with a value given is replaced."""
    return _PLACEHOLDER.sub(lambda m: str(values[m[1]]) if m[1] in values else m[0], template)


def qa_items(q: dict) -> list[dict]:
    """What the page can play: every demo scenario, then the seed questions."""
    items = []
    for name, scenario in SCENARIOS.items():
        items.append(
            {
                "id": name,
                "group": "scenario",
                "label": name,
                "command": f"/scenario {name}",
                "scenario": name,
                "description": q.get("scenarioDescriptions", {}).get(name) or scenario.description,
            }
        )
    seeds = load_seed_answers()
    for key in SEED_QUESTIONS:
        if key not in SCENARIOS or key not in seeds:
            continue
        question = seeds[key]["question"]
        items.append(
            {
                "id": f"question-{key}",
                "group": "question",
                "label": question,
                "command": question,
                "scenario": key,
                "description": _format(q["seedQuestion"], scenario=key),
            }
        )
    return items


# Files a tester attaches in the chat (tests/test_qa_samples.py), served with the page's own assets under
# /static/qa/samples/; the page prints each one's SHA-256, which `/scenario attachments` must read back.
SAMPLE_FILES = ("qa-sample.png", "qa-sample.txt")


def sample_files() -> list[dict[str, Any]]:
    folder = Path(current_app.static_folder or "") / "qa" / "samples"
    samples = []
    for name in SAMPLE_FILES:
        data = (folder / name).read_bytes()
        url = url_for("static", filename=f"qa/samples/{name}")
        samples.append({"name": name, "url": url, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()})
    return samples


def _embed_allows_self() -> bool:
    origins = _settings().web.embed_origins
    own = request.host_url.rstrip("/")
    return "'self'" in origins or "*" in origins or own in origins


def _respond(html: str) -> Response:
    response = Response(html, mimetype="text/html")
    # As strict as the panel's, plus the panel itself in a frame.
    response.headers["Content-Security-Policy"] = _csp("'none'") + "; frame-src 'self'"
    response.headers["Referrer-Policy"] = "no-referrer"
    response.headers["Cache-Control"] = "no-store"
    return response


@bp.get("/qa")
def qa_page() -> Response:
    settings = _settings()
    lang, q, all_strings = _page_strings()
    widget_langs = sorted(load_strings(current_app.static_folder))
    items = qa_items(q)
    config = {
        "lang": lang,
        "strings": q,
        "items": items,
        "faultsEnabled": bool(settings.server.faults),
        "loaderSrc": url_for("web.loader"),
        "scriptUrl": url_for("qa.script_page"),
        "target": "#qa-widget",
        "defaults": {"lang": lang if lang in widget_langs else DEFAULT_LANGUAGE, "announceInterval": 1000},
    }
    notices = []
    if not settings.server.faults:
        notices.append(("faults", q["faultsOff"]))
    if not _embed_allows_self():
        notices.append(("embed", q["embedNotAllowed"]))
    if settings.server.backend != "demo":
        notices.append(("backend", _format(q["backendNotDemo"], backend=settings.server.backend)))
    html = render_template(
        "qa.html",
        lang=lang,
        q=q,
        page_languages=[(code, all_strings[code]["languageNames"].get(code, code)) for code in all_strings],
        widget_languages=[(code, q["languageNames"].get(code, code)) for code in widget_langs],
        items=items,
        config=config,
        faults_enabled=bool(settings.server.faults),
        notices=notices,
        samples=sample_files(),
    )
    return _respond(html)


@bp.get("/qa/script")
def script_page() -> Response:
    """The expected script's page. The server gives the scenario's answer and how it
    ends; static/qa/script.js computes what is heard, with the panel's own renderer
    and announcer (static/qa/expected.js), so no markdown rule lives here."""
    settings = _settings()
    lang, q, all_strings = _page_strings()
    items = qa_items(q)
    by_id = {item["id"]: item for item in items}
    wanted = request.args.get("scenario", items[0]["id"] if items else "")
    item = by_id.get(wanted)
    if item is None:
        abort(404)
    widget_strings = load_strings(current_app.static_folder)
    widget_lang = lang if lang in widget_strings else DEFAULT_LANGUAGE
    answer = expected.scenario_answer(item["scenario"])
    config: dict[str, Any] = {
        "lang": widget_lang,
        "strings": q,
        "widgetStrings": widget_strings[widget_lang],
        "answer": answer.text,
        "errorCode": answer.error_code,
        "sentencesMayBeDropped": answer.sentences_may_be_dropped,
        "failsLate": answer.fails_late,
        "progress": list(answer.progress),
        "sources": answer.sources,
        "timeLimitSeconds": f"{settings.chat.message_time_limit_seconds:g}",
        "maxSentences": SCRIPT_MAX_SENTENCES,
    }
    html = render_template(
        "qa_script.html",
        lang=lang,
        q=q,
        page_languages=[(code, all_strings[code]["languageNames"].get(code, code)) for code in all_strings],
        items=items,
        item=item,
        config=config,
        reconnecting=widget_strings[widget_lang]["reconnecting"],
        fmt=_format,
    )
    return _respond(html)
