"""The documentation names everything the code defines.

- docs/configuration.md: every setting (as its WIDGET_SERVER_<NAME> variable) and every
  `widget-server` option;
- docs/protocol.md: every event type, every answer-failure code, and every HTTP error code
  the server can send, with its status;
- docs/accessibility.md: every contract id has a test in
  tests/e2e/test_accessibility_contract*.py (one file per part of the panel).

HTTP error codes come from their one registry (widget_server/wire/errors.py), so a new code
fails this test until it is documented, and a row of the document that names a code the
registry does not have, or with another status, fails too.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from widget_server.cli import build_parser
from widget_server.errors import ErrorCode
from widget_server.messages import EventKind
from widget_server.settings import all_settings
from widget_server.wire.errors import HTTP_ERROR_CODE, REGISTRY

SETTINGS = all_settings()

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
PACKAGE = REPO / "widget_server"


def read(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


# -- configuration.md ---------------------------------------------------------


@pytest.mark.parametrize("setting", SETTINGS, ids=lambda s: s.name)
def test_every_setting_is_documented(setting):
    # Not followed by more of a name: WIDGET_SERVER_MAX_STREAMS must not be
    # satisfied by WIDGET_SERVER_MAX_STREAMS_PER_CONVERSATION.
    pattern = re.escape(setting.env_var) + r"(?![A-Za-z0-9_])"
    assert re.search(pattern, read("configuration.md")), f"{setting.env_var} is not in docs/configuration.md"


def _cli_options() -> list[str]:
    return [option for action in build_parser()._actions for option in action.option_strings]


def test_the_cli_has_options():
    assert {"--host", "--port", "--backend", "--workers"} <= set(_cli_options())


@pytest.mark.parametrize("option", _cli_options())
def test_every_cli_option_is_documented(option):
    pattern = r"(?<![\w-])" + re.escape(option) + r"(?![\w-])"
    assert re.search(pattern, read("configuration.md")), f"{option} is not in docs/configuration.md"


# -- protocol.md --------------------------------------------------------------


@pytest.mark.parametrize("kind", list(EventKind), ids=lambda k: k.value)
def test_every_event_type_is_documented(kind):
    assert f"`{kind.value}`" in read("protocol.md")


@pytest.mark.parametrize("code", list(ErrorCode), ids=lambda c: c.value)
def test_every_failure_code_is_documented(code):
    assert f"`{code.value}`" in read("protocol.md")


def http_error_codes() -> set[tuple[int | None, str]]:
    """(status, code) for every HTTP error code the server can send: the registry
    (widget_server/wire/errors.py, the only place a code is made: tests/test_architecture.py),
    and `http_error`, whose status is whichever Werkzeug or gunicorn chose (None)."""
    return {(entry.status, code) for code, entry in REGISTRY.items()} | {(None, HTTP_ERROR_CODE)}


def test_the_registry_has_the_known_codes():
    codes = {code for _, code in http_error_codes()}
    expected = {
        "invalid_json", "invalid_body", "unknown_field", "missing_request_id", "invalid_request_id",
        "missing_text", "empty_text", "text_too_long", "body_too_large", "unsupported_media_type",
        "not_found", "method_not_allowed", "request_id_conflict", "invalid_last_event_id",
        "too_many_streams", "too_many_running", "server_busy", "internal", "uri_too_long",
    }  # fmt: skip
    assert expected <= codes, sorted(expected - codes)


# A row of docs/protocol.md's error tables: `| 409 | `handoff_active` | …`.
ERROR_ROW = re.compile(r"^\| *(\d{3}) *\| *`([a-z_]+)` *\|", re.MULTILINE)


def test_every_error_row_of_the_protocol_names_a_registered_code_with_its_status():
    """The other direction: the document cannot keep a code the server no longer sends, nor
    give a code another status than the one it is sent with."""
    rows = ERROR_ROW.findall(read("protocol.md"))
    assert len(rows) > 60
    wrong = [
        (status, code)
        for status, code in rows
        if code != HTTP_ERROR_CODE and (code not in REGISTRY or REGISTRY[code].status != int(status))
    ]
    assert wrong == []


@pytest.mark.parametrize("status,code", sorted(http_error_codes(), key=lambda sc: (sc[1], sc[0] or 0)))
def test_every_http_error_code_is_documented_with_its_status(status, code):
    protocol = read("protocol.md")
    assert f"`{code}`" in protocol, f"HTTP error code {code!r} is not in docs/protocol.md"
    if status is not None:
        row = re.compile(r"^\| *" + str(status) + r" *\| *`" + re.escape(code) + r"` *\|", re.MULTILINE)
        assert row.search(protocol), f"docs/protocol.md has no table row '| {status} | `{code}` |'"


# -- accessibility.md ---------------------------------------------------------

CONTRACT_TESTS = sorted((REPO / "tests" / "e2e").glob("test_accessibility_contract*.py"))


def test_every_accessibility_contract_id_has_a_test():
    ids = re.findall(r"^- \*\*(A[0-9]+)\*\*", read("accessibility.md"), re.MULTILINE)
    assert ids, "docs/accessibility.md lists no contract ids"
    source = "\n".join(path.read_text(encoding="utf-8") for path in CONTRACT_TESTS)
    missing = [i for i in ids if not re.search(rf"def test_{i}(?![0-9])\w*\s*\(", source, re.IGNORECASE)]
    assert not missing, f"no test named after {', '.join(missing)} in tests/e2e/test_accessibility_contract*.py"


def test_the_readme_stays_a_front_door():
    """README.md says what the project is, the two commands, and where to read on; the
    measurements live in docs/performance.md and their history in git."""
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines; move detail into docs/"
