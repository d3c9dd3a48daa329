"""Where the package's files are: `static/` and `templates/`.

A leaf module (it imports nothing of the package), so the app, the QA page
and the pytest plugin can all find the files without importing each other.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent


def resource_dir(name: str) -> Path:
    """`static/` or `templates/`: inside the package when installed from a
    wheel, at the repository root in a checkout (the fixed layout)."""
    for candidate in (_PACKAGE_DIR / name, _PACKAGE_DIR.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"widget_server: cannot find its {name}/ folder next to {_PACKAGE_DIR}")
