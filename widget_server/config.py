"""Settings: one declared list, three layers, validated once at start.

Precedence (lowest first): the defaults below < `WIDGET_SERVER_<NAME>`
environment variables < the explicit mapping given to `create_app(config)`
(the CLI's options land there). A bad value stops the server at start with
an error that names the key; it is never discovered mid-request.
Every setting is documented in docs/configuration.md (a test checks).
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any

from . import theme
from .attachments.sniff import parse_types
from .handoff.hours import ALWAYS_OPEN, parse_hours, parse_timezone
from .store_url import CLUSTER_SCHEME, BadStoreUrl, cluster_nodes
from .store_url import SCHEMES as REDIS_SCHEMES

ENV_PREFIX = "WIDGET_SERVER_"

# The validated settings, by name: one value for each of SETTINGS below.
Settings = dict[str, Any]


class ConfigError(ValueError):
    """A setting has a value the server cannot run with."""


def _parse_bool(raw: Any) -> bool:
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text in {"1", "true", "yes", "on"}:
        return True
    if text in {"0", "false", "no", "off", ""}:
        return False
    raise ValueError("expected one of 1/0, true/false, yes/no, on/off")


def _parse_int(raw: Any) -> int:
    if isinstance(raw, bool):
        raise ValueError("expected an integer")
    if isinstance(raw, int):
        return raw
    return int(str(raw).strip())


def _parse_float(raw: Any) -> float:
    if isinstance(raw, bool):
        raise ValueError("expected a number")
    value = float(raw) if isinstance(raw, (int, float)) else float(str(raw).strip())
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError("expected a finite number")
    return value


def _parse_str(raw: Any) -> str:
    return str(raw).strip()


def _parse_handoff(raw: Any) -> str:
    """HANDOFF: auto, on or off; the boolean spellings too (`HANDOFF=0` is off)."""
    text = str(raw).strip().lower()
    if text == "auto":
        return text
    return "on" if _parse_bool(raw) else "off"


# scheme://host[:port] and nothing else: a DNS name (its first label may be `*`, a CSP
# wildcard for subdomains) or a bracketed IPv6 address, and a port of digits. These values
# reach the Content-Security-Policy header, so `;`, quotes and spaces must never pass.
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_ORIGIN = re.compile(
    rf"(?P<scheme>https?)://(?P<host>(?:\*\.)?{_LABEL}(?:\.{_LABEL})*|\[[0-9A-Fa-f:.]+\])(?::(?P<port>[0-9]{{1,5}}))?"
)


def _check_origin(origin: str) -> None:
    match = _ORIGIN.fullmatch(origin)
    valid = match is not None
    if match is not None and match["host"].startswith("["):
        try:
            ipaddress.IPv6Address(match["host"][1:-1])
        except ValueError:
            valid = False
    if match is not None and match["port"] is not None and not 1 <= int(match["port"]) <= 65535:
        valid = False
    if not valid:
        raise ValueError(f"{origin!r} is not an origin scheme://host[:port] like https://www.example.com")


def _parse_origins(raw: Any) -> tuple[str, ...]:
    items = raw.split() if isinstance(raw, str) else list(raw)
    origins = tuple(str(item).rstrip("/") for item in items)
    for origin in origins:
        if origin not in ("*", "'self'"):
            _check_origin(origin)
    return origins


def _parse_http_url(raw: Any) -> str:
    """An http(s) base URL, e.g. https://api.openai.com/v1; a trailing `/` is removed."""
    url = str(raw).strip().rstrip("/")
    scheme, sep, rest = url.partition("://")
    host = rest.split("/", 1)[0]
    if not sep or scheme.lower() not in {"http", "https"} or not host:
        raise ValueError("expected an http:// or https:// URL such as https://api.openai.com/v1")
    if "@" in host:
        # Credentials in a URL end up in logs; the key has its own variable.
        raise ValueError("the URL must not carry credentials (use the OPENAI_API_KEY environment variable)")
    if any(c in rest for c in "?#") or any(c.isspace() for c in url):
        raise ValueError("the URL must not have a query, a fragment or whitespace")
    return url


def _parse_temperature(raw: Any) -> float | None:
    """Empty (or None): not sent, the provider's default; else a number from 0 to 2."""
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return None
    value = _parse_float(raw)
    if not 0 <= value <= 2:
        raise ValueError("expected a number from 0 to 2, or empty for the provider's default")
    return value


def _parse_folder(raw: Any) -> str:
    """Empty (a built-in default), or an existing folder."""
    path = _parse_str(raw)
    if path and not os.path.isdir(os.path.expanduser(path)):
        raise ValueError("no such folder")
    return path


