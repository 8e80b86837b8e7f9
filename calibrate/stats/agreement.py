"""Agreement of two raters on the same items: how far a judge (or a second human) agrees with a
human label, from their confusion table.

Cohen's kappa, Gwet's AC1, raw agreement, PABAK, prevalence and per-class agreement with their
intervals; the judge against the human label (sensitivity, specificity, Byrt's indices, a test
of marginal homogeneity, the direction in words); the usual words for kappa bands; and how many
more items an interval needs. Everything works from the k x k table, so it is fast at any n;
intervals come from vectorised posterior draws (`calibrate.stats.intervals`). Each estimator's
docstring gives its formula and a reference. Degenerate data (n < 2, a single class, no data)
never raise and never return a bare NaN: the value is None (or the defined limit) and `reason`
says why in words; an interval that cannot be given is None with `ci_reason`. Invalid input
(labels outside the label set, unpaired labels) raises a ValueError that names the problem.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from calibrate.model import Estimate, counted
from calibrate.stats.intervals import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    FEWER_THAN_MIN,
    LEVEL,
    MIN_INTERVAL_ITEMS,
    estimate_from_draws,
    finite_or_none,
    normal_quantile,
    posterior_tables,
    proportion,
)

MIN_PLANNING_N = 30
# what follows the cause in kappa's reason where it is undefined or 0 by construction (a report says the cause alone)
KAPPA_UNDEFINED = ": kappa is undefined (chance agreement is 1)"
KAPPA_ZERO_BY_CONSTRUCTION = ": kappa is 0 by construction"

AC1_WIDER_PRIOR = 0.25
"""AC1's interval is the union of the equal-tailed posterior intervals under Dirichlet(n_ij + 1/2)
(Jeffreys) and Dirichlet(n_ij + 1/4): in tests/bench/ac1_coverage.py, over 125 judge-vs-people
populations at n = 20, the Jeffreys interval alone fell to 82.6 % at prevalence 0.95 (78.9 %
at 0.98), the 1/4 prior's to 90.4 %, their union to 90.5 % at worst (below 93 % in 2 % of the
populations) while keeping 94.5-98.6 % on the equal-margin grid of tests/bench/coverage.py."""

AC1_APPROXIMATE = ((20, 0.95, 0.905), (50, 0.97, 0.905))
"""(most items, least prevalence, simulated coverage) where AC1's union interval is marked
approximate with that figure: in tests/bench/ac1_coverage.py (exact, 125 judge-vs-people
populations) it covered as little as 90.5 % at n = 20 with people's prevalence 0.95 (Se 1,
Sp 0.9), and at n = 50 with prevalence 0.98; at n = 50 and prevalence 0.95, 95.3 % or more. The
prevalence compared is that of the most frequent label, both raters pooled."""


# -- two raters ----------------------------------------------------------------------------------


def confusion(a: Sequence, b: Sequence, labels: Sequence) -> np.ndarray:
    """k x k counts: rows are rater A's label, columns rater B's, in `labels` order."""
    index = {label: n for n, label in enumerate(labels)}
    k = len(labels)
    codes = np.fromiter((index[x] * k + index[y] for x, y in zip(a, b, strict=True)), dtype=np.int64, count=len(a))
    return np.bincount(codes, minlength=k * k).reshape(k, k)


def kappa_from_tables(tables: np.ndarray) -> np.ndarray:
    """Cohen's kappa for a stack of k x k tables (..., k, k), vectorised.

    kappa = (p_o - p_e) / (1 - p_e), p_o = sum_i n_ii / n, p_e = sum_i (n_i. / n)(n_.i / n).
    Cohen, J. (1960). A coefficient of agreement for nominal scales. Educ. Psychol. Meas. 20, 37-46.
    Undefined (NaN here, turned into a reason by callers) when p_e = 1.
    """
    if tables.shape[-2:] == (2, 2):
        a, b, c, d, n = _two_by_two(tables)
        po = (a + d) / n
        pe = ((a + b) * (a + c) + (c + d) * (b + d)) / n**2
    else:
        n = tables.sum(axis=(-1, -2)).astype(float)
        po = np.trace(tables, axis1=-2, axis2=-1) / n
        pe = (tables.sum(axis=-1) * tables.sum(axis=-2)).sum(axis=-1) / n**2
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(pe < 1, (po - pe) / (1 - pe), np.nan)


def _two_by_two(tables: np.ndarray) -> tuple[np.ndarray, ...]:
    """The four cells n_11, n_12, n_21, n_22 of a stack of 2 x 2 tables and their total n as
    floats, for the two statistics above written out cell by cell: numpy's reductions over the
    4 cells of a table (and the 2 of a row or column) add them left to right, as these sums
    do, so the statistics are the same to the last bit (tests/test_agreement.py) at a tenth of
    the time on 4,000 posterior draws."""
    a, b, c, d = tables[..., 0, 0], tables[..., 0, 1], tables[..., 1, 0], tables[..., 1, 1]
    return a, b, c, d, (a + b + c + d).astype(float)


def ac1_from_tables(tables: np.ndarray) -> np.ndarray:
    """Gwet's AC1 for a stack of k x k tables, vectorised.

    AC1 = (p_a - p_e) / (1 - p_e), p_e = 1/(K-1) sum_k pi_k (1 - pi_k),
    pi_k = (n_k. + n_.k) / (2n), K = number of categories.
    Gwet, K. L. (2008). Computing inter-rater reliability and its variance in the presence of
    high agreement. Br. J. Math. Stat. Psychol. 61, 29-48 (eq. 7-8).
    """
    k = tables.shape[-1]
    if tables.shape[-2:] == (2, 2):
        a, b, c, d, n = _two_by_two(tables)
        pa = (a + d) / n
        first, second = ((a + b) + (a + c)) / (2 * n), ((c + d) + (b + d)) / (2 * n)
        pe = (first * (1 - first) + second * (1 - second)) / (k - 1)
    else:
        n = tables.sum(axis=(-1, -2)).astype(float)
        pa = np.trace(tables, axis1=-2, axis2=-1) / n
        pi = (tables.sum(axis=-1) + tables.sum(axis=-2)) / (2 * n[..., None])
        pe = (pi * (1 - pi)).sum(axis=-1) / (k - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(pe < 1, (pa - pe) / (1 - pe), np.nan)


def kappa_standard_error(table: np.ndarray) -> float | None:
    """Large-sample standard error of Cohen's kappa (non-null).

    var = [ sum_i p_ii ((1-p_e) - (p_i. + p_.i)(1-p_o))^2
            + (1-p_o)^2 sum_{i!=j} p_ij (p_.i + p_j.)^2 - (p_o p_e - 2 p_e + p_o)^2 ] / (n (1-p_e)^4)
    Fleiss, J. L., Cohen, J., & Everitt, B. S. (1969). Large sample standard errors of kappa and
    weighted kappa. Psychol. Bull. 72, 323-327.
    """
    n = table.sum()
    if n < 2:
        return None
    p = table / n
    rows, cols = p.sum(axis=1), p.sum(axis=0)
    po, pe = np.trace(p), float(rows @ cols)
    if pe >= 1:
        return None
    diag = sum(p[i, i] * ((1 - pe) - (rows[i] + cols[i]) * (1 - po)) ** 2 for i in range(len(p)))
    off = sum(p[i, j] * (cols[i] + rows[j]) ** 2 for i in range(len(p)) for j in range(len(p)) if i != j)
    var = (diag + (1 - po) ** 2 * off - (po * pe - 2 * pe + po) ** 2) / (n * (1 - pe) ** 4)
    return float(math.sqrt(var)) if var >= 0 else None


def interpret_kappa(value: float | None) -> str:
    """Landis, J. R., & Koch, G. G. (1977). The measurement of observer agreement for
    categorical data. Biometrics 33, 159-174: the usual words for kappa bands."""
    if value is None:
        return "undefined"
    if value < 0:
        return "poor"
    for bound, word in KAPPA_BANDS:
        if value <= bound:
            return word
    return "almost perfect"


KAPPA_BANDS = ((0.2, "slight"), (0.4, "fair"), (0.6, "moderate"), (0.8, "substantial"))
"""Landis and Koch's upper band limits; below 0 is "poor", above 0.8 "almost perfect"."""

