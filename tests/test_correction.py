"""Corrected accuracy: PPI++ against the ppi_py reference package, Rogan-Gladen against its
formulas, the guard, differences, planning, degenerate inputs, and a coverage simulation."""

from __future__ import annotations

import ast
import json
import math
import sys
from pathlib import Path

import numpy as np
import ppi_py
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from calibrate.stats import correction, simulated
from calibrate.stats.correction import (
    MIN_LABELLED,
    Corrected,
    Estimate,
    labelled_problem,
    labels_needed,
    ppi_mean,
    ppi_paired_difference,
    rogan_gladen,
    stratified_labels_needed,
    stratified_mean,
)
from calibrate.stats.fisher_exact import fisher_exact_p
from calibrate.stats.intervals import proportion
from calibrate.stats.pooled_correction import pooled_stratified_mean
from calibrate.stats.ranking import difference, rank
from calibrate.stats.simulated import simulated_coverage


def cell(seed, accuracy=0.5, se=0.9, sp=0.7, total=1000, n=200, judges=None):
    """(verdicts, labels with NaN = unlabelled, all true labels) of one simulated cell."""
    rng = np.random.default_rng(seed)
    y = (rng.random(total) < accuracy).astype(float)
    rates = judges or [(se, sp)]
    f = np.stack([np.where(y == 1, rng.random(total) < a, rng.random(total) >= b) for a, b in rates], 1).astype(float)
    labels = np.full(total, np.nan)
    chosen = rng.choice(total, n, replace=False)
    labels[chosen] = y[chosen]
    return (f[:, 0] if judges is None else f), labels, y


def split(f, labels):
    lab = ~np.isnan(labels)
    return labels[lab], f[lab], f[~lab]


# -- PPI++ against the reference package ---------------------------------------------------------


@pytest.mark.parametrize("seed", range(5))
def test_ppi_mean_matches_ppi_py(seed):
    f, labels, _ = cell(seed, accuracy=0.3 + 0.1 * seed, total=800 + 100 * seed, n=60 + 40 * seed)
    result = ppi_mean(f, labels, random_sample=True)
    y, f_l, f_u = split(f, labels)
    point = ppi_py.ppi_mean_pointestimate(y, f_l, f_u)
    lo, hi = ppi_py.ppi_mean_ci(y, f_l, f_u, alpha=0.05)
    assert result.value == pytest.approx(float(point[0]), abs=1e-8)
    assert result.ci[0] == pytest.approx(float(lo[0]), abs=1e-8)
    assert result.ci[1] == pytest.approx(float(hi[0]), abs=1e-8)
    assert 0 < result.lam < 1
    # the lambda reported is the one used: ppi_py with that fixed lambda gives the same estimate
    assert result.value == pytest.approx(float(ppi_py.ppi_mean_pointestimate(y, f_l, f_u, lam=result.lam)[0]), abs=1e-12)
    assert result.n_labelled == (~np.isnan(labels)).sum() and result.n_total == len(f)
    assert result.raw_judge == pytest.approx(f.mean())


def test_mean_over_two_judges_matches_ppi_py_on_the_judges_mean():
    f, labels, _ = cell(7, judges=[(0.9, 0.7), (0.8, 0.85)])
    result = ppi_mean(f, labels, random_sample=True)
    y, f_l, f_u = split(f.mean(axis=1), labels)
    lo, hi = ppi_py.ppi_mean_ci(y, f_l, f_u, alpha=0.05)
    assert result.value == pytest.approx(float(ppi_py.ppi_mean_pointestimate(y, f_l, f_u)[0]), abs=1e-8)
    assert result.ci == pytest.approx((float(lo[0]), float(hi[0])), abs=1e-8)
    # the raw figure is C3's final score: the mean over the judges of each judge's accuracy
    assert result.raw_judge == pytest.approx(np.mean([f[:, 0].mean(), f[:, 1].mean()]))


def test_ppi_mean_by_hand_from_the_paper_formulas():
    # 12 labelled, 8 unlabelled items; lambda, theta and se written out from ADZ23 eq. (2) and (7)
    y = np.array([1, 1, 1, 0, 0, 1, 0, 1, 1, 0, 1, 0], float)
    f_l = np.array([1, 1, 0, 0, 1, 1, 0, 1, 1, 0, 1, 1], float)
    f_u = np.array([1, 0, 1, 1, 0, 1, 1, 0], float)
    n, m = 12, 8
    cov = sum((a - y.mean()) * (b - f_l.mean()) for a, b in zip(y, f_l, strict=True)) / n
    allf = np.concatenate([f_l, f_u])
    var_all = sum((x - allf.mean()) ** 2 for x in allf) / (n + m - 1)
    lam = cov / ((1 + n / m) * var_all)
    theta = lam * f_u.mean() + (y - lam * f_l).mean()
    se = np.sqrt(lam**2 * f_u.var() / m + (y - lam * f_l).var() / n)
    result = ppi_mean(np.concatenate([f_l, f_u]), np.concatenate([y, np.full(m, np.nan)]), random_sample=True)
    assert result.lam == pytest.approx(lam)
    assert result.value == pytest.approx(theta)
    assert result.se == pytest.approx(se)
    assert result.ci == pytest.approx((theta - 1.959963984540054 * se, theta + 1.959963984540054 * se))


def test_an_estimate_beyond_one_is_clipped_to_an_accuracy_with_a_note():
    # 18 of 20 labelled items correct; the judge says "correct" on 16 of them and on 190 of 200 unlabelled
    # items (not so many more that they stop looking like a random sample): ppi_py's estimate is 1.05,
    # which no accuracy is
    y = np.array([1.0] * 18 + [0.0] * 2)
    f_l = np.array([1.0] * 16 + [0.0] * 4)
    f_u = np.array([1.0] * 190 + [0.0] * 10)
    unclipped = float(ppi_py.ppi_mean_pointestimate(y, f_l, f_u)[0])
    assert unclipped == pytest.approx(1.05)
    result = ppi_mean(np.concatenate([f_l, f_u]), np.concatenate([y, np.full(200, np.nan)]), random_sample=True)
    assert result.value == 1.0
    assert result.ci[0] <= 1.0 and result.ci[1] == 1.0
    assert f"clipped from {unclipped:.4f} to 1" in result.notes
    # the same labels as one system's against a system that is always wrong and judged so: a difference of
    # accuracies is at most 1
    f, labels = np.concatenate([f_l, f_u]), np.concatenate([y, np.full(200, np.nan)])
    never = np.concatenate([np.zeros(20), np.full(200, np.nan)])
    difference = ppi_paired_difference(f, labels, np.zeros(220), never, random_sample=True)
    assert difference.value == 1.0 and difference.ci == (result.ci[0], 1.0)
    assert f"clipped from {unclipped:.4f} to 1" in difference.notes


