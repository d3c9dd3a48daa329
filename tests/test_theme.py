"""Theming (widget_server/theme.py, docs/theming.md): CSS colours parsed, every derived pair's
WCAG 2.2 contrast asserted for 48 colours in both schemes, the stylesheet endpoint and the
settings. The browser side (computed styles, contrast measured in the page) is
tests/e2e/test_theming.py."""

from __future__ import annotations

import html
import json
import math
import re

import pytest

from widget_server import theme
from widget_server.app import create_app
from widget_server.settings import ConfigError, load_settings

from .conftest import TEST_CONFIG

# Pure hues, pastels, near-greys, near-white, near-black and brand colours (as their brand
# guides publish them), written in every syntax the parser takes.
COLOURS = {
    "red": "#ff0000",
    "lime": "#00ff00",
    "blue": "#0000ff",
    "yellow": "yellow",
    "cyan": "rgb(0, 255, 255)",
    "magenta": "hsl(300, 100%, 50%)",
    "orange": "orange",
    "purple": "rebeccapurple",
    "pastel pink": "#ffd1dc",
    "pastel blue": "#aec6cf",
    "pastel green": "#77dd77",
    "pastel yellow": "#fdfd96",
    "pastel lavender": "hsl(240 67% 94%)",
    "pastel peach": "peachpuff",
    "grey 50%": "#808080",
    "grey 45%": "#737373",
    "grey 55%": "#8c8c8c",
    "slate": "slategray",
    "warm grey": "rgb(128 120 112)",
    "near white": "#fafafa",
    "white": "#fff",
    "ivory": "ivory",
    "near black": "#0a0a0a",
    "black": "black",
    "midnight": "#121212",
    "Coca-Cola red": "#f40009",
    "Facebook blue": "#1877f2",
    "Spotify green": "#1db954",
    "Twitter blue": "#1da1f2",
    "IKEA yellow": "#ffda1a",
    "IKEA blue": "#0058a3",
    "McDonald's yellow": "#ffc72c",
    "McDonald's red": "#da291c",
    "Starbucks green": "#00704a",
    "Netflix red": "#e50914",
    "Amazon orange": "#ff9900",
    "Slack aubergine": "#4a154b",
    "WhatsApp green": "#25d366",
    "LinkedIn blue": "#0a66c2",
    "Instagram pink": "#e1306c",
    "YouTube red": "#ff0000",
    "Airbnb coral": "#ff5a5f",
    "Ubuntu orange": "#e95420",
    "Discord blurple": "#5865f2",
    "Duolingo green": "#58cc02",
    "Tiffany blue": "#0abab5",
    "Barbie pink": "#e0218a",
    "Hermès orange": "#f37021",
}


def oklch_hue(rgb: theme.RGB) -> tuple[float, float]:
    _lightness, a, b = theme._to_oklab(rgb)
    return math.hypot(a, b), math.degrees(math.atan2(b, a)) % 360


def test_the_list_is_long_enough():
    assert len(COLOURS) >= 40


@pytest.mark.parametrize("scheme", theme.SCHEMES)
@pytest.mark.parametrize("name", COLOURS)
def test_every_derived_pair_meets_its_minimum(name, scheme):
    accent = theme.parse_color(COLOURS[name])
    palette, notes = theme.derive_palette(accent, scheme)
    for foreground, background, minimum in theme.CONTRAST_PAIRS:
        ratio = theme.contrast_ratio(theme.hex_rgb(palette[foreground]), theme.hex_rgb(palette[background]))
        assert ratio >= minimum, f"{name} {scheme}: {foreground} on {background} is {ratio:.2f}:1 < {minimum}:1"
    original = theme.contrast_ratio(accent.rgb, theme.hex_rgb(palette["bg"]))
    if original >= theme.TEXT_MINIMUM:
        # A passing accent is used as it is, and nothing is said.
        assert palette["accent"] == accent.hex and notes == []
    else:
        assert palette["accent"] != accent.hex
        assert len(notes) == 1 and accent.hex in notes[0] and palette["accent"] in notes[0]
        assert ("darker" if scheme == "light" else "lighter") in notes[0]
        # Moved in lightness only: the hue a person sees is kept (OKLCH), wherever there is one.
        before_chroma, before_hue = oklch_hue(accent.rgb)
        after_chroma, after_hue = oklch_hue(theme.hex_rgb(palette["accent"]))
        if before_chroma > 0.04 and after_chroma > 0.04:
            assert abs((after_hue - before_hue + 180) % 360 - 180) < 8, (name, scheme, before_hue, after_hue)


