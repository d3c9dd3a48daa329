"""Theming in real browsers (docs/theming.md): each lever changes what it should (computed
styles of the launcher and the panel), and contrast measured in the page over every visible
text and control of the panel and the launcher, for colours of tests/test_theme.py's list,
in the light and the dark scheme.

Firefox through WebDriver BiDi cannot emulate prefers-color-scheme: dark is tested there with
data-color-scheme="dark"; `auto` under an emulated dark preference in Chromium only."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from widget_server import theme

pytestmark = pytest.mark.e2e

# Ten of the forty-eight: a pure hue, brand colours, a pastel, near-white, near-black, a grey.
BROWSER_COLOURS = {
    "yellow": "yellow",
    "Spotify green": "#1db954",
    "Facebook blue": "#1877f2",
    "Coca-Cola red": "#f40009",
    "IKEA yellow": "#ffda1a",
    "Starbucks green": "#00704a",
    "pastel pink": "#ffd1dc",
    "near white": "#fafafa",
    "near black": "#0a0a0a",
    "grey": "rgb(128, 128, 128)",
}

# In the page: WCAG 2.2 contrast (https://www.w3.org/TR/WCAG22/#dfn-contrast-ratio) of every
# visible text against the background it is painted on (ancestors' backgrounds composited),
# and of every control's boundary (its border, else its own fill) against what is around it.
CONTRAST_SCRIPT = """(root) => {
  const parse = (css) => {
    const n = css.match(/[\\d.]+/g).map(Number);
    return { rgb: n.slice(0, 3), a: n.length > 3 ? n[3] : 1 };
  };
  const lum = (rgb) => rgb.map((v) => { v /= 255; return v <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; })
    .reduce((s, v, i) => s + v * [0.2126, 0.7152, 0.0722][i], 0);
  const ratio = (a, b) => { const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p); return (x + 0.05) / (y + 0.05); };
  const backdrop = (element) => {
    const layers = [];
    for (let e = element; e; e = e.parentElement) {
      const c = parse(getComputedStyle(e).backgroundColor);
      if (c.a > 0) { layers.push(c); if (c.a >= 1) break; }
    }
    let out = [255, 255, 255];
    for (const layer of layers.reverse()) out = out.map((v, i) => layer.rgb[i] * layer.a + v * (1 - layer.a));
    return out;
  };
  const hidden = (element) => !element.getClientRects().length || element.closest('.visually-hidden,[hidden]') ||
    getComputedStyle(element).visibility === 'hidden';
  const failures = [];
  let texts = 0, controls = 0;
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const element = node.parentElement;
    if (!node.data.trim() || !element || hidden(element) || element.closest('script,style,[aria-hidden="true"] svg')) continue;
    texts += 1;
    const r = ratio(parse(getComputedStyle(element).color).rgb, backdrop(element));
    if (r < 4.5) failures.push(`text "${node.data.trim().slice(0, 30)}" ${r.toFixed(2)}:1`);
  }
  for (const control of root.querySelectorAll('button,textarea,input,select,a[href],[tabindex="0"]')) {
    if (hidden(control)) continue;
    controls += 1;
    const style = getComputedStyle(control);
    const around = backdrop(control.parentElement);
    const border = parse(style.borderTopColor);
    const fill = parse(style.backgroundColor);
    let boundary = null;
    if (parseFloat(style.borderTopWidth) >= 1 && border.a === 1) boundary = border.rgb;
    else if (fill.a === 1) boundary = fill.rgb;
    // No border and no fill: a text-only control (the header's glyph buttons), its text checked above.
    if (boundary && ratio(boundary, around) < 3) {
      failures.push(`control ${control.outerHTML.slice(0, 60)} boundary ${ratio(boundary, around).toFixed(2)}:1`);
    }
  }
  // The focus ring of what has focus (the composer, focused on open).
  const focused = document.activeElement;
  let focus = null;
  if (focused && focused !== document.body && root.contains(focused)) {
    const style = getComputedStyle(focused);
    focus = ratio(parse(style.outlineColor).rgb, backdrop(focused.parentElement));
    if (style.outlineStyle === 'none' || focus < 3) failures.push(`focus ring ${style.outlineStyle} ${focus.toFixed(2)}:1`);
  }
  return { failures, texts, controls, focus };
}"""

LAUNCHER_SCRIPT = """() => {
  const launcher = document.querySelector('[data-chatwidget]').shadowRoot.querySelector('.launcher');
  const s = getComputedStyle(launcher);
  const before = getComputedStyle(launcher, '::before');
  return { color: s.color, background: s.backgroundColor, radius: s.borderTopLeftRadius, padding: s.paddingTop,
           font: s.fontFamily, z: s.zIndex, icon: before.content, iconRadius: before.borderTopLeftRadius,
           name: launcher.getAttribute('aria-label'), text: launcher.textContent };
}"""

PANEL_STYLE_SCRIPT = """() => {
  const css = (selector, property, pseudo) => getComputedStyle(document.querySelector(selector), pseudo)[property];
  return { background: css('body', 'backgroundColor'), color: css('body', 'color'), font: css('body', 'fontFamily'),
           buttonRadius: css('[data-chat-send]', 'borderTopLeftRadius'), composerPadding: css('.chat__composer', 'paddingTop'),
           headerPadding: css('.chat__header', 'paddingTop'), sendBackground: css('[data-chat-send]', 'backgroundColor'),
           sendHeight: document.querySelector('[data-chat-send]').getBoundingClientRect().height,
           scheme: css(':root', 'colorScheme') };
}"""


def rgb(hex_colour: str) -> str:
    r, g, b = theme.hex_rgb(hex_colour)
    return f"rgb({r}, {g}, {b})"


def launcher_contrast(widget) -> float:
    styles = widget.page.evaluate(LAUNCHER_SCRIPT)
    numbers = [tuple(int(float(n)) for n in re.findall(r"[\d.]+", styles[key])[:3]) for key in ("color", "background")]
    return theme.contrast_ratio(*numbers)


def test_every_lever_changes_what_it_should(embed):
    widget = embed(
        accent="#1db954",
        radius="large",
        density="compact",
        font='"DejaVu Serif", Georgia, serif',
        color_scheme="dark",
        launcher_label="Ask us",
        launcher_icon="help",
        z_index="1234",
    )
    launcher = widget.page.evaluate(LAUNCHER_SCRIPT)
    assert launcher["background"] == "rgb(29, 185, 84)"  # the brand colour itself
    assert launcher["color"] == "rgb(0, 0, 0)"  # black: 8.9:1 on it, white only 2.6:1
    assert launcher["radius"] == "36px" and launcher["padding"] == "6px"
    assert launcher["font"].replace('"', "").startswith("DejaVu Serif, Georgia, serif")
    assert launcher["z"] == "1234"
    assert launcher["icon"] == '"?"' and launcher["iconRadius"] == "50%"
    assert launcher["text"] == "Ask us" and launcher["name"] == "Ask us"
    expect(widget.launcher).to_have_accessible_name("Ask us")
    widget.open()
    panel = widget.panel_frame().evaluate(PANEL_STYLE_SCRIPT)
    assert panel["background"] == rgb(theme.NEUTRALS["dark"]["bg"])
    assert panel["color"] == rgb(theme.NEUTRALS["dark"]["fg"])
    assert panel["scheme"] == "dark"
    assert panel["font"].replace('"', "").startswith("DejaVu Serif, Georgia, serif")
    assert panel["buttonRadius"] == "12px"  # large: 0.75rem
    assert panel["composerPadding"] == "6px" and panel["headerPadding"] == "4px"  # compact: 0.25rem units
    assert panel["sendBackground"] == "rgb(29, 185, 84)"  # 7.7:1 on the dark background: kept
    assert panel["sendHeight"] >= 44  # compact keeps the targets
    host = widget.page.evaluate(
        "() => getComputedStyle(document.querySelector('[data-chatwidget]').shadowRoot.querySelector('.panel')).zIndex"
    )
    assert host == "1234"


def test_the_defaults_and_the_other_ends_of_each_lever(embed):
    widget = embed(radius="none", launcher_icon="none", color_scheme="light")
    launcher = widget.page.evaluate(LAUNCHER_SCRIPT)
    assert launcher["background"] == "rgb(11, 87, 208)" and launcher["color"] == "rgb(255, 255, 255)"
    assert launcher["radius"] == "0px" and launcher["padding"] == "10px"
    assert launcher["icon"] == "none"
    assert launcher["z"] == "2147483000"
    assert launcher["font"].startswith("system-ui")
    assert launcher["name"] == "Open chat"  # the language's own label and name
    widget.open()
    panel = widget.panel_frame().evaluate(PANEL_STYLE_SCRIPT)
    assert panel["background"] == "rgb(255, 255, 255)" and panel["scheme"] == "light"
    assert panel["buttonRadius"] == "0px"
    assert panel["composerPadding"] == "12px" and panel["headerPadding"] == "8px"  # comfortable: 0.5rem
    assert panel["sendBackground"] == "rgb(11, 87, 208)"


def test_chat_widget_config_is_used_and_data_attributes_win(embed):
    # The test host sends no CSP, so an inline script may set ChatWidgetConfig; data-radius
    # wins over its radius.
    widget = embed(
        head="<script>window.ChatWidgetConfig = {accent: 'rebeccapurple', radius: 'none', launcherLabel: 'Help'};</script>",
        radius="small",
    )
    launcher = widget.page.evaluate(LAUNCHER_SCRIPT)
    assert launcher["background"] == "rgb(102, 51, 153)"
    assert launcher["radius"] == "12px"  # data-radius="small" over the config's none
    assert launcher["text"] == "Help"


def test_auto_follows_the_visitors_preference(embed, browser_name, page):
    if browser_name != "chromium":
        pytest.skip("Firefox through WebDriver BiDi cannot emulate prefers-color-scheme (module docstring)")
    page.emulate_media(color_scheme="dark")
    widget = embed(accent="#1877f2")
    widget.open()
    panel = widget.panel_frame().evaluate(PANEL_STYLE_SCRIPT)
    assert panel["background"] == rgb(theme.NEUTRALS["dark"]["bg"])
    dark, _ = theme.derive_palette(theme.parse_color("#1877f2"), "dark")
    assert panel["sendBackground"] == rgb(dark["accent"])


def test_invalid_levers_are_ignored_with_console_warnings(embed, page):
    messages: list[str] = []
    page.on("console", lambda message: messages.append(message.text))
    widget = embed(accent="not-a-colour", font="x;}*{color:red", radius="huge", z_index="high")
    launcher = widget.page.evaluate(LAUNCHER_SCRIPT)
    assert launcher["background"] == "rgb(11, 87, 208)"  # the default kept
    assert launcher["radius"] == "24px" and launcher["z"] == "2147483000"
    assert launcher["font"].startswith("system-ui")
    assert any('data-accent "not-a-colour" ignored' in m for m in messages), messages


def test_a_low_contrast_accent_is_adjusted_and_the_console_says_so(embed, page):
    messages: list[str] = []
    page.on("console", lambda message: messages.append(message.text))
    widget = embed(accent="#ffda1a", color_scheme="light")
    launcher = widget.page.evaluate(LAUNCHER_SCRIPT)
    assert launcher["background"] == "rgb(255, 218, 26)" and launcher["color"] == "rgb(0, 0, 0)"
    widget.open()
    light, notes = theme.derive_palette(theme.parse_color("#ffda1a"), "light")
    panel = widget.panel_frame().evaluate(PANEL_STYLE_SCRIPT)
    assert panel["sendBackground"] == rgb(light["accent"]) != "rgb(255, 218, 26)"
    # The panel's own warning names the colour it uses (its config; chat.js writes it to the console).
    warnings = widget.panel_frame().evaluate(
        "() => JSON.parse(document.getElementById('chat-config').textContent).warnings"
    )
    assert warnings == notes and light["accent"] in warnings[0]
    # ... and the browser's console shows it (the panel's frame logs to the same console).
    for _ in range(100):
        if any(warnings[0] in m for m in messages):
            break
        widget.page.wait_for_timeout(50)
    assert any(warnings[0] in m for m in messages), messages


@pytest.mark.firefox_sample(name=["IKEA yellow", "Facebook blue", "near black"])
@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("name", BROWSER_COLOURS)
def test_contrast_of_every_text_and_control(embed, name, scheme):
    widget = embed(accent=BROWSER_COLOURS[name], color_scheme=scheme, starters='["Opening hours?"]')
    assert launcher_contrast(widget) >= 4.5
    widget.open()
    frame = widget.panel_frame()
    empty = frame.evaluate(f"() => ({CONTRAST_SCRIPT})(document.body)")
    assert empty["failures"] == [], empty
    assert empty["texts"] >= 5 and empty["controls"] >= 4 and empty["focus"] is not None
    widget.send("Hello")
    widget.wait_until_complete()
    widget.input.focus()
    answered = frame.evaluate(f"() => ({CONTRAST_SCRIPT})(document.body)")
    assert answered["failures"] == [], answered
    assert answered["texts"] > empty["texts"]


def test_the_named_colour_table_matches_the_browser(page, browser_name):
    # Every name of theme.NAMED_COLORS, as the browser's own CSS parser reads it (a canvas).
    page.set_content("<canvas></canvas>")
    parsed = page.evaluate(
        """(names) => { const c = document.querySelector('canvas').getContext('2d');
           return Object.fromEntries(names.map((n) => { c.fillStyle = '#010203'; c.fillStyle = n; return [n, c.fillStyle]; })); }""",
        list(theme.NAMED_COLORS),
    )
    assert parsed == {name: "#" + value for name, value in theme.NAMED_COLORS.items()}


def test_the_contrast_check_finds_what_fails(page):
    # The measurement itself can fail: light grey text, a borderless pale button and a faint
    # field border on white are each reported; the dark text is not.
    page.set_content(
        "<body style='background:#fff'><p style='color:#1a1a1a'>Readable</p><p style='color:#aaa'>Faint</p>"
        "<button style='background:#eee;border:0;color:#000'>Pale</button>"
        "<textarea style='border:1px solid #ddd'></textarea></body>"
    )
    result = page.evaluate(f"() => ({CONTRAST_SCRIPT})(document.body)")
    assert len(result["failures"]) == 3, result
    assert 'text "Faint"' in result["failures"][0]
    assert result["failures"][1].startswith("control <button") and result["failures"][2].startswith("control <textarea")
