"""Judge reliability beyond agreement.

Agreement with people says how often a judge is right on average. Before letting a judge grade
a benchmark a team also needs to know whether it gives the same verdict twice (consistency),
whether its confidence means anything (calibration), which of its verdicts can be accepted
without a person (trust or escalate, in `calibrate.stats.trust_or_escalate`), and whether it is
biased (length, leniency towards a system or its own model family). A jury of judges is one
more judge to compare.

These are pure functions over arrays; the caller pulls the data from the store. Like
`calibrate.stats.agreement`, degenerate inputs give a value or a reason (an `Estimate` with
`value=None` and `reason`), never a crash or a bare NaN; malformed input (wrong shapes,
confidences outside [0, 1]) raises ValueError.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy.special import expit

from calibrate.model import Estimate
from calibrate.stats.ceiling import krippendorff_alpha
from calibrate.stats.intervals import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    FEWER_THAN_MIN,
    MIN_INTERVAL_ITEMS,
    normal_quantile,
    proportion,
    wilson_interval,
)
from calibrate.stats.trust_or_escalate import (
    confidence_and_outcome,
    is_label,
    is_missing,
    majority_confidence,
    verdict_table,
)

Z95 = normal_quantile(0.95)  # 1.959964...


# -- consistency (test-retest) -------------------------------------------------------------------


@dataclass
class Consistency:
    """Test-retest consistency of one judge over K repeats per item."""

    items: int  # items with two or more repeats
    flip_rate: Estimate
    alpha: Estimate
    unstable: list[int] = field(default_factory=list)  # row indices whose repeats disagree

    def as_dict(self) -> dict:
        """The figures; `unstable` (row indices of the caller's table) is left to the caller, who
        knows which items the rows are."""
        return {"items": self.items, "flip_rate": self.flip_rate.as_dict(), "alpha": self.alpha.as_dict()}


def consistency(verdicts, *, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED) -> Consistency:
    """Flip rate, agreement across repeats and the unstable items, from an items x K table of
    verdict labels (None or NaN = missing; UNPARSED, an answer without a label, counts as
    missing too: these figures compare the labels the judge gave, and how often its outputs
    do not parse is counted apart, as unparsed).

    Flip rate = share of items whose repeats are not all equal, over items with >= 2 repeats,
    with a 95 % Wilson interval (`calibrate.stats.intervals.proportion`). Agreement across
    repeats = nominal Krippendorff's alpha with the repeats as raters (Krippendorff, K. (2011).
    Computing Krippendorff's alpha-reliability), its 95 % interval the percentile bootstrap of
    `calibrate.stats.ceiling.krippendorff_alpha`, which resamples items with all their repeats
    (Efron & Tibshirani 1993, An Introduction to the Bootstrap, ch. 13) and gives none below
    MIN_INTERVAL_ITEMS items; `alpha.reason` then says why.
    """
    # items share a few rows of verdicts: each distinct row is read once, each item points to its own
    distinct: dict[tuple, int] = {}
    row_of = [distinct.setdefault(tuple(row), len(distinct)) for row in verdicts]
    rows = verdict_table(distinct)
    present = [[v for v in row if is_label(v)] for row in rows]
    rated_rows = [len(values) >= 2 for values in present]
    unstable_rows = [rated and len(set(values)) > 1 for rated, values in zip(rated_rows, present, strict=True)]
    rated = [i for i, row in enumerate(row_of) if rated_rows[row]]
    unstable = [i for i in rated if unstable_rows[row_of[i]]]
    flip = proportion(len(unstable), len(rated), none_reason="no item has two or more repeats")
    if not rated:
        return Consistency(0, flip, Estimate(None, reason="no item has two or more repeats"), [])
    labels = sorted({v for k, values in enumerate(present) if rated_rows[k] for v in values}, key=str)
    index = {label: n for n, label in enumerate(labels)}
    codes = np.full((len(rows), len(rows[0])), -1)
    for r, row in enumerate(rows):
        for j, v in enumerate(row):
            if is_label(v):
                codes[r, j] = index.get(v, -1)  # a row with fewer than two labels is not rated: its label has no code
    codes = codes[np.array([row_of[i] for i in rated])]
    reliability = np.where(codes >= 0, codes, np.nan).T  # raters (repeats) x units (items)
    alpha = krippendorff_alpha(reliability, resamples=resamples, seed=seed)
    if alpha.value is None and len(labels) == 1:
        alpha.reason = f"every repeat of every item said '{labels[0]}': alpha is undefined (no variation)"
    elif alpha.value is not None and alpha.ci is None:
        alpha.reason = alpha.ci_reason
    return Consistency(len(rated), flip, alpha, unstable)


# -- confidence from repeats ---------------------------------------------------------------------


# -- calibration against people ------------------------------------------------------------------


@dataclass
class Calibration:
    """How far the judge's confidence matches how often it agrees with people."""

    n: int
    ece: Estimate
    brier: Estimate
    bins: list[dict]  # per bin: lower, upper, count, confidence (mean), accuracy; for the diagram

    def as_dict(self) -> dict:
        return {"n": self.n, "ece": self.ece.as_dict(), "brier": self.brier.as_dict(), "bins": self.bins}


def calibration(confidence, correct, *, bins: int = 10) -> Calibration:
    """Expected calibration error, Brier score and the reliability-diagram data.

    `confidence` is the judge's P(its verdict) per item, `correct` is 1 when the verdict equals
    the human label. Equal-width bins B_b = ((b-1)/M, b/M], b = 1..M (confidence 0 goes to the
    first bin):
    ECE = sum_b (n_b / n) |acc_b - conf_b|, acc_b the share correct and conf_b the mean
    confidence in bin b. Naeini, Cooper & Hauskrecht (2015). Obtaining well calibrated
    probabilities using Bayesian binning. AAAI 2015; Guo, Pleiss, Sun & Weinberger (2017). On
    calibration of modern neural networks. ICML 2017 (eq. 3).
    Brier score of the event "the judge agrees with the human", forecast = confidence:
    BS = (1/n) sum_i (confidence_i - 1[verdict_i = human_i])^2. Brier, G. W. (1950). Verification
    of forecasts expressed in terms of probability. Mon. Weather Rev. 78, 1-3. Being a mean, it
    gets the standard error s / sqrt(n) (s the sample sd of the squared errors) and the normal
    95 % interval BS -+ 1.96 SE, clipped to [0, 1] (n >= 2). ECE has no interval; its
    `ci_reason` says why (ECE_NO_INTERVAL).
    """
    if bins < 1:
        raise ValueError("bins must be at least 1")
    conf, outcome = confidence_and_outcome(confidence, correct)
    n = len(conf)
    edges = np.arange(bins + 1) / bins  # b / M exactly as written, so 0.3 falls in (0.2, 0.3]
    if n == 0:
        reason = "no items have both a judge confidence and a human label"
        return Calibration(0, Estimate(None, reason=reason), Estimate(None, reason=reason), [])
    which = np.clip(np.searchsorted(edges, conf, side="left") - 1, 0, bins - 1)
    counts = np.bincount(which, minlength=bins)
    conf_sum = np.bincount(which, weights=conf, minlength=bins)
    hits = np.bincount(which, weights=outcome, minlength=bins)
    table = []
    for b in range(bins):
        c = int(counts[b])
        table.append({"lower": float(edges[b]), "upper": float(edges[b + 1]), "count": c,
                      "confidence": float(conf_sum[b] / c) if c else None,
                      "accuracy": float(hits[b] / c) if c else None})
    ece = float(np.abs(hits - conf_sum).sum() / n)  # n_b |acc_b - conf_b| = |hits_b - sum of conf in b|
    squared = (conf - outcome) ** 2
    brier = Estimate(float(squared.mean()))
    if n >= 2:
        brier.se = float(squared.std(ddof=1) / math.sqrt(n))
        if n >= MIN_INTERVAL_ITEMS:
            brier.ci = (max(0.0, brier.value - Z95 * brier.se), min(1.0, brier.value + Z95 * brier.se))
        else:
            brier.ci_reason = FEWER_THAN_MIN
    else:
        brier.reason = "one item: calibration from a single verdict says little"
    return Calibration(n, Estimate(ece, reason=brier.reason, ci_reason=ECE_NO_INTERVAL), brier, table)


ECE_NO_INTERVAL = ("ECE is biased upward at small n (a calibrated judge shows about 0.10 at 20 items), "
                   "and no resampling interval covers its true value for a well-calibrated judge")
"""Why ECE has no interval: in tests/bench/ece_coverage.py, for a calibrated judge (true ECE 0) the
percentile and BCa bootstrap intervals covered 0 % at every n and the basic one 74-81 %."""


# -- bias probes ---------------------------------------------------------------------------------


@dataclass
class Probe:
    """A bias probe: an estimate with its 95 % interval and what it means in plain words."""

    estimate: Estimate
    verdict: str
    n: int
    detail: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {"estimate": self.estimate.as_dict(), "verdict": self.verdict, "n": self.n, "detail": self.detail}


def logistic_fit(x: np.ndarray, y: np.ndarray, *, max_iter: int = 100, tol: float = 1e-10):
    """Maximum-likelihood logistic regression by Newton-Raphson (= IRLS):
    beta <- beta + (X'WX)^-1 X'(y - p), p = 1 / (1 + exp(-X beta)), W = diag(p (1 - p)).
    Wald standard errors from the observed information: SE = sqrt(diag((X'WX)^-1)).
    McCullagh, P., & Nelder, J. A. (1989). Generalized Linear Models, 2nd ed., section 4.4.
    Returns (beta, se, None) or (None, None, reason) when the maximum likelihood estimate does
    not exist (complete or quasi-complete separation: Albert, A., & Anderson, J. A. (1984).
    On the existence of maximum likelihood estimates in logistic regression models.
    Biometrika 71, 1-10) or the design is singular."""
    separated = "the verdict is (quasi-)separated by the predictors: the estimate is infinite"
    beta = np.zeros(x.shape[1])
    for iteration in range(max_iter):
        p = expit(x @ beta)
        info = x.T @ (x * (p * (1 - p))[:, None])
        try:
            step = np.linalg.solve(info, x.T @ (y - p))
        except np.linalg.LinAlgError:  # at the start p = 1/2, so only a singular design fails there
            return None, None, separated if iteration else "the design is singular (a predictor is collinear)"
        beta = beta + step
        if np.max(np.abs(beta)) > 30:  # odds ratios beyond e^30: diverging towards separation
            return None, None, separated
        if np.max(np.abs(step)) < tol:
            break
    else:
        return None, None, "the fit did not converge: the verdict is (nearly) separated by the predictors"
    p = expit(x @ beta)
    info = x.T @ (x * (p * (1 - p))[:, None])
    return beta, np.sqrt(np.diag(np.linalg.inv(info))), None


def length_bias(judge_yes, human_yes, length) -> Probe:
    """Does the judge say "yes" more for longer responses than people do?

    Logistic regression logit P(judge = yes) = b0 + b1 human + b2 z, z = (length - mean) / sd
    (population sd), fitted by maximum likelihood (`logistic_fit`). b2 is the change in the
    log-odds of a judge "yes" per standard deviation of length, holding the human label fixed;
    its 95 % Wald interval is b2 -+ 1.96 SE(b2). Above 0: the judge favours longer answers
    beyond what people's labels explain; below 0: shorter ones.
    When the judge gives one verdict on every item of a human class (e.g. "yes" whenever people
    said yes), the human term is quasi-separated and its estimate infinite; in that limit the
    likelihood of b2 is that of the other class alone, so those items (which say nothing about
    length) are set aside and b0 + b2 z is fitted on the rest, with a note in `detail`; the same
    fit serves when people gave one label throughout.
    Saito, K., Wachi, A., Wataoka, K., & Akimoto, Y. (2023). Verbosity bias in preference
    labeling by large language models. arXiv:2310.10076, measure the same bias against people.
    """
    y = np.asarray(judge_yes, dtype=float)
    h = np.asarray(human_yes, dtype=float)
    size = np.asarray(length, dtype=float)
    if not (y.ndim == h.ndim == size.ndim == 1 and len(y) == len(h) == len(size)):
        raise ValueError("judge_yes, human_yes and length must be 1-d and of the same length")
    if not (np.isin(y, (0, 1)).all() and np.isin(h, (0, 1)).all()):
        raise ValueError("judge_yes and human_yes must be 0/1 (or booleans)")
    n = len(y)

    def undecided(reason: str) -> Probe:
        return Probe(Estimate(None, reason=reason), f"cannot tell: {reason}", n)

    if n < 3:
        return undecided("fewer than 3 labelled items")
    if np.ptp(size) == 0:
        return undecided("every response has the same length")
    if np.ptp(y) == 0:
        return undecided(f"the judge said {'yes' if y[0] else 'no'} to every item")
    z = (size - size.mean()) / size.std()
    informative = [c for c in (0, 1) if len(set(y[h == c])) == 2]  # the judge varies here
    if not informative:
        return undecided("the judge's verdict is fixed by the human label: nothing is left to relate to length")
    detail = {"length_mean": float(size.mean()), "length_sd": float(size.std())}
    if len(informative) == 2:
        x, detail["terms"] = np.column_stack([np.ones(n), h, z]), ["intercept", "human", "length_z"]
    else:
        keep = h == informative[0]
        y, x, detail["terms"] = y[keep], np.column_stack([np.ones(keep.sum()), z[keep]]), ["intercept", "length_z"]
        people = "yes" if informative[0] else "no"
        detail["note"] = (f"fitted on the {int(keep.sum())} items people labelled {people}: on the others the "
                          f"judge gave one verdict throughout (or there were none)")
    beta, se, reason = logistic_fit(x, y)
    if reason:
        return undecided(reason)
    detail["coefficients"], detail["se"] = beta.tolist(), se.tolist()
    b, s = float(beta[-1]), float(se[-1])
    if n < MIN_INTERVAL_ITEMS:
        return Probe(Estimate(b, se=s, ci_reason=FEWER_THAN_MIN), f"cannot tell: {FEWER_THAN_MIN}", n, detail)
    ci = (b - Z95 * s, b + Z95 * s)
    if ci[0] > 0:
        verdict = "says yes more for longer answers than people do"
    elif ci[1] < 0:
        verdict = "says yes more for shorter answers than people do"
    else:
        verdict = "no evidence of a length bias"
    return Probe(Estimate(b, ci, s), verdict, n, detail)


def positive_rate_difference(judge_yes, human_yes) -> Estimate:
    """Judge positive rate minus human positive rate on the same items, theta = (b - c) / n,
    with b = judge yes & human no, c = judge no & human yes, and Newcombe's hybrid score
    interval for paired proportions (method 10):
    L = theta - sqrt((p1 - l1)^2 - 2 phi (p1 - l1)(u2 - p2) + (u2 - p2)^2),
    U = theta + sqrt((p2 - l2)^2 - 2 phi (p2 - l2)(u1 - p1) + (u1 - p1)^2),
    p1, p2 the judge's and the people's positive rates, (l, u) their 95 % Wilson intervals and
    phi the continuity-corrected correlation of the pairs, with A = ad - bc and
    D = (a+b)(c+d)(a+c)(b+d): phi = (A - n/2) / sqrt(D) if A > n/2, 0 if 0 <= A <= n/2,
    A / sqrt(D) if A < 0, and 0 when a margin is empty.
    Newcombe, R. G. (1998). Improved confidence intervals for the difference between binomial
    proportions based on paired data. Stat. Med. 17, 2635-2650; as set out in Fagerland, M. W.,
    Lydersen, S., & Laake, P. (2017). Statistical Analysis of Contingency Tables, ch. 8.
    No interval below MIN_INTERVAL_ITEMS items (`ci_reason`).
    """
    j = np.asarray(judge_yes, dtype=bool)
    h = np.asarray(human_yes, dtype=bool)
    if j.shape != h.shape or j.ndim != 1:
        raise ValueError("judge_yes and human_yes must be 1-d and of the same length")
    n = len(j)
    if n == 0:
        return Estimate(None, reason="no items labelled by both the judge and people")
    a, b = int(np.sum(j & h)), int(np.sum(j & ~h))
    c, d = int(np.sum(~j & h)), int(np.sum(~j & ~h))
    p1, p2 = (a + b) / n, (a + c) / n
    (l1, u1), (l2, u2) = wilson_interval(a + b, n), wilson_interval(a + c, n)
    margins = (a + b) * (c + d) * (a + c) * (b + d)
    cross = a * d - b * c
    shrunk = cross - n / 2 if cross > n / 2 else (cross if cross < 0 else 0.0)
    phi = shrunk / math.sqrt(margins) if margins else 0.0
    theta = (b - c) / n
    lower = theta - math.sqrt(max(0.0, (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2))
    upper = theta + math.sqrt(max(0.0, (p2 - l2) ** 2 - 2 * phi * (p2 - l2) * (u1 - p1) + (u1 - p1) ** 2))
    if n < MIN_INTERVAL_ITEMS:
        return Estimate(theta, ci_reason=FEWER_THAN_MIN)
    return Estimate(theta, (lower, upper))


def leniency(judge_yes, human_yes, systems: Sequence[str]) -> dict[str, Probe]:
    """Per system (the model under test): is the judge more lenient or harsher than people on
    that system's labelled items? The estimate is the paired difference of positive rates
    (`positive_rate_difference`); "lenient" when its interval lies above 0, "harsh" when below,
    else "no evidence". Compared across systems this shows leniency towards one system and,
    with `same_family`, self-preference (Panickssery, Bowman & Feng (2024). LLM evaluators
    recognize and favor their own generations. NeurIPS 2024)."""
    j, h = np.asarray(judge_yes, dtype=bool), np.asarray(human_yes, dtype=bool)
    names = np.asarray(list(systems), dtype=object)
    if not (j.shape == h.shape == names.shape):
        raise ValueError("judge_yes, human_yes and systems must be of the same length")
    out = {}
    for system in sorted(set(names.tolist()), key=str):
        mask = names == system
        estimate = positive_rate_difference(j[mask], h[mask])
        if estimate.ci_reason:
            verdict = f"cannot tell: {estimate.ci_reason}"
        elif estimate.ci and estimate.ci[0] > 0:
            verdict = "lenient: says yes more often than people do"
        elif estimate.ci and estimate.ci[1] < 0:
            verdict = "harsh: says yes less often than people do"
        else:
            verdict = "no evidence of a difference from people"
        out[system] = Probe(estimate, verdict, int(mask.sum()),
                            {"judge_rate": float(j[mask].mean()), "human_rate": float(h[mask].mean())})
    return out


def same_family(judge: str, system: str, families: Mapping[str, str]) -> bool | None:
    """True when the judge and the system are mapped to the same model family, False when both
    are mapped to different ones, None when either is not in `families` (unknown)."""
    if judge not in families or system not in families:
        return None
    return families[judge] == families[system]


# -- jury ----------------------------------------------------------------------------------------


@dataclass
class Jury:
    """Several judges combined into one verdict per item."""

    verdicts: list  # label (or mean score) per item; None when tied or nobody judged it
    ties: int
    unjudged: int

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def jury(verdicts, *, scores: bool = False) -> Jury:
    """Combine an items x judges table (None or NaN = that judge gave no parsed verdict).

    Labels: the plurality label among the judges who gave one; when two or more labels share
    the top count the item is unresolved (None) and counted in `ties` - never broken in
    favour of one label. Scores: the mean of the judges' scores. Items no judge gave a verdict
    on are None and counted in `unjudged`. Verga et al. (2024). Replacing judges with juries:
    evaluating LLM generations with a panel of diverse models. arXiv:2404.18796.
    """
    if scores:
        out, unjudged = [], 0
        for row in verdict_table(verdicts):
            values = [float(v) for v in row if not is_missing(v)]
            unjudged += not values
            out.append(sum(values) / len(values) if values else None)
        return Jury(out, 0, unjudged)
    majority = majority_confidence(verdicts)
    unjudged = sum(c is None for c in majority.confidence)
    return Jury(majority.verdicts, majority.ties, unjudged)
