"""The chat service: conversations, idempotent submits, streams, cancel, history.

Transport-free: it raises ApiError for client mistakes and returns byte
iterables for streams, so the Flask blueprint stays a thin adapter.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import hmac
import json
import logging
import secrets
import threading
import time
from collections.abc import Callable, Generator, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from ..actions.service import Action, load_actions
from ..backends.base import Backend, Turn, TurnAttachment
from ..dashboard.recorder import NO_EVENTS, EventPublisher
from ..errors import CONVERSATION_NOT_FOUND, MESSAGE_NOT_FOUND, ErrorCode, ErrorInfo
from ..faults import NO_FAULTS, FaultPlan
from ..feedback.service import record_json as feedback_json
from ..messages import EventKind, MessageState, StreamEvent
from ..metrics import NO_METRICS, Metrics
from ..protocol import (
    ASSISTANT_MESSAGE_PREFIX,
    CONVERSATION_PREFIX,
    USER_MESSAGE_PREFIX,
    is_id,
    new_id,
)
from ..settings import Settings
from ..stores.base import (
    Claim,
    Conversation,
    Exchange,
    MessageInfo,
    RequestConflict,
    SentAttachment,
    Store,
    StoreUnavailable,
    UnknownMessage,
    listed_exchanges,
)
from ..stream_loop import follow_log
from ..webhooks.publisher import NO_WEBHOOKS, Publisher
from ..wire.errors import (
    INVALID_LAST_EVENT_ID,
    NOT_FOUND,
    REQUEST_ID_CONFLICT,
    SERVER_BUSY,
    TOO_MANY_RUNNING,
    TOO_MANY_STREAMS,
)
from ..wire.webhooks import ConversationCreated, MessageFailed
from .generation import GenerationRun

if TYPE_CHECKING:
    from ..attachments.store import AttachmentStore
    from ..identity.identity import Identity

log = logging.getLogger(__name__)

# While a stream is quiet, how often it looks whether its reader is still connected
# (EventStream's `client_gone`): a reader that went away frees its slot within this long.
DISCONNECT_PROBE_SECONDS = 1.0


def consent_sha256(text: str) -> str:
    """What names a CONSENT_TEXT (docs/protocol.md, "Consent"): the SHA-256 of its UTF-8, in
    lowercase hex. The panel's config carries it; a new conversation's request sends it back,
    and a changed text has another, so an agreement to an older text is not taken for this one."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def request_fingerprint(text: str, attachments: tuple[SentAttachment, ...] = ()) -> str:
    """What a retry of a send must match: its text, and its files if it has any (a message
    without files keeps the fingerprint it always had, so a retry across an upgrade matches)."""
    body: dict[str, Any] = {"text": text}
    if attachments:
        body["attachments"] = [[attachment.attachment_id, attachment.description] for attachment in attachments]
    return hashlib.sha256(json.dumps(body, ensure_ascii=False).encode("utf-8")).hexdigest()


def turn_attachments(
    store: AttachmentStore | None, conversation_id: str, sent: tuple[SentAttachment, ...]
) -> tuple[TurnAttachment, ...]:
    """The files a turn carried, as its backend and its history see them. One gone from the
    store is left out: the store forgets a conversation's files only with the conversation,
    and a sent file cannot be deleted alone (attachments/api.py)."""
    if store is None or not sent:
        return ()
    found: list[TurnAttachment] = []
    for attachment in sent:
        meta = store.get(conversation_id, attachment.attachment_id)
        if meta is None:
            log.warning("attachment %s of %s is gone from the store", attachment.attachment_id, conversation_id)
            continue
        found.append(
            TurnAttachment(
                meta.attachment_id,
                meta.name,
                meta.type,
                meta.size,
                meta.sha256,
                attachment.description,
                opener=functools.partial(store.open, conversation_id, meta.attachment_id),
            )
        )
    return tuple(found)


