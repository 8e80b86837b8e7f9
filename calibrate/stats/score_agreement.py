"""Agreement on scored verdicts (a 0-100 rubric): how far the judge's scores follow a person's,
and the human ceiling of scores: how far people's follow each other's on the items several of
them scored, beside the judge's on the same items (`score_ceiling`).

Rank and linear correlation (Spearman, Pearson, Kendall's tau-b), mean absolute error,
quadratic weighted kappa on score bins and kappa on pass/fail at a threshold, each with a 95 %
interval whose coverage tests/bench/score_coverage.py simulates, or the reason there is none.
Where pairs share items (the ceiling's judge against each of an item's people, or three people's
pairs), the intervals resample items: each statistic's values without each item, all its pairs
left out together (the `*_leave_one_out` functions take the item of each pair), give a grouped
jackknife. Where the simulation found an interval covering less than 93 % in data like the
sample's (same shape, nearest number of items; pairs sharing items simulated apart),
`approximate` carries the simulated figure (`calibrate.stats.simulated.simulated_score_coverage`,
its table written by `python tests/bench/score_coverage.py --shipped --write` and `--clustered
--write`). Scores outside 0-100, NaN or infinite raise a ValueError that names them and where.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field, replace

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

RESAMPLING_NOTE = "intervals resample items (a grouped jackknife)"
"""How a score ceiling's note begins that says its intervals resample items (see `score_ceiling`)."""

SKEWNESS_LIMIT = 1.0
PASS_SHARE_LIMIT = 0.8
"""A sample is "skewed" when the skewness of its scores (both raters pooled) is at least
SKEWNESS_LIMIT in size, or more than PASS_SHARE_LIMIT of them fall on one side of the pass
threshold (most responses pass, or most fail): the shape where tests/bench/score_coverage.py
found Pearson's and the kappas' intervals short. Otherwise "symmetric"."""