@pytest.mark.parametrize("scheme", theme.SCHEMES)
def test_the_default_palette_is_the_panels_look_before_theming(scheme):
    palette, notes = theme.derive_palette(None, scheme)
    assert notes == []
    assert palette["accent"] == theme.DEFAULT_ACCENTS[scheme]
    assert palette["on-accent"] == ("#ffffff" if scheme == "light" else "#000000")


def test_contrast_ratio_matches_wcag_reference_values():
    # https://www.w3.org/TR/WCAG22/#dfn-contrast-ratio: black on white is 21:1, equal colours 1:1;
    # #767676 on white is the well-known lightest grey at 4.5:1.
    assert theme.contrast_ratio((0, 0, 0), (255, 255, 255)) == pytest.approx(21)
    assert theme.contrast_ratio((10, 20, 30), (10, 20, 30)) == 1
    assert theme.contrast_ratio((0x76, 0x76, 0x76), (255, 255, 255)) == pytest.approx(4.54, abs=0.01)
    assert theme.contrast_ratio((0x77, 0x77, 0x77), (255, 255, 255)) < 4.5


@pytest.mark.parametrize(
    ("text", "rgb", "alpha"),
    [
        ("#abc", (0xAA, 0xBB, 0xCC), 1.0),
        ("#ABCD", (0xAA, 0xBB, 0xCC), 0xDD / 255),
        ("#1db954", (0x1D, 0xB9, 0x54), 1.0),
        ("#1DB95480", (0x1D, 0xB9, 0x54), 0x80 / 255),
        ("rgb(29, 185, 84)", (29, 185, 84), 1.0),
        ("rgb(29 185 84 / 50%)", (29, 185, 84), 0.5),
        ("rgba(29,185,84,.25)", (29, 185, 84), 0.25),
        ("rgb(100%, 0%, 50%)", (255, 0, 128), 1.0),
        ("rgb(300, -5, 0)", (255, 0, 0), 1.0),
        ("hsl(120, 100%, 25%)", (0, 128, 0), 1.0),
        ("hsl(0.5turn 100% 50%)", (0, 255, 255), 1.0),
        ("HSLA(240deg, 100%, 50%, 0.3)", (0, 0, 255), 0.3),
        ("RebeccaPurple", (0x66, 0x33, 0x99), 1.0),
        ("  navy ", (0, 0, 0x80), 1.0),
        ("transparent", (0, 0, 0), 0.0),
    ],
)
def test_css_colours_parse(text, rgb, alpha):
    colour = theme.parse_color(text)
    assert colour.rgb == rgb
    assert colour.alpha == pytest.approx(alpha)


@pytest.mark.parametrize(
    "text",
    ["", "#ab", "#abcde", "#ggg", "blurple", "oklch(70% 0.1 200)", "var(--brand)", "currentColor", "rgb(1,2)",
     "rgb(1 2 3 4)", "hsl(10, 20, 30)", "url(x)", "red; color: blue", "#fff}", "x" * 100],
)  # fmt: skip
def test_anything_else_is_refused(text):
    with pytest.raises(ValueError):
        theme.parse_color(text)


def test_the_named_colour_table_has_every_css_colour():
    assert len(theme.NAMED_COLORS) == 148
    assert all(re.fullmatch(r"[0-9a-f]{6}", value) for value in theme.NAMED_COLORS.values())


def test_an_accent_must_be_opaque():
    assert theme.parse_accent(" #1DB954 ") == "#1db954"
    assert theme.parse_accent("") == ""
    with pytest.raises(ValueError, match="opaque"):
        theme.parse_accent("rgba(0, 0, 0, 0.5)")


@pytest.mark.parametrize("font", ['"Open Sans", Arial, sans-serif', "Georgia", "system", "ui-serif"])
def test_font_lists_pass(font):
    assert theme.parse_font(font) == font