TOO_UNCERTAIN = "too uncertain to name a band"


def kappa_band(value: float | None, ci: tuple[float, float] | None) -> str:
    """The Landis-Koch word for kappa (`interpret_kappa`) only where the data can tell the band:
    when the 95 % interval reaches no further than the bands next to the point estimate's, e.g.
    "substantial" for 0.70 [0.55, 0.83] (moderate to almost perfect). An interval reaching
    further, e.g. [-0.09, 1.00] from three agreeing items, gives TOO_UNCERTAIN with the bands it
    spans; no interval at all gives the same, since nothing shows how far kappa could be from
    its estimate."""
    if value is None:
        return "undefined"
    if ci is None:
        return f"{TOO_UNCERTAIN} (no interval)"
    words = ["poor", *(word for _, word in KAPPA_BANDS), "almost perfect"]
    band = words.index(interpret_kappa(value))
    low, high = words.index(interpret_kappa(ci[0])), words.index(interpret_kappa(ci[1]))
    if low >= band - 1 and high <= band + 1:
        return interpret_kappa(value)
    return f"{TOO_UNCERTAIN} ({words[low]} to {words[high]})"


@dataclass
class TwoRaters:
    """Agreement of rater A (e.g. the judge) with rater B (e.g. a human) on the same items.
    `raw_agreement` is `agreement.value`, kept as a plain number for existing callers."""

    n: int
    labels: list[str]
    table: list[list[int]]
    raw_agreement: float | None
    kappa: Estimate
    ac1: Estimate
    pabak: float | None
    prevalence: dict[str, float]
    per_class: dict[str, float | None]
    agreement: Estimate | None = None
    kappa_linear: Estimate | None = None
    kappa_quadratic: Estimate | None = None
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        out = {k: v for k, v in self.__dict__.items() if not isinstance(v, Estimate)}
        for name in ("agreement", "kappa", "ac1", "kappa_linear", "kappa_quadratic"):
            value = getattr(self, name)
            out[name] = value.as_dict() if value else None
        return out


