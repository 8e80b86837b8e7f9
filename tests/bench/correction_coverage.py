"""Simulation: coverage of corrected-accuracy intervals, the candidates measured and the ones in
calibrate.stats.correction, on the grid of simulated.COVERAGE_GRID (issue 20): true accuracy
{.3, .5, .8, .97} x random labels {20, 50, 100, 200} x judge (Se, Sp) {(.9, .7), (.95, .95),
(.7, .9)} x items N {300, 1000}.

A dataset: N items, each correct with probability `accuracy` (human label y), the judge says
"correct" (f = 1) with probability Se when y = 1 and 1 - Sp when y = 0, and n of the N items,
a simple random sample without replacement, carry their human label. The target is the
benchmark's own accuracy, the mean of y over its N items. Items are independent and
identically distributed, so a dataset is fully described by the counts of (y, f) among the
labelled items, Multinomial(n, p), and among the unlabelled ones, Multinomial(N - n, p); the
simulation draws those counts, which is exact and fast.

Intervals (95 %):
  stratified   correction.stratified_mean (Jeffreys prior; exact posterior) - the chosen method
  strat_unif   the same model with a uniform Beta(1, 1) prior (500 posterior draws)
  ppi          correction.ppi_mean, PPI++ with normal quantiles (the rate behind the items)
  ppi_finite   correction.ppi_mean(finite_population=True), Cochran's difference estimator
  ppi_fin_t    ppi_finite with Student t quantiles on n - 1 degrees of freedom, clipped to [0, 1]
  ppi_t        ppi with t quantiles, clipped
  boot_fin     percentile bootstrap of the finite-population PPI++ (labelled items resampled,
               500 resamples; no interval when every resample gives one value)
  rogan_gladen correction.rogan_gladen (Wald, delta-method variance, clipped)
The PPI++ and Rogan-Gladen intervals are computed here from the counts, vectorised; `check`
asserts that they equal the module's on item-level data. The module's random-sample check
(Fisher's exact test, which flags about 1 % of truly random samples) is not applied.
Coverage is the share of datasets WITH an interval whose interval contains the target; `none`
is the share without one (label sets of one class for PPI++ and Rogan-Gladen). A cell of the
chosen method below 93 % is marked '!'. Monte-Carlo SE of a coverage near 95 % over R datasets:
sqrt(0.95 x 0.05 / R), printed.

    .venv/bin/python tests/bench/correction_coverage.py [DATASETS] [--write]

--write writes simulated.COVERAGE_TABLE (calibrate/stats/correction_coverage.json: the settings
where a method in the module covers less than 93 %, with the figure), which the module reads to
mark an interval approximate.

--judges simulates C3's final score instead: stratified_mean with two judges (strata = their mean
verdict, three at most), both of the grid's kind (Se, Sp), their errors independent given the
truth ("independent") or with judge 2 copying judge 1 on half the items ("shared", the same
Se and Sp each); the coverage per setting is the lower of the two. With --write it replaces the
"stratified_judges" rows of the table (the other methods' rows are kept).

--differences simulates `correction.difference` of two systems' stratified estimates (one judge
(.9, .7) each, independent cells) against the true difference of their accuracies over their items.

    .venv/bin/python tests/bench/correction_coverage.py --judges [DATASETS] [--write]   (default 1000)
    .venv/bin/python tests/bench/correction_coverage.py --differences [DATASETS]       (default 1000)

--pooled simulates `pooled_correction.pooled_stratified_mean`, the number of a row that pools
several cells (one system over its tasks): two or three cells of different accuracy, judge and
size, each with its own number of random labels (some as few as 10), against the true accuracy
over all their items; beside it the same items stratified by the judge's verdict alone, as if the
labels were one random sample of the pooled items. With 1000 datasets per setting (168 s) the
pooled interval covered 93.5-99.0 % in every setting (lowest: ten cells at accuracy 0.5 with 20
labels each); verdict-only pooling covered 0.0 % where one cell had many labels and another few.
Before the union with the recentred posterior the posterior interval alone covered 51 % for five
cells at 0.97 with 20 labels (600 datasets), the recentred one alone 91.5 % at ten cells of 0.5.
The last column is the same estimate with no verdict to stratify by, the people column of
`scores` on a pooled row (each cell's labelled accuracy weighted by its share of the items):
93.8-99.8 % with 400 datasets per setting (51 s for the whole run).

    .venv/bin/python tests/bench/correction_coverage.py --pooled [DATASETS]            (default 500)

--unequal simulates the stratified interval where the labels are a stratified sample by the
judge's verdict, 90 % of them from one verdict (the grid's items, judges and accuracies, 20 and
50 labels): the imbalance the random-sample check flags, and which post-stratification corrects
in expectation. With 1000 datasets per setting (23 s) it covered 83.9-100 %, below 93 % in 13 of
96 settings (accuracy 0.97 with 20 labels the lowest: the few labels left for the larger verdict
lean on its prior), so `stratified_mean` keeps the check: a label sample spread over the
verdicts unlike a random one gets no corrected number, though it would be unbiased.

    .venv/bin/python tests/bench/correction_coverage.py --unequal [DATASETS]           (default 1000)
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np
from scipy import stats

from calibrate.stats import correction, ranking
from calibrate.stats.correction import _stratified, ppi_mean, rogan_gladen, stratified_mean
from calibrate.stats.simulated import COVERAGE_GRID, COVERAGE_TABLE, PROMISED_COVERAGE

Z = float(stats.norm.ppf(0.975))
MODULE_METHODS = ("stratified", "ppi", "ppi_finite", "rogan_gladen")
CANDIDATES = ("strat_unif", "ppi_fin_t", "ppi_t", "boot_fin")


def simulate(rng, datasets, accuracy, se, sp, total, n):
    """Labelled counts (datasets, 4) in the order (y1 f1, y1 f0, y0 f1, y0 f0), unlabelled
    counts (datasets, 4) in the same order, and the target mean of y over the N items."""
    p = np.array([accuracy * se, accuracy * (1 - se), (1 - accuracy) * (1 - sp), (1 - accuracy) * sp])
    lab = rng.multinomial(n, p, size=datasets)
    unl = rng.multinomial(total - n, p, size=datasets)
    return lab, unl, (lab[:, 0] + lab[:, 1] + unl[:, 0] + unl[:, 1]) / total


def ppi_counts(c, fu, total, finite):
    """PPI++ (theta, se) from labelled counts c (..., 4) and unlabelled positives fu, the formulas of
    correction._ppi written on counts."""
    c = c.astype(float)
    n = c.sum(-1)
    m = total - n
    ybar, fl = (c[..., 0] + c[..., 1]) / n, (c[..., 0] + c[..., 2]) / n
    fbar_u = fu / m
    cov = c[..., 0] / n - ybar * fl
    f_all = (fl * n + fu) / total
    var_all = f_all * (1 - f_all) * total / (total - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        lam = np.where(var_all > 0, np.clip(cov / ((1 + n / m) * var_all), 0, 1), 0.0)
    theta = lam * fbar_u + ybar - lam * fl
    var_y, var_fl = ybar * (1 - ybar), fl * (1 - fl)
    if finite:
        lam2 = lam * total / m
        s2 = (var_y - 2 * lam2 * cov + lam2**2 * var_fl) * n / (n - 1)
        se = np.sqrt(np.maximum((1 - n / total) * s2 / n, 0))
    else:
        se = np.sqrt(np.maximum(lam**2 * fbar_u * (1 - fbar_u) / m + (var_y - 2 * lam * cov + lam**2 * var_fl) / n, 0))
    return theta, se


def interval(theta, se, q, ok):
    ci = np.clip(np.stack([theta - q * se, theta + q * se], 1), 0, 1)
    ci[~ok] = np.nan
    return ci


def rogan_gladen_counts(c, fu, total):
    """correction.rogan_gladen's interval from counts; NaN where it gives none."""
    c = c.astype(float)
    n = c.sum(1)
    m, rho = total - n, n / total
    pi = c / n[:, None]
    q1, q0 = pi[:, 0] + pi[:, 1], pi[:, 2] + pi[:, 3]
    with np.errstate(divide="ignore", invalid="ignore"):
        sens, spec = pi[:, 0] / q1, pi[:, 3] / q0
        youden = sens + spec - 1
        p = (c[:, 0] + c[:, 2] + fu) / total
        theta = np.clip((p + spec - 1) / youden, 0, 1)
        g = np.stack([rho - theta * pi[:, 1] / q1**2, theta * pi[:, 0] / q1**2,
                      rho - (1 - theta) * pi[:, 3] / q0**2, (1 - theta) * pi[:, 2] / q0**2], 1) / youden[:, None]
        var = ((g**2 * pi).sum(1) - (g * pi).sum(1) ** 2) / n
        p_u = fu / m
        var += ((1 - rho) / youden) ** 2 * p_u * (1 - p_u) / m
    ok = (q1 > 0) & (q0 > 0) & (youden > correction.MIN_YOUDEN) & (sens < 1) & (spec < 1)
    ci = interval(theta, np.sqrt(np.where(ok, var, 0)), Z, ok)
    ci[(ci[:, 0] == 0) & (ci[:, 1] == 1)] = np.nan  # the whole [0, 1]: no value given
    return ci, sens, spec, theta


