"""Agreement on 0-100 scores against scipy and scikit-learn."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from calibrate.stats.agreement import two_raters
from calibrate.stats.score_agreement import score_agreement


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


def test_degenerate_scores():
    constant = score_agreement([50, 50, 50], [10, 60, 90])
    assert constant.spearman.value is None and "constant" in constant.spearman.reason
    json.dumps(constant.as_dict(), allow_nan=False)


@pytest.mark.parametrize(("bad", "words"), [(np.nan, "NaN"), (np.inf, "infinite"), (-5, "negative"), (101, "above 100")])
def test_score_agreement_names_bad_scores(bad, words):
    with pytest.raises(ValueError, match=words):
        score_agreement([10, 20, bad], [10, 20, 30])
    with pytest.raises(ValueError, match="rater B"):
        score_agreement([10, 20, 30], [10, bad, 30])
