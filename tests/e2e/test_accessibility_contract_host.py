"""docs/accessibility.md, "On the host page" (A79–A88), one test per id, in real Chromium and
Firefox ESR: the launcher's landmark, the unread badge, data-launcher="none", Turbo Drive and
SPA navigation, phones (visual viewport, safe area, scroll lock), the host's global CSS, and
the loader loaded late, twice or under a strict CSP. axe runs in each new state.

Host pages and helpers: test_host_pages.py (which also has the wider host-page tests).
"""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from widget_server.i18n import ui_strings
from widget_server.testing import ChatWidget

from .conftest import chat_base_url
from .test_handoff_widget import HANDOFF_SETTINGS, Agent, conversation_of, fmt, talk_to_a_person
from .test_host_pages import (
    CSP_VIOLATIONS,
    HOSTILE_CSS,
    PHONE,
    VIEWPORT_FIT,
    after_two_frames,
    composer_in_visual_viewport,
    loader_tag,
    one_widget,
    publish,
    strict_csp,
    swap_body,
)
from .test_second_engine import ace_results, failures

pytestmark = pytest.mark.e2e

STRINGS = ui_strings()
EN = STRINGS["en"]

# A page whose every piece of content is in a landmark: header, nav, main, footer.
LANDMARKED = (
    '<header><p>Guitar shop</p></header><nav aria-label="Site"><a href="#a">Home</a></nav>'
    "<main><h1>Strings</h1><p>Nylon or steel.</p></main><footer><p>© shop</p></footer>"
)


def unread_name(count: int, lang: str = "en") -> str:
    # Intl.PluralRules for en and es: `one` for 1, `other` for 2 to 999,999.
    strings = STRINGS[lang]
    category = "one" if count == 1 else "other"
    return fmt(strings["launcherUnread"][category], label=strings["launcherLabel"], count=count)


def badge(widget: ChatWidget) -> str:
    """The badge's text as drawn: generated content (`::after`), which is not in the
    accessibility tree on its own; `none` when there is no badge."""
    # Chromium computes `attr(data-unread)` to the string; Firefox reports it as specified.
    return widget.launcher.evaluate(
        """(n) => {
            const content = getComputedStyle(n, '::after').content;
            return content === 'attr(data-unread)' ? JSON.stringify(n.dataset.unread) : content;
        }"""
    )


def open_page(page: Page, host_site, chat_server, browser_name, path: str, *, body: str = "", head: str = "", **data):
    chat_url = chat_base_url(chat_server, browser_name)
    page.goto(publish(host_site, path, head=head, body=(body or LANDMARKED) + loader_tag(chat_url, **data)))
    widget = ChatWidget(page)
    widget.wait_for_widget()
    return widget


def close_with_escape(widget: ChatWidget) -> None:
    widget.page.keyboard.press("Escape")
    expect(widget.launcher).to_have_attribute("aria-expanded", "false")


def test_A79_launcher_in_its_own_named_landmark(page: Page, host_site, chat_server, browser_name):
    widget = open_page(page, host_site, chat_server, browser_name, "/a79")
    region = page.locator("[data-chatwidget]").get_by_role("complementary", name=EN["panelTitle"])
    expect(region).to_have_count(1)
    expect(region.get_by_role("button", name=EN["launcherLabel"])).to_be_visible()
    # axe's `region` rule (best-practice) and IBM's aria_content_in_landmark: nothing of the
    # page, the launcher included, is outside a landmark.
    widget.assert_accessible()
    results = ace_results(page.main_frame)
    assert failures(results) == []
    assert not [r for r in results if r["rule"] == "aria_content_in_landmark" and r["outcome"] == "FAIL"]
    widget.open()
    expect(region.get_by_role("dialog", name=EN["panelTitle"])).to_be_visible()
    widget.assert_accessible()


