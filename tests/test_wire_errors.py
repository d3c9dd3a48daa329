"""The HTTP error registry (widget_server/wire/errors.py): one entry per code, one status each,
and what the registry says is what the server sends and documents."""

from __future__ import annotations

from http import HTTPStatus

import pytest

from widget_server.errors import ApiError
from widget_server.openapi import build_document
from widget_server.wire import errors as wire
from widget_server.wire.errors import HTTP_ERROR_CODE, REGISTRY


def test_each_entry_is_registered_under_its_own_code_with_an_error_status():
    entries = [value for value in vars(wire).values() if isinstance(value, wire.HttpError)]
    assert len(entries) == len(REGISTRY) > 70  # no two entries share a code
    for entry in entries:
        assert REGISTRY[entry.code] is entry
        assert 400 <= entry.status <= 599 and HTTPStatus(entry.status).phrase  # a real error status


@pytest.mark.parametrize("code", sorted(REGISTRY))
def test_calling_an_entry_makes_its_error(code):
    entry = REGISTRY[code]
    error = entry("Why it was refused.", retry_after=3, details={"limit": 1})
    assert isinstance(error, ApiError)
    assert (error.status, error.code, error.retry_after) == (entry.status, code, 3)
    assert error.to_json() == {"error": {"code": code, "message": "Why it was refused.", "details": {"limit": 1}}}


def test_retryable_is_a_wait_not_a_change():
    retryable = {code for code, entry in REGISTRY.items() if entry.retryable}
    assert {"rate_limited", "store_unavailable", "server_busy", "action_in_progress", "internal"} <= retryable
    assert not {"request_id_conflict", "text_too_long", "not_found", "handoff_active"} & retryable


def test_statuses_without_a_code_of_their_own_are_http_error():
    assert wire.http_error(404, "gone").code == "not_found"
    assert wire.http_error(405, "no").code == "method_not_allowed"
    other = wire.http_error(417, "Expectation Failed")
    assert (other.status, other.code) == (417, HTTP_ERROR_CODE)


def test_the_openapi_document_lists_every_code_from_the_registry():
    code = build_document("")["components"]["schemas"]["Error"]["properties"]["error"]["properties"]["code"]
    assert code["enum"] == sorted([*REGISTRY, HTTP_ERROR_CODE])
    assert set(code["x-retryable"]) == {c for c, entry in REGISTRY.items() if entry.retryable}
