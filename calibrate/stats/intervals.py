"""Intervals shared by every statistic: the Wilson interval of a proportion, posterior draws of a
contingency table, resampled units, the equal-tailed interval from draws (undefined draws
counted), the Fisher z interval of a correlation-like statistic (with a given standard error,
or the jackknife's), and Krippendorff's per-unit coincidence matrices, which the unit bootstrap
reweights.

Each has one definition here; agreement, the human ceiling, reliability and corrected scores
call them, so an interval means the same thing in every report. The defaults (draws, seed, the
fewest units for a bootstrap) live here too.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from calibrate.model import Estimate

LEVEL = 0.95
DEFAULT_RESAMPLES = 4000
DEFAULT_SEED = 20251126
JEFFREYS = 0.5
MIN_INTERVAL_ITEMS = 10
"""Fewest items (units, labels) for any interval of the report, `scores` and `trust`; below it
the point estimate stands alone and FEWER_THAN_MIN says why. A bootstrap over n units has only
C(2n - 1, n) distinct resamples (35 at n = 4, 126 at n = 5, 92,378 at 10), so its percentile
interval is a handful of values, e.g. "[-0.25, -0.11]" from two items; the posterior, Wilson,
jackknife and Fisher z intervals were simulated from 10 items on (tests/bench/coverage.py,
score_coverage.py) and below it rest on a handful of values too (AC1's covered about 90 % at
the smallest simulated n)."""

FEWER_THAN_MIN = f"fewer than {MIN_INTERVAL_ITEMS} items: no interval (its coverage is not known to hold)"


@functools.cache
def normal_quantile(level: float = LEVEL) -> float:
    """z = Phi^-1((1 + level) / 2), the standard normal quantile of a two-sided `level`
    interval (1.959964... at 0.95)."""
    from scipy.special import ndtri

    return float(ndtri((1 + level) / 2))


def finite_or_none(x) -> float | None:
    """A statistic as a plain float, or None where it is undefined (NaN, inf or None)."""
    return float(x) if x is not None and np.isfinite(x) else None


# -- a proportion --------------------------------------------------------------------------------


def wilson_interval(successes: int, n: int, level: float = LEVEL) -> tuple[float, float] | None:
    """Wilson score interval for a binomial proportion:
    (x + z^2/2) / (n + z^2)  +-  z sqrt(n p (1 - p) + z^2/4) / (n + z^2),  p = x / n,
    clipped to [0, 1] (it lies there exactly; the clip removes rounding).
    Wilson, E. B. (1927). Probable inference, the law of succession, and statistical inference.
    JASA 22, 209-212; recommended by Brown, L. D., Cai, T. T., & DasGupta, A. (2001). Interval
    estimation for a binomial proportion. Statist. Sci. 16, 101-133. None when n = 0."""
    if n <= 0:
        return None
    z = normal_quantile(level)
    p = successes / n
    centre = (successes + z * z / 2) / (n + z * z)
    half = z * math.sqrt(n * p * (1 - p) + z * z / 4) / (n + z * z)
    return max(0.0, centre - half), min(1.0, centre + half)


def proportion(successes: int, n: int, level: float = LEVEL, *, none_reason: str = "no items") -> Estimate:
    """successes / n with its Wilson interval (`wilson_interval`) and the binomial standard
    error se = sqrt(p (1 - p) / n); with n = 0 no value, and `none_reason` says why; below
    MIN_INTERVAL_ITEMS no interval (`ci_reason`)."""
    if n <= 0:
        return Estimate(None, reason=none_reason)
    p = successes / n
    if n < MIN_INTERVAL_ITEMS:
        return Estimate(p, None, math.sqrt(p * (1 - p) / n), ci_reason=FEWER_THAN_MIN)
    return Estimate(p, wilson_interval(successes, n, level), math.sqrt(p * (1 - p) / n))


# -- draws and resamples -------------------------------------------------------------------------


def posterior_tables(table: np.ndarray, draws: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
                     prior: float = JEFFREYS) -> np.ndarray:
    """Draws of the population cell probabilities of a k x k table, (draws, k, k).

    With multinomial cell counts n_ij and a Dirichlet(prior, ..., prior) prior, the posterior of
    the cell probabilities is Dirichlet(n_ij + prior); prior = 1/2 is Jeffreys' prior for the
    multinomial (Jeffreys, H. (1946). An invariant form for the prior probability in estimation
    problems. Proc. R. Soc. A 186, 453-461; Gelman et al. (2013). Bayesian Data Analysis, 3rd
    ed., sec. 3.4). A draw is normalised independent Gamma(n_ij + prior, 1) variates, so the
    cost is O(draws * k^2) whatever n is.
    """
    rng = np.random.default_rng(seed)
    k = table.shape[-1]
    gammas = rng.gamma(np.asarray(table, dtype=float).ravel() + prior, size=(draws, k * k))
    return (gammas / gammas.sum(axis=1, keepdims=True)).reshape(draws, k, k)


def resample_units(rows: np.ndarray, resamples: int = DEFAULT_RESAMPLES,
                   seed: int = DEFAULT_SEED) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bootstrap resamples of units (units drawn with replacement; Efron, B., & Tibshirani,
    R. J. (1993). An Introduction to the Bootstrap, ch. 6), grouped by what the units hold.
    Units whose rows are equal are interchangeable, so drawing n units with replacement is
    drawing how many of the n come from each distinct row r: Multinomial(n, f_r / n), f_r its
    frequency. The cost is O(resamples x distinct rows) whatever n is. Returns one
    representative unit per distinct row, the frequencies f_r, and the (resamples, distinct
    rows) counts."""
    first, frequency = distinct_rows(np.asarray(rows).reshape(len(rows), -1))
    weights = np.random.default_rng(seed).multinomial(len(rows), frequency / len(rows), size=resamples)
    return first, frequency, weights


