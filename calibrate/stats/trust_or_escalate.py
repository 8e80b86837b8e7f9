"""Trust or escalate: which of a judge's verdicts can be accepted without a person, with a
guarantee of agreement with people (fixed-sequence testing with an exact binomial bound), how
many labelled items a certification needs, the shortfall a number of labels can detect, and
the confidence a verdict has from its repeats when the server gives no logprobs.

Apart from the other reliability statistics because it is on the start path of the annotation
app's escalate order and of `calibrate trust`: it needs numpy and `scipy.special` only (the
Beta quantile and the binomial distribution function), not scipy.stats or scikit-learn.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from calibrate.model import counted
from calibrate.stats.intervals import MIN_INTERVAL_ITEMS


def is_missing(x) -> bool:
    """A verdict that is not there: None or NaN."""
    return x is None or (isinstance(x, float) and math.isnan(x))


class _Unparsed:
    """The type of `UNPARSED` (one instance)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "UNPARSED"


UNPARSED = _Unparsed()
"""In a table of repeats, an answer that did not parse: the judge answered, with no label that
can be read. Unlike a missing verdict (None or NaN: a failed call, or no such repeat), it is an
answer, one that agrees with no label."""


def is_label(x) -> bool:
    """A verdict that gives a label: neither missing nor UNPARSED."""
    return not is_missing(x) and x is not UNPARSED


def verdict_table(verdicts) -> list[list]:
    """Rows of plain Python values (numpy scalars unwrapped, so results serialise as JSON)."""
    rows = [[v.item() if isinstance(v, np.generic) else v for v in row] for row in verdicts]
    if len({len(row) for row in rows}) > 1:
        raise ValueError("verdicts must be an items x repeats (or items x judges) table: rows differ in length")
    return rows


@dataclass
class MajorityVerdicts:
    """The majority verdict per item and the share of its answers (its repeats, or for the jury
    its judges) that gave it."""

    verdicts: list  # the majority label, or None on a tie or with no label
    confidence: list[float | None]  # share of the item's answers giving its most frequent label
    ties: int
    answers: list[int]  # the item's answers: its labels and UNPARSED ones (not the missing ones)

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def majority_confidence(verdicts) -> MajorityVerdicts:
    """Confidence from K repeats when the server gives no logprobs (self-consistency: Wang et al.
    (2023). Self-consistency improves chain of thought reasoning in language models. ICLR 2023):
    for item i with a_i answers (its labels and its UNPARSED outputs; a missing verdict, None or
    NaN, is a failed call that gave no answer and is left out) and n_ic answers giving label c,

        confidence_i = max_c n_ic / a_i,

    the share of the item's answers that gave its most frequent label. An unparsed output is an
    answer that did not agree with that label, so it counts in the denominator: two "yes" and one
    unparsed give 2/3, like two "yes" and one "no", where three "yes" give 1; two "yes" and one
    failed call give 2/2 = 1. `answers` holds a_i, for callers that need two or more answers
    before a share means anything (a single answer always gives 1).

    Ties: when two or more labels share the top count the majority verdict is None (the item is
    undecided and counted in `ties`) and the confidence is still that top share (e.g. 0.5 for
    one "yes" and one "no"), so a tied item never looks confident. An item with no label (no
    answer, or only unparsed ones) has verdict None and confidence None.
    """
    out_verdicts, confidence, answers, ties = [], [], [], 0
    for row in verdict_table(verdicts):
        given = [v for v in row if not is_missing(v)]
        answers.append(len(given))
        labels = [v for v in given if v is not UNPARSED]
        if not labels:
            out_verdicts.append(None)
            confidence.append(None)
            continue
        ranked = Counter(labels).most_common()
        top = ranked[0][1]
        tied = len(ranked) > 1 and ranked[1][1] == top
        ties += tied
        out_verdicts.append(None if tied else ranked[0][0])
        confidence.append(top / len(given))
    return MajorityVerdicts(out_verdicts, confidence, ties, answers)


