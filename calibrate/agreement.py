"""Agreement statistics: how far a judge (or a second human) agrees with human labels.

Everything here works from a confusion table (two raters) or a units x categories count table
(many raters), so it is fast at any n. Each estimator's docstring gives its formula and a
reference. Degenerate inputs (n < 2, a single class, no data) never raise and never return a
bare NaN: the value is None (or the defined limit) and `reason` says why in words.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import krippendorff
import numpy as np
from scipy import stats
from sklearn.metrics import cohen_kappa_score

DEFAULT_RESAMPLES = 1000
DEFAULT_SEED = 20251126
MIN_PLANNING_N = 30
JEFFREYS = 0.5
ALT_TEST_MIN_ITEMS = 30


@dataclass
class Estimate:
    """A statistic with an optional CI and standard error, or None with the reason.
    `undefined_share` is the share of resamples or posterior draws in which the statistic was
    undefined (counted, never silently dropped); `ci_reason` says why there is no interval."""

    value: float | None
    ci: tuple[float, float] | None = None
    se: float | None = None
    reason: str | None = None
    undefined_share: float | None = None
    ci_reason: str | None = None

    def as_dict(self) -> dict:
        return {"value": self.value, "ci": list(self.ci) if self.ci else None, "se": self.se, "reason": self.reason,
                "undefined_share": self.undefined_share, "ci_reason": self.ci_reason}


def _with_interval(value: float | None, draws: np.ndarray, **extra) -> Estimate:
    ci, share, why = interval_from_draws(draws)
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
    """n, raw agreement, Cohen's kappa (scikit-learn's cohen_kappa_score; analytic SE), Gwet's
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
    a_codes = np.repeat(np.repeat(np.arange(k), k), table.ravel())
    b_codes = np.repeat(np.tile(np.arange(k), k), table.ravel())
    defined = _finite(kappa_from_tables(table)) is not None  # p_e < 1; sklearn would warn and give NaN
    kappa_value = float(cohen_kappa_score(a_codes, b_codes, labels=list(range(k)))) if defined else None
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
        for weights in ("linear", "quadratic"):
            value = _finite(cohen_kappa_score(a_codes, b_codes, labels=list(range(k)), weights=weights))
            setattr(result, f"kappa_{weights}", Estimate(value))
    return result


# -- many raters ---------------------------------------------------------------------------------


def fleiss_kappa(counts: np.ndarray) -> Estimate:
    """Fleiss' kappa from a units x categories table of counts (n_ij raters put unit i in j).

    P_i = (sum_j n_ij^2 - n_i) / (n_i (n_i - 1)), P_bar = mean_i P_i,
    p_j = sum_i n_ij / sum_i n_i, P_e = sum_j p_j^2, kappa = (P_bar - P_e) / (1 - P_e).
    Fleiss, J. L. (1971). Measuring nominal scale agreement among many raters. Psychol. Bull.
    76, 378-382. Units rated by fewer than two raters are left out.
    """
    counts = np.asarray(counts, dtype=float)
    n_i = counts.sum(axis=1)
    counts, n_i = counts[n_i >= 2], n_i[n_i >= 2]
    if len(counts) < 2:
        return Estimate(None, reason="needs at least two units rated by two or more raters")
    p_i = ((counts**2).sum(axis=1) - n_i) / (n_i * (n_i - 1))
    p_j = counts.sum(axis=0) / n_i.sum()
    pe = float((p_j**2).sum())
    if pe >= 1:
        return Estimate(None, reason="every rating is the same class: kappa is undefined")
    return Estimate(float((p_i.mean() - pe) / (1 - pe)))


def krippendorff_alpha(reliability: np.ndarray, level: str = "nominal") -> Estimate:
    """Krippendorff's alpha = 1 - D_o / D_e over a raters x units matrix (NaN = not rated),
    computed by the `krippendorff` package.
    Krippendorff, K. (2011). Computing Krippendorff's alpha-reliability. Annenberg School for
    Communication, University of Pennsylvania."""
    data = np.asarray(reliability, dtype=float)
    pairable = (np.isfinite(data).sum(axis=0) >= 2).sum()
    if pairable < 1:
        return Estimate(None, reason="no unit was rated by two or more raters")
    values = np.unique(data[np.isfinite(data)])
    if len(values) < 2:
        return Estimate(None, reason="every rating is the same value: alpha is undefined")
    return Estimate(_finite(krippendorff.alpha(reliability_data=data, level_of_measurement=level)))


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


