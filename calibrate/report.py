"""The agreement report: judge vs human per task x language x judge, beside the human-human
ceiling, in words and pictures (terminal table, Markdown, JSON, CSV, self-contained HTML).

The human label is each annotator's current label; with several annotators there is also a
line against the majority label. Unparsed and error judgments are counted apart (or, on
request, counted as disagreement).
"""

from __future__ import annotations

import csv
import html
import io
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from calibrate.agreement import (
    DEFAULT_RESAMPLES,
    AltTest,
    Estimate,
    ScoreAgreement,
    TwoRaters,
    alternative_annotator_test,
    interpret_kappa,
    items_for_half_width,
    krippendorff_alpha,
    score_agreement,
    two_raters,
)
from calibrate.display import markdown_safe, safe, safe_json, spreadsheet_safe
from calibrate.kinds import VerdictKind
from calibrate.model import AgreementData, CalibrateError
from calibrate.store import Store
from calibrate.templates import TemplateError, TemplateSet
from calibrate.verdicts import SCORE_KEYS

UNPARSED_LABEL = "(unparsed)"
GOLD = "majority"
BY_CHOICES = ("task", "lang")


@dataclass
class Line:
    """One comparison: a judge against one annotator (or the majority label)."""

    versus: str
    stats: TwoRaters | None = None
    scores: dict[str, ScoreAgreement] = field(default_factory=dict)
    more_items: int | None = None

    @property
    def n(self) -> int:
        if self.stats:
            return self.stats.n
        return max((s.n for s in self.scores.values()), default=0)


@dataclass
class Cell:
    key: tuple[str, str]  # (task, lang); "*" where --by merged it
    judge: str
    lines: list[Line] = field(default_factory=list)
    unparsed: int = 0
    errors: int = 0
    judged: int = 0
    ceiling: Estimate | None = None
    ceiling_kind: str | None = None
    alt_test: AltTest | None = None

    @property
    def task(self) -> str:
        return self.key[0]

    @property
    def lang(self) -> str:
        return self.key[1]

    def verdict_words(self, line: Line) -> str:
        if line.stats is None:
            rho = line.scores.get("score_answer")
            if rho and rho.spearman.value is not None:
                return f"Spearman {rho.spearman.value:.2f}, MAE {rho.mae:.1f} on score_answer"
            return "not enough scored items"
        kappa = line.stats.kappa
        if kappa.value is None:
            return kappa.reason or "kappa undefined"
        words = f"κ {kappa.value:.2f}"
        if kappa.ci:
            words += f" [{kappa.ci[0]:.2f}, {kappa.ci[1]:.2f}]"
        words += f", {interpret_kappa(kappa.value)}"
        if kappa.reason:
            words += f" ({kappa.reason})"
        if self.ceiling and self.ceiling.value is not None:
            relation = "below" if kappa.value < self.ceiling.value else "at or above"
            words += f"; {relation} human–human {self.ceiling.value:.2f}"
        else:
            words += "; no human–human ceiling yet"
        return words


@dataclass(frozen=True)
class ReportOptions:
    """How to cut and measure. `epsilon` is the alternative annotator test's margin: 0.2 suits
    crowd annotators, 0.1 experts (Calderon et al. 2025)."""

    by: tuple[str, ...] = BY_CHOICES
    unparsed_as_disagreement: bool = False
    resamples: int = DEFAULT_RESAMPLES
    target_half_width: float = 0.1
    threshold: float = 60.0
    epsilon: float = 0.2


@dataclass
class Report:
    cells: list[Cell]
    options: ReportOptions

    def as_dict(self) -> dict:
        out = []
        for cell in self.cells:
            out.append({
                "task": cell.task, "lang": cell.lang, "judge": cell.judge, "judged": cell.judged,
                "unparsed": cell.unparsed, "errors": cell.errors,
                "ceiling": cell.ceiling.as_dict() if cell.ceiling else None, "ceiling_kind": cell.ceiling_kind,
                "alternative_annotator_test": cell.alt_test.as_dict() if cell.alt_test else None,
                "lines": [
                    {"versus": line.versus, "n": line.n, "verdict": cell.verdict_words(line),
                     "more_items_for_target": line.more_items,
                     "stats": line.stats.as_dict() if line.stats else None,
                     "scores": {k: v.as_dict() for k, v in line.scores.items()}}
                    for line in cell.lines
                ],
            })
        return {"by": list(self.options.by), "unparsed_as_disagreement": self.options.unparsed_as_disagreement,
                "target_half_width": self.options.target_half_width, "epsilon": self.options.epsilon, "cells": out}


