"""The chat inside a Django or a FastAPI site, as docs/serving.md shows it ("Django",
"FastAPI and other ASGI apps", "Which to choose"): the docs' own code blocks and commands,
read from the page (so the page cannot drift from what is tested), run as real servers on
loopback — gunicorn with `widget_server.gunicorn_conf` for Django and the chat's own
service, uvicorn for FastAPI.

Through each: the site's own route answers, a whole answer streams under /chat with a
correct digest, the panel's API base is under /chat, and a resume with Last-Event-ID gets
exactly the rest. Then SIGTERM to the Django site on Redis: the hooks find the chat inside
the site's WSGI app (serving.py `_service`), so the open stream ends resumably and the
answer finishes into Redis.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from .helpers import (
    REPO_ROOT,
    ChatClient,
    StreamResult,
    assert_completed,
    assert_digest,
    assert_sound_events,
    http_client,
    iter_stream_events,
    load_seed_answers,
    message_state,
    panel_config_of,
    wait_until,
)

TERMINAL = {"completed", "failed", "cancelled"}

# Whole server processes (gunicorn master + gevent worker, uvicorn): slow, and run in turn
# with the other process tests (docs/testing.md, "Marks" and "Parallel runs").
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("processes")]

SERVING_DOC = REPO_ROOT / "docs" / "serving.md"
PREFIX = "/chat"
# The chat's settings, as WIDGET_SERVER_* variables (the docs' snippets take them so). The
# demo's chunks 0.05 s apart: a resume comes back mid-answer.
CHAT_ENV = {"DEMO_DELAY_SECONDS": "0.05", "RATE_LIMITS": "0", "LOG_LEVEL": "WARNING"}
# Where the docs' commands listen; the tests put a free port there.
DOC_ADDRESS = "127.0.0.1:8000"
DOC_CHAT_ADDRESS = "127.0.0.1:8001"


def doc_section(heading: str) -> str:
    """The text of docs/serving.md from `heading` to the next heading of any level."""
    text = SERVING_DOC.read_text(encoding="utf-8")
    start = text.index(f"\n{heading}\n")
    following = re.search(r"\n#{2,3} ", text[start + 1 :])
    return text[start : start + 1 + following.start()] if following else text[start:]


def code_blocks(section: str, language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```$", section, flags=re.MULTILINE | re.DOTALL)


def command_from_doc(block: str) -> tuple[dict[str, str], list[str]]:
    """A documented shell command: its leading VAR=value assignments and its words."""
    words = shlex.split(block.replace("\\\n", " "))
    env: dict[str, str] = {}
    while words and re.fullmatch(r"[A-Z_]+=.*", words[0]):
        name, _, value = words.pop(0).partition("=")
        env[name] = value
    return env, words


def test_the_docs_sections_have_the_blocks_these_tests_run():
    django, fastapi = doc_section("### Django"), doc_section("### FastAPI and other ASGI apps")
    for section in (django, fastapi):
        assert "<!-- tests/test_mount_frameworks.py runs this file and this command -->" in section
        assert len(code_blocks(section, "python")) == 1 and len(code_blocks(section, "sh")) >= 1
    assert 'create_app(url_prefix="/chat")' in code_blocks(django, "python")[0]
    assert 'create_app(url_prefix="/chat")' in code_blocks(fastapi, "python")[0]
    assert "SCRIPT_NAME=/chat gunicorn" in code_blocks(fastapi, "sh")[1]


class Served:
    """A documented command run as a process in its own session, on a free loopback port
    (read back from the server's own "listening" line)."""

    kind = ""  # which of SITES (the tests' parameter)

    def __init__(self, words: list[str], env: dict[str, str], cwd: Path, listening: str) -> None:
        self._log = tempfile.NamedTemporaryFile(prefix="mount-frameworks-", suffix=".log", delete=False)  # noqa: SIM115
        environ = {key: value for key, value in os.environ.items() if not key.startswith("WIDGET_SERVER_")}
        environ.pop("PROMETHEUS_MULTIPROC_DIR", None)
        environ.pop("SCRIPT_NAME", None)
        environ.update({f"WIDGET_SERVER_{key}": value for key, value in CHAT_ENV.items()})
        environ.update(env)
        environ["PYTHONUNBUFFERED"] = "1"
        # `gunicorn …`, `uvicorn …`: the ones installed beside this Python.
        command = [sys.executable, "-m", words[0], *words[1:]]
        self.process = subprocess.Popen(
            command, cwd=cwd, env=environ, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True
        )
        deadline = time.monotonic() + 30
        while not (match := re.search(listening, self.log())):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"{shlex.join(command)} did not start:\n{self.log()}")
            time.sleep(0.05)
        self.origin = f"http://127.0.0.1:{match.group(1)}"

    def log(self) -> str:
        return Path(self._log.name).read_text(errors="replace")

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)
        self._log.close()
        os.unlink(self._log.name)


