"""widget_server: an accessible embeddable chat widget and its SSE streaming server."""

from .app import create_app

__all__ = ["__version__", "create_app"]
__version__ = "0.1.0"
