"""Settings: defaults < environment < explicit, validated at start."""

from __future__ import annotations

import pytest

from widget_server import create_app
from widget_server.config import ENV_PREFIX, SETTINGS, SETTINGS_BY_NAME, ConfigError, load_settings


def test_defaults_with_empty_environment():
    settings = load_settings({}, environ={})
    assert settings == {s.name: s.default for s in SETTINGS}
    assert settings["PORT"] == 8000
    assert settings["HEARTBEAT_SECONDS"] == 15.0
    assert settings["EMBED_ORIGINS"] == ("'self'",)


def test_load_settings_does_not_read_os_environ_when_environ_given(monkeypatch):
    monkeypatch.setenv("WIDGET_SERVER_PORT", "1234")
    assert load_settings(environ={})["PORT"] == 8000
    assert load_settings()["PORT"] == 1234  # None: the real environment


def test_environment_overrides_defaults_and_is_converted():
    settings = load_settings(
        environ={
            "WIDGET_SERVER_PORT": " 9000 ",
            "WIDGET_SERVER_HEARTBEAT_SECONDS": "2.5",
            "WIDGET_SERVER_EMBED_ORIGINS": "https://a.example http://b.example:8080/",
            "WIDGET_SERVER_LOG_LEVEL": "DEBUG",
            "PORT": "1",  # no prefix: not ours
            "WIDGET_SERVER_NOT_A_SETTING": "x",  # unknown env vars are not ours to judge
        }
    )
    assert settings["PORT"] == 9000
    assert settings["HEARTBEAT_SECONDS"] == 2.5
    assert settings["EMBED_ORIGINS"] == ("https://a.example", "http://b.example:8080")
    assert settings["LOG_LEVEL"] == "DEBUG"
    assert settings["HOST"] == "127.0.0.1"


def test_explicit_overrides_environment():
    environ = {"WIDGET_SERVER_PORT": "9000", "WIDGET_SERVER_RETRY_MS": "10"}
    settings = load_settings({"PORT": 7000}, environ=environ)
    assert settings["PORT"] == 7000
    assert settings["RETRY_MS"] == 10  # environment still beats the default


def test_explicit_keys_may_be_prefixed_or_lower_case():
    assert load_settings({"port": "7001"}, environ={})["PORT"] == 7001
    assert load_settings({"WIDGET_SERVER_PORT": 7002}, environ={})["PORT"] == 7002


def test_explicit_bad_value_is_refused_even_if_environment_is_good():
    with pytest.raises(ConfigError, match="PORT"):
        load_settings({"PORT": "abc"}, environ={"WIDGET_SERVER_PORT": "9000"})


def test_environment_bad_value_is_refused_even_if_explicit_overrides_it():
    # A bad value is never silently ignored.
    with pytest.raises(ConfigError, match="WIDGET_SERVER_PORT"):
        load_settings({"PORT": 7000}, environ={"WIDGET_SERVER_PORT": "abc"})


@pytest.mark.parametrize(
    ("key", "raw"),
    [
        ("PORT", "abc"),
        ("PORT", "-1"),
        ("PORT", "65536"),
        ("PORT", "80.5"),
        ("PORT", ""),
        ("HEARTBEAT_SECONDS", "0"),
        ("HEARTBEAT_SECONDS", "nan"),
        ("HEARTBEAT_SECONDS", "inf"),
        ("HEARTBEAT_SECONDS", "301"),
        ("HEARTBEAT_SECONDS", "soon"),
        ("EMBED_ORIGINS", "ftp://x"),
        ("EMBED_ORIGINS", "example.com"),
        ("EMBED_ORIGINS", "https://"),
        ("EMBED_ORIGINS", "https://example.com/path"),
        ("EMBED_ORIGINS", "https://example.com?x=1"),
        ("EMBED_ORIGINS", "https://example.com#top"),
        ("EMBED_ORIGINS", "https://user@example.com"),
        ("EMBED_ORIGINS", "https://ok.example javascript:alert(1)"),
        ("WORKERS", "0"),
        ("LOG_MAX_EVENTS", "0"),
        ("ENV", "staging"),
        ("LOG_LEVEL", "LOUD"),
        ("STORE", "redis"),
        ("STORE", "redis+cluster://"),
        ("STORE", "redis+cluster://127.0.0.1"),
        ("STORE", "redis+cluster://127.0.0.1:7000,:7001"),
        ("STORE", "redis+cluster://127.0.0.1:70000"),
        ("MESSAGE_TIME_LIMIT_SECONDS", "-5"),
        ("MAX_BODY_BYTES", "10"),
    ],
)
def test_bad_environment_value_names_the_key(key, raw):
    with pytest.raises(ConfigError) as info:
        load_settings(environ={ENV_PREFIX + key: raw})
    assert key in str(info.value)


