"""The pytest plugin for site owners (widget_server.pytest_plugin).

The README's example is read from README.md at test time and run as a site
owner runs it on this machine: in a separate pytest, from a folder with no
conftest at all, so only the installed plugins (entry points `pytest11`)
provide `chat_server`, `chat_widget` and `page`, with the command README
gives for browsers that come from the OS (`--chat-system-browsers`; they
cannot be downloaded here). If the README changes, this test runs the new
text; if the block or the command goes missing, it fails.

The plugin's pieces are tested too: the fixtures with the demo backend, the
command-line options and their environment fallbacks, the snippet, the page
object on an inline widget, and that pytest still runs when Playwright is
not installed at all.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Page

from widget_server.pytest_plugin import TEST_DEFAULTS, chat_server_settings
from widget_server.testing import ChatServer, ChatWidget

from ..helpers import HTTP, REPO_ROOT
from .conftest import chat_base_url

pytestmark = pytest.mark.e2e

README = REPO_ROOT / "README.md"
SECTION = "## Testing your site's embed"
# How README tells a site owner whose browsers come from the OS to run the example.
SYSTEM_BROWSERS_COMMAND = "pytest --chat-system-browsers --browser chromium --browser firefox"


def readme_example() -> str:
    """The first ```python block of the README's section on testing an embed."""
    text = README.read_text(encoding="utf-8")
    assert SECTION in text, f"README.md has no section {SECTION!r}"
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    match = re.search(r"^```python\n(.*?)^```$", section, re.S | re.M)
    assert match, f"README.md's {SECTION!r} section has no ```python block"
    return match.group(1)


def run_pytest(
    folder: Path, *args: str, env: dict[str, str] | None = None, python_prelude: str = ""
) -> subprocess.CompletedProcess:
    """A separate pytest in `folder`, as a site owner runs it: its own
    rootdir and (empty) ini, plugins loaded from their entry points."""
    (folder / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("WIDGET_SERVER_", "PYTEST_"))}
    environ.update(env or {})
    code = python_prelude + "import sys, pytest\nsys.exit(pytest.main(sys.argv[1:]))\n"
    return subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            "-p",
            "no:cacheprovider",
            "-v",
            "-c",
            str(folder / "pytest.ini"),
            "--basetemp",
            str(folder / ".basetemp"),
            str(folder),
            *args,
        ],
        cwd=folder,
        env=environ,
        capture_output=True,
        text=True,
        timeout=240,
    )


def output(result: subprocess.CompletedProcess) -> str:
    return result.stdout + result.stderr


# -- the README example, verbatim, in both browsers ----------------------------


def test_the_readme_example_is_about_ten_lines_and_does_what_it_says():
    code = readme_example()
    lines = [line for line in code.splitlines() if line.strip()]
    assert 8 <= len(lines) <= 16, code
    compile(code, "README.md", "exec")
    for needle in ("chat_server.embed_snippet(", ".open()", ".send(", ".wait_until_complete()", ".assert_accessible()"):
        assert needle in code, needle


RECORDER_TEST = """
import functools
import http.server
import threading
from urllib.parse import urlsplit


def test_chat_widget_records_what_is_announced(page, chat_server, chat_widget, tmp_path):
    html = "<!doctype html><html lang='en'><title>Shop</title><main><h1>Shop</h1></main>"
    (tmp_path / "index.html").write_text(html + chat_server.embed_snippet())
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=tmp_path)
    site = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=site.serve_forever, daemon=True).start()
    try:
        page.goto(f"http://127.0.0.1:{site.server_port}/")
        chat_widget.open()
        chat_widget.send("/echo Hello there.")
        assert chat_widget.wait_until_complete() == "completed"
        chat_widget.wait_for_announcement("Answer complete.")
        said = [entry["text"] for entry in chat_widget.announcements()]
        assert said[-2:] == ["Hello there.", "Answer complete."], said
        assert [turn["role"] for turn in chat_widget.transcript()] == ["user", "assistant"]
        # The host page and the chat are two origins.
        assert urlsplit(chat_widget.panel_frame().url).netloc != urlsplit(page.url).netloc
    finally:
        site.shutdown()
"""


