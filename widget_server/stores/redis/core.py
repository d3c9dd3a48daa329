"""What every section of the Redis store shares: the client, the key names, this process's
lease-holder id, the readers' fan-out, and how replies are read.

`RedisStoreBase` holds the state RedisStore's constructor makes; each section (a module of
this package: conversations.py, event_log.py, reading.py, leases.py, compaction.py,
actions.py, feedback.py, revisions.py) is a class on top of it that registers its own Lua
scripts (`lua/<name>.lua`, read once at import: stores/lua.py) when the store is made.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
from abc import abstractmethod
from typing import TYPE_CHECKING, Any

from ...messages import StreamEvent
from ..base import Store
from ..keyspace import Keyspace, bucket
from ..redis_connection import connect, connection_trouble, is_cluster
from .unavailable import unavailable_on_connection_errors

if TYPE_CHECKING:
    from redis.typing import StreamEntry

# The package whose lua/ folder holds the chat store's scripts (stores/lua.py load_script).
SCRIPTS = "widget_server.stores.redis"

# The keys of a conversation and of each of its messages, besides `conv:{cid}` and `msg:{mid}`
# (the package's docstring lists them): what delete_conversation removes, and what a use of the
# conversation renews (get_conversation.lua).
# `:attachments` and `:attachment_bytes`: the conversation's attachments (attachments/redis_store.py),
# so they expire and are deleted with it.
CONVERSATION_KEY_SUFFIXES = (":exchanges", ":requests", ":feedback", ":attachments", ":attachment_bytes")
MESSAGE_KEY_SUFFIXES = (":text", ":events", ":actions", ":lease")


@unavailable_on_connection_errors
class RedisStoreBase(Store):
    shared = True  # other processes write here too: cancellation must be polled

    def __init__(
        self,
        url: str,
        *,
        max_events: int = 4096,
        conversation_ttl: float = 86400.0,
        identified_ttl: float | None = None,
        lease_seconds: float = 10.0,
        finished_log_grace: float = 30.0,
        client: Any = None,
    ) -> None:
        self.max_events = max_events
        # Retention (docs/privacy.md): a conversation's is chosen once, when it is made
        # (RETENTION, or IDENTIFIED_RETENTION for a known visitor's), and kept in its record
        # (`retention`), which every script that renews its keys reads. `_ttl`, the shorter of
        # the two, is what a script falls back on for a record stored before that field
        # existed, and append.lua's bound for renewing during a stream.
        self._anonymous_ttl = max(1, int(conversation_ttl))
        self._identified_ttl = self._anonymous_ttl if identified_ttl is None else max(1, int(identified_ttl))
        self._ttl = min(self._anonymous_ttl, self._identified_ttl)
        self.lease_seconds = lease_seconds
        # A finished answer keeps its whole log this long, then only its terminal entry.
        self._grace_ms = max(0, int(finished_log_grace * 1000))
        self._lease_ms = max(1, int(lease_seconds * 1000))
        self._owner_pid = 0
        self._owner = ""
        # One Redis or a cluster, made as redis_connection.py says (no retries, a short
        # connect timeout, a pool that is never the limit on open streams).
        self.redis = client or connect(url)
        self.keys = Keyspace(cluster=is_cluster(self.redis))
        self._next_compact_bucket = 0
        # compact_due's looks, per compaction set (bucket index): when this process last
        # looked, and the soonest end of grace it has written since.
        self._compact_looked: dict[int, float] = {}
        self._compact_own_due: dict[int, int] = {}
        from ..redis_tail import publish_command, tail_hub

        self._tail = tail_hub(self.redis, connection_trouble(), max_events=max_events)
        self._publish = publish_command(self.redis)
        # The last delta of each answer this process generates, sent but not yet known taken
        # (append_text_soon); written and read only by that answer's run.
        self._unsettled: dict[str, Any] = {}
        self._register_scripts()

    @abstractmethod
    def _register_scripts(self) -> None:
        """Register every section's scripts on this store's client (RedisStore: each in turn)."""

    def close(self) -> None:
        self._tail.close()
        self.redis.close()

    def ping(self) -> None:
        if self.keys.cluster:
            # Every master: the store serves every conversation only while each answers.
            self.redis.ping(target_nodes="primaries")
        else:
            self.redis.ping()

    @property
    def owner(self) -> str:
        """This process's id as a lease holder (recomputed after a fork)."""
        if self._owner_pid != os.getpid():
            self._owner_pid = os.getpid()
            self._owner = f"{socket.gethostname()}:{self._owner_pid}:{secrets.token_hex(4)}"
        return self._owner

    # -- key names (keyspace.py; the package's docstring lists the keys) -------

    def _conv(self, cid: str) -> str:
        return self.keys.conversation(cid)

    def _msg(self, mid: str) -> str:
        return self.keys.message(mid)

    def _lease(self, mid: str) -> str:
        return self.keys.message(mid) + ":lease"

    def _events_key(self, message_id: str) -> bytes:
        """The key of `message_id`'s event log, as the subscriber's tails name it (bytes)."""
        return (self._msg(message_id) + ":events").encode()

    def _compact_key(self, any_id: str) -> str:
        return self.keys.compact(bucket(any_id))

    def _compact_index(self, any_id: str) -> int:
        return bucket(any_id) if self.keys.cluster else self.keys.compact_sets()[0]

    def _own(self, message_id: str) -> None:
        """This process generates `message_id`: its readers here are fed by its appends
        (redis_tail.py TailHub.own), before the first of them is sent."""
        self._tail.own(self._events_key(message_id))


# -- replies -------------------------------------------------------------------


def _event_from_json(raw: bytes | str) -> StreamEvent:
    return StreamEvent.from_json(json.loads(raw))


def _text(reply: bytes | str) -> str:
    """A reply as text: bytes from the store's own client (it does not decode responses),
    str from a client passed in that does."""
    return reply.decode() if isinstance(reply, bytes) else reply


def _entry_seq(entry: StreamEntry) -> int:
    """A log entry's sequence number: its id is `<seq>-1` (the package's docstring)."""
    entry_id, _ = entry
    assert entry_id is not None, "only a consumer group's deleted entries lack an id"
    return int(_text(entry_id).split("-")[0])


def _entry_event(entry: StreamEntry) -> StreamEvent:
    _, fields = entry
    assert fields is not None, "only a consumer group's deleted entries lack fields"
    return _event_from_json(fields[b"e"])


def _events(entries: list[tuple[int, bytes]]) -> list[StreamEvent]:
    return [_event_from_json(raw) for _, raw in entries]
