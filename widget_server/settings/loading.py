"""Loading the settings: three layers, validated once at start.

Precedence (lowest first): each setting's default < `WIDGET_SERVER_<NAME>` environment
variables < the explicit mapping given to `create_app(config)` (the CLI's options land
there). A bad value stops the server at start with an error that names the key; it is never
discovered mid-request. The result is one frozen `Settings`: an object per area, typed, so a
misspelt name is an error mypy finds.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ..plugins import ATTACHMENT_STORES, BACKENDS, settings_classes
from ..store_url import CLUSTER_SCHEME, BadStoreUrl, cluster_nodes
from ..store_url import SCHEMES as REDIS_SCHEMES
from .areas import (
    AgentSettings,
    AttachmentSettings,
    ChatSettings,
    HandoffSettings,
    IdentitySettings,
    MailSettings,
    RateLimitSettings,
    ServerSettings,
    StoreSettings,
    ThemeSettings,
    WebhookSettings,
    WebSettings,
)
from .declaring import ENV_PREFIX, Area, ConfigError, Setting, build, declared

log = logging.getLogger(__name__)

CORE_AREAS: tuple[type, ...] = (
    ServerSettings,
    WebSettings,
    StoreSettings,
    ChatSettings,
    RateLimitSettings,
    HandoffSettings,
    AgentSettings,
    MailSettings,
    AttachmentSettings,
    ThemeSettings,
    IdentitySettings,
    WebhookSettings,
)

# The server's own settings by name (the CLI's options name them).
CORE_SETTINGS: dict[str, Setting] = {
    declaration.name: declaration for area in CORE_AREAS for declaration in declared(area)
}


@dataclass(frozen=True, eq=False)
class Settings(Mapping[str, Any]):
    """Every setting, validated: `settings.chat.max_text_chars`; a plugin's own through
    `settings.plugin(ItsSettings)`. It is also a read-only mapping by name
    (`settings["MAX_TEXT_CHARS"]`), for what takes names: the CLI, docs and test tables, and
    plugins written before settings were typed; the server's own code reads attributes
    (tests/test_architecture.py)."""

    server: ServerSettings
    web: WebSettings
    store: StoreSettings
    chat: ChatSettings
    rate_limits: RateLimitSettings
    handoff: HandoffSettings
    agents: AgentSettings
    mail: MailSettings
    attachments: AttachmentSettings
    theme: ThemeSettings
    identity: IdentitySettings
    webhooks: WebhookSettings
    plugins: Mapping[type, Any]
    by_name: Mapping[str, Any]

    def plugin(self, area: type[Area]) -> Area:
        """A plugin's own settings object (its `settings_class`, widget_server/plugins.py)."""
        found = self.plugins.get(area)
        if found is None:
            raise LookupError(f"{area.__name__} is not a registered plugin's settings_class")
        value: Area = found
        return value

    def __getitem__(self, name: str) -> Any:
        return self.by_name[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.by_name)

    def __len__(self) -> int:
        return len(self.by_name)

    def replace(self, **values: Any) -> Settings:
        """These settings with some values changed by name, validated again (tests, benches)."""
        base = {name: value for name, value in self.by_name.items() if value is not None}
        if "CONVERSATION_TTL_SECONDS" in values:
            base.pop("RETENTION", None)  # the old name given: it is RETENTION's value
        return load_settings({**base, **values}, environ={})


def all_settings(backend: str = "", attachment_store: str = "") -> tuple[Setting, ...]:
    """Every declared setting: the server's, and those of every registered backend and
    attachment store (and of `backend` / `attachment_store` when they name a class). A name
    declared twice is the same declaration (an area may extend another's dataclass)."""
    areas = [*CORE_AREAS, *_plugin_areas(backend, attachment_store)]
    found: dict[str, Setting] = {}
    for area in areas:
        for declaration in declared(area):
            found.setdefault(declaration.name, declaration)
    return tuple(found.values())


def _plugin_areas(backend: str, attachment_store: str) -> list[type]:
    return [*settings_classes(BACKENDS, backend), *settings_classes(ATTACHMENT_STORES, attachment_store)]


