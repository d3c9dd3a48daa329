"""docs/architecture.md stays true of the code.

- Its layer table places every module of the package in one row, names only
  files that exist, and a module imports only from its own row and the rows
  above it (imports read with tests/test_structure.py's `import_graph`).
- No module above the Flask adapters' row imports Flask, even in a function
  or for types only; no module but the error registry makes an HTTP error by hand.
- Every file, function and class the page names exists: a renamed or
  removed one fails here until the page follows it.
- Comments and docstrings cite a spec, a docs page or a test, never the
  issue that changed a line.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
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
    assert "widget_server.chat.api" in flask_importers()  # the scan finds an adapter's import


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


def js_code(path: Path) -> str:
    """A module's code without its comments: a comment that names `fetch()` makes no request.
    A `//` after a colon (`https://…` in a string) is no comment."""
    source = re.sub(r"/\*.*?\*/", "", path.read_text(encoding="utf-8"), flags=re.S)
    return re.sub(r"(?m)(?:^|\s)//.*$", "", source)


def js_modules(folder: str) -> list[Path]:
    return sorted((REPO_ROOT / "static" / folder).glob("*.js"))


# Who may make an HTTP request among the panel's modules and among the console's: one client
# each, so that a request's URL, token, headers, retries and errors are written in one place
# (docs/architecture.md). The other modules call its methods; follow.js reads the responses
# its caller's `request` gets from the client.
HTTP_CLIENTS = {"widget": "client.js", "agent": "api.js"}
HTTP_REQUEST = re.compile(r"\bfetch\s*\(|\bnew\s+XMLHttpRequest\b")


def test_the_request_finder_tells_a_request_from_a_mention(tmp_path):
    module = tmp_path / "module.js"
    for source, found in (
        ("const response = await fetch(url, { method: 'POST' });\n", True),
        ("const request = new XMLHttpRequest();\n", True),
        ("// opened with fetch() (EventSource cannot POST)\n", False),
        ("/* XMLHttpRequest, not fetch(): progress */\n", False),
        ("const ns = 'http://www.w3.org/2000/svg'; fetch(url);\n", True),
        ("this.refetch(url);\n", False),
    ):
        module.write_text(source, encoding="utf-8")
        assert bool(HTTP_REQUEST.search(js_code(module))) is found, source


@pytest.mark.parametrize(("folder", "client"), sorted(HTTP_CLIENTS.items()))
def test_only_the_client_makes_http_requests(folder, client):
    requesters = {path.name for path in js_modules(folder) if HTTP_REQUEST.search(js_code(path))}
    assert requesters == {client}, f"static/{folder}/: {sorted(requesters)} make HTTP requests"


# The panel's lazily loaded parts (answer-tools.js, handoff.js, …) see the panel only through
# its host interface, static/widget/host.js `PanelHost`: a short list, each member with why
# (docs/architecture.md, the panel's modules). Only the entry module that boots the panel may
# name its class or import chat.js; a part that did, even for a JSDoc type, would reach past the
# interface into every field of the panel again. Comments are read too: JSDoc types live there.
PANEL_DEFINERS = {"chat.js": "defines the panel", "panel.js": "the page's entry module, boots it"}
REACHES_THE_PANEL = re.compile(r"\bChatPanel\b|['\"]\./chat\.js['\"]")


def test_the_panel_finder_tells_the_panel_from_its_host(tmp_path):
    for source, found in (
        ("/** @typedef {import('./chat.js').ChatPanel} ChatPanel */\n", True),
        ("/** @param {import('./chat.js').AssistantTurn} turn */\n", True),
        ("import { ChatPanel } from './chat.js';\n", True),
        ('const { ChatPanel } = await import("./chat.js");\n', True),
        ("/** @param {import('./host.js').PanelHost} host */\n", False),
        ("// chat.js submit() hands them here\n", False),
        ("host.startRun({ request });\n", False),
    ):
        assert bool(REACHES_THE_PANEL.search(source)) is found, source


def test_the_lazy_parts_see_the_panel_only_through_its_host():
    modules = js_modules("widget")
    assert {"host.js", "handoff.js", "answer-tools.js", *PANEL_DEFINERS} <= {path.name for path in modules}
    reaching = [
        path.name
        for path in modules
        if path.name not in PANEL_DEFINERS and REACHES_THE_PANEL.search(path.read_text(encoding="utf-8"))
    ]
    assert reaching == [], f"static/widget/: {reaching} name ChatPanel or import chat.js; use host.js's PanelHost"


# The helpers the modules share, each defined in one module and imported from it by every
# other, never copied again: static/widget/dom.js's (every name it exports) and the client's
# readers of a refused response.
SHARED_HELPER_HOMES = {
    "static/widget/dom.js": None,  # None: every name the module exports
    "static/widget/client.js": ("jsonOrNull", "errorFrom"),
    "static/widget/clipboard.js": None,  # writeClipboard: answer-tools.js and code-blocks.js copy
}
# Another helper by one of those names, which is not a copy, with why.
NOT_COPIES = {
    ("static/widget/markdown.js", "element"): "an element with attributes, no class or text: the "
    "renderer's own, in a source under a size budget (tests/e2e/test_markdown.py)",
}


def exported_names(source: str) -> set[str]:
    return set(re.findall(r"(?m)^export\s+(?:async\s+)?(?:function\s*\*?|const|let)\s+(\w+)", source))


def defines_helper(source: str, name: str) -> bool:
    """A top-level or nested `function name(` or `const name =` (not a class's method)."""
    pattern = rf"(?m)^\s*(?:export\s+)?(?:(?:async\s+)?function\s+{name}\s*\(|(?:const|let|var)\s+{name}\s*=)"
    return re.search(pattern, source) is not None


def test_the_helper_finder_tells_a_definition_from_a_method_or_a_call():
    assert defines_helper("function element(tag, className, text) {\n", "element")
    assert defines_helper("export const sleep = (milliseconds, signal) =>\n", "sleep")
    assert defines_helper("  async function jsonOrNull(response) {\n", "jsonOrNull")
    assert not defines_helper("  button(className, decision, text, label) {\n", "button")
    assert not defines_helper("    const node = button(className, text);\n", "button")
    assert not defines_helper("const elementWith = (tag, attributes) => {\n", "element")
    assert defines_helper("const element = (tag, attributes) => {\n", "element")


def test_shared_helpers_are_defined_once():
    dom = (REPO_ROOT / "static/widget/dom.js").read_text(encoding="utf-8")
    assert {"element", "button", "sleep"} <= exported_names(dom)
    modules = [
        path
        for path in sorted((REPO_ROOT / "static").rglob("*.js"))
        if path.relative_to(REPO_ROOT / "static").parts[0] != "min"  # static/min/: generated copies
        and "vendor" not in path.parts  # third-party code, copied unedited (tests/test_math_vendor.py)
    ]
    copies = []
    for home, names in SHARED_HELPER_HOMES.items():
        home_source = (REPO_ROOT / home).read_text(encoding="utf-8")
        for name in names or sorted(exported_names(home_source)):
            assert defines_helper(home_source, name), f"{home} no longer defines {name}"
            copies += [
                f"{path.relative_to(REPO_ROOT).as_posix()} defines {name}, {home}'s"
                for path in modules
                if path.relative_to(REPO_ROOT).as_posix() != home
                and (path.relative_to(REPO_ROOT).as_posix(), name) not in NOT_COPIES
                and defines_helper(path.read_text(encoding="utf-8"), name)
            ]
    assert copies == []


# The pure modules (docs/architecture.md) know nothing of the DOM: not even through dom.js.
@pytest.mark.parametrize("module", ["sse.js", "model.js", "follow.js", "handoff-state.js", "highlight.js"])
def test_pure_modules_do_not_import_the_dom_helpers(module):
    assert "./dom.js" not in js_code(REPO_ROOT / "static" / "widget" / module)


# The hand-off's state (static/widget/handoff-state.js) is pure: it imports nothing but the
# wire's names (protocol.js, frozen data) and touches no DOM, network or timer, so
# tests/e2e/test_handoff_state.py can drive it with plain values.
WIRE_NAMES_IMPORT = "import { CONVERSATION_EVENT } from './protocol.js';"
NOT_PURE = re.compile(r"\b(?:import|document|window|fetch|XMLHttpRequest|setTimeout|setInterval)\b")


def test_the_handoff_state_is_pure():
    assert NOT_PURE.search("const stop = setTimeout(done, 10);")
    assert not NOT_PURE.search("const wait = this.positionWait(now, false);")
    code = js_code(REPO_ROOT / "static" / "widget" / "handoff-state.js")
    assert NOT_PURE.findall(code.replace(WIRE_NAMES_IMPORT, "")) == []


# -- where a module's tests are (docs/testing.md, "Where a module's tests are") ----------------------

# The folders whose test modules are named after the code they test; tests/e2e/ is named after
# what the browser shows.
NAMED_TEST_DIRS = ("tests", "tests/security")

# Modules whose tests the naming rule does not find, each with a test module that covers it. A
# new module's tests go in a file named after it, not here; an entry whose module gets such a
# file, or whose test module is gone, fails below until it is removed or corrected.
TESTS_FOUND_ELSEWHERE = {
    # The lazy `create_app` and `init_app`: importing the protocol loads nothing else.
    "widget_server/__init__.py": "tests/test_structure.py",
    "widget_server/__main__.py": "tests/security/test_production_defaults.py",  # `python -m widget_server`
    "widget_server/app.py": "tests/test_smoke.py",  # create_app: every page and endpoint it wires
    # The chat's routes and service are what the API's own tests (test_api_<topic>.py) test.
    "widget_server/chat/api.py": "tests/test_api_streaming.py",
    "widget_server/chat/service.py": "tests/test_api_lifecycle.py",  # submits, cancel, history
    "widget_server/chat/generation.py": "tests/test_eager_start.py",  # the time limit: test_api_lifecycle.py
    "widget_server/cli.py": "tests/test_agents_cli.py",  # and `feedback export`: test_feedback_export.py
    "widget_server/errorhandlers.py": "tests/test_api_errors.py",
    "widget_server/expected.py": "tests/test_qa.py",
    "widget_server/gunicorn_conf.py": "tests/test_gevent_worker.py",
    "widget_server/kb_routes.py": "tests/test_backends_kb.py",  # the kb backend's sources at /kb/
    "widget_server/monitoring.py": "tests/test_api_metrics.py",  # /metrics and /healthz
    "widget_server/pytest_plugin.py": "tests/test_plugin_options.py",
    "widget_server/resources.py": "tests/test_install.py",  # static/ and templates/ found in the wheel
    # Regenerate and edit, one test module each.
    "widget_server/revisions/api.py": "tests/test_api_regenerate.py",
    "widget_server/revisions/service.py": "tests/test_api_edit.py",
    "widget_server/server_errors.py": "tests/security/test_http_server_errors.py",
    "widget_server/serving.py": "tests/test_gevent_worker.py",  # many workers: test_scale_out.py
    "widget_server/store_url.py": "tests/test_settings.py",  # the STORE URLs, a cluster's seed nodes
    "widget_server/stores/__init__.py": "tests/test_api_streaming.py",  # create_store: each store kind
    "widget_server/stores/base.py": "tests/test_memory_store.py",  # the store's contract
    "widget_server/stores/redis_connection.py": "tests/test_redis_cluster.py",
    "widget_server/testing.py": "tests/test_plugin_options.py",
    "widget_server/transport.py": "tests/security/test_request_bounds.py",  # authorize: test_conversation_cookie.py
    "widget_server/web.py": "tests/test_panel_config.py",
}


def named_test_files() -> list[Path]:
    return sorted(path for folder in NAMED_TEST_DIRS for path in (REPO_ROOT / folder).glob("test_*.py"))


def names_of(module: Path) -> set[str]:
    """The names a module's tests go by: every package folder on its path, and its own name,
    but for `api` (every feature package has one, so the package's name finds its tests)."""
    parts = module.relative_to(PACKAGE_DIR).parts
    return {*parts[:-1], *([] if module.stem in ("__init__", "api") else [module.stem])}


def named_tests_of(module: Path, files: list[Path]) -> list[str]:
    """The test files named after `module`: test_<name>.py, test_<name>_<topic>.py, and the same
    after `test_api_` for tests through the HTTP API."""
    names = names_of(module)
    found = []
    for file in files:
        topic = file.stem.removeprefix("test_").removeprefix("api_")
        if any(topic == name or topic.startswith(f"{name}_") for name in names):
            found.append(file.relative_to(REPO_ROOT).as_posix())
    return found


def has_code(module: Path) -> bool:
    """Anything but a docstring and `from __future__` (a package's `__init__.py` that only says
    what its modules are has nothing to test)."""
    body = ast.parse(module.read_text(encoding="utf-8")).body
    return any(
        not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))
        and not (isinstance(node, ast.ImportFrom) and node.module == "__future__")
        for node in body
    )