def score_agreement(
    a: Sequence[float], b: Sequence[float], *, threshold: float = 60.0, bin_width: float = 10.0,
    resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
) -> ScoreAgreement:
    """Scores on 0-100: Spearman's rho and Pearson's r (scipy), mean absolute error
    MAE = mean |a - b|, quadratic-weighted kappa on bins of `bin_width` (Cohen, J. (1968).
    Weighted kappa. Psychol. Bull. 70, 213-220), and kappa on pass/fail at `threshold`."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
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


@dataclass
class AltTest:
    ran: bool
    winning_rate: float | None = None
    passed: bool | None = None
    epsilon: float = 0.2
    annotators: int = 0
    reason: str | None = None
    per_annotator: dict[str, dict] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def alternative_annotator_test(
    items: dict[int, dict[str, str]], judge: dict[int, str], *, epsilon: float = 0.2, alpha: float = 0.05,
) -> AltTest:
    """Can the judge replace a human? The alternative annotator test of Calderon, N., Reichart,
    R., & Dror, R. (2025). The Alternative Annotator Test for LLM-as-a-Judge. ACL 2025.

    For each annotator j and each item i that j and at least one other human labelled, the
    alignment of a rater f with the others is S(f, i) = mean_{k != j} 1[f_i = h_k,i]. The judge
    wins item i if S(judge, i) >= S(h_j, i), and h_j wins if S(h_j, i) >= S(judge, i). With
    d_i = W_judge,i - W_hj,i, a one-sided paired t-test of H0: mean(d) <= -epsilon, corrected
    across annotators with Benjamini-Yekutieli at `alpha`. The winning rate omega is the share of
    annotators whose H0 is rejected; the judge passes when omega >= 0.5.
    """
    annotators = sorted({a for labels in items.values() for a in labels})
    if len(annotators) < 3:
        return AltTest(False, epsilon=epsilon, annotators=len(annotators),
                       reason=f"needs 3 or more annotators on shared items; this cell has {len(annotators)}")
    p_values, detail = [], {}
    for j in annotators:
        diffs = []
        for item_id, labels in items.items():
            if j not in labels or item_id not in judge or len(labels) < 2:
                continue
            others = [label for a, label in labels.items() if a != j]
            s_judge = sum(judge[item_id] == o for o in others) / len(others)
            s_human = sum(labels[j] == o for o in others) / len(others)
            diffs.append(int(s_judge >= s_human) - int(s_human >= s_judge))
        if len(diffs) < 2:
            detail[j] = {"items": len(diffs), "p": None}
            continue
        d = np.asarray(diffs, dtype=float) + epsilon
        if np.ptp(d) == 0:
            p = 0.0 if d[0] > 0 else 1.0
        else:
            p = float(stats.ttest_1samp(d, 0.0, alternative="greater").pvalue)
        p_values.append((j, p))
        detail[j] = {"items": len(diffs), "p": p, "judge_advantage": float(np.mean(diffs))}
    if len(p_values) < 3:
        return AltTest(False, epsilon=epsilon, annotators=len(annotators), per_annotator=detail,
                       reason="fewer than 3 annotators share 2 or more judged items with others")
    adjusted = stats.false_discovery_control([p for _, p in p_values], method="by")
    for (j, _), q in zip(p_values, adjusted, strict=True):
        detail[j]["p_adjusted"] = float(q)
        detail[j]["rejected"] = bool(q < alpha)
    omega = float(np.mean([detail[j]["rejected"] for j, _ in p_values]))
    return AltTest(True, omega, omega >= 0.5, epsilon, len(annotators), per_annotator=detail)


# -- planning ------------------------------------------------------------------------------------


def items_for_half_width(n: int, ci: tuple[float, float] | None, target: float = 0.1) -> int | None:
    """More labelled items needed so the CI half-width h falls under `target`, assuming it
    shrinks as 1/sqrt(n) (standard-error scaling): n_needed = n (h / target)^2. Below 30 items
    a bootstrap interval says little (it can even be zero-width), so the plan asks for at
    least 30."""
    if not ci or n < 2:
        return None
    half = (ci[1] - ci[0]) / 2
    needed = max(MIN_PLANNING_N, int(math.ceil(n * (half / target) ** 2)))
    return max(0, needed - n)