def _raw_choice(name: str, explicit: Mapping[str, Any], environ: Mapping[str, str]) -> str:
    """A plugin-choosing setting's raw text before validation, to find the plugin's settings."""
    for key, raw in explicit.items():
        if key.removeprefix(ENV_PREFIX).upper() == name:
            return str(raw).strip()
    return environ.get(ENV_PREFIX + name, "").strip()


def load_settings(explicit: Mapping[str, Any] | None = None, environ: Mapping[str, str] | None = None) -> Settings:
    """Defaults < environment < explicit; validated. Unknown explicit keys are an error."""
    environ = os.environ if environ is None else environ
    explicit = explicit or {}
    plugin_areas = _plugin_areas(
        _raw_choice("BACKEND", explicit, environ), _raw_choice("ATTACHMENT_STORE", explicit, environ)
    )
    by_name: dict[str, Setting] = {}
    for area in (*CORE_AREAS, *plugin_areas):
        for declaration in declared(area):
            by_name.setdefault(declaration.name, declaration)
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}  # where each setting given (not defaulted) came from
    for declaration in by_name.values():
        value = declaration.default
        if declaration.env_var in environ:
            sources[declaration.name] = f"environment variable {declaration.env_var}"
            value = declaration.convert(environ[declaration.env_var], sources[declaration.name])
        values[declaration.name] = value
    for key, raw in explicit.items():
        name = key.removeprefix(ENV_PREFIX).upper()
        if name not in by_name:
            raise ConfigError(f"{key}: unknown setting (known: {', '.join(by_name)})")
        sources[name] = "configuration"
        values[name] = by_name[name].convert(raw, "configuration")
    _fold_deprecated_retention(values, sources)
    _check_together(values)
    return Settings(
        server=build(ServerSettings, values),
        web=build(WebSettings, values),
        store=build(StoreSettings, values),
        chat=build(ChatSettings, values),
        rate_limits=build(RateLimitSettings, values),
        handoff=build(HandoffSettings, values),
        agents=build(AgentSettings, values),
        mail=build(MailSettings, values),
        attachments=build(AttachmentSettings, values),
        theme=build(ThemeSettings, values),
        identity=build(IdentitySettings, values),
        webhooks=build(WebhookSettings, values),
        plugins={area: build(area, values) for area in plugin_areas},
        by_name=values,
    )


def _fold_deprecated_retention(values: dict[str, Any], sources: Mapping[str, str]) -> None:
    """CONVERSATION_TTL_SECONDS is RETENTION's old name (docs/configuration.md): its value
    becomes RETENTION's, and it is an error only when both are given and differ."""
    old = values.get("CONVERSATION_TTL_SECONDS")
    if old is None:
        return
    if "RETENTION" in sources and values["RETENTION"] != old:
        raise ConfigError(
            f"RETENTION (from {sources['RETENTION']}) is {values['RETENTION']:g} s but its deprecated name "
            f"CONVERSATION_TTL_SECONDS (from {sources['CONVERSATION_TTL_SECONDS']}) is {old:g} s: set RETENTION only"
        )
    log.warning("CONVERSATION_TTL_SECONDS is deprecated: it is read as RETENTION (docs/configuration.md)")
    values["RETENTION"] = old
    values["CONVERSATION_TTL_SECONDS"] = None


# RFC 7518 §3.2: an HS256 key must be at least as long as the hash's output, 256 bits.
IDENTITY_SECRET_MIN_BYTES = 32
_LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")


