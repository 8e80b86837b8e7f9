"""The alternative annotator test: could the judge replace one of the people?

Calderon, Reichart & Dror (2025): per annotator, does the judge align with the other people at
least as well as that annotator does, up to a margin epsilon; tested per annotator and
corrected for multiplicity. Needs three or more annotators on shared items; otherwise the
result says why it did not run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from calibrate.stats.shared_votes import NO_VOTE, NOT_JUDGED, SharedVotes

ALT_TEST_MIN_ITEMS = 30
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
    return alternative_annotator_test_coded(SharedVotes.from_dicts(items, judge), epsilon=epsilon, alpha=alpha,
                                            min_items=min_items)


def alternative_annotator_test_coded(shared_votes: SharedVotes, *, epsilon: float = 0.2, alpha: float = 0.05,
                                     min_items: int = ALT_TEST_MIN_ITEMS) -> AltTest:
    """`alternative_annotator_test` of the items and verdicts in `shared_votes` (rows in the
    order of the items), the alignments computed on arrays."""
    voted = shared_votes.votes != NO_VOTE
    columns = {shared_votes.annotators[a]: a for a in np.flatnonzero(voted.any(axis=0))}
    humans = sorted(columns, key=str)
    if len(humans) < 3:
        return AltTest(False, epsilon=epsilon, annotators=len(humans), min_items=min_items,
                       reason=f"needs 3 or more annotators on shared items; this cell has {len(humans)}")
    usable = np.flatnonzero((shared_votes.judge != NOT_JUDGED) & (voted.sum(axis=1) >= 2))
    votes, verdicts = shared_votes.votes[usable], shared_votes.judge[usable]
    every_label = np.arange(len(shared_votes.labels))
    tally = shared_votes.label_counts(usable, every_label).astype(np.int64)
    # S(f, i) for annotator j has the denominator m_i - 1 on both sides, so the comparisons are
    # made on the numerators: how many other annotators gave the judge's label, and j's label
    judge_wins: dict = {}
    human_wins: dict = {}
    for j in humans:
        rows = np.flatnonzero(votes[:, columns[j]] != NO_VOTE)  # j's items, in item order
        label, verdict = votes[rows, columns[j]], verdicts[rows]
        parsed = verdict >= 0
        judge_hits = np.where(parsed, tally[rows, np.where(parsed, verdict, 0)] - (label == verdict), 0)
        human_hits = tally[rows, label] - 1
        judge_wins[j], human_wins[j] = judge_hits >= human_hits, human_hits >= judge_hits
    return decision_from_wins(humans, judge_wins, human_wins, epsilon=epsilon, alpha=alpha, min_items=min_items)


def decision_from_wins(humans: list, judge_wins: dict, human_wins: dict, *, epsilon: float, alpha: float,
                   min_items: int) -> AltTest:
    """The test's decision from each annotator's wins (`alternative_annotator_test`): per
    annotator j in `humans`, W_judge and W_human over j's items in item order (empty: j is left
    out), the one-sided test of d_i = W_human,i - W_judge,i against epsilon, the
    Benjamini-Yekutieli correction, omega and rho."""
    p_values, detail, left_out, advantages = [], {}, {}, []
    for j in humans:
        if not len(judge_wins.get(j, ())):
            left_out[j] = "no item shared with another annotator and the judge"
            continue
        d = np.asarray(human_wins[j], dtype=float) - np.asarray(judge_wins[j], dtype=float)
        if np.ptp(d) == 0:
            # every d_i - epsilon has one sign: the exact one-sided sign (and signed-rank) p-value
            test, p = "constant differences (sign test)", 0.5 ** len(d) if d[0] < epsilon else 1.0
        elif len(d) >= min_items:
            test, p = "t-test", t_test_below_p(d, epsilon)
        else:
            from scipy import stats  # imported here only: scipy.stats takes a second to import

            test, p = "Wilcoxon signed-rank", float(stats.wilcoxon(d - epsilon, alternative="less").pvalue)
        p_values.append((j, p))
        advantages.append(float(np.mean(judge_wins[j])))
        detail[j] = {"items": len(d), "test": test, "p": p, "advantage": advantages[-1]}
    if not p_values:
        return AltTest(False, epsilon=epsilon, annotators=len(humans), left_out=left_out, min_items=min_items,
                       reason="no annotator shares a judged item with another annotator")
    adjusted = benjamini_yekutieli([p for _, p in p_values])
    for (j, _), q in zip(p_values, adjusted, strict=True):
        detail[j]["p_adjusted"] = float(q)
        detail[j]["rejected"] = bool(q <= alpha)
    omega = float(np.mean([detail[j]["rejected"] for j, _ in p_values]))
    return AltTest(True, omega, omega >= 0.5, epsilon, len(humans), per_annotator=detail,
                   advantage_probability=float(np.mean(advantages)), left_out=left_out, min_items=min_items)


def t_test_below_p(d: np.ndarray, mu: float) -> float:
    """The one-sample t-test's one-sided p-value of H0: mean >= `mu` against mean < `mu` (what
    `scipy.stats.ttest_1samp(d, mu, alternative="less")` gives): t = (mean(d) - mu) / (s /
    sqrt(n)), s the standard deviation with n - 1 degrees of freedom, p = F_{n-1}(t), the t
    distribution's CDF (Student (1908). The probable error of a mean. Biometrika 6, 1-25).
    `d` must not be constant (s = 0 leaves t undefined)."""
    from scipy.special import stdtr

    n = len(d)
    t = (float(np.mean(d)) - mu) / math.sqrt(float(np.var(d, ddof=1)) / n)
    return float(stdtr(n - 1, t))


def benjamini_yekutieli(p_values: list[float]) -> np.ndarray:
    """The p-values adjusted by Benjamini-Yekutieli's step-up procedure, in their order (what
    `scipy.stats.false_discovery_control(p, method="by")` gives): with the m p-values sorted,
    p_(1) <= ... <= p_(m), and c(m) = sum_{j=1}^m 1/j, the adjusted p_(i) = min(1, min_{k >= i}
    p_(k) m c(m) / k); rejecting where it is <= alpha controls the false discovery rate at alpha
    under any dependence (Benjamini, Y., & Yekutieli, D. (2001). The control of the false
    discovery rate in multiple testing under dependency. Ann. Statist. 29, 1165-1188, Thm 1.3)."""
    p = np.asarray(p_values, dtype=float)
    m = len(p)
    order = np.argsort(p)
    rank = np.arange(1, m + 1)
    scaled = p[order] * (m / rank) * np.sum(1 / rank)
    adjusted = np.empty(m)
    adjusted[order] = np.minimum.accumulate(scaled[::-1])[::-1]
    return np.minimum(adjusted, 1.0)