def stratified_uniform(rng, c, fu, total, draws=500):
    n = c.sum(1)
    m1, m0 = fu, (total - n) - fu
    q1 = rng.beta(1 + c[:, [0]], 1 + c[:, [2]], size=(len(c), draws))
    q0 = rng.beta(1 + c[:, [1]], 1 + c[:, [3]], size=(len(c), draws))
    theta = (c[:, [0]] + c[:, [1]] + rng.binomial(m1[:, None], q1) + rng.binomial(m0[:, None], q0)) / total
    return np.quantile(theta, [0.025, 0.975], axis=1).T


def bootstrap_finite(rng, c, fu, total, resamples=500):
    out = np.full((len(c), 2), np.nan)
    for r in range(len(c)):
        n = int(c[r].sum())
        boot = rng.multinomial(n, c[r] / n, size=resamples)
        theta, _ = ppi_counts(boot, np.full(resamples, fu[r]), total, True)
        lo, hi = np.quantile(theta, [0.025, 0.975])
        if hi - lo > 1e-12:
            out[r] = lo, hi
    return out


def stratified_module(c, fu, total):
    out = np.empty((len(c), 2))
    for r, (c11, c10, c01, c00) in enumerate(c):
        n = c11 + c10 + c01 + c00
        strata = [(int(c11 + c01), int(c11), int(fu[r])), (int(c10 + c00), int(c10), int(total - n - fu[r]))]
        out[r] = _stratified([s for s in strata if s[2] > 0], int(c11 + c10), total, 0.95, correction.STRATUM_PRIOR)[1]
    return out