def build_report(store: Store, templates: TemplateSet, *, judge: str | None = None,
                 options: ReportOptions = ReportOptions()) -> Report:
    return report_from_data(store.agreement_data(judge), templates, options)


class ReportError(CalibrateError, ValueError):
    """A report that cannot be built as asked (cells that would compare unlike things)."""


class CellKinds:
    """Cells as `--by` cuts them, and the verdict kind each one measures.

    A cell that pools several (task, language) pairs must pool one kind of verdict: English
    yes/no and Chinese 是/否 pool (labels are mapped by their canonical polarity, shown in the
    first member's words), other kinds only with themselves; anything else is refused."""

    def __init__(self, templates: TemplateSet, by: tuple[str, ...]):
        self.templates, self.by = templates, by
        self._own: dict[tuple[str, str], VerdictKind | None] = {}
        self._cell: dict[tuple[str, str], VerdictKind | None] = {}

    def key(self, task: str, lang: str) -> tuple[str, str]:
        key = (task if "task" in self.by else "*", lang if "lang" in self.by else "*")
        if (task, lang) not in self._own:
            try:
                own = self.templates.for_task(task, lang).kind
            except TemplateError:
                own = None
            self._own[(task, lang)] = own
            first = self._cell.setdefault(key, own)
            if own is not None and first is not None and own.pool_key != first.pool_key:
                raise ReportError(
                    f"the cell {'/'.join(key)} would pool {first.name} with {own.name} ({task}, {lang}): "
                    "they are different kinds of verdict; use --by task,lang"
                )
            if first is None:
                self._cell[key] = own
        return key

    def kind(self, key: tuple[str, str]) -> VerdictKind | None:
        return self._cell.get(key)

    def scored(self, key: tuple[str, str]) -> bool:
        kind = self.kind(key)
        return kind is not None and kind.scored

    def label(self, task: str, lang: str, value: str | None) -> str | None:
        """`value` (a verdict or label of this task and language) in its cell's labels."""
        own, cell = self._own.get((task, lang)), self._cell.get(self.key(task, lang))
        if own is None or cell is None or own is cell or value not in own.labels:
            return value
        return cell.labels[own.labels.index(value)]


def report_from_data(data: AgreementData, templates: TemplateSet, options: ReportOptions = ReportOptions()) -> Report:
    """Cells per (task, lang) as `options.by` says, per judge."""
    resamples = options.resamples
    kinds = CellKinds(templates, options.by)
    cells: dict[tuple, Cell] = {}

    def cell(task, lang, judge) -> Cell:
        key = kinds.key(task, lang)
        return cells.setdefault((key, judge), Cell(key, judge))

    for task, lang, judge, status, n in data.judged:
        c = cell(task, lang, judge)
        c.judged += n
        if status == "unparsed":
            c.unparsed += n
        elif status == "error":
            c.errors += n

    # pair counts: (cell, judge, versus) -> {(verdict, label): n}
    counts: dict[tuple, dict[tuple[str, str], int]] = defaultdict(lambda: defaultdict(int))
    for rows, has_annotator in ((data.judge_vs_human, True), (data.judge_vs_gold, False)):
        for row in rows:
            if has_annotator:
                task, lang, judge, annotator, status, verdict, label, n = row
            else:
                task, lang, judge, status, verdict, label, n = row
                annotator = GOLD
            if status == "error" or (status == "unparsed" and not options.unparsed_as_disagreement):
                continue
            cell(task, lang, judge)
            key = (kinds.key(task, lang), judge, annotator)
            shown = kinds.label(task, lang, verdict) if status == "verdict" else UNPARSED_LABEL
            counts[key][(shown, kinds.label(task, lang, label))] += n

    people = defaultdict(set)  # (cell, judge) -> annotators with lines
    for key, judge, versus in counts:
        if versus != GOLD:
            people[(key, judge)].add(versus)
    for (key, judge, versus), pairs in sorted(counts.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2] == GOLD, kv[0][2])):
        if versus == GOLD and len(people[(key, judge)]) < 2:
            continue  # a majority of one annotator is that annotator's line again
        kind = kinds.kind(key)
        if kinds.scored(key):
            line = Line(versus, scores=_score_lines(kind, pairs, options.threshold, resamples))
        else:
            table, labels = _pair_table(pairs, list(kind.labels) if kind else [])
            stats = two_raters(table=table, labels=labels, resamples=resamples)
            line = Line(versus, stats=stats, more_items=items_for_half_width(stats.n, stats.kappa.ci, options.target_half_width))
        cells[(key, judge)].lines.append(line)

    per_item: dict[tuple, dict[int, dict[str, str]]] = defaultdict(lambda: defaultdict(dict))
    item_cells: dict[int, tuple[str, str]] = {}
    for item_id, task, lang, annotator, label in data.shared_labels:
        per_item[kinds.key(task, lang)][item_id][annotator] = kinds.label(task, lang, label)
        item_cells[item_id] = (task, lang)
    _add_ceilings(data, per_item, cells, kinds)
    _add_alt_tests(data, per_item, item_cells, cells, kinds, options.epsilon)
    ordered = sorted(cells.values(), key=lambda c: (c.key, c.judge))
    return Report(ordered, options)


