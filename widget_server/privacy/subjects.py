"""Which conversations are a subject's (docs/privacy.md): the subject's own list, and for an
operator a walk of the whole store besides, since the list keeps only its newest entries
(stores/base.py SUBJECT_LIST_MAX)."""

from __future__ import annotations

from ..stores.base import Store

# How many list entries are read: more than any store keeps (the Redis list holds 200).
LIST_READ_MAX = 100_000


def subject_conversation_ids(store: Store, subject: str, *, whole_store: bool) -> list[str]:
    """The ids of the subject's conversations, most recently active first, then any the list
    no longer holds (`whole_store`: Store.find_subject_conversations, a scan)."""
    ids = [entry.conversation.conversation_id for entry in store.subject_conversations(subject, LIST_READ_MAX)]
    if whole_store:
        listed = set(ids)
        ids += sorted(cid for cid in store.find_subject_conversations(subject) if cid not in listed)
    return ids
