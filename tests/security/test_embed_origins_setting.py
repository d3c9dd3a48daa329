"""EMBED_ORIGINS becomes the panel's `frame-ancestors`: an entry that is not
scheme://host[:port] (a `;`, a quote, a space, a bad port) must stop the server at start
with one line naming the setting and the entry, never reach the CSP header."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from widget_server.settings import ConfigError

from ..helpers import LiveServer

BAD_ENTRIES = [
    "https://a.example;script-src",  # would end the directive and start another
    "https://a.example'unsafe-inline'",
    "https://a.example:0",
    "https://a.example:65536",
    "https://a.example:8o",
    "https://a.example:",
    "https://[not-ipv6]",
]


@pytest.mark.parametrize("entry", BAD_ENTRIES)
def test_embed_origins_entry_that_is_not_an_origin_stops_widget_server_with_one_line_and_exit_2(entry):
    env = {key: value for key, value in os.environ.items() if not key.startswith("WIDGET_SERVER_")}
    env["WIDGET_SERVER_EMBED_ORIGINS"] = f"https://ok.example {entry}"
    done = subprocess.run(
        [sys.executable, "-m", "widget_server", "--port", "0"],
        env=env,
        capture_output=True,
        text=True,
        timeout=20,
    )
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("widget-server: error: EMBED_ORIGINS"), lines[0]
    assert repr(entry) in lines[0], lines[0]  # the bad entry itself, not only the whole value


def test_embed_origins_entry_with_a_space_inside_is_refused_by_create_app():
    # A list given to create_app is not split on spaces: the entry keeps its space.
    with pytest.raises(ConfigError, match="EMBED_ORIGINS") as refused:
        LiveServer({"EMBED_ORIGINS": ["https://a.example frame-ancestors *"]})
    assert "\n" not in str(refused.value)
