"""Two-rater agreement statistics against reference implementations and published worked examples."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import cohens_kappa

from calibrate.stats.agreement import (
    AC1_APPROXIMATE,
    AC1_WIDER_PRIOR,
    TOO_UNCERTAIN,
    ac1_from_tables,
    confusion,
    interpret_kappa,
    items_for_half_width,
    kappa_band,
    kappa_from_tables,
    two_raters,
)
from calibrate.stats.intervals import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    JEFFREYS,
    estimate_from_draws,
    posterior_tables,
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


def test_reasons_name_the_raters_and_the_class():
    result = two_raters(["yes"] * 5, ["yes", "no", "yes", "no", "yes"], ["yes", "no"], raters=("the judge", "ana"))
    assert result.kappa.reason == "the judge used a single class ('yes'): kappa is 0 by construction"


@pytest.mark.parametrize(("value", "ci", "words"), [
    (0.7, (0.55, 0.83), "substantial"),  # moderate to almost perfect: the neighbours of the band
    (0.5, (0.45, 0.58), "moderate"),
    (1.0, (-0.09, 1.0), f"{TOO_UNCERTAIN} (poor to almost perfect)"),  # three agreeing items
    (0.3, (0.05, 0.65), f"{TOO_UNCERTAIN} (slight to substantial)"),
    (0.7, (0.35, 0.83), f"{TOO_UNCERTAIN} (fair to almost perfect)"),
    (0.5, None, f"{TOO_UNCERTAIN} (no interval)"),
    (None, None, "undefined"),
])
def test_a_band_is_named_only_where_the_interval_can_tell_it(value, ci, words):
    assert kappa_band(value, ci) == words


def test_ac1_interval_is_the_union_of_the_jeffreys_and_quarter_posteriors():
    table = np.array([[30, 4], [3, 13]])
    result = two_raters(table=table, labels=["yes", "no"])
    value = float(ac1_from_tables(table))
    cis = [estimate_from_draws(value, ac1_from_tables(posterior_tables(table, DEFAULT_RESAMPLES, DEFAULT_SEED, prior))).ci
           for prior in (0.5, 0.25)]
    assert result.ac1.ci == pytest.approx((min(c[0] for c in cis), max(c[1] for c in cis)))
    assert result.ac1.approximate is None


def test_ac1_is_marked_approximate_at_few_items_and_high_prevalence():
    assert AC1_APPROXIMATE == ((20, 0.95, 0.905), (50, 0.97, 0.905))
    skewed = two_raters(table=np.array([[19, 1], [0, 0]]), labels=["yes", "no"])  # yes at 97.5 %, 20 items
    assert skewed.ac1.ci is not None and skewed.ac1.approximate == 0.905
    assert two_raters(table=np.array([[19, 1], [1, 0]]), labels=["yes", "no"]).ac1.approximate is None, "21 at 95 %"
    assert two_raters(table=np.array([[49, 1], [0, 0]]), labels=["yes", "no"]).ac1.approximate == 0.905, "50 at 99 %"
    assert two_raters(table=np.array([[17, 1], [1, 1]]), labels=["yes", "no"]).ac1.approximate is None, "yes at 90 %"


def test_confusion_and_vectorised_kappa_agree():
    table = confusion(["a", "b", "a", "c"], ["a", "b", "c", "c"], ["a", "b", "c"])
    assert table.tolist() == [[1, 0, 1], [0, 1, 0], [0, 0, 1]]
    assert float(kappa_from_tables(table)) == pytest.approx(cohen_kappa_score(["a", "b", "a", "c"], ["a", "b", "c", "c"]))


# -- intervals -------------------------------------------------------------------------------------


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


def test_one_class_table_has_an_interval_but_no_point_kappa_and_zero_width_is_refused():
    result = two_raters(table=np.array([[20, 0], [0, 0]]), labels=["yes", "no"])
    assert result.kappa.value is None and "undefined" in result.kappa.reason
    assert result.kappa.ci is not None and result.kappa.undefined_share == 0.0  # posterior draws are all defined
    assert result.agreement.ci[1] == 1.0 and result.agreement.ci[0] == pytest.approx(0.8389, abs=1e-4)


# -- planning --------------------------------------------------------------------------------------


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


# -- the judge against the human label -------------------------------------------------------------


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


def test_marginal_homogeneity_p_values_match_scipy_stats():
    """McNemar's exact p from the incomplete beta function and Stuart-Maxwell's from `chdtrc`
    are scipy.stats' binomtest and chi2.sf, on small, tied, one-sided and million-item tables."""
    from scipy import stats

    from calibrate.stats.agreement import marginal_homogeneity

    pairs = [(b, c) for b in range(0, 90, 3) for c in range(0, 90, 7) if b + c]
    pairs += [(0, 5000), (10, 100_000), (49_000, 51_000), (123_456, 123_457), (500_000, 501_000), (40, 40)]
    for b, c in pairs:
        reference = stats.binomtest(b, b + c, 0.5).pvalue
        assert marginal_homogeneity(np.array([[7, b], [c, 3]]))["p"] == pytest.approx(reference, rel=1e-12, abs=1e-300)
    rng = np.random.default_rng(3)
    for _ in range(200):
        table = rng.integers(0, 40, size=(rng.integers(3, 6),) * 2)
        result = marginal_homogeneity(table)
        if result["p"] is not None:
            assert result["p"] == pytest.approx(stats.chi2.sf(result["statistic"], result["df"]), rel=1e-12)


