"""What the blueprints share: the service, the settings, the conversation's token, JSON
bodies, the id converters of their URLs, and the pages' Content-Security-Policy.

Each blueprint (chat/api.py, actions/api.py, web.py, kb_routes.py, qa.py) is a thin adapter from
HTTP to the service; this module holds the pieces more than one of them needs, so none
imports another's private helpers.
"""

from __future__ import annotations

import _socket
import io
import json
import socket
import tempfile
from collections.abc import Callable
from typing import IO, Any, ClassVar, TypeVar

from flask import Flask, Response, current_app, g, request
from werkzeug.exceptions import NotFound
from werkzeug.routing import BaseConverter

from .chat.service import ChatService
from .errorhandlers import handle_api_error
from .errors import ACTION_NOT_FOUND, CONVERSATION_NOT_FOUND, MESSAGE_NOT_FOUND, ApiError
from .handoff.satisfaction import SatisfactionService
from .handoff.service import HandoffService
from .identity.identity import Identity
from .identity.tokens import looks_like_jwt
from .protocol import is_id
from .services import SERVICES_KEY, Services
from .settings import Settings
from .stores.base import Conversation
from .waiting import call_later
from .wire.bodies import ATTACHMENTS_PER_MESSAGE, FEEDBACK_COMMENT_MAX_CHARS, MAX_TEXT_CHARS
from .wire.errors import (
    BODY_TIMEOUT,
    BODY_TOO_LARGE,
    IDENTITY_INVALID,
    INVALID_BODY,
    INVALID_JSON,
    NOT_FOUND,
    UNSUPPORTED_MEDIA_TYPE,
)
from .wire.schema import Limit, WireType, parse_body

BodyT = TypeVar("BodyT", bound=WireType)

# `<conversation_id>.<token>`: set by the API when a conversation starts, read by the panel's
# page to find it again (chat/api.py, web.py). The `__Host-` prefix makes the browser refuse the
# cookie unless it is Secure, has Path=/ and no Domain, and was set by this host itself
# (RFC 6265bis §4.1.3.2): a page on a sibling subdomain cannot plant one to fixate the
# visitor on a conversation it can read (docs/security.md, "Controls";
# tests/e2e/test_cookie_fixation.py). The old unprefixed name is never read.
CONVERSATION_COOKIE = "__Host-chatwidget_conversation"


def services() -> Services:
    """The app's services (widget_server/services.py, built once by create_app)."""
    built: Services = current_app.extensions[SERVICES_KEY]
    return built


def chat_service() -> ChatService:
    return services().chat


def handoff_service() -> HandoffService:
    """The app's HandoffService (widget_server/handoff/service.py)."""
    return services().handoff


def satisfaction_service() -> SatisfactionService:
    """The app's SatisfactionService (widget_server/handoff/satisfaction.py)."""
    return services().satisfaction


def settings() -> Settings:
    values: Settings = current_app.config["WIDGET_SERVER"]
    return values


