"""The agent console's routes: `/agent` (the page, or the sign-in form), sign-in, sign-out,
and the JSON API under `/agent/api` (docs/agents.md, "The agent API"; docs/security.md).

A thin adapter, like chat/api.py: validation here, then one call of the hand-off service
(`widget_server.handoff`), which holds the queue, the claims and the conversation's events.

Who may call what:
- `GET /agent`, `POST /agent/sign-in`: anyone (the sign-in form; its own rate limit,
  RATE_LIMIT_AGENT_SIGN_IN, per client address and per name, and a growing wait after
  failures, sign_in_delay.py; a double-submit CSRF token);
- everything else: a signed-in agent (the `__Host-agent_session` cookie, sessions.py) whose
  account is still in the agents file; a request that changes anything also carries the
  session's CSRF token (`X-CSRF-Token`, or the form's hidden field for sign-out). Without a
  session the API answers 401 `not_signed_in`; with a missing or wrong token, 403
  `csrf_failed`. Every error under /agent/api is JSON with a stable code.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

from flask import Blueprint, Response, current_app, g, jsonify, render_template, request, url_for

from ..attachments.api import ATTACHMENT_NOT_FOUND, ATTACHMENT_PREFIX, attachment_response
from ..errors import ApiError
from ..handoff.api import conversation_stream_response
from ..handoff.service import INBOX_PAGE_MAX, HandoffService
from ..i18n import accepted_languages, pick_language, text_direction
from ..protocol import is_id
from ..ratelimits import client_key, current_limits
from ..transport import (
    BODY_KEY,
    chat_service,
    content_security_policy,
    disconnect_probe,
    json_body,
    parse_json,
    services,
)
from ..wire.bodies import AgentMessage, EndHandoff
from ..wire.errors import (
    CSRF_FAILED,
    INVALID_AFTER,
    INVALID_CURSOR,
    INVALID_LAST_EVENT_ID,
    INVALID_LIMIT,
    NOT_FOUND,
    NOT_SIGNED_IN,
    NOT_YOUR_CONVERSATION,
    UNKNOWN_FIELD,
)
from .accounts import MAX_PASSWORD_CHARS, AccountsError, Agent, AgentAccounts
from .mail import Mailer
from .sessions import (
    CSRF_FIELD,
    CSRF_HEADER,
    MAX_TOKEN_CHARS,
    SESSION_COOKIE,
    SIGN_IN_COOKIE,
    AgentSession,
    SessionStore,
    new_token,
    tokens_match,
)
from .sign_in_delay import DEVICE_COOKIE, DEVICE_SECONDS

log = logging.getLogger(__name__)

bp = Blueprint("agent_api", __name__)

LANGUAGES_KEY = "widget_server.agent_languages"
# The agent's choice of language (the console's language control, `?lang=`), kept a year.
# `__Host-` as the session cookie: Secure, host-only, Path=/.
LANGUAGE_COOKIE = "__Host-agent_lang"
_LANGUAGE_COOKIE_SECONDS = 365 * 24 * 3600

API_PREFIX = "/agent/api/"
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
# The sign-in form's fields, bounded before anything reads them.
_MAX_NAME_CHARS = 64
_MAX_FORM_FIELDS = 8

NOT_SIGNED_IN_MESSAGE = "Sign in at /agent first: this request has no session, or it expired or was signed out."
CSRF_FAILED_MESSAGE = (
    f"This request needs the session's CSRF token in the {CSRF_HEADER} header; sign in again if it was lost."
)
# The sign-in page's refusals are said in the agent's language: keys of
# static/agent/i18n/<lang>.json. The JSON API's messages stay English (for logs and API
# clients); the console shows its own sentence for each stable `code` (its `errors` strings).
WRONG_CREDENTIALS = "signInWrongCredentials"
FORM_EXPIRED = "signInFormExpired"
RATE_LIMITED = "signInRateLimited"
CONVERSATION_NOT_YOURS = "This conversation is not waiting, and another agent (or nobody) holds it: claim it first."


def accounts() -> AgentAccounts:
    return services().accounts


def sessions() -> SessionStore:
    return services().sessions


def mailer() -> Mailer:
    return services().mailer


def handoff() -> HandoffService:
    return services().handoff


@dataclass(frozen=True)
class SignedIn:
    session_id: str
    session: AgentSession
    agent: Agent


def signed_in() -> SignedIn | None:
    """The request's live session and its agent (still in the agents file), or None."""
    if "widget_server_agent" in g:
        found: SignedIn | None = g.widget_server_agent
        return found
    session_id = request.cookies.get(SESSION_COOKIE, "")
    session = sessions().get(session_id)
    agent = None
    if session is not None:
        try:
            agent = accounts().get(session.agent_name)
        except AccountsError as error:  # the file became corrupt: the last good list stands
            log.error("%s", error)
    found = SignedIn(session_id, session, agent) if session is not None and agent is not None else None
    g.widget_server_agent = found
    return found