def _paired_labels(a: Sequence, b: Sequence, labels: Sequence | None) -> tuple[list, list, list, int]:
    """Pairs where both labels are present (None marks a missing label), the label set, and how
    many pairs were left out for a missing label."""
    if len(a) != len(b):
        raise ValueError(f"rater A has {len(a)} labels and rater B {len(b)}: they must be paired item by item")
    kept = [(x, y) for x, y in zip(a, b, strict=True) if x is not None and y is not None]
    labels = list(labels) if labels is not None else sorted({x for pair in kept for x in pair}, key=str)
    unknown = sorted({x for pair in kept for x in pair} - set(labels), key=str)
    if unknown:
        raise ValueError(f"labels {unknown} are not in the label set {labels}")
    return [x for x, _ in kept], [y for _, y in kept], labels, len(a) - len(kept)


def two_raters(
    a: Sequence[str] | None = None,
    b: Sequence[str] | None = None,
    labels: Sequence[str] | None = None,
    *,
    table: np.ndarray | None = None,
    ordinal: bool = False,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    raters: tuple[str, str] = ("rater A", "rater B"),
) -> TwoRaters:
    """n, raw agreement, Cohen's kappa (from the table, equal to scikit-learn's
    cohen_kappa_score, which the tests check; analytic SE), Gwet's
    AC1, PABAK, prevalence, per-class agreement, the confusion matrix, and for ordinal labels
    linear and quadratic weighted kappa. Give the paired labels (None = missing: the pair is
    left out and counted in `notes`), or a confusion `table` in `labels` order.

    Intervals (95 %), none below MIN_INTERVAL_ITEMS items (`ci_reason` says so; the point
    estimates stay). Raw agreement: Wilson score interval (see `wilson_interval`). Kappa:
    equal-tailed posterior interval over the contingency table, Dirichlet(n_ij + 1/2)
    (Jeffreys prior; see `posterior_tables`), `resamples` draws, the statistic computed on each
    draw. AC1: the union of that interval and the one under Dirichlet(n_ij + 1/4)
    (AC1_WIDER_PRIOR), marked approximate where AC1_APPROXIMATE says. This is the Bayesian multinomial approach of Basu, S., Banerjee, M., & Sen, A. (2000).
    Bayesian inference for kappa from single and multiple studies. Biometrics 56, 577-582. It
    is chosen over the percentile bootstrap because it keeps close to 95 % coverage at small n
    and skewed prevalence, where the bootstrap resamples only the observed cells
    (tests/bench/coverage.py prints the simulated coverage). It exists even where the point
    estimate does not (a one-class table), since every posterior draw has all cells positive.
    Reasons name the raters as `raters` says (the report: the judge and the person).

    PABAK = (K p_o - 1) / (K - 1): Byrt, T., Bishop, J., & Carlin, J. B. (1993). Bias,
    prevalence and kappa. J. Clin. Epidemiol. 46, 423-429.
    Per-class (specific) agreement p_i = 2 n_ii / (n_i. + n_.i): Fleiss, J. L. (1975). Measuring
    agreement between two judges on the presence or absence of a trait. Biometrics 31, 651-659.
    """
    notes: list[str] = []
    if table is None:
        assert a is not None and b is not None
        a, b, labels, missing = _paired_labels(a, b, labels)
        if missing:
            notes.append(f"{counted(missing, 'pair')} with a missing label left out")
        table = confusion(a, b, labels)
    labels = list(labels or [])
    table = np.asarray(table, dtype=np.int64)
    n = int(table.sum())
    k = len(labels)
    empty = Estimate(None, reason="no items were labelled by both raters")
    if n == 0 or k == 0:
        return TwoRaters(0, labels, table.tolist(), None, empty, empty, None, {}, {}, empty, notes=notes + ["no data"])
    po = float(np.trace(table) / n)
    rows, cols = table.sum(axis=1), table.sum(axis=0)
    prevalence = {label: float((rows[i] + cols[i]) / (2 * n)) for i, label in enumerate(labels)}
    per_class = {
        label: (float(2 * table[i, i] / (rows[i] + cols[i])) if rows[i] + cols[i] else None)
        for i, label in enumerate(labels)
    }
    pabak = float((k * po - 1) / (k - 1)) if k > 1 else None
    agreement = proportion(int(np.trace(table)), n)
    agreement.se = None

    if n < 2:
        reason = "n < 2: one item says nothing about chance agreement"
        return TwoRaters(n, labels, table.tolist(), po, Estimate(None, reason=reason), Estimate(None, reason=reason),
                         pabak, prevalence, per_class, agreement, notes=notes + [reason])

    used_a, used_b = np.flatnonzero(rows), np.flatnonzero(cols)
    kappa_value = finite_or_none(kappa_from_tables(table))  # None where p_e = 1 (sklearn would warn and give NaN)
    few = n < MIN_INTERVAL_ITEMS  # the point estimates only
    draws = None if few else posterior_tables(table, resamples, seed)  # one set of draws serves kappa and AC1
    kappa = (Estimate(kappa_value, ci_reason=FEWER_THAN_MIN) if few else
             estimate_from_draws(kappa_value, kappa_from_tables(draws), se=kappa_standard_error(table)))
    if kappa_value is None:
        kappa.reason = f"both raters used only '{labels[int(used_a[0])]}'{KAPPA_UNDEFINED}"
    elif len(used_a) == 1 or len(used_b) == 1:
        who, used = (raters[0], used_a) if len(used_a) == 1 else (raters[1], used_b)
        kappa.reason = f"{who} used a single class ('{labels[int(used[0])]}'){KAPPA_ZERO_BY_CONSTRUCTION}"
    elif po == 1:
        kappa.reason = "perfect agreement"
    if k < 2:
        ac1 = Estimate(None, reason="AC1 needs at least two categories in the label set")
    elif few:
        ac1 = Estimate(finite_or_none(ac1_from_tables(table)), ci_reason=FEWER_THAN_MIN)
    else:
        ac1 = _ac1(table, draws, resamples, seed, n, max(prevalence.values()))
    result = TwoRaters(n, labels, table.tolist(), po, kappa, ac1, pabak, prevalence, per_class, agreement, notes=notes)
    if ordinal and kappa_value is not None:
        # imported here only: importing scikit-learn takes a second
        from sklearn.metrics import cohen_kappa_score

        a_codes = np.repeat(np.repeat(np.arange(k), k), table.ravel())
        b_codes = np.repeat(np.tile(np.arange(k), k), table.ravel())
        for weights in ("linear", "quadratic"):
            value = finite_or_none(cohen_kappa_score(a_codes, b_codes, labels=list(range(k)), weights=weights))
            setattr(result, f"kappa_{weights}", Estimate(value))
    return result