GUNICORN_LISTENING = r"Listening at: http://127\.0\.0\.1:(\d+)"
UVICORN_LISTENING = r"Uvicorn running on http://127\.0\.0\.1:(\d+)"


def django_site(root: Path, env: dict[str, str] | None = None) -> Served:
    """A minimal Django project in `root` whose wsgi.py is the docs' own, run by the docs'
    own gunicorn command."""
    section = doc_section("### Django")
    package = root / "mysite"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "settings.py").write_text(
        "SECRET_KEY = 'tests-only'\n"
        "DEBUG = False\n"
        "ALLOWED_HOSTS = ['127.0.0.1']\n"
        "ROOT_URLCONF = 'mysite.urls'\n"
        "INSTALLED_APPS = []\n"
        # Django's X-Frame-Options: DENY would keep the panel out of every page's iframe if
        # it reached the chat (the docs: Django's middleware never sees /chat).
        "MIDDLEWARE = [\n"
        "    'django.middleware.security.SecurityMiddleware',\n"
        "    'django.middleware.common.CommonMiddleware',\n"
        "    'django.middleware.clickjacking.XFrameOptionsMiddleware',\n"
        "]\n"
        "USE_TZ = True\n"
    )
    (package / "urls.py").write_text(
        "from django.http import HttpResponse\n"
        "from django.urls import path\n\n"
        "urlpatterns = [path('', lambda request: HttpResponse(\"The site's own home page.\"))]\n"
    )
    (package / "wsgi.py").write_text(code_blocks(section, "python")[0])
    doc_env, words = command_from_doc(code_blocks(section, "sh")[0])
    assert words[0] == "gunicorn" and DOC_ADDRESS in words, words
    words = [word.replace(DOC_ADDRESS, "127.0.0.1:0") for word in words]
    return Served(words, {**doc_env, **(env or {})}, root, GUNICORN_LISTENING)


def flask_site(root: Path, env: dict[str, str] | None = None) -> Served:
    """A Flask site with the chat mounted by `init_app`, run by the command the Django section
    gives for one."""
    (root / "shop.py").write_text(
        "from flask import Flask\n\n"
        "import widget_server\n\n"
        "app = Flask(__name__)\n\n\n"
        "@app.get('/')\n"
        "def home() -> str:\n"
        '    return "The site\'s own home page."\n\n\n'
        "widget_server.init_app(app, url_prefix='/chat')\n"
    )
    command = re.search(r"`(gunicorn -c python:widget_server\.gunicorn_conf 'shop:app')`", doc_section("### Django"))
    assert command, "the Django section no longer gives the command for a Flask site"
    words = [*shlex.split(command.group(1)), "-b", "127.0.0.1:0"]
    return Served(words, env or {}, root, GUNICORN_LISTENING)


