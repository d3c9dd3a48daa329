"""The agents file: who may sign in to the console at `/agent` (docs/agents.md, "Accounts").

One JSON document, `{"agents": [{"name", "display_name", "password_hash"}, …]}` (and
`"admin": true` for an agent who may open the owner dashboard at `/admin`, docs/dashboard.md), at the path
of the `AGENTS_FILE` setting, written by `widget-server agents add|remove` (cli.py) and read by
the server. Passwords are kept only as werkzeug's `generate_password_hash` output (scrypt, a
memory-hard KDF, with a random salt); checking one is werkzeug's `check_password_hash`, which
compares in constant time.

Writes are atomic (a temporary file in the same folder, fsynced, then `os.replace`), so a
server reading the file never sees half of it, and the file is created with mode 0600: it
holds password hashes. Concurrent `agents add` runs are serialised by an advisory lock
(`fcntl.flock` on `<file>.lock`), so neither loses the other's entry.

The server re-reads the file when it is replaced or its modification time or size changes, so an account added
or removed by the CLI counts at the next sign-in or request without a restart; a removed
agent's sessions stop working at their next request (api.py asks `get()` each time).
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import logging
import os
import re
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from werkzeug.security import check_password_hash, generate_password_hash

log = logging.getLogger(__name__)

# A name is what an agent types to sign in and what the store keys their claims by: short,
# ASCII, no spaces, so it is never ambiguous in a log line or a Redis key.
NAME_PATTERN = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
MAX_DISPLAY_NAME_CHARS = 80
# Longer passwords are refused rather than silently cut: the form and the CLI say so.
MIN_PASSWORD_CHARS = 8
MAX_PASSWORD_CHARS = 1024


@functools.cache
def _dummy_hash() -> str:
    """Checked against when the name is unknown, so an unknown name costs the same scrypt run
    as a wrong password and the time taken does not tell which of the two was wrong (made on
    first use: a scrypt run is not free, and the CLI never needs it)."""
    return generate_password_hash("not a password of anyone's")


class AccountsError(ValueError):
    """The agents file is missing, unreadable or not an agents file; or a value is invalid.
    The message is a sentence that names the file and what to do."""


@dataclass(frozen=True)
class Agent:
    name: str
    display_name: str
    password_hash: str
    # May open the owner dashboard (`widget-server agents add NAME --admin`; dashboard/api.py).
    admin: bool = False

    def public(self) -> dict[str, str]:
        """What the console and `agents list` may show: never the hash."""
        return {"name": self.name, "display_name": self.display_name}


def check_name(name: str) -> str:
    """The name, lower-cased, or AccountsError saying what a name may be."""
    name = name.strip().lower()
    if not NAME_PATTERN.fullmatch(name):
        raise AccountsError(
            f"{name!r} is not an agent name: use 1 to 64 lower-case letters, digits, '.', '_' or '-', "
            "starting with a letter or a digit"
        )
    return name


def check_display_name(display_name: str) -> str:
    """One line of 1 to MAX_DISPLAY_NAME_CHARS characters (runs of whitespace become one space)."""
    text = " ".join(display_name.split())
    if not text or len(text) > MAX_DISPLAY_NAME_CHARS:
        raise AccountsError(f"a display name has 1 to {MAX_DISPLAY_NAME_CHARS} characters (got {len(text)})")
    if any(not character.isprintable() for character in text):
        raise AccountsError("a display name may not contain control characters")
    return text


def check_password(password: str) -> str:
    if not MIN_PASSWORD_CHARS <= len(password) <= MAX_PASSWORD_CHARS:
        raise AccountsError(f"a password has {MIN_PASSWORD_CHARS} to {MAX_PASSWORD_CHARS} characters")
    return password


def _parse(raw: bytes, path: Path) -> dict[str, Agent]:
    try:
        document = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as error:
        raise AccountsError(f"the agents file {path} is not valid JSON ({error}); fix or remove it") from None
    entries = document.get("agents") if isinstance(document, dict) else None
    if not isinstance(entries, list):
        raise AccountsError(f'the agents file {path} is not an agents file: expected {{"agents": [...]}}')
    agents: dict[str, Agent] = {}
    for index, entry in enumerate(entries):
        fields = ("name", "display_name", "password_hash")
        if not isinstance(entry, dict) or not all(isinstance(entry.get(key), str) for key in fields):
            raise AccountsError(
                f"the agents file {path}: entry {index} needs the strings name, display_name and password_hash"
            )
        try:
            name = check_name(entry["name"])
        except AccountsError as error:
            raise AccountsError(f"the agents file {path}: entry {index}: {error}") from None
        if name in agents:
            raise AccountsError(f"the agents file {path}: the name {name!r} is there twice")
        admin = entry.get("admin", False)
        if not isinstance(admin, bool):
            raise AccountsError(f"the agents file {path}: entry {index}: admin is true or false")
        agents[name] = Agent(name, entry["display_name"], entry["password_hash"], admin)
    return agents


class AgentAccounts:
    """The agents file at `path` ("" when the console is not set up: no agent can sign in)."""

    def __init__(self, path: str) -> None:
        self.path = Path(os.path.expanduser(path)) if path else None
        self._lock = threading.Lock()
        self._seen: tuple[int, int, int] | None = None  # (inode, mtime_ns, size) of what `_agents` holds
        self._agents: dict[str, Agent] = {}

    # -- reading ---------------------------------------------------------------------------

    def read(self) -> dict[str, Agent]:
        """Every agent, by name, read from the file (AccountsError if it is missing or corrupt)."""
        if self.path is None:
            raise AccountsError("no agents file is set: give its path with --agents-file or WIDGET_SERVER_AGENTS_FILE")
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            raise AccountsError(
                f"there is no agents file at {self.path}: create it with `widget-server agents add NAME`"
            ) from None
        except OSError as error:
            raise AccountsError(f"the agents file {self.path} cannot be read: {error.strerror}") from None
        return _parse(raw, self.path)

    def current(self) -> dict[str, Agent]:
        """The agents as the server sees them now: re-read when the file changed; no file (yet),
        or none set, is no agents. A file that became corrupt keeps the last good list (the
        error is raised to the caller once per change, which logs it)."""
        if self.path is None:
            return {}
        try:
            stat = self.path.stat()
        except FileNotFoundError:
            with self._lock:
                self._seen, self._agents = None, {}
            return {}
        # Every write is a new file renamed into place (a new inode), so a password reset of
        # the same size within one timestamp tick is still seen.
        seen = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
        with self._lock:
            if seen != self._seen:
                self._seen = seen  # before parsing: a corrupt file is reported once, not per request
                self._agents = self.read()
            return self._agents

    def anyone(self) -> bool:
        """Whether the file lists anyone (HANDOFF=auto). A file changed to something unreadable
        is logged, and the last good list stands."""
        try:
            return bool(self.current())
        except AccountsError as error:
            log.error("%s", error)
            return bool(self.current())

    def get(self, name: str) -> Agent | None:
        return self.current().get(name.strip().lower())

    def verify(self, name: str, password: str) -> Agent | None:
        """The agent, if `password` is theirs; else None, after the same work either way."""
        try:
            agent = self.get(check_name(name))
        except AccountsError:
            agent = None
        if len(password) > MAX_PASSWORD_CHARS:
            password = ""  # never hash an unbounded input; "" matches no stored hash
        matches = check_password_hash(agent.password_hash if agent else _dummy_hash(), password)
        return agent if agent is not None and matches else None

    # -- writing (the CLI) -----------------------------------------------------------------

    @contextlib.contextmanager
    def _locked(self) -> Iterator[Path]:
        if self.path is None:
            self.read()  # raises the "no agents file is set" error
        assert self.path is not None
        self.path.parent.mkdir(parents=True, exist_ok=True)
        lock_path = self.path.with_name(self.path.name + ".lock")
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield self.path
        finally:
            os.close(fd)  # closing releases the lock

    def _existing(self) -> dict[str, Agent]:
        assert self.path is not None
        return self.read() if self.path.exists() else {}

    def _write(self, agents: dict[str, Agent]) -> None:
        assert self.path is not None
        document = {
            "agents": [
                {
                    "name": a.name,
                    "display_name": a.display_name,
                    "password_hash": a.password_hash,
                    **({"admin": True} if a.admin else {}),
                }
                for a in sorted(agents.values(), key=lambda a: a.name)
            ]
        }
        data = (json.dumps(document, ensure_ascii=False, indent=2) + "\n").encode("utf-8")
        fd, temporary = tempfile.mkstemp(prefix=f".{self.path.name}.", dir=self.path.parent)
        try:
            os.fchmod(fd, 0o600)
            with os.fdopen(fd, "wb") as file:
                file.write(data)
                file.flush()
                os.fsync(file.fileno())
            os.replace(temporary, self.path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary)
            raise

    def add(self, name: str, display_name: str, password: str, *, replace: bool = False, admin: bool = False) -> Agent:
        """Add an agent (AccountsError if the name is taken, unless `replace`); `admin`: who may
        open the owner dashboard."""
        name = check_name(name)
        agent = Agent(name, check_display_name(display_name), generate_password_hash(check_password(password)), admin)
        with self._locked():
            agents = self._existing()
            if name in agents and not replace:
                raise AccountsError(f"there is already an agent named {name!r} in {self.path}")
            agents[name] = agent
            self._write(agents)
        return agent

    def remove(self, name: str) -> Agent:
        name = check_name(name)
        with self._locked():
            agents = self.read()
            if name not in agents:
                raise AccountsError(f"there is no agent named {name!r} in {self.path}")
            removed = agents.pop(name)
            self._write(agents)
        return removed

    def list(self) -> list[Agent]:
        return sorted(self.read().values(), key=lambda a: a.name)