def _ac1(table: np.ndarray, draws: np.ndarray, resamples: int, seed: int, n: int, prevalence: float) -> Estimate:
    """AC1 with the union of its Jeffreys and AC1_WIDER_PRIOR posterior intervals, marked
    approximate where AC1_APPROXIMATE says."""
    value = finite_or_none(ac1_from_tables(table))
    ac1 = estimate_from_draws(value, ac1_from_tables(draws))
    wider = estimate_from_draws(value, ac1_from_tables(posterior_tables(table, resamples, seed, AC1_WIDER_PRIOR)))
    if ac1.ci is not None and wider.ci is not None:
        ac1.ci = (min(ac1.ci[0], wider.ci[0]), max(ac1.ci[1], wider.ci[1]))
        ac1.approximate = next((covered for most, least, covered in AC1_APPROXIMATE
                                if n <= most and prevalence >= least), None)
    return ac1


# -- the judge against the human label -----------------------------------------------------------


@dataclass
class JudgeVsHuman:
    """How the judge (rows) errs against the human label (columns) for one positive label."""

    positive: str
    sensitivity: Estimate
    specificity: Estimate
    bias_index: float | None
    prevalence_index: float | None
    homogeneity: dict
    direction: str

    def as_dict(self) -> dict:
        out = dict(self.__dict__)
        out["sensitivity"], out["specificity"] = self.sensitivity.as_dict(), self.specificity.as_dict()
        return out


