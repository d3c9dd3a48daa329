"""The store interface: conversations, idempotent request claims, message logs.

Every method is atomic. Terminal transitions are compare-and-set: whoever
ends a message first (the generator completing, a cancel request, the time
limit, a failure) wins, and every later attempt is refused without effect.
That one rule is what makes cancel, timeout and completion race-free.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field

from ..errors import ErrorInfo
from ..messages import MessageState, StreamEvent


@dataclass(frozen=True)
class Conversation:
    conversation_id: str
    token_hash: str
    created_at: float


@dataclass(frozen=True)
class Exchange:
    """One user turn and the assistant message answering it."""

    request_id: str
    fingerprint: str
    user_message_id: str
    user_text: str
    assistant_message_id: str


@dataclass(frozen=True)
class MessageInfo:
    message_id: str
    conversation_id: str
    state: MessageState
    text: str
    last_seq: int
    error: ErrorInfo | None = None


@dataclass(frozen=True)
class Claim:
    exchange: Exchange
    created: bool
    history: list[tuple[str, str]] = field(default_factory=list)


class RequestConflict(Exception):
    """The request id was used before with a different body."""

    def __init__(self, exchange: Exchange) -> None:
        super().__init__(exchange.request_id)
        self.exchange = exchange


class UnknownMessage(Exception):
    pass


class Store(ABC):
    """What the chat service needs from storage. See MemoryStore for semantics."""

    max_events: int

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
    ) -> Claim:
        """Record a new exchange, or return the one this request id made.

        Raises RequestConflict if the id was used with another fingerprint.
        On creation, `Claim.history` is the conversation's completed
        exchanges before this one, as (role, text) pairs for the backend.
        """

    @abstractmethod
    def exchanges(self, conversation_id: str) -> list[Exchange]: ...

    @abstractmethod
    def message(self, message_id: str) -> MessageInfo | None: ...

    # -- writing a message's events (all refuse once the message is terminal)

    @abstractmethod
    def start(self, message_id: str) -> StreamEvent | None: ...

    @abstractmethod
    def append_text(self, message_id: str, text: str) -> StreamEvent | None:
        """Append a delta; None if the message is no longer running."""

    @abstractmethod
    def complete(self, message_id: str) -> StreamEvent | None: ...

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

    def close(self) -> None:
        """Release connections; the default store holds none."""
