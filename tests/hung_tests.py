"""A hung test's stacks where a parallel run's log shows them (docs/testing.md, "A bound on each
test").

pytest-timeout's thread method writes every thread's stack to the terminal, then ends the
process. In an xdist worker that terminal is not the run's: execnet keeps a worker's standard
output for its channel to the controller, so the stacks were lost and the log said only that a
worker crashed. This hook, imported by tests/conftest.py, writes them to the worker's standard
error, which is the run's. `tests/test_suite_shape.py` checks that a hung test's stack reaches
the log.
"""

from __future__ import annotations

import faulthandler
import os
import sys
import threading

import pytest


def _report_and_end(item: pytest.Item, seconds: float) -> None:
    capture = item.config.pluginmanager.getplugin("capturemanager")
    if capture is not None:
        # Standard error is the run's again once the test's capture is suspended.
        capture.suspend_global_capture(in_=True)
    sys.stderr.write(f"\n+++ Timeout: {item.nodeid} ran over {seconds:g} s; the stack of every thread:\n")
    sys.stderr.flush()
    faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
    sys.stderr.flush()
    os._exit(1)


@pytest.hookimpl(tryfirst=True)
def pytest_timeout_set_timer(item: pytest.Item, settings) -> bool | None:
    """In an xdist worker with the thread method: pytest-timeout's timer, reporting to standard
    error. Anywhere else (one process, or the signal method) pytest-timeout's own."""
    if settings.method != "thread" or "PYTEST_XDIST_WORKER" not in os.environ:
        return None
    timer = threading.Timer(settings.timeout, _report_and_end, (item, settings.timeout))
    timer.name = f"timeout of {item.nodeid}"
    timer.daemon = True

    def cancel() -> None:
        timer.cancel()
        timer.join()

    item.cancel_timeout = cancel  # type: ignore[attr-defined]  # pytest-timeout's cancel hook calls it
    timer.start()
    return True