@pytest.mark.parametrize(
    ("key", "raw"),
    [
        ("PORT", "abc"),
        ("PORT", True),  # a bool is not a port
        ("PORT", None),
        ("HEARTBEAT_SECONDS", 0),
        ("HEARTBEAT_SECONDS", False),
        ("EMBED_ORIGINS", ["ftp://x"]),
        ("LOG_LEVEL", "verbose"),
    ],
)
def test_bad_explicit_value_names_the_key(key, raw):
    with pytest.raises(ConfigError) as info:
        load_settings({key: raw}, environ={})
    assert key in str(info.value)


def test_unknown_explicit_key_is_refused_by_name():
    with pytest.raises(ConfigError) as info:
        load_settings({"PROT": 8000}, environ={})
    assert "PROT" in str(info.value)
    assert "unknown setting" in str(info.value)


def test_error_message_says_where_the_value_came_from():
    with pytest.raises(ConfigError, match=r"environment variable WIDGET_SERVER_HEARTBEAT_SECONDS"):
        load_settings(environ={"WIDGET_SERVER_HEARTBEAT_SECONDS": "0"})
    with pytest.raises(ConfigError, match=r"HEARTBEAT_SECONDS \(from configuration\)"):
        load_settings({"HEARTBEAT_SECONDS": 0}, environ={})


def test_config_error_is_a_value_error():
    assert issubclass(ConfigError, ValueError)


def test_memory_store_with_several_workers_is_refused():
    with pytest.raises(ConfigError, match="WORKERS"):
        load_settings({"WORKERS": 2}, environ={})
    with pytest.raises(ConfigError, match="WORKERS"):
        load_settings(environ={"WIDGET_SERVER_WORKERS": "2"})
    assert load_settings({"WORKERS": 1}, environ={})["WORKERS"] == 1


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("*", ("*",)),
        ("'self'", ("'self'",)),
        ("https://a.example/", ("https://a.example",)),
        ("https://*.a.example https://[::1]:8443", ("https://*.a.example", "https://[::1]:8443")),
    ],
)
def test_embed_origins_accepted_forms(raw, expected):
    assert load_settings({"EMBED_ORIGINS": raw}, environ={})["EMBED_ORIGINS"] == expected


def test_boundaries_are_inclusive():
    settings = load_settings({"PORT": 0, "HEARTBEAT_SECONDS": 0.05, "RETRY_MS": 0}, environ={})
    assert (settings["PORT"], settings["HEARTBEAT_SECONDS"], settings["RETRY_MS"]) == (0, 0.05, 0)
    assert load_settings({"PORT": 65535}, environ={})["PORT"] == 65535


def test_every_setting_default_passes_its_own_validation():
    for setting in SETTINGS:
        assert setting.convert(setting.default, "default") == setting.default
        assert SETTINGS_BY_NAME[setting.name] is setting
        assert setting.env_var == "WIDGET_SERVER_" + setting.name


def test_create_app_refuses_bad_config_at_start(monkeypatch):
    with pytest.raises(ConfigError, match="PORT"):
        create_app({"PORT": "x"}, environ={})
    # And as a caller writes it, reading the real environment.
    monkeypatch.delenv("WIDGET_SERVER_PORT", raising=False)
    with pytest.raises(ConfigError, match="PORT"):
        create_app({"PORT": "x"})


def test_create_app_refuses_bad_environment_at_start():
    with pytest.raises(ConfigError, match="HEARTBEAT_SECONDS"):
        create_app({}, environ={"WIDGET_SERVER_HEARTBEAT_SECONDS": "0"})


def test_create_app_applies_precedence():
    app = create_app({"RETRY_MS": 5}, environ={"WIDGET_SERVER_RETRY_MS": "7", "WIDGET_SERVER_MAX_BODY_BYTES": "1024"})
    assert app.config["WIDGET_SERVER"]["RETRY_MS"] == 5
    assert app.config["MAX_CONTENT_LENGTH"] == 1024


def test_a_redis_cluster_store_is_its_seed_nodes_and_credentials():
    from widget_server.store_url import cluster_nodes

    url = "redis+cluster://app:p%40ss@10.0.0.1:7000,10.0.0.2:7001,[::1]:7002"
    assert load_settings(environ={ENV_PREFIX + "STORE": url, ENV_PREFIX + "WORKERS": "2"})["STORE"] == url
    assert cluster_nodes(url) == ([("10.0.0.1", 7000), ("10.0.0.2", 7001), ("::1", 7002)], "app", "p@ss")
