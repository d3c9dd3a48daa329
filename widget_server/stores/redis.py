"""The shared store: Redis (≥ 7) or Valkey, for several workers on several hosts.

Every write that can race is one Lua script, so it is atomic on the server:
the request-id claim, and each event append with its state transition
(terminal states are compare-and-set: the first ending wins, whichever
process sends it). Each message's events live in a Redis Stream whose entry
ids are `<seq>-1`, trimmed to the newest `max_events`; readers on any worker
read it (and hear its new entries: below). The answer's text is a plain string key grown
with APPEND, so a long answer costs O(1) per delta.

Readers do not each block in Redis: every append also publishes its entry,
and one subscriber per process hears the logs its readers wait on and hands
them the entries (redis_tail.py). Concurrent appends go to Redis together
(script_batches.py).

Keys (prefix `cw:`), all expiring after the conversation TTL, refreshed on use (by a delta at
most once a minute):
  conv:{cid}            hash  token_hash, created_at
  conv:{cid}:exchanges  list  exchange JSON, in order (a regenerate's or an edit's also names
                              the answer it `replaces`: stores/base.py listed_exchanges)
  conv:{cid}:requests   hash  request_id → exchange JSON
  msg:{mid}             hash  conversation_id, state, last_seq, error, reported (a
                              client report was counted: once per message)
  msg:{mid}:text        string the answer so far
  msg:{mid}:events      stream field `e` = event JSON
  msg:{mid}:actions     list  the message's action proposals (JSON), in order
  msg:{mid}:lease       string the generating process's id; expires after the
                              lease time unless renewed (NOT refreshed with the TTL)
  action:{aid}          hash  conversation_id, message_id, name, proposal, status,
                              key (the claiming idempotency key), result, error
  conv:{cid}:feedback   hash  assistant message id → feedback JSON (rating, comment,
                              updated_at): one record per message

Deleting a conversation (`delete_conversation`) is one script that removes all of these
for the conversation, its messages and their actions at once; the rate limits' keys for it
are ratelimits.py's (`RateLimits.forget_conversation`).

An action's execution is claimed by one Lua compare-and-set (proposed →
executing, recording the idempotency key), so however many confirms race,
on however many workers, exactly one runs it.

Ownership: the claim that creates a message also creates its lease, in the
same script, so there is no instant at which a new message looks orphaned.
The generating process renews it (generation.py); when it dies, the lease
expires, and the first reader or request that notices fails the message with
`worker_lost` (one compare-and-set: the same script as every other ending).

Redis errors (refused connection, reset, loading) become StoreUnavailable.
Commands are never retried by the client library: a script whose reply was
lost may have run, and running an APPEND twice would duplicate text. The next
command reconnects, so the store recovers by itself when Redis is back.
"""

from __future__ import annotations

import functools
import json
import os
import secrets
import socket
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast

from ..errors import ErrorInfo
from ..messages import EventKind, MessageState, StreamEvent, replace_lone_surrogates, text_digest
from .base import (
    ActionRecord,
    ActionStatus,
    Claim,
    Conversation,
    Exchange,
    FeedbackRecord,
    MessageInfo,
    RequestConflict,
    Revision,
    RevisionRefused,
    SentAttachment,
    Store,
    StoreUnavailable,
    UnknownMessage,
    backend_history,
)

# Key names, with a Redis Cluster's hash tags or without (keyspace.py). Ended messages whose
# logs are still whole wait in a compact set, scored by when to compact them (unix ms).
from .keyspace import PREFIX, Keyspace, bucket
from .redis_connection import connect, connection_trouble, is_cluster
from .script_batches import Call, ScriptBatches

if TYPE_CHECKING:
    from redis.typing import StreamEntry


# How long compact_due may go without looking at a compaction set while this process writes
# nothing whose grace has ended (RedisStore.compact_due).
COMPACT_LOOK_SECONDS = 1.0

# KEYS: conv, exchanges, requests, msg, lease
# ARGV: request_id, exchange_json, fingerprint, ttl, lease_ms, owner
_CLAIM = """
if redis.call('EXISTS', KEYS[1]) == 0 then return {'unknown'} end
local existing = redis.call('HGET', KEYS[3], ARGV[1])
if existing then
  local fingerprint = cjson.decode(existing)['fingerprint']
  if fingerprint ~= ARGV[3] then return {'conflict', existing} end
  return {'existing', existing}
end
redis.call('RPUSH', KEYS[2], ARGV[2])
redis.call('HSET', KEYS[3], ARGV[1], ARGV[2])
local conversation = cjson.decode(ARGV[2])
redis.call('HSET', KEYS[4], 'conversation_id', conversation['conversation_id'], 'state', 'accepted', 'last_seq', 0)
for i = 1, 4 do redis.call('EXPIRE', KEYS[i], ARGV[4]) end
redis.call('SET', KEYS[5], ARGV[6], 'PX', ARGV[5])
-- With the conversation's exchanges, the new one last: the backend's history is read from
-- them, without another round trip.
return {'created', ARGV[2], redis.call('LRANGE', KEYS[2], 0, -1)}
"""

