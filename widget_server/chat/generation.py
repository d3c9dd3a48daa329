"""Running a backend in the background, decoupled from any HTTP connection.

The generator writes into the message's log; HTTP responses only read it.
So a client that disconnects does not stop the answer (its resume finds the
rest), a cancel does (the store records it, the token wakes the backend), and
the time limit always ends the run with a terminal event, even if the
backend hangs.

On a shared store the run also holds the message's ownership lease: the
process's RunKeeper renews it (every third of the lease time) and looks for
endings written by another process (a cancel sent to another host), for all
the process's runs at once. If this process dies, the lease runs out and
readers elsewhere fail the message with `worker_lost` (stores/base.py). If the store itself becomes
unreachable, the run stops: nothing it generated could be recorded.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections.abc import Callable, Mapping
from typing import ClassVar

from ..actions.service import Action, load_actions, propose
from ..answer_parts import InvalidPart, Progress, Source, progress_text, source_json
from ..backends.base import ActionProposal, Backend, CancelToken, Turn
from ..dashboard.recorder import NO_EVENTS, EventPublisher
from ..errors import ChatError, ErrorCode, ErrorInfo
from ..messages import StreamEvent
from ..metrics import NO_METRICS, Metrics
from ..stores.base import Store, StoreUnavailable
from ..waiting import call_later, spawn, spawn_eagerly
from ..webhooks.publisher import NO_WEBHOOKS, Publisher
from ..wire.webhooks import MessageCompleted, MessageFailed

log = logging.getLogger(__name__)


class GenerationRun:
    def __init__(
        self,
        store: Store,
        backend: Backend,
        turn: Turn,
        *,
        time_limit: float,
        on_finish: Callable[[GenerationRun], None] | None = None,
        metrics: Metrics = NO_METRICS,
        actions: Mapping[str, Action] | None = None,
        webhooks: Publisher = NO_WEBHOOKS,
        dashboard: EventPublisher = NO_EVENTS,
    ) -> None:
        # The installed actions a proposal may name (ChatService's; all installed by default).
        self.actions = actions if actions is not None else load_actions()
        self.store = store
        self.backend = backend
        self.turn = turn
        self.message_id = turn.message_id
        self.time_limit = time_limit
        self.cancel_token = CancelToken()
        self._on_finish = on_finish
        self.metrics = metrics
        # The answer's ending is published by the run that wrote it (the store's compare-and-set
        # let exactly one ending in), where it is counted: once per answer (docs/webhooks.md,
        # docs/dashboard.md).
        self.webhooks = webhooks
        self.dashboard = dashboard
        # Milliseconds from the claim to the first stored delta (None until then).
        self.first_delta_ms: float | None = None
        self.accepted_at = time.monotonic()  # created right after the claim
        # When the store last took a write of this run: it was still running then, so the
        # RunKeeper need not ask (a refused write stops the run by itself).
        self.written_at = self.accepted_at
        self.finished = threading.Event()

    def start(self) -> None:
        name = f"generate-{self.message_id}"
        if self.store.shared:
            # Its first write is a round trip to Redis: the request would only wait for it.
            spawn(self.run, name)
        else:
            # The first delta is stored before the request goes on, so it leaves with the
            # response's headers even when hundreds of questions arrive at once
            # (waiting.spawn_eagerly says why).
            spawn_eagerly(self.run, name)

    def cancel(self) -> None:
        """Stop the backend promptly (the caller records the cancelled state)."""
        self.cancel_token.cancel("cancelled")

    def _fail(self, error: ErrorInfo) -> bool:
        """Fail the message with `error` unless it already ended; True if this did it."""
        try:
            if self.store.fail(self.message_id, error) is None:
                return False
        except StoreUnavailable as trouble:
            log.warning("message %s: could not record failure %s: %s", self.message_id, error.code, trouble)
            return False
        self.metrics.ended("failed", code=error.code)
        self.webhooks.publish(self.turn.conversation_id, MessageFailed(message_id=self.message_id, code=error.code))
        self.dashboard.publish(*self._failure_event(error.code))
        return True

    def _failure_event(self, code: str) -> tuple[str, str, dict[str, str]]:
        """A failure before any text is `message.failed`; after some, the visitor saw part of an
        answer: `message.incomplete` (docs/dashboard.md, "What is counted")."""
        kind = "message.failed" if self.first_delta_ms is None else "message.incomplete"
        return kind, self.turn.conversation_id, {"code": code, "question": self.turn.text}

    def _on_time_limit(self) -> None:
        if self._fail(ErrorInfo.for_code(ErrorCode.TIMEOUT)):
            log.info("message %s stopped by the %.1f s time limit", self.message_id, self.time_limit)
        self.cancel_token.cancel("timeout")

    def abandon(self) -> None:
        """This process is going away with the answer unfinished (shutdown
        grace over): end it now as `worker_lost`, rather than leaving its
        readers to wait for the lease to run out."""
        if self._fail(ErrorInfo.for_code(ErrorCode.WORKER_LOST)):
            log.warning("message %s abandoned at shutdown (worker_lost)", self.message_id)
        self.cancel_token.cancel("shutdown")

    def _propose(self, proposal: ActionProposal, count: int) -> StreamEvent | None:
        record = propose(
            self.actions, proposal, conversation_id=self.turn.conversation_id, message_id=self.message_id, count=count
        )
        return self.store.add_action(self.message_id, record)

    def run(self, first_delta_stored: Callable[[], None] = lambda: None) -> None:
        """Generate the answer; `first_delta_stored()` is called once its first delta is (or
        never, when the answer ends first)."""
        timer = call_later(self.time_limit, self._on_time_limit)
        keeper = RunKeeper.for_store(self.store) if self.store.shared else None
        if keeper is not None:
            keeper.add(self)
        deltas = None
        try:
            if self.store.start(self.message_id) is None:
                return  # cancelled (or failed) before it began
            deltas = self.backend.stream(self.turn, self.cancel_token)
            proposals = 0
            sources: list[dict] = []
            source_ids: set[str] = set()
            first_delta = True
            limit = self.store.max_answer_chars
            length = 0
            for delta in deltas:
                if self.cancel_token.cancelled:
                    return
                if not isinstance(delta, str):
                    # The other parts a backend may yield; text, the common case, is asked
                    # about once (bench/worker_path.py counts this loop per event).
                    if isinstance(delta, ActionProposal):
                        # Validated now (ChatError fails the answer); stored and
                        # announced only while the answer still runs; actionable
                        # only once it completes (widget_server.actions). After the
                        # deltas before it, in order.
                        if not self.store.settle(self.message_id) or self._propose(delta, proposals) is None:
                            return  # ended elsewhere: the proposal is never offered
                        proposals += 1
                    elif isinstance(delta, Source):
                        # Checked now (a source that cannot be shown fails the answer as the
                        # backend's mistake); listed with the completion (answer_parts.py).
                        sources.append(source_json(delta, source_ids))
                    elif isinstance(delta, Progress):
                        line = progress_text(delta)
                        if line is not None and self.store.add_progress(self.message_id, line) is None:
                            return  # ended elsewhere
                    else:
                        raise TypeError(f"backend yielded {type(delta).__name__}, expected str")
                    continue
                if not delta:
                    continue
                if limit and length + len(delta) > limit:
                    # Keep what fits, then fail: the partial text is flagged incomplete.
                    fits = delta[: limit - length]
                    if fits and self.store.append_text(self.message_id, fits) is None:
                        return
                    raise ChatError(ErrorCode.ANSWER_TOO_LONG, f"the answer passed MAX_ANSWER_CHARS ({limit})")
                length += len(delta)
                if not self.store.append_text_soon(self.message_id, delta):
                    return  # ended elsewhere (cancel, time limit): stop reading
                self.written_at = time.monotonic()
                if first_delta:
                    first_delta = False
                    waited = time.monotonic() - self.accepted_at
                    self.first_delta_ms = waited * 1000
                    self.metrics.first_delta(waited)
                    first_delta_stored()
            completed = None if self.cancel_token.cancelled else self.store.complete(self.message_id, sources)
            if completed is not None:
                self.metrics.ended("completed", seconds=time.monotonic() - self.accepted_at)
                self.webhooks.publish(
                    self.turn.conversation_id,
                    MessageCompleted(
                        message_id=self.message_id,
                        length=completed.payload["length"],
                        sha256=completed.payload["sha256"],
                    ),
                )
                self.dashboard.publish(
                    "message.completed",
                    self.turn.conversation_id,
                    {"time_to_first_delta_ms": self.first_delta_ms, "question": self.turn.text},
                )
        except StoreUnavailable as error:
            # Nothing more can be recorded (not even a failure). When the
            # store is back, the expired lease fails the message as
            # `worker_lost`; readers meanwhile get 503 and retry.
            log.error("message %s abandoned: the store is unavailable: %s", self.message_id, error)
        except ChatError as error:
            log.warning("message %s failed: %s", self.message_id, error)
            self._fail(error.info())
        except InvalidPart as error:
            log.error("message %s: backend %s yielded %s", self.message_id, getattr(self.backend, "name", "?"), error)
            self._fail(ErrorInfo.for_code(ErrorCode.INTERNAL))
        except Exception:
            log.exception("message %s: backend %s crashed", self.message_id, getattr(self.backend, "name", "?"))
            self._fail(ErrorInfo.for_code(ErrorCode.INTERNAL))
        finally:
            try:
                self.store.settle(self.message_id)  # the last delta's outcome, if not yet asked
            except StoreUnavailable:
                pass  # logged above, or the answer ended anyway
            if keeper is not None:
                keeper.remove(self)
            timer.cancel()
            self.cancel_token.cancel("finished")
            close = getattr(deltas, "close", None)
            if close is not None:
                try:
                    close()  # run the backend's own cleanup (close upstream requests)
                except Exception:
                    log.exception("message %s: backend cleanup failed", self.message_id)
            self.finished.set()
            if self._on_finish is not None:
                self._on_finish(self)


class RunKeeper:
    """One per shared store in a process: renews the leases of every answer
    this process generates, and notices endings written by other processes,
    for all of them in one pipelined round trip per tick.

    (A watcher per answer, polling on its own, was a large share of a worker's
    CPU at 1,000 streams in bench/load.py: round trips, not Redis, were the cost.)
    The thread runs only while there are answers to keep.
    """

    # A cancel sent to another host reaches a backend blocked on its
    # upstream within this; a streaming backend learns sooner (its next
    # delta is refused by the store).
    TICK_SECONDS = 0.5

    # Weak: a keeper goes with its store (tests make many).
    _keepers: ClassVar[weakref.WeakKeyDictionary[Store, RunKeeper]] = weakref.WeakKeyDictionary()
    _keepers_lock = threading.Lock()

    @classmethod
    def for_store(cls, store: Store) -> RunKeeper:
        with cls._keepers_lock:
            keeper = cls._keepers.get(store)
            if keeper is None:
                keeper = cls._keepers[store] = cls(store)
            return keeper

    def __init__(self, store: Store) -> None:
        self.store = store
        self.renew_every = max(0.2, getattr(store, "lease_seconds", 10.0) / 3)
        self._runs: dict[str, GenerationRun] = {}
        self._lock = threading.Lock()
        self._running = False

    def add(self, run: GenerationRun) -> None:
        with self._lock:
            self._runs[run.message_id] = run
            if self._running:
                return
            self._running = True
        spawn(self._loop, "run-keeper")

    def remove(self, run: GenerationRun) -> None:
        with self._lock:
            self._runs.pop(run.message_id, None)

    def _loop(self) -> None:
        renewed_at = time.monotonic()
        while True:
            time.sleep(self.TICK_SECONDS)
            with self._lock:
                runs = list(self._runs.values())
                if not runs:
                    self._running = False
                    return
            now = time.monotonic()
            renew = now - renewed_at >= self.renew_every
            if not renew:
                # A run whose last write the store took within the tick was running then: ask
                # only about the quiet ones (a backend waiting on its upstream). At N=2,000 the
                # question for every run, twice a second, was about one command per event.
                runs = [run for run in runs if now - run.written_at >= self.TICK_SECONDS]
                if not runs:
                    continue
            try:
                states = self.store.keep_runs([run.message_id for run in runs], renew=renew)
            except StoreUnavailable as error:
                log.warning("%d answer(s): store unavailable while generating: %s", len(runs), error)
                continue  # keep trying: a lease survives a short outage
            if renew:
                renewed_at = time.monotonic()
            for run in runs:
                state = states.get(run.message_id)
                if state is None or state.terminal:
                    run.cancel_token.cancel("ended elsewhere")
