"""Agreement statistics: how far a judge (or a second human) agrees with human labels.

Everything here works from a confusion table (two raters) or a units x categories count table
(many raters), so it is fast at any n; intervals come from vectorised posterior draws or
bootstrap resamples. Each estimator's docstring gives its formula and a reference. Degenerate
data (n < 2, a single class, no data) never raise and never return a bare NaN: the value is None
(or the defined limit) and `reason` says why in words; an interval that cannot be given is None
with `ci_reason`. Invalid input (scores outside 0-100, labels outside the label set) raises a
ValueError that names the problem.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import stats
from sklearn.metrics import cohen_kappa_score

from calibrate.model import Estimate

DEFAULT_RESAMPLES = 4000
DEFAULT_SEED = 20251126
MIN_PLANNING_N = 30
JEFFREYS = 0.5
ALT_TEST_MIN_ITEMS = 30
# Below this many units (items) a bootstrap over units gives no interval: n units have only
# C(2n - 1, n) distinct resamples (35 at n = 4, 126 at n = 5), so the percentile interval is
# a handful of values, e.g. "[-0.25, -0.11]" from two items, and a verdict read from it would
# claim what two items cannot show. At 10 units there are 92,378.
MIN_BOOTSTRAP_UNITS = 10


def _with_interval(value: float | None, draws: np.ndarray, **extra) -> Estimate:
    """An estimate with its posterior (or resampling) interval. At the edge of the parameter
    space (e.g. perfect agreement, kappa = 1) an equal-tailed posterior interval can stop short
    of the point estimate; it is then widened to include it, so no report prints an interval
    that excludes its own estimate (this can only raise coverage)."""
    ci, share, why = interval_from_draws(draws)
    if ci is not None and value is not None:
        ci = (min(ci[0], value), max(ci[1], value))
    return Estimate(value, ci, undefined_share=share, ci_reason=why, **extra)


def _finite(x) -> float | None:
    return float(x) if x is not None and np.isfinite(x) else None


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
    n = tables.sum(axis=(-1, -2)).astype(float)
    po = np.trace(tables, axis1=-2, axis2=-1) / n
    pe = (tables.sum(axis=-1) * tables.sum(axis=-2)).sum(axis=-1) / n**2
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(pe < 1, (po - pe) / (1 - pe), np.nan)


def ac1_from_tables(tables: np.ndarray) -> np.ndarray:
    """Gwet's AC1 for a stack of k x k tables, vectorised.

    AC1 = (p_a - p_e) / (1 - p_e), p_e = 1/(K-1) sum_k pi_k (1 - pi_k),
    pi_k = (n_k. + n_.k) / (2n), K = number of categories.
    Gwet, K. L. (2008). Computing inter-rater reliability and its variance in the presence of
    high agreement. Br. J. Math. Stat. Psychol. 61, 29-48 (eq. 7-8).
    """
    k = tables.shape[-1]
    n = tables.sum(axis=(-1, -2)).astype(float)
    pa = np.trace(tables, axis1=-2, axis2=-1) / n
    pi = (tables.sum(axis=-1) + tables.sum(axis=-2)) / (2 * n[..., None])
    pe = (pi * (1 - pi)).sum(axis=-1) / (k - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(pe < 1, (pa - pe) / (1 - pe), np.nan)


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


def interval_from_draws(draws: np.ndarray, level: float = 0.95) -> tuple[tuple[float, float] | None, float, str | None]:
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


def wilson_interval(successes: int, n: int, level: float = 0.95) -> tuple[float, float] | None:
    """Wilson score interval for a binomial proportion:
    (x + z^2/2) / (n + z^2)  +-  z sqrt(n p (1 - p) + z^2/4) / (n + z^2),  p = x / n.
    Wilson, E. B. (1927). Probable inference, the law of succession, and statistical inference.
    JASA 22, 209-212; recommended by Brown, L. D., Cai, T. T., & DasGupta, A. (2001). Interval
    estimation for a binomial proportion. Statist. Sci. 16, 101-133. None when n = 0."""
    if n <= 0:
        return None
    z = stats.norm.ppf((1 + level) / 2)
    p = successes / n
    centre = (successes + z * z / 2) / (n + z * z)
    half = z * math.sqrt(n * p * (1 - p) + z * z / 4) / (n + z * z)
    return max(0.0, centre - half), min(1.0, centre + half)


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
    for bound, word in ((0.2, "slight"), (0.4, "fair"), (0.6, "moderate"), (0.8, "substantial")):
        if value <= bound:
            return word
    return "almost perfect"


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
) -> TwoRaters:
    """n, raw agreement, Cohen's kappa (from the table, equal to scikit-learn's
    cohen_kappa_score, which the tests check; analytic SE), Gwet's
    AC1, PABAK, prevalence, per-class agreement, the confusion matrix, and for ordinal labels
    linear and quadratic weighted kappa. Give the paired labels (None = missing: the pair is
    left out and counted in `notes`), or a confusion `table` in `labels` order.

    Intervals (95 %). Raw agreement: Wilson score interval (see `wilson_interval`). Kappa and
    AC1: equal-tailed posterior interval over the contingency table, Dirichlet(n_ij + 1/2)
    (Jeffreys prior; see `posterior_tables`), `resamples` draws, the statistic computed on each
    draw. This is the Bayesian multinomial approach of Basu, S., Banerjee, M., & Sen, A. (2000).
    Bayesian inference for kappa from single and multiple studies. Biometrics 56, 577-582. It
    is chosen over the percentile bootstrap because it keeps close to 95 % coverage at small n
    and skewed prevalence, where the bootstrap resamples only the observed cells
    (tests/bench/coverage.py prints the simulated coverage). It exists even where the point
    estimate does not (a one-class table), since every posterior draw has all cells positive.

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
            notes.append(f"{missing} pair(s) with a missing label left out")
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
    agreement = Estimate(po, wilson_interval(int(np.trace(table)), n))

    if n < 2:
        reason = "n < 2: one item says nothing about chance agreement"
        return TwoRaters(n, labels, table.tolist(), po, Estimate(None, reason=reason), Estimate(None, reason=reason),
                         pabak, prevalence, per_class, agreement, notes=notes + [reason])

    used_a, used_b = np.flatnonzero(rows), np.flatnonzero(cols)
    kappa_value = _finite(kappa_from_tables(table))  # None where p_e = 1 (sklearn would warn and give NaN)
    draws = posterior_tables(table, resamples, seed)  # one set of draws serves kappa and AC1
    kappa = _with_interval(kappa_value, kappa_from_tables(draws), se=kappa_standard_error(table))
    if kappa_value is None:
        kappa.reason = f"both raters used only '{labels[int(used_a[0])]}': kappa is undefined (chance agreement is 1)"
    elif len(used_a) == 1 or len(used_b) == 1:
        kappa.reason = f"{'rater A' if len(used_a) == 1 else 'rater B'} used a single class: kappa is 0 by construction"
    elif po == 1:
        kappa.reason = "perfect agreement"
    if k < 2:
        ac1 = Estimate(None, reason="AC1 needs at least two categories in the label set")
    else:
        ac1 = _with_interval(_finite(ac1_from_tables(table)), ac1_from_tables(draws))
    result = TwoRaters(n, labels, table.tolist(), po, kappa, ac1, pabak, prevalence, per_class, agreement, notes=notes)
    if ordinal and kappa_value is not None:
        a_codes = np.repeat(np.repeat(np.arange(k), k), table.ravel())
        b_codes = np.repeat(np.tile(np.arange(k), k), table.ravel())
        for weights in ("linear", "quadratic"):
            value = _finite(cohen_kappa_score(a_codes, b_codes, labels=list(range(k)), weights=weights))
            setattr(result, f"kappa_{weights}", Estimate(value))
    return result


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
    discordant pairs to test."""
    table = np.asarray(table, dtype=float)
    if len(table) == 2:
        b, c = int(table[0, 1]), int(table[1, 0])
        if b + c == 0:
            return {"test": "McNemar (exact)", "statistic": 0, "df": None, "p": None, "reason": "no discordant pairs"}
        return {"test": "McNemar (exact)", "statistic": min(b, c), "df": None,
                "p": float(stats.binomtest(b, b + c, 0.5).pvalue), "reason": None}
    d = (table.sum(axis=1) - table.sum(axis=0))[:-1]
    cov = -(table + table.T)
    np.fill_diagonal(cov, table.sum(axis=1) + table.sum(axis=0) - 2 * np.diag(table))
    cov = cov[:-1, :-1]
    df = int(np.linalg.matrix_rank(cov))
    if df == 0:
        return {"test": "Stuart-Maxwell", "statistic": 0.0, "df": 0, "p": None, "reason": "no discordant pairs"}
    statistic = float(d @ np.linalg.pinv(cov) @ d)
    return {"test": "Stuart-Maxwell", "statistic": statistic, "df": df, "p": float(stats.chi2.sf(statistic, df)),
            "reason": None}


def judge_vs_human(table: np.ndarray, labels: Sequence[str], positive: str, level: float = 0.95) -> JudgeVsHuman:
    """For a confusion table with the judge in rows and the human label in columns:
    sensitivity = P(judge says `positive` | human says it), specificity = P(judge says another
    label | human does), each with a Wilson interval (see `wilson_interval`); with the table
    collapsed to positive / other (a = both positive, b = judge only, c = human only, d = neither):
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

    def proportion(x: int, total: int, who: str) -> Estimate:
        if total == 0:
            return Estimate(None, reason=f"no item where the human said {who}")
        return Estimate(x / total, wilson_interval(x, total, level))

    test = marginal_homogeneity(table)
    if test["p"] is not None and test["p"] < 0.05 and b != c:
        direction = "judge more lenient" if b > c else "judge harsher"
    else:
        direction = "no evidence of a difference"
    return JudgeVsHuman(positive, proportion(a, a + c, f"'{positive}'"), proportion(d, b + d, f"other than '{positive}'"),
                        (b - c) / n if n else None, (a - d) / n if n else None, test, direction)


