"""Benchmark: `calibrate import jsonl` of N lines versus raw sqlite3.executemany of the same
rows into the same schema, in one run (target ratio >= 0.5), while another process labels
items one write at a time (target: no write waits more than 1 s).

    PYTHONPATH=. .venv/bin/python tests/bench/bench_import.py [N]     (default 1,000,000)
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

from calibrate.formats import import_records
from calibrate.formats.jsonl import jsonl_records
from calibrate.model import now_iso
from calibrate.store import Store
from calibrate.templates import TemplateSet
from tests.bench.bench_cleanup import one_row_writer, visible_base


def main(n: int) -> None:
    tmp = Path(tempfile.mkdtemp())
    source = tmp / "items.jsonl"
    with source.open("w", encoding="utf-8") as out:
        for k in range(n):
            out.write(json.dumps({"id": f"item-{k}", "content": f"She went to the bank number {k}.",
                                  "notation": "The bank of a river.", "response": f"A river bank, {k % 7} ducks."}) + "\n")
    print(f"{n:,} lines, {source.stat().st_size / 1e6:.0f} MB [load {os.getloadavg()[0]:.1f}]")

    # calibrate: parse, validate against the manifest, hash, insert (a recorded run, short
    # transactions), beside a process that labels items of an earlier import one write at a time
    path = tmp / "calibrate.db"
    labelled = visible_base(path, 2000)
    ctx = mp.get_context("fork")
    stop, results = ctx.Event(), ctx.Queue()
    writer = ctx.Process(target=one_row_writer, args=(str(path), labelled, stop, results))
    writer.start()
    store = Store(path)
    templates = TemplateSet()
    start = time.perf_counter()
    report = import_records(store, jsonl_records(source, task="c3/lexical", lang="en"), templates)
    ours = time.perf_counter() - start
    stop.set()
    waits = sorted(results.get(timeout=60))
    writer.join(60)
    assert report.counts.items_added == n
    rows = store.conn.execute(
        "SELECT task, lang, source_id, fields, reference, content_hash, imported_at FROM items WHERE import_run IS NOT NULL "
        "ORDER BY id"
    ).fetchall()
    store.close()

    # raw: the same rows, already prepared, executemany into the same schema in one transaction
    raw_store = Store(tmp / "raw.db")
    raw_store.close()
    conn = sqlite3.connect(tmp / "raw.db", isolation_level=None)
    conn.execute("PRAGMA synchronous = NORMAL")
    prepared = [tuple(r) for r in rows]
    stamp = now_iso()
    start = time.perf_counter()
    conn.execute("BEGIN IMMEDIATE")
    conn.executemany(
        "INSERT INTO items (task, lang, source_id, fields, reference, content_hash, imported_at) VALUES (?,?,?,?,?,?,?)",
        [(*r[:6], stamp) for r in prepared],
    )
    conn.execute("COMMIT")
    raw = time.perf_counter() - start

    print(f"calibrate import: {n / ours:,.0f} rows/s ({ours:.1f} s)")
    print(f"raw executemany:  {n / raw:,.0f} rows/s ({raw:.1f} s)")
    print(f"ratio (calibrate / raw): {raw / ours:.2f}   target >= 0.5   [load {os.getloadavg()[0]:.1f}]")
    print(f"a one-row writer meanwhile: {len(waits)} writes, longest wait {waits[-1]:.3f} s, "
          f"p99 {waits[int(0.99 * (len(waits) - 1))]:.3f} s, median {statistics.median(waits) * 1000:.1f} ms"
          "   target: longest <= 1 s")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000)
