"""Attachments in a local directory: the default beside the memory store (one process, one host).

Layout: `<ATTACHMENTS_DIR>/<conversation_id>/<attachment_id>`, one subdirectory per
conversation, so deleting a conversation's attachments is removing one directory. A file is
written under a temporary name in that subdirectory and renamed into place once whole
(`os.replace`, atomic on POSIX): a reader never sees half a file, and an upload cut short
leaves nothing under an attachment's name.

The metadata (name, type, size, SHA-256, the idempotency keys) is kept in this process, like
the memory store's conversations: when the process ends, the conversations are gone, and the
next start removes the files they left (every conversation subdirectory of the directory).
So that a mistyped ATTACHMENTS_DIR cannot make it remove someone else's files, the directory
must be empty or carry the marker file this store writes there (`MARKER`).

Expiry: the memory store tells this store whenever it forgets a conversation — deleted,
idle past its retention, RETENTION or IDENTIFIED_RETENTION (its sweep runs on every access to it), or evicted by
MEMORY_STORE_MAX_BYTES — through `MemoryStore.forget_listeners` (`__init__.py` connects
them), and its subdirectory goes at once. The whole directory holds at most
ATTACHMENTS_DIR_MAX_BYTES; beyond it an upload is refused (StoreFull) until some go.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import weakref
from dataclasses import dataclass, field
from typing import BinaryIO

from ..protocol import is_id
from ..settings import ConfigError
from ..settings.parsing import ATTACHMENTS_DIR_MARKER as MARKER
from .store import AttachmentMeta, AttachmentStore, BudgetExceeded, ConversationGone, StoreFull

_COPY_CHUNK = 1 << 16


@dataclass
class _Conversation:
    attachments: dict[str, AttachmentMeta] = field(default_factory=dict)
    by_key: dict[str, str] = field(default_factory=dict)  # idempotency key → attachment id
    reserved: int = 0  # bytes of uploads being written

    @property
    def used(self) -> int:
        return sum(meta.size for meta in self.attachments.values())


class DirectoryAttachmentStore(AttachmentStore):
    def __init__(self, root: str, max_bytes: int) -> None:
        self._owned = not root
        self.root = (
            tempfile.mkdtemp(prefix="widget-server-attachments-")
            if self._owned
            else os.path.abspath(os.path.expanduser(root))
        )
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._conversations: dict[str, _Conversation] = {}
        self._total = 0  # bytes stored and reserved, across conversations
        self._prepare()
        if self._owned:  # removed when the store is dropped, or at exit at the latest
            self._cleanup = weakref.finalize(self, shutil.rmtree, self.root, True)

    def _prepare(self) -> None:
        os.makedirs(self.root, mode=0o700, exist_ok=True)
        marker = os.path.join(self.root, MARKER)
        if not os.path.exists(marker):
            if os.listdir(self.root):
                raise ConfigError(
                    f"ATTACHMENTS_DIR: {self.root} is not empty and is not an attachments folder "
                    f"(no {MARKER} file): name a new or empty folder"
                )
            with open(marker, "w", encoding="utf-8") as file:
                file.write("Attachments of widget-server conversations; removed when they expire.\n")
        for entry in os.listdir(self.root):
            path = os.path.join(self.root, entry)
            if is_id(entry) and os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)  # a previous process's: its conversations are gone

    def _path(self, conversation_id: str, attachment_id: str = "") -> str:
        # Both ids are protocol ids (letters, digits, _ and -; transport's converters and
        # protocol.new_id): never ".." or a separator.
        assert is_id(conversation_id) and (not attachment_id or is_id(attachment_id))
        return os.path.join(self.root, conversation_id, attachment_id)

    def put(self, meta: AttachmentMeta, data: BinaryIO, budget: int) -> tuple[AttachmentMeta, bool]:
        cid = meta.conversation_id
        with self._lock:
            conversation = self._conversations.setdefault(cid, _Conversation())
            known = self._known(conversation, meta.idempotency_key)
            if known is not None:
                return known, False
            used = conversation.used + conversation.reserved
            if used + meta.size > budget:
                raise BudgetExceeded(used, budget)
            if self._total + meta.size > self.max_bytes:
                raise StoreFull(f"{self._total} of {self.max_bytes} bytes used")
            conversation.reserved += meta.size
            self._total += meta.size
        stored = False
        try:
            self._write(meta, data)
            with self._lock:
                if self._conversations.get(cid) is not conversation:
                    raise ConversationGone(cid)  # forgotten meanwhile: its directory went too
                known = self._known(conversation, meta.idempotency_key)
                if known is not None:  # a concurrent retry with the same key stored first
                    return known, False
                conversation.attachments[meta.attachment_id] = meta
                if meta.idempotency_key:
                    conversation.by_key[meta.idempotency_key] = meta.attachment_id
                stored = True
                return meta, True
        finally:
            with self._lock:
                conversation.reserved -= meta.size
                if not stored:
                    self._total -= meta.size
            if not stored:
                _remove(self._path(cid, meta.attachment_id))

    @staticmethod
    def _known(conversation: _Conversation, key: str) -> AttachmentMeta | None:
        attachment_id = conversation.by_key.get(key) if key else None
        return conversation.attachments.get(attachment_id) if attachment_id else None

    def _write(self, meta: AttachmentMeta, data: BinaryIO) -> None:
        folder = self._path(meta.conversation_id)
        try:
            os.makedirs(folder, mode=0o700, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=folder, prefix=".upload-", delete=False) as file:
                temporary = file.name
                data.seek(0)
                remaining = meta.size
                while remaining:
                    chunk = data.read(min(_COPY_CHUNK, remaining))
                    if not chunk:
                        raise ValueError("the upload is shorter than its size")
                    file.write(chunk)
                    remaining -= len(chunk)
            os.replace(temporary, self._path(meta.conversation_id, meta.attachment_id))
        except FileNotFoundError:
            # The conversation's directory was removed while writing: it was forgotten.
            raise ConversationGone(meta.conversation_id) from None

    def get(self, conversation_id: str, attachment_id: str) -> AttachmentMeta | None:
        with self._lock:
            conversation = self._conversations.get(conversation_id)
            return conversation.attachments.get(attachment_id) if conversation is not None else None

    def open(self, conversation_id: str, attachment_id: str) -> BinaryIO | None:
        if self.get(conversation_id, attachment_id) is None:
            return None
        try:
            return open(self._path(conversation_id, attachment_id), "rb")
        except FileNotFoundError:
            return None  # deleted since

    def delete(self, conversation_id: str, attachment_id: str) -> bool:
        with self._lock:
            conversation = self._conversations.get(conversation_id)
            meta = conversation.attachments.pop(attachment_id, None) if conversation is not None else None
            if conversation is None or meta is None:
                return False
            conversation.by_key.pop(meta.idempotency_key, None)
            self._total -= meta.size
            _remove(self._path(conversation_id, attachment_id))
            return True

    def delete_conversation(self, conversation_id: str) -> None:
        if not is_id(conversation_id):
            return
        with self._lock:
            conversation = self._conversations.pop(conversation_id, None)
            if conversation is not None:
                self._total -= conversation.used
            shutil.rmtree(self._path(conversation_id), ignore_errors=True)

    def listing(self, conversation_id: str) -> list[AttachmentMeta]:
        with self._lock:
            conversation = self._conversations.get(conversation_id)
            metas = list(conversation.attachments.values()) if conversation is not None else []
        return sorted(metas, key=lambda meta: (meta.created_at, meta.attachment_id))

    def used_bytes(self, conversation_id: str) -> int:
        with self._lock:
            conversation = self._conversations.get(conversation_id)
            return conversation.used if conversation is not None else 0

    def close(self) -> None:
        if self._owned:
            self._cleanup()


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except FileNotFoundError:
        pass