def _pair_table(pairs: dict[tuple[str, str], int], labels: list[str]) -> tuple[np.ndarray, list[str]]:
    """A confusion table from {(rater A label, rater B label): n}: the given label order first,
    then any other label that occurs (an unparsed verdict, a label from elsewhere)."""
    labels = list(labels)
    for a, b in pairs:
        for value in (a, b):
            if value not in labels:
                labels.append(value)
    index = {label: i for i, label in enumerate(labels)}
    table = np.zeros((len(labels), len(labels)), dtype=np.int64)
    for (a, b), n in pairs.items():
        table[index[a], index[b]] += n
    return table, labels


def _score_lines(kind: VerdictKind, pairs: dict[tuple[str, str], int], threshold: float,
                 resamples: int) -> dict[str, ScoreAgreement]:
    out = {}
    for dimension in SCORE_KEYS:
        judge_scores, human_scores = [], []
        for (verdict, label), n in pairs.items():
            judge, human = kind.scores(verdict), kind.scores(label)
            if judge is None or human is None:
                continue
            judge_scores += [judge[dimension]] * n
            human_scores += [human[dimension]] * n
        out[dimension] = score_agreement(judge_scores, human_scores, threshold=threshold, resamples=resamples)
    return out


def _add_ceilings(data: AgreementData, per_item: dict, cells: dict, kinds: CellKinds) -> None:
    """Human-human ceiling per categorical cell: Cohen's kappa for two annotators,
    Krippendorff's alpha (nominal) for more."""
    pairs: dict[tuple, dict] = defaultdict(lambda: defaultdict(int))
    annotators: dict[tuple, set] = defaultdict(set)
    for task, lang, a, b, label_a, label_b, n in data.human_pairs:
        key = kinds.key(task, lang)
        pairs[key][(kinds.label(task, lang, label_a), kinds.label(task, lang, label_b))] += n
        annotators[key] |= {a, b}
    for key, counted in pairs.items():
        if kinds.scored(key):
            continue
        people = sorted(annotators[key])
        if len(people) == 2:
            table, labels = _pair_table(counted, [])
            ceiling, kind = two_raters(table=table, labels=labels).kappa, f"Cohen's κ, n={int(table.sum())}"
        else:
            items = per_item[key]
            code = {v: float(i) for i, v in enumerate(sorted({x for labels in items.values() for x in labels.values()}))}
            matrix = np.full((len(people), len(items)), np.nan)
            for col, labels in enumerate(items.values()):
                for row, person in enumerate(people):
                    if person in labels:
                        matrix[row, col] = code[labels[person]]
            ceiling, kind = krippendorff_alpha(matrix), f"Krippendorff's α, {len(people)} annotators"
        for (cell_key, _judge), c in cells.items():
            if cell_key == key:
                c.ceiling, c.ceiling_kind = ceiling, kind


