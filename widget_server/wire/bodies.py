"""Every JSON request body of the API, as a type (docs/protocol.md; wire/schema.py says how a
field's `Rule` is checked and documented). The blueprints read a body with
`transport.parse_json(NewMessage)`; openapi.py describes the same types.

The refusals are the ones the API has always answered with: tests/test_api_*.py check codes
and messages, tests/test_wire_bodies.py each rule here.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import ClassVar

from ..handoff.events import AGENT_END_REASONS
from ..messages import clean_text
from ..protocol import (
    ATTACHMENT_PREFIX,
    CLIENT_KEY_RULE,
    ID_PATTERN,
    IDEMPOTENCY_KEY_PATTERN,
    REQUEST_ID_PATTERN,
    is_id,
)
from .errors import (
    ATTACHMENT_NOT_FOUND,
    COMMENT_TOO_LONG,
    CONSENT_REQUIRED,
    DESCRIPTION_TOO_LONG,
    DUPLICATE_ATTACHMENT,
    EMPTY_TEXT,
    IDENTITY_INVALID,
    INVALID_ATTACHMENTS,
    INVALID_BODY,
    INVALID_COMMENT,
    INVALID_CONTEXT,
    INVALID_EMAIL,
    INVALID_HANDOFF,
    INVALID_IDEMPOTENCY_KEY,
    INVALID_RATING,
    INVALID_REASON,
    INVALID_REPORT,
    INVALID_REQUEST_ID,
    MISSING_REQUEST_ID,
    MISSING_TEXT,
    TEXT_TOO_LONG,
    TOO_MANY_ATTACHMENTS,
)
from .schema import Limit, Refusal, Rule, wired

# -- bounds the settings choose (widget_server/settings/areas.py) --------------------------
MAX_TEXT_CHARS = Limit("MAX_TEXT_CHARS")
# The setting's own bound is 100 (settings/areas.py, AttachmentSettings.per_message).
ATTACHMENTS_PER_MESSAGE = Limit("ATTACHMENTS_PER_MESSAGE", most=100)
FEEDBACK_COMMENT_MAX_CHARS = Limit("FEEDBACK_COMMENT_MAX_CHARS")
LIMITS = (MAX_TEXT_CHARS, ATTACHMENTS_PER_MESSAGE, FEEDBACK_COMMENT_MAX_CHARS)

# -- the fields more than one body has -----------------------------------------------------

# A message's `request_id` (docs/protocol.md, "Conventions"): what makes its POST idempotent.
REQUEST_ID = Rule(
    wrong=Refusal(MISSING_REQUEST_ID, "request_id is required: a string the client generates once per message."),
    absent=("",),
    pattern=REQUEST_ID_PATTERN,
    invalid=Refusal(INVALID_REQUEST_ID, f"request_id must be {CLIENT_KEY_RULE}."),
)

# A message a person typed: cleaned before anything counts or stores it (lone surrogates have
# no UTF-8 form; control characters would act on the terminal an export or a log is read in:
# docs/protocol.md, "Conventions"; messages.clean_text).
TEXT = Rule(
    wrong=Refusal(MISSING_TEXT, "text is required: the message to answer, as a string."),
    clean=True,
    blank=Refusal(EMPTY_TEXT, "text is empty: type a message before sending."),
    max_length=MAX_TEXT_CHARS,
    too_long=Refusal(
        TEXT_TOO_LONG, "text is {length} characters; the limit is {limit}. Shorten the message and send it again."
    ),
)
# With files, the words are optional (docs/protocol.md, "Sending files with a message").
TEXT_WITH_FILES = dataclasses.replace(TEXT, blank_allowed_with="attachments")

# -- files sent with a message (docs/protocol.md, "Sending files with a message") ----------

_ITEM_RULE = 'each item an attachment id ("f_…") or {"attachment_id": "f_…", "description": "…"}'
# Its braces doubled: a Refusal's message is a str.format template.
_ITEM_RULE_TEMPLATE = _ITEM_RULE.replace("{", "{{").replace("}", "}}")
_NO_SUCH_ATTACHMENT = "No such attachment in this conversation: upload the file again, then send."
# A description is a text alternative (WCAG 2.2 SC 1.1.1): a sentence or two, not a document.
DESCRIPTION_MAX_CHARS = 1000


def _attachment_id_shape(value: str) -> bool:
    # A malformed id names no conversation's file: the same 404 as an unknown one
    # (docs/protocol.md, "Conventions").
    return value.startswith(ATTACHMENT_PREFIX) and is_id(value)


@dataclass(frozen=True, kw_only=True)
class AttachmentRef:
    """One file of a message: its id, and the visitor's text alternative for it."""

    SHAPE: ClassVar[Refusal] = Refusal(INVALID_ATTACHMENTS, f"attachments: {_ITEM_RULE_TEMPLATE}.")

    attachment_id: str = wired(
        Rule(
            wrong=SHAPE,
            pattern=ID_PATTERN,
            accepts=_attachment_id_shape,
            invalid=Refusal(ATTACHMENT_NOT_FOUND, _NO_SUCH_ATTACHMENT, details=("attachment_id",)),
        )
    )
    # Lone surrogates become U+FFFD as a message's text does; only whitespace is no description.
    description: str = wired(
        Rule(
            wrong=SHAPE,
            clean=True,
            strip=True,
            max_length=DESCRIPTION_MAX_CHARS,
            too_long=Refusal(
                DESCRIPTION_TOO_LONG,
                "An attachment's description is {length} characters; the limit is {limit}.",
                details=("limit",),
            ),
            description="The visitor's text alternative for the file.",
        ),
        default="",
    )