def test_finite_population_interval_by_hand_from_cochran():
    f, labels, _ = cell(13)
    default = ppi_mean(f, labels, random_sample=True)
    finite = ppi_mean(f, labels, random_sample=True, finite_population=True)
    y, f_l, f_u = split(f, labels)
    n, total = len(y), len(f)
    lam = default.lam * total / (total - n)
    assert finite.value == default.value and finite.lam == default.lam
    assert finite.value == pytest.approx(lam * f.mean() + (y - lam * f_l).mean())
    resid = y - lam * f_l
    s2 = ((resid - resid.mean()) ** 2).sum() / (n - 1)
    assert finite.se == pytest.approx(np.sqrt((1 - n / total) * s2 / n))
    assert finite.se < default.se


def test_finite_population_with_every_item_labelled_is_exact():
    f, _, y = cell(4, total=300, n=300)
    result = ppi_mean(f, y, random_sample=True, finite_population=True)
    assert result.value == pytest.approx(y.mean()) and result.se == 0 and result.ci[0] == result.ci[1]


def test_labels_can_be_given_with_none_for_unlabelled():
    f = [1, 0, 1, 1, 0, 0, 1, 1, 0, 1, 1, 0] * 3
    labels = [1, 0, 1, 0, 0, 1, 1, 1, 0, 1, 1, 0] + [None] * 24
    result = ppi_mean(f, labels, random_sample=True)
    assert result.n_labelled == 12 and result.value is not None


def test_classical_is_wilson_on_the_labels_alone():
    f, labels, _ = cell(3)
    result = ppi_mean(f, labels, random_sample=True)
    y = labels[~np.isnan(labels)]
    assert result.classical.value == pytest.approx(y.mean())
    assert result.classical.ci == pytest.approx(proportion_confint(int(y.sum()), len(y), alpha=0.05, method="wilson"))
    assert proportion(10, 10).ci == pytest.approx(proportion_confint(10, 10, alpha=0.05, method="wilson"))


def test_tuned_ppi_is_narrower_than_classical_with_a_useful_judge():
    f, labels, _ = cell(11, se=0.95, sp=0.95)
    result = ppi_mean(f, labels, random_sample=True)
    assert result.ci[1] - result.ci[0] < 0.8 * (result.classical.ci[1] - result.classical.ci[0])


def test_ppi_interval_is_clipped_to_zero_one():
    # 400 items at accuracy 0.97, 20 random labels with one wrong: ppi_py's interval ends above 100 %
    f, labels, _ = cell(0, accuracy=0.97, total=400, n=20)
    y, f_l, f_u = split(f, labels)
    lo, hi = ppi_py.ppi_mean_ci(y, f_l, f_u, alpha=0.05)
    assert y.sum() == 19 and hi[0] > 1
    result = ppi_mean(f, labels, random_sample=True)
    assert result.ci == pytest.approx((float(lo[0]), 1.0), abs=1e-8)


# -- stratified (Bayesian) estimator --------------------------------------------------------------


def beta_binomial(m, a, b):
    """P(X = 0..m), X ~ BetaBinomial(m, a, b), from the definition C(m, x) B(x + a, m - x + b) / B(a, b)."""
    beta = lambda p, q: math.gamma(p) * math.gamma(q) / math.gamma(p + q)  # noqa: E731
    return [math.comb(m, x) * beta(x + a, m - x + b) / beta(a, b) for x in range(m + 1)]


def test_stratified_mean_equals_the_posterior_written_out_on_a_small_cell():
    # 8 items. Judge yes on items 0-4: 0, 1, 2 labelled 1, 1, 0 (n = 3, s = 2), items 3, 4 unlabelled;
    # judge no on items 5-7: item 5 labelled 0 (n = 1, s = 0), items 6, 7 unlabelled. S = 2, N = 8.
    f = [1, 1, 1, 1, 1, 0, 0, 0]
    labels = [1, 1, 0, None, None, 0, None, None]
    yes, no = beta_binomial(2, 0.5 + 2, 0.5 + 1), beta_binomial(2, 0.5 + 0, 0.5 + 1)
    pmf = {}
    for x1, p1 in enumerate(yes):
        for x0, p0 in enumerate(no):
            pmf[(2 + x1 + x0) / 8] = pmf.get((2 + x1 + x0) / 8, 0) + p1 * p0
    support = sorted(pmf)
    cdf = np.cumsum([pmf[t] for t in support])
    mean = sum(t * p for t, p in pmf.items())
    sd = math.sqrt(sum((t - mean) ** 2 * p for t, p in pmf.items()))
    value = (2 + 2 * 2 / 3 + 2 * 0 / 1) / 8  # post-stratified: S + m_k s_k / n_k per stratum
    for level in (0.5, 0.8, 0.95):
        quantile = lambda q: support[int(np.searchsorted(cdf, q))]  # noqa: E731
        result = stratified_mean(f, labels, random_sample=True, min_labelled=2, level=level)
        assert result.value == pytest.approx(value)
        assert result.ci == pytest.approx((min(quantile((1 - level) / 2), value), max(quantile((1 + level) / 2), value)))
        assert result.se == pytest.approx(sd)
    assert result.lam is None and result.n_labelled == 4 and result.n_total == 8 and not result.notes
    assert correction._beta_binomial_pmf(7, 2.5, 0.5) == pytest.approx(stats.betabinom.pmf(np.arange(8), 7, 2.5, 0.5))


