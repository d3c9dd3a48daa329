"""The conversation event stream's events (docs/protocol.md, "The conversation event stream").

Pure: no I/O. Each event has a `seq` (1, 2, … per conversation) and the SSE id
`<conversation_id>:<seq>`, the same form as an answer's events (protocol.event_id), so
`Last-Event-ID` resumes it the same way. Its data is one line of JSON: the event's own fields
and `conversation_id` and `seq`, as an answer's events carry `message_id` and `seq`.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from .. import sse
from ..protocol import event_id

# The event types (docs/protocol.md lists each one's data).
QUEUED = "handoff.queued"
ASSIGNED = "handoff.assigned"
AGENT_TYPING = "agent.typing"
AGENT_MESSAGE = "agent.message"
VISITOR_MESSAGE = "visitor.message"
ENDED = "handoff.ended"
UNAVAILABLE = "handoff.unavailable"
SNAPSHOT = "conversation.snapshot"
# The visitor's answer to "How was your conversation?" after a person ended the hand-off
# (handoff/satisfaction.py; docs/protocol.md, "Satisfaction").
SATISFACTION = "handoff.satisfaction"
ALL_TYPES = (
    QUEUED,
    ASSIGNED,
    AGENT_TYPING,
    AGENT_MESSAGE,
    VISITOR_MESSAGE,
    ENDED,
    UNAVAILABLE,
    SNAPSHOT,
    SATISFACTION,
)

# A conversation's hand-off states; `unavailable` is an outcome of a request, never a state.
NONE = "none"
STATE_QUEUED = "queued"
STATE_ASSIGNED = "assigned"
STATE_ENDED = "ended"
ACTIVE_STATES = (STATE_QUEUED, STATE_ASSIGNED)

# handoff.ended's reasons, and handoff.unavailable's.
END_REASONS = ("ended", "returned", "timeout", "visitor", "idle")
AGENT_END_REASONS = ("ended", "returned")
UNAVAILABLE_REASONS = ("no_agents", "disabled", "closed", "busy")


def text_sha256(text: str) -> str:
    """Hex SHA-256 of the text's UTF-8 bytes: what answers' `sha256` is (messages.text_digest)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class ConversationEvent:
    conversation_id: str
    seq: int
    type: str
    payload: dict[str, Any] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return event_id(self.conversation_id, self.seq)

    def data(self) -> dict[str, Any]:
        return {"conversation_id": self.conversation_id, "seq": self.seq, **self.payload}

    def to_json(self) -> str:
        """The stored form: the type and the data, one line."""
        return json.dumps({"type": self.type, **self.data()}, ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def from_json(cls, raw: str | bytes) -> ConversationEvent:
        value = json.loads(raw)
        kind = value.pop("type")
        return cls(value.pop("conversation_id"), value.pop("seq"), kind, value)

    def encode(self) -> bytes:
        # One-line JSON: json.dumps escapes CR and LF inside strings, so a message's text
        # arrives exactly (docs/design.md, "An event's data never ends the event early").
        data = json.dumps(self.data(), ensure_ascii=False, separators=(",", ":"))
        return sse.encode_event(data, event=self.type, id=self.id)
