"""Agreement on 0-100 scores: point estimates against scipy and scikit-learn, the leave-one-out
values against recomputing without each item, every interval's formula, its reasons when there
is none, and a small simulation of coverage (the full grid: tests/bench/score_coverage.py)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import cohen_kappa_score

from calibrate.stats import score_agreement as module
from calibrate.stats.score_agreement import (
    STATISTICS,
    kendall_leave_one_out,
    pearson_leave_one_out,
    quadratic_kappa_leave_one_out,
    score_agreement,
    score_shape,
)
from calibrate.stats.simulated import SCORE_COVERAGE_TABLE, simulated_score_coverage


def rubric(rng, n, skewed=False):
    """Scores like a rubric's (with ties): a person's, and a judge's close to them."""
    if skewed:
        human = np.clip(np.round(100 - rng.exponential(18, n)), 0, 100)
        return human, np.clip(np.round(human + rng.normal(0, 10, n)), 0, 100)
    human = np.clip(np.round(rng.normal(65, 18, n) / 5) * 5, 0, 100)
    return human, np.clip(np.round((human + rng.normal(0, 8, n)) / 5) * 5, 0, 100)


def test_point_estimates_match_scipy_and_sklearn():
    rng = np.random.default_rng(3)
    a = rng.uniform(0, 100, 200).round(1)
    b = np.clip(a + rng.normal(0, 10, 200), 0, 100).round(1)
    result = score_agreement(a, b, threshold=60)
    assert result.spearman.value == pytest.approx(stats.spearmanr(a, b)[0])
    assert result.pearson.value == pytest.approx(stats.pearsonr(a, b)[0])
    assert result.kendall.value == pytest.approx(stats.kendalltau(a, b, variant="b")[0])
    assert result.mae.value == pytest.approx(np.abs(a - b).mean())
    bins = np.minimum(a // 10, 9).astype(int), np.minimum(b // 10, 9).astype(int)
    assert result.weighted_kappa.value == pytest.approx(
        cohen_kappa_score(*bins, labels=list(range(10)), weights="quadratic"))
    assert result.pass_fail.kappa.value == pytest.approx(cohen_kappa_score(a >= 60, b >= 60))
    for name in STATISTICS:
        low, high = result.estimate(name).ci
        assert low <= result.estimate(name).value <= high, name


@pytest.mark.parametrize("seed", range(6))
def test_leave_one_out_values_equal_recomputing_without_each_item(seed):
    rng = np.random.default_rng(seed)
    human, judge = rubric(rng, 25, skewed=seed % 2 == 1)
    if seed == 4:
        human = rng.uniform(0, 100, 25).round(3)  # many distinct values
    without = [(np.delete(judge, i), np.delete(human, i)) for i in range(25)]
    assert np.allclose(pearson_leave_one_out(judge, human), [stats.pearsonr(x, y)[0] for x, y in without])
    assert np.allclose(kendall_leave_one_out(judge, human), [stats.kendalltau(x, y)[0] for x, y in without])
    a, b = np.minimum(judge // 10, 9), np.minimum(human // 10, 9)
    expected = [cohen_kappa_score(np.delete(a, i), np.delete(b, i), labels=list(range(10)), weights="quadratic")
                for i in range(25)]
    assert np.allclose(quadratic_kappa_leave_one_out(a, b), expected)


def test_kendall_pairwise_blocks_equal_the_table_of_distinct_values(monkeypatch):
    rng = np.random.default_rng(8)
    human, judge = rubric(rng, 40)
    by_table = kendall_leave_one_out(judge, human)
    monkeypatch.setattr(module, "CONCORDANCE_TABLE_CELLS", 0)
    assert np.allclose(kendall_leave_one_out(judge, human), by_table)


def test_intervals_follow_their_formulas():
    rng = np.random.default_rng(11)
    human, judge = rubric(rng, 30)
    result = score_agreement(judge, human)
    n, t = 30, stats.t.ppf(0.975, 29)
    rho = result.spearman.value
    se = np.sqrt((1 + rho**2 / 2) / (n - 3))  # Bonett and Wright
    assert result.spearman.ci == pytest.approx(np.tanh(np.arctanh(rho) + np.array([-1, 1]) * 1.959964 * se), abs=1e-6)
    z = np.arctanh([stats.pearsonr(np.delete(judge, i), np.delete(human, i))[0] for i in range(n)])
    jack = np.sqrt((n - 1) / n * ((z - z.mean()) ** 2).sum())
    assert result.pearson.se == pytest.approx(jack)
    assert result.pearson.ci == pytest.approx(np.tanh(np.arctanh(result.pearson.value) + np.array([-1, 1]) * t * jack))
    d = np.abs(judge - human)
    spread = t * d.std(ddof=1) / np.sqrt(n) / d.mean()
    assert result.mae.ci == pytest.approx((d.mean() * np.exp(-spread), d.mean() * np.exp(spread)))


def test_fewer_than_ten_items_give_values_without_intervals_and_say_why():
    result = score_agreement([10, 20, 30, 40, 50, 65, 70, 80, 90], [12, 25, 30, 48, 50, 60, 75, 85, 95])
    for name in STATISTICS:
        estimate = result.estimate(name)
        assert estimate.value is not None and estimate.ci is None, name
        assert estimate.ci_reason.startswith("fewer than 10 items"), name
    json.dumps(result.as_dict(), allow_nan=False)


def test_degenerate_scores_say_why():
    constant = score_agreement([50] * 12, list(range(5, 100, 8)))
    assert constant.spearman.value is None and "constant" in constant.spearman.reason
    assert constant.kendall.value is None and constant.pearson.value is None
    same = score_agreement(list(range(0, 100, 8)), list(range(0, 100, 8)))
    assert same.mae.value == 0 and same.mae.ci is None and "MAE is 0" in same.mae.ci_reason
    assert same.spearman.value == pytest.approx(1) and same.spearman.ci is None and "±1" in same.spearman.ci_reason
    shifted = score_agreement(list(range(0, 96, 8)), list(range(4, 100, 8)))
    assert shifted.mae.value == 4 and shifted.mae.ci is None and "exactly 4" in shifted.mae.ci_reason
    json.dumps(same.as_dict(), allow_nan=False)


def test_a_correlation_that_is_one_but_for_rounding_is_one_without_an_interval():
    # tied scores in the same order: scipy's rho is 0.9999999999999999 here, whose Fisher z interval is
    # [1.00, 1.00]; a correlation of 1 has none
    a = [k * 10 % 100 for k in range(12)]
    b = [k * 10 % 100 + 1 for k in range(12)]
    found = score_agreement(a, b)
    for name in ("spearman", "pearson", "kendall"):
        estimate = found.estimate(name)
        assert estimate.value == 1.0 and estimate.ci is None, (name, estimate)
        assert "+1" in estimate.ci_reason or "±1" in estimate.ci_reason


def test_shape_and_the_approximate_mark_come_from_the_simulated_table():
    rng = np.random.default_rng(2)
    symmetric, skewed = rubric(rng, 120), rubric(rng, 120, skewed=True)
    assert score_shape(*symmetric, 60) == "symmetric" and score_shape(*skewed, 60) == "skewed"
    table = json.loads(SCORE_COVERAGE_TABLE.read_text())
    marked = [(name, shape, n, c) for name, rows in table["below"].items() for shape, n, c in rows]
    assert marked, "the simulated table marks some settings approximate"
    for name, shape, n, covered in marked:
        assert covered < 0.93 and simulated_score_coverage(name, n, shape) == covered
    name, shape, n, covered = marked[0]
    for _ in range(200):  # a sample of that shape and size whose interval exists carries the figure
        x, y = rubric(rng, n, skewed=shape == "skewed")
        result = score_agreement(x, y)
        if result.shape == shape and result.estimate(name).ci is not None:
            assert result.estimate(name).approximate == covered
            break
    else:
        pytest.fail(f"no {shape} sample of {n} items")


def test_intervals_cover_in_a_small_simulation():
    """About 95 % coverage on rubric-like scores at 30 items (the bench runs the full grid):
    250 samples give a Monte-Carlo SE of 1.4 %, so 89 % is more than four SEs below 95 %."""
    rng = np.random.default_rng(20)
    big_human, big_judge = rubric(rng, 400_000)
    truth = {
        "spearman": stats.spearmanr(big_judge, big_human)[0], "pearson": stats.pearsonr(big_judge, big_human)[0],
        "kendall": stats.kendalltau(big_judge, big_human)[0], "mae": np.abs(big_judge - big_human).mean(),
        "weighted_kappa": module.quadratic_kappa(np.minimum(big_judge // 10, 9), np.minimum(big_human // 10, 9)),
        "pass_fail_kappa": cohen_kappa_score(big_judge >= 60, big_human >= 60),
    }
    hits = dict.fromkeys(STATISTICS, 0)
    for _ in range(250):
        human, judge = rubric(rng, 30)
        result = score_agreement(judge, human, resamples=1000)
        for name in STATISTICS:
            ci = result.estimate(name).ci
            hits[name] += ci is not None and ci[0] <= truth[name] <= ci[1]
    assert all(h / 250 >= 0.89 for h in hits.values()), hits
    assert all(h / 250 <= 0.995 for h in hits.values()), hits


@pytest.mark.parametrize(("bad", "words"), [(np.nan, "NaN"), (np.inf, "infinite"), (-5, "negative"), (101, "above 100")])
def test_score_agreement_names_bad_scores(bad, words):
    with pytest.raises(ValueError, match=words):
        score_agreement([10, 20, bad], [10, 20, 30])
    with pytest.raises(ValueError, match="rater B"):
        score_agreement([10, 20, 30], [10, bad, 30])
