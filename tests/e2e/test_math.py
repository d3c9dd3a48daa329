"""Math in answers: markdown.js's detection (`$…$`, `$$…$$`, `\\(…\\)`, `\\[…\\]`), static/widget/math.js
(MathML from the vendored Temml, through an allow-list) and chat.js's lazy `math` hook, in real
browsers.

The modules are imported by the standalone panel's page (/chat, same origin) and driven
directly: each delimiter, dollar amounts that stay text, math never inside code, TeX that does
not parse, a formula streamed across delta boundaries, hostile TeX that must build nothing off
the allow-list. The lazy load and the demo's `/scenario math` are tested in the embedded widget;
the contract lines (docs/accessibility.md A114–A116) in test_accessibility_contract_math.py.
"""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from widget_server.backends.demo import MATH_ANSWER

from .module_page import modules_page
from .test_answer_tools import ask, reopen

pytestmark = pytest.mark.e2e

WIDGET = Path(__file__).resolve().parents[2] / "static" / "widget"

# What math.js lets through (its ELEMENTS and ATTRIBUTES); the span markdown.js makes is the
# formula's box.
ALLOWED_ELEMENTS = {
    "math",
    "semantics",
    "mrow",
    "mi",
    "mn",
    "mo",
    "ms",
    "mtext",
    "mspace",
    "msub",
    "msup",
    "msubsup",
    "munder",
    "mover",
    "munderover",
    "mfrac",
    "msqrt",
    "mroot",
    "mstyle",
    "mtable",
    "mtr",
    "mtd",
    "mlabeledtr",
    "mpadded",
    "mphantom",
    "menclose",
    "merror",
    "mmultiscripts",
    "mprescripts",
    "none",
    "code",
}
ALLOWED_ATTRIBUTES = {
    "display",
    "displaystyle",
    "scriptlevel",
    "mathvariant",
    "mathsize",
    "lspace",
    "rspace",
    "stretchy",
    "symmetric",
    "largeop",
    "movablelimits",
    "minsize",
    "maxsize",
    "fence",
    "separator",
    "form",
    "accent",
    "accentunder",
    "linethickness",
    "width",
    "height",
    "depth",
    "voffset",
    "notation",
    "columnalign",
    "rowalign",
    "columnspan",
    "rowspan",
}

# window.math: `render(text, cuts)` feeds `text` to a markdown view in appends cut at `cuts`,
# with math.js's drawMath as its `math` hook, and reports, after each append, the formulas
# (their TeX, display, whether drawn) and, at the end, every element and the view's plain text.
SETUP_JS = """
async (base) => {
  const M = await import(base + 'markdown.js');
  const T = await import(base + 'math.js');
  const formulas = (box) => [...box.querySelectorAll('[data-tex]')].map((node) => ({
    tex: node.dataset.tex, display: node.dataset.math,
    drawn: node.firstElementChild ? node.firstElementChild.localName : null,
    text: node.textContent,
  }));
  const render = (text, cuts = []) => {
    const box = document.createElement('div');
    document.body.append(box);
    let drawCalls = 0;
    const view = M.createMarkdownView(box, { math: (found) => { drawCalls += found.length; T.drawMath(found); } });
    const steps = [];
    let previous = 0;
    let firstMath = null, firstMathKept = true;
    for (const cut of [...cuts, text.length]) {
      view.append(text.slice(previous, cut));
      previous = cut;
      steps.push({ shown: text.slice(0, cut), formulas: formulas(box) });
      const math = box.querySelector('p:not(:last-child) math');
      if (math && !firstMath) firstMath = math;
      if (firstMath && !firstMath.isConnected) firstMathKept = false;
    }
    view.finish();
    const result = {
      steps, drawCalls, firstMathKept,
      formulas: formulas(box),
      plain: view.blocks().map((block) => block.plain),
      elements: [...box.querySelectorAll('[data-tex] *')].map((node) =>
        [node.localName, node.namespaceURI, [...node.attributes].map((a) => a.name)]),
      everything: [...box.querySelectorAll('*')].map((node) => node.localName),
      text: box.textContent,
    };
    box.remove();
    return result;
  };
  window.math = { M, T, render };
  return true;
}
"""


@pytest.fixture(scope="module")
def math_page(browser: Browser):
    with modules_page(browser, SETUP_JS) as page:
        yield page


def render(page: Page, text: str, cuts: list[int] | None = None) -> dict:
    return page.evaluate("([text, cuts]) => math.render(text, cuts)", [text, cuts or []])


