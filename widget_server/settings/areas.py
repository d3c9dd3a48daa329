"""The server's settings, one frozen dataclass per area, each field declared once with
`setting()` (its name, parser, default, help, bounds). A backend or an attachment store
declares its own the same way, beside its code (`settings_class`, widget_server/plugins.py).
Every setting is documented in docs/configuration.md (tests/test_docs.py checks)."""

from __future__ import annotations

from dataclasses import dataclass

from .. import theme
from ..handoff.hours import ALWAYS_OPEN, WeeklyHours, parse_hours, parse_timezone
from ..wire.webhooks import WEBHOOK_EVENTS
from .declaring import setting
from .parsing import (
    parse_attachment_store,
    parse_attachment_types,
    parse_attachments_dir,
    parse_bool,
    parse_consent_text,
    parse_duration,
    parse_email,
    parse_float,
    parse_greeting,
    parse_handoff,
    parse_hosts,
    parse_int,
    parse_launcher_label,
    parse_optional_duration,
    parse_optional_url,
    parse_origins,
    parse_public_url,
    parse_rate_limits,
    parse_starters,
    parse_str,
    parse_webhook_events,
    parse_webhook_urls,
)


@dataclass(frozen=True)
class ServerSettings:
    """The server process: what it listens on, how it runs, its switches."""

    host: str = setting("HOST", parse_str, "127.0.0.1", "Address the server listens on.")
    port: int = setting("PORT", parse_int, 8000, "TCP port the server listens on (0 picks a free one).", 0, 65535)
    workers: int = setting(
        "WORKERS", parse_int, 1, "Worker processes for `widget-server` (the memory store allows only 1).", 1, 64
    )
    worker_connections: int = setting(
        "WORKER_CONNECTIONS", parse_int, 2000, "Concurrent connections each gevent worker accepts.", 10, 100_000
    )
    env: str = setting(
        "ENV",
        parse_str,
        "development",
        "`production` refuses test and QA switches (fault injection, the QA page) and the demo backend (unless ALLOW_DEMO_IN_PRODUCTION), and requires PUBLIC_URL.",
        choices=("development", "production"),
    )
    assets: str = setting(
        "ASSETS",
        parse_str,
        "minified",
        "Which copies of `static/` are served: `minified` (static/min/, built from the sources by esbuild; what the byte budgets measure) or `source` (the commented sources, for reading them in a browser's tools).",
        choices=("minified", "source"),
    )
    shutdown_grace_seconds: float = setting(
        "SHUTDOWN_GRACE_SECONDS",
        parse_float,
        20.0,
        "On SIGTERM, how long a worker may take to stop: open streams end at once (resumably), answers being generated get this long to finish, then fail with `worker_lost`.",
        1,
        3600,
    )
    log_level: str = setting(
        "LOG_LEVEL",
        lambda raw: parse_str(raw).upper(),
        "INFO",
        "Server log level.",
        choices=("DEBUG", "INFO", "WARNING", "ERROR"),
    )
    metrics: bool = setting(
        "METRICS",
        parse_bool,
        True,
        "Serve Prometheus metrics at `/metrics` (restrict it to your monitoring network at the proxy).",
    )
    metrics_token: str = setting(
        "METRICS_TOKEN",
        parse_str,
        "",
        "Bearer token `/metrics` requires (`Authorization: Bearer …`); with ENV=production, `/metrics` is served only when it is set.",
    )
    faults: bool = setting(
        "FAULTS",
        parse_bool,
        False,
        "Allow fault injection (`X-Chat-Faults`) for tests and QA; refused when ENV is production.",
    )
    qa: bool = setting(
        "QA",
        parse_bool,
        False,
        "Serve the QA page for screen-reader testers at `/qa`; refused when ENV is production.",
    )
    backend: str = setting(
        "BACKEND", parse_str, "demo", "Answer backend: a registered name (`demo`) or `package.module:Class`."
    )
    allow_demo_in_production: bool = setting(
        "ALLOW_DEMO_IN_PRODUCTION",
        parse_bool,
        False,
        "Allow the `demo` backend when ENV is production (refused at start otherwise).",
    )


