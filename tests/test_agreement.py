"""Agreement statistics against reference implementations and published worked examples."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import cohens_kappa

from calibrate.stats.agreement import (
    alternative_annotator_test,
    confusion,
    interpret_kappa,
    items_for_half_width,
    kappa_from_tables,
    krippendorff_alpha,
    score_agreement,
    two_raters,
)


def pairs(table, labels):
    a, b = [], []
    for i, x in enumerate(labels):
        for j, y in enumerate(labels):
            a += [x] * table[i][j]
            b += [y] * table[i][j]
    return a, b


def test_two_rater_kappa_worked_example():
    # The classic worked example (Wikipedia, "Cohen's kappa"): 50 proposals, A and B say
    # yes/yes 20, yes/no 5, no/yes 10, no/no 15: p_o = 0.7, p_e = 0.5, kappa = 0.4.
    result = two_raters(*pairs([[20, 5], [10, 15]], ["yes", "no"]), labels=["yes", "no"])
    assert result.raw_agreement == pytest.approx(0.7)
    assert result.kappa.value == pytest.approx(0.4)
    assert result.table == [[20, 5], [10, 15]]
    assert interpret_kappa(result.kappa.value) == "fair"


@pytest.mark.parametrize("seed", range(5))
def test_kappa_and_weighted_kappa_match_sklearn(seed):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 4, 300)
    b = np.where(rng.random(300) < 0.6, a, rng.integers(0, 4, 300))
    labels = [0, 1, 2, 3]
    result = two_raters(a.tolist(), b.tolist(), labels, ordinal=True)
    assert result.kappa.value == pytest.approx(cohen_kappa_score(a, b))
    assert result.kappa_linear.value == pytest.approx(cohen_kappa_score(a, b, weights="linear"))
    assert result.kappa_quadratic.value == pytest.approx(cohen_kappa_score(a, b, weights="quadratic"))


def test_analytic_standard_error_matches_statsmodels():
    table = np.array([[22, 4, 1], [5, 30, 3], [2, 6, 27]])
    result = two_raters(table=table, labels=["a", "b", "c"])
    reference = cohens_kappa(table)
    assert result.kappa.value == pytest.approx(reference.kappa)
    assert result.kappa.se == pytest.approx(reference.std_kappa, rel=1e-6)


def test_posterior_interval_agrees_with_resampling_pairs_at_large_n():
    rng = np.random.default_rng(7)
    a = rng.integers(0, 2, 2000)
    b = np.where(rng.random(2000) < 0.8, a, 1 - a)
    result = two_raters(a.tolist(), b.tolist(), [0, 1])
    idx = rng.integers(0, 2000, (1000, 2000))
    naive = [cohen_kappa_score(a[i], b[i]) for i in idx[:300]]
    lo, hi = np.percentile(naive, [2.5, 97.5])
    assert result.kappa.ci[0] == pytest.approx(lo, abs=0.02) and result.kappa.ci[1] == pytest.approx(hi, abs=0.02)
    assert result.kappa.ci[0] < result.kappa.value < result.kappa.ci[1]
    again = two_raters(a.tolist(), b.tolist(), [0, 1])
    assert again.kappa.ci == result.kappa.ci, "seeded: the same data gives the same interval"


# Krippendorff (2011), "Computing Krippendorff's alpha-reliability", section C: 4 observers,
# 12 units, values 1-5, missing marked as nan. Published: nominal 0.743, interval 0.849.
KRIPPENDORFF_2011 = np.array([
    [1, 2, 3, 3, 2, 1, 4, 1, 2, np.nan, np.nan, np.nan],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, np.nan, 3],
    [np.nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, np.nan],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, np.nan],
])


def test_krippendorff_reliability_data_example():
    assert krippendorff_alpha(KRIPPENDORFF_2011, "nominal").value == pytest.approx(0.743, abs=5e-4)
    assert krippendorff_alpha(KRIPPENDORFF_2011, "interval").value == pytest.approx(0.849, abs=5e-4)


def test_gwet_ac1_hand_worked_example():
    # Two raters, 100 items: both yes 70, A yes/B no 10, A no/B yes 5, both no 15.
    # p_a = 0.85; pi_yes = (80 + 75) / 200 = 0.775; p_e = 2 * 0.775 * 0.225 / (2 - 1) = 0.34875;
    # AC1 = (0.85 - 0.34875) / (1 - 0.34875) = 0.769674...   (Gwet 2008, eq. 7-8)
    result = two_raters(table=np.array([[70, 10], [5, 15]]), labels=["yes", "no"])
    assert result.ac1.value == pytest.approx((0.85 - 0.34875) / (1 - 0.34875))
    assert result.ac1.ci[0] < result.ac1.value < result.ac1.ci[1]


def test_kappa_paradox():
    # 95 % "yes" from both raters, 90 % raw agreement: kappa near 0, AC1 high.
    result = two_raters(table=np.array([[90, 5], [5, 0]]), labels=["yes", "no"])
    assert result.raw_agreement == pytest.approx(0.90)
    assert result.prevalence["yes"] == pytest.approx(0.95)
    assert result.kappa.value == pytest.approx(-0.0526, abs=1e-3)
    assert result.ac1.value == pytest.approx(0.8895, abs=1e-3)
    assert result.pabak == pytest.approx(0.8)


def test_per_class_agreement():
    result = two_raters(table=np.array([[40, 10], [0, 50]]), labels=["yes", "no"])
    assert result.per_class == {"yes": pytest.approx(80 / 90), "no": pytest.approx(100 / 110)}


@pytest.mark.parametrize(
    ("a", "b", "reason"),
    [
        ([], [], "no items"),
        (["yes"], ["no"], "n < 2"),
        (["yes"] * 5, ["yes"] * 5, "both raters used only 'yes'"),
        (["yes"] * 5, ["yes", "no", "yes", "no", "yes"], "rater A used a single class"),
        (["yes", "no"] * 3, ["yes", "no"] * 3, "perfect agreement"),
    ],
)
def test_degenerate_cells_have_a_value_or_a_reason_never_nan(a, b, reason):
    result = two_raters(a, b, ["yes", "no"])
    text = json.dumps(result.as_dict(), allow_nan=False)  # raises on NaN or inf
    assert reason in text
    assert result.kappa.value is None or np.isfinite(result.kappa.value)


def test_degenerate_many_raters_and_scores():
    assert "two or more" in krippendorff_alpha(np.array([[1.0, np.nan], [np.nan, 2.0]])).reason
    assert "same value" in krippendorff_alpha(np.array([[1.0, 1.0], [1.0, 1.0]])).reason
    constant = score_agreement([50, 50, 50], [10, 60, 90])
    assert constant.spearman.value is None and "constant" in constant.spearman.reason
    json.dumps(constant.as_dict(), allow_nan=False)


def test_score_agreement_matches_scipy():
    from scipy import stats

    rng = np.random.default_rng(3)
    a = rng.uniform(0, 100, 200).round(1)
    b = np.clip(a + rng.normal(0, 10, 200), 0, 100).round(1)
    result = score_agreement(a, b, threshold=60)
    assert result.spearman.value == pytest.approx(stats.spearmanr(a, b)[0])
    assert result.pearson.value == pytest.approx(stats.pearsonr(a, b)[0])
    assert result.mae == pytest.approx(np.abs(a - b).mean())
    passes = two_raters((a >= 60).tolist(), (b >= 60).tolist(), [True, False])
    assert result.pass_fail.kappa.value == pytest.approx(passes.kappa.value)
    bins = np.minimum(a // 10, 9).astype(int), np.minimum(b // 10, 9).astype(int)
    assert result.binned.kappa_quadratic.value == pytest.approx(
        cohen_kappa_score(*bins, labels=list(range(10)), weights="quadratic"))


def simulate(judge_accuracy: float, humans: int = 5, items: int = 200, seed: int = 0):
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 2, items)
    noisy = lambda acc: np.where(rng.random(items) < acc, truth, 1 - truth)  # noqa: E731
    labels = {h: noisy(0.85) for h in range(humans)}
    table = {i: {f"h{h}": str(labels[h][i]) for h in range(humans)} for i in range(items)}
    judge = {i: str(v) for i, v in enumerate(noisy(judge_accuracy))}
    return table, judge


def test_alternative_annotator_test_passes_a_good_judge_and_fails_a_random_one():
    good = alternative_annotator_test(*simulate(0.9))
    assert good.ran and good.passed and good.winning_rate >= 0.5
    bad = alternative_annotator_test(*simulate(0.5))
    assert bad.ran and not bad.passed and bad.winning_rate < 0.5


def test_alternative_annotator_test_says_what_is_missing():
    table, judge = simulate(0.9, humans=2)
    result = alternative_annotator_test(table, judge)
    assert not result.ran and "needs 3 or more annotators" in result.reason


def test_confusion_and_vectorised_kappa_agree():
    table = confusion(["a", "b", "a", "c"], ["a", "b", "c", "c"], ["a", "b", "c"])
    assert table.tolist() == [[1, 0, 1], [0, 1, 0], [0, 0, 1]]
    assert float(kappa_from_tables(table)) == pytest.approx(cohen_kappa_score(["a", "b", "a", "c"], ["a", "b", "c", "c"]))


# -- intervals -----------------------------------------------------------------------------------


def population(p, kappa):
    q = p * (1 - p)
    return np.array([p * p + kappa * q, (1 - kappa) * q, (1 - kappa) * q, (1 - p) ** 2 + kappa * q])


@pytest.mark.parametrize(("p", "n", "kappa"), [(0.95, 20, 0.6), (0.8, 20, 0.6), (0.95, 100, 0.8)])
def test_intervals_keep_their_promise_in_hard_cells(p, n, kappa):
    # The audit's failing cells (percentile bootstrap: 24 % at prevalence 0.95, n = 20). 400
    # seeded replicates (deterministic, so it cannot flake); the Monte Carlo SE is about 1.1
    # points, so the bound is 90-99 %. The full grid with 2000 replicates: tests/bench/coverage.py.
    from calibrate.stats.agreement import ac1_from_tables

    rng = np.random.default_rng(1)
    cells = population(p, kappa)
    truth = {"kappa": kappa, "ac1": float(ac1_from_tables(cells.reshape(2, 2))), "agreement": cells[0] + cells[3]}
    hits = dict.fromkeys(truth, 0)
    tables = rng.multinomial(n, cells, size=400)
    for r, table in enumerate(tables):
        result = two_raters(table=table.reshape(2, 2), labels=["yes", "no"], resamples=400, seed=r)
        for name, value in truth.items():
            ci = getattr(result, name).ci
            hits[name] += bool(ci and ci[0] <= value <= ci[1])
    for name, count in hits.items():
        assert 0.90 <= count / 400 <= 0.99, (name, count)


def test_wilson_interval_matches_statsmodels():
    from statsmodels.stats.proportion import proportion_confint

    from calibrate.stats.agreement import wilson_interval

    for x, n in ((0, 20), (18, 20), (20, 20), (37, 50)):
        assert wilson_interval(x, n) == pytest.approx(proportion_confint(x, n, method="wilson"))
    assert wilson_interval(0, 0) is None


def test_one_class_table_has_an_interval_but_no_point_kappa_and_zero_width_is_refused():
    result = two_raters(table=np.array([[20, 0], [0, 0]]), labels=["yes", "no"])
    assert result.kappa.value is None and "undefined" in result.kappa.reason
    assert result.kappa.ci is not None and result.kappa.undefined_share == 0.0  # posterior draws are all defined
    assert result.agreement.ci[1] == 1.0 and result.agreement.ci[0] == pytest.approx(0.8389, abs=1e-4)
    from calibrate.stats.agreement import interval_from_draws

    ci, share, reason = interval_from_draws(np.ones(100))
    assert ci is None and share == 0 and "zero-width" in reason
    ci, share, reason = interval_from_draws(np.r_[np.full(10, np.nan), np.linspace(0, 1, 90)])
    assert ci is None and share == pytest.approx(0.1) and "undefined in 10%" in reason
    ci, share, reason = interval_from_draws(np.r_[np.full(2, np.nan), np.linspace(0, 1, 98)])
    assert ci is not None and share == pytest.approx(0.02) and reason is None


def test_krippendorff_alpha_vectorised_matches_the_package_at_every_level_and_has_an_interval():
    import krippendorff

    for level in ("nominal", "ordinal", "interval", "ratio"):
        ours = krippendorff_alpha(KRIPPENDORFF_2011, level)
        assert ours.value == pytest.approx(krippendorff.alpha(reliability_data=KRIPPENDORFF_2011,
                                                              level_of_measurement=level), abs=1e-12)
        assert ours.ci[0] < ours.value <= ours.ci[1] and ours.undefined_share is not None


def test_krippendorff_unit_bootstrap_agrees_with_resampling_units_through_the_package():
    import krippendorff

    from calibrate.stats.agreement import resample_units

    rng = np.random.default_rng(5)
    truth = rng.integers(0, 3, 80)
    data = np.array([np.where(rng.random(80) < 0.7, truth, rng.integers(0, 3, 80)) for _ in range(3)], dtype=float)
    ours = krippendorff_alpha(data, resamples=300, seed=9)
    counts = np.stack([(data == v).sum(axis=0) for v in (0.0, 1.0, 2.0)], axis=1)
    first, _, weights = resample_units(counts, 300, 9)
    # each resample, written out unit by unit: a unit of each distinct kind, as often as drawn
    naive = [krippendorff.alpha(reliability_data=data[:, np.repeat(first, w)], level_of_measurement="nominal",
                                value_domain=[0.0, 1.0, 2.0]) for w in weights]
    assert ours.ci == pytest.approx(tuple(np.quantile(naive, [0.025, 0.975])), abs=1e-9)


# -- planning ------------------------------------------------------------------------------------


def test_sample_size_planning_for_80_percent_assurance():
    from scipy import stats

    more = items_for_half_width(100, (0.4, 0.8), 0.1)
    sigma = 0.2 * 10 / stats.norm.ppf(0.975)

    def half(total):
        return stats.norm.ppf(0.975) * sigma * np.sqrt(stats.chi2.ppf(0.8, total - 1) / (total - 1) / total)

    assert half(100 + more) <= 0.1 < half(100 + more - 1)
    assert more > 300, "more than the plain n (h / target)^2 plan, which reaches the target only half the time"
    assert items_for_half_width(100, (0.55, 0.65), 0.1) == 0
    assert items_for_half_width(1, None) is None
    assert items_for_half_width(4, (1.0, 1.0)) is None, "a zero-width interval gives no plan, never 0"
    assert items_for_half_width(10, (0.5, 0.52), 0.1) == 20, "at least 30 items in all"


# -- the judge against the human label -----------------------------------------------------------


def test_sensitivity_specificity_bias_prevalence_and_mcnemar():
    from statsmodels.stats.contingency_tables import mcnemar
    from statsmodels.stats.proportion import proportion_confint

    from calibrate.stats.agreement import judge_vs_human

    table = np.array([[40, 12], [4, 44]])  # rows: judge yes/no; columns: human yes/no
    result = judge_vs_human(table, ["yes", "no"], "yes")
    assert result.sensitivity.value == pytest.approx(40 / 44)
    assert result.sensitivity.ci == pytest.approx((0.7884076083340138, 0.9640778067726837))
    assert result.specificity.value == pytest.approx(44 / 56)
    assert result.specificity.ci == pytest.approx(proportion_confint(44, 56, method="wilson"))
    assert result.bias_index == pytest.approx(0.08) and result.prevalence_index == pytest.approx(-0.04)
    assert result.homogeneity["p"] == pytest.approx(mcnemar(table, exact=True).pvalue)  # 0.0768
    assert result.direction == "no evidence of a difference"
    lenient = judge_vs_human(np.array([[40, 20], [3, 37]]), ["yes", "no"], "yes")
    assert lenient.direction == "judge more lenient" and lenient.bias_index == pytest.approx(0.17)
    harsh = judge_vs_human(np.array([[37, 3], [20, 40]]), ["yes", "no"], "yes")
    assert harsh.direction == "judge harsher"
    assert judge_vs_human(np.array([[5, 0], [0, 5]]), ["yes", "no"], "yes").homogeneity["reason"] == "no discordant pairs"


def test_stuart_maxwell_matches_statsmodels():
    from statsmodels.stats.contingency_tables import SquareTable

    from calibrate.stats.agreement import marginal_homogeneity

    table = np.array([[20, 5, 3], [2, 25, 8], [1, 2, 30]])
    ours, reference = marginal_homogeneity(table), SquareTable(table).homogeneity()
    assert ours["statistic"] == pytest.approx(reference.statistic) == pytest.approx(5.318840579710149)
    assert ours["df"] == reference.df == 2
    assert ours["p"] == pytest.approx(reference.pvalue)


# -- several people per item ---------------------------------------------------------------------


def test_majority_counts_ties_and_takes_the_adjudicators_label():
    from calibrate.stats.agreement import majority_labels

    items = {1: {"a": "yes", "b": "yes", "c": "no"}, 2: {"a": "yes", "b": "no"}, 3: {"a": "no", "b": "yes", "adj": "yes"},
             4: {"a": None, "b": "no"}, 5: {"a": None}}
    plain = majority_labels(items)
    assert plain.labels == {1: "yes", 3: "yes", 4: "no"} and plain.ties == [2] and plain.from_gold == 0
    gold = majority_labels(items, gold_from="adj")
    assert gold.labels == {1: "yes", 3: "yes", 4: "no"} and gold.from_gold == 1
    assert majority_labels({2: {"a": "yes", "b": "no", "adj": "no"}}, gold_from="adj").labels == {2: "no"}


def crowd(judge_accuracy, humans=3, items=150, seed=0):
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 2, items)
    people = {f"h{h}": np.where(rng.random(items) < 0.9, truth, 1 - truth) for h in range(humans)}
    judge = np.where(rng.random(items) < judge_accuracy, truth, 1 - truth)
    table = {i: {h: str(v[i]) for h, v in people.items()} for i in range(items)}
    return table, {i: str(judge[i]) for i in range(items)}


def test_human_ceiling_same_items_paired_interval_and_verdict():
    import krippendorff

    from calibrate.stats.agreement import human_ceiling

    items, judge = crowd(0.6)
    judge[0] = None  # unparsed: left out and counted
    result = human_ceiling(items, judge, resamples=500)
    used = [i for i in items if judge[i] is not None]
    pooled_a = [judge[i] for i in used for _ in items[i]]
    pooled_b = [label for i in used for label in items[i].values()]
    assert result.judge.value == pytest.approx(cohen_kappa_score(pooled_a, pooled_b))
    matrix = np.array([[float(items[i][h]) for i in used] for h in ("h0", "h1", "h2")])
    assert result.humans.value == pytest.approx(krippendorff.alpha(reliability_data=matrix, level_of_measurement="nominal"))
    assert result.difference.value == pytest.approx(result.judge.value - result.humans.value)
    assert result.verdict == "below the human ceiling" and result.n_items == 149 and "1 item(s)" in result.notes[0]
    assert result.human_statistic.startswith("Krippendorff")
    two, judge2 = crowd(0.9, humans=2)
    paired = human_ceiling(two, judge2, resamples=500)
    h0, h1 = [two[i]["h0"] for i in two], [two[i]["h1"] for i in two]
    assert paired.humans.value == pytest.approx(cohen_kappa_score(h0, h1)) and paired.human_statistic == "Cohen's kappa"
    assert paired.verdict == "within the human ceiling"
    assert human_ceiling({1: {"a": "x", "b": "x"}}, {1: "x"}).verdict is None


def test_a_handful_of_shared_items_gives_estimates_but_no_interval_and_no_verdict():
    from calibrate.stats.agreement import MIN_BOOTSTRAP_UNITS, human_ceiling

    items, judge = crowd(0.6, items=MIN_BOOTSTRAP_UNITS - 1, seed=3)
    few = human_ceiling(items, judge)
    assert few.judge.value is not None and few.humans.value is not None and few.difference.value is not None
    assert few.judge.ci is few.humans.ci is few.difference.ci is None and few.verdict is None
    assert "too few to resample" in few.difference.reason
    items, judge = crowd(0.6, items=MIN_BOOTSTRAP_UNITS, seed=3)
    assert human_ceiling(items, judge).difference.ci is not None
    ratings = np.array([[0, 1, 1, 0, 1], [0, 1, 0, 0, 1], [1, 1, 1, 0, 1]], dtype=float)
    alpha = krippendorff_alpha(ratings)
    assert alpha.value is not None and alpha.ci is None and "5 units: too few" in alpha.ci_reason


# -- alternative annotator test ------------------------------------------------------------------


def alt_dataset(judge_accuracy=0.85, seed=11, items=60):
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 3, items)
    humans = {}
    for h, accuracy in enumerate([0.9, 0.8, 0.75, 0.65]):
        labels = np.where(rng.random(items) < accuracy, truth, rng.integers(0, 3, items))
        keep = rng.random(items) < 0.9
        humans[f"h{h}"] = {f"i{i}": "abc"[labels[i]] for i in range(items) if keep[i]}
    judge = np.where(rng.random(items) < judge_accuracy, truth, rng.integers(0, 3, items))
    by_item = {}
    for h, labels in humans.items():
        for i, label in labels.items():
            by_item.setdefault(i, {})[h] = label
    return by_item, {f"i{i}": "abc"[judge[i]] for i in range(items)}


def test_alternative_annotator_test_matches_the_authors_procedure():
    # Numbers from the authors' alt_test (github.com/nitaytech/AltTest, alt_test_example.ipynb),
    # run by hand outside the repository on this dataset (every annotator has >= 30 items).
    items, judge = alt_dataset()
    result = alternative_annotator_test(items, judge, epsilon=0.2)
    assert result.winning_rate == 0.5 and result.passed
    assert result.advantage_probability == pytest.approx(0.8537234695129432, abs=1e-12)
    expected = {"h0": 0.07356476726283186, "h1": 0.004044501045127279, "h2": 0.02295304239841615,
                "h3": 0.00022363913687818184}
    for h, p in expected.items():
        assert result.per_annotator[h]["p"] == pytest.approx(p, rel=1e-9)
        assert result.per_annotator[h]["test"] == "t-test"
    assert [h for h, d in result.per_annotator.items() if d["rejected"]] == ["h1", "h3"]
    strict = alternative_annotator_test(items, judge, epsilon=0.1)
    assert strict.winning_rate == 0.0 and not strict.passed
    assert strict.per_annotator["h3"]["p"] == pytest.approx(0.007518946648488787, rel=1e-9)
    assert strict.epsilon_guidance == {"experts": 0.2, "skilled annotators": 0.15, "crowd workers": 0.1}


def test_alternative_annotator_test_fallback_unparsed_and_left_out():
    from scipy import stats

    items, judge = alt_dataset(items=20)
    items["lonely"] = {"h9": "a"}
    judge["lonely"] = "a"
    result = alternative_annotator_test(items, judge)
    assert result.left_out == {"h9": "no item shared with another annotator and the judge"}
    assert all(d["test"] == "Wilcoxon signed-rank" for d in result.per_annotator.values()) and result.min_items == 30
    # an unparsed verdict never matches a human: the judge wins only items where the human matches no one either
    unparsed = alternative_annotator_test(items, dict.fromkeys(judge))
    assert unparsed.advantage_probability < 0.2 and unparsed.winning_rate == 0.0
    d = []
    for i, votes in items.items():
        if "h0" in votes and len(votes) >= 2:
            others = [v for a, v in votes.items() if a != "h0"]
            s_j, s_h = np.mean([judge[i] == o for o in others]), np.mean([votes["h0"] == o for o in others])
            d.append(int(s_h >= s_j) - int(s_j >= s_h))
    p = stats.wilcoxon(np.array(d) - 0.2, alternative="less").pvalue
    assert result.per_annotator["h0"]["p"] == pytest.approx(p) and result.per_annotator["h0"]["items"] == len(d)


# -- robustness ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("bad", "words"), [(np.nan, "NaN"), (np.inf, "infinite"), (-5, "negative"), (101, "above 100")])
def test_score_agreement_names_bad_scores(bad, words):
    with pytest.raises(ValueError, match=words):
        score_agreement([10, 20, bad], [10, 20, 30])
    with pytest.raises(ValueError, match="rater B"):
        score_agreement([10, 20, 30], [10, bad, 30])


def test_missing_labels_are_left_out_and_counted():
    result = two_raters(["yes", None, "no", "yes"], ["yes", "no", None, "no"])
    assert result.n == 2 and "2 pair(s) with a missing label left out" in result.notes
    with pytest.raises(ValueError, match="not in the label set"):
        two_raters(["yes", "maybe"], ["yes", "no"], ["yes", "no"])
    json.dumps(two_raters([None], [None]).as_dict(), allow_nan=False)


@pytest.mark.parametrize(
    ("data", "words"),
    [
        ([[1.0, np.nan], [np.nan, 2.0]], "two or more"),
        ([[1.0, 1.0, 2.0], [1.0, 1.0, np.nan]], "same value"),
        ([[1.0, np.inf], [1.0, 2.0]], "inf"),
        ([1.0, 2.0], "raters x units"),
    ],
)
def test_krippendorff_alpha_always_a_value_or_a_reason(data, words):
    result = krippendorff_alpha(np.array(data))
    assert result.value is None and words in result.reason
