"""The figures of `calibrate scores`: per cell (system x task x language, or a system overall)
each judge's accuracy three ways, people's, the corrected accuracy, C3's final score, and the
rankings and judge-against-judge comparisons across cells."""

from __future__ import annotations

from dataclasses import dataclass, field

from calibrate.configurations import MixedConfigurations
from calibrate.model import CalibrateError, Estimate, counted
from calibrate.stats import correction, ranking

ALL = "(all)"
NO_SYSTEM = "(none)"
FINAL = "mean of judges"


class ScoresError(CalibrateError):
    """Scores that cannot be computed: no judged items with right/wrong verdicts."""


@dataclass
class Accuracy:
    """right / n, or no value when n is 0 or None (None: withheld, as over a row pooling a cell
    the judge did not judge)."""

    right: int | None
    n: int | None

    @property
    def value(self) -> float | None:
        return self.right / self.n if self.n else None

    def text(self) -> str:
        return f"{self.right}/{self.n} {self.value:.0%}" if self.n else "—"

    def as_dict(self) -> dict:
        return {"right": self.right, "n": self.n, "accuracy": self.value}


@dataclass
class Decided:
    """A row's items that people decide (C3's generation phenomena, no judge prompt) as its
    corrected figure counts them beside the judged items, so that it is over the same items as
    the row's accuracies: by their label, the unlabelled ones estimated from the labelled ones
    (a stratum of their own, `pooled_stratified_mean`'s `decided`), where the accuracies and
    C3's statistics count those wrong."""

    items: int
    right: int
    unlabelled: int

    @property
    def stratum(self) -> tuple[int, int, int]:
        """(labelled, right, unlabelled), as `pooled_stratified_mean` takes them."""
        return self.items - self.unlabelled, self.right, self.unlabelled

    def words(self) -> str:
        labelled = self.items - self.unlabelled
        if not labelled:
            how = ("none is labelled: their accuracy is taken as 1/2, with the prior's full uncertainty, where the "
                   "accuracies count them wrong")
        else:
            how = f"{self.right} of {labelled} right" + (
                f"; the {counted(self.unlabelled, 'unlabelled one')} estimated from those labels, where the accuracies "
                "count them wrong" if self.unlabelled else "")
        return f"the corrected figure counts the row's {counted(self.items, 'item')} people decide by their label ({how})"

    def as_dict(self) -> dict:
        return {"items": self.items, "right": self.right, "unlabelled": self.unlabelled}


@dataclass
class JudgeScores:
    """One judge's figures in one cell. `judged` counts the items this judge judged
    (`calibrate.model.judged`), `unparsed` those of them without a readable verdict, `errors`
    the items its judgment failed on (not judged): the accuracies count these as C3's statistics
    do (wrong by C3's rule and the parser's unparsed-wrong reading, left out of unparsed-left-out)
    and also count the cell's items that people decide (see the module docstring). In a
    row pooling cells of several benchmarks (C3 and SuperGLUE, say) they cover the cells of the
    benchmarks this judge judges there. `c3_rule` divides as C3's process_results.py does: by the
    items any judge shown has a record for, one this judge has none for counting wrong
    (`c3_no_record`), with the generation decisions its own result files held
    (`c3_own_decisions`), and is given over a pooled row where the others are withheld."""

    judge: str
    judged: int
    unparsed: int
    errors: int
    c3_rule: Accuracy | None  # None outside C3
    parser_unparsed_wrong: Accuracy
    parser_unparsed_left_out: Accuracy
    corrected: correction.Corrected  # stratified by the judge's verdict (correction.stratified_mean)
    rogan_gladen: correction.RoganGladen
    plan: correction.LabelPlan  # labels for the corrected interval to reach the target half-width
    ppi: correction.Corrected | None = None  # PPI++, kept in JSON for comparison (marked approximate)
    # over a row pooling cells: the cells of its benchmarks it has no verdicts in (its figures are then withheld),
    # and the row's items of the benchmarks it does not judge (its figures leave them out)
    without_verdicts: list[str] = field(default_factory=list)
    other_benchmarks: int = 0
    configurations: MixedConfigurations | None = None  # where its verdicts here come from several
    c3_no_record: int = 0  # items another judge shown has a record for and this one none: wrong by C3's rule
    # generation items its own result files decided otherwise than the label in force (FileDecision.differs), which
    # its C3 rule counts as its files have them
    c3_own_decisions: list[str] = field(default_factory=list)
    decided: Decided | None = None  # the row's items people decide, counted in the corrected figure

    def as_dict(self) -> dict:
        return {
            "judge": self.judge, "judged": self.judged, "unparsed": self.unparsed, "errors": self.errors,
            "configurations": self.configurations.as_dict() if self.configurations else None,
            "cells_without_verdicts": self.without_verdicts, "items_of_other_benchmarks": self.other_benchmarks,
            "c3_rule": self.c3_rule.as_dict() if self.c3_rule else None, "c3_rule_without_record": self.c3_no_record,
            "c3_rule_own_file_decisions": self.c3_own_decisions,
            "parser_unparsed_wrong": self.parser_unparsed_wrong.as_dict(),
            "parser_unparsed_left_out": self.parser_unparsed_left_out.as_dict(),
            "corrected": self.corrected.as_dict(), "corrected_ppi": self.ppi.as_dict() if self.ppi else None,
            "rogan_gladen": self.rogan_gladen.as_dict(),
            "more_labels_for_target": self.plan.more, "plan_reason": self.plan.reason,
            "people_decided": self.decided.as_dict() if self.decided else None,
        }


