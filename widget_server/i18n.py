"""UI strings: static/widget/i18n/<lang>.json, read once. The same files
feed the server-rendered panel, the panel's JS and the loader."""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

from .resources import resource_dir

DEFAULT_LANGUAGE = "en"


@cache
def load_strings(static_dir: str) -> dict[str, dict[str, Any]]:
    folder = Path(static_dir) / "widget" / "i18n"
    return {path.stem: json.loads(path.read_text(encoding="utf-8")) for path in sorted(folder.glob("*.json"))}


def ui_strings() -> dict[str, dict[str, Any]]:
    """Every language's UI strings, from the package's own static/ folder."""
    return load_strings(str(resource_dir("static")))


def pick_language(requested: str | None, available: Mapping[str, object]) -> str:
    base = (requested or "").strip().lower().split("-")[0]
    return base if base in available else DEFAULT_LANGUAGE