ATTACHMENTS = Rule(
    wrong=Refusal(INVALID_ATTACHMENTS, f"attachments must be a list, {_ITEM_RULE_TEMPLATE}."),
    max_items=ATTACHMENTS_PER_MESSAGE,
    too_many=Refusal(
        TOO_MANY_ATTACHMENTS,
        "A message may carry {limit} attachments at most; this one has {count}.",
        details=("limit",),
    ),
    shorthand="attachment_id",
    unique="attachment_id",
    duplicate=Refusal(DUPLICATE_ATTACHMENT, "The same attachment is listed twice; list each file once."),
    description="Files of this conversation sent with the text: at most ATTACHMENTS_PER_MESSAGE (default 5), "
    "each once; an id this conversation has no attachment under is 404 `attachment_not_found`.",
)

# -- the bodies ----------------------------------------------------------------------------


# The consent a new conversation carries (docs/protocol.md, "Consent"): the SHA-256 of the
# CONSENT_TEXT the visitor agreed to, in lowercase hex, as the panel's config gives it.
CONSENT_SHA256 = Rule(
    wrong=Refusal(INVALID_BODY, "consent_sha256 must be a string: the SHA-256 (hex) of the consent text agreed to."),
    absent=(None, ""),
    pattern="[0-9a-f]{64}",
    invalid=Refusal(
        CONSENT_REQUIRED,
        "consent_sha256 must be the SHA-256 (64 lowercase hex digits) of the consent text the visitor agreed to.",
    ),
)


# As transport's TOKEN_MAX_CHARS in identity/tokens.py: a JWT of a few claims is far shorter.
IDENTITY_TOKEN_MAX_CHARS = 8192


@dataclass(frozen=True, kw_only=True)
class CreateConversation:
    """POST /api/v1/conversations: optional, and an empty request still creates one. Each field
    is optional and stands alone, so fields for other purposes join this one class."""

    consent_sha256: str | None = wired(
        CONSENT_SHA256,
        default=None,
        description="The SHA-256 (hex) of the CONSENT_TEXT the visitor agreed to before their first message; "
        "required when the server sets CONSENT_TEXT (else 403 `consent_required`), recorded with the "
        "conversation and the time it was created.",
    )
    identity_token: str = wired(
        Rule(
            wrong=Refusal(INVALID_BODY, "identity_token must be a string: the identity token (a JWT) the site signed."),
            max_length=IDENTITY_TOKEN_MAX_CHARS,
            too_long=Refusal(
                IDENTITY_INVALID, "identity_token is {length} characters; an identity token is at most {limit}."
            ),
            description='The visitor\'s identity token: a JWT the site signed (docs/protocol.md, "Known visitors").',
        ),
        default="",
    )


# The host page's context (docs/protocol.md, "The host page's context"): what the site says of
# the page the visitor asks from, given to the backend (Turn.context) and shown to agents. Flat
# and small: a few facts, not a document (the panel checks the same bounds: host-api.js).
CONTEXT_MAX_BYTES = 2048
CONTEXT_MAX_KEYS = 32
CONTEXT_KEY_MAX_CHARS = 64
_CONTEXT_SHAPE = (
    f"a JSON object of at most {CONTEXT_MAX_KEYS} keys (each 1 to {CONTEXT_KEY_MAX_CHARS} characters) "
    "whose values are strings, numbers or booleans"
)


def context_acceptable(context: dict[str, object]) -> bool:
    """Whether a context is flat and within its bounds (its bytes are checked before)."""
    if len(context) > CONTEXT_MAX_KEYS:
        return False
    for key, value in context.items():
        if not 0 < len(key) <= CONTEXT_KEY_MAX_CHARS or clean_text(key) != key:
            return False
        if isinstance(value, str):
            if clean_text(value) != value:
                return False
        elif isinstance(value, float):
            if value != value or value in (float("inf"), float("-inf")):
                return False
        elif not isinstance(value, int | bool):
            return False
    return True


