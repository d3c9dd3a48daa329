"""Theming: a few high-level levers (accent, radius, density, font, colour scheme) become the
panel's CSS custom properties (`--chatwidget-…`, docs/theming.md), with contrast guaranteed
by construction rather than hoped for.

Contrast is WCAG 2.2's relative luminance and contrast ratio
(https://www.w3.org/TR/WCAG22/#dfn-relative-luminance,
https://www.w3.org/TR/WCAG22/#dfn-contrast-ratio): every text ≥ 4.5:1 (1.4.3) and every
control boundary and focus indicator ≥ 3:1 (1.4.11, 2.4.7) against what it sits on, in the
light and the dark scheme. An accent that falls short is moved in OKLCH
(https://www.w3.org/TR/css-color-4/#ok-lab): its lightness only, keeping its hue (chroma is
reduced only where sRGB cannot hold it), until it passes; the panel's console says so.
"""

from __future__ import annotations

import colorsys
import hashlib
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache

RGB = tuple[int, int, int]

TEXT_MINIMUM = 4.5  # WCAG 2.2 SC 1.4.3 Contrast (Minimum)
NON_TEXT_MINIMUM = 3.0  # WCAG 2.2 SC 1.4.11 Non-text Contrast (control boundaries, focus indicators)
# Aimed for when an accent is moved, so that rounding to whole sRGB bytes never drops it below.
_TARGET_MARGIN = 0.05

SCHEMES = ("light", "dark")
COLOR_SCHEMES = ("light", "dark", "auto")
RADII = ("none", "small", "medium", "large")
DENSITIES = ("compact", "comfortable")
LAUNCHER_ICONS = ("chat", "help", "none")
SYSTEM_FONT = 'system-ui, -apple-system, "Segoe UI", Roboto, sans-serif'
MAX_ACCENT_CHARS = 64
MAX_FONT_CHARS = 200
MAX_Z_INDEX = 2147483647

# The panel's neutral palettes (static/widget/panel.css has the same as fallbacks), each pair
# checked by tests/test_theme.py. The accent is the one colour a site chooses.
NEUTRALS: dict[str, dict[str, str]] = {
    "light": {
        "bg": "#ffffff",
        "fg": "#1a1a1a",
        "muted": "#4a4a4a",
        "border": "#6b6b6b",
        "error": "#b3261e",
        "error-bg": "#fdecea",
        "code-bg": "#f3f3f3",
    },
    "dark": {
        "bg": "#121212",
        "fg": "#ececec",
        "muted": "#c4c4c4",
        "border": "#9a9a9a",
        "error": "#ffb4ab",
        "error-bg": "#3b1412",
        "code-bg": "#262626",
    },
}
# With no accent chosen, each scheme keeps its own (the panel's look before theming).
DEFAULT_ACCENTS = {"light": "#0b57d0", "dark": "#8ab4f8"}
# How much of the accent tints the visitor's own messages (OKLab mix), before contrast checks.
_USER_TINT = 0.08

# Per radius: (controls, cards) in the panel; the launcher's is in static/widget.js.
RADIUS_VALUES = {
    "none": ("0", "0"),
    "small": ("0.25rem", "0.25rem"),
    "medium": ("0.375rem", "0.5rem"),
    "large": ("0.75rem", "1rem"),
}
# The spacing unit the panel's paddings and gaps are multiples of; targets stay ≥ 44 px either way.
DENSITY_SPACE = {"compact": "0.25rem", "comfortable": "0.5rem"}

