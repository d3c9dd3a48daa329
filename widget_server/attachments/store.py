"""The attachment store's interface (docs/serving.md, "Attachments"; an object store as a plugin).

An attachment belongs to one conversation and lives and dies with it: a store keeps its
bytes and its metadata under the conversation, forgets them when the conversation is deleted
or expires (RETENTION or IDENTIFIED_RETENTION, renewed when the conversation is used), and never
hands one out under another conversation's id (`get` and `open` take both ids).

Each conversation has a byte budget (ATTACHMENTS_MAX_BYTES_PER_CONVERSATION): `put` checks it
and stores in one atomic step, so two uploads racing for the last megabytes cannot both pass.
An upload may carry an idempotency key: a `put` whose key the conversation already used
stores nothing and returns the attachment that key made (a retried upload gets the same id).

Two stores come with the server, chosen by `create_attachment_store` (`__init__.py`) with
the chat store: `directory_store.DirectoryAttachmentStore` (a local directory, beside the
memory store) and `redis_store.RedisAttachmentStore` (the chat store's Redis). Another, an
S3-compatible object store for instance, is a class implementing `AttachmentStore`,
registered under the entry point group `widget_server.attachment_stores` and named by the
ATTACHMENT_STORE setting; it is built as `Class(settings, chat_store)` and must:

- make `put`'s budget check and write atomic per conversation (a conditional write, or a
  lock held in a shared place);
- keep a conversation's attachments as long as the conversation: it expires
  `settings.store.retention_seconds` after its last use (an object store's lifecycle rule
  of at least that since the conversation's last upload is one way; with the memory chat
  store, `delete_conversation` is also called whenever it forgets a conversation), and remove
  them in `delete_conversation`, which the server calls when the conversation is deleted;
- give `open` a readable binary file of exactly the bytes `put` read.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass
from typing import Any, BinaryIO

from ..plugins import ATTACHMENT_STORES

ENTRY_POINT_GROUP = ATTACHMENT_STORES


@dataclass(frozen=True)
class AttachmentMeta:
    attachment_id: str
    conversation_id: str
    name: str  # sanitised (names.display_name)
    type: str  # sniffed (sniff.MEDIA_TYPES' keys)
    size: int
    sha256: str  # hex of the bytes
    created_at: float
    idempotency_key: str = ""

    def to_json(self) -> dict[str, Any]:
        """What the API answers (docs/protocol.md, "Attachments")."""
        return {
            "attachment_id": self.attachment_id,
            "name": self.name,
            "type": self.type,
            "size": self.size,
            "sha256": self.sha256,
        }

    def to_record(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> AttachmentMeta:
        return cls(**record)


class ConversationGone(Exception):
    """The conversation was deleted or expired while the upload was read: nothing stored."""


class BudgetExceeded(Exception):
    """The attachment does not fit the conversation's byte budget: nothing stored."""

    def __init__(self, used: int, limit: int) -> None:
        super().__init__(f"{used} of {limit} bytes used")
        self.used = used
        self.limit = limit


class StoreFull(Exception):
    """The store's own bound (a directory's ATTACHMENTS_DIR_MAX_BYTES) is reached: nothing stored."""


class AttachmentStore(ABC):
    @abstractmethod
    def put(self, meta: AttachmentMeta, data: BinaryIO, budget: int) -> tuple[AttachmentMeta, bool]:
        """Store `meta.size` bytes read from `data` (at its start) under `meta`'s conversation,
        if the conversation's attachments stay within `budget` bytes: (meta, True). If the
        conversation already has an attachment made with `meta.idempotency_key` (non-empty):
        that one's meta and False, nothing stored. Raises BudgetExceeded, StoreFull or
        ConversationGone, with nothing stored."""

    @abstractmethod
    def get(self, conversation_id: str, attachment_id: str) -> AttachmentMeta | None:
        """The attachment's meta, or None if this conversation has no such attachment."""

    @abstractmethod
    def open(self, conversation_id: str, attachment_id: str) -> BinaryIO | None:
        """Its bytes, as a readable binary file the caller closes; None as for `get`."""

    @abstractmethod
    def delete(self, conversation_id: str, attachment_id: str) -> bool:
        """Remove one attachment (its bytes count no more against the budget); False if unknown."""

    @abstractmethod
    def delete_conversation(self, conversation_id: str) -> None:
        """Remove every attachment of the conversation (deleted, or expired)."""

    @abstractmethod
    def used_bytes(self, conversation_id: str) -> int:
        """The bytes the conversation's attachments hold (what its budget counts)."""

    def listing(self, conversation_id: str) -> list[AttachmentMeta]:
        """Every attachment of the conversation, sent or not, oldest first (the export of a
        subject's data: widget_server/privacy/). Not abstract: a plugin without it cannot export."""
        raise NotImplementedError(f"{type(self).__name__} cannot list a conversation's attachments")

    def close(self) -> None:  # noqa: B027 - nothing to release by default
        """Release files and connections."""