# A regenerate or edit (widget_server/revisions.py): the request-id claim of _CLAIM, then
# stores/base.py revision_refusal in the same script (the target is the newest exchange
# whose ARGV[7] field is ARGV[8]; it may be replaced only if no later exchange's answer is
# listed, i.e. neither failed, cancelled nor gone, and once its own answer has ended), then
# the new exchange (ARGV[2]; a regenerate copies the target's user message id and text).
# It reads the states of the conversation's answers (msg:{mid}, built from ARGV[9]) without
# declaring them in KEYS, which one Redis server allows; like _APPEND, whose keys already span
# hash slots (the global compaction set), it is not for a Redis Cluster.
# KEYS: conv, exchanges, requests, msg, lease
# ARGV: request_id, exchange_json, fingerprint, ttl, lease_ms, owner, target field
#       ('assistant_message_id' | 'user_message_id'), target id, message key prefix
_CLAIM_REVISION = """
if redis.call('EXISTS', KEYS[1]) == 0 then return {'unknown'} end
local existing = redis.call('HGET', KEYS[3], ARGV[1])
if existing then
  local fingerprint = cjson.decode(existing)['fingerprint']
  if fingerprint ~= ARGV[3] then return {'conflict', existing} end
  return {'existing', existing}
end
local exchanges = redis.call('LRANGE', KEYS[2], 0, -1)
local target, index
for i = #exchanges, 1, -1 do
  local exchange = cjson.decode(exchanges[i])
  if exchange[ARGV[7]] == ARGV[8] then target = exchange; index = i; break end
end
if not target then return {'refused', 'not_found'} end
local function state(exchange) return redis.call('HGET', ARGV[9] .. exchange['assistant_message_id'], 'state') end
local target_state = state(target)
if not target_state then return {'refused', 'not_found'} end
for i = index + 1, #exchanges do
  local later = state(cjson.decode(exchanges[i]))
  if later and later ~= 'failed' and later ~= 'cancelled' then return {'refused', 'not_last'} end
end
if target_state ~= 'completed' and target_state ~= 'failed' and target_state ~= 'cancelled' then
  return {'refused', 'not_finished'}
end
local new = cjson.decode(ARGV[2])
if ARGV[7] == 'assistant_message_id' then
  new['user_message_id'] = target['user_message_id']
  new['user_text'] = target['user_text']
end
new['attachments'] = target['attachments']  -- an edit keeps the turn's files (Revision.replacing)
new['replaces'] = target['assistant_message_id']
local encoded = cjson.encode(new)
redis.call('RPUSH', KEYS[2], encoded)
redis.call('HSET', KEYS[3], ARGV[1], encoded)
redis.call('HSET', KEYS[4], 'conversation_id', new['conversation_id'], 'state', 'accepted', 'last_seq', 0)
for i = 1, 4 do redis.call('EXPIRE', KEYS[i], ARGV[4]) end
redis.call('SET', KEYS[5], ARGV[6], 'PX', ARGV[5])
return {'created', encoded}
"""

# KEYS: msg, text, events, actions (the message's proposals, spliced into `complete`), lease,
#       the set of ended logs waiting to be compacted
# ARGV: op (start|text|complete|fail|cancel|lost), payload_json, text (for op text), maxlen, ttl, message_id,
#       when to compact an ended log (unix ms; 0: now), PUBLISH or SPUBLISH (redis_tail.publish_command)
# Returns the event JSON, or nil when the transition is refused. `lost` is a
# `fail` allowed only once the lease has expired. An ending compacts the log to
# its terminal entry at once (XADD MAXLEN 1), or records when to (compact_due).
# The new entry is published on the log's channel as `<seq> <event JSON>` (redis_tail.py).
_APPEND = """
local state = redis.call('HGET', KEYS[1], 'state')
if not state then return nil end
local op = ARGV[1]
local allowed
if op == 'start' then allowed = (state == 'accepted')
elseif op == 'text' or op == 'complete' then allowed = (state == 'running')
else allowed = (state == 'accepted' or state == 'running') end
if op == 'lost' then allowed = allowed and redis.call('EXISTS', KEYS[5]) == 0 end
if not allowed then return nil end
local seq = redis.call('HINCRBY', KEYS[1], 'last_seq', 1)
local encoded
if op == 'start' or op == 'text' then
  -- The payload's fields as they are, with seq and message_id spliced in: no cjson decode
  -- and encode per delta (ids are URL-safe characters only: protocol.py new_id).
  encoded = string.sub(ARGV[2], 1, -2) .. ',"seq":' .. seq .. ',"message_id":"' .. ARGV[6] .. '"}'
  if op == 'start' then redis.call('HSET', KEYS[1], 'state', 'running')
  elseif redis.call('APPEND', KEYS[2], ARGV[3]) == #ARGV[3] then
    redis.call('EXPIRE', KEYS[2], ARGV[5])  -- the first delta made the text: it expires too
  end
else
  local event = cjson.decode(ARGV[2])
  event['seq'] = seq
  event['message_id'] = ARGV[6]
  if op == 'complete' then redis.call('HSET', KEYS[1], 'state', 'completed')
  else
    -- length in code points: count the bytes that do not continue a UTF-8 sequence
    local text = redis.call('GET', KEYS[2]) or ''
    event['length'] = select(2, string.gsub(text, '[^\\128-\\191]', ''))
    if op == 'fail' or op == 'lost' then
      redis.call('HSET', KEYS[1], 'state', 'failed', 'error', cjson.encode(event['error']))
    else
      redis.call('HSET', KEYS[1], 'state', 'cancelled')
    end
  end
  encoded = cjson.encode(event)
  if op == 'complete' and KEYS[4] then
    -- the proposals, as stored (raw JSON, not re-encoded by cjson)
    local actions = redis.call('LRANGE', KEYS[4], 0, -1)
    if #actions > 0 then
      encoded = string.sub(encoded, 1, -2) .. ',"actions":[' .. table.concat(actions, ',') .. ']}'
    end
  end
end
local ending = op ~= 'start' and op ~= 'text'
if ending then
  -- the text stops growing: rewrite it, so it holds no room APPEND reserved
  local text = redis.call('GET', KEYS[2])
  if text then redis.call('SET', KEYS[2], text) end
  -- compacted now: a new stream of the terminal entry alone (a trimmed one keeps its node's room)
  if ARGV[7] == '0' then redis.call('DEL', KEYS[3]) end
end
redis.call('XADD', KEYS[3], 'MAXLEN', ARGV[4], seq .. '-1', 'e', encoded)
redis.call(ARGV[8], KEYS[3], seq .. ' ' .. encoded)
-- Every key expires a TTL after its last use (the actions list too, if any; never the lease).
-- A delta renews them only once a minute: four EXPIREs per delta were most of its commands.
if op ~= 'text' or redis.call('TTL', KEYS[1]) < ARGV[5] - 60 then
  for i = 1, 4 do redis.call('EXPIRE', KEYS[i], ARGV[5]) end
end
if ending then
  redis.call('DEL', KEYS[5])  -- ended: nobody owns it
  if ARGV[7] ~= '0' then redis.call('ZADD', KEYS[6], ARGV[7], ARGV[6]) end
end
return encoded
"""

