"""Host pages as they are (docs/embedding.md): the loader on pages that fight it.

Real Chromium and Firefox ESR, a real chat server on loopback and host pages from
tests/e2e/hosting.py on another origin. Each page does what real sites do: Turbo Drive
swaps <body> in the middle of an answer, an SPA re-renders after pushState, a strict CSP
with Trusted Types, a tag manager that inserts the loader after `load`, the snippet pasted
twice, a global reset style sheet, scripts that extend built-in prototypes, a phone whose
visual viewport shrinks under the composer. The unread badge, data-launcher="none" and the
launcher's landmark are the accessibility contract's (test_accessibility_contract_host.py,
docs/accessibility.md A79–A88), which uses the helpers here.

tests/e2e/test_turbo.py runs Turbo itself (from npm); here its Drive's effect is replayed where
a test needs it mid-answer at a chosen moment: per navigation it does
`document.body.replaceWith(newBody)` after a fetch, then runs the new body's scripts
again by recreating them (turbo/src/core/drive/page_renderer.js, `replaceBody` and
`activateNewBodyScriptElements`); `swap_body` below does the same.
"""

from __future__ import annotations

import json
import urllib.request
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from widget_server.testing import ChatWidget

from ..helpers import REPO_ROOT
from .conftest import ANNOUNCE_INTERVAL_MS, chat_base_url

pytestmark = pytest.mark.e2e

EN = json.loads((REPO_ROOT / "static" / "widget" / "i18n" / "en.json").read_text(encoding="utf-8"))
VIEWPORT_FIT = '<meta name="viewport" content="width=device-width, initial-scale=1, viewport-fit=cover">'


def publish(host_site, path: str, *, head: str = "", body: str = "") -> str:
    """A host page of our own making (no loader unless `body` or `head` has one)."""
    host_site.pages[path] = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f"{head or VIEWPORT_FIT}<title>Host site</title></head><body>{body}</body></html>"
    )
    return host_site.origin + path


def loader_tag(chat_url: str, *, type_: str = "", **data: Any) -> str:
    attributes = "".join(f' data-{name.replace("_", "-")}="{value}"' for name, value in data.items())
    kind = f' type="{type_}"' if type_ else ""
    return f'<script src="{chat_url}/widget.js" defer{kind} data-announce-interval="{ANNOUNCE_INTERVAL_MS}"{attributes}></script>'


def swap_body(page: Page, html_text: str, url: str = "/next", scripts: tuple[str, ...] = ()) -> None:
    """Turbo Drive's visit: a new <body> in place of the old one, its scripts run anew."""
    page.evaluate(
        """([html, url, scripts]) => {
            const body = document.createElement('body');
            const main = body.appendChild(document.createElement('main'));
            const heading = main.appendChild(document.createElement('h1'));
            heading.textContent = html;
            for (const src of scripts) {
                const script = document.createElement('script');
                script.src = src;
                body.appendChild(script);
            }
            history.pushState({}, '', url);
            document.body.replaceWith(body);
        }""",
        [html_text, url, list(scripts)],
    )


def after_two_frames(page: Page) -> None:
    page.evaluate("() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))")


def history_of(server, widget: ChatWidget) -> list[dict[str, Any]]:
    """The conversation as the server stored it (what was generated, exactly once or not)."""
    cid, token = widget.panel_frame().evaluate("() => [chatPanel.client.conversationId, chatPanel.client.token]")
    request = urllib.request.Request(
        f"{server.url}/api/v1/conversations/{cid}", headers={"Authorization": f"Bearer {token}"}
    )
    with urllib.request.urlopen(request) as response:
        return json.load(response)["messages"]


def launcher_box(widget: ChatWidget) -> dict[str, float]:
    box = widget.launcher.bounding_box()
    assert box is not None
    return box


def one_widget(page: Page) -> None:
    expect(page.locator("[data-chatwidget]")).to_have_count(1)
    expect(page.locator("[data-chatwidget] .launcher")).to_have_count(1)


def answers_then_closes(widget: ChatWidget, text: str) -> None:
    """The chat opens, answers `text` to the end, and Escape closes it with focus back on the
    launcher: the widget works whole on this page."""
    widget.open()
    widget.send(text)
    assert widget.wait_until_complete() == "completed"
    widget.page.keyboard.press("Escape")
    expect(widget.launcher).to_be_focused()


# -- body replacement and client-side routing ---------------------------------------------------


