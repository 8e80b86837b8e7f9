"""Agreement on scored verdicts (a 0-100 rubric): how far the judge's scores follow a person's,
and the human ceiling of scores: how far people's follow each other's on the items several of
them scored, beside the judge's on the same items (`score_ceiling`).

Rank and linear correlation (Spearman, Pearson, Kendall's tau-b), mean absolute error,
quadratic weighted kappa on score bins and kappa on pass/fail at a threshold, each with a 95 %
interval whose coverage tests/bench/score_coverage.py simulates, or the reason there is none.
Where that simulation found the interval covering less than 93 % in data like the sample's
(same shape, nearest size), `approximate` carries the simulated figure
(`calibrate.stats.simulated.simulated_score_coverage`, its table written by
`python tests/bench/score_coverage.py --shipped --write`). Scores outside 0-100, NaN or
infinite raise a ValueError that names them and where.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace

import numpy as np

from calibrate.model import Estimate, counted
from calibrate.stats.agreement import TwoRaters, confusion, two_raters
from calibrate.stats.intervals import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    FEWER_THAN_MIN,
    LEVEL,
    MIN_INTERVAL_ITEMS,
    finite_or_none,
    fisher_z_interval,
    jackknife_fisher_z,
    normal_quantile,
)
from calibrate.stats.simulated import simulated_score_coverage

STATISTICS = ("spearman", "pearson", "kendall", "mae", "weighted_kappa", "pass_fail_kappa")
"""The score statistics in the order every output lists them."""

SKEWNESS_LIMIT = 1.0
PASS_SHARE_LIMIT = 0.8
"""A sample is "skewed" when the skewness of its scores (both raters pooled) is at least
SKEWNESS_LIMIT in size, or more than PASS_SHARE_LIMIT of them fall on one side of the pass
threshold (most responses pass, or most fail): the shape where tests/bench/score_coverage.py
found Pearson's and the kappas' intervals short. Otherwise "symmetric"."""


@dataclass
class ScoreAgreement:
    """How one rater's 0-100 scores follow another's on the same n items; `shape` is how the
    scores are spread ("symmetric" or "skewed", see SKEWNESS_LIMIT), the setting the simulated
    coverage was looked up for."""

    n: int
    spearman: Estimate
    pearson: Estimate
    kendall: Estimate
    mae: Estimate
    weighted_kappa: Estimate
    pass_fail: TwoRaters | None
    threshold: float
    bin_width: float
    shape: str | None = None

    def estimate(self, name: str) -> Estimate:
        """One of STATISTICS by name (pass_fail_kappa: the kappa of `pass_fail`)."""
        if name == "pass_fail_kappa":
            return self.pass_fail.kappa if self.pass_fail else Estimate(None, reason="no items")
        return getattr(self, name)

    def as_dict(self) -> dict:
        return {
            "n": self.n, **{name: self.estimate(name).as_dict() for name in STATISTICS},
            "threshold": self.threshold, "bin_width": self.bin_width, "shape": self.shape,
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
            raise ValueError(f"{who} has {counted(int(bad.sum()), f'{what} score')} (at positions {where}); scores must be on 0-100")
    return x


# -- leave-one-out values, O(n) or O(n + distinct values^2) --------------------------------------


def pearson_leave_one_out(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson's r on the n items without item i, for every i, from the sums of the centred
    scores (O(n)); NaN where a leave-one-out sample has no spread."""
    x, y = x - x.mean(), y - y.mean()
    m = len(x) - 1
    sx, sy = x.sum() - x, y.sum() - y
    sxx, syy, sxy = (x * x).sum() - x * x, (y * y).sum() - y * y, (x * y).sum() - x * y
    with np.errstate(divide="ignore", invalid="ignore"):
        vx, vy = sxx - sx * sx / m, syy - sy * sy / m
        r = (sxy - sx * sy / m) / np.sqrt(vx * vy)
    return np.where((vx > 1e-9 * max(sxx.max(), 1)) & (vy > 1e-9 * max(syy.max(), 1)), r, np.nan)


CONCORDANCE_TABLE_CELLS = 4_000_000
"""Largest table of distinct (x, y) values `_signed_concordance` builds (32 MB); beyond it, it
compares items pairwise in blocks."""


