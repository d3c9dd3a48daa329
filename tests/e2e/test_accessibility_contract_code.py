"""docs/accessibility.md, "Code in answers", line by line: one test per contract id (A102…A104).

Like test_accessibility_contract.py: the widget embedded in a host page on another origin,
real Chromium and Firefox ESR, axe in every new state (tests/test_docs.py checks that no id is
left without its test). The Copy code button is reached and pressed with the keyboard, and the
clipboard read by a real paste (test_answer_tools.py says why). test_code_blocks.py covers the
tokenizer, the renderer's hook and hostile code.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from widget_server import theme

from .test_answer_tools import EN, PASTE_BOX, ask, polite, press

pytestmark = pytest.mark.e2e

CODE = EN["codeBlocks"]

PYTHON_SOURCE = 'def greet(name):\n    """Say hello."""\n    return f"Hello, {name}!"  # a comment\n'
JS_SOURCE = "const total = items.reduce((sum, item) => sum + item.price, 0); // sum\nif (total > 100) { console.log(`big: ${total}`); }\n"
PLAIN_SOURCE = "+[----->+++<]>.\n"
ANSWER = (
    f"Two blocks.\n\n```python\n{PYTHON_SOURCE}```\n\n```js\n{JS_SOURCE}```\n\n"
    f"And one in a language with no rules.\n\n```brainfuck\n{PLAIN_SOURCE}```\n"
)

# Each code element: its text, its descendants' tags and attributes, its token classes.
CODE_ELEMENTS = """answer => Array.from(answer.querySelectorAll('pre > code'), (code) => ({
    text: code.textContent,
    elements: Array.from(code.querySelectorAll('*'), (n) => [n.localName, Array.from(n.attributes, (a) => a.name)]),
    tokens: Array.from(code.querySelectorAll('span[class]'), (n) => [n.className, n.textContent]),
}))"""


def answer_with_code(embed, **kwargs):
    widget = embed(**kwargs)
    widget.open()
    ask(widget, f"/echo {ANSWER}")
    expect(widget.last_answer().locator(".code-block__copy")).to_have_count(3)
    return widget


def test_A102_a_code_block_reads_as_its_source_and_is_announced_by_its_summary(embed):
    widget = answer_with_code(embed)
    python, js, plain = widget.last_answer().evaluate(CODE_ELEMENTS)
    assert [python["text"], js["text"], plain["text"]] == [PYTHON_SOURCE, JS_SOURCE, PLAIN_SOURCE]
    assert ["tok-keyword", "def"] in python["tokens"] and ["tok-comment", "# a comment"] in python["tokens"]
    assert ["tok-string", '"""Say hello."""'] in python["tokens"]
    assert ["tok-keyword", "const"] in js["tokens"] and ["tok-function", "reduce"] in js["tokens"]
    assert ["tok-string", "`big: ${total}`"] in js["tokens"]
    assert plain["elements"] == []  # no rules for it: plain text
    # Spans only, each with at most a class: no role, name or state for a screen reader to say.
    for block in (python, js):
        assert {tag for tag, _ in block["elements"]} == {"span"}
        assert {name for _, names in block["elements"] for name in names} == {"class"}
    # The announcer says each block's summary, never a token of its code.
    widget.wait_for_announcement(EN["complete"])
    said = " ".join(polite(widget))
    for summary in ("Code block, python, 3 lines.", "Code block, js, 2 lines.", "Code block, brainfuck, 1 line."):
        assert summary in said, said
    for token in ("greet", "reduce", "console", "+++"):
        assert token not in said, said
    widget.assert_accessible()


def test_A103_copy_code_by_keyboard_copies_the_exact_code_and_says_copied_once(embed, page: Page):
    widget = answer_with_code(embed, body=PASTE_BOX)
    answer = widget.last_answer()
    names = answer.locator(".code-block__copy").evaluate_all("(nodes) => nodes.map((n) => n.textContent)")
    assert names == ["Copy code (python)", "Copy code (js)", "Copy code (brainfuck)"]
    copy = answer.get_by_role("button", name="Copy code (python)", exact=True)
    expect(copy).to_have_attribute("type", "button")
    press(widget, copy)
    widget.wait_for_announcement(CODE["copied"])
    expect(copy).to_be_focused()
    assert copy.evaluate("n => getComputedStyle(n).outlineWidth") == "3px"  # A12
    box = copy.bounding_box()
    assert box and box["width"] >= 44 and box["height"] >= 44  # A13
    # The button comes before its block, in reading and tab order.
    assert copy.evaluate("n => n.nextElementSibling.localName") == "pre"
    widget.assert_accessible()  # focused, after the press
    paste = page.locator("#paste")
    paste.focus()
    page.keyboard.press("ControlOrMeta+V")
    expect(paste).to_have_value(PYTHON_SOURCE)
    assert polite(widget).count(CODE["copied"]) == 1
    assert not [e for e in widget.announcements() if e["politeness"] == "assertive"]


def rgb_of(css: str) -> tuple[int, int, int]:
    r, g, b = (int(float(n)) for n in re.findall(r"[\d.]+", css)[:3])
    return (r, g, b)


# Each token's colour and its block's background, as computed.
TOKEN_COLOURS = """answer => Array.from(answer.querySelectorAll('pre code span[class]'), (n) => [
    n.className, getComputedStyle(n).color, getComputedStyle(n.closest('pre')).backgroundColor,
    getComputedStyle(n.closest('code')).color])"""


def test_A104_token_colours_have_aa_contrast_in_both_schemes_and_give_way_to_forced_colours(
    embed, page: Page, browser_name
):
    widget = answer_with_code(embed)
    answer = widget.last_answer()
    # Colour schemes and forced colours are emulated in Chromium only (docs/testing.md,
    # "System browsers"); Firefox ESR checks the light scheme.
    schemes = ["light", "dark"] if browser_name == "chromium" else ["light"]
    for scheme in schemes:
        if browser_name == "chromium":
            page.emulate_media(color_scheme=scheme)
        colours = answer.evaluate(TOKEN_COLOURS)
        kinds = {kind for kind, *_ in colours}
        assert {"tok-keyword", "tok-string", "tok-comment", "tok-function", "tok-number"} <= kinds, kinds
        low = [
            (kind, colour, round(theme.contrast_ratio(rgb_of(colour), rgb_of(background)), 2))
            for kind, colour, background, _ in colours
            if theme.contrast_ratio(rgb_of(colour), rgb_of(background)) < 4.5
        ]
        assert low == [], (scheme, low)
        widget.assert_accessible()
    if browser_name == "chromium":
        page.emulate_media(color_scheme="light", forced_colors="active")
        colours = answer.evaluate(TOKEN_COLOURS)
        assert {colour for _, colour, _, text in colours} == {colours[0][3]}  # the code's own: CanvasText
        page.emulate_media(forced_colors="none")
