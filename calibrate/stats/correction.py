"""Corrected benchmark scores: a system's true accuracy from judge verdicts plus a few human labels.

A judge that says "correct" too often or too rarely biases the benchmark score it reports: with
sensitivity 0.9 and specificity 0.7 it reports 60 % for a system whose true accuracy is 50 %.
When a random subset of the same items also carries a human label, two estimators remove that
bias and give an honest interval: prediction-powered inference (PPI++, the main estimate) and
the Rogan-Gladen correction from the judge's sensitivity and specificity (shown beside it).
The labelled-only (classical) estimate and the raw judge accuracy are returned next to them.

One cell is one system x task (x language). Inputs are, per item of the cell, the judge's
verdict (1 = the judge says the response is correct, 0 = not; an (N, J) array for J judges) and
the human label (1 / 0, or None / NaN where the item has no label). The estimand is the
system's accuracy by people, the rate at which a human would mark its responses correct.
Intervals are large-sample (CLT) intervals for that rate, treating the cell's items as a sample
from the task (as ppi_py does); for the mean over exactly these N items, the benchmark's own
score, they are conservative in large samples, and `finite_population=True` gives the
design-based interval for that mean.

This module is pure statistics (numpy, scipy, and the shared intervals of
`calibrate.stats.intervals`). Degenerate inputs (no labels, too few, one class only, a useless
judge) never raise and never return a bare NaN: the value is None and `reason` says why. Wrong
shapes or values (a 2 in a 0/1 array, arrays of different lengths) raise ValueError.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import combinations

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

from calibrate.model import Estimate
from calibrate.stats.intervals import normal_quantile, proportion

MIN_LABELLED = 10
"""Fewest random human labels for a corrected number. Below 10 the sample variance of the
labels (and of label minus judge) that every interval here rests on is too unstable for a CLT
interval to mean anything; at 10 the rule of thumb n p >= 5 can hold at p = 0.5."""

MIN_YOUDEN = 0.1
"""Rogan-Gladen is undefined when the judge's Youden index Se + Sp - 1 is at or below this: the
correction divides by it, so 0.1 already multiplies the standard error by 10."""

NOT_RANDOM_P = 0.01
"""Significance level of the check that labelled and unlabelled items got the same judge
positive rate (Fisher's exact test per judge, Bonferroni over judges). A truly random sample
is flagged wrongly in 1 % of cells."""


@dataclass
class Corrected:
    """PPI++ accuracy of one cell (or a difference of two), with everything shown beside it."""

    value: float | None
    ci: tuple[float, float] | None
    se: float | None
    reason: str | None
    lam: float | None
    n_labelled: int
    n_total: int
    classical: Estimate
    raw_judge: float | None
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        out = dict(self.__dict__)
        out["ci"] = list(self.ci) if self.ci else None
        out["classical"] = self.classical.as_dict()
        return out


@dataclass
class RoganGladen:
    """Rogan-Gladen corrected accuracy with the judge rates it was computed from."""

    value: float | None
    ci: tuple[float, float] | None
    se: float | None
    reason: str | None
    sensitivity: float | None
    specificity: float | None
    positive_rate: float | None
    n_labelled: int
    n_total: int
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        out = dict(self.__dict__)
        out["ci"] = list(self.ci) if self.ci else None
        return out


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


@dataclass
class LabelPlan:
    """How many more random human labels bring the PPI++ half-width under `target`."""

    more: int | None
    half_width: float | None
    projected_half_width: float | None
    target: float
    reason: str | None = None


# -- inputs --------------------------------------------------------------------------------------


def _binary(name: str, values: np.ndarray) -> None:
    if not np.isin(values, (0.0, 1.0)).all():
        bad = values[~np.isin(values, (0.0, 1.0))][0]
        raise ValueError(f"{name} must be 0 or 1, got {bad:g}")


def _inputs(verdicts: ArrayLike, labels: ArrayLike, *, judges: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(verdicts as an (N, J) float array, labels as float with NaN = unlabelled, labelled mask)."""
    f = np.asarray(verdicts, dtype=float)
    y = np.asarray(labels, dtype=float)
    if f.ndim == 1:
        f = f[:, None]
    if f.ndim != 2 or (f.shape[1] != 1 and not judges):
        raise ValueError(f"verdicts must be one 0/1 value per item, got shape {np.shape(verdicts)}")
    if y.ndim != 1:
        raise ValueError(f"labels must be one value per item, got shape {y.shape}")
    if len(f) != len(y):
        raise ValueError(f"verdicts and labels differ in length: {len(f)} vs {len(y)}")
    _binary("verdicts", f.ravel())
    labelled = ~np.isnan(y)
    _binary("labels", y[labelled])
    return f, y, labelled


def labelled_problem(
    verdicts: ArrayLike, labels: ArrayLike, *, random_sample: bool, min_labelled: int = MIN_LABELLED
) -> str | None:
    """Why no corrected number should be printed for this cell, or None when one may be.

    Refused when: the caller says the labelled items were not drawn at random from the cell
    (e.g. an "informative" annotation order); fewer than `min_labelled` items are labelled
    (MIN_LABELLED = 10); the labels are all one class (every CLT interval here then has zero
    width); or the judge's positive rate differs between labelled and unlabelled items by
    Fisher's exact test at NOT_RANDOM_P (Bonferroni over judges), which a random sample would
    show only by chance. Fisher, R. A. (1922). On the interpretation of chi-square from
    contingency tables. J. R. Stat. Soc. 85, 87-94. Accepts one judge (N,) or several (N, J).
    """
    f, y, labelled = _inputs(verdicts, labels, judges=True)
    return _problem(f, y, labelled, random_sample, min_labelled)


def _problem(f: np.ndarray, y: np.ndarray, labelled: np.ndarray, random_sample: bool, min_labelled: int) -> str | None:
    n = int(labelled.sum())
    if not random_sample:
        return "the labelled items were not drawn at random from the cell: a corrected score would be biased"
    if n < min_labelled:
        return f"{n} labelled item(s): at least {min_labelled} random human labels are needed"
    if np.ptp(y[labelled]) == 0:
        return f"all {n} labelled items are {y[labelled][0]:g}: the spread of the labels is unknown, so no interval"
    if n < len(y):
        for j in range(f.shape[1]):
            pos_l, pos_u = f[labelled, j].sum(), f[~labelled, j].sum()
            table = [[pos_l, n - pos_l], [pos_u, (len(y) - n) - pos_u]]
            p = stats.fisher_exact(table).pvalue
            if p < NOT_RANDOM_P / f.shape[1]:
                return (
                    f"the judge says yes on {pos_l / n:.0%} of labelled items but {pos_u / (len(y) - n):.0%} "
                    f"of unlabelled ones (Fisher p = {p:.2g}): the labelled items do not look like a random sample"
                )
    return None


# -- estimators ----------------------------------------------------------------------------------


def _ppi(y: np.ndarray, f_l: np.ndarray, f_u: np.ndarray, finite: bool) -> tuple[float, float, float, list[str]]:
    """(theta, se, lambda, notes) of the power-tuned PPI++ mean; see ppi_mean."""
    n, m = len(y), len(f_u)
    if m == 0:
        se = 0.0 if finite else float(y.std() / np.sqrt(n))
        return float(y.mean()), se, 0.0, ["every item is labelled: the estimate is the labelled mean"]
    var_f = float(np.var(np.concatenate([f_l, f_u]), ddof=1))
    if var_f == 0:
        lam, notes = 0.0, ["the judge verdicts are all equal: they carry no information (lambda = 0)"]
    else:
        cov = float(np.mean((y - y.mean()) * (f_l - f_l.mean())))
        lam, notes = float(np.clip(cov / ((1 + n / m) * var_f), 0, 1)), []
    theta = lam * f_u.mean() + (y - lam * f_l).mean()
    if finite:
        se = np.sqrt((1 - n / (n + m)) * np.var(y - lam * (n + m) / m * f_l, ddof=1) / n)
    else:
        se = np.sqrt(lam**2 * f_u.var() / m + (y - lam * f_l).var() / n)
    return float(theta), float(se), lam, notes


def ppi_mean(
    verdicts: ArrayLike,
    labels: ArrayLike,
    *,
    random_sample: bool,
    level: float = 0.95,
    min_labelled: int = MIN_LABELLED,
    finite_population: bool = False,
) -> Corrected:
    """Corrected accuracy by power-tuned prediction-powered inference (PPI++).

    With f the judge verdict (or, for an (N, J) array, the mean of the J judges' verdicts — C3's
    final score is the mean accuracy over its judges, and every judge estimates the same human
    accuracy), Y the human label, n labelled and m = N - n unlabelled items:
        theta = lambda * mean_unlabelled(f) + mean_labelled(Y - lambda f)
        se^2  = lambda^2 Var_u(f) / m + Var_l(Y - lambda f) / n          (variances with 1/n)
        lambda = clip( Cov_l(Y, f) / ((1 + n/m) Var_all(f)), 0, 1 )      (Var_all with 1/(N-1))
    and the interval theta +- z se. lambda = 0 is the classical labelled mean, lambda = 1 plain
    PPI; the tuned lambda minimises the variance, so the interval is never (asymptotically) wider
    than the classical one. The unlabelled term uses only the m unlabelled items, as in the
    paper's independent-samples setting; this equals lambda' mean_all(f) + mean_l(Y - lambda' f)
    with lambda' = lambda N / m. The formulas, degrees of freedom and clipping are those of
    ppi_py's ppi_mean_pointestimate / ppi_mean_ci with lam=None (tested against it).
    Angelopoulos, A. N., Duchi, J. C., & Zrnic, T. (2023). PPI++: Efficient prediction-powered
    inference. arXiv:2311.01453: the power-tuned estimator of a mean, with the plug-in lambda
    (the expressions above are written out from the reference implementation, A. N.
    Angelopoulos et al., ppi_py 0.2.3, ppi.py: ppi_mean_ci and _calc_lam_glm). Beside it: the
    classical estimate from the labels alone with the Wilson interval
    (`calibrate.stats.intervals.proportion`) and the raw
    judge accuracy mean_all(f).

    Coverage measured by tests/bench/correction_coverage.py (2000 datasets per setting): 93.5 to
    95.2 % with 200-300 labels; 89.4 to 93.3 % with 20-50 labels at accuracy 0.5-0.8 and 89.5 %
    with 100 labels at accuracy 0.95 — the small-sample shortfall of a CLT interval with a tuned
    lambda. Read those with care.

    finite_population=True targets the mean of the labels over exactly these N items (the
    benchmark's own score) instead of the rate behind them. The labelled items are then a simple
    random sample without replacement of the N, theta above equals
    lambda' mean_all(f) + mean_l(Y - lambda' f), lambda' = lambda N/m, and
        se^2 = (1 - n/N) S^2_l(Y - lambda' f) / n                         (S^2 with 1/(n-1)),
    0 when every item is labelled: the variance of the difference (regression) estimator with a
    preassigned coefficient, Cochran, W. G. (1977). Sampling Techniques, 3rd ed., Wiley,
    section 7.2, Theorem 7.1. The default (ppi_py's interval) covers that mean too, but
    conservatively in large samples: its variance is larger by about (n/N) Var(Y) / n.
    """
    f2, y, labelled = _inputs(verdicts, labels, judges=True)
    f = f2.mean(axis=1)
    n, total = int(labelled.sum()), len(y)
    classical = proportion(int(y[labelled].sum()), n, level, none_reason="no labelled items")
    raw = float(f.mean()) if total else None
    problem = "no items in the cell" if total == 0 else _problem(f2, y, labelled, random_sample, min_labelled)
    if problem:
        return Corrected(None, None, None, problem, None, n, total, classical, raw)
    theta, se, lam, notes = _ppi(y[labelled], f[labelled], f[~labelled], finite_population)
    z = normal_quantile(level)
    return Corrected(theta, (theta - z * se, theta + z * se), se, None, lam, n, total, classical, raw, notes)


def rogan_gladen(
    verdicts: ArrayLike,
    labels: ArrayLike,
    *,
    random_sample: bool,
    level: float = 0.95,
    min_labelled: int = MIN_LABELLED,
) -> RoganGladen:
    """Accuracy corrected by the judge's sensitivity and specificity (Rogan-Gladen).

        theta = (p + Sp - 1) / (Se + Sp - 1),  p = mean verdict over all N items,
        Se = P(verdict 1 | label 1), Sp = P(verdict 0 | label 0) on the labelled items,
    clipped to [0, 1] with a note. Rogan, W. J., & Gladen, B. (1978). Estimating prevalence from
    the results of a screening test. Am. J. Epidemiol. 107, 71-76 (eq. 1).
    Interval: Wald, theta +- z se, clipped to [0, 1], se by the delta method. p shares the
    labelled items with Se and Sp (p = rho p_l + (1 - rho) p_u, rho = n/N), so theta is taken as
    a function of the labelled items' cell proportions pi = (pi_11, pi_10, pi_01, pi_00) (label,
    verdict), multinomial over n, and of the unlabelled positive rate p_u, binomial over m:
        se^2 = (g' diag(pi) g - (g' pi)^2) / n + ((1 - rho) / J)^2 p_u (1 - p_u) / m,
        g = ( rho/J - theta pi_10/(J q1^2),  theta pi_11/(J q1^2),
              rho/J - (1-theta) pi_00/(J q0^2),  (1-theta) pi_01/(J q0^2) ),
    q1 = pi_11 + pi_10, q0 = pi_01 + pi_00, J = Se + Sp - 1 (from dtheta/dp = 1/J,
    dtheta/dSe = -theta/J, dtheta/dSp = (1 - theta)/J). Delta method for multinomial
    proportions: Agresti, A. (2013). Categorical Data Analysis, 3rd ed., section 16.1.
    With rho -> 0 this is the independent-samples variance
    [p(1-p)/N + theta^2 Se(1-Se)/n1 + (1-theta)^2 Sp(1-Sp)/n0] / J^2 of Lang, Z., & Reiczigel,
    J. (2014). Confidence limits for prevalence of disease adjusted for estimated sensitivity
    and specificity. Prev. Vet. Med. 113, 13-22 (their starting point, before their Agresti-Coull-
    style adjustment, which is not used here); it ignores the shared items and
    over-covers here (98.6 % at n = 200 of N = 1000 in tests/bench/correction_coverage.py,
    where the variance above gives 96.2 %; 96-99 % over its grid except 90 % at accuracy 0.95
    with 20 labels; and wider than PPI++).
    Undefined when J <= MIN_YOUDEN or the labelled items lack either class.
    """
    f2, y, labelled = _inputs(verdicts, labels)
    f = f2[:, 0]
    n, total = int(labelled.sum()), len(y)
    p = float(f.mean()) if total else None
    problem = "no items in the cell" if total == 0 else _problem(f2, y, labelled, random_sample, min_labelled)
    if problem:
        return RoganGladen(None, None, None, problem, None, None, p, n, total)
    yl, fl = y[labelled], f[labelled]
    pi = np.array([np.mean((yl == 1) & (fl == 1)), np.mean((yl == 1) & (fl == 0)),
                   np.mean((yl == 0) & (fl == 1)), np.mean((yl == 0) & (fl == 0))])
    q1, q0 = pi[0] + pi[1], pi[2] + pi[3]
    se_, sp = float(pi[0] / q1), float(pi[3] / q0)
    youden = se_ + sp - 1
    if youden <= MIN_YOUDEN:
        reason = f"the judge's Se + Sp - 1 = {youden:.2f} is at most {MIN_YOUDEN}: it barely tells correct from wrong"
        return RoganGladen(None, None, None, reason, se_, sp, p, n, total)
    raw_theta = (p + sp - 1) / youden
    theta = float(np.clip(raw_theta, 0, 1))
    notes = [f"clipped from {raw_theta:.3f} to {theta:g}"] if theta != raw_theta else []
    rho, m = n / total, total - n
    g = np.array([rho - theta * pi[1] / q1**2, theta * pi[0] / q1**2,
                  rho - (1 - theta) * pi[3] / q0**2, (1 - theta) * pi[2] / q0**2]) / youden
    var = (g**2 @ pi - (g @ pi) ** 2) / n
    if m:
        p_u = f[~labelled].mean()
        var += ((1 - rho) / youden) ** 2 * p_u * (1 - p_u) / m
    se = float(np.sqrt(var))
    z = normal_quantile(level)
    ci = (max(0.0, theta - z * se), min(1.0, theta + z * se))
    return RoganGladen(theta, ci, se, None, se_, sp, p, n, total, notes)


# -- several cells -------------------------------------------------------------------------------


def difference(a: Corrected, b: Corrected, level: float = 0.95) -> Estimate:
    """Difference of two independent cells' corrected accuracies, a - b.

    se = sqrt(se_a^2 + se_b^2), interval (a - b) +- z se: variances of independent estimates
    add. When the two systems answered the same items, the estimates share item difficulty and
    are usually positively correlated, so this interval is then conservative;
    `ppi_paired_difference` uses the pairing instead.
    """
    if a.value is None or b.value is None:
        return Estimate(None, reason=a.reason if a.value is None else b.reason)
    value = a.value - b.value
    se = float(np.hypot(a.se, b.se))
    z = normal_quantile(level)
    return Estimate(value, (value - z * se, value + z * se), se)


def ppi_paired_difference(
    verdicts_a: ArrayLike,
    labels_a: ArrayLike,
    verdicts_b: ArrayLike,
    labels_b: ArrayLike,
    *,
    random_sample: bool,
    level: float = 0.95,
    min_labelled: int = MIN_LABELLED,
    finite_population: bool = False,
) -> Corrected:
    """PPI++ for the difference of two systems judged on the same N items (arrays aligned by
    item): the mean of Y = Y_a - Y_b with prediction f = f_a - f_b, labelled where both systems'
    responses are labelled. Same formulas, `finite_population` and references as `ppi_mean`; the item-level
    covariance of the two systems is inside Var(Y - lambda f). `classical` is the labelled mean
    difference with a CLT interval; `raw_judge` the difference of raw judge accuracies. Items
    labelled for one system only are not used here.
    """
    fa, ya, la = _inputs(verdicts_a, labels_a)
    fb, yb, lb = _inputs(verdicts_b, labels_b)
    if len(fa) != len(fb):
        raise ValueError(f"the two systems have different numbers of items: {len(fa)} vs {len(fb)}")
    both = la & lb
    f = fa[:, 0] - fb[:, 0]
    y = np.where(both, ya - yb, np.nan)
    n, total = int(both.sum()), len(y)
    z = normal_quantile(level)
    if n >= 2:
        mean, sd = float(y[both].mean()), float(y[both].std(ddof=1) / np.sqrt(n))
        classical = Estimate(mean, (mean - z * sd, mean + z * sd), sd)
    else:
        classical = Estimate(None, reason=f"{n} item(s) labelled for both systems")
    raw = float(f.mean()) if total else None
    problem = "no items in the cell" if total == 0 else _problem(np.stack([fa[:, 0], fb[:, 0]], 1), y, both, random_sample, min_labelled)
    if problem:
        return Corrected(None, None, None, problem, None, n, total, classical, raw)
    theta, se, lam, notes = _ppi(y[both], f[both], f[~both], finite_population)
    return Corrected(theta, (theta - z * se, theta + z * se), se, None, lam, n, total, classical, raw, notes)


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


# -- planning ------------------------------------------------------------------------------------


def labels_needed(
    verdicts: ArrayLike,
    labels: ArrayLike,
    *,
    random_sample: bool,
    target: float = 0.05,
    level: float = 0.95,
    min_labelled: int = MIN_LABELLED,
    finite_population: bool = False,
) -> LabelPlan:
    """Fewest further random human labels after which the PPI++ half-width is at most `target`.

    From the current moments (Var_l(Y), Cov_l(Y, f), Var_all(f)), for n' = n, ..., N labelled
    and m' = N - n' unlabelled items, lambda(n') = clip(Cov / ((1 + n'/m') Var(f)), 0, 1) and
        half-width(n') = z sqrt( lambda^2 Var(f)/m' + (Var(Y) - 2 lambda Cov + lambda^2 Var(f))/n' ),
    the variance of `ppi_mean` (Angelopoulos, Duchi & Zrnic 2023, as there) with the moments held
    fixed; at n' = N it is z sqrt(Var(Y)/N). With finite_population, lambda' = lambda N/m' and
        half-width(n') = z sqrt( (1 - n'/N) (Var(Y) - 2 lambda' Cov + lambda'^2 Var(f)) / n' ),
    0 at n' = N (Cochran 1977, Theorem 7.1, as in `ppi_mean`). A projection: the moments
    themselves move as labels come in. Accepts one judge (N,) or several (N, J) like `ppi_mean`.
    """
    f2, y, labelled = _inputs(verdicts, labels, judges=True)
    total = len(y)
    problem = "no items in the cell" if total == 0 else _problem(f2, y, labelled, random_sample, min_labelled)
    if problem:
        return LabelPlan(None, None, None, target, problem)
    f = f2.mean(axis=1)
    n = int(labelled.sum())
    yl, fl = y[labelled], f[labelled]
    var_y, cov = float(yl.var()), float(np.mean((yl - yl.mean()) * (fl - fl.mean())))
    var_f = float(np.var(f, ddof=1))
    z = normal_quantile(level)
    now = z * _ppi(yl, fl, f[~labelled], finite_population)[1]
    if now <= target:
        return LabelPlan(0, now, now, target)
    if n == total:
        return LabelPlan(None, now, now, target, f"every item is labelled and the half-width is {now:.3f} > {target}")
    n_new = np.arange(n + 1, total + 1, dtype=float)
    m_new = total - n_new
    with np.errstate(divide="ignore", invalid="ignore"):
        lam = np.where((m_new > 0) & (var_f > 0), np.clip(cov / ((1 + n_new / m_new) * var_f), 0, 1), 0.0)
        if finite_population:
            lam = np.where(m_new > 0, lam * total / m_new, 0.0)
            var = (1 - n_new / total) * (var_y - 2 * lam * cov + lam**2 * var_f) / n_new
        else:
            var = np.where(m_new > 0, lam**2 * var_f / m_new, 0.0) + (var_y - 2 * lam * cov + lam**2 * var_f) / n_new
    half = z * np.sqrt(np.maximum(var, 0))
    reached = np.flatnonzero(half <= target)
    if reached.size == 0:
        reason = f"even with all {total} items labelled the half-width would be {half[-1]:.3f} > {target}"
        return LabelPlan(None, now, float(half[-1]), target, reason)
    k = int(reached[0])
    return LabelPlan(k + 1, now, float(half[k]), target)
