"""Settings (widget_server/settings/): defaults < environment < explicit, validated at start, typed per area."""

from __future__ import annotations

import pytest

from widget_server import create_app
from widget_server.services import SERVICES_KEY
from widget_server.settings import ENV_PREFIX, ConfigError, Settings, all_settings, load_settings

SETTINGS = all_settings()


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
    names = [setting.name for setting in SETTINGS]
    assert len(names) == len(set(names))
    for setting in SETTINGS:
        assert setting.convert(setting.default, "default") == setting.default
        assert setting.env_var == "WIDGET_SERVER_" + setting.name


def test_settings_are_typed_per_area_and_read_only():
    settings = load_settings({"MAX_TEXT_CHARS": 123, "HANDOFF_QUEUE_MAX": 7}, environ={})
    assert isinstance(settings, Settings)
    assert settings.chat.max_text_chars == 123 and settings.handoff.queue_max == 7
    assert settings["MAX_TEXT_CHARS"] == 123  # the same value by name
    with pytest.raises(AttributeError):
        settings.chat.max_text_chars = 5  # type: ignore[misc]
    with pytest.raises(TypeError):
        settings["MAX_TEXT_CHARS"] = 5  # type: ignore[index]


def test_every_backends_own_settings_are_known_whichever_backend_runs():
    from widget_server.backends.kb import KbSettings
    from widget_server.backends.openai import OpenAISettings

    settings = load_settings({"OPENAI_MODEL": "llama3.2", "KB_MAX_PASSAGES": 2}, environ={})
    assert settings.server.backend == "demo"
    assert settings.plugin(OpenAISettings).model == "llama3.2"
    assert settings.plugin(KbSettings).max_passages == 2
    with pytest.raises(ConfigError, match="KB_MAX_PASSAGES"):
        load_settings({"KB_MAX_PASSAGES": 0}, environ={})


def test_a_backend_named_by_its_class_brings_its_settings(tmp_path, monkeypatch):
    (tmp_path / "acme_backend.py").write_text(
        "from dataclasses import dataclass\n"
        "from widget_server.settings import setting\n"
        "from widget_server.settings.parsing import parse_int\n"
        "@dataclass(frozen=True)\n"
        "class AcmeSettings:\n"
        "    retries: int = setting('ACME_RETRIES', parse_int, 3, 'Retries.', 0, 9)\n"
        "class AcmeBackend:\n"
        "    name = 'acme'\n"
        "    settings_class = AcmeSettings\n"
        "    def __init__(self, retries):\n"
        "        self.retries = retries\n"
        "    @classmethod\n"
        "    def from_settings(cls, settings):\n"
        "        return cls(settings.plugin(AcmeSettings).retries)\n"
        "    def stream(self, turn, cancel):\n"
        "        yield 'ok'\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    environ = {"WIDGET_SERVER_BACKEND": "acme_backend:AcmeBackend", "WIDGET_SERVER_ACME_RETRIES": "5"}
    app = create_app({}, environ=environ)
    assert app.extensions[SERVICES_KEY].chat.backend.retries == 5
    with pytest.raises(ConfigError, match=r"ACME_RETRIES \(from environment variable WIDGET_SERVER_ACME_RETRIES\)"):
        load_settings({}, environ={**environ, "WIDGET_SERVER_ACME_RETRIES": "10"})
    with pytest.raises(ConfigError, match="ACME_RETRIES: unknown setting"):
        load_settings({"ACME_RETRIES": 1}, environ={})  # another backend runs: nobody declares it


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


@pytest.mark.parametrize(("key", "limit"), [("GREETING", 200), ("LAUNCHER_LABEL", 40)])
def test_one_line_texts_fold_whitespace_and_refuse_more_than_their_limit(key, limit):
    settings = load_settings({key: "  Ask\n\tthe   team  "}, environ={})
    assert settings[key] == "Ask the team"
    assert load_settings({key: "x" * limit}, environ={})[key] == "x" * limit
    with pytest.raises(ConfigError, match=f"{key}.*at most {limit} characters"):
        load_settings({key: "x" * (limit + 1)}, environ={})
