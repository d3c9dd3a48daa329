"""The agent console's languages (docs/agents.md, "Languages"): one data file per language,
static/agent/i18n/<lang>.json, used by the server-rendered pages and by console.js alike;
the page's language is the agent's choice (`?lang=`, kept in a cookie), else the browser's
Accept-Language, else English. Through the real app and its real sign-in form."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

from widget_server import create_app
from widget_server.agents.api import LANGUAGE_COOKIE

from .agent_support import AGENTS, set_cookies, sign_in, sign_in_form, write_agents
from .conftest import TEST_CONFIG
from .test_i18n_languages import PLURAL_CATEGORIES as CLDR_PLURALS

REPO = Path(__file__).resolve().parent.parent
FOLDER = REPO / "static" / "agent" / "i18n"
LANGUAGES = {path.stem: json.loads(path.read_text(encoding="utf-8")) for path in sorted(FOLDER.glob("*.json"))}
EN = LANGUAGES["en"]
# CLDR plural categories (static/widget/i18n.js plural()): an object of only these is one
# string in several forms, and each language has its own set of them.
PLURAL_CATEGORIES = {"zero", "one", "two", "few", "many", "other"}
PLACEHOLDER = re.compile(r"\{(\w+)\}")


def is_plural(value: object) -> bool:
    return isinstance(value, dict) and bool(value) and set(value) <= PLURAL_CATEGORIES


def leaves(strings: dict, prefix: str = "") -> dict[str, object]:
    """Every string of a language file by its path ("errors.csrf_failed"); a plural object is
    one entry."""
    found: dict[str, object] = {}
    for key, value in strings.items():
        if isinstance(value, dict) and not is_plural(value):
            found.update(leaves(value, f"{prefix}{key}."))
        else:
            found[prefix + key] = value
    return found


def placeholders(value: object) -> set[str]:
    texts = value.values() if isinstance(value, dict) else [value]
    return {name for text in texts for name in PLACEHOLDER.findall(str(text))}


def test_the_console_speaks_the_widgets_languages():
    # The panel's seven languages (tests/test_i18n_languages.py), the console too
    # (docs/accessibility.md, "The console in every language").
    assert {"en", "es", "fr", "de", "pt", "ar", "he"} <= set(LANGUAGES)
    assert set(LANGUAGES) <= set(CLDR_PLURALS), "a new language needs its CLDR plural categories listed"


@pytest.mark.parametrize("lang", sorted(LANGUAGES))
def test_plurals_have_the_forms_the_language_needs(lang):
    """Each plural object has only categories Intl.PluralRules gives the language (CLDR), and
    every one of them, save `many` in Spanish, French and Portuguese: that is for millions
    ("1 000 000 de visiteurs"), which fall back to `other` (static/widget/i18n.js plural())."""
    needed = CLDR_PLURALS[lang] - ({"many"} if lang in {"es", "fr", "pt"} else set())
    for key, value in leaves(LANGUAGES[lang]).items():
        if not is_plural(value):
            continue
        assert set(value) <= CLDR_PLURALS[lang], f"{lang}.json {key}: {sorted(value)} (CLDR: {CLDR_PLURALS[lang]})"
        assert needed <= set(value), f"{lang}.json {key} lacks {sorted(needed - set(value))}"


@pytest.mark.parametrize("lang", ["he"])
def test_hebrew_has_no_slash_gender_forms(lang):
    # A screen reader reads "מחובר/ת" with its slash; the strings use forms that need none.
    for key, value in leaves(LANGUAGES[lang]).items():
        for text in value.values() if isinstance(value, dict) else [value]:
            assert not re.search(r"[\u0590-\u05ff]/[\u0590-\u05ff]", text), f"{lang}.json {key}: {text}"


@pytest.mark.parametrize("lang", sorted(set(LANGUAGES) - {"en"}))
def test_every_language_has_every_key_of_english_and_no_other(lang):
    english, other = leaves(EN), leaves(LANGUAGES[lang])
    assert sorted(set(english) - set(other)) == [], f"{lang}.json lacks these keys"
    assert sorted(set(other) - set(english)) == [], f"{lang}.json has keys en.json does not"
    for key, value in english.items():
        translated = other[key]
        assert type(translated) is type(value) or (is_plural(value) and isinstance(translated, str)), key
        if is_plural(translated):
            assert "other" in translated, f"{lang}.json {key}: every language has the plural form 'other'"
        assert placeholders(translated) == placeholders(value), f"{lang}.json {key}: its {{placeholders}}"
        assert translated, f"{lang}.json {key} is empty"
    # Translated, not copied: the words people read first differ from English.
    for key in ("title", "signIn", "nameLabel", "passwordLabel", "claim", "replyLabel", "languageLabel"):
        assert other[key] != english[key], f"{lang}.json {key} is still English"
    assert other["languageName"] != english["languageName"]


def test_every_word_the_pages_and_the_code_use_is_in_the_language_files():
    sources = {
        "templates/agent.html": r'\bs\["(\w+)"\]',
        "templates/agent_sign_in.html": r'\bs\["(\w+)"\]',
        "templates/agent_language.html": r'\bs\["(\w+)"\]',
        "static/agent/console.js": r"\bthis\.s\.(\w+)|\bstrings\.(\w+)",
    }
    used: set[str] = set()
    for path, pattern in sources.items():
        text = (REPO / path).read_text(encoding="utf-8")
        found = {
            next(group for group in match if group) if isinstance(match, tuple) else match
            for match in re.findall(pattern, text)
        }
        assert found, f"{path} uses no strings? ({pattern})"
        used |= found
    assert sorted(used - set(EN)) == []


def test_the_error_codes_the_console_words_are_codes_the_server_documents():
    protocol = (REPO / "docs" / "protocol.md").read_text(encoding="utf-8")
    for code in EN["errors"]:
        assert f"`{code}`" in protocol, code


# -- which language a page is in --------------------------------------------------------------


@pytest.fixture
def app(tmp_path):
    path = tmp_path / "agents.json"
    write_agents(path)
    return create_app({**TEST_CONFIG, "AGENTS_FILE": str(path)}, environ={})


@pytest.fixture
def client(app):
    return app.test_client()


def page_lang(response) -> str:
    match = re.search(r'<html lang="([^"]+)"', response.get_data(as_text=True))
    assert match, "no <html lang>"
    return match[1]


def text_of(response) -> str:
    return html.unescape(response.get_data(as_text=True))


def test_without_a_choice_the_browser_language_else_english(client):
    assert page_lang(client.get("/agent")) == "en"
    assert page_lang(client.get("/agent", headers={"Accept-Language": "es-MX,es;q=0.9,en;q=0.5"})) == "es"
    assert page_lang(client.get("/agent", headers={"Accept-Language": "ja-JP,ko;q=0.8"})) == "en"
    assert page_lang(client.get("/agent", headers={"Accept-Language": "ja, en-GB;q=0.5, es;q=0.4"})) == "en"
    assert page_lang(client.get("/agent", headers={"Accept-Language": "fr-FR,de;q=0.8"})) == "fr"
    assert page_lang(client.get("/agent", headers={"Accept-Language": "pt-BR"})) == "pt"
    # Hebrew by its retired code too (BCP 47 maps `iw` to `he`, widget_server/i18n.py).
    assert page_lang(client.get("/agent", headers={"Accept-Language": "iw-IL,en;q=0.5"})) == "he"
    spanish = client.get("/agent", headers={"Accept-Language": "es"})
    assert spanish.headers["Content-Language"] == "es"
    assert "Accept-Language" in spanish.headers["Vary"]
    body = text_of(spanish)
    assert '<label class="field__label" for="agent-name">Nombre</label>' in body
    assert "<title>Iniciar sesión – Consola de agentes</title>" in body
    # A browser's preference is not a choice: nothing is kept.
    assert LANGUAGE_COOKIE not in set_cookies(spanish)


def test_an_explicit_choice_wins_and_is_kept_in_a_cookie(client):
    chosen = client.get("/agent?lang=es", headers={"Accept-Language": "en"})
    assert page_lang(chosen) == "es"
    cookie = set_cookies(chosen)[LANGUAGE_COOKIE]
    assert cookie["value"] == "es"
    assert cookie["path"] == "/" and "secure" in cookie and "httponly" in cookie and "domain" not in cookie
    assert int(cookie["max-age"]) >= 30 * 24 * 3600
    # Kept: the next pages, the sign-in and the console after it, are Spanish for an English browser.
    assert page_lang(client.get("/agent", headers={"Accept-Language": "en"})) == "es"
    sign_in(client)
    console = client.get("/agent", headers={"Accept-Language": "en"})
    assert page_lang(console) == "es"
    body = text_of(console)
    assert '<h1 class="console__title">Consola de agentes</h1>' in body
    config = json.loads(re.search(r'<script type="application/json" id="agent-config">(.*?)</script>', body, re.S)[1])
    assert config["lang"] == "es" and config["strings"] == LANGUAGES["es"]
    # The control shows the choice, each language named in itself and marked with its lang.
    assert '<option value="es" lang="es" selected>Español</option>' in body
    assert '<option value="en" lang="en">English</option>' in body
    # Back to English, by choice again (a tag's case does not matter).
    assert page_lang(client.get("/agent?lang=EN", headers={"Accept-Language": "es"})) == "en"
    assert page_lang(client.get("/agent", headers={"Accept-Language": "es"})) == "en"


def test_an_unknown_language_is_no_choice(client):
    response = client.get("/agent?lang=xx", headers={"Accept-Language": "es"})
    assert page_lang(response) == "es"
    assert LANGUAGE_COOKIE not in set_cookies(response)
    client.set_cookie(LANGUAGE_COOKIE, "<script>", path="/", secure=True)
    assert page_lang(client.get("/agent")) == "en"


def test_sign_in_refusals_are_said_in_the_chosen_language(client):
    client.get("/agent?lang=es")
    token = sign_in_form(client)
    refused = client.post("/agent/sign-in", data={"name": "alice", "password": "wrong", "csrf_token": token})
    assert refused.status_code == 401
    body = text_of(refused)
    assert page_lang(refused) == "es"
    assert LANGUAGES["es"]["signInWrongCredentials"] in body
    assert "<title>Error: Iniciar sesión – Consola de agentes</title>" in body
    assert "Hay un problema" in body
    expired = client.post("/agent/sign-in", data={"name": "alice", "password": AGENTS["alice"][1], "csrf_token": "x"})
    assert expired.status_code == 403 and LANGUAGES["es"]["signInFormExpired"] in text_of(expired)


def test_sign_in_rate_limit_is_said_in_the_chosen_language(tmp_path):
    path = tmp_path / "agents.json"
    write_agents(path)
    app = create_app(
        {**TEST_CONFIG, "AGENTS_FILE": str(path), "RATE_LIMITS": True, "RATE_LIMIT_AGENT_SIGN_IN": "1/minute"},
        environ={},
    )
    client = app.test_client()
    client.get("/agent?lang=es")
    data = {"name": "alice", "password": "wrong"}
    assert client.post("/agent/sign-in", data={**data, "csrf_token": sign_in_form(client)}).status_code == 401
    limited = client.post("/agent/sign-in", data={**data, "csrf_token": sign_in_form(client)})
    assert limited.status_code == 429
    seconds = limited.headers["Retry-After"]
    expected = LANGUAGES["es"]["signInRateLimited"].replace("{seconds}", seconds)
    assert expected in text_of(limited)


@pytest.mark.parametrize("lang", sorted(LANGUAGES))
def test_each_language_gives_both_pages_their_direction(client, lang):
    """`<html lang dir>`: right to left for Arabic and Hebrew (docs/accessibility.md A91); the
    control lists every language in itself, each option marked with its own `lang` (A93)."""
    direction = "rtl" if lang in {"ar", "he"} else "ltr"
    sign_in_page = client.get(f"/agent?lang={lang}")
    assert f'<html lang="{lang}" dir="{direction}">' in sign_in_page.get_data(as_text=True)
    sign_in(client)
    console = text_of(client.get("/agent"))
    assert f'<html lang="{lang}" dir="{direction}">' in console
    options = re.findall(r'<option value="(\w+)" lang="(\w+)"(?: selected)?>([^<]+)</option>', console)
    assert [(code, name) for code, _, name in options] == [
        (code, words["languageName"]) for code, words in LANGUAGES.items()
    ]
    assert all(code == tag for code, tag, _ in options)
    assert f'<option value="{lang}" lang="{lang}" selected>' in console
