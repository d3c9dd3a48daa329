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
Ended messages whose logs are still whole wait in a compact set, scored by when to compact
them (unix ms); on a Redis Cluster every key carries its conversation's hash tag (keyspace.py).

RedisStore is one class made of the store's sections, a module each:
  core.py           the client, key names, the lease holder's id, reading replies
  conversations.py  conversations, their exchanges, the request-id claim
  revisions.py      regenerate and edit: the claim that replaces the last answer
  event_log.py      writing an answer's log: each event and its state transition
  reading.py        a message's record, snapshot and events
  leases.py         ownership of a generating answer: its lease, renewed or lost
  compaction.py     an ended log cut to its terminal entry after its grace
  actions.py        action proposals, and the one claim that runs each
  feedback.py       feedback on answers, and deleting a conversation
  unavailable.py    connection trouble as StoreUnavailable (503)
Their Lua scripts are lua/<name>.lua, each headed by what its KEYS and ARGV are and what it
returns, read once at import (stores/lua.py) and registered once per store.
"""

from __future__ import annotations

from ..keyspace import PREFIX
from .actions import RedisActions
from .core import CONVERSATION_KEY_SUFFIXES, MESSAGE_KEY_SUFFIXES
from .event_log import RedisEventLog
from .feedback import RedisFeedback
from .leases import RedisLeases
from .reading import RedisReading
from .revisions import RedisRevisions
from .unavailable import unavailable_on_connection_errors

__all__ = [
    "COMPACT_LOOK_SECONDS",
    "CONVERSATION_KEY_SUFFIXES",
    "MESSAGE_KEY_SUFFIXES",
    "PREFIX",
    "RedisStore",
    "unavailable_on_connection_errors",
]

# How long compact_due may go without looking at a compaction set while this process writes
# nothing whose grace has ended (compaction.py reads it here at each look, so a test may
# change it: tests/test_redis_compaction.py).
COMPACT_LOOK_SECONDS = 1.0


@unavailable_on_connection_errors
class RedisStore(RedisRevisions, RedisEventLog, RedisReading, RedisLeases, RedisActions, RedisFeedback):
    """The chat store on Redis: `RedisStore(url, max_events=…, conversation_ttl=…,
    lease_seconds=…, finished_log_grace=…, client=None)` (core.py RedisStoreBase)."""

    def _register_scripts(self) -> None:
        self._register_conversation_scripts()
        self._register_revision_scripts()
        self._register_event_log_scripts()
        self._register_reading_scripts()
        self._register_lease_scripts()
        self._register_compaction_scripts()
        self._register_action_scripts()
        self._register_feedback_scripts()