def test_stratified_interval_matches_posterior_draws():
    # the same model sampled: q_k ~ Beta(1/2 + s_k, 1/2 + n_k - s_k), X_k ~ Binomial(m_k, q_k)
    f, labels, _ = cell(21, accuracy=0.8, total=1000, n=50)
    result = stratified_mean(f, labels, random_sample=True)
    rng = np.random.default_rng(0)
    lab = ~np.isnan(labels)
    theta = np.full(200_000, labels[lab].sum())
    for v in (0, 1):
        n_k, s_k, m_k = (lab & (f == v)).sum(), labels[lab & (f == v)].sum(), (~lab & (f == v)).sum()
        theta += rng.binomial(m_k, rng.beta(0.5 + s_k, 0.5 + n_k - s_k, theta.size))
    draws = theta / len(f)
    assert result.ci == pytest.approx(tuple(np.quantile(draws, [0.025, 0.975])), abs=0.003)
    assert result.se == pytest.approx(draws.std(), rel=0.02)


def test_stratified_gives_an_interval_for_all_correct_and_all_wrong_labels():
    f, labels, y = cell(3, accuracy=0.97, total=1000, n=20)
    lab = ~np.isnan(labels)
    assert labels[lab].min() == 1  # all 20 labelled items are correct
    assert ppi_mean(f, labels, random_sample=True).value is None  # PPI++ has no interval here
    result = stratified_mean(f, labels, random_sample=True)
    assert result.value == 1.0 and result.ci[1] == 1.0 and 0.7 < result.ci[0] < 0.97
    assert result.ci[0] <= y.mean()
    wrong = np.where(lab, 0.0, np.nan)
    low = stratified_mean(f, wrong, random_sample=True)
    assert low.value == 0.0 and low.ci[0] == 0.0 and 0.03 < low.ci[1] < 0.3


def test_stratified_with_every_item_labelled_is_exact():
    f, _, y = cell(4, total=300, n=300)
    result = stratified_mean(f, y, random_sample=True)
    assert result.value == pytest.approx(y.mean()) and result.ci == (result.value, result.value) and result.se == 0
    assert result.notes == ["every item is labelled: the accuracy over these items is known exactly"]


def test_stratified_with_a_verdict_no_labelled_item_got():
    f = np.array([1] * 30 + [0] * 10, float)
    labels = np.array([1, 1, 1, 1, 1, 0] * 2 + [None] * 28, dtype=float)  # the 12 labelled items all got a yes
    result = stratified_mean(f, labels, random_sample=True)
    assert result.value == pytest.approx((10 + 18 * 10 / 12 + 10 * 0.5) / 40)
    assert "10 unlabelled items got a judge verdict that no labelled item got" in result.notes[0]
    # the 10 items carry the prior's uncertainty around 1/2: lower and wider than had the judge said yes to them
    said_yes = stratified_mean(np.ones(40), labels, random_sample=True)
    assert result.ci[1] - result.ci[0] > said_yes.ci[1] - said_yes.ci[0] and result.ci[0] < said_yes.ci[0]
    assert not said_yes.notes


def test_stratified_over_two_judges_stratifies_on_their_mean_verdict():
    f, labels, _ = cell(7, judges=[(0.9, 0.7), (0.8, 0.85)])
    result = stratified_mean(f, labels, random_sample=True)
    lab = ~np.isnan(labels)
    mean = f.mean(axis=1)
    expected = labels[lab].sum() + sum(
        (~lab & (mean == v)).sum() * labels[lab & (mean == v)].mean() for v in (0, 0.5, 1))
    assert result.value == pytest.approx(expected / len(mean))
    assert result.raw_judge == pytest.approx(mean.mean())


def test_stratified_refuses_what_the_guard_refuses():
    f, labels, _ = cell(5)
    assert "not drawn at random" in stratified_mean(f, labels, random_sample=False).reason
    few = np.where(np.cumsum(~np.isnan(labels)) <= 9, labels, np.nan)
    assert stratified_mean(f, few, random_sample=True).reason == f"9 labelled items: at least {MIN_LABELLED} random human labels are needed"
    assert labelled_problem(f, np.where(np.isnan(labels), np.nan, 1.0), random_sample=True, needs_both_classes=False) is None


@pytest.mark.parametrize(("accuracy", "se", "sp", "total"), [(0.97, 0.9, 0.7, 300), (0.5, 0.95, 0.95, 300), (0.8, 0.7, 0.9, 1000)])
def test_stratified_coverage_with_20_labels(accuracy, se, sp, total):
    # 300 datasets, 20 random labels; the target is the mean accuracy over the items. The full grid
    # is in tests/bench/correction_coverage.py (93 % or more everywhere). PPI++ covers 74 % of the
    # datasets it gives an interval for at (0.5, .95/.95, 300) and gives none for about half at 0.97.
    hits = 0
    for seed in range(300):
        f, labels, y = cell(50_000 + seed, accuracy=accuracy, se=se, sp=sp, total=total, n=20)
        result = stratified_mean(f, labels, random_sample=True)
        hits += result.ci is not None and result.ci[0] <= y.mean() <= result.ci[1]
    assert hits / 300 >= 0.91


def test_simulated_coverage_reads_the_nearest_setting(monkeypatch):
    table = {"stratified": {}, "ppi": {(0.8, 20, (0.95, 0.95), 1000): 0.76}, "ppi_finite": {}, "rogan_gladen": {}}
    monkeypatch.setattr(simulated, "_under_coverage", lambda: table)
    assert simulated_coverage("ppi", 0.83, 18, 0.97, 0.93, 1500) == 0.76
    assert simulated_coverage("ppi", 0.83, 60, 0.97, 0.93, 1500) is None  # nearest is 50 labels
    assert simulated_coverage("ppi", 0.83, 18, 0.72, 0.9, 1500) is None  # nearest judge is (.7, .9)
    assert simulated_coverage("ppi", 0.83, 18, None, 0.9, 1500) == 0.76  # a class missing: lowest over judges
    assert simulated_coverage("stratified", 0.83, 18, 0.97, 0.93, 1500) is None