@dataclass
class ScoreAgreement:
    """How one rater's 0-100 scores follow another's in n pairs of scores from `items` items (n,
    unless an item gives several pairs); `shape` is how the scores are spread ("symmetric" or
    "skewed", see SKEWNESS_LIMIT), the setting the simulated coverage was looked up for."""

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
    items: int | None = None

    def estimate(self, name: str) -> Estimate:
        """One of STATISTICS by name (pass_fail_kappa: the kappa of `pass_fail`)."""
        if name == "pass_fail_kappa":
            return self.pass_fail.kappa if self.pass_fail else Estimate(None, reason="no items")
        return getattr(self, name)

    def as_dict(self) -> dict:
        return {
            "n": self.n, **{name: self.estimate(name).as_dict() for name in STATISTICS},
            "items": self.items, "threshold": self.threshold, "bin_width": self.bin_width,
            "shape": self.shape,
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


# -- values without one item (all its pairs), O(n), O(n + distinct values^2) or O(G n log n) ------


def _groups(n: int, groups: np.ndarray | None) -> tuple[np.ndarray, int]:
    """The item of each of n pairs as 0..G-1 and G; without `groups`, each pair its own item."""
    if groups is None:
        return np.arange(n), n
    _, inverse = np.unique(np.asarray(groups), return_inverse=True)
    return inverse.ravel(), int(inverse.max()) + 1 if n else 0


def _outside(groups: np.ndarray, size: int, *columns: np.ndarray) -> list[np.ndarray]:
    """Per column of pair values, its sum over the pairs outside item g, for every item g."""
    return [c.sum() - np.bincount(groups, weights=c, minlength=size) for c in columns]


def pearson_leave_one_out(x: np.ndarray, y: np.ndarray, groups: np.ndarray | None = None) -> np.ndarray:
    """Pearson's r without item g, for every item g (each pair its own item unless `groups` gives
    the item of each pair: all that item's pairs are left out), from the sums of the centred
    scores outside it (O(n)); NaN where a leave-one-out sample has no spread."""
    groups, size = _groups(len(x), groups)
    x, y = x - x.mean(), y - y.mean()
    m, sx, sy, sxx, syy, sxy = _outside(groups, size, np.ones_like(x), x, y, x * x, y * y, x * y)
    total_xx, total_yy = (x * x).sum(), (y * y).sum()
    with np.errstate(divide="ignore", invalid="ignore"):
        vx, vy = sxx - sx * sx / m, syy - sy * sy / m
        r = (sxy - sx * sy / m) / np.sqrt(vx * vy)
    return np.where((m > 1) & (vx > 1e-9 * max(total_xx, 1)) & (vy > 1e-9 * max(total_yy, 1)), r, np.nan)


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


def _within_items(groups: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every two pairs (i, j), i before j, that come from the same item: O(n x most pairs an item
    gives)."""
    order = np.argsort(groups, kind="stable")
    ordered = groups[order]
    first, second = [], []
    for step in range(1, len(order)):
        same = ordered[step:] == ordered[:-step]
        if not same.any():
            break
        first.append(order[:-step][same])
        second.append(order[step:][same])
    empty = np.zeros(0, dtype=int)
    return (np.concatenate(first), np.concatenate(second)) if first else (empty, empty)


def kendall_leave_one_out(x: np.ndarray, y: np.ndarray, groups: np.ndarray | None = None) -> np.ndarray:
    """Kendall's tau-b without item g, for every item g (each pair its own item unless `groups`
    gives the item of each pair, all of whose pairs are left out):
        tau_b(g) = (S - sum_{i in g} s_i + W_g) / sqrt( U_x(g) U_y(g) ),
    S = sum_{j<k} sgn(x_j - x_k) sgn(y_j - y_k), s_i pair i's share of it, W_g the share of the
    pairs within item g (counted twice in the sum of s_i), U_x(g) the pairs untied in x outside g:
        U_x(g) = U_x - (C(n, 2) - C(n - m_g, 2)) + sum_v (C(c_v, 2) - C(c_v - c_gv, 2)),
    m_g the pairs of item g, c_v how many pairs have x = v, c_gv how many of them are in g (with
    one pair per item: U_x - (n - t_x(i)), t_x(i) the pairs sharing pair i's x). NaN where a
    sample has no pair untied in x or in y."""
    n = len(x)
    groups, size = _groups(n, groups)
    s = _signed_concordance(x, y)
    i, j = _within_items(groups)
    inside = np.bincount(groups, weights=s, minlength=size) - np.bincount(
        groups[i], weights=np.sign(x[i] - x[j]) * np.sign(y[i] - y[j]), minlength=size)
    m = np.bincount(groups, minlength=size)
    untied = []
    for v in (x, y):
        _, inverse, counts = np.unique(v, return_inverse=True, return_counts=True)
        pairs = n * (n - 1) / 2 - (counts * (counts - 1) / 2).sum()
        cells, k = np.unique(groups * len(counts) + inverse, return_counts=True)  # (item, value) and its pairs
        c = counts[cells % len(counts)]
        tied_away = np.bincount(cells // len(counts), weights=k * (2 * c - k - 1) / 2, minlength=size)
        untied.append(pairs - (n * (n - 1) / 2 - (n - m) * (n - m - 1) / 2) + tied_away)
    with np.errstate(divide="ignore", invalid="ignore"):
        tau = (s.sum() / 2 - inside) / np.sqrt(untied[0] * untied[1])
    return np.where((untied[0] > 0) & (untied[1] > 0), tau, np.nan)


SPEARMAN_TABLE_CELLS = 20_000
"""Largest table of distinct (x, y) values `spearman_leave_one_out` works from (101 x 101 for
integer scores: O(G x 10^4)); beyond it, it works pair by pair."""


def spearman_leave_one_out(x: np.ndarray, y: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Spearman's rho without item g (all its pairs), for every item g: Pearson's r, over the
    pairs outside g, of their mid-ranks there, which are the mid-ranks among all n pairs less
    what g's pairs took: r(v) - sum_{k in g} ([x_k < v] + [x_k = v] / 2) for a pair with x = v.
    From the table of distinct (x, y) values T, less item g's pairs, when it has at most
    SPEARMAN_TABLE_CELLS cells: sum_{j not in g} a(x_j) b(y_j) = a' T b - sum_{k in g} a(x_k) b(y_k),
    O(G Vx Vy); else pair by pair in blocks of items, O(G n x most pairs an item gives). NaN where
    the pairs outside g have no spread."""
    n = len(x)
    groups, size = _groups(n, groups)
    (xs, xi, cx), (ys, yi, cy) = (np.unique(v, return_inverse=True, return_counts=True) for v in (x, y))
    kept = n - np.bincount(groups, minlength=size).astype(float)
    if len(xs) * len(ys) > SPEARMAN_TABLE_CELLS:
        return _spearman_leave_one_out_by_pairs(x, y, groups, size)
    table = np.zeros((len(xs), len(ys)))
    np.add.at(table, (xi, yi), 1)
    sums = []
    for index, counts in ((xi, cx), (yi, cy)):
        inside = np.zeros((size, len(counts)))  # item g's pairs at each value
        np.add.at(inside, (groups, index), 1)
        rank = np.cumsum(counts) - counts + (counts + 1) / 2  # each value's mid-rank among all n
        a = rank - np.cumsum(inside, 1) + inside / 2  # ... among the pairs outside g
        outside = counts - inside
        total = (outside * a).sum(1)
        sums.append((a, total, (outside * a * a).sum(1) - total**2 / kept))
    (a, total_a, saa), (b, total_b, sbb) = sums
    own = np.bincount(groups, weights=a[groups, xi] * b[groups, yi], minlength=size)
    sab = ((a @ table) * b).sum(1) - own - total_a * total_b / kept
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where((saa > 1e-9) & (sbb > 1e-9), sab / np.sqrt(saa * sbb), np.nan)


def _spearman_leave_one_out_by_pairs(x: np.ndarray, y: np.ndarray, groups: np.ndarray, size: int) -> np.ndarray:
    """`spearman_leave_one_out` pair by pair: each pair's mid-rank less what item g's pairs took,
    for a block of items at a time."""
    from scipy import stats

    n = len(x)
    order = np.argsort(groups, kind="stable")
    counts = np.bincount(groups, minlength=size)
    slot = np.arange(n) - np.repeat(np.cumsum(counts) - counts, counts)  # each pair's place in its item
    padded = []
    for v in (x, y):
        table = np.full((size, counts.max()), np.nan)  # item g's scores, NaN after its last
        table[groups[order], slot] = v[order]
        padded.append(table)
    ranks = stats.rankdata(x), stats.rankdata(y)
    out = np.empty(size)
    step = max(1, 2_000_000 // (n * counts.max()))
    for start in range(0, size, step):
        block = slice(start, start + step)
        outside = (groups[None, :] != np.arange(size)[block, None]).astype(float)
        kept = outside.sum(1)
        centred = []
        for v, rank, table in zip((x, y), ranks, padded, strict=True):
            taken = table[block, :, None]  # NaN compares False: no pair, nothing taken
            r = rank - ((taken < v).sum(1) + (taken == v).sum(1) / 2)
            centred.append((r - (r * outside).sum(1, keepdims=True) / kept[:, None]) * outside)
        vx, vy = (centred[0] ** 2).sum(1), (centred[1] ** 2).sum(1)
        with np.errstate(divide="ignore", invalid="ignore"):
            out[block] = np.where((vx > 1e-9) & (vy > 1e-9), (centred[0] * centred[1]).sum(1) / np.sqrt(vx * vy), np.nan)
    return out


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


def quadratic_kappa_leave_one_out(a: np.ndarray, b: np.ndarray, groups: np.ndarray | None = None) -> np.ndarray:
    """`quadratic_kappa` without item g, for every item g (each pair its own item unless `groups`
    gives the item of each pair; O(n), from the sums outside it); NaN where it is undefined."""
    groups, size = _groups(len(a), groups)
    m, sa, sb, saa, sbb, sdd = _outside(groups, size, np.ones_like(a), a, b, a * a, b * b, (a - b) ** 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = saa / m + sbb / m - 2 * sa * sb / m**2
        return np.where((m > 0) & (expected > 1e-12), 1 - sdd / m / expected, np.nan)


def pass_fail_kappa_leave_one_out(a: np.ndarray, b: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Cohen's kappa of two pass (1) / fail (0) columns without item g, for every item g:
    (p_o - p_e) / (1 - p_e) on the pairs outside it, p_e = p_a p_b + (1 - p_a)(1 - p_b); NaN
    where p_e is 1 (one class only)."""
    groups, size = _groups(len(a), groups)
    m, pa, pb, same = _outside(groups, size, np.ones_like(a), a, b, (a == b).astype(float))
    with np.errstate(divide="ignore", invalid="ignore"):
        pa, pb, observed = pa / m, pb / m, same / m
        expected = pa * pb + (1 - pa) * (1 - pb)
        return np.where((m > 0) & (expected < 1 - 1e-12), (observed - expected) / (1 - expected), np.nan)


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


def _item_count(n: int, groups: np.ndarray | None) -> int:
    """How many items n pairs come from (`groups`: the item of each pair; without it, n)."""
    return n if groups is None else len(np.unique(groups))


def spearman(x: np.ndarray, y: np.ndarray, level: float = LEVEL, groups: np.ndarray | None = None) -> Estimate:
    """Spearman's rho (scipy.stats.spearmanr: Pearson's r of the mid-ranks) with the interval
    tanh(atanh(rho) -+ z SE) on Fisher's z, SE = sqrt((1 + rho^2/2) / (n - 3)). Bonett, D. G.,
    & Wright, T. A. (2000). Sample size requirements for estimating Pearson, Kendall and
    Spearman correlations. Psychometrika 65, 23-28. Simulated coverage 93.0-96.1 % from 10 items
    (tests/bench/score_coverage.py --shipped, 2000 samples per setting). With `groups` (the item
    of each pair) where an item gives several pairs, the grouped jackknife (`_jackknifed`) on the
    values without each item from `spearman_leave_one_out`, the ranks recomputed."""
    from scipy import stats

    undefined = _correlation(x, y, "Spearman's rho")
    if undefined:
        return undefined
    rho = _correlation_value(stats.spearmanr(x, y)[0])
    n, items = len(x), _item_count(len(x), groups)
    if items < n:
        return _jackknifed(rho, lambda: spearman_leave_one_out(x, y, groups), items, level)
    out = Estimate(rho)
    if n < MIN_INTERVAL_ITEMS:
        out.ci_reason = FEWER_THAN_MIN
    elif rho is None or abs(rho) >= 1:
        out.ci_reason = "rho is ±1: its Fisher z is infinite, so no interval is built on it"
    else:
        out.se = math.sqrt((1 + rho * rho / 2) / (n - 3))
        out.ci = fisher_z_interval(rho, out.se, normal_quantile(level))
    return out


def _jackknifed(value: float | None, leave_one_out, items: int, level: float) -> Estimate:
    """`value` with `jackknife_fisher_z`'s interval from its values without each of the `items`
    items (`leave_one_out()`), none from fewer than MIN_INTERVAL_ITEMS items. Where an item gives
    several pairs (not independent: the judge against each of an item's people) all of them are
    left out together, so the interval resamples items, not pairs: the grouped (delete-a-group)
    jackknife, SE = sqrt((G - 1)/G sum_g (z_(g) - mean z)^2) over the G items, t_{G-1}. Efron &
    Tibshirani 1993, ch. 11; Kott, P. S. (2001). The delete-a-group jackknife. J. Off. Stat. 17,
    521-526. With one pair per item it is the ordinary jackknife."""
    out = Estimate(value)
    if items < MIN_INTERVAL_ITEMS:
        out.ci_reason = FEWER_THAN_MIN
        return out
    out.ci, out.se, out.ci_reason = jackknife_fisher_z(value, leave_one_out(), level)
    return out


def pearson(x: np.ndarray, y: np.ndarray, level: float = LEVEL, groups: np.ndarray | None = None) -> Estimate:
    """Pearson's r (scipy.stats.pearsonr) with the jackknife interval on Fisher's z and a t
    quantile (`jackknife_fisher_z`): unlike the textbook SE 1/sqrt(n - 3), which assumes normal
    scores, it follows skewed scores (tests/bench/score_coverage.py: 94.7-95.8 % on symmetric
    scores, 91.4-94.0 % on scores piled up at the ceiling, where 1/sqrt(n - 3) gave 83-90 %).
    With `groups` (the item of each pair), each item's pairs are left out together: with one
    pair per item this is the jackknife above."""
    from scipy import stats

    return _correlation(x, y, "Pearson's r") or _jackknifed(
        _correlation_value(stats.pearsonr(x, y)[0]), lambda: pearson_leave_one_out(x, y, groups),
        _item_count(len(x), groups), level)


def kendall(x: np.ndarray, y: np.ndarray, level: float = LEVEL, groups: np.ndarray | None = None) -> Estimate:
    """Kendall's tau-b (scipy.stats.kendalltau, variant b: ties counted in both margins;
    Kendall, M. G. (1945). The treatment of ties in ranking problems. Biometrika 33, 239-251)
    with the jackknife interval on Fisher's z (`jackknife_fisher_z`, leave-one-out values from
    `kendall_leave_one_out`). Simulated coverage 94.8-99.1 % from 10 items, where Fieller's SE
    sqrt(0.437 / (n - 4)) fell to 89 % with tied scores (tests/bench/score_coverage.py). With
    `groups` (the item of each pair), each item's pairs are left out together."""
    from scipy import stats

    return _correlation(x, y, "Kendall's tau") or _jackknifed(
        _correlation_value(stats.kendalltau(x, y, variant="b")[0]), lambda: kendall_leave_one_out(x, y, groups),
        _item_count(len(x), groups), level)


def mean_absolute_error(x: np.ndarray, y: np.ndarray, level: float = LEVEL, groups: np.ndarray | None = None) -> Estimate:
    """MAE = mean |x - y| with a t interval on the log scale (delta method: the SE of log MAE is
    SE / MAE):
        MAE x exp( -+ t_{G-1, (1+level)/2} SE / MAE ),
    SE the jackknife's over the G items, sqrt((G - 1)/G sum_g (MAE_(g) - mean MAE_(.))^2), MAE_(g)
    the MAE of the pairs outside item g (Efron & Tibshirani 1993, ch. 11). With one pair per item
    (no `groups`) G = n and SE = s_d / sqrt(n), s_d the sample sd of |x - y|; with `groups` (the
    item of each pair), an item's pairs are left out together. On the log scale it stays above 0
    and follows the right skew of a mean of absolute values (simulated coverage 94.7-95.7 % from
    10 items, tests/bench/score_coverage.py; the plain t interval fell to 91 %). No interval when
    MAE is 0 (every pair equal) or every |x - y| is the same."""
    from scipy import stats

    d = np.abs(x - y)
    n = len(d)
    out = Estimate(float(d.mean()) if n else None, reason=None if n else "no items")
    if not n:
        return out
    groups, items = _groups(n, groups)
    if items < MIN_INTERVAL_ITEMS:
        out.ci_reason = FEWER_THAN_MIN
    elif out.value == 0:
        out.ci_reason = "every pair of scores is equal: MAE is 0 and nothing shows how far it could be from 0"
    elif np.ptp(d) == 0:
        out.ci_reason = f"every pair differs by exactly {d[0]:g}: a zero-width interval says nothing"
    else:
        pairs, total = _outside(groups, items, np.ones_like(d), d)
        without = total / pairs
        out.se = float(np.sqrt((items - 1) / items * ((without - without.mean()) ** 2).sum()))
        if out.se <= 1e-12:
            out.se, out.ci_reason = None, "every item's pairs differ by the same amount: a zero-width interval says nothing"
            return out
        spread = float(stats.t.ppf((1 + level) / 2, items - 1)) * out.se / out.value
        out.ci = (out.value * math.exp(-spread), min(100.0, out.value * math.exp(spread)))
    return out


def weighted_kappa(a: np.ndarray, b: np.ndarray, level: float = LEVEL, groups: np.ndarray | None = None) -> Estimate:
    """`quadratic_kappa` of the score bins with the jackknife interval on Fisher's z
    (`jackknife_fisher_z`; Fleiss & Cohen 1973 show weighted kappa is an intraclass
    correlation). A Dirichlet posterior over the 10 x 10 table is not used: its prior swamps
    the data and it covered 0 % in tests/bench/score_coverage.py. The jackknife covered 93.6-96.0 %
    on symmetric scores and 87.8 %, 90.0 % and 92.4 % on skewed ones at 10, 20 and 50 items
    (marked approximate there), 93.6 % at 120. With `groups` (the item of each pair), each
    item's pairs are left out together."""
    value = quadratic_kappa(a, b) if len(a) else None
    if value is None:
        return Estimate(None, reason="both raters put every item in one and the same bin: weighted kappa is undefined")
    return _jackknifed(value, lambda: quadratic_kappa_leave_one_out(a, b, groups), _item_count(len(a), groups), level)


def _marked(estimate: Estimate, name: str, items: int, shape: str, clustered: bool) -> Estimate:
    if estimate.ci is not None:
        estimate.approximate = simulated_score_coverage(name, items, shape, clustered=clustered)
    return estimate


def _no_interval(estimate: Estimate | None, reason: str) -> Estimate | None:
    """`estimate` without its interval, `reason` saying why (unless it says why already)."""
    if estimate is None:
        return None
    return replace(estimate, ci=None, se=None, undefined_share=None, approximate=None,
                   ci_reason=estimate.ci_reason or reason)


PAIRS_SHARE_ITEMS = "an item gives several of these pairs: only kappa's interval here resamples items"
"""Why pass/fail agreement, AC1 and the weighted kappas of TwoRaters have no interval where an
item gives several pairs (their intervals take the pairs as independent)."""


def score_agreement(
    a: Sequence[float], b: Sequence[float], *, threshold: float = 60.0, bin_width: float = 10.0,
    resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED, items: Sequence[Hashable] | None = None,
) -> ScoreAgreement:
    """Scores on 0-100 of rater A and rater B on the same items: `spearman`, `pearson`,
    `kendall`, `mean_absolute_error`, `weighted_kappa` on bins of `bin_width` (100 in the top
    bin) and Cohen's kappa on pass/fail at `threshold` (`two_raters`: its Dirichlet-Jeffreys
    posterior interval, widened to contain the estimate: 93.8-95.3 % in
    tests/bench/score_coverage.py --shipped, mostly-pass scores included).

    `items`, the item each pair comes from, where pairs share items (the judge against each of
    several people on one item): every interval then resamples items, not pairs, by the grouped
    jackknife (`_jackknifed`; MAE's SE by the same; pass/fail kappa's by `pass_fail_kappa_leave_one_out`,
    its other figures without an interval, PAIRS_SHARE_ITEMS). With one pair per item the
    intervals are those above. Every interval needs MIN_INTERVAL_ITEMS items; where it was
    simulated below 93 % for samples of this shape and number of items (pairs sharing items
    simulated apart), `approximate` carries the figure."""
    x, y = _scores(a, "rater A"), _scores(b, "rater B")
    if len(x) != len(y) or (items is not None and len(items) != len(x)):
        raise ValueError(f"rater A has {len(x)} scores and rater B {len(y)}"
                         + (f" from {len(items)} items" if items is not None else "")
                         + ": they must be paired item by item")
    n = len(x)
    index: dict[Hashable, int] = {}
    groups = None if items is None else np.array([index.setdefault(item, len(index)) for item in items], dtype=int)
    count = _item_count(n, groups)
    clustered = count < n
    if n < 2:
        reason = "n < 2"
        empty = [Estimate(None, reason=reason) for _ in range(3)]
        return ScoreAgreement(n, *empty, mean_absolute_error(x, y), Estimate(None, reason=reason), None,
                              threshold, bin_width, items=count)
    shape = score_shape(x, y, threshold)
    n_bins = int(math.ceil(100 / bin_width))
    to_bin = lambda v: np.minimum((v // bin_width).astype(int), n_bins - 1)  # noqa: E731
    passed_a, passed_b = (x >= threshold).astype(float), (y >= threshold).astype(float)
    pass_fail = two_raters(table=confusion(np.where(x >= threshold, 0, 1), np.where(y >= threshold, 0, 1), [0, 1]),
                           labels=["pass", "fail"], resamples=resamples, seed=seed)
    if clustered:
        kappa = _jackknifed(pass_fail.kappa.value, lambda: pass_fail_kappa_leave_one_out(passed_a, passed_b, groups),
                            count, LEVEL)
        pass_fail = replace(pass_fail, kappa=replace(kappa, reason=pass_fail.kappa.reason), **{
            name: _no_interval(getattr(pass_fail, name), PAIRS_SHARE_ITEMS)
            for name in ("agreement", "ac1", "kappa_linear", "kappa_quadratic")})
    mark = lambda estimate, name: _marked(estimate, name, count, shape, clustered)  # noqa: E731
    mark(pass_fail.kappa, "pass_fail_kappa")
    return ScoreAgreement(
        n, mark(spearman(x, y, groups=groups), "spearman"), mark(pearson(x, y, groups=groups), "pearson"),
        mark(kendall(x, y, groups=groups), "kendall"), mark(mean_absolute_error(x, y, groups=groups), "mae"),
        mark(weighted_kappa(to_bin(x).astype(float), to_bin(y).astype(float), groups=groups), "weighted_kappa"),
        pass_fail, threshold, bin_width, shape, items=count)


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
    (`calibrate.stats.ceiling.human_ceiling`). Where an item gives several pairs (always the
    judge's; the people's of an item three or more scored) they are not independent, so the
    intervals resample items (`score_agreement`'s `items`: the grouped jackknife); with one pair
    per item they are the single-pair intervals."""
    notes: list[str] = []
    shared = {item: scored for item, scored in items.items() if len(scored) >= 2 and item in judge}
    unparsed = sum(judge[item] is None for item in shared)
    if unparsed:
        notes.append(f"{counted(unparsed, 'item')} with an unparsed judge verdict left out")
    shared = {item: scored for item, scored in shared.items() if judge[item] is not None}
    people = sorted({name for scored in shared.values() for name in scored})
    pairs: dict[str, tuple[list[float], list[float], list]] = {d: ([], [], []) for d in dimensions}
    versus: dict[str, tuple[list[float], list[float], list]] = {d: ([], [], []) for d in dimensions}
    for item, scored in shared.items():
        names = sorted(scored)
        for d in dimensions:
            for k, first in enumerate(names):
                for second in names[k + 1:]:
                    pairs[d][0].append(scored[first][d])
                    pairs[d][1].append(scored[second][d])
                    pairs[d][2].append(item)
                versus[d][0].append(judge[item][d])
                versus[d][1].append(scored[first][d])
                versus[d][2].append(item)
    measure = lambda a, b, of: score_agreement(a, b, threshold=threshold, resamples=resamples, items=of)  # noqa: E731
    found_people = {d: measure(*pairs[d]) for d in dimensions}
    found_judge = {d: measure(*versus[d]) for d in dimensions}
    several = any(len(scored) > 2 for scored in shared.values())
    resampled = [*found_judge.values(), *(found_people.values() if several else ())]
    if any(found.estimate(name).ci is not None for found in resampled for name in STATISTICS):
        notes.append(f"{RESAMPLING_NOTE}: the judge's pairs against each person share "
                     + ("items, and so do the people's pairs of an item three or more scored" if several else "items"))
    return ScoreCeiling(len(shared), len(people), found_people, found_judge, notes)
