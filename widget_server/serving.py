"""Production serving: gunicorn with gevent workers, configured from our settings.

Stopping (docs/serving.md): SIGINT/SIGQUIT leave at once; SIGTERM is the
graceful stop. With a shared store each worker marks its service as shutting
down (open streams end within a poll, without a terminal event, so clients
resume elsewhere), stops accepting, and before exiting gives the answers it
is generating up to SHUTDOWN_GRACE_SECONDS to finish into the store, failing
the rest as `worker_lost` rather than leaving readers to wait for their
leases. With the memory store nothing can resume elsewhere, so open streams
keep running for up to SHUTDOWN_GRACE_SECONDS, then are cut.

Metrics (metrics.py): with prometheus-client's multi-process mode, each
worker writes its series to files in PROMETHEUS_MULTIPROC_DIR; `serve`
creates a fresh folder for that before any worker starts, and the master
marks a dead worker's files so its live gauges stop counting.
"""

from __future__ import annotations

import math
import os
import shutil
import signal
import socket
import sys
import tempfile
import time
from collections.abc import Mapping
from types import FrameType
from typing import TYPE_CHECKING, Any, Protocol

# gunicorn ships no type information; the hooks below describe, as Protocols, the little
# they use of its master and workers (types-gunicorn's stubs type load() against a WSGI
# callable that Flask's StartResponse protocol does not match).
from gunicorn.app.base import BaseApplication  # type: ignore[import-untyped]

from .gevent_worker import WORKER_CLASS
from .settings import Settings

if TYPE_CHECKING:
    from flask import Flask

    from .chat.service import ChatService
    from .services import Services


class _Log(Protocol):
    def warning(self, msg: str, *args: object) -> None: ...


class _Config(Protocol):
    graceful_timeout: int


class _Listener(Protocol):
    sock: socket.socket


class _Master(Protocol):
    """gunicorn's arbiter, as the server hooks see it."""

    cfg: _Config
    log: _Log
    LISTENERS: list[_Listener]


class _Worker(Protocol):
    """A gunicorn worker, as the worker hooks see it."""

    pid: int
    alive: bool
    # Set by our SIGTERM handler: when the graceful stop began (time.monotonic()).
    widget_shutdown_started: float


class WidgetServerApplication(BaseApplication):
    def __init__(self, explicit_config: Mapping[str, Any], settings: Settings) -> None:
        self.explicit_config = dict(explicit_config)
        self.settings = settings
        super().__init__()

    def load_config(self) -> None:
        settings = self.settings
        options = {
            "bind": [_bind_address(settings.server.host, settings.server.port)],
            "workers": settings.server.workers,
            "worker_class": WORKER_CLASS,
            "worker_connections": settings.server.worker_connections,
            # Streams are long-lived by design; gevent workers heartbeat the
            # master from their own greenlet, so this only catches a stuck worker.
            "timeout": 60,
            # SIGTERM: a worker stops within this many seconds (streams end at
            # once, resumably; answers in progress get the rest to finish).
            "graceful_timeout": math.ceil(settings.server.shutdown_grace_seconds),  # gunicorn takes whole seconds
            "keepalive": 5,
            "loglevel": settings.server.log_level.lower(),
            "errorlog": "-",
            "when_ready": _announce_ready,
            "proc_name": "widget-server",
            # gunicorn 23+ opens a control socket under ~/.gunicorn; nothing
            # here uses it, and it fails where HOME is read-only.
            "control_socket_disable": True,
            "post_worker_init": _install_signal_handlers,
            "worker_exit": _finish_answers,
            "child_exit": _forget_worker_metrics,
        }
        for key, value in options.items():
            self.cfg.set(key, value)

    def load(self) -> Flask:
        from .app import create_app

        return create_app(self.explicit_config)


