"""docs/webhooks.md against the code: every event type of wire/webhooks.py has its section with
a table of exactly its data's fields, the documented signature check verifies what
webhooks/signing.py signs (and refuses what it should), and every outcome counted in /metrics
is named."""

from __future__ import annotations

import hmac
import re
import time
from dataclasses import fields

import pytest

from widget_server.webhooks.delivery import OUTCOMES
from widget_server.webhooks.signing import signature
from widget_server.wire.webhooks import WEBHOOK_DATA, WEBHOOK_EVENTS

from .webhook_support import DOCS, SECRET, docs_verifier

TEXT = DOCS.read_text(encoding="utf-8")


def section(event: str) -> str:
    found = re.search(rf"^### {re.escape(event)}\n(.*?)(?=^#)", TEXT, re.DOTALL | re.MULTILINE)
    assert found, f"docs/webhooks.md has no section for {event}"
    return found.group(1)


@pytest.mark.parametrize("event", WEBHOOK_EVENTS)
def test_each_event_lists_exactly_its_data_fields(event):
    documented = re.findall(r"^\| `(\w+)` \|", section(event), re.MULTILINE)
    assert documented == [field.name for field in fields(WEBHOOK_DATA[event])]


def test_the_events_are_documented_in_the_declared_order():
    assert re.findall(r"^### ([a-z]+\.[a-z]+)$", TEXT, re.MULTILINE) == list(WEBHOOK_EVENTS)


def test_the_documented_snippet_verifies_what_the_server_signs():
    verify = docs_verifier()
    body = b'{"id":"evt_1","type":"message.completed"}'
    now = int(time.time())
    assert verify(SECRET, signature(SECRET, body, now), body)
    assert not verify(SECRET, signature(SECRET, body, now), body.replace(b"evt_1", b"evt_2"))
    assert not verify(SECRET, signature("x" * 40, body, now), body)
    assert not verify(SECRET, signature(SECRET, body, now - 3600), body)  # a replay, an hour late
    assert not verify(SECRET, "v1=00", body) and not verify(SECRET, "", body)


def test_the_signature_is_hmac_sha256_over_the_timestamp_and_the_body():
    # A known answer, computed apart from the code: t=1 over b"{}" with the key "k" * 32.
    assert signature("k" * 32, b"{}", 1) == ("t=1,v1=" + hmac.new(b"k" * 32, b"1.{}", "sha256").hexdigest())


@pytest.mark.parametrize("outcome", OUTCOMES)
def test_every_outcome_is_documented(outcome):
    assert f"`{outcome}`" in TEXT.split("## Monitoring", 1)[1]
