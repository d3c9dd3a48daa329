"""A real redis-server on a free loopback port, for tests (Debian's package; .ci/test installs it)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time

import redis


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class RedisServer:
    def __init__(self) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError(
                "redis-server is not installed: `bash .ci/test` installs it (apt-get install redis-server)"
            )
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self._dir = tempfile.TemporaryDirectory()
        self._binary = binary
        self.process: subprocess.Popen | None = None

    def start(self) -> RedisServer:
        # No persistence: each test run starts empty, as a restart without it would.
        self.process = subprocess.Popen(
            [
                self._binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                self._dir.name,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        client = redis.Redis.from_url(self.url)
        deadline = time.monotonic() + 10
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    raise RuntimeError("redis-server did not start") from None
                time.sleep(0.05)
        client.close()
        return self

    def crash(self) -> None:
        """SIGKILL, as a crash or an OOM kill would; start() brings it back on
        the same port, empty (no persistence)."""
        if self.process is not None:
            self.process.kill()
            self.process.wait(timeout=10)
            self.process = None

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=10)
            self.process = None
        self._dir.cleanup()

    def flush(self) -> None:
        client = redis.Redis.from_url(self.url)
        client.flushall()
        client.close()
