"""widget_server/wire/schema.py: one declaration, checked by `parse_body` and described by
`json_schema` (JSON Schema 2020-12, as the OpenAPI document uses it), and the two agree."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import jsonschema_rs
import pytest

from widget_server.errors import ApiError
from widget_server.wire.bodies import (
    ATTACHMENTS_PER_MESSAGE,
    FEEDBACK_COMMENT_MAX_CHARS,
    MAX_TEXT_CHARS,
    AttachmentRef,
    ClientReport,
    HandoffRequest,
    LeftMessage,
    NewMessage,
    PutFeedback,
)
from widget_server.wire.errors import INVALID_BODY
from widget_server.wire.schema import Limit, Refusal, Rule, json_schema, parse_body, refusals_of, wired

LIMITS = {MAX_TEXT_CHARS: 4000, ATTACHMENTS_PER_MESSAGE: 5, FEEDBACK_COMMENT_MAX_CHARS: 500}

# Bodies the server takes: the document must take them too.
ACCEPTED = [
    (NewMessage, {"request_id": "r1", "text": "hi"}),
    (NewMessage, {"request_id": "r1", "text": "", "attachments": ["f_a", {"attachment_id": "f_b"}]}),
    (NewMessage, {"request_id": "r1", "text": "x", "attachments": [{"attachment_id": "f_b", "description": "d"}]}),
    (ClientReport, {}),
    (ClientReport, {"duplicates": 0, "dropped": 1_000_000}),
    (PutFeedback, {"rating": "down", "comment": None}),
    (HandoffRequest, {"request_id": "r", "reason": None}),
    (LeftMessage, {"request_id": "r", "text": "x", "email": None}),
]
# Bodies the document refuses: the server refuses them too.
REFUSED = [
    (NewMessage, {"request_id": "r1"}),
    (NewMessage, {"request_id": "r1", "text": "x", "other": 1}),
    (NewMessage, {"request_id": "-r", "text": "x"}),
    (NewMessage, {"request_id": "r1", "text": 5}),
    (NewMessage, {"request_id": "r1", "text": "x", "attachments": [{"attachment_id": "f_a", "x": 1}]}),
    (
        NewMessage,
        {"request_id": "r1", "text": "x", "attachments": [{"attachment_id": "f_a", "description": "d" * 1001}]},
    ),
    (ClientReport, {"dropped": -1}),
    (ClientReport, {"dropped": 1_000_001}),
    (ClientReport, {"dropped": "1"}),
    (PutFeedback, {"rating": "sideways"}),
    (HandoffRequest, {"request_id": "r", "reason": "r" * 201}),
    (LeftMessage, {"request_id": "r", "text": "x", "email": "e" * 255}),
]


@pytest.mark.parametrize(("body_type", "value"), ACCEPTED)
def test_what_the_server_takes_the_document_takes(body_type, value):
    parse_body(body_type, value, LIMITS)
    assert jsonschema_rs.Draft202012Validator(json_schema(body_type)).is_valid(value)


@pytest.mark.parametrize(("body_type", "value"), REFUSED)
def test_what_the_document_refuses_the_server_refuses(body_type, value):
    assert not jsonschema_rs.Draft202012Validator(json_schema(body_type)).is_valid(value)
    with pytest.raises(ApiError):
        parse_body(body_type, value, LIMITS)


def test_a_body_is_an_object_with_only_its_fields():
    schema = json_schema(NewMessage)
    assert schema["type"] == "object" and schema["additionalProperties"] is False
    assert schema["required"] == ["request_id", "text"]  # the fields without a default
    assert list(schema["properties"]) == ["request_id", "text", "attachments", "context"]


def test_an_object_field_is_bounded_by_its_json_bytes_then_its_own_rules():
    # The host page's context (wire/bodies.py CONTEXT): UTF-8 bytes, not characters, count.
    body = {"request_id": "r", "text": "x", "context": {"page": "é" * 1000}}
    assert parse_body(NewMessage, body, LIMITS).context == {"page": "é" * 1000}
    body["context"] = {"page": "é" * 1020}
    with pytest.raises(ApiError) as raised:
        parse_body(NewMessage, body, LIMITS)
    assert (raised.value.status, raised.value.code) == (400, "invalid_context")
    assert raised.value.details == {"limit": 2048}
    for wrong in ({"nested": {"a": 1}}, {"list": [1]}, {"": "x"}, {"x": None}, ["page"], "page"):
        with pytest.raises(ApiError) as raised:
            parse_body(NewMessage, {"request_id": "r", "text": "x", "context": wrong}, LIMITS)
        assert raised.value.code == "invalid_context", wrong
    assert json_schema(NewMessage)["properties"]["context"]["type"] == ["object", "null"]


def test_an_array_of_items_with_a_shorthand_is_one_of_the_two():
    attachments = json_schema(NewMessage, ref=lambda item: f"#/components/schemas/{item.__name__}")["properties"][
        "attachments"
    ]
    assert attachments["maxItems"] == 100  # the setting's own bound, not its configured value
    assert attachments["items"]["oneOf"][1] == {"$ref": "#/components/schemas/AttachmentRef"}
    assert attachments["items"]["oneOf"][0]["type"] == "string"


def test_null_is_documented_where_it_counts_as_absent():
    assert json_schema(LeftMessage)["properties"]["email"]["type"] == ["string", "null"]
    assert json_schema(NewMessage)["properties"]["text"]["type"] == "string"


def test_a_configured_bound_is_checked_with_the_value_given():
    body = {"request_id": "r", "text": "x" * 11}
    parse_body(NewMessage, body, {**LIMITS, MAX_TEXT_CHARS: 11})
    with pytest.raises(ApiError) as raised:
        parse_body(NewMessage, body, {**LIMITS, MAX_TEXT_CHARS: 10})
    assert raised.value.code == "text_too_long"
    assert "maxLength" not in json_schema(NewMessage)["properties"]["text"]


def test_an_item_type_names_its_own_refusal():
    assert AttachmentRef.SHAPE.error.code == "invalid_attachments"


def test_a_field_without_a_rule_is_a_mistake_found_at_once():
    @dataclass(frozen=True)
    class Untyped:
        name: str = "x"

    with pytest.raises(TypeError, match="no wire Rule"):
        parse_body(Untyped, {}, {})


def test_a_fields_default_is_immutable():
    rule = Rule(wrong=Refusal(INVALID_BODY, "no"))
    with pytest.raises(TypeError):
        wired(rule, default=[])
    field = wired(rule, default=(), description="Said here.")
    assert field.metadata["widget_server.wire"].description == "Said here."
    assert field.default == ()
    assert wired(rule).default is dataclasses.MISSING


def test_a_limit_documents_only_its_bound():
    @dataclass(frozen=True, kw_only=True)
    class Bounded:
        name: str = wired(Rule(wrong=Refusal(INVALID_BODY, "no"), max_length=Limit("SOME_SETTING", most=9)))

    assert json_schema(Bounded)["properties"]["name"] == {"type": "string", "maxLength": 9}
    with pytest.raises(ApiError):
        parse_body(Bounded, {"name": "abc"}, {Limit("SOME_SETTING", most=9): 2})


def test_a_bodys_refusals_are_every_code_its_rules_name():
    # What the document lists for a route that reads the body, items included.
    assert [error.code for error in refusals_of(NewMessage)] == [
        "missing_request_id",
        "invalid_request_id",
        "missing_text",
        "empty_text",
        "text_too_long",
        "invalid_attachments",
        "too_many_attachments",
        "duplicate_attachment",
        "attachment_not_found",
        "description_too_long",
        "invalid_context",
    ]
    assert [error.code for error in refusals_of(ClientReport)] == ["invalid_report"]


def test_a_responses_constant_and_fewest_items_are_documented():
    from widget_server.wire.events import CancelledData, CompletedData

    assert json_schema(CancelledData)["properties"]["incomplete"] == {"const": True}
    assert json_schema(CompletedData)["properties"]["actions"]["minItems"] == 1