def current_agent() -> SignedIn:
    found = signed_in()
    if found is None:  # _guard_api refused it already; kept for the type checker
        raise NOT_SIGNED_IN(NOT_SIGNED_IN_MESSAGE)
    return found


@bp.before_request
def _guard_api() -> None:
    """Before every /agent/api route: rate limit, session, then CSRF for a change."""
    if not request.path.startswith(API_PREFIX):
        return
    found = signed_in()
    limits = current_limits()
    if limits is not None:
        limits.check_agent_request(found.agent.name if found else None)
    if found is None:
        raise NOT_SIGNED_IN(NOT_SIGNED_IN_MESSAGE)
    if request.method not in _SAFE_METHODS and not tokens_match(
        request.headers.get(CSRF_HEADER), found.session.csrf_token
    ):
        raise CSRF_FAILED(CSRF_FAILED_MESSAGE)
    # Any agent API call says the console is there (presence, docs/agents.md).
    handoff().agent_seen(found.agent.name)


# -- pages -----------------------------------------------------------------------------------


def _page_headers(response: Response) -> Response:
    """The panel's policy (web.py, transport.content_security_policy): our own scripts and
    styles only, no inline code, framed by nobody."""
    response.headers["Content-Security-Policy"] = content_security_policy("'none'")
    response.headers["Referrer-Policy"] = "no-referrer"
    response.headers["Cache-Control"] = "no-store"
    response.headers["X-Frame-Options"] = "DENY"
    return response


def _set_cookie(response: Response, name: str, value: str, max_age: int | None) -> None:
    # __Host-: Secure, Path=/, no Domain (sessions.py). SameSite=Strict: never sent with a
    # request another site starts, so no other site can act with the agent's session.
    response.set_cookie(name, value, max_age=max_age, path="/", secure=True, httponly=True, samesite="Strict")


def _see_console() -> Response:
    """303 See Other to /agent: after a form's POST, the browser GETs the console (under the
    path the chat is mounted at, widget_server/mount.py)."""
    return Response(status=303, headers={"Location": url_for("agent_api.console"), "Cache-Control": "no-store"})


# -- languages ---------------------------------------------------------------------------------


def console_languages() -> dict[str, dict[str, Any]]:
    """The console's languages: each static/agent/i18n/<lang>.json (one file is one language,
    docs/agents.md "Languages"), read once per app. The same words serve the pages rendered
    here and static/agent/console.js."""
    cached: dict[str, dict[str, Any]] | None = current_app.extensions.get(LANGUAGES_KEY)
    if cached is None:
        static_folder = current_app.static_folder
        assert static_folder is not None
        folder = Path(static_folder) / "agent" / "i18n"
        cached = {path.stem: json.loads(path.read_text(encoding="utf-8")) for path in sorted(folder.glob("*.json"))}
        current_app.extensions[LANGUAGES_KEY] = cached
    return cached