def fastapi_site(root: Path) -> Served:
    """The docs' own main.py, with a route of the site's own added where it says "the site's
    own routes", run by the docs' own uvicorn command."""
    section = doc_section("### FastAPI and other ASGI apps")
    source = code_blocks(section, "python")[0]
    site_route = "@app.get('/')\ndef home() -> dict[str, str]:\n    return {'page': \"The site's own home page.\"}\n"
    assert "# … the site's own routes …\n" in source
    (root / "main.py").write_text(source.replace("# … the site's own routes …\n", site_route))
    doc_env, words = command_from_doc(code_blocks(section, "sh")[0])
    assert words[:2] == ["uvicorn", "main:app"] and words[-2:] == ["--port", "8000"], words
    return Served([*words[:-1], "0"], doc_env, root, UVICORN_LISTENING)


def chat_service_beside(root: Path) -> Served:
    """The recommended setup for an ASGI site: the chat as its own gunicorn service at /chat."""
    doc_env, words = command_from_doc(code_blocks(doc_section("### FastAPI and other ASGI apps"), "sh")[1])
    assert doc_env == {"SCRIPT_NAME": PREFIX} and DOC_CHAT_ADDRESS in words, (doc_env, words)
    words = [word.replace(DOC_CHAT_ADDRESS, "127.0.0.1:0") for word in words]
    return Served(words, doc_env, root, GUNICORN_LISTENING)


SITES = {"django": django_site, "fastapi": fastapi_site, "chat-service": chat_service_beside}


@pytest.fixture(params=sorted(SITES))
def site(request, tmp_path):
    served = SITES[request.param](tmp_path)
    served.kind = request.param
    yield served
    served.stop()


def test_the_site_and_the_chat_under_its_path(site):
    with http_client(base_url=site.origin, timeout=30) as http:
        if site.kind != "chat-service":
            home = http.get("/")
            assert home.status_code == 200 and "The site's own home page." in home.text, home.text
            # None of the chat's headers on the site's own page.
            assert "Content-Security-Policy" not in home.headers
            if site.kind == "django":
                assert home.headers["X-Frame-Options"] == "DENY"
        else:
            # The chat's own service answers under its path only: gunicorn refuses any other
            # path, given SCRIPT_NAME.
            assert http.get("/healthz").status_code == 500
        panel = http.get(f"{PREFIX}/panel", params={"lang": "en"})
        assert panel.status_code == 200, panel.text
        assert panel_config_of(panel.text)["apiBase"] == f"{site.origin}{PREFIX}/api/v1"
        assert "frame-ancestors" in panel.headers["Content-Security-Policy"]
        assert "X-Frame-Options" not in panel.headers  # none of the site's, either
        assert http.get(f"{PREFIX}/widget.js").headers["Content-Type"].startswith("text/javascript")
        assert http.get(f"{PREFIX}/openapi.json").json()["servers"] == [{"url": PREFIX}]


def test_a_whole_answer_streams_and_a_resume_gets_exactly_the_rest(site):
    chat = ChatClient(site.origin + PREFIX).new_conversation()
    try:
        whole = assert_completed(chat.send("Hello", "r-1"))
        assert whole.headers["content-type"].startswith("text/event-stream")
        # Cut after the first delta, then resume from the last event read.
        first = chat.send("Hello again", "r-2", max_events=2)
        assert first.kinds == ["message.started", "text.delta"]
        rest = chat.resume(first.message_id, first.events[-1].id)
        assert rest.status == 200 and rest.kinds[-1] == "message.completed", rest.kinds
        seqs = assert_sound_events(rest, first.message_id)
        assert seqs[0] == first.payloads[-1]["seq"] + 1
        assert_digest(rest.payloads[-1], first.text + rest.text)
    finally:
        chat.close()


