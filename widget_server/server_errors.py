"""JSON for the errors gunicorn answers itself, before the application sees the request.

gunicorn refuses what it cannot parse or what exceeds its limits: a request line longer than
`limit_request_line` (414), a header field longer than `limit_request_field_size` or more than
`limit_request_fields` of them (431), anything else it cannot read as HTTP/1.1 (400). Its
worker's `handle_error` (gunicorn/workers/base.py) logs the refusal and writes a small HTML
page (gunicorn/util.py, `write_error`), where docs/protocol.md ("HTTP errors") promises that
every error is JSON with a stable code. `JsonErrorResponses` keeps gunicorn's decision (the
status) and its logging (the warning, the access-log line) and replaces only the page: the
body the app's own errors have (errorhandlers.py, `{"error": {"code", "message"}}`), with the
headers they carry. The other statuses gunicorn answers itself get the app's codes for them
(500 `internal`) or its fallback (`http_error`: 417, 501, 403). Only the error path changes;
a request that parses never comes here (tests/security/test_http_server_errors.py).
"""

from __future__ import annotations

import json
from typing import Any

from gunicorn import util as gunicorn_util  # type: ignore[import-untyped]
from gunicorn.http.message import (  # type: ignore[import-untyped]
    DEFAULT_MAX_HEADERFIELD_SIZE,
    MAX_HEADERS,
    MAX_REQUEST_LINE,
)
from gunicorn.workers.base import Worker as _GunicornWorker  # type: ignore[import-untyped]

from .errors import ApiError
from .wire.errors import BAD_REQUEST, HEADER_TOO_LARGE, INTERNAL, URI_TOO_LONG, http_error

# What the app's JSON errors carry besides their body (errorhandlers.py `_json_error`,
# web.py `security_headers()`); the test compares them with a 404 from the app. The
# connection is closed after a refusal, as gunicorn's own page says.
_HEADERS = (
    ("Content-Type", "application/json"),
    ("Cache-Control", "no-store"),
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", "strict-origin-when-cross-origin"),
    ("Connection", "close"),
)


def request_line_limit(cfg: Any) -> int | None:
    """The longest request line gunicorn reads, in bytes (None: no limit of its own), as
    gunicorn/http/message.py applies `limit_request_line`: negative or above 8190 is 8190."""
    limit: int = cfg.limit_request_line
    if limit == 0:
        return None
    return MAX_REQUEST_LINE if limit < 0 or limit > MAX_REQUEST_LINE else limit


def header_limits(cfg: Any) -> tuple[int, int]:
    """(fields, bytes per field) as gunicorn/http/message.py applies `limit_request_fields` and
    `limit_request_field_size`: 0 or out of range is gunicorn's own bound."""
    fields: int = cfg.limit_request_fields
    size: int = cfg.limit_request_field_size
    return (
        MAX_HEADERS if fields <= 0 or fields > MAX_HEADERS else fields,
        DEFAULT_MAX_HEADERFIELD_SIZE if size <= 0 else size,
    )


def server_refusal(status: int, reason: str, cfg: Any) -> ApiError:
    """The JSON error for a refusal gunicorn answered with `status` (and its `reason` phrase)."""
    if status == 414:
        limit = request_line_limit(cfg)
        bound = f"this server's limit of {limit} bytes" if limit else "what this server reads"
        return URI_TOO_LONG(
            f"The request line (method, path with its query string, and HTTP version) is longer than {bound}. "
            "Use a shorter URL; send long data in a request body.",
        )
    if status == 431:
        fields, size = header_limits(cfg)
        return HEADER_TOO_LARGE(
            f"The request's header fields are larger than this server allows: at most {fields} fields, "
            f"each at most {size} bytes (name, value and line end). Send fewer or smaller headers, cookies included.",
        )
    if status == 400:
        return BAD_REQUEST(
            "The server could not read this request as HTTP/1.1: its request line or a header field is malformed.",
        )
    if status == 500:
        return INTERNAL("Something went wrong on our side. Nothing was saved; try again.")
    return http_error(status, f"The server refused this request: {status} {reason}.")


def json_error_response(status: int, reason: str, cfg: Any) -> bytes:
    """The whole HTTP/1.1 response for `server_refusal(status, reason, cfg)`."""
    # As Flask's `jsonify` writes the app's errors: compact, keys sorted, a final newline.
    error = server_refusal(status, reason, cfg).to_json()
    body = (json.dumps(error, separators=(",", ":"), sort_keys=True) + "\n").encode()
    head = [f"HTTP/1.1 {status} {reason}", *(f"{name}: {value}" for name, value in _HEADERS)]
    head.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body


class _ErrorPageCatcher:
    """Stands in for the client's socket while gunicorn's `handle_error` runs: keeps the page
    it writes instead of sending it. Everything else (the access log reads nothing from the
    socket) is the client's."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self.page = b""

    def gettimeout(self) -> float:
        # gunicorn writes its page with util.write_nonblock, which switches a blocking socket
        # to non-blocking around the write; caught here, nothing is written to switch for.
        return 0.0

    def sendall(self, data: bytes, flags: int = 0) -> None:
        self.page += bytes(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


class JsonErrorResponses(_GunicornWorker):
    """A gunicorn worker whose own refusals are the chat's JSON errors (the module's docstring).

    Mixed in before gunicorn's worker class: `class GeventWorker(JsonErrorResponses,
    gunicorn.workers.ggevent.GeventWorker)`."""

    def handle_error(self, req: Any, client: Any, addr: Any, exc: BaseException) -> None:
        catcher = _ErrorPageCatcher(client)
        super().handle_error(req, catcher, addr, exc)
        if not catcher.page:
            return
        status_line = catcher.page.split(b"\r\n", 1)[0].decode("latin-1")
        try:
            _version, status, reason = status_line.split(" ", 2)
            response = json_error_response(int(status), reason, self.cfg)
        except ValueError:  # not gunicorn's "HTTP/1.1 <status> <reason>": send its page as it is
            response = catcher.page
        # Written as gunicorn writes its page (Worker.handle_error): without blocking, and a
        # client already gone is only worth a debug line.
        try:
            gunicorn_util.write_nonblock(client, response)
        except Exception:
            self.log.debug("Failed to send error message.")