def _asked_language() -> str:
    """`?lang=` as a file's name would be (`ES` is `es`); bounded before it is looked up."""
    return request.args.get("lang", "")[:16].strip().lower()


def chosen_language() -> str:
    """The language of this page: the agent's choice (`?lang=`, then the cookie that keeps it),
    else the browser's Accept-Language (RFC 9110 §12.5.4), else English."""
    # The panel's own rule (i18n.pick_language): in the browser's order of preference, each
    # tag by its primary subtag (RFC 4647 §3.4 lookup: `es-MX` is served `es`; the retired `iw`
    # is Hebrew), never one of quality 0. Not werkzeug's best_match alone: it takes an exact
    # match of lower quality (`es;q=0.4`) over a higher one that only matches by its prefix
    # (`en-GB;q=0.5`).
    chosen = (_asked_language(), request.cookies.get(LANGUAGE_COOKIE, ""))
    return pick_language(None, console_languages(), [*chosen, *accepted_languages(request.accept_languages)])


def fill(template: str, **values: object) -> str:
    """static/widget/i18n.js's format(): each `{name}` with a value given is replaced."""
    for name, value in values.items():
        template = template.replace("{" + name + "}", str(value))
    return template


def _page(template: str, status: int = 200, **context: Any) -> Response:
    """A page in the chosen language: `<html lang>`, its words, the language control; a choice
    made with `?lang=` is kept in a cookie for the next pages (and the next sign-in)."""
    lang = chosen_language()
    languages = console_languages()
    strings = languages.get(lang, {})
    names = [(code, words.get("languageName", code)) for code, words in languages.items()]
    # `dir`: Arabic and Hebrew pages are right to left (docs/accessibility.md A91), as the panel.
    html = render_template(template, lang=lang, dir=text_direction(lang), s=strings, languages=names, **context)
    response = _page_headers(Response(html, status=status, mimetype="text/html"))
    response.headers["Content-Language"] = lang
    response.vary.update(("Accept-Language", "Cookie"))
    if _asked_language() == lang:
        response.set_cookie(
            LANGUAGE_COOKIE,
            lang,
            max_age=_LANGUAGE_COOKIE_SECONDS,
            path="/",
            secure=True,
            httponly=True,
            samesite="Lax",
        )
    return response


def _sign_in_page(*, error: str | None = None, name: str = "", status: int = 200, **values: object) -> Response:
    """The sign-in form; `error`, a key of the language file (WRONG_CREDENTIALS, …), with its
    `values`."""
    token = request.cookies.get(SIGN_IN_COOKIE, "")
    if not (0 < len(token) <= MAX_TOKEN_CHARS) or error == FORM_EXPIRED:
        token = new_token()
    strings = console_languages().get(chosen_language(), {})
    message = fill(strings.get(error, error), **values) if error else None
    response = _page("agent_sign_in.html", status, csrf_token=token, error=message, name=name)
    _set_cookie(response, SIGN_IN_COOKIE, token, max_age=3600)
    return response


@bp.get("/agent")
def console() -> Response:
    found = signed_in()
    if found is None:
        return _sign_in_page()
    lang = chosen_language()
    config = {
        "csrfToken": found.session.csrf_token,
        "agent": found.agent.public(),
        "apiBase": request.script_root + "/agent/api",  # under a mount's prefix (mount.py)
        "lang": lang,
        "strings": console_languages().get(lang, {}),
        # The panel's stall rule (web.py's panel config): no byte for three heartbeats and 5 s,
        # and the conversation's stream is dead, resumed (static/widget/follow.js).
        "stallTimeoutMs": int(current_app.config["WIDGET_SERVER"].chat.heartbeat_seconds * 3000) + 5000,
    }
    return _page("agent.html", config=config)


