"""Every language of the widget has every UI string, in the same shape as English.

static/widget/i18n/<lang>.json, one file per language (docs/configuration.md, "Languages"):
each key of en.json exists in every language and no other key does; a string
that depends on a number is an object of exactly the CLDR plural categories
its language needs; every `{placeholder}` of the English string is in the
translation (and no placeholder English does not fill in). Also the server's
language choice (widget_server.i18n.pick_language) and the panel's `dir`.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from widget_server import create_app
from widget_server.i18n import (
    DEFAULT_LANGUAGE,
    RTL_LANGUAGES,
    accepted_languages,
    base_language,
    loader_languages,
    pick_language,
    text_direction,
    ui_strings,
)

from .agent_support import write_agents
from .conftest import TEST_CONFIG

STRINGS = ui_strings()
EN = STRINGS["en"]

# The languages docs/configuration.md, "Languages", lists; more may be added (each gets these
# checks).
REQUIRED_LANGUAGES = ("en", "es", "fr", "de", "pt", "ar", "he")

# The plural categories each language's cardinal rules use, from CLDR 44's
# "Language Plural Rules" (https://www.unicode.org/cldr/charts/44/supplemental/language_plural_rules.html,
# the data Intl.PluralRules ships: Chromium, Firefox and Node 20's ICU 73+ report these
# with `new Intl.PluralRules(lang).resolvedOptions().pluralCategories`). `many` in
# es/fr/pt is for millions ("1 000 000 de lignes"); Hebrew lost `many` in CLDR 42.
PLURAL_CATEGORIES = {
    "en": {"one", "other"},
    "de": {"one", "other"},
    "es": {"one", "many", "other"},
    "fr": {"one", "many", "other"},
    "pt": {"one", "many", "other"},
    "he": {"one", "two", "other"},
    "ar": {"zero", "one", "two", "few", "many", "other"},
}
CLDR_CATEGORIES = {"zero", "one", "two", "few", "many", "other"}
PLACEHOLDER = re.compile(r"\{(\w+)\}")

# Strings that stay the same in a translation because they are a file name pattern
# or a word the language borrowed ("Chat" in French, German and Portuguese).
SAME_AS_ENGLISH_ALLOWED = {
    "title",
    "launcher",
    "panelTitle",
    "fileName",
    "transcriptLabel",
    "composerLabel",
    "assistant",
    "settingsLabel",
    "comment",
    "message",
    # French spells "conversations" as English does.
    "conversationTools.conversationsLabel",
    # French spells "source" and "sources" as English does.
    "sources.toggle",
    "sources.count.one",
    "sources.count.other",
}


def is_plural(value: Any) -> bool:
    return isinstance(value, dict) and "other" in value and set(value) <= CLDR_CATEGORIES


def placeholders(text: str) -> set[str]:
    return set(PLACEHOLDER.findall(text))


def differences(lang: str, english: Any, translated: Any, path: str) -> list[str]:
    """What is wrong with `translated` (the string or group at `path`) against `english`."""
    if is_plural(english):
        if not isinstance(translated, dict):
            return [f"{path}: a plural object in English, {type(translated).__name__} in {lang}"]
        problems = []
        if set(translated) != PLURAL_CATEGORIES[lang]:
            problems.append(f"{path}: categories {sorted(translated)}, CLDR needs {sorted(PLURAL_CATEGORIES[lang])}")
        wanted = placeholders(english["other"])
        if placeholders(translated.get("other", "")) != wanted:
            problems.append(f"{path}.other: placeholders {placeholders(translated.get('other', ''))} ≠ {wanted}")
        # A form for one exact number may spell it out ("سطر واحد", "שתי שורות"): fewer, never others.
        for category, text in translated.items():
            if not placeholders(text) <= wanted:
                problems.append(f"{path}.{category}: unknown placeholders {placeholders(text) - wanted}")
        return problems
    if isinstance(english, dict):
        if not isinstance(translated, dict):
            return [f"{path}: a group in English, {type(translated).__name__} in {lang}"]
        problems = [f"{path}.{key}: missing" for key in english if key not in translated]
        problems += [f"{path}.{key}: not in en.json" for key in translated if key not in english]
        for key in english.keys() & translated.keys():
            problems += differences(lang, english[key], translated[key], f"{path}.{key}")
        return problems
    if isinstance(english, list):
        if not isinstance(translated, list) or len(translated) != len(english):
            return [f"{path}: a list of {len(english)} in English"]
        return [
            problem
            for index, (one, other) in enumerate(zip(english, translated, strict=True))
            for problem in differences(lang, one, other, f"{path}[{index}]")
        ]
    if not isinstance(translated, str) or not translated.strip():
        return [f"{path}: not a non-empty string"]
    if placeholders(translated) != placeholders(english):
        return [f"{path}: placeholders {sorted(placeholders(translated))} ≠ English {sorted(placeholders(english))}"]
    return []


def test_every_required_language_has_a_file():
    assert set(REQUIRED_LANGUAGES) <= set(STRINGS)


def test_each_language_has_its_plural_categories_listed():
    # A language added without its CLDR categories here would go unchecked.
    assert set(STRINGS) <= set(PLURAL_CATEGORIES)


@pytest.mark.parametrize("lang", sorted(STRINGS))
def test_every_key_in_the_same_shape_with_its_placeholders(lang):
    problems = differences(lang, EN, STRINGS[lang], lang)
    assert not problems, "\n".join(problems)


def test_english_plurals_are_englishs_categories():
    # The shape check above takes en.json's plural objects as the reference: they are CLDR's too.
    def plurals(group: dict[str, Any]) -> list[dict[str, str]]:
        found = []
        for value in group.values():
            if is_plural(value):
                found.append(value)
            elif isinstance(value, dict):
                found += plurals(value)
        return found

    assert plurals(EN), "en.json has plural objects (lines, columns, rows, seconds)"
    assert all(set(forms) == PLURAL_CATEGORIES["en"] for forms in plurals(EN))


@pytest.mark.parametrize("lang", [lang for lang in REQUIRED_LANGUAGES if lang not in ("en", "es")])
def test_translations_are_translated(lang):
    """Not English left in place: most strings of a translation differ from English."""

    def pairs(english: Any, translated: Any, path: str = "") -> list[tuple[str, str, str]]:
        if isinstance(english, dict):
            return [p for k in english for p in pairs(english[k], translated[k], f"{path}.{k}".lstrip("."))]
        if isinstance(english, list):
            return [p for one, other in zip(english, translated, strict=True) for p in pairs(one, other, path)]
        return [(path, english, translated)]

    # An entry of the allowed set names a key wherever it is, or one dotted path.
    same = [
        path
        for path, english, translated in pairs(EN, STRINGS[lang])
        if english == translated and not {path, path.rsplit(".", 1)[-1]} & SAME_AS_ENGLISH_ALLOWED
    ]
    assert not same, same


def test_right_to_left_scripts_are_written_in_them():
    arabic, hebrew = re.compile(r"[\u0600-\u06ff]"), re.compile(r"[\u0590-\u05ff]")
    assert arabic.search(STRINGS["ar"]["complete"]) and hebrew.search(STRINGS["he"]["complete"])
    assert arabic.search(STRINGS["ar"]["launcherLabel"]) and hebrew.search(STRINGS["he"]["launcherLabel"])


# -- the language choice ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("tag", "base"),
    [("pt-BR", "pt"), ("he-IL", "he"), ("iw", "he"), ("AR_eg", "ar"), (" de ", "de"), ("", ""), (None, "")],
)
def test_base_language(tag, base):
    assert base_language(tag) == base


@pytest.mark.parametrize(
    ("requested", "fallbacks", "picked"),
    [
        ("pt-BR", [], "pt"),
        ("he-IL", [], "he"),
        ("iw", [], "he"),
        ("fr-CA", ["de"], "fr"),
        ("ja", ["ja-JP", "de-AT", "en"], "de"),  # the first supported of the browser's languages
        (None, ["ar-SA", "en"], "ar"),
        ("xx", ["yy"], DEFAULT_LANGUAGE),
        (None, [], DEFAULT_LANGUAGE),
    ],
)
def test_pick_language_takes_the_first_supported_base_language(requested, fallbacks, picked):
    assert pick_language(requested, STRINGS, fallbacks) == picked


@pytest.mark.parametrize(("lang", "direction"), [("ar", "rtl"), ("he", "rtl"), ("en", "ltr"), ("pt", "ltr")])
def test_panel_has_the_languages_direction(client, lang, direction):
    html = client.get(f"/panel?lang={lang}").get_data(as_text=True)
    assert f'<html lang="{lang}" dir="{direction}"' in html
    assert text_direction(lang) == direction


def test_full_page_chat_follows_accept_language(client):
    html = client.get("/chat", headers={"Accept-Language": "ja;q=1, he-IL;q=0.9, en;q=0.5"}).get_data(as_text=True)
    assert '<html lang="he" dir="rtl"' in html
    assert STRINGS["he"]["composerLabel"] in html
    # ?lang= wins over the header.
    html = client.get("/chat?lang=pt-BR", headers={"Accept-Language": "he"}).get_data(as_text=True)
    assert '<html lang="pt" dir="ltr"' in html


def test_a_language_of_quality_zero_is_never_chosen_by_the_panel_or_the_console(client, tmp_path):
    """One rule for both (i18n.pick_language, i18n.accepted_languages): `q=0` means "not
    acceptable" (RFC 9110 §12.4.2), so the next language the browser accepts is served."""
    header = {"Accept-Language": "ja, he;q=0"}  # Japanese has no strings: English, not Hebrew
    assert '<html lang="en" dir="ltr"' in client.get("/chat", headers=header).get_data(as_text=True)
    write_agents(tmp_path / "agents.json")
    console = create_app({**TEST_CONFIG, "AGENTS_FILE": str(tmp_path / "agents.json")}, environ={}).test_client()
    assert '<html lang="en"' in console.get("/agent", headers=header).get_data(as_text=True)
    assert accepted_languages([("en-GB", 0.9), ("fr", 0.0), ("de", 0.5)]) == ["en-GB", "de"]


