"""Simulation: coverage of the corrected-accuracy intervals of calibrate.stats.correction.

For each setting a judge with known sensitivity and specificity rates N items whose human
labels are Bernoulli(true accuracy); n of them, drawn at random, carry the human label. Over
many simulated datasets we count how often each 95 % interval covers the true accuracy
(PPI++, Rogan-Gladen, classical Wilson on the labels alone), their mean widths, the bias of the
raw judge accuracy, how often the guard refused a number, how often the PPI++ interval
covers the mean of the labels over exactly these N items (conservative by design) and how
often the finite_population=True interval does (its target), and the
coverage Rogan-Gladen would have with the independent-samples variance of Lang & Reiczigel
(2014), which ignores that the labelled items also count in the judge's positive rate.

The first settings are the issue's (Se 0.9, Sp 0.7, accuracy 0.5, 200 of 1000 labelled) and
three others; then DESIGN.md's grid, accuracy {.5, .8, .95} x n {20, 50, 100, 300}.

    .venv/bin/python tests/bench/correction_coverage.py [DATASETS]     (default 2000)
"""

from __future__ import annotations

import sys
import time

import numpy as np

from calibrate.stats.correction import ppi_mean, rogan_gladen

# (name, true accuracy, [(Se, Sp) per judge], N items, n labelled)
SETTINGS = [
    ("Se.9 Sp.7 acc.5", 0.5, [(0.9, 0.7)], 1000, 200),
    ("Se.85 Sp.9 acc.8", 0.8, [(0.85, 0.9)], 1000, 200),
    ("Se.95 Sp.6 acc.3 small", 0.3, [(0.95, 0.6)], 500, 50),
    ("2 judges .9/.7 .8/.85 acc.5", 0.5, [(0.9, 0.7), (0.8, 0.85)], 1000, 200),
] + [
    # DESIGN.md's grid for 95 % intervals: prevalence {.5, .8, .95} x n {20, 50, 100, 300}
    (f"grid Se.9 Sp.7 acc{acc}", acc, [(0.9, 0.7)], 1000, n) for acc in (0.5, 0.8, 0.95) for n in (20, 50, 100, 300)
]


def simulate(rng, accuracy, judges, total, n):
    """(verdicts (N, J), labels with NaN where unlabelled, all human labels)."""
    y = (rng.random(total) < accuracy).astype(float)
    verdicts = np.stack(
        [np.where(y == 1, rng.random(total) < se, rng.random(total) >= sp) for se, sp in judges], axis=1
    ).astype(float)
    labels = np.full(total, np.nan)
    chosen = rng.choice(total, n, replace=False)
    labels[chosen] = y[chosen]
    return verdicts, labels, y


def independent_ci(rg, labels, z=1.959963984540054):
    """Wald interval with [p(1-p)/N + theta^2 Se(1-Se)/n1 + (1-theta)^2 Sp(1-Sp)/n0] / J^2."""
    n1 = int(np.nansum(labels))
    n0 = int((~np.isnan(labels)).sum()) - n1
    se, sp, p, th = rg.sensitivity, rg.specificity, rg.positive_rate, rg.value
    var = (p * (1 - p) / rg.n_total + th**2 * se * (1 - se) / n1 + (1 - th) ** 2 * sp * (1 - sp) / n0) / (se + sp - 1) ** 2
    return max(0.0, th - z * np.sqrt(var)), min(1.0, th + z * np.sqrt(var))


def covers(ci, truth):
    return ci is not None and ci[0] <= truth <= ci[1]


