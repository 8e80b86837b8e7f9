"""Simulation: can the expected calibration error (ECE, 10 equal-width bins, as
calibrate.stats.reliability.calibration computes it) get a 95 % interval that keeps its promise?

Generator: the judge's confidence in its verdict c ~ 0.5 + 0.5 Beta(4, 1.2) (mostly above 0.85,
as LLM judges report), and it agrees with the human with probability g(c):
  calibrated      g(c) = c                          population ECE 0 (up to binning)
  over_5          g(c) = c - 0.05                   over-confident by 5 points
  over_15         g(c) = c - 0.15                   over-confident by 15 points
  flat            g(c) = 0.8                        confidence carries no information
The population ECE is that of the same bins on 2 million items.

Intervals (95 %), resampling items (1000 resamples):
  percentile   the 2.5 and 97.5 % quantiles of the resampled ECEs
  basic        2 ECE - (97.5 %, 2.5 % quantiles), clipped at 0 (Efron & Tibshirani 1993, ch. 13)
  bca          BCa (jackknife acceleration)
A replicate without an interval counts as a miss. Monte-Carlo SE at 95 %: sqrt(0.95 x 0.05 / R).

    .venv/bin/python tests/bench/ece_coverage.py [REPLICATES]   (default 500)
"""

from __future__ import annotations

import sys
import time

import numpy as np
from scipy import stats

from calibrate.stats.reliability import calibration

SIZES = (20, 50, 100, 200, 500)
SCENARIOS = {
    "calibrated": lambda c: c,
    "over_5": lambda c: c - 0.05,
    "over_15": lambda c: c - 0.15,
    "flat": lambda c: np.full_like(c, 0.8),
}
BINS, RESAMPLES = 10, 1000


def draw(rng, size, scenario):
    confidence = 0.5 + 0.5 * rng.beta(4, 1.2, size)
    return confidence, (rng.random(size) < SCENARIOS[scenario](confidence)).astype(float)


def which_bin(confidence):
    edges = np.arange(BINS + 1) / BINS
    return np.clip(np.searchsorted(edges, confidence, side="left") - 1, 0, BINS - 1)


def ece_weighted(confidence, outcome, weights):
    """ECE of each row of `weights` (B, n): item i counted w_i times."""
    onehot = np.eye(BINS)[which_bin(confidence)]
    hits, conf = weights @ (onehot * outcome[:, None]), weights @ (onehot * confidence[:, None])
    return np.abs(hits - conf).sum(-1) / weights.sum(-1)


def population(rng, scenario, size=2_000_000):
    confidence = 0.5 + 0.5 * rng.beta(4, 1.2, size)
    expected = SCENARIOS[scenario](confidence)  # use the probabilities: no sampling noise in the truth
    b = which_bin(confidence)
    gap = np.bincount(b, weights=expected - confidence, minlength=BINS)
    return float(np.abs(gap).sum() / size)


def intervals(rng, confidence, outcome):
    n = len(confidence)
    value = float(ece_weighted(confidence, outcome, np.ones((1, n)))[0])
    counts = rng.multinomial(n, np.full(n, 1 / n), size=RESAMPLES).astype(float)
    boot = ece_weighted(confidence, outcome, counts)
    lo, hi = np.quantile(boot, [0.025, 0.975])
    out = {"percentile": (lo, hi), "basic": (max(0.0, 2 * value - hi), max(0.0, 2 * value - lo))}
    jack = ece_weighted(confidence, outcome, 1 - np.eye(n))
    z0 = stats.norm.ppf(((boot < value).sum() + 0.5 * (boot == value).sum()) / RESAMPLES)
    centred = jack.mean() - jack
    denominator = 6 * (centred**2).sum() ** 1.5
    if np.isfinite(z0) and denominator > 0:
        a = (centred**3).sum() / denominator
        q = [stats.norm.cdf(z0 + (z0 + z) / (1 - a * (z0 + z))) for z in stats.norm.ppf([0.025, 0.975])]
        out["bca"] = tuple(np.quantile(boot, q))
    else:
        out["bca"] = None
    return value, out


def main(replicates: int = 500) -> None:
    rng = np.random.default_rng(5)
    c, o = draw(rng, 300, "over_5")
    assert np.isclose(ece_weighted(c, o, np.ones((1, 300)))[0], calibration(c, o).ece.value)
    start = time.perf_counter()
    print(f"ECE 95 % interval coverage, {replicates} replicates, {RESAMPLES} resamples; "
          f"Monte-Carlo SE at 95 %: {np.sqrt(0.95 * 0.05 / replicates):.2%}\n")
    print("| scenario (population ECE) | n | mean sample ECE | percentile | basic | bca |")
    print("| --- | --- | --- | --- | --- | --- |")
    for scenario in SCENARIOS:
        truth = population(rng, scenario)
        for n in SIZES:
            hits = dict.fromkeys(("percentile", "basic", "bca"), 0)
            values = []
            for _ in range(replicates):
                value, cis = intervals(rng, *draw(rng, n, scenario))
                values.append(value)
                for k, ci in cis.items():
                    hits[k] += bool(ci) and ci[0] <= truth <= ci[1]
            print(f"| {scenario} ({truth:.3f}) | {n} | {np.mean(values):.3f} | "
                  + " | ".join(f"{hits[k] / replicates:.1%}" for k in hits) + " |", flush=True)
    print(f"\nruntime {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 500)
