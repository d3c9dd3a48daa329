"""A subject's data erased (docs/privacy.md, "An erasure request"; GDPR Art. 17): each of their
conversations deleted whole, as `DELETE /api/v1/conversations/<id>` deletes one (its answers
cancelled first; its exchanges, logs, feedback, actions and attachments; its hand-off record,
events, queue place and left messages; its rate-limit counters), then the subject's list.
Transport-free: the caller passes what it has of the rest (`forget_limits`, the rate limits'
own `forget_conversation`, which lives with the Flask adapters)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ..attachments.store import AttachmentStore
from ..chat.service import ChatService
from ..handoff.service import HandoffService
from .export import count_kinds, export_records


def erase_subject(
    chat: ChatService,
    handoff: HandoffService,
    attachments: AttachmentStore,
    subject: str,
    conversation_ids: Iterable[str],
    *,
    forget_limits: Callable[[str], None] | None = None,
) -> dict[str, int]:
    """Delete every conversation of `subject` among `conversation_ids` (privacy/subjects.py)
    and the subject's list; what was deleted, counted by kind (export.KINDS), read just before."""
    owned = [
        cid
        for cid in dict.fromkeys(conversation_ids)
        if (conversation := chat.store.get_conversation(cid)) is not None and conversation.subject == subject
    ]
    counts = count_kinds(export_records(chat, handoff, attachments, subject, owned))
    for conversation_id in owned:
        chat.delete_conversation(conversation_id)  # its attachments too (ChatService.deleted_listeners)
        attachments.delete_conversation(conversation_id)  # a plugin store not connected as a listener
        handoff.forget(conversation_id)
        if forget_limits is not None:
            forget_limits(conversation_id)
    chat.store.forget_subject(subject)
    return counts
