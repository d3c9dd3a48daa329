"""The JSON records the API answers with, as types (docs/protocol.md): a conversation, its
history's messages, a message's state, feedback, an action, an attachment, the hand-off's
state. openapi.py describes each from here (wire/schema.py, `json_schema`); a record may gain
fields, which clients ignore, unless it is `CLOSED`.

tests/test_openapi_schemathesis.py checks every response the server sends against them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from ..answer_parts import MAX_SNIPPET_CHARS, MAX_SOURCE_ID_CHARS, MAX_TITLE_CHARS, MAX_URL_CHARS
from ..attachments.sniff import MEDIA_TYPES
from ..errors import ErrorCode
from ..handoff.events import UNAVAILABLE_REASONS
from ..messages import MessageState
from ..protocol import ID_PATTERN
from .schema import Rule, wired

_ID = Rule(pattern=ID_PATTERN)
_SHA256 = Rule(pattern="^[0-9a-f]{64}$")
_TEXT = Rule()
_COUNT = Rule(minimum=0)
_STATES = tuple(state.value for state in MessageState)


class ActionStatus:
    """An action's life: proposed → executing → succeeded | failed; proposed → dismissed."""

    PROPOSED = "proposed"
    EXECUTING = "executing"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    DISMISSED = "dismissed"
    ALL = (PROPOSED, EXECUTING, SUCCEEDED, FAILED, DISMISSED)


@dataclass(frozen=True, kw_only=True)
class NewConversation:
    RECORD: ClassVar[bool] = True

    conversation_id: str = wired(_ID)
    token: str = wired(Rule(min_length=32))


@dataclass(frozen=True, kw_only=True)
class ErrorInfo:
    """Why an answer failed (messages.py's `message.failed`, a message's state)."""

    RECORD: ClassVar[bool] = True

    code: str = wired(Rule(enum=tuple(code.value for code in ErrorCode)))
    message: str = wired(_TEXT)
    retryable: bool = wired(Rule())


@dataclass(frozen=True, kw_only=True)
class MessageStateRecord:
    RECORD: ClassVar[bool] = True

    message_id: str = wired(_ID)
    state: str = wired(Rule(enum=_STATES))
    last_seq: int = wired(_COUNT)
    error: ErrorInfo | None = wired(Rule(), default=None)


@dataclass(frozen=True, kw_only=True)
class AttachmentRecord:
    """An attachment as its upload answers it (attachments/store.py, `AttachmentMeta.to_json`)."""

    CLOSED: ClassVar[bool] = True

    attachment_id: str = wired(_ID)
    name: str = wired(Rule(min_length=1, max_length=120))
    type: str = wired(Rule(enum=tuple(MEDIA_TYPES)))
    size: int = wired(Rule(minimum=1))
    sha256: str = wired(_SHA256)


@dataclass(frozen=True, kw_only=True)
class SentAttachmentRecord(AttachmentRecord):
    """An attachment as a sent message lists it: with the visitor's description, if any."""

    description: str | None = wired(Rule(min_length=1, max_length=1000), default=None)


@dataclass(frozen=True, kw_only=True)
class FeedbackRecord:
    RECORD: ClassVar[bool] = True
    DESCRIPTION: ClassVar[str] = "A visitor's rating of an answer: one per answer, changeable."

    rating: str = wired(Rule(enum=("up", "down"), description="`up`: helpful; `down`: not helpful."))
    comment: str = wired(Rule(description="The visitor's comment; empty when none."))
    updated_at: str = wired(Rule(format="date-time", pattern="Z$", description="When it was last set (UTC)."))


@dataclass(frozen=True, kw_only=True)
class StoredFeedbackRecord(FeedbackRecord):
    """The answer to a PUT of feedback: the record and the answer it is on."""

    DESCRIPTION: ClassVar[str] = ""

    message_id: str = wired(_ID)


@dataclass(frozen=True, kw_only=True)
class SatisfactionRecord:
    """The visitor's answer to "How was your conversation?" for one hand-off
    (handoff/satisfaction.py)."""

    RECORD: ClassVar[bool] = True

    conversation_id: str = wired(_ID)
    handoff: int = wired(Rule(minimum=1, description="The hand-off rated: the `seq` of its `handoff.ended` event."))
    rating: int = wired(Rule(minimum=1, maximum=5, description="1 very poor, 2 poor, 3 fair, 4 good, 5 very good."))
    comment: str = wired(Rule(description="The visitor's comment; empty when none."))
    agent: str = wired(Rule(description="The display name of the person who ended the hand-off."))
    created_at: str = wired(Rule(format="date-time", pattern="Z$", description="When it was given (UTC)."))


@dataclass(frozen=True, kw_only=True)
class SourceRecord:
    """A document an answer rests on (answer_parts.Source): in `message.completed`'s `sources`
    and an assistant entry's of the history."""

    RECORD: ClassVar[bool] = True

    id: str = wired(
        Rule(
            min_length=1,
            max_length=MAX_SOURCE_ID_CHARS,
            description="What the answer's inline markers name: `[1]` in the text cites the source whose id is `1`.",
        )
    )
    title: str = wired(Rule(min_length=1, max_length=MAX_TITLE_CHARS))
    url: str | None = wired(
        Rule(max_length=MAX_URL_CHARS, pattern="^[hH][tT][tT][pP][sS]?://", description="Only http or https."),
        default=None,
    )
    snippet: str | None = wired(
        Rule(max_length=MAX_SNIPPET_CHARS, description="The passage the answer used."), default=None
    )


