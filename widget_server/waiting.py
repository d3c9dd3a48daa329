"""Waiting for a change with a timeout, cheaply under gevent.

Every streamed event makes two waits end: the reader's (the store's condition, woken by the
append) and, with the demo backend, the pacing sleep (CancelToken.wait). Under gevent's
monkey-patching, `threading.Condition.wait(timeout)` allocates a lock and starts a
`gevent.Timeout` (an exception object and a timer) per wait, and `threading.Event.wait`
does the same: bench/load.py's profile of one memory-store worker at N=500 found the pacing
waits and the readers' among its largest costs (docs/serving.md, "Measurements"). Here a
waiter is gevent's `Waiter` and one loop timer, woken through the hub; with plain threads
(the development server, tests that make apps in-process) the standard classes serve.
"""

from __future__ import annotations

import functools
import threading
from typing import Any

try:
    # Imported once here, not in each wait: a function-level import runs the import machinery
    # on every call, and every streamed event ends two waits (bench/load.py). Importing
    # gevent.hub patches nothing and makes no hub; _patched() says whether the waits here use it.
    from gevent.hub import Waiter, get_hub  # type: ignore[import-untyped]
except ImportError:  # gevent is a dependency, but a plugin may run the store without it
    Waiter = get_hub = None


@functools.cache
def _patched() -> bool:
    """Whether gevent has patched `threading` in this process (gunicorn's gevent workers do,
    before the app is loaded; nothing unpatches it)."""
    if get_hub is None:
        return False
    from gevent import monkey  # type: ignore[import-untyped]

    return bool(monkey.is_module_patched("threading"))


def _wait_on_hub(waiters: list[Any], timeout: float | None, release: Any, reacquire: Any) -> bool:
    """Park this greenlet in `waiters` until woken (True) or `timeout` passes (False)."""
    hub = get_hub()
    waiter = Waiter(hub)
    waiters.append(waiter)
    timer = None
    if timeout is not None:
        timer = hub.loop.timer(max(0.0, timeout))
        timer.start(waiter.switch, False)
    state = release()
    woken = False
    try:
        woken = bool(waiter.get())
        return woken
    finally:
        if timer is not None:
            timer.close()
        reacquire(state)
        if not woken:  # a wake-up took it from the list (_wake_on_hub clears the list)
            try:
                waiters.remove(waiter)
            except ValueError:
                pass  # already taken by a wake-up that came after the timeout


def _wake_on_hub(waiters: list[Any]) -> None:
    if not waiters:
        return
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


def rlock() -> Any:
    """A reentrant lock for greenlets or threads: gevent's own under gevent, `threading.RLock`
    otherwise. gevent's patching leaves `threading.RLock` as CPython's pure-Python `_RLock`
    over a patched lock (four Python calls an acquire): its acquire and release cost twice
    gevent's, and the memory store takes its lock three times per streamed event
    (bench/load.py). Both have the `_release_save`/`_acquire_restore` that
    HubCondition and threading.Condition use."""
    if _patched():
        from gevent.lock import RLock  # type: ignore[import-untyped]

        return RLock()
    return threading.RLock()


def _no_lock() -> None:
    return None


def _no_relock(_state: Any) -> None:
    return None


class Flag:
    """`threading.Event`'s set(), is_set() and wait(timeout) (True at once once set), with
    the cheap wait under gevent."""

    __slots__ = ("_event", "_set", "_waiters")

    def __init__(self) -> None:
        self._event = threading.Event()
        # Read twice per streamed delta (CancelToken.cancelled): an attribute, not a call
        # into the patched Event. Written before the Event is set, never unset.
        self._set = False
        self._waiters: list[Any] = []

    def is_set(self) -> bool:
        return self._set

    def set(self) -> None:
        self._set = True
        self._event.set()
        if _patched():
            _wake_on_hub(self._waiters)

    def wait(self, timeout: float | None = None) -> bool:
        if self._set:
            return True
        if not _patched():
            return self._event.wait(timeout)
        return _wait_on_hub(self._waiters, timeout, _no_lock, _no_relock) or self._set


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

    watcher = get_hub().loop.timer(max(0.0, seconds))
    # The callback runs in the hub, which must not block: the function gets a greenlet.
    watcher.start(gevent.spawn, function)
    return _Cancellable(watcher.close)


def spawn(function: Any, name: str) -> None:
    """Run `function()` on its own: a greenlet under gevent, a daemon thread otherwise.
    `threading.Thread.start()` under gevent's patching makes an Event, a Condition and locks,
    spawns, then waits for the new thread to say it started: py-spy found most of a new
    message's POST there (bench/load.py, memory store, N=2,000)."""
    if _patched():
        import gevent

        gevent.spawn(function).name = name
        return
    threading.Thread(target=function, name=name, daemon=True).start()


def _go_on() -> None:
    return None


class _HandBack:
    """spawn_eagerly's hand-back: the greenlet that started a function goes on once, either
    when the function says so (`__call__`, from the function's greenlet) or when the loop
    gets to `resume` (the function waited for something first, or ended)."""

    __slots__ = ("_caller", "_done", "_loop")

    def __init__(self, caller: Any, loop: Any) -> None:
        self._caller = caller
        self._loop = loop
        self._done = False

    def __call__(self) -> None:
        if self._done:
            return
        self._done = True
        from gevent import getcurrent

        # This greenlet is waiting for nothing: the loop resumes it at its next round.
        self._loop.run_callback(getcurrent().switch)
        self._caller.switch()

    def resume(self) -> None:  # a loop callback: runs in the hub
        if self._done or self._caller.dead:
            return
        self._done = True
        self._caller.switch()


def spawn_eagerly(function: Any, name: str) -> None:
    """Like `spawn`, but `function(go_on)` starts at once, in this greenlet's turn of the loop:
    the caller goes on when the function calls `go_on()`, or at the loop's next round once
    the function first waits for anything (a timer, a socket, a lock) or ends, whichever
    comes first; the function then carries on in a greenlet of its own
    (tests/test_eager_start.py). With plain threads, or called from the hub, it is `spawn`
    and `go_on` does nothing.

    Why: gevent runs every greenlet that a socket made ready in one pass of its loop, and a
    spawned greenlet only after that pass. When 500 questions arrive at once, each POST
    handled in that pass spawned its answer's generation, and none of them could store a
    first delta before the last POST was handled: the first delta came 0.2 s after the
    response's headers at N=500 and 1 s after them at N=2,000 (bench/load.py, memory store,
    `headers_p50_s` against `ttfd_p50_s`), where the baseline sends both together."""
    if _patched():
        import gevent

        hub = get_hub()
        caller = gevent.getcurrent()
        if caller is not hub:
            hand_back = _HandBack(caller, hub.loop)
            greenlet = gevent.Greenlet(function, hand_back)
            greenlet.name = name
            hub.loop.run_callback(hand_back.resume)  # if the function waits (or ends) first
            greenlet.switch()
            return
    spawn(lambda: function(_go_on), name)