def confidence_and_outcome(confidence, correct) -> tuple[np.ndarray, np.ndarray]:
    """Confidences in [0, 1] and 0/1 outcomes (agreed with people) as float arrays of one length;
    ValueError otherwise."""
    conf = np.asarray(confidence, dtype=float)
    outcome = np.asarray(correct, dtype=float)
    if conf.ndim != 1 or conf.shape != outcome.shape:
        raise ValueError("confidence and correct must be 1-d and of the same length")
    if not np.all(np.isfinite(conf)) or conf.min(initial=0) < 0 or conf.max(initial=1) > 1:
        raise ValueError("confidence must be finite and in [0, 1]")
    if not np.isin(outcome, (0, 1)).all():
        raise ValueError("correct must be 0/1 (or booleans)")
    return conf, outcome


MIN_CALIBRATION_FACTOR = 9
"""`minimum_calibration` is this many times `fewest_certifiable` (198 labelled items at target
0.9, risk 0.1), chosen by tests/bench/trust_simulation.py; see there."""


def fewest_certifiable(target: float, risk: float) -> int:
    """Fewest items whose exact test can certify `target` at `risk` at all: with k = n agreeing the
    Clopper-Pearson lower bound is risk^(1/n), at least target from n = ceil(log risk / log target)
    on (22 at target 0.9, risk 0.1)."""
    return math.ceil(math.log(risk) / math.log(target))


def minimum_calibration(target: float, risk: float) -> int:
    """Fewest labelled items (judge confidence and human label) from which a threshold should be
    certified: MIN_CALIBRATION_FACTOR x fewest_certifiable(target, risk), 198 at target 0.9 and
    risk 0.1. With fewer, the first threshold the fixed sequence may test accepts more than about
    a ninth of the labelled items, so for a judge that meets the target only on its most
    confident items a certification is rare and, when it comes, usually wrong on fresh items.
    Criterion (tests/bench/trust_simulation.py, informative but over-confident judges, risk 0.1):
    among runs that certify, at most about `risk` miss the target on fresh items, for every
    simulated judge that can meet the target on a quarter or more of its items. At target 0.9 a
    judge that meets it on its top 28 % had its certifications miss in 100 % of certified runs
    with 50 labelled items, 37 % with 100, 15 % with 150 and 9 % with 200; at 0.95 (405 items)
    and 0.8 (99 items) the same multiple kept it at 5 % and 10 %."""
    return MIN_CALIBRATION_FACTOR * fewest_certifiable(target, risk)


def detectable_shortfall(labels: int, target: float, risk: float, power: float = 0.8) -> float:
    """The smallest shortfall below `target` that `labels` labelled items detect with probability
    `power`: the exact one-sided binomial test at level `risk` of H0 agreement >= target rejects
    when the agreeing count k <= c, c the largest count with P(Bin(labels, target) <= c) <= risk;
    it does so with probability >= power exactly when the agreement p <= p*, where
        P(Bin(labels, p*) <= c) = power,  i.e.  p* = BetaQuantile(1 - power; c + 1, labels - c)
    (the binomial-beta identity P(Bin(n, p) <= c) = 1 - I_p(c + 1, n - c)), so the shortfall is
    target - p*. When no count is significant (c < 0) nothing below the target is detectable and
    the answer is `target` itself. As n grows it approaches the textbook
        (z_{1-risk} + z_{power}) sqrt(target (1 - target) / n),
    and so does the margin above the target that a judge needs to be certified
    with probability `power`. Clopper, C. J., & Pearson, E. S. (1934). Biometrika 26, 404-413;
    Chow, S.-C., Shao, J., & Wang, H. (2008). Sample Size Calculations in Clinical Research, 2nd
    ed., section 4.1 (one-sample proportion, exact test)."""
    from scipy.special import bdtr, betaincinv

    if labels < 1:
        raise ValueError("labels must be at least 1")
    counts = np.arange(labels + 1)
    significant = np.flatnonzero(bdtr(counts, labels, target) <= risk)
    if significant.size == 0:
        return float(target)
    c = int(significant[-1])
    return float(target - betaincinv(c + 1, labels - c, 1 - power))