@pytest.mark.parametrize(("method", "estimator"), [("ppi", ppi_mean)])
def test_intervals_below_93_percent_in_simulation_are_marked_approximate(method, estimator):
    # the table the module reads, written by tests/bench/correction_coverage.py --write
    table = simulated._under_coverage()[method]
    (accuracy, n, (se, sp), total), _ = min(table.items(), key=lambda kv: kv[1])
    marked = 0
    for seed in range(40):
        f, labels, _ = cell(seed, accuracy=accuracy, se=se, sp=sp, total=total, n=n)
        result = estimator(f, labels, random_sample=True)
        if result.value is None:
            continue
        rates = correction._judge_rates(f, labels, ~np.isnan(labels))
        expected = simulated_coverage(method, result.value, n, *rates, total)
        assert result.approximate == expected
        marked += expected is not None and expected < 0.93
    assert marked >= 5, "cells near the worst simulated setting are marked approximate"


def test_rogan_gladen_gives_no_interval_where_the_labels_find_the_judge_never_wrong_in_a_class():
    """At accuracy 0.95 with 20 labels most label sets hold no item the judge got wrong in one
    class; the delta-method interval then takes that rate as known and covered none of 62 such
    cells in an audit. Refused, the rest keep 93 % or more on the whole simulated grid (no
    setting in the table)."""
    refused = given = 0
    for seed in range(40):
        f, labels, _ = cell(seed, accuracy=0.95, se=0.9, sp=0.7, total=500, n=20)
        result = rogan_gladen(f, labels, random_sample=True)
        if result.sensitivity == 1 or result.specificity == 1:
            refused += 1
            assert result.value is None and result.ci is None and "agrees with every labelled item" in result.reason
        elif result.value is not None:
            given += 1
    assert refused >= 10 and given >= 1
    assert simulated._under_coverage()["rogan_gladen"] == {}


def test_rogan_gladen_gives_no_value_where_its_interval_is_the_whole_range():
    """28 labels on the judge's yes (4 of them wrong) and 2 on its no (one wrong): Se 0.96 on 25,
    Sp 0.2 on 5, J = 0.16, and the interval clipped to [0, 1] is all of it. Its point value said
    nothing (an audit saw 24 % beside a corrected 81 %): no value, and why."""
    f = np.array([1] * 36 + [0] * 4, float)
    labels = np.full(40, np.nan)
    labels[:28], labels[36:38] = [1] * 24 + [0] * 4, [1, 0]
    result = rogan_gladen(f, labels, random_sample=True, classes=("yes", "no"))
    assert result.value is None and result.ci is None and result.se is None
    assert result.reason == ("its 95% interval is the whole [0, 1]: the labels leave the judge's sensitivity or "
                             "specificity too uncertain (sensitivity 0.96 on the 25 labelled 'yes', specificity 0.20 "
                             "on the 5 labelled 'no'), so its value says nothing and none is given")
    assert (result.sensitivity, result.specificity) == (pytest.approx(24 / 25), pytest.approx(1 / 5))
    labels[38:40] = [0, 0]  # the judge's two other no's labelled 'no' too: Sp 0.5 on 6, an interval short of [0, 1]
    given = rogan_gladen(f, labels, random_sample=True)
    assert given.value is not None and given.ci != (0.0, 1.0) and given.reason is None


# -- Rogan-Gladen --------------------------------------------------------------------------------


def rg_cell(unlabelled_positives, unlabelled=900):
    # labelled: 50 correct (45 judged yes), 50 wrong (15 judged yes): Se = 0.9, Sp = 0.7
    y = np.array([1] * 50 + [0] * 50, float)
    f_l = np.array([1] * 45 + [0] * 5 + [1] * 15 + [0] * 35, float)
    f_u = np.array([1] * unlabelled_positives + [0] * (unlabelled - unlabelled_positives), float)
    return np.concatenate([f_l, f_u]), np.concatenate([y, np.full(unlabelled, np.nan)])


def test_rogan_gladen_point_estimate_by_hand():
    f, labels = rg_cell(540)
    result = rogan_gladen(f, labels, random_sample=True)
    p = (60 + 540) / 1000
    assert (result.sensitivity, result.specificity, result.positive_rate) == pytest.approx((0.9, 0.7, p))
    assert result.value == pytest.approx((p + 0.7 - 1) / (0.9 + 0.7 - 1))
    assert result.ci[0] < result.value < result.ci[1] and not result.notes


def delta_se_numerically(pi, p_u, n, m):
    """The same delta method, with the Jacobian taken by finite differences."""

    def theta(x):
        p11, p10, p01, p00, pu = x
        se, sp = p11 / (p11 + p10), p00 / (p01 + p00)
        p = (n * (p11 + p01) + m * pu) / (n + m)
        return (p + sp - 1) / (se + sp - 1)

    x0 = np.array([*pi, p_u])
    grad = np.array([(theta(x0 + h) - theta(x0 - h)) / 2e-7 for h in np.eye(5) * 1e-7])
    cov = np.zeros((5, 5))
    cov[:4, :4] = (np.diag(pi) - np.outer(pi, pi)) / n
    cov[4, 4] = p_u * (1 - p_u) / m
    return float(np.sqrt(grad @ cov @ grad))


def test_rogan_gladen_se_is_the_delta_method_over_shared_items():
    f, labels = rg_cell(540)
    result = rogan_gladen(f, labels, random_sample=True)
    expected = delta_se_numerically([0.45, 0.05, 0.15, 0.35], 0.6, 100, 900)
    assert result.se == pytest.approx(expected, rel=1e-6)
    z = 1.959963984540054
    assert result.ci == pytest.approx((result.value - z * result.se, result.value + z * result.se))


def test_rogan_gladen_se_tends_to_the_independent_samples_formula():
    # with the labelled items a vanishing share of all items, Lang & Reiczigel's formula applies
    f, labels = rg_cell(600_000, unlabelled=1_000_000)
    result = rogan_gladen(f, labels, random_sample=True)
    p, th, j = result.positive_rate, result.value, 0.6
    independent = np.sqrt((p * (1 - p) / len(f) + th**2 * 0.9 * 0.1 / 50 + (1 - th) ** 2 * 0.7 * 0.3 / 50) / j**2)
    assert result.se == pytest.approx(independent, rel=1e-3)


