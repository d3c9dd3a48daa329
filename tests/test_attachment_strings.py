"""The attachments' UI strings (static/widget/attachments.js), one file per language in
static/widget/i18n/attachments/<lang>.json, fetched on first use (lazy-parts.js `lazyStrings`)
so that the strings every first open fetches stay small (tests/test_budgets.py). Each file has
exactly English's keys and placeholders and the plural forms CLDR gives its language, as the
panel's own files do (tests/test_i18n_languages.py)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from .helpers import REPO_ROOT
from .test_i18n_languages import PLURAL_CATEGORIES, differences

I18N = REPO_ROOT / "static" / "widget" / "i18n"
ATTACHMENTS = I18N / "attachments"
LANGUAGES = sorted(path.stem for path in I18N.glob("*.json"))


def texts(lang: str) -> dict[str, Any]:
    return json.loads((ATTACHMENTS / f"{lang}.json").read_text(encoding="utf-8"))["attachments"]


def test_every_language_of_the_panel_has_an_attachments_file():
    assert set(LANGUAGES) == set(PLURAL_CATEGORIES)
    assert sorted(path.stem for path in ATTACHMENTS.glob("*.json")) == LANGUAGES


@pytest.mark.parametrize("lang", [lang for lang in LANGUAGES if lang != "en"])
def test_each_language_has_englishs_keys_placeholders_and_its_plural_forms(lang):
    assert differences(lang, texts("en"), texts(lang), "attachments") == []


@pytest.mark.parametrize("lang", [lang for lang in LANGUAGES if lang != "en"])
def test_the_sentences_are_translated(lang):
    english, translated = texts("en"), texts(lang)
    for key, text in translated.items():
        if isinstance(text, str):
            assert text != english[key], f"{lang} {key}: still English"


def test_the_module_uses_every_key_and_no_other():
    source = (REPO_ROOT / "static" / "widget" / "attachments.js").read_text(encoding="utf-8")
    used = set(re.findall(r"strings\.(\w+)", source))
    assert used == set(texts("en"))


def test_every_type_the_server_knows_has_a_name_in_every_language():
    from widget_server.attachments.sniff import MEDIA_TYPES

    for lang in LANGUAGES:
        assert set(texts(lang)["typeNames"]) == set(MEDIA_TYPES), lang


def test_the_attachments_stay_out_of_the_strings_file_every_first_open_fetches():
    for lang in LANGUAGES:
        strings = json.loads((I18N / f"{lang}.json").read_text(encoding="utf-8"))
        assert "attachments" not in strings
        assert strings["attach"].strip()  # the button's name, rendered into the panel
