"""waiting.spawn_eagerly and GenerationRun.start on the memory store (docs/performance.md,
"The first delta leaves with the headers"): under gevent an answer's first delta is stored in
the turn of the request that started it, so it leaves with the response's headers even when
many questions arrive in one pass of the loop. The gevent half runs in child processes that
monkey-patch first, as gunicorn's gevent workers do; this process's threads are plain."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading

from widget_server.waiting import Flag, spawn_eagerly

EAGER_CHECKS = textwrap.dedent(
    """
    from gevent import monkey
    monkey.patch_all()
    import gevent
    from gevent.event import Event
    from widget_server.waiting import spawn, spawn_eagerly

    # Many "requests" made runnable together, each starting a function: with spawn_eagerly
    # each function runs up to go_on() inside its request's turn; with spawn, every
    # function runs only after every request.
    def order_of(start):
        order, released = [], Event()
        def function(name, go_on):
            order.append(f"{name} first step")
            go_on()
            order.append(f"{name} carries on")
        def request(name):
            released.wait()
            start(lambda go_on: function(name, go_on), name)
            order.append(f"{name} request goes on")
        greenlets = [gevent.spawn(request, f"r{n}") for n in range(3)]
        gevent.sleep(0)
        released.set()
        gevent.joinall(greenlets, timeout=5)
        gevent.sleep(0.05)
        return order

    eager = order_of(spawn_eagerly)
    assert eager[:6] == [
        "r0 first step", "r0 request goes on", "r1 first step", "r1 request goes on",
        "r2 first step", "r2 request goes on",
    ], eager
    assert sorted(eager[6:]) == ["r0 carries on", "r1 carries on", "r2 carries on"], eager
    plain = order_of(lambda function, name: spawn(lambda: function(lambda: None), name))
    assert plain[:3] == ["r0 request goes on", "r1 request goes on", "r2 request goes on"], plain

    # A function that waits before go_on(): the caller goes on at that wait, go_on() is then
    # nothing, and the function still finishes.
    order = []
    def waits_first(go_on):
        order.append("started")
        gevent.sleep(0.01)
        go_on()
        order.append("finished")
    def caller():
        spawn_eagerly(waits_first, "waits")
        order.append("caller goes on")
    gevent.spawn(caller).join(timeout=5)
    gevent.sleep(0.1)
    assert order == ["started", "caller goes on", "finished"], order

    # A function that ends, or fails, without go_on(): the caller goes on; a failure is the
    # function's greenlet's (gevent reports it), never the caller's.
    order = []
    def fails(go_on):
        order.append("fails")
        raise RuntimeError("expected by the test")
    def caller2():
        spawn_eagerly(lambda go_on: order.append("ends"), "ends")
        spawn_eagerly(fails, "fails")
        order.append("caller goes on")
    gevent.spawn(caller2).join(timeout=5)
    assert order == ["ends", "fails", "caller goes on"], order

    # From the hub itself (a loop callback) it is spawn: the function runs later.
    order = []
    gevent.get_hub().loop.run_callback(lambda: (spawn_eagerly(lambda go_on: order.append("ran"), "hub"), order.append("callback done")))
    gevent.sleep(0.05)
    assert order == ["callback done", "ran"], order
    print("ok")
    """
)

GENERATION_CHECKS = textwrap.dedent(
    """
    from gevent import monkey
    monkey.patch_all()
    import gevent
    from widget_server.backends.base import Turn
    from widget_server.backends.demo import DemoBackend
    from widget_server.chat.generation import GenerationRun
    from widget_server.messages import EventKind
    from widget_server.stores.base import Conversation
    from widget_server.stores.memory import MemoryStore

    store = MemoryStore()
    store.create_conversation(Conversation("c_1", "hash", 0.0))
    message_id = "m_1"
    store.claim_request("c_1", "r_1", "fp", "/echo one two three", "u_1", message_id)
    run = GenerationRun(store, DemoBackend(delay=30), Turn("/echo one two three", [], "c_1", message_id), time_limit=60)
    run.start()
    # Nothing yielded to the loop since start(): the first delta is already stored.
    kinds = [(event.kind, event.payload.get("text")) for event in store.read_events(message_id, 0, 0)]
    assert kinds == [(EventKind.STARTED, None), (EventKind.DELTA, "one ")], kinds
    # The run carries on in its own greenlet, and a cancel still reaches it.
    gevent.sleep(0.05)
    assert not run.finished.is_set()
    store.cancel(message_id)
    run.cancel()
    assert run.finished.wait(5)
    assert store.message(message_id).state.value == "cancelled", store.message(message_id)
    print("ok")
    """
)


def _run_child(script: str) -> None:
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_under_gevent_a_function_started_eagerly_runs_in_its_callers_turn_up_to_go_on():
    _run_child(EAGER_CHECKS)


def test_under_gevent_a_memory_store_answer_has_its_first_delta_stored_when_start_returns():
    _run_child(GENERATION_CHECKS)


def test_with_plain_threads_spawn_eagerly_is_a_daemon_thread_and_go_on_does_nothing():
    seen: list[threading.Thread] = []
    done = Flag()

    def function(go_on):
        go_on()  # nothing to hand back: the caller went on at once
        seen.append(threading.current_thread())
        done.set()

    spawn_eagerly(function, "eager")
    assert done.wait(5)
    assert seen[0].name == "eager" and seen[0].daemon
