"""The request bodies of widget_server/wire/bodies.py: each refusal's code, message and details
as the API has always answered them (tests/test_api_*.py check them over HTTP), checked here
without a server, and every configured bound given a value by the transport."""

from __future__ import annotations

import dataclasses

import pytest

from widget_server.errors import ApiError
from widget_server.settings import load_settings
from widget_server.transport import body_limits
from widget_server.wire import bodies
from widget_server.wire.bodies import (
    ATTACHMENTS_PER_MESSAGE,
    FEEDBACK_COMMENT_MAX_CHARS,
    MAX_TEXT_CHARS,
    AttachmentRef,
    ClientReport,
    ConfirmAction,
    EditMessage,
    EndHandoff,
    HandoffMessage,
    HandoffRequest,
    LeftMessage,
    NewMessage,
    PutFeedback,
    RegenerateMessage,
)
from widget_server.wire.schema import Limit, parse_body

LIMITS = {MAX_TEXT_CHARS: 20, ATTACHMENTS_PER_MESSAGE: 2, FEEDBACK_COMMENT_MAX_CHARS: 10}


def refusal(body_type: type, value: object) -> tuple[str, str, dict]:
    with pytest.raises(ApiError) as raised:
        parse_body(body_type, value, LIMITS)
    return raised.value.code, raised.value.message, raised.value.details


def test_a_send_is_read_into_its_type():
    body = parse_body(
        NewMessage,
        {
            "request_id": "r1",
            "text": "Hi\r\nthere",
            "attachments": ["f_a", {"attachment_id": "f_b", "description": " A cat. "}],
        },
        LIMITS,
    )
    assert body == NewMessage(
        request_id="r1",
        text="Hi\nthere",  # cleaned (messages.clean_text)
        attachments=(AttachmentRef(attachment_id="f_a"), AttachmentRef(attachment_id="f_b", description="A cat.")),
    )
    assert parse_body(NewMessage, {"request_id": "r1", "text": "x"}, LIMITS).attachments == ()


@pytest.mark.parametrize(
    ("value", "code", "message"),
    [
        ([], "invalid_body", "The request body must be a JSON object."),
        (
            {"text": "x"},
            "missing_request_id",
            "request_id is required: a string the client generates once per message.",
        ),
        ({"request_id": "", "text": "x"}, "missing_request_id", None),
        ({"request_id": 7, "text": "x"}, "missing_request_id", None),
        (
            {"request_id": "-r", "text": "x"},
            "invalid_request_id",
            "request_id must be 1 to 128 characters of letters, digits, '.', '_', '~' or '-', starting with a letter "
            "or digit.",
        ),
        ({"request_id": "r1\n", "text": "x"}, "invalid_request_id", None),
        # The request id is checked before the text: the first failing field answers.
        ({"request_id": "-r"}, "invalid_request_id", None),
        ({"request_id": "r"}, "missing_text", "text is required: the message to answer, as a string."),
        ({"request_id": "r", "text": None}, "missing_text", None),
        ({"request_id": "r", "text": " \n\t"}, "empty_text", "text is empty: type a message before sending."),
        (
            {"request_id": "r", "text": "x" * 21},
            "text_too_long",
            "text is 21 characters; the limit is 20. Shorten the message and send it again.",
        ),
        (
            {"request_id": "r", "text": "x", "extra": 1, "another": 2},
            "unknown_field",
            "Unknown field(s): another, extra. Send only request_id and text and attachments and context.",
        ),
        (
            {"request_id": "r", "text": "x", "attachments": "f_a"},
            "invalid_attachments",
            'attachments must be a list, each item an attachment id ("f_…") or {"attachment_id": "f_…", '
            '"description": "…"}.',
        ),
        (
            {"request_id": "r", "text": "x", "attachments": [7]},
            "invalid_attachments",
            'attachments: each item an attachment id ("f_…") or {"attachment_id": "f_…", "description": "…"}.',
        ),
        ({"request_id": "r", "text": "x", "attachments": [{"description": "d"}]}, "invalid_attachments", None),
        (
            {"request_id": "r", "text": "x", "attachments": [{"attachment_id": "f_a", "x": 1}]},
            "invalid_attachments",
            None,
        ),
        (
            {"request_id": "r", "text": "x", "attachments": ["f_a", "f_a"]},
            "duplicate_attachment",
            "The same attachment is listed twice; list each file once.",
        ),
    ],
)
def test_a_send_is_refused_as_it_always_was(value, code, message):
    refused = refusal(NewMessage, value)
    assert refused[0] == code
    if message is not None:
        assert refused[1] == message


