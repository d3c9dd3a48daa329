"""Conversations: their records, their exchanges, and each new question's request-id claim.

The claim (claim.lua) is one script: a retry of the same request finds its exchange, another
request with the same id is a conflict, and a new one gets its exchange, its answer's message
and that message's lease at once. Every authorised request reads its conversation and every
new answer is a claim, so under a burst of questions these calls go to Redis in batches
(script_batches.py), as creating a conversation and reading its exchanges do.
"""

from __future__ import annotations

import json
from typing import Any

from ..base import (
    SUBJECT_LIST_MAX,
    Claim,
    Conversation,
    Exchange,
    RequestConflict,
    SentAttachment,
    SubjectConversation,
    UnknownMessage,
    backend_history,
)
from ..keyspace import PREFIX
from ..lua import load_script
from ..script_batches import ScriptBatches
from .compaction import RedisCompaction
from .core import CONVERSATION_KEY_SUFFIXES, SCRIPTS, _text
from .unavailable import unavailable_on_connection_errors

_CLAIM = load_script(SCRIPTS, "claim")
_GET_CONVERSATION = load_script(SCRIPTS, "get_conversation")
_EXCHANGES = load_script(SCRIPTS, "exchanges")
_CREATE_CONVERSATION = load_script(SCRIPTS, "create_conversation")
# A conversation record's fields, in the order get_conversation.lua reads them.
CONVERSATION_FIELDS = ("token_hash", "created_at", "subject", "name", "email", "consent_sha256", "consented_at")
_TOUCH_SUBJECT = load_script(SCRIPTS, "touch_subject")


