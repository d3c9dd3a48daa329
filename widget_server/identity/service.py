"""A subject's conversations, as `GET /api/v1/me/conversations` lists them (docs/protocol.md,
"Known visitors"): transport-free, from the store's per-subject list (never a scan)."""

from __future__ import annotations

import datetime
from typing import Any

from ..chat.service import ChatService

# The newest conversations listed; older ones stay reachable by their id (a visitor rarely
# looks further back, and the bound keeps the request's store reads bounded).
LIST_MAX = 50
# A title is the conversation's first question, shortened to one line of a menu.
TITLE_MAX_CHARS = 80
# The state of a conversation nobody has asked anything in yet.
EMPTY = "empty"


def iso(seconds: float) -> str:
    """Unix seconds as an RFC 3339 UTC time, to the second (as the hand-off's times are)."""
    return datetime.datetime.fromtimestamp(seconds, datetime.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def title_of(question: str) -> str:
    """A question as a title: on one line, at most TITLE_MAX_CHARS characters, an ellipsis
    where it was cut (at a word's end where one is near)."""
    line = " ".join(question.split())
    if len(line) <= TITLE_MAX_CHARS:
        return line
    cut = line[: TITLE_MAX_CHARS - 1]
    space = cut.rfind(" ")
    if space >= TITLE_MAX_CHARS // 2:
        cut = cut[:space]
    return cut.rstrip() + "…"


def subject_conversations(chat: ChatService, subject: str) -> list[dict[str, Any]]:
    """The subject's conversations, most recently active first (records.SubjectConversationList):
    each with its title (its first question, "" while it has none), when it was created and
    last active, and its state: its last answer's (`completed`, `running`, `failed`…) or `empty`."""
    listed: list[dict[str, Any]] = []
    for entry in chat.store.subject_conversations(subject, LIST_MAX):
        conversation = entry.conversation
        exchanges = chat.store.exchanges(conversation.conversation_id)
        state = EMPTY
        if exchanges:
            found = chat.store.message_state(exchanges[-1].assistant_message_id)
            state = found.value if found is not None else EMPTY
        listed.append(
            {
                "conversation_id": conversation.conversation_id,
                "title": title_of(exchanges[0].user_text) if exchanges else "",
                "created_at": iso(conversation.created_at),
                "last_activity": iso(max(entry.last_activity, conversation.created_at)),
                "state": state,
            }
        )
    return listed
