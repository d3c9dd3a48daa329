"""The hand-off store on Redis (with a `redis://` chat store: any worker, any host).

Keys (the chat store's prefix `cw:`; each expires its conversation's retention, RETENTION or
IDENTIFIED_RETENTION, after its last write, as the conversation's own keys do):
  conv:{cid}:handoff         hash  v (version), d (the record's JSON)
  conv:{cid}:handoff:events  stream entry ids `<seq>-1`, field `e` = event JSON, trimmed to
                                    CONVERSATION_EVENTS_MAX
  handoff:desk               hash  v, d: the queue (oldest first) and the claims
  handoff:left:{id}          hash  v, d: a left message
  handoff:inbox:index        sorted set  left message id, scored by when it was left (µs)
  handoff:inbox:unreplied    sorted set  the same, for those no agent has replied to
  handoff:inbox:meta         hash  expired: how many the index has let go
  handoff:presence           hash  agent name → last seen (unix seconds)
  handoff:visitors           hash  conversation id → its visitor's stream last open (unix seconds)

Every commit is one Lua script (lua/commit.lua): it compares the version of every record the
transaction read and, only if none changed, writes the records and appends the events, so
it is the compare-and-set of every hand-off transition (store.py), and it changes the inbox's
index in the same step. A commit touches the desk
and several conversations' records at once, so on a Redis Cluster every hand-off key carries
one hash tag, `cw:{handoff}:…` (stores/keyspace.py, HANDOFF_TAG): one slot, one shard, for
the hand-off's few writes a minute; the answers' streams spread over the shards.
Readers wait in a TailHub (stores/redis_tail.py: one Pub/Sub subscriber per process for every log).

Bounds (docs/security.md, "Memory"): every key expires with its conversation, each log is
trimmed, the desk holds at most HANDOFF_QUEUE_MAX waiting conversations (the service refuses
more: `busy`), and Redis bounds the rest with its own maxmemory, as for the chat store's keys;
so `Commit.needs_room` is not checked here (only the memory store has a byte budget). The desk
stays one hash rewritten whole by each commit: bench/handoff_desk.py measures its read and
commit with 1 and with 200 waiting, and the difference is not worth a key per entry
(docs/performance.md, "Hand-off desk", has the figures).
"""

from __future__ import annotations

import json
import time
from typing import Any, cast

from ..stores.lua import load_script
from ..stores.redis import unavailable_on_connection_errors
from ..stores.script_batches import ScriptBatches
from .store import (
    CONVERSATION_PREFIX,
    DESK,
    LEFT_PREFIX,
    LEGACY_INBOX,
    Commit,
    HandoffStore,
    InboxPage,
    StoredRecord,
    conversation_key,
    inbox_score,
    left_key,
)

# The scripts, in handoff/lua/ (each file says what its KEYS and ARGV are and what it returns):
# load.lua reads records, commit.lua is every hand-off transition, inbox_page.lua pages the inbox.
_LOAD = load_script("widget_server.handoff", "load")
_COMMIT = load_script("widget_server.handoff", "commit")
_INBOX_PAGE = load_script("widget_server.handoff", "inbox_page")


def _record_key(prefix: str, name: str) -> str:
    if name in (DESK, LEGACY_INBOX) or name.startswith(LEFT_PREFIX):
        return f"{prefix}handoff:{name}"  # left:<id> → cw:handoff:left:<id>
    return f"{prefix}{name}:handoff"  # conv:<cid> → cw:conv:<cid>:handoff


def _events_key(prefix: str, conversation_id: str) -> str:
    return f"{prefix}conv:{conversation_id}:handoff:events"


