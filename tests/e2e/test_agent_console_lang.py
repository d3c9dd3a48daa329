"""The agent console in Spanish (docs/agents.md, "Languages"), in real Chromium and Firefox ESR
against a real server: a browser that prefers Spanish gets the sign-in page and the console in
Spanish, the agent signs in by keyboard with the Spanish labels, claims a waiting visitor and
replies, everything said in Spanish, axe clean; an agent with an English browser chooses
Spanish with the language control and keeps it. The contract lines are
tests/e2e/test_accessibility_contract_agent_lang.py (A61–A63).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect

from widget_server.testing import ChatWidget

from .test_agent_console import Console, console_url, start_handoff_server, waiting_visitor

pytestmark = pytest.mark.e2e

ES = json.loads((Path(__file__).resolve().parents[2] / "static/agent/i18n/es.json").read_text(encoding="utf-8"))


@pytest.fixture
def handoff_server(chat_server_factory, tmp_path):
    return start_handoff_server(chat_server_factory, tmp_path)


@pytest.fixture
def spanish_context(browser: Browser):
    """A browser whose language is Spanish (Playwright's locale sets its Accept-Language),
    with the announcement recorder the other console tests use."""
    context = browser.new_context(locale="es-ES")
    ChatWidget.install_recorder(context)
    yield context
    context.close()


class SpanishConsole(Console):
    """The console as a Spanish-speaking agent uses it: found by its Spanish names."""

    SIGN_IN_LABEL, NAME_LABEL, PASSWORD_LABEL = "Iniciar sesión", "Nombre", "Contraseña"

    def __init__(self, page: Page, base: str) -> None:
        super().__init__(page, base)
        self.reply = page.get_by_role("textbox", name="Respuesta", exact=True)


@pytest.mark.chromium_only(
    reason="a browser's languages choose the console's in Firefox in test_agent_console_languages.py (Arabic) and A61-A63; Spanish is more of the same data"
)
def test_a_spanish_browser_signs_in_claims_and_replies_in_spanish(handoff_server, spanish_context: BrowserContext):
    page = spanish_context.new_page()
    console = SpanishConsole(page, console_url(handoff_server))
    console.sign_in("ana", "no es la contraseña")
    expect(page.locator("html")).to_have_attribute("lang", "es")
    summary = page.locator("[data-error-summary]")
    expect(summary).to_be_focused()
    expect(summary.get_by_role("heading", name="Hay un problema")).to_be_visible()
    expect(summary).to_contain_text(ES["signInWrongCredentials"])
    assert page.title() == "Error: Iniciar sesión – Consola de agentes"
    console.assert_accessible()

    console.sign_in("ana")
    console.wait_ready()
    expect(page.locator("html")).to_have_attribute("lang", "es")
    assert page.title() == "Consola de agentes"
    expect(page.get_by_role("heading", level=1, name="Consola de agentes")).to_be_visible()
    expect(page.locator("[data-agent-who]")).to_have_text("Sesión iniciada como Ana")
    expect(page.get_by_role("main").get_by_role("heading", level=2)).to_have_text(
        ["Cola", "Tus conversaciones", "Conversación", "Bandeja de entrada", "Avisos"]
    )
    expect(page.get_by_text("No hay nadie esperando.")).to_be_visible()
    console.assert_accessible()

    visitor = waiting_visitor(handoff_server, console)
    console.wait_said("Hay un visitante nuevo esperando.")
    entry = console.entry(visitor.conversation_id)
    expect(entry).to_contain_text("1. Esperando menos de un minuto")
    expect(entry).to_contain_text("Aún no hay mensajes.")
    claim = entry.get_by_role("button", name="Atender la conversación 1, esperando menos de un minuto")
    expect(claim).to_have_text("Atender")
    console.assert_accessible()
    claim.focus()
    page.keyboard.press("Enter")
    expect(console.root).to_have_attribute("data-conversation-state", "assigned")
    expect(page.locator("#conversation-heading")).to_be_focused()
    console.wait_said("Conversación atendida.")
    expect(page.get_by_text("Estás hablando con el visitante.")).to_be_visible()

    expect(console.reply).to_have_accessible_description("Intro envía; Mayús+Intro añade una línea.")
    console.reply.focus()
    page.keyboard.type("Hola, soy Ana. ¿En qué puedo ayudarte?")
    page.keyboard.press("Enter")
    mine = console.transcript.last
    expect(mine).to_have_attribute("data-verified", "true")
    expect(mine.locator(".transcript__who")).to_have_text("Tú")
    assert [m["text"] for m in visitor.history() if m["role"] == "agent"] == ["Hola, soy Ana. ¿En qué puedo ayudarte?"]
    visitor.say("Mi pedido no ha llegado.")
    theirs = console.transcript.filter(has_text="Mi pedido no ha llegado.")
    expect(theirs.locator(".transcript__who")).to_have_text("Visitante")
    console.wait_said("Visitante: Mi pedido no ha llegado.")
    expect(page.get_by_role("button", name="Terminar", exact=True)).to_be_visible()
    expect(page.get_by_role("button", name="Devolver al asistente", exact=True)).to_be_visible()
    console.assert_accessible()
    # Nothing the console said was English.
    said = console.said()
    assert said and not [text for text in said if text in ("A new visitor is waiting.", "Conversation claimed.")], said

    page.get_by_role("button", name="Terminar", exact=True).click()
    console.wait_said("Conversación terminada.")
    expect(page.locator("#queue-heading")).to_be_focused()


def test_an_english_browser_chooses_spanish_and_keeps_it(handoff_server, context: BrowserContext):
    page = context.new_page()
    console = Console(page, console_url(handoff_server))
    page.goto(console.base + "/agent")
    expect(page.locator("html")).to_have_attribute("lang", "en")
    language = page.get_by_role("combobox", name="Language")
    expect(language).to_have_value("en")
    # By keyboard: choosing in the list changes nothing until the button is pressed.
    language.focus()
    page.keyboard.press("ArrowDown")
    expect(language).to_have_value("es")
    expect(page.locator("html")).to_have_attribute("lang", "en")
    page.keyboard.press("Tab")
    expect(page.get_by_role("button", name="Change language")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator("html")).to_have_attribute("lang", "es")
    expect(page.get_by_role("button", name="Iniciar sesión", exact=True)).to_be_visible()
    expect(page.get_by_role("combobox", name="Idioma")).to_have_value("es")

    # Kept: the sign-in and the console after it are Spanish, and so is the next visit.
    SpanishConsole(page, console.base).sign_in("ana")
    console.wait_ready()
    expect(page.locator("html")).to_have_attribute("lang", "es")
    expect(page.get_by_role("heading", level=1, name="Consola de agentes")).to_be_visible()
    page.goto(console.base + "/agent")
    console.wait_ready()
    expect(page.get_by_role("banner").get_by_role("button", name="Cerrar sesión")).to_be_visible()
    console.assert_accessible()

    # And back to English from the console's banner.
    page.get_by_role("combobox", name="Idioma").select_option("en")
    page.get_by_role("button", name="Cambiar idioma").click()
    console.wait_ready()
    expect(page.locator("html")).to_have_attribute("lang", "en")
    expect(page.get_by_role("heading", level=1, name="Agent console")).to_be_visible()
