"""The protocol's ids and keys, defined once in widget_server/protocol.py and used by the API,
the OpenAPI document, the service and the actions alike (docs/protocol.md, "Conventions")."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from widget_server import protocol
from widget_server.openapi import build_document

PROTOCOL_MD = (Path(__file__).resolve().parent.parent / "docs" / "protocol.md").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "prefix",
    [
        protocol.CONVERSATION_PREFIX,
        protocol.USER_MESSAGE_PREFIX,
        protocol.ASSISTANT_MESSAGE_PREFIX,
        protocol.ACTION_PREFIX,
    ],
)
def test_new_ids_are_ids(prefix):
    ids = {protocol.new_id(prefix) for _ in range(200)}
    assert len(ids) == 200
    for value in ids:
        assert value.startswith(prefix) and len(value) == len(prefix) + 16
        assert protocol.is_id(value)
        assert ":" not in value  # the event id's separator


@pytest.mark.parametrize("value", ["c_x", "A", "a" * 64, "m_-_"])
def test_is_id_accepts(value):
    assert protocol.is_id(value)


@pytest.mark.parametrize("value", ["", "a" * 65, "c_x\n", "c x", "c:x", "c.x", "c_\u00e9", "c_\u0661"])
def test_is_id_rejects(value):
    assert not protocol.is_id(value)


@pytest.mark.parametrize("value", ["r1", "R.1_~-", "a" * 128])
def test_is_client_key_accepts(value):
    assert protocol.is_client_key(value)


@pytest.mark.parametrize("value", ["", "-r", ".r", "a" * 129, "r1\n", "r 1", "r/1"])
def test_is_client_key_rejects(value):
    assert not protocol.is_client_key(value)


def test_request_ids_and_idempotency_keys_follow_one_rule():
    assert protocol.REQUEST_ID_PATTERN == protocol.IDEMPOTENCY_KEY_PATTERN == protocol.CLIENT_KEY_PATTERN


@pytest.mark.parametrize(
    ("value", "parsed"), [("m_x:0", ("m_x", 0)), ("m_x:12", ("m_x", 12)), ("m_x:012", None), ("m_x:1\n", None)]
)
def test_the_event_id_patterns_agree_with_the_parser(value, parsed):
    assert protocol.parse_event_id(value) == parsed
    # The OpenAPI patterns, read as ECMAScript reads `$` (the end, never before a newline).
    assert (re.fullmatch(protocol.EVENT_ID_PATTERN.strip("^$"), value) is not None) == (parsed is not None)
    assert (re.fullmatch(protocol.LAST_EVENT_ID_PATTERN.strip("^$"), value) is not None) == (parsed is not None)
    assert re.fullmatch(protocol.LAST_EVENT_ID_PATTERN.strip("^$"), "")


def test_the_openapi_document_uses_the_protocol_patterns():
    patterns = set(re.findall(r'"pattern": ("(?:[^"\\]|\\.)*")', json.dumps(build_document())))
    patterns = {json.loads(pattern) for pattern in patterns}
    assert {
        protocol.ID_PATTERN,
        protocol.EVENT_ID_PATTERN,
        protocol.LAST_EVENT_ID_PATTERN,
        protocol.CLIENT_KEY_PATTERN,
    } <= patterns


@pytest.mark.parametrize("pattern", [protocol.ID_PATTERN, protocol.CLIENT_KEY_PATTERN])
def test_docs_quote_the_patterns(pattern):
    assert f"`{pattern}`" in PROTOCOL_MD


def test_the_protocol_module_loads_no_transport():
    """Every layer may import it: it loads neither Flask nor any other module of the package."""
    probe = (
        "import sys, widget_server.protocol\n"
        "print(' '.join(sorted(n for n in sys.modules if n.startswith(('widget_server', 'flask', 'werkzeug')))))\n"
    )
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.split()
    assert loaded == ["widget_server", "widget_server.protocol"]
