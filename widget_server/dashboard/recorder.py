"""`DashboardRecorder.publish`: the one call the services make for the dashboard
(docs/dashboard.md, "What is counted").

`publish(event_type, conversation_id, data)` turns one event into one `Change` of its hour
(and day) and hands it to the store: one write, never a read. The same call shape as the webhooks'
publisher, so a call site can tell both. Event types the dashboard does not count are
ignored. Recording never fails the request that made the event: a store that is down loses
that count (logged), the visitor's answer does not.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, Protocol

from .buckets import COMMENT_MAX_CHARS, RETENTION_SECONDS, day_of, hour_of, latency_bucket, normalise_question
from .store import Change, DashboardStore

log = logging.getLogger(__name__)

# Counter names (the `counts` family); `failed:<code>` and `satisfaction:<rating>` beside them.
CONVERSATIONS = "conversations"
COMPLETED = "completed"
FAILED = "failed"
CANCELLED = "cancelled"
INCOMPLETE = "incomplete"
HELPFUL = "helpful"
NOT_HELPFUL = "not_helpful"
COMMENTS = "comments"
HANDOFF_QUEUED = "handoff_queued"
HANDOFF_ANSWERED = "handoff_answered"
HANDOFF_ENDED = "handoff_ended"
LEFT_MESSAGES = "left_messages"
SATISFACTION = "satisfaction"
# `webhook:<outcome>`: each webhook delivery attempt by its outcome (webhooks/delivery.py OUTCOMES).
WEBHOOK = "webhook"
# Latency families.
TIME_TO_FIRST_DELTA = "ttfd"
HANDOFF_WAIT = "wait"
# A code or a rating becomes part of a hash field: bounded, plain.
_MAX_CODE_CHARS = 64


class EventPublisher(Protocol):
    """What a service is given to tell the owner dashboard of what happened (this recorder)."""

    def publish(self, event_type: str, conversation_id: str, data: Mapping[str, Any]) -> None: ...

    def forget_texts(self, questions: Iterable[str], comments: Iterable[str]) -> None:
        """A deleted conversation's questions and comments leave the dashboard too."""


class _NoEvents:
    def publish(self, event_type: str, conversation_id: str, data: Mapping[str, Any]) -> None:
        pass

    def forget_texts(self, questions: Iterable[str], comments: Iterable[str]) -> None:
        pass


NO_EVENTS: EventPublisher = _NoEvents()


def _code(value: Any) -> str:
    text = str(value or "unknown")[:_MAX_CODE_CHARS]
    return "".join(character for character in text if character.isalnum() or character in "_-.") or "unknown"


def _question(data: Mapping[str, Any]) -> str:
    question = data.get("question")
    return normalise_question(question) if isinstance(question, str) else ""


def _comment(data: Mapping[str, Any], now: float) -> str:
    comment = data.get("comment")
    if not isinstance(comment, str) or not comment.strip():
        return ""
    entry = {
        "at": datetime.fromtimestamp(now, UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
        "helpful": bool(data.get("helpful")),
        "comment": comment.strip()[:COMMENT_MAX_CHARS],
    }
    return json.dumps(entry, ensure_ascii=False)


def change_for(event_type: str, data: Mapping[str, Any], now: float) -> Change:
    """What `event_type` adds to its hour (an empty change for one the dashboard ignores)."""
    if event_type == "conversation.created":
        return Change(counts={CONVERSATIONS: 1})
    if event_type == "message.completed":
        first = data.get("time_to_first_delta_ms")
        latencies = {TIME_TO_FIRST_DELTA: latency_bucket(float(first))} if isinstance(first, int | float) else {}
        return Change(counts={COMPLETED: 1}, latencies=latencies)
    if event_type in ("message.failed", "message.incomplete"):
        # Failed before any text, or after part of the answer was shown (incomplete): two
        # counts apart, one count per error code for both.
        outcome = FAILED if event_type == "message.failed" else INCOMPLETE
        return Change(counts={outcome: 1, f"{FAILED}:{_code(data.get('code'))}": 1}, question=_question(data))
    if event_type == "message.cancelled":
        return Change(counts={CANCELLED: 1})
    if event_type == "feedback.submitted":
        helpful = bool(data.get("helpful"))
        comment = _comment(data, now)
        # A rating counts when it is new or changed; the widget sends the rating, then the
        # comment for the same rating (feedback/service.py): that second call adds the comment.
        rated = data.get("rating_changed", True) is not False
        counts = {HELPFUL if helpful else NOT_HELPFUL: 1} if rated else {}
        if comment:
            counts[COMMENTS] = 1
        return Change(counts=counts, question="" if helpful or not rated else _question(data), comment=comment)
    if event_type == "handoff.queued":
        return Change(counts={HANDOFF_QUEUED: 1})
    if event_type == "handoff.assigned":
        waited = data.get("waited_ms")
        latencies = {HANDOFF_WAIT: latency_bucket(float(waited))} if isinstance(waited, int | float) else {}
        return Change(counts={HANDOFF_ANSWERED: 1}, latencies=latencies)
    if event_type == "handoff.ended":
        return Change(counts={HANDOFF_ENDED: 1})
    if event_type == "message.left":
        return Change(counts={LEFT_MESSAGES: 1})
    if event_type == "webhook.delivery":
        return Change(counts={f"{WEBHOOK}:{_code(data.get('outcome'))}": 1})
    if event_type == "satisfaction.submitted":
        rating = data.get("rating")
        if isinstance(rating, int) and not isinstance(rating, bool) and 0 <= rating <= 10:
            return Change(counts={SATISFACTION: 1, f"{SATISFACTION}:{rating}": 1})
    return Change()


class DashboardRecorder:
    """Counts events into `store`, in the hour of `clock()` (UTC)."""

    def __init__(self, store: DashboardStore, clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.clock = clock

    def publish(self, event_type: str, conversation_id: str, data: Mapping[str, Any]) -> None:
        now = self.clock()
        change = change_for(event_type, data, now)
        if change.empty():
            return
        try:
            self.store.record(hour_of(now), change)
        except Exception:
            # The dashboard is a report: its store's trouble must not fail the visitor's request
            # or the answer's run that published the event.
            log.warning("dashboard: %s of conversation %s was not counted", event_type, conversation_id, exc_info=True)

    def forget_texts(self, questions: Iterable[str], comments: Iterable[str]) -> None:
        """Remove a deleted conversation's questions and comments from every day that may hold
        them (docs/privacy.md, "The owner dashboard"). A question is one entry for everyone who
        asked it, so it goes whole: others' counts of it with it. Raises StoreUnavailable, so the
        deletion that asked is refused and can be tried again rather than leave the words."""
        normalised = {normalise_question(question) for question in questions} - {""}
        texts = {comment.strip()[:COMMENT_MAX_CHARS] for comment in comments} - {""}
        if not (normalised or texts):
            return
        now = self.clock()
        days = range(day_of(now - RETENTION_SECONDS), day_of(now) + 1)
        self.store.forget_texts(days, normalised, texts)