def distinct_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The index of the first occurrence and the frequency of each distinct row of `rows` (n x m),
    the distinct rows in lexicographic order: what `np.unique(rows, axis=0, return_index=True,
    return_counts=True)` gives. Rows of integers (or of integral floats) within bounds are sorted
    as one number each, their mixed-radix code (column j's value minus the column's least, in base
    of the columns' ranges, column 0 the most significant digit), which orders as the rows do; any
    other rows go to `np.unique` over rows."""
    n, m = rows.shape
    if n and m and rows.dtype.kind in "biuf":
        coded = rows.astype(np.int64) if rows.dtype.kind == "b" else rows
        low, high = coded.min(axis=0), coded.max(axis=0)
        integral = coded.dtype.kind != "f" or bool(  # integral floats whose differences are exact
            (np.abs(low) < 2**52).all() and (np.abs(high) < 2**52).all() and (coded == np.floor(coded)).all())
        if integral:
            spans = [int(h) - int(lo) + 1 for lo, h in zip(low.tolist(), high.tolist(), strict=True)]
            if math.prod(spans) < 2**62:
                places = np.array([math.prod(spans[j + 1:]) for j in range(m)], dtype=np.int64)
                codes = (coded - low).astype(np.int64) @ places
                _, first, frequency = np.unique(codes, return_index=True, return_counts=True)
                return first, frequency
    _, first, frequency = np.unique(rows, axis=0, return_index=True, return_counts=True)
    return first, frequency


def interval_from_draws(draws: np.ndarray, level: float = LEVEL) -> tuple[tuple[float, float] | None, float, str | None]:
    """Equal-tailed interval from resampled or posterior draws of a statistic: the
    (1 - level)/2 and (1 + level)/2 quantiles. Returns (ci, undefined_share, reason).

    Draws where the statistic is undefined (NaN) are counted. While their share is at most the
    tail probability (1 - level)/2 they are left out of the quantiles (the interval's promise
    then holds for the statistic given that it is defined) and the share is reported; above
    that the interval is not given, with the reason. A zero-width interval is not given either:
    it would claim certainty that the data cannot give.
    """
    defined = np.isfinite(draws)
    share = float(1 - defined.mean()) if draws.size else 1.0
    if share > (1 - level) / 2:
        return None, share, f"the statistic is undefined in {share:.0%} of the draws (one class only)"
    lo, hi = np.quantile(draws[defined], [(1 - level) / 2, (1 + level) / 2])
    if hi - lo <= 1e-12:
        return None, share, f"every draw gives {lo:.2f}: a zero-width interval says nothing"
    return (float(lo), float(hi)), share, None


def estimate_from_draws(value: float | None, draws: np.ndarray, **extra) -> Estimate:
    """An estimate with its posterior (or resampling) interval (`interval_from_draws`). At the
    edge of the parameter space (e.g. perfect agreement, kappa = 1) an equal-tailed posterior
    interval can stop short of the point estimate; it is then widened to include it, so no
    report prints an interval that excludes its own estimate (this can only raise coverage)."""
    ci, share, why = interval_from_draws(draws)
    if ci is not None and value is not None:
        ci = (min(ci[0], value), max(ci[1], value))
    return Estimate(value, ci, undefined_share=share, ci_reason=why, **extra)


# -- correlation-like statistics on the Fisher z scale ----------------------------------------------


def fisher_z_interval(value: float, se: float, quantile: float) -> tuple[float, float]:
    """tanh(atanh(value) -+ quantile x se): an interval for a statistic in (-1, 1) built on
    Fisher's z = atanh(r), where its sampling distribution is close to normal and its variance
    nearly free of the true value. Fisher, R. A. (1921). On the "probable error" of a
    coefficient of correlation deduced from a small sample. Metron 1, 3-32."""
    z = math.atanh(value)
    return math.tanh(z - quantile * se), math.tanh(z + quantile * se)


def jackknife_fisher_z(value: float | None, leave_one_out: np.ndarray,
                       level: float = LEVEL) -> tuple[tuple[float, float] | None, float | None, str | None]:
    """(interval, se, reason) for a statistic in (-1, 1) by the jackknife on the Fisher z scale:
    with z_(i) = atanh of the statistic on the n items without item i,
        SE = sqrt( (n - 1)/n sum_i (z_(i) - mean z)^2 ),
        interval tanh( atanh(value) -+ t_{n-1, (1+level)/2} SE ).
    Quenouille, M. H. (1956). Notes on bias in estimation. Biometrika 43, 353-360; Tukey, J. W.
    (1958). Bias and confidence in not-quite large samples. Ann. Math. Statist. 29, 614; Efron,
    B., & Tibshirani, R. J. (1993). An Introduction to the Bootstrap, ch. 11 (the jackknife
    estimate of standard error). No interval, with the reason, where the statistic or a
    leave-one-out value is undefined or at +-1 (z infinite), or where every leave-one-out value
    is the same (a zero standard error would claim certainty)."""
    from scipy.special import stdtrit

    n = len(leave_one_out)
    if value is None or not np.isfinite(value):
        return None, None, "the statistic is undefined"
    if abs(value) >= 1:
        return None, None, f"the statistic is {value:+.0f}: its Fisher z is infinite, so no interval is built on it"
    if not np.all(np.isfinite(leave_one_out)):
        return None, None, "leaving out one item makes the statistic undefined (one rater then has no spread)"
    if np.any(np.abs(leave_one_out) >= 1):
        return None, None, "leaving out one item gives a statistic of +-1: the jackknife on Fisher z is undefined"
    z = np.arctanh(leave_one_out)
    se = float(np.sqrt((n - 1) / n * ((z - z.mean()) ** 2).sum()))
    if se <= 1e-12:
        return None, None, "every leave-one-out value is the same: a zero-width interval says nothing"
    return fisher_z_interval(value, se, float(stdtrit(n - 1, (1 + level) / 2))), se, None


# -- units of several raters ---------------------------------------------------------------------


def coincidences(counts: np.ndarray) -> np.ndarray:
    """Per-unit coincidence matrices (units, V, V) from a units x values count table:
    o_u,ck = (n_uc n_uk - [c = k] n_uc) / (m_u - 1), m_u = sum_c n_uc; units with m_u < 2 give 0
    (they are not pairable). Summed over units they are the coincidence matrix of Krippendorff's
    alpha; weighted by resample counts, a unit bootstrap of it. Krippendorff, K. (2011).
    Computing Krippendorff's alpha-reliability. Annenberg School for Communication, University
    of Pennsylvania, section B."""
    counts = np.asarray(counts, dtype=float)
    m = counts.sum(axis=1)
    outer = counts[:, :, None] * counts[:, None, :] - counts[:, :, None] * np.eye(counts.shape[1])
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where((m >= 2)[:, None, None], outer / (m - 1)[:, None, None], 0.0)


def clipped_wald(theta: float, se: float, z: float, low: float, notes: list[str]) -> tuple[float, tuple, list[str]]:
    """An estimate of an accuracy (low 0) or of a difference of two (low -1) and its Wald
    interval theta +- z se, each clipped to [low, 1]: a large-sample estimate can fall outside
    (PPI++'s does); `notes` with one giving the estimate before, where it was clipped."""
    clip = lambda value: float(min(max(value, low), 1.0))  # noqa: E731
    notes = [*notes, f"clipped from {theta:.4f} to {clip(theta):g}"] if clip(theta) != theta else notes
    return clip(theta), (clip(theta - z * se), clip(theta + z * se)), notes