def test_every_module_has_tests_found_by_its_name():
    files = named_test_files()
    untested = [
        module.relative_to(REPO_ROOT).as_posix()
        for module in sorted(PACKAGE_DIR.rglob("*.py"))
        if has_code(module)
        and not named_tests_of(module, files)
        and module.relative_to(REPO_ROOT).as_posix() not in TESTS_FOUND_ELSEWHERE
    ]
    assert untested == [], "name their tests by docs/testing.md's rule, or list them in TESTS_FOUND_ELSEWHERE"


@pytest.mark.parametrize("module", sorted(TESTS_FOUND_ELSEWHERE))
def test_every_module_listed_as_tested_elsewhere_needs_the_list(module):
    path = REPO_ROOT / module
    assert path.is_file(), f"{module} is gone: remove its entry"
    assert (REPO_ROOT / TESTS_FOUND_ELSEWHERE[module]).is_file(), f"{TESTS_FOUND_ELSEWHERE[module]} is gone"
    assert named_tests_of(path, named_test_files()) == [], f"the rule finds {module}'s tests: remove its entry"


def test_the_rule_finds_tests_by_package_module_and_api():
    files = [
        REPO_ROOT / "tests" / name for name in ("test_feedback_export.py", "test_api_feedback.py", "test_keyspace.py")
    ]
    found = named_tests_of
    assert found(PACKAGE_DIR / "feedback" / "service.py", files) == [
        "tests/test_feedback_export.py",
        "tests/test_api_feedback.py",
    ]
    assert found(PACKAGE_DIR / "feedback" / "api.py", files) == [
        "tests/test_feedback_export.py",
        "tests/test_api_feedback.py",
    ]
    assert found(PACKAGE_DIR / "stores" / "keyspace.py", files) == ["tests/test_keyspace.py"]
    assert found(PACKAGE_DIR / "chat" / "api.py", files) == []  # `api` alone names no package
    assert found(PACKAGE_DIR / "feedbacks.py", files) == []  # a whole name, not a prefix


