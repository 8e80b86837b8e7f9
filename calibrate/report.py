"""The agreement report: judge vs human per task x language x judge, beside the human-human
ceiling on the same items, in words and pictures (terminal table, Markdown, JSON, CSV,
self-contained HTML).

The human label is each annotator's current label; with several annotators there is also a
line against the gold label (the adjudicator's, or the strict majority; ties are counted,
never dropped). Cells pooled across languages compare like with like: a cell holds one kind
of verdict, and English yes/no and Chinese 是/否 meet on their canonical polarity. Unparsed
verdicts are left out, counted as "no" (as C3's script does) or counted as disagreement, as
asked, and whenever a cell has some the range of kappa between the best and the worst case
is shown beside it.
"""

from __future__ import annotations

import csv
import html
import io
from collections import defaultdict
from dataclasses import asdict, dataclass, field, fields

import numpy as np

from calibrate.display import markdown_safe, safe, safe_json, spreadsheet_safe
from calibrate.judgments import TRUNCATED
from calibrate.kinds import VerdictKind
from calibrate.model import AgreementData, CalibrateError, Estimate
from calibrate.reliability_cells import JURY, JudgeReliability, jury_data, reliability_by_cell
from calibrate.stats.agreement import (
    DEFAULT_RESAMPLES,
    EPSILON_GUIDANCE,
    AltTest,
    Ceiling,
    JudgeVsHuman,
    ScoreAgreement,
    TwoRaters,
    alternative_annotator_test,
    human_ceiling,
    interpret_kappa,
    items_for_half_width,
    judge_vs_human,
    kappa_from_tables,
    score_agreement,
    two_raters,
)
from calibrate.store import Store
from calibrate.templates import TemplateError, TemplateSet
from calibrate.verdicts import SCORE_KEYS

BY_CHOICES = ("system", "task", "lang")
UNPARSED_MODES = ("exclude", "as-negative", "as-disagreement")


class ReportError(CalibrateError, ValueError):
    """A report that cannot be built as asked (cells that would compare unlike things)."""


@dataclass(frozen=True)
class ReportOptions:
    """How to cut and measure.

    unparsed: "exclude" leaves unparsed verdicts out (counted); "as-negative" takes them as the
    kind's negative label, as C3's script does; "as-disagreement" gives each the label that
    disagrees with the human, on the kind's own label scale. `epsilon` is the alternative
    annotator test's margin (the paper: 0.2 experts, 0.15 skilled, 0.1 crowd workers).
    `gold_from` names an adjudicator whose label is the gold where present. `families` maps
    judge and system names to model families (`--family name=family`), to flag a judge grading
    a system of its own family. The judges' reliability (consistency, calibration, bias probes)
    is measured when the database holds repeats or confidences, or when `reliability` asks for
    it anyway (the bias probes then read every labelled item's response)."""

    by: tuple[str, ...] = ("task", "lang")
    unparsed: str = "exclude"
    resamples: int = DEFAULT_RESAMPLES
    target_half_width: float = 0.1
    threshold: float = 60.0
    epsilon: float = 0.2
    gold_from: str | None = None
    families: tuple[tuple[str, str], ...] = ()
    reliability: bool = False


@dataclass
class Line:
    """One comparison: a judge against one annotator (or the gold label)."""

    versus: str
    stats: TwoRaters | None = None
    scores: dict[str, ScoreAgreement] = field(default_factory=dict)
    more_items: int | None = None
    errors: JudgeVsHuman | None = None
    unparsed: int = 0  # labelled items whose verdict did not parse
    kappa_range: tuple[float | None, float | None] | None = None  # worst, best case for those

    @property
    def n(self) -> int:
        if self.stats:
            return self.stats.n
        return max((s.n for s in self.scores.values()), default=0)


@dataclass
class Cell:
    key: tuple[str, str]  # (task, lang); "*" where --by merged it
    judge: str
    kind: VerdictKind | None = None
    system: str | None = None  # the system under test, when --by cuts by system
    lines: list[Line] = field(default_factory=list)
    unparsed: int = 0
    truncated: int = 0  # of the unparsed: outputs cut at the judge's token limit
    errors: int = 0
    judged: int = 0
    ceiling: Ceiling | None = None
    alt_test: AltTest | None = None
    ties: int = 0
    reliability: JudgeReliability | None = None  # consistency, calibration, bias probes

    @property
    def task(self) -> str:
        """The task as shown: prefixed by the system when the report is cut by system."""
        return self.key[0] if self.system is None else f"{self.system or '(none)'} · {self.key[0]}"

    @property
    def lang(self) -> str:
        return self.key[1]

    def verdict_words(self, line: Line) -> str:
        """The line's finding in words: kappa and its band, and where it stands against the
        human ceiling measured on the same items (by the interval of the difference)."""
        if line.stats is None:
            rho = line.scores.get("score_answer")
            if rho and rho.spearman.value is not None:
                return f"Spearman {rho.spearman.value:.2f}, MAE {rho.mae:.1f} on score_answer"
            return "not enough scored items"
        kappa = line.stats.kappa
        if kappa.value is None:
            return "κ undefined (see note)"
        words = interpret_kappa(kappa.value)
        if self.ceiling and self.ceiling.verdict:
            words += f"; {self.ceiling.verdict.split()[0]} ceiling"  # below / within / above, by the paired interval
        elif self.ceiling is None:
            words += "; no ceiling yet"
        return words


