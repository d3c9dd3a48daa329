"""The error taxonomy: what went wrong, what the user is told, and whether to retry.

docs/design.md ("Errors that say what to do next") asks for at least network, timeout, provider, safety and
validation, each with a message that names the next safe step and never
reveals internals. Internal details go to the server log only.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any


class ErrorCode(str, Enum):
    NETWORK = "network"
    TIMEOUT = "timeout"
    PROVIDER = "provider"
    SAFETY = "safety"
    VALIDATION = "validation"
    INTERNAL = "internal"
    # The worker generating the answer stopped (crashed, killed, lost its
    # host) and its ownership lease ran out: what arrived is all there is.
    WORKER_LOST = "worker_lost"
    # The answer grew past MAX_ANSWER_CHARS: stopped there, what arrived is partial.
    ANSWER_TOO_LONG = "answer_too_long"

    @property
    def retryable(self) -> bool:
        return self in _RETRYABLE

    @property
    def user_message(self) -> str:
        return _USER_MESSAGES[self]


_RETRYABLE = frozenset(
    {ErrorCode.NETWORK, ErrorCode.TIMEOUT, ErrorCode.PROVIDER, ErrorCode.INTERNAL, ErrorCode.WORKER_LOST}
)

# English defaults. The widget shows its own translation keyed by `code`;
# these are for API clients and logs (and are what the widget falls back to).
_USER_MESSAGES = {
    ErrorCode.NETWORK: "The connection to the answer service was interrupted. Nothing was saved; try sending your message again.",
    ErrorCode.TIMEOUT: "The answer took too long and was stopped. What arrived is incomplete; try again, perhaps with a shorter question.",
    ErrorCode.PROVIDER: "The answer service is having trouble right now. Nothing was saved; try again in a moment.",
    ErrorCode.SAFETY: "This request can't be answered. Try rephrasing your question.",
    ErrorCode.VALIDATION: "This request couldn't be processed as sent. Check your message and send it again.",
    ErrorCode.INTERNAL: "Something went wrong on our side. Nothing was saved; try again.",
    ErrorCode.WORKER_LOST: "The server writing this answer stopped before it finished. What arrived is incomplete and was not saved; try again.",
    ErrorCode.ANSWER_TOO_LONG: "The answer grew longer than this service allows and was stopped. What arrived is incomplete and was not saved; ask for something shorter.",
}


@dataclass(frozen=True)
class ErrorInfo:
    """What a `message.failed` event and the API say about a failure."""

    code: str
    message: str
    retryable: bool

    def to_json(self) -> dict:
        return {"code": self.code, "message": self.message, "retryable": self.retryable}

    @classmethod
    def for_code(cls, code: ErrorCode) -> ErrorInfo:
        return cls(code.value, code.user_message, code.retryable)


class ChatError(Exception):
    """Raised by a backend to fail the answer with a typed, user-safe error.

    `detail` is for the server log; the user sees `code`'s message (or
    `user_message` when a backend has a better, still safe, sentence).
    """

    def __init__(
        self,
        code: ErrorCode | str,
        detail: str = "",
        *,
        user_message: str | None = None,
        retryable: bool | None = None,
    ) -> None:
        self.code = ErrorCode(code)
        self.detail = detail
        self.user_message = user_message or self.code.user_message
        self.retryable = self.code.retryable if retryable is None else retryable
        super().__init__(f"{self.code.value}: {detail}" if detail else self.code.value)

    def info(self) -> ErrorInfo:
        return ErrorInfo(self.code.value, self.user_message, self.retryable)


class ApiError(Exception):
    """A client mistake or refusal at the HTTP layer: status, stable code, message."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        retry_after: int | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.retry_after = retry_after
        self.details = details or {}

    def to_json(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.details:
            error["details"] = self.details
        return {"error": error}


# The 404 `not_found` messages. An unknown id, a malformed one and a wrong token get the same
# one, so a caller cannot tell whether a conversation exists (docs/protocol.md, "Conventions";
# tests/test_api_errors.py).
CONVERSATION_NOT_FOUND = "No such conversation, or the token does not match it."
MESSAGE_NOT_FOUND = "No such message in this conversation."
ACTION_NOT_FOUND = "No such action for this message."
