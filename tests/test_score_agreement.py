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
    pass_fail_kappa_leave_one_out,
    pearson_leave_one_out,
    quadratic_kappa_leave_one_out,
    score_agreement,
    score_ceiling,
    score_shape,
    spearman_leave_one_out,
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


def shared_items(rng, n_items, skewed=False):
    """Pairs of scores that share items, as the judge's against 1-4 people each: (judge, person,
    item of each pair), the pairs shuffled."""
    human, judge = rubric(rng, n_items, skewed=skewed)
    people = rng.integers(1, 5, n_items)
    item = np.repeat(np.arange(n_items), people)
    person = np.clip(human[item] + rng.choice([-10, -5, 0, 5, 10], len(item)), 0, 100)
    order = rng.permutation(len(item))
    return judge[item][order], person[order], item[order]


@pytest.mark.parametrize("seed", range(4))
def test_leave_one_item_out_values_equal_recomputing_without_all_of_its_pairs(seed, monkeypatch):
    rng = np.random.default_rng(seed)
    x, y, item = shared_items(rng, 25, skewed=seed % 2 == 1)
    without = [(x[item != g], y[item != g]) for g in range(25)]
    assert np.allclose(pearson_leave_one_out(x, y, item), [stats.pearsonr(a, b)[0] for a, b in without])
    assert np.allclose(kendall_leave_one_out(x, y, item), [stats.kendalltau(a, b)[0] for a, b in without])
    rho = [stats.spearmanr(a, b)[0] for a, b in without]
    assert np.allclose(spearman_leave_one_out(x, y, item), rho), "from the table of distinct values"
    monkeypatch.setattr(module, "SPEARMAN_TABLE_CELLS", 0)
    assert np.allclose(spearman_leave_one_out(x, y, item), rho), "pair by pair"
    a, b = np.minimum(x // 10, 9), np.minimum(y // 10, 9)
    assert np.allclose(quadratic_kappa_leave_one_out(a, b, item), [
        cohen_kappa_score(a[item != g], b[item != g], labels=list(range(10)), weights="quadratic") for g in range(25)])
    passed = (x >= 60) * 1.0, (y >= 60) * 1.0
    assert np.allclose(pass_fail_kappa_leave_one_out(*passed, item),
                       [cohen_kappa_score(passed[0][item != g], passed[1][item != g]) for g in range(25)])


def test_where_pairs_share_items_every_interval_is_the_grouped_jackknife_over_items():
    """The interval's formula by brute force: each statistic recomputed without each item (all its
    pairs), SE = sqrt((G - 1)/G sum (z_g - mean z)^2) on Fisher's z (MAE: on the MAE, the interval
    on the log scale), t with G - 1 degrees of freedom."""
    rng = np.random.default_rng(12)
    x, y, item = shared_items(rng, 30)
    result = score_agreement(x, y, items=[f"item {g}" for g in item])
    assert (result.n, result.items) == (len(x), 30) and result.as_dict()["items"] == 30
    t = stats.t.ppf(0.975, 29)
    bins = lambda v: np.minimum(v // 10, 9)  # noqa: E731
    statistics = {"spearman": lambda a, b: stats.spearmanr(a, b)[0], "pearson": lambda a, b: stats.pearsonr(a, b)[0],
                  "kendall": lambda a, b: stats.kendalltau(a, b)[0],
                  "weighted_kappa": lambda a, b: cohen_kappa_score(bins(a), bins(b), weights="quadratic"),
                  "pass_fail_kappa": lambda a, b: cohen_kappa_score(a >= 60, b >= 60)}
    for name, statistic in statistics.items():
        found = result.estimate(name)
        z = np.arctanh([statistic(x[item != g], y[item != g]) for g in range(30)])
        se = np.sqrt(29 / 30 * ((z - z.mean()) ** 2).sum())
        assert found.value == pytest.approx(statistic(x, y)) and found.se == pytest.approx(se), name
        assert found.ci == pytest.approx(np.tanh(np.arctanh(found.value) + np.array([-1, 1]) * t * se)), name
    d = np.abs(x - y)
    without = np.array([d[item != g].mean() for g in range(30)])
    se = np.sqrt(29 / 30 * ((without - without.mean()) ** 2).sum())
    assert result.mae.se == pytest.approx(se)
    assert result.mae.ci == pytest.approx(d.mean() * np.exp(np.array([-1, 1]) * t * se / d.mean()))
    assert result.pass_fail.agreement.ci is None and "only kappa's interval here resamples items" in \
        result.pass_fail.agreement.ci_reason, "the posterior and Wilson intervals take pairs as independent"
    few = score_agreement(x[item < 9], y[item < 9], items=item[item < 9])
    assert all(few.estimate(name).ci_reason.startswith("fewer than 10 items") for name in STATISTICS), \
        "the fewest items an interval needs count items, not pairs"


def test_with_one_pair_per_item_the_intervals_are_the_single_pair_ones():
    rng = np.random.default_rng(13)
    human, judge = rubric(rng, 40, skewed=True)
    assert score_agreement(judge, human, items=[f"q{k}" for k in range(40)]).as_dict() == \
        score_agreement(judge, human).as_dict()
    for name, leave_one_out in (("pearson", pearson_leave_one_out), ("kendall", kendall_leave_one_out),
                                ("weighted_kappa", quadratic_kappa_leave_one_out)):
        assert np.array_equal(leave_one_out(judge, human, np.arange(40)), leave_one_out(judge, human)), name
    pairs = enumerate(zip(human, judge, strict=True))
    two = score_ceiling({k: {"ana": {"s": float(h)}, "bo": {"s": float(j)}} for k, (h, j) in pairs},
                        {k: {"s": 50.0 + k} for k in range(40)}, ["s"])
    assert two.humans["s"].as_dict() == score_agreement(human, judge).as_dict(), "two people: one pair per item"


def test_the_ceilings_judge_and_three_peoples_figures_have_intervals_that_resample_items():
    rng = np.random.default_rng(14)
    human, judge = rubric(rng, 40)
    people = {k: {who: {"s": float(np.clip(h + shift, 0, 100))} for who, shift in (("ana", 0), ("bo", 5), ("cy", -5))}
              for k, h in enumerate(human)}
    ceiling = score_ceiling(people, {k: {"s": float(j)} for k, j in enumerate(judge)}, ["s"])
    for found, pairs in ((ceiling.judge["s"], 120), (ceiling.humans["s"], 120)):
        assert (found.n, found.items) == (pairs, 40)
        assert all(found.estimate(name).ci is not None for name in STATISTICS)
    assert ceiling.notes == ["intervals resample items (a grouped jackknife): the judge's pairs against each person "
                             "share items, and so do the people's pairs of an item three or more scored"]
    naive = score_agreement([p["s"] for k in people for p in people[k].values()], np.repeat(judge, 3))
    width = lambda e: e.ci[1] - e.ci[0]  # noqa: E731
    assert width(ceiling.judge["s"].mae) > width(naive.mae), "three pairs an item are not three items"


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


@pytest.mark.parametrize("clustered", [False, True])
def test_shape_and_the_approximate_mark_come_from_the_simulated_table(clustered):
    """A setting the simulated table marks carries its figure; where pairs share items, the
    table's clustered part (by items, not pairs)."""
    rng = np.random.default_rng(2)
    symmetric, skewed = rubric(rng, 120), rubric(rng, 120, skewed=True)
    assert score_shape(*symmetric, 60) == "symmetric" and score_shape(*skewed, 60) == "skewed"
    table = json.loads(SCORE_COVERAGE_TABLE.read_text())
    table = table["clustered"] if clustered else table
    marked = [(name, shape, n, c) for name, rows in table["below"].items() for shape, n, c in rows]
    assert marked, "the simulated table marks some settings approximate"
    for name, shape, n, covered in marked:
        assert covered < 0.93 and simulated_score_coverage(name, n, shape, clustered=clustered) == covered
    name, shape, n, covered = marked[0]
    for _ in range(200):  # a sample of that shape and size whose interval exists carries the figure
        if clustered:
            x, y, item = shared_items(rng, n, skewed=shape == "skewed")
            result = score_agreement(x, y, items=item)
        else:
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


def test_intervals_over_items_cover_in_a_small_simulation():
    """Where pairs share items (the judge against 1-4 people an item, 30 items), about 95 %
    coverage of the population value (the bench runs the full grid); 200 samples give a
    Monte-Carlo SE of 1.5 %, so 89 % is four SEs below 95 %."""
    rng = np.random.default_rng(21)
    judge, person, _ = shared_items(rng, 200_000)
    truth = {"spearman": stats.spearmanr(judge, person)[0], "pearson": stats.pearsonr(judge, person)[0],
             "kendall": stats.kendalltau(judge, person)[0], "mae": np.abs(judge - person).mean(),
             "weighted_kappa": module.quadratic_kappa(np.minimum(judge // 10, 9), np.minimum(person // 10, 9))}
    hits = dict.fromkeys(truth, 0)
    for _ in range(200):
        x, y, item = shared_items(rng, 30)
        result = score_agreement(x, y, items=item, resamples=100)
        for name in truth:
            ci = result.estimate(name).ci
            hits[name] += ci is not None and ci[0] <= truth[name] <= ci[1]
    assert all(0.89 <= h / 200 <= 0.995 for h in hits.values()), hits


@pytest.mark.parametrize(("bad", "words"), [(np.nan, "NaN"), (np.inf, "infinite"), (-5, "negative"), (101, "above 100")])
def test_score_agreement_names_bad_scores(bad, words):
    with pytest.raises(ValueError, match=words):
        score_agreement([10, 20, bad], [10, 20, 30])
    with pytest.raises(ValueError, match="rater B"):
        score_agreement([10, 20, 30], [10, bad, 30])
