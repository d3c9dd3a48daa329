"""`widget-server data export|erase --subject SUB`: a site's answer to a visitor's access or
erasure request (docs/privacy.md; GDPR Art. 15 and 17), from the command line, against the
running server's shared store (`--store redis://…`, or the STORE setting).

`export` writes every conversation, message, rating, attachment listing, hand-off message and
left message of the subject as JSON Lines (privacy/export.py) to stdout or `--output FILE`.
`erase` deletes all of it (privacy/erase.py), after asking on a terminal unless `--yes`, and
prints what it deleted. Both find the subject's conversations by their list and by a walk of
the whole store (privacy/subjects.py), so none the list let go is missed. Exit status: 0 done,
1 the store could not be reached or erase was not confirmed, 2 a setting or a usage error.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from ..identity.identity import SUBJECT_MAX_CHARS
from ..settings import CORE_SETTINGS, ConfigError, load_settings


def _subject(text: str) -> str:
    subject = text.strip()
    if not subject or len(subject) > SUBJECT_MAX_CHARS:
        raise argparse.ArgumentTypeError(
            f"a subject is the identity token's `sub`: 1 to {SUBJECT_MAX_CHARS} characters"
        )
    return subject


def add_data_commands(commands: Any) -> None:
    """Add `data` to the `widget-server` subcommands (cli.py's `commands`)."""
    data = commands.add_parser("data", help="A known visitor's data: export or erase it (docs/privacy.md).")
    actions = data.add_subparsers(dest="data_command", metavar="ACTION", required=True)
    setting = CORE_SETTINGS["STORE"]

    def common(parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--subject",
            required=True,
            type=_subject,
            metavar="SUB",
            help="The visitor: the `sub` of the identity tokens the site signs for them.",
        )
        # SUPPRESS: not given here, `widget-server --store … data …` keeps the one given before.
        parser.add_argument(
            "--store",
            dest="STORE",
            default=argparse.SUPPRESS,
            help=f"The store to read: the running server's. [env {setting.env_var}]",
        )

    export = actions.add_parser(
        "export",
        help="Write all of a subject's data as JSON Lines.",
        description="Write every conversation, message, rating, attachment listing, hand-off message and left "
        "message of the subject as JSON Lines, one record a line, each with its `kind` (docs/privacy.md).",
    )
    common(export)
    export.add_argument("--output", metavar="FILE", default=None, help="Write to FILE instead of stdout.")
    erase = actions.add_parser(
        "erase",
        help="Delete all of a subject's data.",
        description="Delete every conversation of the subject, whole (messages, ratings, attachments, hand-off, "
        "left messages), and their list; print how many of each were deleted (docs/privacy.md).",
    )
    common(erase)
    erase.add_argument("--yes", action="store_true", help="Do not ask to confirm.")


def _fail(message: str, status: int) -> int:
    print(f"widget-server: error: {message}", file=sys.stderr)
    return status


def data_command(args: argparse.Namespace, explicit: dict[str, Any]) -> int:
    try:
        settings = load_settings(explicit)
    except ConfigError as error:
        return _fail(str(error), 2)
    if settings.store.url == "memory":
        # The memory store lives inside the server's own process: nothing else can read it.
        return _fail(
            f"data {args.data_command} works on a shared store, and STORE is `memory`, which lives only inside "
            "the running server's process: give the server's Redis store (--store redis://…), or use the "
            "visitor's own routes (GET /api/v1/me/export, DELETE /api/v1/me; docs/privacy.md)",
            2,
        )
    if args.data_command == "erase" and not args.yes:
        if not sys.stdin.isatty():
            return _fail("erase deletes the subject's data for good: confirm with --yes", 2)
        answer = input(f"Delete every conversation of {args.subject!r} and all that goes with them? [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            print("Nothing deleted.", file=sys.stderr)
            return 1
    from ..services import build_services
    from ..stores.base import StoreUnavailable

    try:
        services = build_services(settings)
    except ConfigError as error:
        return _fail(str(error), 2)
    try:
        if args.data_command == "export":
            return _export(services, args.subject, args.output)
        return _erase(services, settings, args.subject)
    except StoreUnavailable as error:
        return _fail(f"the store cannot be reached: {error}", 1)
    except OSError as error:
        return _fail(str(error), 1)
    finally:
        services.store.close()


def _export(services: Any, subject: str, output: str | None) -> int:
    from .export import export_records
    from .subjects import subject_conversation_ids

    ids = subject_conversation_ids(services.store, subject, whole_store=True)
    records = export_records(services.chat, services.handoff, services.attachments, subject, ids)
    # JSON Lines is UTF-8, whatever the terminal's locale; a file is written whole or not at all.
    if output is None:
        for record in records:
            sys.stdout.buffer.write(json.dumps(record, ensure_ascii=False).encode("utf-8") + b"\n")
        sys.stdout.buffer.flush()
        return 0
    temporary = output + ".partial"
    with open(temporary, "wb") as file:
        for record in records:
            file.write(json.dumps(record, ensure_ascii=False).encode("utf-8") + b"\n")
    os.replace(temporary, output)
    return 0


def _erase(services: Any, settings: Any, subject: str) -> int:
    from ..ratelimits import RateLimits
    from .erase import erase_subject
    from .subjects import subject_conversation_ids

    limits = RateLimits(settings, services.metrics)
    ids = subject_conversation_ids(services.store, subject, whole_store=True)
    counts = erase_subject(
        services.chat,
        services.handoff,
        services.attachments,
        subject,
        ids,
        forget_limits=limits.forget_conversation,
    )
    print(
        "Deleted: "
        + ", ".join(f"{count} {kind.replace('_', ' ')}{'s' if count != 1 else ''}" for kind, count in counts.items())
    )
    return 0