def test_turbo_body_swap_during_a_running_answer(embed, chat_server, page: Page, browser_name):
    widget = embed(path="/turbo")
    widget.open()
    widget.send("/scenario slow")  # five sentences, a second apart: running across the swap
    expect(widget.last_answer()).to_have_attribute("data-state", "streaming")
    widget.wait_for_announcement(EN["generating"])
    frame = widget.panel_frame()
    frame.evaluate("() => { window.__beforeSwap = true; }")
    chat_url = chat_base_url(chat_server, browser_name)

    swap_body(page, "Another page", scripts=(f"{chat_url}/widget.js",))
    after_two_frames(page)
    one_widget(page)
    expect(widget.launcher).to_be_visible()
    expect(widget.launcher).to_have_attribute("aria-expanded", "true")
    # The same panel document: never moved, so never reloaded.
    assert widget.panel_frame().evaluate("() => window.__beforeSwap === true")
    assert widget.wait_until_complete() == "completed"
    # One generation: the server holds one question and one answer.
    assert [m["role"] for m in history_of(chat_server, widget)] == ["user", "assistant"]
    spoken = [entry["text"] for entry in widget.announcements()]
    assert len(spoken) == len(set(spoken)), spoken  # nothing said twice
    assert spoken.count(EN["complete"]) <= 1

    # A second Turbo visit, with the panel closed: the launcher still opens it.
    page.keyboard.press("Escape")
    expect(widget.launcher).to_be_focused()
    swap_body(page, "A third page", url="/third")
    after_two_frames(page)
    one_widget(page)
    widget.open()
    widget.assert_accessible()


def test_host_element_removed_by_the_page_comes_back_and_the_answer_resumes_quietly(embed, chat_server, page: Page):
    """A page that empties <html> itself removes the host element too: it is put back at
    once; the iframe, moved, reloads, and the panel resumes the running answer from the
    server without a second generation and without saying again what it said."""
    widget = embed(path="/owner")
    widget.open()
    widget.send("/scenario slow")
    widget.panel_frame().wait_for_function("() => (window.__chatwidgetLog || []).length >= 2")
    said_before = {entry["text"] for entry in widget.announcements()} - {EN["complete"]}
    page.evaluate(
        """() => {
            const body = document.createElement('body');
            body.appendChild(document.createElement('main')).textContent = 'Rendered by the framework';
            document.documentElement.replaceChildren(document.head, body);
        }"""
    )
    after_two_frames(page)
    one_widget(page)
    expect(widget.launcher).to_have_attribute("aria-expanded", "true")
    widget.ready.wait_for()
    assert widget.wait_until_complete() == "completed"
    expect(widget.answers).to_have_count(1)
    assert [m["role"] for m in history_of(chat_server, widget)] == ["user", "assistant"]
    said_after = [entry["text"] for entry in widget.announcements()]
    assert not said_before & set(said_after), (said_before, said_after)


def test_spa_pushstate_navigation_re_rendering_the_body(embed, page: Page):
    widget = embed(path="/spa")
    for route in ("/spa/products", "/spa/contact"):
        page.evaluate(
            """(route) => {
                history.pushState({ route }, '', route);
                const main = document.createElement('main');
                main.appendChild(document.createElement('h1')).textContent = route;
                document.body.replaceChildren(main);
            }""",
            route,
        )
        after_two_frames(page)
        one_widget(page)
        expect(widget.launcher).to_be_visible()
    page.go_back()
    expect(page).to_have_url(page.url.rsplit("/", 1)[0] + "/products")
    widget.open()
    widget.send("/echo Still here.")
    assert widget.wait_until_complete() == "completed"
    widget.assert_accessible()


# -- loading --------------------------------------------------------------------------------------

# Trusted Types: Chromium enforces `require-trusted-types-for`; Firefox ESR 128 does not
# implement Trusted Types (MDN browser-compat-data: "trusted-types": firefox false), so
# there the same page runs under the same CSP without the two Trusted Types lines.
CSP_VIOLATIONS = """
window.__violations = [];
document.addEventListener('securitypolicyviolation', (e) =>
  window.__violations.push({ directive: e.effectiveDirective, blocked: e.blockedURI, sample: e.sample }));
"""


def strict_csp(chat_origin: str, *, trusted_types: bool, policies: str = "'none'") -> str:
    # The lines docs/embedding.md tells a host to add, and nothing else allowed.
    policy = (
        f"default-src 'none'; script-src {chat_origin}; frame-src {chat_origin}; "
        "style-src 'none'; img-src 'self'; base-uri 'none'; object-src 'none'"
    )
    if trusted_types:
        policy += f"; require-trusted-types-for 'script'; trusted-types {policies}"
    return f'<meta http-equiv="Content-Security-Policy" content="{policy}">'


