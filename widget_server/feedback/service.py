"""Feedback on answers: a visitor rates an ended answer (up or down, with an optional comment).

Transport-free, like chat/service.py: it raises ApiError for client mistakes (a body's own are
wire/bodies.py's `PutFeedback`); api.py is
the HTTP adapter and `widget-server feedback export` (cli.py) reads it back for the site's
owner. One record per answer (message) and conversation, changeable and removable
(docs/protocol.md, "Feedback"). Records live in the store with their
conversation and expire and are deleted with it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, date, datetime
from datetime import time as day_time
from typing import Any, Protocol

from ..dashboard.recorder import EventPublisher
from ..errors import CONVERSATION_NOT_FOUND, MESSAGE_NOT_FOUND
from ..metrics import Metrics
from ..stores.base import FeedbackRecord, MessageInfo, Store, UnknownMessage
from ..webhooks.publisher import Publisher
from ..wire.errors import MESSAGE_NOT_FINISHED, NOT_FOUND
from ..wire.webhooks import FeedbackSubmitted


class Answers(Protocol):
    """What rating an answer needs of the chat service (ChatService is one): its store, its
    counters, and a lost answer failed before it is rated. A protocol, so that feedback and
    the service, which lists feedback in the history, do not import each other
    (tests/test_structure.py counts imports under TYPE_CHECKING too)."""

    store: Store
    metrics: Metrics
    webhooks: Publisher
    dashboard: EventPublisher

    def reap_if_lost(self, info: MessageInfo) -> MessageInfo: ...


def iso_time(seconds: float) -> str:
    """A unix time as ISO 8601 in UTC with a `Z`, to the millisecond."""
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def record_json(record: FeedbackRecord) -> dict[str, Any]:
    """What the API says about a record (the history's `feedback`; PUT adds `message_id`)."""
    return {"rating": record.rating, "comment": record.comment, "updated_at": iso_time(record.updated_at)}


def _answer_of(service: Answers, conversation_id: str, message_id: str) -> MessageInfo:
    """The conversation's assistant message `message_id`, else 404 (a user message's id,
    another conversation's message and an unknown id alike: only answers have a log)."""
    info = service.store.message(message_id)
    if info is None or info.conversation_id != conversation_id:
        raise NOT_FOUND(MESSAGE_NOT_FOUND)
    return service.reap_if_lost(info)


def put(
    service: Answers, conversation_id: str, message_id: str, rating: str, comment: str
) -> tuple[FeedbackRecord, dict[str, Any]]:
    """Store the answer's feedback, replacing any earlier one; the record and its JSON."""
    info = _answer_of(service, conversation_id, message_id)
    if not info.state.terminal:
        # Rated only once it ended (completed, failed or cancelled): an answer still
        # arriving is not yet the answer being rated.
        raise MESSAGE_NOT_FINISHED(
            "This answer is still being written. Rate it once it has finished.",
        )
    record = FeedbackRecord(conversation_id, message_id, rating, comment, time.time())
    try:
        previous = service.store.put_feedback(record)
    except UnknownMessage:  # the conversation was deleted (or expired) since the token was checked
        raise NOT_FOUND(CONVERSATION_NOT_FOUND) from None
    # The counter counts ratings given: a new one, or a changed one; not a comment added
    # to the same rating (the widget sends the rating, then the comment).
    if previous is None or previous.rating != rating:
        service.metrics.feedback(rating)
    # Every change is the site owner's to hear, a comment added to the same rating too (the
    # widget sends the rating, then the comment): the latest record each time.
    if previous is None or (previous.rating, previous.comment) != (rating, comment):
        service.webhooks.publish(
            conversation_id, FeedbackSubmitted(message_id=message_id, rating=rating, comment=comment)
        )
        service.dashboard.publish("feedback.submitted", conversation_id, _dashboard_data(service, record, previous))
    return record, {"message_id": message_id, **record_json(record)}


def _dashboard_data(service: Answers, record: FeedbackRecord, previous: FeedbackRecord | None) -> dict[str, Any]:
    """What the owner dashboard counts of a rating (docs/dashboard.md): a new or changed rating
    counts once, a comment is kept; the question is read only for a "not helpful", the one the
    dashboard lists (its top questions with no helpful answer)."""
    helpful = record.rating == "up"
    question = ""
    if not helpful:
        asked = (
            e.user_text
            for e in service.store.exchanges(record.conversation_id)
            if e.assistant_message_id == record.message_id
        )
        question = next(asked, "")
    changed = previous is None or previous.rating != record.rating
    return {"helpful": helpful, "comment": record.comment, "question": question, "rating_changed": changed}


def delete(service: Answers, conversation_id: str, message_id: str) -> None:
    """Remove the answer's feedback; done also when there was none."""
    _answer_of(service, conversation_id, message_id)
    service.store.delete_feedback(conversation_id, message_id)


# -- the export (`widget-server feedback export`) ---------------------------------------------


def parse_since(text: str) -> float:
    """`YYYY-MM-DD` (from that day's start, UTC) or an ISO 8601 date and time (UTC unless
    it says otherwise), as a unix time. ValueError says what was expected."""
    text = text.strip()
    try:
        if len(text) == 10:
            return datetime.combine(date.fromisoformat(text), day_time(), UTC).timestamp()
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(
            f"{text!r} is neither a date (YYYY-MM-DD) nor an ISO 8601 date and time (e.g. 2026-11-30T18:00:00Z)"
        ) from None
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


def export(store: Store, since: float | None = None) -> Iterator[dict[str, Any]]:
    """Every stored feedback record (updated at or after `since`), oldest first, with the
    question it answered, the answer's text and the sources it cited (docs/configuration.md,
    "widget-server feedback export")."""
    rows: list[tuple[float, dict[str, Any]]] = []
    for conversation_id in store.feedback_conversations():
        records = [
            record
            for record in store.conversation_feedback(conversation_id).values()
            if since is None or record.updated_at >= since
        ]
        if not records:
            continue
        questions = {e.assistant_message_id: e.user_text for e in store.exchanges(conversation_id)}
        for record in records:
            info = store.message(record.message_id)
            row: dict[str, Any] = {
                "conversation_id": conversation_id,
                "message_id": record.message_id,
                "rating": record.rating,
                "comment": record.comment,
                "question": questions.get(record.message_id, ""),
                "answer": info.text if info is not None else "",
                "time": iso_time(record.updated_at),
            }
            if info is not None and info.sources:
                row["sources"] = [dict(source) for source in info.sources]
            rows.append((record.updated_at, row))
    rows.sort(key=lambda item: (item[0], item[1]["conversation_id"], item[1]["message_id"]))
    for _, row in rows:
        yield row
