"""docs/accessibility.md, "The agent console", the language lines (A61…A63), one test each.

The console at /agent against a real server (an agents file, the visitor API over HTTP), in
real Chromium and Firefox ESR, by keyboard where a person would use it, with axe in every new
state. tests/e2e/test_agent_console_lang.py covers the Spanish flow at length.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from playwright.sync_api import Browser, BrowserContext, expect

from widget_server.testing import ChatWidget

from ..helpers import HTTP
from .test_agent_console import Console, console_url, queue_as_last_polled, start_handoff_server, waiting_visitor
from .test_agent_console_lang import SpanishConsole

pytestmark = pytest.mark.e2e

I18N = Path(__file__).resolve().parents[2] / "static" / "agent" / "i18n"
ES = json.loads((I18N / "es.json").read_text(encoding="utf-8"))
EN = json.loads((I18N / "en.json").read_text(encoding="utf-8"))


def english_sentences() -> set[str]:
    """Every English string of the console, its {placeholders} cut off: what a Spanish
    console must never say, even in part."""
    found: set[str] = set()
    stack: list[object] = [EN]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, str):
            found.update(part.strip() for part in value.split("{") if len(part.strip()) > 8 and "}" not in part)
    return found


@pytest.fixture
def handoff_server(chat_server_factory, tmp_path):
    return start_handoff_server(chat_server_factory, tmp_path)


def browser_in(browser: Browser, locale: str) -> BrowserContext:
    context = browser.new_context(locale=locale)
    ChatWidget.install_recorder(context)
    return context


def test_A61_html_lang_is_the_language_of_the_page(handoff_server, browser: Browser):
    base = console_url(handoff_server)
    english, spanish = browser_in(browser, "en-GB"), browser_in(browser, "es-ES")
    try:
        # The default, and the browser's language.
        page = english.new_page()
        page.goto(base + "/agent")
        expect(page.locator("html")).to_have_attribute("lang", "en")
        expect(page.get_by_role("heading", level=1)).to_have_text("Sign in to the agent console")
        page = spanish.new_page()
        page.goto(base + "/agent")
        expect(page.locator("html")).to_have_attribute("lang", "es")
        expect(page.get_by_role("heading", level=1)).to_have_text("Inicia sesión en la consola de agentes")
        assert page.title() == "Iniciar sesión – Consola de agentes"
        console = SpanishConsole(page, base)
        console.assert_accessible()
        console.sign_in("ana", "equivocada")
        expect(page.locator("[data-error-summary]")).to_be_focused()
        expect(page.locator("html")).to_have_attribute("lang", "es")
        assert page.title().startswith("Error: Iniciar sesión")
        console.assert_accessible()
        console.sign_in("ana")
        console.wait_ready()
        expect(page.locator("html")).to_have_attribute("lang", "es")
        assert page.title() == "Consola de agentes"
        visitor = waiting_visitor(handoff_server, console)
        console.entry(visitor.conversation_id).get_by_role("button", name="Atender", exact=False).press("Enter")
        expect(console.root).to_have_attribute("data-conversation-state", "assigned")
        expect(console.reply).to_be_visible()
        console.assert_accessible()
        # The agent's choice wins over the browser's language.
        page = english.new_page()
        page.goto(base + "/agent?lang=es")
        expect(page.locator("html")).to_have_attribute("lang", "es")
        expect(page.get_by_label("Contraseña", exact=True)).to_be_visible()
    finally:
        english.close()
        spanish.close()


def test_A62_the_language_control(handoff_server, context: BrowserContext):
    page = context.new_page()
    base = console_url(handoff_server)
    page.goto(base + "/agent")
    # After the form: the first Tab still reaches the name field.
    page.keyboard.press("Tab")
    expect(page.get_by_label("Name", exact=True)).to_be_focused()
    language = page.get_by_role("combobox", name="Language", exact=True)
    # Every language the console has, in code order (A93 checks each name and lang).
    expect(language.locator("option")).to_have_text(
        ["العربية", "Deutsch", "English", "Español", "Français", "עברית", "Português"]
    )
    expect(language.locator("option[value='es']")).to_have_attribute("lang", "es")
    expect(language.locator("option[value='en']")).to_have_attribute("lang", "en")
    console = Console(page, base)
    console.assert_accessible()
    # Choosing in the list changes nothing; the button does.
    language.focus()
    page.keyboard.press("ArrowDown")
    expect(language).to_have_value("es")
    expect(page.locator("html")).to_have_attribute("lang", "en")
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    expect(page.locator("html")).to_have_attribute("lang", "es")
    idioma = page.get_by_role("combobox", name="Idioma", exact=True)
    expect(idioma).to_have_value("es")
    # The reading point is back at the control: the next Tab is on the list again. (The
    # fragment moves it once the page has loaded: wait for that, not only for its markup.)
    page.wait_for_load_state("load")
    page.keyboard.press("Tab")
    expect(idioma).to_be_focused()
    console.assert_accessible()
    # Kept: through signing in, and on a later visit.
    SpanishConsole(page, base).sign_in("ana")
    console.wait_ready()
    expect(page.locator("html")).to_have_attribute("lang", "es")
    banner_control = page.get_by_role("banner").get_by_role("combobox", name="Idioma", exact=True)
    expect(banner_control).to_have_value("es")
    later = context.new_page()
    later.goto(base + "/agent")
    expect(later.locator("html")).to_have_attribute("lang", "es")
    later.close()
    console.assert_accessible()


def test_A63_everything_said_is_in_the_console_language(handoff_server, browser: Browser):
    context = browser_in(browser, "es-ES")
    try:
        page = context.new_page()
        console = SpanishConsole(page, console_url(handoff_server))
        console.sign_in("ana", "equivocada")
        expect(page.locator("[data-error-summary]")).to_contain_text(ES["signInWrongCredentials"])
        console.sign_in("ana")
        console.wait_ready()
        first = waiting_visitor(handoff_server, console)
        console.wait_said("Hay un visitante nuevo esperando.")
        waiting_visitor(handoff_server, console)
        # On opening, the count of who waits, by Spanish plural rules.
        page.reload()
        console.wait_ready()
        console.wait_said("2 visitantes están esperando.")
        console.assert_accessible()
        # A claim the server refuses is said in Spanish, by the error's code: the visitor left
        # the line while the console still listed it (before its next poll).
        with queue_as_last_polled(page):
            HTTP.delete(first.url + "/handoff", headers=first.headers).raise_for_status()
            console.entry(first.conversation_id).get_by_role("button").press("Enter")
            console.wait_said(ES["errors"]["handoff_not_active"])
        assertive = console.said("assertive")
        assert assertive == [ES["errors"]["handoff_not_active"]], assertive
        english = [text for text in console.said() if any(part in text for part in english_sentences())]
        assert not english, english
        console.assert_accessible()
    finally:
        context.close()
