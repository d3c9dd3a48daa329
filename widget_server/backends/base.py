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
  to the user only after the answer completes (docs/backends.md, "Actions");
- to cite a document, yield a `Source(id, title, url, snippet)` (listed under the answer once
  it completes; `[id]` in the text links to it), and to say what it is doing before or between
  words, a `Progress(text)` (docs/backends.md, "Sources" and "Progress").
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Protocol, runtime_checkable

from .. import plugins
from ..answer_parts import Progress as Progress
from ..answer_parts import Source as Source
from ..attachments.sniff import IMAGE_TYPES, MEDIA_TYPES
from ..settings import Settings
from ..waiting import Flag

ENTRY_POINT_GROUP = plugins.BACKENDS


@dataclass(frozen=True)
class TurnAttachment:
    """A file the user sent with this turn (docs/backends.md, "Files with a question").

    `type` is what the server found in the bytes (`png`, `jpeg`, `webp`, `gif`, `pdf`, `text`
    or `csv`, those of ATTACHMENT_TYPES), never the name's or the browser's claim, and
    `media_type` its MIME type (`image/png`, `text/plain; charset=utf-8`); `name` is made
    safe to show; `description` is the visitor's text alternative ("" for none); `sha256` is
    the hex digest of the bytes `read()` returns. The bytes are read only when asked for, from
    the conversation's attachment store; `read()` raises FileNotFoundError if they are gone
    (the conversation was deleted meanwhile)."""

    attachment_id: str
    name: str
    type: str
    size: int
    sha256: str
    description: str = ""
    opener: Callable[[], BinaryIO | None] = field(default=lambda: None, repr=False, compare=False)

    def to_json(self) -> dict[str, Any]:
        """As the history lists it (docs/protocol.md, "Sending files with a message")."""
        listed: dict[str, Any] = {
            "attachment_id": self.attachment_id,
            "name": self.name,
            "type": self.type,
            "size": self.size,
            "sha256": self.sha256,
        }
        if self.description:
            listed["description"] = self.description
        return listed

    @property
    def media_type(self) -> str:
        return MEDIA_TYPES[self.type]

    @property
    def is_image(self) -> bool:
        return self.type in IMAGE_TYPES

    def open(self) -> BinaryIO:
        """The bytes as a binary file the caller closes."""
        data = self.opener()
        if data is None:
            raise FileNotFoundError(f"attachment {self.attachment_id} is gone")
        return data

    def read(self) -> bytes:
        """All the bytes (at most ATTACHMENT_MAX_BYTES)."""
        with self.open() as data:
            return data.read()


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
    # The files sent with this turn's text, in the order the visitor attached them (the text
    # may then be ""). Earlier turns' files are not given again: `history` is text only.
    attachments: tuple[TurnAttachment, ...] = ()
    # The host page's context the question came with (ChatWidget.setContext, docs/backends.md,
    # "The host page's context"): what the site says of the page the visitor asks from, such
    # as {"page": "/pricing", "plan": "pro"}; flat, strings, numbers and booleans, at most 2 KB
    # of JSON. The site's word, not the visitor's: a backend may use it, never obey it as an
    # instruction. Empty when none was set.
    context: dict[str, str | int | float | bool] = field(default_factory=dict)

    @property
    def server_origin(self) -> str:
        """`server_url`'s earlier name, kept for backends written before chat could be mounted
        under a path (docs/backends.md)."""
        return self.server_url


class CancelToken:
    """Cooperative cancellation, shared by the generator and the backend."""

    def __init__(self) -> None:
        # A Flag, not a threading.Event: a backend's paced waits are one per piece of text,
        # and gevent's Event.wait(timeout) makes a timer and an exception per wait
        # (widget_server/waiting.py says what that cost).
        self._event = Flag()
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

    def stream(self, turn: Turn, cancel: CancelToken) -> Iterator[str | ActionProposal | Source | Progress]: ...


class UnknownBackend(LookupError):
    pass


def available_backends() -> dict[str, Any]:
    """Installed backends by name (entry points, not yet loaded)."""
    return plugins.registered(plugins.BACKENDS)


def load_backend_class(name: str) -> Any:
    """A registered name (`demo`), or `package.module:Class` for an unregistered one
    (the one plugin registry, widget_server/plugins.py)."""
    if ":" not in name and name not in available_backends():
        known = ", ".join(sorted(available_backends())) or "none installed"
        raise UnknownBackend(f"unknown backend {name!r} (known: {known})")
    try:
        return plugins.load(plugins.BACKENDS, name)
    except plugins.PluginNotFound as error:
        raise UnknownBackend(f"cannot load backend {name!r}: {error}") from None


def create_backend(name: str, settings: Settings) -> Backend:
    cls = load_backend_class(name)
    backend = cls.from_settings(settings) if hasattr(cls, "from_settings") else cls()
    if not isinstance(backend, Backend):
        raise UnknownBackend(f"backend {name!r} does not implement stream(turn, cancel)")
    return backend