@pytest.mark.parametrize(
    ("source", "display"),
    [
        ("$x^2 + y^2$", "inline"),
        ("$$x^2 + y^2$$", "block"),
        ("\\(x^2 + y^2\\)", "inline"),
        ("\\[x^2 + y^2\\]", "block"),
    ],
)
def test_each_delimiter_is_drawn_as_mathml(math_page: Page, source: str, display: str):
    result = render(math_page, f"So {source} holds.\n")
    assert [(f["tex"], f["display"], f["drawn"]) for f in result["formulas"]] == [("x^2 + y^2", display, "math")]
    # Native MathML in its own namespace; the plain text (what the announcer says) is the TeX.
    assert all(namespace == "http://www.w3.org/1998/Math/MathML" for _, namespace, _ in result["elements"])
    assert result["plain"] == ["So x^2 + y^2 holds."]
    math = math_page.evaluate(
        """(source) => { const box = document.createElement('div');
        math.M.createMarkdownView(box, { math: math.T.drawMath }).update(source);
        const node = box.querySelector('math'); return [node.getAttribute('display'), node.querySelectorAll('msup').length]; }""",
        f"{source}\n",
    )
    assert math == ["block" if display == "block" else None, 2]


@pytest.mark.parametrize(
    "text",
    [
        "A tuner costs $5 and a metronome $10.",
        "It was $5, or $6 with the case.",
        "Prices: $5/$6 each.",
        "Pay $ 5 now and $ 6 later.",
        "Code spans: $5 in `a$` or $6 in `b`.",
        "Escaped: \\$x\\$ and a lone $.",
        "An unclosed $$x + y here.",
    ],
)
def test_dollar_amounts_stay_text(math_page: Page, text: str):
    result = render(math_page, text + "\n")
    assert result["formulas"] == []
    assert result["text"] == text.replace("\\$", "$").replace("`", "")


def test_math_is_never_read_inside_code(math_page: Page):
    result = render(math_page, "Run `echo $x$` or `\\(y\\)`.\n\n```sh\necho $HOME $x$\n```\n")
    assert result["formulas"] == []
    assert result["everything"].count("code") == 3


def test_math_is_read_inside_lists_tables_headings_and_quotes(math_page: Page):
    result = render(math_page, "# Area $\\pi r^2$\n\n- item $a$\n\n| x | y |\n| - | - |\n| $b$ | c |\n\n> $c$\n")
    assert [f["tex"] for f in result["formulas"]] == ["\\pi r^2", "a", "b", "c"]
    assert all(f["drawn"] == "math" for f in result["formulas"])


@pytest.mark.parametrize(
    "source",
    ["$\\frac{1}{$", "$$\\begin{matrix} x$$", "\\(\\unknowncommand{x}\\)", "$x^^2$"],
)
def test_invalid_tex_shows_its_source_as_code(math_page: Page, source: str):
    result = render(math_page, f"Broken: {source} here.\n")
    [formula] = result["formulas"]
    assert formula["drawn"] == "code" and formula["text"] == source
    assert result["elements"] == [["code", "http://www.w3.org/1999/xhtml", []]]
    assert result["text"] == f"Broken: {source} here."


def test_a_formula_streamed_across_deltas_is_drawn_once_closed(math_page: Page):
    text = "Before $a + b$ after, then \\(c\\) too.\n\n$$\\frac{d}{e}$$\n\nThe end $f$.\n"
    result = render(math_page, text, list(range(1, len(text))))
    for step in result["steps"]:
        shown = step["shown"]
        for formula in step["formulas"]:
            # A formula exists only once its closing delimiter has arrived, and is drawn at once.
            assert formula["drawn"] == "math", (shown, formula)
        closed = sum(source in shown for source in ("$a + b$", "\\(c\\)", "$$\\frac{d}{e}$$", "$f$"))
        assert len(step["formulas"]) == closed, shown
    assert [f["tex"] for f in result["formulas"]] == ["a + b", "c", "\\frac{d}{e}", "f"]
    # A closed paragraph's <math> is the same node to the end: never drawn again (flat cost).
    assert result["firstMathKept"]


def test_an_unclosed_formula_stays_text_until_its_close(math_page: Page):
    steps = render(math_page, "Sum $x + y$ done.\n", [6, 10, 11])["steps"]
    assert [len(step["formulas"]) for step in steps] == [0, 0, 1, 1]


# Hostile TeX and markup: nothing but allow-listed MathML may come of it, no link, no script,
# no style, no handler; its text stays text.
HOSTILE = [
    "$\\href{javascript:alert(1)}{x}$",
    "$\\url{javascript:alert(1)}$",
    "$<img src=x onerror=alert(1)>$",
    "$$\\text{<script>window.__pwned=1</script>}$$",
    "$\\htmlClass{x}{y}$",
    "$\\htmlId{x}{y}$",
    "$\\htmlStyle{color:red}{y}$",
    "$\\htmlData{foo=bar}{y}$",
    "$\\includegraphics{https://example.com/x.png}$",
    "$\\color{red}{x}$",
    "$\\colorbox{red}{x}$",
    "$\\style{color:red}{x}$",
    "$$\\begin{array}{|c|}\\hline x\\\\\\hline\\end{array}$$",
    "$\\def\\a{\\a}\\a$",
    "$\\label{x} y$",
    "\\(\\textcolor{#f00}{<a href=javascript:alert(1)>x</a>}\\)",
    '$\\mathrm{\\\\"><svg onload=alert(1)>}$',
]


