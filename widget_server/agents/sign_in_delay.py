"""A growing wait between failed agent sign-ins, per name and per client address, and the
device cookie that spares an agent's own browser the name's wait (docs/security.md, "The
agent console"; docs/agents.md, "Sessions").

The rate limit (RATE_LIMIT_AGENT_SIGN_IN, ratelimits.py) caps attempts a minute; over a day
that is still thousands of guesses at one account. OWASP's Authentication Cheat Sheet
("Protect Against Automated Attacks") and its page "Slow Down Online Guessing Attacks with
Device Cookies" describe what is done here:

- Every attempt is counted as it is let through, before its password is checked, and a
  success clears the count; so the count is the failures in a row, and attempts sent in
  parallel cannot all slip through one open moment (the check and the count are one atomic
  step). After FREE_ATTEMPTS, the next attempt must wait FIRST_DELAY_SECONDS, doubling with
  each further attempt: up to CLIENT_MAX_DELAY_SECONDS for a client address, and up to
  NAME_MAX_DELAY_SECONDS for an agent name (the name typed, lower-cased, known or not).
  An attempt during its wait is refused without its password being read; it is not counted,
  so waiting out the delay is always enough.
- The per-name cap is low on purpose: a stranger hammering a name from many addresses makes
  that name's attempts wait at most a minute, never locks the agent out.
- A browser that signed in as a name before holds `__Host-agent_device`, a random token the
  server keeps (as its SHA-256) with the name for DEVICE_SECONDS. For that name such a
  browser is counted under its own device key instead of the name's shared one: the agent at
  their usual browser never waits because of a stranger, and a stolen device cookie still
  waits like a name. The per-client count applies to every browser. Each success replaces
  the browser's token.

The counts live beside the agents' sessions: in the chat store's Redis when the store is
Redis (every worker and host sees one count; the moment is the server's clock, so hosts are
expected to keep time), else in the process, bounded (MEMORY_MAX_COUNTS, MEMORY_MAX_DEVICES).
A count is forgotten FORGET_AFTER_SECONDS after its last attempt.
"""

from __future__ import annotations

import hashlib
import logging
import math
import threading
import time
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..metrics import NO_METRICS, Metrics
from ..stores.base import Store, StoreUnavailable
from ..stores.lua import load_script
from .sessions import MAX_TOKEN_CHARS, new_token

log = logging.getLogger(__name__)

DEVICE_COOKIE = "__Host-agent_device"
DEVICE_SECONDS = 365 * 24 * 3600  # the cookie and its record; renewed at every sign-in

FREE_ATTEMPTS = 3
FIRST_DELAY_SECONDS = 1.0
CLIENT_MAX_DELAY_SECONDS = 15 * 60.0
# Lower than the client's cap: the name is shared with every stranger who types it.
NAME_MAX_DELAY_SECONDS = 60.0
FORGET_AFTER_SECONDS = 24 * 3600.0
# The in-process store's bounds: about 200 bytes a count, 150 a device.
MEMORY_MAX_COUNTS = 100_000
MEMORY_MAX_DEVICES = 10_000

# Failures in a row worth a warning: the 5th, 10th, 20th, 40th, … (a sustained guesser at
# the name's cap of one a minute logs about ten lines a day, not 1,440).
_FIRST_WARNING = 5

# On a Redis Cluster a script may touch keys of one hash slot only: every key here shares the
# tag `{agent_sign_in}` (stores/keyspace.py, "Hash tags"); sign-ins are a few a minute.
REDIS_PREFIX = "cw:{agent_sign_in}:"


def delay_after(attempts: int, cap: float) -> float:
    """Seconds the next attempt waits after `attempts` in a row: none for the first
    FREE_ATTEMPTS - 1, then FIRST_DELAY_SECONDS doubling, at most `cap`."""
    if attempts < FREE_ATTEMPTS:
        return 0.0
    return min(cap, FIRST_DELAY_SECONDS * 2.0 ** min(attempts - FREE_ATTEMPTS, 64))


def _milliseconds(seconds: float) -> int:
    """Times are whole milliseconds inside: a wait that has run out is exactly 0, however the
    clock was moved to it, and Redis's Lua keeps them exact (integers below 2**53)."""
    return round(seconds * 1000)


def _worth_a_warning(failures: int) -> bool:
    ratio, remainder = divmod(failures, _FIRST_WARNING)
    return remainder == 0 and ratio > 0 and ratio & (ratio - 1) == 0


