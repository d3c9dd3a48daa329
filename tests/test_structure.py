"""The package's shape: no import cycles, and a pure protocol module.

docs/architecture.md draws the layers; these tests keep the drawing true.
Imports are read from the source with `ast` (every import statement, at any
depth, those under `if TYPE_CHECKING:` included), so a cycle through a
function-level import counts too, and so does one of types alone: two modules
that need each other's types are one design, and a protocol breaks it
(feedback/service.py `Answers`).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE_DIR = Path(__file__).resolve().parent.parent / "widget_server"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path, known: set[str]) -> set[str]:
    """The package's modules that `path` imports (resolving relative imports)."""
    this = module_name(path)
    package = this if path.name == "__init__.py" else this.rpartition(".")[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    # A package's own __init__ is not an edge of its submodules' cycles.
    return {name for name in found if name in known and name != this and not this.startswith(name + ".")}


def import_graph() -> dict[str, set[str]]:
    paths = sorted(PACKAGE_DIR.rglob("*.py"))
    known = {module_name(path) for path in paths}
    return {module_name(path): imported_modules(path, known) for path in paths}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, str] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = "open"
        stack.append(node)
        for target in sorted(graph[node]):
            if state.get(target) == "open":
                return [*stack[stack.index(target) :], target]
            if target not in state and (cycle := visit(target)):
                return cycle
        stack.pop()
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_the_package_has_no_import_cycle():
    cycle = find_cycle(import_graph())
    assert cycle is None, " → ".join(cycle or [])


def test_the_cycle_finder_finds_a_cycle():
    # The check above must be able to fail.
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


@pytest.mark.parametrize("module", ["widget_server.sse", "widget_server.protocol"])
def test_the_protocol_module_imports_no_transport(module):
    """httpx-sse's rule: the protocol module loads neither Flask nor the app."""
    probe = (
        f"import sys, {module}\n"
        "loaded = sorted(name for name in sys.modules if name.startswith(('widget_server', 'flask', 'werkzeug')))\n"
        "print(' '.join(loaded))\n"
    )
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.split()
    assert loaded == ["widget_server", module]
