"""The human-human ceiling: how far people agree with each other on the items several of them
labelled, and the judge beside them on the same items.

Krippendorff's alpha for any number of raters (and the four levels of measurement), vectorised
over resampled units; the judge's kappa against people next to the people's own kappa (two
annotators) or alpha (three or more), each with a posterior interval over what the judge and
the people said together, a paired interval for the difference and a verdict in words.
Degenerate data give a value or a reason, never a bare NaN (as in `calibrate.stats.agreement`).
"""

from __future__ import annotations

import itertools
import math
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


def alpha_from_coincidences(o: np.ndarray, values: np.ndarray, level: str = "nominal", *,
                            population: bool = False) -> np.ndarray:
    """Krippendorff's alpha from coincidence matrices o (..., V, V), vectorised:
    alpha = 1 - (n - 1) sum_ck o_ck d2_ck / sum_ck n_c n_k d2_ck, n_c = sum_k o_ck, n = sum_c n_c,
    with the metric d2: nominal [c != k]; interval (v_c - v_k)^2; ratio ((v_c - v_k)/(v_c + v_k))^2;
    ordinal (sum_{g=c..k} n_g - (n_c + n_k)/2)^2.
    Krippendorff, K. (2011). Computing Krippendorff's alpha-reliability. Annenberg School for
    Communication, University of Pennsylvania. NaN where the expected disagreement is 0.
    With `population`, o holds the population's coincidences in any scale (shares of pairable
    values) and the factor is n instead of n - 1: alpha = 1 - D_o / D_e with D_o = sum o d2 / n
    and D_e = sum n_c n_k d2 / n^2, the limit of the sample's alpha as its values grow."""
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
        return np.where(expected > 0, 1 - (n if population else n - 1) * observed / expected, np.nan)


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


CEILING_PRIOR = 2.0
"""The total mass of the Dirichlet prior of the ceiling's posterior with yes/no labels; with k
labels CEILING_PRIOR / (k - 1). With two people it is spread evenly over the k^3 (judge, first person,
second person) cells (1/4 a cell with yes/no labels); with three or more over the (verdict,
label counts) cells, shared by the numbers of labels the items have in proportion to their
items and within each evenly (`_pattern_posterior`). Its centre, every cell alike, agrees
above chance and below perfect (three people's alpha 1/3 with yes/no labels), which widens
small samples' intervals toward the middle.

Two people, simulated with yes/no labels (prevalence .5, .75 and .9, people and judge wrong 5,
15 and 25 % of the time, 300 datasets per setting): 1/4 a cell covered at least 86.2 %
from 10 items (the judge's kappa, near-perfect raters) and 91 % from 50, where the percentile
bootstrap over items fell to 71.7 % (the people's kappa, 10 items, prevalence .9) and 76.2 %
(the difference, 30 items); Jeffreys' 1/2 over-covered (up to 100 %) and 1/8 fell to 88 % at
20 items. With three labels (`ceiling_coverage.py --people 2`) 1/4 a cell, 6.75 in all,
covered the people's kappa 36-45 % of the time up to 20 items (high agreement pulled toward the
centre); CEILING_PRIOR / (k - 1), 1/27 a cell, 81 % or more (the judge's kappa, 10 items).

Three or more, in a first look (yes/no and three labels, people wrong 5 or 20 % of the time,
150-200 datasets a setting at 10 and 20 items): a total of 2 with three labels left the people's alpha at 82 % (10
items), a total of 1 with yes/no labels the difference at 88-89 %, and CEILING_PRIOR / (k - 1)
kept the three intervals at 85 % or more (CEILING_APPROXIMATE); 1/4 a cell put so much mass on
three labels' many cells that the people's alpha at high agreement was covered 14-22 % of the
time; centring the prior at chance instead (every (verdict, person, ...) sequence alike,
gathered into these cells) covered the difference 80 % with a total of 1 and the people's alpha
38 % with 4. The percentile bootstrap over items, on the same datasets as the posterior,
covered the difference 54-60 % of the time at 10 items and 79 % at 20."""

