"""The agreement report as one self-contained HTML page: a forest plot of each judge's kappa
beside the human ceiling, a reliability diagram per cell, the notes and confusion matrices.
"""

from __future__ import annotations

import html

from calibrate.escape import safe
from calibrate.html_page import page
from calibrate.model import Estimate, counted
from calibrate.report.model import (
    STATISTIC_NAMES,
    AgreementCell,
    Line,
    Report,
    ReportOptions,
    gold_name,
    line_rows,
    multiplicity_note,
    report_row,
    split_estimate,
)
from calibrate.report.render import (
    cell_notes,
    cells_without_numbers,
    fmt,
    score_text,
    with_ci,
)
from calibrate.stats.alt_test import EPSILON_GUIDANCE
from calibrate.stats.score_agreement import STATISTICS
from calibrate.stats.simulated import APPROXIMATE_MARK

_PLOT_W = 260


def _x(v: float) -> float:
    return 8 + (max(-1.0, min(1.0, v)) + 1) / 2 * (_PLOT_W - 16)


def _forest(kappa: Estimate | None, ceiling: Estimate | None) -> str:
    """One forest-plot row: the judge's κ and interval (blue), the human ceiling and its
    interval on the same items (red, beneath), on −1…1. A statistic undefined on the table
    but with an interval for its population value gets the interval without a point; a value
    without an interval (too few items to resample) a hollow point."""
    parts = [f'<svg width="{_PLOT_W}" height="30" viewBox="0 0 {_PLOT_W} 30" role="img">',
             f'<line x1="{_x(0):.1f}" y1="0" x2="{_x(0):.1f}" y2="30" stroke="#bbb" stroke-dasharray="2,2"/>']
    for tick in (-1, -0.5, 0.5, 1):
        parts.append(f'<line x1="{_x(tick):.1f}" y1="26" x2="{_x(tick):.1f}" y2="30" stroke="#ccc"/>')
    for estimate, y, colour, name in ((kappa, 10, "#1f5fa8", "κ judge"), (ceiling, 22, "#c0392b", "human ceiling")):
        if estimate is None:
            continue
        if estimate.ci:
            lo, hi = estimate.ci
            parts.append(f'<line x1="{_x(lo):.1f}" y1="{y}" x2="{_x(hi):.1f}" y2="{y}" stroke="{colour}" stroke-width="2">'
                         f'<title>{name} 95 % interval [{lo:.2f}, {hi:.2f}]</title></line>')
        if estimate.value is not None:  # hollow: a value without an interval
            paint = f'fill="{colour}"' if estimate.ci else f'fill="white" stroke="{colour}" stroke-width="1.5"'
            parts.append(f'<circle cx="{_x(estimate.value):.1f}" cy="{y}" r="4" {paint}>'
                         f'<title>{name} {estimate.value:.2f}{"" if estimate.ci else " (no interval)"}</title></circle>')
    parts.append("</svg>")
    return "".join(parts)


def _ceiling_text(ceiling) -> str:
    """The people's own agreement for the overview: with its interval, or, where the items
    they shared are too few for one, with their number, so a value from a handful of items is
    not read as a ceiling."""
    if ceiling is None:
        return "—"
    humans = ceiling.humans
    if humans.value is not None and humans.ci is None:
        return f"{humans.value:.2f} (no CI: {counted(ceiling.n_items, 'item')})"
    return with_ci(*split_estimate(humans), humans.approximate)


def _reliability_diagram(cal) -> str:
    """The reliability diagram as inline SVG: per confidence bin a bar up to the share of its
    items where the judge agreed with people (its count on top), against the dashed diagonal of
    a perfectly calibrated judge; the red dot is the bin's mean confidence."""
    size, left, bottom, top = 200, 34, 30, 10
    width, height = size + left + 10, size + top + bottom

    def x(v: float) -> float:
        return left + v * size

    def y(v: float) -> float:
        return top + (1 - v) * size

    parts = [f'<svg width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" '
             f'aria-label="reliability diagram"><title>reliability diagram: ECE {cal.ece.value:.3f}</title>',
             f'<rect x="{x(0)}" y="{y(1)}" width="{size}" height="{size}" fill="#fafafa" stroke="#999"/>']
    for tick in (0, 0.5, 1):
        parts.append(f'<text x="{x(tick):.1f}" y="{y(0) + 14:.1f}" font-size="10" text-anchor="middle">{tick:g}</text>')
        parts.append(f'<text x="{x(0) - 4:.1f}" y="{y(tick) + 3:.1f}" font-size="10" text-anchor="end">{tick:g}</text>')
    for b in cal.bins:
        if not b["count"]:
            continue
        x0, x1, acc = x(b["lower"]) + 1, x(b["upper"]) - 1, b["accuracy"]
        parts.append(f'<rect x="{x0:.1f}" y="{y(acc):.1f}" width="{x1 - x0:.1f}" height="{y(0) - y(acc):.1f}" '
                     f'fill="#1f5fa8" fill-opacity="0.75"><title>confidence {b["lower"]:g}–{b["upper"]:g}: '
                     f'{counted(b["count"], "item")}, agreement {acc:.2f}, mean confidence {b["confidence"]:.2f}</title></rect>')
        parts.append(f'<circle cx="{x(b["confidence"]):.1f}" cy="{y(b["confidence"]):.1f}" r="2.5" fill="#c0392b"/>')
        parts.append(f'<text x="{(x0 + x1) / 2:.1f}" y="{y(acc) - 3:.1f}" font-size="9" text-anchor="middle">'
                     f'{b["count"]}</text>')
    parts.append(f'<line x1="{x(0)}" y1="{y(0)}" x2="{x(1)}" y2="{y(1)}" stroke="#555" stroke-dasharray="4,3"/>')
    parts.append(f'<text x="{x(0.5):.1f}" y="{height - 3}" font-size="11" text-anchor="middle">judge confidence</text>')
    parts.append(f'<text x="11" y="{y(0.5):.1f}" font-size="11" text-anchor="middle" '
                 f'transform="rotate(-90 11 {y(0.5):.1f})">agreement with people</text></svg>')
    return "".join(parts)


