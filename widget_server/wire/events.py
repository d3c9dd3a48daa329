"""Every event type the server streams, one typed list per stream (docs/protocol.md, "Events"
and "The conversation event stream"), and an answer's states.

The names are defined where the events are made, `messages.EventKind` for an answer's stream and
`handoff/events.py` for the conversation's; this module gathers them without copying, so
docs/protocol.md's tables and static/widget/protocol.js are checked against one declaration
(tests/test_wire_events.py, tests/test_wire_javascript.py). Nothing here is on the path that
encodes an event: `StreamEvent.encode` and `ConversationEvent.encode` write the type as before.

Each event's data, the one line of JSON after `data:`, is declared here too, as a frozen
dataclass per event type like wire/records.py's records: openapi.py describes each from it
(wire/schema.py, `json_schema`), and tests/test_wire_event_data.py checks it against the events
a real answer and a real hand-off send. The server never builds these types: the hot path
writes its dicts as before (bench/stream_path.py counts its instructions per event). Like a
record, an event's data may gain fields, which clients ignore.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..answer_parts import MAX_PROGRESS_CHARS
from ..handoff.events import (
    ACTIVE_STATES,
    AGENT_MESSAGE,
    AGENT_TYPING,
    ASSIGNED,
    END_REASONS,
    ENDED,
    NONE,
    QUEUED,
    SATISFACTION,
    SNAPSHOT,
    STATE_ENDED,
    UNAVAILABLE,
    UNAVAILABLE_REASONS,
    VISITOR_MESSAGE,
)
from ..handoff.events import ALL_TYPES as CONVERSATION_EVENT_TYPES
from ..messages import TERMINAL_STATES, EventKind, MessageState
from ..protocol import ID_PATTERN
from .records import OPENS_AT, ActionProposal, ErrorInfo, SentAttachmentRecord, SourceRecord
from .schema import Rule, wired

# An answer's stream (`GET …/messages/<message_id>/events` and the POST that starts it), in
# EventKind's order.
ANSWER_EVENTS: tuple[str, ...] = tuple(kind.value for kind in EventKind)
# The conversation event stream (`GET /api/v1/conversations/<conversation_id>/events`).
CONVERSATION_EVENTS: tuple[str, ...] = CONVERSATION_EVENT_TYPES
# An answer's states (docs/protocol.md, "Message states"), in MessageState's order, and the
# final ones among them.
MESSAGE_STATES: tuple[str, ...] = tuple(state.value for state in MessageState)
TERMINAL_MESSAGE_STATES: tuple[str, ...] = tuple(state.value for state in MessageState if state in TERMINAL_STATES)


# -- each event's data ------------------------------------------------------------------------

_ID = Rule(pattern=ID_PATTERN)
_SEQ = Rule(minimum=0)
_COUNT = Rule(minimum=0)
_TEXT = Rule()
_SHA256 = Rule(pattern="^[0-9a-f]{64}$")
_INCOMPLETE = Rule(const=True)


@dataclass(frozen=True, kw_only=True)
class AnswerEventData:
    """What every event of an answer's stream carries (messages.StreamEvent.data)."""

    RECORD: ClassVar[bool] = True

    message_id: str = wired(_ID)
    seq: int = wired(_SEQ)


@dataclass(frozen=True, kw_only=True)
class StartedData(AnswerEventData):
    pass


@dataclass(frozen=True, kw_only=True)
class DeltaData(AnswerEventData):
    text: str = wired(Rule(min_length=1))


@dataclass(frozen=True, kw_only=True)
class SnapshotData(AnswerEventData):
    text: str = wired(_TEXT)
    state: str = wired(Rule(const=MessageState.RUNNING.value))


@dataclass(frozen=True, kw_only=True)
class CompletedData(AnswerEventData):
    # messages.text_digest: the whole answer's length, UTF-8 size and SHA-256.
    length: int = wired(_COUNT)
    utf8_bytes: int = wired(_COUNT)
    sha256: str = wired(_SHA256)
    actions: tuple[ActionProposal, ...] = wired(
        Rule(
            min_items=1,
            description="Present when the answer proposed actions: the only ones it offers, actionable now that it completed.",
        ),
        default=(),
    )
    sources: tuple[SourceRecord, ...] = wired(
        Rule(
            min_items=1,
            description="Present when the answer cited sources: each, in the order the backend gave them.",
        ),
        default=(),
    )


@dataclass(frozen=True, kw_only=True)
class FailedData(AnswerEventData):
    error: ErrorInfo = wired(Rule())
    incomplete: bool = wired(_INCOMPLETE)
    length: int = wired(_COUNT)


@dataclass(frozen=True, kw_only=True)
class CancelledData(AnswerEventData):
    incomplete: bool = wired(_INCOMPLETE)
    length: int = wired(_COUNT)