CEILING_APPROXIMATE = {
    2: ((10, 0.810, 0.877, 0.927), (20, 0.890, 0.903, 0.897), (30, 0.897, 0.907, 0.903),
        (50, 0.910, 0.907, 0.913), (100, 0.910, 0.920, 0.910)),
    3: ((10, 0.873, 0.880, 0.870), (20, 0.897, 0.910, 0.890), (30, 0.900, 0.910, 0.910),
        (50, 0.917, 0.907, 0.910), (100, 0.920, 0.903, 0.910)),
    4: ((10, 0.847, 0.867, 0.887), (20, 0.893, 0.900, 0.873), (30, 0.903, 0.907, 0.887),
        (50, 0.903, 0.917, 0.910), (100, 0.923, 0.917, 0.923)),
}
"""Per number of people (4: four or more), rows of (items, then the lowest simulated coverage
of the judge's, the people's and the difference's 95 % posterior interval at that many items),
each the lower of two simulations of 300 datasets per setting: two people, `python
tests/bench/ceiling_coverage.py 300 --people 2 --sizes 10 20 30 50 100` and the yes/no grid of
CEILING_PRIOR's docstring; three and four, `ceiling_coverage.py 300 --sizes 10 20 30 50 100`
with every label given and with `--missing 0.25`. An interval from n items takes the figures of
the largest simulated size at most n and is marked approximate with its figure where that is
below PROMISED_COVERAGE. Beyond 100 items nothing was simulated and nothing is marked (posterior
intervals near 95 % as n grows: at 100 items they covered 90 % or more)."""

LARGEST_SIMULATED = 100


def _approximate(people: int, n: int) -> tuple[float | None, float | None, float | None]:
    """The simulated coverage of the ceiling's three intervals from `n` items and `people`
    people where below PROMISED_COVERAGE (CEILING_APPROXIMATE), else None."""
    rows = [row for row in CEILING_APPROXIMATE[min(people, 4)] if row[0] <= n]
    if not rows or n > LARGEST_SIMULATED:
        return None, None, None
    return tuple(c if c < PROMISED_COVERAGE else None for c in rows[-1][1:])


