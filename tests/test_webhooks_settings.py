"""The webhook settings (widget_server/settings/areas.py WebhookSettings; docs/webhooks.md):
what is wrong stops the server at start with a message naming the setting, never its secret;
without WEBHOOK_URLS nothing is queued and no sender runs."""

from __future__ import annotations

import re

import pytest

from widget_server import create_app
from widget_server.services import SERVICES_KEY
from widget_server.settings import ConfigError, load_settings
from widget_server.webhooks.publisher import NO_WEBHOOKS
from widget_server.wire.webhooks import WEBHOOK_EVENTS

from .webhook_support import SECRET

URL = "https://hooks.example.com/chat"


def settings(**values):
    return load_settings(values, environ={})


@pytest.mark.parametrize(
    ("urls", "message"),
    [
        ("ftp://hooks.example.com/x", "not an http:// or https:// URL"),
        ("hooks.example.com/chat", "not an http:// or https:// URL"),
        ("https:///chat", "not an http:// or https:// URL"),
        ("https://user:pass@hooks.example.com/chat", "no credentials"),
        ("https://hooks.example.com/chat#part", "no fragment"),
    ],
)
def test_a_bad_url_stops_the_start_naming_the_setting(urls, message):
    with pytest.raises(ConfigError, match=f"WEBHOOK_URLS.*{re.escape(message)}"):
        settings(WEBHOOK_URLS=urls, WEBHOOK_SECRET=SECRET)


def test_urls_are_space_or_comma_separated():
    chosen = settings(
        WEBHOOK_URLS=f"{URL}, http://other.example.com/h  https://third.example.com", WEBHOOK_SECRET=SECRET
    )
    assert chosen.webhooks.urls == (URL, "http://other.example.com/h", "https://third.example.com")
    assert chosen.webhooks.enabled


def test_the_secret_is_required_with_urls():
    with pytest.raises(ConfigError, match="WEBHOOK_SECRET: required with WEBHOOK_URLS"):
        settings(WEBHOOK_URLS=URL)


def test_a_short_secret_is_refused_without_being_shown():
    short = "s3cr3t-but-short"
    with pytest.raises(ConfigError, match=r"WEBHOOK_SECRET: too short \(16 bytes\)") as raised:
        settings(WEBHOOK_URLS=URL, WEBHOOK_SECRET=short)
    assert short not in str(raised.value)


def test_the_secret_is_never_in_the_settings_repr():
    chosen = settings(WEBHOOK_URLS=URL, WEBHOOK_SECRET=SECRET)
    assert SECRET not in repr(chosen.webhooks) and "<set>" in repr(chosen.webhooks)


def test_events_default_to_all_and_unknown_ones_are_refused():
    assert settings().webhooks.events == WEBHOOK_EVENTS
    assert settings(WEBHOOK_EVENTS="").webhooks.events == WEBHOOK_EVENTS
    assert settings(WEBHOOK_EVENTS="message.failed, handoff.queued").webhooks.events == (
        "message.failed",
        "handoff.queued",
    )
    with pytest.raises(ConfigError, match=r"WEBHOOK_EVENTS.*unknown event 'message\.deleted'"):
        settings(WEBHOOK_EVENTS="message.deleted")


@pytest.mark.parametrize(("name", "value"), [("WEBHOOK_TIMEOUT", 0), ("WEBHOOK_RETRY_FOR", "8d")])
def test_bounds(name, value):
    with pytest.raises(ConfigError, match=name):
        settings(**{name: value})


def test_without_urls_nothing_is_built():
    services = create_app({}, environ={}).extensions[SERVICES_KEY]
    assert services.webhooks is NO_WEBHOOKS and services.webhook_delivery is None
    assert services.chat.webhooks is NO_WEBHOOKS and services.handoff.webhooks is NO_WEBHOOKS


def test_from_the_environment():
    chosen = load_settings(
        environ={
            "WIDGET_SERVER_WEBHOOK_URLS": URL,
            "WIDGET_SERVER_WEBHOOK_SECRET": SECRET,
            "WIDGET_SERVER_WEBHOOK_RETRY_FOR": "30m",
            "WIDGET_SERVER_WEBHOOK_ALLOW_PRIVATE": "1",
        }
    )
    assert chosen.webhooks.retry_for_seconds == 1800 and chosen.webhooks.allow_private
