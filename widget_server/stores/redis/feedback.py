"""Feedback on answers, and deleting a conversation (widget_server/feedback/).

A conversation's feedback is one hash, `conv:{cid}:feedback`: assistant message id → the
record's JSON, one per message, written only while the conversation exists (put_feedback.lua).
Deleting a conversation is one script (delete_conversation.lua) that removes every key of it,
its messages and their actions at once; the rate limits' keys for it are ratelimits.py's
(`RateLimits.forget_conversation`).
"""

from __future__ import annotations

import json
from typing import cast

from ..base import FeedbackRecord, UnknownMessage
from ..keyspace import PREFIX
from ..lua import load_script
from .core import CONVERSATION_KEY_SUFFIXES, MESSAGE_KEY_SUFFIXES, SCRIPTS, RedisStoreBase, _text
from .unavailable import unavailable_on_connection_errors

_PUT_FEEDBACK = load_script(SCRIPTS, "put_feedback")
_DELETE_CONVERSATION = load_script(SCRIPTS, "delete_conversation")


@unavailable_on_connection_errors
class RedisFeedback(RedisStoreBase):
    def _register_feedback_scripts(self) -> None:
        self._put_feedback = self.redis.register_script(_PUT_FEEDBACK)
        self._delete_conversation = self.redis.register_script(_DELETE_CONVERSATION)

    def _feedback_key(self, conversation_id: str) -> str:
        return self.keys.conversation(conversation_id) + ":feedback"

    @staticmethod
    def _feedback_record(conversation_id: str, message_id: str, raw: bytes | str) -> FeedbackRecord:
        data = json.loads(raw)
        return FeedbackRecord(conversation_id, message_id, data["rating"], data["comment"], float(data["updated_at"]))

    def put_feedback(self, record: FeedbackRecord) -> FeedbackRecord | None:
        encoded = json.dumps(
            {"rating": record.rating, "comment": record.comment, "updated_at": record.updated_at}, ensure_ascii=False
        )
        outcome, *rest = self._put_feedback(
            keys=[self._conv(record.conversation_id), self._feedback_key(record.conversation_id)],
            args=[record.message_id, encoded, self._ttl],
        )
        if _text(outcome) == "unknown":
            raise UnknownMessage(record.conversation_id)
        return self._feedback_record(record.conversation_id, record.message_id, rest[0]) if rest else None

    def delete_feedback(self, conversation_id: str, message_id: str) -> None:
        self.redis.hdel(self._feedback_key(conversation_id), message_id)

    def conversation_feedback(self, conversation_id: str) -> dict[str, FeedbackRecord]:
        found = self.redis.hgetall(self._feedback_key(conversation_id))
        return {
            _text(mid): self._feedback_record(conversation_id, _text(mid), raw)
            for mid, raw in cast("dict[bytes, bytes]", found).items()
        }

    def feedback_conversations(self) -> list[str]:
        # SCAN, not an index: the export is an operator's occasional command, and an index
        # would be one more key naming each conversation, to expire and delete with it.
        # On a cluster the keys carry a bucket's tag before `conv:` (keyspace.py) and SCAN
        # walks every master (redis-py's RedisCluster.scan_iter).
        pattern = f"{PREFIX}*conv:*:feedback"
        tail = ":feedback"
        return sorted(
            _text(key).rsplit("conv:", 1)[1][: -len(tail)]
            for key in self.redis.scan_iter(match=pattern, count=1000, _type="hash")
        )

    def delete_conversation(self, conversation_id: str) -> bool:
        deleted = self._delete_conversation(
            keys=[self._conv(conversation_id), self._compact_key(conversation_id)],
            args=[
                self.keys.prefix(conversation_id),
                " ".join(CONVERSATION_KEY_SUFFIXES),
                " ".join(MESSAGE_KEY_SUFFIXES),
            ],
        )
        if not deleted:
            return False
        subject = _text(deleted[1])
        if subject:
            # Its owner's list is another slot's key on a cluster: a single-key command after the
            # script (a listing in between skips the entry, its conversation being gone).
            self.redis.zrem(self.keys.subject(subject), conversation_id)
        return True