def _joint_kappas(tables: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The judge's and the people's Cohen's kappa from (..., k, k, k) tables of (judge, first
    person, second person): the judge against both people pooled (a pair per label), the people
    against each other."""
    return kappa_from_tables(tables.sum(axis=-1) + tables.sum(axis=-2)), kappa_from_tables(tables.sum(axis=-3))


MAX_PATTERN_CELLS = 1_000
"""Most (verdict, label counts) cells for the posterior of three or more people: 4,000 draws of
800-odd cells took 0.8 s on a busy machine (the Gamma variates of small shapes dominate). Three
labels from up to ten people (2-10 labels an item: 846 cells) and four from up to six (820)
stay below it, five from five with some missing (1,230) do not; beyond it the ceiling has no
interval, and says why."""


def _label_patterns(total: int, k: int) -> np.ndarray:
    """Every way `total` people can split over k labels: (patterns, k) counts."""
    return np.array([np.bincount(c, minlength=k) for c in itertools.combinations_with_replacement(range(k), total)])


def _pattern_cells(counts: np.ndarray, k: int) -> int:
    """How many (verdict, label counts) cells the posterior of `_pattern_posterior` has."""
    return k * sum(math.comb(int(t) + k - 1, k - 1) for t in np.unique(counts.sum(axis=1)))


def _pattern_posterior(verdicts: np.ndarray, counts: np.ndarray, draws: int,
                       seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Posterior draws of the pooled (verdict, person) table and of the people's coincidence
    matrix, (draws, k, k) each, in the population the items come from, with three or more people.

    Both statistics read an item only through its pattern: the judge's verdict j and the
    people's label counts c = (c_1, ..., c_k) (who gave which label does not matter; an item
    with fewer labels has counts of a smaller total). The items are a multinomial sample over
    the cells (j, c) of the totals seen; their probabilities pi_jc get the posterior
    Dirichlet(n_jc + a_jc), a_jc from CEILING_PRIOR, drawn as normalised Gamma variates
    (Gelman et al. 2013, Bayesian Data Analysis, 3rd ed., sec. 3.4; the two-person ceiling's
    approach, Basu, Banerjee & Sen 2000, on cells that keep what alpha and kappa read). A draw's
    tables: pooled[j] = sum_c pi_jc c; coincidences = sum_jc pi_jc o(c), o(c) a unit's
    coincidence matrix (`coincidences`). The cost is O(draws x cells) whatever the items."""
    k = counts.shape[1]
    totals, items = np.unique(counts.sum(axis=1), return_counts=True)
    patterns = [_label_patterns(int(t), k) for t in totals]
    shape = np.vstack(patterns)
    prior = np.concatenate([np.full(len(p), CEILING_PRIOR / max(k - 1, 1) * m / len(counts) / len(p) / k)
                            for p, m in zip(patterns, items, strict=True)])
    radix = int(totals.max()) + 1
    codes = shape.astype(np.int64) @ radix ** np.arange(k, dtype=np.int64)
    order = np.argsort(codes)
    found = order[np.searchsorted(codes[order], counts.astype(np.int64) @ radix ** np.arange(k, dtype=np.int64))]
    cells = np.bincount(verdicts * len(shape) + found, minlength=k * len(shape)).reshape(k, len(shape))
    unit = coincidences(shape).reshape(len(shape), -1)
    rng, block = np.random.default_rng(seed), max(1, 2**20 // cells.size)  # draws at a time: bounded memory
    tables, pairs = np.empty((draws, k, k)), np.empty((draws, k * k))
    for start in range(0, draws, block):
        gammas = rng.gamma(cells + prior, size=(min(block, draws - start), k, len(shape)))
        gammas /= gammas.sum(axis=(1, 2), keepdims=True)
        tables[start:start + block], pairs[start:start + block] = gammas @ shape, gammas.sum(axis=1) @ unit
    return tables, pairs.reshape(draws, k, k)


def human_ceiling(items: dict, judge: dict, *, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED) -> Ceiling:
    """Judge-vs-human agreement beside human-vs-human agreement on the same items: those with two
    or more human labels and a judge verdict (`items`: item -> {annotator: label}; `judge`: item
    -> label, None = unparsed, left out and counted).

    Judge: Cohen's kappa on the pooled table of (judge, annotator) pairs, one pair per human
    label. Humans: Cohen's kappa when there are two annotators, Krippendorff's alpha (nominal)
    for three or more (both chance-corrected for nominal labels; Cohen 1960, Krippendorff 2011).
    The intervals are paired, equal-tailed posterior intervals, both statistics and their
    difference computed on each draw of the population's cell probabilities (the Bayesian
    multinomial approach of Basu, Banerjee & Sen 2000, Biometrics 56, 577-582, on the joint
    table): with two people the cells are (judge, first person, second person), drawn from
    Dirichlet(n_jab + a), a = CEILING_PRIOR / ((k - 1) k^3); with three or more, (verdict, the
    people's label counts), whatever each item's number of labels (`_pattern_posterior`), and
    the people's alpha of a draw is the population's (`alpha_from_coincidences`,
    population=True). Intervals simulated
    to cover less than PROMISED_COVERAGE are marked approximate (CEILING_APPROXIMATE); with
    more (verdict, label counts) cells than MAX_PATTERN_CELLS there is no interval, and the
    reason says why. Verdict:
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
    why = None
    if n < MIN_INTERVAL_ITEMS:
        why = f"{counted(n, 'item')}: too few to resample for an interval (needs {MIN_INTERVAL_ITEMS})"
    elif len(people) > 2 and (cells := _pattern_cells(counts, k)) > MAX_PATTERN_CELLS:
        why = (f"{k} labels, up to {int(counts.sum(axis=1).max())} an item, make {cells:,} (verdict, label counts) "
               f"cells: too many for the posterior interval (at most {MAX_PATTERN_CELLS:,})")
    draws = 0 if why else resamples
    if len(people) == 2:  # then every item has the two people's labels
        first_person, second_person = (shared_votes.annotators.index(name) for name in people)
        joint = np.zeros((k, k, k))
        np.add.at(joint, (index[verdicts], index[votes[:, first_person]], index[votes[:, second_person]]), 1)
        gammas = np.random.default_rng(seed).gamma(joint.ravel() + CEILING_PRIOR / max(k - 1, 1) / k**3, size=(draws, k ** 3))
        drawn = (gammas / gammas.sum(axis=1, keepdims=True)).reshape(draws, k, k, k)
        name, (judge_k, human_k) = "Cohen's kappa", _joint_kappas(np.concatenate([joint[None], drawn]))
    else:
        judge_pairs = np.zeros((n, k, k))
        judge_pairs[np.arange(n), index[verdicts]] = counts
        empty = np.empty((0, k, k))  # no draws: the patterns are not even enumerated (there may be too many)
        tables, pairs = _pattern_posterior(index[verdicts], counts, draws, seed) if draws else (empty, empty)
        judge_k = kappa_from_tables(np.concatenate([judge_pairs.sum(axis=0)[None], tables]))
        name = "Krippendorff's alpha (nominal)"
        human_k = np.concatenate([alpha_from_coincidences(coincidences(counts).sum(axis=0)[None], np.arange(k)),
                                  alpha_from_coincidences(pairs, np.arange(k), population=True)])
    diff = judge_k - human_k
    if why:
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