def test_too_many_files_says_the_configured_limit():
    body = {"request_id": "r", "text": "x", "attachments": ["f_a", "f_b", "f_c"]}
    assert refusal(NewMessage, body) == (
        "too_many_attachments",
        "A message may carry 2 attachments at most; this one has 3.",
        {"limit": 2},
    )


def test_a_malformed_attachment_id_is_the_404_of_an_unknown_one():
    code, _message, details = refusal(NewMessage, {"request_id": "r", "text": "x", "attachments": ["g_" + "a" * 90]})
    assert (code, details) == ("attachment_not_found", {"attachment_id": "g_" + "a" * 62})


def test_an_items_shape_is_checked_before_its_values():
    # A description of the wrong type is a malformed item, even beside an unknown id.
    item = {"attachment_id": "nope", "description": 5}
    assert refusal(NewMessage, {"request_id": "r", "text": "x", "attachments": [item]})[0] == "invalid_attachments"


def test_a_description_is_cleaned_and_bounded():
    long = {"attachment_id": "f_a", "description": "d" * 1001}
    assert refusal(NewMessage, {"request_id": "r", "text": "x", "attachments": [long]}) == (
        "description_too_long",
        "An attachment's description is 1001 characters; the limit is 1000.",
        {"limit": 1000},
    )
    spaced = {"attachment_id": "f_a", "description": "  " + "d" * 1000 + "  "}
    parsed = parse_body(NewMessage, {"request_id": "r", "text": "x", "attachments": [spaced]}, LIMITS)
    assert parsed.attachments[0].description == "d" * 1000


def test_with_files_the_words_are_optional():
    body = parse_body(HandoffMessage, {"request_id": "r", "text": "  ", "attachments": ["f_a"]}, LIMITS)
    assert body.text == ""
    assert refusal(HandoffMessage, {"request_id": "r", "text": "  ", "attachments": []})[0] == "empty_text"


def test_regenerate_and_edit():
    assert parse_body(RegenerateMessage, {"request_id": "r"}, LIMITS) == RegenerateMessage(request_id="r")
    assert (
        refusal(RegenerateMessage, {"request_id": "r", "text": "x"})[1]
        == "Unknown field(s): text. Send only request_id."
    )
    assert refusal(EditMessage, {"request_id": "r", "text": ""})[0] == "empty_text"


@pytest.mark.parametrize(
    ("value", "parsed"),
    [({}, (0, 0)), ({"duplicates": 3}, (3, 0)), ({"duplicates": 1, "dropped": 1_000_000}, (1, 1_000_000))],
)
def test_a_client_report_counts(value, parsed):
    report = parse_body(ClientReport, value, LIMITS)
    assert (report.duplicates, report.dropped) == parsed


@pytest.mark.parametrize("value", [-1, 1_000_001, True, 1.5, "1", None])
def test_a_client_report_is_whole_numbers_in_range(value):
    assert refusal(ClientReport, {"dropped": value})[:2] == (
        "invalid_report",
        "dropped must be a whole number from 0 to 1000000.",
    )


