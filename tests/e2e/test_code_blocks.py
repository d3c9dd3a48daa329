"""Code blocks: static/widget/highlight.js (the line tokenizer), static/widget/code-blocks.js (its
spans, the Copy code button) and markdown.js's `code` hook, in real browsers.

The modules are imported by the standalone panel's page (/chat, same origin) and driven
directly: the tokens of each language, what a line leaves open for the next, a streamed block
whose firm lines are each highlighted once (flat cost, docs/performance.md "Highlighting"),
hostile code that must stay text. The contract lines (docs/accessibility.md A102–A104) are
tested in the embedded widget by test_accessibility_contract_code.py; the lazy load is tested
here, in the widget too.
"""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from .module_page import modules_page
from .test_answer_tools import ask, reopen

pytestmark = pytest.mark.e2e

WIDGET = Path(__file__).resolve().parents[2] / "static" / "widget"

# window.code: the modules, a tree of a rendered block, and a markdown view whose `code` hook
# counts the line renderer's calls.
SETUP_JS = """
async (base) => {
  const H = await import(base + 'highlight.js');
  const C = await import(base + 'code-blocks.js');
  const M = await import(base + 'markdown.js');
  const tokens = (language, lines) => {
    const grammar = H.grammarFor(language);
    let state = null;
    return lines.map((line) => {
      const result = H.tokenizeLine(grammar, line, state);
      state = result.state;
      return result.tokens;
    });
  };
  // Feeds `text` in appends cut at `cuts`; the hook gives no renderer for the first `late`
  // updates (code-blocks.js not yet loaded), then a counting one.
  const stream = (text, cuts, late = 0) => {
    const box = document.createElement('div');
    let updates = 0, calls = 0;
    const perAppend = [];
    const code = {
      lines(language) {
        if (updates < late) return null;
        const render = C.lineRenderer(language);
        return render && ((line) => { calls++; return render(line); });
      },
      closed() {},
    };
    const view = M.createMarkdownView(box, { code });
    let previous = 0;
    for (const cut of [...cuts, text.length]) {
      const before = calls;
      view.append(text.slice(previous, cut));
      previous = cut;
      updates++;
      perAppend.push(calls - before);
    }
    view.finish();
    const codes = [...box.querySelectorAll('pre > code')];
    return {
      calls, perAppend,
      texts: codes.map((node) => node.textContent),
      elements: [...box.querySelectorAll('*')].map((node) => [node.localName, [...node.attributes].map((a) => `${a.name}=${a.value}`)]),
      kinds: [...box.querySelectorAll('code span[class]')].map((node) => [node.className, node.textContent]),
    };
  };
  window.code = { H, C, M, tokens, stream };
  return true;
}
"""


@pytest.fixture(scope="module")
def code_page(browser: Browser):
    with modules_page(browser, SETUP_JS) as page:
        yield page


def tokens(page: Page, language: str, source: str) -> list[list[list[str]]]:
    return page.evaluate("([language, lines]) => code.tokens(language, lines)", [language, source.split("\n")])


