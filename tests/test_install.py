"""The wheel, installed for real: what a user gets from `pip install`.

Builds the wheel from this checkout, installs it with its dependencies into a
fresh virtual environment (nothing from the dev venv, nothing from the
checkout on the path), and runs the `widget-server` console script: the
real gunicorn + gevent server on loopback. It must serve the API, the pages
and the static files packed into the wheel, stream an answer to the end,
release a stream's slot when its client goes away, stop on Ctrl-C with exit
status 0 and no traceback, and refuse bad settings with status 2 and a
one-line error that names the setting.

Needs PyPI (or the configured index) to install the dependencies; pip's
cache makes a second run fast.
"""

from __future__ import annotations

import hashlib
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from .helpers import HTTP, REPO_ROOT, ChatClient

# One worker builds and installs the wheel once for the whole module (its
# fixtures are module-scoped), instead of each xdist worker building its own.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("install")]

READY = re.compile(r"widget-server is ready: open (http://127\.0\.0\.1:(\d+)/) ")
STOP_SECONDS = 5.0


@dataclass
class Installed:
    venv: Path
    wheel: Path
    workdir: Path  # an empty directory: the checkout is not importable from here

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    @property
    def script(self) -> Path:
        return self.venv / "bin" / "widget-server"


def _clean_env() -> dict[str, str]:
    """The caller's environment without anything that would leak the dev setup in."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP"}
        and not key.startswith("WIDGET_SERVER_")
    }
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _run(args: list, *, cwd: Path, timeout: float) -> subprocess.CompletedProcess:
    result = subprocess.run(
        [str(arg) for arg in args], cwd=cwd, env=_clean_env(), capture_output=True, text=True, timeout=timeout
    )
    assert result.returncode == 0, f"{args} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}"
    return result


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Installed:
    root = tmp_path_factory.mktemp("install")
    workdir = root / "cwd"
    workdir.mkdir()
    dist = root / "dist"
    # The dev venv's python runs `build` (a test extra); the build itself is isolated.
    _run([sys.executable, "-m", "build", "--wheel", "--outdir", dist, REPO_ROOT], cwd=workdir, timeout=600)
    wheels = list(dist.glob("widget_server-*.whl"))
    assert len(wheels) == 1, wheels
    venv = root / "venv"
    _run([sys.executable, "-m", "venv", venv], cwd=workdir, timeout=300)
    # For real, with dependencies: proves the wheel's dependency list is complete.
    _run(
        [venv / "bin" / "python", "-m", "pip", "install", "--quiet", "--disable-pip-version-check", wheels[0]],
        cwd=workdir,
        timeout=900,
    )
    return Installed(venv=venv, wheel=wheels[0], workdir=workdir)


@dataclass
class Server:
    process: subprocess.Popen
    url: str
    stdout: list[str] = field(default_factory=list)
    stderr: list[str] = field(default_factory=list)
    pumps: list[threading.Thread] = field(default_factory=list)

    def output(self) -> str:
        return "".join(self.stdout) + "".join(self.stderr)


def _pump(stream, lines: list[str], ready: queue.Queue | None) -> None:
    for line in stream:
        lines.append(line)
        if ready is not None and READY.search(line):
            ready.put(line)
    stream.close()


@contextmanager
def running_server(installed: Installed, *args: str, env: dict[str, str] | None = None) -> Iterator[Server]:
    """`widget-server --port 0 …` in its own process group (as a terminal runs it)."""
    process = subprocess.Popen(
        [str(installed.script), "--port", "0", *args],
        cwd=installed.workdir,
        env={**_clean_env(), **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    ready: queue.Queue = queue.Queue()
    server = Server(process, url="")
    server.pumps = [
        threading.Thread(target=_pump, args=(process.stdout, server.stdout, ready), daemon=True),
        threading.Thread(target=_pump, args=(process.stderr, server.stderr, None), daemon=True),
    ]
    for pump in server.pumps:
        pump.start()
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                line = ready.get(timeout=0.1)
                break
            except queue.Empty:
                assert process.poll() is None, f"widget-server exited with {process.returncode}:\n{server.output()}"
                assert time.monotonic() < deadline, f"widget-server never said it was ready:\n{server.output()}"
        match = READY.search(line)
        assert match and int(match[2]) > 0, line
        server.url = match[1].rstrip("/")
        yield server
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
        for pump in server.pumps:
            pump.join(timeout=10)


def _stop(server: Server, send) -> None:
    """Send a signal; the whole process group must be gone within STOP_SECONDS, with status 0."""
    started = time.monotonic()
    send()
    try:
        code = server.process.wait(timeout=STOP_SECONDS)
    except subprocess.TimeoutExpired:
        pytest.fail(f"widget-server still running {STOP_SECONDS} s after the signal:\n{server.output()}")
    elapsed = time.monotonic() - started
    # The worker must not outlive its master.
    deadline = time.monotonic() + STOP_SECONDS
    while True:
        try:
            os.killpg(server.process.pid, 0)
        except ProcessLookupError:
            break
        assert time.monotonic() < deadline, "a widget-server process outlived the master"
        time.sleep(0.05)
    for pump in server.pumps:  # read the output to its end
        pump.join(timeout=5)
    output = server.output()
    assert code == 0, f"exit status {code} after {elapsed:.2f} s:\n{output}"
    assert "Traceback" not in output, output
    assert "widget-server stopped." in "".join(server.stderr), output


def _wait_for_open_streams(url: str, expected: int, timeout: float = 5.0) -> int:
    deadline = time.monotonic() + timeout
    while True:
        open_streams = HTTP.get(url + "/healthz").json()["open_streams"]
        if open_streams == expected or time.monotonic() >= deadline:
            return open_streams
        time.sleep(0.02)


def test_wheel_carries_the_static_files_templates_and_data(installed):
    with zipfile.ZipFile(installed.wheel) as wheel:
        names = set(wheel.namelist())
    for path in (
        "static/site.css",
        "static/widget.js",
        "static/min/widget.js",
        "templates/index.html",
        "templates/panel.html",
    ):
        assert f"widget_server/{path}" in names, sorted(names)
        assert (REPO_ROOT / path).is_file()
    assert "widget_server/data/seed_answers.json" in names
    # Imported from the fresh venv, not from the checkout.
    result = _run(
        [installed.python, "-c", "import widget_server, sys; print(widget_server.__file__)"],
        cwd=installed.workdir,
        timeout=60,
    )
    assert Path(result.stdout.strip()).resolve().is_relative_to(installed.venv.resolve()), result.stdout


def test_wheel_carries_the_lua_scripts(installed):
    """The Redis stores' scripts are package data (widget_server/stores/lua.py): every `.lua`
    file of the checkout is in the wheel, and the installed package reads them."""
    scripts = sorted(path.relative_to(REPO_ROOT).as_posix() for path in (REPO_ROOT / "widget_server").rglob("*.lua"))
    assert len(scripts) >= 20, scripts
    with zipfile.ZipFile(installed.wheel) as wheel:
        names = set(wheel.namelist())
    assert sorted(set(scripts) - names) == []
    probe = "from widget_server.stores.lua import load_script\nprint(load_script('widget_server.handoff', 'commit'), end='')\n"
    result = _run([installed.python, "-c", probe], cwd=installed.workdir, timeout=60)
    assert result.stdout == (REPO_ROOT / "widget_server" / "handoff" / "lua" / "commit.lua").read_text(encoding="utf-8")


def test_installed_server_serves_streams_and_stops_on_ctrl_c(installed):
    with running_server(installed) as server:
        assert server.process.poll() is None
        health = HTTP.get(server.url + "/healthz")
        assert health.status_code == 200
        assert health.headers["content-type"].startswith("application/json")
        assert health.json()["status"] == "ok"

        css = HTTP.get(server.url + "/static/site.css")
        assert css.status_code == 200
        assert css.headers["content-type"].startswith("text/css")
        # The minified copy the wheel carries (ASSETS=minified, the default; .ci/js/build.mjs).
        assert css.content == (REPO_ROOT / "static" / "min" / "site.css").read_bytes()

        page = HTTP.get(server.url + "/")
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")

        chat = ChatClient(server.url).new_conversation()
        try:
            # One answer, streamed to its end through gunicorn + gevent.
            answer = chat.send("/echo hello", "install-1")
            assert answer.status == 200
            assert answer.headers["content-type"].startswith("text/event-stream")
            assert answer.kinds[0] == "message.started" and answer.kinds[-1] == "message.completed"
            assert answer.text == "hello"
            completed = answer.payloads[-1]
            assert completed["sha256"] == hashlib.sha256(b"hello").hexdigest()

            # A client that goes away mid-stream gives its slot back.
            long_text = " ".join(f"word{i}" for i in range(200))  # ~8 s at the default pace
            partial = chat.send("/echo " + long_text, "install-2", max_events=3)
            assert partial.kinds == ["message.started", "text.delta", "text.delta"]
            assert _wait_for_open_streams(server.url, 0) == 0

            # Ctrl-C while a stream is open: still a clean, quick exit.
            reader = threading.Thread(
                target=lambda: _read_quietly(chat, partial.message_id), name="stream-reader", daemon=True
            )
            reader.start()
            assert _wait_for_open_streams(server.url, 1) == 1
            # A terminal's Ctrl-C signals the whole foreground process group.
            _stop(server, lambda: os.killpg(server.process.pid, signal.SIGINT))
            reader.join(timeout=10)
            assert not reader.is_alive()
        finally:
            chat.close()


def _read_quietly(chat: ChatClient, message_id: str) -> None:
    try:
        chat.resume(message_id, None)
    except httpx.HTTPError:
        pass  # the server went away mid-stream: expected here


def test_installed_server_stops_on_sigint_to_the_master(installed):
    with running_server(installed, "--log-level", "warning") as server:
        assert HTTP.get(server.url + "/healthz").json()["status"] == "ok"
        _stop(server, lambda: server.process.send_signal(signal.SIGINT))


def test_python_dash_m_help(installed):
    result = _run([installed.python, "-m", "widget_server", "--help"], cwd=installed.workdir, timeout=60)
    assert result.stdout.startswith("usage: widget-server")
    for option in ("--host", "--port", "--workers", "--log-level"):
        assert option in result.stdout
    assert result.stderr == ""


@pytest.mark.parametrize(
    ("args", "setting"),
    [
        (["--port", "abc"], "--port"),
        (["--port", "70000"], "PORT"),
        (["--workers", "2"], "WORKERS"),
        (["--log-level", "loud"], "LOG_LEVEL"),
    ],
)
def test_bad_settings_exit_2_with_one_clear_line(installed, args, setting):
    result = subprocess.run(
        [str(installed.script), *args],
        cwd=installed.workdir,
        env=_clean_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert "Traceback" not in result.stderr + result.stdout, result.stderr
    assert result.stdout == ""
    errors = [line for line in result.stderr.splitlines() if line.startswith("widget-server: error:")]
    assert len(errors) == 1, result.stderr
    assert setting in errors[0], result.stderr
    # The error is the last line; before it, at most argparse's usage summary.
    assert result.stderr.splitlines()[-1] == errors[0]
    assert all(line.startswith(("usage:", " ")) for line in result.stderr.splitlines()[:-1]), result.stderr