@pytest.mark.smoke
def test_strict_csp_with_trusted_types_no_violation(page: Page, context, host_site, chat_server, browser_name):
    trusted_types = browser_name == "chromium"  # Firefox: no Trusted Types (above)
    context.add_init_script(CSP_VIOLATIONS)
    chat_url = chat_base_url(chat_server, browser_name)
    url = publish(
        host_site,
        "/csp",
        head=VIEWPORT_FIT + strict_csp(chat_url, trusted_types=trusted_types),
        body="<main><h1>Strict</h1></main>" + loader_tag(chat_url),
    )
    page.goto(url)
    widget = ChatWidget(page)
    answers_then_closes(widget, "/echo Under **CSP**.")
    assert page.evaluate("() => window.__violations") == []
    # The listener hears what the policy blocks: a string into a Trusted Types sink
    # (Chromium), an inline style attribute (both): so the empty list above is real.
    page.evaluate(
        """() => {
            try { document.body.insertAdjacentHTML('beforeend', '<p>x</p>'); } catch {}
            const probe = document.createElement('div');
            probe.setAttribute('style', 'color: red');
            document.body.appendChild(probe);
        }"""
    )
    expected = {"style-src-attr", "require-trusted-types-for"} if trusted_types else {"style-src-attr"}
    page.wait_for_function(
        "(expected) => expected.every((d) => window.__violations.some((v) => v.directive === d))",
        arg=sorted(expected),
    )


@pytest.mark.parametrize("script_type", ["", "module"], ids=["classic", "module-no-currentScript"])
def test_tag_manager_inserts_the_loader_after_load(page: Page, host_site, chat_server, browser_name, script_type):
    """Inserted by script after `load`, as a tag manager does; as a module script,
    `document.currentScript` is null and the loader finds its element by its path."""
    chat_url = chat_base_url(chat_server, browser_name)
    url = publish(host_site, f"/gtm-{script_type or 'classic'}", body="<main><h1>Late</h1></main>")
    page.goto(url, wait_until="load")
    page.evaluate(
        """([src, type]) => {
            const script = document.createElement('script');
            script.async = true;
            if (type) script.type = type;
            script.src = src;
            script.dataset.title = 'Help desk';
            document.head.appendChild(script);
        }""",
        [f"{chat_url}/widget.js", script_type],
    )
    widget = ChatWidget(page)
    widget.launcher.wait_for()
    one_widget(page)
    # Its data-* options were read from its own element.
    expect(page.locator("[data-chatwidget]").get_by_role("complementary", name="Help desk")).to_have_count(1)
    widget.open()
    widget.send("/echo Late, but here.")
    assert widget.wait_until_complete() == "completed"


def test_pasted_twice_one_working_launcher(page: Page, host_site, chat_server, browser_name):
    chat_url = chat_base_url(chat_server, browser_name)
    url = publish(
        host_site,
        "/twice",
        head=VIEWPORT_FIT + loader_tag(chat_url),
        body="<main><h1>Twice</h1></main>" + loader_tag(chat_url) + loader_tag(chat_url, type_="module"),
    )
    page.goto(url, wait_until="load")
    widget = ChatWidget(page)
    widget.launcher.wait_for()
    after_two_frames(page)
    one_widget(page)
    widget.open()
    expect(page.locator("iframe")).to_have_count(1)
    widget.send("/echo Once.")
    assert widget.wait_until_complete() == "completed"
    assert page.evaluate("() => ChatWidget.isOpen()") is True


# -- the host's CSS and scripts -------------------------------------------------------------------

# What site-wide style sheets do: a reset, border-box everywhere, 62.5 % root font size,
# positioned and transformed divs (a transform makes a box the containing block of fixed
# descendants: CSS Transforms 1 § 2), `all: unset` on buttons and asides.
HOSTILE_CSS = """
html { font-size: 10px; }
*, *::before, *::after { box-sizing: border-box; margin: 0; padding: 0; border: 0; font: inherit; line-height: 1; }
div { position: relative; transform: translateZ(0); display: flex; width: 50%; height: 20px; overflow: hidden; }
button, aside, iframe { all: unset; }
body { font-size: 3rem; letter-spacing: 2px; color: red; }
"""


