"""UI strings: static/widget/i18n/<lang>.json, read once. The same files
feed the server-rendered panel, the panel's JS and the loader."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

DEFAULT_LANGUAGE = "en"


@cache
def load_strings(static_dir: str) -> dict[str, dict]:
    folder = Path(static_dir) / "widget" / "i18n"
    return {path.stem: json.loads(path.read_text(encoding="utf-8")) for path in sorted(folder.glob("*.json"))}


def pick_language(requested: str | None, available: dict[str, dict]) -> str:
    base = (requested or "").strip().lower().split("-")[0]
    return base if base in available else DEFAULT_LANGUAGE
