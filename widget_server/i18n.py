"""UI strings: static/widget/i18n/<lang>.json, read once. The same files
feed the server-rendered panel, the panel's JS and the loader.

How a language is chosen is written once, here, for the panel, the QA page and the agent
console; the loader (static/widget.js) gets the same rules' data from the server, which
fills them into it (web.py, `loader_languages`): widget_server/data/languages.json lists the
languages written right to left and the retired codes still sent for others."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

from .resources import resource_dir

DEFAULT_LANGUAGE = "en"

_RULES: dict[str, Any] = json.loads((Path(__file__).parent / "data" / "languages.json").read_text(encoding="utf-8"))
# Written right to left (CLDR's characterOrder "right-to-left" for these languages); the panel,
# the console and the loader's launcher get dir="rtl" (docs/accessibility.md A64).
RTL_LANGUAGES = frozenset(_RULES["right_to_left"])
# Retired ISO 639 codes some browsers and systems still send (Java and old Android say `iw`
# for Hebrew, `in` for Indonesian, `ji` for Yiddish): BCP 47 (RFC 5646 §2.2.2) maps them to
# today's codes.
_ALIASES: dict[str, str] = dict(_RULES["aliases"])


def loader_languages() -> dict[str, Any]:
    """The rules the loader applies itself (static/widget.js `__CHATWIDGET_LANGUAGES__`)."""
    return {"rtl": sorted(RTL_LANGUAGES), "aliases": _ALIASES}


def accepted_languages(header: Iterable[tuple[str, float]]) -> list[str]:
    """Accept-Language's (tag, quality) pairs, best first, as tags, without those of quality 0:
    "not acceptable" (RFC 9110 §12.4.2), never a language to serve."""
    return [tag for tag, quality in header if quality > 0]


# Lazy groups kept in a file of their own per language, `i18n/<group>/<lang>.json`, so the
# `i18n/<lang>.json` every first open fetches (static/widget/lazy-parts.js) does not carry them
# (tests/test_budgets.py); the part that uses one fetches its file (handoff.js). Merged back here:
# the server and the tests see each language's strings as one dictionary.
OWN_FILE_GROUPS = ("handoff",)


@cache
def load_strings(static_dir: str) -> dict[str, dict[str, Any]]:
    folder = Path(static_dir) / "widget" / "i18n"
    languages = {path.stem: json.loads(path.read_text(encoding="utf-8")) for path in sorted(folder.glob("*.json"))}
    for lang, strings in languages.items():
        for group in OWN_FILE_GROUPS:
            own_file = folder / group / f"{lang}.json"
            strings[group] = json.loads(own_file.read_text(encoding="utf-8"))[group]
    return languages


def ui_strings() -> dict[str, dict[str, Any]]:
    """Every language's UI strings, from the package's own static/ folder."""
    return load_strings(str(resource_dir("static")))


def base_language(tag: str | None) -> str:
    """`pt-BR` → `pt`, `he_IL` → `he`, `iw` → `he`: the primary language subtag, lower case."""
    base = (tag or "").strip().lower().replace("_", "-").split("-")[0]
    return _ALIASES.get(base, base)


def pick_language(requested: str | None, available: Mapping[str, object], fallbacks: Iterable[str] = ()) -> str:
    """The first of `requested` (`?lang=`), then `fallbacks` (the browser's Accept-Language,
    best first) whose base language has strings; else English. The loader picks the same way
    from data-lang, the host page's <html lang> and navigator.languages (static/widget.js)."""
    for tag in (requested, *fallbacks):
        base = base_language(tag)
        if base in available:
            return base
    return DEFAULT_LANGUAGE


def text_direction(lang: str) -> str:
    """The `dir` of a panel in `lang`: `rtl` for Arabic, Hebrew (and Persian, Urdu), else `ltr`."""
    return "rtl" if base_language(lang) in RTL_LANGUAGES else "ltr"