def test_A80_unread_answers_on_the_launcher(page: Page, host_site, chat_server, browser_name):
    widget = open_page(page, host_site, chat_server, browser_name, "/a80")
    assert badge(widget) == "none"
    widget.open()
    widget.send("/scenario slow")  # a few seconds: time to close the panel first
    expect(widget.last_answer()).to_have_attribute("data-state", "streaming")
    close_with_escape(widget)
    expect(widget.launcher).to_have_accessible_name(EN["launcherLabel"])
    for count in (1, 2):
        expect(widget.answers).to_have_count(count)
        expect(widget.last_answer()).to_have_attribute("data-state", "completed", timeout=30_000)  # hidden
        expect(widget.launcher).to_have_accessible_name(unread_name(count))
        assert badge(widget) == f'"{count}"'
        expect(widget.launcher).to_be_focused()
        widget.assert_accessible()
        if count == 1:
            # A second answer while still closed: a question the panel sends by itself (as its
            # offline outbox does once back online, outbox.js).
            widget.panel_frame().evaluate("() => { chatPanel.input.value = '/echo Second.'; chatPanel.submit(); }")
    widget.open()  # seen: the count goes
    expect(widget.launcher).to_have_accessible_name(EN["launcherLabel"])
    assert badge(widget) == "none"
    # An answer that ends while the panel is open is seen, not unread.
    widget.send("/echo Seen.")
    assert widget.wait_until_complete() == "completed"
    close_with_escape(widget)
    expect(widget.launcher).to_have_accessible_name(EN["launcherLabel"])
    widget.assert_accessible()


def test_A81_unread_agent_messages_with_plural_forms(page: Page, host_site, chat_server_factory, browser_name):
    server = chat_server_factory(**HANDOFF_SETTINGS)
    agent = Agent(server)
    agent.present()
    widget = open_page(page, host_site, server, browser_name, "/a81", lang="es")
    widget.lang = "es"
    es = STRINGS["es"]
    widget.open()
    talk_to_a_person(widget, es)
    widget.wait_for_announcement(es["handoff"]["queuedNext"])  # asked for: now it can be claimed
    cid, _ = conversation_of(widget)
    agent.claim(cid)
    widget.wait_for_announcement(fmt(es["handoff"]["assigned"], agent="Ana"))
    close_with_escape(widget)
    for count, text in enumerate(("Hola.", "¿Sigue ahí?"), start=1):
        agent.say(cid, text)
        expect(widget.launcher).to_have_accessible_name(unread_name(count, "es"))
        assert badge(widget) == f'"{count}"'
    assert unread_name(2, "es").endswith("2 mensajes sin leer")
    widget.assert_accessible()
    widget.open()
    expect(widget.launcher).to_have_accessible_name(es["launcherLabel"])
    expect(widget.frame.locator("[data-chat-transcript] > li.turn--agent")).to_have_count(2)
    widget.assert_accessible()


SITE_BUTTON = '<main><h1>Help</h1><p><button type="button" id="site-help">Ask us</button></p></main>'


def test_A82_no_launcher_the_site_button_gets_focus_back(page: Page, host_site, chat_server, browser_name):
    chat_url = chat_base_url(chat_server, browser_name)
    page.goto(publish(host_site, "/a82", body=SITE_BUTTON + loader_tag(chat_url, launcher="none")))
    page.wait_for_function("() => window.ChatWidget")
    site_button = page.locator("#site-help")
    # The site wires its button (here through the page's own script, as a site would).
    page.evaluate("() => document.getElementById('site-help').addEventListener('click', () => ChatWidget.open())")
    expect(page.locator("[data-chatwidget] .launcher")).to_have_count(0)
    expect(page.locator("[data-chatwidget]").get_by_role("complementary", name=EN["panelTitle"])).to_have_count(1)
    widget = ChatWidget(page)
    widget.assert_accessible()
    for close in ("Escape", "button"):
        site_button.focus()
        page.keyboard.press("Enter")
        widget.ready.wait_for()
        expect(widget.input).to_be_focused()
        widget.assert_accessible()
        if close == "Escape":
            page.keyboard.press("Escape")
        else:
            widget.frame.locator("[data-chat-close]").click()
        expect(site_button).to_be_focused()
        assert page.evaluate("() => ChatWidget.isOpen()") is False