def test_the_server_reads_its_settings_by_attribute_never_by_name():
    """Settings are typed per area (widget_server/settings/): `settings.chat.max_text_chars`,
    which mypy checks; a name in brackets is found only when it runs. The by-name mapping is
    for tools, docs, tests and older plugins."""
    from widget_server.settings import all_settings

    names = {setting.name for setting in all_settings()}
    found = []
    for module in sorted(PACKAGE_DIR.rglob("*.py")):
        if "settings" in module.relative_to(PACKAGE_DIR).parts:
            continue
        for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Subscript)
                and isinstance(node.slice, ast.Constant)
                and node.slice.value in names
                and "environ" not in ast.unparse(node.value)
                and ast.unparse(node.value) != "CORE_SETTINGS"  # a declaration (help text), not a value
            ):
                found.append(f"{module.relative_to(REPO_ROOT)}:{node.lineno} {ast.unparse(node)}")
    assert found == []


# -- comments say why, never which issue changed a line --------------------------------------------

# A comment or docstring cites a spec section, a docs page (docs/*.md) or a test the repository
# holds: those stay true as the code changes, and a reader can open them. An issue's number
# names a conversation the repository does not hold, and says when a line changed, not why.
ISSUE_LABEL = re.compile(r"\bissues? #?\d+\b", re.IGNORECASE)
# Where comments are read: the package, the browser code (static/min/ is generated from it),
# the templates, the tests and the benches.
COMMENTED_FILES = (
    "widget_server/**/*.py",
    "static/*.js",
    "static/widget/*.js",
    "static/agent/*.js",
    "static/qa/*.js",
    "static/*.css",
    "static/widget/*.css",
    "static/agent/*.css",
    "static/qa/*.css",
    "templates/*.html",
    "tests/**/*.py",
    "bench/*.py",
)