def _form() -> dict[str, str]:
    """The urlencoded form body, read whole by transport.read_bounded_body (so Flask's own
    `request.form` would find the stream spent)."""
    raw: bytes = request.environ.get(BODY_KEY, b"")
    try:
        pairs = parse_qsl(raw.decode("utf-8"), keep_blank_values=True, max_num_fields=_MAX_FORM_FIELDS)
    except (UnicodeDecodeError, ValueError):
        return {}
    return dict(pairs)


@bp.post("/agent/sign-in")
def sign_in() -> Response:
    form = _form() if request.mimetype == "application/x-www-form-urlencoded" else {}
    name = form.get("name", "").strip()[:_MAX_NAME_CHARS]
    password = form.get("password", "")
    if not tokens_match(form.get(CSRF_FIELD), request.cookies.get(SIGN_IN_COOKIE, "")):
        return _sign_in_page(error=FORM_EXPIRED, name=name, status=403)
    typed = name.lower()
    delays = services().sign_in_delays
    # A browser that signed in as this name before is counted apart from the name's shared
    # counts, so a stranger typing the name never keeps the agent out (sign_in_delay.py).
    device = delays.recognised_device(request.cookies.get(DEVICE_COOKIE), typed)
    limits = current_limits()
    seconds = 0
    if limits is not None:
        try:
            limits.check_sign_in(typed, per_name=device is None)
        except ApiError as error:
            seconds = error.retry_after or 60
    # Counted past the rate limit only; during the wait after failures, refused unread.
    attempt = None if seconds else delays.begin(client_key(), typed, device)
    if attempt is not None and attempt.refused:
        seconds = attempt.retry_after
    if seconds or attempt is None:
        response = _sign_in_page(error=RATE_LIMITED, name=name, status=429, seconds=seconds)
        response.headers["Retry-After"] = str(seconds)
        return response
    agent = None
    if name and password and len(password) <= MAX_PASSWORD_CHARS:
        try:
            agent = accounts().verify(name, password)
        except AccountsError as error:
            log.error("%s", error)
    if agent is None:
        delays.failed(attempt)
        # Never which of the two was wrong (docs/security.md, "Agent accounts").
        return _sign_in_page(error=WRONG_CREDENTIALS, name=name, status=401)
    device_token = delays.succeeded(attempt)
    # A new session id at every sign-in: an id planted before it is worth nothing after.
    sessions().delete(request.cookies.get(SESSION_COOKIE))
    session_id, _ = sessions().create(agent.name)
    response = _see_console()
    _set_cookie(response, SESSION_COOKIE, session_id, max_age=int(sessions().lifetime))
    response.delete_cookie(SIGN_IN_COOKIE, path="/", secure=True, httponly=True, samesite="Strict")
    _set_cookie(response, DEVICE_COOKIE, device_token, max_age=DEVICE_SECONDS)
    log.info("agent %s signed in", agent.name)
    return response


@bp.post("/agent/sign-out")
def sign_out() -> Response:
    found = signed_in()
    form = _form() if request.mimetype == "application/x-www-form-urlencoded" else {}
    if found is not None:
        sent = form.get(CSRF_FIELD) or request.headers.get(CSRF_HEADER)
        if not tokens_match(sent, found.session.csrf_token):
            raise CSRF_FAILED(CSRF_FAILED_MESSAGE)
        sessions().delete(found.session_id)
        log.info("agent %s signed out", found.agent.name)
    response = _see_console()
    response.delete_cookie(SESSION_COOKIE, path="/", secure=True, httponly=True, samesite="Strict")
    return response


# -- the API ---------------------------------------------------------------------------------


def _no_body() -> None:
    """A route that takes no body: an empty one, or `{}`."""
    if request.environ.get(BODY_KEY):
        body = json_body()
        if body:
            raise UNKNOWN_FIELD(f"Unknown field(s): {', '.join(sorted(body))}. Send no body.")


def _conversation_id(raw: str) -> str:
    if not is_id(raw):
        raise NOT_FOUND("No such conversation.")
    return raw


