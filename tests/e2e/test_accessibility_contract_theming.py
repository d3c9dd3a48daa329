"""docs/accessibility.md, "Theming" (A73–A78), one test per id.

Each runs in Chromium and Firefox ESR (the default parametrization) with the widget embedded
on another origin, and runs axe in each new state. Dark is chosen with data-color-scheme
(Firefox through WebDriver BiDi cannot emulate prefers-color-scheme); `auto` under an emulated
preference is Chromium's part of A75.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from widget_server import theme

from .test_theming import CONTRAST_SCRIPT, LAUNCHER_SCRIPT, PANEL_STYLE_SCRIPT, launcher_contrast, rgb

pytestmark = pytest.mark.e2e

MEASURE = f"() => ({CONTRAST_SCRIPT})(document.body)"

# Targets of the panel and the launcher, each with its size (A76).
TARGETS_JS = """() => Array.from(document.querySelectorAll('button, textarea, input, a[href]'))
  .filter((n) => n.getClientRects().length && !n.closest('[hidden]'))
  .map((n) => { const r = n.getBoundingClientRect(); return [n.className || n.tagName, r.width, r.height]; })"""


def measured_clean(widget) -> dict:
    result = widget.panel_frame().evaluate(MEASURE)
    assert result["failures"] == [], result
    return result


@pytest.mark.firefox_sample(accent=["#ffda1a", "#0a0a0a"])
@pytest.mark.parametrize(("accent", "scheme"), [("#ffda1a", "light"), ("#0a0a0a", "dark"), ("#1877f2", "light")])
def test_A73_every_text_control_and_focus_ring_passes_whatever_the_accent(embed, accent, scheme):
    widget = embed(accent=accent, color_scheme=scheme, starters='["Opening hours?"]')
    assert launcher_contrast(widget) >= 4.5
    widget.assert_accessible()
    widget.open()
    empty = measured_clean(widget)
    assert empty["focus"] >= 3  # the composer has focus on open, its ring measured
    widget.send("Hello")
    widget.wait_until_complete()
    widget.input.focus()
    answered = measured_clean(widget)
    assert answered["texts"] > empty["texts"]  # the visitor's tinted message and the answer, measured
    widget.assert_accessible()


def test_A74_a_weak_accent_is_replaced_by_a_passing_shade_and_the_console_says_so(embed, page):
    messages: list[str] = []
    page.on("console", lambda message: messages.append(message.text))
    weak = "#1db954"  # Spotify green: 2.58:1 on white
    widget = embed(accent=weak, color_scheme="light")
    launcher = page.evaluate(LAUNCHER_SCRIPT)
    assert launcher["background"] == rgb(weak) and launcher["color"] == "rgb(0, 0, 0)"
    widget.open()
    light, notes = theme.derive_palette(theme.parse_color(weak), "light")
    panel = widget.panel_frame().evaluate(PANEL_STYLE_SCRIPT)
    used = light["accent"]
    assert panel["sendBackground"] == rgb(used) and used != weak
    # The same hue (OKLCH), darker, with 4.5:1 on white.
    assert theme.contrast_ratio(theme.hex_rgb(used), (255, 255, 255)) >= 4.5
    # What the panel writes to the console (chat.js: every config warning) says both colours and why.
    warnings = widget.panel_frame().evaluate(
        "() => JSON.parse(document.getElementById('chat-config').textContent).warnings"
    )
    assert warnings == notes
    assert weak in warnings[0] and used in warnings[0] and "4.5:1" in warnings[0]
    # ... in the browser's console (the panel's frame logs to the page's console).
    for _ in range(100):
        if any(warnings[0] in m for m in messages):
            break
        page.wait_for_timeout(50)
    assert any(warnings[0] in m for m in messages), messages
    widget.assert_accessible()


@pytest.mark.parametrize("scheme", ["light", "dark", "auto-dark"])
def test_A75_the_colour_scheme_is_the_visitors_or_the_sites(embed, page, browser_name, scheme):
    data = {"color_scheme": scheme}
    if scheme == "auto-dark":
        if browser_name != "chromium":
            pytest.skip("Firefox through WebDriver BiDi cannot emulate prefers-color-scheme (module docstring)")
        page.emulate_media(color_scheme="dark")
        data = {}
    elif scheme == "light" and browser_name == "chromium":
        page.emulate_media(color_scheme="dark")  # the site's choice wins over the visitor's
    widget = embed(**data)
    widget.open()
    panel = widget.panel_frame().evaluate(PANEL_STYLE_SCRIPT)
    expected = "light" if scheme == "light" else "dark"
    assert panel["background"] == rgb(theme.NEUTRALS[expected]["bg"])
    assert panel["color"] == rgb(theme.NEUTRALS[expected]["fg"])
    # The property native controls and scrollbars follow: the one scheme chosen, or both for auto.
    assert panel["scheme"] == ("light dark" if scheme == "auto-dark" else expected)
    measured_clean(widget)
    widget.assert_accessible()


@pytest.mark.parametrize("radius", ["none", "large"])
def test_A76_compact_and_every_radius_keep_44_px_targets(embed, radius):
    widget = embed(density="compact", radius=radius, starters='["Opening hours?"]')
    box = widget.launcher.bounding_box()
    assert box["width"] >= 44 and box["height"] >= 44
    widget.open()
    targets = widget.panel_frame().evaluate(TARGETS_JS)
    assert len(targets) >= 5, targets
    small = [t for t in targets if t[1] < 44 or t[2] < 44]
    assert small == [], small
    # From the composer (focused on open), Tab reaches Send by keyboard: :focus-visible draws
    # its ring, outside the control (an offset of 0 or more).
    widget.input.press("Tab")
    expect(widget.send_button).to_be_focused()
    style = widget.send_button.evaluate(
        "n => { const s = getComputedStyle(n);"
        " return [s.outlineStyle, parseFloat(s.outlineWidth), parseFloat(s.outlineOffset)]; }"
    )
    assert style[0] != "none" and style[1] >= 2 and style[2] >= 0, style
    widget.assert_accessible()


def test_A77_a_sites_launcher_label_is_its_whole_name_and_the_icon_is_not_in_it(embed):
    widget = embed(launcher_label="Ask our team", launcher_icon="help")
    expect(widget.launcher).to_have_accessible_name("Ask our team")
    expect(widget.launcher).to_have_text("Ask our team")
    launcher = widget.page.evaluate(LAUNCHER_SCRIPT)
    assert launcher["icon"] == '"?"'  # drawn, yet the name is the label alone (aria-label)
    assert widget.page.get_by_role("button", name="Ask our team", exact=True).count() == 1
    widget.assert_accessible()
    widget.open()
    widget.assert_accessible()


def test_A78_an_unusable_theme_value_changes_nothing_and_is_named_in_the_console(embed, page):
    messages: list[str] = []
    page.on("console", lambda message: messages.append(message.text))
    widget = embed(
        accent="var(--brand)",
        font="x;}*{color:red}",
        radius="round",
        density="airy",
        color_scheme="sepia",
        launcher_icon="star",
        z_index="top",
    )
    assert any('data-accent "var(--brand)" ignored' in m for m in messages), messages
    launcher = page.evaluate(LAUNCHER_SCRIPT)
    assert launcher["background"] == "rgb(11, 87, 208)" and launcher["radius"] == "24px"
    assert launcher["padding"] == "10px" and launcher["z"] == "2147483000"
    assert launcher["font"].startswith("system-ui") and launcher["icon"] == "none"
    widget.assert_accessible()
    widget.open()
    warnings = widget.panel_frame().evaluate(
        "() => JSON.parse(document.getElementById('chat-config').textContent).warnings"
    )
    for option in ("data-font", "data-radius", "data-density", "data-color-scheme"):
        assert any(w.startswith(f"{option} ") and "ignored" in w for w in warnings), (option, warnings)
    panel = widget.panel_frame().evaluate(PANEL_STYLE_SCRIPT)
    assert panel["buttonRadius"] == "6px" and panel["composerPadding"] == "12px"  # medium, comfortable
    assert panel["font"].startswith("system-ui")
    widget.send("Hello")
    assert widget.wait_until_complete() == "completed"
    measured_clean(widget)
    widget.assert_accessible()