def items(lab, unl):
    """Item-level verdicts and labels (NaN = unlabelled) for the module's functions."""
    ys, fs = (1, 1, 0, 0), (1, 0, 1, 0)
    f = np.concatenate([np.repeat(fs, lab), np.repeat(fs, unl)]).astype(float)
    y = np.concatenate([np.repeat(ys, lab), np.full(int(unl.sum()), np.nan)])
    return f, y


def check(rng):
    """The vectorised intervals equal the module's on item-level data."""
    lab, unl, _ = simulate(rng, 30, 0.7, 0.9, 0.7, 400, 40)
    fu = unl[:, 0] + unl[:, 2]
    for finite in (False, True):
        theta, se = ppi_counts(lab, fu, 400, finite)
        ci = interval(theta, se, Z, se > 0)
        for r in range(30):
            got = ppi_mean(*items(lab[r], unl[r]), random_sample=True, finite_population=finite)
            if got.ci is not None:
                assert np.allclose(got.ci, ci[r]), (got.ci, ci[r])
    rg = rogan_gladen_counts(lab, fu, 400)[0]
    for r in range(30):
        got = rogan_gladen(*items(lab[r], unl[r]), random_sample=True)
        if got.ci is not None:
            assert np.allclose(got.ci, rg[r]), (got.ci, rg[r])


def coverage(ci, truth):
    ok = np.isfinite(ci).all(1)
    hit = ok & (ci[:, 0] <= truth + 1e-12) & (truth - 1e-12 <= ci[:, 1])
    return (hit.sum() / ok.sum() if ok.any() else float("nan")), 1 - ok.mean(), float(np.nanmean(ci[:, 1] - ci[:, 0])) if ok.any() else float("nan")