def test_a_reader_that_leaves_frees_its_stream_slot_only_where_the_server_shows_its_socket(site):
    """docs/serving.md: under gunicorn the chat's disconnect check ends a left stream within
    about a second, mid-answer; under uvicorn with a2wsgi the stream (its slot, its thread)
    lasts until the answer ends, since writes to the closed connection never fail."""
    chat = ChatClient(site.origin + PREFIX).new_conversation()
    try:
        left = chat.send("/scenario slow", "r-1", max_events=2)  # sentences a second apart
        message_id = left.message_id

        def open_streams() -> int:
            return int(chat.http.get("/healthz").json()["open_streams"])

        if site.kind == "fastapi":
            held_since = time.monotonic()
            while True:
                streams = open_streams()  # read before the state: a state still running means
                if message_state(chat, message_id) in TERMINAL:  # it ran when streams was read
                    break
                assert streams == 1, "the left stream ended before its answer"
                time.sleep(0.2)
            assert time.monotonic() - held_since > 2, "the answer ended too soon to show anything"
            assert wait_until(lambda: open_streams() == 0, timeout=5)
        else:
            assert wait_until(lambda: open_streams() == 0, timeout=3, interval=0.1)
            assert message_state(chat, message_id) not in TERMINAL, "the answer ended first: nothing shown"
    finally:
        chat.close()


@pytest.mark.parametrize("make_site", [django_site, flask_site], ids=["django", "flask"])
def test_sigterm_on_a_site_ends_the_stream_resumably_and_the_answer_finishes(make_site, tmp_path, redis_server):
    """`widget_server.gunicorn_conf`'s hooks find the chat inside Django's wsgi.py
    (a DispatcherMiddleware) and inside a Flask site (`init_app`'s MountedChat): on Redis
    SIGTERM ends the open stream at once without a terminal event, the worker lets the
    answer finish into Redis, and a resume on another server gets exactly the rest."""
    redis_server.flush()
    settings = {
        "WIDGET_SERVER_STORE": redis_server.url,
        "WIDGET_SERVER_DEMO_DELAY_SECONDS": "0.4",
        "WIDGET_SERVER_WORKER_LEASE_SECONDS": "2",
        "WIDGET_SERVER_SHUTDOWN_GRACE_SECONDS": "15",
    }
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    servers = [make_site(tmp_path / "a", settings)]
    clients: list[ChatClient] = []
    try:
        servers.append(make_site(tmp_path / "b", settings))
        a, b = servers
        on_a = ChatClient(a.origin + PREFIX)
        clients.append(on_a)
        on_a.new_conversation()
        question = "which arpeggio fits Am F C G"
        streaming = threading.Event()
        result: dict[str, object] = {}

        def read() -> None:
            headers = {**on_a.auth, "Accept": "text/event-stream"}
            body = {"request_id": "r-1", "text": question}
            with on_a.http.stream("POST", on_a.messages_url(), headers=headers, json=body) as response:
                raw = b""
                for chunk in response.iter_raw():
                    raw += chunk
                    if b"text.delta" in raw:
                        streaming.set()
                result["raw"] = raw

        reader = threading.Thread(target=read)
        reader.start()
        assert streaming.wait(30), a.log()
        a.process.send_signal(signal.SIGTERM)
        reader.join(timeout=10)
        assert not reader.is_alive(), "the stream did not end at SIGTERM"
        raw = result["raw"]
        assert isinstance(raw, bytes)
        first = StreamResult(200, {}, iter_stream_events(iter([raw])), raw)
        assert b"server restarting; resume" in raw and first.kinds[-1] == "text.delta", first.kinds
        assert a.process.wait(timeout=20) == 0, a.log()
        # The answer finished into Redis: a resume on B from the last event read gets the rest.
        on_b = ChatClient(b.origin + PREFIX)
        clients.append(on_b)
        on_b.conversation_id, on_b.token = on_a.conversation_id, on_a.token
        rest = on_b.resume(first.message_id, first.events[-1].id)
        assert rest.kinds[-1] == "message.completed", rest.kinds
        assert [p["seq"] for p in first.payloads + rest.payloads] == list(
            range(1, len(first.events) + len(rest.events) + 1)
        )
        assert first.text + rest.text == load_seed_answers()["improvisation"]["answer"]
        assert_digest(rest.payloads[-1], first.text + rest.text)
    finally:
        for client in clients:
            client.close()
        for server in servers:
            server.stop()