def _parse_optional_url(raw: Any) -> str:
    """Empty, or an absolute http(s) URL (links in answers must be absolute)."""
    url = _parse_str(raw)
    scheme, sep, rest = url.partition("://")
    if url and (
        not sep or scheme.lower() not in {"http", "https"} or not rest.split("/", 1)[0] or any(c.isspace() for c in url)
    ):
        raise ValueError("expected empty or an http:// or https:// URL such as https://www.example.com/help/")
    return url


def _parse_public_url(raw: Any) -> str:
    """Empty, or the origin visitors reach the server at: scheme://host[:port], lower-cased,
    without a path (a trailing `/` is removed), query, fragment or credentials."""
    url = _parse_str(raw).rstrip("/").lower()
    if not url:
        return ""
    scheme, sep, netloc = url.partition("://")
    host, colon, port = netloc.rpartition(":") if not netloc.endswith("]") else (netloc, "", "")
    if not colon:
        host = netloc
    name = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if (
        not sep
        or scheme not in {"http", "https"}
        or not name
        or not all(c.isascii() and (c.isalnum() or c in ".-:") for c in name)
        or (":" in name and name == host)  # an IPv6 address is written in brackets
        or (colon and not (port.isdigit() and 0 < int(port) <= 65535))
    ):
        raise ValueError("expected the server's public origin, such as https://chat.example.com (no path)")
    return f"{scheme}://{netloc}"


def _parse_hosts(raw: Any) -> tuple[str, ...]:
    """Host names (or IP addresses, IPv6 in brackets), separated by spaces or commas; lower-cased."""
    items = raw.replace(",", " ").split() if isinstance(raw, str) else [str(item) for item in raw]
    hosts = tuple(item.strip().lower().rstrip(".") for item in items if item.strip())
    for host in hosts:
        name = host[1:-1] if host.startswith("[") and host.endswith("]") else host
        if not name or not all(c.isalnum() or c in ".-_:" for c in name) or (":" in name and name == host):
            raise ValueError(f"{host!r} is not a host name such as chat.internal or 10.0.0.5 (no port, no scheme)")
    return hosts


# An address as mail headers carry it: local@domain, with nothing that could end a header or
# start another address (agents/mail.py builds the headers; EmailMessage also refuses breaks).
_EMAIL = re.compile(r"[^@\s<>,;:\"()\[\]\\]+@[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?")


# The file the directory attachment store writes in its folder (attachments/directory_store.py),
# which removes at start what it finds there: a folder without it must be empty, so that a
# mistyped ATTACHMENTS_DIR never has someone's files removed.
ATTACHMENTS_DIR_MARKER = ".widget-server-attachments"
# Where attachment store plugins register (attachments/store.py).
ATTACHMENT_STORES_ENTRY_POINTS = "widget_server.attachment_stores"


def _parse_attachments_dir(raw: Any) -> str:
    """Empty (a temporary folder per process), or a folder that is new, empty or the store's own."""
    path = _parse_str(raw)
    if not path:
        return path
    full = os.path.abspath(os.path.expanduser(path))
    if os.path.exists(full) and not os.path.isdir(full):
        raise ValueError("not a folder")
    if os.path.isdir(full) and os.listdir(full) and not os.path.exists(os.path.join(full, ATTACHMENTS_DIR_MARKER)):
        raise ValueError(
            f"{full} is not empty and is not an attachments folder (no {ATTACHMENTS_DIR_MARKER} file); "
            "the store removes what it finds there at start: name a new or empty folder"
        )
    return full


def _parse_attachment_store(raw: Any) -> str:
    """`auto`, `package.module:Class` (loaded when the app starts), or a registered plugin's name."""
    name = _parse_str(raw) or "auto"
    if name == "auto" or ":" in name:
        return name
    registered = sorted(point.name for point in entry_points(group=ATTACHMENT_STORES_ENTRY_POINTS))
    if name not in registered:
        known = ", ".join(registered) or "none installed"
        raise ValueError(f"no attachment store {name!r}: auto, package.module:Class, or a registered one ({known})")
    return name


def parse_attachment_types(raw: Any) -> tuple[str, ...]:
    """ATTACHMENT_TYPES: known type names (attachments/sniff.py), at least one."""
    names = parse_types(raw)
    if not names:
        raise ValueError("name at least one type")
    return names


def parse_email(raw: Any) -> str:
    """Empty, or one email address such as help@example.com."""
    text = _parse_str(raw)
    if text and (len(text) > 254 or not _EMAIL.fullmatch(text)):
        raise ValueError("expected one email address such as help@example.com (or empty)")
    return text


