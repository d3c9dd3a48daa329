"""`widget-server agents add|remove|list`: the agents file from the command line
(docs/agents.md, "Accounts"; the options in docs/configuration.md).

The file is the AGENTS_FILE setting (WIDGET_SERVER_AGENTS_FILE), or `--agents-file`. A password
is read from a prompt, twice, without echo (getpass), or with `--password-stdin` as the first
line of standard input, so a script can pipe it in without it appearing in the process list
or the shell's history. Exit status: 0 done, 1 the file or the account refused it (the
message says why), 2 a setting or a usage error.
"""

from __future__ import annotations

import argparse
import getpass
import sys
from typing import Any

from ..settings import CORE_SETTINGS, ConfigError, Settings, load_settings
from .accounts import AccountsError, AgentAccounts, check_password


def add_agents_commands(commands: Any) -> None:
    """Add `agents` to the `widget-server` subcommands (cli.py's `commands`)."""
    agents = commands.add_parser("agents", help="The agent console's accounts (docs/agents.md).")
    actions = agents.add_subparsers(dest="agents_command", metavar="ACTION", required=True)
    setting = CORE_SETTINGS["AGENTS_FILE"]

    def file_option(parser: argparse.ArgumentParser) -> None:
        # SUPPRESS: when not given, the setting from the environment stands.
        parser.add_argument(
            "--agents-file",
            dest="AGENTS_FILE",
            default=argparse.SUPPRESS,
            metavar="PATH",
            help=f"The agents file to change or read. [env {setting.env_var}]",
        )

    add = actions.add_parser(
        "add",
        help="Add an agent account (the password from a prompt, or --password-stdin).",
        description="Add an agent who may sign in to the console at /agent. The password is asked for twice "
        "(not shown), or read from the first line of standard input with --password-stdin.",
    )
    add.add_argument("name", metavar="NAME", help="The sign-in name: 1-64 of a-z, 0-9, '.', '_', '-'.")
    add.add_argument(
        "--display-name",
        default=None,
        metavar="TEXT",
        help="The name visitors see when this agent joins (default: NAME).",
    )
    add.add_argument(
        "--password-stdin", action="store_true", help="Read the password from the first line of standard input."
    )
    add.add_argument(
        "--replace", action="store_true", help="Replace an existing account of that name (a new password)."
    )
    add.add_argument(
        "--admin", action="store_true", help="May also open the owner dashboard at /admin (docs/dashboard.md)."
    )
    file_option(add)
    remove = actions.add_parser("remove", help="Remove an agent account; its sessions stop working at once.")
    remove.add_argument("name", metavar="NAME")
    file_option(remove)
    listing = actions.add_parser(
        "list", help="List the agent accounts: name, display name and `admin` for an admin, one per line."
    )
    file_option(listing)


def check_agents_file(settings: Settings) -> None:
    """ConfigError naming AGENTS_FILE if it is set and is not an agents file (`widget-server`
    checks before any worker starts, as create_app does in each)."""
    try:
        AgentAccounts(settings.agents.agents_file).current()
    except AccountsError as error:
        raise ConfigError(f"AGENTS_FILE: {error}") from None


def _password(from_stdin: bool) -> str:
    if from_stdin:
        line = sys.stdin.readline()
        return line[:-1] if line.endswith("\n") else line
    first = getpass.getpass("Password: ")
    if getpass.getpass("Password again: ") != first:
        raise AccountsError("the two passwords differ; nothing was changed")
    return first


def agents_command(args: argparse.Namespace, explicit: dict[str, Any]) -> int:
    try:
        settings = load_settings(explicit)
    except ConfigError as error:
        print(f"widget-server: error: {error}", file=sys.stderr)
        return 2
    accounts = AgentAccounts(settings.agents.agents_file)
    try:
        if args.agents_command == "list":
            for agent in accounts.list():
                print(f"{agent.name}\t{agent.display_name}" + ("\tadmin" if agent.admin else ""))
            return 0
        if args.agents_command == "remove":
            removed = accounts.remove(args.name)
            print(f"Removed {removed.name} from {accounts.path}.")
            return 0
        if accounts.path is None:
            accounts.read()  # the "no agents file is set" error, before asking for a password
        password = check_password(_password(args.password_stdin))
        agent = accounts.add(
            args.name, args.display_name or args.name, password, replace=args.replace, admin=args.admin
        )
        role = ", an admin," if agent.admin else ""
        print(f"Added {agent.name} ({agent.display_name}){role} to {accounts.path}.")
        return 0
    except AccountsError as error:
        print(f"widget-server: error: {error}", file=sys.stderr)
        return 1
    except (EOFError, KeyboardInterrupt):
        print("widget-server: error: no password given; nothing was changed", file=sys.stderr)
        return 1