@dataclass(frozen=True)
class WebSettings:
    """The HTTP edge: who may embed and call, the public address, request bodies."""

    proxy_hops: int = setting(
        "PROXY_HOPS",
        parse_int,
        0,
        "Reverse proxies in front of the server that set X-Forwarded-For; the client address for rate limits is taken that many hops back (0: the socket's peer).",
        0,
        10,
    )
    public_url: str = setting(
        "PUBLIC_URL",
        parse_public_url,
        "",
        "The origin visitors reach the server at (https://chat.example.com): every absolute URL the server writes is built on it, never on the request's Host; required when ENV is production.",
    )
    trusted_hosts: tuple[str, ...] = setting(
        "TRUSTED_HOSTS",
        parse_hosts,
        (),
        "With ENV=production, other Host names accepted besides PUBLIC_URL's (e.g. the address a load balancer's health check uses), space separated; any other Host is refused with 400.",
    )
    embed_origins: tuple[str, ...] = setting(
        "EMBED_ORIGINS",
        parse_origins,
        ("'self'",),
        "Origins allowed to embed the chat panel, space separated, or `*` (any; logged as a warning).",
    )
    api_origins: tuple[str, ...] = setting(
        "API_ORIGINS",
        parse_origins,
        (),
        "Other origins whose pages may call /api/v1 from a browser, space separated (empty: only the server's own pages).",
    )
    max_body_bytes: int = setting(
        "MAX_BODY_BYTES", parse_int, 65536, "Largest request body, in bytes (larger: 413).", 256, 16_777_216
    )
    body_read_timeout_seconds: float = setting(
        "BODY_READ_TIMEOUT_SECONDS",
        parse_float,
        10.0,
        "Longest time a request's body may take to arrive, whole (then: 408, the connection closed).",
        0.5,
        3600,
    )


# Retention's bounds: a minute at least (a conversation must outlive its answers), three years
# at most (GDPR Art. 5(1)(e): kept no longer than needed; a site wanting longer exports).
RETENTION_MIN_SECONDS = 60
RETENTION_MAX_SECONDS = 3 * 365 * 86400


@dataclass(frozen=True)
class StoreSettings:
    """Where conversations and answer logs live, and for how long."""

    url: str = setting(
        "STORE",
        parse_str,
        "memory",
        "Where conversations and message logs live: `memory` (one worker process only), `redis://HOST:PORT/DB` (shared by workers and hosts) or `redis+cluster://HOST:PORT[,HOST:PORT…]` (a Redis Cluster, from seed nodes).",
    )
    log_max_events: int = setting(
        "LOG_MAX_EVENTS",
        parse_int,
        4096,
        "Events kept per message for resume; an older position gets a snapshot.",
        1,
        10_000_000,
    )
    finished_log_grace_seconds: float = setting(
        "FINISHED_LOG_GRACE_SECONDS",
        parse_float,
        30.0,
        "How long a finished answer keeps its whole event log (a reader catching up gets the exact events); then the log is compacted to the text and the terminal event, and a resume gets a snapshot and the ending. 0: at the end.",
        0,
        86400,
    )
    memory_max_bytes: int = setting(
        "MEMORY_STORE_MAX_BYTES",
        parse_int,
        256 * 1024 * 1024,
        "Memory store: about how many bytes all conversations may hold; beyond it the least recently used conversations with no answer running are forgotten (404, like expired ones).",
        65536,
        1 << 40,
    )
    retention_seconds: float = setting(
        "RETENTION",
        parse_duration,
        86400.0,
        "How long an anonymous conversation is kept after its last use: everything of it (its messages, feedback, attachments, hand-off and left messages) is gone after it (memory: on the next sweep; Redis: key expiry, renewed on use). A duration: `30d`, `12h`, `90m` or seconds.",
        RETENTION_MIN_SECONDS,
        RETENTION_MAX_SECONDS,
    )
    identified_retention: float | None = setting(
        "IDENTIFIED_RETENTION",
        parse_optional_duration,
        None,
        "How long a known visitor's conversation (one started with an identity token) is kept after its last use, and their list of conversations; empty: RETENTION.",
        RETENTION_MIN_SECONDS,
        RETENTION_MAX_SECONDS,
    )
    deprecated_conversation_ttl_seconds: float | None = setting(
        "CONVERSATION_TTL_SECONDS",
        parse_optional_duration,
        None,
        "Deprecated: the old name of RETENTION, still read (a start-up error when both are set and differ).",
        RETENTION_MIN_SECONDS,
        RETENTION_MAX_SECONDS,
    )
    worker_lease_seconds: float = setting(
        "WORKER_LEASE_SECONDS",
        parse_float,
        10.0,
        "Shared store: how long a worker's claim on an answer it is generating lasts unless renewed (it renews every third of it). If the worker dies, readers get `worker_lost` within about 1.25 times this.",
        1,
        60,
    )

    @property
    def identified_retention_seconds(self) -> float:
        """How long a known visitor's conversations are kept: IDENTIFIED_RETENTION, else RETENTION."""
        return self.identified_retention if self.identified_retention is not None else self.retention_seconds