def kinds(line_tokens: list[list[str]]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for kind, text in line_tokens:
        if kind:
            found.setdefault(kind, []).append(text)
    return found


# One sample per language, multi-line constructs and awkward corners included.
SAMPLES = {
    "python": 'import os\n\n@cache\ndef greet(name: str) -> str:\n    """Say\n    hello."""\n    return f"Hi {name}!"  # done\nx = 0x1F + 3.5e-2 if True else None\ns = \'it\\\'s\'\n',
    "js": "const a = `multi\nline ${x}` + 'q\\'s'; // c\n/* block\n  comment */ let n = 1_000n;\nclass Foo extends Bar { get x() { return null; } }\n",
    "ts": "interface User { id: number; name?: string }\nexport type Id = User['id'];\n",
    "json": '{\n  "name": "widget",\n  "version": 3,\n  "ok": true,\n  "list": [1, -2.5e3, null],\n  "s": "a \\"q\\" b"\n}\n',
    "bash": '#!/bin/sh\nfor f in *.txt; do\n  echo "$f ${HOME}" # note\ndone\nexport N=3\n',
    "html": "<!DOCTYPE html>\n<!-- a\n  comment -->\n<a href=\"/x\" data-y='1'>Tom &amp; Jerry's</a>\n",
    "css": ".panel > a:hover {\n  color: #0b57d0; /* blue\n  still */\n  margin: -0.5rem 2px !important;\n  --x: calc(1px + 2%);\n}\n@media (min-width: 40em) {}\n",
    "sql": "SELECT id, \"name\" FROM users -- all\nwhere age >= 18 AND city = 'O''Hare'\n/* many\n lines */ ORDER BY id;\n",
}


@pytest.mark.parametrize("language", sorted(SAMPLES))
def test_the_tokens_of_every_line_join_to_exactly_that_line(code_page: Page, language: str):
    source = SAMPLES[language]
    lines = tokens(code_page, language, source)
    assert ["".join(text for _, text in line) for line in lines] == source.split("\n")
    assert all(text for line in lines for _, text in line), "no empty token"
    assert any(kind for line in lines for kind, _ in line), "something is coloured"


def test_python_tokens_have_their_classes(code_page: Page):
    lines = tokens(code_page, "python", SAMPLES["python"])
    assert kinds(lines[0]) == {"keyword": ["import"]}
    assert kinds(lines[2]) == {"function": ["@cache"]}
    assert kinds(lines[3]) == {"keyword": ["def"], "function": ["greet"]}
    # A docstring over two lines: the second is string throughout, then the code after it.
    assert kinds(lines[4]) == {"string": ['"""Say']}
    assert lines[5] == [["string", '    hello."""']]
    assert kinds(lines[6]) == {"keyword": ["return"], "string": ['f"Hi {name}!"'], "comment": ["# done"]}
    assert kinds(lines[7]) == {"number": ["0x1F", "3.5e-2"], "keyword": ["if", "else"], "literal": ["True", "None"]}
    assert kinds(lines[8]) == {"string": ["'it\\'s'"]}


def test_javascript_tokens_have_their_classes_and_carry_open_constructs(code_page: Page):
    lines = tokens(code_page, "js", SAMPLES["js"])
    assert kinds(lines[0])["keyword"] == ["const"]
    assert kinds(lines[0])["string"] == ["`multi"]  # a template literal left open
    assert kinds(lines[1]) == {"string": ["line ${x}`", "'q\\'s'"], "comment": ["// c"]}
    assert lines[2] == [["comment", "/* block"]]
    assert kinds(lines[3]) == {"comment": ["  comment */"], "keyword": ["let"], "number": ["1_000n"]}
    assert kinds(lines[4]) == {
        "keyword": ["class", "extends", "get", "return"],
        "type": ["Foo", "Bar"],
        "function": ["x"],
        "literal": ["null"],
    }
    ts = tokens(code_page, "typescript", SAMPLES["ts"])
    assert kinds(ts[0])["keyword"] == ["interface"] and kinds(ts[0])["type"] == ["User"]


def test_other_languages_colour_their_main_tokens(code_page: Page):
    json_lines = tokens(code_page, "json", SAMPLES["json"])
    assert kinds(json_lines[1]) == {"property": ['"name"'], "string": ['"widget"']}
    assert kinds(json_lines[4]) == {"property": ['"list"'], "number": ["1", "-2.5e3"], "literal": ["null"]}
    bash = tokens(code_page, "bash", SAMPLES["bash"])
    assert kinds(bash[0]) == {"comment": ["#!/bin/sh"]}
    assert kinds(bash[2]) == {"function": ["echo"], "string": ['"$f ${HOME}"'], "comment": ["# note"]}
    html = tokens(code_page, "html", SAMPLES["html"])
    assert html[2][0] == ["comment", "  comment -->"]
    assert kinds(html[3]) == {
        "tag": ["<a", ">", "</a", ">"],
        "attribute": ["href", "data-y"],
        "string": ['"/x"', "'1'"],
        "literal": ["&amp;"],
    }
    css = tokens(code_page, "css", SAMPLES["css"])
    assert kinds(css[0]) == {"type": [".panel"]}
    assert kinds(css[1]) == {"property": ["color"], "number": ["#0b57d0"], "comment": ["/* blue"]}
    assert css[2][0] == ["comment", "  still */"]
    sql = tokens(code_page, "sql", SAMPLES["sql"])
    assert kinds(sql[0]) == {"keyword": ["SELECT", "FROM"], "property": ['"name"'], "comment": ["-- all"]}
    assert kinds(sql[1])["keyword"] == ["where", "AND"] and kinds(sql[1])["string"] == ["'O''Hare'"]


def test_a_language_without_rules_has_no_grammar_and_aliases_name_theirs(code_page: Page):
    found = code_page.evaluate(
        """(names) => names.map((name) => [name, !!code.H.grammarFor(name), !!code.C.lineRenderer(name)])""",
        ["brainfuck", "", "text", "py", "Python", "TS", "tsx", "Bash", "sh", "shell", "HTML", "xml", "css", "SQL"],
    )
    assert [name for name, grammar, renderer in found if grammar != renderer] == []
    assert [name for name, grammar, _ in found if not grammar] == ["brainfuck", "", "text"]


def uneven_cuts(text: str, step: int = 7) -> list[int]:
    return list(range(step, len(text), step))


def test_a_streamed_block_highlights_each_firm_line_once_however_long_it_grows(code_page: Page):
    """Flat cost: the line renderer runs once per complete line, never again for earlier lines,
    so an append's work does not grow with the block (docs/performance.md, "Highlighting")."""
    body = "".join(f"def f{n}(x):  # line {n}\n    return x * {n}\n" for n in range(1000))
    text = f"Code:\n\n```python\n{body}```\n\nAfter.\n"
    result = code_page.evaluate("([text, cuts]) => code.stream(text, cuts)", [text, uneven_cuts(text)])
    assert result["texts"] == [body]
    assert result["calls"] == body.count("\n")  # each of its 2,000 lines once
    # An append of 7 characters completes at most one line here: never more than one call.
    assert max(result["perAppend"]) <= 1, max(result["perAppend"])


def test_lines_drawn_before_the_highlighter_came_are_redrawn_once(code_page: Page):
    body = "".join(f"let v{n} = 'x{n}'; // {n}\n" for n in range(50))
    text = f"```js\n{body}```\n"
    result = code_page.evaluate("([text, cuts]) => code.stream(text, cuts, 100)", [text, uneven_cuts(text)])
    assert result["texts"] == [body]
    assert result["calls"] == 50  # the lines drawn plain, redrawn once; the rest once each
    assert ["tok-keyword", "let"] in result["kinds"] and ["tok-comment", "// 49"] in result["kinds"]


# Code that would be markup, a script or an attribute if it were ever parsed as HTML.
HOSTILE = (
    "<script>window.__pwned = 1</script>",
    '</code></pre><img src=x onerror="window.__pwned = 2">',
    "&lt;b&gt; &amp;amp; &#60;i&#62; \"quoted\" 'single' `tick`",
    "<!-- --><svg onload=window.__pwned=3>",
    "*/ </style><style>body{display:none}</style> /*",
)


@pytest.mark.parametrize("language", ["html", "js", "python", "css", "brainfuck"])
def test_hostile_code_is_text_in_spans_and_nothing_else(code_page: Page, language: str):
    body = "\n".join(HOSTILE) + "\n"
    text = f"```{language}\n{body}```\n"
    result = code_page.evaluate("([text, cuts]) => code.stream(text, cuts)", [text, uneven_cuts(text, 5)])
    assert result["texts"] == [body]
    tags = {tag for tag, _ in result["elements"]}
    assert tags <= {"pre", "code", "span"}, tags
    for tag, attributes in result["elements"]:
        if tag == "span":
            assert all(re.fullmatch(r"class=tok-[a-z]+", attribute) for attribute in attributes), attributes
    assert code_page.evaluate("() => window.__pwned") is None


# What the first answer with a fenced block fetches, as served (static/min/, each file gzipped
# on its own): highlight.js, code-blocks.js, its stylesheet and clipboard.js
# (docs/performance.md, "Highlighting", measures it against Prism).
CODE_BLOCKS_BUDGET_BYTES = 4096


def test_gzipped_size_budget():
    served = WIDGET.parent / "min" / "widget"
    size = sum(
        len(gzip.compress((served / name).read_bytes(), compresslevel=9))
        for name in ("highlight.js", "code-blocks.js", "code-blocks.css", "clipboard.js")
    )
    assert size <= CODE_BLOCKS_BUDGET_BYTES, f"code blocks are {size} bytes gzipped (budget {CODE_BLOCKS_BUDGET_BYTES})"


@pytest.mark.parametrize("name", ["highlight.js", "code-blocks.js"])
def test_sources_have_no_html_sinks(name: str):
    source = (WIDGET / name).read_text(encoding="utf-8")
    for sink in (
        "innerHTML",
        "outerHTML",
        "insertAdjacentHTML",
        "document.write",
        "DOMParser",
        "eval(",
        "new Function",
    ):
        assert sink not in source, f"{name} mentions {sink}"
    assert not re.search(r"\.(style|on[a-z]+)\s*=|setAttribute", source)


# -- the lazy load, in the embedded widget ------------------------------------------------------

LOADED = """() => performance.getEntriesByType('resource').map((entry) => entry.name)
    .filter((name) => /\\/(highlight|code-blocks)\\.(js|css)/.test(name))
    .map((name) => name.split('/').pop())"""


@pytest.mark.smoke
def test_the_highlighter_loads_only_with_an_answer_that_has_a_fenced_block(embed):
    widget = embed()
    widget.open()
    ask(widget, "/echo No code here, only `inline code` and a list:\n\n- one\n- two\n")
    frame = widget.panel_frame()
    assert frame.evaluate(LOADED) == []
    ask(widget, "/echo Now some:\n\n```python\nprint('hi')\n```\n")
    expect(widget.last_answer().locator(".code-block__copy")).to_have_count(1)
    assert sorted(set(frame.evaluate(LOADED))) == ["code-blocks.css", "code-blocks.js", "highlight.js"]
    assert widget.last_answer().locator("code .tok-function").all_inner_texts() == ["print"]


def test_a_restored_answer_drawn_before_the_module_came_is_highlighted_after_it(embed, page):
    """A reloaded conversation draws its answers at once, before code-blocks.js arrives: each
    block is coloured afterwards (code-blocks.js `highlightDrawn`, a task per block) and gets
    its button, its text unchanged."""
    widget = embed()
    widget.open()
    source = "".join(f"x{n} = {n}  # {n}\n" for n in range(40))
    ask(widget, f"/echo Restored:\n\n```python\n{source}```\n\n```text\nplain\n```\n")
    expect(widget.last_answer().locator(".code-block__copy")).to_have_count(2)
    widget = reopen(page)
    answer = widget.last_answer()
    expect(answer.locator(".code-block__copy")).to_have_count(2)
    expect(answer.locator("code .tok-comment")).to_have_count(40)
    texts = answer.locator("pre > code").evaluate_all("(nodes) => nodes.map((n) => n.textContent)")
    assert texts == [source, "plain\n"]
    assert answer.locator("pre > code").nth(1).evaluate("n => n.childElementCount") == 0
