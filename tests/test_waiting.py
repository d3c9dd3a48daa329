"""widget_server/waiting.py: the cheap waits under gevent keep threading's semantics.
The gevent half runs in a child process that monkey-patches first, as gunicorn's gevent
workers do; this process's threads are plain."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time

from widget_server.waiting import Flag, call_later, condition, rlock

GEVENT_CHECKS = textwrap.dedent(
    """
    from gevent import monkey
    monkey.patch_all()
    import threading, time
    import gevent
    from widget_server.waiting import Flag, HubCondition, condition, rlock

    def condition_checks(lock):
        changed = condition(lock)
        assert isinstance(changed, HubCondition), type(changed)

        # A wait times out: False, after about the timeout, with the lock held again.
        with lock:
            started = time.monotonic()
            assert changed.wait(0.05) is False
            assert 0.04 <= time.monotonic() - started < 1.0
            assert lock._is_owned()

        # notify_all wakes every waiter (True), each holding the lock again in turn.
        woken = []
        def waiter(name):
            with lock:
                with lock:  # held twice: released whole while waiting, as threading.Condition does
                    woken.append((name, changed.wait(5)))
        greenlets = [gevent.spawn(waiter, n) for n in range(3)]
        gevent.sleep(0.01)
        with lock:
            changed.notify_all()
        gevent.joinall(greenlets, timeout=5)
        assert sorted(woken) == [(0, True), (1, True), (2, True)], woken

        # A notify with nobody waiting is not kept for the next wait (as with a Condition).
        with lock:
            changed.notify_all()
            assert changed.wait(0.01) is False

    # The memory store's lock (waiting.rlock) and the lock a plugin may pass: both behave.
    condition_checks(threading.RLock())
    store_lock = rlock()
    assert type(store_lock).__module__ == "gevent.lock", type(store_lock)
    condition_checks(store_lock)

    # rlock() excludes another greenlet while held across a switch (a lock that knew only
    # threads would let it in), and is reentrant in its owner.
    order = []
    def holder():
        with store_lock:
            with store_lock:
                order.append("held")
                gevent.sleep(0.02)
                order.append("released")
    def other():
        with store_lock:
            order.append("other")
    first = gevent.spawn(holder)
    gevent.sleep(0)
    second = gevent.spawn(other)
    gevent.joinall([first, second], timeout=5)
    assert order == ["held", "released", "other"], order

    # threading.Condition over rlock() (the store's wait for an action): wait and notify.
    action_changed = threading.Condition(store_lock)
    heard = []
    def action_waiter():
        with store_lock:
            heard.append(action_changed.wait(5))
    listener = gevent.spawn(action_waiter)
    gevent.sleep(0.01)
    with store_lock:
        action_changed.notify_all()
    listener.join(5)
    assert heard == [True], heard

    # Flag: set before the wait → True at once; set during it → True promptly; else False.
    flag = Flag()
    assert flag.wait(0.01) is False
    gevent.spawn_later(0.02, flag.set)
    started = time.monotonic()
    assert flag.wait(5) is True and time.monotonic() - started < 1.0
    assert flag.wait(5) is True and flag.is_set()

    # Many waits leave no timer behind: the hub has nothing to run afterwards.
    other = Flag()
    for _ in range(200):
        other.wait(0.0001)

    # call_later: runs once, in a greenlet of its own (it may block), unless cancelled first.
    from widget_server.waiting import call_later
    ran = []
    def later(name):
        gevent.sleep(0.001)  # would raise in the hub ("cannot switch"): this is a greenlet
        ran.append(name)
    call_later(0.02, lambda: later("due"))
    call_later(0.02, lambda: later("cancelled")).cancel()
    gevent.sleep(0.2)
    assert ran == ["due"], ran

    # spawn: a greenlet (no Thread object), which may block.
    from widget_server.waiting import spawn
    spawned = Flag()
    spawn(lambda: (gevent.sleep(0.001), spawned.set()), "test")
    assert spawned.wait(5) and threading.current_thread().name != "test"
    print("ok")
    """
)


def test_under_gevent_the_hub_waits_keep_condition_and_event_semantics():
    done = subprocess.run([sys.executable, "-c", GEVENT_CHECKS], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_with_plain_threads_the_standard_classes_serve():
    lock = threading.Lock()
    assert isinstance(condition(lock), threading.Condition)
    assert isinstance(rlock(), type(threading.RLock()))
    flag = Flag()
    threading.Timer(0.02, flag.set).start()
    started = time.monotonic()
    assert flag.wait(5) is True and time.monotonic() - started < 2
    assert Flag().wait(0.01) is False


def test_call_later_with_plain_threads_runs_once_unless_cancelled():
    ran: list[str] = []
    due = Flag()
    call_later(0.02, lambda: (ran.append("due"), due.set()))
    call_later(0.02, lambda: ran.append("cancelled")).cancel()
    assert due.wait(5)
    time.sleep(0.1)
    assert ran == ["due"]


def test_spawn_with_plain_threads_runs_in_a_daemon_thread():
    from widget_server.waiting import spawn

    seen: list[threading.Thread] = []
    done = Flag()
    spawn(lambda: (seen.append(threading.current_thread()), done.set()), "spawned")
    assert done.wait(5)
    assert seen[0].name == "spawned" and seen[0].daemon