CONTEXT = Rule(
    wrong=Refusal(INVALID_CONTEXT, f"context must be {_CONTEXT_SHAPE}."),
    absent=(None,),
    max_length=CONTEXT_MAX_BYTES,
    too_long=Refusal(
        INVALID_CONTEXT,
        "context is {length} bytes of JSON; the limit is {limit}. Give the page's context in fewer words.",
        details=("limit",),
    ),
    accepts=context_acceptable,
    invalid=Refusal(INVALID_CONTEXT, f"context must be {_CONTEXT_SHAPE}, without control characters."),
    description=f"The host page's context (ChatWidget.setContext): {_CONTEXT_SHAPE}, at most "
    f"{CONTEXT_MAX_BYTES} bytes as compact UTF-8 JSON; anything else is 400 `invalid_context`. Given to the "
    "backend as Turn.context and shown to agents; a retry of the same request_id keeps the first one's.",
)


@dataclass(frozen=True, kw_only=True)
class NewMessage:
    """POST …/messages: a visitor's message to the assistant."""

    request_id: str = wired(REQUEST_ID)
    text: str = wired(
        TEXT_WITH_FILES,
        description="The user's message. Text of only whitespace is refused (400 `empty_text`) unless files "
        "come with it; text longer than the server's MAX_TEXT_CHARS (default 4000) gets 413.",
    )
    attachments: tuple[AttachmentRef, ...] = wired(ATTACHMENTS, default=())
    context: dict[str, str | int | float | bool] | None = wired(CONTEXT, default=None)


@dataclass(frozen=True, kw_only=True)
class RegenerateMessage:
    """POST …/messages/<message_id>/regenerate."""

    request_id: str = wired(REQUEST_ID)


@dataclass(frozen=True, kw_only=True)
class EditMessage:
    """POST …/messages/<message_id>/edit: the last user message's new text."""

    request_id: str = wired(REQUEST_ID)
    text: str = wired(
        TEXT,
        description="The message's new text, under a send's rules: only whitespace is 400 `empty_text`, "
        "longer than MAX_TEXT_CHARS (default 4000) is 413 `text_too_long`.",
    )


# The most one report may claim per field: a bound, so a single request cannot push the
# counters anywhere it likes (docs/protocol.md, "Client reports").
MAX_REPORTED = 1_000_000
_COUNT = Rule(
    wrong=Refusal(INVALID_REPORT, f"{{field}} must be a whole number from 0 to {MAX_REPORTED}."),
    minimum=0,
    maximum=MAX_REPORTED,
)


@dataclass(frozen=True, kw_only=True)
class ClientReport:
    """POST …/messages/<message_id>/report: what the client repaired on the message's streams."""

    duplicates: int = wired(_COUNT, default=0, description="Events received again and ignored.")
    dropped: int = wired(
        _COUNT, default=0, description="Sequence numbers never received (gaps repaired by a snapshot)."
    )


RATINGS = ("up", "down")


@dataclass(frozen=True, kw_only=True)
class PutFeedback:
    """PUT …/messages/<message_id>/feedback: a visitor's rating of an answer."""

    rating: str = wired(
        Rule(wrong=Refusal(INVALID_RATING, 'rating is required: "up" (helpful) or "down" (not helpful).'), enum=RATINGS)
    )
    # Cleaned as a message's text is: `widget-server feedback export` writes it to a terminal.
    comment: str = wired(
        Rule(
            wrong=Refusal(INVALID_COMMENT, "comment must be a string (or left out)."),
            absent=(None,),
            clean=True,
            max_length=FEEDBACK_COMMENT_MAX_CHARS,
            too_long=Refusal(
                COMMENT_TOO_LONG,
                "comment is {length} characters; the limit is {limit}. Shorten it and send it again.",
            ),
            description="Optional; at most FEEDBACK_COMMENT_MAX_CHARS (default 500) code points, "
            "longer is 413 `comment_too_long`.",
        ),
        default="",
    )


@dataclass(frozen=True, kw_only=True)
class ConfirmAction:
    """POST …/actions/<action_id>/confirm's optional body: the key, if not in the header."""

    idempotency_key: str | None = wired(
        Rule(
            wrong=Refusal(INVALID_IDEMPOTENCY_KEY, "idempotency_key must be a string."),
            absent=(None,),
            pattern=IDEMPOTENCY_KEY_PATTERN,
            # Checked with the Idempotency-Key header: the two must agree first
            # (actions/service.py, parse_idempotency_key).
            pattern_checked_by_route=True,
        ),
        default=None,
    )


REASON_MAX_CHARS = 200