def _mine_or_waiting(conversation_id: str, agent_name: str, state: dict[str, Any] | None = None) -> dict[str, Any]:
    """The conversation's hand-off state (`state`, when already read), if this agent may see
    it: it waits in the queue, this agent holds it, or this agent ended its latest hand-off (read
    only, until a new one is queued); else 403 `not_your_conversation`."""
    service = handoff()
    if state is None:
        state = service.state(conversation_id)
    if state.get("state") == "queued":
        return state
    if any(c.get("conversation_id") == conversation_id for c in service.claimed_by(agent_name)):
        return state
    if state.get("state") == "ended":
        # The person who ended the conversation's latest hand-off still sees it, read-only, until
        # a new one is queued: the visitor's answer to "How was your conversation?" comes to them
        # there (handoff/satisfaction.py; docs/agents.md, "Satisfaction").
        record = service.stored_record(conversation_id)
        rateable = record.get("rateable") if record is not None else None
        if rateable is not None and rateable["agent"] == agent_name:
            return state
    raise NOT_YOUR_CONVERSATION(CONVERSATION_NOT_YOURS)


@bp.get("/agent/api/session")
def get_session() -> Response:
    found = current_agent()
    response = jsonify({**found.agent.public(), "csrf_token": found.session.csrf_token})
    response.headers["Cache-Control"] = "no-store"
    return response


@bp.get("/agent/api/queue")
def get_queue() -> Response:
    found = current_agent()
    service = handoff()
    # The console polls this every few seconds: the moment to hand back claims whose agent
    # went away (AGENT_GRACE_SECONDS), on whichever worker the poll lands.
    service.release_lapsed()
    unreplied = service.inbox_page(0)["unreplied"]
    return jsonify(
        {"waiting": service.queue(), "mine": service.claimed_by(found.agent.name), "inbox_unreplied": unreplied}
    )


@bp.post("/agent/api/conversations/<conversation_id>/claim")
def claim(conversation_id: str) -> Response:
    found = current_agent()
    _no_body()
    result = handoff().claim(_conversation_id(conversation_id), found.agent.name, found.agent.display_name)
    return jsonify(result)


@bp.get("/agent/api/conversations/<conversation_id>")
def get_conversation(conversation_id: str) -> Response:
    found = current_agent()
    # State, transcript and last_seq from one read of the hand-off record: the console opens
    # the conversation's stream after last_seq and so gets each later event once, and none of
    # those the transcript already shows (docs/agents.md, "Opening a conversation").
    view = handoff().console_view(_conversation_id(conversation_id))
    _mine_or_waiting(conversation_id, found.agent.name, view)
    return jsonify({"conversation_id": conversation_id, **view})


def _after_seq(conversation_id: str) -> int:
    """Where a resumed stream starts: `Last-Event-ID: <cid>:<seq>`, else `?after=<seq>`, else 0."""
    raw = request.headers.get("Last-Event-ID")
    if raw:
        cid, _, seq = raw.rpartition(":")
        if cid == conversation_id and seq.isdigit() and len(seq) <= 10:
            return int(seq)
        raise INVALID_LAST_EVENT_ID(f"Last-Event-ID must be '{conversation_id}:<seq>', an event of this stream.")
    after = request.args.get("after", "")
    if after == "":
        return 0
    if not after.isdigit() or len(after) > 10:
        raise INVALID_AFTER("after must be the seq of the last event received: 0 or more.")
    return int(after)


@bp.get("/agent/api/conversations/<conversation_id>/attachments/<attachment_id>")
def get_attachment(conversation_id: str, attachment_id: str) -> Response:
    """A file the visitor sent, for the agent who holds (or may claim) the conversation, with
    the visitor's download headers: nothing in it runs in the console's origin."""
    found = current_agent()
    _mine_or_waiting(_conversation_id(conversation_id), found.agent.name)
    if not (attachment_id.startswith(ATTACHMENT_PREFIX) and is_id(attachment_id)):
        raise NOT_FOUND(ATTACHMENT_NOT_FOUND)
    return attachment_response(conversation_id, attachment_id)