def _add_alt_tests(data: AgreementData, per_item: dict, item_cells: dict, cells: dict, kinds: CellKinds,
                   epsilon: float) -> None:
    verdicts: dict[str, dict[int, str]] = defaultdict(dict)
    for item_id, judge, status, verdict in data.shared_verdicts:
        if status == "verdict":
            verdicts[judge][item_id] = kinds.label(*item_cells[item_id], verdict)
    for (key, judge), c in cells.items():
        if kinds.scored(key):
            c.alt_test = AltTest(False, epsilon=epsilon, reason="the test compares categorical labels, not scores")
            continue
        c.alt_test = alternative_annotator_test(per_item.get(key, {}), verdicts.get(judge, {}), epsilon=epsilon)


# -- output ---------------------------------------------------------------------------------------


def kappa_bar(value: float | None, ci: tuple[float, float] | None, width: int = 21) -> str:
    """κ and its CI on the -1…1 scale: ━ spans the CI, ● marks κ, ┊ marks 0."""
    if value is None:
        return " " * width
    pos = lambda v: int(round((max(-1.0, min(1.0, v)) + 1) / 2 * (width - 1)))  # noqa: E731
    chars = ["·"] * width
    chars[pos(0.0)] = "┊"
    if ci:
        for k in range(pos(ci[0]), pos(ci[1]) + 1):
            chars[k] = "━"
    chars[pos(value)] = "●"
    return "".join(chars)


def _fmt(value: float | None, digits: int = 2) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _ci(estimate: Estimate | None) -> str:
    if estimate is None or estimate.value is None:
        return "—"
    return f"{estimate.value:.2f} [{estimate.ci[0]:.2f}, {estimate.ci[1]:.2f}]" if estimate.ci else f"{estimate.value:.2f}"


def _prevalence(stats: TwoRaters) -> str:
    if not stats.prevalence:
        return "—"
    label, share = max(stats.prevalence.items(), key=lambda kv: kv[1])
    return f"{label} {share:.0%}"


COLUMNS = ["task", "lang", "judge", "vs", "n", "agree", "κ [95% CI]", "AC1", "prevalence",
           "unparsed", "errors", "ceiling", "verdict", "+items"]


def flat_rows(report: Report) -> list[list[str]]:
    rows = []
    for c in report.cells:
        for line in c.lines or [Line("(no human labels yet)")]:
            s = line.stats
            if s is not None:
                agree, kappa, ac1, prev = _fmt(s.raw_agreement), _ci(s.kappa), _ci(s.ac1), _prevalence(s)
            elif line.scores:
                sa = line.scores["score_answer"]
                agree, kappa = f"MAE {_fmt(sa.mae, 1)}", _ci(sa.binned.kappa_quadratic if sa.binned else None)
                ac1, prev = f"ρ {_fmt(sa.spearman.value)}", "scores"
            else:
                agree = kappa = ac1 = prev = "—"
            ceiling = f"{_fmt(c.ceiling.value)} ({c.ceiling_kind})" if c.ceiling and c.ceiling.value is not None else "—"
            words = c.verdict_words(line) if line.n else "no labelled items"
            more = "—" if line.more_items is None else str(line.more_items)
            rows.append([c.task, c.lang, c.judge, line.versus, str(line.n), agree, kappa, ac1, prev,
                         str(c.unparsed), str(c.errors), ceiling, words, more])
    return rows


