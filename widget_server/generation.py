"""Running a backend in the background, decoupled from any HTTP connection.

The generator writes into the message's log; HTTP responses only read it.
So a client that disconnects does not stop the answer (its resume finds the
rest), a cancel does (the store records it, the token wakes the backend), and
the time limit always ends the run with a terminal event, even if the
backend hangs.

On a shared store the run also holds the message's ownership lease: a
watcher renews it (every third of the lease time) and, at the same pace,
looks for an ending written by another process (a cancel sent to another
host). If this process dies, the lease runs out and readers elsewhere fail
the message with `worker_lost` (stores/base.py). If the store itself becomes
unreachable, the run stops: nothing it generated could be recorded.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Callable

from .actions import propose
from .backends.base import ActionProposal, Backend, CancelToken, Turn
from .errors import ChatError, ErrorCode, ErrorInfo
from .metrics import NO_METRICS, Metrics
from .stores.base import Store, StoreUnavailable

log = logging.getLogger(__name__)


class GenerationRun:
    def __init__(
        self,
        store: Store,
        backend: Backend,
        turn: Turn,
        *,
        time_limit: float,
        on_finish: Callable[["GenerationRun"], None] | None = None,
        metrics: Metrics = NO_METRICS,
    ) -> None:
        self.store = store
        self.backend = backend
        self.turn = turn
        self.message_id = turn.message_id
        self.time_limit = time_limit
        self.cancel_token = CancelToken()
        self._on_finish = on_finish
        self.metrics = metrics
        self.accepted_at = time.monotonic()  # created right after the claim
        self.finished = threading.Event()

    def start(self) -> None:
        thread = threading.Thread(target=self.run, name=f"generate-{self.message_id}", daemon=True)
        thread.start()

    def cancel(self) -> None:
        """Stop the backend promptly (the caller records the cancelled state)."""
        self.cancel_token.cancel("cancelled")

    def _fail(self, code: ErrorCode) -> bool:
        """Fail the message with `code` unless it already ended; True if this did it."""
        try:
            if self.store.fail(self.message_id, ErrorInfo.for_code(code)) is None:
                return False
        except StoreUnavailable as error:
            log.warning("message %s: could not record failure %s: %s", self.message_id, code.value, error)
            return False
        self.metrics.ended("failed", code=code.value)
        return True

    def _on_time_limit(self) -> None:
        if self._fail(ErrorCode.TIMEOUT):
            log.info("message %s stopped by the %.1f s time limit", self.message_id, self.time_limit)
        self.cancel_token.cancel("timeout")

    def abandon(self) -> None:
        """This process is going away with the answer unfinished (shutdown
        grace over): end it now as `worker_lost`, rather than leaving its
        readers to wait for the lease to run out."""
        if self._fail(ErrorCode.WORKER_LOST):
            log.warning("message %s abandoned at shutdown (worker_lost)", self.message_id)
        self.cancel_token.cancel("shutdown")

    # How often a run on a shared store looks for an ending written by
    # another process (a cancel sent to another host): the backend is told
    # within this delay even while it waits for its upstream (a streaming
    # backend learns sooner: its next delta is refused). One HGET each time.
    CANCEL_POLL_SECONDS = 0.5

    def _watch_shared(self) -> None:
        """Renew the lease; notice an ending written by another process."""
        renew_every = max(0.2, getattr(self.store, "lease_seconds", 10.0) / 3)
        renewed_at = time.monotonic()
        while not self.cancel_token.wait(self.CANCEL_POLL_SECONDS):
            try:
                if time.monotonic() - renewed_at >= renew_every:
                    self.store.renew_lease(self.message_id)
                    renewed_at = time.monotonic()
                state = self.store.message_state(self.message_id)
            except StoreUnavailable as error:
                log.warning("message %s: store unavailable while generating: %s", self.message_id, error)
                continue  # keep trying: the lease survives a short outage
            if state is None or state.terminal:
                self.cancel_token.cancel("ended elsewhere")
                return

    def _propose(self, proposal: ActionProposal, count: int):
        record = propose(
            proposal, conversation_id=self.turn.conversation_id, message_id=self.message_id, count=count
        )
        return self.store.add_action(self.message_id, record)

    def run(self) -> None:
        timer = threading.Timer(self.time_limit, self._on_time_limit)
        timer.daemon = True
        timer.start()
        if self.store.shared:
            threading.Thread(target=self._watch_shared, name=f"watch-{self.message_id}", daemon=True).start()
        deltas = None
        try:
            if self.store.start(self.message_id) is None:
                return  # cancelled (or failed) before it began
            deltas = self.backend.stream(self.turn, self.cancel_token)
            proposals = 0
            first_delta = True
            for delta in deltas:
                if self.cancel_token.cancelled:
                    return
                if isinstance(delta, ActionProposal):
                    # Validated now (ChatError fails the answer); stored and
                    # announced only while the answer still runs; actionable
                    # only once it completes (widget_server.actions).
                    if self._propose(delta, proposals) is None:
                        return  # ended elsewhere: the proposal is never offered
                    proposals += 1
                    continue
                if not isinstance(delta, str):
                    raise TypeError(f"backend yielded {type(delta).__name__}, expected str")
                if not delta:
                    continue
                if self.store.append_text(self.message_id, delta) is None:
                    return  # ended elsewhere (cancel, time limit): stop reading
                if first_delta:
                    first_delta = False
                    self.metrics.first_delta(time.monotonic() - self.accepted_at)
            if not self.cancel_token.cancelled and self.store.complete(self.message_id) is not None:
                self.metrics.ended("completed", seconds=time.monotonic() - self.accepted_at)
        except StoreUnavailable as error:
            # Nothing more can be recorded (not even a failure). When the
            # store is back, the expired lease fails the message as
            # `worker_lost`; readers meanwhile get 503 and retry.
            log.error("message %s abandoned: the store is unavailable: %s", self.message_id, error)
        except ChatError as error:
            log.warning("message %s failed: %s", self.message_id, error)
            try:
                if self.store.fail(self.message_id, error.info()) is not None:
                    self.metrics.ended("failed", code=error.code.value)
            except StoreUnavailable:
                log.error("message %s: could not record its failure: the store is unavailable", self.message_id)
        except Exception:
            log.exception("message %s: backend %s crashed", self.message_id, getattr(self.backend, "name", "?"))
            self._fail(ErrorCode.INTERNAL)
        finally:
            timer.cancel()
            self.cancel_token.cancel("finished")  # also ends the watcher
            close = getattr(deltas, "close", None)
            if close is not None:
                try:
                    close()  # run the backend's own cleanup (close upstream requests)
                except Exception:
                    log.exception("message %s: backend cleanup failed", self.message_id)
            self.finished.set()
            if self._on_finish is not None:
                self._on_finish(self)