def test_rogan_gladen_se_matches_the_spread_over_simulated_cells():
    values, ses = [], []
    for seed in range(300):
        result = rogan_gladen(*cell(seed)[:2], random_sample=True)
        if result.value is not None:
            values.append(result.value)
            ses.append(result.se)
    assert np.mean(ses) == pytest.approx(np.std(values), rel=0.1)


def test_rogan_gladen_clips_with_a_note():
    # labelled: 10 correct (9 judged yes), 90 wrong (27 judged yes): Se = 0.9, Sp = 0.7; with
    # 261 of 900 unlabelled judged yes, p = 0.297 < 1 - Sp and the formula gives -0.005
    y = np.array([1] * 10 + [0] * 90 + [np.nan] * 900)
    f = np.array([1] * 9 + [0] + [1] * 27 + [0] * 63 + [1] * 261 + [0] * 639, float)
    result = rogan_gladen(f, y, random_sample=True)
    assert result.value == 0.0 and result.ci[0] == 0.0 and result.ci[1] > 0
    assert result.notes == ["clipped from -0.005 to 0"]


def test_rogan_gladen_refuses_a_useless_judge():
    y = np.array([1, 0] * 20, float)
    f = np.array([1, 1, 0, 0] * 10, float)  # Se = Sp = 0.5
    result = rogan_gladen(f, y, random_sample=True)
    assert result.value is None and "Se + Sp - 1 = 0.00" in result.reason
    assert result.sensitivity == 0.5 and result.specificity == 0.5


# -- when not to print a number ------------------------------------------------------------------


def test_guard_passes_a_random_sample():
    f, labels, _ = cell(5)
    assert labelled_problem(f, labels, random_sample=True) is None


def test_guard_refuses_when_the_caller_says_not_random():
    f, labels, _ = cell(5)
    reason = labelled_problem(f, labels, random_sample=False)
    assert "not drawn at random" in reason
    assert ppi_mean(f, labels, random_sample=False).reason == reason
    assert rogan_gladen(f, labels, random_sample=False).reason == reason


def test_guard_detects_labels_chosen_by_the_judge_verdict():
    f, _, y = cell(5)
    labels = np.full(len(f), np.nan)
    chosen = np.flatnonzero(f == 1)[:150].tolist() + np.flatnonzero(f == 0)[:50].tolist()  # 75 % vs ~55 %
    labels[chosen] = y[chosen]
    reason = labelled_problem(f, labels, random_sample=True)
    assert "do not look like a random sample" in reason and "Fisher p" in reason


def test_fisher_p_matches_scipy_on_small_large_and_tied_tables():
    """The guard's own Fisher test (scipy.stats is not imported by scores) against scipy's, on
    random tables from 4 to 250,000 items, symmetric ones (ties on both sides of the mode) and
    tables with an empty row or column."""
    rng = np.random.default_rng(22)
    tables = [tuple(int(v) for v in rng.multinomial(total, rng.dirichlet([1, 1, 1, 1])))
              for total in (4, 9, 30, 200, 5_000, 250_000) for _ in range(60)]
    tables += [(3, 3, 3, 3), (10, 10, 10, 10), (1, 4, 4, 1), (2, 8, 8, 2), (30, 70, 70, 30), (71, 29, 29, 71),
               (999, 3001, 3001, 999), (18, 154, 154, 18), (3, 217, 110, 110), (24, 42, 33, 33), (5, 0, 0, 5), (0, 5, 5, 0), (0, 0, 4, 6), (2, 0, 7, 0), (0, 0, 0, 0)]
    for a, b, c, d in tables:
        expected = stats.fisher_exact([[a, b], [c, d]]).pvalue
        assert fisher_exact_p(a, b, c, d) == pytest.approx(expected, rel=1e-9, abs=1e-300), (a, b, c, d)


def test_convolved_matches_the_direct_sum():
    rng = np.random.default_rng(3)
    a, b = rng.random(40), rng.random(7)
    assert correction._convolved(a, b) == pytest.approx(np.convolve(a, b), rel=1e-12, abs=1e-14)
    assert np.array_equal(correction._convolved(np.ones(1), b), b), "a point mass convolves exactly"
    assert np.array_equal(correction._convolved(b, np.array([0.5])), b * 0.5)


def test_guard_needs_min_labelled():
    f = np.array([1, 0, 1, 1, 0, 1, 0, 1, 1, 0] * 4, float)
    labels = np.full(40, np.nan)
    labels[:MIN_LABELLED] = [1, 0, 1, 1, 0, 0, 0, 1, 1, 0]
    assert labelled_problem(f, labels, random_sample=True) is None
    assert ppi_mean(f, labels, random_sample=True).value is not None
    labels[MIN_LABELLED - 1] = np.nan
    reason = f"{MIN_LABELLED - 1} labelled items: at least {MIN_LABELLED} random human labels are needed"
    assert labelled_problem(f, labels, random_sample=True) == reason
    assert ppi_mean(f, labels, random_sample=True).reason == reason


# -- degenerate inputs ---------------------------------------------------------------------------


def test_no_labelled_items():
    f = np.ones(50)
    f[:20] = 0
    labels = np.full(50, np.nan)
    result = ppi_mean(f, labels, random_sample=True)
    assert result.value is None and "0 labelled items" in result.reason
    assert result.classical.value is None and result.classical.reason == "no labelled items"
    assert result.raw_judge == pytest.approx(0.6)
    assert rogan_gladen(f, labels, random_sample=True).value is None
    assert labels_needed(f, labels, random_sample=True).more is None


def test_all_labels_one():
    f, labels, _ = cell(2)
    labels[~np.isnan(labels)] = 1
    result = ppi_mean(f, labels, random_sample=True)
    assert result.value is None and "all 200 labelled items are labelled 'right', none 'wrong'" in result.reason
    assert result.classical.value == 1.0 and result.classical.ci[0] == pytest.approx(0.9812, abs=1e-4)
    assert rogan_gladen(f, labels, random_sample=True).reason == result.reason