# -- several people per item ----------------------------------------------------------------------


@dataclass
class Majority:
    """Gold label per item: the adjudicator's label where `gold_from` labelled the item, else the
    strict majority of the others; tied items get no gold and are listed, never dropped silently."""

    labels: dict
    ties: list
    from_gold: int
    items: int

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def majority_labels(items: dict, gold_from: str | None = None) -> Majority:
    """`items` maps item -> {annotator: label} (None = no label). Majority = the label with
    strictly more votes than any other; with a tie for the most votes the item is counted in
    `ties`. The adjudicator's (`gold_from`) label, where present, is the gold instead."""
    gold, ties, from_gold = {}, [], 0
    for item, votes in items.items():
        if gold_from is not None and votes.get(gold_from) is not None:
            gold[item] = votes[gold_from]
            from_gold += 1
            continue
        tally: dict = {}
        for label in votes.values():
            if label is not None:
                tally[label] = tally.get(label, 0) + 1
        if not tally:
            continue
        top = sorted(tally.values(), reverse=True)
        if len(top) > 1 and top[0] == top[1]:
            ties.append(item)
        else:
            gold[item] = max(tally, key=tally.get)
    return Majority(gold, ties, from_gold, len(items))


@dataclass
class Ceiling:
    """The judge against the human ceiling on the same items (see `human_ceiling`)."""

    n_items: int
    annotators: int
    judge: Estimate
    humans: Estimate
    human_statistic: str
    difference: Estimate
    verdict: str | None
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        out = dict(self.__dict__)
        for name in ("judge", "humans", "difference"):
            out[name] = getattr(self, name).as_dict()
        return out


