"""Benchmark: what the judge-reliability figures (consistency, calibration, bias probes) add to
the report, on the same N items x 40 cells database as bench_report.py, timed in one run
beside the agreement part of the report.

    PYTHONPATH=. .venv/bin/python tests/bench/bench_reliability.py [N]     (default 1,000,000)
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import scipy.stats  # noqa: F401  (imported before any clock starts: the report imports it lazily)

from calibrate.cells import BY_CHOICES, CellKinds
from calibrate.reliability_cells import reliability_by_cell
from calibrate.report import report_from_data
from calibrate.store import Store
from calibrate.templates import TemplateSet
from tests.bench.million import build_forty_cells as make_db


def main(n: int) -> None:
    path = Path(tempfile.mkdtemp()) / "reliability.db"
    make_db(path, n)
    store, templates = Store(path), TemplateSet()
    t0 = time.perf_counter()
    report_from_data(store.agreement_data(None), templates)
    agreement = time.perf_counter() - t0
    t0 = time.perf_counter()
    reliability_by_cell(store, CellKinds(templates, BY_CHOICES))
    reliability = time.perf_counter() - t0
    print(f"{n:,} judged and labelled items over 40 cells")
    print(f"agreement part of the report: {agreement:.2f} s")
    print(f"reliability part: {reliability:.2f} s   ratio reliability / agreement: {reliability / agreement:.1f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000)