def _parse_rate_limits(raw: Any) -> str:
    """Empty (no limit), or flask-limiter's notation: `20/minute;500/day`."""
    text = _parse_str(raw)
    if text:
        from limits import parse_many

        try:
            parse_many(text)
        except ValueError:
            raise ValueError("expected limits such as `20/minute` or `20/minute;500/day` (or empty for none)") from None
    return text


# Starter prompts and the greeting: shown in the panel's empty state (docs/configuration.md,
# "The panel"); the same rules check an embed's data-starters / data-greeting (web.py).
MAX_STARTERS = 4
MAX_STARTER_CHARS = 100
MAX_GREETING_CHARS = 200


def parse_starters(raw: Any) -> tuple[str, ...]:
    """A JSON list of up to MAX_STARTERS non-empty strings of at most MAX_STARTER_CHARS
    characters (a list or tuple is taken as is); empty: none."""
    if isinstance(raw, str):
        if not raw.strip():
            return ()
        try:
            raw = json.loads(raw)
        except ValueError:
            raise ValueError('expected a JSON list of strings such as ["Opening hours?", "Track my order"]') from None
    if not isinstance(raw, (list, tuple)) or not all(isinstance(item, str) for item in raw):
        raise ValueError('expected a JSON list of strings such as ["Opening hours?", "Track my order"]')
    starters = tuple(" ".join(item.split()) for item in raw)
    if len(starters) > MAX_STARTERS:
        raise ValueError(f"at most {MAX_STARTERS} starters (got {len(starters)})")
    for starter in starters:
        if not starter or len(starter) > MAX_STARTER_CHARS:
            raise ValueError(f"each starter must have 1 to {MAX_STARTER_CHARS} characters (got {starter!r})")
    return starters


def parse_greeting(raw: Any) -> str:
    """One line of at most MAX_GREETING_CHARS characters (runs of whitespace become one space)."""
    greeting = " ".join(str(raw).split())
    if len(greeting) > MAX_GREETING_CHARS:
        raise ValueError(f"at most {MAX_GREETING_CHARS} characters (got {len(greeting)})")
    return greeting


@dataclass(frozen=True)
class Setting:
    name: str
    parse: Callable[[Any], Any]
    default: Any
    help: str
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] | None = None

    @property
    def env_var(self) -> str:
        return ENV_PREFIX + self.name

    def convert(self, raw: Any, source: str) -> Any:
        try:
            value = self.parse(raw)
        except (TypeError, ValueError) as error:
            raise ConfigError(f"{self.name} (from {source}): invalid value {raw!r}: {error}") from None
        if self.minimum is not None and value < self.minimum:
            raise ConfigError(f"{self.name} (from {source}): {value!r} is below the minimum {self.minimum:g}")
        if self.maximum is not None and value > self.maximum:
            raise ConfigError(f"{self.name} (from {source}): {value!r} is above the maximum {self.maximum:g}")
        if self.choices is not None and value not in self.choices:
            raise ConfigError(f"{self.name} (from {source}): {value!r} is not one of {', '.join(self.choices)}")
        return value


