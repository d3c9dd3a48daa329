"""docs/accessibility.md, "The owner dashboard" (A131–A133): one test per contract id.

The dashboard at /admin against a real server (an agents file with an admin, events driven
through the visitor API over HTTP), in real Chromium and Firefox ESR, by keyboard only, with axe
in each view. tests/test_docs.py checks that every id has its test; tests/test_dashboard_api.py
covers who may see it and what it counts at length.
"""

from __future__ import annotations

import re
import uuid
from typing import Any

import pytest
from playwright.sync_api import BrowserContext, Page, expect

from widget_server.agents.accounts import AgentAccounts
from widget_server.dashboard.summary import tables
from widget_server.testing import ChatWidget

from ..helpers import http_client
from .test_agent_console import PASSWORD, Console, console_url

pytestmark = pytest.mark.e2e

PERIOD_LABELS = {
    "today": "Today (UTC)",
    "7d": "Last 7 days (UTC, today included)",
    "30d": "Last 30 days (UTC, today included)",
}


@pytest.fixture
def dashboard_server(chat_server_factory, tmp_path):
    path = tmp_path / "agents.json"
    accounts = AgentAccounts(str(path))
    accounts.add("owner", "Øyvind Owner", PASSWORD, admin=True)
    accounts.add("ana", "Ana", PASSWORD)
    server = chat_server_factory(AGENTS_FILE=str(path))
    drive_events(server)
    return server


def drive_events(server) -> None:
    """Answers completed, one that fails after its first sentences, ratings with a comment."""
    with http_client(base_url=server.url, timeout=30) as http:
        for text, rating, comment in (
            ("/echo hello", "up", ""),
            ("/echo opening hours", "up", ""),
            ("/scenario fail-network", "down", "It stopped halfway"),
        ):
            created = http.post("/api/v1/conversations").json()
            auth = {"Authorization": f"Bearer {created['token']}"}
            base = f"/api/v1/conversations/{created['conversation_id']}"
            with http.stream(
                "POST", base + "/messages", json={"request_id": uuid.uuid4().hex, "text": text}, headers=auth
            ) as answer:
                body = "".join(answer.iter_text())
            message_id = re.search(r'"message_id":\s*"([^"]+)"', body)
            assert message_id is not None
            url = f"{base}/messages/{message_id[1]}/feedback"
            rated = http.put(url, json={"rating": rating, "comment": comment}, headers=auth)
            assert rated.status_code == 200, rated.text


def signed_in_admin(context: BrowserContext, server, name: str = "owner") -> Page:
    console = Console(context.new_page(), console_url(server))
    console.sign_in(name)
    console.wait_ready()
    return console.page


def assert_accessible(page: Page) -> None:
    ChatWidget(page).assert_accessible()


def summary_json(page: Page, period: str) -> dict[str, Any]:
    """What GET /api/v1/admin/summary answers this page's session with."""
    result: dict[str, Any] = page.evaluate(
        "(period) => fetch('/api/v1/admin/summary?period=' + period, {credentials: 'same-origin'})"
        ".then((response) => response.json())",
        period,
    )
    return result


def same_cells(rows: list[list[str]]) -> list[list[Any]]:
    """Cells as what they say: a number as a number (the JSON's 412.0 arrives in the browser as
    412, and the page writes 412.0), text as text."""

    def value(cell: Any) -> Any:
        try:
            return float(cell)
        except (TypeError, ValueError):
            return str(cell)

    return [[value(cell) for cell in row] for row in rows]


def table_rows(page: Page, name: str) -> list[list[str]]:
    """A table's body rows as the page shows them (cell texts, the row header first)."""
    return page.eval_on_selector(
        f"table[data-table='{name}']",
        "(table) => [...table.tBodies[0].rows].map((row) => [...row.cells].map((cell) => cell.textContent.trim()))",
    )