@dataclass(frozen=True, kw_only=True)
class HandoffRequest:
    """POST …/handoff: ask for a person."""

    request_id: str = wired(REQUEST_ID)
    reason: str | None = wired(
        Rule(
            wrong=Refusal(INVALID_REASON, f"reason, if given, is a string of at most {REASON_MAX_CHARS} characters."),
            absent=(None,),
            max_length=REASON_MAX_CHARS,
            description="Optional; why (not shown to anyone yet).",
        ),
        default=None,
    )


@dataclass(frozen=True, kw_only=True)
class HandoffMessage:
    """POST …/handoff/messages: a visitor's message to the person."""

    request_id: str = wired(REQUEST_ID)
    text: str = wired(
        TEXT_WITH_FILES, description="Under a send's rules (MAX_TEXT_CHARS); may be empty when files come with it."
    )
    attachments: tuple[AttachmentRef, ...] = wired(ATTACHMENTS, default=())


# An address a person can write back to: one @, no spaces or controls, a dotted domain.
# Deliverability is the mail server's to judge; this only refuses what cannot be one.
_EMAIL = re.compile(r"[^@\s\x00-\x1f\x7f]{1,64}@[^@\s\x00-\x1f\x7f.]+(\.[^@\s\x00-\x1f\x7f.]+)+")
EMAIL_MAX_CHARS = 254  # RFC 5321 §4.5.3.1.3, a path's limit less its brackets


def _email_shape(value: str) -> bool:
    # The length as sent, the address without the spaces around it.
    return len(value) <= EMAIL_MAX_CHARS and _EMAIL.fullmatch(value.strip()) is not None


@dataclass(frozen=True, kw_only=True)
class LeftMessage:
    """POST …/handoff/left-messages: a message for the site's team. The address is checked
    before the text (the order the route has always refused them in)."""

    request_id: str = wired(REQUEST_ID)
    email: str | None = wired(
        Rule(
            wrong=Refusal(INVALID_EMAIL, "email is not an address we can write back to, such as name@example.com."),
            absent=(None, ""),
            accepts=_email_shape,
            strip=True,
            max_length=EMAIL_MAX_CHARS,
            description="Optional: where a reply may be sent; not an address is 400 `invalid_email`.",
        ),
        default=None,
    )
    text: str = wired(TEXT, description="Under a send's rules (MAX_TEXT_CHARS).")


# A satisfaction answer's comment (handoff/satisfaction.py): a few sentences at most; fixed, so
# a conversation's record stays bounded (SATISFACTION_KEPT answers of at most this).
SATISFACTION_COMMENT_MAX_CHARS = 1000


@dataclass(frozen=True, kw_only=True)
class GiveSatisfaction:
    """POST …/satisfaction: the visitor's answer to "How was your conversation?" after a person
    ended the hand-off (docs/protocol.md, "Satisfaction")."""

    handoff: int = wired(
        Rule(
            wrong=Refusal(
                INVALID_HANDOFF, "handoff is required: the seq of the handoff.ended event of the hand-off to rate."
            ),
            minimum=1,
            description="The hand-off rated: the `seq` of its `handoff.ended` event.",
        )
    )
    rating: int = wired(
        Rule(
            wrong=Refusal(INVALID_RATING, "rating is required: a whole number from 1 (very poor) to 5 (very good)."),
            minimum=1,
            maximum=5,
            description="1 very poor, 2 poor, 3 fair, 4 good, 5 very good.",
        )
    )
    # Cleaned as a message's text is: it is shown to agents and exported to a terminal.
    comment: str = wired(
        Rule(
            wrong=Refusal(INVALID_COMMENT, "comment must be a string (or left out)."),
            absent=(None,),
            clean=True,
            max_length=SATISFACTION_COMMENT_MAX_CHARS,
            too_long=Refusal(
                COMMENT_TOO_LONG,
                "comment is {length} characters; the limit is {limit}. Shorten it and send it again.",
            ),
            description=f"Optional; at most {SATISFACTION_COMMENT_MAX_CHARS:,} code points, longer is 413 "
            "`comment_too_long`.",
        ),
        default="",
    )


@dataclass(frozen=True, kw_only=True)
class AgentMessage:
    """The agent console's message to a visitor, and its reply to a left message
    (agents/api.py; not part of the public document)."""

    request_id: str = wired(REQUEST_ID)
    text: str = wired(TEXT)


@dataclass(frozen=True, kw_only=True)
class EndHandoff:
    """The agent console's end of a hand-off (agents/api.py; its body is optional): over, or
    back to the assistant."""

    reason: str = wired(
        Rule(
            wrong=Refusal(
                INVALID_REASON, "reason must be 'ended' (end the hand-off) or 'returned' (back to the assistant)."
            ),
            enum=AGENT_END_REASONS,
        ),
        default="ended",
    )
