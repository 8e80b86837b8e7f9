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

from calibrate.model import Estimate
from calibrate.stats.agreement import kappa_from_tables
from calibrate.stats.intervals import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    MIN_BOOTSTRAP_UNITS,
    coincidences,
    estimate_from_draws,
    finite_or_none,
    resample_units,
)

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
    if data.shape[1] < MIN_BOOTSTRAP_UNITS:
        return Estimate(value, ci_reason=f"{data.shape[1]} units: too few to resample for an interval "
                                         f"(needs {MIN_BOOTSTRAP_UNITS})")
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
        human_k = alpha_from_coincidences(np.tensordot(weights, coincidences(counts[first]), axes=1), np.arange(k))
    diff = judge_k - human_k
    if len(shared) < MIN_BOOTSTRAP_UNITS:
        why = f"{len(shared)} items: too few to resample for an interval (needs {MIN_BOOTSTRAP_UNITS})"
        judge_est, human_est, difference = (Estimate(finite_or_none(x[0]), ci_reason=why) for x in (judge_k, human_k, diff))
    else:
        judge_est, human_est, difference = (estimate_from_draws(finite_or_none(x[0]), x[1:]) for x in (judge_k, human_k, diff))
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
