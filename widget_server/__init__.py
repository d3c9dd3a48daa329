"""widget_server: an accessible embeddable chat widget and its SSE streaming server."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .app import create_app
    from .mount import init_app

__all__ = ["__version__", "create_app", "init_app"]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    # Lazy (PEP 562): `import widget_server.sse`, the pure protocol module,
    # must not load Flask and the app (tests/test_structure.py).
    if name == "create_app":
        from .app import create_app

        return create_app
    if name == "init_app":  # the chat inside a site's own Flask app (mount.py)
        from .mount import init_app

        return init_app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