def listed_turn_attachments(
    store: AttachmentStore | None, conversation_id: str, sent: tuple[SentAttachment, ...]
) -> list[dict[str, Any]]:
    """A turn's files as the history lists them (the console's transcript too)."""
    return [found.to_json() for found in turn_attachments(store, conversation_id, sent)]


def _never() -> bool:
    return False


class ChatService:
    """The chat: every dependency is passed in (widget_server/services.py builds the server's).

    `attachment_store`: where the files sent with messages are (widget_server/attachments/);
    the backend reads them through Turn.attachments, the history lists them. `handoff_enabled`:
    whether a turn may offer a person (Turn.offers_handoff; HandoffService.enabled).
    `deleted_listeners`: called with a deleted conversation's id once the store has forgotten
    it, so what is kept beside the store goes too. `stopping`: set on SIGTERM (serving.py), so
    streams end resumably at their next wake-up while new answers are still accepted until the
    listener closes; the hand-off's streams share it. `actions`: the installed actions
    (widget_server/actions/), loaded once per application.
    """

    def __init__(
        self,
        store: Store,
        backend: Backend,
        settings: Settings,
        metrics: Metrics = NO_METRICS,
        *,
        attachment_store: AttachmentStore | None = None,
        handoff_enabled: Callable[[], bool] = _never,
        deleted_listeners: tuple[Callable[[str], None], ...] = (),
        stopping: threading.Event | None = None,
        actions: Mapping[str, Action] | None = None,
        webhooks: Publisher = NO_WEBHOOKS,
        dashboard: EventPublisher = NO_EVENTS,
    ) -> None:
        self.store = store
        # Webhooks (widget_server/webhooks/): a new conversation and each answer's ending are
        # queued there; feedback/service.py queues a rating through it too.
        self.webhooks = webhooks
        # The owner dashboard's counts (widget_server/dashboard/): a new conversation, each
        # answer's ending (its run's), a cancel; feedback/service.py tells it of a rating.
        self.dashboard = dashboard
        self.actions = actions if actions is not None else load_actions()
        self.backend = backend
        self.settings = settings
        self.metrics = metrics
        self.attachment_store = attachment_store
        self.handoff_enabled = handoff_enabled
        self.deleted_listeners = deleted_listeners
        self.stopping = stopping if stopping is not None else threading.Event()
        self._lock = threading.Lock()
        # Serialise "may this conversation start another answer?" with the
        # claim that starts it, so racing new requests cannot all pass the
        # MAX_RUNNING_PER_CONVERSATION check before any of them is recorded.
        # One lock per conversation: a process-wide one queued every POST of
        # a worker behind the others' store round trips (bench/load.py's
        # first-delta p99 at 1,000 streams was far longer with it).
        self._claim_locks: dict[str, threading.Lock] = {}
        self._claim_waiters: dict[str, int] = {}
        self._runs: dict[str, GenerationRun] = {}
        self._open_streams = 0
        self._streams_by_conversation: dict[str, int] = {}
        self._streams_by_client: dict[str, int] = {}
        # Notified as a stream's slot is released (delete_conversation waits on it).
        self._stream_released = threading.Condition(self._lock)

    # -- conversations -----------------------------------------------------

    def create_conversation(self, identity: Identity | None = None, *, consent_sha256: str = "") -> tuple[str, str]:
        """A new conversation and its token; with a verified `identity`, it belongs to that
        subject too (docs/protocol.md, "Known visitors"). `consent_sha256`, the consent text the
        visitor agreed to (checked by the caller, chat/api.py), is recorded with it, at its
        creation."""
        conversation_id = new_id(CONVERSATION_PREFIX)
        token = secrets.token_urlsafe(32)
        now = time.time()
        self.store.create_conversation(
            Conversation(
                conversation_id,
                _hash_token(token),
                now,
                subject=identity.subject if identity else "",
                name=identity.name if identity else "",
                email=identity.email if identity else "",
                consent_sha256=consent_sha256,
                consented_at=now if consent_sha256 else 0.0,
            )
        )
        self.webhooks.publish(conversation_id, ConversationCreated(identified=identity is not None))
        self.dashboard.publish("conversation.created", conversation_id, {})
        return conversation_id, token

    def authorize(self, conversation_id: str, token: str | None) -> Conversation:
        """The conversation, or a 404 that says nothing about whether it exists."""
        known = token and is_id(conversation_id)
        conversation = self.store.get_conversation(conversation_id) if known else None
        if conversation is None or not hmac.compare_digest(conversation.token_hash, _hash_token(token or "")):
            raise NOT_FOUND(CONVERSATION_NOT_FOUND)
        return conversation

    def authorize_subject(self, conversation_id: str, subject: str) -> Conversation:
        """The conversation if `subject` (a verified identity's) owns it; else the very 404 a
        wrong token gets: another subject's conversation and an anonymous one look unknown
        (docs/security.md, "Known visitors")."""
        conversation = self.store.get_conversation(conversation_id) if subject and is_id(conversation_id) else None
        if conversation is None or not conversation.subject:
            raise NOT_FOUND(CONVERSATION_NOT_FOUND)
        if not hmac.compare_digest(conversation.subject.encode("utf-8"), subject.encode("utf-8")):
            raise NOT_FOUND(CONVERSATION_NOT_FOUND)
        return conversation

    def note_activity(self, conversation: Conversation) -> None:
        """A new question in `conversation`: first in its subject's list. Best effort: the
        answer has started, and a list a moment stale is no reason to fail its request."""
        if not conversation.subject:
            return
        try:
            self.store.touch_subject_conversation(conversation, time.time())
        except StoreUnavailable:
            log.warning(
                "conversation %s: its owner's list was not updated (store unavailable)", conversation.conversation_id
            )

    def _message_in(self, conversation_id: str, message_id: str) -> MessageInfo:
        info = self.store.message(message_id)
        if info is None or info.conversation_id != conversation_id:
            raise NOT_FOUND(MESSAGE_NOT_FOUND)
        return self.reap_if_lost(info)

    def reap_if_lost(self, info: MessageInfo) -> MessageInfo:
        """Fail a message whose generating worker died (its lease ran out).

        Whoever looks first does it (a reader, a state or history request, a
        new message in the conversation), once: the store's compare-and-set.
        """
        if info.state.terminal or not self.reap_lost(info.message_id):
            return info
        return self.store.message(info.message_id) or info

    def reap_lost(self, message_id: str) -> bool:
        """True if this call failed the message as `worker_lost` (see reap_if_lost)."""
        if not self.store.shared:
            return False
        with self._lock:
            if message_id in self._runs:
                # Generating here, so not lost, whatever its lease says: a
                # worker starved of CPU may renew late, but it is alive.
                return False
        if self.store.reap_if_lost(message_id, ErrorInfo.for_code(ErrorCode.WORKER_LOST)) is None:
            return False
        log.warning("message %s failed: its worker's lease ran out (worker_lost)", message_id)
        self.metrics.ended("failed", code=ErrorCode.WORKER_LOST.value)
        # Its conversation is read only when webhooks are on: a reap costs nothing more without.
        info = self.store.message(message_id) if self.webhooks.enabled else None
        if info is not None:
            self.webhooks.publish(
                info.conversation_id, MessageFailed(message_id=message_id, code=ErrorCode.WORKER_LOST.value)
            )
        return True

    # -- submitting --------------------------------------------------------

    def submit(
        self,
        conversation_id: str,
        request_id: str,
        text: str,
        *,
        server_url: str = "",
        attachments: tuple[SentAttachment, ...] = (),
        context: tuple[tuple[str, str | int | float | bool], ...] = (),
    ) -> tuple[str, bool]:
        """Claim `request_id`; start generating only if the claim is new.

        The running limit is checked here, atomically with the claim (the
        transport has taken the stream slot first, and frees it on a refusal).
        `server_url` is the scheme://host (and mount path) the
        question was sent to; the backend reads it from the Turn. `attachments`
        are files of this conversation's attachment store (the transport has
        checked that each exists here).
        """
        return self.start_claimed(
            conversation_id,
            request_id,
            lambda: self.store.claim_request(
                conversation_id,
                request_id,
                request_fingerprint(text, attachments),
                text,
                new_id(USER_MESSAGE_PREFIX, conversation_id),
                new_id(ASSISTANT_MESSAGE_PREFIX, conversation_id),
                attachments,
                context,
            ),
            server_url=server_url,
        )

    @contextlib.contextmanager
    def _claim_lock(self, conversation_id: str) -> Iterator[None]:
        with self._lock:
            lock = self._claim_locks.setdefault(conversation_id, threading.Lock())
            self._claim_waiters[conversation_id] = self._claim_waiters.get(conversation_id, 0) + 1
        try:
            with lock:
                yield
        finally:
            with self._lock:
                self._claim_waiters[conversation_id] -= 1
                if not self._claim_waiters[conversation_id]:  # the last one out forgets it
                    del self._claim_waiters[conversation_id]
                    del self._claim_locks[conversation_id]

    def running_count(self, conversation_id: str, exchanges: list[Exchange] | None = None) -> int:
        count = 0
        for exchange in self.store.exchanges(conversation_id) if exchanges is None else exchanges:
            message_id = exchange.assistant_message_id
            state = self.store.message_state(message_id)
            if state is None or state.terminal or self.reap_lost(message_id):
                continue
            count += 1
        return count

    def check_can_start(self, conversation_id: str, request_id: str) -> None:
        """429 if this conversation already has too many answers generating.

        A retry of a request id already claimed is always allowed: it starts
        nothing, it only reads.
        """
        exchanges = self.store.exchanges(conversation_id)  # one read for both questions
        if any(e.request_id == request_id for e in exchanges):
            return
        if self.running_count(conversation_id, exchanges) >= self.settings.chat.max_running_per_conversation:
            raise TOO_MANY_RUNNING(
                "An answer is still being generated in this conversation. Wait for it or stop it, then send again.",
                retry_after=2,
            )

    def _forget_run(self, run: GenerationRun) -> None:
        with self._lock:
            self._runs.pop(run.message_id, None)

    # -- shutdown ----------------------------------------------------------

    def begin_shutdown(self) -> None:
        """Streams end resumably at their next wake-up (at most a poll away)."""
        self.stopping.set()

    @property
    def shutting_down(self) -> bool:
        return self.stopping.is_set()

    def finish_runs(self, timeout: float) -> int:
        """Let answers being generated finish for up to `timeout` s; end the
        rest as `worker_lost`. Returns how many were abandoned."""
        deadline = time.monotonic() + timeout
        with self._lock:
            runs = list(self._runs.values())
        for run in runs:
            run.finished.wait(max(0.0, deadline - time.monotonic()))
        abandoned = [run for run in runs if not run.finished.is_set()]
        for run in abandoned:
            run.abandon()
        return len(abandoned)

    # -- cancel and history ------------------------------------------------

    def cancel(self, conversation_id: str, message_id: str) -> MessageState:
        self._message_in(conversation_id, message_id)
        # Refused without effect if already terminal: counted once, cluster-wide.
        if self.store.cancel(message_id) is not None:
            self.metrics.cancel_request("cancelled")
            self.metrics.ended("cancelled")
            self.dashboard.publish("message.cancelled", conversation_id, {})
        else:
            self.metrics.cancel_request("already_ended")
        with self._lock:
            run = self._runs.get(message_id)
        if run is not None:
            run.cancel()
        info = self.store.message(message_id)
        return info.state if info else MessageState.CANCELLED

    def history(self, conversation_id: str) -> list[dict[str, Any]]:
        """User turns and their answers, except failed and cancelled exchanges.

        Failed turns are kept in the store for diagnostics but never shown: an
        error is never saved into history as if it were an answer (docs/design.md,
        "Errors that say what to do next"). A cancelled
        exchange is the user's "never mind": not shown after a reload and not
        given to the backend. An answer still running is listed with its
        state so a reloaded client can resume it. A regenerated or edited turn
        is listed once, as its replacement (stores/base.py listed_exchanges).
        """
        messages: list[dict[str, Any]] = []
        for exchange, info in self.listed_exchanges(conversation_id):
            user: dict[str, Any] = {
                "message_id": exchange.user_message_id,
                "role": "user",
                "text": exchange.user_text,
                "state": "completed",
            }
            if exchange.attachments:  # docs/protocol.md, "Sending files with a message"
                user["attachments"] = [
                    found.to_json() for found in self.turn_attachments(conversation_id, exchange.attachments)
                ]
            messages.append(user)
            answer: dict[str, Any] = {
                "message_id": info.message_id,
                "role": "assistant",
                "text": info.text,
                "state": info.state.value,
            }
            if info.sources:  # docs/protocol.md, "Sources"
                answer["sources"] = [dict(source) for source in info.sources]
            messages.append(answer)
        return self._with_feedback(conversation_id, messages)

    def turn_attachments(self, conversation_id: str, sent: tuple[SentAttachment, ...]) -> tuple[TurnAttachment, ...]:
        return turn_attachments(self.attachment_store, conversation_id, sent)

    def message_state(self, conversation_id: str, message_id: str) -> dict[str, Any]:
        info = self._message_in(conversation_id, message_id)
        body: dict[str, Any] = {"message_id": message_id, "state": info.state.value, "last_seq": info.last_seq}
        if info.error is not None:
            body["error"] = info.error.to_json()
        return body

    # -- streaming ---------------------------------------------------------

    def check_resume_position(self, conversation_id: str, message_id: str, after_seq: int) -> None:
        info = self._message_in(conversation_id, message_id)
        if after_seq > info.last_seq:
            raise INVALID_LAST_EVENT_ID(
                f"Last-Event-ID names sequence {after_seq}, but this message has only reached {info.last_seq}.",
            )

    def reserve_stream(self, conversation_id: str, client: str = "") -> StreamSlot:
        """Take one of the limited stream slots, or refuse with 503/429.

        `client` is the client address: one address may hold at most
        MAX_STREAMS_PER_CLIENT of this process's slots, so a single client
        cannot take every slot from everyone else.
        """
        with self._lock:
            if self._open_streams >= self.settings.chat.max_streams:
                raise SERVER_BUSY("The server is at its limit of open streams. Try again shortly.", retry_after=5)
            per_client = self._streams_by_client.get(client, 0)
            if per_client >= self.settings.chat.max_streams_per_client:
                raise TOO_MANY_STREAMS(
                    "Too many open streams from your connection. Close one, then try again.",
                    retry_after=2,
                    details={"limit": "client"},
                )
            per_conversation = self._streams_by_conversation.get(conversation_id, 0)
            if per_conversation >= self.settings.chat.max_streams_per_conversation:
                raise TOO_MANY_STREAMS(
                    "Too many open streams for this conversation. Close one, then try again.",
                    retry_after=2,
                )
            self._open_streams += 1
            self._streams_by_conversation[conversation_id] = per_conversation + 1
            self._streams_by_client[client] = per_client + 1
        self.metrics.stream_opened()
        return StreamSlot(self, conversation_id, client)

    def _release_stream(self, conversation_id: str, client: str) -> None:
        self.metrics.stream_closed()
        with self._lock:
            self._open_streams -= 1
            for counts, key in ((self._streams_by_conversation, conversation_id), (self._streams_by_client, client)):
                remaining = counts.get(key, 1) - 1
                if remaining:
                    counts[key] = remaining
                else:
                    counts.pop(key, None)
            self._stream_released.notify_all()

    @property
    def open_streams(self) -> int:
        return self._open_streams

    # -- claims that start an answer: sends and revisions (widget_server/revisions/)

    def start_claimed(
        self, conversation_id: str, request_id: str, claim: Callable[[], Claim], *, server_url: str = ""
    ) -> tuple[str, bool]:
        """Run `claim` (a store claim of a new exchange); start generating only if it is new.

        The running limit is checked here, atomically with the claim (the
        transport has taken the stream slot first, and frees it on a refusal).
        `server_url` is the scheme://host (and mount path) the
        question was sent to; the backend reads it from the Turn.
        """
        try:
            with self._claim_lock(conversation_id):
                self.check_can_start(conversation_id, request_id)
                claimed = claim()
        except RequestConflict as conflict:
            raise REQUEST_ID_CONFLICT(
                "This request_id was already used with a different message. "
                "Generate a new request_id for a new message; reuse one only to retry the same message.",
                details={"message_id": conflict.exchange.assistant_message_id},
            ) from None
        except UnknownMessage:
            raise NOT_FOUND(CONVERSATION_NOT_FOUND) from None
        exchange = claimed.exchange
        message_id = exchange.assistant_message_id
        if claimed.created:
            run = GenerationRun(
                self.store,
                self.backend,
                Turn(
                    exchange.user_text,
                    claimed.history,
                    conversation_id,
                    message_id,
                    server_url=server_url,
                    offers_handoff=self.handoff_enabled(),
                    attachments=self.turn_attachments(conversation_id, exchange.attachments),
                    context=dict(exchange.context),
                ),
                time_limit=self.settings.chat.message_time_limit_seconds,
                on_finish=self._forget_run,
                metrics=self.metrics,
                actions=self.actions,
                webhooks=self.webhooks,
                dashboard=self.dashboard,
            )
            with self._lock:
                self._runs[message_id] = run
            run.start()
        return message_id, claimed.created

    def listed_exchanges(self, conversation_id: str) -> list[tuple[Exchange, MessageInfo]]:
        """The exchanges the history lists (stores/base.py listed_exchanges), with their
        answers; an answer whose worker died is failed first (reap_if_lost), so not listed."""
        infos: dict[str, MessageInfo] = {}

        def state_of(message_id: str) -> MessageState | None:
            info = self.store.message(message_id)
            if info is None:
                return None
            info = infos[message_id] = self.reap_if_lost(info)
            return info.state

        listed = listed_exchanges(self.store.exchanges(conversation_id), state_of)
        return [(exchange, infos[exchange.assistant_message_id]) for exchange, _ in listed]

    # -- feedback in the history, and deleting a conversation (docs/protocol.md, "History") --

    def _with_feedback(self, conversation_id: str, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Each assistant entry gains `feedback`: its stored record, or None (docs/protocol.md,
        "Feedback"), so a reloaded panel shows the visitor's rating again."""
        records = self.store.conversation_feedback(conversation_id)
        for entry in messages:
            if entry["role"] == "assistant":
                record = records.get(entry["message_id"])
                entry["feedback"] = feedback_json(record) if record is not None else None
        return messages

    # How long a delete waits for this process's runs of the conversation to stop after
    # their cancel (a backend is woken at once; a run that ignores its token stops at its
    # next write, which the store refuses once the keys are gone).
    DELETE_RUN_WAIT_SECONDS = 5.0
    # ... and for its open streams to read the cancelled ending (see delete_conversation).
    DELETE_STREAM_DRAIN_SECONDS = 1.0

    def delete_conversation(self, conversation_id: str) -> None:
        """Cancel the conversation's running answers, then forget all of it at once
        (store.delete_conversation). The caller has checked the token."""
        with self._claim_lock(conversation_id):  # no new answer starts here meanwhile
            stopping: list[GenerationRun] = []
            for exchange in self.store.exchanges(conversation_id):
                message_id = exchange.assistant_message_id
                state = self.store.message_state(message_id)
                if state is not None and not state.terminal:
                    self.cancel(conversation_id, message_id)  # the same path as Stop: counted, backend woken
                with self._lock:
                    run = self._runs.get(message_id)
                if run is not None:
                    stopping.append(run)
            # Wait for this process's runs to end, so none writes (or renews a lease)
            # after the keys are gone.
            deadline = time.monotonic() + self.DELETE_RUN_WAIT_SECONDS
            for run in stopping:
                run.finished.wait(max(0.0, deadline - time.monotonic()))
            if stopping:
                # Let this process's open streams of the conversation read the
                # message.cancelled just written before its log goes: a reader
                # woken after the delete would end without a terminal event
                # (tests/test_api_delete_conversation.py). Bounded: a stream of
                # another kind (the hand-off's) may stay open.
                drained = min(deadline, time.monotonic() + self.DELETE_STREAM_DRAIN_SECONDS)
                with self._stream_released:
                    self._stream_released.wait_for(
                        lambda: not self._streams_by_conversation.get(conversation_id),
                        max(0.0, drained - time.monotonic()),
                    )
            # The conversation's words copied into the owner dashboard go first: if they cannot,
            # the deletion is refused whole (a 503) and the visitor may try again.
            self.dashboard.forget_texts(
                [exchange.user_text for exchange in self.store.exchanges(conversation_id)],
                [record.comment for record in self.store.conversation_feedback(conversation_id).values()],
            )
            self.store.delete_conversation(conversation_id)
            for listener in self.deleted_listeners:
                listener(conversation_id)


class StreamSlot:
    """One reserved stream slot; released exactly once."""

    def __init__(self, service: ChatService, conversation_id: str, client: str = "") -> None:
        self.service = service
        self.conversation_id = conversation_id
        self.client = client
        self._released = False

    def release(self) -> None:
        if not self._released:
            self._released = True
            self.service._release_stream(self.conversation_id, self.client)


class EventStream:
    """A WSGI byte iterable reading one message's log from a position.

    `close()` releases the stream's slot even if iteration never started
    (WSGI servers always call it), which a plain generator cannot promise;
    the slot is also released as soon as the terminal event is sent, so a
    server that fails to call `close()` (Werkzeug's development server, when
    the client resets the connection) cannot leak it.

    `client_gone` (transport.disconnect_probe) says whether the reader has
    closed its connection. A quiet stream asks it every
    DISCONNECT_PROBE_SECONDS and ends when it says yes, so a reader that
    went away frees its slot within about a second instead of at the next
    heartbeat's failed write (up to HEARTBEAT_SECONDS, or twice that: the
    first write after a close usually still succeeds). Without it, the
    stream waits a whole poll at a time, as before.
    """

    def __init__(
        self,
        slot: StreamSlot,
        message_id: str,
        after_seq: int,
        *,
        snapshot: bool = False,
        faults: FaultPlan = NO_FAULTS,
        client_gone: Callable[[], bool] | None = None,
    ) -> None:
        self._slot = slot
        self._client_gone = client_gone
        self._service = slot.service
        self.message_id = message_id
        self.after_seq = after_seq
        self.snapshot = snapshot or faults.snapshot
        self.faults = faults
        # Looked at once: FaultPlan's truth is a Python call, and the loop asks for every event.
        self._faults = faults if faults else None
        self._sent = 0  # events sent, for the fault plan's drop_after
        self._poll = self._poll_seconds()
        self._iterator = self._generate()

    def __iter__(self) -> Iterator[bytes]:
        # The generator itself: the server's loop resumes it directly, without a call of
        # __next__ and a generator around it for every event it writes (bench/load.py).
        # close() is still this object's, which the server calls.
        return self._iterator

    def __next__(self) -> bytes:
        return next(self._iterator)

    def close(self) -> None:
        self._iterator.close()
        self._slot.release()

    def _generate(self) -> Generator[bytes, None, None]:
        settings = self._service.settings
        try:
            yield from follow_log(
                self, self.after_seq, retry_ms=settings.chat.retry_ms, heartbeat_seconds=settings.chat.heartbeat_seconds
            )
        finally:
            self._slot.release()

    def _poll_seconds(self) -> float:
        """How long a stream waits for events before looking around. On a
        shared store it looks for a dead worker's expired lease and for a
        shutdown (only shared-store streams end at SIGTERM: serving.py);
        otherwise only the heartbeat is due. A heartbeat is sent only when
        HEARTBEAT_SECONDS pass without bytes."""
        settings = self._service.settings
        if not self._service.store.shared:
            return settings.chat.heartbeat_seconds
        return min(settings.chat.heartbeat_seconds, max(1.0, settings.store.worker_lease_seconds / 4))

    # -- the LogSource of stream_loop.follow_log ----------------------------------

    def begin(self, after_seq: int) -> tuple[bytes, int] | None:
        store = self._service.store
        # A reader already holding the terminal event gets nothing more: end now instead of
        # sending heartbeats forever (an EventSource that reconnects after message.completed
        # would otherwise hold a stream slot for as long as it stays open). Checking once
        # suffices: a message that ends later has last_seq > seq, so the loop reads it. From
        # sequence 0 there is nothing to check (every message that ended has events after 0,
        # and the read of one that is gone ends the stream): a new answer's stream goes
        # without this store read.
        if after_seq:
            info = store.message(self.message_id)
            if info is None or (info.state.terminal and after_seq >= info.last_seq):
                return None
        if self.snapshot:
            # Asked for (after a client saw a gap): the whole text so far, then live events
            # after it; never deltas guessed across a gap.
            snapshot = store.snapshot(self.message_id)
            if snapshot is not None and snapshot.seq >= after_seq:
                self._service.metrics.snapshot_served()
                return snapshot.encode(), snapshot.seq
        return b"", after_seq

    @property
    def stopping(self) -> threading.Event:
        # Once set, this worker is stopping: close now, without a terminal event, so the client
        # resumes on another worker (or on this server once restarted) exactly where it stopped.
        return self._service.stopping

    def read(self, seq: int) -> tuple[bytes, int, bool] | None:
        """The events after `seq`, waiting up to a poll for some. With `client_gone`, the wait is
        cut into DISCONNECT_PROBE_SECONDS, and the stream ends as soon as the reader is found gone
        after a quiet one."""
        store = self._service.store
        try:
            if self._client_gone is None:
                events = store.read_events(self.message_id, seq, self._poll)
            else:
                deadline = time.monotonic() + self._poll
                while True:
                    remaining = deadline - time.monotonic()
                    events = store.read_events(self.message_id, seq, max(0.0, min(remaining, DISCONNECT_PROBE_SECONDS)))
                    if events:
                        break
                    if self._client_gone():
                        return b"", seq, True  # the reader disconnected: free the slot now
                    if remaining <= DISCONNECT_PROBE_SECONDS:
                        break
        except UnknownMessage:
            return b"", seq, True
        if not events:
            return None
        last: StreamEvent = events[-1]
        if events[0].kind is EventKind.SNAPSHOT:  # the log was trimmed past our position
            self._service.metrics.snapshot_served()
        if self._faults is not None:
            return self._read_with_faults(events, self._faults)
        if len(events) == 1:
            return last.encode(), last.seq, last.kind.terminal  # a live reader's usual read: no join
        return b"".join(event.encode() for event in events), last.seq, last.kind.terminal

    def _read_with_faults(self, events: list[StreamEvent], faults: FaultPlan) -> tuple[bytes, int, bool]:
        """The events as the fault plan bends them (faults.py): skipped, doubled, or the stream
        cut without a terminal event after `drop_after` of them, so the client must resume."""
        parts: list[bytes] = []
        for event in events:
            if event.seq in faults.skip:
                continue
            parts.append(event.encode() * (2 if event.seq in faults.duplicate else 1))
            self._sent += 1
            if faults.drop_after is not None and self._sent >= faults.drop_after and not event.kind.terminal:
                return b"".join(parts), event.seq, True
        return b"".join(parts), events[-1].seq, events[-1].kind.terminal

    def quiet(self, seq: int) -> bool:
        self._service.reap_lost(self.message_id)  # its failure event is read next time round
        return True

    def unavailable(self, error: StoreUnavailable) -> None:
        log.warning("stream of %s ended: the store is unavailable: %s", self.message_id, error)
        self._service.metrics.store_unavailable()