def _device_key(token: str | None) -> str | None:
    if not token or len(token) > MAX_TOKEN_CHARS:
        return None
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Attempt:
    """One sign-in attempt as the counts saw it."""

    client: str
    name: str
    device: str | None  # the browser's device key, when its cookie is for this name
    wait: float  # > 0: refused, seconds before this browser may try again; 0: counted, go on
    client_attempts: int = 0  # in a row, this one included
    name_attempts: int = 0  # under the name's key, or the device's

    @property
    def refused(self) -> bool:
        return self.wait > 0

    @property
    def retry_after(self) -> int:
        return max(1, math.ceil(self.wait))

    def count_keys(self) -> tuple[tuple[str, float], tuple[str, float]]:
        """(count key, its cap) for the client, then for the name or this browser's device."""
        name_key = "device:" + self.device if self.device else "name:" + self.name
        return ("client:" + self.client, CLIENT_MAX_DELAY_SECONDS), (name_key, NAME_MAX_DELAY_SECONDS)


class SignInDelays(ABC):
    """The counts and the devices. `clock` is the time in seconds (tests move it)."""

    def __init__(self, metrics: Metrics = NO_METRICS, clock: Callable[[], float] = time.time) -> None:
        self.metrics = metrics
        self.clock = clock

    def recognised_device(self, token: str | None, name: str) -> str | None:
        """The device key of the browser's cookie if it was given for this name, else None."""
        key = _device_key(token)
        if key is None or not name:
            return None
        return key if self._device_name(key) == name else None

    def begin(self, client: str, name: str, device: str | None) -> Attempt:
        """Count this attempt, or refuse it while an earlier failure's wait is running."""
        attempt = Attempt(client, name, device, 0.0)
        keys = tuple((key, _milliseconds(cap)) for key, cap in attempt.count_keys())
        wait, counts = self._count(keys, _milliseconds(self.clock()))
        if wait > 0:
            self.metrics.agent_sign_in_refused("delayed")
            return Attempt(client, name, device, wait / 1000)
        return Attempt(client, name, device, 0.0, counts[0], counts[1])

    def failed(self, attempt: Attempt) -> None:
        """The attempt's name and password did not match: counted already, told here."""
        self.metrics.agent_sign_in_refused("wrong_credentials")
        if _worth_a_warning(attempt.client_attempts) or _worth_a_warning(attempt.name_attempts):
            # The name as typed, quoted (a form field may hold anything); never the password.
            log.warning(
                "agent sign-in failures in a row: %d for the name %r%s, %d from the client %s",
                attempt.name_attempts,
                attempt.name,
                " (on a browser that signed in as it before)" if attempt.device else "",
                attempt.client_attempts,
                attempt.client,
            )

    def succeeded(self, attempt: Attempt) -> str:
        """Clear the client's, the name's and the device's counts; a new device token for
        this browser and this name (the cookie's value), its old one forgotten."""
        client_key, name_key = attempt.count_keys()
        self._clear([client_key[0], "name:" + attempt.name, name_key[0]])
        if attempt.device:
            self._forget_device(attempt.device)
        token = new_token()
        key = _device_key(token)
        assert key is not None
        self._put_device(key, attempt.name, self.clock() + DEVICE_SECONDS)
        return token

    @abstractmethod
    def _count(self, keys: tuple[tuple[str, int], ...], now: int) -> tuple[int, list[int]]:
        """Atomically, for (key, its cap) at `now`, in milliseconds: (the longest wait still
        running on these keys, []) if any, else (0, each key's attempts after counting this
        one), each key's next wait set."""

    @abstractmethod
    def _clear(self, keys: list[str]) -> None: ...

    @abstractmethod
    def _device_name(self, key: str) -> str | None: ...

    @abstractmethod
    def _put_device(self, key: str, name: str, expires_at: float) -> None: ...

    @abstractmethod
    def _forget_device(self, key: str) -> None: ...


@dataclass
class _Count:
    attempts: int
    until: int  # no attempt before this moment (ms)
    last: int  # when the last attempt was counted (ms)