def _bind_address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _service(worker: _Worker) -> ChatService | None:
    """The worker's chat service, once it has loaded the app (gunicorn's `worker.wsgi`): the
    chat's own app, a site's Flask app the chat is mounted in (`init_app`: a `MountedChat`),
    or a werkzeug `DispatcherMiddleware` with the chat among its mounts (a Django site's
    wsgi.py; docs/serving.md, "Django", run with `widget_server.gunicorn_conf`)."""
    from .services import SERVICES_KEY  # imported here: gunicorn's master, which loads this module, needs none of it

    app = getattr(worker, "wsgi", None)
    for candidate in [app, *getattr(app, "mounts", {}).values()]:
        extensions = getattr(candidate, "extensions", None) or {}
        built: Services | None = extensions.get(SERVICES_KEY)
        if built is not None:
            return built.chat
        mounted = extensions.get("widget_server")
        if mounted is not None:
            return mounted.service
    return None


def _install_signal_handlers(worker: _Worker) -> None:
    """SIGINT/SIGQUIT leave at once; SIGTERM begins the graceful stop.

    Ctrl-C: gunicorn's gevent worker raises SystemExit from a greenlet
    during interpreter shutdown, which prints a traceback. Open streams lose
    nothing by a quick exit: clients resume them (TCP close is never
    completion), so we flush our output and end the process.
    """

    def leave(signum: int, frame: FrameType | None) -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)

    def stop_gracefully(signum: int, frame: FrameType | None) -> None:
        # Only flags here (a signal handler): streams see the flag at their
        # next poll; gunicorn's loop sees `alive` within a second.
        worker.widget_shutdown_started = time.monotonic()
        service = _service(worker)
        # With a shared store, streams end now and resume elsewhere. With the
        # memory store there is no elsewhere: streams keep running until the
        # grace is over, so answers that finish in time arrive whole.
        if service is not None and service.store.shared:
            service.begin_shutdown()
        worker.alive = False

    signal.signal(signal.SIGINT, leave)
    signal.signal(signal.SIGQUIT, leave)
    signal.signal(signal.SIGTERM, stop_gracefully)


def _finish_answers(server: _Master, worker: _Worker) -> None:
    """In the exiting worker: answers still generating get the rest of the
    grace to finish into the shared store; the rest end as `worker_lost`.
    (With the memory store nothing outlives the process: nothing to wait for.)"""
    service = _service(worker)
    if service is None or not service.store.shared:
        return
    started = getattr(worker, "widget_shutdown_started", time.monotonic())
    # Keep a second in hand before the master's SIGKILL at graceful_timeout.
    remaining = server.cfg.graceful_timeout - (time.monotonic() - started) - 1.0
    abandoned = service.finish_runs(max(0.0, remaining))
    if abandoned:
        server.log.warning("worker %s: %d answer(s) unfinished at shutdown ended as worker_lost", worker.pid, abandoned)


def _forget_worker_metrics(server: _Master, worker: _Worker) -> None:
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)


def _announce_ready(server: _Master) -> None:
    for listener in server.LISTENERS:
        host, port = listener.sock.getsockname()[:2]
        shown = "127.0.0.1" if host in ("0.0.0.0", "") else (f"[{host}]" if ":" in host else host)
        print(f"widget-server is ready: open http://{shown}:{port}/ in a browser (Ctrl-C stops it)", flush=True)


def prepare_metrics_folder() -> str | None:
    """A fresh PROMETHEUS_MULTIPROC_DIR for this server's workers (returned so
    `serve` removes it), unless one is set already (then it is the operator's:
    they must empty it between runs, as prometheus-client documents). Must run
    before anything imports prometheus_client."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        return None
    folder = tempfile.mkdtemp(prefix="widget-server-metrics-")
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = folder
    return folder


def serve(explicit_config: Mapping[str, Any], settings: Settings) -> int:
    code = 0
    metrics_folder = prepare_metrics_folder() if settings.server.metrics else None
    try:
        WidgetServerApplication(explicit_config, settings).run()
    except KeyboardInterrupt:
        pass
    except SystemExit as exit:
        code = exit.code if isinstance(exit.code, int) else (0 if exit.code is None else 1)
    finally:
        if metrics_folder is not None:
            shutil.rmtree(metrics_folder, ignore_errors=True)
    print("widget-server stopped.", file=sys.stderr)
    return code