@pytest.mark.parametrize(
    "font", ["a;b", "x{}", "x}", "'unclosed", "url(x)", "a/b", "a\\62", "Arial\n", "a" * 201, "<b>"]
)
def test_fonts_that_could_leave_the_declaration_are_refused(font):
    if font == "Arial\n":
        assert theme.parse_font(font) == "Arial"  # whitespace is folded, not refused
        return
    with pytest.raises(ValueError):
        theme.parse_font(font)


# -- the stylesheet and the panel ------------------------------------------------------------


def theme_css_url(client, query: str) -> str:
    panel = client.get(f"/panel?lang=en&{query}")
    assert panel.status_code == 200
    match = re.search(r'<link rel="stylesheet" href="(/panel/theme\.css\?[^"]+)">', panel.get_data(as_text=True))
    assert match, "the panel links its theme"
    return html.unescape(match[1])


def panel_warnings(client, query: str) -> list[str]:
    body = client.get(f"/panel?lang=en&{query}").get_data(as_text=True)
    config = json.loads(re.search(r'<script type="application/json" id="chat-config">(.*?)</script>', body, re.S)[1])
    return config["warnings"]


def test_the_panel_links_a_stylesheet_of_its_levers(client):
    url = theme_css_url(client, "accent=%231db954&radius=large&density=compact&font=Georgia&colorScheme=dark")
    assert url == "/panel/theme.css?accent=%231db954&radius=large&density=compact&font=Georgia&scheme=dark"
    response = client.get(url)
    assert response.status_code == 200
    assert response.mimetype == "text/css"
    css = response.get_data(as_text=True)
    assert ":root{color-scheme:dark;" in css
    assert "--chatwidget-radius:0.75rem;" in css and "--chatwidget-space:0.25rem;" in css
    assert "--chatwidget-font:Georgia, system-ui" in css
    assert "--chatwidget-accent:#1db954;" in css  # 7.7:1 on the dark background: kept
    assert "prefers-color-scheme" not in css


def test_auto_holds_both_schemes(client):
    css = client.get(theme_css_url(client, "accent=%231db954")).get_data(as_text=True)
    light, dark = css.split("@media (prefers-color-scheme:dark)")
    assert "--chatwidget-accent:#008839;" in light  # Spotify green, darkened for white
    assert "--chatwidget-accent:#1db954;" in dark


def test_the_stylesheet_is_cached_with_an_etag(client):
    url = theme_css_url(client, "accent=tomato")
    first = client.get(url)
    assert first.headers["Cache-Control"] == "public, max-age=86400"
    etag = first.headers["ETag"]
    again = client.get(url, headers={"If-None-Match": etag})
    assert again.status_code == 304
    other = client.get(theme_css_url(client, "accent=teal"))
    assert other.headers["ETag"] != etag


def test_the_stylesheet_writes_only_checked_values(client):
    hostile = "/panel/theme.css?accent=red;}body{display:none&font=x;}*{color:red}&radius=9px&scheme=</style>"
    css = client.get(hostile).get_data(as_text=True)
    assert css == theme.stylesheet(theme.Theme())
    for fragment in ("display:none", "color:red", "9px", "</style>", "x;"):
        assert fragment not in css


def test_invalid_levers_fall_back_with_a_warning(client):
    warnings = panel_warnings(client, "accent=blurple&radius=huge&font=a%3Bb&colorScheme=sepia&density=airy")
    joined = "\n".join(warnings)
    for option in ("data-accent", "data-radius", "data-font", "data-color-scheme", "data-density"):
        assert f"{option} " in joined, (option, warnings)
    assert "ignored" in joined
    url = theme_css_url(client, "accent=blurple&radius=huge")
    assert url == "/panel/theme.css?accent=&radius=medium&density=comfortable&font=system&scheme=auto"


def test_an_adjusted_accent_is_named_in_the_console_warnings(client):
    warnings = panel_warnings(client, "accent=%23ffda1a&colorScheme=light")
    assert any("#ffda1a" in w and "4.5:1" in w and "darker" in w for w in warnings), warnings
    assert panel_warnings(client, "accent=%23ffda1a&colorScheme=dark") == []


