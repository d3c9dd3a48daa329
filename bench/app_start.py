"""CPU time to create the server's app: Werkzeug's own URL rules (the baseline) against the
app's `LazyBuilderRule` (widget_server/flask_app.py), in the same run, interleaved.

    .venv/bin/python bench/app_start.py [--rounds 15] [--apps 20]

Every test that starts a server, and every gunicorn worker, creates the app once; with
Werkzeug's own rules most of that is compiling two URL builders per route, which only
`url_for` uses. Each round times `--apps` creations of each kind with `time.process_time`;
the report gives each kind's median per app and their ratio.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from werkzeug.routing import Rule

from widget_server import create_app
from widget_server.flask_app import LazyBuilderRule, WidgetFlask

# The suite's settings (tests/conftest.py TEST_CONFIG): the app tests and test servers create.
SETTINGS = {"DEMO_DELAY_SECONDS": 0.0, "LOG_LEVEL": "WARNING", "RATE_LIMITS": False}


def milliseconds_per_app(rule_class: type[Rule], apps: int) -> float:
    WidgetFlask.url_rule_class = rule_class
    try:
        started = time.process_time()
        for _ in range(apps):
            create_app(SETTINGS, environ={})
        return (time.process_time() - started) / apps * 1000
    finally:
        WidgetFlask.url_rule_class = LazyBuilderRule


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--apps", type=int, default=20)
    arguments = parser.parse_args()
    create_app(SETTINGS, environ={})  # imports and first-use caches out of the timing
    werkzeugs, lazy = [], []
    for _ in range(arguments.rounds):
        werkzeugs.append(milliseconds_per_app(Rule, arguments.apps))
        lazy.append(milliseconds_per_app(LazyBuilderRule, arguments.apps))
    baseline, ours = statistics.median(werkzeugs), statistics.median(lazy)
    routes = len(list(create_app(SETTINGS, environ={}).url_map.iter_rules()))
    print(f"| rules | CPU ms per app (median of {arguments.rounds} rounds of {arguments.apps}) | ratio |")
    print("| --- | ---: | ---: |")
    print(f"| Werkzeug's `Rule` ({routes} routes) | {baseline:.1f} | 1.00 |")
    print(f"| `LazyBuilderRule` | {ours:.1f} | {ours / baseline:.2f} |")


if __name__ == "__main__":
    main()
