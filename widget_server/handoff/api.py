"""The visitor's hand-off routes (docs/protocol.md, "Hand-off to a person"): a thin adapter
from HTTP to HandoffService, authorised by the conversation's token like every other
conversation route, rate-limited (ratelimits.py) and bounded (MAX_BODY_BYTES, MAX_TEXT_CHARS).
"""

from __future__ import annotations

from collections.abc import Iterator

from flask import Blueprint, Response, jsonify, request

from ..attachments.sending import sent_attachments
from ..chat.api import STREAM_HEADERS
from ..chat.service import StreamSlot
from ..protocol import parse_event_id
from ..transport import authorize, chat_service, disconnect_probe, handoff_service, parse_json, satisfaction_service
from ..wire.bodies import GiveSatisfaction, HandoffMessage, HandoffRequest, LeftMessage
from ..wire.errors import INVALID_AFTER, INVALID_LAST_EVENT_ID

bp = Blueprint("handoff_visitor", __name__, url_prefix="/api/v1")


@bp.post("/conversations/<conversation:conversation_id>/handoff")
def request_handoff(conversation_id: str) -> Response:
    authorize(conversation_id)
    body = parse_json(HandoffRequest)
    return jsonify(handoff_service().request(conversation_id, body.request_id))


@bp.delete("/conversations/<conversation:conversation_id>/handoff")
def cancel_handoff(conversation_id: str) -> Response:
    authorize(conversation_id)
    handoff_service().cancel(conversation_id)
    return Response(status=204)


@bp.post("/conversations/<conversation:conversation_id>/handoff/messages")
def post_handoff_message(conversation_id: str) -> Response:
    authorize(conversation_id)
    body = parse_json(HandoffMessage)
    # Files go to the person as they go to the assistant (docs/protocol.md, "Sending files with
    # a message"): checked first, then listed with the message for the console and the history.
    sent = sent_attachments(body.attachments, conversation_id)
    files = [found.to_json() for found in chat_service().turn_attachments(conversation_id, sent)]
    response = jsonify(handoff_service().visitor_message(conversation_id, body.request_id, body.text, files))
    response.status_code = 201
    return response


@bp.post("/conversations/<conversation:conversation_id>/handoff/left-messages")
def post_left_message(conversation_id: str) -> Response:
    authorize(conversation_id)
    body = parse_json(LeftMessage)
    left = handoff_service().leave_message(conversation_id, body.request_id, body.email, body.text)
    response = jsonify(left)
    response.status_code = 201
    return response


@bp.post("/conversations/<conversation:conversation_id>/satisfaction")
def give_satisfaction(conversation_id: str) -> Response:
    """ "How was your conversation?" after a person ended the hand-off (handoff/satisfaction.py):
    201 for the first answer, 200 for the same one again."""
    authorize(conversation_id)
    body = parse_json(GiveSatisfaction)
    record, created = satisfaction_service().give(conversation_id, body.handoff, body.rating, body.comment)
    response = jsonify(record)
    response.status_code = 201 if created else 200
    return response


def _after_seq(conversation_id: str) -> int:
    """Where a reader resumes: `Last-Event-ID: <conversation_id>:<seq>`, else `?after=<seq>`, else 0."""
    raw = request.headers.get("Last-Event-ID")
    if raw:
        parsed = parse_event_id(raw)
        if parsed is None or parsed[0] != conversation_id:
            raise INVALID_LAST_EVENT_ID(
                f"Last-Event-ID must be '{conversation_id}:<seq>', the id of an event of this conversation.",
            )
        return parsed[1]
    after = request.args.get("after")
    if after is None or after == "":
        return 0
    parsed = parse_event_id(f"{conversation_id}:{after}")
    if parsed is None:
        raise INVALID_AFTER("after must be a sequence number: 0, or digits without a leading zero.")
    return parsed[1]


class ConversationEventStream:
    """A WSGI byte iterable over HandoffService.event_stream whose `close()` releases the
    stream slot even if iteration never started (as service.EventStream's does)."""

    def __init__(self, slot: StreamSlot, stream: Iterator[bytes]) -> None:
        self._slot = slot
        self._stream = stream

    def __iter__(self) -> ConversationEventStream:
        return self

    def __next__(self) -> bytes:
        try:
            return next(self._stream)
        except BaseException:
            self._slot.release()
            raise

    def close(self) -> None:
        close = getattr(self._stream, "close", None)
        if close is not None:
            close()
        self._slot.release()


def conversation_stream_response(slot: StreamSlot, stream: Iterator[bytes]) -> Response:
    """A conversation's event stream as the visitor's and the console's routes send it."""
    return Response(
        ConversationEventStream(slot, stream),
        status=200,
        mimetype="text/event-stream",
        headers=STREAM_HEADERS,
        direct_passthrough=True,
    )


@bp.get("/conversations/<conversation:conversation_id>/events")
def conversation_events(conversation_id: str) -> Response:
    authorize(conversation_id, allow_query_token=True)
    after_seq = _after_seq(conversation_id)
    handoff = handoff_service()
    handoff.check_resume_position(conversation_id, after_seq)
    # The same slots as answers' streams (MAX_STREAMS and the per-client and per-conversation
    # limits): a conversation stream is one more open connection.
    slot = chat_service().reserve_stream(conversation_id, request.remote_addr or "")
    # The visitor's own stream: while it is open they count as waiting (HANDOFF_QUEUE_IDLE_SECONDS).
    stream = handoff.event_stream(
        conversation_id, after_seq, client_gone=disconnect_probe(request.environ), visitor=True
    )
    return conversation_stream_response(slot, stream)
