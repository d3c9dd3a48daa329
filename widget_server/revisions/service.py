"""Regenerate and edit: replacing the conversation's last turn with a new answer.

Transport-free, like chat/service.py: the API (api.py) validates the body and streams
the answer; this module says which turn may be replaced and replaces it through the store.
The rule itself (stores/base.py `revision_refusal`) is checked twice: here first, so a
refusal is a 409 that names the reason before a stream slot is taken or the running limit
is counted (a running target would otherwise be refused as `too_many_running`), then again
by the store atomically with the claim (stores/memory.py under its lock, stores/redis/ in
one Lua script), so two racing revisions cannot both replace the same turn.

A revision is a claim like a send (docs/protocol.md, "Regenerate and edit"): idempotent on
its request_id, which a retry reuses to stream the same new answer without starting
another; the replaced exchange stays in the store for diagnostics but is no longer listed
(docs/design.md, "Regenerate and edit").
"""

from __future__ import annotations

import hashlib
import json

from ..chat.service import ChatService
from ..errors import MESSAGE_NOT_FOUND, ApiError
from ..messages import MessageState
from ..protocol import ASSISTANT_MESSAGE_PREFIX, USER_MESSAGE_PREFIX, new_id
from ..stores.base import (
    TARGET_NOT_FINISHED,
    TARGET_NOT_FOUND,
    Claim,
    Revision,
    RevisionRefused,
    revision_refusal,
)
from ..wire.errors import MESSAGE_NOT_FINISHED, NOT_FOUND, NOT_LAST_ANSWER, NOT_LAST_MESSAGE


def regeneration(message_id: str) -> Revision:
    """A new answer to the user turn that `message_id` (the last answer) answered."""
    return Revision(message_id)


def edition(user_message_id: str, text: str) -> Revision:
    """The last user message (`user_message_id`) replaced by `text`, under a new user
    message id, and answered."""
    return Revision(user_message_id, by_user_message=True, user_text=text, user_message_id=new_id(USER_MESSAGE_PREFIX))


def check_target(chat: ChatService, conversation_id: str, request_id: str, revision: Revision) -> None:
    """Refuse a revision whose target may not be replaced (404, 409), before anything starts.

    A retry of a request id already claimed is not checked: its turn is no longer the last
    (its own answer is), yet it must stream that answer (the store returns it)."""
    exchanges = chat.store.exchanges(conversation_id)
    if any(exchange.request_id == request_id for exchange in exchanges):
        return

    def state_of(message_id: str) -> MessageState | None:
        info = chat.store.message(message_id)
        # An answer whose worker died is failed first (a shared store's lease ran out),
        # so it has ended and may be replaced.
        return chat.reap_if_lost(info).state if info is not None else None

    refusal, _ = revision_refusal(exchanges, state_of, revision)
    if refusal is not None:
        raise refused(refusal, revision)


def refused(reason: str, revision: Revision) -> ApiError:
    """The API's answer to a RevisionRefused `reason`."""
    if reason == TARGET_NOT_FOUND:
        return NOT_FOUND(MESSAGE_NOT_FOUND)
    if reason == TARGET_NOT_FINISHED:
        return MESSAGE_NOT_FINISHED(
            "This answer is still being generated. Wait for it to end, or stop it, then try again.",
        )
    if revision.by_user_message:
        return NOT_LAST_MESSAGE("Only the conversation's last message can be edited; this one has a later turn.")
    return NOT_LAST_ANSWER("Only the conversation's last answer can be regenerated; this one has a later turn.")


def fingerprint(revision: Revision) -> str:
    """What a retry's body must match (a send's is over its text: service.request_fingerprint):
    the kind of revision, its target and, for an edit, the new text."""
    kind = "edit" if revision.by_user_message else "regenerate"
    described = {"kind": kind, "target": revision.target_message_id, "text": revision.user_text}
    return hashlib.sha256(json.dumps(described, ensure_ascii=False).encode("utf-8")).hexdigest()


def replace(
    chat: ChatService, conversation_id: str, request_id: str, revision: Revision, *, server_url: str = ""
) -> tuple[str, bool]:
    """Claim `request_id` for `revision` and start its answer, as ChatService.submit does for
    a send. Returns the new answer's id and whether this call created it (False: a retry).
    Call check_target first: its refusals come before the running limit's."""

    def claim() -> Claim:
        try:
            return chat.store.claim_revision(
                conversation_id,
                request_id,
                fingerprint(revision),
                revision,
                new_id(ASSISTANT_MESSAGE_PREFIX, conversation_id),
            )
        except RevisionRefused as refusal:  # the turn changed since check_target: a racing revision or send
            raise refused(refusal.reason, revision) from None

    return chat.start_claimed(conversation_id, request_id, claim, server_url=server_url)
