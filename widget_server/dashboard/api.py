"""The owner dashboard's routes (docs/dashboard.md; docs/security.md, "The owner dashboard").

- `GET /admin?period=`: the page, server-rendered: a period form (a GET, no script), the
  numbers, each chart (charts.py) with its table right after it;
- `GET /admin/export/<table>.csv?period=`: one of those tables as CSV;
- `GET /api/v1/admin/summary?period=`: the numbers the tables show, as JSON (wire/routes.py).

Who may: an agent signed in at `/agent` (the same `__Host-agent_session` cookie, agents/api.py
`signed_in()`) whose account has `"admin": true` (`widget-server agents add NAME --admin`).
Signed out, the page sends the browser to the sign-in form (302) and the JSON answers 401
`not_signed_in`; an agent who is not an admin gets a 403 page, or 403 `not_admin`. Nothing here
changes anything (GET only: no CSRF token needed; SameSite=Strict keeps the cookie off other
sites' requests). Each request counts against the agent's RATE_LIMIT_CLIENT as the console's
API does; `/api/v1/admin/summary` against the API's own per-client limit as well.
"""

from __future__ import annotations

import csv
import io
from typing import Any

from flask import Blueprint, Response, jsonify, render_template, request, url_for

from ..agents.api import NOT_SIGNED_IN_MESSAGE, SignedIn, signed_in
from ..agents.sessions import CSRF_FIELD
from ..ratelimits import current_limits
from ..transport import content_security_policy, services
from ..wire.errors import INVALID_PERIOD, NOT_ADMIN, NOT_FOUND, NOT_SIGNED_IN, UNKNOWN_FIELD
from .buckets import DEFAULT_PERIOD, PERIODS, Period
from .charts import chart
from .summary import TABLE_NAMES, Table, read_summary, tables

bp = Blueprint("dashboard", __name__)

NOT_ADMIN_MESSAGE = "The dashboard is for admins: ask for `widget-server agents add NAME --admin`."
# Spreadsheet programs run a cell that starts with one of these as a formula (OWASP, "CSV
# Injection"): such a text is written with a leading apostrophe instead.
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_PERIOD_MAX_CHARS = 8


def _period() -> Period:
    """`?period=` (today, 7d, 30d; 7d when absent); 400 `invalid_period` for anything else."""
    unknown = sorted(set(request.args) - {"period"})
    if unknown:
        raise UNKNOWN_FIELD(f"Unknown query parameter(s): {', '.join(unknown)[:200]}. Use period.")
    raw = request.args.get("period", DEFAULT_PERIOD)[: _PERIOD_MAX_CHARS + 1]
    found = PERIODS.get(raw)
    if found is None:
        raise INVALID_PERIOD(f"period must be one of {', '.join(PERIODS)}.")
    return found


def _admin(*, page: bool) -> SignedIn | Response:
    """The signed-in admin; else a page's redirect or refusal, or the API's error."""
    found = signed_in()
    limits = current_limits()
    if limits is not None:
        limits.check_agent_request(found.agent.name if found else None)
    if found is None:
        if page:
            return Response(status=302, headers={"Location": url_for("agent_api.console"), "Cache-Control": "no-store"})
        raise NOT_SIGNED_IN(NOT_SIGNED_IN_MESSAGE)
    if not found.agent.admin:
        if page:
            html = render_template("admin_forbidden.html", agent=found.agent.public())
            return _headers(Response(html, status=403, mimetype="text/html"))
        raise NOT_ADMIN(NOT_ADMIN_MESSAGE)
    return found


def _headers(response: Response) -> Response:
    # The agent pages' policy (agents/api.py _page_headers): nothing inline, framed by nobody.
    response.headers["Content-Security-Policy"] = content_security_policy("'none'")
    response.headers["Referrer-Policy"] = "no-referrer"
    response.headers["Cache-Control"] = "no-store"
    response.headers["X-Frame-Options"] = "DENY"
    response.headers["X-Content-Type-Options"] = "nosniff"
    return response


def _summary(period: Period) -> dict[str, Any]:
    return read_summary(services().dashboard.store, period)


@bp.get("/admin")
def page() -> Response:
    found = _admin(page=True)
    if isinstance(found, Response):
        return found
    period = _period()
    summary = _summary(period)
    shown = [(table, chart(table)) for table in tables(summary)]
    html = render_template(
        "admin.html",
        agent=found.agent.public(),
        csrf_field=CSRF_FIELD,
        csrf_token=found.session.csrf_token,
        periods=list(PERIODS.values()),
        period=period,
        summary=summary,
        tables=shown,
    )
    return _headers(Response(html, mimetype="text/html"))


def safe_cell(value: Any) -> Any:
    """A CSV cell that no spreadsheet runs as a formula."""
    if isinstance(value, str) and value.startswith(_FORMULA_STARTS):
        return "'" + value
    return value


def table_csv(table: Table) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")  # RFC 4180 line ends
    writer.writerow([safe_cell(column) for column in table.columns])
    for row in table.rows:
        writer.writerow([safe_cell(cell) for cell in row])
    return out.getvalue()


@bp.get("/admin/export/<name>.csv")
def export(name: str) -> Response:
    found = _admin(page=True)
    if isinstance(found, Response):
        return found
    if name not in TABLE_NAMES:
        raise NOT_FOUND(f"No such table: use one of {', '.join(TABLE_NAMES)}.")
    period = _period()
    table = next(table for table in tables(_summary(period)) if table.name == name)
    response = Response(table_csv(table), mimetype="text/csv")
    response.headers["Content-Disposition"] = f'attachment; filename="dashboard-{name}-{period.key}.csv"'
    return _headers(response)


@bp.get("/api/v1/admin/summary")
def summary() -> Response:
    _admin(page=False)
    response = jsonify(_summary(_period()))
    response.headers["Cache-Control"] = "no-store"
    return response