# The 148 named colours of CSS Color 4 (https://www.w3.org/TR/css-color-4/#named-colors);
# tests/e2e/test_theming.py checks every one against a browser's own parser.
NAMED_COLORS: dict[str, str] = {
    "aliceblue": "f0f8ff", "antiquewhite": "faebd7", "aqua": "00ffff", "aquamarine": "7fffd4",
    "azure": "f0ffff", "beige": "f5f5dc", "bisque": "ffe4c4", "black": "000000",
    "blanchedalmond": "ffebcd", "blue": "0000ff", "blueviolet": "8a2be2", "brown": "a52a2a",
    "burlywood": "deb887", "cadetblue": "5f9ea0", "chartreuse": "7fff00", "chocolate": "d2691e",
    "coral": "ff7f50", "cornflowerblue": "6495ed", "cornsilk": "fff8dc", "crimson": "dc143c",
    "cyan": "00ffff", "darkblue": "00008b", "darkcyan": "008b8b", "darkgoldenrod": "b8860b",
    "darkgray": "a9a9a9", "darkgreen": "006400", "darkgrey": "a9a9a9", "darkkhaki": "bdb76b",
    "darkmagenta": "8b008b", "darkolivegreen": "556b2f", "darkorange": "ff8c00", "darkorchid": "9932cc",
    "darkred": "8b0000", "darksalmon": "e9967a", "darkseagreen": "8fbc8f", "darkslateblue": "483d8b",
    "darkslategray": "2f4f4f", "darkslategrey": "2f4f4f", "darkturquoise": "00ced1", "darkviolet": "9400d3",
    "deeppink": "ff1493", "deepskyblue": "00bfff", "dimgray": "696969", "dimgrey": "696969",
    "dodgerblue": "1e90ff", "firebrick": "b22222", "floralwhite": "fffaf0", "forestgreen": "228b22",
    "fuchsia": "ff00ff", "gainsboro": "dcdcdc", "ghostwhite": "f8f8ff", "gold": "ffd700",
    "goldenrod": "daa520", "gray": "808080", "green": "008000", "greenyellow": "adff2f",
    "grey": "808080", "honeydew": "f0fff0", "hotpink": "ff69b4", "indianred": "cd5c5c",
    "indigo": "4b0082", "ivory": "fffff0", "khaki": "f0e68c", "lavender": "e6e6fa",
    "lavenderblush": "fff0f5", "lawngreen": "7cfc00", "lemonchiffon": "fffacd", "lightblue": "add8e6",
    "lightcoral": "f08080", "lightcyan": "e0ffff", "lightgoldenrodyellow": "fafad2", "lightgray": "d3d3d3",
    "lightgreen": "90ee90", "lightgrey": "d3d3d3", "lightpink": "ffb6c1", "lightsalmon": "ffa07a",
    "lightseagreen": "20b2aa", "lightskyblue": "87cefa", "lightslategray": "778899", "lightslategrey": "778899",
    "lightsteelblue": "b0c4de", "lightyellow": "ffffe0", "lime": "00ff00", "limegreen": "32cd32",
    "linen": "faf0e6", "magenta": "ff00ff", "maroon": "800000", "mediumaquamarine": "66cdaa",
    "mediumblue": "0000cd", "mediumorchid": "ba55d3", "mediumpurple": "9370db", "mediumseagreen": "3cb371",
    "mediumslateblue": "7b68ee", "mediumspringgreen": "00fa9a", "mediumturquoise": "48d1cc",
    "mediumvioletred": "c71585", "midnightblue": "191970", "mintcream": "f5fffa", "mistyrose": "ffe4e1",
    "moccasin": "ffe4b5", "navajowhite": "ffdead", "navy": "000080", "oldlace": "fdf5e6",
    "olive": "808000", "olivedrab": "6b8e23", "orange": "ffa500", "orangered": "ff4500",
    "orchid": "da70d6", "palegoldenrod": "eee8aa", "palegreen": "98fb98", "paleturquoise": "afeeee",
    "palevioletred": "db7093", "papayawhip": "ffefd5", "peachpuff": "ffdab9", "peru": "cd853f",
    "pink": "ffc0cb", "plum": "dda0dd", "powderblue": "b0e0e6", "purple": "800080",
    "rebeccapurple": "663399", "red": "ff0000", "rosybrown": "bc8f8f", "royalblue": "4169e1",
    "saddlebrown": "8b4513", "salmon": "fa8072", "sandybrown": "f4a460", "seagreen": "2e8b57",
    "seashell": "fff5ee", "sienna": "a0522d", "silver": "c0c0c0", "skyblue": "87ceeb",
    "slateblue": "6a5acd", "slategray": "708090", "slategrey": "708090", "snow": "fffafa",
    "springgreen": "00ff7f", "steelblue": "4682b4", "tan": "d2b48c", "teal": "008080",
    "thistle": "d8bfd8", "tomato": "ff6347", "turquoise": "40e0d0", "violet": "ee82ee",
    "wheat": "f5deb3", "white": "ffffff", "whitesmoke": "f5f5f5", "yellow": "ffff00",
    "yellowgreen": "9acd32",
}  # fmt: skip