def _signed_concordance(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """s_i = sum_j sgn(x_i - x_j) sgn(y_i - y_j) for every item i: its concordant minus
    discordant pairs. From the table of distinct (x, y) values and its 2-d cumulative sums
    (O(n + Vx Vy)) when that table is small, else row by row in blocks (O(n^2))."""
    xs, xi = np.unique(x, return_inverse=True)
    ys, yi = np.unique(y, return_inverse=True)
    n = len(x)
    if len(xs) * len(ys) <= CONCORDANCE_TABLE_CELLS:
        table = np.zeros((len(xs) + 1, len(ys) + 1))
        np.add.at(table, (xi + 1, yi + 1), 1)
        cum = table.cumsum(0).cumsum(1)  # cum[a, b] = items with x rank < a and y rank < b
        below_x, below_y = cum[xi, -1], cum[-1, yi]
        upto_x, upto_y = cum[xi + 1, -1], cum[-1, yi + 1]
        low_low = cum[xi, yi]
        low_high = below_x - cum[xi, yi + 1]
        high_low = below_y - cum[xi + 1, yi]
        high_high = n - upto_x - upto_y + cum[xi + 1, yi + 1]
        return low_low + high_high - low_high - high_low
    out = np.empty(n)
    step = max(1, 2_000_000 // n)
    for start in range(0, n, step):
        block = slice(start, start + step)
        out[block] = (np.sign(x[block, None] - x[None, :]) * np.sign(y[block, None] - y[None, :])).sum(1)
    return out


def kendall_leave_one_out(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall's tau-b on the n items without item i, for every i:
        tau_b(i) = (S - s_i) / sqrt( (U_x - (n - t_x(i))) (U_y - (n - t_y(i))) ),
    S = sum_{j<k} sgn(x_j - x_k) sgn(y_j - y_k), s_i item i's share of it, U_x the pairs untied
    in x, t_x(i) how many items share item i's x (itself included). NaN where a sample has no
    pair untied in x or in y."""
    n = len(x)
    s = _signed_concordance(x, y)
    untied = []
    for v in (x, y):
        _, inverse, counts = np.unique(v, return_inverse=True, return_counts=True)
        pairs = n * (n - 1) / 2 - (counts * (counts - 1) / 2).sum()
        untied.append(pairs - (n - counts[inverse]))
    with np.errstate(divide="ignore", invalid="ignore"):
        tau = (s.sum() / 2 - s) / np.sqrt(untied[0] * untied[1])
    return np.where((untied[0] > 0) & (untied[1] > 0), tau, np.nan)


def quadratic_kappa(a: np.ndarray, b: np.ndarray) -> float | None:
    """Quadratic weighted kappa of two raters' ordinal codes:
        kappa_w = 1 - mean (a - b)^2 / ( mean a^2 + mean b^2 - 2 mean a mean b ),
    which is 1 - sum w_ij p_ij / sum w_ij p_i. p_.j with w_ij = (i - j)^2 (the denominator is the
    disagreement expected from the margins). Cohen, J. (1968). Weighted kappa. Psychol. Bull.
    70, 213-220; Fleiss, J. L., & Cohen, J. (1973). The equivalence of weighted kappa and the
    intraclass correlation coefficient. Educ. Psychol. Meas. 33, 613-619. None where the
    expected disagreement is 0 (both raters always in one and the same bin)."""
    expected = (a * a).mean() + (b * b).mean() - 2 * a.mean() * b.mean()
    return None if expected <= 1e-12 else float(1 - ((a - b) ** 2).mean() / expected)


def quadratic_kappa_leave_one_out(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """`quadratic_kappa` on the n items without item i, for every i (O(n), from the sums);
    NaN where it is undefined."""
    m = len(a) - 1
    sa, sb = a.sum() - a, b.sum() - b
    saa, sbb, sdd = (a * a).sum() - a * a, (b * b).sum() - b * b, ((a - b) ** 2).sum() - (a - b) ** 2
    expected = saa / m + sbb / m - 2 * sa * sb / m**2
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(expected > 1e-12, 1 - sdd / m / expected, np.nan)


# -- the shape of a sample and the simulated coverage --------------------------------------------


def score_shape(x: np.ndarray, y: np.ndarray, threshold: float) -> str:
    """"skewed" or "symmetric" (see SKEWNESS_LIMIT) for the two raters' scores pooled."""
    from scipy import stats

    pooled = np.concatenate([x, y])
    passing = float((pooled >= threshold).mean())
    skew = float(stats.skew(pooled)) if np.ptp(pooled) > 0 else 0.0
    lopsided = abs(skew) >= SKEWNESS_LIMIT or not 1 - PASS_SHARE_LIMIT <= passing <= PASS_SHARE_LIMIT
    return "skewed" if lopsided else "symmetric"


# -- the statistics ------------------------------------------------------------------------------


ROUNDING = 1e-12
"""A correlation within ROUNDING of +-1 is +-1: the floating point of tied ranks leaves
0.9999999999999999 where the ranks agree, whose Fisher z interval would be [1.00, 1.00]."""


def _correlation_value(value: float) -> float | None:
    """A correlation as computed (None where not finite), +-1 where it is that but for rounding."""
    value = finite_or_none(value)
    return math.copysign(1.0, value) if value is not None and abs(abs(value) - 1) < ROUNDING else value


def _correlation(x: np.ndarray, y: np.ndarray, name: str) -> Estimate | None:
    """None when the correlation is defined, else an Estimate saying why not."""
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return Estimate(None, reason=f"{name} is undefined when one rater gives a constant score")
    return None


def spearman(x: np.ndarray, y: np.ndarray, level: float = LEVEL) -> Estimate:
    """Spearman's rho (scipy.stats.spearmanr: Pearson's r of the mid-ranks) with the interval
    tanh(atanh(rho) -+ z SE) on Fisher's z, SE = sqrt((1 + rho^2/2) / (n - 3)). Bonett, D. G.,
    & Wright, T. A. (2000). Sample size requirements for estimating Pearson, Kendall and
    Spearman correlations. Psychometrika 65, 23-28. Simulated coverage 93.0-96.1 % from 10 items
    (tests/bench/score_coverage.py --shipped, 2000 samples per setting)."""
    from scipy import stats

    undefined = _correlation(x, y, "Spearman's rho")
    if undefined:
        return undefined
    rho = _correlation_value(stats.spearmanr(x, y)[0])
    out = Estimate(rho)
    n = len(x)
    if n < MIN_INTERVAL_ITEMS:
        out.ci_reason = FEWER_THAN_MIN
    elif rho is None or abs(rho) >= 1:
        out.ci_reason = "rho is ±1: its Fisher z is infinite, so no interval is built on it"
    else:
        out.se = math.sqrt((1 + rho * rho / 2) / (n - 3))
        out.ci = fisher_z_interval(rho, out.se, normal_quantile(level))
    return out


def _jackknifed(value: float | None, leave_one_out, n: int, level: float) -> Estimate:
    out = Estimate(value)
    if n < MIN_INTERVAL_ITEMS:
        out.ci_reason = FEWER_THAN_MIN
        return out
    out.ci, out.se, out.ci_reason = jackknife_fisher_z(value, leave_one_out(), level)
    return out


def pearson(x: np.ndarray, y: np.ndarray, level: float = LEVEL) -> Estimate:
    """Pearson's r (scipy.stats.pearsonr) with the jackknife interval on Fisher's z and a t
    quantile (`jackknife_fisher_z`): unlike the textbook SE 1/sqrt(n - 3), which assumes normal
    scores, it follows skewed scores (tests/bench/score_coverage.py: 94.7-95.8 % on symmetric
    scores, 91.4-94.0 % on scores piled up at the ceiling, where 1/sqrt(n - 3) gave 83-90 %)."""
    from scipy import stats

    return _correlation(x, y, "Pearson's r") or _jackknifed(
        _correlation_value(stats.pearsonr(x, y)[0]), lambda: pearson_leave_one_out(x, y), len(x), level)


def kendall(x: np.ndarray, y: np.ndarray, level: float = LEVEL) -> Estimate:
    """Kendall's tau-b (scipy.stats.kendalltau, variant b: ties counted in both margins;
    Kendall, M. G. (1945). The treatment of ties in ranking problems. Biometrika 33, 239-251)
    with the jackknife interval on Fisher's z (`jackknife_fisher_z`, leave-one-out values from
    `kendall_leave_one_out`). Simulated coverage 94.8-99.1 % from 10 items, where Fieller's SE
    sqrt(0.437 / (n - 4)) fell to 89 % with tied scores (tests/bench/score_coverage.py)."""
    from scipy import stats

    return _correlation(x, y, "Kendall's tau") or _jackknifed(
        _correlation_value(stats.kendalltau(x, y, variant="b")[0]), lambda: kendall_leave_one_out(x, y), len(x), level)


def mean_absolute_error(x: np.ndarray, y: np.ndarray, level: float = LEVEL) -> Estimate:
    """MAE = mean |x - y| with a t interval on the log scale (delta method: the SE of log MAE is
    s_d / (sqrt(n) MAE), s_d the sample sd of |x - y|):
        MAE x exp( -+ t_{n-1, (1+level)/2} s_d / (sqrt(n) MAE) ),
    which stays above 0 and follows the right skew of a mean of absolute values (simulated
    coverage 94.7-95.7 % from 10 items, tests/bench/score_coverage.py; the plain t interval fell
    to 91 %). No interval when MAE is 0 (every pair equal) or every |x - y| is the same."""
    from scipy import stats

    d = np.abs(x - y)
    n = len(d)
    out = Estimate(float(d.mean()) if n else None, reason=None if n else "no items")
    if not n:
        return out
    if n < MIN_INTERVAL_ITEMS:
        out.ci_reason = FEWER_THAN_MIN
    elif out.value == 0:
        out.ci_reason = "every pair of scores is equal: MAE is 0 and nothing shows how far it could be from 0"
    elif np.ptp(d) == 0:
        out.ci_reason = f"every pair differs by exactly {d[0]:g}: a zero-width interval says nothing"
    else:
        out.se = float(d.std(ddof=1) / math.sqrt(n))
        spread = float(stats.t.ppf((1 + level) / 2, n - 1)) * out.se / out.value
        out.ci = (out.value * math.exp(-spread), min(100.0, out.value * math.exp(spread)))
    return out


def weighted_kappa(a: np.ndarray, b: np.ndarray, level: float = LEVEL) -> Estimate:
    """`quadratic_kappa` of the score bins with the jackknife interval on Fisher's z
    (`jackknife_fisher_z`; Fleiss & Cohen 1973 show weighted kappa is an intraclass
    correlation). A Dirichlet posterior over the 10 x 10 table is not used: its prior swamps
    the data and it covered 0 % in tests/bench/score_coverage.py. The jackknife covered 93.6-96.0 %
    on symmetric scores and 87.8 %, 90.0 % and 92.4 % on skewed ones at 10, 20 and 50 items
    (marked approximate there), 93.6 % at 120."""
    value = quadratic_kappa(a, b) if len(a) else None
    if value is None:
        return Estimate(None, reason="both raters put every item in one and the same bin: weighted kappa is undefined")
    return _jackknifed(value, lambda: quadratic_kappa_leave_one_out(a, b), len(a), level)


def _marked(estimate: Estimate, name: str, n: int, shape: str) -> Estimate:
    if estimate.ci is not None:
        estimate.approximate = simulated_score_coverage(name, n, shape)
    return estimate


def score_agreement(
    a: Sequence[float], b: Sequence[float], *, threshold: float = 60.0, bin_width: float = 10.0,
    resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
) -> ScoreAgreement:
    """Scores on 0-100 of rater A and rater B on the same items: `spearman`, `pearson`,
    `kendall`, `mean_absolute_error`, `weighted_kappa` on bins of `bin_width` (100 in the top
    bin) and Cohen's kappa on pass/fail at `threshold` (`two_raters`: its Dirichlet-Jeffreys
    posterior interval, widened to contain the estimate: 93.8-95.3 % in
    tests/bench/score_coverage.py --shipped, mostly-pass scores included).
    Every interval needs MIN_INTERVAL_ITEMS items; where it was simulated below 93 % for
    samples of this shape and size, `approximate` carries the figure."""
    x, y = _scores(a, "rater A"), _scores(b, "rater B")
    if len(x) != len(y):
        raise ValueError(f"rater A has {len(x)} scores and rater B {len(y)}: they must be paired item by item")
    n = len(x)
    if n < 2:
        reason = "n < 2"
        empty = [Estimate(None, reason=reason) for _ in range(3)]
        return ScoreAgreement(n, *empty, mean_absolute_error(x, y), Estimate(None, reason=reason), None,
                              threshold, bin_width)
    shape = score_shape(x, y, threshold)
    n_bins = int(math.ceil(100 / bin_width))
    to_bin = lambda v: np.minimum((v // bin_width).astype(int), n_bins - 1)  # noqa: E731
    pass_fail = two_raters(table=confusion(np.where(x >= threshold, 0, 1), np.where(y >= threshold, 0, 1), [0, 1]),
                           labels=["pass", "fail"], resamples=resamples, seed=seed)
    _marked(pass_fail.kappa, "pass_fail_kappa", n, shape)
    return ScoreAgreement(
        n, _marked(spearman(x, y), "spearman", n, shape), _marked(pearson(x, y), "pearson", n, shape),
        _marked(kendall(x, y), "kendall", n, shape), _marked(mean_absolute_error(x, y), "mae", n, shape),
        _marked(weighted_kappa(to_bin(x).astype(float), to_bin(y).astype(float)), "weighted_kappa", n, shape),
        pass_fail, threshold, bin_width, shape)


def without_intervals(agreement: ScoreAgreement, reason: str) -> ScoreAgreement:
    """`agreement` with its values and no interval (`reason` says why): for pairs that share
    items, whose intervals, taking the pairs as independent, would be too narrow."""
    def bare(found):
        if isinstance(found, Estimate):
            return replace(found, ci=None, se=None, approximate=None, ci_reason=found.ci_reason or reason)
        if isinstance(found, TwoRaters):
            return replace(found, **{f.name: bare(getattr(found, f.name)) for f in fields(found)})
        return found

    return replace(agreement, **{f.name: bare(getattr(agreement, f.name)) for f in fields(agreement)})


@dataclass
class ScoreCeiling:
    """The human ceiling of scores (see `score_ceiling`): on `n_items` items that `annotators`
    people scored, per score, the people's agreement with each other and the judge's with them."""

    n_items: int
    annotators: int
    humans: dict[str, ScoreAgreement]
    judge: dict[str, ScoreAgreement]
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"n_items": self.n_items, "annotators": self.annotators, "human_statistic": "scores",
                "humans": {k: v.as_dict() for k, v in self.humans.items()},
                "judge": {k: v.as_dict() for k, v in self.judge.items()}, "notes": self.notes}


def score_ceiling(
    items: Mapping[Hashable, Mapping[str, Mapping[str, float]]], judge: Mapping[Hashable, Mapping[str, float] | None],
    dimensions: Sequence[str], *, threshold: float = 60.0, resamples: int = DEFAULT_RESAMPLES,
) -> ScoreCeiling:
    """People's scores against each other beside the judge's against theirs, with the statistics
    of `score_agreement`, on the same items: those two or more people scored and the judge
    scored (`items`: item -> {annotator: {dimension: score}}; `judge`: item -> scores, None for
    an unparsed verdict, left out and counted; an item absent from `judge` was not judged).

    People: one pair of scores per item and pair of people who both scored it (with two people,
    their two columns), as the judge's pairs below are pooled; the statistics are symmetric, so
    the order within a pair does not matter. Judge: one pair (judge, person) per person's score,
    as the categorical ceiling pools the judge against each person
    (`calibrate.stats.ceiling.human_ceiling`). An interval takes its pairs as independent, so
    it is given only where each item gives one pair: the people's with two people; never the
    judge's, whose pairs against each person share items (its values are given, with the
    reason)."""
    notes: list[str] = []
    shared = {item: scored for item, scored in items.items() if len(scored) >= 2 and item in judge}
    unparsed = sum(judge[item] is None for item in shared)
    if unparsed:
        notes.append(f"{counted(unparsed, 'item')} with an unparsed judge verdict left out")
    shared = {item: scored for item, scored in shared.items() if judge[item] is not None}
    people = sorted({name for scored in shared.values() for name in scored})
    pairs: dict[str, tuple[list[float], list[float]]] = {d: ([], []) for d in dimensions}
    versus: dict[str, tuple[list[float], list[float]]] = {d: ([], []) for d in dimensions}
    for item, scored in shared.items():
        names = sorted(scored)
        for d in dimensions:
            for k, first in enumerate(names):
                for second in names[k + 1:]:
                    pairs[d][0].append(scored[first][d])
                    pairs[d][1].append(scored[second][d])
                versus[d][0].append(judge[item][d])
                versus[d][1].append(scored[first][d])
    measure = lambda a, b: score_agreement(a, b, threshold=threshold, resamples=resamples)  # noqa: E731
    shared_pairs = "no interval: an item gives several of these pairs, which an interval would take as independent"
    several = any(len(scored) > 2 for scored in shared.values())
    found_people = {d: without_intervals(measure(*pairs[d]), shared_pairs) if several else measure(*pairs[d])
                    for d in dimensions}
    found_judge = {d: without_intervals(measure(*versus[d]), shared_pairs) for d in dimensions}
    if shared:
        notes.append("no intervals: the judge's pairs against each person share items, and so do the people's pairs "
                     "of an item three or more scored" if several else
                     "no interval for the judge's figures: its pairs against each person share items")
    return ScoreCeiling(len(shared), len(people), found_people, found_judge, notes)
