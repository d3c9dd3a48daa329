"""The backend interface and its registry.

A backend turns the user's turn (plus the conversation's completed history)
into a stream of text deltas. It is a plugin: built-ins are registered in
pyproject.toml under the entry-point group `widget_server.backends`, exactly
as a third-party package registers its own.

    class MyBackend:
        name = "mine"

        @classmethod
        def from_settings(cls, settings): return cls()

        def stream(self, turn, cancel):
            for piece in produce(turn.text, turn.history):
                if cancel.cancelled:
                    return            # stop promptly: nobody will read more
                yield piece

Rules a backend must follow (docs/backends.md says more):
- yield text as soon as it exists (the first delta before the last is known);
- check `cancel.cancelled` between pieces, and use `cancel.wait(seconds)`
  instead of `time.sleep` so a cancel or the time limit wakes it at once;
- raise `widget_server.errors.ChatError(code, detail)` for a typed failure;
  any other exception is logged and shown to the user as `internal`;
- to propose an action (a call back, a booking), yield an
  `ActionProposal(name, arguments)`: it is validated at once and offered
  to the user only after the answer completes (docs/backends.md, "Actions").
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any, Protocol, runtime_checkable

ENTRY_POINT_GROUP = "widget_server.backends"


@dataclass(frozen=True)
class Turn:
    """What a backend is asked to answer, and the request it came with (docs/backends.md)."""

    text: str
    history: list[tuple[str, str]] = field(default_factory=list)  # (role, text), oldest first
    conversation_id: str = ""
    message_id: str = ""
    # The scheme://host[:port] the question was sent to, without a final "/": PUBLIC_URL when
    # it is set, else the request's Host (as the panel's own API base; docs/security.md,
    # "Production defaults"), followed by the path a host app mounted the chat at, if any
    # (widget_server/mount.py): where a link to this server must point. "" when the turn did
    # not come from an HTTP request.
    server_url: str = ""
    # Whether this server can hand the conversation to a person now (HANDOFF, as
    # HandoffService.enabled decides it): a backend may then propose the `handoff` action
    # (docs/backends.md, "Offering a person"). The service layer decides; a backend never
    # reads the agents itself (tests/test_architecture.py).
    offers_handoff: bool = False

    @property
    def server_origin(self) -> str:
        """`server_url`'s earlier name, kept for backends written before chat could be mounted
        under a path (docs/backends.md)."""
        return self.server_url


class CancelToken:
    """Cooperative cancellation, shared by the generator and the backend."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self.reason: str | None = None

    def cancel(self, reason: str = "cancelled") -> None:
        if self.reason is None:
            self.reason = reason
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def wait(self, timeout: float) -> bool:
        """Sleep up to `timeout` seconds; True at once if cancelled."""
        return self._event.wait(timeout)


@dataclass(frozen=True)
class ActionProposal:
    """An action the backend proposes, yielded between text pieces.

    `name` names an installed action (entry-point group
    `widget_server.actions`, see widget_server.actions); `arguments` are
    validated against that action's schema the moment it is yielded. The
    proposal travels with the answer (`action.proposed`), but it becomes
    actionable only once the answer completes: the user confirms it, and the
    server executes it exactly once. A cancelled or failed answer never
    offers its proposals.
    """

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Backend(Protocol):
    name: str

    def stream(self, turn: Turn, cancel: CancelToken) -> Iterator[str | ActionProposal]: ...


class UnknownBackend(LookupError):
    pass


def available_backends() -> dict[str, Any]:
    """Installed backends by name (entry points, not yet loaded)."""
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def load_backend_class(name: str) -> Any:
    """A registered name (`demo`), or `package.module:Class` for an unregistered one."""
    if ":" in name:
        module_name, _, attribute = name.partition(":")
        try:
            return getattr(importlib.import_module(module_name), attribute)
        except (ImportError, AttributeError) as error:
            raise UnknownBackend(f"cannot load backend {name!r}: {error}") from error
    registered = available_backends()
    if name not in registered:
        known = ", ".join(sorted(registered)) or "none installed"
        raise UnknownBackend(f"unknown backend {name!r} (known: {known})")
    return registered[name].load()


def create_backend(name: str, settings: Any) -> Backend:
    cls = load_backend_class(name)
    backend = cls.from_settings(settings) if hasattr(cls, "from_settings") else cls()
    if not isinstance(backend, Backend):
        raise UnknownBackend(f"backend {name!r} does not implement stream(turn, cancel)")
    return backend
