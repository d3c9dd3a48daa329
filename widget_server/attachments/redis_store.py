"""Attachments in the chat store's Redis: shared by every worker and host, chosen with it.

Two keys per conversation, named after the conversation's own key (stores/redis/):

  cw:conv:{cid}:attachments       hash  `m:{aid}` → the meta JSON, `k:{key}` → the attachment
                                        an idempotency key made, `used` → bytes held
  cw:conv:{cid}:attachment_bytes  hash  `{aid}:{n}` → the bytes, in chunks of CHUNK_BYTES

Both are among the conversation's key suffixes (stores/redis/core.py `CONVERSATION_KEY_SUFFIXES`),
so the chat store refreshes their TTL whenever it refreshes the conversation's (they expire
with it, to the millisecond of its last use) and its delete script removes them with every
other key of the conversation, at once. A put is one Lua script: it checks that the
conversation still exists, looks up the idempotency key, checks the byte budget and writes,
so two uploads racing for the last bytes of a budget cannot both pass, on any host.

Bytes are bounded by ATTACHMENT_MAX_BYTES per file and the conversation's budget; the
server's Redis `maxmemory` bounds the whole (docs/serving.md, "Attachments"). They are kept in
chunks so that a download (`open`) holds one chunk at a time, however large the file and
however many downloads run at once.
"""

from __future__ import annotations

import io
import json
from typing import Any, BinaryIO

from ..stores.keyspace import Keyspace
from ..stores.lua import load_script
from ..stores.redis import unavailable_on_connection_errors
from ..stores.redis_connection import is_cluster
from .store import AttachmentMeta, AttachmentStore, BudgetExceeded, ConversationGone

META_SUFFIX = ":attachments"
BYTES_SUFFIX = ":attachment_bytes"
CHUNK_BYTES = 256 * 1024

# The scripts, in attachments/lua/ (each file says what its KEYS and ARGV are and what it returns).
_PUT = load_script("widget_server.attachments", "put")
_DELETE = load_script("widget_server.attachments", "delete")


@unavailable_on_connection_errors
class RedisAttachmentStore(AttachmentStore):
    def __init__(self, client: Any) -> None:
        self.redis = client
        self._put = client.register_script(_PUT)
        self._delete = client.register_script(_DELETE)
        # The conversation's keys' names, with its cluster hash tag on a cluster.
        self._keyspace = Keyspace(cluster=is_cluster(client))

    def _conv(self, conversation_id: str) -> str:
        return self._keyspace.conversation(conversation_id)

    def _keys(self, conversation_id: str) -> tuple[str, str]:
        conv = self._conv(conversation_id)
        return conv + META_SUFFIX, conv + BYTES_SUFFIX

    def put(self, meta: AttachmentMeta, data: BinaryIO, budget: int) -> tuple[AttachmentMeta, bool]:
        data.seek(0)
        # At most ATTACHMENT_MAX_BYTES, stored in one script so the budget check and the write
        # are one step.
        chunks = [data.read(CHUNK_BYTES) for _ in range(-(-meta.size // CHUNK_BYTES))]
        if sum(len(chunk) for chunk in chunks) != meta.size:
            raise ValueError("the upload is shorter than its size")
        meta_key, bytes_key = self._keys(meta.conversation_id)
        reply = self._put(
            keys=[self._conv(meta.conversation_id), meta_key, bytes_key],
            args=[
                meta.attachment_id,
                json.dumps(meta.to_record()),
                meta.size,
                budget,
                meta.idempotency_key,
                *chunks,
            ],
        )
        outcome = _text(reply[0])
        if outcome == "gone":
            raise ConversationGone(meta.conversation_id)
        if outcome == "budget":
            raise BudgetExceeded(int(_text(reply[1])), budget)
        if outcome == "existing":
            return AttachmentMeta.from_record(json.loads(reply[1])), False
        return meta, True

    def get(self, conversation_id: str, attachment_id: str) -> AttachmentMeta | None:
        raw = self.redis.hget(self._keys(conversation_id)[0], f"m:{attachment_id}")
        return AttachmentMeta.from_record(json.loads(raw)) if raw is not None else None

    def open(self, conversation_id: str, attachment_id: str) -> BinaryIO | None:
        meta = self.get(conversation_id, attachment_id)
        if meta is None:
            return None
        chunks = _Chunks(self, self._keys(conversation_id)[1], attachment_id, meta.size)
        return io.BufferedReader(chunks, buffer_size=CHUNK_BYTES)

    def delete(self, conversation_id: str, attachment_id: str) -> bool:
        return bool(self._delete(keys=list(self._keys(conversation_id)), args=[attachment_id, CHUNK_BYTES]))

    def delete_conversation(self, conversation_id: str) -> None:
        # The chat store's delete script removes these keys with the conversation's; this is
        # for a caller that deletes only the attachments.
        self.redis.delete(*self._keys(conversation_id))

    def listing(self, conversation_id: str) -> list[AttachmentMeta]:
        found = self.redis.hgetall(self._keys(conversation_id)[0])
        metas = [
            AttachmentMeta.from_record(json.loads(raw)) for field, raw in found.items() if _text(field).startswith("m:")
        ]
        return sorted(metas, key=lambda meta: (meta.created_at, meta.attachment_id))

    def used_bytes(self, conversation_id: str) -> int:
        return int(self.redis.hget(self._keys(conversation_id)[0], "used") or 0)


class _Chunks(io.RawIOBase):
    """An attachment's bytes read one chunk (one HGET) at a time. If the attachment is deleted
    while it is read, the read ends there (the response is then shorter than its length)."""

    def __init__(self, store: RedisAttachmentStore, key: str, attachment_id: str, size: int) -> None:
        self._store = store
        self._key = key
        self._attachment_id = attachment_id
        self._left = size
        self._index = 0
        self._pending = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if not self._pending and self._left > 0:
            chunk = self._store.redis.hget(self._key, f"{self._attachment_id}:{self._index}")
            if chunk is None:  # deleted meanwhile
                self._left = 0
                return 0
            self._index += 1
            self._left -= len(chunk)
            self._pending = chunk
        count = min(len(buffer), len(self._pending))
        buffer[:count] = self._pending[:count]
        self._pending = self._pending[count:]
        return count


def _text(reply: bytes | str) -> str:
    return reply.decode() if isinstance(reply, bytes) else reply