def test_one_labelled_item():
    f, labels, _ = cell(2, n=1)
    result = ppi_mean(f, labels, random_sample=True)
    assert result.value is None and "1 labelled item:" in result.reason
    assert result.classical.value in (0.0, 1.0) and result.classical.ci is None, "no interval from one label"


def test_all_verdicts_equal_gives_the_labelled_mean():
    _, labels, _ = cell(4)
    result = ppi_mean(np.ones(len(labels)), labels, random_sample=True)
    y = labels[~np.isnan(labels)]
    assert result.lam == 0 and result.value == pytest.approx(y.mean())
    assert result.se == pytest.approx(y.std() / np.sqrt(len(y)))
    assert "all equal" in result.notes[0]
    assert rogan_gladen(np.ones(len(labels)), labels, random_sample=True).reason.startswith("the judge's Se + Sp - 1 = 0.00")


def test_every_item_labelled_gives_the_labelled_mean():
    f, _, y = cell(4, total=300, n=300)
    result = ppi_mean(f, y, random_sample=True)
    assert result.value == pytest.approx(y.mean()) and result.lam == 0
    assert "every item is labelled" in result.notes[0]
    rg = rogan_gladen(f, y, random_sample=True)
    assert rg.value is not None and rg.se > 0


def test_empty_cell():
    result = ppi_mean([], [], random_sample=True)
    assert result.value is None and result.reason == "no items in the cell" and result.raw_judge is None
    assert rogan_gladen([], [], random_sample=True).reason == "no items in the cell"


def test_mismatched_lengths_raise():
    with pytest.raises(ValueError, match="differ in length: 3 vs 2"):
        ppi_mean([1, 0, 1], [1, 0], random_sample=True)
    with pytest.raises(ValueError, match="different numbers of items"):
        ppi_paired_difference([1, 0], [1, 0], [1, 0, 1], [1, 0, 1], random_sample=True)


def test_values_outside_zero_one_raise():
    with pytest.raises(ValueError, match="verdicts must be 0 or 1, got 2"):
        ppi_mean([1, 2, 0], [1, 0, 0], random_sample=True)
    with pytest.raises(ValueError, match="labels must be 0 or 1, got 2"):
        rogan_gladen([1, 1, 0], [1, 2, None], random_sample=True)
    with pytest.raises(ValueError, match="verdicts must be 0 or 1, got nan"):
        ppi_mean([1, np.nan, 0], [1, 0, 0], random_sample=True)
    with pytest.raises(ValueError, match="one 0/1 value per item"):
        rogan_gladen([[1, 0], [0, 1]], [1, 0], random_sample=True)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.lists(st.tuples(st.sampled_from([0, 1]), st.sampled_from([0, 1, None])), max_size=40))
def test_never_raises_nor_returns_nan_on_valid_input(rows):
    f = [v for v, _ in rows]
    labels = [label for _, label in rows]
    for result in (ppi_mean(f, labels, random_sample=True), rogan_gladen(f, labels, random_sample=True),
                   stratified_mean(f, labels, random_sample=True, min_labelled=1)):
        assert (result.value is None) == (result.reason is not None)
        if result.value is not None:
            assert np.isfinite(result.value) and np.isfinite(result.ci).all()
            assert 0 <= result.ci[0] <= result.value <= result.ci[1] <= 1
    plan = labels_needed(f, labels, random_sample=True)
    assert plan.more is not None or plan.reason


# -- differences and ranking ---------------------------------------------------------------------


def test_difference_of_independent_cells_adds_variances():
    a = ppi_mean(*cell(1, accuracy=0.7)[:2], random_sample=True)
    b = ppi_mean(*cell(2, accuracy=0.5)[:2], random_sample=True)
    d = difference(a, b)
    assert d.value == pytest.approx(a.value - b.value)
    assert d.se == pytest.approx(np.sqrt(a.se**2 + b.se**2))
    assert d.ci == pytest.approx((d.value - 1.959963984540054 * d.se, d.value + 1.959963984540054 * d.se))
    missing = Corrected(None, None, None, "3 labelled items", None, 3, 10, Estimate(None), 0.5)
    assert difference(a, missing).reason == "3 labelled items"


def test_rank_orders_systems_and_says_which_differences_are_real():
    cells = {
        "strong": ppi_mean(*cell(1, accuracy=0.8)[:2], random_sample=True),
        "weak": ppi_mean(*cell(2, accuracy=0.4)[:2], random_sample=True),
        "weak-too": ppi_mean(*cell(3, accuracy=0.41)[:2], random_sample=True),
        "unlabelled": ppi_mean(np.ones(20), np.full(20, np.nan), random_sample=True),
    }
    ranking = rank(cells)
    assert ranking.order[0] == "strong" and set(ranking.order[1:]) == {"weak", "weak-too"}
    assert "0 labelled items" in ranking.unranked["unlabelled"]
    separated = {(p.a, p.b): p.separated for p in ranking.pairs}
    assert separated[("strong", ranking.order[1])] and separated[("strong", ranking.order[2])]
    assert not separated[(ranking.order[1], ranking.order[2])]
    assert all(p.difference.value >= 0 for p in ranking.pairs)


def test_difference_of_stratified_cells_is_the_difference_of_their_posteriors():
    a = stratified_mean(*cell(1, accuracy=0.97, total=400, n=20)[:2], random_sample=True)
    b = stratified_mean(*cell(2, accuracy=0.9, total=400, n=20)[:2], random_sample=True)
    d = difference(a, b)
    assert d.value == pytest.approx(a.value - b.value) and d.ci[0] <= d.value <= d.ci[1]
    rng = np.random.default_rng(5)  # the same posterior convolved by independent draws
    draws = rng.choice(a.posterior[0], 200_000, p=a.posterior[1]) - rng.choice(b.posterior[0], 200_000, p=b.posterior[1])
    assert d.ci == pytest.approx(tuple(np.quantile(draws, [0.025, 0.975])), abs=0.006)
    assert d.se == pytest.approx(np.hypot(a.se, b.se), rel=0.03)
    assert difference(a, b).ci == d.ci, "a fixed seed: the same data give the same interval"
    assert d.ci[0] >= -1 and d.ci[1] <= 1 and "posterior" not in a.as_dict()


