"""Production serving: gunicorn with gevent workers, configured from our settings."""

from __future__ import annotations

import os
import signal
import sys
from typing import Any, Mapping

from gunicorn.app.base import BaseApplication


class WidgetServerApplication(BaseApplication):
    def __init__(self, explicit_config: Mapping[str, Any], settings: Mapping[str, Any]) -> None:
        self.explicit_config = dict(explicit_config)
        self.settings = settings
        super().__init__()

    def load_config(self) -> None:
        settings = self.settings
        options = {
            "bind": [_bind_address(settings["HOST"], settings["PORT"])],
            "workers": settings["WORKERS"],
            "worker_class": "gevent",
            "worker_connections": settings["WORKER_CONNECTIONS"],
            # Streams are long-lived by design; gevent workers heartbeat the
            # master from their own greenlet, so this only catches a stuck worker.
            "timeout": 60,
            # SIGTERM: finish within this many seconds. Streams cut here are
            # resumable (TCP close is never completion), so a short grace is safe.
            "graceful_timeout": 10,
            "keepalive": 5,
            "loglevel": settings["LOG_LEVEL"].lower(),
            "errorlog": "-",
            "when_ready": _announce_ready,
            "proc_name": "widget-server",
            # gunicorn 23+ opens a control socket under ~/.gunicorn; nothing
            # here uses it, and it fails where HOME is read-only.
            "control_socket_disable": True,
            "post_worker_init": _quit_quietly,
        }
        for key, value in options.items():
            self.cfg.set(key, value)

    def load(self):
        from .app import create_app

        return create_app(self.explicit_config)


def _bind_address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _quit_quietly(worker) -> None:
    """Ctrl-C (SIGINT, and the master's SIGQUIT): leave at once, no traceback.

    gunicorn's gevent worker raises SystemExit from a greenlet during
    interpreter shutdown, which prints a traceback. Open streams lose
    nothing by a quick exit: clients resume them (TCP close is never
    completion), so we flush our output and end the process.
    """

    def leave(signum, frame):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)

    signal.signal(signal.SIGINT, leave)
    signal.signal(signal.SIGQUIT, leave)


def _announce_ready(server) -> None:
    for listener in server.LISTENERS:
        host, port = listener.sock.getsockname()[:2]
        shown = "127.0.0.1" if host in ("0.0.0.0", "") else (f"[{host}]" if ":" in host else host)
        print(f"widget-server is ready: open http://{shown}:{port}/ in a browser (Ctrl-C stops it)", flush=True)


def serve(explicit_config: Mapping[str, Any], settings: Mapping[str, Any]) -> int:
    code = 0
    try:
        WidgetServerApplication(explicit_config, settings).run()
    except KeyboardInterrupt:
        pass
    except SystemExit as exit:
        code = exit.code if isinstance(exit.code, int) else (0 if exit.code is None else 1)
    print("widget-server stopped.", file=sys.stderr)
    return code