@dataclass(frozen=True)
class ChatSettings:
    """Answers and their streams: sizes, time limits, concurrency, the panel's empty state."""

    heartbeat_seconds: float = setting(
        "HEARTBEAT_SECONDS", parse_float, 15.0, "Idle time after which a stream sends a comment heartbeat.", 0.05, 300
    )
    retry_ms: int = setting(
        "RETRY_MS", parse_int, 2000, "Reconnection delay the stream advises clients (`retry:` field).", 0, 600_000
    )
    message_time_limit_seconds: float = setting(
        "MESSAGE_TIME_LIMIT_SECONDS",
        parse_float,
        120.0,
        "Longest an answer may run; then it fails with code `timeout`.",
        0.1,
        3600,
    )
    max_answer_chars: int = setting(
        "MAX_ANSWER_CHARS",
        parse_int,
        250_000,
        "Longest answer, in characters; a longer one is stopped there and fails with `answer_too_long` (what arrived is incomplete). 0: no limit.",
        0,
        100_000_000,
    )
    max_text_chars: int = setting(
        "MAX_TEXT_CHARS", parse_int, 4000, "Longest user message, in characters (longer: 413).", 1, 1_000_000
    )
    feedback_comment_max_chars: int = setting(
        "FEEDBACK_COMMENT_MAX_CHARS",
        parse_int,
        500,
        "Longest comment on an answer's feedback, in characters (longer: 413).",
        0,
        10_000,
    )
    max_streams: int = setting(
        "MAX_STREAMS",
        parse_int,
        1000,
        "Open event streams per worker process (more: 503 with Retry-After).",
        1,
        1_000_000,
    )
    max_streams_per_conversation: int = setting(
        "MAX_STREAMS_PER_CONVERSATION",
        parse_int,
        8,
        "Open event streams per conversation (more: 429 with Retry-After).",
        1,
        10_000,
    )
    max_streams_per_client: int = setting(
        "MAX_STREAMS_PER_CLIENT",
        parse_int,
        32,
        "Open event streams per client address in each worker process (more: 429 with Retry-After).",
        1,
        1_000_000,
    )
    max_running_per_conversation: int = setting(
        "MAX_RUNNING_PER_CONVERSATION",
        parse_int,
        2,
        "Answers generating at once per conversation (more: 429 with Retry-After).",
        1,
        1000,
    )
    actions_record_path: str = setting(
        "ACTIONS_RECORD_PATH",
        parse_str,
        "widget-server-actions.jsonl",
        "The built-in `callback_request` action: the JSON Lines file each confirmed request is appended to (relative to the working directory).",
    )
    starters: tuple[str, ...] = setting(
        "STARTERS",
        parse_starters,
        (),
        "Starter prompts shown as buttons in the empty panel: a JSON list of up to 4 strings of at most 100 characters (empty: none).",
    )
    greeting: str = setting(
        "GREETING",
        parse_greeting,
        "",
        "A greeting line shown above the starters in the empty panel (at most 200 characters).",
    )
    consent_text: str = setting(
        "CONSENT_TEXT",
        parse_consent_text,
        "",
        "A consent line the visitor must agree to (a checkbox) before their first message; the agreement is recorded with the conversation (at most 500 characters, plain text; empty: no consent step). Needs CONSENT_URL.",
    )
    consent_url: str = setting(
        "CONSENT_URL",
        parse_optional_url,
        "",
        "The site's privacy notice, linked from the consent line: an absolute http(s) URL. Required when CONSENT_TEXT is set.",
    )