def test_difference_of_stratified_cells_covers_at_20_labels():
    """The difference of two systems' accuracies over their items, 20 random labels each (the
    bench, correction_coverage.py --differences, runs more settings): 150 pairs of cells."""
    hits = 0
    for seed in range(150):
        fa, la, ya = cell(seed, accuracy=0.8, total=300, n=20)
        fb, lb, yb = cell(10_000 + seed, accuracy=0.9, total=300, n=20)
        ci = difference(stratified_mean(fa, la, random_sample=True), stratified_mean(fb, lb, random_sample=True)).ci
        hits += ci[0] <= ya.mean() - yb.mean() <= ci[1]
    assert 0.9 <= hits / 150 <= 1


def test_ppi_paired_difference_is_ppi_on_the_item_differences():
    rng = np.random.default_rng(8)
    total = 1000
    hard = rng.random(total) < 0.4  # shared item difficulty: both systems fail hard items more
    ya = (rng.random(total) < np.where(hard, 0.4, 0.9)).astype(float)
    yb = (rng.random(total) < np.where(hard, 0.3, 0.8)).astype(float)
    fa = np.where(ya == 1, rng.random(total) < 0.9, rng.random(total) < 0.3).astype(float)
    fb = np.where(yb == 1, rng.random(total) < 0.9, rng.random(total) < 0.3).astype(float)
    labelled = np.zeros(total, bool)
    labelled[rng.choice(total, 200, replace=False)] = True
    la, lb = np.where(labelled, ya, np.nan), np.where(labelled, yb, np.nan)
    result = ppi_paired_difference(fa, la, fb, lb, random_sample=True)
    y, f_l, f_u = split(fa - fb, np.where(labelled, ya - yb, np.nan))
    assert result.value == pytest.approx(float(ppi_py.ppi_mean_pointestimate(y, f_l, f_u)[0]), abs=1e-8)
    lo, hi = ppi_py.ppi_mean_ci(y, f_l, f_u, alpha=0.05)
    assert result.ci == pytest.approx((float(lo[0]), float(hi[0])), abs=1e-8)
    assert result.raw_judge == pytest.approx(fa.mean() - fb.mean())
    independent = difference(ppi_mean(fa, la, random_sample=True), ppi_mean(fb, lb, random_sample=True))
    assert result.se < independent.se  # the pairing removes the shared item difficulty


# -- planning ------------------------------------------------------------------------------------


def test_labels_needed_projects_the_half_width():
    f, labels, _ = cell(6)
    plan = labels_needed(f, labels, random_sample=True, target=0.04)
    now = ppi_mean(f, labels, random_sample=True)
    assert plan.half_width == pytest.approx(now.ci[1] - now.value)
    assert plan.more > 0 and plan.projected_half_width <= 0.04
    fewer = labels_needed(f, labels, random_sample=True, target=plan.projected_half_width + 1e-4)
    assert fewer.more <= plan.more
    assert labels_needed(f, labels, random_sample=True, target=0.2).more == 0
    unreachable = labels_needed(f, labels, random_sample=True, target=0.01)
    assert unreachable.more is None and "even with all 1000 items labelled" in unreachable.reason
    # for the mean over these items, labelling them all leaves no uncertainty
    finite = labels_needed(f, labels, random_sample=True, target=0.01, finite_population=True)
    assert finite.reason is None and 0 < finite.more < 800 and finite.projected_half_width <= 0.01
    _, _, y = cell(6, total=30, n=30)
    everything = labels_needed(f[:30], y, random_sample=True)
    assert everything.more is None and everything.reason.startswith("every item is labelled and the half-width is")
    now = ppi_mean(f, labels, random_sample=True, finite_population=True)
    assert finite.half_width == pytest.approx(now.ci[1] - now.value)


def test_stratified_labels_needed_projects_cochrans_post_stratified_variance():
    f, labels, _ = cell(6, total=1000, n=40)
    now = stratified_mean(f, labels, random_sample=True)
    plan = stratified_labels_needed(f, labels, random_sample=True, target=0.05)
    assert plan.half_width == pytest.approx((now.ci[1] - now.ci[0]) / 2) and plan.more > 0
    labelled = ~np.isnan(labels)
    first = second = 0.0  # by hand: W_k, q_k = (s_k + 1/2) / (n_k + 1) per verdict
    for v in (0.0, 1.0):
        stratum = f == v
        q = (labels[stratum & labelled].sum() + 0.5) / ((stratum & labelled).sum() + 1)
        first += stratum.mean() * q * (1 - q)
        second += (1 - stratum.mean()) * q * (1 - q)
    m = 40 + plan.more
    projected = 1.959964 * np.sqrt((1 - m / 1000) * (first / m + second / m**2))
    assert plan.projected_half_width == pytest.approx(projected, rel=1e-5) and projected <= 0.05
    m -= 1
    assert 1.959964 * np.sqrt((1 - m / 1000) * (first / m + second / m**2)) > 0.05, "the fewest that reach it"
    assert stratified_labels_needed(f, labels, random_sample=True, target=0.3).more == 0
    # under the 10-label minimum: no interval yet, but a plan from the minimum on (at 5 labels, 5 more at least)
    few = stratified_labels_needed(f[:50], np.where(np.arange(50) < 5, 1.0, np.nan), random_sample=True, target=0.3)
    assert (few.more, few.half_width, few.reason) == (5, None, None) and few.projected_half_width <= 0.3
    more = stratified_labels_needed(f[:50], np.where(np.arange(50) < 5, 1.0, np.nan), random_sample=True)
    assert more.more > 5 and more.projected_half_width <= 0.05
    assert stratified_labels_needed(f[:50], np.full(50, np.nan), random_sample=True).more > more.more, \
        "no labels at all: every verdict's accuracy at its prior, 1/2, the widest plan"


