"""The strings of "How was your conversation?" (static/widget/satisfaction.js), one file per
language in static/widget/i18n/satisfaction/<lang>.json, fetched when a person ends a hand-off
(lazy-parts.js `lazyStrings`), never on a first open (tests/test_budgets.py). Each file has
exactly English's keys and placeholders, as the panel's own files do
(tests/test_i18n_languages.py), and a word for each of the five ratings."""

from __future__ import annotations

import json
from typing import Any

import pytest

from .helpers import REPO_ROOT
from .test_i18n_languages import PLURAL_CATEGORIES, differences

I18N = REPO_ROOT / "static" / "widget" / "i18n"
SATISFACTION = I18N / "satisfaction"
LANGUAGES = sorted(path.stem for path in I18N.glob("*.json"))


def texts(lang: str) -> dict[str, Any]:
    strings: dict[str, Any] = json.loads((SATISFACTION / f"{lang}.json").read_text(encoding="utf-8"))["satisfaction"]
    return strings


def test_every_language_of_the_panel_has_a_satisfaction_file():
    assert set(LANGUAGES) == set(PLURAL_CATEGORIES)
    assert sorted(path.stem for path in SATISFACTION.glob("*.json")) == LANGUAGES


@pytest.mark.parametrize("lang", [lang for lang in LANGUAGES if lang != "en"])
def test_each_language_has_englishs_keys_and_placeholders(lang):
    assert differences(lang, texts("en"), texts(lang), "satisfaction") == []


@pytest.mark.parametrize("lang", LANGUAGES)
def test_five_distinct_words_name_the_ratings_and_are_translated(lang):
    words = [texts(lang)[f"rating{rating}"] for rating in range(1, 6)]
    assert len(set(words)) == 5 and all(word.strip() for word in words)
    if lang != "en":
        english = texts("en")
        assert [key for key, text in texts(lang).items() if text == english[key]] == []
