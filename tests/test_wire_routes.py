"""The route table (widget_server/wire/routes.py) the OpenAPI document's paths are built from:
it names exactly the routes Flask serves under /api/, and each error it lists is a registered
code documented under its own status."""

from __future__ import annotations

import re

from widget_server.openapi import build_document
from widget_server.wire.errors import REGISTRY
from widget_server.wire.routes import ROUTES

IGNORED_METHODS = {"HEAD", "OPTIONS"}


def served_operations(app) -> set[tuple[str, str]]:
    found = set()
    for rule in app.url_map.iter_rules():
        if rule.rule.startswith("/api/"):
            path = re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", rule.rule)
            found |= {(method.lower(), path) for method in rule.methods - IGNORED_METHODS}
    return found


def test_every_route_flask_serves_under_api_is_in_the_table_and_the_document(app):
    served = served_operations(app)
    assert served  # the app has its API
    assert {(route.method, route.path) for route in ROUTES} == served
    documented = {(method, path) for path, operations in build_document()["paths"].items() for method in operations}
    assert served <= documented


def test_each_operation_is_declared_once():
    keys = [(route.method, route.path) for route in ROUTES]
    assert len(keys) == len(set(keys))
    assert len({route.operation_id for route in ROUTES}) == len(ROUTES)


def test_every_code_a_route_lists_is_registered_under_the_status_it_is_documented_with():
    paths = build_document()["paths"]
    for route in ROUTES:
        responses = paths[route.path][route.method]["responses"]
        for error in route.errors():
            assert REGISTRY[error.code] is error
            assert f"`{error.code}`" in responses[str(error.status)]["description"], (route.operation_id, error.code)


def test_a_routes_body_brings_its_own_refusals():
    send = next(route for route in ROUTES if route.operation_id == "postMessage")
    codes = {error.code for error in send.errors()}
    # Read from wire/bodies.py's NewMessage, not listed by the route.
    assert {"missing_request_id", "text_too_long", "too_many_attachments", "description_too_long"} <= codes
    assert {"invalid_json", "unknown_field", "unsupported_media_type", "body_too_large"} <= codes


def test_a_retryable_code_documents_retry_after():
    paths = build_document()["paths"]
    for route in ROUTES:
        responses = paths[route.path][route.method]["responses"]
        for error in route.errors():
            if error.retryable:
                assert "Retry-After" in responses[str(error.status)]["headers"], (route.operation_id, error.code)