def human_ceiling(items: dict, judge: dict, *, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED) -> Ceiling:
    """Judge-vs-human agreement beside human-vs-human agreement on the same items: those with two
    or more human labels and a judge verdict (`items`: item -> {annotator: label}; `judge`: item
    -> label, None = unparsed, left out and counted).

    Judge: Cohen's kappa on the pooled table of (judge, annotator) pairs, one pair per human
    label. Humans: Cohen's kappa when there are two annotators, Krippendorff's alpha (nominal)
    for three or more (both chance-corrected for nominal labels; Cohen 1960, Krippendorff 2011).
    The difference judge - humans gets a paired percentile bootstrap interval: items are
    resampled with replacement and both statistics are computed on the same resample (Efron &
    Tibshirani 1993, ch. 13). Verdict: "below the human ceiling" when the interval is below 0,
    "above" when above 0, else "within"; resamples where either statistic is undefined are
    counted in `difference.undefined_share`. With fewer than MIN_BOOTSTRAP_UNITS items the three
    estimates come without intervals (the reason is given) and there is no verdict."""
    notes: list[str] = []
    unparsed = [i for i, votes in items.items() if i in judge and judge[i] is None
                and sum(v is not None for v in votes.values()) >= 2]
    shared = {i: {a: v for a, v in votes.items() if v is not None} for i, votes in items.items()
              if judge.get(i) is not None and sum(v is not None for v in votes.values()) >= 2}
    if unparsed:
        notes.append(f"{len(unparsed)} item(s) with an unparsed judge verdict left out")
    people = sorted({a for votes in shared.values() for a in votes}, key=str)
    none = Estimate(None, reason="fewer than 2 items labelled by two or more people and judged")
    if len(shared) < 2:
        return Ceiling(len(shared), len(people), none, none, "", none, None, notes)
    labels = sorted({v for votes in shared.values() for v in votes.values()} | {judge[i] for i in shared}, key=str)
    index = {label: k for k, label in enumerate(labels)}
    k = len(labels)
    counts = np.zeros((len(shared), k))
    judge_pairs = np.zeros((len(shared), k, k))
    human_pairs = np.zeros((len(shared), k, k))
    for row, (item, votes) in enumerate(shared.items()):
        for label in votes.values():
            counts[row, index[label]] += 1
        judge_pairs[row, index[judge[item]]] = counts[row]
        if len(people) == 2 and len(votes) == 2:
            human_pairs[row, index[votes[people[0]]], index[votes[people[1]]]] = 1
    units = np.hstack([judge_pairs.reshape(len(shared), -1), human_pairs.reshape(len(shared), -1), counts])
    first, frequency, resampled = resample_units(units, resamples if len(shared) >= MIN_BOOTSTRAP_UNITS else 0, seed)
    weights = np.vstack([frequency, resampled])  # row 0: the items as observed
    judge_k = kappa_from_tables(np.tensordot(weights, judge_pairs[first], axes=1))
    if len(people) == 2:
        name, human_k = "Cohen's kappa", kappa_from_tables(np.tensordot(weights, human_pairs[first], axes=1))
    else:
        name = "Krippendorff's alpha (nominal)"
        human_k = alpha_from_coincidences(np.tensordot(weights, _coincidences(counts[first]), axes=1), np.arange(k))
    diff = judge_k - human_k
    if len(shared) < MIN_BOOTSTRAP_UNITS:
        why = f"{len(shared)} items: too few to resample for an interval (needs {MIN_BOOTSTRAP_UNITS})"
        judge_est, human_est, difference = (Estimate(_finite(x[0]), ci_reason=why) for x in (judge_k, human_k, diff))
    else:
        judge_est, human_est, difference = (_with_interval(_finite(x[0]), x[1:]) for x in (judge_k, human_k, diff))
    for est, who in ((judge_est, "judge vs humans"), (human_est, "humans")):
        if est.value is None:
            est.reason = f"{who}: undefined on these items (one class only)"
    verdict = None
    if difference.ci is None:
        difference.reason = difference.ci_reason
    elif difference.ci[1] < 0:
        verdict = "below the human ceiling"
    elif difference.ci[0] > 0:
        verdict = "above the human ceiling"
    else:
        verdict = "within the human ceiling"
    return Ceiling(len(shared), len(people), judge_est, human_est, name, difference, verdict, notes)


