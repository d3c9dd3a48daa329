"""The wire protocol's identifiers, defined once (docs/protocol.md, "Conventions").

Pure: no Flask, no other module of the package, so every layer may import it (the
transport, the OpenAPI document, the service, the stores, the actions) without an
import cycle (tests/test_structure.py).

The `*_PATTERN` strings are also the OpenAPI document's `pattern`s, where `^` and `$` have
their ECMAScript meaning. In Python, test values with the `is_*` functions below, never
with `re.match`: Python's `$` also matches before a trailing "\\n", so a pattern that ends
in `$` would accept "r1\\n".
"""

from __future__ import annotations

import re
import secrets

# The body of an id: what the server makes (`new_id`) and what a path segment must be.
# No ":" (the event id's separator, and the Redis keys' separator: stores/redis/) and
# nothing JSON escapes (the Redis store splices message ids into JSON as they are).
_ID = "[A-Za-z0-9_-]{1,64}"
# A sequence number: 0, or up to ten digits without a leading zero.
_SEQ = "0|[1-9][0-9]{0,9}"
# The body of a key the client makes: request ids and idempotency keys.
_CLIENT_KEY = "[A-Za-z0-9][A-Za-z0-9._~-]{0,127}"

# Conversation, message and action ids.
ID_PATTERN = f"^{_ID}$"
# `<message_id>:<seq>`: the `id` of every event, and what `Last-Event-ID` names.
EVENT_ID_PATTERN = f"^{_ID}:({_SEQ})$"
# The `Last-Event-ID` header and `?last_event_id=`: an event id, or empty ("from the start").
LAST_EVENT_ID_PATTERN = f"^({_ID}:({_SEQ}))?$"
# A message's `request_id` and an action confirm's `Idempotency-Key` follow one rule.
CLIENT_KEY_PATTERN = f"^{_CLIENT_KEY}$"
REQUEST_ID_PATTERN = CLIENT_KEY_PATTERN
IDEMPOTENCY_KEY_PATTERN = CLIENT_KEY_PATTERN
# CLIENT_KEY_PATTERN in words, for error messages.
CLIENT_KEY_RULE = "1 to 128 characters of letters, digits, '.', '_', '~' or '-', starting with a letter or digit"

_ID_RE = re.compile(_ID)
_CLIENT_KEY_RE = re.compile(_CLIENT_KEY)
_EVENT_ID_RE = re.compile(f"(?P<message_id>{_ID}):(?P<seq>{_SEQ})")

# An id is a prefix and 16 URL-safe random characters (96 bits; 90 for an id made `near` a
# conversation, whose last character is the conversation id's).
CONVERSATION_PREFIX = "c_"
USER_MESSAGE_PREFIX = "u_"
ASSISTANT_MESSAGE_PREFIX = "m_"
ACTION_PREFIX = "a_"
# An attachment's id (attachments/api.py makes them; wire/bodies.py checks a sent one).
ATTACHMENT_PREFIX = "f_"
_ID_RANDOM_BYTES = 12


def new_id(prefix: str, near: str = "") -> str:
    """A fresh id: `prefix` and 96 random bits, URL-safe (so it matches ID_PATTERN). An id made
    for a conversation is `near` its id: its last character is the conversation id's (90 random
    bits left), which keeps its keys in the conversation's Redis Cluster slot (stores/keyspace.py)."""
    random_part = secrets.token_urlsafe(_ID_RANDOM_BYTES)
    return prefix + (random_part[:-1] + near[-1] if near else random_part)


def is_id(value: str) -> bool:
    return _ID_RE.fullmatch(value) is not None


def is_client_key(value: str) -> bool:
    return _CLIENT_KEY_RE.fullmatch(value) is not None


def event_id(message_id: str, seq: int) -> str:
    return f"{message_id}:{seq}"


def parse_event_id(value: str) -> tuple[str, int] | None:
    """`<message_id>:<seq>` → (message_id, seq), or None if malformed."""
    match = _EVENT_ID_RE.fullmatch(value)
    if not match:
        return None
    return match["message_id"], int(match["seq"])