def marginal_homogeneity(table: np.ndarray) -> dict:
    """Do the two raters use the labels equally often? For 2 labels the exact McNemar test:
    with b = n_12, c = n_21, p = two-sided binomial test of b out of b + c at 1/2 (McNemar, Q.
    (1947). Note on the sampling error of the difference between correlated proportions or
    percentages. Psychometrika 12, 153-157). For k > 2 the Stuart-Maxwell test: d_i = n_i. - n_.i
    (i < k), S_ii = n_i. + n_.i - 2 n_ii, S_ij = -(n_ij + n_ji), X^2 = d' S^-1 d ~ chi^2(k - 1)
    (Stuart, A. (1955). Biometrika 42, 412-416; Maxwell, A. E. (1970). Br. J. Psychiatry 116,
    651-655). Returns {test, statistic, df, p}; p is None with a reason when there are no
    discordant pairs to test. The binomial at 1/2 is symmetric, so the two-sided p (the
    probability of a count no likelier than b's, as `scipy.stats.binomtest` sums it) is
    min(1, 2 P(X <= m)), m = min(b, c), with P(X <= m) = I_{1/2}(n - m, m + 1), the regularized
    incomplete beta function (`betainc`, as accurate as scipy.stats' binomial); the chi-square's
    upper tail is `chdtrc`, which `scipy.stats.chi2.sf` calls."""
    from scipy import special

    table = np.asarray(table, dtype=float)
    if len(table) == 2:
        b, c = int(table[0, 1]), int(table[1, 0])
        if b + c == 0:
            return {"test": "McNemar (exact)", "statistic": 0, "df": None, "p": None, "reason": "no discordant pairs"}
        return {"test": "McNemar (exact)", "statistic": min(b, c), "df": None,
                "p": min(1.0, 2 * float(special.betainc(max(b, c), min(b, c) + 1, 0.5))), "reason": None}
    d = (table.sum(axis=1) - table.sum(axis=0))[:-1]
    cov = -(table + table.T)
    np.fill_diagonal(cov, table.sum(axis=1) + table.sum(axis=0) - 2 * np.diag(table))
    cov = cov[:-1, :-1]
    df = int(np.linalg.matrix_rank(cov))
    if df == 0:
        return {"test": "Stuart-Maxwell", "statistic": 0.0, "df": 0, "p": None, "reason": "no discordant pairs"}
    statistic = float(d @ np.linalg.pinv(cov) @ d)
    return {"test": "Stuart-Maxwell", "statistic": statistic, "df": df, "p": float(special.chdtrc(df, statistic)),
            "reason": None}