def test_A83_body_swap_keeps_launcher_panel_and_focus(page: Page, host_site, chat_server, browser_name):
    widget = open_page(page, host_site, chat_server, browser_name, "/a83")
    widget.open()
    widget.send("/scenario slow")
    expect(widget.last_answer()).to_have_attribute("data-state", "streaming")
    swap_body(page, "Next page")  # Turbo Drive
    after_two_frames(page)
    one_widget(page)
    expect(widget.launcher).to_have_attribute("aria-expanded", "true")
    expect(widget.input).to_be_focused()  # focus stays where the visitor was typing
    assert widget.wait_until_complete() == "completed"
    # The last sentence is said up to one announce interval after the state changes (the
    # announcer's pace, A5): wait for it, then count.
    widget.wait_for_announcement("This is the last sentence.")
    spoken = [entry["text"] for entry in widget.announcements()]
    assert spoken.count("This is the last sentence.") == 1 and len(spoken) == len(set(spoken)), spoken
    widget.assert_accessible()
    close_with_escape(widget)
    expect(widget.launcher).to_be_focused()
    page.evaluate(
        """() => {
            history.pushState({}, '', '/a83/spa');
            const main = document.createElement('main');
            main.appendChild(document.createElement('h1')).textContent = 'Another route';
            document.body.replaceChildren(main);
        }"""
    )
    after_two_frames(page)
    expect(widget.launcher).to_be_visible()
    expect(widget.launcher).to_have_accessible_name(EN["launcherLabel"])
    widget.assert_accessible()


def test_A84_phone_panel_follows_the_visual_viewport(browser, host_site, chat_server, browser_name):
    """Chromium: the visual viewport is shrunk as an on-screen keyboard does (DevTools
    protocol, see test_host_pages.test_phone_keyboard_keeps_the_composer_visible). Firefox:
    WebDriver BiDi cannot shrink it alone; there the full-screen panel's composer is checked
    in the whole viewport."""
    context = browser.new_context(viewport=PHONE, **({"is_mobile": True} if browser_name == "chromium" else {}))
    ChatWidget.install_recorder(context)
    try:
        page = context.new_page()
        widget = open_page(page, host_site, chat_server, browser_name, "/a84")
        widget.open()
        frame_box = widget.iframe.bounding_box()
        assert frame_box == {"x": 0, "y": 0, "width": PHONE["width"], "height": PHONE["height"]}
        expect(widget.launcher).to_be_hidden()  # the panel's own Close takes its place
        if browser_name == "chromium":
            context.new_cdp_session(page).send("Emulation.setPageScaleFactor", {"pageScaleFactor": 2})
            page.wait_for_function("() => visualViewport.height < innerHeight * 0.6")
            after_two_frames(page)
        box = composer_in_visual_viewport(page, widget)
        assert box["viewport_top"] <= box["top"] and box["bottom"] <= box["viewport_bottom"] + 0.5, box
        expect(widget.input).to_be_focused()
        widget.assert_accessible()
    finally:
        context.close()


def test_A85_phone_panel_inside_the_safe_area(browser, host_site, chat_server, browser_name):
    """Chromium: DevTools' Emulation.setSafeAreaInsetsOverride gives the notch and home
    indicator insets a phone has. Firefox has no way to set them (env() is 0): there the
    panel fills the screen."""
    context = browser.new_context(viewport=PHONE)
    ChatWidget.install_recorder(context)
    insets = {"top": 47, "bottom": 34, "left": 0, "right": 0} if browser_name == "chromium" else {}
    try:
        page = context.new_page()
        if insets:
            context.new_cdp_session(page).send("Emulation.setSafeAreaInsetsOverride", {"insets": insets})
        widget = open_page(page, host_site, chat_server, browser_name, "/a85")
        launcher = widget.launcher.bounding_box()
        assert launcher is not None
        assert launcher["y"] + launcher["height"] <= PHONE["height"] - insets.get("bottom", 0) - 16 + 0.5
        widget.open()
        box = widget.iframe.bounding_box()
        top, bottom = insets.get("top", 0), insets.get("bottom", 0)
        assert box == {"x": 0, "y": top, "width": PHONE["width"], "height": PHONE["height"] - top - bottom}
        widget.assert_accessible()
    finally:
        context.close()


