"""Running a backend in the background, decoupled from any HTTP connection.

The generator writes into the message's log; HTTP responses only read it.
So a client that disconnects does not stop the answer (its resume finds the
rest), a cancel does (the store records it, the token wakes the backend), and
the time limit always ends the run with a terminal event, even if the
backend hangs.
"""

from __future__ import annotations

import logging
import threading
from typing import Callable

from .actions import propose
from .backends.base import ActionProposal, Backend, CancelToken, Turn
from .errors import ChatError, ErrorCode, ErrorInfo
from .stores.base import Store

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
    ) -> None:
        self.store = store
        self.backend = backend
        self.turn = turn
        self.message_id = turn.message_id
        self.time_limit = time_limit
        self.cancel_token = CancelToken()
        self._on_finish = on_finish
        self.finished = threading.Event()

    def start(self) -> None:
        thread = threading.Thread(target=self.run, name=f"generate-{self.message_id}", daemon=True)
        thread.start()

    def cancel(self) -> None:
        """Stop the backend promptly (the caller records the cancelled state)."""
        self.cancel_token.cancel("cancelled")

    def _on_time_limit(self) -> None:
        if self.store.fail(self.message_id, ErrorInfo.for_code(ErrorCode.TIMEOUT)) is not None:
            log.info("message %s stopped by the %.1f s time limit", self.message_id, self.time_limit)
        self.cancel_token.cancel("timeout")

    # How often a run on a shared store looks for an ending written by
    # another process (a cancel sent to another host): the backend is told
    # within this delay even while it waits for its upstream.
    CANCEL_POLL_SECONDS = 0.2

    def _watch_for_ending(self) -> None:
        while not self.cancel_token.wait(self.CANCEL_POLL_SECONDS):
            info = self.store.message(self.message_id)
            if info is None or info.state.terminal:
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
        if getattr(self.store, "shared", False):
            threading.Thread(target=self._watch_for_ending, name=f"watch-{self.message_id}", daemon=True).start()
        deltas = None
        try:
            if self.store.start(self.message_id) is None:
                return  # cancelled (or failed) before it began
            deltas = self.backend.stream(self.turn, self.cancel_token)
            proposals = 0
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
                if delta and self.store.append_text(self.message_id, delta) is None:
                    return  # ended elsewhere (cancel, time limit): stop reading
            if not self.cancel_token.cancelled:
                self.store.complete(self.message_id)
        except ChatError as error:
            log.warning("message %s failed: %s", self.message_id, error)
            self.store.fail(self.message_id, error.info())
        except Exception:
            log.exception("message %s: backend %s crashed", self.message_id, getattr(self.backend, "name", "?"))
            self.store.fail(self.message_id, ErrorInfo.for_code(ErrorCode.INTERNAL))
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