def run(datasets: int, seed: int = 0) -> list[dict]:
    rows = []
    for name, accuracy, judges, total, n in SETTINGS:
        rng = np.random.default_rng(seed)
        hits = {"ppi": 0, "rg": 0, "classical": 0, "ppi_finite": 0, "rg_independent": 0, "fpc": 0}
        widths = {"ppi": [], "rg": [], "classical": [], "fpc": []}
        refused = {"ppi": 0, "rg": 0}
        raw = []
        for _ in range(datasets):
            verdicts, labels, y = simulate(rng, accuracy, judges, total, n)
            ppi = ppi_mean(verdicts, labels, random_sample=True)
            raw.append(ppi.raw_judge)
            cl = ppi.classical
            hits["classical"] += covers(cl.ci, accuracy)
            widths["classical"].append(cl.ci[1] - cl.ci[0])
            if ppi.value is None:
                refused["ppi"] += 1
            else:
                hits["ppi"] += covers(ppi.ci, accuracy)
                hits["ppi_finite"] += covers(ppi.ci, y.mean())
                widths["ppi"].append(ppi.ci[1] - ppi.ci[0])
                fpc = ppi_mean(verdicts, labels, random_sample=True, finite_population=True)
                hits["fpc"] += covers(fpc.ci, y.mean())
                widths["fpc"].append(fpc.ci[1] - fpc.ci[0])
            if len(judges) == 1:
                rg = rogan_gladen(verdicts[:, 0], labels, random_sample=True)
                if rg.value is None:
                    refused["rg"] += 1
                else:
                    hits["rg"] += covers(rg.ci, accuracy)
                    hits["rg_independent"] += covers(independent_ci(rg, labels), accuracy)
                    widths["rg"].append(rg.ci[1] - rg.ci[0])
        done = {k: datasets - refused.get(k, 0) for k in ("ppi", "rg", "classical")}
        rows.append({
            "setting": f"{name} N={total} n={n}",
            "cov_ppi": hits["ppi"] / done["ppi"] if done["ppi"] else None,
            "cov_rg": hits["rg"] / done["rg"] if len(judges) == 1 and done["rg"] else None,
            "cov_classical": hits["classical"] / datasets,
            "cov_rg_independent": hits["rg_independent"] / done["rg"] if len(judges) == 1 and done["rg"] else None,
            "cov_ppi_finite": hits["ppi_finite"] / done["ppi"] if done["ppi"] else None,
            "cov_fpc": hits["fpc"] / done["ppi"] if done["ppi"] else None,
            "width_fpc": float(np.mean(widths["fpc"])) if widths["fpc"] else None,
            "width_ppi": float(np.mean(widths["ppi"])) if widths["ppi"] else None,
            "width_rg": float(np.mean(widths["rg"])) if widths["rg"] else None,
            "width_classical": float(np.mean(widths["classical"])),
            "raw_bias": float(np.mean(raw)) - accuracy,
            "refused_ppi": refused["ppi"],
            "refused_rg": refused["rg"] if len(judges) == 1 else None,
        })
    return rows


def fmt(value, digits=3):
    return "—" if value is None else f"{value:.{digits}f}"


def main() -> None:
    datasets = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    start = time.perf_counter()
    rows = run(datasets)
    print(f"{datasets} datasets per setting, 95 % intervals, {time.perf_counter() - start:.1f} s\n")
    print("| setting | cov PPI++ | cov RG | cov classical | width PPI++ | width RG | width classical | raw judge bias | PPI++ covers mean of these N | finite-pop PPI++ covers it (width) | RG indep.-samples variance | refused PPI++ / RG |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        refused = f"{r['refused_ppi']} / {'—' if r['refused_rg'] is None else r['refused_rg']}"
        print(
            f"| {r['setting']} | {fmt(r['cov_ppi'])} | {fmt(r['cov_rg'])} | {fmt(r['cov_classical'])} | "
            f"{fmt(r['width_ppi'])} | {fmt(r['width_rg'])} | {fmt(r['width_classical'])} | "
            f"{r['raw_bias']:+.3f} | {fmt(r['cov_ppi_finite'])} | {fmt(r['cov_fpc'])} ({fmt(r['width_fpc'])}) | {fmt(r['cov_rg_independent'])} | {refused} |"
        )


if __name__ == "__main__":
    main()