def test_A131_each_chart_is_an_image_followed_by_a_table_with_the_apis_numbers(
    dashboard_server, context: BrowserContext
):
    page = signed_in_admin(context, dashboard_server)
    page.goto(console_url(dashboard_server) + "/admin?period=7d")
    summary = summary_json(page, "7d")
    assert summary["answers"]["completed"] == 2 and summary["answers"]["incomplete"] == 1
    charted = 0
    for table in tables(summary):
        region = page.get_by_role("region", name=table.caption, exact=True).first
        if not table.rows:
            expect(region.locator(f"[data-empty='{table.name}']")).to_have_text("Nothing in this period.")
            continue
        # The page's table holds the JSON's numbers, row for row.
        assert same_cells(table_rows(page, table.name)) == same_cells(table.rows), table.name
        link = region.get_by_role("link", name=f"Download “{table.caption}” as CSV", exact=True)
        expect(link).to_have_attribute("href", re.compile(rf"/admin/export/{table.name}\.csv\?period=7d$"))
        if not table.chart:
            continue
        charted += 1
        chart = region.locator(f"svg[data-chart='{table.name}']")
        title = chart.locator("title")
        expect(chart).to_have_attribute("role", "img")
        expect(chart).to_have_accessible_name(title.text_content() or "")
        expect(chart).to_have_accessible_description(chart.locator("desc").text_content() or "")
        # The chart comes right before its table: the image, then the numbers to read.
        assert chart.evaluate("(svg) => svg.nextElementSibling.querySelector('table') !== null")
        description = chart.locator("desc").text_content() or ""
        if table.chart == "bars":
            for label, number, *_ in table.rows:
                assert f"{label}: {number}" in description
            # Every bar's number is written beside it; each bar has a pattern of its own.
            written = chart.locator("text").all_text_contents()
            assert all(str(row[1]) in written for row in table.rows)
            fills = chart.locator("rect[fill^='url(#']").evaluate_all(
                "(bars) => bars.map((bar) => bar.getAttribute('fill'))"
            )
            assert len(set(fills)) == len(table.rows)
    assert charted >= 3
    assert_accessible(page)


def test_A132_the_period_changes_by_keyboard_alone_and_each_view_is_accessible(
    dashboard_server, context: BrowserContext
):
    page = signed_in_admin(context, dashboard_server)
    page.goto(console_url(dashboard_server) + "/admin")
    period = page.get_by_role("combobox", name="Period", exact=True)
    expect(period).to_have_value("7d")
    expect(period).to_have_accessible_description(re.compile("Counted per hour in UTC"))
    assert_accessible(page)
    for key, choose in (("30d", "End"), ("today", "Home"), ("7d", "ArrowDown")):
        page.locator("body").focus()
        for _ in range(12):
            page.keyboard.press("Tab")
            if period.evaluate("(select) => select === document.activeElement"):
                break
        expect(period).to_be_focused()
        page.keyboard.press(choose)
        expect(period).to_have_value(key)
        page.keyboard.press("Tab")
        expect(page.get_by_role("button", name="Show", exact=True)).to_be_focused()
        with page.expect_navigation():
            page.keyboard.press("Enter")
        expect(page).to_have_url(re.compile(rf"/admin\?period={key}$"))
        expect(page).to_have_title(f"Owner dashboard: {PERIOD_LABELS[key]}")
        expect(page.get_by_role("heading", level=2, name=f"{PERIOD_LABELS[key]} at a glance")).to_be_visible()
        expect(period).to_have_value(key)
        answers = next(table for table in tables(summary_json(page, key)) if table.name == "answers")
        assert same_cells(table_rows(page, "answers")) == same_cells(answers.rows)
        assert_accessible(page)


def test_A133_landmarks_regions_narrow_screens_and_the_refusal_page(dashboard_server, context: BrowserContext):
    page = signed_in_admin(context, dashboard_server)
    page.goto(console_url(dashboard_server) + "/admin?period=30d")
    banner = page.get_by_role("banner")
    expect(banner.get_by_role("heading", level=1)).to_have_text("Owner dashboard")
    expect(banner.locator("bdi")).to_have_text("Øyvind Owner")
    expect(banner.get_by_role("link", name="Agent console", exact=True)).to_be_visible()
    expect(banner.get_by_role("button", name="Sign out", exact=True)).to_be_visible()
    expect(page.get_by_role("main")).to_have_count(1)
    for name in ("How answers ended", "Conversations and answers over time"):
        expect(page.get_by_role("region", name=name, exact=True).first).to_be_visible()
    # 320 px: the page never scrolls sideways; the wide activity table scrolls in its own region,
    # which Tab reaches.
    page.set_viewport_size({"width": 320, "height": 700})
    assert page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth")
    box = page.locator(".table-box").first
    expect(box).to_have_attribute("tabindex", "0")
    box.focus()
    expect(box).to_be_focused()
    assert_accessible(page)

    other = context.browser.new_context()
    ChatWidget.install_recorder(other)
    agent = signed_in_admin(other, dashboard_server, "ana")
    response = agent.goto(console_url(dashboard_server) + "/admin")
    assert response is not None and response.status == 403
    expect(agent.get_by_role("heading", level=1)).to_have_text("You cannot open the owner dashboard")
    expect(agent.get_by_role("link", name="Go to the agent console", exact=True)).to_be_visible()
    assert_accessible(agent)
    other.close()
