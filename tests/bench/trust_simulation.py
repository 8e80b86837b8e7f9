"""Simulation: what a `trust` certification is worth at the calibration sizes people have.

Generator (informative but imperfect confidences). Each item has a latent easiness z ~ N(0, 1).
The judge agrees with the human with probability a = expit(alpha + beta z); it reports the
confidence c = expit(gamma + delta (z + sigma e)), e ~ N(0, 1): higher on easier items
(informative), but noisy (sigma) and over-confident (gamma, delta above alpha, beta: the median
confidence is 0.92 whatever the judge's real agreement). Scenarios:

  strong    alpha 2.0, beta 1.2   mean agreement 0.83; the 67 % most confident items agree at 0.90
  typical   alpha 1.4, beta 1.0   0.76; the top 28 % agree at 0.90
  weak      alpha 0.9, beta 0.8   0.69; the top 4 % agree at 0.90
  flat      alpha 1.6, beta 0.3   0.83; confidence says little: the top 0.5 % agree at 0.90
  coarse    strong, with the confidence rounded to one decimal (a verbalised confidence)
(gamma 2.5, delta 1.5, sigma 0.7; flat sigma 1.0.) The population curve A(lambda) =
E[a | c >= lambda], the agreement on fresh items above a threshold, is computed on 2 million
items per scenario.

A run draws `n` labelled items (the calibration size), asks `trust_threshold` (risk 0.1, and
min_calibration=None so that every size is tried) for a threshold, and, when it certifies one, looks up A(threshold): the target is
missed when A(threshold) < 0.9. Per scenario and n, over RUNS runs:
  certified     share of runs that certify a threshold
  miss|cert     share of certified runs whose threshold misses the target on fresh items
  by > 0.02     share of certified runs that miss the target by more than 0.02
  miss&cert     share of all runs that certify and miss (the procedure's guarantee: <= risk)
  bound>truth   share of all runs that certify with a printed "lower_bound" value above A(threshold)
  accepted      median share of the n items the certified threshold accepts
  shortfall     `detectable_shortfall` at the median number of accepted items (certified runs)
Monte-Carlo SE of a share p over R runs: sqrt(p (1 - p) / R); miss|cert uses the certified runs.

    .venv/bin/python tests/bench/trust_simulation.py [RUNS] [--target=T ...]   (default 1000 runs, target 0.9)

At target 0.9 the sizes are 20, 30, 50, 100, 150, 200, 500; at another target, 3, 5, 7, 9 and 12
times the fewest items whose test can certify (ceil(log risk / log target)), to check that the
minimum `min_calibration` (MIN_CALIBRATION_FACTOR times that number) carries over.
"""

from __future__ import annotations

import sys
import time

import numpy as np
from scipy.special import expit

from calibrate.stats.trust_or_escalate import (
    detectable_shortfall,
    fewest_certifiable,
    minimum_calibration,
    trust_threshold,
)

RISK = 0.1
SIZES = (20, 30, 50, 100, 150, 200, 500)
SCENARIOS = {
    "strong": (2.0, 1.2, 0.7, False),
    "typical": (1.4, 1.0, 0.7, False),
    "weak": (0.9, 0.8, 0.7, False),
    "flat": (1.6, 0.3, 1.0, False),
    "coarse": (2.0, 1.2, 0.7, True),
}
GAMMA, DELTA = 2.5, 1.5


def draw(rng, size, alpha, beta, sigma, coarse):
    """(agreement probability, confidence) of `size` items."""
    z = rng.standard_normal(size)
    confidence = expit(GAMMA + DELTA * (z + sigma * rng.standard_normal(size)))
    if coarse:
        confidence = np.round(confidence, 1)
    return expit(alpha + beta * z), confidence


def population_curve(rng, scenario, size=2_000_000):
    """A function lambda -> E[a | c >= lambda] over a large population."""
    agree, confidence = draw(rng, size, *scenario)
    order = np.argsort(-confidence)
    sorted_conf = confidence[order]
    running = np.cumsum(agree[order]) / np.arange(1, size + 1)

    def curve(threshold: float) -> float:
        accepted = np.searchsorted(-sorted_conf, -threshold, side="right")
        return float(running[accepted - 1]) if accepted else float("nan")

    return curve, running


def run(runs: int, target: float, sizes, seed: int = 7):
    rng = np.random.default_rng(seed)
    rows = []
    for name, scenario in SCENARIOS.items():
        curve, running = population_curve(rng, scenario)
        reachable = float(np.flatnonzero(running >= target).max() + 1) / len(running) if (running >= target).any() else 0.0
        for n in sizes:
            certified = missed = far = above = 0
            shares, accepted = [], []
            for _ in range(runs):
                agree_p, confidence = draw(rng, n, *scenario)
                agree = (rng.random(n) < agree_p).astype(int)
                result = trust_threshold(confidence, agree, target=target, risk=RISK)
                if not result.met:
                    continue
                certified += 1
                truth = curve(result.threshold)
                missed += truth < target
                far += truth < target - 0.02
                above += result.lower_bound > truth
                shares.append(result.coverage)
                accepted.append(result.accepted)
            rows.append({
                "scenario": name, "reachable": reachable, "n": n, "certified": certified / runs,
                "miss_given_cert": missed / certified if certified else float("nan"), "certified_runs": certified,
                "far_given_cert": far / certified if certified else float("nan"),
                "miss_and_cert": missed / runs, "bound_above": above / runs,
                "accepted": float(np.median(shares)) if shares else float("nan"),
                "accepted_items": int(np.median(accepted)) if accepted else None,
            })
    return rows


def main(runs: int, target: float) -> None:
    start = time.perf_counter()
    first = fewest_certifiable(target, RISK)
    sizes = SIZES if target == 0.9 else tuple(first * k for k in (3, 5, 7, 9, 12))
    rows = run(runs, target, sizes)
    print(f"trust_threshold, target {target}, risk {RISK}, {runs} runs per cell; the first test needs {first} items; "
          f"minimum_calibration = {minimum_calibration(target, RISK)}")
    print(f"Monte-Carlo SE of a share near 0.1 over {runs} runs: {np.sqrt(0.09 / runs):.1%}\n")
    print(f"| scenario (share of items that can be accepted at {target}) | n | certified | miss given certified (runs) "
          "| by > 0.02 | miss and certified | printed bound above truth | accepted share (items) | detectable shortfall |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        shortfall = detectable_shortfall(r["accepted_items"], target, RISK) if r["accepted_items"] else None
        print(f"| {r['scenario']} ({r['reachable']:.1%}) | {r['n']} | {r['certified']:.1%} | "
              f"{r['miss_given_cert']:.1%} ({r['certified_runs']}) | {r['far_given_cert']:.1%} | {r['miss_and_cert']:.1%} | {r['bound_above']:.1%} | "
              f"{r['accepted']:.0%} ({r['accepted_items']}) | {'—' if shortfall is None else f'{shortfall:.3f}'} |")
    print(f"\ndetectable_shortfall(m, {target}, {RISK}) by labels behind the threshold m:")
    print("  " + ", ".join(f"{m}: {detectable_shortfall(m, target, RISK):.3f}" for m in (first, 30, 50, 100, 200, 500, 1000)))
    print(f"runtime {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    arguments = [a for a in sys.argv[1:] if not a.startswith("--target=")]
    targets = [float(a.split("=")[1]) for a in sys.argv[1:] if a.startswith("--target=")] or [0.9]
    for t in targets:
        main(int(arguments[0]) if arguments else 1000, t)
