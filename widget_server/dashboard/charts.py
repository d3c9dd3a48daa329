"""The dashboard's charts as server-drawn SVG (docs/dashboard.md, "Charts"; docs/accessibility.md
A131). Pure: a summary.Table in, markup out.

Each chart is an `<svg role="img">` named by its `<title>` (`aria-labelledby`) and described by
its `<desc>` (`aria-describedby`), which lists its numbers; the page
puts the table with the same numbers right after it, so the chart is there to be looked at and
the table to be read. Bars are told apart by a pattern as well as a colour (WCAG 1.4.1), each
colour at 4.5:1 or more against the chart's white ground (more than WCAG 1.4.11 asks), and every bar carries its
number as text (#1b1b1b, 4.5:1 or more). Nothing here is styled with CSS, so the page's strict
policy (no inline style) holds: SVG presentation attributes only. Every text is escaped.
"""

from __future__ import annotations

import math
from html import escape
from typing import Any

from .summary import Table

# Colour and pattern per bar, in turn: blue solid, orange-brown stripes, green dots, purple
# cross-hatch, red stripes the other way, slate checks. Each colour's contrast with white is
# 4.5:1 or more (checked by tests/test_dashboard_charts.py, as theme.py computes it).
STYLES = (
    ("#1f5fa8", "solid"),
    ("#9a4a00", "stripes"),
    ("#2f6b2f", "dots"),
    ("#6b3fa0", "hatch"),
    ("#b0212b", "backslash"),
    ("#4a5566", "checks"),
)
TEXT_COLOUR = "#1b1b1b"
AXIS_COLOUR = "#595959"

_BAR_HEIGHT = 28
_BAR_GAP = 10
_LABEL_WIDTH = 230
_PLOT_WIDTH = 420
_VALUE_WIDTH = 90
_MAX_LABEL_CHARS = 32


def _pattern(identifier: str, colour: str, kind: str) -> str:
    """A `<pattern>`: the colour as a light ground and marks in full colour, so the bar keeps
    its outline colour and shows a texture that tells it apart without colour."""
    marks = {
        "solid": f'<rect width="8" height="8" fill="{colour}"/>',
        "stripes": f'<rect width="8" height="8" fill="#ffffff"/><path d="M-2,2 l4,-4 M0,8 l8,-8 M6,10 l4,-4" stroke="{colour}" stroke-width="3"/>',
        "dots": f'<rect width="8" height="8" fill="#ffffff"/><circle cx="4" cy="4" r="2.5" fill="{colour}"/>',
        "hatch": f'<rect width="8" height="8" fill="#ffffff"/><path d="M0,0 l8,8 M8,0 l-8,8" stroke="{colour}" stroke-width="2"/>',
        "backslash": f'<rect width="8" height="8" fill="#ffffff"/><path d="M-2,6 l4,4 M0,0 l8,8 M6,-2 l4,4" stroke="{colour}" stroke-width="3"/>',
        "checks": f'<rect width="8" height="8" fill="#ffffff"/><rect width="4" height="4" fill="{colour}"/><rect x="4" y="4" width="4" height="4" fill="{colour}"/>',
    }[kind]
    return f'<pattern id="{identifier}" width="8" height="8" patternUnits="userSpaceOnUse">{marks}</pattern>'


def _short(text: Any) -> str:
    label = str(text)
    return label if len(label) <= _MAX_LABEL_CHARS else label[: _MAX_LABEL_CHARS - 1] + "…"


def _number(value: Any) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


def _frame(name: str, title: str, description: str, width: int, height: int, body: list[str]) -> str:
    title_id, desc_id = f"chart-{name}-title", f"chart-{name}-desc"
    return (
        f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" role="img" '
        f'aria-labelledby="{title_id}" aria-describedby="{desc_id}" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" data-chart="{escape(name)}">'
        f'<title id="{title_id}">{escape(title)}</title><desc id="{desc_id}">{escape(description)}</desc>'
        # Its own white ground: the colours' contrast holds in the page's dark scheme too.
        f'<rect width="{width}" height="{height}" fill="#ffffff"/>' + "".join(body) + "</svg>"
    )