_NUMBER = r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?"
_FUNCTION = re.compile(r"(rgba?|hsla?)\(\s*([^()]*)\)", re.IGNORECASE)
_HEX = re.compile(r"#([0-9a-fA-F]{3,4}|[0-9a-fA-F]{6}|[0-9a-fA-F]{8})")
# A font-family list: names (quoted or not), commas, spaces. Nothing that could end the
# declaration or the rule it lands in (`;`, `{`, `}`), open a comment, an escape or a URL.
_FONT = re.compile(r"""[A-Za-z0-9 ,'"._-]+""")


@dataclass(frozen=True)
class Color:
    rgb: RGB
    alpha: float = 1.0

    @property
    def hex(self) -> str:
        return "#{:02x}{:02x}{:02x}".format(*self.rgb)


def _channel(token: str, scale: float) -> float:
    """An rgb() channel: a number 0–255 or a percentage; clamped as CSS does."""
    if token.endswith("%"):
        return _clamp(float(_number(token[:-1])) * 255 / 100, 0, 255)
    return _clamp(float(_number(token)) * 255 / scale, 0, 255)


def _number(token: str) -> str:
    if not re.fullmatch(_NUMBER, token):
        raise ValueError(f"{token!r} is not a number")
    return token


def _alpha(token: str) -> float:
    if token.endswith("%"):
        return _clamp(float(_number(token[:-1])) / 100, 0, 1)
    return _clamp(float(_number(token)), 0, 1)


def _hue(token: str) -> float:
    """An hsl() hue: a number of degrees, or with the unit deg, grad, rad or turn."""
    match = re.fullmatch(rf"({_NUMBER})(deg|grad|rad|turn)?", token.lower())
    if not match:
        raise ValueError(f"{token!r} is not a hue")
    value = float(match[1])
    unit = match[2] or "deg"
    degrees = {"deg": value, "grad": value * 0.9, "rad": math.degrees(value), "turn": value * 360}[unit]
    return degrees % 360


def _clamp(value: float, low: float, high: float) -> float:
    return min(high, max(low, value))


def _arguments(body: str) -> tuple[list[str], str | None]:
    """The components and the alpha of a colour function, in its legacy (`1, 2, 3, .5`) or
    modern (`1 2 3 / 50%`) syntax (https://www.w3.org/TR/css-color-4/#rgb-functions)."""
    body = body.strip()
    if "," in body:
        parts = [part.strip() for part in body.split(",")]
        if len(parts) not in (3, 4):
            raise ValueError("expected 3 or 4 comma-separated values")
        return parts[:3], parts[3] if len(parts) == 4 else None
    main, slash, alpha = body.partition("/")
    parts = main.split()
    if len(parts) != 3 or (slash and not alpha.strip()):
        raise ValueError("expected 3 values, then an optional / alpha")
    return parts, alpha.strip() if slash else None


