"""docs/accessibility.md, "Math in answers", line by line: one test per contract id (A114…A116).

Like test_accessibility_contract.py: the widget embedded in a host page on another origin, real
Chromium and Firefox ESR, axe in every new state (tests/test_docs.py checks that no id is left
without its test). The demo's `/scenario math` is what a visitor would play; `/echo` sends the
rest. The detection, streaming and hostile TeX are tested by test_math.py.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, Route, expect

from widget_server.backends.demo import MATH_ANSWER

from .test_answer_tools import EN, ask, polite, server_history

pytestmark = pytest.mark.e2e

MATH_FILES = re.compile(r"/(math\.(js|css)|temml\.js)(\?|$)")
FONT_FILES = re.compile(r"\.(woff2?|ttf|otf)(\?|$)")
# The spoken forms of /scenario math's formulas: their TeX, delimiters left out.
SPOKEN = [
    "A note n semitones above A4 sounds at f = 440 \\cdot 2^{n/12} hertz.",
    "f_{12} = 2 \\cdot 440 = 880",
    "\\frac{3}{2} \\approx 2^{7/12}",
    "A tuner costs $5 and a metronome $10.",
    "This formula does not parse: \\frac{1}{.",
]


def test_A114_formulas_are_native_mathml_and_dollar_amounts_stay_text(embed, page: Page):
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    widget = embed()
    widget.open()
    ask(widget, "/echo Prices: a tuner costs $5 and a metronome $10; `$x$` is code.\n")
    assert not [url for url in requested if MATH_FILES.search(url)]  # no math, nothing loaded
    expect(widget.last_answer().locator(".turn__body")).to_contain_text("a tuner costs $5 and a metronome $10;")
    ask(widget, "/scenario math")
    answer = widget.last_answer()
    expect(answer.get_by_role("math")).to_have_count(4)
    expect(answer.locator("math[display=block]")).to_have_count(2)
    # Display math on a line of its own: as wide as the answer's text, below what precedes it.
    for index in range(2):
        block = answer.locator("[data-math=block]").nth(index)
        assert block.evaluate("(n) => getComputedStyle(n).display") == "block"
    expect(answer.locator(".turn__body")).to_contain_text("A tuner costs $5 and a metronome $10.")
    assert [url for url in requested if MATH_FILES.search(url)]
    assert not [url for url in requested if FONT_FILES.search(url)], "no font is fetched"
    widget.assert_accessible()  # math shown


def test_A114_a_wide_display_formula_scrolls_in_a_tab_stop_named_by_its_tex(embed):
    widget = embed()  # the floating panel: 400 px wide
    widget.open()
    tex = " + ".join(f"a_{{{n}}} b_{{{n}}}" for n in range(1, 31))
    ask(widget, f"/echo A narrow one, \\[x^2\\], and a wide one:\n\n$${tex}$$\n")
    answer = widget.last_answer()
    expect(answer.locator("[data-tex] > math")).to_have_count(2)
    narrow, wide = answer.locator("[data-math=block]").nth(0), answer.locator("[data-math=block]").nth(1)
    assert wide.evaluate("(n) => n.scrollWidth > n.clientWidth")
    region = answer.get_by_role("region", name=tex)
    expect(region).to_have_attribute("tabindex", "0")
    # Nothing that scrolls nothing is a stop (scroll-follow.js).
    expect(narrow).not_to_have_attribute("tabindex", "0")
    region.focus()
    region.press("ArrowRight")
    widget.panel_frame().wait_for_function("(box) => box.scrollLeft > 0", arg=wide.element_handle())
    widget.assert_accessible()


def test_A114_a_formula_shows_its_source_until_math_js_comes(embed, page: Page, browser_name):
    held: list[Route] = []

    def hold(route: Route) -> None:  # math.js is on its way, for as long as the test likes
        held.append(route)

    page.context.route(MATH_FILES, hold)
    widget = embed()
    widget.open()
    ask(widget, "/echo First $x^2$ here.\n")
    first = widget.last_answer().locator("[data-tex]")
    expect(first).to_have_text("$x^2$")
    assert first.locator("math").count() == 0
    widget.assert_accessible()  # the source shown
    for route in held:
        route.continue_()
    page.context.unroute(MATH_FILES, hold)
    expect(first.locator("math")).to_have_count(1)  # drawn once it came

    # math.js cannot be had (offline, or a failed load): the source stays, as text.
    page.context.route(MATH_FILES, lambda route: route.abort())
    widget = embed()
    widget.open()
    ask(widget, "/echo First $x^2$ here.\n")
    first = widget.last_answer().locator("[data-tex]")
    expect(first).to_have_text("$x^2$")
    page.wait_for_timeout(300)
    assert first.locator("math, code").count() == 0
    page.context.unroute(MATH_FILES)
    # Back online, the next formula loads it and the first is drawn too. Firefox ESR keeps a
    # failed module fetch in the document's module map (the HTML standard's rule before it
    # was changed to fetch again), so there it is drawn after a reload: Chromium only.
    if browser_name == "chromium":
        ask(widget, "/echo Then \\(y\\) there.\n")
        expect(widget.last_answer().locator("[data-tex] > math")).to_have_count(1)
        expect(first.locator("math")).to_have_count(1)


def test_A115_the_announcer_says_a_formula_as_its_tex_once(embed, chat_server):
    widget = embed()
    widget.open()
    ask(widget, "/scenario math")
    widget.wait_for_announcement(EN["complete"])
    said = polite(widget)
    assert said[0] == EN["generating"] and said[-1] == EN["complete"], said
    # Sentences said close together go out together (announcer.js `_flush()`): the words are
    # compared, not the grouping.
    spoken = " ".join(said[1:-1])
    assert spoken == " ".join(SPOKEN), said
    for tex in ("f = 440 \\cdot 2^{n/12}", "f_{12} = 2 \\cdot 440 = 880", "\\frac{3}{2} \\approx 2^{7/12}"):
        assert spoken.count(tex) == 1, (tex, said)
    assert "$$" not in spoken and "\\(" not in spoken and "\\[" not in spoken
    (_, reply) = server_history(chat_server, widget)
    assert reply["text"] == MATH_ANSWER  # the text as it came, delimiters included


def test_A116_tex_that_does_not_parse_is_its_source_as_code_and_math_takes_the_answers_colour(
    embed, page: Page, browser_name
):
    widget = embed()
    widget.open()
    ask(widget, "/scenario math")
    answer = widget.last_answer()
    broken = answer.locator("[data-tex] > code")
    expect(broken).to_have_text(["$\\frac{1}{$"])
    assert answer.locator("merror, .temml-error, [style]").count() == 0
    # Only allow-listed attributes: nothing that could colour, style, name or link.
    attributes = answer.locator("[data-tex] *").evaluate_all(
        "(nodes) => [...new Set(nodes.flatMap((n) => [...n.attributes].map((a) => a.name)))]"
    )
    assert not {"style", "class", "id", "href", "mathcolor", "mathbackground"} & set(attributes), attributes
    colours = answer.evaluate(
        """(n) => [getComputedStyle(n.querySelector('.turn__body p')).color,
            ...[...n.querySelectorAll('math, math *')].map((m) => getComputedStyle(m).color)]"""
    )
    assert set(colours) == {colours[0]}, colours
    widget.assert_accessible()
    if browser_name == "chromium":  # forced colours are emulated in Chromium only (docs/testing.md)
        page.emulate_media(forced_colors="active")
        colours = answer.evaluate(
            """(n) => [getComputedStyle(n.querySelector('.turn__body p')).color,
                ...[...n.querySelectorAll('math, math *')].map((m) => getComputedStyle(m).color)]"""
        )
        assert set(colours) == {colours[0]}, colours
        page.emulate_media(forced_colors="none")