# KEYS: events. An ended log, compacted: a new stream of its newest (terminal) entry alone,
# with the same expiry. Returns 1, or 0 for a log that is gone.
_COMPACT = """
local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
if #last == 0 then return 0 end
local ttl = redis.call('PTTL', KEYS[1])
redis.call('DEL', KEYS[1])
redis.call('XADD', KEYS[1], last[1][1], unpack(last[1][2]))
if ttl > 0 then redis.call('PEXPIRE', KEYS[1], ttl) end
return 1
"""

# KEYS: msg, events, actions list, action
# ARGV: proposal_json (an object), maxlen, ttl, message_id, conversation_id, name, PUBLISH or SPUBLISH
# Appends `action.proposed` (the proposal's fields spliced in as they are) and
# stores the action, only while the message is running.
_ADD_ACTION = """
if redis.call('HGET', KEYS[1], 'state') ~= 'running' then return nil end
local seq = redis.call('HINCRBY', KEYS[1], 'last_seq', 1)
local encoded = '{"kind":"action.proposed","message_id":"' .. ARGV[4] .. '","seq":' .. seq .. ',' .. string.sub(ARGV[1], 2)
redis.call('XADD', KEYS[2], 'MAXLEN', ARGV[2], seq .. '-1', 'e', encoded)
redis.call(ARGV[7], KEYS[2], seq .. ' ' .. encoded)
redis.call('RPUSH', KEYS[3], ARGV[1])
redis.call('HSET', KEYS[4], 'conversation_id', ARGV[5], 'message_id', ARGV[4], 'name', ARGV[6],
  'proposal', ARGV[1], 'status', 'proposed', 'key', '')
for i = 1, 4 do redis.call('EXPIRE', KEYS[i], ARGV[3]) end
return encoded
"""

# KEYS: action; ARGV: idempotency key, ttl → outcome
_CLAIM_ACTION = """
local status = redis.call('HGET', KEYS[1], 'status')
if not status then return nil end
redis.call('EXPIRE', KEYS[1], ARGV[2])
if status == 'proposed' then
  redis.call('HSET', KEYS[1], 'status', 'executing', 'key', ARGV[1])
  return 'claimed'
end
if status == 'dismissed' then return 'dismissed' end
if redis.call('HGET', KEYS[1], 'key') == ARGV[1] then return 'same' end
return 'other'
"""

# KEYS: action; ARGV: idempotency key, status, result_json, error_json, ttl
_FINISH_ACTION = """
if redis.call('HGET', KEYS[1], 'status') ~= 'executing' or redis.call('HGET', KEYS[1], 'key') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'status', ARGV[2], 'result', ARGV[3], 'error', ARGV[4])
redis.call('EXPIRE', KEYS[1], ARGV[5])
return 1
"""

# KEYS: action → outcome
_DISMISS_ACTION = """
local status = redis.call('HGET', KEYS[1], 'status')
if not status then return nil end
if status == 'proposed' then redis.call('HSET', KEYS[1], 'status', 'dismissed'); status = 'dismissed' end
if status == 'dismissed' then return 'dismissed' end
return 'confirmed'
"""

# KEYS: msg → 1 for the message's first report, else 0 (the field lives and expires with the message)
_CLAIM_REPORT = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
return redis.call('HSETNX', KEYS[1], 'reported', 1)
"""

# KEYS: msg, lease; ARGV: owner, lease_ms → the state. The lease is renewed only while the
# message is accepted or running: a renewal must never bring back the lease of an answer
# that ended, or of one whose conversation was deleted meanwhile (no key of it may remain).
_RENEW = """
local state = redis.call('HGET', KEYS[1], 'state')
if state == 'accepted' or state == 'running' then redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2]) end
return state
"""

# KEYS: conv, feedback; ARGV: message_id, record_json, ttl → {'unknown'} | {'created'} |
# {'replaced', the previous record's JSON}. Never creates feedback for a conversation that is gone.
_PUT_FEEDBACK = """
if redis.call('EXISTS', KEYS[1]) == 0 then return {'unknown'} end
local previous = redis.call('HGET', KEYS[2], ARGV[1])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
redis.call('EXPIRE', KEYS[2], ARGV[3])
if previous then return {'replaced', previous} end
return {'created'}
"""

# KEYS: conv, the set of ended logs waiting to be compacted
# ARGV: the key prefix, the conversation's key suffixes and each message's (space-separated)
# → 1, or 0 for a conversation that does not exist. Its messages are every exchange it ever
# claimed (the requests hash holds them all, a replaced answer's too); their keys are named
# here, from those lists, because nobody can know them before reading the lists, and reading
# and deleting in one script is what makes the delete happen at once.
_DELETE_CONVERSATION = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local conv = KEYS[1]
local messages = {}
for _, raw in ipairs(redis.call('LRANGE', conv .. ':exchanges', 0, -1)) do
  messages[cjson.decode(raw)['assistant_message_id']] = true
end
for _, raw in ipairs(redis.call('HVALS', conv .. ':requests')) do
  messages[cjson.decode(raw)['assistant_message_id']] = true
end
for message_id, _ in pairs(messages) do
  local msg = ARGV[1] .. 'msg:' .. message_id
  for _, raw in ipairs(redis.call('LRANGE', msg .. ':actions', 0, -1)) do
    redis.call('DEL', ARGV[1] .. 'action:' .. cjson.decode(raw)['action_id'])
  end
  for suffix in string.gmatch(ARGV[3], '%S+') do redis.call('DEL', msg .. suffix) end
  redis.call('DEL', msg)
  redis.call('ZREM', KEYS[2], message_id)
end
for suffix in string.gmatch(ARGV[2], '%S+') do redis.call('DEL', conv .. suffix) end
redis.call('DEL', conv)
return 1
"""

# The keys of a conversation and of each of its messages, besides `conv:{cid}` and `msg:{mid}`
# (the module docstring lists them): what delete_conversation removes.
# `:attachments` and `:attachment_bytes`: the conversation's attachments (attachments/redis_store.py),
# so they expire and are deleted with it.
CONVERSATION_KEY_SUFFIXES = (":exchanges", ":requests", ":feedback", ":attachments", ":attachment_bytes")
MESSAGE_KEY_SUFFIXES = (":text", ":events", ":actions", ":lease")

