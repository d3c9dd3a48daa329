"""Every error is JSON with a stable code; a user never sees a traceback."""

from __future__ import annotations

import logging

from flask import Flask, Response, current_app, jsonify, request
from werkzeug.exceptions import HTTPException

from .errors import ApiError
from .services import SERVICES_KEY
from .stores.base import StoreUnavailable
from .wire.errors import INTERNAL, STORE_UNAVAILABLE, http_error

log = logging.getLogger(__name__)


def handle_api_error(error: ApiError) -> Response:
    """The error's JSON (`{"error": {"code", "message", "details"?}}`), never cached, with
    `Retry-After` when it says when to try again (docs/protocol.md, "HTTP errors")."""
    response = jsonify(error.to_json())
    response.status_code = error.status
    response.headers["Cache-Control"] = "no-store"
    if error.retry_after is not None:
        response.headers["Retry-After"] = str(error.retry_after)
    return response


def handle_http_exception(error: HTTPException) -> Response:
    status = error.code or 500
    if status == 413:
        limit = request.max_content_length
        message = f"The request body is larger than the limit of {limit} bytes."
    elif status == 404:
        message = "Nothing here. The API lives under /api/v1; see /openapi.json."
    elif status == 405:
        message = f"{request.method} is not allowed here; see /openapi.json for the methods each path takes."
    else:
        message = error.description or error.name
    response = handle_api_error(http_error(status, message))
    valid_methods = getattr(error, "valid_methods", None)
    if status == 405 and valid_methods:
        response.headers["Allow"] = ", ".join(valid_methods)
    return response


# Redis restarts in about a second; a client should not hammer it meanwhile.
STORE_RETRY_AFTER_SECONDS = 2


def handle_store_unavailable(error: StoreUnavailable) -> Response:
    log.warning("%s %s: the store is unavailable: %s", request.method, request.path, error)
    current_app.extensions[SERVICES_KEY].metrics.store_unavailable()
    return handle_api_error(
        STORE_UNAVAILABLE(
            "The chat service cannot reach its storage right now. Try again in a moment.",
            retry_after=STORE_RETRY_AFTER_SECONDS,
        )
    )


def handle_unexpected(error: Exception) -> Response:
    log.exception("unhandled error on %s %s", request.method, request.path)
    return handle_api_error(INTERNAL("Something went wrong on our side. Nothing was saved; try again."))


def init_app(app: Flask) -> None:
    app.register_error_handler(ApiError, handle_api_error)
    app.register_error_handler(StoreUnavailable, handle_store_unavailable)
    app.register_error_handler(HTTPException, handle_http_exception)
    app.register_error_handler(Exception, handle_unexpected)
