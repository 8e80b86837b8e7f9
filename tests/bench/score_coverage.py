"""Simulation: 95 % intervals for the score-agreement statistics (0-100 rubric scores), issue 20.

Statistics: Pearson's r, Spearman's rho, Kendall's tau-b, mean absolute error (MAE), quadratic
weighted kappa on 10-point bins (score // 10, 100 in the top bin) and Cohen's kappa on pass/fail
at 60 - as calibrate.stats.agreement.score_agreement computes them (`check` asserts the
vectorised forms below equal scipy / scikit-learn on sample data).

Data (rubric-like, two scores per item, with ties):
  close    human ~ N(65, 18) rounded to a multiple of 5 and clipped to 0-100; judge = human +
           N(0, 8), rounded to a multiple of 5, clipped
  lenient  human as in close; judge = human + 6 + N(0, 18), rounded to a multiple of 10, clipped
  ceiling  human = 100 - Exponential(mean 18), rounded to an integer, clipped (many 100s);
           judge = human + N(0, 10) rounded to an integer, clipped (more ties at 100)
The population value of each statistic is its value on 2 million items of the generator.

Intervals (95 %), per statistic where they apply:
  fisher     tanh(atanh(r) -+ 1.96 SE): Pearson SE = 1/sqrt(n-3); Spearman the Bonett-Wright SE
             sqrt((1 + rho^2/2)/(n-3)); Kendall the Fieller SE sqrt(0.437/(n-4))
  fieller    Spearman with the Fieller SE sqrt(1.06/(n-3))
  jack_z     jackknife on the Fisher z scale: atanh(stat) -+ t_{n-1} SE_jack, back-transformed
  t          MAE: mean |d| -+ t_{n-1} s/sqrt(n), clipped at 0
  log_t      MAE on the log scale: MAE x exp(-+ t_{n-1} s / (sqrt(n) MAE)) (delta method)
  percentile percentile bootstrap over items (1000 resamples)
  bca        BCa bootstrap over items (1000 resamples; bias-correction z0 with ties split, jackknife
             acceleration)
  dirichlet  the kappas' current interval: Dirichlet(counts + 1/2) posterior over the k x k table
             (k = 10 bins or 2), 1000 draws, equal-tailed
A replicate without an interval (statistic undefined, fewer than 4 or 5 items for Fisher z, or
more than 2.5 % of resamples or draws undefined) counts as a miss; the share without is
printed. Monte-Carlo SE at 95 % over R replicates: sqrt(0.95 x 0.05 / R).

    .venv/bin/python tests/bench/score_coverage.py [REPLICATES]   (default 500)

--shipped measures what calibrate ships instead of the candidates: the intervals of
calibrate.stats.score_agreement.score_agreement itself, per generator and size, and per shape
as score_shape classifies each sample ("symmetric" or "skewed": the setting the output looks
its mark up for), coverage among the samples that get an interval (the share without one
printed beside it). With --write it also writes SCORE_COVERAGE_TABLE
(calibrate/stats/score_coverage.json: per statistic, the (shape, size) settings below 93 %),
which the output reads to mark an interval "approximate: covers about X % here".

    PYTHONPATH=. .venv/bin/python tests/bench/score_coverage.py --shipped [REPLICATES] [--write]   (default 2000)

--clustered measures the intervals of calibrate.stats.score_agreement.score_ceiling where pairs
share items: 10-100 items, each scored by 2, 3 or 4 people or by 2-4 (drawn per item); the judge
against each person (always several pairs an item), the people against each other (counted where
an item has three or more). Scores are correlated within an item: each item has a latent score h,
each person's is h + N(0, 6) and the judge's as its generator makes it from h (see
`generate_item`); the population value is the statistic of (person, person) and of (judge,
person) on 2 million items. Its table (rows [shape, items, coverage] per statistic, the lower of
the judge's and the people's where either is below 93 %) is SCORE_COVERAGE_TABLE's "clustered"
part, written with --write.

    PYTHONPATH=. .venv/bin/python tests/bench/score_coverage.py --clustered [REPLICATES] [--write]   (default 300)

--clustered --candidates compares, on the same samples, the grouped jackknife that ships with the
percentile cluster bootstrap over items (the choice between them).

    PYTHONPATH=. .venv/bin/python tests/bench/score_coverage.py --clustered --candidates [REPLICATES]   (default 100)
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np
from scipy import stats

SIZES = (5, 10, 20, 50, 120)
GENERATORS = ("close", "lenient", "ceiling")
RESAMPLES = 1000
Z = float(stats.norm.ppf(0.975))
THRESHOLD, BIN = 60.0, 10.0
STATISTICS = ("pearson", "spearman", "kendall", "mae", "weighted_kappa", "pass_fail_kappa")
METHODS = {
    "pearson": ("fisher", "jack_z", "percentile", "bca"),
    "spearman": ("fisher", "fieller", "jack_z", "percentile", "bca"),
    "kendall": ("fisher", "jack_z", "percentile", "bca"),
    "mae": ("t", "log_t", "percentile", "bca"),
    "weighted_kappa": ("jack_z", "percentile", "bca", "dirichlet"),
    "pass_fail_kappa": ("jack_z", "percentile", "bca", "dirichlet"),
}


def generate_item(rng, name, size, people):
    """(people's scores (size, people), judge's (size,)): correlated within an item through its
    latent score h, drawn as `generate` draws the person's score (unrounded); each person's is
    h + N(0, 6), the judge's made from h as `generate` makes it from the person's."""
    if name == "ceiling":
        h = 100 - rng.exponential(18, size)
        person = np.clip(np.round(h[:, None] + rng.normal(0, 6, (size, people))), 0, 100)
        return person, np.clip(np.round(h + rng.normal(0, 10, size)), 0, 100)
    h = rng.normal(65, 18, size)
    person = np.clip(np.round((h[:, None] + rng.normal(0, 6, (size, people))) / 5) * 5, 0, 100)
    if name == "close":
        return person, np.clip(np.round((h + rng.normal(0, 8, size)) / 5) * 5, 0, 100)
    return person, np.clip(np.round((h + 6 + rng.normal(0, 18, size)) / 10) * 10, 0, 100)


def generate(rng, name, size):
    if name == "ceiling":
        human = np.clip(np.round(100 - rng.exponential(18, size)), 0, 100)
        judge = np.clip(np.round(human + rng.normal(0, 10, size)), 0, 100)
    else:
        human = np.clip(np.round(rng.normal(65, 18, size) / 5) * 5, 0, 100)
        if name == "close":
            judge = np.clip(np.round((human + rng.normal(0, 8, size)) / 5) * 5, 0, 100)
        else:
            judge = np.clip(np.round((human + 6 + rng.normal(0, 18, size)) / 10) * 10, 0, 100)
    return human, judge


# -- the statistics, vectorised over the rows of (B, n) arrays -----------------------------------


def pearson(x, y):
    xc, yc = x - x.mean(-1, keepdims=True), y - y.mean(-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        return (xc * yc).sum(-1) / np.sqrt((xc**2).sum(-1) * (yc**2).sum(-1))


def spearman(x, y):
    return pearson(stats.rankdata(x, axis=-1), stats.rankdata(y, axis=-1))


def kendall(x, y, weights=None):
    """tau-b = sum_{i<j} sgn(x_i - x_j) sgn(y_i - y_j) / sqrt((n0 - n1)(n0 - n2)), n0 - n1 the pairs
    untied in x (Kendall, M. G. (1945). The treatment of ties in ranking problems. Biometrika 33).
    With `weights` (B, n), item i counted w_i times (a bootstrap resample or a jackknife sample
    of the one sample x, y): the pair sums are w' M w / 2, M_ij = sgn sgn, computed by a matrix
    product instead of B x n x n signs."""
    sx = np.sign(x[..., :, None] - x[..., None, :])
    sy = np.sign(y[..., :, None] - y[..., None, :])
    if weights is None:
        s, tx, ty = ((sx * sy).sum((-1, -2)), (sx * sx).sum((-1, -2)), (sy * sy).sum((-1, -2)))
    else:
        s, tx, ty = (((weights @ m) * weights).sum(-1) for m in (sx * sy, sx * sx, sy * sy))
    with np.errstate(divide="ignore", invalid="ignore"):
        return s / np.sqrt(tx * ty)


def mae(x, y):
    return np.abs(x - y).mean(-1)


def bins(v):
    return np.minimum(v // BIN, 100 // BIN - 1)


def weighted_kappa(x, y):
    """Quadratic weighted kappa of the bins: 1 - mean((a - b)^2) / (var a + var b + (mean a - mean b)^2)
    (variances with 1/n): sum w_ij p_ij over sum w_ij p_i. p_.j with w_ij = (i - j)^2 (Cohen 1968)."""
    a, b = bins(x), bins(y)
    expected = a.var(-1) + b.var(-1) + (a.mean(-1) - b.mean(-1)) ** 2
    with np.errstate(divide="ignore", invalid="ignore"):
        return 1 - ((a - b) ** 2).mean(-1) / expected


def pass_fail_kappa(x, y):
    a, b = (x >= THRESHOLD).astype(float), (y >= THRESHOLD).astype(float)
    pa, pb = a.mean(-1), b.mean(-1)
    po = (a * b + (1 - a) * (1 - b)).mean(-1)
    pe = pa * pb + (1 - pa) * (1 - pb)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(pe < 1, (po - pe) / (1 - pe), np.nan)


def weighted_midranks(v, w):
    """Mid-ranks of values v (n,) with each counted w times (B, n): the items below plus (its
    count + 1) / 2, per row of w."""
    distinct, inverse = np.unique(v, return_inverse=True)
    counts = w @ (inverse[:, None] == np.arange(len(distinct))).astype(float)
    return (counts.cumsum(-1) - counts + (counts + 1) / 2)[:, inverse]


def weighted(name, x, y, w):
    """Statistic `name` of the pairs x, y (n,) with pair i counted w_i times, per row of w (B, n):
    a cluster bootstrap resample weights each pair by how often its item was drawn."""
    if name == "kendall":
        return kendall(x, y, w)
    if name == "spearman":
        x, y, name = weighted_midranks(x, w), weighted_midranks(y, w), "pearson"
    total = w.sum(-1)
    mean = lambda v: (w * v).sum(-1) / total  # noqa: E731
    with np.errstate(divide="ignore", invalid="ignore"):
        if name == "pearson":
            mx, my = mean(x), mean(y)
            return (mean(x * y) - mx * my) / np.sqrt((mean(x * x) - mx**2) * (mean(y * y) - my**2))
        if name == "mae":
            return mean(np.abs(x - y))
        if name == "weighted_kappa":
            a, b = bins(x), bins(y)
            expected = mean(a * a) - mean(a) ** 2 + mean(b * b) - mean(b) ** 2 + (mean(a) - mean(b)) ** 2
            return 1 - mean((a - b) ** 2) / expected
        a, b = (x >= THRESHOLD) * 1.0, (y >= THRESHOLD) * 1.0
        pa, pb = mean(a), mean(b)
        pe = pa * pb + (1 - pa) * (1 - pb)
        return np.where(pe < 1, (mean(a * b + (1 - a) * (1 - b)) - pe) / (1 - pe), np.nan)


FUNCTIONS = {"pearson": pearson, "spearman": spearman, "kendall": kendall, "mae": mae,
             "weighted_kappa": weighted_kappa, "pass_fail_kappa": pass_fail_kappa}


def check(rng):
    from sklearn.metrics import cohen_kappa_score

    x, y = generate(rng, "lenient", 40)
    assert np.isclose(pearson(x, y), stats.pearsonr(x, y)[0])
    assert np.isclose(spearman(x, y), stats.spearmanr(x, y)[0])
    assert np.isclose(kendall(x, y), stats.kendalltau(x, y)[0])
    idx = rng.integers(0, 40, 40)
    assert np.isclose(kendall(x, y, np.bincount(idx, minlength=40)[None, :].astype(float))[0], stats.kendalltau(x[idx], y[idx])[0])
    assert np.isclose(weighted_kappa(x, y), cohen_kappa_score(bins(x), bins(y), weights="quadratic"))
    assert np.isclose(pass_fail_kappa(x, y), cohen_kappa_score(x >= THRESHOLD, y >= THRESHOLD))
    counts = np.bincount(idx, minlength=40)[None, :].astype(float)
    for name in STATISTICS:  # a resample as weights is the resample
        assert np.isclose(weighted(name, x, y, counts)[0], FUNCTIONS[name](x[idx], y[idx])), name


# -- intervals -------------------------------------------------------------------------------------


def from_draws(draws, value=None):
    finite = np.isfinite(draws)
    if finite.mean() < 0.975:
        return None
    lo, hi = np.quantile(draws[finite], [0.025, 0.975])
    if hi - lo <= 1e-12:
        return None
    if value is not None:
        lo, hi = min(lo, value), max(hi, value)
    return lo, hi


def bca(draws, value, jack):
    finite = np.isfinite(draws)
    if finite.mean() < 0.975 or not np.isfinite(jack).all():
        return None
    d = draws[finite]
    z0 = stats.norm.ppf(((d < value).sum() + 0.5 * (d == value).sum()) / d.size)
    centred = jack.mean() - jack
    denominator = 6 * (centred**2).sum() ** 1.5
    if denominator == 0 or not np.isfinite(z0):
        return None
    a = (centred**3).sum() / denominator
    q = []
    for alpha in (0.025, 0.975):
        za = z0 + stats.norm.ppf(alpha)
        q.append(stats.norm.cdf(z0 + za / (1 - a * za)))
    lo, hi = np.quantile(d, q)
    return None if hi - lo <= 1e-12 else (lo, hi)


def jackknife(fn, x, y):
    n = len(x)
    keep = ~np.eye(n, dtype=bool)
    return fn(np.broadcast_to(x, (n, n))[keep].reshape(n, n - 1), np.broadcast_to(y, (n, n))[keep].reshape(n, n - 1))


def jack_z(value, jack, n):
    if not (np.isfinite(value) and np.isfinite(jack).all()) or abs(value) >= 1 or np.any(np.abs(jack) >= 1):
        return None
    zj = np.arctanh(jack)
    se = np.sqrt((n - 1) / n * ((zj - zj.mean()) ** 2).sum())
    if se == 0:
        return None
    t = stats.t.ppf(0.975, n - 1)
    return float(np.tanh(np.arctanh(value) - t * se)), float(np.tanh(np.arctanh(value) + t * se))


def dirichlet_kappa(rng, a, b, k, weighted, draws=RESAMPLES):
    table = np.zeros((k, k))
    np.add.at(table, (a.astype(int), b.astype(int)), 1)
    g = rng.gamma(table.ravel() + 0.5, size=(draws, k * k))
    p = (g / g.sum(1, keepdims=True)).reshape(draws, k, k)
    i = np.arange(k)
    w = (i[:, None] - i[None, :]) ** 2 if weighted else (i[:, None] != i[None, :]).astype(float)
    observed = (p * w).sum((1, 2))
    expected = np.einsum("di,dj,ij->d", p.sum(2), p.sum(1), w)
    return from_draws(1 - observed / expected)


def intervals(rng, name, x, y):
    """{method: (lo, hi) or None} for statistic `name` on one sample."""
    n = len(x)
    fn = FUNCTIONS[name]
    value = float(fn(x, y))
    out = {}
    if not np.isfinite(value):
        return {m: None for m in METHODS[name]}
    idx = rng.integers(0, n, (RESAMPLES, n))
    if name == "kendall":
        counts = np.zeros((RESAMPLES, n))
        np.add.at(counts, (np.repeat(np.arange(RESAMPLES), n), idx.ravel()), 1)
        boot, jack = kendall(x, y, counts), kendall(x, y, 1 - np.eye(n))
    else:
        boot, jack = fn(x[idx], y[idx]), jackknife(fn, x, y)
    for method in METHODS[name]:
        if method == "percentile":
            out[method] = from_draws(boot)
        elif method == "bca":
            out[method] = bca(boot, value, jack)
        elif method == "jack_z":
            out[method] = jack_z(value, jack, n)
        elif method == "t":
            d = np.abs(x - y)
            half = stats.t.ppf(0.975, n - 1) * d.std(ddof=1) / np.sqrt(n)
            out[method] = (max(0.0, value - half), value + half) if half > 0 else None
        elif method == "log_t":
            d = np.abs(x - y)
            spread = stats.t.ppf(0.975, n - 1) * d.std(ddof=1) / (np.sqrt(n) * value) if value > 0 else 0.0
            out[method] = (value * np.exp(-spread), value * np.exp(spread)) if spread > 0 else None
        elif method == "dirichlet":
            if name == "weighted_kappa":
                out[method] = dirichlet_kappa(rng, bins(x), bins(y), int(100 // BIN), True)
            else:
                out[method] = dirichlet_kappa(rng, (x >= THRESHOLD) * 1, (y >= THRESHOLD) * 1, 2, False)
        else:  # fisher, fieller
            shift = 4 if name == "kendall" else 3
            if n <= shift or abs(value) >= 1:
                out[method] = None
                continue
            variance = {"pearson": 1.0, "kendall": 0.437, "spearman": 1 + value**2 / 2}[name]
            if method == "fieller":
                variance = 1.06
            se = np.sqrt(variance / (n - shift))
            out[method] = (float(np.tanh(np.arctanh(value) - Z * se)), float(np.tanh(np.arctanh(value) + Z * se)))
    return out


def population(rng, generator, size=2_000_000, pair=None):
    x, y = generate(rng, generator, size) if pair is None else pair
    truth = {name: float(FUNCTIONS[name](x, y)) for name in STATISTICS if name != "kendall"}
    truth["kendall"] = float(stats.kendalltau(x, y)[0])
    return truth


def main(replicates: int = 500) -> None:
    rng = np.random.default_rng(3)
    check(rng)
    start = time.perf_counter()
    print(f"95 % interval coverage, {replicates} replicates per cell, {RESAMPLES} resamples/draws; "
          f"Monte-Carlo SE at 95 %: {np.sqrt(0.95 * 0.05 / replicates):.2%}")
    print("coverage (share of replicates without an interval, when any); a replicate without one is a miss\n")
    for generator in GENERATORS:
        truth = population(rng, generator)
        print(f"## {generator}: population " + ", ".join(f"{k} {v:.3f}" for k, v in truth.items()) + "\n")
        print("| statistic | method | " + " | ".join(f"n={n}" for n in SIZES) + " |")
        print("| --- | --- |" + " --- |" * len(SIZES))
        results = {(s, m): [] for s in STATISTICS for m in METHODS[s]}
        for n in SIZES:
            hits = {key: 0 for key in results}
            none = {key: 0 for key in results}
            widths = {key: [] for key in results}
            for _ in range(replicates):
                x, y = generate(rng, generator, n)
                for name in STATISTICS:
                    for method, ci in intervals(rng, name, x, y).items():
                        if ci is None:
                            none[(name, method)] += 1
                        else:
                            hits[(name, method)] += ci[0] <= truth[name] <= ci[1]
                            widths[(name, method)].append(ci[1] - ci[0])
            for key in results:
                share = none[key] / replicates
                width = f" w{np.mean(widths[key]):.2f}" if widths[key] else ""
                results[key].append(f"{hits[key] / replicates:.1%}" + (f" ({share:.0%} none)" if share >= 0.005 else "") + width)
        for (name, method), cells in results.items():
            print(f"| {name} | {method} | " + " | ".join(cells) + " |")
        print(flush=True)
    print(f"runtime {time.perf_counter() - start:.0f} s")


def shipped(replicates: int = 2000, write: bool = False) -> None:
    """Coverage of the intervals score_agreement gives, per generator and per classified shape."""
    from calibrate.stats.score_agreement import STATISTICS as SHIPPED
    from calibrate.stats.score_agreement import score_agreement, score_shape
    from calibrate.stats.simulated import PROMISED_COVERAGE

    rng = np.random.default_rng(5)
    start = time.perf_counter()
    truths = {g: population(rng, g) for g in GENERATORS}
    print(f"score_agreement's 95 % intervals, {replicates} samples per generator and size; Monte-Carlo SE at 95 %: "
          f"{np.sqrt(0.95 * 0.05 / replicates):.2%}. Coverage among samples with an interval (share without one)\n")
    # (statistic, group, n) -> [hits, with an interval, samples]; group = a generator or a shape
    tally: dict[tuple[str, str, int], list[int]] = {}
    for n in SIZES:
        for generator in GENERATORS:
            for _ in range(replicates):
                human, judge = generate(rng, generator, n)
                result = score_agreement(judge, human, threshold=THRESHOLD, bin_width=BIN)
                shape = score_shape(judge, human, THRESHOLD)
                for name in SHIPPED:
                    ci = result.estimate(name).ci
                    for group in (generator, shape):
                        cell = tally.setdefault((name, group, n), [0, 0, 0])
                        cell[2] += 1
                        if ci is not None:
                            cell[1] += 1
                            cell[0] += ci[0] - 1e-12 <= truths[generator][name] <= ci[1] + 1e-12
    groups = (*GENERATORS, "symmetric", "skewed")
    print("| statistic | data | " + " | ".join(f"n={n}" for n in SIZES) + " |")
    print("| --- | --- |" + " --- |" * len(SIZES))
    below: dict[str, list] = {name: [] for name in SHIPPED}
    for name in SHIPPED:
        for group in groups:
            cells = []
            for n in SIZES:
                hits, given, total = tally.get((name, group, n), [0, 0, 0])
                if not given:
                    cells.append(f"— ({total} samples, none with an interval)" if total else "—")
                    continue
                share = 1 - given / total
                cells.append(f"{hits / given:.1%}" + (f" ({share:.0%} none)" if share >= 0.005 else ""))
                if group in ("symmetric", "skewed") and hits / given < PROMISED_COVERAGE and given >= 50:
                    below[name].append([group, n, round(hits / given, 3)])
            print(f"| {name} | {group} | " + " | ".join(cells) + " |")
    print(f"\nbelow {PROMISED_COVERAGE:.0%} by shape (marked approximate): {json.dumps(below)}")
    print(f"runtime {time.perf_counter() - start:.0f} s")
    if write:
        write_table(None, replicates, below, [n for n in SIZES if n >= 10])


def write_table(section: str | None, replicates: int, below: dict, items: list[int]) -> None:
    """Writes SCORE_COVERAGE_TABLE with `below` as its settings below PROMISED_COVERAGE (its
    "clustered" part when `section` says so), the rest of the table as it was."""
    from calibrate.stats.simulated import PROMISED_COVERAGE, SCORE_COVERAGE_TABLE

    table = json.loads(SCORE_COVERAGE_TABLE.read_text(encoding="utf-8")) if SCORE_COVERAGE_TABLE.exists() else {}
    part = {"replicates": replicates, "grid": {"shapes": ["symmetric", "skewed"], "items": items},
            "promised": PROMISED_COVERAGE, "below": below}
    if section:
        table[section] = part
    else:
        table = {**part, **{k: v for k, v in table.items() if k == "clustered"}}

    def written(part: dict, indent: str) -> str:
        rows = ",\n".join(f'{indent} "{name}": {json.dumps(found)}' for name, found in part["below"].items())
        return (f'{indent}"replicates": {part["replicates"]},\n{indent}"grid": {json.dumps(part["grid"])},\n'
                f'{indent}"promised": {part["promised"]},\n{indent}"below": {{\n{rows}\n{indent}}}')

    text = "{\n" + written(table, " ")
    if "clustered" in table:
        text += ',\n "clustered": {\n' + written(table["clustered"], "  ") + "\n }"
    SCORE_COVERAGE_TABLE.write_text(text + "\n}\n", encoding="utf-8")
    print(f"wrote {SCORE_COVERAGE_TABLE}")


CLUSTERED_SIZES = (10, 20, 50, 100)
DESIGNS = ("2", "3", "4", "2-4")


def clustered_truths(rng) -> dict:
    """{generator: {"people": statistic -> population value of (person, person), "judge": of
    (judge, person)}} on 2 million items of `generate_item`, printed."""
    truths = {}
    for g in GENERATORS:
        person, judge = generate_item(rng, g, 2_000_000, 2)
        truths[g] = {"people": population(rng, g, pair=(person[:, 0], person[:, 1])),
                     "judge": population(rng, g, pair=(judge, person[:, 0]))}
        print(f"{g}: population people " + ", ".join(f"{k} {v:.3f}" for k, v in truths[g]["people"].items())
              + "; judge " + ", ".join(f"{k} {v:.3f}" for k, v in truths[g]["judge"].items()), flush=True)
    return truths


def ceiling_sample(rng, generator, n, design):
    """score_ceiling on n items of `generate_item`, each scored by as many people as `design`
    says ("2-4": drawn per item) and the judge: (the ceiling, people's scores (n, 4), judge's,
    people per item)."""
    from calibrate.stats.score_agreement import score_ceiling

    people = rng.integers(2, 5, n) if design == "2-4" else np.full(n, int(design))
    scores, judge = generate_item(rng, generator, n, 4)
    items = {i: {f"p{k}": {"s": float(scores[i, k])} for k in range(people[i])} for i in range(n)}
    found = score_ceiling(items, {i: {"s": float(judge[i])} for i in range(n)}, ["s"], threshold=THRESHOLD,
                          resamples=200)
    return found, scores, judge, people


def clustered(replicates: int = 300, write: bool = False) -> None:
    """Coverage of score_ceiling's intervals where pairs share items, per role (judge, people),
    generator, design and classified shape."""
    from calibrate.stats.score_agreement import STATISTICS as SHIPPED
    from calibrate.stats.simulated import PROMISED_COVERAGE

    rng = np.random.default_rng(7)
    start = time.perf_counter()
    truths = clustered_truths(rng)
    print(f"\nscore_ceiling's 95 % intervals where pairs share items, {replicates} samples per generator, size and "
          f"design; Monte-Carlo SE at 95 %: {np.sqrt(0.95 * 0.05 / replicates):.2%}. Coverage among samples with an "
          "interval (share without one)\n", flush=True)
    tally: dict[tuple, list[int]] = {}  # (statistic, role, group, n) -> [hits, with an interval, samples]
    for n in CLUSTERED_SIZES:
        for generator in GENERATORS:
            for design in DESIGNS:
                for _ in range(replicates):
                    found, *_ = ceiling_sample(rng, generator, n, design)
                    for role, agreement in (("judge", found.judge["s"]), ("people", found.humans["s"])):
                        if agreement.items == agreement.n:
                            continue  # one pair per item: the single-pair intervals (--shipped)
                        for name in SHIPPED:
                            ci = agreement.estimate(name).ci
                            for group in (generator, design, agreement.shape):
                                cell = tally.setdefault((name, role, group, n), [0, 0, 0])
                                cell[2] += 1
                                if ci is not None:
                                    cell[1] += 1
                                    cell[0] += ci[0] - 1e-12 <= truths[generator][role][name] <= ci[1] + 1e-12
        print(f"{n} items done, {time.perf_counter() - start:.0f} s", flush=True)
    groups = (*GENERATORS, *(f"{d} people" for d in DESIGNS), "symmetric", "skewed")
    print("| statistic | pairs | data | " + " | ".join(f"n={n}" for n in CLUSTERED_SIZES) + " |")
    print("| --- | --- | --- |" + " --- |" * len(CLUSTERED_SIZES))
    below: dict[str, list] = {name: [] for name in SHIPPED}
    for name in SHIPPED:
        lowest: dict[tuple, float] = {}
        for role in ("judge", "people"):
            for group in groups:
                cells = []
                for n in CLUSTERED_SIZES:
                    hits, given, total = tally.get((name, role, group.removesuffix(" people"), n), [0, 0, 0])
                    if not given:
                        cells.append(f"— ({total} samples, none with an interval)" if total else "—")
                        continue
                    share = 1 - given / total
                    cells.append(f"{hits / given:.1%}" + (f" ({share:.0%} none)" if share >= 0.005 else ""))
                    if group in ("symmetric", "skewed") and given >= 50:
                        lowest[group, n] = min(lowest.get((group, n), 1.0), round(hits / given, 3))
                print(f"| {name} | {role} | {group} | " + " | ".join(cells) + " |")
        below[name] = [[shape, n, c] for (shape, n), c in sorted(lowest.items()) if c < PROMISED_COVERAGE]
    print(f"\nbelow {PROMISED_COVERAGE:.0%} by shape (marked approximate): {json.dumps(below)}")
    print(f"runtime {time.perf_counter() - start:.0f} s")
    if write:
        write_table("clustered", replicates, below, list(CLUSTERED_SIZES))


def ceiling_pairs(scores, judge, people):
    """The pairs score_ceiling makes of an item's people (scores[i, :people[i]]) and judge:
    {"judge": (judge's, person's, item), "people": (person's, person's, item)}, each in its order."""
    out = {"judge": ([], [], []), "people": ([], [], [])}
    for i, m in enumerate(people):
        for k in range(m):
            out["judge"][0].append(judge[i])
            out["judge"][1].append(scores[i, k])
            out["judge"][2].append(i)
            for second in range(k + 1, m):
                for column, value in enumerate((scores[i, k], scores[i, second], i)):
                    out["people"][column].append(value)
    return {role: tuple(np.asarray(c) for c in found) for role, found in out.items()}


def clustered_candidates(replicates: int = 100) -> None:
    """The choice --clustered measures: per statistic, the grouped jackknife over items that
    score_ceiling gives against the percentile cluster bootstrap (RESAMPLES resamples of items,
    each pair weighted by how often its item was drawn), on the same samples."""
    rng = np.random.default_rng(9)
    start = time.perf_counter()
    truths = clustered_truths(rng)
    tally: dict[tuple, list[int]] = {}  # (statistic, role, method, shape, n) -> [hits, samples]
    for n in CLUSTERED_SIZES:
        for generator in GENERATORS:
            for r in range(replicates):
                found, scores, judge, people = ceiling_sample(rng, generator, n, DESIGNS[r % len(DESIGNS)])
                draws = rng.multinomial(n, np.full(n, 1 / n), size=RESAMPLES).astype(float)
                for role, (x, y, item) in ceiling_pairs(scores, judge, people).items():
                    agreement = found.judge["s"] if role == "judge" else found.humans["s"]
                    if agreement.items == agreement.n:
                        continue
                    for name in STATISTICS:
                        truth = truths[generator][role][name]
                        value = float(FUNCTIONS[name](x, y)) if name != "kendall" else stats.kendalltau(x, y)[0]
                        boot = from_draws(weighted(name, x, y, draws[:, item]), value) if np.isfinite(value) else None
                        for method, ci in (("jackknife", agreement.estimate(name).ci), ("bootstrap", boot)):
                            cell = tally.setdefault((name, role, method, agreement.shape, n), [0, 0])
                            cell[1] += 1
                            cell[0] += ci is not None and ci[0] - 1e-12 <= truth <= ci[1] + 1e-12
        print(f"{n} items done, {time.perf_counter() - start:.0f} s", flush=True)
    print(f"\ngrouped jackknife against the cluster percentile bootstrap, {replicates} samples per generator and size"
          " (designs 2, 3, 4, 2-4 people in turn); a sample without an interval is a miss\n")
    print("| statistic | pairs | method | shape | " + " | ".join(f"n={n}" for n in CLUSTERED_SIZES) + " |")
    print("| --- | --- | --- | --- |" + " --- |" * len(CLUSTERED_SIZES))
    for name in STATISTICS:
        for role in ("judge", "people"):
            for shape in ("symmetric", "skewed"):
                for method in ("jackknife", "bootstrap"):
                    cells = [tally.get((name, role, method, shape, n), [0, 0]) for n in CLUSTERED_SIZES]
                    print(f"| {name} | {role} | {method} | {shape} | "
                          + " | ".join(f"{h / t:.1%} ({t})" if t else "—" for h, t in cells) + " |")
    print(f"runtime {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    arguments = [a for a in sys.argv[1:] if not a.startswith("--")]
    if "--clustered" in sys.argv and "--candidates" in sys.argv:
        clustered_candidates(int(arguments[0]) if arguments else 100)
    elif "--clustered" in sys.argv:
        clustered(int(arguments[0]) if arguments else 300, write="--write" in sys.argv)
    elif "--shipped" in sys.argv:
        shipped(int(arguments[0]) if arguments else 2000, write="--write" in sys.argv)
    else:
        main(int(arguments[0]) if arguments else 500)