@dataclass
class Trust:
    """The confidence threshold above which the judge's verdicts can be accepted."""

    met: bool
    target: float
    risk: float
    n: int  # human-labelled items used
    threshold: float | None = None  # accept the judge when confidence >= threshold
    coverage: float | None = None  # share of the n items at or above the threshold
    accepted: int = 0
    lowest_accepted: float | None = None  # the lowest confidence among the accepted items
    lower_bound: float | None = None  # one-sided (1 - risk) Clopper-Pearson lower bound there (not a guarantee)
    agreement: float | None = None  # empirical agreement among the accepted items
    best_lower_bound: float | None = None  # when not met: L at the first threshold tested
    reason: str | None = None
    shortfall: float | None = None  # detectable_shortfall of the accepted items (when met)
    min_calibration: int | None = None  # the minimum calibration size applied, if any
    without_confidence: int = 0  # labelled items with a verdict but no confidence, not in n (the caller counts them)

    def as_dict(self) -> dict:
        return dict(self.__dict__)


GRID_STEP = 0.001  # the step of `trust_threshold`'s default grid of thresholds, 1.000 down to 0.000


def lower_bound(agree, n, risk: float) -> np.ndarray:
    """One-sided (1 - risk) Clopper-Pearson lower bound for a binomial proportion (vectorised):
    L = Beta quantile(risk; k, n - k + 1), L = 0 when k = 0. P(Bin(n, L) >= k) = risk, so the
    exact test of H0: p <= t against p > t rejects at level `risk` exactly when L >= t.
    Clopper, C. J., & Pearson, E. S. (1934). The use of confidence or fiducial limits
    illustrated in the case of the binomial. Biometrika 26, 404-413."""
    from scipy.special import betaincinv

    k, n = np.asarray(agree), np.asarray(n)
    return np.where(k > 0, betaincinv(np.maximum(k, 1), n - k + 1, risk), 0.0)


