"""Agreement on scored verdicts (a 0-100 rubric): how far the judge's scores follow a person's.

Rank and linear correlation, mean absolute error, weighted kappa on score bins and kappa on
pass/fail at a threshold (the two-rater statistics of `calibrate.stats.agreement` on the binned
scores). Scores outside 0-100, NaN or infinite raise a ValueError that names them and where.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from calibrate.model import Estimate
from calibrate.stats.agreement import TwoRaters, confusion, two_raters
from calibrate.stats.intervals import DEFAULT_RESAMPLES, DEFAULT_SEED, finite_or_none


@dataclass
class ScoreAgreement:
    n: int
    spearman: Estimate
    pearson: Estimate
    mae: float | None
    binned: TwoRaters | None
    pass_fail: TwoRaters | None
    threshold: float
    bin_width: float

    def as_dict(self) -> dict:
        return {
            "n": self.n, "spearman": self.spearman.as_dict(), "pearson": self.pearson.as_dict(), "mae": self.mae,
            "threshold": self.threshold, "bin_width": self.bin_width,
            "binned": self.binned.as_dict() if self.binned else None,
            "pass_fail": self.pass_fail.as_dict() if self.pass_fail else None,
        }


def _scores(values: Sequence[float], who: str) -> np.ndarray:
    """Scores as floats on 0-100, or a ValueError naming what is wrong and where."""
    try:
        x = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{who}'s scores must be numbers on 0-100: {error}") from None
    for bad, what in ((np.isnan(x), "NaN"), (np.isinf(x), "infinite"), (x < 0, "negative"), (x > 100, "above 100")):
        if bad.any():
            where = ", ".join(str(i) for i in np.flatnonzero(bad)[:5])
            raise ValueError(f"{who} has {int(bad.sum())} {what} score(s) (at positions {where}); scores must be on 0-100")
    return x


def score_agreement(
    a: Sequence[float], b: Sequence[float], *, threshold: float = 60.0, bin_width: float = 10.0,
    resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
) -> ScoreAgreement:
    """Scores on 0-100: Spearman's rho and Pearson's r (scipy), mean absolute error
    MAE = mean |a - b|, quadratic-weighted kappa on bins of `bin_width` (Cohen, J. (1968).
    Weighted kappa. Psychol. Bull. 70, 213-220), and kappa on pass/fail at `threshold`."""
    x, y = _scores(a, "rater A"), _scores(b, "rater B")
    if len(x) != len(y):
        raise ValueError(f"rater A has {len(x)} scores and rater B {len(y)}: they must be paired item by item")
    n = len(x)
    if n < 2:
        reason = "n < 2"
        return ScoreAgreement(n, Estimate(None, reason=reason), Estimate(None, reason=reason),
                              float(np.abs(x - y).mean()) if n else None, None, None, threshold, bin_width)

    def correlation(fn, name):
        if np.ptp(x) == 0 or np.ptp(y) == 0:
            return Estimate(None, reason=f"{name} is undefined when one rater gives a constant score")
        return Estimate(finite_or_none(fn(x, y)[0]))

    n_bins = int(math.ceil(100 / bin_width))
    bin_labels = [f"{int(k * bin_width)}-{int(min(100, (k + 1) * bin_width))}" for k in range(n_bins)]
    to_bin = lambda v: np.minimum((v // bin_width).astype(int), n_bins - 1)  # noqa: E731
    binned = two_raters(table=confusion(to_bin(x), to_bin(y), list(range(n_bins))), labels=bin_labels,
                        ordinal=True, resamples=resamples, seed=seed)
    passes = ["pass", "fail"]
    pass_fail = two_raters(table=confusion(np.where(x >= threshold, 0, 1), np.where(y >= threshold, 0, 1), [0, 1]),
                           labels=passes, resamples=resamples, seed=seed)
    return ScoreAgreement(n, correlation(stats.spearmanr, "Spearman's rho"), correlation(stats.pearsonr, "Pearson's r"),
                          float(np.abs(x - y).mean()), binned, pass_fail, threshold, bin_width)