def parse_color(text: str) -> Color:
    """A CSS colour: #rgb, #rgba, #rrggbb, #rrggbbaa, rgb()/rgba(), hsl()/hsla() (legacy and
    modern syntax) or one of the 148 named colours (plus `transparent`). Anything else
    (oklch(), color-mix(), var(), currentColor…) raises ValueError."""
    value = text.strip()
    if len(value) > MAX_ACCENT_CHARS:
        raise ValueError(f"longer than {MAX_ACCENT_CHARS} characters")
    lowered = value.lower()
    if lowered in NAMED_COLORS:
        return parse_color("#" + NAMED_COLORS[lowered])
    if lowered == "transparent":
        return Color((0, 0, 0), 0.0)
    hex_match = _HEX.fullmatch(value)
    if hex_match:
        digits = hex_match[1]
        if len(digits) <= 4:
            digits = "".join(c * 2 for c in digits)
        rgb = (int(digits[0:2], 16), int(digits[2:4], 16), int(digits[4:6], 16))
        alpha = int(digits[6:8], 16) / 255 if len(digits) == 8 else 1.0
        return Color(rgb, alpha)
    function = _FUNCTION.fullmatch(value)
    if not function:
        raise ValueError("not a hex colour, rgb(), hsl() or a CSS colour name")
    parts, alpha_token = _arguments(function[2])
    alpha = _alpha(alpha_token) if alpha_token is not None else 1.0
    if function[1].lower().startswith("rgb"):
        channels = [_channel(part, 255) for part in parts]
        return Color(tuple(round(c) for c in channels), alpha)  # type: ignore[arg-type]
    hue = _hue(parts[0])
    if not (parts[1].endswith("%") and parts[2].endswith("%")):
        raise ValueError("hsl() saturation and lightness are percentages")
    saturation = _clamp(float(_number(parts[1][:-1])) / 100, 0, 1)
    lightness = _clamp(float(_number(parts[2][:-1])) / 100, 0, 1)
    r, g, b = colorsys.hls_to_rgb(hue / 360, lightness, saturation)
    return Color((round(r * 255), round(g * 255), round(b * 255)), alpha)


def _linear(channel: float) -> float:
    """sRGB to linear light, WCAG 2.2's definition (its 0.04045 threshold, as sRGB's)."""
    c = channel / 255
    return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4