@bp.get("/agent/api/conversations/<conversation_id>/events")
def get_events(conversation_id: str) -> Response:
    found = current_agent()
    _mine_or_waiting(_conversation_id(conversation_id), found.agent.name)
    after = _after_seq(conversation_id)
    service = handoff()
    service.check_resume_position(conversation_id, after)
    # The same stream slots as the visitor's streams (MAX_STREAMS, per client, per
    # conversation): one more open connection (docs/security.md, "Rate limits").
    slot = chat_service().reserve_stream(conversation_id, request.remote_addr or "")
    stream = service.event_stream(conversation_id, after, client_gone=disconnect_probe(request.environ))
    return conversation_stream_response(slot, stream)


@bp.post("/agent/api/conversations/<conversation_id>/messages")
def post_message(conversation_id: str) -> Response:
    found = current_agent()
    body = parse_json(AgentMessage)
    result = handoff().agent_message(_conversation_id(conversation_id), found.agent.name, body.request_id, body.text)
    response = jsonify(result)
    response.status_code = 201
    return response


@bp.post("/agent/api/conversations/<conversation_id>/typing")
def typing(conversation_id: str) -> Response:
    found = current_agent()
    _no_body()
    handoff().typing(_conversation_id(conversation_id), found.agent.name)
    return Response(status=204)


@bp.post("/agent/api/conversations/<conversation_id>/end")
def end(conversation_id: str) -> Response:
    found = current_agent()
    body = parse_json(EndHandoff) if request.environ.get(BODY_KEY) else EndHandoff()
    handoff().end(_conversation_id(conversation_id), found.agent.name, body.reason)
    return Response(status=204)


INBOX_PAGE_DEFAULT = 50
# A cursor is a left message's inbox score (handoff/store.py, inbox_score): digits.
_CURSOR_MAX_CHARS = 20


@bp.get("/agent/api/inbox")
def get_inbox() -> Response:
    """A page of left messages, newest first: `?limit=` (1 to INBOX_PAGE_MAX, 50 by default),
    `?cursor=` the previous page's `next_cursor` (docs/agents.md, "The inbox")."""
    current_agent()
    unknown = sorted(set(request.args) - {"limit", "cursor"})
    if unknown:
        raise UNKNOWN_FIELD(f"Unknown query parameter(s): {', '.join(unknown)}. Use limit and cursor.")
    raw_limit = request.args.get("limit", str(INBOX_PAGE_DEFAULT))
    if not (raw_limit.isdigit() and len(raw_limit) <= 4 and 1 <= int(raw_limit) <= INBOX_PAGE_MAX):
        raise INVALID_LIMIT(f"limit must be a whole number from 1 to {INBOX_PAGE_MAX}.")
    raw_cursor = request.args.get("cursor")
    if raw_cursor is not None and not (raw_cursor.isdigit() and len(raw_cursor) <= _CURSOR_MAX_CHARS):
        raise INVALID_CURSOR("cursor must be a next_cursor this route returned, unchanged.")
    page = handoff().inbox_page(int(raw_limit), None if raw_cursor is None else int(raw_cursor))
    response = jsonify(page)
    response.headers["Cache-Control"] = "no-store"
    return response


@bp.post("/agent/api/inbox/<left_message_id>/reply")
def reply_to_left(left_message_id: str) -> Response:
    found = current_agent()
    if not is_id(left_message_id):
        raise NOT_FOUND("No such left message.")
    body = parse_json(AgentMessage)
    result = handoff().reply_to_left(
        left_message_id, found.agent.name, found.agent.display_name, body.request_id, body.text
    )
    response = jsonify(result)
    response.status_code = 201
    return response
