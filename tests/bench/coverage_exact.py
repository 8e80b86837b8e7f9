"""Exact coverage of the 95 % intervals that `two_raters` gives, where exact is affordable
(run on demand: `python tests/bench/coverage_exact.py [n ...]`, default n = 20 50).

Same population as tests/bench/coverage.py (two raters, equal prevalence p, population kappa k).
Instead of sampling tables, every 2 x 2 table of n items (C(n + 3, 3) of them: 1771 at n = 20,
23426 at n = 50) is enumerated once with its multinomial probability, `two_raters` is asked for
its intervals once per table (seed DEFAULT_SEED, i.e. the interval a report would print for
that table), and the coverage of a cell is the total probability of the tables whose interval
contains the population value. Nothing is simulated over tables, so the figures have no
Monte-Carlo error across tables; the kappa and AC1 intervals themselves still come from 1000
posterior draws, so a table whose interval ends next to the population value can fall either
side of it with another seed (coverage.py, which draws a seed per replicate, averages over
that). Raw agreement's Wilson interval depends on the table only through the agreeing count,
so its exact coverage is also given for n = 100 and 300 (a binomial sum).
A table without an interval counts as a miss. Target: 93-97 % in every cell.
"""

from __future__ import annotations

import sys
import time

import numpy as np
from scipy import stats
from scipy.special import gammaln

from calibrate.stats.agreement import ac1_from_tables, two_raters
from calibrate.stats.intervals import DEFAULT_SEED, wilson_interval

PREVALENCES = (0.5, 0.8, 0.95)
KAPPAS = (0.3, 0.6, 0.8)
STATISTICS = ("kappa", "ac1", "agreement")


def population(p: float, kappa: float) -> np.ndarray:
    q = p * (1 - p)
    return np.array([[p * p + kappa * q, (1 - kappa) * q], [(1 - kappa) * q, (1 - p) ** 2 + kappa * q]])


def all_tables(n: int) -> np.ndarray:
    """Every 2 x 2 table of n items, (C(n + 3, 3), 4) in cell order n11, n12, n21, n22."""
    return np.array([(a, b, c, n - a - b - c) for a in range(n + 1) for b in range(n + 1 - a) for c in range(n + 1 - a - b)])


def probabilities(tables: np.ndarray, cells: np.ndarray) -> np.ndarray:
    """Multinomial probability of each table under the cell probabilities."""
    n = tables[0].sum()
    with np.errstate(divide="ignore"):
        log_cells = np.log(cells.ravel())
    logp = gammaln(n + 1) - gammaln(tables + 1).sum(axis=1) + (tables * log_cells).sum(axis=1, where=tables > 0)
    return np.exp(logp)


def intervals(tables: np.ndarray) -> dict[str, np.ndarray]:
    """Each statistic's interval for each table, (tables, 2); NaN where none is given."""
    out = {name: np.full((len(tables), 2), np.nan) for name in STATISTICS}
    for i, table in enumerate(tables):
        result = two_raters(table=table.reshape(2, 2), labels=["yes", "no"], seed=DEFAULT_SEED)
        for name in STATISTICS:
            ci = getattr(result, name).ci
            if ci:
                out[name][i] = ci
    return out


def exact_wilson(n: int, agreement: float) -> float:
    x = np.arange(n + 1)
    ci = np.array([wilson_interval(int(k), n) for k in x])
    return float(stats.binom.pmf(x, n, agreement)[(ci[:, 0] <= agreement) & (agreement <= ci[:, 1])].sum())


def main(sizes: tuple[int, ...] = (20, 50)) -> None:
    start = time.perf_counter()
    print("Exact 95 % interval coverage (every table enumerated); '!' = outside 93-97 %")
    print(f"{'prevalence':>10} {'n':>4} {'kappa':>5} | {'kappa':>7} {'AC1':>7} {'agreement':>9}")
    outside = cells_shown = 0
    for n in sizes:
        tables = all_tables(n)
        cis = intervals(tables)
        for p in PREVALENCES:
            for kappa in KAPPAS:
                cells = population(p, kappa)
                truth = {"kappa": kappa, "ac1": float(ac1_from_tables(cells)), "agreement": float(np.trace(cells))}
                weight = probabilities(tables, cells)
                cov = {name: float(weight @ ((cis[name][:, 0] <= truth[name]) & (truth[name] <= cis[name][:, 1])))
                       for name in STATISTICS}
                marks = {name: "!" if not 0.93 <= cov[name] <= 0.97 else " " for name in STATISTICS}
                outside += sum(mark == "!" for mark in marks.values())
                cells_shown += 3
                print(f"{p:>10} {n:>4} {kappa:>5} | "
                      + " ".join(f"{cov[name]:>{w - 1}.2%}{marks[name]}" for name, w in zip(STATISTICS, (8, 8, 10), strict=True)))
    print("raw agreement (Wilson) at the larger n, exact binomial sum:")
    for n in (100, 300):
        for p in PREVALENCES:
            for kappa in KAPPAS:
                cov = exact_wilson(n, float(np.trace(population(p, kappa))))
                mark = "!" if not 0.93 <= cov <= 0.97 else " "
                outside += mark == "!"
                cells_shown += 1
                print(f"{p:>10} {n:>4} {kappa:>5} | {'':>7} {'':>7} {cov:>9.2%}{mark}")
    print(f"{outside} of {cells_shown} (cell, statistic) pairs outside 93-97 %; runtime {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main(tuple(int(a) for a in sys.argv[1:]) or (20, 50))
