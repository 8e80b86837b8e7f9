"""The agreement report's data: how it is cut and measured (`ReportOptions`), its cells
(`AgreementCell`: a judge in a task x language cell, with a `Line` per annotator and one against
the gold label), and each line as plain named values (`ReportRow`), which every format is
written from. Building fills these (calibrate.report.build); rendering reads them
(calibrate.report.render, calibrate.report.html).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from calibrate.cells import unparsed_words
from calibrate.configurations import MixedConfigurations
from calibrate.kinds import VerdictKind
from calibrate.model import Estimate
from calibrate.names import CONSOLIDATED
from calibrate.reliability_cells import JudgeReliability
from calibrate.stats.agreement import (
    KAPPA_UNDEFINED,
    KAPPA_ZERO_BY_CONSTRUCTION,
    JudgeVsHuman,
    TwoRaters,
    kappa_band,
)
from calibrate.stats.alt_test import AltTest
from calibrate.stats.ceiling import Ceiling
from calibrate.stats.intervals import DEFAULT_RESAMPLES
from calibrate.stats.score_agreement import STATISTICS, ScoreAgreement, ScoreCeiling
from calibrate.stats.simulated import approximate_words


@dataclass(frozen=True)
class ReportOptions:
    """How to cut and measure.

    unparsed: "exclude" leaves unparsed verdicts out (counted); "as-negative" takes them as the
    kind's negative label, as C3's script does; "as-disagreement" counts each as disagreeing
    with the human (`calibrate.cells.unparsed_as`); where a mode does not apply to a cell's kind
    its unparsed verdicts are left out and the report says why. `epsilon` is the alternative
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


POPULATION_INTERVAL = "the interval is for κ in the population these items come from"
"""What κ's interval is where κ is undefined on the items (both raters used one label): the
posterior interval of the population's κ, which is defined (`two_raters`). The items narrow it
little, but it is part of what keeps κ's intervals at 95 %: at 20 items, prevalence 0.95 and
κ 0.6 (tests/test_agreement.py) about a fifth of the samples use one label, and without their
intervals the coverage would fall from about 98 % to about 76 %."""


@dataclass
class Line:
    """One comparison: a judge against one annotator (or the gold label)."""

    versus: str
    stats: TwoRaters | None = None
    scores: dict[str, ScoreAgreement] = field(default_factory=dict)
    more_items: int | None = None
    errors: JudgeVsHuman | None = None
    unparsed: int = 0  # labelled items whose verdict did not parse
    jury_ties: int = 0  # the jury's: labelled items its judges tie on (no verdict, left out of n; not unparsed)
    kappa_range: tuple[float | None, float | None] | None = None  # worst, best case for those

    @property
    def n(self) -> int:
        if self.stats:
            return self.stats.n
        return max((s.n for s in self.scores.values()), default=0)


@dataclass
class AgreementCell:
    """One judge in one cell: its judged items (`calibrate.model.judged`: a failed call is not),
    the unparsed among them and its failed verdicts (errors), a line per annotator (and one
    against the gold label), the human ceiling, the alternative annotator test, the judge's
    reliability figures, and the configurations its verdicts come from where several. The jury
    (`calibrate.reliability_cells.jury_data`) also has its judges, the judged items its judges
    tie on, and the items it leaves out as judged by one judge only (per tuple of the judges
    whose calls failed there)."""

    key: tuple[str, str]  # (task, lang); "*" where --by merged it
    judge: str
    kind: VerdictKind | None = None
    system: str | None = None  # the system under test, when --by cuts by system
    lines: list[Line] = field(default_factory=list)
    unparsed: int = 0
    truncated: int = 0  # of the unparsed: outputs cut at the judge's token limit
    errors: int = 0
    judged: int = 0
    labelled_errors: int = 0  # labelled items (the most of one annotator's) whose verdict is a failed call
    ceiling: Ceiling | None = None
    score_ceiling: ScoreCeiling | None = None  # a scored cell's human ceiling
    alt_test: AltTest | None = None
    ties: int = 0
    reliability: JudgeReliability | None = None  # consistency, calibration, bias probes
    configurations: MixedConfigurations | None = None  # where the judge's verdicts come from several
    jury_judges: tuple[str, ...] = ()
    jury_ties: int = 0
    one_judge_only: dict[tuple[str, ...], int] = field(default_factory=dict)

    @property
    def one_judge_items(self) -> int:
        """The items the jury leaves out, judged by one of its judges only."""
        return sum(self.one_judge_only.values())

    @property
    def task(self) -> str:
        """The task as shown: prefixed by the system when the report is cut by system."""
        return self.key[0] if self.system is None else f"{self.system or '(none)'} · {self.key[0]}"

    @property
    def lang(self) -> str:
        return self.key[1]

    def verdict_words(self, line: Line) -> str:
        """The line's finding in words: kappa's band where its interval can tell one (else that
        it cannot), or why kappa is 0 or undefined, and where it stands against the human
        ceiling measured on the same items (by the interval of the difference)."""
        if line.stats is None:
            return "" if line.scores else "not enough scored items"
        kappa = line.stats.kappa
        if kappa.value is None and kappa.ci is not None:
            return f"κ undefined on these items: {kappa.reason.removesuffix(KAPPA_UNDEFINED)}; {POPULATION_INTERVAL}"
        if kappa.value is None:
            return f"κ undefined: {kappa.reason}"
        if kappa.reason and kappa.reason.endswith(KAPPA_ZERO_BY_CONSTRUCTION):
            return f"κ is 0 by construction: {kappa.reason.removesuffix(KAPPA_ZERO_BY_CONSTRUCTION)}"
        words = kappa_band(kappa.value, kappa.ci)
        if self.ceiling and self.ceiling.verdict:
            words += f"; {self.ceiling.verdict.split()[0]} ceiling"  # below / within / above, by the paired interval
        elif self.ceiling is None:
            words += "; no ceiling yet"
        return words


