"""Files sent with a message (docs/protocol.md, "Sending files with a message").

The `attachments` field of a send's body (wire/bodies.py, `AttachmentRef`: a list of at most
ATTACHMENTS_PER_MESSAGE items, each an attachment id (`"f_…"`) or
`{"attachment_id": "f_…", "description": "…"}`, the visitor's text alternative for it), found
before anything is claimed. An id this conversation has no attachment under (another
conversation's included) is 404 `attachment_not_found`, the same answer whether or not it
exists elsewhere.
"""

from __future__ import annotations

from ..stores.base import SentAttachment
from ..wire.bodies import AttachmentRef
from ..wire.errors import ATTACHMENT_NOT_FOUND
from .api import attachment_store


def sent_attachments(attachments: tuple[AttachmentRef, ...], conversation_id: str) -> tuple[SentAttachment, ...]:
    """The body's `attachments` (their shape, count and descriptions checked by
    wire/bodies.py), each found among this conversation's files."""
    store = attachment_store()
    for attachment in attachments:
        if store.get(conversation_id, attachment.attachment_id) is None:
            raise ATTACHMENT_NOT_FOUND(
                "No such attachment in this conversation: upload the file again, then send.",
                details={"attachment_id": attachment.attachment_id},
            )
    return tuple(SentAttachment(attachment.attachment_id, attachment.description) for attachment in attachments)