@dataclass(frozen=True)
class RateLimitSettings:
    """Request quotas (flask-limiter notation), on or off as a whole."""

    enabled: bool = setting(
        "RATE_LIMITS",
        parse_bool,
        True,
        "Apply the RATE_LIMIT_* limits (429 `rate_limited` with Retry-After). Counted in the store's Redis when the store is Redis, else in the process.",
    )
    client: str = setting(
        "RATE_LIMIT_CLIENT",
        parse_rate_limits,
        "300/minute",
        "Requests to /api/v1 per client address, all endpoints together (stream resumes included).",
    )
    new_conversations: str = setting(
        "RATE_LIMIT_NEW_CONVERSATIONS", parse_rate_limits, "60/hour", "New conversations per client address."
    )
    messages_client: str = setting(
        "RATE_LIMIT_MESSAGES_CLIENT",
        parse_rate_limits,
        "30/minute;1000/day",
        "Messages sent per client address (a retry with the same request_id counts too).",
    )
    messages_conversation: str = setting(
        "RATE_LIMIT_MESSAGES_CONVERSATION",
        parse_rate_limits,
        "20/minute;300/day",
        "Messages sent per conversation: the conversation's quota.",
    )
    unauthorized: str = setting(
        "RATE_LIMIT_UNAUTHORIZED",
        parse_rate_limits,
        "30/minute",
        "Requests to /api/v1 per client address that fail authorization (no, or the wrong, token; an unknown path): their own budget, apart from every authorized quota.",
    )
    left_messages_client: str = setting(
        "RATE_LIMIT_LEFT_MESSAGES_CLIENT",
        parse_rate_limits,
        "5/hour;20/day",
        "Messages left for the site's team (POST …/handoff/left-messages) per client address, whatever the conversation; each also spends the message quotas.",
    )
    agent_sign_in: str = setting(
        "RATE_LIMIT_AGENT_SIGN_IN",
        parse_rate_limits,
        "10/minute",
        "Agent console sign-in attempts (POST /agent/sign-in), per client address and, separately, per agent name.",
    )
    attachments: str = setting(
        "RATE_LIMIT_ATTACHMENTS",
        parse_rate_limits,
        "20/minute;200/day",
        "Attachment uploads per conversation (a retry with the same idempotency key counts too).",
    )


@dataclass(frozen=True)
class HandoffSettings:
    """Hand-off to a person: when it is offered, the queue, the inbox, the conversation stream."""

    mode: str = setting(
        "HANDOFF",
        parse_handoff,
        "auto",
        "Hand-off to a person: `auto` (on when the agents file lists at least one agent), `on` or `off` (also 1/0).",
        choices=("auto", "on", "off"),
    )
    hours: WeeklyHours = setting(
        "HANDOFF_HOURS",
        parse_hours,
        ALWAYS_OPEN,
        "When a person may be asked for, in HANDOFF_TIMEZONE: e.g. `Mon-Fri 09:00-17:30; Sat 10:00-14:00` (empty: always); outside them a request gets `unavailable` with reason `closed` and the next opening time.",
    )
    timezone: str = setting(
        "HANDOFF_TIMEZONE",
        parse_timezone,
        "UTC",
        "The IANA time zone HANDOFF_HOURS are in, e.g. `Europe/Madrid` (daylight saving time follows the zone).",
    )
    agent_presence_seconds: float = setting(
        "AGENT_PRESENCE_SECONDS",
        parse_float,
        30.0,
        "An agent counts as available while their console was seen (any agent API call, such as its queue poll) this recently.",
        1,
        3600,
    )
    agent_grace_seconds: float = setting(
        "AGENT_GRACE_SECONDS",
        parse_float,
        60.0,
        "How long a claimed conversation waits for an agent whose console stopped being seen; then it returns to the queue with a notice to the visitor.",
        0.1,
        86400,
    )
    conversation_events_max: int = setting(
        "CONVERSATION_EVENTS_MAX",
        parse_int,
        500,
        "Events kept per conversation event stream for resume; an older position gets a `conversation.snapshot`.",
        1,
        100_000,
    )
    queue_max: int = setting(
        "HANDOFF_QUEUE_MAX",
        parse_int,
        200,
        "Most conversations waiting for a person at once; beyond it a request gets `unavailable` with reason `busy` (the visitor may leave a message).",
        1,
        100_000,
    )
    queue_idle_seconds: float = setting(
        "HANDOFF_QUEUE_IDLE_SECONDS",
        parse_float,
        600.0,
        "A queued visitor with no conversation stream open for this long leaves the queue (`handoff.ended`, reason `idle`), so requests nobody waits on cannot fill it; 0: never.",
        0,
        86400,
    )
    inbox_max: int = setting(
        "HANDOFF_INBOX_MAX",
        parse_int,
        10_000,
        "Most left messages the agents' inbox keeps (each also for RETENTION at most); beyond it the oldest goes, and the inbox counts what it let go.",
        10,
        1_000_000,
    )
    left_messages_max: int = setting(
        "HANDOFF_LEFT_MESSAGES_MAX",
        parse_int,
        3,
        "Most left messages one conversation may have waiting for an agent's reply; more get 409 `too_many_left_messages` until an agent replies.",
        1,
        100,
    )
    memory_store_max_bytes: int = setting(
        "HANDOFF_MEMORY_STORE_MAX_BYTES",
        parse_int,
        64 * 1024 * 1024,
        "Memory store only: about how many bytes hand-offs may hold (records, event logs, the queue, the inbox); beyond it hand-offs that are over are evicted, oldest first, and when only queued or assigned ones are left a new request or message gets 503 `handoff_store_full`.",
        65536,
        1 << 40,
    )