# KEYS: conv, then the conversation's other keys (CONVERSATION_KEY_SUFFIXES); ARGV: ttl
#   → {token_hash, created_at}, or nil for an unknown conversation
# One round trip: a use of a conversation renews every key of it (tests/test_api_feedback.py),
# and an HMGET then one EXPIRE per key were seven round trips per authorised request, 9% of
# a worker's CPU at N=2,000 (bench/load.py redis-2w, py-spy).
_GET_CONVERSATION = """
local values = redis.call('HMGET', KEYS[1], 'token_hash', 'created_at')
if not values[1] then return nil end
for i = 1, #KEYS do redis.call('EXPIRE', KEYS[i], ARGV[1]) end
return values
"""

# KEYS: exchanges → the conversation's exchanges (JSON), in order: an LRANGE as a script, so
# concurrent reads go in batches (script_batches.py)
_EXCHANGES = "return redis.call('LRANGE', KEYS[1], 0, -1)"

# KEYS: conv; ARGV: token_hash, created_at, ttl. A new conversation's record, as a script so
# that concurrent creations go in batches (script_batches.py): a cluster's pipeline of the
# HSET and the EXPIRE was redis-py's heaviest per-command path left per question.
_CREATE_CONVERSATION = """
redis.call('HSET', KEYS[1], 'token_hash', ARGV[1], 'created_at', ARGV[2])
redis.call('EXPIRE', KEYS[1], ARGV[3])
return 1
"""

# KEYS: msg, text  → {state, last_seq, text}
_SNAPSHOT = """
local values = redis.call('HMGET', KEYS[1], 'state', 'last_seq', 'conversation_id', 'error')
if not values[1] then return nil end
return {values[1], values[2], redis.call('GET', KEYS[2]) or '', values[3], values[4] or ''}
"""


def _event_from_json(raw: bytes | str) -> StreamEvent:
    return StreamEvent.from_json(json.loads(raw))


def _text(reply: bytes | str) -> str:
    """A reply as text: bytes from the store's own client (it does not decode responses),
    str from a client passed in that does."""
    return reply.decode() if isinstance(reply, bytes) else reply


def _entry_seq(entry: StreamEntry) -> int:
    """A log entry's sequence number: its id is `<seq>-1` (see the keys above)."""
    entry_id, _ = entry
    assert entry_id is not None, "only a consumer group's deleted entries lack an id"
    return int(_text(entry_id).split("-")[0])


def _entry_event(entry: StreamEntry) -> StreamEvent:
    _, fields = entry
    assert fields is not None, "only a consumer group's deleted entries lack fields"
    return _event_from_json(fields[b"e"])


def _events(entries: list[tuple[int, bytes]]) -> list[StreamEvent]:
    return [_event_from_json(raw) for _, raw in entries]


StoreClass = TypeVar("StoreClass", bound=type)