@dataclass(frozen=True, kw_only=True)
class ActionProposedData(ActionProposal, AnswerEventData):
    """An action proposal's fields (ActionProposal), next to message_id and seq."""


@dataclass(frozen=True, kw_only=True)
class ProgressData(AnswerEventData):
    """What the backend is doing now: shown while the answer is busy, never its text."""

    text: str = wired(Rule(min_length=1, max_length=MAX_PROGRESS_CHARS))


# An answer's stream: each event type's data, in EventKind's order.
ANSWER_EVENT_DATA: dict[str, type] = {
    EventKind.STARTED.value: StartedData,
    EventKind.DELTA.value: DeltaData,
    EventKind.SNAPSHOT.value: SnapshotData,
    EventKind.COMPLETED.value: CompletedData,
    EventKind.FAILED.value: FailedData,
    EventKind.CANCELLED.value: CancelledData,
    EventKind.ACTION_PROPOSED.value: ActionProposedData,
    EventKind.PROGRESS.value: ProgressData,
}


@dataclass(frozen=True, kw_only=True)
class ConversationEventData:
    """What every event of the conversation's stream carries (handoff/events.py, ConversationEvent.data)."""

    RECORD: ClassVar[bool] = True

    conversation_id: str = wired(_ID)
    seq: int = wired(_SEQ)


@dataclass(frozen=True, kw_only=True)
class HandoffQueuedData(ConversationEventData):
    position: int = wired(Rule(minimum=1))


@dataclass(frozen=True, kw_only=True)
class HandoffAssignedData(ConversationEventData):
    agent: str = wired(_TEXT)


@dataclass(frozen=True, kw_only=True)
class AgentTypingData(ConversationEventData):
    agent: str = wired(_TEXT)


@dataclass(frozen=True, kw_only=True)
class AgentMessageData(ConversationEventData):
    message_id: str = wired(_ID)
    text: str = wired(_TEXT)
    sha256: str = wired(_SHA256)
    agent: str = wired(_TEXT)


@dataclass(frozen=True, kw_only=True)
class VisitorMessageData(ConversationEventData):
    message_id: str = wired(_ID)
    text: str = wired(_TEXT)
    sha256: str = wired(_SHA256)
    attachments: tuple[SentAttachmentRecord, ...] = wired(Rule(), default=())


@dataclass(frozen=True, kw_only=True)
class HandoffEndedData(ConversationEventData):
    agent: str = wired(_TEXT)
    reason: str = wired(Rule(enum=END_REASONS))


@dataclass(frozen=True, kw_only=True)
class HandoffSatisfactionData(ConversationEventData):
    """The visitor rated a hand-off a person ended (handoff/satisfaction.py)."""

    handoff: int = wired(Rule(minimum=1, description="The hand-off rated: the seq of its `handoff.ended` event."))
    rating: int = wired(Rule(minimum=1, maximum=5, description="1 very poor … 5 very good."))
    comment: str = wired(Rule(description="The visitor's comment; empty when none."))
    agent: str = wired(_TEXT)


@dataclass(frozen=True, kw_only=True)
class HandoffUnavailableData(ConversationEventData):
    reason: str = wired(Rule(enum=UNAVAILABLE_REASONS))
    opens_at: str | None = wired(OPENS_AT, default=None)


@dataclass(frozen=True, kw_only=True)
class SnapshotMessage:
    """A hand-off message as `conversation.snapshot` lists it (HandoffService.snapshot)."""

    RECORD: ClassVar[bool] = True

    message_id: str = wired(_ID)
    role: str = wired(Rule(enum=("agent", "visitor")))
    text: str = wired(_TEXT)
    sha256: str = wired(_SHA256)
    agent: str | None = wired(_TEXT, default=None)
    attachments: tuple[SentAttachmentRecord, ...] = wired(Rule(), default=())


@dataclass(frozen=True, kw_only=True)
class ConversationSnapshotData(ConversationEventData):
    state: str = wired(
        Rule(
            enum=(
                NONE,
                *ACTIVE_STATES,
                STATE_ENDED,
            )
        )
    )
    agent: str | None = wired(_TEXT, default=None)
    position: int | None = wired(Rule(minimum=1), default=None)
    messages: tuple[SnapshotMessage, ...] = wired(Rule())


# The conversation event stream: each event type's data, in handoff/events.py's order.
CONVERSATION_EVENT_DATA: dict[str, type] = {
    QUEUED: HandoffQueuedData,
    ASSIGNED: HandoffAssignedData,
    AGENT_TYPING: AgentTypingData,
    AGENT_MESSAGE: AgentMessageData,
    VISITOR_MESSAGE: VisitorMessageData,
    ENDED: HandoffEndedData,
    UNAVAILABLE: HandoffUnavailableData,
    SNAPSHOT: ConversationSnapshotData,
    SATISFACTION: HandoffSatisfactionData,
}