def render_table(report: Report, console) -> None:
    """The terminal table: cells with human labels, each κ with a bar of it and its CI."""
    from rich.table import Table
    from rich.text import Text

    table = Table(title=f"judge vs human, by {' × '.join(report.options.by)}", caption=(
        f"bar: κ ● and 95% CI ━ on −1…1 (┊ = 0) · +items: labels still needed for a κ CI of ±{report.options.target_half_width}"))
    for name, kwargs in (("cell", {"no_wrap": True}), ("judge vs", {"no_wrap": True}), ("n", {"justify": "right"}),
                         ("agree", {}), ("κ [95% CI]", {"no_wrap": True}), ("AC1", {}), ("prevalence", {}),
                         ("unparsed/err", {"justify": "right"}), ("human–human", {}), ("verdict", {"ratio": 1, "min_width": 36}),
                         ("+items", {"justify": "right"})):
        table.add_column(name, overflow="fold", **kwargs)
    waiting = []
    for c, line, row in _lines_with_rows(report):
        if not line.n:
            waiting.append(f"{c.task} {c.lang} ({c.judge})")
            continue
        kappa = line.stats.kappa if line.stats else None
        bar = kappa_bar(kappa.value, kappa.ci) if kappa and kappa.value is not None else ""
        table.add_row(Text(safe(f"{row[0]} {row[1]}")), Text(safe(f"{row[2]} vs {row[3]}")), row[4], row[5],
                      Text(f"{row[6]}\n{bar}" if bar else row[6]), row[7], row[8], f"{row[9]}/{row[10]}",
                      Text(row[11]), Text(safe(row[12])), row[13])
    console.print(table)
    if waiting:
        console.print(Text(safe(f"judged but no human labels yet ({len(waiting)}): " + ", ".join(waiting)), style="dim"))
    for c in report.cells:
        if c.alt_test and c.alt_test.ran:
            result = "passes" if c.alt_test.passed else "does not pass"
            console.print(Text(safe(f"alternative annotator test, {c.task} {c.lang} {c.judge}: winning rate "
                          f"{c.alt_test.winning_rate:.2f} over {c.alt_test.annotators} annotators (ε={c.alt_test.epsilon}): {result}")))


def _lines_with_rows(report: Report):
    rows = iter(flat_rows(report))
    for c in report.cells:
        for line in c.lines or [Line("(no human labels yet)")]:
            yield c, line, next(rows)


def render_markdown(report: Report) -> str:
    out = io.StringIO()
    out.write("# calibrate agreement report\n\n")
    out.write("| " + " | ".join(COLUMNS) + " |\n|" + "---|" * len(COLUMNS) + "\n")
    for row in flat_rows(report):
        out.write("| " + " | ".join(markdown_safe(v) for v in row) + " |\n")
    for c in report.cells:
        if c.alt_test:
            out.write(f"\n**{markdown_safe(f'{c.task} {c.lang} {c.judge}')}, alternative annotator test:** ")
            if c.alt_test.ran:
                out.write(f"winning rate {c.alt_test.winning_rate:.2f}, {'passes' if c.alt_test.passed else 'does not pass'} "
                          f"(ε = {c.alt_test.epsilon}).\n")
            else:
                out.write(f"not run: {c.alt_test.reason}.\n")
        for line in c.lines:
            if line.stats and line.stats.n:
                out.write(f"\nConfusion matrix, {markdown_safe(f'{c.task} {c.lang}, {c.judge}')} (rows) vs "
                          f"{markdown_safe(line.versus)} (columns):\n\n")
                labels = line.stats.labels
                out.write("| | " + " | ".join(map(markdown_safe, labels)) + " |\n|---|" + "---|" * len(labels) + "\n")
                for label, counts in zip(labels, line.stats.table, strict=True):
                    out.write(f"| **{markdown_safe(label)}** | " + " | ".join(map(str, counts)) + " |\n")
    return out.getvalue()


def render_csv(report: Report) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(COLUMNS)
    writer.writerows([spreadsheet_safe(v) for v in row] for row in flat_rows(report))
    return out.getvalue()


def render_json(report: Report) -> str:
    return safe_json(report.as_dict())


