"""The store interface: conversations, idempotent request claims, message logs.

Every method is atomic. Terminal transitions are compare-and-set: whoever
ends a message first (the generator completing, a cancel request, the time
limit, a failure) wins, and every later attempt is refused without effect.
That one rule is what makes cancel, timeout and completion race-free.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import ErrorInfo
from ..messages import MessageState, StreamEvent

# An action's statuses are the wire's (wire/records.py); the stores keep them by these names.
from ..wire.records import ActionStatus as ActionStatus


@dataclass(frozen=True)
class Conversation:
    conversation_id: str
    token_hash: str
    created_at: float
    # Its owner when it was started with a verified identity token (widget_server/identity/):
    # the site's `sub`, and the visitor's name and email as the token gave them. "" for an
    # anonymous conversation, and for every conversation stored before identity existed.
    subject: str = ""
    name: str = ""
    email: str = ""
    # The visitor's agreement to CONSENT_TEXT before the first message (docs/protocol.md,
    # "Consent"): the SHA-256 (hex) of the text they agreed to, and when the server recorded
    # it; "" and 0.0 when the conversation was made without a consent step.
    consent_sha256: str = ""
    consented_at: float = 0.0


# The most conversations a subject's list keeps on a shared store (its oldest drop out first):
# what one /me request can reach, so it bounds that request's work (privacy/api.py).
SUBJECT_LIST_MAX = 200


@dataclass(frozen=True)
class SubjectConversation:
    """One conversation of a subject's list (Store.subject_conversations): the conversation and
    when it was last active (its creation or its newest question, unix seconds)."""

    conversation: Conversation
    last_activity: float


@dataclass(frozen=True)
class SentAttachment:
    """A file a user turn carried (docs/protocol.md, "Sending files with a message"): its id in
    the conversation's attachment store (widget_server/attachments/), and the visitor's
    description of it, its text alternative ("" for none)."""

    attachment_id: str
    description: str = ""

    def to_json(self) -> dict[str, str]:
        return {"attachment_id": self.attachment_id, "description": self.description}

    @classmethod
    def from_json(cls, value: dict[str, Any]) -> SentAttachment:
        return cls(str(value["attachment_id"]), str(value.get("description") or ""))


@dataclass(frozen=True)
class Exchange:
    """One user turn and the assistant message answering it."""

    request_id: str
    fingerprint: str
    user_message_id: str
    user_text: str
    assistant_message_id: str
    # The answer this exchange replaced (a regenerate or an edit: widget_server/revisions/);
    # "" for a plain send. The replaced exchange stays in the store (listed_exchanges).
    replaces: str = ""
    # The files the user turn carried; a regenerate or an edit keeps them (Revision.replacing).
    attachments: tuple[SentAttachment, ...] = ()
    # The host page's context the message came with (ChatWidget.setContext; wire/bodies.py
    # CONTEXT), as (key, value) pairs; a regenerate or an edit keeps it.
    context: tuple[tuple[str, str | int | float | bool], ...] = ()


@dataclass(frozen=True)
class MessageInfo:
    message_id: str
    conversation_id: str
    state: MessageState
    text: str
    last_seq: int
    error: ErrorInfo | None = None
    # A completed answer's sources, as its `message.completed` lists them (answer_parts.py).
    sources: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True)
class Claim:
    exchange: Exchange
    created: bool
    history: list[tuple[str, str]] = field(default_factory=list)


@dataclass(frozen=True)
class ActionRecord:
    """One proposed action of one assistant message, and what became of it."""

    action_id: str
    conversation_id: str
    message_id: str
    name: str
    arguments: dict[str, Any]
    label: str
    description: str
    status: str = ActionStatus.PROPOSED
    idempotency_key: str = ""  # the key of the confirm that claimed it
    result: dict[str, Any] | None = None  # execute()'s result, when succeeded
    error: dict[str, Any] | None = None  # {code, message}, when failed

    def proposal(self) -> dict[str, Any]:
        """What the stream says about it (`action.proposed`, `message.completed`)."""
        return {
            "action_id": self.action_id,
            "name": self.name,
            "label": self.label,
            "description": self.description,
            "arguments": self.arguments,
        }

    def to_json(self) -> dict[str, Any]:
        """What the actions API says about it."""
        body = {**self.proposal(), "message_id": self.message_id, "status": self.status}
        if self.result is not None:
            body["result"] = self.result
        if self.error is not None:
            body["error"] = self.error
        return body


@dataclass(frozen=True)
class FeedbackRecord:
    """A visitor's rating of one ended answer (widget_server/feedback/): one per message."""

    conversation_id: str
    message_id: str
    rating: str  # "up" or "down"
    comment: str  # "" when none
    updated_at: float  # unix seconds