def test_feedback():
    assert parse_body(PutFeedback, {"rating": "up"}, LIMITS) == PutFeedback(rating="up", comment="")
    assert parse_body(PutFeedback, {"rating": "down", "comment": None}, LIMITS).comment == ""
    assert parse_body(PutFeedback, {"rating": "down", "comment": "a\x07b"}, LIMITS).comment == "ab"
    for rating in (None, "UP", 1):
        assert refusal(PutFeedback, {"rating": rating})[:2] == (
            "invalid_rating",
            'rating is required: "up" (helpful) or "down" (not helpful).',
        )
    assert refusal(PutFeedback, {"comment": "x"})[0] == "invalid_rating"
    assert refusal(PutFeedback, {"rating": "up", "comment": 3})[:2] == (
        "invalid_comment",
        "comment must be a string (or left out).",
    )
    assert refusal(PutFeedback, {"rating": "up", "comment": "c" * 11})[:2] == (
        "comment_too_long",
        "comment is 11 characters; the limit is 10. Shorten it and send it again.",
    )
    assert refusal(PutFeedback, {"rating": "up", "x": 1})[1] == "Unknown field(s): x. Send only rating and comment."


def test_an_action_confirms_key_is_only_typed_here():
    # Its pattern is checked with the Idempotency-Key header (actions/service.py): a key that
    # differs from the header's is a mismatch, not a malformed key.
    assert parse_body(ConfirmAction, {"idempotency_key": "-not a key"}, LIMITS).idempotency_key == "-not a key"
    assert parse_body(ConfirmAction, {}, LIMITS).idempotency_key is None
    assert refusal(ConfirmAction, {"idempotency_key": 5})[:2] == (
        "invalid_idempotency_key",
        "idempotency_key must be a string.",
    )


def test_a_handoff_request_may_say_why():
    assert parse_body(HandoffRequest, {"request_id": "r", "reason": None}, LIMITS).reason is None
    assert parse_body(HandoffRequest, {"request_id": "r", "reason": "r" * 200}, LIMITS).reason == "r" * 200
    for reason in ("r" * 201, 5):
        assert refusal(HandoffRequest, {"request_id": "r", "reason": reason})[:2] == (
            "invalid_reason",
            "reason, if given, is a string of at most 200 characters.",
        )


@pytest.mark.parametrize(("email", "parsed"), [(None, None), ("", None), ("  ada@example.com ", "ada@example.com")])
def test_a_left_message_may_leave_an_address(email, parsed):
    assert parse_body(LeftMessage, {"request_id": "r", "text": "x", "email": email}, LIMITS).email == parsed


@pytest.mark.parametrize(
    "email", ["ada", "ada@example", "a b@example.com", 5, "a@" + "b" * 250 + ".com", " " * 250 + "a@b.co"]
)
def test_a_left_messages_address_must_be_one(email):
    # The address is checked before the text, as the route always did.
    assert refusal(LeftMessage, {"request_id": "r", "text": "", "email": email})[:2] == (
        "invalid_email",
        "email is not an address we can write back to, such as name@example.com.",
    )


def test_every_configured_bound_has_its_settings_value():
    declared = {value for value in vars(bodies).values() if isinstance(value, Limit)}
    assert declared == set(bodies.LIMITS)
    settings = load_settings({}, environ={})
    limits = body_limits(settings)
    assert set(limits) == declared
    assert limits[MAX_TEXT_CHARS] == settings.chat.max_text_chars
    assert limits[ATTACHMENTS_PER_MESSAGE] == settings.attachments.per_message
    assert limits[FEEDBACK_COMMENT_MAX_CHARS] == settings.chat.feedback_comment_max_chars


def test_bodies_are_frozen():
    body = parse_body(RegenerateMessage, {"request_id": "r"}, LIMITS)
    with pytest.raises(dataclasses.FrozenInstanceError):
        body.request_id = "other"  # type: ignore[misc]


def test_an_agent_ends_a_handoff_or_returns_it():
    assert parse_body(EndHandoff, {}, LIMITS).reason == "ended"
    assert parse_body(EndHandoff, {"reason": "returned"}, LIMITS).reason == "returned"
    for reason in (None, "timeout", 1):
        assert refusal(EndHandoff, {"reason": reason})[:2] == (
            "invalid_reason",
            "reason must be 'ended' (end the hand-off) or 'returned' (back to the assistant).",
        )
    assert refusal(EndHandoff, {"why": "x"})[1] == "Unknown field(s): why. Send only reason."
