"""Which Redis Cluster hash slot a conversation's keys live in (docs/serving.md, "Past one Redis: a Redis Cluster").

A Lua script may only touch keys of one hash slot on a Redis Cluster
(https://redis.io/docs/latest/operate/oss_and_stack/reference/cluster-spec/,
"Hash tags"), and every script of the chat store touches a conversation's keys
together with its messages' and actions'. So on a cluster every key of a
conversation carries the same hash tag, `cw:{TAG}:conv:…`, `cw:{TAG}:msg:…`,
and the tag is found from any of its ids alone: every id the server makes for
a conversation (its messages, actions, attachments) ends with the same
character as the conversation's id (protocol.new_id's `near`), and that last
character picks one of 16 buckets. Each bucket's tag is chosen so the 16
buckets sit evenly over the 16,384 slots (one per 1,024): a cluster whose
masters hold equal slot ranges holds equal shares of conversations, and one
subscriber per bucket hears all of a bucket's logs (sharded Pub/Sub: redis_tail.py,
SlotTails).

On a single Redis there are no tags: the key names stay what they were, so an
upgrade keeps the conversations in flight (tests/test_keyspace.py).
"""

from __future__ import annotations

import hashlib
import string

PREFIX = "cw:"
# The characters protocol.new_id's random part is made of (URL-safe base64): four per bucket.
ID_ALPHABET = string.ascii_uppercase + string.ascii_lowercase + string.digits + "-_"
# 16 buckets: enough to spread conversations evenly over up to about 16 masters (3 equal
# masters carry 6, 5 and 5), few enough that a worker holds at most 16 subscriber connections
# (redis_tail.SlotTails; with one XREAD per bucket, 64 buckets carried fewer events/s than one
# Redis in bench/load.py at N=2,000 on 2 workers, most of the difference in their round trips).
BUCKETS = 16
# BUCKET_TAGS[i]'s slot (CRC16 of the tag mod 16384) is in [1024·i, 1024·(i+1)); the shortest
# such decimal strings, found once and checked by tests/test_keyspace.py.
BUCKET_TAGS = ("10", "3", "61", "43", "11", "2", "60", "42", "12", "1", "63", "41", "13", "0", "62", "40")
_BUCKET_OF_CHARACTER = {character: index * BUCKETS // len(ID_ALPHABET) for index, character in enumerate(ID_ALPHABET)}
# The hand-off desk is one record for every conversation, and each hand-off commit is one
# script over the desk and the conversations it changes: on a cluster all hand-off keys share
# this one slot (handoff/redis_store.py). Hand-off traffic is people typing, not token streams.
HANDOFF_TAG = "{handoff}:"
# The webhook queue's keys (webhooks/redis_queue.py) share one slot too: a claim moves a lane
# between sets that every lane shares. A few events per answer, not per delta.
WEBHOOKS_TAG = "{webhooks}:"


def bucket(any_id: str) -> int:
    """The bucket of a conversation, or of any id made for it (by its last character)."""
    return _BUCKET_OF_CHARACTER.get(any_id[-1:], 0)


class Keyspace:
    """Key names of the chat store: with hash tags on a cluster, without on one Redis."""

    def __init__(self, *, cluster: bool) -> None:
        self.cluster = cluster
        self._prefixes = tuple(f"{PREFIX}{{{tag}}}:" for tag in BUCKET_TAGS) if cluster else (PREFIX,) * BUCKETS
        self.handoff_prefix = PREFIX + HANDOFF_TAG if cluster else PREFIX
        self.webhooks_prefix = PREFIX + WEBHOOKS_TAG if cluster else PREFIX + "webhooks:"

    def prefix(self, any_id: str) -> str:
        """`cw:` and, on a cluster, the hash tag of the conversation `any_id` belongs to."""
        return self._prefixes[bucket(any_id)]

    def conversation(self, conversation_id: str) -> str:
        return f"{self.prefix(conversation_id)}conv:{conversation_id}"

    def message(self, message_id: str) -> str:
        return f"{self.prefix(message_id)}msg:{message_id}"

    def action(self, action_id: str) -> str:
        return f"{self.prefix(action_id)}action:{action_id}"

    def subject(self, subject: str) -> str:
        """A subject's list of conversations (widget_server/identity/). Named by a digest of the
        subject, so any text a site uses as `sub` makes a key of fixed length. On a cluster the
        digest is its own hash tag: each subject's list sits in a slot of its own, apart from
        its conversations, and is only ever touched by single-key commands."""
        digest = hashlib.sha256(subject.encode("utf-8")).hexdigest()[:32]
        return f"{PREFIX}{{subject:{digest}}}" if self.cluster else f"{PREFIX}subject:{digest}"

    def compact(self, index: int) -> str:
        """The set of ended logs waiting to be compacted: one per bucket on a cluster."""
        return f"{self._prefixes[index]}compact"

    def compact_sets(self) -> list[int]:
        """The buckets whose compact set is distinct (all 16 on a cluster, one on one Redis)."""
        return list(range(BUCKETS)) if self.cluster else [0]