# -- many raters ---------------------------------------------------------------------------------


def _coincidences(counts: np.ndarray) -> np.ndarray:
    """Per-unit coincidence matrices (units, V, V) from a units x values count table:
    o_u,ck = (n_uc n_uk - [c = k] n_uc) / (m_u - 1), m_u = sum_c n_uc; units with m_u < 2 give 0
    (they are not pairable). Krippendorff (2011), section B."""
    counts = np.asarray(counts, dtype=float)
    m = counts.sum(axis=1)
    outer = counts[:, :, None] * counts[:, None, :] - counts[:, :, None] * np.eye(counts.shape[1])
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where((m >= 2)[:, None, None], outer / (m - 1)[:, None, None], 0.0)


def alpha_from_coincidences(o: np.ndarray, values: np.ndarray, level: str = "nominal") -> np.ndarray:
    """Krippendorff's alpha from coincidence matrices o (..., V, V), vectorised:
    alpha = 1 - (n - 1) sum_ck o_ck d2_ck / sum_ck n_c n_k d2_ck, n_c = sum_k o_ck, n = sum_c n_c,
    with the metric d2: nominal [c != k]; interval (v_c - v_k)^2; ratio ((v_c - v_k)/(v_c + v_k))^2;
    ordinal (sum_{g=c..k} n_g - (n_c + n_k)/2)^2.
    Krippendorff, K. (2011). Computing Krippendorff's alpha-reliability. Annenberg School for
    Communication, University of Pennsylvania. NaN where the expected disagreement is 0."""
    n_c = o.sum(axis=-1)
    n = n_c.sum(axis=-1)
    v = np.asarray(values, dtype=float)
    if level == "nominal":
        d2 = 1.0 - np.eye(len(v))
    elif level == "interval":
        d2 = (v[:, None] - v[None, :]) ** 2
    elif level == "ratio":
        with np.errstate(divide="ignore", invalid="ignore"):
            d2 = np.nan_to_num(((v[:, None] - v[None, :]) / (v[:, None] + v[None, :])) ** 2)
    elif level == "ordinal":
        idx = np.arange(len(v))
        lo, hi = np.minimum.outer(idx, idx), np.maximum.outer(idx, idx)
        cum = np.cumsum(n_c, axis=-1)
        d2 = (cum[..., hi] - cum[..., lo] + n_c[..., lo] - (n_c[..., :, None] + n_c[..., None, :]) / 2) ** 2
    else:
        raise ValueError(f"level must be nominal, ordinal, interval or ratio, not {level!r}")
    observed = (o * d2).sum(axis=(-1, -2))
    expected = (n_c[..., :, None] * n_c[..., None, :] * d2).sum(axis=(-1, -2))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(expected > 0, 1 - (n - 1) * observed / expected, np.nan)


