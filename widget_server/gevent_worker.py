"""gunicorn's gevent worker with one system call fewer per write.

gevent's `socket.sendall` asks the kernel for the socket's send buffer size
(`getsockopt(SO_SNDBUF)`) on every call, only to cut the data into chunks of at least 1 MiB
(gevent/_socketcommon.py, `_sendall`). gunicorn writes each chunk an application yields with
one `sendall`, so an event stream paid a `getsockopt` for every event it sent, a share of a
worker's CPU py-spy shows while streaming (bench/load.py's memory store; docs/serving.md,
"Load on Redis"). Here `sendall` first tries one `send` on the socket gevent wraps, which takes a
whole event at once unless the client's window is full, and hands only what is left to
gevent's own `sendall` (tests/test_gevent_worker.py).
Everything else is gevent's socket and gunicorn's `GeventWorker`, unchanged; both
`widget-server` (serving.py) and `widget_server.gunicorn_conf` run this worker.

Once the application is loaded, the worker also tunes Python's cyclic garbage collector
(`tune_garbage_collector`), and what gunicorn refuses before the application runs (a request
line or headers over its limits, a request it cannot parse) is answered with the chat's JSON
errors rather than gunicorn's HTML page (server_errors.py).
"""

from __future__ import annotations

import gc
from typing import Any

from gevent.socket import socket as _GeventSocket  # type: ignore[import-untyped]
from gunicorn.workers.ggevent import GeventWorker as _GunicornGeventWorker  # type: ignore[import-untyped]

from .server_errors import JsonErrorResponses

WORKER_CLASS = "widget_server.gevent_worker.GeventWorker"


_SUBCLASSES: dict[type, type] = {}


def _one_send_first(socket_class: type) -> type:
    """`socket_class` (gevent's socket, whichever class its server accepts with) whose
    `sendall` tries a single `send` before gevent's chunked loop; made once per class."""
    made = _SUBCLASSES.get(socket_class)
    if made is not None:
        return made
    # The socket gevent wraps may be written directly only where the class's own `send` is
    # gevent's plain one, which does just that first. A TLS socket (gevent.ssl.SSLSocket, what
    # gevent's server hands over when gunicorn runs with a certificate) has its own `send`,
    # which encrypts: its bytes must go through it (tests/test_gevent_worker.py).
    plain = getattr(socket_class, "send", None) is _GeventSocket.send

    class OneSendFirst(socket_class):
        __slots__ = ()

        def sendall(self, data: Any, flags: int = 0) -> None:
            if type(data) is not bytes:  # gunicorn writes bytes; len() below counts bytes
                data = memoryview(data).cast("B")
            # One send on the socket gevent wraps, which it keeps non-blocking: the call
            # gevent's own `send` makes first, without its Python frame and timeout check
            # (bench/worker_path.py counted the difference). When the kernel's buffer is
            # full, gevent's sendall waits for room (its timeout applies) and sends the rest.
            try:
                sent = self._sock.send(data, flags) if plain else self.send(data, flags)
            except BlockingIOError:
                sent = 0
            if sent < len(data):
                super().sendall(memoryview(data)[sent:], flags)

    OneSendFirst.__name__ = OneSendFirst.__qualname__ = f"OneSendFirst{socket_class.__name__.capitalize()}"
    _SUBCLASSES[socket_class] = OneSendFirst
    return OneSendFirst


# The collector's thresholds in a worker (gc.set_threshold): a young-generation pass once
# 50,000 more container objects are alive, a middle pass every 20 of those, an old pass
# every 10 middle passes (and, as always, only once the old generation has grown by a
# quarter). Python's default, (700, 10, 10), suits a program holding a few thousand objects;
# a worker streaming to 2,000 readers holds two parked waits per stream and an answer's log,
# so the default ran a young pass every few milliseconds and walked those objects every
# time, and each old pass stopped every stream while it ran. With these, a run of 2,000
# streams makes a few young passes and no other (bench/load.py, memory store, counts them;
# docs/serving.md, "The garbage collector", has the passes and the CPU they took). What the
# collector is still for: reference cycles, about eight objects per request (werkzeug's
# router makes one for every URL it matches); a young pass frees them at most 50,000
# objects later.
COLLECTOR_THRESHOLDS = (50_000, 20, 10)


def tune_garbage_collector() -> None:
    """Freeze what loading the application made, and set COLLECTOR_THRESHOLDS.

    `gc.freeze()` moves every object alive now (modules, the app, its settings) out of the
    collector's sight for good: no pass walks them again, and a forked worker's pages stay
    shared (the gc module's documentation, "gc.freeze"). Called once per worker process,
    after `load_wsgi`, before the first request."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*COLLECTOR_THRESHOLDS)


class GeventWorker(JsonErrorResponses, _GunicornGeventWorker):
    """gunicorn's `gevent` worker; each client socket's `sendall` is `_one_send_first`'s,
    the collector is tuned once the application is loaded, and gunicorn's own refusals are
    JSON (`JsonErrorResponses`)."""

    def load_wsgi(self) -> None:
        super().load_wsgi()
        tune_garbage_collector()

    def handle(self, listener: Any, client: Any, addr: Any) -> None:
        # Same slots, one method more: the accepted socket object becomes the subclass's
        # (gunicorn and the app keep the very object, `gunicorn.socket` included).
        client.__class__ = _one_send_first(type(client))
        super().handle(listener, client, addr)