def python_comments(source: str) -> list[tuple[int, str]]:
    """(line, text) of each `#` comment and each docstring-like string statement (a module's,
    a class's, a function's, an attribute's); never a string the code uses."""
    statements = {
        (node.lineno, node.col_offset)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
    }
    found = []
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT or (token.type == tokenize.STRING and token.start in statements):
            found += [(token.start[0] + number, line) for number, line in enumerate(token.string.splitlines())]
    return found


def web_comments(source: str, suffix: str) -> list[tuple[int, str]]:
    """(line, text) of each comment of a script, a style sheet or a template: `/* … */`, a `//`
    at a line's start or after a space (as js_code reads them: `https://…` is none), `{# … #}`
    and `<!-- … -->`."""
    patterns = {
        ".js": [r"(?s)/\*.*?\*/", r"(?m)(?:^|(?<=\s))//.*$"],
        ".css": [r"(?s)/\*.*?\*/"],
        ".html": [r"(?s)\{#.*?#\}", r"(?s)<!--.*?-->"],
    }[suffix]
    found = []
    for pattern in patterns:
        for match in re.finditer(pattern, source):
            first = source.count("\n", 0, match.start()) + 1
            found += [(first + number, line) for number, line in enumerate(match.group().splitlines())]
    return found


def issue_labels(path: Path) -> list[str]:
    source = path.read_text(encoding="utf-8")
    comments = python_comments(source) if path.suffix == ".py" else web_comments(source, path.suffix)
    name = path.relative_to(REPO_ROOT).as_posix() if path.is_relative_to(REPO_ROOT) else path.name
    return [f"{name}:{line}: {text.strip()}" for line, text in sorted(set(comments)) if ISSUE_LABEL.search(text)]