@dataclass(frozen=True)
class AgentSettings:
    """The agents' accounts and sign-in sessions."""

    agents_file: str = setting(
        "AGENTS_FILE",
        parse_str,
        "",
        "The agents file (JSON) the console's accounts are read from, written by `widget-server agents add|remove` (empty: nobody can sign in at /agent).",
    )
    session_seconds: float = setting(
        "AGENT_SESSION_SECONDS",
        parse_float,
        28800.0,
        "How long an agent's sign-in lasts, from signing in (signing out ends it at once).",
        60,
        604800,
    )


@dataclass(frozen=True)
class MailSettings:
    """The mail the hand-off sends (left messages to the site owner)."""

    host: str = setting("SMTP_HOST", parse_str, "", "SMTP server that sends the hand-off's mail (empty: no mail).")
    port: int = setting("SMTP_PORT", parse_int, 587, "SMTP server's port.", 1, 65535)
    sender: str = setting("SMTP_FROM", parse_email, "", "The From address of the mail the server sends.")
    owner: str = setting("SMTP_TO", parse_email, "", "The site owner's address: left messages are mailed there.")
    username: str = setting("SMTP_USERNAME", parse_str, "", "User name for SMTP authentication (empty: none).")
    password: str = setting("SMTP_PASSWORD", parse_str, "", "Password for SMTP authentication.")
    starttls: bool = setting(
        "SMTP_STARTTLS", parse_bool, True, "Upgrade the SMTP connection with STARTTLS before anything is sent."
    )
    timeout_seconds: float = setting(
        "SMTP_TIMEOUT_SECONDS",
        parse_float,
        10.0,
        "Longest an SMTP connection or reply may take (mail is sent in the background).",
        0.5,
        120,
    )


@dataclass(frozen=True)
class AttachmentSettings:
    """Files a visitor sends with a question: sizes, types, the store."""

    max_bytes: int = setting(
        "ATTACHMENT_MAX_BYTES",
        parse_int,
        10_000_000,
        "Largest attachment, in bytes (larger: 413 `attachment_too_large`).",
        1,
        1_000_000_000,
    )
    max_bytes_per_conversation: int = setting(
        "ATTACHMENTS_MAX_BYTES_PER_CONVERSATION",
        parse_int,
        50_000_000,
        "Bytes all of a conversation's attachments may hold together (more: 413 `attachments_budget_exceeded`; deleting one frees its bytes).",
        1,
        1 << 40,
    )
    per_message: int = setting(
        "ATTACHMENTS_PER_MESSAGE",
        parse_int,
        5,
        "Most attachments one message may carry.",
        1,
        100,
    )
    types: tuple[str, ...] = setting(
        "ATTACHMENT_TYPES",
        parse_attachment_types,
        ("png", "jpeg", "webp", "gif", "pdf", "text", "csv"),
        "Attachment types accepted, as recognised from the content (never the name or the client's Content-Type): any of `png`, `jpeg`, `webp`, `gif`, `pdf`, `text` (UTF-8 without binary control bytes), `csv` (text with a `.csv` name that parses as CSV with a constant number of columns); space- or comma-separated. Others: 415 `attachment_type`.",
    )
    image_max_pixels: int = setting(
        "ATTACHMENT_IMAGE_MAX_PIXELS",
        parse_int,
        40_000_000,
        "Most pixels (width × height, read from the image's header) an image attachment may declare (more: 413 `attachment_image_too_large`; a decompression bomb is refused before anything decodes it).",
        1,
        1 << 40,
    )
    store: str = setting(
        "ATTACHMENT_STORE",
        parse_attachment_store,
        "auto",
        "Where attachments live: `auto` (the chat store's Redis with a Redis STORE, else the ATTACHMENTS_DIR directory), or a plugin: an entry point name of the group `widget_server.attachment_stores`, or `package.module:Class`.",
    )
    upload_timeout_seconds: float = setting(
        "ATTACHMENT_UPLOAD_TIMEOUT_SECONDS",
        parse_float,
        120.0,
        "Longest time an upload's body may take to arrive, whole (then: 408 `body_timeout`, the connection closed).",
        0.5,
        3600,
    )
    folder: str = setting(
        "ATTACHMENTS_DIR",
        parse_attachments_dir,
        "",
        "The directory attachments are kept in beside the memory store (created if missing; must be empty or one this server made; its conversations' files are removed at start). Empty: a new temporary directory per process, removed at exit.",
    )
    folder_max_bytes: int = setting(
        "ATTACHMENTS_DIR_MAX_BYTES",
        parse_int,
        1 << 30,
        "Directory store: bytes all attachments together may hold (more: 503 `attachment_store_full` until conversations expire or are deleted).",
        1,
        1 << 50,
    )