def judge_vs_human(table: np.ndarray, labels: Sequence[str], positive: str, level: float = LEVEL) -> JudgeVsHuman:
    """For a confusion table with the judge in rows and the human label in columns:
    sensitivity = P(judge says `positive` | human says it), specificity = P(judge says another
    label | human does), each with a Wilson interval (see `wilson_interval`); with the table
    collapsed to positive / other (none below MIN_INTERVAL_ITEMS items: `proportion`) (a = both positive, b = judge only, c = human only, d = neither):
    Byrt's bias index BI = (b - c) / n and prevalence index PI = (a - d) / n (Byrt, Bishop &
    Carlin 1993, J. Clin. Epidemiol. 46, 423-429); and a test of marginal homogeneity on the full
    table (`marginal_homogeneity`). `direction` in words: "judge more lenient" (says `positive`
    more often than people), "judge harsher", or "no evidence of a difference" at the 5 % level."""
    labels = list(labels)
    table = np.asarray(table, dtype=np.int64)
    i = labels.index(positive)
    others = [j for j in range(len(labels)) if j != i]
    a, b = int(table[i, i]), int(table[i, others].sum())
    c, d = int(table[others, i].sum()), int(table[np.ix_(others, others)].sum())
    n = a + b + c + d

    def rate(x: int, total: int, who: str) -> Estimate:
        estimate = proportion(x, total, level, none_reason=f"no item where the human said {who}")
        estimate.se = None
        return estimate

    test = marginal_homogeneity(table)
    if test["p"] is not None and test["p"] < 0.05 and b != c:
        direction = "judge more lenient" if b > c else "judge harsher"
    else:
        direction = "no evidence of a difference"
    return JudgeVsHuman(positive, rate(a, a + c, f"'{positive}'"), rate(d, b + d, f"other than '{positive}'"),
                        (b - c) / n if n else None, (a - d) / n if n else None, test, direction)


# -- planning ------------------------------------------------------------------------------------


def items_for_half_width(n: int, ci: tuple[float, float] | None, target: float = 0.1,
                         assurance: float = 0.8, level: float = LEVEL) -> int | None:
    """Further labelled items needed for an `assurance` (80 %) chance that the interval's
    half-width is at most `target`. From the current interval, sigma = h sqrt(n) / z (h its
    half-width, z the normal quantile of `level`); at N items the half-width is z s / sqrt(N),
    where s^2 ~ sigma^2 chi^2_{N-1} / (N - 1). The plan is the smallest N >= max(n, 30) with
    z sigma sqrt(chi^2_{N-1; assurance} / (N - 1)) / sqrt(N) <= target (Kupper, L. L., & Hafner,
    K. B. (1989). How appropriate are popular sample size formulas? Am. Stat. 43, 101-105;
    Beal, S. L. (1989). Sample size determination for confidence intervals on the population
    mean and on the difference between two population means. Biometrics 45, 969-977).
    Returns N - n. None (no plan) when there is no interval or it has zero width: the data then
    say nothing about the spread, and "0 more items" would be false."""
    if not ci or n < 2 or ci[1] - ci[0] <= 1e-12:
        return None
    z = normal_quantile(level)
    sigma = (ci[1] - ci[0]) / 2 * math.sqrt(n) / z

    def half_width(total: int) -> float:
        # the chi-square quantile chi2.ppf(assurance, total - 1), as scipy.stats computes it,
        # without its argument checks (called some twenty times per plan)
        from scipy import special

        chi2 = 2 * special.gammaincinv((total - 1) / 2, assurance)
        return z * sigma * math.sqrt(chi2 / (total - 1)) / math.sqrt(total)

    total = max(n, MIN_PLANNING_N)
    step = total
    while half_width(total + step) > target:  # doubling, then bisection: N is found in O(log N) steps
        step *= 2
    if half_width(total) > target:
        low, high = total, total + step
        while high - low > 1:
            mid = (low + high) // 2
            low, high = (mid, high) if half_width(mid) > target else (low, mid)
        total = high
    return total - n