SETTINGS: tuple[Setting, ...] = (
    Setting("HOST", _parse_str, "127.0.0.1", "Address the server listens on."),
    Setting("PORT", _parse_int, 8000, "TCP port the server listens on (0 picks a free one).", 0, 65535),
    Setting("BACKEND", _parse_str, "demo", "Answer backend: a registered name (`demo`) or `package.module:Class`."),
    Setting(
        "STORE",
        _parse_str,
        "memory",
        "Where conversations and message logs live: `memory` (one worker process only), `redis://HOST:PORT/DB` (shared by workers and hosts) or `redis+cluster://HOST:PORT[,HOST:PORT…]` (a Redis Cluster, from seed nodes).",
    ),
    Setting("WORKERS", _parse_int, 1, "Worker processes for `widget-server` (the memory store allows only 1).", 1, 64),
    Setting("WORKER_CONNECTIONS", _parse_int, 2000, "Concurrent connections each gevent worker accepts.", 10, 100_000),
    Setting(
        "ENV",
        _parse_str,
        "development",
        "`production` refuses test and QA switches (fault injection, the QA page) and the demo backend (unless ALLOW_DEMO_IN_PRODUCTION), and requires PUBLIC_URL.",
        choices=("development", "production"),
    ),
    Setting(
        "ASSETS",
        _parse_str,
        "minified",
        "Which copies of `static/` are served: `minified` (static/min/, built from the sources by esbuild; what the byte budgets measure) or `source` (the commented sources, for reading them in a browser's tools).",
        choices=("minified", "source"),
    ),
    Setting(
        "HEARTBEAT_SECONDS", _parse_float, 15.0, "Idle time after which a stream sends a comment heartbeat.", 0.05, 300
    ),
    Setting(
        "RETRY_MS", _parse_int, 2000, "Reconnection delay the stream advises clients (`retry:` field).", 0, 600_000
    ),
    Setting(
        "MESSAGE_TIME_LIMIT_SECONDS",
        _parse_float,
        120.0,
        "Longest an answer may run; then it fails with code `timeout`.",
        0.1,
        3600,
    ),
    Setting(
        "LOG_MAX_EVENTS",
        _parse_int,
        4096,
        "Events kept per message for resume; an older position gets a snapshot.",
        1,
        10_000_000,
    ),
    Setting(
        "FINISHED_LOG_GRACE_SECONDS",
        _parse_float,
        30.0,
        "How long a finished answer keeps its whole event log (a reader catching up gets the exact events); then the log is compacted to the text and the terminal event, and a resume gets a snapshot and the ending. 0: at the end.",
        0,
        86400,
    ),
    Setting(
        "MEMORY_STORE_MAX_BYTES",
        _parse_int,
        256 * 1024 * 1024,
        "Memory store: about how many bytes all conversations may hold; beyond it the least recently used conversations with no answer running are forgotten (404, like expired ones).",
        65536,
        1 << 40,
    ),
    Setting(
        "MAX_ANSWER_CHARS",
        _parse_int,
        250_000,
        "Longest answer, in characters; a longer one is stopped there and fails with `answer_too_long` (what arrived is incomplete). 0: no limit.",
        0,
        100_000_000,
    ),
    Setting("MAX_TEXT_CHARS", _parse_int, 4000, "Longest user message, in characters (longer: 413).", 1, 1_000_000),
    Setting(
        "FEEDBACK_COMMENT_MAX_CHARS",
        _parse_int,
        500,
        "Longest comment on an answer's feedback, in characters (longer: 413).",
        0,
        10_000,
    ),
    Setting("MAX_BODY_BYTES", _parse_int, 65536, "Largest request body, in bytes (larger: 413).", 256, 16_777_216),
    Setting(
        "BODY_READ_TIMEOUT_SECONDS",
        _parse_float,
        10.0,
        "Longest time a request's body may take to arrive, whole (then: 408, the connection closed).",
        0.5,
        3600,
    ),
    Setting(
        "MAX_STREAMS",
        _parse_int,
        1000,
        "Open event streams per worker process (more: 503 with Retry-After).",
        1,
        1_000_000,
    ),
    Setting(
        "MAX_STREAMS_PER_CONVERSATION",
        _parse_int,
        8,
        "Open event streams per conversation (more: 429 with Retry-After).",
        1,
        10_000,
    ),
    Setting(
        "MAX_STREAMS_PER_CLIENT",
        _parse_int,
        32,
        "Open event streams per client address in each worker process (more: 429 with Retry-After).",
        1,
        1_000_000,
    ),
    Setting(
        "MAX_RUNNING_PER_CONVERSATION",
        _parse_int,
        2,
        "Answers generating at once per conversation (more: 429 with Retry-After).",
        1,
        1000,
    ),
    Setting(
        "CONVERSATION_TTL_SECONDS",
        _parse_float,
        86400.0,
        "Idle time after which the store forgets a conversation (memory: on the next sweep; Redis: key expiry, refreshed on use).",
        1,
        31_536_000,
    ),
    Setting(
        "WORKER_LEASE_SECONDS",
        _parse_float,
        10.0,
        "Shared store: how long a worker's claim on an answer it is generating lasts unless renewed (it renews every third of it). If the worker dies, readers get `worker_lost` within about 1.25 times this.",
        1,
        60,
    ),
    Setting(
        "SHUTDOWN_GRACE_SECONDS",
        _parse_float,
        20.0,
        "On SIGTERM, how long a worker may take to stop: open streams end at once (resumably), answers being generated get this long to finish, then fail with `worker_lost`.",
        1,
        3600,
    ),
    Setting(
        "RATE_LIMITS",
        _parse_bool,
        True,
        "Apply the RATE_LIMIT_* limits (429 `rate_limited` with Retry-After). Counted in the store's Redis when the store is Redis, else in the process.",
    ),
    Setting(
        "RATE_LIMIT_CLIENT",
        _parse_rate_limits,
        "300/minute",
        "Requests to /api/v1 per client address, all endpoints together (stream resumes included).",
    ),
    Setting("RATE_LIMIT_NEW_CONVERSATIONS", _parse_rate_limits, "60/hour", "New conversations per client address."),
    Setting(
        "RATE_LIMIT_MESSAGES_CLIENT",
        _parse_rate_limits,
        "30/minute;1000/day",
        "Messages sent per client address (a retry with the same request_id counts too).",
    ),
    Setting(
        "RATE_LIMIT_MESSAGES_CONVERSATION",
        _parse_rate_limits,
        "20/minute;300/day",
        "Messages sent per conversation: the conversation's quota.",
    ),
    Setting(
        "RATE_LIMIT_UNAUTHORIZED",
        _parse_rate_limits,
        "30/minute",
        "Requests to /api/v1 per client address that fail authorization (no, or the wrong, token; an unknown path): their own budget, apart from every authorized quota.",
    ),
    Setting(
        "RATE_LIMIT_LEFT_MESSAGES_CLIENT",
        _parse_rate_limits,
        "5/hour;20/day",
        "Messages left for the site's team (POST …/handoff/left-messages) per client address, whatever the conversation; each also spends the message quotas.",
    ),
    Setting(
        "RATE_LIMIT_AGENT_SIGN_IN",
        _parse_rate_limits,
        "10/minute",
        "Agent console sign-in attempts (POST /agent/sign-in), per client address and, separately, per agent name.",
    ),
    Setting(
        "PROXY_HOPS",
        _parse_int,
        0,
        "Reverse proxies in front of the server that set X-Forwarded-For; the client address for rate limits is taken that many hops back (0: the socket's peer).",
        0,
        10,
    ),
    Setting(
        "METRICS",
        _parse_bool,
        True,
        "Serve Prometheus metrics at `/metrics` (restrict it to your monitoring network at the proxy).",
    ),
    Setting(
        "METRICS_TOKEN",
        _parse_str,
        "",
        "Bearer token `/metrics` requires (`Authorization: Bearer …`); with ENV=production, `/metrics` is served only when it is set.",
    ),
    Setting(
        "DEMO_DELAY_SECONDS", _parse_float, 0.04, "Pause between the demo backend's chunks (its streaming pace).", 0, 10
    ),
    Setting(
        "EMBED_ORIGINS",
        _parse_origins,
        ("'self'",),
        "Origins allowed to embed the chat panel, space separated, or `*` (any; logged as a warning).",
    ),
    Setting(
        "API_ORIGINS",
        _parse_origins,
        (),
        "Other origins whose pages may call /api/v1 from a browser, space separated (empty: only the server's own pages).",
    ),
    Setting(
        "FAULTS",
        _parse_bool,
        False,
        "Allow fault injection (`X-Chat-Faults`) for tests and QA; refused when ENV is production.",
    ),
    Setting(
        "QA",
        _parse_bool,
        False,
        "Serve the QA page for screen-reader testers at `/qa`; refused when ENV is production.",
    ),
    Setting(
        "PUBLIC_URL",
        _parse_public_url,
        "",
        "The origin visitors reach the server at (https://chat.example.com): every absolute URL the server writes is built on it, never on the request's Host; required when ENV is production.",
    ),
    Setting(
        "TRUSTED_HOSTS",
        _parse_hosts,
        (),
        "With ENV=production, other Host names accepted besides PUBLIC_URL's (e.g. the address a load balancer's health check uses), space separated; any other Host is refused with 400.",
    ),
    Setting(
        "ALLOW_DEMO_IN_PRODUCTION",
        _parse_bool,
        False,
        "Allow the `demo` backend when ENV is production (refused at start otherwise).",
    ),
    Setting(
        "LOG_LEVEL",
        lambda raw: _parse_str(raw).upper(),
        "INFO",
        "Server log level.",
        choices=("DEBUG", "INFO", "WARNING", "ERROR"),
    ),
    # The `openai` backend (OpenAI-compatible chat completions); the API key is
    # the environment variable OPENAI_API_KEY, never a setting (see docs/backends.md).
    Setting(
        "OPENAI_BASE_URL",
        _parse_http_url,
        "https://api.openai.com/v1",
        "`openai` backend: the provider's base URL (…/v1); requests go to <base>/chat/completions.",
    ),
    Setting("OPENAI_MODEL", _parse_str, "gpt-4o-mini", "`openai` backend: the model name sent upstream."),
    Setting(
        "OPENAI_SYSTEM_PROMPT",
        _parse_str,
        "",
        "`openai` backend: a system message sent first in every request (empty: none).",
    ),
    Setting(
        "OPENAI_TEMPERATURE",
        _parse_temperature,
        None,
        "`openai` backend: sampling temperature 0–2 (empty: not sent, the provider's default).",
    ),
    Setting(
        "OPENAI_MAX_TOKENS",
        _parse_int,
        0,
        "`openai` backend: most tokens an answer may have (0: not sent, the provider's default).",
        0,
        10_000_000,
    ),
    Setting(
        "OPENAI_TIMEOUT_SECONDS",
        _parse_float,
        60.0,
        "`openai` backend: connect and read timeout for the upstream, the first token included.",
        0.1,
        3600,
    ),
    Setting(
        "OPENAI_INLINE_TEXT_MAX_CHARS",
        _parse_int,
        100_000,
        "`openai` backend: the most characters of a plain-text or CSV attachment sent inline with the question; "
        "a longer file is cut there, and the model is told so.",
        1000,
        10_000_000,
    ),
    # The `kb` backend (answers from a folder of Markdown documents; see docs/backends.md).
    Setting(
        "KB_DIR",
        _parse_folder,
        "",
        "`kb` backend: folder of Markdown (.md) documents to answer from (empty: the sample, the project's docs).",
    ),
    Setting(
        "KB_MIN_SCORE",
        _parse_float,
        0.3,
        '`kb` backend: least relevance (0–1) of the best passage; below it the answer is "I don\'t know".',
        0,
        1,
    ),
    Setting("KB_MAX_PASSAGES", _parse_int, 3, "`kb` backend: most passages quoted in one answer.", 1, 10),
    Setting(
        "KB_BASE_URL",
        _parse_optional_url,
        "",
        "`kb` backend: URL prefix of the documents' pages for source links (empty: this server's /kb/<path>).",
    ),
    Setting(
        "KB_CONTACT",
        _parse_str,
        "contact the site's support team",
        '`kb` backend: how to reach a person, ending the "I don\'t know" answer ("To ask a person, …").',
    ),
    # Actions (widget_server/actions.py; see docs/backends.md, "Actions").
    Setting(
        "ACTIONS_RECORD_PATH",
        _parse_str,
        "widget-server-actions.jsonl",
        "The built-in `callback_request` action: the JSON Lines file each confirmed request is appended to (relative to the working directory).",
    ),
    # The agent console (docs/agents.md) and its mail.
    Setting(
        "AGENTS_FILE",
        _parse_str,
        "",
        "The agents file (JSON) the console's accounts are read from, written by `widget-server agents add|remove` (empty: nobody can sign in at /agent).",
    ),
    Setting(
        "AGENT_SESSION_SECONDS",
        _parse_float,
        28800.0,
        "How long an agent's sign-in lasts, from signing in (signing out ends it at once).",
        60,
        604800,
    ),
    Setting("SMTP_HOST", _parse_str, "", "SMTP server that sends the hand-off's mail (empty: no mail)."),
    Setting("SMTP_PORT", _parse_int, 587, "SMTP server's port.", 1, 65535),
    Setting("SMTP_FROM", parse_email, "", "The From address of the mail the server sends."),
    Setting("SMTP_TO", parse_email, "", "The site owner's address: left messages are mailed there."),
    Setting("SMTP_USERNAME", _parse_str, "", "User name for SMTP authentication (empty: none)."),
    Setting("SMTP_PASSWORD", _parse_str, "", "Password for SMTP authentication."),
    Setting("SMTP_STARTTLS", _parse_bool, True, "Upgrade the SMTP connection with STARTTLS before anything is sent."),
    Setting(
        "SMTP_TIMEOUT_SECONDS",
        _parse_float,
        10.0,
        "Longest an SMTP connection or reply may take (mail is sent in the background).",
        0.5,
        120,
    ),
    # The panel's empty state (an embed may override both: data-starters, data-greeting).
    Setting(
        "STARTERS",
        parse_starters,
        (),
        "Starter prompts shown as buttons in the empty panel: a JSON list of up to 4 strings of at most 100 characters (empty: none).",
    ),
    Setting(
        "GREETING",
        parse_greeting,
        "",
        "A greeting line shown above the starters in the empty panel (at most 200 characters).",
    ),
    # Hand-off to a person (widget_server/handoff/; docs/protocol.md, "Hand-off to a person").
    Setting(
        "HANDOFF",
        _parse_handoff,
        "auto",
        "Hand-off to a person: `auto` (on when the agents file lists at least one agent), `on` or `off` (also 1/0).",
        choices=("auto", "on", "off"),
    ),
    Setting(
        "HANDOFF_HOURS",
        parse_hours,
        ALWAYS_OPEN,
        "When a person may be asked for, in HANDOFF_TIMEZONE: e.g. `Mon-Fri 09:00-17:30; Sat 10:00-14:00` (empty: always); outside them a request gets `unavailable` with reason `closed` and the next opening time.",
    ),
    Setting(
        "HANDOFF_TIMEZONE",
        parse_timezone,
        "UTC",
        "The IANA time zone HANDOFF_HOURS are in, e.g. `Europe/Madrid` (daylight saving time follows the zone).",
    ),
    Setting(
        "AGENT_PRESENCE_SECONDS",
        _parse_float,
        30.0,
        "An agent counts as available while their console was seen (any agent API call, such as its queue poll) this recently.",
        1,
        3600,
    ),
    Setting(
        "AGENT_GRACE_SECONDS",
        _parse_float,
        60.0,
        "How long a claimed conversation waits for an agent whose console stopped being seen; then it returns to the queue with a notice to the visitor.",
        0.1,
        86400,
    ),
    Setting(
        "CONVERSATION_EVENTS_MAX",
        _parse_int,
        500,
        "Events kept per conversation event stream for resume; an older position gets a `conversation.snapshot`.",
        1,
        100_000,
    ),
    Setting(
        "HANDOFF_QUEUE_MAX",
        _parse_int,
        200,
        "Most conversations waiting for a person at once; beyond it a request gets `unavailable` with reason `busy` (the visitor may leave a message).",
        1,
        100_000,
    ),
    Setting(
        "HANDOFF_QUEUE_IDLE_SECONDS",
        _parse_float,
        600.0,
        "A queued visitor with no conversation stream open for this long leaves the queue (`handoff.ended`, reason `idle`), so requests nobody waits on cannot fill it; 0: never.",
        0,
        86400,
    ),
    Setting(
        "HANDOFF_INBOX_MAX",
        _parse_int,
        10_000,
        "Most left messages the agents' inbox keeps (each also for CONVERSATION_TTL_SECONDS at most); beyond it the oldest goes, and the inbox counts what it let go.",
        10,
        1_000_000,
    ),
    Setting(
        "HANDOFF_LEFT_MESSAGES_MAX",
        _parse_int,
        3,
        "Most left messages one conversation may have waiting for an agent's reply; more get 409 `too_many_left_messages` until an agent replies.",
        1,
        100,
    ),
    Setting(
        "HANDOFF_MEMORY_STORE_MAX_BYTES",
        _parse_int,
        64 * 1024 * 1024,
        "Memory store only: about how many bytes hand-offs may hold (records, event logs, the queue, the inbox); beyond it hand-offs that are over are evicted, oldest first, and when only queued or assigned ones are left a new request or message gets 503 `handoff_store_full`.",
        65536,
        1 << 40,
    ),
    # Attachments (widget_server/attachments/; docs/protocol.md, "Attachments").
    Setting(
        "ATTACHMENT_MAX_BYTES",
        _parse_int,
        10_000_000,
        "Largest attachment, in bytes (larger: 413 `attachment_too_large`).",
        1,
        1_000_000_000,
    ),
    Setting(
        "ATTACHMENTS_MAX_BYTES_PER_CONVERSATION",
        _parse_int,
        50_000_000,
        "Bytes all of a conversation's attachments may hold together (more: 413 `attachments_budget_exceeded`; deleting one frees its bytes).",
        1,
        1 << 40,
    ),
    Setting(
        "ATTACHMENTS_PER_MESSAGE",
        _parse_int,
        5,
        "Most attachments one message may carry.",
        1,
        100,
    ),
    Setting(
        "ATTACHMENT_TYPES",
        parse_attachment_types,
        ("png", "jpeg", "webp", "gif", "pdf", "text", "csv"),
        "Attachment types accepted, as recognised from the content (never the name or the client's Content-Type): any of `png`, `jpeg`, `webp`, `gif`, `pdf`, `text` (UTF-8 without binary control bytes), `csv` (text with a `.csv` name that parses as CSV with a constant number of columns); space- or comma-separated. Others: 415 `attachment_type`.",
    ),
    Setting(
        "ATTACHMENT_IMAGE_MAX_PIXELS",
        _parse_int,
        40_000_000,
        "Most pixels (width × height, read from the image's header) an image attachment may declare (more: 413 `attachment_image_too_large`; a decompression bomb is refused before anything decodes it).",
        1,
        1 << 40,
    ),
    Setting(
        "ATTACHMENT_STORE",
        _parse_attachment_store,
        "auto",
        "Where attachments live: `auto` (the chat store's Redis with a Redis STORE, else the ATTACHMENTS_DIR directory), or a plugin: an entry point name of the group `widget_server.attachment_stores`, or `package.module:Class`.",
    ),
    Setting(
        "ATTACHMENTS_DIR",
        _parse_attachments_dir,
        "",
        "The directory attachments are kept in beside the memory store (created if missing; must be empty or one this server made; its conversations' files are removed at start). Empty: a new temporary directory per process, removed at exit.",
    ),
    Setting(
        "ATTACHMENTS_DIR_MAX_BYTES",
        _parse_int,
        1 << 30,
        "Directory store: bytes all attachments together may hold (more: 503 `attachment_store_full` until conversations expire or are deleted).",
        1,
        1 << 50,
    ),
    Setting(
        "ATTACHMENT_UPLOAD_TIMEOUT_SECONDS",
        _parse_float,
        120.0,
        "Longest time an upload's body may take to arrive, whole (then: 408 `body_timeout`, the connection closed).",
        0.5,
        3600,
    ),
    Setting(
        "RATE_LIMIT_ATTACHMENTS",
        _parse_rate_limits,
        "20/minute;200/day",
        "Attachment uploads per conversation (a retry with the same idempotency key counts too).",
    ),
)

