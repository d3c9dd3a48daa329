"""Key names on one Redis and on a Redis Cluster (widget_server/stores/keyspace.py)."""

from __future__ import annotations

import collections

from redis.crc import key_slot

from widget_server.protocol import ASSISTANT_MESSAGE_PREFIX, CONVERSATION_PREFIX, is_id, new_id
from widget_server.stores.keyspace import BUCKET_TAGS, BUCKETS, ID_ALPHABET, Keyspace, bucket


def test_each_buckets_tag_sits_in_its_own_256_slots():
    assert len(BUCKET_TAGS) == BUCKETS == 16 and len(ID_ALPHABET) == 64
    width = 16384 // BUCKETS
    for index, tag in enumerate(BUCKET_TAGS):
        assert width * index <= key_slot(f"{{{tag}}}".encode()) < width * (index + 1), (index, tag)
    # Every character of an id picks a bucket, each bucket as often.
    assert sorted(bucket("c_" + character) for character in ID_ALPHABET) == sorted(list(range(16)) * 4)


def test_an_id_made_near_a_conversation_shares_its_bucket_and_is_still_an_id():
    for _ in range(500):
        conversation_id = new_id(CONVERSATION_PREFIX)
        message_id = new_id(ASSISTANT_MESSAGE_PREFIX, conversation_id)
        assert is_id(message_id) and len(message_id) == len(new_id(ASSISTANT_MESSAGE_PREFIX))
        assert bucket(message_id) == bucket(conversation_id)
        assert message_id[:-1] != conversation_id[:-1]


def test_on_a_cluster_every_key_of_a_conversation_is_in_one_slot():
    keys = Keyspace(cluster=True)
    conversation_id = new_id(CONVERSATION_PREFIX)
    names = [
        keys.conversation(conversation_id),
        keys.conversation(conversation_id) + ":exchanges",
        keys.message(new_id(ASSISTANT_MESSAGE_PREFIX, conversation_id)) + ":events",
        keys.action(new_id("a_", conversation_id)),
        keys.compact(bucket(conversation_id)),
    ]
    assert len({key_slot(name.encode()) for name in names}) == 1, names


def test_conversations_spread_evenly_over_three_equal_masters():
    # `redis-cli --cluster create` with three masters gives each a third of the slots.
    keys = Keyspace(cluster=True)
    shares = collections.Counter(
        key_slot(keys.conversation(new_id(CONVERSATION_PREFIX)).encode()) * 3 // 16384 for _ in range(30_000)
    )
    assert set(shares) == {0, 1, 2}
    assert max(shares.values()) / 30_000 < 0.40, shares  # 6, 5 and 5 buckets of 16


def test_on_one_redis_the_names_are_what_they_were():
    # An upgrade keeps the conversations in flight: no hash tags on one Redis.
    keys = Keyspace(cluster=False)
    assert keys.conversation("c_abc") == "cw:conv:c_abc"
    assert keys.message("m_abc") == "cw:msg:m_abc"
    assert keys.action("a_abc") == "cw:action:a_abc"
    assert keys.compact(bucket("m_abc")) == "cw:compact"
    assert keys.compact_sets() == [0]
    assert keys.handoff_prefix == "cw:"
    cluster = Keyspace(cluster=True)
    assert cluster.handoff_prefix == "cw:{handoff}:"
    assert cluster.conversation("c_abc") == f"cw:{{{BUCKET_TAGS[ID_ALPHABET.index('c') // 4]}}}:conv:c_abc"


def test_a_subjects_list_is_named_by_a_digest_and_sits_in_a_slot_of_its_own():
    """A known visitor's list (widget_server/identity/): one key per subject, its name of fixed
    length whatever the subject; on a cluster its own hash tag, so lists spread over the
    masters and only single-key commands touch one (stores/redis/lua/touch_subject.lua)."""
    one, cluster = Keyspace(cluster=False), Keyspace(cluster=True)
    assert one.subject("user-42") == one.subject("user-42") != one.subject("user-43")
    assert one.subject("user-42").startswith("cw:subject:") and len(one.subject("x" * 200)) == len("cw:subject:") + 32
    name = cluster.subject("user-42")
    assert name.startswith("cw:{subject:") and name.endswith("}")
    assert key_slot(name.encode()) == key_slot(name[len("cw:") :].encode())
    slots = {key_slot(cluster.subject(f"user-{n}").encode()) * 3 // 16384 for n in range(100)}
    assert slots == {0, 1, 2}
