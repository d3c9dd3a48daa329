"""Every event type the server streams, one typed list per stream (docs/protocol.md, "Events"
and "The conversation event stream"), and an answer's states.

The names are defined where the events are made, `messages.EventKind` for an answer's stream and
`handoff/events.py` for the conversation's; this module gathers them without copying, so
docs/protocol.md's tables and static/widget/protocol.js are checked against one declaration
(tests/test_wire_events.py, tests/test_wire_javascript.py). Nothing here is on the path that
encodes an event: `StreamEvent.encode` and `ConversationEvent.encode` write the type as before.
"""

from __future__ import annotations

from ..handoff.events import ALL_TYPES as CONVERSATION_EVENT_TYPES
from ..messages import TERMINAL_STATES, EventKind, MessageState

# An answer's stream (`GET …/messages/<message_id>/events` and the POST that starts it), in
# EventKind's order.
ANSWER_EVENTS: tuple[str, ...] = tuple(kind.value for kind in EventKind)
# The conversation event stream (`GET /api/v1/conversations/<conversation_id>/events`).
CONVERSATION_EVENTS: tuple[str, ...] = CONVERSATION_EVENT_TYPES
# An answer's states (docs/protocol.md, "Message states"), in MessageState's order, and the
# final ones among them.
MESSAGE_STATES: tuple[str, ...] = tuple(state.value for state in MessageState)
TERMINAL_MESSAGE_STATES: tuple[str, ...] = tuple(state.value for state in MessageState if state in TERMINAL_STATES)
