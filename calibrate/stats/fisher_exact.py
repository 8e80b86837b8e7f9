"""Fisher's exact test of a 2 x 2 table, two-sided: how `calibrate.stats.correction` checks that
the labelled items of a cell look like a random sample of it. Written here on numpy and
scipy.special because scipy.stats.fisher_exact's import adds about a second to every `scores`."""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from scipy.special import gammaln

FISHER_TIES = 1e-7
"""Tables whose probability is within this relative distance of the observed one's count as
being as likely as it (as R's fisher.test, `relErr`)."""


@lru_cache(maxsize=1024)
def fisher_exact_p(a: int, b: int, c: int, d: int) -> float:
    """The two-sided p-value of Fisher's exact test of the table [[a, b], [c, d]]: given its
    margins (rows r = a + b, columns k = a + c, total n), the top-left cell x is hypergeometric,
        P(x) = C(r, x) C(n - r, k - x) / C(n, k),  max(0, r + k - n) <= x <= min(r, k),
    and p = sum of P(x) over the tables no more likely than the one observed (P(x) <= P(a),
    within a relative FISHER_TIES). Each P(x) comes from log-gamma terms shifted by the largest,
    and the sum is divided by the sum over every table rather than by C(n, k); for tables of a
    few hundred thousand items its relative error is about 1e-10 (tested against
    scipy.stats.fisher_exact). Kept for the next estimator of the same cell, which tests the same
    table. Fisher, R. A. (1922). On the interpretation of chi-square from contingency tables, and
    the calculation of P. J. Roy. Stat. Soc. 85, 87-94; Agresti, A. (2002). Categorical Data
    Analysis, 2nd ed., section 3.5."""
    rows, columns, total = a + b, a + c, a + b + c + d
    low = max(0, rows + columns - total)
    x = np.arange(low, min(rows, columns) + 1)
    log = -(gammaln(x + 1) + gammaln(rows - x + 1) + gammaln(columns - x + 1) + gammaln(total - rows - columns + x + 1))
    probability = np.exp(log - log.max())
    as_likely = probability <= probability[a - low] * (1 + FISHER_TIES)
    return min(1.0, float(probability[as_likely].sum() / probability.sum()))
