"""The agent console in French, German, Portuguese, Arabic and Hebrew
(docs/agents.md "Languages"), in real Chromium and Firefox ESR against a real server: a browser
that prefers the language gets the sign-in page and the console in it — right to left for
Arabic and Hebrew — and the agent signs in by keyboard, claims a waiting visitor, replies and
ends, every word read from that language's file and none left in English, axe clean. The
contract lines are tests/e2e/test_accessibility_contract_console_languages.py (A91–A93);
tests/test_agents_i18n.py checks the files themselves (keys, placeholders, plural forms).

Firefox runs a sample (docs/testing.md, "Firefox ESR's share"): Arabic, right to left; French,
left to right, runs in Firefox in A91 (test_accessibility_contract_console_languages.py). The
words come from the server and the same code in every language.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect

from widget_server.testing import ChatWidget

from .test_agent_console import Console, console_url, start_handoff_server, waiting_visitor

pytestmark = pytest.mark.e2e

I18N = Path(__file__).resolve().parents[2] / "static" / "agent" / "i18n"
STRINGS: dict[str, dict[str, Any]] = {
    path.stem: json.loads(path.read_text(encoding="utf-8")) for path in I18N.glob("*.json")
}
EN = STRINGS["en"]
NEW_LANGUAGES = ["fr", "de", "pt", "ar", "he"]
RTL = {"ar", "he"}
# The browser's locale (its Accept-Language) for each language.
LOCALES = {"en": "en-GB", "es": "es-ES", "fr": "fr-FR", "de": "de-DE", "pt": "pt-BR", "ar": "ar-EG", "he": "he-IL"}
# What a visitor and the agent write in each language (the visitor's with a product name in
# Latin letters: mixed direction in Arabic and Hebrew).
VISITOR_SAYS = {
    "fr": "Ma commande n’est pas arrivée.",
    "de": "Meine Bestellung ist nicht angekommen.",
    "pt": "Meu pedido não chegou.",
    "ar": "لم يصل طلبي من Acme بعد.",
    "he": "ההזמנה שלי מ-Acme עדיין לא הגיעה.",
}
AGENT_SAYS = {
    "fr": "Bonjour, je suis Ana. Je regarde votre commande.",
    "de": "Hallo, ich bin Ana. Ich sehe mir Ihre Bestellung an.",
    "pt": "Olá, sou a Ana. Vou verificar o seu pedido.",
    "ar": "مرحبًا، أنا Ana. سأتحقق من طلبك.",
    "he": "שלום, כאן Ana. אני בודקת את ההזמנה.",
}


def fill(template: str, **values: object) -> str:
    """static/widget/i18n.js format()."""
    for name, value in values.items():
        template = template.replace("{" + name + "}", str(value))
    return template


def plural(forms: dict[str, str] | str, count: int, lang: str) -> str:
    """static/widget/i18n.js plural() for the counts these tests use. CLDR's categories
    (https://www.unicode.org/cldr/charts/44/supplemental/language_plural_rules.html): 1 is
    `one` in every language here; 2 is `two` in Arabic and Hebrew, else `other`."""
    if isinstance(forms, str):
        return fill(forms, count=count)
    assert count in (1, 2), "only the counts this helper knows"
    category = "one" if count == 1 else "two" if lang in RTL else "other"
    return fill(forms.get(category, forms["other"]), count=count)


def english_fragments(lang: str) -> list[str]:
    """The English words a console in `lang` must not show: each part (between placeholders)
    of every English string whose translation differs, four letters or more. Not the language
    names: the language control names each language in itself, English included."""
    found: set[str] = set()

    def walk(english: Any, translated: Any, key: str) -> None:
        if key == "languageName" or english == translated:
            return
        if isinstance(english, dict) and not set(english) <= {"zero", "one", "two", "few", "many", "other"}:
            for name, value in english.items():
                walk(value, translated[name], name)
            return
        for form in english.values() if isinstance(english, dict) else [english]:
            for part in re.split(r"\{\w+\}", form):
                part = part.strip(" .,:;–…()")
                if len(part) >= 4:
                    found.add(part)

    walk(EN, STRINGS[lang], "")
    return sorted(found)


def english_in(text: str, lang: str) -> list[str]:
    """The English fragments found in `text` as whole words ("Agent" is not in "Agenten")."""
    return [part for part in english_fragments(lang) if re.search(rf"(?<!\w){re.escape(part)}(?!\w)", text)]


def english_left(page: Page, lang: str) -> list[str]:
    """English left in what the page shows and says: its title, its rendered text (the live
    regions included) and every aria-label."""
    shown = page.evaluate(
        """() => [document.title, document.body.innerText,
            ...[...document.querySelectorAll('[aria-label]')].map((n) => n.getAttribute('aria-label'))
        ].join('\\n')"""
    )
    return english_in(shown, lang)


class LanguageConsole(Console):
    """The console as an agent who reads `lang` uses it: every name from that language's file."""

    def __init__(self, page: Page, base: str, lang: str) -> None:
        super().__init__(page, base)
        self.lang = lang
        self.s = STRINGS[lang]
        self.SIGN_IN_LABEL, self.NAME_LABEL, self.PASSWORD_LABEL = (
            self.s["signIn"],
            self.s["nameLabel"],
            self.s["passwordLabel"],
        )
        self.reply = page.get_by_role("textbox", name=self.s["replyLabel"], exact=True)

    def expect_language(self) -> None:
        root = self.page.locator("html")
        expect(root).to_have_attribute("lang", self.lang)
        expect(root).to_have_attribute("dir", "rtl" if self.lang in RTL else "ltr")


def browser_in(browser: Browser, lang: str) -> BrowserContext:
    """A browser whose language is `lang` (Playwright's locale sets its Accept-Language), with the
    announcement recorder the other console tests use."""
    context = browser.new_context(locale=LOCALES[lang])
    ChatWidget.install_recorder(context)
    return context


@pytest.fixture
def handoff_server(chat_server_factory, tmp_path):
    return start_handoff_server(chat_server_factory, tmp_path)


@pytest.mark.firefox_sample(lang=["ar"])
@pytest.mark.parametrize("lang", NEW_LANGUAGES)
def test_a_browser_in_the_language_signs_in_claims_replies_and_ends_in_it(handoff_server, browser: Browser, lang):
    s = STRINGS[lang]
    context = browser_in(browser, lang)
    try:
        page = context.new_page()
        console = LanguageConsole(page, console_url(handoff_server), lang)

        # The sign-in page, and a refusal on it.
        console.sign_in("ana", "not the password")
        console.expect_language()
        summary = page.locator("[data-error-summary]")
        expect(summary).to_be_focused()
        expect(summary.get_by_role("heading", name=s["errorSummaryTitle"])).to_be_visible()
        expect(summary).to_contain_text(s["signInWrongCredentials"])
        assert page.title() == fill(s["errorTitle"], title=s["signInTitle"])
        assert english_left(page, lang) == []
        console.assert_accessible()

        # The console.
        console.sign_in("ana")
        console.wait_ready()
        console.expect_language()
        assert page.title() == s["title"]
        expect(page.get_by_role("heading", level=1, name=s["title"])).to_be_visible()
        expect(page.locator("[data-agent-who]")).to_have_text(fill(s["signedInAs"], name="Ana"))
        expect(page.get_by_role("main").get_by_role("heading", level=2)).to_have_text(
            [s["queueHeading"], s["mineHeading"], s["conversationHeading"], s["inboxHeading"], s["settingsLabel"]]
        )
        expect(page.get_by_text(s["queueEmpty"], exact=True)).to_be_visible()
        expect(page.get_by_role("banner").get_by_role("button", name=s["signOut"], exact=True)).to_be_visible()

        # A visitor waits: said once, in the language's plural form.
        visitor = waiting_visitor(handoff_server, console)
        console.wait_said(plural(s["announceNewVisitor"], 1, lang))
        entry = console.entry(visitor.conversation_id)
        wait = s["waitingLessThanMinute"]
        expect(entry.locator(".queue__wait")).to_have_text(f"1. {wait[0].upper()}{wait[1:]}")
        expect(entry).to_contain_text(s["noMessageYet"])
        claim = entry.get_by_role("button", name=fill(s["claimLabel"], position=1, wait=wait), exact=True)
        expect(claim).to_have_text(s["claim"])
        assert english_left(page, lang) == []
        console.assert_accessible()

        # Claimed by keyboard.
        claim.focus()
        page.keyboard.press("Enter")
        expect(console.root).to_have_attribute("data-conversation-state", "assigned")
        expect(page.locator("#conversation-heading")).to_be_focused()
        console.wait_said(s["announceClaimed"])
        expect(page.get_by_text(s["stateAssigned"], exact=True)).to_be_visible()

        # A reply, and the visitor's answer, each with its speaker's label.
        expect(console.reply).to_have_accessible_description(s["replyHint"])
        console.reply.focus()
        page.keyboard.type(AGENT_SAYS[lang])
        page.keyboard.press("Enter")
        mine = console.transcript.last
        expect(mine).to_have_attribute("data-verified", "true")
        expect(mine.locator(".transcript__who")).to_have_text(s["roleAgentYou"])
        assert [m["text"] for m in visitor.history() if m["role"] == "agent"] == [AGENT_SAYS[lang]]
        visitor.say(VISITOR_SAYS[lang])
        theirs = console.transcript.filter(has_text=VISITOR_SAYS[lang])
        expect(theirs.locator(".transcript__who")).to_have_text(s["roleVisitor"])
        console.wait_said(fill(s["announceVisitorMessage"], text=VISITOR_SAYS[lang]))
        expect(page.get_by_role("button", name=s["returnToAssistant"], exact=True)).to_be_visible()
        assert english_left(page, lang) == []
        console.assert_accessible()

        page.get_by_role("button", name=s["end"], exact=True).click()
        console.wait_said(s["ended"])
        expect(page.locator("#queue-heading")).to_be_focused()
        # Nothing the console said was English.
        said = console.said()
        assert said and [text for text in said if english_in(text, lang)] == [], said
    finally:
        context.close()