# Outcomes of Store.claim_action and Store.dismiss_action.
CLAIMED = "claimed"  # this call moved it proposed → executing: run execute() now
SAME_KEY = "same"  # already claimed with this idempotency key (a retry)
OTHER_KEY = "other"  # already claimed with another key
DISMISSED = "dismissed"  # dismissed (by this call or before)
CONFIRMED = "confirmed"  # dismiss refused: it was confirmed


class RequestConflict(Exception):
    """The request id was used before with a different body."""

    def __init__(self, exchange: Exchange) -> None:
        super().__init__(exchange.request_id)
        self.exchange = exchange


class UnknownMessage(Exception):
    pass


class RevisionRefused(Exception):
    """A regenerate or edit whose target may not be replaced: `reason` is one of
    TARGET_NOT_FOUND, TARGET_NOT_LAST, TARGET_NOT_FINISHED (revision_refusal)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class StoreUnavailable(Exception):
    """The store cannot be reached (Redis down, restarting, or loading).

    Raised instead of the client library's own errors, so the transport can
    answer 503 with Retry-After (or end a stream resumably) without knowing
    which store is behind it.
    """


class Store(ABC):
    """What the chat service needs from storage. See MemoryStore for semantics."""

    max_events: int
    # The longest answer, in code points (MAX_ANSWER_CHARS; 0: no limit): the generation
    # fails a longer one with `answer_too_long` (chat/generation.py).
    max_answer_chars: int = 0

    @abstractmethod
    def create_conversation(self, conversation: Conversation) -> None: ...

    @abstractmethod
    def get_conversation(self, conversation_id: str) -> Conversation | None: ...

    @abstractmethod
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
        """Record a new exchange, or return the one this request id made.

        `context` is the host page's (Exchange.context), kept with the exchange.

        Raises RequestConflict if the id was used with another fingerprint.
        On creation, `Claim.history` is the conversation's completed
        exchanges before this one, as (role, text) pairs for the backend.
        """

    @abstractmethod
    def exchanges(self, conversation_id: str) -> list[Exchange]: ...

    @abstractmethod
    def message(self, message_id: str) -> MessageInfo | None: ...

    def message_state(self, message_id: str) -> MessageState | None:
        """Just the state; stores override it when `message` is costly (the text)."""
        info = self.message(message_id)
        return info.state if info is not None else None

    # -- writing a message's events (all refuse once the message is terminal)

    @abstractmethod
    def start(self, message_id: str) -> StreamEvent | None: ...

    @abstractmethod
    def append_text(self, message_id: str, text: str) -> StreamEvent | None:
        """Append a delta; None if the message is no longer running."""

    def append_text_soon(self, message_id: str, text: str) -> bool:
        """Append a delta of the answer this process generates, without waiting for the store
        to take it: False once an earlier one was refused (the message no longer runs).
        A store with round trips (stores/redis/event_log.py) sends it and learns its outcome at the next call
        or at settle(); deltas and every later write of the message stay in order."""
        return self.append_text(message_id, text) is not None

    def settle(self, message_id: str) -> bool:
        """Wait until the deltas appended with append_text_soon are taken: False if one was
        refused; raises StoreUnavailable if one could not be sent."""
        return True

    @abstractmethod
    def complete(self, message_id: str, sources: Sequence[dict[str, Any]] = ()) -> StreamEvent | None:
        """End the answer as completed, its `sources` (answer_parts.source_json) listed in the
        terminal event and kept for the history; None if it no longer runs."""

    def add_progress(self, message_id: str, text: str) -> StreamEvent | None:
        """Append a `message.progress` line; None if the message is no longer running. Not
        abstract, like actions: a store written before progress lines still loads (the
        generator then leaves them out)."""
        raise NotImplementedError(f"{type(self).__name__} does not support progress lines")

    @abstractmethod
    def fail(self, message_id: str, error: ErrorInfo) -> StreamEvent | None: ...

    @abstractmethod
    def cancel(self, message_id: str) -> StreamEvent | None: ...

    # -- reading

    @abstractmethod
    def read_events(self, message_id: str, after_seq: int, timeout: float) -> list[StreamEvent]:
        """Events after `after_seq`, waiting up to `timeout` s for the first.

        Starts with a `message.snapshot` if events after `after_seq` were
        evicted. Returns [] on timeout. Raises UnknownMessage.
        """

    @abstractmethod
    def snapshot(self, message_id: str) -> StreamEvent | None:
        """A `message.snapshot` of the text so far (None for an unknown message)."""

    # -- client reports (chat/api.py, POST …/report): one per message, across every process

    def claim_report(self, message_id: str) -> bool:
        """True for the first call on an existing message, False ever after (and for an
        unknown message): atomic, so of concurrent reports exactly one is counted."""
        raise NotImplementedError(f"{type(self).__name__} does not support client reports")

    # -- actions (widget_server.actions). Not abstract, so a store written
    # before actions existed still loads; it cannot carry proposals.

    def add_action(self, message_id: str, action: ActionRecord) -> StreamEvent | None:
        """Record a proposal and append its `action.proposed` event, atomically;
        None (and nothing stored) if the message is no longer running."""
        raise NotImplementedError(f"{type(self).__name__} does not support actions")

    def action(self, action_id: str) -> ActionRecord | None:
        raise NotImplementedError(f"{type(self).__name__} does not support actions")

    def message_actions(self, message_id: str) -> list[ActionRecord]:
        """A message's proposals, in the order they were made."""
        raise NotImplementedError(f"{type(self).__name__} does not support actions")

    def claim_action(self, action_id: str, idempotency_key: str) -> tuple[str | None, ActionRecord | None]:
        """Atomically: proposed → executing under this key (CLAIMED); else say
        why not (SAME_KEY, OTHER_KEY, DISMISSED), with the current record.
        (None, None) for an unknown action."""
        raise NotImplementedError(f"{type(self).__name__} does not support actions")

    def finish_action(
        self,
        action_id: str,
        idempotency_key: str,
        status: str,
        *,
        result: dict | None = None,
        error: dict | None = None,
    ) -> ActionRecord | None:
        """executing → succeeded | failed, only for the key that claimed it."""
        raise NotImplementedError(f"{type(self).__name__} does not support actions")

    def dismiss_action(self, action_id: str) -> tuple[str | None, ActionRecord | None]:
        """Atomically: proposed → dismissed (DISMISSED, also if it already was);
        CONFIRMED if a confirm claimed it first."""
        raise NotImplementedError(f"{type(self).__name__} does not support actions")

    def wait_action(self, action_id: str, timeout: float) -> ActionRecord | None:
        """The record once it is no longer executing, or as it is after `timeout` s."""
        raise NotImplementedError(f"{type(self).__name__} does not support actions")

    # -- ownership. A store shared by several processes must notice when the
    # process generating a message dies: it holds a lease it renews, and a
    # message whose lease ran out is failed with `worker_lost` by whoever
    # notices first. A store inside one process dies with its generators, so
    # these defaults say "never lost".

    shared = False

    # A do-nothing default on purpose (no leases in one process), not a forgotten abstract method.
    def renew_lease(self, message_id: str) -> None:  # noqa: B027
        """Extend the generating process's lease on the message."""

    def keep_runs(self, message_ids: list[str], *, renew: bool) -> dict[str, MessageState | None]:
        """For answers this process generates: renew their leases (if
        `renew`) and return their states. Shared stores do it in one round trip."""
        states: dict[str, MessageState | None] = {}
        for message_id in message_ids:
            if renew:
                self.renew_lease(message_id)
            states[message_id] = self.message_state(message_id)
        return states

    def reap_if_lost(self, message_id: str, error: ErrorInfo) -> StreamEvent | None:
        """Fail the message with `error`, atomically, if it is still accepted
        or running and its lease has run out; None (no effect) otherwise."""
        return None

    # Do-nothing defaults on purpose (a store inside the process is always reachable and
    # holds no connections), not forgotten abstract methods.
    def ping(self) -> None:  # noqa: B027
        """Raise StoreUnavailable if the store cannot be reached."""

    def close(self) -> None:  # noqa: B027
        """Release connections; the default store holds none."""

    # -- feedback and deleting a conversation (widget_server/feedback/; docs/protocol.md, "Feedback"). Not
    # abstract, like actions: a store written before them still loads.

    def put_feedback(self, record: FeedbackRecord) -> FeedbackRecord | None:
        """Store `record` as its message's one feedback, replacing any earlier one, which
        it returns (None if there was none). Raises UnknownMessage if the conversation is
        gone (deleted or expired meanwhile): nothing is stored then."""
        raise NotImplementedError(f"{type(self).__name__} does not support feedback")

    def delete_feedback(self, conversation_id: str, message_id: str) -> None:
        """Remove the message's feedback, if any."""
        raise NotImplementedError(f"{type(self).__name__} does not support feedback")

    def conversation_feedback(self, conversation_id: str) -> dict[str, FeedbackRecord]:
        """The conversation's feedback, by message id."""
        raise NotImplementedError(f"{type(self).__name__} does not support feedback")

    def feedback_conversations(self) -> list[str]:
        """The ids of every stored conversation that has feedback (for the export)."""
        raise NotImplementedError(f"{type(self).__name__} does not support feedback")

    def delete_conversation(self, conversation_id: str) -> bool:
        """Forget the conversation and everything of it at once: exchanges, request
        claims, every message's log, text and lease, actions, client-report marks and
        feedback. True if it existed."""
        raise NotImplementedError(f"{type(self).__name__} does not support deleting conversations")

    # -- a subject's conversations (widget_server/identity/; docs/protocol.md, "Known visitors").
    # Not abstract, like actions. create_conversation adds an identified conversation to its
    # subject's list, delete_conversation (and expiry) removes it; the list expires with the
    # conversations (IDENTIFIED_RETENTION after its last change).

    def touch_subject_conversation(self, conversation: Conversation, at: float) -> None:
        """An identified conversation was active at `at` (a new question): its subject's list
        shows it first, and the list lives on."""
        raise NotImplementedError(f"{type(self).__name__} does not support known visitors")

    def find_subject_conversations(self, subject: str) -> list[str]:
        """The ids of every stored conversation whose record names `subject`, listed or not
        (a subject's list keeps its newest entries only): a walk of the whole store, for an
        operator answering an access or erasure request (widget_server/privacy/, `widget-server
        data`), never for a request's path."""
        raise NotImplementedError(f"{type(self).__name__} does not support known visitors")

    def forget_subject(self, subject: str) -> None:
        """Remove the subject's list itself (its conversations are deleted apart)."""
        raise NotImplementedError(f"{type(self).__name__} does not support known visitors")

    def subject_conversations(self, subject: str, limit: int) -> list[SubjectConversation]:
        """The subject's conversations that still exist, most recently active first, at most
        `limit`. Reads only the subject's own list and those conversations: never a scan."""
        raise NotImplementedError(f"{type(self).__name__} does not support known visitors")

    # -- revisions (widget_server/revisions/). Not abstract, like actions.

    def claim_revision(
        self,
        conversation_id: str,
        request_id: str,
        fingerprint: str,
        revision: Revision,
        new_assistant_message_id: str,
    ) -> Claim:
        """Atomically: record a new exchange replacing the one `revision` targets, or
        return the one this request id made (a retry, whatever the conversation became).

        Raises RequestConflict (the id was used with another fingerprint), UnknownMessage
        (no such conversation) or RevisionRefused (revision_refusal, checked in the same
        atomic step). A regenerate keeps the target's user message id and text; an edit
        brings its own. `Claim.history` is backend_history after the new exchange.
        """
        raise NotImplementedError(f"{type(self).__name__} does not support regenerate and edit")


