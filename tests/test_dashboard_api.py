"""The owner dashboard over real HTTP (widget_server/dashboard/api.py; docs/dashboard.md;
docs/security.md, "The owner dashboard"), on the memory store, one Redis and a Redis Cluster:
only an admin agent sees it; its numbers are the events driven through the real API (messages
answered, failed and stopped, ratings with comments, a hand-off claimed and ended, a left
message); the page's tables, the CSV downloads and the JSON say the same; CSV cells that a
spreadsheet would run are escaped."""

from __future__ import annotations

import csv
import io
import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from widget_server.dashboard.summary import TABLE_NAMES
from widget_server.openapi import build_document

from .agent_support import TEST_PASSWORD_HASH, HttpAgent
from .helpers import assert_completed, assert_json_error
from .privacy_support import services_of

pytestmark = pytest.mark.parametrize(
    "serving", [("memory", ""), ("redis", ""), ("cluster", "")], ids=["memory", "redis", "cluster"], indirect=True
)

PASSWORDS = {"alice": "alice-password", "carol": "carol-password"}


def write_accounts(path: Path) -> None:
    """alice, an agent; carol, an agent and an admin (`agents add carol --admin`)."""
    from werkzeug.security import generate_password_hash

    document = {
        "agents": [
            {
                "name": "alice",
                "display_name": "Alice Agent",
                "password_hash": generate_password_hash(PASSWORDS["alice"], TEST_PASSWORD_HASH),
            },
            {
                "name": "carol",
                "display_name": "Carol Owner",
                "password_hash": generate_password_hash(PASSWORDS["carol"], TEST_PASSWORD_HASH),
                "admin": True,
            },
        ]
    }
    path.write_text(json.dumps(document), encoding="utf-8")
    path.chmod(0o600)


@pytest.fixture
def server(tmp_path, live_server_factory, shared_store):
    path = tmp_path / "agents.json"
    write_accounts(path)
    return live_server_factory(AGENTS_FILE=str(path))


@pytest.fixture
def admin(server):
    browser = HttpAgent(server.url, PASSWORDS)
    browser.sign_in("carol")
    yield browser
    browser.http.close()


