"""Benchmark: `calibrate import jsonl` of N lines versus raw sqlite3.executemany of the same
rows into the same schema, in one run. Target ratio >= 0.5.

    .venv/bin/python tests/bench/bench_import.py [N]     (default 1,000,000)
"""

from __future__ import annotations

import json
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

from calibrate.formats import import_records
from calibrate.formats.jsonl import jsonl_records
from calibrate.model import now_iso
from calibrate.store import Store
from calibrate.templates import TemplateSet


def main(n: int) -> None:
    tmp = Path(tempfile.mkdtemp())
    source = tmp / "items.jsonl"
    with source.open("w", encoding="utf-8") as out:
        for k in range(n):
            out.write(json.dumps({"id": f"item-{k}", "content": f"She went to the bank number {k}.",
                                  "notation": "The bank of a river.", "response": f"A river bank, {k % 7} ducks."}) + "\n")
    print(f"{n:,} lines, {source.stat().st_size / 1e6:.0f} MB")

    # calibrate: parse, validate against the manifest, hash, insert (a recorded run, short transactions)
    store = Store(tmp / "calibrate.db")
    templates = TemplateSet()
    start = time.perf_counter()
    report = import_records(store, jsonl_records(source, task="c3/lexical", lang="en"), templates)
    ours = time.perf_counter() - start
    assert report.counts.items_added == n
    rows = store.conn.execute(
        "SELECT task, lang, source_id, fields, reference, content_hash, imported_at FROM items ORDER BY id"
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
    print(f"ratio (calibrate / raw): {raw / ours:.2f}   target >= 0.5")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000)