def resample_units(rows: np.ndarray, resamples: int = DEFAULT_RESAMPLES,
                   seed: int = DEFAULT_SEED) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bootstrap resamples of units (units drawn with replacement; Efron, B., & Tibshirani,
    R. J. (1993). An Introduction to the Bootstrap, ch. 6), grouped by what the units hold.
    Units whose rows are equal are interchangeable, so drawing n units with replacement is
    drawing how many of the n come from each distinct row r: Multinomial(n, f_r / n), f_r its
    frequency. The cost is O(resamples x distinct rows) whatever n is. Returns one
    representative unit per distinct row, the frequencies f_r, and the (resamples, distinct
    rows) counts."""
    rows = np.asarray(rows).reshape(len(rows), -1)
    _, first, frequency = np.unique(rows, axis=0, return_index=True, return_counts=True)
    weights = np.random.default_rng(seed).multinomial(len(rows), frequency / len(rows), size=resamples)
    return first, frequency, weights


def krippendorff_alpha(reliability: np.ndarray, level: str = "nominal", *, resamples: int = DEFAULT_RESAMPLES,
                       seed: int = DEFAULT_SEED) -> Estimate:
    """Krippendorff's alpha over a raters x units matrix (NaN = not rated), with a 95 %
    percentile bootstrap interval over units (units resampled with replacement, alpha recomputed
    from the resampled coincidences; in the spirit of Hayes, A. F., & Krippendorff, K. (2007).
    Answering the call for a standard reliability measure for coding data. Commun. Methods Meas.
    1, 77-89, who bootstrap the pairable values). See `alpha_from_coincidences` for the formula;
    tests check it against the `krippendorff` package and Krippendorff (2011)'s worked example.
    Always a value or a reason; the interval is None with `ci_reason` when it cannot be given."""
    data = np.asarray(reliability, dtype=float)
    if data.ndim != 2:
        return Estimate(None, reason="needs a raters x units matrix")
    if np.isinf(data).any():
        return Estimate(None, reason="the ratings contain inf")
    data = data[:, np.isfinite(data).sum(axis=0) >= 2]
    if data.shape[1] < 1:
        return Estimate(None, reason="no unit was rated by two or more raters")
    values = np.unique(data[np.isfinite(data)])
    if len(values) < 2:
        return Estimate(None, reason="every rating is the same value: alpha is undefined")
    counts = np.stack([(data == v).sum(axis=0) for v in values], axis=1)
    o = _coincidences(counts)
    value = _finite(alpha_from_coincidences(o.sum(axis=0), values, level))
    if value is None:
        return Estimate(None, reason="no disagreement is expected by chance: alpha is undefined")
    if data.shape[1] < MIN_BOOTSTRAP_UNITS:
        return Estimate(value, ci_reason=f"{data.shape[1]} units: too few to resample for an interval "
                                         f"(needs {MIN_BOOTSTRAP_UNITS})")
    first, _, weights = resample_units(counts, resamples, seed)
    draws = alpha_from_coincidences(np.tensordot(weights, o[first], axes=1), values, level)
    return _with_interval(value, draws)


# -- scores (rubric) -----------------------------------------------------------------------------


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
        return Estimate(_finite(fn(x, y)[0]))

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


# -- alternative annotator test ------------------------------------------------------------------


EPSILON_GUIDANCE = {"experts": 0.2, "skilled annotators": 0.15, "crowd workers": 0.1}


@dataclass
class AltTest:
    ran: bool
    winning_rate: float | None = None
    passed: bool | None = None
    epsilon: float = 0.2
    annotators: int = 0
    reason: str | None = None
    per_annotator: dict[str, dict] = field(default_factory=dict)
    advantage_probability: float | None = None
    left_out: dict[str, str] = field(default_factory=dict)
    min_items: int = ALT_TEST_MIN_ITEMS
    epsilon_guidance: dict[str, float] = field(default_factory=lambda: dict(EPSILON_GUIDANCE))

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def alternative_annotator_test(
    items: dict, judge: dict, *, epsilon: float = 0.2, alpha: float = 0.05, min_items: int = ALT_TEST_MIN_ITEMS,
) -> AltTest:
    """Can the judge replace a human? The alternative annotator test (alt-test) of Calderon, N.,
    Reichart, R., & Dror, R. (2025). The Alternative Annotator Test for LLM-as-a-Judge: How to
    Statistically Justify Replacing Human Annotators with LLMs. ACL 2025, 16051-16081, as in the
    authors' reference code (github.com/nitaytech/AltTest).

    `items`: item -> {annotator: label}; `judge`: item -> label, where None (an unparsed verdict)
    is a label that matches no human. Items count when two or more humans labelled them and the
    judge gave a verdict. For each annotator j and each of j's items i, alignment with the others
    is S(f, i) = mean_{k != j} 1[f_i = h_k,i]; W_judge,i = 1[S(judge, i) >= S(h_j, i)],
    W_j,i = 1[S(h_j, i) >= S(judge, i)], d_i = W_j,i - W_judge,i. H0: mean(d) >= epsilon,
    tested one-sided (less) by a one-sample t-test when j has at least `min_items` (30, the
    paper's requirement for the t-test's normality) items, else by the paper's fallback, the
    Wilcoxon signed-rank test on d_i - epsilon. An annotator with no items is left out and
    named. The p-values are corrected across annotators with Benjamini-Yekutieli at `alpha`
    (Benjamini, Y., & Yekutieli, D. (2001). Ann. Statist. 29, 1165-1188): reject where the
    adjusted p <= alpha. Winning rate omega = share of tested annotators rejected; the judge
    passes when omega >= 0.5. Advantage probability rho = mean over annotators of mean_i
    W_judge,i. Where every d_i is equal the t-test is undefined (the reference code gets NaN and
    never rejects); here the exact sign test takes over: p = 2^-n when that value is below
    epsilon, else 1, so a handful of items can never pass the test.

    epsilon: the paper's guidance is 0.2 for experts, 0.15 for skilled annotators, 0.1 for crowd
    workers (`EPSILON_GUIDANCE`); the paper asks for three or more annotators."""
    humans = sorted({a for votes in items.values() for a, v in votes.items() if v is not None}, key=str)
    if len(humans) < 3:
        return AltTest(False, epsilon=epsilon, annotators=len(humans), min_items=min_items,
                       reason=f"needs 3 or more annotators on shared items; this cell has {len(humans)}")
    usable = {i: {a: v for a, v in votes.items() if v is not None} for i, votes in items.items() if i in judge}
    usable = {i: votes for i, votes in usable.items() if len(votes) >= 2}
    # S(f, i) for annotator j has the denominator m_i - 1 on both sides, so the comparisons are
    # made on the numerators: how many other annotators gave the judge's label, and j's label
    judge_wins: dict = {j: [] for j in humans}
    human_wins: dict = {j: [] for j in humans}
    for item, votes in usable.items():
        tally = Counter(votes.values())
        verdict = judge[item]
        for j, label in votes.items():
            judge_hits = tally[verdict] - (label == verdict) if verdict is not None else 0
            human_hits = tally[label] - 1
            judge_wins[j].append(judge_hits >= human_hits)
            human_wins[j].append(human_hits >= judge_hits)
    p_values, detail, left_out, advantages = [], {}, {}, []
    for j in humans:
        if not judge_wins[j]:
            left_out[j] = "no item shared with another annotator and the judge"
            continue
        d = np.asarray(human_wins[j], dtype=float) - np.asarray(judge_wins[j], dtype=float)
        if np.ptp(d) == 0:
            # every d_i - epsilon has one sign: the exact one-sided sign (and signed-rank) p-value
            test, p = "constant differences (sign test)", 0.5 ** len(d) if d[0] < epsilon else 1.0
        elif len(d) >= min_items:
            test, p = "t-test", float(stats.ttest_1samp(d, epsilon, alternative="less").pvalue)
        else:
            test, p = "Wilcoxon signed-rank", float(stats.wilcoxon(d - epsilon, alternative="less").pvalue)
        p_values.append((j, p))
        advantages.append(float(np.mean(judge_wins[j])))
        detail[j] = {"items": len(d), "test": test, "p": p, "advantage": advantages[-1]}
    if not p_values:
        return AltTest(False, epsilon=epsilon, annotators=len(humans), left_out=left_out, min_items=min_items,
                       reason="no annotator shares a judged item with another annotator")
    adjusted = stats.false_discovery_control([p for _, p in p_values], method="by")
    for (j, _), q in zip(p_values, adjusted, strict=True):
        detail[j]["p_adjusted"] = float(q)
        detail[j]["rejected"] = bool(q <= alpha)
    omega = float(np.mean([detail[j]["rejected"] for j, _ in p_values]))
    return AltTest(True, omega, omega >= 0.5, epsilon, len(humans), per_annotator=detail,
                   advantage_probability=float(np.mean(advantages)), left_out=left_out, min_items=min_items)


# -- planning ------------------------------------------------------------------------------------


def items_for_half_width(n: int, ci: tuple[float, float] | None, target: float = 0.1,
                         assurance: float = 0.8, level: float = 0.95) -> int | None:
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
    z = stats.norm.ppf((1 + level) / 2)
    sigma = (ci[1] - ci[0]) / 2 * math.sqrt(n) / z

    def half_width(total: int) -> float:
        return z * sigma * math.sqrt(stats.chi2.ppf(assurance, total - 1) / (total - 1)) / math.sqrt(total)

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