@dataclass(frozen=True)
class IdentitySettings:
    """Signed visitor identity (docs/protocol.md, "Known visitors"): the site signs a token
    (a JWT) naming its signed-in visitor; conversations started with it belong to that visitor
    on any device. One key source at most; none: identity tokens are refused."""

    secret: str = setting(
        "IDENTITY_SECRET",
        parse_str,
        "",
        "Shared secret the site signs identity tokens with (HS256), at least 32 bytes; never logged or printed.",
    )
    public_key_file: str = setting(
        "IDENTITY_PUBLIC_KEY_FILE",
        parse_str,
        "",
        "A PEM file with the public key identity tokens are signed for: an RSA key (RS256) or a P-256 key (ES256).",
    )
    jwks_url: str = setting(
        "IDENTITY_JWKS_URL",
        parse_str,
        "",
        "A JWKS URL (https; http only on loopback) the RS256 or ES256 keys are fetched from, by the token's `kid`, with a 5 s timeout, kept 5 minutes.",
    )
    issuer: str = setting(
        "IDENTITY_ISSUER", parse_str, "", "When set, a token's `iss` must be exactly this (RFC 7519 §4.1.1)."
    )
    audience: str = setting(
        "IDENTITY_AUDIENCE", parse_str, "", "When set, a token's `aud` must name this (RFC 7519 §4.1.3)."
    )
    max_age_seconds: float = setting(
        "IDENTITY_MAX_AGE",
        parse_float,
        3600.0,
        "Seconds a token may live: its `exp` at most this long after its `iat` (or after now, without `iat`); longer-lived tokens are refused.",
        1,
        86400 * 30,
    )
    required: bool = setting(
        "IDENTITY_REQUIRED",
        parse_bool,
        False,
        "Refuse anonymous conversations: `POST /api/v1/conversations` needs an identity token (401 `identity_required`).",
    )

    @property
    def configured(self) -> bool:
        """Whether a key source is set, so identity tokens can be verified at all."""
        return bool(self.secret or self.public_key_file or self.jwks_url)

    def __repr__(self) -> str:
        # The dataclass's own repr would print the secret wherever these settings are shown (a
        # log line, a traceback's locals): docs/security.md, "Known visitors".
        shown = {
            "secret": "<set>" if self.secret else "",
            "public_key_file": self.public_key_file,
            "jwks_url": self.jwks_url,
            "issuer": self.issuer,
            "audience": self.audience,
            "max_age_seconds": self.max_age_seconds,
            "required": self.required,
        }
        return "IdentitySettings(" + ", ".join(f"{name}={value!r}" for name, value in shown.items()) + ")"


