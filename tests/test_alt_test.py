"""The alternative annotator test against the authors' procedure and simulated judges."""

from __future__ import annotations

import numpy as np
import pytest

from calibrate.stats.alt_test import alternative_annotator_test


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


def test_the_t_test_and_the_benjamini_yekutieli_correction_match_scipy_stats():
    from scipy import stats

    from calibrate.stats.alt_test import benjamini_yekutieli, t_test_below_p

    rng = np.random.default_rng(8)
    for _ in range(300):
        d = rng.integers(-1, 2, size=rng.integers(2, 400)).astype(float)
        if np.ptp(d) > 0:
            epsilon = rng.choice([0.1, 0.15, 0.2])
            assert t_test_below_p(d, epsilon) == pytest.approx(
                stats.ttest_1samp(d, epsilon, alternative="less").pvalue, rel=1e-12, abs=1e-300)
    for _ in range(300):
        p = rng.uniform(0, 1, rng.integers(1, 12)) ** rng.uniform(1, 8)
        p[: len(p) // 2] = p[0]  # ties
        assert benjamini_yekutieli(list(p)) == pytest.approx(stats.false_discovery_control(p, method="by"), rel=1e-12)
