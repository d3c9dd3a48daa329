"""Transport: the `/api/v1` blueprint. A thin adapter from HTTP to ChatService.

Validation happens here, before anything is stored, so bad input gets a
clear JSON error and changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from flask import Blueprint, Flask, Response, jsonify, request

from ..attachments.sending import sent_attachments
from ..faults import NO_FAULTS, FaultPlan, InvalidFaults, parse_faults
from ..identity.identity import Identity
from ..protocol import parse_event_id
from ..ratelimits import current_limits
from ..transport import (
    BODY_KEY,
    CONVERSATION_COOKIE,
    authorize,
    chat_service,
    disconnect_probe,
    handoff_service,
    parse_json,
    services,
    settings,
)
from ..wire.bodies import ClientReport, CreateConversation, NewMessage
from ..wire.errors import (
    CONSENT_REQUIRED,
    FAULTS_DISABLED,
    IDENTITY_REQUIRED,
    INVALID_FAULTS,
    INVALID_LAST_EVENT_ID,
    REPORT_EXCEEDS_MESSAGE,
)
from .service import ChatService, EventStream, consent_sha256

bp = Blueprint("api", __name__, url_prefix="/api/v1")

STREAM_HEADERS = {
    "Cache-Control": "no-store",
    # nginx and similar proxies buffer responses unless told not to.
    "X-Accel-Buffering": "no",
    # Compression buffers; a stream must reach the reader event by event.
    "Content-Encoding": "identity",
}


def _stream_response(stream: Iterable[bytes]) -> Response:
    return Response(stream, status=200, mimetype="text/event-stream", headers=STREAM_HEADERS, direct_passthrough=True)


def _resume_position(message_id: str, *, from_query: bool) -> int:
    raw = request.headers.get("Last-Event-ID")
    if raw is None and from_query:
        raw = request.args.get("last_event_id")
    if raw is None or raw == "":
        return 0
    parsed = parse_event_id(raw)
    if parsed is None or parsed[0] != message_id:
        raise INVALID_LAST_EVENT_ID(
            f"Last-Event-ID must be '{message_id}:<seq>', the id of an event of this message.",
        )
    return parsed[1]


def _faults() -> FaultPlan:
    """Fault injection from `X-Chat-Faults`, only where the FAULTS setting allows it."""
    header = request.headers.get("X-Chat-Faults")
    if not header:
        return NO_FAULTS
    if not settings().server.faults:
        raise FAULTS_DISABLED("Fault injection is disabled on this server (it is for tests and QA only).")
    try:
        return parse_faults(header)
    except InvalidFaults as error:
        raise INVALID_FAULTS(str(error)) from None


def _new_conversation_identity(body: CreateConversation) -> Identity | None:
    """The identity a new conversation is started with: its body's `identity_token`, verified
    (docs/protocol.md, "Known visitors"). No body at all (what the panel sends) or no token:
    anonymous, unless IDENTITY_REQUIRED (401 `identity_required`)."""
    if body.identity_token:
        return services().identity.verify(body.identity_token)
    if settings().identity.required:
        raise IDENTITY_REQUIRED(
            "This chat is for signed-in visitors: start the conversation with the identity token "
            'the site gives you ({"identity_token": "…"}).'
        )
    return None


def _consent(body: CreateConversation) -> str:
    """The consent text's SHA-256 the conversation records: with CONSENT_TEXT set, the
    visitor's agreement to exactly that text is required (docs/protocol.md, "Consent"); without
    it, nothing is recorded, whatever the body says."""
    text = settings().chat.consent_text
    if not text:
        return ""
    if body.consent_sha256 != consent_sha256(text):
        raise CONSENT_REQUIRED(
            "This chat asks the visitor to agree to its consent text before the first message: "
            "send consent_sha256, the SHA-256 of the text agreed to (a changed text needs a new agreement)."
        )
    return body.consent_sha256


@bp.post("/conversations")
def create_conversation() -> Response:
    # An empty request creates a conversation as it always has; a body is read only when sent.
    body = parse_json(CreateConversation) if request.environ.get(BODY_KEY) else CreateConversation()
    identity = _new_conversation_identity(body)
    conversation_id, token = chat_service().create_conversation(identity, consent_sha256=_consent(body))
    response = jsonify({"conversation_id": conversation_id, "token": token})
    response.status_code = 201
    # Lets the panel find its conversation again after a reload where a
    # third-party iframe may not use storage: a Partitioned (CHIPS) cookie is
    # kept per embedding site. HttpOnly: only the server reads it, to render
    # the panel's own page (web.py); the API itself never accepts it.
    response.set_cookie(
        CONVERSATION_COOKIE,
        f"{conversation_id}.{token}",
        max_age=int(settings().store.retention_seconds),
        path="/",
        secure=True,
        httponly=True,
        samesite="None",
        partitioned=True,
    )
    return response


@bp.get("/conversations/<conversation:conversation_id>")
def get_conversation(conversation_id: str) -> Response:
    authorize(conversation_id)
    # The hand-off's messages in place among the turns (docs/protocol.md, "History").
    messages = handoff_service().history(conversation_id, chat_service().history(conversation_id))
    return jsonify({"conversation_id": conversation_id, "messages": messages})


def stream_new_answer(
    conversation_id: str, request_id: str, start: Callable[[ChatService, str], tuple[str, bool]]
) -> Response:
    """Start an answer with `start(chat, server_url)` (it claims `request_id` and returns
    the answer's id) and stream it from its start, or from Last-Event-ID on a retry. The
    stream slot is taken before any work starts, and freed if `start` refuses."""
    faults = _faults()
    raw_last_event_id = request.headers.get("Last-Event-ID")
    if raw_last_event_id and parse_event_id(raw_last_event_id) is None:
        # Refused before anything is claimed: a bad header starts nothing.
        raise INVALID_LAST_EVENT_ID(
            "Last-Event-ID must be '<message_id>:<seq>', the id of an event of this message.",
        )
    chat = chat_service()
    # The slot first, taken in this process without a store read: `start` then checks the
    # conversation's running answers once, under its claim lock (ChatService.start_claimed).
    slot = chat.reserve_stream(conversation_id, request.remote_addr or "")  # refuse before starting any work
    try:
        # The answer's links are absolute, on the scheme and host the question was sent to
        # (docs/backends.md, "Source links and /kb/<path>"), like the panel's own API base.
        message_id, created = start(chat, request.url_root.rstrip("/"))
        if created:
            chat.note_activity(authorize(conversation_id))  # (authorised already: no store read)
        # A retry of the same request may say where it got to.
        after_seq = _resume_position(message_id, from_query=False)
        if after_seq or not created:
            # (An answer this request has just created is this conversation's, generates
            # here, and is at sequence 0 or later: nothing to check, no store read.)
            chat.check_resume_position(conversation_id, message_id, after_seq)
    except BaseException:
        slot.release()
        raise
    return _stream_response(
        EventStream(slot, message_id, after_seq, faults=faults, client_gone=disconnect_probe(request.environ))
    )


@bp.post("/conversations/<conversation:conversation_id>/messages")
def post_message(conversation_id: str) -> Response:
    authorize(conversation_id)
    body = parse_json(NewMessage)
    request_id, text = body.request_id, body.text
    attachments = sent_attachments(body.attachments, conversation_id)
    context = tuple((body.context or {}).items())  # the host page's (ChatWidget.setContext)
    # While a person is asked for or handles the conversation, the visitor's messages go to
    # them (…/handoff/messages), never to the backend: 409 `handoff_active`.
    handoff_service().check_not_active(conversation_id)
    return stream_new_answer(
        conversation_id,
        request_id,
        lambda chat, origin: chat.submit(
            conversation_id, request_id, text, server_url=origin, attachments=attachments, context=context
        ),
    )


@bp.get("/conversations/<conversation:conversation_id>/messages/<message:message_id>/events")
def get_events(conversation_id: str, message_id: str) -> Response:
    authorize(conversation_id, allow_query_token=True)
    chat = chat_service()
    after_seq = _resume_position(message_id, from_query=True)
    chat.check_resume_position(conversation_id, message_id, after_seq)
    # ?snapshot=1: start with the whole text so far (a client that saw a gap
    # asks for it rather than trusting deltas across the gap). Of the
    # injected faults, only `snapshot` applies to a resume.
    snapshot = request.args.get("snapshot", "") in ("1", "true") or _faults().snapshot
    slot = chat.reserve_stream(conversation_id, request.remote_addr or "")
    if after_seq > 0:
        chat.metrics.resumed()
    return _stream_response(
        EventStream(slot, message_id, after_seq, snapshot=snapshot, client_gone=disconnect_probe(request.environ))
    )


@bp.get("/conversations/<conversation:conversation_id>/messages/<message:message_id>")
def get_message(conversation_id: str, message_id: str) -> Response:
    authorize(conversation_id)
    return jsonify(chat_service().message_state(conversation_id, message_id))


@bp.post("/conversations/<conversation:conversation_id>/messages/<message:message_id>/cancel")
def cancel_message(conversation_id: str, message_id: str) -> Response:
    authorize(conversation_id)
    chat = chat_service()
    chat.cancel(conversation_id, message_id)
    return jsonify(chat.message_state(conversation_id, message_id))


@bp.post("/conversations/<conversation:conversation_id>/messages/<message:message_id>/report")
def report_message(conversation_id: str, message_id: str) -> Response:
    """What the client saw and repaired on this message's streams (counted in
    /metrics): duplicate events it ignored, gaps (events never received) it
    filled with a snapshot. Sent by the widget when a message ends, only if
    something was repaired. Counted once per message, each figure at most the
    message's event count."""
    authorize(conversation_id)
    report = parse_json(ClientReport)
    counts = {"duplicates": report.duplicates, "dropped": report.dropped}
    chat = chat_service()
    # 404 for another conversation's message; its events so far bound what a client can
    # have seen twice or missed (docs/protocol.md, "Client reports").
    events = chat.message_state(conversation_id, message_id)["last_seq"]
    for field, value in counts.items():
        if value > events:
            raise REPORT_EXCEEDS_MESSAGE(
                f"{field} is {value}, but this message has only {events} events so far; "
                "a report counts at most one per event.",
            )
    # One report per message, on whichever worker it lands: the first is counted, a
    # later one is accepted (the widget may retry) and changes nothing.
    if chat.store.claim_report(message_id):
        chat.metrics.client_report(**counts)
    return Response(status=204)


@bp.delete("/conversations/<conversation:conversation_id>")
def delete_conversation(conversation_id: str) -> Response:
    """Forget the conversation (docs/protocol.md, "Deleting a conversation"): its running
    answers are cancelled first, then every key of it goes at once, the rate limits' own
    included; the token stops working. 204 also expires the panel's cookie for it."""
    authorize(conversation_id)
    chat_service().delete_conversation(conversation_id)
    handoff_service().forget(conversation_id)  # its hand-off: record, events, queue place, left messages
    limits = current_limits()
    if limits is not None:
        limits.forget_conversation(conversation_id)
    response = Response(status=204)
    # The same attributes as when it was set (create_conversation): a browser replaces a
    # cookie only when name, path and partition match.
    response.delete_cookie(CONVERSATION_COOKIE, path="/", secure=True, httponly=True, samesite="None", partitioned=True)
    return response


@bp.after_request
def _no_store(response: Response) -> Response:
    # Every API response is private: the conversation's token, its history,
    # its answers. No shared or browser cache may keep one (streams and
    # errors already say so; this covers the JSON successes too).
    response.headers.setdefault("Cache-Control", "no-store")
    return response


def init_app(app: Flask) -> None:
    app.register_blueprint(bp)
