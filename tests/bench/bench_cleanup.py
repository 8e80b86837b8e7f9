"""Benchmark: removing what a killed import left behind (N hidden items, each with a judgment, as
`import jsonl --judge-output` writes them; default 300,000) while another process writes one
annotation at a time to the same file.

Prints the clean-up's time and rate, and the one-row writer's longest and 99th-percentile wait
meanwhile (target: clean-up in seconds, no write waiting more than 1 s). Then, in the same run,
the clean-up of a smaller run with and without migration 0009's indexes on the foreign keys,
as a ratio (without them each removed judgment scans the tables that reference judgments).

    PYTHONPATH=. .venv/bin/python tests/bench/bench_cleanup.py [N] [N_COMPARED]   (300000 3000)
"""

from __future__ import annotations

import multiprocessing as mp
import statistics
import sys
import tempfile
import time
from pathlib import Path

from calibrate.model import NewItem, NewJudgment
from calibrate.store import Store

BATCH = 2000  # as calibrate.formats.import_records writes its first transactions
INDEXES_0009 = ["verdicts_in_force_by_judgment", "labels_in_force_by_judgment", "annotations_by_judgment",
                "item_audio_by_root"]


def items(start: int, stop: int, prefix: str) -> list[NewItem]:
    return [NewItem("c3/lexical", "en", f"{prefix}{k}", {"content": f"She went to the bank number {k}.",
                                                       "notation": "The bank of a river.", "response": "A river."})
            for k in range(start, stop)]


def judged(ids: list[int]) -> list[NewJudgment]:
    return [NewJudgment(item_id=i, judge_name="imported", judge_key="imported", status="verdict",
                        verdict="yes" if i % 3 else "no", raw_output="The answer is: yes.") for i in ids]


def visible_base(path: Path, n: int) -> list[int]:
    """Items already imported, judged and labelled: the tables a removed judgment is checked against."""
    store = Store(path)
    ids = []
    for start in range(0, n, BATCH):
        batch, _ = store.add_items(items(start, min(n, start + BATCH), "base-"), with_ids=True)
        store.add_judgments(judged(batch))
        ids += batch
    judgments = {j.item_id: j.id for j in store.judgments()}
    with store.transaction():
        for item_id in ids:
            store.annotate(item_id, "ana", "confirm", label="yes", judgment_id=judgments[item_id])
    store.close()
    return ids


def killed_import(path: str, n: int) -> None:
    """A child process writes an import run of n items with their judgments, then dies unfinished."""
    store = Store(path)
    run = store.begin_import("calibrate import jsonl killed.jsonl --judge-output out")
    for start in range(0, n, BATCH):
        with store.transaction():
            ids, _ = store.add_items(items(start, min(n, start + BATCH), "killed-"), with_ids=True, run=run)
            store.add_judgments(judged(ids))


def one_row_writer(path: str, item_ids: list[int], stop, results) -> None:
    """Label items one write at a time until told to stop; report how long each write waited."""
    store = Store(path)
    waits = []
    deadline = time.monotonic() + 900
    k = 0
    while not stop.is_set() and time.monotonic() < deadline:
        started = time.perf_counter()
        store.annotate(item_ids[k % len(item_ids)], "writer", "label", label="yes" if k % 2 else "no")
        waits.append(time.perf_counter() - started)
        k += 1
        time.sleep(0.01)
    results.put(waits)


def leave_killed_run(ctx, path: Path, n: int) -> None:
    child = ctx.Process(target=killed_import, args=(str(path), n))
    child.start()
    child.join()
    store = Store(path)
    (run,) = store.import_runs(unfinished=True)
    assert run["state"] == "dead", run  # its process is gone
    store.close()


def clean_up(path: Path) -> tuple[float, float]:
    """The next import's start, which removes the dead run first: (seconds, CPU seconds)."""
    store = Store(path)
    started, cpu = time.perf_counter(), time.process_time()
    run = store.begin_import("the next import")
    took, cpu = time.perf_counter() - started, time.process_time() - cpu
    assert store.conn.execute("SELECT count(*) FROM items WHERE import_run IS NOT NULL").fetchone()[0] == 0
    store.abandon_import(run)
    store.close()
    return took, cpu


def main(n: int, compared: int) -> None:
    ctx = mp.get_context("fork")
    tmp = Path(tempfile.mkdtemp())
    path = tmp / "cleanup.db"
    base = visible_base(path, 20_000)
    start = time.perf_counter()
    leave_killed_run(ctx, path, n)
    print(f"a killed import of {n:,} items with a judgment each, beside {len(base):,} judged and labelled items "
          f"(written in {time.perf_counter() - start:.0f} s)")

    stop, results = ctx.Event(), ctx.Queue()
    writer = ctx.Process(target=one_row_writer, args=(str(path), base, stop, results))
    writer.start()
    time.sleep(1.0)
    took, cpu = clean_up(path)
    time.sleep(0.5)
    stop.set()
    waits = results.get(timeout=60)
    writer.join(60)
    waits.sort()
    print(f"clean-up by the next import: {took:.1f} s, {cpu:.1f} s of CPU ({n / took:,.0f} items/s)")
    print(f"one-row writer meanwhile: {len(waits)} writes, longest wait {waits[-1]:.3f} s, "
          f"p99 {waits[int(0.99 * (len(waits) - 1))]:.3f} s, median {statistics.median(waits) * 1000:.1f} ms"
          f"   target: longest <= 1 s")

    # the same clean-up, smaller, with and without the indexes on the foreign keys
    figures = {}
    for with_indexes in (True, False):
        small = tmp / f"compared-{with_indexes}.db"
        visible_base(small, 20_000)
        if not with_indexes:
            store = Store(small)
            for name in INDEXES_0009:
                store.conn.execute(f"DROP INDEX {name}")
            store.close()
        leave_killed_run(ctx, small, compared)
        figures[with_indexes] = clean_up(small)
    (small_took, small_cpu), (without_took, without_cpu) = figures[True], figures[False]
    print(f"clean-up of {compared:,} items: {small_took:.2f} s ({small_cpu:.2f} s CPU) with the indexes, "
          f"{without_took:.2f} s ({without_cpu:.2f} s CPU) without: {without_cpu / small_cpu:.0f}x the CPU")
    print(f"CPU per item at {n:,} / at {compared:,}: {(cpu / n) / (small_cpu / compared):.2f}   (1: linear)")

if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 300_000, int(sys.argv[2]) if len(sys.argv) > 2 else 3_000)