def test_the_readme_gives_the_command_for_system_browsers():
    section = README.read_text(encoding="utf-8").split(SECTION, 1)[1].split("\n## ", 1)[0]
    assert SYSTEM_BROWSERS_COMMAND in section, section
    assert "playwright install chromium firefox" in section, section
    # Which Playwright drives Firefox ESR (docs/testing.md, "System browsers").
    assert "playwright==1.64.1" in section and "Firefox ESR 153" in section, section


def test_the_readme_example_passes_as_a_site_owner_runs_it(browser_name, tmp_path):
    (tmp_path / "test_readme_example.py").write_text(readme_example(), encoding="utf-8")
    (tmp_path / "test_recorder.py").write_text(RECORDER_TEST, encoding="utf-8")
    # README's command, one browser per run of this test: this session's (so the quick
    # loop stays in Chromium and the full run covers both).
    result = run_pytest(tmp_path, "--chat-system-browsers", "--browser", browser_name)
    report = output(result)
    assert result.returncode == 0, report
    test_name = re.search(r"^def (test_\w+)", readme_example(), re.M).group(1)
    assert f"test_readme_example.py::{test_name}[{browser_name}] PASSED" in report, report
    assert f"test_recorder.py::test_chat_widget_records_what_is_announced[{browser_name}] PASSED" in report, report


# -- the fixtures, without a browser -----------------------------------------

SERVER_TESTS = '''
import json
import urllib.error
import urllib.request

import pytest
from flask import Flask

from widget_server.sse import EventStreamParser
from widget_server.testing import ChatServer

STOPPED = []


def ask(server, text):
    """The answer to `text`, read from the live stream with the project's parser."""
    def post(path, body=None, token=None):
        request = urllib.request.Request(server.url + path, data=json.dumps(body or {}).encode(), method="POST")
        request.add_header("Content-Type", "application/json")
        if token:
            request.add_header("Authorization", "Bearer " + token)
        return urllib.request.urlopen(request, timeout=30)

    conversation = json.load(post("/api/v1/conversations"))
    with post(f"/api/v1/conversations/{conversation['conversation_id']}/messages",
              {"request_id": "r-1", "text": text}, conversation["token"]) as response:
        assert response.headers["Content-Type"].startswith("text/event-stream")
        events = []
        parser = EventStreamParser(events.append)
        parser.feed(response.read())
        parser.end()
    assert events[-1].event == "message.completed", [e.event for e in events]
    return "".join(json.loads(e.data)["text"] for e in events if e.event == "text.delta")


def test_chat_server(chat_server):
    assert isinstance(chat_server, ChatServer) and isinstance(chat_server.app, Flask)
    assert chat_server.url == f"http://127.0.0.1:{chat_server.port}"
    assert chat_server.settings["EMBED_ORIGINS"] == ("*",)
    backend = chat_server.service.backend
    print("BACKEND", backend.name, "STORE", chat_server.settings["STORE"])
    print("ANSWER", repr(ask(chat_server, "/echo hello world")))
    STOPPED.append(chat_server.url)


def test_chat_server_factory(chat_server_factory):
    one = chat_server_factory(DEMO_DELAY_SECONDS=0, EMBED_ORIGINS="https://www.example.com")
    two = chat_server_factory()
    assert one.url != two.url
    assert one.settings["EMBED_ORIGINS"] == ("https://www.example.com",)
    assert "frame-ancestors https://www.example.com" in urllib.request.urlopen(one.url + "/panel").headers["Content-Security-Policy"]
    assert one.settings["DEMO_DELAY_SECONDS"] == 0 and two.settings["EMBED_ORIGINS"] == ("*",)
    STOPPED.extend([one.url, two.url])


def test_every_server_stopped_after_its_test():
    assert len(STOPPED) == 3
    for url in STOPPED:
        # Refused (URLError), or reset (a port the closed listener left half-open
        # while other tests on this machine open and close theirs): not served.
        with pytest.raises((urllib.error.URLError, ConnectionError)):
            urllib.request.urlopen(url + "/healthz", timeout=5)
'''

SHOUT_BACKEND = """
class ShoutBackend:
    name = "shout"

    @classmethod
    def from_settings(cls, settings):
        return cls()

    def stream(self, turn, cancel):
        yield turn.text.upper()
"""


