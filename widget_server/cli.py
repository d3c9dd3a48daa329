"""`widget-server` and `python -m widget_server`: run the server for real.

It serves with gunicorn and gevent workers, not Flask's development server:
each open event stream is a cheap greenlet, so one worker holds thousands of
idle streams (gunicorn's default sync worker serves one stream at a time).
docs/serving.md gives the reasons and the measurements.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from .agents.commands import add_agents_commands, agents_command, check_agents_file
from .backends.base import UnknownBackend, create_backend
from .feedback.service import export as export_feedback
from .feedback.service import parse_since
from .privacy.commands import add_data_commands, data_command
from .settings import CORE_SETTINGS, ConfigError, load_settings


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="widget-server",
        description="Serve the widget_server chat: the API, the embeddable widget and its demo page.",
        epilog="Every option can also be set with its WIDGET_SERVER_* environment variable; "
        "an option given here wins. See docs/configuration.md.",
    )

    def option(flag: str, name: str, **kwargs: Any) -> None:
        setting = CORE_SETTINGS[name]
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
    commands = _add_feedback_commands(parser)
    add_agents_commands(commands)  # `agents add|remove|list`: docs/agents.md
    add_data_commands(commands)  # `data export|erase`: docs/privacy.md
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    explicit = {name: value for name, value in vars(args).items() if value is not None and name in CORE_SETTINGS}
    if args.command == "feedback":
        return _feedback_command(args, explicit)
    if args.command == "agents":
        return agents_command(args, explicit)
    if args.command == "data":
        return data_command(args, explicit)
    try:
        settings = load_settings(explicit)
        # Build the backend once here, before any worker starts, so its own
        # configuration errors (a missing API key, an empty knowledge base)
        # are this one line too, not a worker failing to boot.
        create_backend(settings.server.backend, settings)
        check_agents_file(settings)  # the same for an agents file that is not one
    except (ConfigError, UnknownBackend) as error:
        print(f"widget-server: error: {error}", file=sys.stderr)
        return 2
    from .serving import serve

    return serve(explicit, settings)


# -- `widget-server feedback export` (widget_server/feedback/) ------------------------------


def _since(text: str) -> float:
    try:
        return parse_since(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _add_feedback_commands(parser: argparse.ArgumentParser) -> Any:
    """Add the subcommands, `feedback export` among them; the subparsers, for more commands."""
    commands = parser.add_subparsers(
        dest="command",
        metavar="COMMAND",
        help="`feedback export`, `agents add|remove|list`, `data export|erase`; without a command, serve the chat.",
    )
    feedback = commands.add_parser("feedback", help="The visitors' feedback on answers.")
    actions = feedback.add_subparsers(dest="feedback_command", metavar="ACTION", required=True)
    export = actions.add_parser(
        "export",
        help="Write the stored feedback as JSON Lines to stdout, oldest first.",
        description="Write every feedback record the store holds as JSON Lines to stdout, oldest first: "
        "conversation_id, message_id, rating, comment, question, answer, time. It reads a shared store "
        "(--store redis://…, the server's STORE); feedback expires with its conversation "
        "(RETENTION).",
    )
    export.add_argument(
        "--since",
        type=_since,
        default=None,
        metavar="DATE",
        help="Only feedback set at or after this: YYYY-MM-DD (that day's start, UTC) or an ISO 8601 date and "
        "time (UTC unless it names a zone).",
    )
    setting = CORE_SETTINGS["STORE"]
    # SUPPRESS: not given here, `widget-server --store … feedback export` keeps the one given before.
    export.add_argument(
        "--store",
        dest="STORE",
        default=argparse.SUPPRESS,
        help=f"The store to read: the running server's. [env {setting.env_var}]",
    )
    return commands


def _feedback_command(args: argparse.Namespace, explicit: dict[str, Any]) -> int:
    try:
        settings = load_settings(explicit)
    except ConfigError as error:
        print(f"widget-server: error: {error}", file=sys.stderr)
        return 2
    if settings.store.url == "memory":
        # The memory store lives inside the server's own process: nothing else can read it.
        print(
            "widget-server: error: feedback export reads a shared store, and STORE is `memory`, which lives "
            "only inside the running server's process. Give the server's Redis store: --store redis://…",
            file=sys.stderr,
        )
        return 2
    from .stores import create_store
    from .stores.base import StoreUnavailable

    store = create_store(settings)
    out = sys.stdout.buffer  # JSON Lines is UTF-8, whatever the terminal's locale
    try:
        for row in export_feedback(store, args.since):
            out.write(json.dumps(row, ensure_ascii=False).encode("utf-8") + b"\n")
        out.flush()
    except StoreUnavailable as error:
        print(f"widget-server: error: the store cannot be reached: {error}", file=sys.stderr)
        return 1
    finally:
        store.close()
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
