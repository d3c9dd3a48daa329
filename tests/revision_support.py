"""What tests/test_api_regenerate.py and tests/test_api_edit.py share: a backend whose every
answer is different (so a replaced answer is told from its replacement) and that records
the Turn it was given, and the two requests.

The backend is put in the live server's service the way tests/test_api_lifecycle.py puts
its CountingBackend, so the real app streams it over a real socket.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

from widget_server.backends.base import CancelToken, Turn
from widget_server.errors import ChatError, ErrorCode

from .helpers import ChatClient, StreamResult


class ScriptedBackend:
    """Answers "<text> #<n>." (n: which run of this backend it is) in two deltas; records
    every Turn. `gate`, while set to an unset Event, holds each run after its first delta
    (it stays running until the test sets the event, or it is cancelled); `fail_next` fails
    the next run after its first delta with a provider error."""

    name = "scripted"

    def __init__(self) -> None:
        self.turns: list[Turn] = []
        self.fail_next = False
        self.gate: threading.Event | None = None
        self._lock = threading.Lock()

    @property
    def runs(self) -> int:
        return len(self.turns)

    def stream(self, turn: Turn, cancel: CancelToken) -> Iterator[str]:
        with self._lock:
            self.turns.append(turn)
            number = len(self.turns)
            fail, self.fail_next = self.fail_next, False
            gate = self.gate
        yield f"{turn.text} #{number}"
        while gate is not None and not gate.wait(0.05):
            if cancel.cancelled:
                return
        if fail:
            raise ChatError(ErrorCode.PROVIDER, "scripted failure")
        yield "."


def scripted(server: Any) -> ScriptedBackend:
    backend = ScriptedBackend()
    server.service.backend = backend
    return backend


def regenerate(chat: ChatClient, message_id: str, request_id: str, **kwargs: Any) -> StreamResult:
    return chat.stream(
        "POST", f"{chat.messages_url()}/{message_id}/regenerate", json={"request_id": request_id}, **kwargs
    )


def edit(chat: ChatClient, user_message_id: str, request_id: str, text: str, **kwargs: Any) -> StreamResult:
    return chat.stream(
        "POST",
        f"{chat.messages_url()}/{user_message_id}/edit",
        json={"request_id": request_id, "text": text},
        **kwargs,
    )


def listed(chat: ChatClient) -> list[tuple[str, str, str]]:
    """The history as (role, text, state)."""
    response = chat.history()
    assert response.status_code == 200, response.text
    return [(m["role"], m["text"], m["state"]) for m in response.json()["messages"]]


def history_ids(chat: ChatClient) -> list[str]:
    return [m["message_id"] for m in chat.history().json()["messages"]]


def same_conversation(chat: ChatClient, base_url: str | None = None) -> ChatClient:
    """Another client of the same conversation (its own connection, maybe another server)."""
    other = ChatClient(base_url or chat.base_url)
    other.conversation_id, other.token = chat.conversation_id, chat.token
    return other
