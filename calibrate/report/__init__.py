"""The agreement report (`calibrate report`): judge vs human per task x language x judge, beside
the human-human ceiling on the same items, in five formats.

`model` holds the report's data (options, cells, lines, rows), `build` makes it from the store,
`render` writes it as a terminal table, Markdown, CSV or JSON, and `html` as one page. Building
and rendering meet only in the model.
"""

from calibrate.report.build import build_report, report_from_data
from calibrate.report.html import render_html
from calibrate.report.model import (
    AgreementCell,
    Line,
    Report,
    ReportOptions,
    ReportRow,
    report_row,
    rows_of,
)
from calibrate.report.render import render_csv, render_json, render_markdown, render_table

RENDERERS = {"markdown": render_markdown, "json": render_json, "csv": render_csv, "html": render_html}
"""Every format but the terminal table, as text."""

__all__ = [
    "RENDERERS", "AgreementCell", "Line", "Report", "ReportOptions", "ReportRow", "build_report", "render_csv",
    "render_html", "render_json", "render_markdown", "render_table", "report_from_data", "report_row", "rows_of",
]
