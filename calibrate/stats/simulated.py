"""Simulated coverage: where a 95 % interval was measured, by simulation, to cover its true value
less often than promised.

The benches in tests/bench/ simulate each interval over a grid of settings and write the
settings where it covered less than PROMISED_COVERAGE, with the figure, to a JSON table beside
this module. The statistics look up the setting nearest their data and carry the figure as
`approximate`, so every output can say "approximate: covers about 91 % here" instead of
promising 95 %. One home for the tables, their grids, the lookups and those words.
"""

from __future__ import annotations

import json
import math
from functools import cache
from pathlib import Path

PROMISED_COVERAGE = 0.93
"""A 95 % interval simulated to cover less than this near a setting is marked approximate."""

COVERAGE_GRID = {
    "accuracy": (0.3, 0.5, 0.8, 0.97),
    "labels": (20, 50, 100, 200),
    "judge": ((0.9, 0.7), (0.95, 0.95), (0.7, 0.9)),
    "items": (300, 1000),
}
"""The settings tests/bench/correction_coverage.py simulates: true accuracy, random labels, the
judge's (sensitivity, specificity), items in the cell."""

COVERAGE_TABLE = Path(__file__).with_name("correction_coverage.json")
"""Per corrected-score method (stratified, stratified_judges, ppi, ppi_finite, rogan_gladen), the
settings of COVERAGE_GRID where its 95 % interval covered the mean over the items in less than
PROMISED_COVERAGE of the simulated datasets that got an interval, with that share: rows
[accuracy, labels, Se, Sp, items, coverage] ("datasets": how many per setting). Written by
`python tests/bench/correction_coverage.py --write` (and `--judges --write` for
stratified_judges: two judges of one kind, Se and Sp of each)."""

SCORE_COVERAGE_TABLE = Path(__file__).with_name("score_coverage.json")
"""Per score statistic (calibrate.stats.score_agreement.STATISTICS), the settings (shape, items)
where its 95 % interval covered the population value in less than PROMISED_COVERAGE of the
simulated samples of that shape and size that got an interval, with that share: rows [shape,
items, coverage]. Written by `python tests/bench/score_coverage.py --shipped --write`. Its
"clustered" part, the same for pairs that share items (2-4 people per item: the judge against
each, the people against each other; the intervals that resample items), the lower of the
judge's and the people's figure per setting, is written by `python tests/bench/score_coverage.py
--clustered --write`."""


APPROXIMATE_MARK = "~"
"""How every output marks an interval whose simulated coverage near this setting is below
PROMISED_COVERAGE, after it (a note gives the figure, in `approximate_words`)."""


def approximate_words(coverage: float) -> str:
    """How every output marks an approximate interval: "approximate: covers about 91 % here"."""
    return f"approximate: {coverage_words(coverage)}"


def coverage_words(coverage: float) -> str:
    """An approximate interval's simulated coverage: "covers about 91 % here" (to a tenth where
    whole percents would round up to PROMISED_COVERAGE: "92.7 %", not "93 %")."""
    percent = coverage * 100
    shown = f"{percent:.1f}" if round(percent) >= PROMISED_COVERAGE * 100 else f"{round(percent)}"
    return f"covers about {shown} % here"


@cache
def _under_coverage() -> dict[str, dict[tuple, float]]:
    below = json.loads(COVERAGE_TABLE.read_text(encoding="utf-8"))["below"]
    return {method: {(a, n, (se, sp), items): c for a, n, se, sp, items, c in rows} for method, rows in below.items()}


def simulated_coverage(method: str, accuracy: float, n_labelled: int, sensitivity: float | None,
                       specificity: float | None, total: int) -> float | None:
    """The simulated coverage of a corrected-score `method`'s 95 % interval at the nearest setting
    of COVERAGE_GRID when it is below PROMISED_COVERAGE (COVERAGE_TABLE), else None. Nearest:
    accuracy by absolute difference, labels and items on a log scale, the judge by Euclidean
    distance in (Se, Sp); when the labels lack a class (Se or Sp unknown), the lowest figure over
    the judges. Beyond the grid (fewer than 20 or more than 200 labels) the figure of its edge
    stands in."""
    grid = COVERAGE_GRID
    acc = min(grid["accuracy"], key=lambda a: abs(a - accuracy))
    labels = min(grid["labels"], key=lambda m: abs(math.log(m / max(n_labelled, 1))))
    items = min(grid["items"], key=lambda m: abs(math.log(m / max(total, 1))))
    judges = grid["judge"]
    if sensitivity is not None and specificity is not None:
        judges = [min(judges, key=lambda j: math.hypot(j[0] - sensitivity, j[1] - specificity))]
    rows = _under_coverage().get(method, {})
    figures = [rows.get((acc, labels, judge, items)) for judge in judges]
    return min((x for x in figures if x is not None), default=None)


@cache
def _under_score_coverage(clustered: bool) -> dict:
    table = json.loads(SCORE_COVERAGE_TABLE.read_text(encoding="utf-8"))
    table = table["clustered"] if clustered else table
    return {"items": tuple(table["grid"]["items"]),
            "below": {name: {(shape, n): c for shape, n, c in rows} for name, rows in table["below"].items()}}


def simulated_score_coverage(statistic: str, n: int, shape: str, *, clustered: bool = False) -> float | None:
    """The simulated coverage of a score `statistic`'s 95 % interval for samples of this `shape`
    at the simulated number of items nearest `n` (on a log scale; beyond the grid its edge stands
    in) when it is below PROMISED_COVERAGE (SCORE_COVERAGE_TABLE; its "clustered" part where an
    item gives several pairs), else None."""
    table = _under_score_coverage(clustered)
    nearest = min(table["items"], key=lambda m: abs(math.log(m / max(n, 1))))
    return table["below"].get(statistic, {}).get((shape, nearest))
