"""widget_server/services.py: one place builds the server's objects, each given what it uses
through its constructor (docs/architecture.md, "Layers")."""

from __future__ import annotations

import ast
from pathlib import Path

from widget_server import create_app
from widget_server.services import SERVICES_KEY, Services, build_services
from widget_server.settings import load_settings

PACKAGE = Path(__file__).resolve().parent.parent / "widget_server"


def test_build_services_makes_the_graph_without_flask(tmp_path):
    agents = tmp_path / "agents.json"
    settings = load_settings({"HANDOFF": "auto", "AGENTS_FILE": str(agents)}, environ={})
    services = build_services(settings, console_url="https://shop.example/agent")
    # One stop signal for the answers' and the conversations' streams.
    assert services.chat.stopping is services.handoff.stopping is services.stopping
    services.chat.begin_shutdown()
    assert services.handoff.stopping.is_set() and services.chat.shutting_down
    # HANDOFF=auto follows the agents file the accounts read, through the chat's Turn too.
    assert services.chat.handoff_enabled() is False
    assert services.handoff.has_agents == services.accounts.anyone
    # The mail hooks are the mailer's, with the console's link.
    assert services.handoff.on_left_message == services.mailer.mail_left_message
    assert services.mailer.console_url == "https://shop.example/agent"
    # "Delete my conversation" removes its files.
    assert services.chat.deleted_listeners == (services.attachments.delete_conversation,)
    services.mailer.close()


def test_create_app_keeps_one_services_object():
    app = create_app({}, environ={})
    services = app.extensions[SERVICES_KEY]
    assert isinstance(services, Services)
    assert services.settings is app.config["WIDGET_SERVER"]
    with app.test_request_context("/"):
        from widget_server.transport import chat_service, handoff_service

        assert chat_service() is services.chat and handoff_service() is services.handoff
    services.mailer.close()


def _attribute_assignments(path: Path) -> list[str]:
    """`x.y = …` statements in a module, as "line: x.y"."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets = (
            node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        )
        for target in targets:
            if isinstance(target, ast.Attribute):
                found.append(f"{node.lineno}: {ast.unparse(target)}")
    return found


def test_nothing_is_wired_by_attribute_after_construction():
    """The app and the builder set no attribute on an object they made: the dependencies go
    through constructors. What the app sets is Flask's own (the WSGI middleware, the JSON
    provider's option), as Flask's documentation says to."""
    assert _attribute_assignments(PACKAGE / "services.py") == []
    allowed = {"app.wsgi_app", "app.json.ensure_ascii"}
    assigned = [line for line in _attribute_assignments(PACKAGE / "app.py") if line.split(": ")[1] not in allowed]
    # PublicHost's own __init__ sets its fields on `self`.
    assert [line for line in assigned if not line.split(": ")[1].startswith("self.")] == []