class Tables(HTMLParser):
    """Every `<table data-table>` of a page as rows of cell texts (header row first)."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self._table: list[list[str]] | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "table" and found.get("data-table"):
            self._table = self.tables.setdefault(str(found["data-table"]), [])
        elif tag == "tr" and self._table is not None:
            self._table.append([])
        elif tag in ("td", "th") and self._table is not None:
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._table is not None and self._cell is not None:
            self._table[-1].append("".join(self._cell).strip())
            self._cell = None
        elif tag == "table":
            self._table = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def page_tables(html: str) -> dict[str, list[list[str]]]:
    parser = Tables()
    parser.feed(html)
    return parser.tables


def csv_rows(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


def test_only_an_admin_agent_gets_the_dashboard(server):
    anonymous = HttpAgent(server.url, PASSWORDS)
    page = anonymous.get("/admin")
    assert page.status_code == 302 and page.headers["location"].endswith("/agent")
    assert anonymous.get("/admin/export/answers.csv").status_code == 302
    assert_json_error(anonymous.get("/api/v1/admin/summary"), 401, "not_signed_in")

    agent = HttpAgent(server.url, PASSWORDS)
    agent.sign_in("alice")
    refused = agent.get("/admin")
    assert refused.status_code == 403
    assert refused.headers["content-type"].startswith("text/html")
    assert "You cannot open the owner dashboard" in refused.text and "--admin" in refused.text
    assert agent.get("/admin/export/answers.csv").status_code == 403
    assert_json_error(agent.get("/api/v1/admin/summary"), 403, "not_admin")

    owner = HttpAgent(server.url, PASSWORDS)
    owner.sign_in("carol")
    shown = owner.get("/admin")
    assert shown.status_code == 200
    for header, value in {
        "cache-control": "no-store",
        "x-frame-options": "DENY",
        "referrer-policy": "no-referrer",
    }.items():
        assert shown.headers[header] == value
    policy = shown.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "style-src 'self'" in policy and "unsafe-inline" not in policy
    assert "<script" not in shown.text and "style=" not in shown.text
    assert owner.get("/api/v1/admin/summary").headers["cache-control"] == "no-store"
    for browser in (anonymous, agent, owner):
        browser.http.close()


def test_a_period_that_is_not_offered_is_refused(admin):
    assert_json_error(admin.get("/api/v1/admin/summary", period="90d"), 400, "invalid_period")
    assert_json_error(admin.get("/api/v1/admin/summary", period="7d", limit="3"), 400, "unknown_field")
    assert admin.get("/admin/export/nothing.csv").status_code == 404
    assert admin.get("/admin", period="today").status_code == 200


def test_the_numbers_are_the_events_driven_through_the_api(server, admin, chat_factory):
    before = admin.get("/api/v1/admin/summary", period="today").json()
    assert before["conversations"] == 0 and before["timezone"] == "UTC"

    answered = chat_factory(server)
    completed = assert_completed(answered.send("How do I reset my password?", "r1"))
    failing = chat_factory(server)
    failed = failing.send("/scenario fail-network", "r2")
    assert failed.kinds[-1] == "message.failed"
    stopped = chat_factory(server)
    slow = stopped.send("/scenario slow", "r3", max_events=2)
    assert stopped.cancel(slow.message_id).status_code == 200

    def rate(chat: Any, message_id: str, body: dict[str, str]) -> None:
        url = f"/api/v1/conversations/{chat.conversation_id}/messages/{message_id}/feedback"
        assert chat.http.put(url, json=body, headers=chat.auth).status_code == 200

    rate(answered, completed.message_id, {"rating": "up"})
    rate(failing, failed.message_id, {"rating": "down"})
    # The widget sends the rating, then the comment: one rating, one comment.
    rate(failing, failed.message_id, {"rating": "down", "comment": '=HYPERLINK("http://x")'})

    # A hand-off: asked for, claimed by an agent (an admin is an agent too), ended; then a left message.
    alice = HttpAgent(server.url, PASSWORDS)
    alice.sign_in("alice")
    assert alice.get("/agent/api/queue").status_code == 200  # present
    base = f"/api/v1/conversations/{answered.conversation_id}"
    asked = answered.http.post(f"{base}/handoff", json={"request_id": "h1"}, headers=answered.auth)
    assert asked.json()["state"] == "queued"
    assert alice.agent_api(f"/conversations/{answered.conversation_id}/claim").status_code == 200
    assert alice.agent_api(f"/conversations/{answered.conversation_id}/end", {"reason": "ended"}).status_code == 204
    # The visitor answers "How was your conversation?" (docs/protocol.md, "Satisfaction").
    rateable = services_of(server).handoff.last_seq(answered.conversation_id)
    rated = answered.http.post(
        f"{base}/satisfaction", json={"handoff": rateable, "rating": 4, "comment": "Kind"}, headers=answered.auth
    )
    assert rated.status_code == 201, rated.text
    left = answered.http.post(
        f"{base}/handoff/left-messages", json={"request_id": "l1", "text": "Call me back"}, headers=answered.auth
    )
    assert left.status_code == 201, left.text
    alice.http.close()

    summary = admin.get("/api/v1/admin/summary", period="today").json()
    document = build_document()["paths"]["/api/v1/admin/summary"]["get"]["responses"]["200"]
    assert set(document["content"]["application/json"]["schema"]["required"]) <= set(summary)
    assert summary["conversations"] == 3
    assert summary["answers"] == {
        "completed": 1,
        "failed": 0,
        "cancelled": 1,
        # fail-network fails after two sentences were shown: incomplete, by its code.
        "incomplete": 1,
        "failed_by_code": {"network": 1},
    }
    assert summary["time_to_first_delta_ms"]["count"] == 1
    assert summary["time_to_first_delta_ms"]["p50"] is not None
    assert summary["feedback"]["helpful"] == 1 and summary["feedback"]["not_helpful"] == 1
    assert summary["feedback"]["helpful_rate"] == 0.5
    assert [entry["comment"] for entry in summary["feedback"]["comments"]] == ['=HYPERLINK("http://x")']
    # The failed question counts twice: its failure and its "not helpful".
    assert summary["top_questions"] == [{"question": "/scenario fail-network", "count": 2}]
    handoffs = summary["handoffs"]
    assert (handoffs["queued"], handoffs["answered"], handoffs["ended"], handoffs["left_messages"]) == (1, 1, 1, 1)
    assert handoffs["wait_ms"]["count"] == 1
    assert summary["satisfaction"]["count"] == 1 and summary["satisfaction"]["average"] == 4
    assert sum(row["conversations"] for row in summary["series"]) == 3
    # The other periods hold today's events too.
    for period in ("7d", "30d"):
        assert admin.get("/api/v1/admin/summary", period=period).json()["conversations"] == 3

    # The page's tables say what the JSON says.
    tables = page_tables(admin.get("/admin", period="today").text)
    assert tables["answers"][1:] == [["Completed", "1"], ["Failed", "0"], ["Cancelled", "1"], ["Incomplete", "1"]]
    assert tables["failures"][1:] == [["network", "1"]]
    assert tables["feedback"][1:] == [["Helpful", "1"], ["Not helpful", "1"]]
    assert tables["handoffs"][1:] == [
        ["Asked for a person", "1"],
        ["Answered by a person", "1"],
        ["Hand-offs ended", "1"],
        ["Messages left", "1"],
    ]
    assert tables["questions"][1:] == [["/scenario fail-network", "2"]]
    assert tables["latency"][1][1] == str(summary["time_to_first_delta_ms"]["p50"])
    assert sum(int(row[1]) for row in tables["activity"][1:]) == 3

    # Each table's CSV is the page's table, header row first; a cell a spreadsheet would run is not.
    for name, rows in tables.items():
        download = admin.get(f"/admin/export/{name}.csv", period="today")
        assert download.status_code == 200
        assert download.headers["content-type"].startswith("text/csv")
        assert download.headers["content-disposition"] == f'attachment; filename="dashboard-{name}-today.csv"'
        got = csv_rows(download.text)
        if name == "comments":
            assert got[1][2] == '\'=HYPERLINK("http://x")'
            assert rows[1][2] == '=HYPERLINK("http://x")'  # on the page, the text as written
            continue
        assert got == rows, name
    assert set(tables) | {"webhooks"} == set(TABLE_NAMES)  # no WEBHOOK_URLS: no attempts, no table


def test_a_deleted_conversation_takes_its_words_out_of_the_dashboard(server, admin, chat_factory):
    """docs/privacy.md, "The owner dashboard": a conversation deleted (its DELETE, or a subject's
    erasure, which deletes each) leaves no question or comment of its own there; counts stay."""
    chat = chat_factory(server)
    failed = chat.send("/scenario fail-network", "d1")
    assert failed.kinds[-1] == "message.failed"
    url = f"/api/v1/conversations/{chat.conversation_id}/messages/{failed.message_id}/feedback"
    rated = chat.http.put(url, json={"rating": "down", "comment": "Call me on 555-0100"}, headers=chat.auth)
    assert rated.status_code == 200
    before = admin.get("/api/v1/admin/summary", period="7d").json()
    assert before["top_questions"] == [{"question": "/scenario fail-network", "count": 2}]
    assert [entry["comment"] for entry in before["feedback"]["comments"]] == ["Call me on 555-0100"]
    deleted = chat.http.delete(f"/api/v1/conversations/{chat.conversation_id}", headers=chat.auth)
    assert deleted.status_code == 204
    after = admin.get("/api/v1/admin/summary", period="7d").json()
    assert after["top_questions"] == [] and after["feedback"]["comments"] == []
    assert after["conversations"] == before["conversations"] and after["answers"] == before["answers"]


def test_each_chart_is_an_image_named_by_its_title_before_its_table(server, admin, chat_factory):
    chat = chat_factory(server)
    assert_completed(chat.send("hello", "r1"))
    html = admin.get("/admin", period="7d").text
    for name in ("activity", "answers", "handoffs"):
        section = html[html.index(f'data-report="{name}"') :]
        svg = re.search(r"<svg[^>]*>", section)
        assert svg is not None
        assert 'role="img"' in svg[0] and f'aria-labelledby="chart-{name}-title"' in svg[0]
        assert f'aria-describedby="chart-{name}-desc"' in svg[0]
        assert section.index("<svg") < section.index("<table")
        assert f'<title id="chart-{name}-title">' in section
