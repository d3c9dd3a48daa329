"""The one plugin registry (widget_server/plugins.py): backends, actions and attachment stores
found by entry point or by `package.module:Class`, and each plugin's own settings."""

from __future__ import annotations

from pathlib import Path

import pytest

from widget_server import plugins
from widget_server.backends.demo import DemoBackend, DemoSettings
from widget_server.backends.kb import KbSettings
from widget_server.backends.openai import OpenAISettings


def test_the_built_in_plugins_are_registered_by_entry_point():
    assert {"demo", "openai", "kb"} <= set(plugins.registered(plugins.BACKENDS))
    assert "callback_request" in plugins.registered(plugins.ACTIONS)
    assert plugins.load(plugins.BACKENDS, "demo") is DemoBackend


def test_a_class_is_loaded_by_its_dotted_name():
    assert plugins.load(plugins.BACKENDS, "widget_server.backends.demo:DemoBackend") is DemoBackend


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("nothing", r"no 'nothing' in widget_server.backends \(installed: .*demo.*\)"),
        ("no_such_module:Thing", r"cannot load 'no_such_module:Thing': No module named 'no_such_module'"),
        ("widget_server.backends.demo:Nothing", r"cannot load 'widget_server.backends.demo:Nothing'"),
    ],
)
def test_an_unknown_plugin_is_refused_with_what_is_installed(name, message):
    with pytest.raises(plugins.PluginNotFound, match=message):
        plugins.load(plugins.BACKENDS, name)


def test_every_backends_settings_class_is_found_and_a_broken_choice_is_skipped():
    found = plugins.settings_classes(plugins.BACKENDS, "no_such_module:Thing")
    assert {DemoSettings, KbSettings, OpenAISettings} <= set(found)
    assert len(found) == len(set(found))


def test_only_the_registry_reads_entry_points():
    """Backends, actions and attachment stores are found one way (widget_server/plugins.py)."""
    package = Path(__file__).resolve().parent.parent / "widget_server"
    readers = sorted(
        str(path.relative_to(package))
        for path in package.rglob("*.py")
        if "entry_points(" in path.read_text(encoding="utf-8")
    )
    assert readers == ["plugins.py"]
