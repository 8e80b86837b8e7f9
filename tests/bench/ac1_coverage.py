"""Exact coverage of 95 % intervals for Gwet's AC1 at small n (issue 20: prevalence .95, n 20),
the current one and the candidates, by enumerating every 2 x 2 table of n items (as
coverage_exact.py does).

Intervals (each widened to contain the point estimate, as `two_raters` does):
  jeffreys   the current one: equal-tailed posterior interval under Dirichlet(counts + 1/2)
             (4000 draws, seed DEFAULT_SEED)
  quarter    the same under Dirichlet(counts + 1/4)
  union      the union of the two intervals (lowest lower end, highest upper end)
  shipped    what calibrate ships: two_raters' AC1 interval (the union, from its own draws)
Populations:
  equal      coverage.py's: both raters with prevalence p of the first label and kappa k,
             p {.5, .8, .95} x k {.3, .6, .8}
  judge      a judge against people: people's prevalence of "yes" P {.5, .8, .9, .95, .98}, the
             judge's sensitivity Se {.8, .9, .95, .99, 1} and specificity Sp {.3, .5, .7, .9, 1}
             (unequal marginals, as a judge that says yes too often)
Coverage = the total probability of the tables whose interval contains the population AC1; a
table without an interval counts as a miss. No Monte-Carlo error over tables; the intervals
themselves come from posterior draws.

    .venv/bin/python tests/bench/ac1_coverage.py [n ...]     (default 20 50)
"""

from __future__ import annotations

import sys
import time

import numpy as np
from coverage_exact import all_tables, population, probabilities

from calibrate.stats.agreement import DEFAULT_SEED, ac1_from_tables, posterior_tables, two_raters

METHODS = ("jeffreys", "quarter", "union", "shipped")


def intervals(tables: np.ndarray) -> dict[str, np.ndarray]:
    out = {}
    for name, prior in (("jeffreys", 0.5), ("quarter", 0.25)):
        cis = np.empty((len(tables), 2))
        for i, table in enumerate(tables):
            table = table.reshape(2, 2)
            value = float(ac1_from_tables(table))
            draws = ac1_from_tables(posterior_tables(table, 4000, DEFAULT_SEED, prior))
            lo, hi = np.quantile(draws[np.isfinite(draws)], [0.025, 0.975])
            cis[i] = (min(lo, value), max(hi, value)) if np.isfinite(value) else (lo, hi)
        out[name] = cis
    out["union"] = np.stack([np.minimum(out["jeffreys"][:, 0], out["quarter"][:, 0]),
                             np.maximum(out["jeffreys"][:, 1], out["quarter"][:, 1])], 1)
    shipped = [two_raters(table=table.reshape(2, 2), labels=["yes", "no"]).ac1.ci for table in tables]
    out["shipped"] = np.array([ci if ci is not None else (np.nan, np.nan) for ci in shipped], dtype=float)
    return out


def coverage(tables, cis, cells) -> dict[str, float]:
    truth = float(ac1_from_tables(cells))
    with np.errstate(invalid="ignore"):
        weight = probabilities(tables, cells)
    weight = np.nan_to_num(weight)
    return {k: float(weight @ ((c[:, 0] <= truth + 1e-12) & (truth - 1e-12 <= c[:, 1]))) for k, c in cis.items()}


def main(sizes=(20, 50)) -> None:
    start = time.perf_counter()
    for n in sizes:
        tables = all_tables(n)
        cis = intervals(tables)
        print(f"\n## n = {n}: equal marginals (coverage.py's population)\n")
        print("| prevalence | kappa | AC1 | " + " | ".join(METHODS) + " |")
        print("| --- | --- | --- |" + " --- |" * len(METHODS))
        for p in (0.5, 0.8, 0.95):
            for kappa in (0.3, 0.6, 0.8):
                cells = population(p, kappa)
                cov = coverage(tables, cis, cells)
                print(f"| {p} | {kappa} | {float(ac1_from_tables(cells)):.3f} | " + " | ".join(f"{cov[k]:.1%}" for k in METHODS) + " |")
        rows = []
        for prev in (0.5, 0.8, 0.9, 0.95, 0.98):
            for se in (0.8, 0.9, 0.95, 0.99, 1.0):
                for sp in (0.3, 0.5, 0.7, 0.9, 1.0):
                    cells = np.array([[prev * se, (1 - prev) * (1 - sp)], [prev * (1 - se), (1 - prev) * sp]])
                    rows.append((prev, se, sp, float(ac1_from_tables(cells)), coverage(tables, cis, cells)))
        print(f"\n## n = {n}: a judge against people, {len(rows)} populations\n")
        print("| method | lowest (where) | lowest at prevalence .95 | populations below 93 % | mean |")
        print("| --- | --- | --- | --- | --- |")
        for k in METHODS:
            worst = min(rows, key=lambda r: r[4][k])
            at95 = min(r[4][k] for r in rows if r[0] == 0.95)
            below = np.mean([r[4][k] < 0.93 for r in rows])
            print(f"| {k} | {worst[4][k]:.1%} (P {worst[0]}, Se {worst[1]}, Sp {worst[2]}, AC1 {worst[3]:.3f}) | "
                  f"{at95:.1%} | {below:.0%} | {np.mean([r[4][k] for r in rows]):.1%} |")
        print("\nprevalence .95, every judge:\n")
        print("| Se | Sp | AC1 | " + " | ".join(METHODS) + " |")
        print("| --- | --- | --- |" + " --- |" * len(METHODS))
        for prev, se, sp, ac1, cov in rows:
            if prev == 0.95:
                print(f"| {se} | {sp} | {ac1:.3f} | " + " | ".join(f"{cov[k]:.1%}" for k in METHODS) + " |")
        sys.stdout.flush()
    print(f"\nruntime {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main(tuple(int(a) for a in sys.argv[1:]) or (20, 50))
