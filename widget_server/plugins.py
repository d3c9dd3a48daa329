"""The one plugin registry: backends, actions and attachment stores are found the same way
(docs/backends.md, "Plugins").

A plugin is a class registered under an entry point of its group (pyproject.toml's
`[project.entry-points."widget_server.backends"]`, …), or named as `package.module:Class`
where a setting takes a name (BACKEND, ATTACHMENT_STORE). A plugin class may declare
`settings_class`, a frozen dataclass of its own settings made with `widget_server.settings.
setting()`: they are read, validated and documented like the server's own (the environment
variables `WIDGET_SERVER_<NAME>`, `create_app(config)`), and handed to the plugin when it is
built. Nothing here imports a plugin before it is asked for.
"""

from __future__ import annotations

import functools
import importlib
import logging
from importlib.metadata import EntryPoint, entry_points
from typing import Any

log = logging.getLogger(__name__)

BACKENDS = "widget_server.backends"
ACTIONS = "widget_server.actions"
ATTACHMENT_STORES = "widget_server.attachment_stores"


class PluginNotFound(LookupError):
    """No plugin of that name in the group, or its module or class cannot be loaded."""


def registered(group: str) -> dict[str, EntryPoint]:
    """The plugins of `group` by name (entry points, not yet loaded)."""
    return {point.name: point for point in _entry_points(group)}


@functools.cache
def _entry_points(group: str) -> tuple[EntryPoint, ...]:
    # Read once per process: `entry_points()` reads every installed distribution's metadata
    # (a few milliseconds each time, and every create_app asks several times), and a plugin
    # installed later is found by the next process, as with any Python package.
    return tuple(entry_points(group=group))


def load(group: str, name: str) -> Any:
    """The class registered as `name` in `group`, or the `package.module:Class` that `name` spells."""
    if ":" in name:
        module_name, _, attribute = name.partition(":")
        try:
            return getattr(importlib.import_module(module_name), attribute)
        except (ImportError, AttributeError, ValueError) as error:
            raise PluginNotFound(f"cannot load {name!r}: {error}") from None
    point = registered(group).get(name)
    if point is None:
        known = ", ".join(sorted(registered(group))) or "none installed"
        raise PluginNotFound(f"no {name!r} in {group} (installed: {known})")
    try:
        return point.load()
    except (ImportError, AttributeError) as error:
        raise PluginNotFound(f"cannot load {name!r} ({point.value}): {error}") from None


def settings_classes(group: str, chosen: str = "") -> list[type]:
    """The `settings_class` of every plugin registered in `group`, and of `chosen` when it is a
    `package.module:Class`: each one's settings are known (and validated) whichever plugin runs,
    so one configuration serves every backend. A registered plugin that cannot be loaded is
    skipped here; choosing it fails when the server builds it, with the reason."""
    names = [*registered(group), *([chosen] if ":" in chosen else [])]
    found: list[type] = []
    for name in names:
        try:
            plugin = load(group, name)
        except PluginNotFound as error:
            log.debug("plugin settings skipped: %s", error)
            continue
        area = getattr(plugin, "settings_class", None)
        if isinstance(area, type) and area not in found:
            found.append(area)
    return found