def bar_chart(table: Table) -> str:
    """One horizontal bar per row: its label (first cell), its bar and number (second cell)."""
    rows = table.rows
    width = _LABEL_WIDTH + _PLOT_WIDTH + _VALUE_WIDTH
    height = max(1, len(rows)) * (_BAR_HEIGHT + _BAR_GAP) + _BAR_GAP
    largest = max((_number(row[1]) for row in rows), default=0.0)
    body = ["<defs>"]
    for index in range(len(STYLES)):
        colour, kind = STYLES[index]
        body.append(_pattern(f"chart-{table.name}-p{index}", colour, kind))
    body.append("</defs>")
    for index, row in enumerate(rows):
        top = _BAR_GAP + index * (_BAR_HEIGHT + _BAR_GAP)
        colour, _ = STYLES[index % len(STYLES)]
        length = 0.0 if largest == 0 else _PLOT_WIDTH * _number(row[1]) / largest
        middle = top + _BAR_HEIGHT / 2
        body.append(
            f'<text x="{_LABEL_WIDTH - 8}" y="{middle:.1f}" text-anchor="end" dominant-baseline="middle" '
            f'fill="{TEXT_COLOUR}" font-size="14">{escape(_short(row[0]))}</text>'
        )
        body.append(
            f'<rect x="{_LABEL_WIDTH}" y="{top}" width="{max(length, 1):.1f}" height="{_BAR_HEIGHT}" '
            f'fill="url(#chart-{table.name}-p{index % len(STYLES)})" stroke="{colour}" stroke-width="2"/>'
        )
        body.append(
            f'<text x="{_LABEL_WIDTH + max(length, 1) + 6:.1f}" y="{middle:.1f}" dominant-baseline="middle" '
            f'fill="{TEXT_COLOUR}" font-size="14">{escape(str(row[1]))}</text>'
        )
    if not rows:
        body.append(f'<text x="8" y="{height / 2 + 4:.1f}" fill="{TEXT_COLOUR}" font-size="14">Nothing yet</text>')
    description = "; ".join(f"{row[0]}: {row[1]}" for row in rows) or "Nothing in this period."
    return _frame(table.name, table.caption, description, width, height, body)


_COLUMN_AREA = 220
_COLUMN_TOP = 24
_COLUMN_BOTTOM = 40


def column_chart(table: Table) -> str:
    """One column per row (a day or an hour, the first cell) of the second cell's number:
    the conversations over time. Every column has its number above it; the labels are under
    every column when they fit, else under every few."""
    rows = table.rows
    slot = max(14, min(60, 720 // max(1, len(rows))))
    width = max(320, slot * len(rows) + 60)
    height = _COLUMN_TOP + _COLUMN_AREA + _COLUMN_BOTTOM
    largest = max((_number(row[1]) for row in rows), default=0.0)
    colour, kind = STYLES[0]
    body = ["<defs>", _pattern(f"chart-{table.name}-p0", colour, kind), "</defs>"]
    base = _COLUMN_TOP + _COLUMN_AREA
    body.append(f'<line x1="40" y1="{base}" x2="{width - 10}" y2="{base}" stroke="{AXIS_COLOUR}" stroke-width="1"/>')
    every = math.ceil(40 / slot)  # a label is about 40 units wide
    for index, row in enumerate(rows):
        value = _number(row[1])
        tall = 0.0 if largest == 0 else _COLUMN_AREA * value / largest
        left = 44 + index * slot
        body.append(
            f'<rect x="{left}" y="{base - tall:.1f}" width="{slot - 4}" height="{tall:.1f}" '
            f'fill="url(#chart-{table.name}-p0)" stroke="{colour}" stroke-width="1"/>'
        )
        if slot >= 22 or value:
            body.append(
                f'<text x="{left + (slot - 4) / 2:.1f}" y="{base - tall - 4:.1f}" text-anchor="middle" '
                f'fill="{TEXT_COLOUR}" font-size="11">{escape(str(row[1]))}</text>'
            )
        if index % every == 0:
            body.append(
                f'<text x="{left + (slot - 4) / 2:.1f}" y="{base + 16}" text-anchor="middle" '
                f'fill="{TEXT_COLOUR}" font-size="11">{escape(str(row[0])[-5:])}</text>'
            )
    description = f"{table.columns[1]} per {table.columns[0].split()[0].lower()}: " + (
        "; ".join(f"{row[0]}: {row[1]}" for row in rows) or "none"
    )
    return _frame(table.name, f"{table.columns[1]} over time", description, width, height, body)


def chart(table: Table) -> str:
    """The table's chart ("" for a table drawn as a table only)."""
    if table.chart == "bars":
        return bar_chart(table)
    if table.chart == "columns":
        return column_chart(table)
    return ""