# -- which exchanges a conversation lists, and which one may be replaced ---------------
# Shared by both stores and the service, so the history a reader gets, the history a
# backend is given and the rule of what may be replaced are one computation (docs/design.md,
# "Regenerate and edit").

# Outcomes of revision_refusal (RevisionRefused.reason).
TARGET_NOT_FOUND = "not_found"
TARGET_NOT_LAST = "not_last"
TARGET_NOT_FINISHED = "not_finished"

# Answers in these states are never listed: the user's "never mind" and errors
# (ChatService.history), so they replace nothing either.
_UNLISTED = frozenset({MessageState.FAILED, MessageState.CANCELLED})


@dataclass(frozen=True)
class Revision:
    """What a regenerate or an edit asks to replace, and with what.

    `by_user_message`: the target is named by its user message id (an edit), else by its
    answer's id (a regenerate). `user_text` and `user_message_id` are the edit's new turn;
    "" for a regenerate (the target's own are kept).
    """

    target_message_id: str
    by_user_message: bool = False
    user_text: str = ""
    user_message_id: str = ""

    def matches(self, exchange: Exchange) -> bool:
        named = exchange.user_message_id if self.by_user_message else exchange.assistant_message_id
        return named == self.target_message_id

    def replacing(self, target: Exchange, request_id: str, fingerprint: str, assistant_message_id: str) -> Exchange:
        """The new exchange that replaces `target`."""
        if self.by_user_message:
            user_message_id, user_text = self.user_message_id, self.user_text
        else:
            user_message_id, user_text = target.user_message_id, target.user_text
        # An edit changes the words; the files the turn carried stay with it.
        return Exchange(
            request_id,
            fingerprint,
            user_message_id,
            user_text,
            assistant_message_id,
            target.assistant_message_id,
            target.attachments,
            target.context,
        )


