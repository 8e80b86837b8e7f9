"""Agreement statistics against reference implementations and published worked examples."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import aggregate_raters, cohens_kappa
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

from calibrate.agreement import (
    alternative_annotator_test,
    confusion,
    fleiss_kappa,
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


def test_bootstrap_ci_agrees_with_resampling_pairs():
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


FLEISS_1971 = np.array([  # Fleiss (1971), Table 1: 30 patients, 6 psychiatrists, 5 diagnoses
    [4, 4, 4, 4, 4, 4], [2, 2, 2, 5, 5, 5], [2, 3, 3, 3, 3, 5], [5, 5, 5, 5, 5, 5], [2, 2, 2, 4, 4, 4],
    [1, 1, 3, 3, 3, 3], [3, 3, 3, 3, 5, 5], [1, 1, 3, 3, 3, 4], [1, 1, 4, 4, 4, 4], [5, 5, 5, 5, 5, 5],
    [1, 4, 4, 4, 4, 4], [1, 2, 4, 4, 4, 4], [2, 2, 2, 3, 3, 3], [1, 4, 4, 4, 4, 4], [2, 2, 4, 4, 4, 5],
    [3, 3, 3, 3, 3, 5], [1, 1, 1, 4, 5, 5], [1, 1, 1, 1, 1, 2], [2, 2, 4, 4, 4, 4], [1, 3, 3, 5, 5, 5],
    [5, 5, 5, 5, 5, 5], [2, 4, 4, 4, 4, 4], [2, 2, 4, 5, 5, 5], [1, 1, 4, 4, 4, 4], [1, 4, 4, 4, 4, 5],
    [2, 2, 2, 2, 2, 4], [1, 1, 1, 1, 5, 5], [2, 2, 4, 4, 4, 4], [1, 3, 3, 3, 3, 3], [5, 5, 5, 5, 5, 5],
])


def test_fleiss_1971_example():
    counts, _ = aggregate_raters(FLEISS_1971)
    assert fleiss_kappa(counts).value == pytest.approx(0.4302445, abs=1e-7)  # Fleiss (1971): 0.430


def test_fleiss_matches_statsmodels_and_the_textbook_table():
    table = np.array([[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
                      [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]])
    assert fleiss_kappa(table).value == pytest.approx(0.210, abs=5e-4)
    assert fleiss_kappa(table).value == pytest.approx(sm_fleiss(table))


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
    assert "two or more" in fleiss_kappa(np.array([[1, 0], [0, 1]])).reason
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


def test_sample_size_planning():
    assert items_for_half_width(100, (0.4, 0.8), 0.1) == 300
    assert items_for_half_width(100, (0.55, 0.65), 0.1) == 0
    assert items_for_half_width(1, None) is None
    assert items_for_half_width(4, (1.0, 1.0)) == 26, "a zero-width interval from 4 items is no plan"


def test_confusion_and_vectorised_kappa_agree():
    table = confusion(["a", "b", "a", "c"], ["a", "b", "c", "c"], ["a", "b", "c"])
    assert table.tolist() == [[1, 0, 1], [0, 1, 0], [0, 0, 1]]
    assert float(kappa_from_tables(table)) == pytest.approx(cohen_kappa_score(["a", "b", "a", "c"], ["a", "b", "c", "c"]))