def test_the_loader_applies_the_servers_language_rules(client):
    """static/widget.js gets the right-to-left list and the retired codes from
    widget_server/data/languages.json, as the server reads them: written once."""
    body = client.get("/widget.js").get_data(as_text=True)
    assert "__CHATWIDGET_LANGUAGES__" not in body
    rules = json.dumps(loader_languages(), ensure_ascii=False, separators=(",", ":"))
    assert rules in body and '"rtl":["ar","fa","he","ur"]' in rules and '"iw":"he"' in rules
    assert {"ar", "fa", "he", "ur"} == RTL_LANGUAGES


def test_the_loader_carries_every_languages_launcher_strings(client):
    body = client.get("/widget.js").get_data(as_text=True)
    for lang in REQUIRED_LANGUAGES:
        assert STRINGS[lang]["launcherLabel"] in body, lang


def test_hebrew_has_no_slash_gender_forms():
    """'את/ה', 'מקליד/ה': screen readers read the slash; the strings use neutral phrasings."""

    def texts(value: Any) -> list[str]:
        if isinstance(value, dict):
            return [t for v in value.values() for t in texts(v)]
        if isinstance(value, list):
            return [t for v in value for t in texts(v)]
        return [value]

    slashed = [t for t in texts(STRINGS["he"]) if re.search(r"[\u0590-\u05ff]/[\u0590-\u05ff]", t)]
    assert not slashed


@pytest.mark.parametrize("lang", sorted(STRINGS))
@pytest.mark.parametrize(("visible", "name"), [("launcher", "launcherLabel"), ("stop", "stopLabel")])
def test_a_controls_name_contains_its_visible_words(lang, visible, name):
    """WCAG 2.2 2.5.3 Label in Name: the launcher's and Stop's names hold their visible text as words."""
    words = re.findall(r"\w+", STRINGS[lang][name].lower())
    assert all(word in words for word in re.findall(r"\w+", STRINGS[lang][visible].lower()))