def listed_exchanges(
    exchanges: Sequence[Exchange], state_of: Callable[[str], MessageState | None]
) -> list[tuple[Exchange, MessageState]]:
    """The exchanges a history lists, oldest first, with their answers' states.

    Not listed: an exchange whose answer failed, was cancelled or is gone, and one that a
    later listed exchange replaced (directly, or through replacements that are not listed
    themselves). So a regenerate or edit that fails or is stopped leaves the turn it
    targeted listed again, as a failed send leaves the history as it was.
    """
    listed: list[tuple[Exchange, MessageState]] = []
    replaced: set[str] = set()
    for exchange in reversed(exchanges):
        hidden = exchange.assistant_message_id in replaced
        state = state_of(exchange.assistant_message_id)
        shown = not hidden and state is not None and state not in _UNLISTED
        if (shown or hidden) and exchange.replaces:
            replaced.add(exchange.replaces)
        if shown:
            assert state is not None
            listed.append((exchange, state))
    listed.reverse()
    return listed


def backend_history(
    exchanges: Sequence[Exchange], state_of: Callable[[str], MessageInfo | None]
) -> list[tuple[str, str]]:
    """What a backend is given (Turn.history): the listed exchanges whose answers
    completed, as (role, text) pairs."""
    infos: dict[str, MessageInfo | None] = {}

    def state(message_id: str) -> MessageState | None:
        info = infos[message_id] = state_of(message_id)
        return info.state if info is not None else None

    history: list[tuple[str, str]] = []
    for exchange, answer_state in listed_exchanges(exchanges, state):
        info = infos[exchange.assistant_message_id]
        if answer_state is MessageState.COMPLETED and info is not None:
            history += [("user", exchange.user_text), ("assistant", info.text)]
    return history


def revision_refusal(
    exchanges: Sequence[Exchange], state_of: Callable[[str], MessageState | None], revision: Revision
) -> tuple[str | None, int]:
    """Why `revision` may not replace its target, or None, with the target's index.

    The target is the newest exchange that `revision` names (a regenerated exchange keeps
    its user message id, so an edit may name several). It may be replaced only if no later
    exchange is listed (listed_exchanges: a failed or stopped later turn does not count),
    and only once its answer has ended. The Redis store checks the same in Lua
    (stores/redis/lua/claim_revision.lua).
    """
    index = next((i for i in range(len(exchanges) - 1, -1, -1) if revision.matches(exchanges[i])), -1)
    if index < 0:
        return TARGET_NOT_FOUND, index
    target_state = state_of(exchanges[index].assistant_message_id)
    if target_state is None:
        return TARGET_NOT_FOUND, index  # its answer expired: nothing to replace
    for later in exchanges[index + 1 :]:
        state = state_of(later.assistant_message_id)
        if state is not None and state not in _UNLISTED:
            return TARGET_NOT_LAST, index
    if not target_state.terminal:
        return TARGET_NOT_FINISHED, index
    return None, index
