"""gunicorn settings for a site that serves the chat from its own gunicorn.

    gunicorn -c python:widget_server.gunicorn_conf 'mysite.wsgi'

A site that mounts the chat (a Flask app with `init_app`, a Django project's wsgi.py with
`DispatcherMiddleware`; docs/serving.md, "Inside your own app") and runs gunicorn itself
gets from this module what `widget-server` gives its own gunicorn (serving.py): gevent
workers, so each open event stream costs a greenlet rather than a thread or a whole worker
(docs/serving.md, "Why gunicorn with gevent workers"), and the stopping hooks: SIGTERM is
the graceful stop (on a shared store open streams end at once, resumably, and answers being
generated finish into it within SHUTDOWN_GRACE_SECONDS), SIGINT and SIGQUIT leave at once.
The hooks find the chat's service through the mount (serving.py `_service`).

gunicorn reads the module's names as its settings; options on the command line win over
them (`-w 4`, `-b 0.0.0.0:8000`). The values below come from the chat's settings
(WIDGET_SERVER_* environment variables), as `widget-server` takes them.
"""

from __future__ import annotations

import math
import shutil
from typing import Any

from .gevent_worker import WORKER_CLASS
from .serving import _finish_answers, _forget_worker_metrics, _install_signal_handlers, prepare_metrics_folder
from .settings import load_settings

_settings = load_settings({})

# gunicorn's gevent worker, one system call fewer per write (gevent_worker.py).
worker_class = WORKER_CLASS
worker_connections = _settings.server.worker_connections
# As serving.py: gevent workers heartbeat the master from their own greenlet, so this only
# catches a stuck worker; it never limits a stream.
timeout = 60
graceful_timeout = math.ceil(_settings.server.shutdown_grace_seconds)  # gunicorn takes whole seconds
keepalive = 5
# gunicorn 23+ opens a control socket under ~/.gunicorn; nothing here uses it, and it fails
# where HOME is read-only.
control_socket_disable = True

post_worker_init = _install_signal_handlers
worker_exit = _finish_answers
child_exit = _forget_worker_metrics

_metrics_folder: str | None = None


def on_starting(server: Any) -> None:
    """In the master before any worker: the chat's metrics summed over workers need a
    multi-process folder (serving.py `prepare_metrics_folder`, docs/serving.md "Metrics")."""
    global _metrics_folder
    if _settings.server.metrics:
        _metrics_folder = prepare_metrics_folder()


def on_exit(server: Any) -> None:
    if _metrics_folder is not None:
        shutil.rmtree(_metrics_folder, ignore_errors=True)
