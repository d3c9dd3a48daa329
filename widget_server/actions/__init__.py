"""Actions: what a backend may propose and a visitor may confirm, executed exactly once.

`service.py` (transport-free: the `Action` plugin class, the registry of installed actions,
proposing, confirming and dismissing), `api.py` (confirm, dismiss and list routes).

An action plugin imports its base class and errors from here (docs/backends.md, "Writing an
action"), and the built-in's entry point names `widget_server.actions:CallbackRequest`
(pyproject.toml): both are the plugins' interface, kept at this path whatever the module
that defines them.
"""

from __future__ import annotations

from .service import Action, ActionContext, ActionError, CallbackRequest, InvalidArguments

__all__ = ["Action", "ActionContext", "ActionError", "CallbackRequest", "InvalidArguments"]
