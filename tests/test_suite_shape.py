"""The suite's marks mean what they say (docs/testing.md, "Marks").

`-m "not e2e"` must leave out every browser test, and `-m "not slow"` (the
quick loop) every test that starts whole server processes, installs the
wheel or runs a screen reader. Read from each module's `pytestmark` with
`ast`, so a new module that forgets its mark fails here.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from .helpers import run_pytest

TESTS_DIR = Path(__file__).resolve().parent

# Modules that start process trees, build and install the wheel, or run Orca.
SLOW_MODULES = {
    "test_install.py",
    "test_scale_out.py",
    "test_mount_frameworks.py",
    "security/test_http_server_errors.py",
    "e2e/test_scale_out_widget.py",
    "e2e/test_orca.py",
    "e2e/test_orca_visitors.py",
    "e2e/test_hung_browsers.py",
}


def module_marks(path: Path) -> set[str]:
    """The mark names in a module's `pytestmark` (one mark or a list)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(target, "id", None) == "pytestmark" for target in node.targets):
            names = set()
            for part in ast.walk(node.value):
                # `pytest.mark.NAME` and `pytest.mark.NAME(...)` alike.
                if (
                    isinstance(part, ast.Attribute)
                    and isinstance(part.value, ast.Attribute)
                    and part.value.attr == "mark"
                ):
                    names.add(part.attr)
            return names
    return set()


E2E_MODULES = sorted(path.relative_to(TESTS_DIR).as_posix() for path in (TESTS_DIR / "e2e").glob("test_*.py"))


@pytest.mark.parametrize("module", E2E_MODULES)
def test_every_browser_module_is_marked_e2e(module):
    assert "e2e" in module_marks(TESTS_DIR / module)


@pytest.mark.parametrize("module", sorted(SLOW_MODULES))
def test_process_install_and_screen_reader_modules_are_marked_slow(module):
    assert "slow" in module_marks(TESTS_DIR / module)


def test_the_mark_reader_reads_single_marks_and_lists(tmp_path):
    sample = tmp_path / "test_sample.py"
    sample.write_text('import pytest\npytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("orca")]\n')
    assert module_marks(sample) == {"e2e", "xdist_group"}
    sample.write_text("import pytest\npytestmark = pytest.mark.slow\n")
    assert module_marks(sample) == {"slow"}
    sample.write_text("import pytest\n")
    assert module_marks(sample) == set()


# The quick loop's browser share (docs/testing.md, "Tiers"): a module of each feature keeps a
# smoke test, so no feature is left out of the daily loop.
SMOKE_MODULES = {
    "e2e/test_widget.py",
    "e2e/test_resilience.py",
    "e2e/test_accessibility_contract.py",
    "e2e/test_accessibility_contract_languages.py",
    "e2e/test_markdown.py",
    "e2e/test_code_blocks.py",
    "e2e/test_host_pages.py",
    "e2e/test_answer_tools.py",
    "e2e/test_conversation_tools.py",
    "e2e/test_offline.py",
    "e2e/test_tab_sync.py",
    "e2e/test_attachments_widget.py",
    "e2e/test_handoff_widget.py",
    "e2e/test_agent_console.py",
}


def smoke_tests(path: Path) -> list[str]:
    """The test functions of a module decorated `@pytest.mark.smoke`."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef)
        and any(ast.unparse(decorator) == "pytest.mark.smoke" for decorator in node.decorator_list)
    ]


@pytest.mark.parametrize("module", sorted(SMOKE_MODULES))
def test_each_feature_keeps_a_smoke_test_in_the_quick_loop(module):
    assert smoke_tests(TESTS_DIR / module), f"{module} has no @pytest.mark.smoke test"


def test_smoke_tests_are_browser_tests_that_the_quick_loop_runs():
    for path in (TESTS_DIR).rglob("test_*.py"):
        module = path.relative_to(TESTS_DIR).as_posix()
        if smoke_tests(path):
            assert module in E2E_MODULES, f"{module}: smoke marks a browser test"
            assert module not in SLOW_MODULES, f"{module}: the quick loop leaves out slow modules"


def test_an_xdist_group_runs_on_one_worker(tmp_path):
    """`--dist loadgroup` keeps an `xdist_group` on one worker (docs/testing.md, "Parallel runs"):
    the Orca tests, the process tests and the wheel's rely on it. Run with the installed pytest
    and pytest-xdist, as the suite is: four grouped tests and two others on two workers, each
    writing down its worker."""
    (tmp_path / "test_grouped.py").write_text(
        "import os\nimport pytest\n"
        "pytestmark = pytest.mark.xdist_group('together')\n"
        + "".join(
            f"def test_{number}(tmp_path_factory):\n"
            f"    (tmp_path_factory.getbasetemp().parent.parent / 'grouped-{number}').write_text("
            "os.environ['PYTEST_XDIST_WORKER'])\n"
            for number in range(4)
        ),
        encoding="utf-8",
    )
    (tmp_path / "base").mkdir()
    (tmp_path / "test_alone.py").write_text("def test_a():\n    pass\n\n\ndef test_b():\n    pass\n", encoding="utf-8")
    done = run_pytest(
        "-n",
        "2",
        "--dist",
        "loadgroup",
        "--basetemp",
        str(tmp_path / "base" / "run"),
        "-p",
        "no:playwright",
        "-p",
        "no:widget_server",
        str(tmp_path),
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    workers = {(tmp_path / "base" / f"grouped-{number}").read_text() for number in range(4)}
    assert len(workers) == 1, f"the group ran on {sorted(workers)}"


# httpx's own constructors and module functions, each of which builds a TLS context.
HTTPX_CONSTRUCTS = re.compile(r"\bhttpx\.(Client|get|post|put|patch|delete|head|options|request|stream)\(")


def test_test_code_makes_http_clients_through_the_suites_one_tls_context():
    """tests/helpers.py `http_client()` and `HTTP` share one TLS context; a client made by
    httpx itself loads the CA bundle again (tests/helpers.py says what that costs)."""
    found = [
        f"{path.relative_to(TESTS_DIR)}:{number}: {line.strip()}"
        for path in sorted(TESTS_DIR.rglob("*.py"))
        if path.name != "helpers.py"
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if HTTPX_CONSTRUCTS.search(line)
    ]
    assert found == [], "use http_client(...) or HTTP.get(...) from tests/helpers.py:\n" + "\n".join(found)


def test_the_slow_tests_are_handed_out_first():
    """tests/conftest.py puts the tests marked slow at the head of the run (docs/testing.md,
    "Parallel runs"), the rest in the order collected: collected after a quick module, the
    wheel's slow tests still come first."""
    quick, slow = "tests/test_flask_app.py", "tests/test_install.py"
    done = run_pytest("--collect-only", "-n", "0", quick, slow, cwd=TESTS_DIR.parent)
    assert done.returncode == 0, done.stdout + done.stderr
    files = [line.split("::")[0] for line in done.stdout.splitlines() if "::" in line]
    first_quick = files.index(quick)
    assert set(files[:first_quick]) == {slow} and slow not in files[first_quick:], files
