"""Every HTTP error code of the API, in one registry (docs/protocol.md, "HTTP errors").

Each `HttpError` carries its code, its status and whether it is `retryable` (the same request,
unchanged, may succeed later: wait `Retry-After` where given); `visitor`, whether a visitor's
panel can meet it, and so words it in every language (tests/test_refusal_strings.py): not the
agent console's own codes (its sentences are static/agent/i18n's), nor a refusal that comes
before any panel could load (`invalid_host`). A module raises a code by
calling its entry, `NOT_FOUND("No such message.")`, which makes the `ApiError` errorhandlers.py
turns into JSON; it never writes a status and a code by hand (tests/test_architecture.py), so a
code cannot be raised with two statuses or go unregistered.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import ApiError


@dataclass(frozen=True)
class HttpError:
    code: str
    status: int
    retryable: bool = False
    visitor: bool = True

    def __call__(
        self, message: str, *, retry_after: int | None = None, details: dict[str, Any] | None = None
    ) -> ApiError:
        return ApiError(self.status, self.code, message, retry_after=retry_after, details=details)


def _error(code: str, status: int, *, retryable: bool | None = None, visitor: bool = True) -> HttpError:
    # Retryable unless said otherwise: a timeout, a rate limit, a server's own trouble.
    return HttpError(code, status, status in (408, 429, 500, 503) if retryable is None else retryable, visitor)


# -- requests that cannot be read ----------------------------------------------------------
BAD_REQUEST = _error("bad_request", 400)
INVALID_JSON = _error("invalid_json", 400)
INVALID_BODY = _error("invalid_body", 400)
UNKNOWN_FIELD = _error("unknown_field", 400)
BODY_TOO_LARGE = _error("body_too_large", 413)
BODY_TIMEOUT = _error("body_timeout", 408)
UNSUPPORTED_MEDIA_TYPE = _error("unsupported_media_type", 415)
METHOD_NOT_ALLOWED = _error("method_not_allowed", 405)
URI_TOO_LONG = _error("uri_too_long", 414)
HEADER_TOO_LARGE = _error("header_too_large", 431)
NOT_FOUND = _error("not_found", 404)
INVALID_HOST = _error("invalid_host", 400, visitor=False)
ORIGIN_NOT_ALLOWED = _error("origin_not_allowed", 403)
# -- a message and its answer --------------------------------------------------------------
MISSING_REQUEST_ID = _error("missing_request_id", 400)
INVALID_REQUEST_ID = _error("invalid_request_id", 400)
MISSING_TEXT = _error("missing_text", 400)
EMPTY_TEXT = _error("empty_text", 400)
TEXT_TOO_LONG = _error("text_too_long", 413)
REQUEST_ID_CONFLICT = _error("request_id_conflict", 409)
INVALID_LAST_EVENT_ID = _error("invalid_last_event_id", 400)
INVALID_AFTER = _error("invalid_after", 400)
INVALID_REPORT = _error("invalid_report", 400)
REPORT_EXCEEDS_MESSAGE = _error("report_exceeds_message", 422)
INVALID_FAULTS = _error("invalid_faults", 400)
FAULTS_DISABLED = _error("faults_disabled", 403)
NOT_LAST_ANSWER = _error("not_last_answer", 409)
NOT_LAST_MESSAGE = _error("not_last_message", 409)
MESSAGE_NOT_FINISHED = _error("message_not_finished", 409)
# -- feedback ------------------------------------------------------------------------------
INVALID_RATING = _error("invalid_rating", 400)
INVALID_COMMENT = _error("invalid_comment", 400)
COMMENT_TOO_LONG = _error("comment_too_long", 413)
# -- actions -------------------------------------------------------------------------------
MISSING_IDEMPOTENCY_KEY = _error("missing_idempotency_key", 400)
INVALID_IDEMPOTENCY_KEY = _error("invalid_idempotency_key", 400)
IDEMPOTENCY_KEY_MISMATCH = _error("idempotency_key_mismatch", 400)
MESSAGE_NOT_COMPLETED = _error("message_not_completed", 409)
ACTION_ALREADY_CONFIRMED = _error("action_already_confirmed", 409)
ACTION_DISMISSED = _error("action_dismissed", 409)
# Still being carried out: the same confirm (same key) gets its outcome.
ACTION_IN_PROGRESS = _error("action_in_progress", 409, retryable=True)
ACTION_UNAVAILABLE = _error("action_unavailable", 409)
INVALID_ARGUMENTS = _error("invalid_arguments", 422)
# -- hand-off ------------------------------------------------------------------------------
HANDOFF_ACTIVE = _error("handoff_active", 409)
HANDOFF_NOT_ACTIVE = _error("handoff_not_active", 409)
ALREADY_CLAIMED = _error("already_claimed", 409)
NOT_YOUR_CONVERSATION = _error("not_your_conversation", 403)
INVALID_REASON = _error("invalid_reason", 400)
INVALID_EMAIL = _error("invalid_email", 400)
TOO_MANY_LEFT_MESSAGES = _error("too_many_left_messages", 409)
HANDOFF_STORE_FULL = _error("handoff_store_full", 503)
HANDOFF_BUSY = _error("handoff_busy", 503)
# -- satisfaction after a hand-off (handoff/satisfaction.py) ------------------------------
INVALID_HANDOFF = _error("invalid_handoff", 400, visitor=False)
SATISFACTION_NOT_OPEN = _error("satisfaction_not_open", 409)
SATISFACTION_ALREADY_GIVEN = _error("satisfaction_already_given", 409)
# -- attachments ---------------------------------------------------------------------------
ATTACHMENT_TOO_LARGE = _error("attachment_too_large", 413)
ATTACHMENTS_BUDGET_EXCEEDED = _error("attachments_budget_exceeded", 413)
ATTACHMENT_IMAGE_TOO_LARGE = _error("attachment_image_too_large", 413)
ATTACHMENT_TYPE = _error("attachment_type", 415)
MISSING_FILE = _error("missing_file", 400)
EMPTY_FILE = _error("empty_file", 400)
INVALID_UPLOAD = _error("invalid_upload", 400)
INVALID_ATTACHMENTS = _error("invalid_attachments", 400)
TOO_MANY_ATTACHMENTS = _error("too_many_attachments", 400)
DUPLICATE_ATTACHMENT = _error("duplicate_attachment", 400)
DESCRIPTION_TOO_LONG = _error("description_too_long", 413)
ATTACHMENT_NOT_FOUND = _error("attachment_not_found", 404)
ATTACHMENT_IN_MESSAGE = _error("attachment_in_message", 409)
ATTACHMENT_STORE_FULL = _error("attachment_store_full", 503)
# -- signed visitor identity (widget_server/identity/; docs/protocol.md, "Known visitors") --
IDENTITY_INVALID = _error("identity_invalid", 401)
IDENTITY_EXPIRED = _error("identity_expired", 401)
IDENTITY_REQUIRED = _error("identity_required", 401)
# The site's keys (IDENTITY_JWKS_URL) could not be fetched: the same token may pass later.
IDENTITY_KEYS_UNAVAILABLE = _error("identity_keys_unavailable", 503)
# CONSENT_TEXT is set and the new conversation's request does not carry the visitor's agreement
# to that text (docs/protocol.md, "Consent").
CONSENT_REQUIRED = _error("consent_required", 403)
# The host page's context (ChatWidget.setContext; docs/protocol.md, "The host page's context")
# is not a flat object of strings, numbers and booleans within its bounds.
INVALID_CONTEXT = _error("invalid_context", 400)
# -- the agent console alone ---------------------------------------------------------------
NOT_SIGNED_IN = _error("not_signed_in", 401, visitor=False)
CSRF_FAILED = _error("csrf_failed", 403, visitor=False)
INVALID_LIMIT = _error("invalid_limit", 400, visitor=False)
INVALID_CURSOR = _error("invalid_cursor", 400, visitor=False)
# -- the owner dashboard (widget_server/dashboard/api.py) -----------------------------------
NOT_ADMIN = _error("not_admin", 403, visitor=False)
INVALID_PERIOD = _error("invalid_period", 400, visitor=False)
# -- limits and the server's own trouble ---------------------------------------------------
RATE_LIMITED = _error("rate_limited", 429)
TOO_MANY_RUNNING = _error("too_many_running", 429)
TOO_MANY_STREAMS = _error("too_many_streams", 429)
SERVER_BUSY = _error("server_busy", 503)
STORE_UNAVAILABLE = _error("store_unavailable", 503)
INTERNAL = _error("internal", 500)

REGISTRY: dict[str, HttpError] = {
    entry.code: entry for entry in list(globals().values()) if isinstance(entry, HttpError)
}

# Any other status Werkzeug or gunicorn answers with (a 417, a 501): one code for all, its
# status the one they chose (errorhandlers.py, server_errors.py).
HTTP_ERROR_CODE = "http_error"


def http_error(status: int, message: str) -> ApiError:
    """A registered code for `status` where there is one (a 404 is `not_found`), else `http_error`."""
    for entry in (BAD_REQUEST, NOT_FOUND, METHOD_NOT_ALLOWED, BODY_TOO_LARGE, UNSUPPORTED_MEDIA_TYPE, INTERNAL):
        if entry.status == status:
            return entry(message)
    return ApiError(status, HTTP_ERROR_CODE, message)