def test_the_label_finder_reads_comments_never_strings(tmp_path):
    for name, source, found in (
        ("a.py", "x = 1  # cached (issue 16)\n", ["a.py:1: # cached (issue 16)"]),
        ("b.py", '"""Slots.\n\nFirst (Issue #12).\n"""\n', ["b.py:3: First (Issue #12)."]),
        ("c.py", "def f():\n    '''Waits (issues 3).'''\n", ["c.py:2: '''Waits (issues 3).'''"]),
        ("d.py", 'MESSAGE = "see issue 16"\nprint(f"issue {1}")\n', []),
        ("e.py", '# docs/serving.md, "Redis Cluster"; tissue 16 is no label\n', []),
        (
            "f.js",
            "const a = 1; // drawn at once (issue 16)\nconst c = 'issue 16';\n",
            ["f.js:1: // drawn at once (issue 16)"],
        ),
        ("g.js", "/* one\n * two (issue 13)\n */\nconst b = 'issue 13';\n", ["g.js:2: * two (issue 13)"]),
        ("h.js", "const url = 'https://example.com/issue 9';\n", []),
        ("i.css", "/* a label (issue 12) */\n.a { width: 50%; }\n", ["i.css:1: /* a label (issue 12) */"]),
        ("j.html", "{#- The console\n    (issue 13). -#}\n<p>issue 13</p>\n", ["j.html:2: (issue 13). -#}"]),
    ):
        path = tmp_path / name
        path.write_text(source, encoding="utf-8")
        assert issue_labels(path) == found, source


def test_comments_cite_docs_and_tests_never_an_issue():
    files = sorted({path for pattern in COMMENTED_FILES for path in REPO_ROOT.glob(pattern)})
    assert len(files) > 100, "the comment check found too few files"
    labels = [label for path in files for label in issue_labels(path)]
    assert labels == [], (
        "a comment names the issue that changed it; say why instead, citing a spec section, "
        "a docs/*.md page or a test:\n" + "\n".join(labels)
    )