def _svg_scale(value: float | None, ci, ceiling: float | None) -> str:
    x = lambda v: 10 + (max(-1.0, min(1.0, v)) + 1) / 2 * 300  # noqa: E731
    parts = ['<svg width="320" height="34" viewBox="0 0 320 34" role="img">',
             '<line x1="10" y1="17" x2="310" y2="17" stroke="#ccc"/>']
    for tick in (-1, -0.5, 0, 0.5, 1):
        parts.append(f'<line x1="{x(tick):.1f}" y1="12" x2="{x(tick):.1f}" y2="22" stroke="#bbb"/>'
                     f'<text x="{x(tick):.1f}" y="33" font-size="8" text-anchor="middle" fill="#888">{tick:g}</text>')
    if ceiling is not None:
        parts.append(f'<line x1="{x(ceiling):.1f}" y1="3" x2="{x(ceiling):.1f}" y2="27" stroke="#d62728" stroke-width="2">'
                     f'<title>human–human {ceiling:.2f}</title></line>')
    if value is not None:
        if ci:
            parts.append(f'<line x1="{x(ci[0]):.1f}" y1="17" x2="{x(ci[1]):.1f}" y2="17" stroke="#1f77b4" stroke-width="3"/>'
                         f'<line x1="{x(ci[0]):.1f}" y1="11" x2="{x(ci[0]):.1f}" y2="23" stroke="#1f77b4" stroke-width="2"/>'
                         f'<line x1="{x(ci[1]):.1f}" y1="11" x2="{x(ci[1]):.1f}" y2="23" stroke="#1f77b4" stroke-width="2"/>')
        parts.append(f'<circle cx="{x(value):.1f}" cy="17" r="5" fill="#1f77b4"><title>κ {value:.2f}</title></circle>')
    parts.append("</svg>")
    return "".join(parts)


def render_html(report: Report) -> str:
    e = lambda value: html.escape(safe(value))  # noqa: E731
    rows = []
    for c, line, row in _lines_with_rows(report):
        kappa = line.stats.kappa if line.stats else None
        ceiling = c.ceiling.value if c.ceiling else None
        svg = _svg_scale(kappa.value if kappa else None, kappa.ci if kappa else None, ceiling)
        matrix = ""
        if line.stats and line.stats.n:
            head = "".join(f"<th>{e(str(label))}</th>" for label in line.stats.labels)
            body = "".join(
                f"<tr><th>{e(str(label))}</th>" + "".join(f"<td>{n}</td>" for n in counts) + "</tr>"
                for label, counts in zip(line.stats.labels, line.stats.table, strict=True)
            )
            matrix = (f'<table class="cm"><caption>{e(c.judge)} (rows) × {e(line.versus)} (columns)</caption>'
                      f"<tr><th></th>{head}</tr>{body}</table>")
        alt = ""
        if c.alt_test:
            alt = (f"alternative annotator test (ε={c.alt_test.epsilon}): winning rate {c.alt_test.winning_rate:.2f}, "
                   f"{'passes' if c.alt_test.passed else 'does not pass'}"
                   if c.alt_test.ran else f"not run: {e(c.alt_test.reason or '')}")
        rows.append(
            f"<tr><td>{e(row[0])}</td><td>{e(row[1])}</td><td>{e(row[2])}</td><td>{e(row[3])}</td><td>{e(row[4])}</td>"
            f"<td>{e(row[5])}</td><td>{e(row[6])}<br>{svg}</td><td>{e(row[7])}</td><td>{e(row[8])}</td>"
            f"<td>{e(row[9])} / {e(row[10])}</td><td>{e(row[11])}</td><td>{e(row[12])}<br><small>{alt}</small></td>"
            f"<td>{e(row[13])}</td><td>{matrix}</td></tr>"
        )
    style = ("body{font-family:system-ui,sans-serif;margin:2em;color:#222}table.main{border-collapse:collapse}"
             "table.main>tbody>tr>td,table.main>thead>tr>th{border-bottom:1px solid #ddd;padding:6px 8px;vertical-align:top;font-size:13px}"
             "table.cm{border-collapse:collapse;font-size:11px}table.cm td,table.cm th{border:1px solid #ccc;padding:2px 6px;text-align:right}"
             "caption{font-size:10px;color:#666}.legend{color:#555;font-size:13px}")
    header = "".join(f"<th>{e(h)}</th>" for h in ["task", "lang", "judge", "vs", "n", "agree", "κ [95% CI]", "AC1",
                                                   "prevalence", "unparsed / errors", "human–human", "verdict", "+items", "confusion"])
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>calibrate agreement report</title>"
        f"<style>{style}</style></head><body><h1>Judge vs human agreement</h1>"
        "<p class='legend'>Blue: κ with its 95% bootstrap interval on the −1…1 scale. Red: the human–human ceiling "
        f"where items were labelled twice. +items: more labelled items for a κ interval of ±{report.options.target_half_width}.</p>"
        f"<table class='main'><thead><tr>{header}</tr></thead><tbody>{''.join(rows)}</tbody></table></body></html>\n"
    )
