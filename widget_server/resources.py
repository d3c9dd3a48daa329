"""Where the package's files are: `static/` and `templates/`.

A leaf module (it imports nothing of the package), so the app, the QA page
and the pytest plugin can all find the files without importing each other.
"""

from __future__ import annotations

import logging
from pathlib import Path

log = logging.getLogger(__name__)

_PACKAGE_DIR = Path(__file__).resolve().parent


def resource_dir(name: str) -> Path:
    """`static/` or `templates/`: inside the package when installed from a
    wheel, at the repository root in a checkout (the fixed layout)."""
    for candidate in (_PACKAGE_DIR / name, _PACKAGE_DIR.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"widget_server: cannot find its {name}/ folder next to {_PACKAGE_DIR}")


def static_folder(assets: str) -> Path:
    """The folder `/static/` serves: `static/min/` (built by .ci/js/build.mjs, committed) for
    ASSETS=minified, else the sources. Without a built copy the sources are served, with a
    warning: same behaviour, more bytes (docs/configuration.md, ASSETS)."""
    source = resource_dir("static")
    if assets == "source":
        return source
    built = source / "min"
    if built.is_dir():
        return built
    log.warning("ASSETS=minified but %s is missing: serving the sources (node .ci/js/build.mjs builds it)", built)
    return source