@unavailable_on_connection_errors
class RedisConversations(RedisCompaction):
    def _register_conversation_scripts(self) -> None:
        self._claim = self.redis.register_script(_CLAIM)
        self._get_conversation = self.redis.register_script(_GET_CONVERSATION)
        # Every authorised request reads its conversation, and every new answer is a claim:
        # under a burst of questions these go in batches too (redis-py's own path per command,
        # pool, checks and a cluster's routing, was a large share of a worker's CPU while 2,000
        # questions arrived at once: bench/load.py redis-cluster-2w, py-spy).
        self._get_conversation_batches = ScriptBatches(
            self.redis, _GET_CONVERSATION, lambda keys, args: self._get_conversation(keys=keys, args=args)
        )
        # (Also read before each new answer's claim: ChatService.check_can_start.)
        exchanges = self.redis.register_script(_EXCHANGES)
        self._exchanges_batches = ScriptBatches(
            self.redis, _EXCHANGES, lambda keys, args: exchanges(keys=keys, args=args)
        )
        self._claim_batches = ScriptBatches(self.redis, _CLAIM, lambda keys, args: self._claim(keys=keys, args=args))
        # Once per question each, as the reads above (and message() also before each ending).
        create_conversation = self.redis.register_script(_CREATE_CONVERSATION)
        self._create_conversation_batches = ScriptBatches(
            self.redis, _CREATE_CONVERSATION, lambda keys, args: create_conversation(keys=keys, args=args)
        )
        self._touch_subject = self.redis.register_script(_TOUCH_SUBJECT)

    def create_conversation(self, conversation: Conversation) -> None:
        self._create_conversation_batches(
            [self._conv(conversation.conversation_id)],
            [
                conversation.token_hash,
                repr(float(conversation.created_at)),
                self.retention_of(conversation),
                *self._owner_fields(conversation),
                *self._consent_fields(conversation),
            ],
        )
        if conversation.subject:
            # The subject's list is another slot's key on a cluster: its own script, after the
            # record exists (a list entry without its conversation is skipped and pruned).
            self._subject_list(conversation, conversation.created_at, "add")

    @staticmethod
    def _owner_fields(conversation: Conversation) -> list[str]:
        """An identified visitor's fields (widget_server/identity/), only for one: an anonymous
        conversation keeps the record it always had."""
        if not conversation.subject:
            return []
        return ["subject", conversation.subject, "name", conversation.name, "email", conversation.email]

    @staticmethod
    def _consent_fields(conversation: Conversation) -> list[str]:
        """The consent's hash fields, only when there is one: a conversation made without a
        consent step keeps the record it always had."""
        if not conversation.consent_sha256:
            return []
        return ["consent_sha256", conversation.consent_sha256, "consented_at", repr(float(conversation.consented_at))]

    def retention_of(self, conversation: Conversation) -> int:
        """Seconds `conversation`'s keys live after its last use: IDENTIFIED_RETENTION for a
        known visitor's, RETENTION for an anonymous one (docs/privacy.md)."""
        return self._identified_ttl if conversation.subject else self._anonymous_ttl

    def get_conversation(self, conversation_id: str) -> Conversation | None:
        key = self._conv(conversation_id)
        values = self._get_conversation_batches(
            [key, *(key + suffix for suffix in CONVERSATION_KEY_SUFFIXES)], [self._ttl]
        )
        if values is None:
            return None
        return self._conversation(conversation_id, values)

    @staticmethod
    def _conversation(conversation_id: str, values: list[bytes | None]) -> Conversation:
        # A record stored before identity (or consent) existed lacks those fields: anonymous,
        # without consent.
        subject, name, email, consent, consented_at = ([*values[2:7], None, None, None, None, None])[:5]
        return Conversation(
            conversation_id,
            _text(values[0] or b""),
            float(values[1] or 0),
            subject=_text(subject or b""),
            name=_text(name or b""),
            email=_text(email or b""),
            consent_sha256=_text(consent or b""),
            consented_at=float(consented_at or 0) if consent else 0.0,
        )

    # -- a subject's conversations (widget_server/identity/) -----------------------------------

    def _subject_list(self, conversation: Conversation, at: float, mode: str) -> None:
        self._touch_subject(
            keys=[self.keys.subject(conversation.subject)],
            args=[conversation.conversation_id, repr(float(at)), self._identified_ttl, SUBJECT_LIST_MAX, mode],
        )

    def touch_subject_conversation(self, conversation: Conversation, at: float) -> None:
        if conversation.subject:
            self._subject_list(conversation, at, "touch")

    def find_subject_conversations(self, subject: str) -> list[str]:
        # SCAN over every conversation record (on a cluster, redis-py walks each primary): an
        # operator's request, never a visitor's (Store.find_subject_conversations).
        found: list[str] = []
        for key in self.redis.scan_iter(match=f"{PREFIX}*conv:*", count=1000, _type="HASH"):
            name = _text(key)
            conversation_id = name.rsplit("conv:", 1)[1]
            if ":" in conversation_id or self._conv(conversation_id) != name:
                continue  # one of a conversation's other keys (its feedback, its attachments)
            if _text(self.redis.hget(name, "subject") or b"") == subject:
                found.append(conversation_id)
        return found

    def forget_subject(self, subject: str) -> None:
        self.redis.delete(self.keys.subject(subject))

    def subject_conversations(self, subject: str, limit: int) -> list[SubjectConversation]:
        key = self.keys.subject(subject)
        listed = [(_text(cid), float(score)) for cid, score in self.redis.zrevrange(key, 0, limit - 1, withscores=True)]
        if not listed:
            return []
        # Each conversation is a key of its own slot: a pipeline of plain reads (redis-py sends a
        # cluster's to each node), which renew nothing: listing is not using a conversation.
        pipeline = self.redis.pipeline(transaction=False)
        for cid, _ in listed:
            pipeline.hmget(self._conv(cid), *CONVERSATION_FIELDS)
        found: list[SubjectConversation] = []
        gone: list[str] = []
        for (cid, at), values in zip(listed, pipeline.execute(), strict=True):
            conversation = self._conversation(cid, values) if values[0] is not None else None
            if conversation is None or conversation.subject != subject:
                gone.append(cid)  # expired (or deleted) since it was listed
                continue
            found.append(SubjectConversation(conversation, at))
        if gone:
            self.redis.zrem(key, *gone)
        return found

    def claim_request(
        self,
        conversation_id: str,
        request_id: str,
        fingerprint: str,
        user_text: str,
        new_user_message_id: str,
        new_assistant_message_id: str,
        attachments: tuple[SentAttachment, ...] = (),
        context: tuple[tuple[str, str | int | float | bool], ...] = (),
    ) -> Claim:
        exchange: dict[str, Any] = {
            "conversation_id": conversation_id,
            "request_id": request_id,
            "fingerprint": fingerprint,
            "user_message_id": new_user_message_id,
            "user_text": user_text,
            "assistant_message_id": new_assistant_message_id,
        }
        if attachments:  # only when there are: Lua's cjson writes an empty list back as {}
            exchange["attachments"] = [attachment.to_json() for attachment in attachments]
        if context:  # likewise: only when there is one
            exchange["context"] = dict(context)
        conv = self._conv(conversation_id)
        outcome, *rest = self._claim_batches(
            [
                conv,
                conv + ":exchanges",
                conv + ":requests",
                self._msg(new_assistant_message_id),
                self._lease(new_assistant_message_id),
            ],
            [
                request_id,
                json.dumps(exchange, ensure_ascii=False),
                fingerprint,
                self._ttl,
                self._lease_ms,
                self.owner,
            ],
        )
        outcome = outcome.decode()
        if outcome == "unknown":
            raise UnknownMessage(conversation_id)
        found = self._exchange(rest[0])
        if outcome == "conflict":
            raise RequestConflict(found)
        if outcome == "existing":
            return Claim(found, created=False)
        self._own(new_assistant_message_id)
        earlier = [exchange for exchange in map(self._exchange, rest[1]) if exchange.request_id != request_id]
        history = self._completed_history(earlier)
        self.compact_due(conversation_id)
        return Claim(found, created=True, history=history)

    @staticmethod
    def _exchange(raw: bytes | str) -> Exchange:
        data = json.loads(raw)
        return Exchange(
            data["request_id"],
            data["fingerprint"],
            data["user_message_id"],
            data["user_text"],
            data["assistant_message_id"],
            data.get("replaces", ""),
            tuple(SentAttachment.from_json(item) for item in data.get("attachments") or ()),
            tuple((data.get("context") or {}).items()),
        )

    def _completed_history(self, exchanges: list[Exchange]) -> list[tuple[str, str]]:
        return backend_history(exchanges, self.message)

    def exchanges(self, conversation_id: str) -> list[Exchange]:
        return [
            self._exchange(raw) for raw in self._exchanges_batches([self._conv(conversation_id) + ":exchanges"], [])
        ]
