"""`widget-server` as a real process tree (gunicorn master + gevent workers), for
tests of what only separate processes show: a worker killed mid-answer,
SIGTERM, metrics summed across workers, several servers sharing one Redis."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from .helpers import HTTP

READY = re.compile(r"open (http://[^/]+)/ in a browser")


def process_table() -> Iterator[tuple[int, int, str]]:
    """(pid, parent pid, command name) of every process, from /proc (proc(5))."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # ended meanwhile
            continue
        # pid (comm) state ppid …: comm may hold spaces and parentheses, so split at the last ")".
        head, tail = stat.rsplit(")", 1)
        yield int(entry.name), int(tail.split()[1]), head.split("(", 1)[1]


class ServerProcess:
    """`python -m widget_server` on a free loopback port, with settings given
    as WIDGET_SERVER_* environment variables (what an operator would set)."""

    def __init__(self, settings: Mapping[str, Any], *, workers: int = 1) -> None:
        self.settings = dict(settings)
        self.workers = workers
        self.url = ""
        self.process: subprocess.Popen | None = None
        # The server's output file outlives start(): stop() reads and closes it.
        self._log = tempfile.NamedTemporaryFile(prefix="widget-server-", suffix=".log", delete=False)  # noqa: SIM115
        self.output: list[str] = []

    def start(self, timeout: float = 30.0) -> ServerProcess:
        env = {key: value for key, value in os.environ.items() if not key.startswith("WIDGET_SERVER_")}
        env.pop("PROMETHEUS_MULTIPROC_DIR", None)
        env.update({f"WIDGET_SERVER_{key}": str(value) for key, value in self.settings.items()})
        env["PYTHONUNBUFFERED"] = "1"
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "widget_server",
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--workers",
                str(self.workers),
            ],
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
            env=env,
            start_new_session=True,  # its own process group: killed as a whole
        )
        ready = threading.Event()

        def read_stdout() -> None:
            assert self.process is not None and self.process.stdout is not None
            for line in self.process.stdout:
                self.output.append(line)
                match = READY.search(line)
                if match and not ready.is_set():
                    self.url = match.group(1)
                    ready.set()

        threading.Thread(target=read_stdout, daemon=True).start()
        if not ready.wait(timeout):
            self.kill()
            log = self.log()
            self.stop()
            raise RuntimeError(f"widget-server did not become ready:\n{log}")
        self.wait_for_workers(timeout)
        return self

    def log(self) -> str:
        return Path(self._log.name).read_text(errors="replace")

    def worker_pids(self) -> list[int]:
        assert self.process is not None
        return sorted(pid for pid, parent, _ in process_table() if parent == self.process.pid)

    def wait_for_workers(self, timeout: float) -> None:
        """Every worker has loaded the app (its 'Booting worker' line is not enough)."""
        import httpx

        deadline = time.monotonic() + timeout
        while len(self.worker_pids()) < self.workers:
            if time.monotonic() > deadline:
                raise RuntimeError(f"workers did not start:\n{self.log()}")
            time.sleep(0.05)
        while True:
            try:
                if HTTP.get(self.url + "/healthz", timeout=5).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"the server does not answer /healthz:\n{self.log()}")
            time.sleep(0.05)

    def terminate(self) -> None:
        """SIGTERM to the master: the graceful stop a process manager sends."""
        assert self.process is not None
        self.process.send_signal(signal.SIGTERM)

    def wait(self, timeout: float) -> int:
        assert self.process is not None
        return self.process.wait(timeout=timeout)

    def kill(self) -> None:
        """SIGKILL the whole process group: a crash, an OOM kill, a lost host."""
        if self.process is not None and self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()
        if self.process is not None and self.process.stdout is not None:
            self.process.stdout.close()
        self._log.close()
        try:
            os.unlink(self._log.name)
        except OSError:
            pass


class RoundRobinProxy:
    """A TCP load balancer on loopback without sticky sessions: each new
    connection goes to the next server in turn. `.connections` records which
    server each one reached, so a test can show a visitor crossed servers."""

    def __init__(self, upstreams: list[str]) -> None:
        import socket

        self.upstreams = [url.removeprefix("http://").rsplit(":", 1) for url in upstreams]
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.connections: list[int] = []
        self._closed = False
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, name="round-robin", daemon=True).start()

    def _accept(self) -> None:
        import socket

        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                index = len(self.connections) % len(self.upstreams)
                self.connections.append(index)
            host, port = self.upstreams[index]
            try:
                upstream = socket.create_connection((host, int(port)))
            except OSError:
                client.close()
                continue
            for source, target in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, target), daemon=True).start()

    @staticmethod
    def _pump(source, target) -> None:
        import socket

        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                target.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, target):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                sock.close()

    def stop(self) -> None:
        self._closed = True
        self._listener.close()