# Theming defaults (docs/theming.md): an embed's ChatWidgetConfig and data-* override each.
THEME_SETTINGS: tuple[Setting, ...] = (
    Setting(
        "THEME_ACCENT",
        theme.parse_accent,
        "",
        "The accent colour, a CSS colour (hex, rgb(), hsl() or a name; empty: the built-in blue); the panel adjusts it where contrast needs (docs/theming.md).",
    ),
    Setting("THEME_RADIUS", theme.parse_radius, "medium", "Corner rounding.", choices=theme.RADII),
    Setting("THEME_DENSITY", theme.parse_density, "comfortable", "Spacing.", choices=theme.DENSITIES),
    Setting(
        "THEME_FONT",
        theme.parse_font,
        "system",
        "`system` or a font-family list (names, quotes, commas, spaces; at most 200 characters).",
    ),
    Setting(
        "THEME_COLOR_SCHEME",
        theme.parse_color_scheme,
        "auto",
        "`light`, `dark` or `auto` (the visitor's preference).",
        choices=theme.COLOR_SCHEMES,
    ),
    Setting("LAUNCHER_LABEL", theme.parse_launcher_label, "", "The launcher's text (empty: the language's)."),
    Setting("LAUNCHER_ICON", theme.parse_launcher_icon, "chat", "The launcher's icon.", choices=theme.LAUNCHER_ICONS),
    Setting(
        "LAUNCHER_Z_INDEX",
        _parse_int,
        2147483000,
        "The launcher's and panel's z-index on the host page.",
        0,
        2147483647,
    ),
)
SETTINGS = SETTINGS + THEME_SETTINGS