@dataclass
class Report:
    cells: list[Cell]
    options: ReportOptions

    def as_dict(self) -> dict:
        out = []
        for cell in self.cells:
            out.append({
                "system": cell.system, "task": cell.key[0], "lang": cell.lang, "judge": cell.judge,
                "kind": cell.kind.name if cell.kind else None,
                "judged": cell.judged, "unparsed": cell.unparsed, "errors": cell.errors, "gold_ties": cell.ties,
                "ceiling": cell.ceiling.as_dict() if cell.ceiling else None,
                "alternative_annotator_test": cell.alt_test.as_dict() if cell.alt_test else None,
                "reliability": cell.reliability.as_dict() if cell.reliability else None,
                "lines": [
                    {**asdict(row), "stats": line.stats.as_dict() if line.stats else None,
                     "judge_errors": line.errors.as_dict() if line.errors else None,
                     "scores": {k: v.as_dict() for k, v in line.scores.items()}}
                    for line, row in ((line, report_row(cell, line)) for line in cell.lines)
                ],
            })
        return {"by": list(self.options.by), "unparsed": self.options.unparsed, "gold_from": self.options.gold_from,
                "target_half_width": self.options.target_half_width, "epsilon": self.options.epsilon,
                "multiplicity": multiplicity_note(self), "cells": out}


# -- cells and their kinds ---------------------------------------------------------------------------


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
                    f"they are different kinds of verdict; use --by {','.join(dict.fromkeys([*self.by, 'task', 'lang']))}"
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
        outcome = own.canonical(value)  # yes and 是 are one outcome
        return next((label for label in cell.labels if cell.canonical(label) == outcome), value)


def disagreeing(kind: VerdictKind | None, label: str) -> str | None:
    """A label of the kind's own scale that disagrees with `label` (the other one of a binary
    kind; the first other label of a larger set)."""
    if kind is None or not kind.labels:
        return None
    return kind.flip(label) or next((other for other in kind.labels if other != label), None)


def unparsed_as(kind: VerdictKind | None, mode: str, human: str) -> str | None:
    """What an unparsed verdict counts as under `mode`, against this human label (None: left out)."""
    if mode == "as-negative" and kind is not None and kind.positive is not None:
        return kind.labels[1]
    if mode in ("as-negative", "as-disagreement"):
        return disagreeing(kind, human)
    return None


# -- building ----------------------------------------------------------------------------------------


def build_report(store: Store, templates: TemplateSet, *, judge: str | None = None,
                 options: ReportOptions = ReportOptions(), system: str | None = None) -> Report:
    """The report over every item, or cut by system (`options.by`) or for one `system`, with
    the jury of the judges beside them. The judges' reliability (repeats, calibration, probes)
    is measured over every system at once, so a report cut by system leaves it out."""

    def with_jury(data: AgreementData, name: str | None) -> AgreementData:
        jury = jury_data(store, templates, gold_from=options.gold_from, system=name) if judge in (None, JURY) else None
        return AgreementData.combine([data, jury]) if jury is not None else data

    if "system" in options.by or system is not None:
        cells = []
        for name in [system] if system is not None else store.systems():
            data = with_jury(store.agreement_data(judge, system=name, gold_from=options.gold_from), name)
            for cell in report_from_data(data, templates, options).cells:
                cell.system = name
                cells.append(cell)
        return count_truncations(store, templates, Report(cells, options))
    data = with_jury(store.agreement_data(judge, gold_from=options.gold_from), None)
    report = count_truncations(store, templates, report_from_data(data, templates, options))
    if not (options.reliability or store.has_repeats_or_confidence()):
        return report
    measured = reliability_by_cell(store, CellKinds(templates, options.by), judge=judge, gold_from=options.gold_from,
                                   families=dict(options.families), resamples=options.resamples)
    for c in report.cells:
        c.reliability = measured.get((c.key, c.judge))
    return report


def count_truncations(store: Store, templates: TemplateSet, report: Report) -> Report:
    """Each cell's unparsed verdicts that were outputs cut at the token limit."""
    kinds = CellKinds(templates, report.options.by)
    by_cell = {(c.key, c.judge, c.system): c for c in report.cells}
    for task, lang, system, judge, n in store.unparsed_counts(TRUNCATED):
        for name in (system, None):
            c = by_cell.get((kinds.key(task, lang), judge, name))
            if c is not None:
                c.truncated += n
    return report


def gold_name(options: ReportOptions) -> str:
    return f"gold ({options.gold_from})" if options.gold_from else "majority"