# -- robustness ------------------------------------------------------------------------------------


def test_missing_labels_are_left_out_and_counted():
    result = two_raters(["yes", None, "no", "yes"], ["yes", "no", None, "no"])
    assert result.n == 2 and "2 pairs with a missing label left out" in result.notes
    with pytest.raises(ValueError, match="not in the label set"):
        two_raters(["yes", "maybe"], ["yes", "no"], ["yes", "no"])
    json.dumps(two_raters([None], [None]).as_dict(), allow_nan=False)


def _kappa_by_reductions(tables: np.ndarray) -> np.ndarray:
    n = tables.sum(axis=(-1, -2)).astype(float)
    po = np.trace(tables, axis1=-2, axis2=-1) / n
    pe = (tables.sum(axis=-1) * tables.sum(axis=-2)).sum(axis=-1) / n**2
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(pe < 1, (po - pe) / (1 - pe), np.nan)


def _ac1_by_reductions(tables: np.ndarray) -> np.ndarray:
    n = tables.sum(axis=(-1, -2)).astype(float)
    pa = np.trace(tables, axis1=-2, axis2=-1) / n
    pi = (tables.sum(axis=-1) + tables.sum(axis=-2)) / (2 * n[..., None])
    pe = (pi * (1 - pi)).sum(axis=-1) / (tables.shape[-1] - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(pe < 1, (pa - pe) / (1 - pe), np.nan)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 10**6), min_size=4, max_size=4), st.integers(0, 2**32 - 1),
       st.sampled_from([JEFFREYS, AC1_WIDER_PRIOR]))
def test_two_by_two_statistics_equal_numpys_reductions_to_the_last_bit(cells, seed, prior):
    """Kappa and AC1 of 2 x 2 tables are written out cell by cell; on posterior draws, on the
    observed table and on stacks of integer tables they equal the formulas' numpy reductions
    exactly (report outputs do not change by a bit)."""
    table = np.array(cells).reshape(2, 2)
    draws = posterior_tables(table, 500, seed, prior)
    integer_stack = np.random.default_rng(seed).multinomial(sum(cells), [0.25] * 4, size=50).reshape(50, 2, 2)
    for tables in (draws, table, integer_stack, table.astype(float)):
        assert np.array_equal(kappa_from_tables(tables), _kappa_by_reductions(tables), equal_nan=True)
        assert np.array_equal(ac1_from_tables(tables), _ac1_by_reductions(tables), equal_nan=True)