def unavailable_on_connection_errors(cls: StoreClass) -> StoreClass:
    """Every public method raises StoreUnavailable for Redis connection trouble (the chat
    store here, the hand-off store in handoff/redis_store.py), so the transport answers 503."""
    trouble = connection_trouble()

    def wrap(method: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(method)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                return method(*args, **kwargs)
            except trouble as error:
                raise StoreUnavailable(f"redis: {type(error).__name__}: {error}") from error

        return wrapper

    for name, value in list(vars(cls).items()):
        if callable(value) and not name.startswith("_"):
            setattr(cls, name, wrap(value))
    return cls


@unavailable_on_connection_errors
class RedisStore(Store):
    shared = True  # other processes write here too: cancellation must be polled

    def __init__(
        self,
        url: str,
        *,
        max_events: int = 4096,
        conversation_ttl: float = 86400.0,
        lease_seconds: float = 10.0,
        finished_log_grace: float = 30.0,
        client: Any = None,
    ) -> None:
        self.max_events = max_events
        self._ttl = max(1, int(conversation_ttl))
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
        from .redis_tail import publish_command, tail_hub

        self._tail = tail_hub(self.redis, connection_trouble(), max_events=max_events)
        self._publish = publish_command(self.redis)
        # The last delta of each answer this process generates, sent but not yet known taken
        # (append_text_soon); written and read only by that answer's run.
        self._unsettled: dict[str, Any] = {}
        self._claim = self.redis.register_script(_CLAIM)
        self._append = self.redis.register_script(_APPEND)
        # Every delta is one call of _APPEND: concurrent calls go to Redis together.
        self._append_batches = ScriptBatches(
            self.redis, _APPEND, lambda keys, args: self._append(keys=keys, args=args), answered=self._appended
        )
        self._get_conversation = self.redis.register_script(_GET_CONVERSATION)
        # Every authorised request reads its conversation, and every new answer is a claim:
        # under a burst of questions these go in batches too (redis-py's own path per command,
        # pool, checks and a cluster's routing, was about a fifth of a worker's CPU while 2,000
        # questions arrived at once: bench/load.py redis-cluster-2w, py-spy).
        self._get_conversation_batches = ScriptBatches(
            self.redis, _GET_CONVERSATION, lambda keys, args: self._get_conversation(keys=keys, args=args)
        )
        # (Also read before each new answer's claim: ChatService.check_can_start.)
        exchanges = self.redis.register_script(_EXCHANGES)
        self._exchanges_batches = ScriptBatches(
            self.redis, _EXCHANGES, lambda keys, args: exchanges(keys=keys, args=args)
        )
        self._claim_batches = ScriptBatches(self.redis, _CLAIM, lambda keys, args: self._claim(keys=keys, args=args))
        # Once per question each, as the reads above (and message() also before each ending).
        create_conversation = self.redis.register_script(_CREATE_CONVERSATION)
        self._create_conversation_batches = ScriptBatches(
            self.redis, _CREATE_CONVERSATION, lambda keys, args: create_conversation(keys=keys, args=args)
        )
        snapshot = self.redis.register_script(_SNAPSHOT)
        self._snapshot_batches = ScriptBatches(self.redis, _SNAPSHOT, lambda keys, args: snapshot(keys=keys, args=args))
        self._compact = self.redis.register_script(_COMPACT)
        # (On a cluster the logs of one look are on several masters: no pipeline, a batch each.)
        self._compact_batches = ScriptBatches(
            self.redis, _COMPACT, lambda keys, args: self._compact(keys=keys, args=args)
        )
        self._add_action = self.redis.register_script(_ADD_ACTION)
        self._claim_action = self.redis.register_script(_CLAIM_ACTION)
        self._finish_action = self.redis.register_script(_FINISH_ACTION)
        self._dismiss_action = self.redis.register_script(_DISMISS_ACTION)
        self._claim_report = self.redis.register_script(_CLAIM_REPORT)
        self._claim_revision = self.redis.register_script(_CLAIM_REVISION)
        self._renew = self.redis.register_script(_RENEW)
        self._renew_batches = ScriptBatches(self.redis, _RENEW, lambda keys, args: self._renew(keys=keys, args=args))
        self._put_feedback = self.redis.register_script(_PUT_FEEDBACK)
        self._delete_conversation = self.redis.register_script(_DELETE_CONVERSATION)

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

    def _lease(self, mid: str) -> str:
        return self.keys.message(mid) + ":lease"

    def renew_lease(self, message_id: str) -> None:
        self.redis.set(self._lease(message_id), self.owner, px=self._lease_ms)

    def keep_runs(self, message_ids: list[str], *, renew: bool) -> dict[str, MessageState | None]:
        states: list[Any]
        if renew and self.keys.cluster:
            # A pipeline holds scripts only on one Redis: redis-py's Script loads a script a
            # restarted node lost for a plain pipeline, not for a cluster's. The renewals go
            # in batches, one per master (script_batches.py): one at a time, they were 4.6% of
            # a worker's CPU at N=500 (bench/load.py redis-cluster-2w, py-spy).
            owner = self.owner
            calls = [
                self._renew_batches.submit([self._msg(message_id), self._lease(message_id)], [owner, self._lease_ms])
                for message_id in message_ids
            ]
            states = [call.result() for call in calls]
        else:
            pipe = self.redis.pipeline(transaction=False)
            for message_id in message_ids:
                if renew:
                    keys = [self._msg(message_id), self._lease(message_id)]
                    self._renew(keys=keys, args=[self.owner, self._lease_ms], client=pipe)
                else:
                    pipe.hget(self._msg(message_id), "state")
            states = pipe.execute()
        found = {
            message_id: MessageState(_text(state)) if state is not None else None
            for message_id, state in zip(message_ids, states, strict=True)
        }
        for message_id, state in found.items():
            if state is None or state.terminal:  # ended elsewhere: this process did not write it
                self._tail.disown(self._events_key(message_id))
        return found

    def reap_if_lost(self, message_id: str, error: ErrorInfo) -> StreamEvent | None:
        payload = {"kind": EventKind.FAILED.value, "error": error.to_json(), "incomplete": True}
        return self._write(message_id, "lost", payload)

    def _conv(self, cid: str) -> str:
        return self.keys.conversation(cid)

    def _msg(self, mid: str) -> str:
        return self.keys.message(mid)

    def _events_key(self, message_id: str) -> bytes:
        """The key of `message_id`'s event log, as the subscriber's tails name it (bytes)."""
        return (self._msg(message_id) + ":events").encode()

    # -- conversations -----------------------------------------------------

    def create_conversation(self, conversation: Conversation) -> None:
        self._create_conversation_batches(
            [self._conv(conversation.conversation_id)],
            [conversation.token_hash, repr(float(conversation.created_at)), self._ttl],
        )

    def get_conversation(self, conversation_id: str) -> Conversation | None:
        key = self._conv(conversation_id)
        values = self._get_conversation_batches(
            [key, *(key + suffix for suffix in CONVERSATION_KEY_SUFFIXES)], [self._ttl]
        )
        if values is None:
            return None
        return Conversation(conversation_id, _text(values[0]), float(values[1] or 0))

    def claim_request(
        self,
        conversation_id: str,
        request_id: str,
        fingerprint: str,
        user_text: str,
        new_user_message_id: str,
        new_assistant_message_id: str,
        attachments: tuple[SentAttachment, ...] = (),
    ) -> Claim:
        exchange: dict[str, Any] = {
            "conversation_id": conversation_id,
            "request_id": request_id,
            "fingerprint": fingerprint,
            "user_message_id": new_user_message_id,
            "user_text": user_text,
            "assistant_message_id": new_assistant_message_id,
        }
        if attachments:  # only when there are: Lua's cjson writes an empty list back as {}
            exchange["attachments"] = [attachment.to_json() for attachment in attachments]
        conv = self._conv(conversation_id)
        outcome, *rest = self._claim_batches(
            [
                conv,
                conv + ":exchanges",
                conv + ":requests",
                self._msg(new_assistant_message_id),
                self._lease(new_assistant_message_id),
            ],
            [
                request_id,
                json.dumps(exchange, ensure_ascii=False),
                fingerprint,
                self._ttl,
                self._lease_ms,
                self.owner,
            ],
        )
        outcome = outcome.decode()
        if outcome == "unknown":
            raise UnknownMessage(conversation_id)
        found = self._exchange(rest[0])
        if outcome == "conflict":
            raise RequestConflict(found)
        if outcome == "existing":
            return Claim(found, created=False)
        self._own(new_assistant_message_id)
        earlier = [exchange for exchange in map(self._exchange, rest[1]) if exchange.request_id != request_id]
        history = self._completed_history(earlier)
        self.compact_due(conversation_id)
        return Claim(found, created=True, history=history)

    @staticmethod
    def _exchange(raw: bytes | str) -> Exchange:
        data = json.loads(raw)
        return Exchange(
            data["request_id"],
            data["fingerprint"],
            data["user_message_id"],
            data["user_text"],
            data["assistant_message_id"],
            data.get("replaces", ""),
            tuple(SentAttachment.from_json(item) for item in data.get("attachments") or ()),
        )

    def _completed_history(self, exchanges: list[Exchange]) -> list[tuple[str, str]]:
        return backend_history(exchanges, self.message)

    def exchanges(self, conversation_id: str) -> list[Exchange]:
        return [
            self._exchange(raw) for raw in self._exchanges_batches([self._conv(conversation_id) + ":exchanges"], [])
        ]

    def message(self, message_id: str) -> MessageInfo | None:
        key = self._msg(message_id)
        values = self._snapshot_batches([key, key + ":text"], [])
        if values is None:
            return None
        state, last_seq, text, conversation_id, error = (v.decode() if isinstance(v, bytes) else v for v in values)
        info = ErrorInfo(**json.loads(error)) if error else None
        return MessageInfo(message_id, conversation_id, MessageState(state), text, int(last_seq), info)

    # -- writing -----------------------------------------------------------

    def _write(self, message_id: str, op: str, payload: dict, text: str = "") -> StreamEvent | None:
        raw = self._append_raw(message_id, op, payload, text)
        return _event_from_json(raw) if raw is not None else None

    def _own(self, message_id: str) -> None:
        """This process generates `message_id`: its readers here are fed by its appends
        (redis_tail.py TailHub.own), before the first of them is sent."""
        self._tail.own(self._events_key(message_id))

    def _appended(self, call: Call) -> None:
        """Each _APPEND's outcome, in write order (script_batches.py `answered`): an entry of
        a log this process owns is fed to its readers here; a refusal (another process ended
        the answer) or an error (the write may have run, its reply lost) disowns the log, so
        its readers read what Redis holds."""
        events_key = call.keys[2].encode()
        raw = call.reply
        if call.error is not None or not isinstance(raw, bytes):
            self._tail.disown(events_key)
            return
        if call.args[0] in ("start", "text"):
            # seq was spliced in last but one (_APPEND; append_text says why this finds it)
            start = raw.rindex(b',"seq":') + 7
            seq = int(raw[start : raw.index(b",", start)])
        else:
            seq = json.loads(raw)["seq"]
        self._tail.feed(events_key, seq, raw)

    def _append_raw(self, message_id: str, op: str, payload: dict, text: str) -> bytes | None:
        """One _APPEND: the new event's JSON, or None if the transition is refused."""
        ending = op not in ("start", "text")
        compact_at = int(time.time() * 1000) + self._grace_ms if ending and self._grace_ms else 0
        raw = self._append_batches(
            self._append_keys(message_id),
            [op, json.dumps(payload, ensure_ascii=False), text, *self._append_args(message_id, compact_at)],
        )
        if ending:
            if compact_at:
                index = self._compact_index(message_id)
                self._compact_own_due[index] = min(compact_at, self._compact_own_due.get(index, compact_at))
            self.compact_due(message_id)
        return raw

    def _append_keys(self, message_id: str) -> list[str]:
        key = self._msg(message_id)
        return [key, key + ":text", key + ":events", key + ":actions", key + ":lease", self._compact_key(message_id)]

    def _append_args(self, message_id: str, compact_at: int) -> list[str | int]:
        """_APPEND's arguments after op, payload and text."""
        return [self.max_events, self._ttl, message_id, compact_at, self._publish]

    def _compact_key(self, any_id: str) -> str:
        return self.keys.compact(bucket(any_id))

    def _compact_index(self, any_id: str) -> int:
        return bucket(any_id) if self.keys.cluster else self.keys.compact_sets()[0]

    def compact_due(self, near: str = "", limit: int = 64) -> int:
        """Compact the logs whose grace after their end has passed: each stream
        keeps only its terminal entry (the newest: nothing is written after an
        end). Run after each ending and each new message, by any worker;
        trimming twice is harmless. Returns how many were compacted.
        On a cluster each bucket has its own set (keyspace.py): this looks at
        the bucket of `near` (the message or conversation just written) and at
        one more, in turn, so every bucket's set is looked at while any writes.

        A set is looked at (one round trip) when an end of grace this process wrote has
        come, or when COMPACT_LOOK_SECONDS have passed since this process last looked:
        under load that is once a second instead of twice per answer, and a log any
        worker ended is compacted at most that much later than its grace
        (tests/test_redis_compaction.py)."""
        buckets = self.keys.compact_sets()
        looked = {self._compact_index(near) if near else buckets[0]}
        if self.keys.cluster:
            self._next_compact_bucket = (self._next_compact_bucket + 1) % len(buckets)
            looked.add(self._next_compact_bucket)
        return sum(self._compact_bucket(index, limit) for index in looked if self._compact_look_due(index))

    def _compact_look_due(self, index: int) -> bool:
        now = time.monotonic()
        own_due = self._compact_own_due.get(index)
        if own_due is not None and time.time() * 1000 >= own_due:
            return True
        return now - self._compact_looked.get(index, -COMPACT_LOOK_SECONDS) >= COMPACT_LOOK_SECONDS

    def _compact_bucket(self, index: int, limit: int) -> int:
        compact_key = self.keys.compact(index)
        now_ms = int(time.time() * 1000)
        due = self.redis.zrangebyscore(compact_key, "-inf", now_ms, start=0, num=limit)
        if len(due) < limit:  # all that was due is being compacted: the next look can wait
            self._compact_looked[index] = time.monotonic()
            if self._compact_own_due.get(index, now_ms + 1) <= now_ms:
                del self._compact_own_due[index]
        else:
            self._compact_looked.pop(index, None)
        if not due:
            return 0
        logs = [self._msg(_text(cast("bytes", raw))) + ":events" for raw in due]
        if not self.keys.cluster:  # scripts in a pipeline: one Redis only (keep_runs)
            pipe = self.redis.pipeline(transaction=False)
            for log_key in logs:
                self._compact(keys=[log_key], client=pipe)
            pipe.zrem(compact_key, *due)
            pipe.execute()
        else:
            for call in [self._compact_batches.submit([log_key], []) for log_key in logs]:
                call.result()
            self.redis.zrem(compact_key, *due)
        return len(due)

    def start(self, message_id: str) -> StreamEvent | None:
        return self._write(message_id, "start", {"kind": EventKind.STARTED.value})

    def append_text(self, message_id: str, text: str) -> StreamEvent | None:
        text = replace_lone_surrogates(text)
        raw = self._append_raw(message_id, "text", {"kind": EventKind.DELTA.value, "text": text}, text)
        if raw is None:
            return None
        # The event is known but for its seq, which _APPEND spliced in last but one: read it
        # there instead of decoding the whole event per delta (inside the JSON string of the
        # text every '"' is escaped, so the last ',"seq":' is the spliced one).
        start = raw.rindex(b',"seq":') + 7
        seq = int(raw[start : raw.index(b",", start)])
        return StreamEvent(message_id, seq, EventKind.DELTA, {"text": text})

    def append_text_soon(self, message_id: str, text: str) -> bool:
        # The generating run's next delta waits for nothing but the previous one's outcome,
        # which came back while its pacing or its upstream ran: at N=2,000 a delta's round
        # trip under load had stretched every answer (bench/load.py, events/s).
        if not self.settle(message_id):
            return False
        text = replace_lone_surrogates(text)
        payload = json.dumps({"kind": EventKind.DELTA.value, "text": text}, ensure_ascii=False)
        self._unsettled[message_id] = self._append_batches.submit(
            self._append_keys(message_id), ["text", payload, text, *self._append_args(message_id, 0)]
        )
        return True

    def settle(self, message_id: str) -> bool:
        call = self._unsettled.pop(message_id, None)
        return call is None or call.result() is not None

    def complete(self, message_id: str) -> StreamEvent | None:
        # The digest is over the text as stored; computed here once, from Redis.
        if not self.settle(message_id):
            return None
        info = self.message(message_id)
        if info is None or info.state is not MessageState.RUNNING:
            return None
        return self._write(message_id, "complete", {"kind": EventKind.COMPLETED.value, **text_digest(info.text)})

    def fail(self, message_id: str, error: ErrorInfo) -> StreamEvent | None:
        payload = {"kind": EventKind.FAILED.value, "error": error.to_json(), "incomplete": True}
        return self._write(message_id, "fail", payload)

    def cancel(self, message_id: str) -> StreamEvent | None:
        return self._write(message_id, "cancel", {"kind": EventKind.CANCELLED.value, "incomplete": True})

    # -- reading -----------------------------------------------------------

    def snapshot(self, message_id: str) -> StreamEvent | None:
        info = self.message(message_id)
        if info is None:
            return None
        terminal = info.state.terminal
        seq = info.last_seq - 1 if terminal else info.last_seq
        state = MessageState.RUNNING if terminal else info.state
        return StreamEvent(message_id, seq, EventKind.SNAPSHOT, {"text": info.text, "state": state.value})

    def read_events(self, message_id: str, after_seq: int, timeout: float) -> list[StreamEvent]:
        # Readers wait in this process's one subscriber (redis_tail.py) and take events from
        # its buffer; a reader it cannot serve (behind the buffer, a log not followed yet, or
        # nothing heard for the whole wait) reads Redis itself.
        tail_key = self._events_key(message_id)
        buffered = self._tail.peek(tail_key, after_seq)
        if buffered:
            return _events(buffered)
        if buffered is None and self._tail.follows(tail_key):  # followed, this position not kept
            events = self._events_after(message_id, tail_key.decode(), after_seq)
            if events:
                return events
        # (A log not followed yet: wait() subscribes, then reads its newest entries itself.)
        buffered = self._tail.wait(tail_key, after_seq, timeout)
        if buffered:
            return _events(buffered)
        events = self._events_after(message_id, tail_key.decode(), after_seq)
        if events:
            return events
        if not self.redis.exists(self._msg(message_id)):
            raise UnknownMessage(message_id)
        return []

    def _events_after(self, message_id: str, key: str, after_seq: int) -> list[StreamEvent]:
        """Events after `after_seq`, read from Redis without waiting; a
        snapshot first if the ones right after it were trimmed away."""
        entries = self.redis.xrange(key, min=f"({after_seq}-1", max="+")
        if not entries:
            return []
        if _entry_seq(entries[0]) == after_seq + 1:
            return [_entry_event(entry) for entry in entries]
        snapshot = self.snapshot(message_id)
        if snapshot is None:
            return []
        later = self.redis.xrange(key, min=f"({snapshot.seq}-1", max="+") or []
        return [snapshot, *(_entry_event(entry) for entry in later)]

    def claim_report(self, message_id: str) -> bool:
        return bool(self._claim_report(keys=[self._msg(message_id)]))

    def message_state(self, message_id: str) -> MessageState | None:
        """Just the state (one HGET), for pollers that need nothing else."""
        state = self.redis.hget(self._msg(message_id), "state")
        return MessageState(_text(state)) if state is not None else None

    # -- actions -----------------------------------------------------------

    def _action_key(self, action_id: str) -> str:
        return self.keys.action(action_id)

    def add_action(self, message_id: str, action: ActionRecord) -> StreamEvent | None:
        key = self._msg(message_id)
        proposal = json.dumps(action.proposal(), ensure_ascii=False, separators=(",", ":"))
        events_key = self._events_key(message_id)
        try:
            raw = self._add_action(
                keys=[key, key + ":events", key + ":actions", self._action_key(action.action_id)],
                args=[
                    proposal,
                    self.max_events,
                    self._ttl,
                    message_id,
                    action.conversation_id,
                    action.name,
                    self._publish,
                ],
            )
        except BaseException:
            self._tail.disown(events_key)  # it may have run: the log is read from Redis again
            raise
        if raw is None:
            self._tail.disown(events_key)  # ended elsewhere
            return None
        event = _event_from_json(raw)
        self._tail.feed(events_key, event.seq, raw)
        return event

    def action(self, action_id: str) -> ActionRecord | None:
        values = self.redis.hmget(
            self._action_key(action_id), "conversation_id", "message_id", "proposal", "status", "key", "result", "error"
        )
        if values[0] is None:
            return None
        conversation_id, message_id, proposal, status, key, result, error = (
            v.decode() if isinstance(v, bytes) else (v or "") for v in values
        )
        data = json.loads(proposal)
        return ActionRecord(
            action_id,
            conversation_id,
            message_id,
            data["name"],
            data["arguments"],
            data["label"],
            data["description"],
            status,
            key,
            json.loads(result) if result else None,
            json.loads(error) if error else None,
        )

    def message_actions(self, message_id: str) -> list[ActionRecord]:
        ids = [json.loads(raw)["action_id"] for raw in self.redis.lrange(self._msg(message_id) + ":actions", 0, -1)]
        found = (self.action(action_id) for action_id in ids)
        return [action for action in found if action is not None]

    def claim_action(self, action_id: str, idempotency_key: str) -> tuple[str | None, ActionRecord | None]:
        outcome = self._claim_action(keys=[self._action_key(action_id)], args=[idempotency_key, self._ttl])
        if outcome is None:
            return None, None
        return outcome.decode(), self.action(action_id)

    def finish_action(
        self,
        action_id: str,
        idempotency_key: str,
        status: str,
        *,
        result: dict | None = None,
        error: dict | None = None,
    ) -> ActionRecord | None:
        encode = lambda value: json.dumps(value, ensure_ascii=False) if value is not None else ""  # noqa: E731
        self._finish_action(
            keys=[self._action_key(action_id)], args=[idempotency_key, status, encode(result), encode(error), self._ttl]
        )
        return self.action(action_id)

    def dismiss_action(self, action_id: str) -> tuple[str | None, ActionRecord | None]:
        outcome = self._dismiss_action(keys=[self._action_key(action_id)])
        if outcome is None:
            return None, None
        return outcome.decode(), self.action(action_id)

    # How often a confirm waiting for another worker's execution looks again.
    ACTION_POLL_SECONDS = 0.05

    def wait_action(self, action_id: str, timeout: float) -> ActionRecord | None:
        deadline = time.monotonic() + timeout
        while True:
            action = self.action(action_id)
            if action is None or action.status != ActionStatus.EXECUTING or time.monotonic() >= deadline:
                return action
            time.sleep(min(self.ACTION_POLL_SECONDS, max(0.0, deadline - time.monotonic())))

    # -- feedback and deleting a conversation (widget_server/feedback.py) ---

    def _feedback_key(self, conversation_id: str) -> str:
        return self.keys.conversation(conversation_id) + ":feedback"

    @staticmethod
    def _feedback_record(conversation_id: str, message_id: str, raw: bytes | str) -> FeedbackRecord:
        data = json.loads(raw)
        return FeedbackRecord(conversation_id, message_id, data["rating"], data["comment"], float(data["updated_at"]))

    def put_feedback(self, record: FeedbackRecord) -> FeedbackRecord | None:
        encoded = json.dumps(
            {"rating": record.rating, "comment": record.comment, "updated_at": record.updated_at}, ensure_ascii=False
        )
        outcome, *rest = self._put_feedback(
            keys=[self._conv(record.conversation_id), self._feedback_key(record.conversation_id)],
            args=[record.message_id, encoded, self._ttl],
        )
        if _text(outcome) == "unknown":
            raise UnknownMessage(record.conversation_id)
        return self._feedback_record(record.conversation_id, record.message_id, rest[0]) if rest else None

    def delete_feedback(self, conversation_id: str, message_id: str) -> None:
        self.redis.hdel(self._feedback_key(conversation_id), message_id)

    def conversation_feedback(self, conversation_id: str) -> dict[str, FeedbackRecord]:
        found = self.redis.hgetall(self._feedback_key(conversation_id))
        return {
            _text(mid): self._feedback_record(conversation_id, _text(mid), raw)
            for mid, raw in cast("dict[bytes, bytes]", found).items()
        }

    def feedback_conversations(self) -> list[str]:
        # SCAN, not an index: the export is an operator's occasional command, and an index
        # would be one more key naming each conversation, to expire and delete with it.
        # On a cluster the keys carry a bucket's tag before `conv:` (keyspace.py) and SCAN
        # walks every master (redis-py's RedisCluster.scan_iter).
        pattern = f"{PREFIX}*conv:*:feedback"
        tail = ":feedback"
        return sorted(
            _text(key).rsplit("conv:", 1)[1][: -len(tail)]
            for key in self.redis.scan_iter(match=pattern, count=1000, _type="hash")
        )

    def delete_conversation(self, conversation_id: str) -> bool:
        deleted = self._delete_conversation(
            keys=[self._conv(conversation_id), self._compact_key(conversation_id)],
            args=[
                self.keys.prefix(conversation_id),
                " ".join(CONVERSATION_KEY_SUFFIXES),
                " ".join(MESSAGE_KEY_SUFFIXES),
            ],
        )
        return bool(deleted)

    # -- revisions (widget_server/revisions.py) --------------------------------

    def claim_revision(
        self,
        conversation_id: str,
        request_id: str,
        fingerprint: str,
        revision: Revision,
        new_assistant_message_id: str,
    ) -> Claim:
        exchange = {
            "conversation_id": conversation_id,
            "request_id": request_id,
            "fingerprint": fingerprint,
            "user_message_id": revision.user_message_id,
            "user_text": revision.user_text,
            "assistant_message_id": new_assistant_message_id,
        }
        conv = self._conv(conversation_id)
        outcome, *rest = self._claim_revision(
            keys=[
                conv,
                conv + ":exchanges",
                conv + ":requests",
                self._msg(new_assistant_message_id),
                self._lease(new_assistant_message_id),
            ],
            args=[
                request_id,
                json.dumps(exchange, ensure_ascii=False),
                fingerprint,
                self._ttl,
                self._lease_ms,
                self.owner,
                "user_message_id" if revision.by_user_message else "assistant_message_id",
                revision.target_message_id,
                self.keys.prefix(conversation_id) + "msg:",
            ],
        )
        outcome = _text(outcome)
        if outcome == "unknown":
            raise UnknownMessage(conversation_id)
        if outcome == "refused":
            raise RevisionRefused(_text(rest[0]))
        found = self._exchange(rest[0])
        if outcome == "conflict":
            raise RequestConflict(found)
        if outcome == "existing":
            return Claim(found, created=False)
        self._own(found.assistant_message_id)
        # After the new exchange: it hides the one it replaces from the backend too.
        history = self._completed_history(self.exchanges(conversation_id))
        self.compact_due(conversation_id)
        return Claim(found, created=True, history=history)