def test_global_reset_css_leaves_the_launcher_and_panel_as_they_are(page: Page, host_site, chat_server, browser_name):
    chat_url = chat_base_url(chat_server, browser_name)
    geometry = {}
    for name, style in (("plain", ""), ("reset", f"<style>{HOSTILE_CSS}</style>")):
        url = publish(
            host_site,
            f"/css-{name}",
            head=VIEWPORT_FIT + style,
            body="<main><h1>Styles</h1><div><p>A div.</p></div></main>" + loader_tag(chat_url),
        )
        page.goto(url)
        widget = ChatWidget(page)
        launcher = launcher_box(widget)
        font = widget.launcher.evaluate("(n) => getComputedStyle(n).fontSize")
        widget.open()
        panel = widget.iframe.bounding_box()
        geometry[name] = (launcher, font, panel)
    assert geometry["reset"] == geometry["plain"]
    assert geometry["plain"][0]["height"] >= 44 and geometry["plain"][0]["width"] >= 44


PROTOTYPE_EXTENSIONS = """
Object.prototype.extend = function (other) { return Object.assign(this, other); };
Object.prototype.type = 'prototype.js-style';
Array.prototype.last = function () { return this[this.length - 1]; };
Array.prototype.each = function (fn) { for (let i = 0; i < this.length; i++) fn(this[i]); };
String.prototype.strip = function () { return this.trim(); };
"""


def test_pages_that_extend_built_in_prototypes(page: Page, context, host_site, chat_server, browser_name):
    # Enumerable additions (assignment, as old libraries do): a `for…in` or an
    # `obj[name]` lookup would find them.
    context.add_init_script(PROTOTYPE_EXTENSIONS)
    chat_url = chat_base_url(chat_server, browser_name)
    page.goto(publish(host_site, "/proto", body="<main><h1>Old</h1></main>" + loader_tag(chat_url)))
    assert page.evaluate("() => 'each' in [] && ({}).type === 'prototype.js-style'")
    widget = ChatWidget(page)
    answers_then_closes(widget, "/echo Prototypes are fine.")
    expect(widget.launcher).to_have_attribute("aria-label", EN["launcherLabel"])


# -- phones ---------------------------------------------------------------------------------------

PHONE = {"width": 390, "height": 740}


def composer_in_visual_viewport(page: Page, widget: ChatWidget) -> dict[str, float]:
    """The composer's box in host-page coordinates, and the visual viewport's."""
    frame_box = widget.iframe.bounding_box()
    inner = widget.input.evaluate(
        "(n) => { const r = n.getBoundingClientRect(); return { top: r.top, bottom: r.bottom }; }"
    )
    viewport = page.evaluate(
        "() => ({ top: visualViewport.offsetTop, bottom: visualViewport.offsetTop + visualViewport.height })"
    )
    assert frame_box is not None
    return {
        "top": frame_box["y"] + inner["top"],
        "bottom": frame_box["y"] + inner["bottom"],
        "viewport_top": viewport["top"],
        "viewport_bottom": viewport["bottom"],
    }


def test_phone_keyboard_keeps_the_composer_visible(browser, host_site, chat_server, browser_name):
    """No browser driver shows an on-screen keyboard. What the keyboard does to the page
    in Chrome for Android (its default `interactive-widget=resizes-visual`) is shrink the
    visual viewport, not the layout viewport, and fire visualViewport `resize`; the DevTools
    protocol's Emulation.setPageScaleFactor shrinks it the same way. Firefox: WebDriver BiDi
    has no way to make the visual viewport differ from the layout viewport."""
    if browser_name != "chromium":
        pytest.skip("Firefox: WebDriver BiDi cannot shrink the visual viewport alone (no CDP)")
    context = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
    ChatWidget.install_recorder(context)
    try:
        page = context.new_page()
        chat_url = chat_base_url(chat_server, browser_name)
        page.goto(publish(host_site, "/phone", body="<main><h1>Phone</h1></main>" + loader_tag(chat_url)))
        widget = ChatWidget(page)
        widget.open()
        expect(widget.input).to_be_focused()
        cdp = context.new_cdp_session(page)
        cdp.send("Emulation.setPageScaleFactor", {"pageScaleFactor": 2})  # the keyboard takes half
        page.wait_for_function("() => visualViewport.height < innerHeight * 0.6")
        after_two_frames(page)
        box = composer_in_visual_viewport(page, widget)
        assert box["viewport_top"] <= box["top"] and box["bottom"] <= box["viewport_bottom"] + 0.5, box
        cdp.send("Emulation.setPageScaleFactor", {"pageScaleFactor": 1})  # the keyboard goes away
        page.wait_for_function("() => visualViewport.height === innerHeight")
        after_two_frames(page)
        frame_box = widget.iframe.bounding_box()
        assert frame_box is not None and frame_box["height"] == PHONE["height"]
    finally:
        context.close()