@dataclass
class Final:
    """C3's final score: the mean over its judges, raw (each judge's accuracy by C3's rule) and
    corrected (stratified by the judges' mean verdict, on the C3 items every one of them
    judged). Over several cells the corrected one needs every judge's verdicts in each
    (`without_verdicts` names the cells where one has none; it is then withheld); the raw one
    counts those items as C3's rule does."""

    judges: list[str]
    raw: float | None
    corrected: correction.Corrected
    without_verdicts: list[str] = field(default_factory=list)
    decided: Decided | None = None  # the row's C3 items people decide, counted in the corrected mean

    def as_dict(self) -> dict:
        return {"judges": self.judges, "raw": self.raw, "corrected": self.corrected.as_dict(),
                "cells_without_verdicts": self.without_verdicts,
                "people_decided": self.decided.as_dict() if self.decided else None}


@dataclass
class ScoreCell:
    """A system's items in one task and language, or in several pooled (ALL where `--by` or the
    overall line merges them): counts (`judged`: by any judge shown), people's accuracy, each
    judge's figures, C3's final score.
    `labelled` counts the items with a gold label; `tied` the items people labelled whose labels
    tie (no strict majority), left out of `labelled`, people's accuracy and the corrected ones:
    the two add up to `calibrate status`'s labelled count, with the labelled ones among `no_gold`:
    the judged or labelled items of a task scored against gold that have none (a test split's),
    neither right nor wrong, so left out of every accuracy (counted in `items`)."""

    system: str
    task: str
    lang: str
    items: int
    judged: int
    labelled: int
    people: Estimate
    tied: int = 0
    no_gold: int = 0
    judges: list[JudgeScores] = field(default_factory=list)
    final: Final | None = None

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.system, self.task, self.lang)

    def estimates(self) -> dict[str, correction.Corrected]:
        """The corrected estimates systems are ranked by: each judge's, and the final score."""
        out = {j.judge: j.corrected for j in self.judges}
        if self.final is not None:
            out[FINAL] = self.final.corrected
        return out

    def as_dict(self) -> dict:
        return {
            "system": self.system, "task": self.task, "lang": self.lang, "items": self.items, "judged": self.judged,
            "labelled": self.labelled, "tied": self.tied, "no_gold": self.no_gold, "people": self.people.as_dict(), "judges": [j.as_dict() for j in self.judges],
            "final": self.final.as_dict() if self.final else None,
        }


@dataclass
class JudgePair:
    """Two judges on the same items of one scope: agreement with each other, and which tracks
    people better (agreement of a with people minus agreement of b, paired over the items
    both judged and people labelled). `n` counts the items both judges gave a verdict on; the
    items both judged where one of them has an unparsed or error verdict are left out of both
    figures (as `calibrate report` leaves unparsed verdicts out by default), counted apart:
    `left_out_errors` where a judgment failed, `left_out_unparsed` where an output did not
    parse and none failed."""

    scope: str
    a: str
    b: str
    n: int
    kappa: Estimate
    n_labelled: int
    tracks_people: Estimate
    left_out_unparsed: int = 0
    left_out_errors: int = 0

    @property
    def left_out(self) -> int:
        return self.left_out_unparsed + self.left_out_errors

    def as_dict(self) -> dict:
        return {"scope": self.scope, "a": self.a, "b": self.b, "n": self.n, "left_out": self.left_out,
                "left_out_unparsed": self.left_out_unparsed, "left_out_errors": self.left_out_errors,
                "kappa": self.kappa.as_dict(),
                "n_labelled": self.n_labelled, "agreement_with_people_a_minus_b": self.tracks_people.as_dict()}


@dataclass
class Scores:
    by: tuple[str, ...]
    target: float
    cells: list[ScoreCell]
    rankings: list[tuple[str, ranking.Ranking]]
    judge_pairs: list[JudgePair]
    rule_differences: list[str]
    notes: list[str]

    def as_dict(self) -> dict:
        return {
            "by": list(self.by), "target_half_width": self.target, "cells": [c.as_dict() for c in self.cells],
            "rankings": [
                {"scope": scope, "order": r.order, "unranked": r.unranked,
                 "pairs": [{"a": p.a, "b": p.b, "difference": p.difference.as_dict(), "separated": p.separated}
                           for p in r.pairs]}
                for scope, r in self.rankings
            ],
            "judge_pairs": [p.as_dict() for p in self.judge_pairs],
            "why_the_c3_rule_differs": self.rule_differences, "notes": self.notes,
        }