@dataclass(frozen=True, kw_only=True)
class HistoryMessage:
    RECORD: ClassVar[bool] = True

    message_id: str = wired(_ID)
    role: str = wired(
        Rule(
            enum=("user", "assistant", "visitor", "agent"),
            description="`visitor` and `agent`: messages of a hand-off to a person.",
        )
    )
    text: str = wired(_TEXT)
    state: str = wired(Rule(enum=_STATES))
    agent: str | None = wired(Rule(description="`agent` entries: the agent's display name."), default=None)
    attachments: tuple[SentAttachmentRecord, ...] = wired(
        Rule(description="User entries whose turn carried files: each file, in order."), default=()
    )
    feedback: FeedbackRecord | None = wired(
        Rule(nullable=True, description="Assistant entries only: the visitor's feedback on the answer, or null."),
        default=None,
    )
    sources: tuple[SourceRecord, ...] = wired(
        Rule(min_items=1, description="Completed assistant entries that cited sources: each, in order."),
        default=(),
    )


@dataclass(frozen=True, kw_only=True)
class ConversationHistory:
    RECORD: ClassVar[bool] = True

    conversation_id: str = wired(_ID)
    messages: tuple[HistoryMessage, ...] = wired(Rule())


@dataclass(frozen=True, kw_only=True)
class ActionProposal:
    """An action an answer proposes (`action.proposed`, and `message.completed`'s `actions`)."""

    RECORD: ClassVar[bool] = True

    action_id: str = wired(_ID)
    name: str = wired(Rule(description="The installed action's name, e.g. `callback_request`."))
    label: str = wired(Rule(description='What it does, briefly ("Request a call back").'))
    description: str = wired(Rule(description="One sentence saying exactly what confirming will do."))
    arguments: dict[str, Any] = wired(Rule(description="The validated arguments it will run with."))


@dataclass(frozen=True, kw_only=True)
class ActionFailure:
    RECORD: ClassVar[bool] = True

    code: str = wired(Rule(enum=("action_failed",)))
    message: str = wired(_TEXT)


@dataclass(frozen=True, kw_only=True)
class ActionRecord(ActionProposal):
    """An action and what became of it (actions/service.py, `Action.to_json`)."""

    message_id: str = wired(_ID)
    status: str = wired(Rule(enum=ActionStatus.ALL))
    result: dict[str, Any] | None = wired(
        Rule(description="What execute() returned (status `succeeded`)."), default=None
    )
    error: ActionFailure | None = wired(
        Rule(description="Why it was not carried out (status `failed`; never retried)."), default=None
    )


@dataclass(frozen=True, kw_only=True)
class ActionList:
    RECORD: ClassVar[bool] = True

    conversation_id: str = wired(_ID)
    actions: tuple[ActionRecord, ...] = wired(Rule())


@dataclass(frozen=True, kw_only=True)
class SubjectConversation:
    """One conversation of a known visitor's list (`GET /api/v1/me/conversations`,
    identity/service.py)."""

    RECORD: ClassVar[bool] = True

    conversation_id: str = wired(_ID)
    title: str = wired(Rule(max_length=80, description='Its first question, on one line, shortened; "" when none.'))
    created_at: str = wired(Rule(format="date-time"))
    last_activity: str = wired(Rule(format="date-time", description="Its creation or its newest question."))
    state: str = wired(
        Rule(enum=(*_STATES, "empty"), description="Its last answer's state, or `empty` before its first question.")
    )


@dataclass(frozen=True, kw_only=True)
class SubjectConversationList:
    RECORD: ClassVar[bool] = True

    conversations: tuple[SubjectConversation, ...] = wired(Rule(description="Most recently active first; at most 50."))


# A closed hand-off's next opening: HandoffStateRecord's and `handoff.unavailable`'s (wire/events.py).
OPENS_AT = Rule(
    format="date-time",
    description="With reason `closed`: the next opening (HANDOFF_HOURS), ISO 8601 with the schedule zone's offset.",
)


@dataclass(frozen=True, kw_only=True)
class HandoffStateRecord:
    """Where a hand-off is, as POST …/handoff answers (handoff/service.py)."""

    RECORD: ClassVar[bool] = True

    seq: int = wired(
        Rule(
            minimum=0,
            description="The conversation event log's newest seq as of this answer (0 when empty): "
            "read the event stream from here (`?after=<seq>`).",
        )
    )
    state: str = wired(Rule(enum=("queued", "assigned", "unavailable")))
    position: int | None = wired(Rule(minimum=1, description="`queued`: the place in line, from 1."), default=None)
    agent: str | None = wired(Rule(description="`assigned`: the agent's display name."), default=None)
    reason: str | None = wired(
        Rule(
            enum=UNAVAILABLE_REASONS,
            description="`unavailable`: nobody present (`no_agents`), hand-off off (`disabled`), "
            "outside the opening hours (`closed`, with `opens_at`), or `HANDOFF_QUEUE_MAX` waiting (`busy`).",
        ),
        default=None,
    )
    opens_at: str | None = wired(OPENS_AT, default=None)


@dataclass(frozen=True, kw_only=True)
class HandoffMessageCreated:
    RECORD: ClassVar[bool] = True

    message_id: str = wired(_ID)
    sha256: str = wired(_SHA256)


@dataclass(frozen=True, kw_only=True)
class LeftMessageCreated:
    RECORD: ClassVar[bool] = True

    left_message_id: str = wired(_ID)
