"""Retention (docs/privacy.md, "How long"; docs/configuration.md RETENTION and
IDENTIFIED_RETENTION): the settings, durations with units, the old name read as the new one;
and on the memory store, on a clock the test moves (never a sleep), everything of a conversation
(its record, answers, feedback, attachments' files, hand-off record, events and left messages,
its subject's list entry) is there until its retention and gone after it, a known visitor's by
IDENTIFIED_RETENTION. Redis's clock cannot be moved: tests/test_api_privacy.py reads every key's
TTL instead."""

from __future__ import annotations

import pytest

from widget_server.settings import ConfigError, load_settings
from widget_server.settings.areas import RETENTION_MAX_SECONDS

from .conftest import TEST_CONFIG
from .helpers import LiveServer
from .privacy_support import PRIVACY_CONFIG, realistic_conversation, services_of, subject_digest, token_for, traces


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("30d", 30 * 86400), ("12h", 43200), ("90m", 5400), ("45s", 45), ("86400", 86400)],
)
def test_a_retention_is_a_duration_with_units(text, seconds):
    if seconds < 60:
        with pytest.raises(ConfigError, match=r"RETENTION .*below the minimum 60"):
            load_settings({"RETENTION": text}, environ={})
        return
    assert load_settings({"RETENTION": text}, environ={}).store.retention_seconds == seconds
    assert load_settings({}, environ={"WIDGET_SERVER_RETENTION": text}).store.retention_seconds == seconds


def test_defaults_a_day_and_the_identified_one_follows():
    store = load_settings({}, environ={}).store
    assert store.retention_seconds == 86400
    assert store.identified_retention_seconds == 86400
    store = load_settings({"RETENTION": "2h"}, environ={}).store
    assert store.identified_retention_seconds == 7200
    store = load_settings({"RETENTION": "2h", "IDENTIFIED_RETENTION": "90d"}, environ={}).store
    assert (store.retention_seconds, store.identified_retention_seconds) == (7200, 90 * 86400)


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"RETENTION": "30x"}, "RETENTION (from configuration): invalid value '30x': expected a duration such as 30d"),
        ({"RETENTION": "-5m"}, "expected a duration"),
        ({"RETENTION": "59"}, "below the minimum 60"),
        ({"RETENTION": "1096d"}, f"above the maximum {RETENTION_MAX_SECONDS}"),
        ({"IDENTIFIED_RETENTION": "ten days"}, "IDENTIFIED_RETENTION (from configuration): invalid value"),
        ({"IDENTIFIED_RETENTION": "30s"}, "IDENTIFIED_RETENTION (from configuration): 30.0 is below the minimum 60"),
    ],
)
def test_bad_retentions_are_refused_naming_the_setting(config, message):
    with pytest.raises(ConfigError) as refused:
        load_settings(config, environ={})
    assert message in str(refused.value)


def test_the_old_name_is_read_as_retention(caplog):
    settings = load_settings({}, environ={"WIDGET_SERVER_CONVERSATION_TTL_SECONDS": "600"})
    assert settings.store.retention_seconds == 600
    assert "CONVERSATION_TTL_SECONDS is deprecated" in caplog.text
    # Both, agreeing: fine; differing: a start-up error naming both and where each came from.
    same = load_settings({"RETENTION": "10m"}, environ={"WIDGET_SERVER_CONVERSATION_TTL_SECONDS": "600"})
    assert same.store.retention_seconds == 600
    with pytest.raises(ConfigError) as refused:
        load_settings({"RETENTION": "1h"}, environ={"WIDGET_SERVER_CONVERSATION_TTL_SECONDS": "600"})
    assert str(refused.value) == (
        "RETENTION (from configuration) is 3600 s but its deprecated name CONVERSATION_TTL_SECONDS "
        "(from environment variable WIDGET_SERVER_CONVERSATION_TTL_SECONDS) is 600 s: set RETENTION only"
    )
    # Settings.replace with the old name changes the retention.
    assert settings.replace(CONVERSATION_TTL_SECONDS=900).store.retention_seconds == 900
    assert settings.replace(RETENTION="2h").store.retention_seconds == 7200


class Clock:
    """The memory store's clock (MemoryStore(clock=…)), moved by the test."""

    def __init__(self, start: float) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def server():
    started = LiveServer({**TEST_CONFIG, **PRIVACY_CONFIG, "RETENTION": "1h", "IDENTIFIED_RETENTION": "3h"}).start()
    yield started
    started.stop()


def sweep(server) -> None:
    """Any use of the store looks for what has expired (MemoryStore._expire)."""
    services_of(server).store.feedback_conversations()


def test_everything_of_a_conversation_goes_after_its_retention(server, monkeypatch):
    store = services_of(server).store
    clock = Clock(1_000_000.0)
    monkeypatch.setattr(store, "_clock", clock)
    anonymous = realistic_conversation(server, None, tag="reta")
    identified = realistic_conversation(server, token_for("ret-ada"), tag="reti")
    anonymous_names = anonymous.names
    identified_names = identified.names | {"ret-ada", subject_digest("ret-ada")}

    clock.now += 3600 - 1  # a second before the anonymous retention: all there
    sweep(server)
    assert traces(server, "memory", anonymous_names)
    assert traces(server, "memory", identified_names)

    clock.now += 2  # past it: nothing of the anonymous conversation is left anywhere
    sweep(server)
    assert traces(server, "memory", anonymous_names) == []
    assert traces(server, "memory", identified_names)  # the known visitor's is kept 3 h

    # Used again (read with its token), the known visitor's conversation lives on from then.
    history = services_of(server).chat.history(identified.conversation_id)
    assert len(history) == 6
    services_of(server).store.get_conversation(identified.conversation_id)
    clock.now += 3 * 3600 - 1
    sweep(server)
    assert traces(server, "memory", identified_names)
    clock.now += 2
    sweep(server)
    assert traces(server, "memory", identified_names) == []
    assert store._conversations == {} and store._messages == {} and store._subjects == {}


def test_a_redis_record_keeps_its_retention_and_an_older_one_gets_the_shorter(redis_server):
    """Each conversation's retention is in its record (`retention`, create_conversation.lua),
    read by every script that renews a key; a record stored before that field existed falls back
    on the shorter of the two retentions, so an upgrade never keeps anything longer than said."""
    import time

    from widget_server.stores.base import Conversation
    from widget_server.stores.redis import RedisStore

    from .redis_support import redis_client

    redis_server.flush()
    store = RedisStore(redis_server.url, conversation_ttl=3600, identified_ttl=86400)
    client = redis_client(redis_server.url)
    try:
        store.create_conversation(Conversation("c_retention00000A", "hash", time.time()))
        store.create_conversation(Conversation("c_retention00000B", "hash", time.time(), "ret-sub", "", ""))
        anonymous, identified = (
            store.keys.conversation("c_retention00000A"),
            store.keys.conversation("c_retention00000B"),
        )
        assert client.hget(anonymous, "retention") == b"3600" and 0 < client.ttl(anonymous) <= 3600
        assert client.hget(identified, "retention") == b"86400" and 3600 < client.ttl(identified) <= 86400
        assert 3600 < client.ttl(store.keys.subject("ret-sub")) <= 86400
        # Renewed on use, by its own retention.
        client.expire(identified, 100)
        assert store.get_conversation("c_retention00000B") is not None
        assert 3600 < client.ttl(identified) <= 86400
        # A record from before: renewed to the shorter one.
        client.hdel(identified, "retention")
        assert store.get_conversation("c_retention00000B") is not None
        assert 0 < client.ttl(identified) <= 3600
    finally:
        client.close()
        store.close()