@pytest.mark.parametrize("source", HOSTILE)
def test_hostile_tex_builds_nothing_off_the_allow_list(math_page: Page, source: str):
    result = render(math_page, f"Look: {source}\n")
    assert len(result["formulas"]) == 1
    for name, namespace, attributes in result["elements"]:
        assert name in ALLOWED_ELEMENTS, (source, name)
        assert namespace in ("http://www.w3.org/1998/Math/MathML", "http://www.w3.org/1999/xhtml"), namespace
        assert set(attributes) <= ALLOWED_ATTRIBUTES, (source, name, attributes)
    assert not {"a", "img", "script", "svg", "style", "span"} & {name for name, _, _ in result["elements"]}
    assert math_page.evaluate("() => window.__pwned") is None


def test_math_js_has_no_html_sink():
    source = (WIDGET / "math.js").read_text(encoding="utf-8")
    for sink in (
        "innerHTML",
        "outerHTML",
        "insertAdjacentHTML",
        "document.write",
        "DOMParser",
        "eval(",
        "renderToString",
    ):
        assert sink not in source, f"math.js mentions {sink}"
    assert not re.search(r"\.(style|on[a-z]+)\s*=", source)
    assert "trust: false" in source


# What the first answer with math fetches, as served (static/min/, each file gzipped on its own):
# math.js, its stylesheet and Temml (docs/performance.md, "Math").
MATH_BUDGET_BYTES = 64 * 1024  # 65,536 B


def test_gzipped_size_budget():
    served = WIDGET.parent / "min" / "widget"
    size = sum(
        len(gzip.compress((served / name).read_bytes(), compresslevel=9))
        for name in ("math.js", "math.css", "vendor/temml.js")
    )
    assert size <= MATH_BUDGET_BYTES, f"math is {size} bytes gzipped (budget {MATH_BUDGET_BYTES})"


# -- the lazy load and the demo's scenario, in the embedded widget ------------------------------


def test_math_loads_only_with_an_answer_that_has_math(embed, page: Page):
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    widget = embed()
    widget.open()
    ask(widget, "/echo No math here: a tuner costs $5 and a metronome $10, and `$x$` is code.\n")
    assert not [url for url in requested if re.search(r"/(math\.(js|css)|temml\.js)", url)]
    expect(widget.last_answer().locator("[data-tex]")).to_have_count(0)
    ask(widget, "/echo Now some: $x^2$.\n")
    expect(widget.last_answer().locator("[data-tex] math")).to_have_count(1)
    loaded = {url.rsplit("/", 1)[1] for url in requested if re.search(r"/(math\.(js|css)|temml\.js)", url)}
    assert loaded == {"math.js", "math.css", "temml.js"}


def test_the_math_scenario_draws_each_formula_and_leaves_the_rest(embed):
    widget = embed()
    widget.open()
    ask(widget, "/scenario math")
    answer = widget.last_answer()
    expect(answer.locator("[data-tex] > math")).to_have_count(4)
    expect(answer.locator("[data-tex] > code")).to_have_text(["$\\frac{1}{$"])
    assert answer.locator("math[display=block]").count() == 2
    assert "A tuner costs $5 and a metronome $10." in answer.inner_text()
    texs = answer.locator("[data-tex]").evaluate_all("(nodes) => nodes.map((node) => node.dataset.tex)")
    assert texs == [
        "n",
        "f = 440 \\cdot 2^{n/12}",
        "f_{12} = 2 \\cdot 440 = 880",
        "\\frac{3}{2} \\approx 2^{7/12}",
        "\\frac{1}{",
    ]
    assert "$5" in MATH_ANSWER


def test_a_restored_answer_draws_its_formulas(embed, page: Page):
    """A reloaded conversation draws its answers at once, before math.js arrives: their
    formulas show their source, then are drawn when it comes (chat.js `math()`)."""
    widget = embed()
    widget.open()
    formulas = " ".join(f"$x_{{{n}}}$" for n in range(60))
    ask(widget, f"/echo Restored: {formulas} and \\[\\frac{{a}}{{b}}\\].\n")
    expect(widget.last_answer().locator("[data-tex] > math")).to_have_count(61)
    widget = reopen(page)
    answer = widget.last_answer()
    expect(answer.locator("[data-tex] > math")).to_have_count(61)
    assert answer.locator("[data-tex]").evaluate_all("(nodes) => nodes.map((node) => node.dataset.tex)")[:2] == [
        "x_{0}",
        "x_{1}",
    ]
