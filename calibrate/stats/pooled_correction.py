"""Corrected accuracy over several cells at once (one system over all its tasks and languages, say).

The labels of a cell are a random sample of that cell, not of the pooled items: one cell may
carry 30 labels, another none, a third labels picked by hand. Pooling the items and stratifying
by the judge's verdict alone would read the labelled cells' accuracy into the others, and print
an interval that no cell backs up. Here the pooled number exists only when every cell has its own
(`correction.stratified_mean`), and it is those numbers weighted by each cell's share of the
items, with the interval of their sum. Items no judge judges, whose accuracy is their human label
(C3's generation items, which people decide), join it as a stratum of their own (`decided`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from calibrate.stats.correction import (
    MIN_LABELLED,
    STRATUM_PRIOR,
    Corrected,
    _inputs,
    _stratified,
    stratified_mean,
    verdict_strata,
)
from calibrate.stats.intervals import proportion


def pooled_stratified_mean(
    verdicts: ArrayLike,
    labels: ArrayLike,
    cells: ArrayLike,
    names: Sequence[str],
    *,
    random_sample: bool,
    level: float = 0.95,
    min_labelled: int = MIN_LABELLED,
    prior: float = STRATUM_PRIOR,
    memo: dict | None = None,
    figure: str = "corrected number",
    decided: tuple[int, int, int] | None = None,
) -> Corrected:
    """Corrected accuracy over the N items of several cells, stratified by cell and, within each
    cell, by the judge's verdict (`cells`: the index into `names` of each item's cell).

    Cell c has N_c items and weight W_c = N_c / N; the accuracy over the N items is
        theta = sum_c W_c theta_c,
    theta_c the accuracy over cell c's items. The value is sum_c W_c theta_hat_c, each cell's
    post-stratified estimate of `stratified_mean` weighted by its share of the items (the
    stratified mean, Cochran, W. G. (1977). Sampling Techniques, 3rd ed., eq. 5.1, with strata
    cell x verdict post-stratified as in Holt, D., & Smith, T. M. F. (1979). Post
    stratification. J. R. Stat. Soc. A 142, 33-46). Under `stratified_mean`'s model, the cells'
    strata independent, N theta = sum_c S_c + sum_{c,k} X_ck with
    X_ck ~ BetaBinomial(m_ck, prior + s_ck, prior + n_ck - s_ck); its posterior is the exact
    convolution of all the cells' strata. The interval is the union of that posterior's
    equal-tailed interval (widened to contain the value) and the same quantiles of the posterior
    recentred on the value (shifted by the value minus its mean), clipped to what the labels leave
    possible, [S / N, (S + unlabelled items) / N]; `se` is the
    posterior sd, and the recentred posterior is kept for `correction.difference`. The prior
    pulls each stratum's posterior mean, (s + 1/2) / (n + 1), towards 1/2; in one cell the pull
    is small beside the interval's width, but it has the same sign in every cell of a system
    that is mostly right (or mostly wrong), so it adds up over K cells while the width shrinks
    like 1 / sqrt(K): in simulation the posterior interval alone covered 51 % for five cells at
    accuracy 0.97 with 20 labels each, the recentred one alone 91.5 % for ten cells at 0.5.
    Simulated coverage of the mean over the N items: tests/bench/correction_coverage.py
    --pooled (figures in its docstring); `approximate` is the lowest simulated coverage among
    the cells' own intervals where one is below 93 %.
    Refused (value None) unless every cell gives its own number with the same arguments; the
    reason names each cell without one and why. A single cell is `stratified_mean` itself.
    `memo` (a dict the caller keeps for a set of calls): each cell's own `stratified_mean` is
    worked out once for the same verdicts and labels (a system's overall row, then its cells).
    `decided` = (n_d, s_d, m_d): further items beside the cells' that no judge judges, their
    accuracy being their human label (C3's generation items, which people decide): n_d labelled,
    s_d of them right, m_d unlabelled. They count as one more stratum, S + s_d known and
    X_d ~ BetaBinomial(m_d, prior + s_d, prior + n_d - s_d) (the prior's 1/2 with its full
    uncertainty where none is labelled), so the value and the interval are over all N + n_d + m_d
    items: known exactly where all of them are labelled, and as wide as their unlabelled part
    leaves it. They need no minimum of labels (nothing of a judge is estimated from them).
    """
    f2, y, labelled = _inputs(verdicts, labels, judges=True)
    cell = np.asarray(cells, dtype=np.int64).ravel()
    if cell.shape != y.shape:
        raise ValueError(f"cells must be one index per item: {len(cell)} for {len(y)} items")
    present = np.unique(cell)

    def own(verdicts_of: np.ndarray, labels_of: np.ndarray) -> Corrected:
        """One cell's `stratified_mean`, from `memo` where it was worked out already."""
        key = (verdicts_of.shape, random_sample, level, min_labelled, prior,
               hashlib.blake2b(verdicts_of.tobytes() + labels_of.tobytes(), digest_size=16).digest())
        if memo is not None and key in memo:
            return memo[key]
        found = stratified_mean(verdicts_of, labels_of, random_sample=random_sample, level=level,
                                min_labelled=min_labelled, prior=prior)
        if memo is not None:
            memo[key] = found
        return found

    decided_n, decided_right, decided_m = decided or (0, 0, 0)
    if len(present) <= 1 and decided_n + decided_m == 0:
        return own(f2, y)
    masks = {names[c]: cell == c for c in present}
    parts = {name: own(f2[mask], y[mask]) for name, mask in masks.items()}
    n, total = int(labelled.sum()) + decided_n, len(y) + decided_n + decided_m
    correct = int(y[labelled].sum()) + decided_right
    classical = proportion(correct, n, level, none_reason="no labelled items")
    f = f2.mean(axis=1)
    raw = float((f.sum() + decided_right) / total)  # the judge's, the decided items by their label
    lacking: dict[str, list[str]] = {}  # why -> the cells it applies to
    for name, part in parts.items():
        if part.value is None:
            lacking.setdefault(str(part.reason), []).append(name)
    if lacking:
        return Corrected(None, None, None, _lacking_reason(lacking, len(parts), figure), None, n, total, classical, raw)
    strata = [stratum for mask in masks.values() for stratum in verdict_strata(f[mask], y[mask], labelled[mask])]
    if decided_m:
        strata.append((decided_n, decided_right, decided_m))
    value, posterior_ci, se, (theta, probability) = _stratified(strata, correct, total, level, prior)
    theta = theta + value - float(probability @ theta)  # recentred on the estimate
    low, high = theta[np.searchsorted(np.cumsum(probability), [(1 - level) / 2, (1 + level) / 2]).clip(0, len(theta) - 1)]
    # within what the labels leave possible: every unlabelled item wrong, or every one right
    possible = (correct / total, (correct + sum(m_k for _, _, m_k in strata)) / total)
    ci = (max(possible[0], min(float(low), posterior_ci[0])), min(possible[1], max(float(high), posterior_ci[1])))
    notes = [f"{name}: {note}" for name, part in parts.items() for note in part.notes]
    approximates = [part.approximate for part in parts.values() if part.approximate is not None]
    return Corrected(value, ci, se, None, None, n, total, classical, raw, notes,
                     min(approximates) if approximates else None, (theta, probability))


def _lacking_reason(lacking: dict[str, list[str]], cells: int, figure: str) -> str:
    """Why a pooled number is refused: each reason once, with the cells it applies to (named
    unless it applies to every cell); a cell's number called `figure`."""
    count = sum(len(names) for names in lacking.values())
    if count == cells:
        head = f"none of the {cells} cells pooled here has a {figure} that pooling can take"
    else:
        head = (f"pooled over {cells} cells, it needs each cell's {figure} as pooling takes it, and {count} "
                f"{'lacks' if count == 1 else 'lack'} one")
    whys = [why if count == cells and len(lacking) == 1 else f"{', '.join(names)}: {why}"
            for why, names in lacking.items()]
    return f"{head} ({'; '.join(whys)})"