# -- settings: the server's defaults ------------------------------------------------------------


def test_settings_are_the_defaults_an_embed_overrides():
    app = create_app(
        {**TEST_CONFIG, "THEME_ACCENT": "teal", "THEME_RADIUS": "none", "THEME_COLOR_SCHEME": "light"}, environ={}
    )
    client = app.test_client()
    assert (
        theme_css_url(client, "")
        == "/panel/theme.css?accent=%23008080&radius=none&density=comfortable&font=system&scheme=light"
    )
    assert "radius=small" in theme_css_url(client, "radius=small")
    loader = client.get("/widget.js").get_data(as_text=True)
    assert '{"accent":"#008080","radius":"none","colorScheme":"light"}' in loader


def test_a_default_server_adds_an_empty_object_to_the_loader(client):
    loader = client.get("/widget.js").get_data(as_text=True)
    assert "__CHATWIDGET_THEME__" not in loader
    assert re.search(r"=\s*\{\}\s*[,;]", loader)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("THEME_ACCENT", "blurple"),
        ("THEME_ACCENT", "rgba(0,0,0,.5)"),
        ("THEME_RADIUS", "round"),
        ("THEME_DENSITY", "airy"),
        ("THEME_FONT", "x;y"),
        ("THEME_COLOR_SCHEME", "sepia"),
        ("LAUNCHER_LABEL", "x" * 41),
        ("LAUNCHER_ICON", "star"),
        ("LAUNCHER_Z_INDEX", "-1"),
    ],
)
def test_a_bad_setting_stops_the_server_naming_it(name, value):
    with pytest.raises(ConfigError, match=name):
        load_settings({name: value}, environ={})


def test_the_loaders_black_or_white_text_passes_on_every_srgb_colour():
    """static/widget.js picks the launcher's text with a 2.2-power approximation of relative
    luminance (fewer bytes than sRGB's piecewise curve) and the threshold 0.18: over all 2^24
    sRGB colours the text it picks has ≥ 4.5:1 (exact WCAG 2.2 contrast). Only colours whose
    approximate luminance is near the threshold can fail, so only those are computed."""
    import bisect

    exact = [theme._linear(v) for v in range(256)]
    approximate = [(v / 255) ** 2.2 for v in range(256)]
    worst = 21.0
    for r in range(256):
        for g in range(256):
            base = 0.2126 * approximate[r] + 0.7152 * approximate[g]
            low = bisect.bisect_left(approximate, (0.15 - base) / 0.0722)
            high = bisect.bisect_right(approximate, (0.21 - base) / 0.0722)
            for b in range(low, min(high, 256)):
                luminance = 0.2126 * exact[r] + 0.7152 * exact[g] + 0.0722 * exact[b]
                black = base + 0.0722 * approximate[b] > 0.18
                ratio = (luminance + 0.05) / 0.05 if black else 1.05 / (luminance + 0.05)
                worst = min(worst, ratio)
    assert worst >= 4.5, worst
    # Outside the band the choice is right with room: the two luminances differ by at most d
    # (a weighted mean of per-channel differences), and approximately ≤ 0.15 means exactly
    # ≤ 0.15 + d, white then has 1.05 / (0.2 + d) ≥ 4.5:1 for d ≤ 0.033; ≥ 0.21 likewise black.
    d = max(abs(e - a) for e, a in zip(exact, approximate, strict=True))
    assert d < 0.033 and 1.05 / (0.2 + d) >= 4.5 and (0.26 - d) / 0.05 >= 4.5


def test_with_auto_only_the_light_schemes_adjustment_is_reported(client):
    # #0b57d0 passes on white and is lightened for the dark scheme, as every colour is in one of
    # the two (no colour has 4.5:1 on both): with auto that is expected and not reported.
    assert 4.32 < max(min(1.05 / (y + 0.05), (y + 0.05) / 0.05605) for y in [i / 10000 for i in range(10001)]) < 4.34
    assert panel_warnings(client, "accent=%230b57d0") == []
    assert panel_warnings(client, "accent=%230b57d0&colorScheme=dark") != []
    assert len(panel_warnings(client, "accent=%23ffda1a")) == 1
