"""STARTERS and GREETING (docs/configuration.md), an embed's data-starters / data-greeting,
and what the panel's page carries for the conversation's tools (docs/accessibility.md
A30–A36): checked at start, overridden per embed only when valid, never markup, never an
error page."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from urllib.parse import urlencode

import pytest

from widget_server.app import create_app
from widget_server.settings import ConfigError, load_settings
from widget_server.web import ANNOUNCE_COOKIE, LAZY_STRING_GROUPS

from .conftest import TEST_CONFIG

CONFIG = re.compile(r'<script type="application/json" id="chat-config">(.*?)</script>', re.S)


def panel(client, **args: str):
    response = client.get("/panel?" + urlencode({"lang": "en", **args}))
    assert response.status_code == 200
    html = response.get_data(as_text=True)
    match = CONFIG.search(html)
    assert match is not None
    return html, json.loads(match.group(1))


def make_client(**settings):
    return create_app({**TEST_CONFIG, **settings}, environ={}).test_client()


# -- the settings ------------------------------------------------------------------------


def test_starters_and_greeting_are_read_from_json_and_normalised():
    values = load_settings({"STARTERS": '["Opening hours?", "  Track   my order "]', "GREETING": " Hi   there "})
    assert values["STARTERS"] == ("Opening hours?", "Track my order")
    assert values["GREETING"] == "Hi there"
    assert load_settings({})["STARTERS"] == () and load_settings({})["GREETING"] == ""
    # The environment variable, as a site owner writes it.
    values = load_settings(environ={"WIDGET_SERVER_STARTERS": '["A", "B", "C", "D"]'})
    assert values["STARTERS"] == ("A", "B", "C", "D")


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("Opening hours?", "JSON list of strings"),
        ('{"a": 1}', "JSON list of strings"),
        ("[1, 2]", "JSON list of strings"),
        ('["a", "b", "c", "d", "e"]', "at most 4 starters"),
        ('["ok", "   "]', "1 to 100 characters"),
        (json.dumps(["x" * 101]), "1 to 100 characters"),
    ],
)
def test_a_bad_starters_setting_stops_the_server_at_start_naming_it(raw, reason):
    with pytest.raises(ConfigError, match=rf"STARTERS.*{re.escape(reason)}"):
        load_settings({"STARTERS": raw})


def test_a_too_long_greeting_stops_the_server_at_start():
    with pytest.raises(ConfigError, match=r"GREETING.*at most 200"):
        load_settings({"GREETING": "x" * 201})


def test_the_cli_reports_a_bad_starters_setting_in_one_line():
    result = subprocess.run(
        [sys.executable, "-m", "widget_server", "--port", "0"],
        env={"WIDGET_SERVER_STARTERS": "[1]", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "WIDGET_SERVER_STARTERS" in result.stderr


# -- the panel's page --------------------------------------------------------------------


def test_the_panel_shows_the_settings_starters_as_buttons_under_the_greeting():
    client = make_client(STARTERS='["Opening hours?", "Track my order"]', GREETING="Hello!")
    html, config = panel(client)
    assert config["starters"] == ["Opening hours?", "Track my order"]
    assert config["greeting"] == "Hello!"
    assert config["warnings"] == []
    empty = html[html.index("data-chat-empty") : html.index("data-chat-transcript")]
    assert empty.index('class="chat__greeting">Hello!<') < empty.index(">Opening hours?</button>")
    assert '<ul class="chat__starters" aria-label="Suggested questions" data-chat-starters>' in empty
    assert empty.count("<button") == 2


def test_no_starters_no_greeting_no_list():
    html, config = panel(make_client())
    assert config["starters"] == [] and config["greeting"] == ""
    assert "data-chat-starters" not in html and "chat__greeting" not in html


def test_an_embed_overrides_them_when_valid():
    client = make_client(STARTERS='["From the setting"]', GREETING="Setting")
    html, config = panel(client, starters='["From the embed", "Another"]', greeting="Embed")
    assert config["starters"] == ["From the embed", "Another"] and config["greeting"] == "Embed"
    assert "From the setting" not in html
    # An empty list is valid: this embed shows none.
    _, config = panel(client, starters="[]")
    assert config["starters"] == [] and config["greeting"] == "Setting"


@pytest.mark.parametrize(
    "starters", ["not json", '["a", "b", "c", "d", "e"]', json.dumps(["x" * 101]), '"just a string"', "[null]"]
)
def test_an_invalid_embed_value_is_ignored_with_a_warning_never_an_error_page(starters):
    client = make_client(STARTERS='["From the setting"]')
    _, config = panel(client, starters=starters, greeting="g" * 201)
    assert config["starters"] == ["From the setting"]
    assert config["greeting"] == ""
    assert len(config["warnings"]) == 2
    assert config["warnings"][0].startswith("data-starters ignored: ")
    assert config["warnings"][1].startswith("data-greeting ignored: at most 200 characters")


def test_starters_and_greeting_are_text_never_markup():
    attack = '<img src=x onerror="alert(1)">'
    html, config = panel(make_client(), starters=json.dumps([attack]), greeting=attack)
    assert config["starters"] == [attack] and config["greeting"] == attack
    assert "<img" not in html
    assert "&lt;img src=x onerror=&#34;alert(1)&#34;&gt;" in html


def test_the_lazy_strings_stay_out_of_the_config_but_label_the_header():
    html, config = panel(make_client())
    for group in LAZY_STRING_GROUPS:
        assert group not in config["strings"]
    assert 'data-chat-tool="new" aria-haspopup="dialog" aria-label="New conversation"' in html
    assert 'data-chat-tool="settings" aria-expanded="false" aria-label="Options"' in html
    html, _ = panel(make_client(), lang="es")
    assert 'aria-label="Nueva conversación"' in html


def test_every_language_has_the_same_conversation_tools_strings():
    from widget_server.i18n import ui_strings

    strings = ui_strings()
    keys = {lang: set(t["conversationTools"]) for lang, t in strings.items()}
    assert keys["en"] == keys["es"]
    for t in strings.values():
        assert "{date}" in t["conversationTools"]["fileName"]
        assert t["conversationTools"]["fileName"].endswith(".md")


@pytest.mark.parametrize(
    ("cookie", "mode"), [(None, "sentence"), ("complete", "complete"), ("off", "off"), ("loud", "sentence")]
)
def test_the_announcement_preference_cookie_reaches_the_config(cookie, mode):
    client = make_client()
    if cookie is not None:
        client.set_cookie(ANNOUNCE_COOKIE, cookie)
    _, config = panel(client)
    assert config["announceMode"] == mode
