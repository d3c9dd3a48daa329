"""Every webhook event a site's owner may receive, one typed list (docs/webhooks.md).

Each event's `data` is a frozen dataclass here, its `EVENT` the event's type: the services
build one and hand it to the publisher (webhooks/publisher.py), which sends exactly its fields,
so docs/webhooks.md's tables are checked against these declarations (tests/test_webhooks_docs.py)
and cannot drift from what a receiver gets. Like a record, an event's data may gain fields,
which receivers ignore.

Every delivery is the same envelope (`Envelope`): an `id` that stays the same through every
retry of it (a receiver de-duplicates on it), its `type`, when it happened, the conversation,
and the `data`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar


@dataclass(frozen=True, kw_only=True)
class WebhookData:
    """What every event's data is: a dataclass naming its event type."""

    EVENT: ClassVar[str] = ""


@dataclass(frozen=True, kw_only=True)
class ConversationCreated(WebhookData):
    EVENT: ClassVar[str] = "conversation.created"
    # Started with a verified identity token (docs/protocol.md, "Known visitors"); who the visitor
    # is stays out of the webhook: the site that signed the token knows.
    identified: bool


@dataclass(frozen=True, kw_only=True)
class MessageCompleted(WebhookData):
    EVENT: ClassVar[str] = "message.completed"
    message_id: str
    # The answer's length in code points and its SHA-256 (the stream's `message.completed`).
    length: int
    sha256: str


@dataclass(frozen=True, kw_only=True)
class MessageFailed(WebhookData):
    EVENT: ClassVar[str] = "message.failed"
    message_id: str
    # The failure's code (docs/protocol.md, "Failure codes").
    code: str


@dataclass(frozen=True, kw_only=True)
class FeedbackSubmitted(WebhookData):
    EVENT: ClassVar[str] = "feedback.submitted"
    message_id: str
    rating: str
    comment: str


@dataclass(frozen=True, kw_only=True)
class HandoffQueued(WebhookData):
    EVENT: ClassVar[str] = "handoff.queued"
    position: int


@dataclass(frozen=True, kw_only=True)
class HandoffAssigned(WebhookData):
    EVENT: ClassVar[str] = "handoff.assigned"
    # The agent's display name, as the visitor sees it.
    agent: str


@dataclass(frozen=True, kw_only=True)
class HandoffEnded(WebhookData):
    EVENT: ClassVar[str] = "handoff.ended"
    agent: str
    # Why (handoff/events.py END_REASONS): visitor, ended, returned, timeout, idle.
    reason: str


@dataclass(frozen=True, kw_only=True)
class MessageLeft(WebhookData):
    EVENT: ClassVar[str] = "message.left"
    left_message_id: str
    email: str | None
    text: str


@dataclass(frozen=True, kw_only=True)
class SatisfactionSubmitted(WebhookData):
    EVENT: ClassVar[str] = "satisfaction.submitted"
    # Which hand-off was rated: its `handoff.ended` event's seq (docs/protocol.md, "Satisfaction").
    handoff: int
    rating: int
    comment: str


# Every event type with its data, in docs/webhooks.md's order.
WEBHOOK_DATA: dict[str, type[WebhookData]] = {
    data.EVENT: data
    for data in (
        ConversationCreated,
        MessageCompleted,
        MessageFailed,
        FeedbackSubmitted,
        HandoffQueued,
        HandoffAssigned,
        HandoffEnded,
        MessageLeft,
        SatisfactionSubmitted,
    )
}
WEBHOOK_EVENTS: tuple[str, ...] = tuple(WEBHOOK_DATA)

# The headers of every delivery (docs/webhooks.md, "Verifying a delivery").
SIGNATURE_HEADER = "X-Widget-Server-Signature"
EVENT_HEADER = "X-Widget-Server-Event"
DELIVERY_HEADER = "X-Widget-Server-Delivery"


@dataclass(frozen=True, kw_only=True)
class Envelope:
    """One delivery's JSON body."""

    id: str  # the same in every retry, and for every URL: the receiver's de-duplication key
    type: str
    created_at: str  # ISO 8601 UTC with a Z, to the millisecond
    conversation_id: str
    data: dict[str, Any]
