"""Systems ranked by their corrected accuracy (`calibrate.stats.correction`), with the interval
of every pairwise difference: what `calibrate scores` prints under "Ranking of systems"."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from calibrate.model import Estimate
from calibrate.stats.correction import Corrected
from calibrate.stats.intervals import DEFAULT_SEED, normal_quantile


@dataclass
class PairDifference:
    """Corrected accuracy of system `a` minus that of `b` (a ranked above b)."""

    a: str
    b: str
    difference: Estimate
    separated: bool  # the interval excludes 0


@dataclass
class Ranking:
    """Systems by corrected accuracy, highest first, with every pairwise difference."""

    order: list[str]
    pairs: list[PairDifference]
    unranked: dict[str, str]  # system -> why it has no corrected value



DIFFERENCE_DRAWS = 20_000
"""Draws from each cell's posterior for `difference` (Monte-Carlo error of a 95 % limit about 0.002)."""


def difference(a: Corrected, b: Corrected, level: float = 0.95) -> Estimate:
    """Difference of two independent cells' corrected accuracies, a - b.

    Stratified estimates (`stratified_mean`, which keep their posterior): the posterior of
    theta_a - theta_b for independent cells is the convolution of the two posteriors; the
    interval is its equal-tailed quantiles, from DIFFERENCE_DRAWS draws of each (fixed seed, so
    the same data give the same interval), widened to contain a - b; se its sd. It keeps the
    skew of accuracies near 0 or 1 that a normal interval would lose at 20 labels. Otherwise
    (PPI++): se = sqrt(se_a^2 + se_b^2), interval (a - b) +- z se: variances of independent
    estimates add. When the two systems answered the same items, the estimates share item
    difficulty and are usually positively correlated, so either interval is then conservative;
    `correction.ppi_paired_difference` uses the pairing instead.
    """
    if a.value is None or b.value is None:
        return Estimate(None, reason=a.reason if a.value is None else b.reason)
    value = a.value - b.value
    if a.posterior is not None and b.posterior is not None:
        rng = np.random.default_rng(DEFAULT_SEED)
        draws = (rng.choice(a.posterior[0], DIFFERENCE_DRAWS, p=a.posterior[1])
                 - rng.choice(b.posterior[0], DIFFERENCE_DRAWS, p=b.posterior[1]))
        low, high = np.quantile(draws, [(1 - level) / 2, (1 + level) / 2])
        return Estimate(value, (min(float(low), value), max(float(high), value)), float(draws.std()))
    se = float(np.hypot(a.se, b.se))
    z = normal_quantile(level)
    return Estimate(value, (value - z * se, value + z * se), se)


def rank(cells: Mapping[str, Corrected], level: float = 0.95) -> Ranking:
    """Systems by corrected accuracy (highest first) and, for every pair, the `difference`
    interval and whether it excludes 0. Each interval is at `level` on its own: with k systems
    there are k(k-1)/2 of them, so pass level = 1 - 0.05 / (k(k-1)/2) for Bonferroni-adjusted
    separations (Dunn, O. J. (1961). Multiple comparisons among means. J. Am. Stat. Assoc. 56,
    52-64)."""
    scored = {name: cell for name, cell in cells.items() if cell.value is not None}
    unranked = {name: cell.reason or "no value" for name, cell in cells.items() if cell.value is None}
    order = sorted(scored, key=lambda name: -scored[name].value)
    pairs = []
    for a, b in combinations(order, 2):
        diff = difference(scored[a], scored[b], level)
        pairs.append(PairDifference(a, b, diff, diff.ci is not None and (diff.ci[0] > 0 or diff.ci[1] < 0)))
    return Ranking(order, pairs, unranked)