def test_A86_phone_scroll_lock_only_while_open(browser, host_site, chat_server, browser_name):
    long_page = LANDMARKED.replace("<p>Nylon or steel.</p>", "<p>Nylon or steel.</p>" * 200)
    for viewport, locks in ((PHONE, True), ({"width": 1200, "height": 800}, False)):
        context = browser.new_context(viewport=viewport)
        ChatWidget.install_recorder(context)
        try:
            page = context.new_page()
            widget = open_page(page, host_site, chat_server, browser_name, "/a86", body=long_page)
            # The page's own inline overflow (a site may set one): restored exactly.
            page.evaluate(
                "() => { document.documentElement.style.setProperty('overflow-x', 'clip'); scrollTo(0, 300); }"
            )
            before = page.evaluate("() => [document.documentElement.getAttribute('style'), scrollY]")
            widget.open()
            overflow = page.evaluate("() => getComputedStyle(document.documentElement).overflowY")
            assert (overflow == "hidden") is locks
            close_with_escape(widget)
            assert page.evaluate("() => [document.documentElement.getAttribute('style'), scrollY]") == before
            widget.assert_accessible()
        finally:
            context.close()


def test_A87_host_css_cannot_change_the_launcher(page: Page, host_site, chat_server, browser_name):
    widget = open_page(
        page, host_site, chat_server, browser_name, "/a87", head=VIEWPORT_FIT + f"<style>{HOSTILE_CSS}</style>"
    )
    box = widget.launcher.bounding_box()
    assert box is not None and box["width"] >= 44 and box["height"] >= 44
    # Where it belongs: 16 px from the viewport's bottom right corner, whole and unclipped.
    viewport = page.viewport_size
    assert viewport is not None
    assert (round(box["x"] + box["width"]), round(box["y"] + box["height"])) == (
        viewport["width"] - 16,
        viewport["height"] - 16,
    )
    expect(widget.launcher).to_be_in_viewport(ratio=1)
    assert widget.launcher.evaluate("(n) => getComputedStyle(n).fontSize") == "16px"
    page.keyboard.press("Tab")
    for _ in range(10):
        if widget.launcher.evaluate("(n) => n.matches(':focus-visible')"):
            break
        page.keyboard.press("Tab")
    outline = widget.launcher.evaluate("(n) => [getComputedStyle(n).outlineStyle, getComputedStyle(n).outlineWidth]")
    assert outline == ["solid", "3px"]
    widget.assert_accessible()


def test_A88_late_twice_and_strict_csp_one_launcher(page: Page, context, host_site, chat_server, browser_name):
    """Trusted Types lines only in Chromium: Firefox ESR does not implement them. The tag
    manager has a Trusted Types policy of its own, as it needs on such a page; the loader
    needs none."""
    context.add_init_script(CSP_VIOLATIONS)
    chat_url = chat_base_url(chat_server, browser_name)
    url = publish(
        host_site,
        "/a88",
        head=VIEWPORT_FIT
        + strict_csp(chat_url, trusted_types=browser_name == "chromium", policies="tag-manager")
        + loader_tag(chat_url),
        body=LANDMARKED + loader_tag(chat_url),
    )
    page.goto(url, wait_until="load")
    # …and a tag manager inserts it a third time, after `load`.
    page.evaluate(
        """(src) => {
            const policy = window.trustedTypes?.createPolicy('tag-manager', { createScriptURL: (url) => url });
            const script = document.createElement('script');
            script.src = policy ? policy.createScriptURL(src) : src;
            document.head.appendChild(script);
        }""",
        f"{chat_url}/widget.js",
    )
    widget = ChatWidget(page)
    widget.launcher.wait_for()
    after_two_frames(page)
    one_widget(page)
    expect(page.get_by_role("complementary", name=EN["panelTitle"])).to_have_count(1)
    widget.assert_accessible()
    widget.open()
    widget.send("/echo One launcher.")
    assert widget.wait_until_complete() == "completed"
    close_with_escape(widget)
    expect(widget.launcher).to_be_focused()
    assert page.evaluate("() => window.__violations") == []
    widget.assert_accessible()
