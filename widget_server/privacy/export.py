"""A subject's data as JSON Lines records (docs/privacy.md, "An access request"): everything the
server holds of each of their conversations, one JSON object a line, each typed by its `kind`:

  conversation     its id, the subject, name and email it was started with, when
  message          a question or an answer of its history (text, state, sources, files)
  rating           the visitor's feedback on an answer (rating, comment, when)
  attachment       a file they uploaded: name, type, size, SHA-256 (the listing, not the bytes)
  handoff_message  a message between the visitor and a person of the site's team
  left_message     a message they left for the team when nobody was there
  satisfaction     their answer to "How was your conversation?" after a person ended a hand-off

GDPR Art. 15(3) asks for a copy of the personal data, Art. 20(1) for it in a structured,
commonly used and machine-readable format: JSON Lines, one record per line, streamed (a
subject with many conversations is never held whole in memory). Transport-free."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from ..attachments.store import AttachmentStore
from ..chat.service import ChatService
from ..handoff.service import HandoffService
from ..identity.service import iso

KINDS = ("conversation", "message", "rating", "attachment", "handoff_message", "left_message", "satisfaction")


def export_records(
    chat: ChatService,
    handoff: HandoffService,
    attachments: AttachmentStore,
    subject: str,
    conversation_ids: Iterable[str],
) -> Iterator[dict[str, Any]]:
    """Every record of the subject's conversations (privacy/subjects.py finds them), one
    conversation after another. A conversation that is gone, or is not the subject's, is
    skipped: only what the subject owns is ever written."""
    for conversation_id in conversation_ids:
        conversation = chat.store.get_conversation(conversation_id)
        if conversation is None or conversation.subject != subject:
            continue
        yield {
            "kind": "conversation",
            "conversation_id": conversation_id,
            "subject": conversation.subject,
            "name": conversation.name,
            "email": conversation.email,
            "created_at": iso(conversation.created_at),
        }
        for message in chat.history(conversation_id):
            yield {
                "kind": "message",
                "conversation_id": conversation_id,
                **{name: value for name, value in message.items() if name != "feedback"},
            }
        for feedback in sorted(chat.store.conversation_feedback(conversation_id).values(), key=lambda f: f.updated_at):
            yield {
                "kind": "rating",
                "conversation_id": conversation_id,
                "message_id": feedback.message_id,
                "rating": feedback.rating,
                "comment": feedback.comment,
                "updated_at": iso(feedback.updated_at),
            }
        for meta in attachments.listing(conversation_id):
            yield {
                "kind": "attachment",
                "conversation_id": conversation_id,
                **meta.to_json(),
                "created_at": iso(meta.created_at),
            }
        for entry in handoff.messages(conversation_id):
            yield {
                "kind": "handoff_message",
                "conversation_id": conversation_id,
                **{name: value for name, value in entry.items() if name != "after_exchanges"},
            }
        for left in handoff.left_messages(conversation_id):
            yield {
                "kind": "left_message",
                **{name: value for name, value in left.items() if name != "visitor"},
            }
        record = handoff.stored_record(conversation_id)
        for answer in record.get("satisfaction", []) if record is not None else []:
            yield {"kind": "satisfaction", "conversation_id": conversation_id, **answer}


def count_kinds(records: Iterable[dict[str, Any]]) -> dict[str, int]:
    """How many records of each kind (every kind named, 0 when none)."""
    counts = dict.fromkeys(KINDS, 0)
    for record in records:
        counts[record["kind"]] += 1
    return counts
