"""gunicorn's gevent worker with one system call fewer per write (issue 16).

gevent's `socket.sendall` asks the kernel for the socket's send buffer size
(`getsockopt(SO_SNDBUF)`) on every call, only to cut the data into chunks of at least 1 MiB
(gevent/_socketcommon.py, `_sendall`). gunicorn writes each chunk an application yields with
one `sendall`, so an event stream paid a `getsockopt` for every event it sent: 9 % of a
worker's CPU while streaming (bench/load.py's memory store, py-spy; docs/serving.md, "Load
on Redis"). Here `sendall` first tries one `send`, which takes a whole event at once unless
the client's window is full, and hands only what is left to gevent's own `sendall`.
Everything else is gevent's socket and gunicorn's `GeventWorker`, unchanged; both
`widget-server` (serving.py) and `widget_server.gunicorn_conf` run this worker.
"""

from __future__ import annotations

from typing import Any

from gunicorn.workers.ggevent import GeventWorker as _GunicornGeventWorker  # type: ignore[import-untyped]

WORKER_CLASS = "widget_server.gevent_worker.GeventWorker"


_SUBCLASSES: dict[type, type] = {}


def _one_send_first(socket_class: type) -> type:
    """`socket_class` (gevent's socket, whichever class its server accepts with) whose
    `sendall` tries a single `send` before gevent's chunked loop; made once per class."""
    made = _SUBCLASSES.get(socket_class)
    if made is not None:
        return made

    class OneSendFirst(socket_class):
        __slots__ = ()

        def sendall(self, data: Any, flags: int = 0) -> None:
            view = memoryview(data).cast("B")
            # gevent's send: waits while the socket cannot take a byte (its timeout
            # applies), then returns how much the kernel took.
            sent = self.send(view, flags)
            if sent < len(view):
                super().sendall(view[sent:], flags)

    OneSendFirst.__name__ = OneSendFirst.__qualname__ = f"OneSendFirst{socket_class.__name__.capitalize()}"
    _SUBCLASSES[socket_class] = OneSendFirst
    return OneSendFirst


class GeventWorker(_GunicornGeventWorker):
    """gunicorn's `gevent` worker; each client socket's `sendall` is `_one_send_first`'s."""

    def handle(self, listener: Any, client: Any, addr: Any) -> None:
        # Same slots, one method more: the accepted socket object becomes the subclass's
        # (gunicorn and the app keep the very object, `gunicorn.socket` included).
        client.__class__ = _one_send_first(type(client))
        super().handle(listener, client, addr)