@unavailable_on_connection_errors
class RedisHandoffStore(HandoffStore):
    shared = True

    def __init__(
        self,
        client: Any,
        *,
        max_events: int = 500,
        ttl: float = 86400.0,
        identified_ttl: float | None = None,
        max_inbox: int = 10_000,
    ) -> None:

        from ..stores.keyspace import Keyspace
        from ..stores.redis_connection import connection_trouble, is_cluster
        from ..stores.redis_tail import publish_command, tail_hub

        self.redis = client
        self.max_events = max_events
        # Retention (docs/privacy.md): a record or log of a known visitor's conversation (one
        # whose record names its `visitor`) lives IDENTIFIED_RETENTION after its last write, any
        # other RETENTION; the desk and the inbox's index, shared by every conversation, the
        # longer of the two.
        self._anonymous_ttl = max(1, int(ttl))
        self._identified_ttl = self._anonymous_ttl if identified_ttl is None else max(1, int(identified_ttl))
        self._ttl = max(self._anonymous_ttl, self._identified_ttl)
        self.max_inbox = max_inbox
        self._commit = client.register_script(_COMMIT)
        self._inbox_page = client.register_script(_INBOX_PAGE)
        load = client.register_script(_LOAD)
        self._load_batches = ScriptBatches(client, _LOAD, lambda keys, args: load(keys=keys, args=args))
        self._tail = tail_hub(client, connection_trouble(), max_events=max_events)
        self._publish = publish_command(client)
        # On a cluster every hand-off key shares one slot (keyspace.HANDOFF_TAG): a commit is one
        # script over the desk and the conversations it changes.
        self._prefix = Keyspace(cluster=is_cluster(client)).handoff_prefix
        self._inbox_keys = [f"{self._prefix}handoff:inbox:{part}" for part in ("index", "unreplied", "meta")]

    def close(self) -> None:
        self._tail.close()

    def load(self, keys: list[str]) -> dict[str, tuple[int, StoredRecord | None]]:
        found: dict[str, tuple[int, StoredRecord | None]] = {}
        if not keys:
            return found
        records = self._load_batches([_record_key(self._prefix, key) for key in keys], [])
        for key, (version, data) in zip(keys, records, strict=True):
            found[key] = (0, None) if version is None else (int(version), json.loads(data))
        return found

    def commit(self, change: Commit) -> bool:
        names = list(change.expected) + [key for key in change.writes if key not in change.expected]
        records = []
        for name in names:
            version = change.expected.get(name, 0)
            if name not in change.writes:
                records.append([version, "keep", ""])
            elif change.writes[name] is None:
                records.append([version, "del", ""])
            else:
                value = change.writes[name]
                records.append([version, "set", json.dumps(value, ensure_ascii=False), self._record_ttl(name, value)])
        logs: list[list[Any]] = []
        log_keys: list[str] = []
        for conversation_id in change.drop_logs:
            log_keys.append(_events_key(self._prefix, conversation_id))
            logs.append(["del", [], 0])
        for conversation_id, events in change.events.items():
            log_keys.append(_events_key(self._prefix, conversation_id))
            record = change.writes.get(conversation_key(conversation_id))
            # A log lives as its conversation's record; written without it (never, today), the
            # shorter retention, so it cannot outlive its conversation.
            ttl = (
                self._record_ttl(conversation_key(conversation_id), record)
                if record
                else min(self._anonymous_ttl, self._identified_ttl)
            )
            logs.append(["add", [[seq, raw] for seq, raw in events], ttl])
        inbox = [change.inbox_remove, [[i, str(score)] for i, score in change.inbox_add], change.inbox_replied]
        spec = json.dumps({"records": records, "logs": logs, "inbox": inbox}, ensure_ascii=False)
        # cjson decodes an empty JSON array as an empty object; Lua's ipairs and # take both alike.
        # Scores go as strings: Lua would print a number of 16 digits in 14 (`%.14g`).
        applied = self._commit(
            keys=[_record_key(self._prefix, name) for name in names] + log_keys + self._inbox_keys,
            args=[self._ttl, self.max_events, spec, self._publish, self.max_inbox, self._horizon()],
        )
        if not applied:
            return False
        self._delete_left(applied[1:])
        return True

    def _record_ttl(self, name: str, value: Any) -> int:
        """Seconds a written record lives: its conversation's retention for a conversation's
        hand-off or a left message (identified when it names its `visitor`), the longer one for
        the desk."""
        if not name.startswith((CONVERSATION_PREFIX, LEFT_PREFIX)):
            return self._ttl
        return self._identified_ttl if isinstance(value, dict) and "visitor" in value else self._anonymous_ttl

    def _horizon(self) -> str:
        return str(inbox_score(time.time() - self._ttl))

    def _delete_left(self, left_message_ids: list[bytes]) -> None:
        """The records of left messages the inbox let go (else they would stay until their ttl)."""
        if left_message_ids:
            self.redis.delete(*(_record_key(self._prefix, left_key(i.decode())) for i in left_message_ids))

    def inbox_page(self, limit: int, before: int | None) -> InboxPage:
        upper = "+inf" if before is None else f"({before}"
        page, unreplied, expired, gone = self._inbox_page(keys=self._inbox_keys, args=[self._horizon(), upper, limit])
        self._delete_left(gone)
        entries = [(int(float(page[i + 1])), page[i].decode()) for i in range(0, len(page), 2)]
        return InboxPage(entries, int(unreplied), int(expired))

    def read_events(self, conversation_id: str, after_seq: int, timeout: float) -> list[tuple[int, str]] | None:
        key = _events_key(self._prefix, conversation_id)
        tail_key = key.encode()
        buffered = self._tail.peek(tail_key, after_seq)
        if buffered is None:
            direct = self._events_after(key, after_seq)
            if direct is None or direct:
                return direct
        elif buffered:
            return [(seq, raw.decode()) for seq, raw in buffered]
        buffered = self._tail.wait(tail_key, after_seq, timeout)
        if buffered is None:
            return self._events_after(key, after_seq)
        return [(seq, raw.decode()) for seq, raw in buffered]

    def _events_after(self, key: str, after_seq: int) -> list[tuple[int, str]] | None:
        entries = self.redis.xrange(key, min=f"({after_seq}-1", max="+")
        if not entries:
            return []
        events = [(int(entry_id.split(b"-")[0]), cast("bytes", fields[b"e"]).decode()) for entry_id, fields in entries]
        if events[0][0] != after_seq + 1:
            return None  # trimmed past this position
        return events

    def seen(self, agent_name: str, when: float) -> None:
        pipe = self.redis.pipeline(transaction=False)
        pipe.hset(self._prefix + "handoff:presence", agent_name, repr(when))
        pipe.expire(self._prefix + "handoff:presence", self._ttl)
        pipe.execute()

    def presence(self) -> dict[str, float]:
        found = cast("dict[bytes, bytes]", self.redis.hgetall(self._prefix + "handoff:presence"))
        return {name.decode(): float(when) for name, when in found.items()}

    # One hash beside the agents' presence, under the hand-off's hash tag (one slot on a
    # cluster, as every hand-off key); it expires with the store's ttl when nobody is marked.
    # The service forgets the entries of hand-offs that are over (release_lapsed), so it holds
    # about the queued and assigned ones.

    def visitor_seen(self, conversation_id: str, when: float) -> None:
        pipe = self.redis.pipeline(transaction=False)
        pipe.hset(self._prefix + "handoff:visitors", conversation_id, repr(when))
        pipe.expire(self._prefix + "handoff:visitors", self._ttl)
        pipe.execute()

    def visitors_seen(self, conversation_ids: list[str] | None = None) -> dict[str, float]:
        key = self._prefix + "handoff:visitors"
        if conversation_ids is None:
            found = cast("dict[bytes, bytes]", self.redis.hgetall(key))
            return {conversation_id.decode(): float(when) for conversation_id, when in found.items()}
        if not conversation_ids:
            return {}
        whens = cast("list[bytes | None]", self.redis.hmget(key, conversation_ids))
        return {cid: float(when) for cid, when in zip(conversation_ids, whens, strict=True) if when is not None}

    def forget_visitors(self, conversation_ids: list[str]) -> None:
        if conversation_ids:
            self.redis.hdel(self._prefix + "handoff:visitors", *conversation_ids)
