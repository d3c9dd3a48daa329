"""Every error is JSON with a stable code; a user never sees a traceback."""

from __future__ import annotations

import logging
from typing import Any

from flask import Flask, Response, current_app, jsonify, request
from werkzeug.exceptions import HTTPException

from .errors import ApiError
from .stores.base import StoreUnavailable

log = logging.getLogger(__name__)

_HTTP_CODES = {
    400: "bad_request",
    404: "not_found",
    405: "method_not_allowed",
    413: "body_too_large",
    415: "unsupported_media_type",
}


def _json_error(
    status: int, code: str, message: str, retry_after: int | None = None, details: dict[str, Any] | None = None
) -> Response:
    error: dict[str, Any] = {"code": code, "message": message}
    if details:
        error["details"] = details
    response = jsonify({"error": error})
    response.status_code = status
    response.headers["Cache-Control"] = "no-store"
    if retry_after is not None:
        response.headers["Retry-After"] = str(retry_after)
    return response


def handle_api_error(error: ApiError) -> Response:
    return _json_error(error.status, error.code, error.message, error.retry_after, error.details)


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
    response = _json_error(status, _HTTP_CODES.get(status, "http_error"), message)
    valid_methods = getattr(error, "valid_methods", None)
    if status == 405 and valid_methods:
        response.headers["Allow"] = ", ".join(valid_methods)
    return response


# Redis restarts in about a second; a client should not hammer it meanwhile.
STORE_RETRY_AFTER_SECONDS = 2


def handle_store_unavailable(error: StoreUnavailable) -> Response:
    log.warning("%s %s: the store is unavailable: %s", request.method, request.path, error)
    metrics = current_app.extensions.get("widget_server.metrics")
    if metrics is not None:
        metrics.store_unavailable()
    return _json_error(
        503,
        "store_unavailable",
        "The chat service cannot reach its storage right now. Try again in a moment.",
        STORE_RETRY_AFTER_SECONDS,
    )


def handle_unexpected(error: Exception) -> Response:
    log.exception("unhandled error on %s %s", request.method, request.path)
    return _json_error(500, "internal", "Something went wrong on our side. Nothing was saved; try again.")


def init_app(app: Flask) -> None:
    app.register_error_handler(ApiError, handle_api_error)
    app.register_error_handler(StoreUnavailable, handle_store_unavailable)
    app.register_error_handler(HTTPException, handle_http_exception)
    app.register_error_handler(Exception, handle_unexpected)
