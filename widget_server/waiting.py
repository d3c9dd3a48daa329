"""Waiting for a change with a timeout, cheaply under gevent (issue 16).

Every streamed event makes two waits end: the reader's (the store's condition, woken by the
append) and, with the demo backend, the pacing sleep (CancelToken.wait). Under gevent's
monkey-patching, `threading.Condition.wait(timeout)` allocates a lock and starts a
`gevent.Timeout` (an exception object and a timer) per wait, and `threading.Event.wait`
does the same: bench/load.py's profile of one memory-store worker at N=500 found 17% of its
CPU in the pacing waits and 11% in the readers' (docs/serving.md, "Measurements"). Here a
waiter is gevent's `Waiter` and one loop timer, woken through the hub; with plain threads
(the development server, tests that make apps in-process) the standard classes serve.
"""

from __future__ import annotations

import functools
import threading
from typing import Any


@functools.cache
def _patched() -> bool:
    """Whether gevent has patched `threading` in this process (gunicorn's gevent workers do,
    before the app is loaded; nothing unpatches it)."""
    try:
        from gevent import monkey  # type: ignore[import-untyped]
    except ImportError:  # gevent is a dependency, but a plugin may run the store without it
        return False
    return bool(monkey.is_module_patched("threading"))


def _wait_on_hub(waiters: list[Any], timeout: float | None, release: Any, reacquire: Any) -> bool:
    """Park this greenlet in `waiters` until woken (True) or `timeout` passes (False)."""
    from gevent.hub import Waiter, get_hub  # type: ignore[import-untyped]

    hub = get_hub()
    waiter = Waiter(hub)
    waiters.append(waiter)
    timer = None
    if timeout is not None:
        timer = hub.loop.timer(max(0.0, timeout))
        timer.start(waiter.switch, False)
    state = release()
    try:
        return bool(waiter.get())
    finally:
        if timer is not None:
            timer.close()
        reacquire(state)
        try:
            waiters.remove(waiter)
        except ValueError:
            pass  # taken by the wake-up that ended the wait


def _wake_on_hub(waiters: list[Any]) -> None:
    if not waiters:
        return
    from gevent.hub import get_hub

    run_callback = get_hub().loop.run_callback
    for waiter in waiters:
        # Waiter.switch runs in the hub only; a waiter already gone just keeps the value.
        run_callback(waiter.switch, True)
    waiters.clear()


class HubCondition:
    """`threading.Condition(lock)`'s wait() and notify_all() for gevent: called with `lock`
    held (an RLock is released whole while waiting, as threading.Condition does)."""

    __slots__ = ("_lock", "_waiters")

    def __init__(self, lock: Any) -> None:
        self._lock = lock
        self._waiters: list[Any] = []

    def _release(self) -> Any:
        release_save = getattr(self._lock, "_release_save", None)
        if release_save is not None:
            return release_save()
        self._lock.release()
        return None

    def _acquire(self, state: Any) -> None:
        if state is not None:
            self._lock._acquire_restore(state)
        else:
            self._lock.acquire()

    def wait(self, timeout: float | None = None) -> bool:
        return _wait_on_hub(self._waiters, timeout, self._release, self._acquire)

    def notify_all(self) -> None:
        _wake_on_hub(self._waiters)


def condition(lock: Any) -> Any:
    """A condition on `lock`: HubCondition under gevent, threading.Condition otherwise."""
    return HubCondition(lock) if _patched() else threading.Condition(lock)


def _no_lock() -> None:
    return None


def _no_relock(_state: Any) -> None:
    return None


class Flag:
    """`threading.Event`'s set(), is_set() and wait(timeout) (True at once once set), with
    the cheap wait under gevent."""

    __slots__ = ("_event", "_waiters")

    def __init__(self) -> None:
        self._event = threading.Event()
        self._waiters: list[Any] = []

    def is_set(self) -> bool:
        return self._event.is_set()

    def set(self) -> None:
        self._event.set()
        if _patched():
            _wake_on_hub(self._waiters)

    def wait(self, timeout: float | None = None) -> bool:
        if self._event.is_set():
            return True
        if not _patched():
            return self._event.wait(timeout)
        return _wait_on_hub(self._waiters, timeout, _no_lock, _no_relock) or self._event.is_set()


class _Cancellable:
    __slots__ = ("_cancel",)

    def __init__(self, cancel: Any) -> None:
        self._cancel = cancel

    def cancel(self) -> None:
        self._cancel()


def call_later(seconds: float, function: Any) -> Any:
    """Run `function()` once after `seconds`, in a greenlet of its own (a thread without
    gevent), unless the returned handle's cancel() comes first. Under gevent this is one
    loop timer, not a `threading.Timer`: a greenlet, an Event and its locks for every
    answer's time limit, held for the whole answer."""
    if not _patched():
        timer = threading.Timer(seconds, function)
        timer.daemon = True
        timer.start()
        return timer
    import gevent
    from gevent.hub import get_hub

    watcher = get_hub().loop.timer(max(0.0, seconds))
    # The callback runs in the hub, which must not block: the function gets a greenlet.
    watcher.start(gevent.spawn, function)
    return _Cancellable(watcher.close)


def spawn(function: Any, name: str) -> None:
    """Run `function()` on its own: a greenlet under gevent, a daemon thread otherwise.
    `threading.Thread.start()` under gevent's patching makes an Event, a Condition and locks,
    spawns, then waits for the new thread to say it started: py-spy found 69% of a new
    message's POST there (bench/load.py, memory store, N=2,000)."""
    if _patched():
        import gevent

        gevent.spawn(function).name = name
        return
    threading.Thread(target=function, name=name, daemon=True).start()
