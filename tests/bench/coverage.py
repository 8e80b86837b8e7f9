"""Coverage of the 95 % intervals that `two_raters` gives for Cohen's kappa, Gwet's AC1 and raw
agreement, by simulation (run on demand: `python tests/bench/coverage.py [replicates]`).

Population: two raters, binary labels, both with prevalence p of the first label and
population kappa k, so the 2 x 2 cell probabilities are
    p11 = p^2 + k p (1 - p),  p12 = p21 = (1 - k) p (1 - p),  p22 = (1 - p)^2 + k p (1 - p).
Each replicate draws a table of n items from that multinomial and asks `two_raters` for its
intervals; coverage is the share of replicates whose interval contains the population value.
A replicate without an interval (ci None) counts as a miss. Target: 93-97 % in every cell.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from calibrate.stats.agreement import ac1_from_tables, two_raters
from calibrate.stats.intervals import DEFAULT_SEED

PREVALENCES = (0.5, 0.8, 0.95)
SIZES = (20, 50, 100, 300)
KAPPAS = (0.3, 0.6, 0.8)
STATISTICS = ("kappa", "ac1", "agreement")


def population(p: float, kappa: float) -> np.ndarray:
    q = p * (1 - p)
    return np.array([[p * p + kappa * q, (1 - kappa) * q], [(1 - kappa) * q, (1 - p) ** 2 + kappa * q]])


def coverage(p: float, n: int, kappa: float, replicates: int, rng: np.random.Generator) -> dict[str, float]:
    cells = population(p, kappa)
    truth = {"kappa": kappa, "ac1": float(ac1_from_tables(cells)), "agreement": float(np.trace(cells))}
    hits = dict.fromkeys(STATISTICS, 0)
    for table in rng.multinomial(n, cells.ravel(), size=replicates):
        result = two_raters(table=table.reshape(2, 2), labels=["yes", "no"], seed=int(rng.integers(2**32)))
        for name in STATISTICS:
            ci = getattr(result, name).ci
            hits[name] += bool(ci and ci[0] <= truth[name] <= ci[1])
    return {name: hits[name] / replicates for name in STATISTICS}


def main(replicates: int = 1000) -> None:
    rng = np.random.default_rng(DEFAULT_SEED)
    start = time.perf_counter()
    print(f"95 % interval coverage, {replicates} replicates per cell, seed {DEFAULT_SEED}; '!' = outside 93-97 %; "
          f"Monte-Carlo SE at a true 95 %: {np.sqrt(0.95 * 0.05 / replicates):.2%} "
          "(exact figures for n = 20 and 50: tests/bench/coverage_exact.py)")
    print(f"{'prevalence':>10} {'n':>4} {'kappa':>5} | {'kappa':>7} {'AC1':>7} {'agreement':>9}")
    outside = 0
    for p in PREVALENCES:
        for n in SIZES:
            for kappa in KAPPAS:
                cov = coverage(p, n, kappa, replicates, rng)
                marks = {name: "!" if not 0.93 <= cov[name] <= 0.97 else " " for name in STATISTICS}
                outside += sum(mark == "!" for mark in marks.values())
                print(f"{p:>10} {n:>4} {kappa:>5} | "
                      + " ".join(f"{cov[name]:>{w - 1}.1%}{marks[name]}" for name, w in zip(STATISTICS, (8, 8, 10), strict=True)))
    print(f"{outside} of {3 * len(PREVALENCES) * len(SIZES) * len(KAPPAS)} (cell, statistic) pairs outside 93-97 %; "
          f"runtime {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000)
