"""docs/architecture.md stays true of the code.

- Its layer table places every module of the package in one row, names only
  files that exist, and a module imports only from its own row and the rows
  above it (imports read with tests/test_structure.py's `import_graph`).
- No module above the Flask adapters' row imports Flask, even in a function
  or for types only; no module but the error registry makes an HTTP error by hand.
- Every file, function and class the page names exists: a renamed or
  removed one fails here until the page follows it.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from .helpers import REPO_ROOT
from .test_structure import PACKAGE_DIR, import_graph, module_name

PAGE = REPO_ROOT / "docs" / "architecture.md"
SOURCE_DIRS = ("widget_server", "static", "templates")
# A path in the repository, as the page writes it: `widget_server/api.py`, `static/qa/`.
REPO_PATH = re.compile(r"^(?:widget_server|static|templates|tests|docs)/[\w./-]*$")
# A function the page names: `submit()`, `ChatService.submit()`, `readOnce({send})`.
FUNCTION = re.compile(r"^(?:[A-Za-z_]\w*\.)*(?P<name>[A-Za-z_]\w*)\(.*\)$")


def page() -> str:
    return PAGE.read_text(encoding="utf-8")


def code_spans(text: str) -> list[str]:
    return re.findall(r"`([^`\n]+)`", text)


def layer_rows() -> list[tuple[str, list[str]]]:
    """(layer, the repository paths in its files column), top row first."""
    section = page().split("## Layers", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) != 3 or cells[0] in ("layer", "---"):
            continue
        rows.append((cells[0], [span for span in code_spans(cells[1]) if REPO_PATH.match(span)]))
    return rows


def modules_under(path: str) -> set[str]:
    target = REPO_ROOT / path
    files = sorted(target.rglob("*.py")) if path.endswith("/") else [target]
    return {module_name(file) for file in files if file.suffix == ".py"}


def module_layers() -> dict[str, int]:
    layers: dict[str, int] = {}
    for index, (_layer, paths) in enumerate(layer_rows()):
        for path in paths:
            if path.startswith("widget_server/"):
                for module in modules_under(path):
                    assert module not in layers, f"{module} is in two rows of the table"
                    layers[module] = index
    return layers


def test_the_table_has_the_layers():
    names = [layer for layer, _ in layer_rows()]
    assert names[0] == "protocol" and len(names) >= 8, names
    for layer, paths in layer_rows():
        assert paths, f"the {layer!r} row names no file"


def test_every_module_of_the_package_is_in_the_table():
    known = {module_name(path) for path in PACKAGE_DIR.rglob("*.py")}
    assert sorted(known - set(module_layers())) == []


def test_a_module_imports_only_from_its_row_and_the_rows_above():
    layers = module_layers()
    rows = [layer for layer, _ in layer_rows()]
    upward = [
        f"{module} ({rows[layers[module]]}) imports {imported} ({rows[layers[imported]]})"
        for module, imports in sorted(import_graph().items())
        for imported in sorted(imports)
        if layers[imported] > layers[module]
    ]
    assert upward == []


def flask_importers() -> set[str]:
    """The package's modules with an `import flask` or `from flask… import` anywhere (a
    function's body and `if TYPE_CHECKING:` included)."""
    found = set()
    for path in PACKAGE_DIR.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom) and not node.level
                else []
            )
            if any(name == "flask" or name.startswith("flask.") for name in names):
                found.add(module_name(path))
    return found


def test_no_module_above_the_flask_adapters_imports_flask():
    """The page's promise: the protocol, the settings, the stores, the backends and the
    service layer are transport-free; Flask starts at the adapters' row."""
    layers = module_layers()
    adapters = [layer for layer, _ in layer_rows()].index("Flask adapters")
    assert sorted(m for m in flask_importers() if layers[m] < adapters) == []
    assert "widget_server.api" in flask_importers()  # the scan finds an adapter's import