@dataclass(frozen=True)
class WebhookSettings:
    """Signed webhooks to the site's own servers (docs/webhooks.md): each event queued in the
    store and sent by a background worker, never on a request's or a stream's path."""

    urls: tuple[str, ...] = setting(
        "WEBHOOK_URLS",
        parse_webhook_urls,
        (),
        "Where webhook events are POSTed: http(s) URLs, space or comma separated (empty: no webhooks).",
    )
    secret: str = setting(
        "WEBHOOK_SECRET",
        parse_str,
        "",
        "The key every delivery is signed with (HMAC-SHA256), at least 32 bytes; required with WEBHOOK_URLS; never logged.",
    )
    events: tuple[str, ...] = setting(
        "WEBHOOK_EVENTS",
        parse_webhook_events,
        WEBHOOK_EVENTS,
        "The event types sent, space or comma separated (empty: every one).",
    )
    timeout_seconds: float = setting(
        "WEBHOOK_TIMEOUT",
        parse_float,
        10.0,
        "Seconds a delivery waits to connect, and for each read of the answer, before it counts as failed and is retried.",
        0.1,
        120,
    )
    retry_for_seconds: float = setting(
        "WEBHOOK_RETRY_FOR",
        parse_duration,
        3600.0,
        "How long a delivery is retried (exponential backoff) after its event, on a 5xx, 408, 429, a timeout or no connection; then it is dropped and counted.",
        0,
        7 * 86400,
    )
    allow_private: bool = setting(
        "WEBHOOK_ALLOW_PRIVATE",
        parse_bool,
        False,
        "Allow webhook URLs whose host resolves to a loopback, private, link-local or otherwise non-public address (refused by default: SSRF).",
    )

    @property
    def enabled(self) -> bool:
        return bool(self.urls)

    def __repr__(self) -> str:
        # The dataclass's own repr would print the secret wherever these settings are shown
        # (docs/security.md, "Webhooks"), as IdentitySettings's would.
        return (
            f"WebhookSettings(urls={self.urls!r}, secret={'<set>' if self.secret else ''!r}, "
            f"events={self.events!r}, timeout_seconds={self.timeout_seconds!r}, "
            f"retry_for_seconds={self.retry_for_seconds!r}, allow_private={self.allow_private!r})"
        )


@dataclass(frozen=True)
class ThemeSettings:
    """Theming defaults (docs/theming.md): an embed's ChatWidgetConfig and data-* override each."""

    accent: str = setting(
        "THEME_ACCENT",
        theme.parse_accent,
        "",
        "The accent colour, a CSS colour (hex, rgb(), hsl() or a name; empty: the built-in blue); the panel adjusts it where contrast needs (docs/theming.md).",
    )
    radius: str = setting("THEME_RADIUS", theme.parse_radius, "medium", "Corner rounding.", choices=theme.RADII)
    density: str = setting("THEME_DENSITY", theme.parse_density, "comfortable", "Spacing.", choices=theme.DENSITIES)
    font: str = setting(
        "THEME_FONT",
        theme.parse_font,
        "system",
        "`system` or a font-family list (names, quotes, commas, spaces; at most 200 characters).",
    )
    color_scheme: str = setting(
        "THEME_COLOR_SCHEME",
        theme.parse_color_scheme,
        "auto",
        "`light`, `dark` or `auto` (the visitor's preference).",
        choices=theme.COLOR_SCHEMES,
    )
    launcher_label: str = setting(
        "LAUNCHER_LABEL", parse_launcher_label, "", "The launcher's text (empty: the language's)."
    )
    launcher_icon: str = setting(
        "LAUNCHER_ICON", theme.parse_launcher_icon, "chat", "The launcher's icon.", choices=theme.LAUNCHER_ICONS
    )
    launcher_z_index: int = setting(
        "LAUNCHER_Z_INDEX",
        parse_int,
        2147483000,
        "The launcher's and panel's z-index on the host page.",
        0,
        2147483647,
    )

    def as_theme(self) -> theme.Theme:
        """These defaults as the panel's theme, before an embed's own choices."""
        return theme.Theme(
            accent=self.accent,
            radius=self.radius,
            density=self.density,
            font=self.font,
            color_scheme=self.color_scheme,
        )

    def loader_defaults(self) -> dict[str, str]:
        """The settings static/widget.js reads as its defaults (`__CHATWIDGET_THEME__`): only those
        changed from the built-in ones, so a default server adds two bytes to the loader."""
        built_in = {
            "accent": "",
            "radius": "medium",
            "density": "comfortable",
            "font": "system",
            "colorScheme": "auto",
            "launcherLabel": "",
            "launcherIcon": "chat",
            "zIndex": "2147483000",
        }
        current = {
            "accent": self.accent,
            "radius": self.radius,
            "density": self.density,
            "font": self.font,
            "colorScheme": self.color_scheme,
            "launcherLabel": self.launcher_label,
            "launcherIcon": self.launcher_icon,
            "zIndex": str(self.launcher_z_index),
        }
        return {name: value for name, value in current.items() if value != built_in[name]}