def _reliability_html(c: AgreementCell) -> str:
    """A cell's reliability block: the diagram beside a table of consistency, calibration and
    bias probes, each with its interval and verdict in words."""
    r = c.reliability
    if r is None or not c.lines:
        return ""
    e = html.escape
    row = report_row(c, c.lines[0])
    rows = []
    if r.consistency is not None:
        rows.append(("flip rate", with_ci(row.flip_rate, row.flip_rate_low, row.flip_rate_high),
                     f"{row.unstable_items} of {counted(r.consistency.items, 'item')} changed verdict over {r.repeats_words} repeats"
                     + (f" at {r.temperatures}" if r.temperatures else "")))
        alpha = r.consistency.alpha
        rows.append(("α across repeats", with_ci(row.repeat_alpha, row.repeat_alpha_low, row.repeat_alpha_high),
                     alpha.reason or ""))
    if r.calibration is not None and r.calibration.n:
        rows.append(("ECE", fmt(row.ece, 3), f"on {counted(r.calibration.n, 'item')} with a confidence and a human label; "
                     f"no interval: {row.ece_note}"))
        rows.append(("Brier", with_ci(row.brier, row.brier_low, row.brier_high), "0 is perfect; 0.25 is a coin"))
    if r.length is not None:
        rows.append(("length bias", with_ci(row.length_bias, row.length_bias_low, row.length_bias_high),
                     f"{r.length.verdict} (log-odds of a judge yes per sd of length, people's label held fixed)"))
    for name, probe in r.systems.items():
        family = " — judge and system of one model family" if r.same_family.get(name) else ""
        rows.append((f"system {name}", with_ci(*split_estimate(probe.estimate)), probe.verdict + family))
    if not rows:
        return ""
    table = ("<table class='cm'><caption>judge reliability</caption><tr><th style='text-align:left'>measure</th>"
             "<th>estimate [95% CI]</th><th style='text-align:left'>meaning</th></tr>"
             + "".join(f"<tr><td style='text-align:left'>{e(a)}</td><td>{e(b)}</td><td style='text-align:left'>{e(m)}</td></tr>"
                       for a, b, m in rows) + "</table>")
    diagram = ""
    if r.calibration is not None and r.calibration.n:
        diagram = (f"<figure>{_reliability_diagram(r.calibration)}<figcaption class='muted'>bars: agreement with people "
                   "per confidence bin (items on top);<br>red dot: the bin's mean confidence, where a calibrated "
                   "judge's bar ends</figcaption></figure>")
    return f"<div class='reliability'>{diagram}{table}</div>"


def _headline(c: AgreementCell, options: ReportOptions) -> Line | None:
    """The line that speaks for a cell in the overview: against the gold label where there is
    one, else against its only annotator (None when the cell has no labelled line)."""
    lines = [line for line in c.lines if line.n and line.stats is not None]
    gold = [line for line in lines if line.versus == gold_name(options)]
    return gold[0] if gold else (lines[0] if len(lines) == 1 else None)


def _scores_section(c: AgreementCell, lines: list[Line], notes: str) -> str:
    """A rubric cell: per person and score, every score statistic with its interval."""
    e = lambda value: html.escape(safe(value))  # noqa: E731
    head = "".join(f"<th>{e(STATISTIC_NAMES[name])}</th>" for name in STATISTICS)
    rows = "".join(
        f"<tr><td>{e(r.versus)}</td><td class='num'>{r.n}</td><td>{e(r.scores or '')}</td>"
        + "".join(f"<td class='num'>{e(score_text(r, name))}</td>" for name in STATISTICS) + "</tr>"
        for line in lines for r in line_rows(c, line))
    return (f"<h2>{e(c.task)} · {e(c.lang)} · {e(c.judge)}</h2><div class='wide'><table class='forest'><tr><th>vs</th>"
            f"<th>n</th><th>scores</th>{head}</tr>{rows}</table></div>" + (f"<ul class='notes'>{notes}</ul>" if notes else ""))