def run(datasets: int, seed: int = 20):
    rng = np.random.default_rng(seed)
    check(rng)
    rows = []
    for total in COVERAGE_GRID["items"]:
        for se, sp in COVERAGE_GRID["judge"]:
            for accuracy in COVERAGE_GRID["accuracy"]:
                for n in COVERAGE_GRID["labels"]:
                    lab, unl, truth = simulate(rng, datasets, accuracy, se, sp, total, n)
                    fu = unl[:, 0] + unl[:, 2]
                    cis = {"stratified": stratified_module(lab, fu, total)}
                    theta, s = ppi_counts(lab, fu, total, False)
                    cis["ppi"] = interval(theta, s, Z, s > 0)
                    t = stats.t.ppf(0.975, n - 1)
                    cis["ppi_t"] = interval(theta, s, t, s > 0)
                    theta, s = ppi_counts(lab, fu, total, True)
                    cis["ppi_finite"] = interval(theta, s, Z, s > 0)
                    cis["ppi_fin_t"] = interval(theta, s, t, s > 0)
                    cis["rogan_gladen"] = rogan_gladen_counts(lab, fu, total)[0]
                    cis["strat_unif"] = stratified_uniform(rng, lab, fu, total)
                    cis["boot_fin"] = bootstrap_finite(rng, lab, fu, total)
                    rows.append(((accuracy, n, (se, sp), total), {k: coverage(v, truth) for k, v in cis.items()}))
    return rows


def simulate_two_judges(rng, datasets, accuracy, se, sp, total, n, shared):
    """Counts over the strata of the two judges' mean verdict (1, 1/2, 0): labelled (datasets,
    3, 2) as [stratum, (correct, wrong)], unlabelled (datasets, 3), and the target mean of y."""
    def cells(y_p, says):  # P(judge says 1 | y) = says; the two judges' joint verdicts
        both = says * says if not shared else 0.5 * says + 0.5 * says * says
        none = (1 - says) ** 2 if not shared else 0.5 * (1 - says) + 0.5 * (1 - says) ** 2
        return y_p * np.array([both, 1 - both - none, none])
    p = np.concatenate([cells(accuracy, se), cells(1 - accuracy, 1 - sp)])  # y=1 strata, then y=0 strata
    lab = rng.multinomial(n, p, size=datasets)
    unl = rng.multinomial(total - n, p, size=datasets)
    truth = (lab[:, :3].sum(1) + unl[:, :3].sum(1)) / total
    return np.stack([lab[:, :3], lab[:, 3:]], 2), unl[:, :3] + unl[:, 3:], truth


def stratified_judges(lab, unl, total):
    out = np.empty((len(lab), 2))
    for r in range(len(lab)):
        strata = [(int(lab[r, k].sum()), int(lab[r, k, 0]), int(unl[r, k])) for k in range(3) if unl[r, k] > 0]
        out[r] = _stratified(strata, int(lab[r, :, 0].sum()), total, 0.95, correction.STRATUM_PRIOR)[1]
    return out


def write_table(below: dict[str, list], datasets: int) -> None:
    """Replace the rows of the methods in `below` in COVERAGE_TABLE, keeping the others, and
    record how many datasets per setting each method's rows rest on."""
    current = json.loads(COVERAGE_TABLE.read_text(encoding="utf-8")) if COVERAGE_TABLE.exists() else {"below": {}}
    merged = {**current["below"], **below}
    counts = {**current.get("datasets", {}), **dict.fromkeys(below, datasets)}
    methods = ",\n".join(f'  "{k}": [' + ",".join(f"\n   {json.dumps(row)}" for row in v) + ("\n  ]" if v else "]")
                          for k, v in merged.items())
    COVERAGE_TABLE.write_text(f'{{\n "datasets": {json.dumps(counts)},\n "grid": {json.dumps(COVERAGE_GRID)},\n '
                              f'"promised": {PROMISED_COVERAGE},\n "below": {{\n{methods}\n }}\n}}\n', encoding="utf-8")
    print(f"\nwrote {COVERAGE_TABLE}")