def trust_threshold(confidence, correct, *, target: float = 0.9, risk: float = 0.1,
                    thresholds: Sequence[float] | None = None, min_items: int | None = None,
                    min_calibration: int | None = None) -> Trust:
    """Selective evaluation with a guarantee of human agreement: Jung, J., Brahman, F., & Choi, Y.
    (2025). Trust or Escalate: LLM Judges with Provable Guarantees for Human Agreement. ICLR 2025;
    fixed-sequence testing as in Angelopoulos, A. N., Bates, S., Candes, E. J., Jordan, M. I., &
    Lei, L. (2021). Learn then Test: calibrating predictive algorithms to achieve risk control.
    arXiv:2110.01052.

    For a threshold lambda let n(lambda) be the labelled items with confidence >= lambda and
    k(lambda) those among them where the judge agrees with the human. Thresholds are tested from
    the highest down; at each, the exact one-sided binomial test of H0: P(agree | confidence >=
    lambda) < target rejects at level `risk` iff the Clopper-Pearson lower bound
    L(k, n, risk) >= target (`lower_bound`; equivalently P(Bin(n, target) >= k) <= risk).
    Testing stops at the first non-rejection; the answer is the last (smallest) rejected threshold, for which
    P(agreement among accepted items >= target) >= 1 - risk. Fixed-sequence testing needs no
    multiplicity correction because each hypothesis is tested only if all before it were
    rejected.

    `thresholds` default to the fixed grid 1.000, 0.999, ..., 0.000 (a fixed grid keeps the
    sequence of hypotheses independent of the data; thresholds that accept the same items give
    the same test). Leading thresholds that accept fewer than `min_items` items are passed over
    before testing starts. By default min_items is `fewest_certifiable(target, risk)`, the fewest
    items whose test can reject at all (22 at target 0.9 and risk 0.1), and at least
    MIN_INTERVAL_ITEMS (10, from targets of about 0.77 down at risk 0.1), the fewest items any
    bound or interval is printed from. Without the skip,
    continuous (logprob) confidences put one or two items above the top thresholds, whose test
    cannot reject, so testing would stop there and refuse on almost any
    data (in the simulation in tests/test_reliability.py, on every run). The skip depends only
    on how many items each threshold accepts, not on whether they agree with people; that
    simulation checks that the guarantee still holds; `min_items=1` gives the strict procedure.
    The threshold returned is the smallest rejected value of the sequence; `lowest_accepted` is
    the lowest confidence among the items it accepts (with the default grid and repeat-based
    confidences such as 0.8, the threshold is 0.601 and it accepts exactly the items at 0.8 or
    above).
    When the first tested threshold is not rejected no threshold meets the target;
    `best_lower_bound` is then L at that threshold: the agreement its items do support at this
    risk, short of the target.

    What is guaranteed: over repeated calibration sets drawn at random from the same items, the
    probability that the procedure certifies a threshold at which the judge's agreement with
    people on fresh items is below `target` is at most `risk`. It is not the probability that a
    given certification is right: in tests/bench/trust_simulation.py, with 30 labelled items
    certifications are rare and 89-100 % of them miss the target; with 50, up to 100 % for a
    judge that meets it only on its most confident items. With `min_calibration`
    (`minimum_calibration(target, risk)` is the simulated choice) fewer labelled items are
    refused with a reason.
    `lower_bound` is the bound L at the threshold the data chose, not itself a guarantee (it
    exceeded the true agreement in up to 10.7 % of runs there);
    `shortfall` is `detectable_shortfall` of the accepted items.
    """
    if not 0 < target < 1 or not 0 < risk < 1:
        raise ValueError("target and risk must be strictly between 0 and 1")
    conf, outcome = confidence_and_outcome(confidence, correct)
    n = len(conf)
    result = Trust(False, target, risk, n)
    if min_items is None:
        min_items = max(fewest_certifiable(target, risk), MIN_INTERVAL_ITEMS)
    if n == 0:
        result.reason = "no items have both a judge confidence and a human label"
        return result
    if min_calibration is not None:
        result.min_calibration = min_calibration
        if n < min_calibration:
            result.reason = (f"{counted(n, 'labelled item')}: at least {min_calibration} are needed before a threshold is "
                             f"certified (with fewer, a certification is usually wrong on fresh items)")
            return result
    if thresholds is None:
        grid = np.round(np.linspace(1, 0, round(1 / GRID_STEP) + 1), 3)
    else:
        grid = np.sort(np.asarray(thresholds, dtype=float))[::-1]
    order = np.argsort(-conf, kind="stable")
    sorted_conf, cum_agree = conf[order], np.cumsum(outcome[order])
    accepted = np.searchsorted(-sorted_conf, -grid, side="right")  # items with confidence >= lambda
    grid, accepted = grid[accepted >= min_items], accepted[accepted >= min_items]
    if len(grid) == 0:
        result.reason = f"no threshold given accepts {min_items} or more of the {counted(n, 'labelled item')}"
        return result
    agree = cum_agree[accepted - 1].astype(int)
    bounds = lower_bound(agree, accepted, risk)
    failed = np.flatnonzero(bounds < target)
    last = (failed[0] if failed.size else len(grid)) - 1  # the last rejection before the first failure
    if last < 0:
        result.best_lower_bound = float(bounds[0])
        result.reason = (f"no threshold meets the target {target:g} at risk {risk:g}: the first tested, the "
                         f"{int(accepted[0])} most confident items (confidence {grid[0]:g} or more; the fewest the test "
                         f"takes: {min_items}), certify only {bounds[0]:.3f}")
        return result
    m, k = int(accepted[last]), int(agree[last])
    result.met, result.threshold, result.accepted = True, float(grid[last]), m
    result.lowest_accepted = float(sorted_conf[m - 1])
    result.coverage, result.lower_bound, result.agreement = m / n, float(bounds[last]), k / m
    result.shortfall = detectable_shortfall(m, target, risk)
    return result
