"""One place builds the server's objects from its settings (docs/architecture.md, "Layers").

`build_services(settings)` makes every store and service once, in the order their
dependencies need, and hands each one what it uses through its constructor: nothing is set on
an object after it is made. The Flask app keeps the result as one `Services`
(`app.extensions["widget_server.services"]`); the blueprints read it through
`transport.services()`. Transport-free: a bench or a test builds the same graph without Flask.
"""

from __future__ import annotations

import functools
import logging
import threading
from dataclasses import dataclass

from .actions.service import load_actions
from .agents.accounts import AccountsError, AgentAccounts
from .agents.mail import Mailer
from .agents.sessions import SessionStore, create_sessions
from .agents.sign_in_delay import SignInDelays, create_sign_in_delays
from .attachments import create_attachment_store
from .attachments.store import AttachmentStore
from .backends.base import Backend, create_backend
from .chat.service import ChatService, listed_turn_attachments
from .dashboard import create_dashboard_store
from .dashboard.recorder import DashboardRecorder
from .errors import ApiError
from .handoff import create_handoff_store
from .handoff.satisfaction import SatisfactionService
from .handoff.service import HandoffService
from .handoff.store import SatisfactionEntry
from .identity.tokens import IdentityVerifier
from .metrics import Metrics
from .settings import ConfigError, Settings
from .stores import create_store
from .stores.base import Store
from .webhooks import create_webhook_queue
from .webhooks.delivery import DeliveryWorker
from .webhooks.publisher import NO_WEBHOOKS, Publisher
from .wire.webhooks import SatisfactionSubmitted

SERVICES_KEY = "widget_server.services"

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Services:
    """Everything a request may need, built once per application."""

    settings: Settings
    metrics: Metrics
    store: Store
    backend: Backend
    attachments: AttachmentStore
    chat: ChatService
    handoff: HandoffService
    # Visitors' answers to "How was your conversation?" (handoff/satisfaction.py); its
    # `on_submitted` is where a new answer is passed on.
    satisfaction: SatisfactionService
    accounts: AgentAccounts
    sessions: SessionStore
    sign_in_delays: SignInDelays
    mailer: Mailer
    # Verifies visitors' identity tokens (widget_server/identity/; unconfigured: refuses them).
    identity: IdentityVerifier
    # The owner dashboard's per-hour counts (widget_server/dashboard/): the services publish into
    # it, /admin reads its store.
    dashboard: DashboardRecorder
    # Set on SIGTERM (serving.py, ChatService.begin_shutdown): the answers' and the
    # conversations' streams end resumably at their next wake-up.
    stopping: threading.Event
    # Webhooks (widget_server/webhooks/): what the services queue, and this process's senders
    # (started by app.py once it serves); NO_WEBHOOKS and idle senders without WEBHOOK_URLS.
    webhooks: Publisher
    webhook_delivery: DeliveryWorker | None


def _satisfaction_submitted(
    webhooks: Publisher, dashboard: DashboardRecorder, conversation_id: str, answer: SatisfactionEntry
) -> None:
    """A visitor's new answer to "How was your conversation?" (handoff/satisfaction.py): the
    site owner's webhook (docs/webhooks.md) and the dashboard's count (docs/dashboard.md)."""
    webhooks.publish(
        conversation_id,
        SatisfactionSubmitted(handoff=answer["handoff"], rating=answer["rating"], comment=answer["comment"]),
    )
    dashboard.publish("satisfaction.submitted", conversation_id, {"rating": answer["rating"]})


def open_accounts(path: str) -> AgentAccounts:
    """The agents file; a corrupt one stops the server at start, with the file named."""
    accounts = AgentAccounts(path)
    try:
        accounts.current()
    except AccountsError as error:
        raise ConfigError(f"AGENTS_FILE: {error}") from None
    return accounts


def _forget_handoff(handoff: HandoffService, conversation_id: str) -> None:
    """The hand-off of a conversation the memory store forgets. Called inside the store's sweep,
    for whatever request ran it: a hand-off desk too busy to commit (HANDOFF_BUSY) is logged,
    never that request's error; the record then expires on its own (the hand-off store's ttl)."""
    try:
        handoff.forget(conversation_id)
    except ApiError as error:
        log.warning("conversation %s: its hand-off was not forgotten with it: %s", conversation_id, error)


def build_services(settings: Settings, *, console_url: str = "") -> Services:
    """The server's objects. `console_url`: the agent console's absolute URL, for the links in
    mail (PUBLIC_URL, the mount path, `/agent`)."""
    metrics = Metrics(enabled=settings.server.metrics)
    identity = IdentityVerifier(settings.identity)  # first: a bad key file stops the start here
    store = create_store(settings)
    backend = create_backend(settings.server.backend, settings)
    attachments = create_attachment_store(settings, store)
    accounts = open_accounts(settings.agents.agents_file)
    mailer = Mailer(settings.mail, metrics, console_url)
    stopping = threading.Event()
    # The visitors' words the dashboard keeps go no later after their day than conversations do.
    dashboard = DashboardRecorder(create_dashboard_store(store, settings.store.retention_seconds))
    webhooks, webhook_delivery = NO_WEBHOOKS, None
    if settings.webhooks.enabled:
        queue = create_webhook_queue(settings, store)
        webhooks = Publisher(queue, len(settings.webhooks.urls), settings.webhooks.events, metrics)
        webhook_delivery = DeliveryWorker(
            queue, settings.webhooks, webhooks, metrics, stopping=stopping, dashboard=dashboard
        )
    handoff = HandoffService(
        create_handoff_store(settings, store),
        store,
        settings,
        metrics,
        has_agents=accounts.anyone,
        on_left_message=mailer.mail_left_message,
        on_left_reply=mailer.mail_left_reply,
        stopping=stopping,
        turn_attachments=functools.partial(listed_turn_attachments, attachments),
        webhooks=webhooks,
        dashboard=dashboard,
    )
    listeners = getattr(store, "forget_listeners", None)
    if listeners is not None:
        # The memory store forgets an expired conversation on its own sweep: its hand-off (record,
        # events, queue place, left messages) goes with it, so nothing of it outlives its
        # retention (docs/privacy.md; tests/test_retention.py).
        listeners.append(functools.partial(_forget_handoff, handoff))
    chat = ChatService(
        store,
        backend,
        settings,
        metrics,
        attachment_store=attachments,
        handoff_enabled=handoff.enabled,
        # "Delete my conversation" removes its files too.
        deleted_listeners=(attachments.delete_conversation,),
        stopping=stopping,
        actions=load_actions(),
        webhooks=webhooks,
        dashboard=dashboard,
    )
    return Services(
        settings=settings,
        metrics=metrics,
        store=store,
        backend=backend,
        attachments=attachments,
        chat=chat,
        handoff=handoff,
        satisfaction=SatisfactionService(
            handoff, on_submitted=functools.partial(_satisfaction_submitted, webhooks, dashboard)
        ),
        accounts=accounts,
        sessions=create_sessions(store, settings.agents.session_seconds),
        sign_in_delays=create_sign_in_delays(store, metrics),
        mailer=mailer,
        identity=identity,
        dashboard=dashboard,
        stopping=stopping,
        webhooks=webhooks,
        webhook_delivery=webhook_delivery,
    )
