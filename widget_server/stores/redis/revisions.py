"""Regenerate and edit (widget_server/revisions/): the last turn's answer replaced.

One script, claim_revision.lua: the request-id claim of a new question, the refusal rules of
stores/base.py revision_refusal checked against the answers' states, and the new exchange,
which names the answer it `replaces`, all at once.
"""

from __future__ import annotations

import json

from ..base import Claim, RequestConflict, Revision, RevisionRefused, UnknownMessage
from ..lua import load_script
from .conversations import RedisConversations
from .core import SCRIPTS, _text
from .unavailable import unavailable_on_connection_errors

_CLAIM_REVISION = load_script(SCRIPTS, "claim_revision")


@unavailable_on_connection_errors
class RedisRevisions(RedisConversations):
    def _register_revision_scripts(self) -> None:
        self._claim_revision = self.redis.register_script(_CLAIM_REVISION)

    def claim_revision(
        self,
        conversation_id: str,
        request_id: str,
        fingerprint: str,
        revision: Revision,
        new_assistant_message_id: str,
    ) -> Claim:
        exchange = {
            "conversation_id": conversation_id,
            "request_id": request_id,
            "fingerprint": fingerprint,
            "user_message_id": revision.user_message_id,
            "user_text": revision.user_text,
            "assistant_message_id": new_assistant_message_id,
        }
        conv = self._conv(conversation_id)
        outcome, *rest = self._claim_revision(
            keys=[
                conv,
                conv + ":exchanges",
                conv + ":requests",
                self._msg(new_assistant_message_id),
                self._lease(new_assistant_message_id),
            ],
            args=[
                request_id,
                json.dumps(exchange, ensure_ascii=False),
                fingerprint,
                self._ttl,
                self._lease_ms,
                self.owner,
                "user_message_id" if revision.by_user_message else "assistant_message_id",
                revision.target_message_id,
                self.keys.prefix(conversation_id) + "msg:",
            ],
        )
        outcome = _text(outcome)
        if outcome == "unknown":
            raise UnknownMessage(conversation_id)
        if outcome == "refused":
            raise RevisionRefused(_text(rest[0]))
        found = self._exchange(rest[0])
        if outcome == "conflict":
            raise RequestConflict(found)
        if outcome == "existing":
            return Claim(found, created=False)
        self._own(found.assistant_message_id)
        # After the new exchange: it hides the one it replaces from the backend too.
        history = self._completed_history(self.exchanges(conversation_id))
        self.compact_due(conversation_id)
        return Claim(found, created=True, history=history)
