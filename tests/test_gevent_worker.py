"""widget_server.gevent_worker: gunicorn's gevent worker whose sockets write with one send
first. The servers the other tests start (tests/processes.py, test_install.py,
test_scale_out.py) run it for real; here its socket is held to gevent's own contract:
every byte arrives, in order, whether the kernel takes the write whole or in parts."""

from __future__ import annotations

import array
import hashlib
import ssl
import subprocess

import gevent
import gevent.socket
import gevent.ssl
import pytest

from widget_server import gunicorn_conf, serving
from widget_server.gevent_worker import WORKER_CLASS, GeventWorker, _one_send_first
from widget_server.settings import Settings


def _pair() -> tuple[gevent.socket.socket, gevent.socket.socket]:
    left, right = gevent.socket.socketpair()
    left.__class__ = _one_send_first(type(left))
    return left, right


def _read_all(sock: gevent.socket.socket, size: int) -> bytes:
    parts, got = [], 0
    while got < size:
        data = sock.recv(65536)
        if not data:
            break
        parts.append(data)
        got += len(data)
    return b"".join(parts)


def _count_system_sends(sock: gevent.socket.socket) -> list[int]:
    """The sizes of the sends made on the socket gevent wraps (its `_sock`), each one
    system call: its class becomes a subclass that records them (same slots, one method)."""
    sends: list[int] = []

    class CountingSocket(type(sock._sock)):  # type: ignore[misc]
        __slots__ = ()

        def send(self, data, flags=0):
            sends.append(len(memoryview(data).cast("B")))
            return super().send(data, flags)

    sock._sock.__class__ = CountingSocket
    return sends


@pytest.mark.parametrize(
    "event",
    [
        b"id: m:1\nevent: text.delta\ndata: {}\n\n",
        # Not bytes: a buffer of 4-byte items, sent (and counted) by its bytes.
        memoryview(array.array("I", range(8))),
    ],
    ids=["bytes", "buffer-of-ints"],
)
def test_a_small_write_is_one_send(event):
    left, right = _pair()
    sends = _count_system_sends(left)
    left.sendall(event)
    size = len(memoryview(event).cast("B"))
    assert sends == [size]
    assert right.recv(100) == bytes(event)
    left.close()
    right.close()


@pytest.mark.parametrize("size", [1, 65_536, 8 * 1024 * 1024])
def test_a_write_larger_than_the_socket_takes_arrives_whole_and_in_order(size):
    # 8 MiB is far more than a socket buffer: the first send takes a part, gevent's
    # sendall the rest, waiting for the reader.
    payload = bytes(range(256)) * (size // 256) + b"x" * (size % 256)
    left, right = _pair()
    reader = gevent.spawn(_read_all, right, len(payload))
    left.sendall(payload)
    received = reader.get(timeout=30)
    assert hashlib.sha256(received).digest() == hashlib.sha256(payload).digest()
    left.close()
    right.close()


def test_a_write_to_a_full_socket_waits_for_room_and_arrives_whole():
    left, right = _pair()
    filled = 0
    while True:  # fill the kernel's buffers, so the next send cannot take a byte
        try:
            filled += left._sock.send(b"f" * 65_536)
        except BlockingIOError:
            break
    sends = _count_system_sends(left)
    event = b"id: m:2\nevent: text.delta\ndata: {}\n\n"
    reader = gevent.spawn(_read_all, right, filled + len(event))
    left.sendall(event)  # the first send is refused; gevent's sendall waits for the reader
    received = reader.get(timeout=30)
    assert received == b"f" * filled + event
    assert sends[0] == len(event) and len(sends) >= 2  # refused once, then sent
    left.close()
    right.close()


def _tls_pair(folder) -> tuple[gevent.ssl.SSLSocket, gevent.ssl.SSLSocket]:
    """A connected pair of gevent TLS sockets, as gevent's server hands one to the worker when
    gunicorn runs with a certificate: (the server's side, the client's side)."""
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost", "-days", "1"),
            *("-keyout", str(key), "-out", str(cert)),
        ],
        check=True,
        capture_output=True,
    )
    server_context = gevent.ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.load_cert_chain(cert, key)
    client_context = gevent.ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    client_context.load_verify_locations(cert)
    left, right = gevent.socket.socketpair()
    client = gevent.spawn(client_context.wrap_socket, right, server_hostname="localhost")
    server = server_context.wrap_socket(left, server_side=True)
    return server, client.get(timeout=10)


@pytest.mark.parametrize("size", [40, 4 * 1024 * 1024])
def test_a_tls_socket_writes_through_tls(tmp_path, size):
    # Its own send encrypts: the socket it wraps is never written directly, or the client
    # would read plaintext where it expects TLS records.
    server, client = _tls_pair(tmp_path)
    server.__class__ = _one_send_first(type(server))
    payload = (b"data: {}\n\n" * (size // 10 + 1))[:size]
    reader = gevent.spawn(_read_all, client, size)
    try:
        with gevent.Timeout(30):  # plaintext would stop the client's reading, and so the write
            server.sendall(payload)
            received = reader.get()
    finally:
        reader.kill()
        server.close()
        client.close()
    assert received == payload


def test_the_subclass_is_made_once_and_keeps_the_object():
    left, right = gevent.socket.socketpair()
    first = _one_send_first(type(left))
    assert _one_send_first(type(left)) is first
    assert issubclass(first, type(left))
    fileno = left.fileno()
    left.__class__ = first
    assert left.fileno() == fileno  # the same socket, only its sendall differs
    left.close()
    right.close()


def test_widget_server_and_the_gunicorn_settings_run_this_worker():
    assert gunicorn_conf.worker_class == WORKER_CLASS == "widget_server.gevent_worker.GeventWorker"
    application = serving.WidgetServerApplication({}, _settings().replace(WORKERS=1))
    assert application.cfg.worker_class is GeventWorker


def _settings() -> Settings:
    from widget_server.settings import load_settings

    return load_settings({}, environ={})


# In a process of its own: the collector's settings are the whole process's.
_TUNED_WORKER = """
import gc, json
from gunicorn.workers.ggevent import GeventWorker as GunicornWorker
from widget_server.gevent_worker import GeventWorker

GunicornWorker.load_wsgi = lambda self: None  # loading an app is not what is tested here
GeventWorker.load_wsgi(object.__new__(GeventWorker))
frozen = gc.get_freeze_count()


class Node:
    pass


# A cycle made after the tuning is still the collector's to free.
node = Node()
node.itself = node
del node
print(json.dumps({"threshold": gc.get_threshold(), "enabled": gc.isenabled(), "frozen": frozen,
                  "freed": gc.collect()}))
"""


def test_a_worker_freezes_what_loading_made_and_raises_the_thresholds():
    import json
    import subprocess
    import sys

    from widget_server.gevent_worker import COLLECTOR_THRESHOLDS

    result = subprocess.run([sys.executable, "-c", _TUNED_WORKER], capture_output=True, text=True, check=True)
    report = json.loads(result.stdout)
    assert report["threshold"] == list(COLLECTOR_THRESHOLDS) == [50_000, 20, 10]
    assert report["enabled"] is True
    assert report["frozen"] > 10_000  # the modules the import made: widget_server, gunicorn, gevent
    assert report["freed"] >= 1  # the Node (its attributes live inline, not in a dict of their own)