def _check_identity(values: Mapping[str, Any]) -> None:
    """The identity settings together (docs/configuration.md, "Known visitors"). The secret's
    value never appears in a message: only its name and its length."""
    sources = [name for name in ("IDENTITY_SECRET", "IDENTITY_PUBLIC_KEY_FILE", "IDENTITY_JWKS_URL") if values[name]]
    if len(sources) > 1:
        raise ConfigError(
            f"{sources[0]}: set one identity key source only, not {' and '.join(sources)} "
            "(HS256 with IDENTITY_SECRET, or RS256/ES256 with IDENTITY_PUBLIC_KEY_FILE or IDENTITY_JWKS_URL)"
        )
    if values["IDENTITY_REQUIRED"] and not sources:
        raise ConfigError(
            "IDENTITY_REQUIRED: identity tokens cannot be verified without a key: "
            "set IDENTITY_SECRET, IDENTITY_PUBLIC_KEY_FILE or IDENTITY_JWKS_URL"
        )
    secret = values["IDENTITY_SECRET"]
    if secret and len(secret.encode("utf-8")) < IDENTITY_SECRET_MIN_BYTES:
        raise ConfigError(
            f"IDENTITY_SECRET: too short ({len(secret.encode('utf-8'))} bytes); HS256 needs at least "
            f"{IDENTITY_SECRET_MIN_BYTES} random bytes (RFC 7518 §3.2)"
        )
    url = values["IDENTITY_JWKS_URL"]
    if url:
        scheme, _, rest = url.partition("://")
        host = rest.split("/", 1)[0].rsplit(":", 1)[0] if not rest.startswith("[") else rest.split("]", 1)[0] + "]"
        if not rest or not (scheme == "https" or (scheme == "http" and host in _LOOPBACK_HOSTS)):
            raise ConfigError(
                f"IDENTITY_JWKS_URL: {url!r} is not an https URL (plain http only for a loopback address)"
            )


# As IDENTITY_SECRET's: an HMAC-SHA256 key as long as the hash's output (RFC 2104 §3).
WEBHOOK_SECRET_MIN_BYTES = 32


def _check_webhooks(values: Mapping[str, Any]) -> None:
    """The webhook settings together (docs/webhooks.md); the secret's value never appears."""
    secret = values["WEBHOOK_SECRET"]
    if values["WEBHOOK_URLS"] and not secret:
        raise ConfigError("WEBHOOK_SECRET: required with WEBHOOK_URLS: every delivery is signed with it")
    if secret and len(secret.encode("utf-8")) < WEBHOOK_SECRET_MIN_BYTES:
        raise ConfigError(
            f"WEBHOOK_SECRET: too short ({len(secret.encode('utf-8'))} bytes); HMAC-SHA256 needs at least "
            f"{WEBHOOK_SECRET_MIN_BYTES} random bytes"
        )


def _check_together(values: Mapping[str, Any]) -> None:
    _check_identity(values)
    _check_webhooks(values)
    if values["ENV"] == "production" and values["FAULTS"]:
        raise ConfigError("FAULTS: fault injection is for tests and QA; it cannot be on when ENV is production")
    if values["ENV"] == "production" and values["QA"]:
        raise ConfigError("QA: the QA page (/qa) is for testers; it cannot be on when ENV is production")
    if values["ENV"] == "production" and values["BACKEND"] == "demo" and not values["ALLOW_DEMO_IN_PRODUCTION"]:
        raise ConfigError(
            "BACKEND: the demo backend plays canned answers; it cannot serve when ENV is production "
            "unless ALLOW_DEMO_IN_PRODUCTION=1"
        )
    if values["ENV"] == "production" and not values["PUBLIC_URL"]:
        raise ConfigError(
            "PUBLIC_URL: required when ENV is production: the origin visitors reach the server at, "
            "such as https://chat.example.com (links and the widget's API address are built on it)"
        )
    if values["CONSENT_TEXT"] and not values["CONSENT_URL"]:
        raise ConfigError(
            "CONSENT_URL: required when CONSENT_TEXT is set: the address of the site's privacy "
            "notice, such as https://www.example.com/privacy, which the consent line links to"
        )
    if values["STORE"] == "memory" and values["WORKERS"] > 1:
        raise ConfigError(
            "WORKERS: the memory store lives in one process, so resume and cancel would break "
            "across several workers; use WORKERS=1 or a shared store"
        )
    if values["STORE"] != "memory" and not values["STORE"].startswith(REDIS_SCHEMES):
        raise ConfigError(
            f"STORE: {values['STORE']!r} is not a store "
            "(use memory, redis://HOST:PORT/DB or redis+cluster://HOST:PORT[,HOST:PORT…])"
        )
    if values["STORE"].startswith(CLUSTER_SCHEME):
        try:
            cluster_nodes(values["STORE"])
        except BadStoreUrl as error:
            raise ConfigError(f"STORE: {values['STORE']!r}: {error} (redis+cluster://HOST:PORT[,HOST:PORT…])") from None
