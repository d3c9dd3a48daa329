"""Every refusal a visitor can meet has its reason in every language (docs/accessibility.md A89–A90).

The panel words a refused request from the error's `code`, never from its English `message`
(static/widget/refusals.js; docs/protocol.md, "Errors"). Its texts are
static/widget/i18n/refusals/<lang>.json. The codes are the registry's (widget_server/wire/errors.py) that a visitor can meet
(`HttpError.visitor`), and the fallback `http_error`. A new code fails here until it has a
text in every language.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from widget_server.wire.errors import HTTP_ERROR_CODE, REGISTRY

from .helpers import REPO_ROOT

PACKAGE = REPO_ROOT / "widget_server"
AGENT_ONLY = PACKAGE / "agents"
I18N = REPO_ROOT / "static" / "widget" / "i18n"
REFUSALS = I18N / "refusals"
LANGUAGES = sorted(path.stem for path in I18N.glob("*.json"))
PLACEHOLDER = re.compile(r"\{(\w+)\}")


def visitor_refusal_codes() -> set[str]:
    return {code for code, entry in REGISTRY.items() if entry.visitor} | {HTTP_ERROR_CODE}


def refusals(lang: str) -> dict[str, str]:
    texts: dict[str, str] = json.loads((REFUSALS / f"{lang}.json").read_text(encoding="utf-8"))["refusals"]
    return texts


# The values refusals.js can put in a text (`values.<name> = …`): a placeholder nothing fills
# would make it skip the text.
FILLED = set(re.findall(r"values\.(\w+) =", (REPO_ROOT / "static" / "widget" / "refusals.js").read_text("utf-8")))


def test_the_scan_finds_the_visitor_codes_and_not_the_consoles():
    codes = visitor_refusal_codes()
    assert {"text_too_long", "rate_limited", "not_found", "invalid_email", "comment_too_long", "internal"} <= codes
    assert {"bad_request", "http_error", "store_unavailable", "handoff_store_full"} <= codes
    # Raised only by the agent console's sign-in and CSRF checks.
    assert not {"not_signed_in", "csrf_failed"} & codes
    assert {"seconds"} == FILLED


def test_every_language_of_the_panel_has_a_refusals_file():
    assert set(LANGUAGES) >= {"en", "es", "fr", "de", "pt", "ar", "he"}
    assert sorted(path.stem for path in REFUSALS.glob("*.json")) == LANGUAGES


@pytest.mark.parametrize("lang", LANGUAGES)
def test_every_visitor_code_has_a_reason_and_nothing_else_is_there(lang):
    texts = refusals(lang)
    codes = visitor_refusal_codes()
    assert sorted(codes - set(texts)) == [], f"{lang}: no reason for these codes"
    assert sorted(set(texts) - codes) == [], f"{lang}: reasons for codes the server no longer sends"
    assert all(isinstance(text, str) and text.strip() for text in texts.values())


@pytest.mark.parametrize("lang", [lang for lang in LANGUAGES if lang != "en"])
def test_every_reason_is_translated_with_the_same_placeholders(lang):
    english, texts = refusals("en"), refusals(lang)
    for code, text in texts.items():
        assert text != english[code], f"{lang} {code}: still English"
        assert set(PLACEHOLDER.findall(text)) == set(PLACEHOLDER.findall(english[code])), f"{lang} {code}"


@pytest.mark.parametrize("lang", LANGUAGES)
def test_placeholders_are_only_what_the_panel_fills(lang):
    for code, text in refusals(lang).items():
        assert set(PLACEHOLDER.findall(text)) <= FILLED, f"{lang} {code}: {text}"


def test_hebrew_reasons_use_no_slash_gender_forms():
    # Impersonal forms ("יש לקצר…") instead of "קצר/י" (docs/accessibility.md, "Languages").
    for code, text in refusals("he").items():
        assert "/" not in text, f"he {code}: {text}"


def test_the_refusals_stay_out_of_the_strings_file_every_first_open_fetches():
    # tests/test_budgets.py counts static/widget/i18n/<lang>.json on every first open; the
    # refusals are fetched only when one is shown.
    for lang in LANGUAGES:
        assert "refusals" not in json.loads((I18N / f"{lang}.json").read_text(encoding="utf-8"))


def test_the_panel_words_refusals_through_one_helper():
    """No call site shows the server's English `error.message` as a reason."""
    widget = REPO_ROOT / "static" / "widget"
    for path in sorted(Path(widget).glob("*.js")):
        source = path.read_text(encoding="utf-8")
        assert not re.search(r"reason:\s*error\.message", source), path.name
        assert not re.search(r"failLocally\(error\.message\)", source), path.name


# A refused identity token is cured by a fresh one from the site (static/widget/identity.js
# REFRESHABLE; docs/embedding.md, "Known visitors"), which a reload does not bring while the
# visitor's sign-in on the site is gone: the words send them to sign in again, the same for both
# codes, and never to reload. Each language's word for reloading a page, as it was written there.
RELOAD_WORDS = {
    "en": "reload",
    "es": "recarga",
    "fr": "recharge",
    "de": "seite neu",
    "pt": "recarregue",
    "ar": "تحميل",
    "he": "לטעון",
}


@pytest.mark.parametrize("lang", LANGUAGES)
def test_a_refused_identity_says_sign_in_again_never_reload(lang):
    texts = refusals(lang)
    expired, invalid = texts["identity_expired"], texts["identity_invalid"]
    assert RELOAD_WORDS[lang] not in expired.lower() and RELOAD_WORDS[lang] not in invalid.lower()
    # The same instruction closes both: "Sign in again on this site to continue."
    instruction = expired.rstrip(".").rsplit(". ", 1)[-1]
    assert len(instruction) > 10 and invalid.endswith(f"{instruction}.")
