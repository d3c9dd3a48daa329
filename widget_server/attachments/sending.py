"""Files sent with a message (docs/protocol.md, "Sending files with a message").

The `attachments` field of a send's body, checked before anything is claimed: a list of at
most ATTACHMENTS_PER_MESSAGE items, each an attachment id of this conversation (`"f_…"`) or
`{"attachment_id": "f_…", "description": "…"}`, the visitor's text alternative for it. An id
this conversation has no attachment under (another conversation's included) is 404
`attachment_not_found`, the same answer whether or not it exists elsewhere.
"""

from __future__ import annotations

from typing import Any

from ..messages import clean_text
from ..protocol import is_id
from ..stores.base import SentAttachment
from ..transport import settings
from ..wire.errors import (
    ATTACHMENT_NOT_FOUND,
    DESCRIPTION_TOO_LONG,
    DUPLICATE_ATTACHMENT,
    INVALID_ATTACHMENTS,
    TOO_MANY_ATTACHMENTS,
)
from .api import ATTACHMENT_PREFIX, attachment_store

# A description is a text alternative (WCAG 2.2 SC 1.1.1): a sentence or two, not a document.
DESCRIPTION_MAX_CHARS = 1000
_ITEM_FIELDS = {"attachment_id", "description"}
_ITEM_RULE = 'each item an attachment id ("f_…") or {"attachment_id": "f_…", "description": "…"}'


def sent_attachments(body: dict[str, Any], conversation_id: str) -> tuple[SentAttachment, ...]:
    """The body's `attachments`, checked: () when the field is absent."""
    raw = body.get("attachments", [])
    if not isinstance(raw, list):
        raise INVALID_ATTACHMENTS(f"attachments must be a list, {_ITEM_RULE}.")
    limit = settings().attachments.per_message
    if len(raw) > limit:
        raise TOO_MANY_ATTACHMENTS(
            f"A message may carry {limit} attachments at most; this one has {len(raw)}.",
            details={"limit": limit},
        )
    sent = tuple(_item(item) for item in raw)
    ids = [attachment.attachment_id for attachment in sent]
    if len(set(ids)) != len(ids):
        raise DUPLICATE_ATTACHMENT("The same attachment is listed twice; list each file once.")
    store = attachment_store()
    for attachment in sent:
        if store.get(conversation_id, attachment.attachment_id) is None:
            raise ATTACHMENT_NOT_FOUND(
                "No such attachment in this conversation: upload the file again, then send.",
                details={"attachment_id": attachment.attachment_id},
            )
    return sent


def _item(item: Any) -> SentAttachment:
    description: Any = ""
    if isinstance(item, dict):
        if set(item) - _ITEM_FIELDS or "attachment_id" not in item:
            raise INVALID_ATTACHMENTS(f"attachments: {_ITEM_RULE}.")
        attachment_id, description = item["attachment_id"], item.get("description", "")
    else:
        attachment_id = item
    if not isinstance(attachment_id, str) or not isinstance(description, str):
        raise INVALID_ATTACHMENTS(f"attachments: {_ITEM_RULE}.")
    if not (attachment_id.startswith(ATTACHMENT_PREFIX) and is_id(attachment_id)):
        # Malformed: no conversation has it, the same 404 as an unknown id (docs/protocol.md, "Conventions").
        raise ATTACHMENT_NOT_FOUND(
            "No such attachment in this conversation: upload the file again, then send.",
            details={"attachment_id": attachment_id[:64]},
        )
    # Lone surrogates become U+FFFD as a message's text does; only whitespace is no description.
    description = clean_text(description).strip()
    if len(description) > DESCRIPTION_MAX_CHARS:
        raise DESCRIPTION_TOO_LONG(
            f"An attachment's description is {len(description)} characters; the limit is {DESCRIPTION_MAX_CHARS}.",
            details={"limit": DESCRIPTION_MAX_CHARS},
        )
    return SentAttachment(attachment_id, description)