SETTINGS_BY_NAME = {setting.name: setting for setting in SETTINGS}


def load_settings(explicit: Mapping[str, Any] | None = None, environ: Mapping[str, str] | None = None) -> Settings:
    """Defaults < environment < explicit; validated. Unknown explicit keys are an error."""
    environ = os.environ if environ is None else environ
    values: Settings = {}
    for setting in SETTINGS:
        value = setting.default
        if setting.env_var in environ:
            value = setting.convert(environ[setting.env_var], f"environment variable {setting.env_var}")
        values[setting.name] = value
    for key, raw in (explicit or {}).items():
        name = key.removeprefix(ENV_PREFIX).upper()
        if name not in SETTINGS_BY_NAME:
            raise ConfigError(f"{key}: unknown setting (known: {', '.join(SETTINGS_BY_NAME)})")
        values[name] = SETTINGS_BY_NAME[name].convert(raw, "configuration")
    _check_together(values)
    return values


def _check_together(values: Settings) -> None:
    if values["ENV"] == "production" and values["FAULTS"]:
        raise ConfigError("FAULTS: fault injection is for tests and QA; it cannot be on when ENV is production")
    if values["ENV"] == "production" and values["QA"]:
        raise ConfigError("QA: the QA page (/qa) is for testers; it cannot be on when ENV is production")
    if values["ENV"] == "production" and values["BACKEND"] == "demo" and not values["ALLOW_DEMO_IN_PRODUCTION"]:
        raise ConfigError(
            "BACKEND: the demo backend plays canned answers; it cannot serve when ENV is production "
            "unless ALLOW_DEMO_IN_PRODUCTION=1"
        )
    if values["ENV"] == "production" and not values["PUBLIC_URL"]:
        raise ConfigError(
            "PUBLIC_URL: required when ENV is production: the origin visitors reach the server at, "
            "such as https://chat.example.com (links and the widget's API address are built on it)"
        )
    if values["STORE"] == "memory" and values["WORKERS"] > 1:
        raise ConfigError(
            "WORKERS: the memory store lives in one process, so resume and cancel would break "
            "across several workers; use WORKERS=1 or a shared store"
        )
    if values["STORE"] != "memory" and not values["STORE"].startswith(REDIS_SCHEMES):
        raise ConfigError(
            f"STORE: {values['STORE']!r} is not a store "
            "(use memory, redis://HOST:PORT/DB or redis+cluster://HOST:PORT[,HOST:PORT…])"
        )
    if values["STORE"].startswith(CLUSTER_SCHEME):
        try:
            cluster_nodes(values["STORE"])
        except BadStoreUrl as error:
            raise ConfigError(f"STORE: {values['STORE']!r}: {error} (redis+cluster://HOST:PORT[,HOST:PORT…])") from None