@pytest.mark.parametrize(
    ("args", "env", "backend", "answer"),
    [
        pytest.param([], {}, "demo", "'hello world'", id="demo-by-default"),
        pytest.param(
            ["--chat-backend", "shout:ShoutBackend", "--chat-store", "memory"],
            {},
            "shout",
            "'/ECHO HELLO WORLD'",
            id="option",
        ),
        pytest.param(
            [], {"WIDGET_SERVER_BACKEND": "shout:ShoutBackend"}, "shout", "'/ECHO HELLO WORLD'", id="env-fallback"
        ),
        pytest.param(
            ["--chat-backend", "demo"],
            {"WIDGET_SERVER_BACKEND": "shout:ShoutBackend"},
            "demo",
            "'hello world'",
            id="option-beats-env",
        ),
    ],
)
def test_the_fixtures_serve_the_chosen_backend(tmp_path, args, env, backend, answer):
    (tmp_path / "test_server.py").write_text(SERVER_TESTS, encoding="utf-8")
    (tmp_path / "shout.py").write_text(SHOUT_BACKEND, encoding="utf-8")
    result = run_pytest(tmp_path, "-s", *args, env=env)
    report = output(result)
    assert result.returncode == 0, report
    assert "3 passed" in report, report
    assert f"BACKEND {backend} STORE memory" in report, report
    assert f"ANSWER {answer}" in report, report


def test_a_bad_chat_store_option_fails_the_test_that_uses_the_server_naming_the_setting(tmp_path):
    (tmp_path / "test_server.py").write_text(SERVER_TESTS, encoding="utf-8")
    result = run_pytest(tmp_path, "--chat-store", "nope", "-k", "test_chat_server")
    report = output(result)
    assert result.returncode == 1, report
    assert "ConfigError: STORE" in report and "'nope'" in report, report


class FakeConfig:
    def __init__(self, **options):
        self.options = {"chat_backend": None, "chat_store": None, **options}

    def getoption(self, name):
        return self.options[name]


def test_the_settings_layers():
    # Test default, then option (else its env variable), then the factory's arguments.
    assert TEST_DEFAULTS == {"EMBED_ORIGINS": "*"}
    assert chat_server_settings(FakeConfig(), environ={}) == {"EMBED_ORIGINS": "*"}
    env = {
        "WIDGET_SERVER_BACKEND": "from-env",
        "WIDGET_SERVER_STORE": "env-store",
        "WIDGET_SERVER_EMBED_ORIGINS": "https://a.example",
    }
    assert chat_server_settings(FakeConfig(), environ=env) == {
        "EMBED_ORIGINS": "*",
        "BACKEND": "from-env",
        "STORE": "env-store",
    }
    assert chat_server_settings(FakeConfig(chat_backend="opt", chat_store="s"), environ=env)["BACKEND"] == "opt"
    settings = chat_server_settings(
        FakeConfig(chat_backend="opt"), environ=env, BACKEND="kw", EMBED_ORIGINS="https://b.example"
    )
    assert settings == {"EMBED_ORIGINS": "https://b.example", "BACKEND": "kw", "STORE": "env-store"}


def test_the_options_are_in_pytest_help(tmp_path):
    result = run_pytest(tmp_path, "--help")
    assert result.returncode == 0, output(result)
    assert "--chat-backend=NAME" in result.stdout and "--chat-store=NAME" in result.stdout
    assert "WIDGET_SERVER_BACKEND" in result.stdout
    assert "--chat-system-browsers" in result.stdout and "playwright==1.64.1" in result.stdout


# -- Playwright is optional ---------------------------------------------------

NO_PLAYWRIGHT = """
import importlib.abc, sys

class NoPlaywright(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("playwright", "pytest_playwright", "axe_playwright_python"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NoPlaywright())
"""

WITHOUT_BROWSER = """
import sys


def test_the_server_needs_no_playwright(chat_server):
    import widget_server.pytest_plugin
    assert chat_server.service.backend.name == "demo"
    assert not any(name.split(".")[0] == "playwright" for name in sys.modules)


def test_the_widget_fixture_says_what_it_needs(chat_widget):
    pass
"""


def test_pytest_runs_with_the_plugin_when_playwright_is_not_installed(tmp_path):
    (tmp_path / "test_no_browser.py").write_text(WITHOUT_BROWSER, encoding="utf-8")
    # `-p no:playwright`: pytest-playwright is not installed either, so its entry point must not load.
    result = run_pytest(tmp_path, "-p", "no:playwright", python_prelude=NO_PLAYWRIGHT)
    report = output(result)
    assert "test_the_server_needs_no_playwright PASSED" in report, report
    # The fixture that needs a browser errors for that test alone, by name.
    assert "test_the_widget_fixture_says_what_it_needs ERROR" in report, report
    assert "fixture 'page' not found" in report, report
    assert "1 passed, 1 error" in report, report