def bearer_token() -> str | None:
    """The token of `Authorization: Bearer <token>` (the scheme in any case), or None."""
    header = request.headers.get("Authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    return None


def authorize(conversation_id: str, *, allow_query_token: bool = False) -> Conversation:
    """The conversation, if the request carries its token, or the identity token of the
    subject that owns it (`Authorization: Bearer <JWT>`: docs/protocol.md, "Known visitors");
    else 404 `not_found`, the same for an unknown id, a wrong token and another subject's or
    an anonymous conversation. An identity token that does not verify is a 401
    (`identity_invalid`, `identity_expired`), which names no conversation.

    `allow_query_token`: also accept `?token=`, for the GET stream only, because
    EventSource cannot set headers (docs/protocol.md, "Conventions"); only a conversation's
    token there, never an identity token (a URL ends up in logs).
    """
    token = bearer_token()
    # (Without an identity key a JWT is only a wrong token: the 404 it always got.)
    if token is None and allow_query_token:
        query_token = request.args.get("token") or None
        # A JWT in the query is refused as a wrong token would be: its bearer's every
        # conversation must not ride in access logs.
        token = query_token if query_token is None or not looks_like_jwt(query_token) else ""
    # Checked once per request: the rate limits ask first (ratelimits.py), the view again.
    asked = (conversation_id, token)
    known: tuple[tuple[str, str | None], Conversation] | None = g.get("widget_server_authorized")
    if known is not None and known[0] == asked:
        return known[1]
    if token is not None and looks_like_jwt(token) and bearer_token() == token and services().identity.configured:
        conversation = chat_service().authorize_subject(conversation_id, bearer_identity().subject)
    else:
        conversation = chat_service().authorize(conversation_id, token)
    g.widget_server_authorized = (asked, conversation)
    return conversation


def bearer_identity() -> Identity:
    """The verified identity of `Authorization: Bearer <identity token>` (once per request);
    401 `identity_invalid` without one, or `identity_expired`."""
    known: Identity | None = g.get("widget_server_identity")
    if known is not None:
        return known
    token = bearer_token()
    if token is None:
        raise IDENTITY_INVALID("Send the visitor's identity token as Authorization: Bearer <token>.")
    identity = services().identity.verify(token)
    g.widget_server_identity = identity
    return identity


def disconnect_probe(environ: dict[str, Any]) -> Callable[[], bool] | None:
    """A check that the request's client has closed its connection, or None where the WSGI
    server does not expose the socket (the stream then notices at its next write).

    Werkzeug (`werkzeug.socket`) and gunicorn (`gunicorn.socket`, gevent workers included)
    expose it. The check peeks at the socket without waiting and without consuming
    anything: end of stream (the client's FIN) or an error (its RST) means gone; no data,
    or data, means still there. It goes through the plain `_socket` type, so under gevent
    it never yields to the hub, and detaches before the object is dropped, so the
    server's socket stays open.
    """
    sock = environ.get("gunicorn.socket") or environ.get("werkzeug.socket")
    if sock is None or not hasattr(sock, "fileno"):
        return None

    def client_gone() -> bool:
        try:
            fd = sock.fileno()
        except OSError:
            return True
        if fd < 0:
            return True
        try:
            peek = _socket.socket(fileno=fd)
        except OSError:
            return True
        try:
            return peek.recv(1, _socket.MSG_PEEK | _socket.MSG_DONTWAIT) == b""
        except (BlockingIOError, InterruptedError):
            return False  # nothing to read: connected and quiet
        except OSError:
            return True  # reset by the peer
        finally:
            peek.detach()

    return client_gone


def json_body() -> dict[str, Any]:
    """The request's body, which must be a JSON object sent as `application/json`."""
    if request.mimetype != "application/json":
        raise UNSUPPORTED_MEDIA_TYPE("Send the request body as JSON with Content-Type: application/json.")
    raw = request.environ.get(BODY_KEY)
    if raw is None:  # read_bounded_body did not run (an app without transport.init_app)
        raw = request.get_data(cache=False)
    try:
        body = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as error:
        raise INVALID_JSON(f"The request body is not valid JSON: {error}.") from None
    except RecursionError:
        # Deeply nested arrays or objects exhaust the decoder's stack: a
        # client mistake, not a server error (tests/test_api_errors.py).
        raise INVALID_JSON("The request body is not valid JSON: it is nested too deeply.") from None
    if not isinstance(body, dict):
        raise INVALID_BODY("The request body must be a JSON object.")
    return body


def body_limits(values: Settings) -> dict[Limit, int]:
    """What each configured bound of wire/bodies.py is on this server."""
    return {
        MAX_TEXT_CHARS: values.chat.max_text_chars,
        ATTACHMENTS_PER_MESSAGE: values.attachments.per_message,
        FEEDBACK_COMMENT_MAX_CHARS: values.chat.feedback_comment_max_chars,
    }


def parse_json(body_type: type[BodyT]) -> BodyT:
    """The request's JSON body as a `body_type` of wire/bodies.py, checked by its rules (415, 400
    `invalid_json` as json_body; then each field's own refusal: wire/schema.py)."""
    return parse_body(body_type, json_body(), body_limits(settings()))


# -- request bounds (docs/security.md, "Request bounds") ---------------------------------------

# Where read_bounded_body leaves the body it read, for json_body.
BODY_KEY = "widget_server.body"
# Set when the connection must not be reused (its body was cut short): the response says
# `Connection: close`, which both servers honour.
CLOSE_KEY = "widget_server.close"
# An over-limit chunked body is read on (and thrown away) up to this much more, so that
# the client, still sending, reads the 413 instead of a reset connection.
_DRAIN_BYTES = 1 << 20


def _request_socket() -> socket.socket | None:
    """The client's socket: gunicorn's and werkzeug's servers both put it in the environ."""
    sock = request.environ.get("gunicorn.socket") or request.environ.get("werkzeug.socket")
    return sock if isinstance(sock, socket.socket) else None


class _ReadDeadline:
    """Cuts the body's reading at a deadline, however the bytes trickle in: a timer shuts
    down the socket's read side, so a read blocked in the server's input stream (a thread
    under werkzeug, a greenlet under gevent, where `threading` is patched) returns at once.
    The timer is waiting.call_later's: one loop timer under gevent (a `threading.Timer` per
    request, a thread started for each, was a large part of a new message's POST's CPU:
    bench/load.py, N=2,000)."""

    def __init__(self, seconds: float) -> None:
        self.expired = False
        self._seconds = seconds
        self._socket = _request_socket()
        self._timer: Any = None

    def _cut(self) -> None:
        self.expired = True
        if self._socket is not None:
            try:
                self._socket.shutdown(socket.SHUT_RD)
            except OSError:
                pass  # already closed

    def __enter__(self) -> _ReadDeadline:
        self._timer = call_later(self._seconds, self._cut)
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()


def _too_large(limit: int) -> ApiError:
    request.environ[CLOSE_KEY] = True
    return BODY_TOO_LARGE(f"The request body is larger than the limit of {limit} bytes.")


def _read_up_to(stream: IO[bytes], most: int, sink: IO[bytes] | None = None) -> bytes:
    """At most `most` bytes of `stream`, fewer only at its end; with a `sink`, written there
    instead (b"" returned)."""
    parts: list[bytes] = []
    size = 0
    while size < most:
        data = stream.read(min(65536, most - size))
        if not data:
            break
        if sink is None:
            parts.append(data)
        else:
            sink.write(data)
        size += len(data)
    return b"".join(parts)


# Endpoints whose body may be larger than MAX_BODY_BYTES (an attachment's upload): the
# before-request read leaves it, and the view, once it has authorised the request and the
# rate limits have counted it, reads it with `read_large_body` and its own limit.
LARGE_BODY_ENDPOINTS: set[str] = set()


def read_bounded_body() -> None:
    """Before every route: read the request's body whole, within MAX_BODY_BYTES (413
    `body_too_large`, whether the body is framed by Content-Length or chunked) and within
    BODY_READ_TIMEOUT_SECONDS from here (408 `body_timeout`, the connection closed), so a
    body that trickles in cannot hold a worker. `json_body()` then parses what was read."""
    environ = request.environ
    chunked = "chunked" in environ.get("HTTP_TRANSFER_ENCODING", "").lower()
    length = request.content_length
    if not chunked and not length:
        environ[BODY_KEY] = b""
        return
    if request.endpoint in LARGE_BODY_ENDPOINTS:
        # Until the view has read it whole, the connection cannot carry another request: a
        # refusal before that (a wrong token, a rate limit) closes it.
        environ[CLOSE_KEY] = True
        return
    limit: int = settings().web.max_body_bytes
    timeout: float = settings().web.body_read_timeout_seconds
    environ[BODY_KEY] = _read_body(limit, timeout, _too_large)


def _read_body(
    limit: int, timeout: float, too_large: Callable[[int], ApiError], sink: IO[bytes] | None = None
) -> bytes:
    environ = request.environ
    chunked = "chunked" in environ.get("HTTP_TRANSFER_ENCODING", "").lower()
    length = request.content_length
    if not chunked and length is not None and length > limit:
        raise too_large(limit)  # refused before a byte of it is read
    # A chunked body ends where the server's input stream ends (both servers then set
    # wsgi.input_terminated); werkzeug's request.stream would stop quietly at the limit.
    stream: IO[bytes] = environ["wsgi.input"] if chunked and "wsgi.input_terminated" in environ else request.stream
    size = 0
    body = b""
    with _ReadDeadline(timeout) as deadline:
        try:
            body = _read_up_to(stream, limit + 1, sink)
            size = len(body) if sink is None else sink.tell()
            if size > limit:
                _read_up_to(stream, _DRAIN_BYTES, io.BytesIO() if sink is not None else None)
        except Exception:
            if not deadline.expired:
                raise
    if deadline.expired:
        environ[CLOSE_KEY] = True
        raise BODY_TIMEOUT(
            f"The request body did not arrive within {timeout:g} seconds. Send it again, whole.",
        )
    if size > limit:
        raise too_large(limit)
    return body


def read_large_body(limit: int, timeout: float, too_large: Callable[[int], ApiError]) -> IO[bytes]:
    """The body of a LARGE_BODY_ENDPOINTS request, read whole into a temporary file (in memory
    up to MAX_BODY_BYTES, on disk beyond), with read_bounded_body's guarantees and its own
    `limit` (refused with `too_large(limit)`, the connection closed) and `timeout` (408)."""
    request.max_content_length = limit  # werkzeug's own check, per request (Flask 3.1)
    # Returned open: the caller closes it (the view's `with`).
    sink = tempfile.SpooledTemporaryFile(max_size=settings().web.max_body_bytes)  # noqa: SIM115
    try:
        _read_body(limit, timeout, lambda most: _closing(too_large(most)), sink)
    except BaseException:
        sink.close()
        raise
    request.environ.pop(CLOSE_KEY, None)  # read whole: the connection may carry the next request
    sink.seek(0)
    return sink


def _closing(error: ApiError) -> ApiError:
    request.environ[CLOSE_KEY] = True
    return error


def _close_if_cut(response: Response) -> Response:
    if request.environ.get(CLOSE_KEY):
        # The rest of the body was never read: the connection cannot carry another request.
        # werkzeug honours `Connection: close`; gunicorn drops it (a hop-by-hop header) and
        # would read the rest of the body to find the next request, so once the response
        # is out the socket is shut: its next read ends at once.
        response.headers["Connection"] = "close"
        sock = _request_socket()
        if sock is not None:
            response.call_on_close(lambda: _shut(sock))
    return response


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # the client left first


def content_security_policy(frame_ancestors: str) -> str:
    """The pages' policy: our own scripts and styles only, no inline code, API calls to our
    own origin only, and embedding only by `frame_ancestors`."""
    return (
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' blob:; "
        f"base-uri 'none'; form-action 'self'; frame-ancestors {frame_ancestors}"
    )


# -- ids in URLs -----------------------------------------------------------------------------


class MalformedId(NotFound):
    """A path segment that is not an id, refused while the URL is routed."""

    def __init__(self, error: ApiError) -> None:
        super().__init__()
        self.error = error


class IdConverter(BaseConverter):
    """`<conversation:…>`, `<message:…>`, `<action:…>`: a path segment that is an id
    (protocol.ID_PATTERN), or 404 `not_found`.

    Every segment reaches `to_python` (the converter's regex is the default one), so that a
    malformed id gets the very body an unknown one gets, instead of routing's own 404: a
    caller learns nothing from the difference (tests/test_api_errors.py,
    test_unknown_conversation_wrong_token_and_missing_token_look_the_same).
    """

    not_found: ClassVar[str]  # the 404's message, the one an unknown id of this kind gets

    def to_python(self, value: str) -> str:
        if not is_id(value):
            raise MalformedId(NOT_FOUND(self.not_found))
        return value


class ConversationIdConverter(IdConverter):
    not_found = CONVERSATION_NOT_FOUND


class MessageIdConverter(IdConverter):
    not_found = MESSAGE_NOT_FOUND


class ActionIdConverter(IdConverter):
    not_found = ACTION_NOT_FOUND


def _handle_malformed_id(error: MalformedId) -> Response:
    return handle_api_error(error.error)


def init_app(app: Flask) -> None:
    """Before any blueprint: their rules name these converters."""
    app.url_map.converters.update(
        conversation=ConversationIdConverter, message=MessageIdConverter, action=ActionIdConverter
    )
    app.register_error_handler(MalformedId, _handle_malformed_id)
    # First of the app's before-request functions: every body is bounded before any route,
    # or any other check, reads it.
    app.before_request(read_bounded_body)
    app.after_request(_close_if_cut)
