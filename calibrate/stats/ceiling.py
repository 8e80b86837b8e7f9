"""The human-human ceiling: how far people agree with each other on the items several of them
labelled, and the judge beside them on the same items.

Krippendorff's alpha for any number of raters (and the four levels of measurement), vectorised
over resampled units; the judge's kappa against people next to the people's own kappa (two
annotators) or alpha (three or more), with a paired interval for the difference and a verdict
in words. Degenerate data give a value or a reason, never a bare NaN (as in
`calibrate.stats.agreement`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from calibrate.model import Estimate, counted
from calibrate.stats.agreement import kappa_from_tables
from calibrate.stats.intervals import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    MIN_INTERVAL_ITEMS,
    coincidences,
    estimate_from_draws,
    finite_or_none,
    resample_units,
)
from calibrate.stats.shared_votes import NO_VOTE, UNPARSED, SharedVotes
from calibrate.stats.simulated import PROMISED_COVERAGE

# -- Krippendorff's alpha --------------------------------------------------------------------------


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
    o = coincidences(counts)
    value = finite_or_none(alpha_from_coincidences(o.sum(axis=0), values, level))
    if value is None:
        return Estimate(None, reason="no disagreement is expected by chance: alpha is undefined")
    if data.shape[1] < MIN_INTERVAL_ITEMS:
        return Estimate(value, ci_reason=f"{data.shape[1]} units: too few to resample for an interval "
                                         f"(needs {MIN_INTERVAL_ITEMS})")
    first, _, weights = resample_units(counts, resamples, seed)
    draws = alpha_from_coincidences(np.tensordot(weights, o[first], axes=1), values, level)
    return estimate_from_draws(value, draws)


# -- the judge beside the human ceiling ------------------------------------------------------------


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


CEILING_PRIOR = 0.25
"""Per cell of the (judge, first person, second person) table, the Dirichlet prior of the
ceiling's posterior with two people. In tests/bench/ceiling_coverage.py (yes/no labels,
prevalence .5-.9, people and judge wrong 5-25 % of the time, 300 datasets per setting) its
intervals covered at least 86.2 % from 10 items (the judge's kappa, near-perfect raters) and
91 % from 50, where the percentile bootstrap over items, which this replaced, fell to 71.7 %
(the people's kappa, 10 items, prevalence .9) and 76.2 % (the difference, 30 items); in a first
look at a few settings, Jeffreys' 1/2 over-covered (up to 100 %) and 1/8 fell to 88 % at 20 items."""

CEILING_APPROXIMATE = {
    2: ((10, 0.862, 0.903, 0.927), (20, 0.897, 0.903, 0.897), (30, 0.897, 0.920, 0.923),
        (50, 0.913, 0.907, 0.913), (100, 0.910, 0.930, 0.923)),
    3: ((10, 0.773, 0.765, 0.726), (20, 0.828, 0.813, 0.703), (30, 0.869, 0.857, 0.773),
        (50, 0.887, 0.907, 0.837), (100, 0.913, 0.917, 0.920)),
}
"""Per number of people (3: three or more), rows of (items, then the lowest simulated coverage
of the judge's, the people's and the difference's 95 % interval at that many items), from
tests/bench/ceiling_coverage.py (300 datasets per setting; two people: the posterior,
CEILING_PRIOR; three: the percentile bootstrap with Krippendorff's alpha). An interval from n
items takes the figures of the largest simulated size at most n and is marked approximate with
its figure where that is below PROMISED_COVERAGE. Beyond 100 items nothing was simulated and
nothing is marked (percentile and posterior intervals near 95 % as n grows: at 100 items they
covered 91 % or more)."""

LARGEST_SIMULATED = 100


def _approximate(people: int, n: int) -> tuple[float | None, float | None, float | None]:
    """The simulated coverage of the ceiling's three intervals from `n` items and `people`
    people where below PROMISED_COVERAGE (CEILING_APPROXIMATE), else None."""
    rows = [row for row in CEILING_APPROXIMATE[min(people, 3)] if row[0] <= n]
    if not rows or n > LARGEST_SIMULATED:
        return None, None, None
    return tuple(c if c < PROMISED_COVERAGE else None for c in rows[-1][1:])


def _joint_kappas(tables: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The judge's and the people's Cohen's kappa from (..., k, k, k) tables of (judge, first
    person, second person): the judge against both people pooled (a pair per label), the people
    against each other."""
    return kappa_from_tables(tables.sum(axis=-1) + tables.sum(axis=-2)), kappa_from_tables(tables.sum(axis=-3))


def human_ceiling(items: dict, judge: dict, *, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED) -> Ceiling:
    """Judge-vs-human agreement beside human-vs-human agreement on the same items: those with two
    or more human labels and a judge verdict (`items`: item -> {annotator: label}; `judge`: item
    -> label, None = unparsed, left out and counted).

    Judge: Cohen's kappa on the pooled table of (judge, annotator) pairs, one pair per human
    label. Humans: Cohen's kappa when there are two annotators, Krippendorff's alpha (nominal)
    for three or more (both chance-corrected for nominal labels; Cohen 1960, Krippendorff 2011).
    The intervals are paired: with two people, equal-tailed posterior intervals from draws of
    the population's (judge, first person, second person) cell probabilities under
    Dirichlet(n_jab + CEILING_PRIOR), both kappas and their difference computed on each draw
    (the Bayesian multinomial approach of Basu, Banerjee & Sen 2000, Biometrics 56, 577-582, on
    the joint table); with three or more, a percentile bootstrap over items, both statistics
    computed on the same resample (Efron & Tibshirani 1993, ch. 13). Intervals simulated to
    cover less than PROMISED_COVERAGE are marked approximate (CEILING_APPROXIMATE). Verdict:
    "below the human ceiling" when the difference's interval is below 0, "above" when above 0,
    else "within"; draws where either statistic is undefined are counted in
    `difference.undefined_share`. With fewer than MIN_INTERVAL_ITEMS items the three estimates
    come without intervals (the reason is given) and there is no verdict."""
    return human_ceiling_coded(SharedVotes.from_dicts(items, judge), resamples=resamples, seed=seed)


def human_ceiling_coded(shared_votes: SharedVotes, *, resamples: int = DEFAULT_RESAMPLES,
                        seed: int = DEFAULT_SEED) -> Ceiling:
    """`human_ceiling` of the items and verdicts in `shared_votes` (rows in the order of the
    items), computed on arrays."""
    notes: list[str] = []
    labelled = (shared_votes.votes != NO_VOTE).sum(axis=1) >= 2
    unparsed = int((labelled & (shared_votes.judge == UNPARSED)).sum())
    rows = np.flatnonzero(labelled & (shared_votes.judge >= 0))
    if unparsed:
        notes.append(f"{counted(unparsed, 'item')} with an unparsed judge verdict left out")
    votes, verdicts = shared_votes.votes[rows], shared_votes.judge[rows]
    columns = np.flatnonzero((votes != NO_VOTE).any(axis=0))
    people = sorted((shared_votes.annotators[a] for a in columns), key=str)
    none = Estimate(None, reason="fewer than 2 items labelled by two or more people and judged")
    if len(rows) < 2:
        return Ceiling(len(rows), len(people), none, none, "", none, None, notes)
    used = np.unique(np.concatenate([votes[votes != NO_VOTE], verdicts]))
    order = np.array(sorted(used, key=lambda code: str(shared_votes.labels[code])), dtype=np.int64)
    index = np.full(len(shared_votes.labels), -1, dtype=np.int64)
    index[order] = np.arange(len(order))
    k, n = len(order), len(rows)
    counts = shared_votes.label_counts(rows, order)
    draws = resamples if n >= MIN_INTERVAL_ITEMS else 0
    if len(people) == 2:  # then every item has the two people's labels
        first_person, second_person = (shared_votes.annotators.index(name) for name in people)
        joint = np.zeros((k, k, k))
        np.add.at(joint, (index[verdicts], index[votes[:, first_person]], index[votes[:, second_person]]), 1)
        gammas = np.random.default_rng(seed).gamma(joint.ravel() + CEILING_PRIOR, size=(draws, k ** 3))
        drawn = (gammas / gammas.sum(axis=1, keepdims=True)).reshape(draws, k, k, k)
        name, (judge_k, human_k) = "Cohen's kappa", _joint_kappas(np.concatenate([joint[None], drawn]))
    else:
        judge_pairs = np.zeros((n, k, k))
        judge_pairs[np.arange(n), index[verdicts]] = counts
        first, frequency, resampled = resample_units(np.hstack([judge_pairs.reshape(n, -1), counts]), draws, seed)
        weights = np.vstack([frequency, resampled])  # row 0: the items as observed
        judge_k = kappa_from_tables(np.tensordot(weights, judge_pairs[first], axes=1))
        name = "Krippendorff's alpha (nominal)"
        human_k = alpha_from_coincidences(np.tensordot(weights, coincidences(counts[first]), axes=1), np.arange(k))
    diff = judge_k - human_k
    if n < MIN_INTERVAL_ITEMS:
        why = f"{counted(n, 'item')}: too few to resample for an interval (needs {MIN_INTERVAL_ITEMS})"
        judge_est, human_est, difference = (Estimate(finite_or_none(x[0]), ci_reason=why) for x in (judge_k, human_k, diff))
    else:
        judge_est, human_est, difference = (
            estimate_from_draws(finite_or_none(x[0]), x[1:], approximate=covered)
            for x, covered in zip((judge_k, human_k, diff), _approximate(len(people), n), strict=True))
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
    return Ceiling(n, len(people), judge_est, human_est, name, difference, verdict, notes)
