"""The hand-off store on Redis (with a `redis://` chat store: any worker, any host).

Keys (the chat store's prefix `cw:`; each expires CONVERSATION_TTL_SECONDS after its last
write, as the conversation's own keys do):
  conv:{cid}:handoff         hash  v (version), d (the record's JSON)
  conv:{cid}:handoff:events  stream entry ids `<seq>-1`, field `e` = event JSON, trimmed to
                                    CONVERSATION_EVENTS_MAX
  handoff:desk               hash  v, d: the queue (oldest first) and the claims
  handoff:inbox              hash  v, d: the left messages
  handoff:presence           hash  agent name → last seen (unix seconds)

Every commit is one Lua script (_COMMIT): it compares the version of every record the
transaction read and, only if none changed, writes the records and appends the events, so
it is the compare-and-set of every hand-off transition (store.py). A commit touches the desk
and several conversations' records at once, so on a Redis Cluster every hand-off key carries
one hash tag, `cw:{handoff}:…` (stores/keyspace.py, HANDOFF_TAG): one slot, one shard, for
the hand-off's few writes a minute; the answers' streams spread over the shards.
Readers wait in a TailHub (stores/redis_tail.py: one Pub/Sub subscriber per process for every log).

Bounds (docs/security.md, "Memory"): every key expires with its conversation, each log is
trimmed, the desk holds at most HANDOFF_QUEUE_MAX waiting conversations (the service refuses
more: `busy`), and Redis bounds the rest with its own maxmemory, as for the chat store's keys;
so `Commit.needs_room` is not checked here (only the memory store has a byte budget). The desk
stays one hash rewritten whole by each commit: bench/handoff_desk.py measured 0.28 → 0.88 ms
for its read and commit with 1 → 200 waiting, not worth a key per entry (README, "Hand-off desk").
"""

from __future__ import annotations

import json
from typing import Any, cast

from ..stores.redis import unavailable_on_connection_errors
from ..stores.script_batches import ScriptBatches
from .store import DESK, INBOX, Commit, HandoffStore

# KEYS: records → for each, {version, record JSON} (nil, nil for a record not there). One
# script, sent in batches (stores/script_batches.py): every new question reads its
# conversation's record (is a person answering?), and as a cluster pipeline of HMGETs that
# was 4% of a worker's CPU while 2,000 questions arrived at once (bench/load.py, py-spy).
_LOAD = """
local found = {}
for i, key in ipairs(KEYS) do found[i] = redis.call('HMGET', key, 'v', 'd') end
return found
"""

# KEYS: the records read (as many as ARGV[3]'s records), then one events key per log
# ARGV: ttl seconds, the logs' bound (MAXLEN), the change as JSON:
#   {"records": [[expected version, "keep"|"set"|"del", value JSON]],
#    "logs": [["add", [[seq, event JSON], …]] | ["del", []]]},
#   PUBLISH or SPUBLISH (each new log entry is published as `<seq> <event JSON>`: redis_tail.py)
# → 1 (applied) or 0 (a record changed since it was read: nothing applied).
_COMMIT = """
local change = cjson.decode(ARGV[3])
local records = change['records']
for i, record in ipairs(records) do
  local version = tonumber(redis.call('HGET', KEYS[i], 'v') or '0')
  if version ~= record[1] then return 0 end
end
for i, record in ipairs(records) do
  if record[2] == 'set' then
    redis.call('HSET', KEYS[i], 'v', record[1] + 1, 'd', record[3])
    redis.call('EXPIRE', KEYS[i], ARGV[1])
  elseif record[2] == 'del' then
    redis.call('DEL', KEYS[i])
  end
end
for j, log in ipairs(change['logs']) do
  local key = KEYS[#records + j]
  if log[1] == 'del' then
    redis.call('DEL', key)
  else
    for _, event in ipairs(log[2]) do
      redis.call('XADD', key, 'MAXLEN', ARGV[2], event[1] .. '-1', 'e', event[2])
      redis.call(ARGV[4], key, event[1] .. ' ' .. event[2])  -- heard by readers (stores/redis_tail.py)
    end
    redis.call('EXPIRE', key, ARGV[1])
  end
end
return 1
"""


def _record_key(prefix: str, name: str) -> str:
    if name in (DESK, INBOX):
        return f"{prefix}handoff:{name}"
    return f"{prefix}{name}:handoff"  # conv:<cid> → cw:conv:<cid>:handoff


def _events_key(prefix: str, conversation_id: str) -> str:
    return f"{prefix}conv:{conversation_id}:handoff:events"


@unavailable_on_connection_errors
class RedisHandoffStore(HandoffStore):
    shared = True

    def __init__(self, client: Any, *, max_events: int = 500, ttl: float = 86400.0) -> None:

        from ..stores.keyspace import Keyspace
        from ..stores.redis_connection import connection_trouble, is_cluster
        from ..stores.redis_tail import publish_command, tail_hub

        self.redis = client
        self.max_events = max_events
        self._ttl = max(1, int(ttl))
        self._commit = client.register_script(_COMMIT)
        load = client.register_script(_LOAD)
        self._load_batches = ScriptBatches(client, _LOAD, lambda keys, args: load(keys=keys, args=args))
        self._tail = tail_hub(client, connection_trouble(), max_events=max_events)
        self._publish = publish_command(client)
        # On a cluster every hand-off key shares one slot (keyspace.HANDOFF_TAG): a commit is one
        # script over the desk and the conversations it changes.
        self._prefix = Keyspace(cluster=is_cluster(client)).handoff_prefix

    def close(self) -> None:
        self._tail.close()

    def load(self, keys: list[str]) -> dict[str, tuple[int, dict[str, Any] | None]]:
        found: dict[str, tuple[int, dict[str, Any] | None]] = {}
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
                records.append([version, "set", json.dumps(change.writes[name], ensure_ascii=False)])
        logs: list[list[Any]] = []
        log_keys: list[str] = []
        for conversation_id in change.drop_logs:
            log_keys.append(_events_key(self._prefix, conversation_id))
            logs.append(["del", []])
        for conversation_id, events in change.events.items():
            log_keys.append(_events_key(self._prefix, conversation_id))
            logs.append(["add", [[seq, raw] for seq, raw in events]])
        spec = json.dumps({"records": records, "logs": logs}, ensure_ascii=False)
        # cjson decodes an empty JSON array as an empty object; Lua's ipairs walks both alike.
        applied = self._commit(
            keys=[_record_key(self._prefix, name) for name in names] + log_keys,
            args=[self._ttl, self.max_events, spec, self._publish],
        )
        return bool(applied)

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
