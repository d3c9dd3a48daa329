"""`widget-server` and `python -m widget_server`: run the server for real.

It serves with gunicorn and gevent workers, not Flask's development server:
each open event stream is a cheap greenlet, so one worker holds thousands of
idle streams (gunicorn's default sync worker serves one stream at a time).
docs/serving.md gives the reasons and the measurements.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from .backends.base import UnknownBackend, create_backend
from .config import SETTINGS_BY_NAME, ConfigError, load_settings


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="widget-server",
        description="Serve the widget_server chat: the API, the embeddable widget and its demo page.",
        epilog="Every option can also be set with its WIDGET_SERVER_* environment variable; "
        "an option given here wins. See docs/configuration.md.",
    )

    def option(flag: str, name: str, **kwargs: Any) -> None:
        setting = SETTINGS_BY_NAME[name]
        parser.add_argument(
            flag,
            dest=name,
            default=None,
            help=f"{setting.help} [env {setting.env_var}; default {setting.default!r}]",
            **kwargs,
        )

    option("--host", "HOST")
    option("--port", "PORT", type=int)
    option("--backend", "BACKEND")
    option("--store", "STORE")
    option("--workers", "WORKERS", type=int)
    option("--log-level", "LOG_LEVEL", type=str.upper)
    option("--env", "ENV")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    explicit = {name: value for name, value in vars(args).items() if value is not None}
    try:
        settings = load_settings(explicit)
        # Build the backend once here, before any worker starts, so its own
        # configuration errors (a missing API key, an empty knowledge base)
        # are this one line too, not a worker failing to boot.
        create_backend(settings["BACKEND"], settings)
    except (ConfigError, UnknownBackend) as error:
        print(f"widget-server: error: {error}", file=sys.stderr)
        return 2
    from .serving import serve

    return serve(explicit, settings)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
