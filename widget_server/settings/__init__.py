"""The server's settings: declared once per area (`areas.py`; a plugin's beside its code),
parsed and validated once at start (`loading.py`), one typed `Settings` handed to whatever
needs them. docs/configuration.md lists every one."""

from __future__ import annotations

from .declaring import ENV_PREFIX, ConfigError, Setting, declared, setting
from .loading import CORE_AREAS, CORE_SETTINGS, Settings, all_settings, load_settings

__all__ = [
    "CORE_AREAS",
    "CORE_SETTINGS",
    "ENV_PREFIX",
    "ConfigError",
    "Setting",
    "Settings",
    "all_settings",
    "declared",
    "load_settings",
    "setting",
]