def main_judges(datasets: int) -> None:
    rng = np.random.default_rng(21)
    start = time.perf_counter()
    print(f"C3's final score: stratified_mean with two judges of one kind, {datasets} datasets per setting; "
          f"Monte-Carlo SE at 95 %: {np.sqrt(0.95 * 0.05 / datasets):.2%}\n")
    print("| accuracy | labels | Se/Sp | N | independent | shared | width |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    below = []
    for total in COVERAGE_GRID["items"]:
        for se, sp in COVERAGE_GRID["judge"]:
            for accuracy in COVERAGE_GRID["accuracy"]:
                for n in COVERAGE_GRID["labels"]:
                    figures = []
                    for shared in (False, True):
                        lab, unl, truth = simulate_two_judges(rng, datasets, accuracy, se, sp, total, n, shared)
                        figures.append(coverage(stratified_judges(lab, unl, total), truth))
                    lowest = min(c for c, _, _ in figures)
                    mark = "!" if lowest < PROMISED_COVERAGE else ""
                    print(f"| {accuracy} | {n} | {se}/{sp} | {total} | {figures[0][0]:.1%}{mark} | {figures[1][0]:.1%} | "
                          f"{figures[0][2]:.3f} |", flush=True)
                    if lowest < PROMISED_COVERAGE:
                        below.append([accuracy, n, se, sp, total, round(float(lowest), 3)])
    print(f"\nbelow 93 % in {len(below)} of 96 settings: {below}; {time.perf_counter() - start:.0f} s")
    if "--write" in sys.argv:
        write_table({"stratified_judges": below}, datasets)


def main_differences(datasets: int) -> None:
    """Coverage of the difference of two independent cells' stratified estimates."""
    rng = np.random.default_rng(22)
    start = time.perf_counter()
    print(f"difference of two systems' stratified estimates (judge .9/.7 on each), {datasets} datasets per setting\n")
    print("| accuracies | labels each | N each | coverage (cells the random-sample check refused) | width |")
    print("| --- | --- | --- | --- | --- |")
    for accuracy_a, accuracy_b in ((0.5, 0.6), (0.8, 0.9), (0.9, 0.97), (0.97, 0.97), (0.3, 0.5)):
        for n in (20, 50):
            for total in (300, 1000):
                hits, widths = 0, []
                a_lab, a_unl, a_truth = simulate(rng, datasets, accuracy_a, 0.9, 0.7, total, n)
                b_lab, b_unl, b_truth = simulate(rng, datasets, accuracy_b, 0.9, 0.7, total, n)
                for r in range(datasets):
                    a = stratified_mean(*items(a_lab[r], a_unl[r]), random_sample=True)
                    b = stratified_mean(*items(b_lab[r], b_unl[r]), random_sample=True)
                    ci = ranking.difference(a, b).ci
                    if ci is None:  # the random-sample check refused a cell (about 1 % of cells)
                        continue
                    hits += ci[0] - 1e-12 <= a_truth[r] - b_truth[r] <= ci[1] + 1e-12
                    widths.append(ci[1] - ci[0])
                print(f"| {accuracy_a} - {accuracy_b} | {n} | {total} | {hits / len(widths):.1%} "
                      f"({datasets - len(widths)} refused) | {np.mean(widths):.3f} |", flush=True)
    print(f"\n{time.perf_counter() - start:.0f} s")


POOLED_SETTINGS = (
    # per cell: (accuracy, Se, Sp, items, random labels)
    ((0.9, 0.9, 0.7, 300, 20), (0.3, 0.9, 0.7, 300, 20)),
    ((0.9, 0.9, 0.7, 300, 50), (0.3, 0.7, 0.9, 1000, 10)),
    ((0.97, 0.95, 0.95, 1000, 20), (0.5, 0.9, 0.7, 300, 100)),
    ((0.8, 0.9, 0.7, 100, 10), (0.5, 0.7, 0.9, 100, 10), (0.3, 0.95, 0.95, 1000, 20)),
    ((0.97, 0.9, 0.7, 300, 10), (0.97, 0.7, 0.9, 300, 10)),
    ((0.5, 0.9, 0.7, 40, 10), (0.8, 0.9, 0.7, 40, 30)),
    ((0.97, 0.9, 0.7, 300, 20),) * 5,
    ((0.97, 0.7, 0.9, 300, 10),) * 10,
    ((0.9, 0.9, 0.7, 300, 50),) * 5,
    ((0.8, 0.9, 0.7, 100, 10),) * 8,
    ((0.5, 0.9, 0.7, 300, 20),) * 10,
    ((0.3, 0.7, 0.9, 300, 20),) * 10,
)


def main_pooled(datasets: int) -> None:
    """Coverage of the pooled (cell x verdict) estimate, and of verdict-only pooling beside it."""
    from calibrate.stats.pooled_correction import pooled_stratified_mean

    rng = np.random.default_rng(23)
    start = time.perf_counter()
    print(f"a row pooling several cells, {datasets} datasets per setting; target = accuracy over all their items\n")
    print("| cells (accuracy Se/Sp N labels) | pooled: coverage (refused) | width | marked approximate | "
          "verdict-only pooling: coverage | people (no verdict to stratify by): coverage |")
    print("| --- | --- | --- | --- | --- | --- |")
    lowest = 1.0
    for setting in POOLED_SETTINGS:
        drawn = [simulate(rng, datasets, accuracy, se, sp, total, n) for accuracy, se, sp, total, n in setting]
        total = sum(cell[3] for cell in setting)
        hits, naive_hits, widths, marked, people_hits, people_n = 0, 0, [], 0, 0, 0
        for r in range(datasets):
            parts = [items(lab[r], unl[r]) for lab, unl, _ in drawn]
            f = np.concatenate([p[0] for p in parts])
            y = np.concatenate([p[1] for p in parts])
            cells = np.repeat(np.arange(len(parts)), [len(p[1]) for p in parts])
            truth = sum(t[r] * cell[3] for (_, _, t), cell in zip(drawn, setting, strict=True)) / total
            pooled = pooled_stratified_mean(f, y, cells, [f"c{k}" for k in range(len(parts))], random_sample=True)
            naive = stratified_mean(f, y, random_sample=True)
            people = pooled_stratified_mean(np.zeros(len(y)), y, cells, [f"c{k}" for k in range(len(parts))],
                                            random_sample=True)  # the people column of `scores` on such a row
            if people.ci is not None:
                people_n += 1
                people_hits += people.ci[0] - 1e-12 <= truth <= people.ci[1] + 1e-12
            if naive.ci is not None:
                naive_hits += naive.ci[0] - 1e-12 <= truth <= naive.ci[1] + 1e-12
            if pooled.ci is None:  # a cell refused by the random-sample check (about 1 % of cells)
                continue
            hits += pooled.ci[0] - 1e-12 <= truth <= pooled.ci[1] + 1e-12
            widths.append(pooled.ci[1] - pooled.ci[0])
            marked += pooled.approximate is not None
        covered = hits / len(widths)
        lowest = min(lowest, covered)
        name = "; ".join(f"{a} {se}/{sp} {n_items} {n}" for a, se, sp, n_items, n in dict.fromkeys(setting))
        name = f"{len(setting)} x {name}" if len(set(setting)) == 1 else name
        print(f"| {name} | {covered:.1%} ({datasets - len(widths)}) | {np.mean(widths):.3f} | "
              f"{marked / len(widths):.0%} | {naive_hits / datasets:.1%} | {people_hits / people_n:.1%} |", flush=True)
    print(f"\nlowest pooled coverage {lowest:.1%}; Monte-Carlo SE at 95 %: {np.sqrt(0.95 * 0.05 / datasets):.1%}; "
          f"{time.perf_counter() - start:.0f} s")


def simulate_unequal(rng, datasets, accuracy, se, sp, total, n, share):
    """As `simulate`, but the n labels are a stratified sample by the judge's verdict: a share
    `share` of them drawn at random from the items the judge says "correct", the rest from the
    others (as many as a verdict has, where it has fewer)."""
    p = np.array([accuracy * se, accuracy * (1 - se), (1 - accuracy) * (1 - sp), (1 - accuracy) * sp])
    population = rng.multinomial(total, p, size=datasets)
    says_yes, says_no = population[:, 0] + population[:, 2], population[:, 1] + population[:, 3]
    n_yes = np.minimum(round(n * share), says_yes)
    n_no = np.minimum(n - n_yes, says_no)
    c11 = rng.hypergeometric(population[:, 0], population[:, 2], n_yes)
    c10 = rng.hypergeometric(population[:, 1], population[:, 3], n_no)
    lab = np.stack([c11, c10, n_yes - c11, n_no - c10], axis=1)
    return lab, population - lab, (population[:, 0] + population[:, 1]) / total


def main_unequal(datasets: int) -> None:
    """The stratified interval where the labels are spread over the judge's verdicts unlike a
    random sample (most from one verdict): the design post-stratification corrects for, and the
    one the random-sample check (Fisher) flags."""
    rng = np.random.default_rng(21)
    start = time.perf_counter()
    print(f"{datasets} datasets per setting; labels a stratified sample by the judge's verdict, `share` of them from "
          f"its 'correct' verdicts; Monte-Carlo SE at 95 %: {np.sqrt(0.95 * 0.05 / datasets):.2%}\n")
    print("| accuracy | labels | Se/Sp | N | share 0.9 | share 0.1 | width 0.9 | width 0.1 |")
    print("|" + " --- |" * 8)
    lowest = []
    for total in COVERAGE_GRID["items"]:
        for se, sp in COVERAGE_GRID["judge"]:
            for accuracy in COVERAGE_GRID["accuracy"]:
                for n in COVERAGE_GRID["labels"][:2]:
                    found = []
                    for share in (0.9, 0.1):
                        lab, unl, truth = simulate_unequal(rng, datasets, accuracy, se, sp, total, n, share)
                        found.append(coverage(stratified_module(lab, unl[:, 0] + unl[:, 2], total), truth))
                    lowest += [c for c, _, _ in found]
                    print(f"| {accuracy} | {n} | {se}/{sp} | {total} | "
                          + " | ".join(f"{c:.1%}{'!' if c < PROMISED_COVERAGE else ''}" for c, _, _ in found)
                          + " | " + " | ".join(f"{w:.3f}" for _, _, w in found) + " |")
    print(f"\nlowest {min(lowest):.1%}, below 93 % in {sum(c < PROMISED_COVERAGE for c in lowest)} of {len(lowest)}; "
          f"{time.perf_counter() - start:.0f} s")


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if "--unequal" in sys.argv:
        main_unequal(int(args[0]) if args else 1000)
        return
    if "--pooled" in sys.argv:
        main_pooled(int(args[0]) if args else 500)
        return
    if "--judges" in sys.argv:
        main_judges(int(args[0]) if args else 1000)
        return
    if "--differences" in sys.argv:
        main_differences(int(args[0]) if args else 1000)
        return
    datasets = int(args[0]) if args else 2000
    start = time.perf_counter()
    rows = run(datasets)
    print(f"{datasets} datasets per setting, 95 % intervals, target = mean accuracy over the N items; "
          f"Monte-Carlo SE at 95 %: {np.sqrt(0.95 * 0.05 / datasets):.2%}; {time.perf_counter() - start:.0f} s")
    print("coverage among datasets with an interval (share with none, when any); '!' = chosen method below 93 %\n")
    methods = MODULE_METHODS + CANDIDATES
    print("| accuracy | labels | Se/Sp | N | " + " | ".join(methods) + " | width stratified | width ppi |")
    print("|" + " --- |" * (len(methods) + 6))
    for (accuracy, n, (se, sp), total), cov in rows:
        cells = []
        for k in methods:
            c, none, _ = cov[k]
            mark = "!" if k == "stratified" and c < PROMISED_COVERAGE else ""
            cells.append(f"{c:.1%}{mark}" + (f" ({none:.0%} none)" if none >= 0.005 else ""))
        print(f"| {accuracy} | {n} | {se}/{sp} | {total} | " + " | ".join(cells)
              + f" | {cov['stratified'][2]:.3f} | {cov['ppi'][2]:.3f} |")
    print("\nlowest coverage and settings below 93 %:")
    for k in methods:
        values = [cov[k][0] for _, cov in rows]
        print(f"  {k:13} min {np.nanmin(values):.1%}, below 93 % in {sum(v < PROMISED_COVERAGE for v in values)} of {len(rows)}, "
              f"no interval in {np.mean([cov[k][1] for _, cov in rows]):.1%} of datasets")
    if "--write" in sys.argv:
        write_table({k: [[accuracy, n, se, sp, total, round(cov[k][0], 3)]
                         for (accuracy, n, (se, sp), total), cov in rows if cov[k][0] < PROMISED_COVERAGE]
                     for k in MODULE_METHODS}, datasets)

if __name__ == "__main__":
    main()