# -- the snippet ---------------------------------------------------------------


class ScriptTags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.scripts: list[dict[str, str | None]] = []

    def handle_starttag(self, tag, attrs):
        if tag == "script":
            self.scripts.append(dict(attrs))


def test_the_embed_snippet_is_the_one_line_tag(chat_server):
    snippet = chat_server.embed_snippet(
        lang="es", title='Ayuda "24/7" <b>', position="left", target="#help", incomplete_after=1500, faults=None
    )
    assert snippet == (
        f'<script src="{chat_server.url}/widget.js" defer data-lang="es" data-title="Ayuda &quot;24/7&quot; &lt;b&gt;"'
        ' data-position="left" data-target="#help" data-incomplete-after="1500"></script>'
    )
    assert "\n" not in snippet
    parser = ScriptTags()
    parser.feed(snippet)
    assert parser.scripts == [
        {
            "src": f"{chat_server.url}/widget.js",
            "defer": None,
            "data-lang": "es",
            "data-title": 'Ayuda "24/7" <b>',
            "data-position": "left",
            "data-target": "#help",
            "data-incomplete-after": "1500",
        }
    ]
    assert chat_server.embed_snippet() == f'<script src="{chat_server.url}/widget.js" defer></script>'
    local = chat_server.url.replace("127.0.0.1", "localhost")
    assert chat_server.embed_snippet(base_url=local + "/") == f'<script src="{local}/widget.js" defer></script>'
    # The src is the loader itself.
    response = HTTP.get(f"{chat_server.url}/widget.js")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/javascript")
    for bad in ("x onload", "Title", "x>", ""):
        with pytest.raises(ValueError):
            chat_server.embed_snippet(**{bad: "1"})


def test_our_own_e2e_servers_are_the_plugins(chat_server, host_site):
    # tests/e2e/conftest.py builds on the plugin's chat_server_factory.
    assert isinstance(chat_server, ChatServer)
    assert chat_server.settings["EMBED_ORIGINS"] == (host_site.origin,)
    assert chat_server.settings["FAULTS"] is True and chat_server.settings["DEMO_DELAY_SECONDS"] == 0.02


def test_a_server_never_started_stops_at_once():
    server = ChatServer()
    server.stop()
    with ChatServer() as running:
        assert HTTP.get(running.url + "/healthz").json()["backend"] == "demo"


# -- the page object on any page -------------------------------------------------


def test_the_page_object_finds_an_inline_widget(page: Page, host_site, chat_server, chat_widget, browser_name):
    url = host_site.embed_page(
        chat_base_url(chat_server, browser_name),
        path="/plugin-inline",
        body='<section id="help" aria-label="Help chat" style="height:600px"></section>',
        target="#help",
    )
    page.goto(url)
    assert chat_widget.inline  # no launcher: the panel is in the page
    chat_widget.open()
    chat_widget.send("/echo Inline works.")
    assert chat_widget.wait_until_complete() == "completed"
    assert chat_widget.transcript() == [
        {"role": "user", "text": "/echo Inline works.", "state": "completed"},
        {"role": "assistant", "text": "Inline works.", "state": "completed"},
    ]
    chat_widget.wait_for_announcement("Answer complete.")
    chat_widget.assert_accessible()


def test_chat_url_picks_the_chat_among_other_panel_frames(page: Page, host_site, chat_server, browser_name):
    chat_url = chat_base_url(chat_server, browser_name)
    decoy = f'<iframe title="Another panel" src="{host_site.origin}/panel?decoy=1"></iframe>'
    page.goto(host_site.embed_page(chat_url, path="/plugin-decoy", body=decoy))
    widget = ChatWidget(page, chat_url=chat_url)
    assert not widget.inline
    widget.open()
    widget.open()  # already open: stays open
    widget.send("/echo Found it.")
    assert widget.wait_until_complete() == "completed"
    assert urlsplit(widget.panel_frame().url).netloc == urlsplit(chat_url).netloc
    assert widget.transcript()[-1]["text"] == "Found it."
