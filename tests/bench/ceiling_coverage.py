"""Simulated coverage of the human ceiling's 95 % intervals (`calibrate.stats.ceiling`): the
judge's kappa against people, the people's agreement, and their difference, on the items several
people labelled, as `calibrate report` shows them ("human ceiling on N items …: below / within /
above the human ceiling").

Populations: a true yes/no per item with prevalence P {.5, .75, .9}; each of two people (or
three: `--people 3`, where the ceiling is Krippendorff's alpha and its intervals a bootstrap)
gives the other label with probability F {.05, .15, .25}, independently, the judge with
probability J {.05, .15, .25}. The population values: Cohen's kappa of two people's joint
distribution (the people alike, three people's alpha has the same population value), the judge's
kappa on its pooled table against them (the statistic pools one pair per label), and their
difference. Datasets of N {10, 20, 30, 50, 100} items; coverage is the share of the datasets that
got an interval whose interval holds the population value (a dataset without one, the statistic
undefined on it, is not counted: its output says why it has none).

    .venv/bin/python tests/bench/ceiling_coverage.py [--people 3] [datasets per setting, default 300]

Prints per N the lowest coverage over the populations of each interval, and the settings below
PROMISED_COVERAGE; `calibrate.stats.ceiling.CEILING_APPROXIMATE` holds the lowest figures where
they fall below it (the report marks those intervals approximate with them).
"""

from __future__ import annotations

import argparse
import itertools
import time

import numpy as np

from calibrate.stats.ceiling import human_ceiling
from calibrate.stats.simulated import PROMISED_COVERAGE

PREVALENCE, PEOPLE_FLIP, JUDGE_FLIP = (0.5, 0.75, 0.9), (0.05, 0.15, 0.25), (0.05, 0.15, 0.25)
SIZES = (10, 20, 30, 50, 100)
NAMES = ("judge", "humans", "difference")
PEOPLE = ("ana", "bob", "cy")
WORDS = ("yes", "no")


def kappa(table: np.ndarray) -> float:
    table = table / table.sum()
    agree, chance = np.trace(table), float(table.sum(axis=1) @ table.sum(axis=0))
    return (agree - chance) / (1 - chance)


def population(prevalence: float, people: float, judge: float) -> tuple[float, float, float]:
    """The judge's pooled kappa, the people's kappa and the difference, from P(judge, a, b)."""
    p = np.zeros((2, 2, 2))
    for truth, weight in ((0, prevalence), (1, 1 - prevalence)):
        for j, a, b in itertools.product((0, 1), repeat=3):
            p[j, a, b] += (weight * (judge if j != truth else 1 - judge) * (people if a != truth else 1 - people)
                           * (people if b != truth else 1 - people))
    judge_k, humans_k = kappa(p.sum(axis=2) + p.sum(axis=1)), kappa(p.sum(axis=0))
    return judge_k, humans_k, judge_k - humans_k


def coverage(setting: tuple[float, float, float], n: int, people: int, datasets: int,
             rng: np.random.Generator) -> tuple[np.ndarray, int]:
    prevalence, people_flip, judge_flip = setting
    truth = population(*setting)
    covered, counted = np.zeros(3), np.zeros(3)
    for d in range(datasets):
        true = (rng.random(n) >= prevalence).astype(int)  # 0: yes
        labels = [true ^ (rng.random(n) < people_flip) for _ in range(people)]
        verdicts = true ^ (rng.random(n) < judge_flip)
        items = {i: {name: WORDS[label[i]] for name, label in zip(PEOPLE[:people], labels, strict=True)} for i in range(n)}
        c = human_ceiling(items, {i: WORDS[verdicts[i]] for i in range(n)}, seed=d)
        for k, estimate in enumerate((c.judge, c.humans, c.difference)):
            if estimate.ci is not None:
                counted[k] += 1
                covered[k] += estimate.ci[0] <= truth[k] <= estimate.ci[1]
    return covered / np.maximum(counted, 1), int(counted.min())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("datasets", type=int, nargs="?", default=300)
    parser.add_argument("--people", type=int, choices=(2, 3), default=2)
    args = parser.parse_args()
    rng = np.random.default_rng(20261127)
    started = time.perf_counter()
    for n in SIZES:
        lowest, below = np.ones(3), []
        for setting in itertools.product(PREVALENCE, PEOPLE_FLIP, JUDGE_FLIP):
            found, counted = coverage(setting, n, args.people, args.datasets, rng)
            if counted < args.datasets / 2:  # the statistic mostly undefined here: too few datasets to tell
                continue
            lowest = np.minimum(lowest, found)
            below += [f"P {setting[0]} F {setting[1]} J {setting[2]}: {name} {c:.3f}"
                      for name, c in zip(NAMES, found, strict=True) if c < PROMISED_COVERAGE]
        print(f"N {n:3d}, {args.people} people: lowest coverage "
              + ", ".join(f"{name} {c:.3f}" for name, c in zip(NAMES, lowest, strict=True))
              + f"  ({time.perf_counter() - started:.0f} s)", flush=True)
        for line in below:
            print("    " + line)


if __name__ == "__main__":
    main()
