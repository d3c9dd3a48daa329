"""The dashboard's charts (widget_server/dashboard/charts.py; docs/accessibility.md A131): the
colours hold their contrast, visitors' words stay text in the SVG, each bar carries its number
and a pattern of its own, and an empty table still draws a named image."""

from __future__ import annotations

import re
from xml.etree import ElementTree

from widget_server.dashboard.charts import STYLES, TEXT_COLOUR, bar_chart, chart, column_chart
from widget_server.dashboard.summary import Table
from widget_server.theme import contrast_ratio, hex_rgb

SVG = "{http://www.w3.org/2000/svg}"
WHITE = hex_rgb("#ffffff")


def parsed(markup: str) -> ElementTree.Element:
    return ElementTree.fromstring(markup)  # also proves the markup is well-formed XML


def test_every_colour_holds_4_5_to_1_against_the_charts_white_ground():
    for colour, _ in STYLES:
        assert contrast_ratio(hex_rgb(colour), WHITE) >= 4.5, colour
    assert contrast_ratio(hex_rgb(TEXT_COLOUR), WHITE) >= 7
    assert len({kind for _, kind in STYLES}) == len(STYLES)  # a pattern of its own each


def test_a_bar_chart_is_a_named_image_with_each_bar_its_number_and_its_pattern():
    table = Table("answers", "How answers ended", ("Outcome", "Answers"), (("Completed", 12), ("Failed", 3)), "bars")
    svg = parsed(bar_chart(table))
    assert svg.get("role") == "img"
    assert svg.get("aria-labelledby") == "chart-answers-title"
    assert svg.get("aria-describedby") == "chart-answers-desc"
    assert svg.find(f"{SVG}title").text == "How answers ended"
    assert svg.find(f"{SVG}desc").text == "Completed: 12; Failed: 3"
    texts = [element.text for element in svg.iter(f"{SVG}text")]
    assert texts == ["Completed", "12", "Failed", "3"]
    fills = [rect.get("fill") for rect in svg.iter(f"{SVG}rect") if (rect.get("fill") or "").startswith("url(")]
    assert fills == ["url(#chart-answers-p0)", "url(#chart-answers-p1)"]
    widths = [float(rect.get("width")) for rect in svg.iter(f"{SVG}rect") if rect.get("stroke")]
    assert widths[0] == 4 * widths[1]  # lengths in proportion to the numbers
    assert "style=" not in bar_chart(table)  # presentation attributes only: the page's CSP has no unsafe-inline


def test_visitors_words_stay_text():
    hostile = '</text><script>alert(1)</script><text x="0">'
    table = Table("questions", "Q", ("Question", "Count"), ((hostile, 2),), "bars")
    markup = bar_chart(table)
    svg = parsed(markup)
    assert not list(svg.iter(f"{SVG}script")) and "<script>" not in markup
    assert svg.find(f"{SVG}desc").text == f"{hostile}: 2"


def test_columns_label_every_day_or_hour_and_an_empty_table_still_names_its_image():
    rows = tuple((f"2026-12-{day:02d}", day) for day in range(1, 31))
    table = Table("activity", "Conversations and answers over time", ("Day (UTC)", "Conversations"), rows, "columns")
    svg = parsed(column_chart(table))
    assert svg.find(f"{SVG}title").text == "Conversations over time"
    assert re.match(r"Conversations per day: 2026-12-01: 1; ", svg.find(f"{SVG}desc").text)
    assert int(svg.get("width")) <= 800
    empty = parsed(chart(Table("failures", "Failed", ("Error code", "Answers"), (), "bars")))
    assert empty.find(f"{SVG}desc").text == "Nothing in this period."
    assert chart(Table("latency", "Waits", ("Measure", "p50"), (("x", 1),))) == ""  # a table only