def report_from_data(data: AgreementData, templates: TemplateSet, options: ReportOptions = ReportOptions()) -> Report:
    """Cells per (task, lang) as `options.by` says, per judge."""
    if options.unparsed not in UNPARSED_MODES:
        raise ReportError(f"unknown --unparsed {options.unparsed!r}: use {', '.join(UNPARSED_MODES)}")
    kinds = CellKinds(templates, options.by)
    cells: dict[tuple, Cell] = {}
    gold = gold_name(options)

    def cell(task, lang, judge) -> Cell:
        key = kinds.key(task, lang)
        return cells.setdefault((key, judge), Cell(key, judge, kinds.kind(key)))

    for task, lang, judge, status, n in data.judged:
        c = cell(task, lang, judge)
        c.judged += n
        if status == "unparsed":
            c.unparsed += n
        elif status == "error":
            c.errors += n
    ties: dict[tuple, int] = defaultdict(int)
    for task, lang, n in data.ties:
        ties[kinds.key(task, lang)] += n

    # (cell, judge, versus) -> {(verdict, label): n} for parsed verdicts, {label: n} for unparsed
    parsed: dict[tuple, dict[tuple[str, str], int]] = defaultdict(lambda: defaultdict(int))
    unparsed: dict[tuple, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for rows, has_annotator in ((data.judge_vs_human, True), (data.judge_vs_gold, False)):
        for row in rows:
            if has_annotator:
                task, lang, judge, annotator, status, verdict, label, n = row
            else:
                task, lang, judge, status, verdict, label, n = row
                annotator = gold
            if status == "error":
                continue
            cell(task, lang, judge)
            key = (kinds.key(task, lang), judge, annotator)
            label = kinds.label(task, lang, label)
            if status == "verdict":
                parsed[key][(kinds.label(task, lang, verdict), label)] += n
            else:
                unparsed[key][label] += n

    people = defaultdict(set)  # (cell, judge) -> annotators with lines
    for key, judge, versus in [*parsed, *unparsed]:
        if versus != gold:
            people[(key, judge)].add(versus)
    for key, judge, versus in sorted({*parsed, *unparsed}, key=lambda k: (k[0], k[1], k[2] == gold, k[2])):
        if versus == gold and len(people[(key, judge)]) < 2:
            continue  # a majority of one annotator is that annotator's line again
        c = cells[(key, judge)]
        c.ties = ties.get(key, 0)
        c.lines.append(_line(c.kind, versus, parsed[(key, judge, versus)], unparsed[(key, judge, versus)], options))

    per_item: dict[tuple, dict[int, dict[str, str]]] = defaultdict(lambda: defaultdict(dict))
    item_cells: dict[int, tuple[str, str]] = {}
    for item_id, task, lang, annotator, label in data.shared_labels:
        per_item[kinds.key(task, lang)][item_id][annotator] = kinds.label(task, lang, label)
        item_cells[item_id] = (task, lang)
    _add_ceilings_and_alt_tests(data, per_item, item_cells, cells, kinds, options)
    ordered = sorted(cells.values(), key=lambda c: (c.key, c.judge))
    return Report(ordered, options)


def _line(kind: VerdictKind | None, versus: str, parsed: dict, unparsed: dict, options: ReportOptions) -> Line:
    """One judge-vs-person line, with unparsed verdicts treated as `options.unparsed` says."""
    if kind is not None and kind.scored:
        return Line(versus, scores=_score_lines(kind, parsed, options.threshold, options.resamples),
                    unparsed=sum(unparsed.values()))
    pairs = dict(parsed)
    for label, n in unparsed.items():
        counted_as = unparsed_as(kind, options.unparsed, label)
        if counted_as is not None:
            pairs[(counted_as, label)] = pairs.get((counted_as, label), 0) + n
    labels = list(kind.labels) if kind else []
    table, labels = _pair_table(pairs, labels)
    stats = two_raters(table=table, labels=labels, resamples=options.resamples)
    plan = items_for_half_width(stats.n, stats.kappa.ci, options.target_half_width) if stats.kappa.value is not None else None
    line = Line(versus, stats=stats, unparsed=sum(unparsed.values()), more_items=plan)
    if kind is not None and kind.positive is not None and stats.n:
        line.errors = judge_vs_human(table, labels, kind.positive)
    if unparsed and kind is not None and kind.labels:
        line.kappa_range = _kappa_range(kind, parsed, unparsed, labels)
    return line


def _kappa_range(kind: VerdictKind, parsed: dict, unparsed: dict, labels: list[str]) -> tuple[float | None, float | None]:
    """Kappa if every unparsed verdict had disagreed with the person (worst) or agreed (best)."""
    out = []
    for counted_as in (lambda h: disagreeing(kind, h), lambda h: h):
        pairs = dict(parsed)
        for label, n in unparsed.items():
            pairs[(counted_as(label), label)] = pairs.get((counted_as(label), label), 0) + n
        table, _ = _pair_table(pairs, labels)
        value = float(kappa_from_tables(table))
        out.append(value if np.isfinite(value) else None)
    return out[0], out[1]


def _pair_table(pairs: dict[tuple[str, str], int], labels: list[str]) -> tuple[np.ndarray, list[str]]:
    """A confusion table from {(rater A label, rater B label): n}: the given label order first,
    then any other label that occurs (a label from elsewhere)."""
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


def _add_ceilings_and_alt_tests(data: AgreementData, per_item: dict, item_cells: dict, cells: dict,
                                kinds: CellKinds, options: ReportOptions) -> None:
    """Per categorical cell, on the items two or more people labelled: the judge beside the
    humans (same items, same statistic family, a paired interval for the difference), and the
    alternative annotator test. Unparsed verdicts follow `options.unparsed`."""
    verdicts: dict[str, dict[int, str | None]] = defaultdict(dict)
    for item_id, judge, status, verdict in data.shared_verdicts:
        if status == "verdict":
            verdicts[judge][item_id] = kinds.label(*item_cells[item_id], verdict)
        elif status == "unparsed":
            verdicts[judge][item_id] = None
    for (key, judge), c in cells.items():
        if kinds.scored(key):
            c.alt_test = AltTest(False, epsilon=options.epsilon, reason="the test compares categorical labels, not scores")
            continue
        items = per_item.get(key, {})
        if not items:
            continue
        shown = {}
        for item_id in items:
            if item_id not in verdicts[judge]:
                continue
            verdict = verdicts[judge][item_id]
            if verdict is None and options.unparsed == "as-negative" and c.kind is not None and c.kind.positive:
                verdict = c.kind.labels[1]
            if verdict is not None or options.unparsed != "exclude":
                shown[item_id] = verdict
        c.ceiling = human_ceiling(items, shown, resamples=options.resamples)
        c.alt_test = alternative_annotator_test(items, shown, epsilon=options.epsilon)


def multiplicity_note(report: Report) -> str | None:
    """With many cells, some 95 % intervals miss by chance: say so, with the Bonferroni level
    for simultaneous statements (Dunn, O. J. (1961). Multiple comparisons among means. JASA 56,
    52-64)."""
    shown = sum(1 for c in report.cells for line in c.lines if line.n)
    if shown < 5:
        return None
    return (f"{shown} lines are shown: with 95 % intervals about 1 in 20 misses its true value by chance. "
            f"For statements about all of them at once, read each at the Bonferroni level {1 - 0.05 / shown:.4f}.")


# -- rows with named fields --------------------------------------------------------------------------


@dataclass
class ReportRow:
    """One line of the report as plain named values (numbers stay numbers, None = missing):
    what CSV, Markdown, JSON and the tables are written from."""

    system: str | None
    task: str
    lang: str
    judge: str
    versus: str
    n: int
    agreement: float | None = None
    agreement_low: float | None = None
    agreement_high: float | None = None
    kappa: float | None = None
    kappa_low: float | None = None
    kappa_high: float | None = None
    kappa_note: str | None = None
    band: str | None = None
    ac1: float | None = None
    ac1_low: float | None = None
    ac1_high: float | None = None
    pabak: float | None = None
    prevalence_label: str | None = None
    prevalence: float | None = None
    sensitivity: float | None = None
    sensitivity_low: float | None = None
    sensitivity_high: float | None = None
    specificity: float | None = None
    specificity_low: float | None = None
    specificity_high: float | None = None
    bias_index: float | None = None
    prevalence_index: float | None = None
    homogeneity_test: str | None = None
    homogeneity_p: float | None = None
    leniency: str | None = None
    unparsed: int = 0
    kappa_worst: float | None = None
    kappa_best: float | None = None
    errors: int = 0
    ceiling_items: int | None = None
    ceiling_statistic: str | None = None
    ceiling: float | None = None
    ceiling_low: float | None = None
    ceiling_high: float | None = None
    judge_on_shared: float | None = None
    judge_on_shared_low: float | None = None
    judge_on_shared_high: float | None = None
    difference: float | None = None
    difference_low: float | None = None
    difference_high: float | None = None
    ceiling_verdict: str | None = None
    gold_ties: int = 0
    more_items: int | None = None
    spearman: float | None = None
    mae: float | None = None
    repeats: int | None = None
    flip_rate: float | None = None
    flip_rate_low: float | None = None
    flip_rate_high: float | None = None
    repeat_alpha: float | None = None
    repeat_alpha_low: float | None = None
    repeat_alpha_high: float | None = None
    unstable_items: int | None = None
    calibration_items: int | None = None
    ece: float | None = None
    brier: float | None = None
    brier_low: float | None = None
    brier_high: float | None = None
    length_bias: float | None = None
    length_bias_low: float | None = None
    length_bias_high: float | None = None
    length_bias_verdict: str | None = None
    verdict: str = ""


def _split(estimate: Estimate | None) -> tuple[float | None, float | None, float | None]:
    if estimate is None:
        return None, None, None
    low, high = estimate.ci if estimate.ci else (None, None)
    return estimate.value, low, high


def report_row(c: Cell, line: Line) -> ReportRow:
    row = ReportRow(c.system, c.key[0], c.lang, c.judge, line.versus, line.n, unparsed=line.unparsed, errors=c.errors,
                    more_items=line.more_items, gold_ties=c.ties, verdict=c.verdict_words(line) if line.n else "")
    if line.stats is not None and line.stats.n:
        s = line.stats
        row.agreement, row.agreement_low, row.agreement_high = _split(s.agreement)
        row.kappa, row.kappa_low, row.kappa_high = _split(s.kappa)
        row.kappa_note = s.kappa.reason if s.kappa.value is None else (s.kappa.ci_reason or s.kappa.reason)
        row.band = interpret_kappa(s.kappa.value) if s.kappa.value is not None else None
        row.ac1, row.ac1_low, row.ac1_high = _split(s.ac1)
        row.pabak = s.pabak
        if s.prevalence:
            row.prevalence_label, row.prevalence = max(s.prevalence.items(), key=lambda kv: kv[1])
    if line.errors is not None:
        e = line.errors
        row.sensitivity, row.sensitivity_low, row.sensitivity_high = _split(e.sensitivity)
        row.specificity, row.specificity_low, row.specificity_high = _split(e.specificity)
        row.bias_index, row.prevalence_index = e.bias_index, e.prevalence_index
        row.homogeneity_test, row.homogeneity_p, row.leniency = e.homogeneity["test"], e.homogeneity["p"], e.direction
    if line.kappa_range:
        row.kappa_worst, row.kappa_best = line.kappa_range
    if c.ceiling is not None:
        row.ceiling_items, row.ceiling_statistic = c.ceiling.n_items, c.ceiling.human_statistic or None
        row.ceiling, row.ceiling_low, row.ceiling_high = _split(c.ceiling.humans)
        row.judge_on_shared, row.judge_on_shared_low, row.judge_on_shared_high = _split(c.ceiling.judge)
        row.difference, row.difference_low, row.difference_high = _split(c.ceiling.difference)
        row.ceiling_verdict = c.ceiling.verdict
    rho = line.scores.get("score_answer")
    if rho is not None:
        row.spearman, row.mae = rho.spearman.value, rho.mae
    r = c.reliability
    if r is not None and not (c.kind and c.kind.scored):
        row.repeats = r.repeats
        if r.consistency is not None:
            row.flip_rate, row.flip_rate_low, row.flip_rate_high = _split(r.consistency.flip_rate)
            row.repeat_alpha, row.repeat_alpha_low, row.repeat_alpha_high = _split(r.consistency.alpha)
            row.unstable_items = len(r.unstable_items)
        if r.calibration is not None:
            row.calibration_items, row.ece = r.calibration.n, r.calibration.ece.value
            row.brier, row.brier_low, row.brier_high = _split(r.calibration.brier)
        if r.length is not None:
            row.length_bias, row.length_bias_low, row.length_bias_high = _split(r.length.estimate)
            row.length_bias_verdict = r.length.verdict
    return row


def rows_of(report: Report) -> list[tuple[Cell, Line, ReportRow]]:
    return [(c, line, report_row(c, line)) for c in report.cells for line in c.lines]


# -- output -------------------------------------------------------------------------------------------


def _fmt(value: float | None, digits: int = 2) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _with_ci(value: float | None, low: float | None, high: float | None) -> str:
    """A value with its interval. A statistic undefined on the observed table (e.g. kappa when
    both raters used one label) can still have an interval for its population value, which is
    defined: it is shown after the dash, as in the CSV and JSON."""
    ci = f"[{low:.2f}, {high:.2f}]" if low is not None else None
    if value is None:
        return f"— {ci}" if ci else "—"
    return f"{value:.2f} {ci}" if ci else f"{value:.2f} (no CI)"


def kappa_bar(value: float | None, ci: tuple[float, float] | None, width: int = 21) -> str:
    """κ and its CI on the -1…1 scale: ━ spans the CI, ● marks κ (none where κ is undefined on
    the table), ┊ marks 0."""
    if value is None and not ci:
        return " " * width
    pos = lambda v: int(round((max(-1.0, min(1.0, v)) + 1) / 2 * (width - 1)))  # noqa: E731
    chars = ["·"] * width
    chars[pos(0.0)] = "┊"
    if ci:
        for k in range(pos(ci[0]), pos(ci[1]) + 1):
            chars[k] = "━"
    if value is not None:
        chars[pos(value)] = "●"
    return "".join(chars)


def cell_notes(c: Cell, report: Report) -> list[str]:
    """What a reader must know about a cell beyond its lines: unparsed verdicts and how they
    were counted, intervals that could not be computed, the ceiling, ties, the alt-test."""
    notes = []
    mode = report.options.unparsed
    if c.unparsed:
        how = {"exclude": "left out", "as-negative": "counted as the negative label (C3's rule)",
               "as-disagreement": "counted as disagreeing with the person"}[mode]
        notes.append(f"{c.unparsed} of {c.judged} verdicts unparsed, {how}")
    if c.truncated:
        notes.append(f"{c.truncated} of the unparsed outputs were cut at the judge's token limit: judge again with a "
                     "higher --max-tokens")
    undefined: dict[str, list[str]] = defaultdict(list)
    for line in c.lines:
        if line.kappa_range and line.unparsed:
            worst, best = line.kappa_range
            notes.append(f"vs {line.versus}: {line.unparsed} labelled item(s) with an unparsed verdict: κ between "
                         f"{_fmt(worst)} (all wrong) and {_fmt(best)} (all right)")
        if line.stats and line.stats.kappa.value is not None and line.stats.kappa.ci is None:
            undefined[f"no κ interval: {line.stats.kappa.ci_reason or 'cannot be computed'}"].append(line.versus)
        elif line.stats and line.stats.kappa.value is None and line.stats.n:
            undefined[str(line.stats.kappa.reason)].append(line.versus)
    notes += [f"vs {', '.join(who)}: {why}" for why, who in undefined.items()]
    plans = [f"{line.versus} {line.more_items}" for line in c.lines if line.more_items]
    if plans:
        notes.append(f"more labels for a κ interval of ±{report.options.target_half_width} (80 % assurance): "
                     + ", ".join(plans))
    if c.errors:
        notes.append(f"{c.errors} judge errors (no output) not counted")
    ceiling = c.ceiling
    if ceiling is not None:
        if ceiling.humans.value is None or ceiling.judge.value is None:
            notes.append(f"human ceiling: {ceiling.humans.reason or ceiling.judge.reason}")
        else:
            diff = ceiling.difference
            notes.append(
                f"human ceiling on {ceiling.n_items} items labelled by {ceiling.annotators} people: "
                f"{ceiling.human_statistic} {_with_ci(*_split(ceiling.humans))}; the judge on the same items "
                f"κ {_with_ci(*_split(ceiling.judge))}; difference {_with_ci(*_split(diff))}"
                + (f": {ceiling.verdict}" if ceiling.verdict else f" ({diff.reason or diff.ci_reason})")
            )
    if c.ties:
        notes.append(f"{c.ties} item(s) tied between annotators have no {gold_name(report.options)} label")
    alt = c.alt_test
    if alt is not None and alt.ran:
        notes.append(
            f"alternative annotator test (ε = {alt.epsilon}): winning rate ω {alt.winning_rate:.2f}, advantage "
            f"probability ρ {alt.advantage_probability:.2f} over {alt.annotators} annotators: "
            f"{'passes' if alt.passed else 'does not pass'}"
            + (f"; left out: {', '.join(f'{a} ({why})' for a, why in alt.left_out.items())}" if alt.left_out else "")
        )
    elif alt is not None and c.lines and not (c.kind and c.kind.scored):
        notes.append(f"alternative annotator test not run: {alt.reason}")
    if c.reliability is not None:
        notes += reliability_notes(c.reliability)
    return notes


SHOWN_IDS = 20


def reliability_notes(r: JudgeReliability) -> list[str]:
    """The judge's consistency, calibration and bias probes in words (measured against the gold
    label: the adjudicator's, else the majority, else the only annotator's)."""
    notes = []
    if r.consistency is not None:
        alpha = r.consistency.alpha
        ids = ", ".join(map(str, r.unstable_items[:SHOWN_IDS])) + (" …" if len(r.unstable_items) > SHOWN_IDS else "")
        notes.append(
            f"consistency over {r.repeats} repeats on {r.consistency.items} items: flip rate "
            f"{_with_ci(*_split(r.consistency.flip_rate))}; α across repeats "
            + (_with_ci(*_split(alpha)) if alpha.value is not None else f"— ({alpha.reason})")
            + (f"; {len(r.unstable_items)} unstable item(s): {ids}" if r.unstable_items else "; no unstable item"))
    if r.calibration is not None and r.calibration.n:
        cal = r.calibration
        notes.append(f"calibration against people on {cal.n} items: ECE {cal.ece.value:.3f}, Brier "
                     f"{_with_ci(*_split(cal.brier))}")
    if r.length is not None:
        b = r.length.estimate
        notes.append(f"length bias on {r.length.n} items: " + (
            f"{b.value:+.2f} log-odds of a judge yes per sd of response length "
            f"[{b.ci[0]:+.2f}, {b.ci[1]:+.2f}]: {r.length.verdict}" if b.value is not None else r.length.verdict))
    for name, probe in r.systems.items():
        family = " (judge and system of one model family)" if r.same_family.get(name) else ""
        notes.append(f"system {name}{family} on {probe.n} items: judge minus people's yes rate "
                     f"{_with_ci(*_split(probe.estimate))}: {probe.verdict}")
    return notes


def cells_without_numbers(report: Report) -> list[str]:
    """Why some cells show no line, in words: nobody labelled their items yet, or every
    labelled item's verdict is unparsed (and `--unparsed exclude` leaves them out)."""
    unlabelled = [c for c in report.cells if not c.lines]
    unparsed = [c for c in report.cells if c.lines and not any(line.n for line in c.lines)]
    out = []
    if unlabelled:
        out.append(f"judged but no human labels yet ({len(unlabelled)}): "
                   + ", ".join(f"{c.task} {c.lang} ({c.judge})" for c in unlabelled))
    if unparsed:
        out.append(f"labelled, but every labelled item's verdict is unparsed ({len(unparsed)}; see --unparsed): "
                   + ", ".join(f"{c.task} {c.lang} ({c.judge}: {max(line.unparsed for line in c.lines)} items)"
                               for c in unparsed))
    return out


def render_table(report: Report, console, *, wide: bool = False) -> None:
    """The terminal report: per cell a heading, a compact table that fits 80 columns (the κ bar
    from 100), notes in words; `wide` adds a table of the judge's error rates."""
    from rich.padding import Padding
    from rich.text import Text


    console.print(Text(f"judge vs human, by {' × '.join(report.options.by)}; unparsed verdicts: {report.options.unparsed}",
                       style="bold"))
    with_bar = wide or console.width >= 100
    for c in report.cells:
        if not any(line.n for line in c.lines):
            continue
        console.print()
        console.print(Text(safe(f"{c.task} · {c.lang} · {c.judge}"), style="bold cyan"))
        headers = ["vs", "n", "agree", "κ [95% CI]"] + (["−1 ┊ 1"] if with_bar else []) + ["verdict"]
        body = []
        for line in c.lines:
            if not line.n:
                continue
            row = report_row(c, line)
            cells = [row.versus, str(row.n), _fmt(row.agreement), _with_ci(row.kappa, row.kappa_low, row.kappa_high)]
            if with_bar:
                ci = (row.kappa_low, row.kappa_high) if row.kappa_low is not None else None
                cells.append(kappa_bar(row.kappa, ci, 21 if wide or console.width >= 120 else 15))
            body.append([safe(v) for v in (*cells, row.verdict)])
        table = _fitted_table(headers, body)
        console.print(table)
        if wide:
            console.print(_details_table(c))
            reliability = _reliability_table(c)
            if reliability is not None:
                console.print(reliability)
        for note in cell_notes(c, report):
            console.print(Padding(Text(safe(note), style="dim"), (0, 0, 0, 2)), soft_wrap=False)
    for why in cells_without_numbers(report):
        console.print()
        console.print(Text(safe(why), style="dim"), soft_wrap=False)
    note = multiplicity_note(report)
    if note:
        console.print(Text(note, style="dim italic"), soft_wrap=False)


def _fitted_table(headers: list[str], body: list[list[str]]):
    """A borderless rich table whose columns are as wide as their widest cell (none is ever
    squeezed: a table that fits is never cut; the last column gives way first)."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    for k, name in enumerate(headers):
        widest = max([len(name), *(len(row[k]) for row in body)])
        table.add_column(name, no_wrap=True, overflow="ellipsis", min_width=widest if k < len(headers) - 1 else None,
                         justify="right" if name in ("n", "agree") else "left")
    for row in body:
        table.add_row(*[Text(v) for v in row])
    return table


LENIENCY_WORDS = {"judge more lenient": "lenient", "judge harsher": "harsher", "no evidence of a difference": "no evidence"}


def _details_table(c: Cell):

    body = []
    for line in c.lines:
        r = report_row(c, line)
        if not line.n or line.stats is None:
            continue
        prevalence = f"{r.prevalence_label} {r.prevalence:.0%}" if r.prevalence is not None else "—"
        leniency = "—" if r.leniency is None else LENIENCY_WORDS.get(r.leniency, r.leniency) + (
            "" if r.homogeneity_p is None else f" (p {r.homogeneity_p:.2f})")
        body.append([safe(v) for v in (
            r.versus, _with_ci(r.ac1, r.ac1_low, r.ac1_high), _with_ci(r.sensitivity, r.sensitivity_low, r.sensitivity_high),
            _with_ci(r.specificity, r.specificity_low, r.specificity_high), prevalence,
            f"{_fmt(r.bias_index)}/{_fmt(r.prevalence_index)}", leniency)])
    return _fitted_table(["vs", "AC1 [95% CI]", "sensitivity", "specificity", "prevalence", "BI/PI", "judge vs people"], body)


def _reliability_table(c: Cell):
    """--wide: the judge's consistency over repeats, calibration and length probe, one measure
    a row (narrow enough for 80 columns)."""
    r = c.reliability
    if r is None or not c.lines or (r.consistency is None and r.calibration is None and r.length is None):
        return None
    row = report_row(c, c.lines[0])
    body = [["repeats", str(row.repeats)]]
    if r.consistency is not None:
        body += [["flip rate", _with_ci(row.flip_rate, row.flip_rate_low, row.flip_rate_high)],
                 ["α across repeats", _with_ci(row.repeat_alpha, row.repeat_alpha_low, row.repeat_alpha_high)]]
    if r.calibration is not None and r.calibration.n:
        body += [["ECE", _fmt(row.ece, 3)], ["Brier", _with_ci(row.brier, row.brier_low, row.brier_high)]]
    if r.length is not None:
        body.append(["length bias (log-odds/sd)", _with_ci(row.length_bias, row.length_bias_low, row.length_bias_high)
                     if row.length_bias is not None else "cannot tell"])
    return _fitted_table(["judge reliability", "estimate [95% CI]"], body)


MARKDOWN_COLUMNS = [("system", "system"), ("task", "task"), ("lang", "lang"), ("judge", "judge"), ("vs", "versus"), ("n", "n"),
                    ("agree", "agreement"), ("κ [95% CI]", None), ("AC1", "ac1"), ("sensitivity", "sensitivity"),
                    ("specificity", "specificity"), ("unparsed", "unparsed"), ("verdict", "verdict")]



def render_markdown(report: Report) -> str:
    out = io.StringIO()
    out.write("# calibrate agreement report\n\n")
    out.write(f"Unparsed verdicts: {report.options.unparsed}. Intervals are 95 %.\n\n")
    out.write("| " + " | ".join(name for name, _ in MARKDOWN_COLUMNS) + " |\n|" + "---|" * len(MARKDOWN_COLUMNS) + "\n")
    for _c, _line, row in rows_of(report):
        values = []
        for _name, attr in MARKDOWN_COLUMNS:
            if attr is None:
                values.append(_with_ci(row.kappa, row.kappa_low, row.kappa_high))
            else:
                value = getattr(row, attr)
                values.append(_fmt(value) if isinstance(value, float) else value)
        out.write("| " + " | ".join(markdown_safe(v) for v in values) + " |\n")
    for c in report.cells:
        notes = cell_notes(c, report)
        if notes:
            out.write(f"\n**{markdown_safe(c.task)} {markdown_safe(c.lang)}, {markdown_safe(c.judge)}**\n\n")
            out.write("".join(f"- {markdown_safe(note)}\n" for note in notes))
        for line in c.lines:
            if line.stats and line.stats.n:
                out.write(f"\nConfusion matrix, {markdown_safe(c.task)} {markdown_safe(c.lang)}, {markdown_safe(c.judge)} (rows) vs {markdown_safe(line.versus)} (columns):\n\n")
                labels = line.stats.labels
                out.write("| | " + " | ".join(markdown_safe(label) for label in labels) + " |\n|---|" + "---|" * len(labels) + "\n")
                for label, counts in zip(labels, line.stats.table, strict=True):
                    out.write(f"| **{markdown_safe(label)}** | " + " | ".join(map(str, counts)) + " |\n")
    note = multiplicity_note(report)
    if note:
        out.write(f"\n_{markdown_safe(note)}_\n")
    return out.getvalue()


CSV_FIELDS = [f.name for f in fields(ReportRow)]




def render_csv(report: Report) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(CSV_FIELDS)
    for _c, _line, row in rows_of(report):
        writer.writerow([spreadsheet_safe(v) for v in asdict(row).values()])
    return out.getvalue()


def render_json(report: Report) -> str:
    return safe_json(report.as_dict())


# -- HTML ---------------------------------------------------------------------------------------------

_FONTS = ('system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", "Noto Sans CJK SC", "Noto Sans SC", '
          '"Source Han Sans SC", "PingFang SC", "Hiragino Sans GB", "Microsoft YaHei", "WenQuanYi Micro Hei", sans-serif')
_STYLE = f"""
body{{font-family:{_FONTS};margin:24px auto;max-width:1200px;padding:0 16px;color:#1b1b1b;line-height:1.4}}
h1{{font-size:22px}} h2{{font-size:16px;margin:28px 0 6px}} .muted{{color:#555;font-size:13px}}
table.forest{{border-collapse:collapse;width:100%;table-layout:fixed}}
table.forest th,table.forest td{{border-bottom:1px solid #e3e3e3;padding:4px 6px;font-size:13px;text-align:left;
  vertical-align:middle;overflow-wrap:anywhere}}
table.forest td.num{{text-align:right;font-variant-numeric:tabular-nums}}
table.cm{{border-collapse:collapse;font-size:12px;margin:6px 12px 6px 0;display:inline-table}}
table.cm td,table.cm th{{border:1px solid #ccc;padding:2px 6px;text-align:right}}
caption{{font-size:11px;color:#555;text-align:left}} details{{margin:4px 0 10px}} summary{{cursor:pointer;color:#0b5394}}
ul.notes{{margin:4px 0 0 18px;padding:0;font-size:13px;color:#333}}
.key span{{display:inline-block;margin-right:14px}}
.reliability{{display:flex;flex-wrap:wrap;align-items:flex-start;gap:16px;margin:8px 0}}
.reliability figure{{margin:0;max-width:260px}} .reliability figcaption{{font-size:11px}}
.reliability table.cm{{flex:1 1 480px;max-width:820px}}
"""
_PLOT_W = 260


def _x(v: float) -> float:
    return 8 + (max(-1.0, min(1.0, v)) + 1) / 2 * (_PLOT_W - 16)


def _forest(kappa: Estimate | None, ceiling: Estimate | None) -> str:
    """One forest-plot row: the judge's κ and interval (blue), the human ceiling and its
    interval on the same items (red, beneath), on −1…1. A statistic undefined on the table
    but with an interval for its population value gets the interval without a point."""
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
        if estimate.value is not None:
            parts.append(f'<circle cx="{_x(estimate.value):.1f}" cy="{y}" r="4" fill="{colour}">'
                         f'<title>{name} {estimate.value:.2f}</title></circle>')
    parts.append("</svg>")
    return "".join(parts)


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
                     f'{b["count"]} items, agreement {acc:.2f}, mean confidence {b["confidence"]:.2f}</title></rect>')
        parts.append(f'<circle cx="{x(b["confidence"]):.1f}" cy="{y(b["confidence"]):.1f}" r="2.5" fill="#c0392b"/>')
        parts.append(f'<text x="{(x0 + x1) / 2:.1f}" y="{y(acc) - 3:.1f}" font-size="9" text-anchor="middle">'
                     f'{b["count"]}</text>')
    parts.append(f'<line x1="{x(0)}" y1="{y(0)}" x2="{x(1)}" y2="{y(1)}" stroke="#555" stroke-dasharray="4,3"/>')
    parts.append(f'<text x="{x(0.5):.1f}" y="{height - 3}" font-size="11" text-anchor="middle">judge confidence</text>')
    parts.append(f'<text x="11" y="{y(0.5):.1f}" font-size="11" text-anchor="middle" '
                 f'transform="rotate(-90 11 {y(0.5):.1f})">agreement with people</text></svg>')
    return "".join(parts)


def _reliability_html(c: Cell) -> str:
    """A cell's reliability block: the diagram beside a table of consistency, calibration and
    bias probes, each with its interval and verdict in words."""
    r = c.reliability
    if r is None or not c.lines:
        return ""
    e = html.escape
    row = report_row(c, c.lines[0])
    rows = []
    if r.consistency is not None:
        rows.append(("flip rate", _with_ci(row.flip_rate, row.flip_rate_low, row.flip_rate_high),
                     f"{row.unstable_items} of {r.consistency.items} items changed verdict over {r.repeats} repeats"))
        alpha = r.consistency.alpha
        rows.append(("α across repeats", _with_ci(row.repeat_alpha, row.repeat_alpha_low, row.repeat_alpha_high),
                     alpha.reason or ""))
    if r.calibration is not None and r.calibration.n:
        rows.append(("ECE", _fmt(row.ece, 3), f"on {r.calibration.n} items with a confidence and a human label"))
        rows.append(("Brier", _with_ci(row.brier, row.brier_low, row.brier_high), "0 is perfect; 0.25 is a coin"))
    if r.length is not None:
        rows.append(("length bias", _with_ci(row.length_bias, row.length_bias_low, row.length_bias_high),
                     f"{r.length.verdict} (log-odds of a judge yes per sd of length, people's label held fixed)"))
    for name, probe in r.systems.items():
        family = " — judge and system of one model family" if r.same_family.get(name) else ""
        rows.append((f"system {name}", _with_ci(*_split(probe.estimate)), probe.verdict + family))
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


def _headline(c: Cell, options: ReportOptions) -> Line | None:
    """The line that speaks for a cell in the overview: against the gold label where there is
    one, else against its only annotator (None when the cell has no labelled line)."""
    lines = [line for line in c.lines if line.n and line.stats is not None]
    gold = [line for line in lines if line.versus == gold_name(options)]
    return gold[0] if gold else (lines[0] if len(lines) == 1 else None)


def render_html(report: Report) -> str:
    e = lambda value: html.escape(safe(value))  # noqa: E731
    sections = []
    for c in report.cells:
        lines = [line for line in c.lines if line.n]
        if not lines:
            continue
        rows = []
        for line in lines:
            r = report_row(c, line)
            kappa = line.stats.kappa if line.stats else None
            rows.append(
                f"<tr><td>{e(r.versus)}</td><td class='num'>{r.n}</td><td class='num'>{_fmt(r.agreement)}</td>"
                f"<td class='num'>{e(_with_ci(r.kappa, r.kappa_low, r.kappa_high))}</td>"
                f"<td>{_forest(kappa, c.ceiling.humans if c.ceiling else None)}</td>"
                f"<td class='num'>{e(_with_ci(r.ac1, r.ac1_low, r.ac1_high))}</td>"
                f"<td class='num'>{e(_with_ci(r.sensitivity, r.sensitivity_low, r.sensitivity_high))}</td>"
                f"<td class='num'>{e(_with_ci(r.specificity, r.specificity_low, r.specificity_high))}</td>"
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
            "<table class='forest'><colgroup><col style='width:11%'><col style='width:5%'><col style='width:6%'>"
            "<col style='width:13%'><col style='width:25%'><col style='width:13%'><col style='width:13%'>"
            "<col style='width:13%'><col style='width:11%'></colgroup>"
            "<tr><th>vs</th><th>n</th><th>agree</th><th>κ [95% CI]</th><th>κ on −1…1</th><th>AC1</th>"
            "<th>sensitivity</th><th>specificity</th><th>verdict</th></tr>"
            + "".join(rows) + "</table>"
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
            f"<td class='num'>{r.n}</td><td class='num'>{e(_with_ci(r.kappa, r.kappa_low, r.kappa_high))}</td>"
            f"<td>{_forest(line.stats.kappa if line.stats else None, c.ceiling.humans if c.ceiling else None)}</td>"
            f"<td class='num'>{e(_with_ci(*_split(c.ceiling.humans)) if c.ceiling else '—')}</td></tr>")
    overview = ("<h2>Overview: one line per cell</h2><table class='forest'><colgroup><col style='width:40%'>"
                "<col style='width:6%'><col style='width:16%'><col style='width:24%'><col style='width:14%'></colgroup>"
                "<tr><th>cell</th><th>n</th><th>κ [95% CI]</th><th>κ on −1…1</th><th>human ceiling</th></tr>"
                + "".join(summary) + "</table>") if summary else ""
    tail = "".join(f"<p class='muted'>{e(why)}</p>" for why in cells_without_numbers(report))
    note = multiplicity_note(report)
    guidance = ", ".join(f"{who} {value}" for who, value in EPSILON_GUIDANCE.items())
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>calibrate agreement report</title><style>{_STYLE}</style></head><body>"
        "<h1>Judge vs human agreement</h1>"
        f"<p class='muted key'><span style='color:#1f5fa8'>● judge κ with its 95 % interval</span>"
        f"<span style='color:#c0392b'>● human–human ceiling on the same items</span>"
        f"<span>dashed line: κ = 0</span></p>"
        f"<p class='muted'>Unparsed verdicts: {e(report.options.unparsed)}. Alternative annotator test ε guidance "
        f"(Calderon et al. 2025): {e(guidance)}.</p>"
        + overview + "".join(sections) + tail + (f"<p class='muted'>{e(note)}</p>" if note else "") + "</body></html>\n"
    )