def render_html(report: Report) -> str:
    e = lambda value: html.escape(safe(value))  # noqa: E731
    sections = []
    for c in report.cells:
        lines = [line for line in c.lines if line.n]
        if not lines:
            continue
        if c.kind is not None and c.kind.scored:
            sections.append(_scores_section(c, lines, "".join(f"<li>{e(note)}</li>" for note in cell_notes(c, report))))
            continue
        rows = []
        for line in lines:
            r = report_row(c, line)
            kappa = line.stats.kappa if line.stats else None
            rows.append(
                f"<tr><td>{e(r.versus)}</td><td class='num'>{r.n}</td><td class='num'>{fmt(r.agreement)}</td>"
                f"<td class='num'>{e(with_ci(r.kappa, r.kappa_low, r.kappa_high))}</td>"
                f"<td>{_forest(kappa, c.ceiling.humans if c.ceiling else None)}</td>"
                f"<td class='num'>{e(with_ci(r.ac1, r.ac1_low, r.ac1_high, r.ac1_approximate))}</td>"
                f"<td class='num'>{e(with_ci(r.sensitivity, r.sensitivity_low, r.sensitivity_high))}</td>"
                f"<td class='num'>{e(with_ci(r.specificity, r.specificity_low, r.specificity_high))}</td>"
                f"<td>{e(r.verdict)}</td></tr>"
            )
        matrices = []
        for line in lines:
            if line.stats and line.stats.n:
                head = "".join(f"<th>{e(str(label))}</th>" for label in line.stats.labels)
                body = "".join(f"<tr><th>{e(str(label))}</th>" + "".join(f"<td>{n}</td>" for n in counts) + "</tr>"
                               for label, counts in zip(line.stats.labels, line.stats.table, strict=True))
                matrices.append(f"<table class='cm'><caption>{e(c.judge)} (rows) × {e(line.versus)} (columns)</caption>"
                                f"<tr><th></th>{head}</tr>{body}</table>")
        notes = "".join(f"<li>{e(note)}</li>" for note in cell_notes(c, report))
        sections.append(
            f"<h2>{e(c.task)} · {e(c.lang)} · {e(c.judge)}</h2>"
            "<div class='wide'><table class='forest'><colgroup><col style='width:11%'><col style='width:5%'><col style='width:6%'>"
            "<col style='width:13%'><col style='width:25%'><col style='width:13%'><col style='width:13%'>"
            "<col style='width:13%'><col style='width:11%'></colgroup>"
            "<tr><th>vs</th><th>n</th><th>agree</th><th>κ [95% CI]</th><th>κ on −1…1</th><th>AC1</th>"
            "<th>sensitivity</th><th>specificity</th><th>verdict</th></tr>"
            + "".join(rows) + "</table></div>"
            + (f"<ul class='notes'>{notes}</ul>" if notes else "")
            + _reliability_html(c)
            + (f"<details><summary>confusion matrices</summary>{''.join(matrices)}</details>" if matrices else "")
        )
    summary = []
    for c in report.cells:
        line = _headline(c, report.options)
        if line is None:
            continue
        r = report_row(c, line)
        summary.append(
            f"<tr><td>{e(c.task)} · {e(c.lang)} · {e(c.judge)} <span class='muted'>vs {e(r.versus)}</span></td>"
            f"<td class='num'>{r.n}</td><td class='num'>{e(with_ci(r.kappa, r.kappa_low, r.kappa_high))}</td>"
            f"<td>{_forest(line.stats.kappa if line.stats else None, c.ceiling.humans if c.ceiling else None)}</td>"
            f"<td class='num'>{e(_ceiling_text(c.ceiling))}</td></tr>")
    overview = ("<h2>Overview: one line per cell</h2><div class='wide'><table class='forest'><colgroup><col style='width:40%'>"
                "<col style='width:6%'><col style='width:16%'><col style='width:24%'><col style='width:14%'></colgroup>"
                "<tr><th>cell</th><th>n</th><th>κ [95% CI]</th><th>κ on −1…1</th><th>human ceiling</th></tr>"
                + "".join(summary) + "</table></div>") if summary else ""
    tail = "".join(f"<p class='muted'>{e(why)}</p>" for why in cells_without_numbers(report))
    note = multiplicity_note(report)
    guidance = ", ".join(f"{who} {value}" for who, value in EPSILON_GUIDANCE.items())
    return page("Judge vs human agreement", (
        "<p class='muted key'><span style='color:#1f5fa8'>● judge κ with its 95 % interval</span>"
        "<span style='color:#c0392b'>● human–human ceiling on the same items</span>"
        "<span>○ a value without an interval</span><span>dashed line: κ = 0</span>"
        f"<span>{APPROXIMATE_MARK} after an interval: approximate (see the notes)</span></p>"
        f"<p class='muted'>Unparsed verdicts: {e(report.options.unparsed)}. Alternative annotator test ε guidance "
        f"(Calderon et al. 2025): {e(guidance)}.</p>"
        + overview + "".join(sections) + tail + (f"<p class='muted'>{e(note)}</p>" if note else "")
    ))