def relative_luminance(rgb: RGB) -> float:
    """https://www.w3.org/TR/WCAG22/#dfn-relative-luminance"""
    r, g, b = (_linear(c) for c in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast_ratio(a: RGB, b: RGB) -> float:
    """https://www.w3.org/TR/WCAG22/#dfn-contrast-ratio: (L1 + 0.05) / (L2 + 0.05), lighter first."""
    la, lb = relative_luminance(a), relative_luminance(b)
    return (max(la, lb) + 0.05) / (min(la, lb) + 0.05)


def hex_rgb(value: str) -> RGB:
    return parse_color(value).rgb


# OKLab (https://bottosson.github.io/posts/oklab/, as CSS Color 4 §9): a perceptual space in
# which changing L alone keeps the hue a person sees.


def _to_oklab(rgb: RGB) -> tuple[float, float, float]:
    r, g, b = (_linear(c) for c in rgb)
    l_ = (0.4122214708 * r + 0.5363325363 * g + 0.0514459929 * b) ** (1 / 3)
    m_ = (0.2119034982 * r + 0.6806995451 * g + 0.1073969566 * b) ** (1 / 3)
    s_ = (0.0883024619 * r + 0.2817188376 * g + 0.6299787005 * b) ** (1 / 3)
    return (
        0.2104542553 * l_ + 0.7936177850 * m_ - 0.0040720468 * s_,
        1.9779984951 * l_ - 2.4285922050 * m_ + 0.4505937099 * s_,
        0.0259040371 * l_ + 0.7827717662 * m_ - 0.8086757660 * s_,
    )


def _from_oklab(lightness: float, a: float, b: float) -> tuple[float, float, float]:
    """Linear-light sRGB (may be out of gamut: below 0 or above 1)."""
    l_ = lightness + 0.3963377774 * a + 0.2158037573 * b
    m_ = lightness - 0.1055613458 * a - 0.0638541728 * b
    s_ = lightness - 0.0894841775 * a - 1.2914855480 * b
    l3, m3, s3 = l_**3, m_**3, s_**3
    return (
        4.0767416621 * l3 - 3.3077115913 * m3 + 0.2309699292 * s3,
        -1.2684380046 * l3 + 2.6097574011 * m3 - 0.3413193965 * s3,
        -0.0041960863 * l3 - 0.7034186147 * m3 + 1.7076147010 * s3,
    )


def _encode(linear: float) -> int:
    c = _clamp(linear, 0, 1)
    srgb = c * 12.92 if c <= 0.0031308 else 1.055 * c ** (1 / 2.4) - 0.055
    return round(_clamp(srgb, 0, 1) * 255)


def _oklch_to_rgb(lightness: float, chroma: float, hue: float) -> RGB:
    """The colour at this OKLCH lightness and hue, its chroma reduced until sRGB holds it
    (CSS Color 4 §13.2's gamut mapping keeps L and h the same way)."""
    a, b = chroma * math.cos(hue), chroma * math.sin(hue)
    linear = _from_oklab(lightness, a, b)
    if all(-1e-6 <= c <= 1 + 1e-6 for c in linear):
        return (_encode(linear[0]), _encode(linear[1]), _encode(linear[2]))
    low, high = 0.0, chroma
    for _ in range(24):
        middle = (low + high) / 2
        linear = _from_oklab(lightness, middle * math.cos(hue), middle * math.sin(hue))
        if all(-1e-6 <= c <= 1 + 1e-6 for c in linear):
            low = middle
        else:
            high = middle
    linear = _from_oklab(lightness, low * math.cos(hue), low * math.sin(hue))
    return (_encode(linear[0]), _encode(linear[1]), _encode(linear[2]))


def _passes(rgb: RGB, backgrounds: tuple[RGB, ...], minimum: float) -> bool:
    return all(contrast_ratio(rgb, background) >= minimum for background in backgrounds)


def adjust_for_contrast(rgb: RGB, backgrounds: tuple[RGB, ...], minimum: float, *, darker: bool) -> RGB:
    """`rgb` itself when it has `minimum` contrast with every background; else the colour of
    the same OKLCH hue and chroma (as far as sRGB allows) whose lightness is nearest to its own
    and passes, darker (light schemes) or lighter (dark schemes)."""
    if _passes(rgb, backgrounds, minimum):
        return rgb
    lightness, a, b = _to_oklab(rgb)
    chroma, hue = math.hypot(a, b), math.atan2(b, a)
    target = minimum + _TARGET_MARGIN
    end = 0.0 if darker else 1.0
    if not _passes(_oklch_to_rgb(end, chroma, hue), backgrounds, target):
        # Black or white passes any background the panel has; not reached with its palettes.
        return (0, 0, 0) if darker else (255, 255, 255)
    near, far = lightness, end  # near fails, far passes
    for _ in range(40):
        middle = (near + far) / 2
        if _passes(_oklch_to_rgb(middle, chroma, hue), backgrounds, target):
            far = middle
        else:
            near = middle
    return _oklch_to_rgb(far, chroma, hue)


def _mix(a: RGB, b: RGB, amount: float) -> RGB:
    """`amount` of b in a, in OKLab."""
    la, lb = _to_oklab(a), _to_oklab(b)
    lightness, x, y = (p + (q - p) * amount for p, q in zip(la, lb, strict=True))
    linear = _from_oklab(lightness, x, y)
    return (_encode(linear[0]), _encode(linear[1]), _encode(linear[2]))


def _hex(rgb: RGB) -> str:
    return Color(rgb).hex


def _ratio(value: float) -> str:
    return f"{math.floor(value * 100) / 100:g}:1"


def derive_palette(accent: Color | None, scheme: str) -> tuple[dict[str, str], list[str]]:
    """The panel's colours for one scheme and what was changed to make them pass.

    Text colours (fg, muted, accent, error) have ≥ 4.5:1 against every surface they sit on
    (bg, the visitor's message tint, code blocks); the accent doubles as control fill, border
    and focus ring (≥ 3:1 follows); on-accent is black or white, whichever contrasts more with
    the accent — at least 4.58:1 for any colour, since max((1.05)/(L+0.05), (L+0.05)/0.05) is
    smallest where both are equal, at L ≈ 0.179."""
    neutrals = NEUTRALS[scheme]
    bg = hex_rgb(neutrals["bg"])
    darker = scheme == "light"
    notes: list[str] = []
    requested = accent.rgb if accent is not None else hex_rgb(DEFAULT_ACCENTS[scheme])
    accent_rgb = adjust_for_contrast(requested, (bg,), TEXT_MINIMUM, darker=darker)
    # The visitor's messages: a tint of the accent, as light as the text on it allows.
    text_colors = (hex_rgb(neutrals["fg"]), hex_rgb(neutrals["muted"]), accent_rgb)
    tint = _USER_TINT
    user_bg = _mix(bg, accent_rgb, tint)
    while tint > 0 and not all(contrast_ratio(text, user_bg) >= TEXT_MINIMUM for text in text_colors):
        tint = max(0.0, tint - 0.01)
        user_bg = _mix(bg, accent_rgb, tint)
    if tint == 0:
        user_bg = bg
    if accent_rgb != requested:
        had = contrast_ratio(requested, bg)
        notes.append(
            f"accent {_hex(requested)} has {_ratio(had)} contrast with the {scheme} panel background "
            f"{neutrals['bg']} (WCAG 2.2 asks 4.5:1 for text, 3:1 for controls and focus); "
            f"the panel uses {_hex(accent_rgb)}, the same hue {'darker' if darker else 'lighter'}"
        )
    on_accent = max(((0, 0, 0), (255, 255, 255)), key=lambda text: contrast_ratio(text, accent_rgb))
    palette = {
        **neutrals,
        "accent": _hex(accent_rgb),
        "on-accent": _hex(on_accent),
        "focus": _hex(accent_rgb),
        "user-bg": _hex(user_bg),
    }
    return palette, notes


# The pairs every palette must pass: (foreground, background, minimum). tests/test_theme.py
# asserts each for every colour of its list; docs/theming.md lists them.
CONTRAST_PAIRS: tuple[tuple[str, str, float], ...] = (
    ("fg", "bg", TEXT_MINIMUM),
    ("muted", "bg", TEXT_MINIMUM),
    ("accent", "bg", TEXT_MINIMUM),
    ("error", "bg", TEXT_MINIMUM),
    ("fg", "user-bg", TEXT_MINIMUM),
    ("muted", "user-bg", TEXT_MINIMUM),
    ("accent", "user-bg", TEXT_MINIMUM),
    ("fg", "code-bg", TEXT_MINIMUM),
    ("fg", "error-bg", TEXT_MINIMUM),
    ("error", "error-bg", TEXT_MINIMUM),
    ("on-accent", "accent", TEXT_MINIMUM),
    ("border", "bg", NON_TEXT_MINIMUM),
    ("border", "user-bg", NON_TEXT_MINIMUM),
    ("focus", "bg", NON_TEXT_MINIMUM),
    ("focus", "user-bg", NON_TEXT_MINIMUM),
    ("accent", "bg", NON_TEXT_MINIMUM),
)


@dataclass(frozen=True)
class Theme:
    """The levers after validation: what /panel/theme.css is computed from."""

    accent: str = ""  # "" or a normalised #rrggbb
    radius: str = "medium"
    density: str = "comfortable"
    font: str = "system"
    color_scheme: str = "auto"

    def query(self) -> dict[str, str]:
        """The stylesheet URL's query: every lever, normalised, so equal themes share a URL."""
        return {
            "accent": self.accent,
            "radius": self.radius,
            "density": self.density,
            "font": self.font,
            "scheme": self.color_scheme,
        }


def parse_font(text: str) -> str:
    """`system`, or a font-family list such as `"Open Sans", Arial, sans-serif`."""
    value = " ".join(str(text).split())
    if value.lower() == "system" or not value:
        return "system"
    if len(value) > MAX_FONT_CHARS:
        raise ValueError(f"longer than {MAX_FONT_CHARS} characters")
    if not _FONT.fullmatch(value) or value.count('"') % 2 or value.count("'") % 2:
        raise ValueError("a font-family list has only names, quotes, commas and spaces")
    return value


def parse_accent(text: str) -> str:
    """A setting or embed accent: "" (the default) or an opaque colour, normalised to #rrggbb
    (a translucent accent would take its contrast from whatever is behind it)."""
    value = str(text).strip()
    if not value:
        return ""
    color = parse_color(value)
    if color.alpha < 1:
        raise ValueError("an accent must be opaque")
    return color.hex


def _choice(choices: tuple[str, ...]) -> Callable[[str], str]:
    def parse(text: str) -> str:
        value = str(text).strip().lower()
        if value not in choices:
            raise ValueError(f"expected one of {', '.join(choices)}")
        return value

    return parse


parse_radius = _choice(RADII)
parse_density = _choice(DENSITIES)
parse_color_scheme = _choice(COLOR_SCHEMES)
parse_launcher_icon = _choice(LAUNCHER_ICONS)

# Lever: (query / embed option name, Theme field, parser). The embed's names are the loader's
# (data-color-scheme → colorScheme); the stylesheet's query uses `scheme`.
_LEVERS = (
    ("accent", "accent", parse_accent),
    ("radius", "radius", parse_radius),
    ("density", "density", parse_density),
    ("font", "font", parse_font),
    ("colorScheme", "color_scheme", parse_color_scheme),
)


def resolve(defaults: Theme, options: Mapping[str, str], warnings: list[str]) -> Theme:
    """The theme an embed asked for (`options`: the panel URL's query, the loader's names),
    over the server's defaults. A value that fails its check is ignored with a warning (the
    panel writes it to the console), never an error page."""
    values = {field: getattr(defaults, field) for _, field, _ in _LEVERS}
    for name, field, parse in _LEVERS:
        if name not in options:
            continue
        raw = options[name]
        try:
            values[field] = parse(raw)
        except ValueError as error:
            option = "data-" + re.sub(r"[A-Z]", lambda m: "-" + m[0].lower(), name)
            warnings.append(f"{option} {raw[:80]!r} ignored ({error}); using {values[field] or 'the default'}")
    return Theme(**values)


def theme_from_query(query: Mapping[str, str]) -> Theme:
    """The stylesheet's own query (Theme.query()); anything invalid is the default."""
    values: dict[str, str] = {}
    renamed = {"scheme": "colorScheme"}
    for key in ("accent", "radius", "density", "font", "scheme"):
        if key in query:
            values[renamed.get(key, key)] = query[key]
    return resolve(Theme(), values, [])


def palette_notes(theme: Theme) -> list[str]:
    """What the palette changed to meet contrast, for the site to read in the console: the chosen
    scheme's, and with `auto` the light one's. No colour has 4.5:1 on both #ffffff and #121212
    (4.33:1 at best), so with `auto` the dark scheme always uses a lighter shade, as the default
    accent does (#0b57d0 light, #8ab4f8 dark): expected, not worth a warning on every page."""
    accent = parse_color(theme.accent) if theme.accent else None
    scheme = "light" if theme.color_scheme == "auto" else theme.color_scheme
    return derive_palette(accent, scheme)[1]


def _declarations(palette: Mapping[str, str]) -> str:
    return "".join(f"--chatwidget-{name}:{value};" for name, value in palette.items())


@lru_cache(maxsize=256)
def stylesheet(theme: Theme) -> str:
    """/panel/theme.css: the `--chatwidget-…` properties static/widget/panel.css is styled by."""
    accent = parse_color(theme.accent) if theme.accent else None
    control_radius, card_radius = RADIUS_VALUES[theme.radius]
    font = SYSTEM_FONT if theme.font == "system" else f"{theme.font}, {SYSTEM_FONT}"
    common = (
        f"--chatwidget-radius:{control_radius};--chatwidget-radius-large:{card_radius};"
        f"--chatwidget-space:{DENSITY_SPACE[theme.density]};--chatwidget-font:{font};"
    )
    light, _ = derive_palette(accent, "light")
    dark, _ = derive_palette(accent, "dark")
    if theme.color_scheme == "auto":
        return (
            f":root{{color-scheme:light dark;{common}{_declarations(light)}}}\n"
            f"@media (prefers-color-scheme:dark){{:root{{{_declarations(dark)}}}}}\n"
        )
    palette = light if theme.color_scheme == "light" else dark
    return f":root{{color-scheme:{theme.color_scheme};{common}{_declarations(palette)}}}\n"


def etag(css: str) -> str:
    return hashlib.sha256(css.encode("utf-8")).hexdigest()[:32]
