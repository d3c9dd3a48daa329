"""A known visitor's Conversations view's strings (static/widget/conversations.js), one file per
language in static/widget/i18n/conversations/<lang>.json, fetched when the view first opens
(lazy-parts.js `lazyStrings`), never on a first open (tests/test_budgets.py). Each file has
exactly English's keys and placeholders, as the panel's own files do
(tests/test_i18n_languages.py). "5 minutes ago" is the browser's Intl.RelativeTimeFormat, in
the panel's language with CLDR's plural forms, so it has no strings here."""

from __future__ import annotations

import json
from typing import Any

import pytest

from .helpers import REPO_ROOT
from .test_i18n_languages import PLURAL_CATEGORIES, differences

I18N = REPO_ROOT / "static" / "widget" / "i18n"
CONVERSATIONS = I18N / "conversations"
LANGUAGES = sorted(path.stem for path in I18N.glob("*.json"))


# The view's group, and the Options' Download and Erase my data (my-data.js), which only a known
# visitor's panel loads, as it does this file.
GROUPS = ["conversations", "myData"]


def texts(lang: str, group: str = "conversations") -> dict[str, Any]:
    return json.loads((CONVERSATIONS / f"{lang}.json").read_text(encoding="utf-8"))[group]


def test_the_files_hold_exactly_the_groups():
    for lang in LANGUAGES:
        assert sorted(json.loads((CONVERSATIONS / f"{lang}.json").read_text(encoding="utf-8"))) == GROUPS


def test_every_language_of_the_panel_has_a_conversations_file():
    assert set(LANGUAGES) == set(PLURAL_CATEGORIES)
    assert sorted(path.stem for path in CONVERSATIONS.glob("*.json")) == LANGUAGES


@pytest.mark.parametrize("group", GROUPS)
@pytest.mark.parametrize("lang", [lang for lang in LANGUAGES if lang != "en"])
def test_each_language_has_englishs_keys_and_placeholders(lang, group):
    assert differences(lang, texts("en", group), texts(lang, group), group) == []


@pytest.mark.parametrize("group", GROUPS)
@pytest.mark.parametrize("lang", [lang for lang in LANGUAGES if lang != "en"])
def test_the_sentences_are_translated(lang, group):
    english = texts("en", group)
    same = [key for key, text in texts(lang, group).items() if text == english[key] and key != "item"]
    assert same == []