@dataclass
class Report:
    """Every cell of the report, and the options it was built with."""

    cells: list[AgreementCell]
    options: ReportOptions

    def as_dict(self) -> dict:
        out = []
        for cell in self.cells:
            out.append({
                "system": cell.system, "task": cell.key[0], "lang": cell.lang, "judge": cell.judge,
                "kind": cell.kind.name if cell.kind else None,
                "judged": cell.judged, "unparsed": cell.unparsed,
                "unparsed_counted": unparsed_words(cell.kind, self.options.unparsed) if cell.unparsed else None,
                "errors": cell.errors, "gold_ties": cell.ties,
                "jury_judges": list(cell.jury_judges), "jury_ties": cell.jury_ties,
                "jury_one_judge_only": cell.one_judge_items,
                "jury_failed_calls": failed_calls(cell),
                "ceiling": cell.ceiling.as_dict() if cell.ceiling else
                cell.score_ceiling.as_dict() if cell.score_ceiling else None,
                "alternative_annotator_test": cell.alt_test.as_dict() if cell.alt_test else None,
                "reliability": cell.reliability.as_dict() if cell.reliability else None,
                "configurations": cell.configurations.as_dict() if cell.configurations else None,
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


def failed_calls(cell: AgreementCell) -> dict[str, int]:
    """Of the items the jury leaves out as judged by one judge only, on how many each other
    judge's call failed (the rest, those judges never judged)."""
    out: dict[str, int] = {}
    for failed, n in sorted(cell.one_judge_only.items()):
        for name in failed:
            out[name] = out.get(name, 0) + n
    return out


def gold_name(options: ReportOptions) -> str:
    """The name of the line against the gold label (`calibrate.gold`): "gold", as exports name a
    label several people decided (no annotator can take the name), or "gold (NAME)" with the
    adjudicator NAME."""
    return f"{CONSOLIDATED} ({options.gold_from})" if options.gold_from else CONSOLIDATED


def multiplicity_note(report: Report) -> str | None:
    """With many cells, some 95 % intervals miss by chance: say so, with the Bonferroni level
    for simultaneous statements (Dunn, O. J. (1961). Multiple comparisons among means. JASA 56,
    52-64)."""
    shown = sum(1 for c in report.cells for line in c.lines if line.n)
    if shown < 5:
        return None
    return (f"{shown} lines are shown: with 95 % intervals about 1 in 20 misses its true value by chance. "
            f"For statements about all of them at once, read each at the Bonferroni level {1 - 0.05 / shown:.4f}.")


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
    ac1_approximate: float | None = None
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
    jury_ties: int = 0  # the jury's: of the line's labelled items, those its judges tie on (left out of n)
    jury_one_judge_only: int = 0  # the jury's: of the cell's items, those it leaves out (judged by one judge only)
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
    ceiling_approximate: float | None = None  # the simulated coverage of an approximate interval of the ceiling's
    judge_on_shared_approximate: float | None = None
    difference_approximate: float | None = None
    gold_ties: int = 0
    more_items: int | None = None
    scores: str | None = None  # which score of a rubric line (score_answer, score_reasoning)
    spearman: float | None = None
    spearman_low: float | None = None
    spearman_high: float | None = None
    spearman_approximate: float | None = None
    pearson: float | None = None
    pearson_low: float | None = None
    pearson_high: float | None = None
    pearson_approximate: float | None = None
    kendall: float | None = None
    kendall_low: float | None = None
    kendall_high: float | None = None
    kendall_approximate: float | None = None
    mae: float | None = None
    mae_low: float | None = None
    mae_high: float | None = None
    mae_approximate: float | None = None
    weighted_kappa: float | None = None
    weighted_kappa_low: float | None = None
    weighted_kappa_high: float | None = None
    weighted_kappa_approximate: float | None = None
    pass_fail_kappa: float | None = None
    pass_fail_kappa_low: float | None = None
    pass_fail_kappa_high: float | None = None
    pass_fail_kappa_approximate: float | None = None
    score_note: str | None = None
    repeats: int | None = None
    repeat_temperature: str | None = None
    flip_rate: float | None = None
    flip_rate_low: float | None = None
    flip_rate_high: float | None = None
    repeat_alpha: float | None = None
    repeat_alpha_low: float | None = None
    repeat_alpha_high: float | None = None
    unstable_items: int | None = None
    calibration_items: int | None = None
    ece: float | None = None
    ece_note: str | None = None
    brier: float | None = None
    brier_low: float | None = None
    brier_high: float | None = None
    length_bias: float | None = None
    length_bias_low: float | None = None
    length_bias_high: float | None = None
    length_bias_verdict: str | None = None
    verdict: str = ""


def split_estimate(estimate: Estimate | None) -> tuple[float | None, float | None, float | None]:
    """An estimate as (value, low, high), None where missing."""
    if estimate is None:
        return None, None, None
    low, high = estimate.ci if estimate.ci else (None, None)
    return estimate.value, low, high


def undefined_words(estimate: Estimate) -> str:
    """Why `estimate` has no value, and what its interval is where it has one anyway (pass/fail
    κ of two raters who used one class: `POPULATION_INTERVAL`)."""
    return f"{estimate.reason}; {POPULATION_INTERVAL}" if estimate.ci else str(estimate.reason)


def score_note(scores: ScoreAgreement) -> str | None:
    """Why a score statistic has no value or no interval, and which intervals are approximate,
    in words ("Pearson: approximate: covers about 91 % here")."""
    notes = []
    for name in STATISTICS:
        e = scores.estimate(name)
        title = STATISTIC_NAMES[name]
        if e.value is None:
            notes.append(f"{title}: {undefined_words(e)}")
        elif e.ci is None:
            notes.append(f"{title}: no interval: {e.ci_reason}")
        elif e.approximate is not None:
            notes.append(f"{title}: {approximate_words(e.approximate)}")
    return "; ".join(notes) or None


STATISTIC_NAMES = {"spearman": "Spearman ρ", "pearson": "Pearson r", "kendall": "Kendall τb", "mae": "MAE",
                   "weighted_kappa": "weighted κ", "pass_fail_kappa": "pass/fail κ"}
"""How outputs name the score statistics."""


def report_row(c: AgreementCell, line: Line, dimension: str | None = None) -> ReportRow:
    """The line's named values; for a rubric line, those of one of its scores (`dimension`,
    by default the first), its ceiling columns the people's and the judge's Spearman's rho of
    that score (`ScoreCeiling`)."""
    row = ReportRow(c.system, c.key[0], c.lang, c.judge, line.versus, line.n, unparsed=line.unparsed, errors=c.errors,
                    jury_ties=line.jury_ties, jury_one_judge_only=c.one_judge_items, more_items=line.more_items,
                    gold_ties=c.ties, verdict=c.verdict_words(line) if line.n else "")
    if line.stats is not None and line.stats.n:
        s = line.stats
        row.agreement, row.agreement_low, row.agreement_high = split_estimate(s.agreement)
        row.kappa, row.kappa_low, row.kappa_high = split_estimate(s.kappa)
        row.kappa_note = (s.kappa.ci_reason or s.kappa.reason) if s.kappa.value is not None else (
            "; ".join(filter(None, (s.kappa.reason, s.kappa.ci_reason, POPULATION_INTERVAL if s.kappa.ci else None))))
        row.band = kappa_band(s.kappa.value, s.kappa.ci) if s.kappa.value is not None else None
        row.ac1, row.ac1_low, row.ac1_high = split_estimate(s.ac1)
        row.ac1_approximate = s.ac1.approximate
        row.pabak = s.pabak
        if s.prevalence:
            row.prevalence_label, row.prevalence = max(s.prevalence.items(), key=lambda kv: kv[1])
    if line.errors is not None:
        e = line.errors
        row.sensitivity, row.sensitivity_low, row.sensitivity_high = split_estimate(e.sensitivity)
        row.specificity, row.specificity_low, row.specificity_high = split_estimate(e.specificity)
        row.bias_index, row.prevalence_index = e.bias_index, e.prevalence_index
        row.homogeneity_test, row.homogeneity_p, row.leniency = e.homogeneity["test"], e.homogeneity["p"], e.direction
    if line.kappa_range:
        row.kappa_worst, row.kappa_best = line.kappa_range
    if c.ceiling is not None:
        row.ceiling_items, row.ceiling_statistic = c.ceiling.n_items, c.ceiling.human_statistic or None
        row.ceiling, row.ceiling_low, row.ceiling_high = split_estimate(c.ceiling.humans)
        row.judge_on_shared, row.judge_on_shared_low, row.judge_on_shared_high = split_estimate(c.ceiling.judge)
        row.difference, row.difference_low, row.difference_high = split_estimate(c.ceiling.difference)
        row.ceiling_verdict = c.ceiling.verdict
        row.ceiling_approximate, row.judge_on_shared_approximate, row.difference_approximate = (
            e.approximate for e in (c.ceiling.humans, c.ceiling.judge, c.ceiling.difference))
    if line.scores:
        row.scores = dimension or next(iter(line.scores))
        scores = line.scores[row.scores]
        for name in STATISTICS:
            estimate = scores.estimate(name)
            value, low, high = split_estimate(estimate)
            setattr(row, name, value)
            setattr(row, f"{name}_low", low)
            setattr(row, f"{name}_high", high)
            setattr(row, f"{name}_approximate", estimate.approximate)
        row.score_note = score_note(scores)
        if c.score_ceiling is not None and row.scores in c.score_ceiling.humans:  # the ceiling's Spearman of this score
            people, judge = (found[row.scores].spearman for found in (c.score_ceiling.humans, c.score_ceiling.judge))
            row.ceiling_items, row.ceiling_statistic = c.score_ceiling.n_items, STATISTIC_NAMES["spearman"]
            row.ceiling, row.ceiling_low, row.ceiling_high = split_estimate(people)
            row.judge_on_shared, row.judge_on_shared_low, row.judge_on_shared_high = split_estimate(judge)
            row.ceiling_approximate, row.judge_on_shared_approximate = people.approximate, judge.approximate
    r = c.reliability
    if r is not None and not (c.kind and c.kind.scored):
        row.repeats, row.repeat_temperature = r.repeats, r.temperatures
        if r.consistency is not None:
            row.flip_rate, row.flip_rate_low, row.flip_rate_high = split_estimate(r.consistency.flip_rate)
            row.repeat_alpha, row.repeat_alpha_low, row.repeat_alpha_high = split_estimate(r.consistency.alpha)
            row.unstable_items = len(r.unstable_items)
        if r.calibration is not None:
            row.calibration_items, row.ece = r.calibration.n, r.calibration.ece.value
            row.ece_note = r.calibration.ece.ci_reason
            row.brier, row.brier_low, row.brier_high = split_estimate(r.calibration.brier)
        if r.length is not None:
            row.length_bias, row.length_bias_low, row.length_bias_high = split_estimate(r.length.estimate)
            row.length_bias_verdict = r.length.verdict
    return row


def line_rows(c: AgreementCell, line: Line) -> list[ReportRow]:
    """The named values of a line: one row, or for a rubric line one per score it measures."""
    return [report_row(c, line, dimension) for dimension in line.scores] or [report_row(c, line)]


def rows_of(report: Report) -> list[tuple[AgreementCell, Line, ReportRow]]:
    """Every line of the report (a rubric line once per score) with its cell and its named values."""
    return [(c, line, row) for c in report.cells for line in c.lines for row in line_rows(c, line)]
