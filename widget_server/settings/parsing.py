"""How a setting's raw value (an environment variable's text, or a value given to
`create_app(config)`) becomes a typed value: each parser returns it or raises ValueError with
what was expected, which `Setting.convert` turns into a ConfigError naming the setting."""

from __future__ import annotations

import ipaddress
import json
import os
import re
from typing import Any

from ..attachments.sniff import parse_types
from ..plugins import ATTACHMENT_STORES, registered
from ..wire.webhooks import WEBHOOK_EVENTS


def parse_bool(raw: Any) -> bool:
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text in {"1", "true", "yes", "on"}:
        return True
    if text in {"0", "false", "no", "off", ""}:
        return False
    raise ValueError("expected one of 1/0, true/false, yes/no, on/off")


def parse_int(raw: Any) -> int:
    if isinstance(raw, bool):
        raise ValueError("expected an integer")
    if isinstance(raw, int):
        return raw
    return int(str(raw).strip())


def parse_float(raw: Any) -> float:
    if isinstance(raw, bool):
        raise ValueError("expected a number")
    value = float(raw) if isinstance(raw, (int, float)) else float(str(raw).strip())
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError("expected a finite number")
    return value


def parse_str(raw: Any) -> str:
    return str(raw).strip()


# A duration's units (docs/configuration.md, "Value formats"): seconds, minutes, hours, days.
_DURATION_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*([smhd]?)")


def parse_duration(raw: Any) -> float:
    """A duration in seconds: a plain number of seconds (`86400`), or a number with a unit,
    `s`, `m`, `h` or `d` (`90m`, `12h`, `30d`)."""
    if isinstance(raw, bool):
        raise ValueError("expected a duration such as 30d, 12h, 90m or a number of seconds")
    if isinstance(raw, (int, float)):
        return parse_float(raw)
    found = _DURATION.fullmatch(str(raw).strip().lower())
    if found is None:
        raise ValueError("expected a duration such as 30d, 12h, 90m or a number of seconds")
    return float(found.group(1)) * _DURATION_UNITS[found.group(2)]


def parse_optional_duration(raw: Any) -> float | None:
    """A duration (parse_duration), or None when empty: unset, another setting decides."""
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return None
    return parse_duration(raw)


def parse_handoff(raw: Any) -> str:
    """HANDOFF: auto, on or off; the boolean spellings too (`HANDOFF=0` is off)."""
    text = str(raw).strip().lower()
    if text == "auto":
        return text
    return "on" if parse_bool(raw) else "off"


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


def parse_origins(raw: Any) -> tuple[str, ...]:
    items = raw.split() if isinstance(raw, str) else list(raw)
    origins = tuple(str(item).rstrip("/") for item in items)
    for origin in origins:
        if origin not in ("*", "'self'"):
            _check_origin(origin)
    return origins


def parse_http_url(raw: Any) -> str:
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


def parse_temperature(raw: Any) -> float | None:
    """Empty (or None): not sent, the provider's default; else a number from 0 to 2."""
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return None
    value = parse_float(raw)
    if not 0 <= value <= 2:
        raise ValueError("expected a number from 0 to 2, or empty for the provider's default")
    return value


def parse_folder(raw: Any) -> str:
    """Empty (a built-in default), or an existing folder."""
    path = parse_str(raw)
    if path and not os.path.isdir(os.path.expanduser(path)):
        raise ValueError("no such folder")
    return path


def parse_optional_url(raw: Any) -> str:
    """Empty, or an absolute http(s) URL (links in answers must be absolute)."""
    url = parse_str(raw)
    scheme, sep, rest = url.partition("://")
    if url and (
        not sep or scheme.lower() not in {"http", "https"} or not rest.split("/", 1)[0] or any(c.isspace() for c in url)
    ):
        raise ValueError("expected empty or an http:// or https:// URL such as https://www.example.com/help/")
    return url


