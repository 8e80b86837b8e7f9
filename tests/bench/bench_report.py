"""Benchmark: the agreement report with its 95 % intervals (4000 posterior draws per statistic, the default)
on N annotations spread over 40 task x language cells (target <= 2 s), beside a naive per-group
Python loop over the same database in the same run (per-item rows grouped in dicts,
index-resampling bootstrap; target: calibrate >= 10x faster). The database is written through
the schema's triggers, so it holds the report counts a real database holds (migration 0008).

    .venv/bin/python tests/bench/bench_report.py [N] [--two-judges]     (default 1,000,000)

With --two-judges a second judge's verdicts are then added to every item and the report timed
again: with two judges it also measures their jury (C3 is run with two judges).
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import scipy.stats  # noqa: F401  (imported before any clock starts: the report imports it lazily)

from calibrate.model import now_iso
from calibrate.report import build_report
from calibrate.store import Store
from calibrate.templates import TemplateSet
from tests.bench.million import build_forty_cells as make_db


def naive(path: Path, resamples: int) -> dict:
    """What one would write first: fetch per-item pairs, group in dicts, loop over resamples."""
    store = Store(path)
    rows = store.conn.execute(
        "SELECT i.task, i.lang, j.verdict, c.label FROM items i "
        "JOIN judgments j ON j.item_id = i.id JOIN current_labels c ON c.item_id = i.id"
    ).fetchall()
    groups: dict[tuple, list] = defaultdict(list)
    for task, lang, verdict, label in rows:
        groups[(task, lang)].append((verdict == "yes", label == "yes"))
    rng = np.random.default_rng(0)
    out = {}
    for key, pairs in groups.items():
        a = np.array([p[0] for p in pairs])
        b = np.array([p[1] for p in pairs])

        def kappa(x, y):
            po = np.mean(x == y)
            pe = x.mean() * y.mean() + (1 - x.mean()) * (1 - y.mean())
            return (po - pe) / (1 - pe)

        boot = []
        for _ in range(resamples):
            idx = rng.integers(0, len(a), len(a))
            boot.append(kappa(a[idx], b[idx]))
        out[key] = (kappa(a, b), np.percentile(boot, [2.5, 97.5]))
    return out


def main(n: int, two_judges: bool = False) -> None:
    path = Path(tempfile.mkdtemp()) / "report.db"
    t0 = time.perf_counter()
    make_db(path, n)
    print(f"{n:,} annotations, judgments and items over 40 cells, made in {time.perf_counter() - t0:.1f} s")
    store, templates = Store(path), TemplateSet()
    t0 = time.perf_counter()
    report = build_report(store, templates)
    ours = time.perf_counter() - t0
    assert len(report.cells) == 40 and all(c.lines for c in report.cells)
    t0 = time.perf_counter()
    reference = naive(path, 1000)
    slow = time.perf_counter() - t0
    cell = report.cells[0]
    line = next(line for line in cell.lines if line.versus != "majority")
    print(f"calibrate report: {ours:.2f} s   target <= 2 s")
    print(f"naive per-group loop: {slow:.2f} s")
    print(f"ratio (naive / calibrate): {slow / ours:.1f}x faster   target >= 10x")
    print(f"check, {cell.task} {cell.lang} vs {line.versus}: κ {line.stats.kappa.value:.3f} CI {line.stats.kappa.ci}; "
          f"naive (all annotators pooled) κ {reference[(cell.task, cell.lang)][0]:.3f}")
    if two_judges:
        rng = np.random.default_rng(1)
        with store.transaction():
            store.conn.executemany(
                "INSERT INTO judgments (uid, item_id, judge_name, judge_key, status, verdict, params, created_at) "
                "VALUES (?,?,?,?,?,?,?,?)",
                ((f"k{k}", k + 1, "llama", "key2", "verdict", "yes" if rng.random() < 0.6 else "no", "{}", now_iso())
                 for k in range(n)),
            )
        t0 = time.perf_counter()
        report = build_report(store, templates)
        print(f"with a second judge on every item (two judges and their jury): {time.perf_counter() - t0:.2f} s, "
              f"{len(report.cells)} cells (task, language and judge)")


if __name__ == "__main__":
    numbers = [a for a in sys.argv[1:] if a != "--two-judges"]
    main(int(numbers[0]) if numbers else 1_000_000, "--two-judges" in sys.argv[1:])
