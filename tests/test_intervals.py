"""The shared intervals against statsmodels and scipy: Wilson, draws with undefined values."""

from __future__ import annotations

import numpy as np
import pytest

from calibrate.stats.intervals import interval_from_draws


def test_wilson_interval_matches_statsmodels():
    from statsmodels.stats.proportion import proportion_confint

    from calibrate.stats.intervals import wilson_interval

    for x, n in ((0, 20), (18, 20), (20, 20), (37, 50)):
        assert wilson_interval(x, n) == pytest.approx(proportion_confint(x, n, method="wilson"))
    assert wilson_interval(0, 0) is None


def test_interval_from_draws_counts_undefined_draws_and_refuses_zero_width():
    ci, share, reason = interval_from_draws(np.ones(100))
    assert ci is None and share == 0 and "zero-width" in reason
    ci, share, reason = interval_from_draws(np.r_[np.full(10, np.nan), np.linspace(0, 1, 90)])
    assert ci is None and share == pytest.approx(0.1) and "undefined in 10%" in reason
    ci, share, reason = interval_from_draws(np.r_[np.full(2, np.nan), np.linspace(0, 1, 98)])
    assert ci is not None and share == pytest.approx(0.02) and reason is None


def test_proportion_has_the_wilson_interval_of_scipy_the_binomial_se_and_a_reason_when_empty():
    from scipy import stats

    from calibrate.stats.intervals import proportion

    for x, n in ((0, 10), (3, 10), (10, 10), (120, 400)):
        ci = stats.binomtest(x, n).proportion_ci(confidence_level=0.95, method="wilson")
        result = proportion(x, n)
        assert result.value == x / n and result.ci == pytest.approx((ci.low, ci.high), abs=1e-12)
        assert result.se == pytest.approx(np.sqrt(x / n * (1 - x / n) / n), abs=1e-15)
    few = proportion(3, 9)
    assert few.value == 3 / 9 and few.ci is None and "fewer than 10 items" in few.ci_reason
    empty = proportion(0, 0, none_reason="no labelled items")
    assert empty.value is None and empty.ci is None and empty.reason == "no labelled items"