def test_stratified_over_two_judges_is_marked_where_its_simulation_fell_short():
    rows = simulated._under_coverage()["stratified_judges"]
    (accuracy, n, (se, sp), total), covered = min(rows.items(), key=lambda kv: kv[1])
    assert covered < 0.93
    marked = 0
    for seed in range(30):
        f, labels, _ = cell(seed, accuracy=accuracy, total=total, n=n, judges=[(se, sp), (se, sp)])
        result = stratified_mean(f, labels, random_sample=True)
        rates = correction._judge_rates(f.mean(axis=1), labels, ~np.isnan(labels))
        assert result.approximate == simulated_coverage("stratified_judges", result.value, n, *rates, total)
        marked += result.approximate is not None
        one = stratified_mean(f[:, 0], labels, random_sample=True)
        assert one.approximate == simulated_coverage("stratified", one.value, n, *correction._judge_rates(
            f[:, 0], labels, ~np.isnan(labels)), total), "one judge reads its own rows"
    assert marked >= 5


def test_labels_needed_roughly_delivers_the_target():
    # label the planned number more at random, from the same population: the half-width lands near the target
    f, labels, y = cell(9, total=2000, n=100)
    plan = labels_needed(f, labels, random_sample=True, target=0.05)
    rng = np.random.default_rng(0)
    extra = rng.choice(np.flatnonzero(np.isnan(labels)), plan.more, replace=False)
    labels[extra] = y[extra]
    after = ppi_mean(f, labels, random_sample=True)
    assert after.ci[1] - after.value == pytest.approx(0.05, abs=0.01)


# -- simulation: the "Done when" ----------------------------------------------------------


def test_coverage_simulation_judge_se_0_9_sp_0_7_accuracy_0_5():
    # 500 datasets of 1000 items, 200 labelled at random; tests/bench/correction_coverage.py runs more
    # the finite-population interval is checked against the mean of the labels over the 1000 items
    ppi_hits = rg_hits = ppi_done = rg_done = finite_hits = 0
    raw = []
    for seed in range(500):
        f, labels, y = cell(10_000 + seed)
        ppi = ppi_mean(f, labels, random_sample=True)
        finite = ppi_mean(f, labels, random_sample=True, finite_population=True)
        rg = rogan_gladen(f, labels, random_sample=True)
        raw.append(ppi.raw_judge)
        if ppi.value is not None:
            ppi_done += 1
            ppi_hits += ppi.ci[0] <= 0.5 <= ppi.ci[1]
            finite_hits += finite.ci[0] <= y.mean() <= finite.ci[1]
        if rg.value is not None:
            rg_done += 1
            rg_hits += rg.ci[0] <= 0.5 <= rg.ci[1]
    assert ppi_done >= 485 and rg_done >= 485  # the random-sample check flags ~1 % of truly random cells
    assert 0.92 <= ppi_hits / ppi_done <= 0.98
    assert 0.92 <= rg_hits / rg_done <= 0.98
    assert 0.92 <= finite_hits / ppi_done <= 0.98
    assert np.mean(raw) == pytest.approx(0.6, abs=0.005)  # the judge alone says 60 % for a 50 % system


def test_results_serialise_to_json():
    f, labels, _ = cell(12)
    for result in (ppi_mean(f, labels, random_sample=True), rogan_gladen(f, labels, random_sample=True)):
        out = json.loads(json.dumps(result.as_dict()))
        assert out["value"] == pytest.approx(result.value) and len(out["ci"]) == 2


def test_module_imports_only_numpy_scipy_the_standard_library_the_record_types_the_intervals_and_fisher():
    tree = ast.parse(Path(correction.__file__).read_text(encoding="utf-8"))
    modules = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    modules |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
    outside = {m for m in modules if m.split(".")[0] not in sys.stdlib_module_names}
    assert {m.split(".")[0] for m in outside} == {"numpy", "scipy", "calibrate"}
    assert {m for m in outside if m.startswith("calibrate")} == {"calibrate.model", "calibrate.stats.intervals",
                                                               "calibrate.stats.simulated",
                                                               "calibrate.stats.fisher_exact"}



@pytest.mark.parametrize(("decided_labels", "decided_right"), [(25, 7), (12, 5), (12, 12)])
def test_items_people_decide_join_a_corrected_figure_as_a_stratum_of_their_own(decided_labels, decided_right):
    """`pooled_stratified_mean`'s `decided` against the same function given those items as a
    cell of their own, one verdict for all (its labels then need the cell minimum, which the
    `decided` stratum does not): value, interval, sd and posterior agree; with every one of them
    labelled, the value is the judged items' own, weighted with them as known."""
    rng = np.random.default_rng(decided_labels + decided_right)
    f = rng.integers(0, 2, 300).astype(float)
    y = np.where(rng.random(300) < 0.8, f, 1 - f)
    y[rng.permutation(300)[:240]] = np.nan  # 60 random labels
    unlabelled = 25 - decided_labels
    decided_y = np.r_[[1.0] * decided_right, [0.0] * (decided_labels - decided_right), [np.nan] * unlabelled]
    stratum = pooled_stratified_mean(f, y, np.zeros(300), ["judged"], random_sample=True,
                                     decided=(decided_labels, decided_right, unlabelled))
    as_cell = pooled_stratified_mean(np.r_[f, np.zeros(25)], np.r_[y, decided_y], np.r_[np.zeros(300), np.ones(25)],
                                     ["judged", "decided"], random_sample=True)
    assert stratum.value == pytest.approx(as_cell.value, abs=1e-12) and stratum.n_total == as_cell.n_total == 325
    assert stratum.ci == pytest.approx(as_cell.ci, abs=1e-12) and stratum.se == pytest.approx(as_cell.se, abs=1e-12)
    for ours, theirs in zip(stratum.posterior, as_cell.posterior, strict=True):
        assert ours == pytest.approx(theirs, abs=1e-12)
    if unlabelled == 0:
        judged = correction.stratified_mean(f, y, random_sample=True)
        assert stratum.value == pytest.approx((300 * judged.value + decided_right) / 325, abs=1e-12)