class MemorySignInDelays(SignInDelays):
    """One process's counts (the memory store's server runs one worker). Least recently
    counted first out past MEMORY_MAX_COUNTS: a sprayer of names keeps its own address's count
    fresh, and that address waits up to CLIENT_MAX_DELAY_SECONDS per try."""

    def __init__(
        self,
        metrics: Metrics = NO_METRICS,
        clock: Callable[[], float] = time.time,
        *,
        max_counts: int = MEMORY_MAX_COUNTS,
        max_devices: int = MEMORY_MAX_DEVICES,
    ) -> None:
        super().__init__(metrics, clock)
        self.max_counts = max_counts
        self.max_devices = max_devices
        self._counts: OrderedDict[str, _Count] = OrderedDict()
        self._devices: OrderedDict[str, tuple[str, float]] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._counts) + len(self._devices)

    def _live(self, key: str, now: int) -> _Count | None:
        count = self._counts.get(key)
        return count if count is not None and count.last + _milliseconds(FORGET_AFTER_SECONDS) > now else None

    def _count(self, keys: tuple[tuple[str, int], ...], now: int) -> tuple[int, list[int]]:
        with self._lock:
            found = [self._live(key, now) for key, _ in keys]
            wait = max((count.until - now for count in found if count is not None), default=0)
            if wait > 0:
                return wait, []
            attempts = []
            for (key, cap), count in zip(keys, found, strict=True):
                number = (count.attempts if count else 0) + 1
                delay = _milliseconds(delay_after(number, cap / 1000))
                self._counts[key] = _Count(number, now + delay, now)
                self._counts.move_to_end(key)
                attempts.append(number)
            # Forgotten ones first (the oldest are at the front), then the least recent.
            while self._counts:
                oldest_key, oldest = next(iter(self._counts.items()))
                if oldest.last + _milliseconds(FORGET_AFTER_SECONDS) > now and len(self._counts) <= self.max_counts:
                    break
                del self._counts[oldest_key]
            return 0, attempts

    def _clear(self, keys: list[str]) -> None:
        with self._lock:
            for key in keys:
                self._counts.pop(key, None)

    def _device_name(self, key: str) -> str | None:
        with self._lock:
            found = self._devices.get(key)
            return found[0] if found is not None and found[1] > self.clock() else None

    def _put_device(self, key: str, name: str, expires_at: float) -> None:
        now = self.clock()
        with self._lock:
            self._devices[key] = (name, expires_at)
            self._devices.move_to_end(key)
            while self._devices:
                oldest_key, (_, oldest_expiry) = next(iter(self._devices.items()))
                if oldest_expiry > now and len(self._devices) <= self.max_devices:
                    break
                del self._devices[oldest_key]

    def _forget_device(self, key: str) -> None:
        with self._lock:
            self._devices.pop(key, None)


# One attempt counted, or refused while a wait runs, atomically: agents/lua/sign_in_count.lua (it
# says what its KEYS and ARGV are and what it returns).
_COUNT = load_script("widget_server.agents", "sign_in_count")


class RedisSignInDelays(SignInDelays):
    """The counts in the chat store's Redis (one Redis or a cluster): every worker, one count."""

    def __init__(self, client: Any, metrics: Metrics = NO_METRICS, clock: Callable[[], float] = time.time) -> None:
        super().__init__(metrics, clock)
        self.redis = client
        self._count_script = client.register_script(_COUNT)

    def _call(self, operation: Callable[[], Any]) -> Any:
        from ..stores.redis_connection import connection_trouble

        try:
            return operation()
        except connection_trouble() as error:
            # 503 `store_unavailable` (errorhandlers.py), as for the sessions beside these.
            raise StoreUnavailable(f"redis: {type(error).__name__}: {error}") from error

    def _count(self, keys: tuple[tuple[str, int], ...], now: int) -> tuple[int, list[int]]:
        names = [REDIS_PREFIX + "count:" + key for key, _ in keys]
        arguments = [
            now,
            FREE_ATTEMPTS,
            _milliseconds(FIRST_DELAY_SECONDS),
            *(cap for _, cap in keys),
            _milliseconds(FORGET_AFTER_SECONDS),
        ]
        found = self._call(lambda: self._count_script(keys=names, args=arguments))
        wait = int(found[0])
        return (wait, []) if wait > 0 else (0, [int(value) for value in found[1:]])

    def _clear(self, keys: list[str]) -> None:
        names = [REDIS_PREFIX + "count:" + key for key in dict.fromkeys(keys)]
        self._call(lambda: self.redis.delete(*names))  # one slot: one DEL, on a cluster too

    def _device_name(self, key: str) -> str | None:
        raw = self._call(lambda: self.redis.get(REDIS_PREFIX + "device:" + key))
        if raw is None:
            return None
        return raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)

    def _put_device(self, key: str, name: str, expires_at: float) -> None:
        milliseconds = max(1, int((expires_at - self.clock()) * 1000))
        self._call(lambda: self.redis.set(REDIS_PREFIX + "device:" + key, name, px=milliseconds))

    def _forget_device(self, key: str) -> None:
        self._call(lambda: self.redis.delete(REDIS_PREFIX + "device:" + key))


def create_sign_in_delays(chat_store: Store, metrics: Metrics = NO_METRICS) -> SignInDelays:
    """In the chat store's backend, as the sessions (sessions.create_sessions): its Redis
    client when it has one, else the process."""
    client = getattr(chat_store, "redis", None)
    return RedisSignInDelays(client, metrics) if client is not None else MemorySignInDelays(metrics)
