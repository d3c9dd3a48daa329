from playwright.sync_api import Page, expect


def test_browser_runs_a_page(page: Page, live_server):
    page.goto(live_server.url + "/")
    expect(page.get_by_role("heading", level=1)).to_have_text("widget_server")