def parse_public_url(raw: Any) -> str:
    """Empty, or the origin visitors reach the server at: scheme://host[:port], lower-cased,
    without a path (a trailing `/` is removed), query, fragment or credentials."""
    url = parse_str(raw).rstrip("/").lower()
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


def parse_hosts(raw: Any) -> tuple[str, ...]:
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


def parse_attachments_dir(raw: Any) -> str:
    """Empty (a temporary folder per process), or a folder that is new, empty or the store's own."""
    path = parse_str(raw)
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


def parse_attachment_store(raw: Any) -> str:
    """`auto`, `package.module:Class` (loaded when the app starts), or a registered plugin's name."""
    name = parse_str(raw) or "auto"
    if name == "auto" or ":" in name:
        return name
    installed = sorted(registered(ATTACHMENT_STORES))
    if name not in installed:
        known = ", ".join(installed) or "none installed"
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
    text = parse_str(raw)
    if text and (len(text) > 254 or not _EMAIL.fullmatch(text)):
        raise ValueError("expected one email address such as help@example.com (or empty)")
    return text


def parse_rate_limits(raw: Any) -> str:
    """Empty (no limit), or flask-limiter's notation: `20/minute;500/day`."""
    text = parse_str(raw)
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


def one_line(raw: Any, max_chars: int) -> str:
    """`raw` as one line (runs of whitespace, newlines included, become one space) of at most
    `max_chars` characters."""
    line = " ".join(str(raw).split())
    if len(line) > max_chars:
        raise ValueError(f"at most {max_chars} characters (got {len(line)})")
    return line


MAX_CONSENT_TEXT_CHARS = 500


def parse_consent_text(raw: Any) -> str:
    """The consent line the panel shows before a first message: one line of at most
    MAX_CONSENT_TEXT_CHARS characters ("": no consent step)."""
    return one_line(raw, MAX_CONSENT_TEXT_CHARS)


def parse_greeting(raw: Any) -> str:
    """The panel's greeting: one line of at most MAX_GREETING_CHARS characters."""
    return one_line(raw, MAX_GREETING_CHARS)


MAX_LAUNCHER_LABEL_CHARS = 40


def parse_launcher_label(raw: Any) -> str:
    """The launcher's text: one line of at most MAX_LAUNCHER_LABEL_CHARS characters ("": the language's)."""
    return one_line(raw, MAX_LAUNCHER_LABEL_CHARS)


def parse_webhook_urls(raw: Any) -> tuple[str, ...]:
    """Webhook receivers (docs/webhooks.md): http(s) URLs, space or comma separated, each with a
    host and without credentials or a fragment (the signature authenticates a delivery, never a
    password in the URL)."""
    items = re.split(r"[\s,]+", raw.strip()) if isinstance(raw, str) else [str(item) for item in raw]
    urls = tuple(item for item in items if item)
    for url in urls:
        scheme, sep, rest = url.partition("://")
        authority = rest.split("/", 1)[0].split("?", 1)[0]
        if not sep or scheme.lower() not in {"http", "https"} or not authority:
            raise ValueError(f"{url!r} is not an http:// or https:// URL such as https://hooks.example.com/chat")
        if "@" in authority or "#" in url or any(character.isspace() for character in url):
            raise ValueError(f"{url!r}: a webhook URL carries no credentials and no fragment")
    return urls


def parse_webhook_events(raw: Any) -> tuple[str, ...]:
    """Webhook event types (wire/webhooks.py), space or comma separated; empty: every one."""
    items = re.split(r"[\s,]+", raw.strip()) if isinstance(raw, str) else [str(item) for item in raw]
    chosen = tuple(item for item in items if item)
    unknown = [item for item in chosen if item not in WEBHOOK_EVENTS]
    if unknown:
        raise ValueError(f"unknown event {', '.join(map(repr, unknown))} (known: {', '.join(WEBHOOK_EVENTS)})")
    return chosen or WEBHOOK_EVENTS
