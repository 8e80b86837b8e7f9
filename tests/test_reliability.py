"""Judge reliability against hand computations and reference implementations."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from sklearn.metrics import brier_score_loss
from statsmodels.discrete.discrete_model import Logit
from statsmodels.stats.proportion import confint_proportions_2indep, proportion_confint

from calibrate.stats.ceiling import alpha_from_coincidences
from calibrate.stats.intervals import coincidences
from calibrate.stats.reliability import (
    calibration,
    consistency,
    jury,
    length_bias,
    leniency,
    logistic_fit,
    positive_rate_difference,
    same_family,
)
from calibrate.stats.trust_or_escalate import (
    UNPARSED,
    detectable_shortfall,
    fewest_certifiable,
    majority_confidence,
    minimum_calibration,
    trust_threshold,
)

# -- consistency ---------------------------------------------------------------------------------


def scripted_repeats(items=40, flips=10, k=3):
    """items x k verdicts: the first `flips` items answer yes, no, yes...; the rest agree."""
    rows = [["yes" if (r + j) % 2 == 0 else "no" for j in range(k)] for r in range(flips)]
    rows += [["yes" if r % 3 else "no"] * k for r in range(items - flips)]
    return rows


def test_flip_rate_equals_the_scripted_one_with_a_wilson_interval():
    rows = scripted_repeats(40, 10, 3)
    rows.append(["yes", None, None])  # one repeat only: not counted
    result = consistency(rows, resamples=200)
    assert result.items == 40
    assert result.flip_rate.value == 10 / 40
    lo, hi = proportion_confint(10, 40, alpha=0.05, method="wilson")
    assert result.flip_rate.ci == pytest.approx((lo, hi), abs=1e-12)
    assert result.unstable == list(range(10))


def test_alpha_across_repeats_matches_krippendorff_and_its_bootstrap_covers_it():
    rng = np.random.default_rng(3)
    truth = rng.integers(0, 3, 150)
    codes = np.where(rng.random((150, 4)) < 0.8, truth[:, None], rng.integers(0, 3, (150, 4))).astype(object)
    codes[rng.random((150, 4)) < 0.1] = None
    labels = np.array(["a", "b", "c"], dtype=object)
    rows = [[None if v is None else labels[v] for v in row] for row in codes]
    result = consistency(rows, resamples=500)
    data = np.array([[np.nan if v is None else float(v) for v in row] for row in codes]).T
    keep = np.isfinite(data).sum(axis=0) >= 2
    reference = krippendorff.alpha(reliability_data=data[:, keep], level_of_measurement="nominal")
    assert result.alpha.value == pytest.approx(reference, abs=1e-12)
    assert result.alpha.ci[0] < result.alpha.value < result.alpha.ci[1]
    assert result.alpha.ci[1] - result.alpha.ci[0] < 0.2
    # the vectorised coincidence form used for the bootstrap gives the same alpha
    counts = np.stack([(data[:, keep] == v).sum(axis=0) for v in (0.0, 1.0, 2.0)], axis=1)
    assert alpha_from_coincidences(coincidences(counts).sum(axis=0), np.arange(3)) == pytest.approx(reference, abs=1e-12)
    assert consistency(rows, resamples=500).alpha.ci == result.alpha.ci, "seeded"


def test_consistency_degenerate_inputs_give_reasons():
    same = consistency([["yes"] * 3] * 5, resamples=50)
    assert same.flip_rate.value == 0 and same.unstable == []
    assert same.alpha.value is None and "every repeat" in same.alpha.reason
    empty = consistency([["yes", None], [None, None]], resamples=50)
    assert empty.items == 0 and empty.flip_rate.value is None and empty.flip_rate.reason
    assert empty.alpha.value is None and empty.alpha.reason
    with pytest.raises(ValueError):
        consistency([["yes", "no"], ["yes"]])


def test_an_unparsed_repeat_is_an_answer_that_did_not_agree_and_a_failed_one_no_answer():
    result = majority_confidence([["yes", "yes", UNPARSED], ["yes", "yes", None], ["yes", UNPARSED, UNPARSED],
                                  [UNPARSED, UNPARSED, None], ["yes", "no", UNPARSED]])
    assert result.verdicts == ["yes", "yes", "yes", None, None] and result.ties == 1
    assert result.confidence == [pytest.approx(2 / 3), 1.0, pytest.approx(1 / 3), None, pytest.approx(1 / 3)]
    assert result.answers == [3, 2, 3, 2, 3]
    flips = consistency([["yes", "yes", UNPARSED], ["yes", "no", UNPARSED]], resamples=10)
    assert flips.items == 2 and flips.unstable == [1], "consistency compares the labels given"


def test_majority_confidence_and_ties():
    result = majority_confidence([["yes", "yes", "no"], ["yes", "no", None], [None, np.nan, None], ["no", "no", "no"]])
    assert result.verdicts == ["yes", None, None, "no"]
    assert result.confidence == [pytest.approx(2 / 3), 0.5, None, 1.0]
    assert result.ties == 1


# -- calibration ---------------------------------------------------------------------------------

CONF = [0.95, 0.9, 0.85, 0.75, 0.72, 0.55, 0.6, 0.3]
CORRECT = [1, 1, 0, 1, 0, 1, 0, 0]


def test_ece_equals_the_hand_computation():
    # 10 bins ((b-1)/10, b/10]: (0.9, 1.0] {0.95: right} -> |1 - 0.95| = 0.05, n 1
    # (0.8, 0.9] {0.9 right, 0.85 wrong}: acc 0.5, conf 0.875 -> 0.375, n 2
    # (0.7, 0.8] {0.75 right, 0.72 wrong}: acc 0.5, conf 0.735 -> 0.235, n 2
    # (0.5, 0.6] {0.55 right, 0.6 wrong}: acc 0.5, conf 0.575 -> 0.075, n 2
    # (0.2, 0.3] {0.3 wrong}: acc 0, conf 0.3 -> 0.3, n 1
    hand = (1 * 0.05 + 2 * 0.375 + 2 * 0.235 + 2 * 0.075 + 1 * 0.3) / 8
    assert hand == pytest.approx(0.215)
    result = calibration(CONF, CORRECT)
    assert result.ece.value == pytest.approx(hand, abs=1e-12)
    assert [b["count"] for b in result.bins] == [0, 0, 1, 0, 0, 2, 0, 2, 2, 1]
    assert result.bins[7]["confidence"] == pytest.approx(0.735) and result.bins[7]["accuracy"] == 0.5
    assert result.bins[0]["confidence"] is None and result.bins[0]["accuracy"] is None


def test_brier_matches_sklearn():
    rng = np.random.default_rng(5)
    conf = rng.uniform(0.5, 1, 500)
    correct = (rng.random(500) < conf).astype(int)
    result = calibration(conf, correct, bins=15)
    assert result.brier.value == pytest.approx(brier_score_loss(correct, conf), abs=1e-12)
    assert result.brier.se == pytest.approx(stats.sem((conf - correct) ** 2), abs=1e-12)
    assert result.ece.value < 0.08  # calibrated by construction
    assert sum(b["count"] for b in result.bins) == 500 and len(result.bins) == 15


def test_calibration_degenerate_and_malformed():
    empty = calibration([], [])
    assert empty.ece.value is None and empty.ece.reason and empty.bins == []
    single = calibration([0.0], [0])
    assert single.ece.value == 0.0 and single.bins[0]["count"] == 1  # confidence 0: first bin
    assert single.brier.ci is None and single.brier.reason
    with pytest.raises(ValueError):
        calibration([1.2], [1])
    with pytest.raises(ValueError):
        calibration([0.5, 0.5], [1])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 1), st.booleans()), min_size=1, max_size=60), st.integers(1, 20))
def test_calibration_properties(pairs_, bins):
    conf = [c for c, _ in pairs_]
    correct = [int(k) for _, k in pairs_]
    result = calibration(conf, correct, bins=bins)
    assert 0 <= result.ece.value <= 1
    assert result.brier.value == pytest.approx(brier_score_loss(correct, conf, pos_label=1), abs=1e-12)
    assert sum(b["count"] for b in result.bins) == len(conf)


# -- trust or escalate ---------------------------------------------------------------------------


def trust_data():
    """Repeat-based confidences: 40 items at 1.0 (39 agree with people), 30 at 0.8 (26 agree),
    30 at 0.6 (18 agree)."""
    conf = [1.0] * 40 + [0.8] * 30 + [0.6] * 30
    agree = [1] * 39 + [0] + [1] * 26 + [0] * 4 + [1] * 18 + [0] * 12
    return conf, agree


def test_trust_threshold_equals_the_hand_computation():
    conf, agree = trust_data()
    target, risk = 0.85, 0.1
    # Fixed-sequence testing from the top, exact one-sided binomial test of H0: p <= 0.85.
    p_top = stats.binomtest(39, 40, target, alternative="greater").pvalue  # items at >= 1.0
    p_mid = stats.binomtest(65, 70, target, alternative="greater").pvalue  # items at >= 0.8
    p_low = stats.binomtest(83, 100, target, alternative="greater").pvalue  # all items
    assert p_top <= risk and p_mid <= risk and p_low > risk  # so the threshold is 0.8
    guaranteed = stats.beta.ppf(risk, 65, 70 - 65 + 1)  # Clopper-Pearson one-sided lower bound
    assert guaranteed >= target
    result = trust_threshold(conf, agree, target=target, risk=risk, thresholds=[1.0, 0.8, 0.6])
    assert result.met and result.threshold == 0.8
    assert result.accepted == 70 and result.coverage == 0.7
    assert result.lower_bound == pytest.approx(guaranteed, abs=1e-12)
    assert result.agreement == pytest.approx(65 / 70)
    # the default fixed grid (step 0.001) accepts the same items; its smallest rejected value is 0.601
    grid = trust_threshold(conf, agree, target=target, risk=risk)
    assert grid.threshold == 0.601 and grid.lowest_accepted == 0.8 and grid.accepted == 70
    assert grid.lower_bound == pytest.approx(guaranteed, abs=1e-12)


def test_trust_refuses_when_the_target_cannot_be_met():
    conf, agree = trust_data()
    # at target 0.97 a test needs ceil(log 0.1 / log 0.97) = 76 items before it can reject, so
    # testing starts with all 100 items: 83 agree, not enough
    assert np.ceil(np.log(0.1) / np.log(0.97)) == 76
    assert stats.binomtest(83, 100, 0.97, alternative="greater").pvalue > 0.1
    result = trust_threshold(conf, agree, target=0.97, risk=0.1)
    assert not result.met and result.threshold is None and result.coverage is None
    assert result.best_lower_bound == pytest.approx(stats.beta.ppf(0.1, 83, 18), abs=1e-12)
    assert "no threshold meets the target" in result.reason
    # strict testing from the top: the 40 items at 1.0 (39 agree) already fail
    assert stats.binomtest(39, 40, 0.97, alternative="greater").pvalue > 0.1
    strict = trust_threshold(conf, agree, target=0.97, risk=0.1, min_items=1)
    assert not strict.met and strict.best_lower_bound == pytest.approx(stats.beta.ppf(0.1, 39, 2), abs=1e-12)
    assert "accepts 101 or more" in trust_threshold(conf, agree, min_items=101).reason
    assert trust_threshold([], [], target=0.9).reason
    with pytest.raises(ValueError):
        trust_threshold(conf, agree, target=1.0)


def test_trust_guarantee_holds_in_simulation():
    # Calibrated judge: confidence ~ U(0.5, 1), P(agree | conf) = conf, so the population
    # agreement above lambda is (1 + lambda) / 2, at least 0.9 exactly when lambda >= 0.8.
    # A returned threshold below 0.8 breaks the guarantee; it must happen in <= risk of runs.
    rng = np.random.default_rng(11)
    target, risk, runs = 0.9, 0.1, 400
    failures = found = 0
    for _ in range(runs):
        conf = rng.uniform(0.5, 1, 1000)
        agree = (rng.random(1000) < conf).astype(int)
        result = trust_threshold(conf, agree, target=target, risk=risk)
        if result.met:
            found += 1
            failures += result.threshold < 0.8
    assert found == 349 and failures == 23, (found, failures)  # seeded: 5.75 % of runs broke it
    assert failures / runs <= risk
    # strict testing from the very top (min_items=1) stops at a one-item threshold and refuses
    strict = trust_threshold(conf, agree, target=target, risk=risk, min_items=1)
    assert not strict.met and strict.best_lower_bound < 0.8


def over_confident_run(rng, n):
    """Confidence ~ U(0, 1), P(agree | c) = 0.6 + 0.4 c: the agreement above a threshold lambda is
    0.8 + 0.2 lambda, at least 0.9 exactly when lambda >= 0.5 (half the items can be accepted)."""
    confidence = rng.random(n)
    return confidence, (rng.random(n) < 0.6 + 0.4 * confidence).astype(int)


def test_below_the_minimum_calibration_size_a_certification_is_usually_wrong():
    # the mechanism behind minimum_calibration (tests/bench/trust_simulation.py has the full table)
    rng = np.random.default_rng(17)
    minimum = minimum_calibration(0.9, 0.1)
    assert minimum == 9 * fewest_certifiable(0.9, 0.1) == 198
    share_wrong = {}
    for n in (30, minimum):
        thresholds = [r.threshold for r in (trust_threshold(*over_confident_run(rng, n), target=0.9, risk=0.1)
                                            for _ in range(300)) if r.met]
        wrong = sum(t < 0.5 for t in thresholds)
        assert wrong / 300 <= 0.1 + 0.03  # the marginal guarantee holds at both sizes
        share_wrong[n] = wrong / len(thresholds)
    assert share_wrong[30] >= 0.8, "with 30 labels the rare certifications miss the target"
    assert share_wrong[minimum] <= 0.1, "from the minimum on, a certification is usually right"


def test_trust_refuses_below_the_minimum_calibration_size_when_asked():
    conf, agree = trust_data()  # 100 labelled items
    refused = trust_threshold(conf, agree, target=0.85, risk=0.1, min_calibration=101)
    assert not refused.met and refused.threshold is None and refused.min_calibration == 101
    assert refused.reason == ("100 labelled items: at least 101 are needed before a threshold is certified "
                              "(with fewer, a certification is usually wrong on fresh items)")
    allowed = trust_threshold(conf, agree, target=0.85, risk=0.1, min_calibration=100)
    default = trust_threshold(conf, agree, target=0.85, risk=0.1)
    assert allowed.met and allowed.threshold == default.threshold and allowed.accepted == default.accepted == 70
    assert default.min_calibration is None
    assert allowed.shortfall == default.shortfall == detectable_shortfall(70, 0.85, 0.1)


@pytest.mark.parametrize("labels", [1, 22, 50, 200, 1000])
def test_detectable_shortfall_is_the_exact_power_of_the_binomial_test(labels):
    target, risk, power = 0.9, 0.1, 0.8
    shortfall = detectable_shortfall(labels, target, risk, power)
    # the test of "agreement >= 0.9" rejects at level 0.1 when at most c of the labels agree
    c = max(k for k in range(labels + 1) if stats.binom.cdf(k, labels, target) <= risk)
    p = target - shortfall
    assert stats.binom.cdf(c, labels, p) == pytest.approx(power)  # a judge at 0.9 - shortfall is caught 80 % of the time
    assert stats.binom.cdf(c, labels, p + 0.01) < power  # a smaller shortfall is caught less often
    normal = (stats.norm.ppf(1 - risk) + stats.norm.ppf(power)) * np.sqrt(target * (1 - target) / labels)
    if labels >= 1000:
        assert shortfall == pytest.approx(normal, rel=0.1)
    assert detectable_shortfall(1, 0.9, 0.01) == 0.9  # one label can never show a shortfall at risk 0.01
    with pytest.raises(ValueError):
        detectable_shortfall(0, 0.9, 0.1)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([0.5, 0.6, 0.7, 0.8, 0.9, 1.0]), st.booleans()), min_size=1, max_size=200),
       st.sampled_from([0.7, 0.8, 0.9]))
def test_trust_answer_is_consistent(pairs_, target):
    conf = [c for c, _ in pairs_]
    agree = [int(k) for _, k in pairs_]
    result = trust_threshold(conf, agree, target=target, risk=0.1, min_items=1)
    if result.met:
        accepted = [a for c, a in zip(conf, agree, strict=True) if c >= result.threshold]
        assert result.accepted == len(accepted) and result.agreement == pytest.approx(np.mean(accepted))
        assert result.lower_bound >= target and result.lower_bound <= result.agreement
        assert stats.binomtest(sum(accepted), len(accepted), target, alternative="greater").pvalue <= 0.1 + 1e-9
    else:
        assert result.reason and result.best_lower_bound < target


# -- length bias ---------------------------------------------------------------------------------


def length_data(seed, length_effect, n=2000):
    rng = np.random.default_rng(seed)
    human = (rng.random(n) < 0.5).astype(int)
    length = rng.lognormal(5, 0.6, n)
    z = (length - length.mean()) / length.std()
    logit = -1 + 2.5 * human + length_effect * z
    judge = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(int)
    return judge, human, length


def test_logistic_fit_matches_statsmodels_logit():
    judge, human, length = length_data(1, 0.4, n=500)
    z = (length - length.mean()) / length.std()
    x = np.column_stack([np.ones(500), human, z])
    beta, se, reason = logistic_fit(x, judge.astype(float))
    reference = Logit(judge, x).fit(disp=0, method="newton", tol=1e-12)
    assert reason is None
    assert beta == pytest.approx(reference.params, abs=1e-6)
    assert se == pytest.approx(reference.bse, abs=1e-6)
    probe = length_bias(judge, human, length)
    assert probe.estimate.value == pytest.approx(reference.params[2], abs=1e-6)
    assert probe.estimate.se == pytest.approx(reference.bse[2], abs=1e-6)
    low, high = reference.conf_int(0.05)[2]
    assert probe.estimate.ci == pytest.approx((low, high), abs=1e-6)


def test_length_probe_detects_a_scripted_bias_and_none_without_one():
    assert length_bias(*length_data(2, 0.8)).verdict == "says yes more for longer answers than people do"
    assert length_bias(*length_data(3, -0.8)).verdict == "says yes more for shorter answers than people do"
    unbiased = length_bias(*length_data(4, 0.0))
    assert unbiased.verdict == "no evidence of a length bias"
    assert unbiased.estimate.ci[0] < 0 < unbiased.estimate.ci[1]


def test_length_probe_when_the_judge_never_says_no_to_a_human_yes():
    # The judge says yes whenever people do (the human term is quasi-separated): the length
    # effect is the one among the items people said no to, as statsmodels finds there.
    judge, human, length = length_data(6, 0.8)
    judge = np.where(human == 1, 1, judge)
    z = (length - length.mean()) / length.std()
    no = human == 0
    reference = Logit(judge[no], np.column_stack([np.ones(no.sum()), z[no]])).fit(disp=0, method="newton", tol=1e-12)
    probe = length_bias(judge, human, length)
    assert probe.estimate.value == pytest.approx(reference.params[1], abs=1e-6)
    assert probe.estimate.se == pytest.approx(reference.bse[1], abs=1e-6)
    assert probe.verdict == "says yes more for longer answers than people do"
    assert "labelled no" in probe.detail["note"]


def test_length_probe_degenerate_inputs():
    human = np.array([0, 1] * 20)
    copied = length_bias(human, human, np.arange(40))  # the judge copies people
    assert copied.estimate.value is None and "fixed by the human label" in copied.estimate.reason
    assert "cannot tell" in copied.verdict
    separated = length_bias((np.arange(40) >= 20).astype(int), human, np.arange(40))  # length decides
    assert separated.estimate.value is None and "separated" in separated.estimate.reason
    assert "same length" in length_bias(human, 1 - human, np.ones(40)).estimate.reason
    assert "every item" in length_bias(np.ones(40), human, np.arange(40)).estimate.reason
    judge, _, length = length_data(5, 0.8)
    one_class = length_bias(judge, np.ones(2000), length)
    assert one_class.estimate.value is not None and "labelled yes" in one_class.detail["note"]
    with pytest.raises(ValueError):
        length_bias([1, 0], [1], [3, 4])


# -- leniency and self-preference ----------------------------------------------------------------


def paired(a, b, c, d):
    """Judge / human 0-1 vectors for the paired table a (both yes), b (judge yes, human no),
    c (judge no, human yes), d (both no)."""
    judge = [1] * a + [1] * b + [0] * c + [0] * d
    human = [1] * a + [0] * b + [1] * c + [0] * d
    return judge, human


@pytest.mark.parametrize("table", [(4, 6, 2, 3), (5, 6, 2, 3)])
def test_positive_rate_difference_reduces_to_newcombe_unpaired_when_phi_is_zero(table):
    # ad - bc = 0 and ad - bc = 3 <= n/2 = 8: the corrected phi is 0, and the paired interval is
    # the unpaired hybrid score (square-and-add) interval on the two margins
    a, b, c, d = table
    n = a + b + c + d
    result = positive_rate_difference(*paired(a, b, c, d))
    assert result.value == pytest.approx((b - c) / n)
    reference = confint_proportions_2indep(a + b, n, a + c, n, method="newcomb", compare="diff")
    assert result.ci == pytest.approx(reference, abs=1e-9)


def test_positive_rate_difference_by_hand_with_correlated_pairs():
    # Cavo et al. (2012) table used by Fagerland, Lydersen & Laake (2017), ch. 8:
    # a 59, b 6, c 16, d 80, n 161. A = 59*80 - 6*16 = 4624 > n/2, so
    # phi = (4624 - 80.5) / sqrt(65 * 96 * 75 * 86).
    a, b, c, d = 59, 6, 16, 80
    n, p1, p2 = 161, 65 / 161, 75 / 161
    (l1, u1), (l2, u2) = (proportion_confint(k, n, method="wilson") for k in (65, 75))
    phi = (4624 - 80.5) / np.sqrt(65 * 96 * 75 * 86)
    lower = p1 - p2 - np.sqrt((p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2)
    upper = p1 - p2 + np.sqrt((p2 - l2) ** 2 - 2 * phi * (p2 - l2) * (u1 - p1) + (u1 - p1) ** 2)
    result = positive_rate_difference(*paired(a, b, c, d))
    assert result.value == pytest.approx(-10 / 161)
    assert result.ci == pytest.approx((lower, upper), abs=1e-12)
    unpaired = confint_proportions_2indep(65, n, 75, n, method="newcomb", compare="diff")
    assert result.ci[0] > unpaired[0] and result.ci[1] < unpaired[1], "pairing narrows the interval"
    assert positive_rate_difference([], []).reason


def test_leniency_per_system_and_family():
    lenient = paired(30, 20, 1, 49)
    fair = paired(30, 3, 3, 64)
    harsh = paired(20, 0, 15, 65)
    judge = lenient[0] + fair[0] + harsh[0]
    human = lenient[1] + fair[1] + harsh[1]
    systems = ["gpt-4o"] * 100 + ["r1"] * 100 + ["llama"] * 100
    result = leniency(judge, human, systems)
    assert result["gpt-4o"].verdict.startswith("lenient") and result["gpt-4o"].estimate.value == pytest.approx(0.19)
    assert result["r1"].verdict.startswith("no evidence") and result["r1"].estimate.value == 0
    assert result["llama"].verdict.startswith("harsh") and result["llama"].n == 100
    families = {"gpt-4o-judge": "openai", "gpt-4o": "openai", "r1": "deepseek"}
    assert same_family("gpt-4o-judge", "gpt-4o", families) is True
    assert same_family("gpt-4o-judge", "r1", families) is False
    assert same_family("gpt-4o-judge", "llama", families) is None


# -- jury ----------------------------------------------------------------------------------------


def test_jury_majority_with_ties_and_mean_scores():
    labels = jury([["yes", "yes", "no"], ["yes", "no", None], [None, None, None], ["no", "no", "yes"]])
    assert labels.verdicts == ["yes", None, None, "no"]
    assert labels.ties == 1 and labels.unjudged == 1
    scores = jury([[80, 60, 70], [50, None, np.nan], [None, None, None]], scores=True)
    assert scores.verdicts == [70.0, 50.0, None] and scores.unjudged == 1 and scores.ties == 0