def test_error_codes_are_made_only_by_their_registry():
    """An HTTP error is raised by calling its registry entry (widget_server/wire/errors.py):
    no module writes `ApiError(status, "code", …)` itself, so every code sent is registered,
    with one status (tests/test_docs.py checks the registry against docs/protocol.md)."""
    makers = {"widget_server.errors", "widget_server.wire.errors"}
    by_hand = sorted(
        f"{module_name(path)}:{node.lineno}"
        for path in PACKAGE_DIR.rglob("*.py")
        if module_name(path) not in makers
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "ApiError"
    )
    assert by_hand == []


@pytest.mark.parametrize("path", sorted({span for span in code_spans(page()) if REPO_PATH.match(span)}))
def test_every_path_the_page_names_exists(path):
    assert (REPO_ROOT / path).exists(), f"docs/architecture.md names {path}, which does not exist"


def defines(source: str, name: str) -> bool:
    """`name` is defined in Python or JavaScript `source`: a def, class,
    function, method, or a property of a returned object (`{ update, append }`)."""
    escaped = re.escape(name)
    patterns = (
        rf"\b(?:def|class|function)\s+{escaped}\b",
        rf"^\s*(?:(?:async|static|get)\s+)*{escaped}\s*\([^)]*\)\s*\{{",
        rf"\breturn\s*\{{[^}}]*\b{escaped}\b",
    )
    return any(re.search(pattern, source, re.M) for pattern in patterns)


def source_files() -> list[Path]:
    return [
        path
        for folder in SOURCE_DIRS
        for path in sorted((REPO_ROOT / folder).rglob("*"))
        if path.suffix in (".py", ".js") and path.is_file()
    ]


def named_definitions() -> set[str]:
    """The functions the page names, and the classes it names them on
    (`ChatService` of `ChatService.submit()`; not `view` of `view.blocks()`)."""
    names = set()
    for span in code_spans(page()):
        if match := FUNCTION.match(span):
            names.add(match["name"])
            names.update(part for part in span.split("(", 1)[0].split(".")[:-1] if part[:1].isupper())
    return names


NAMED_FUNCTIONS = sorted(named_definitions())


def test_the_page_names_functions():
    assert len(NAMED_FUNCTIONS) > 20, NAMED_FUNCTIONS


@pytest.mark.parametrize("name", NAMED_FUNCTIONS)
def test_every_function_the_page_names_exists(name):
    assert any(defines(path.read_text(encoding="utf-8"), name) for path in source_files()), (
        f"docs/architecture.md names {name}(), which nothing in {', '.join(SOURCE_DIRS)} defines"
    )


def test_the_definition_finder_tells_a_definition_from_a_call():
    assert defines("def submit(self):\n", "submit")
    assert defines("export function createEventStreamParser(onEvent) {\n", "createEventStreamParser")
    assert defines("  async loop() {\n", "loop")
    assert defines("  return { update, append, finish, blocks: (from = 0) => [] };\n", "blocks")
    assert not defines("    this.loop();\n", "loop")
    assert not defines("chat.submit(conversation_id)\n", "submit")


# Who may make an event-stream parser (static/widget/sse.js `createEventStreamParser`): its
# definition, and follow.js, the one loop that follows a stream off the network (its stall
# timer, backoff and Last-Event-ID resume) for the answer, the hand-off and the agents' console.
# There were three readers with three backoffs, and the console's had no stall timer; a file
# that makes its own parser is one more growing apart. No reader was left unmoved: a file that
# must keep its own goes here, with why.
EVENT_STREAM_PARSER_MAKERS = {
    "static/widget/sse.js": "defines it",
    "static/widget/follow.js": "follows every resumable event stream",
}


def test_only_follow_js_makes_an_event_stream_parser():
    makers = {
        path.relative_to(REPO_ROOT).as_posix()
        for path in sorted((REPO_ROOT / "static").rglob("*.js"))
        if path.relative_to(REPO_ROOT / "static").parts[0] != "min"  # static/min/: generated copies
        and "createEventStreamParser(" in path.read_text(encoding="utf-8")
    }
    assert makers == set(EVENT_STREAM_PARSER_MAKERS), makers
