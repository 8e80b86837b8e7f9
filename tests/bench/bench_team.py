"""Benchmark: a team at work. 8 annotator processes label while a 1M-line import and a judge
run write to the same database. Target: 0 crashes, 0 lost decisions, keypress -> next item
p99 <= 1 s.

    .venv/bin/python tests/bench/bench_team.py [IMPORT_LINES [ANNOTATORS [JUDGE_ITEMS]]]
                                               (default 1,000,000, 8, 2,000)

An annotator's keypress is measured at the session (what the key runs: the decision committed,
then the next item claimed and read), without painting the screen (see bench_tui.py for that).
Each annotator decides every 0.1 s until the import has finished. Afterwards every decision an
annotator was told was saved must be in the database exactly once.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from calibrate.model import NewItem
from calibrate.session import AnnotationSession
from calibrate.store import Store
from calibrate.templates import TemplateSet
from tests.fake_openai import FakeOpenAI, Reply

QUEUE_ITEMS = 20_000
THINK = 0.1


def annotate(db: str, name: str, stop_file: str, results) -> None:
    """One annotator: label, measuring keypress -> next item, until told to stop."""
    latencies, saved, errors = [], [], []
    try:
        session = AnnotationSession(Store(db), TemplateSet(), annotator=name, task="c3/lexical")
        view = session.start()
        while view is not None and not os.path.exists(stop_file):
            time.sleep(THINK)
            started = time.perf_counter()
            decision = session.decide("label", "yes" if view.item.id % 3 else "no")
            view = session.forward()
            latencies.append(time.perf_counter() - started)
            saved.append((decision.item_id, decision.uid))
        session.close()
    except BaseException as exc:  # a crash: reported, counted
        errors.append(f"{type(exc).__name__}: {exc}")
    results.put((name, latencies, saved, errors))


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def main(import_lines: int, annotators: int, judge_items: int) -> None:
    tmp = Path(tempfile.mkdtemp())
    db = tmp / "team.db"
    store = Store(db)
    store.add_items([NewItem("c3/lexical", "en", f"queue-{k}", {"content": f"s {k}", "notation": "n", "response": "r"})
                     for k in range(QUEUE_ITEMS)])
    store.add_items([NewItem("c3/pause", "en", f"judge-{k}", {"content": f"p {k}", "notation": "n", "response": "r"})
                     for k in range(judge_items)])
    store.close()
    source = tmp / "import.jsonl"
    with source.open("w", encoding="utf-8") as out:
        for k in range(import_lines):
            out.write(json.dumps({"id": f"imp-{k}", "content": f"She went to the bank number {k}.",
                                  "notation": "The bank of a river.", "response": f"A river bank, {k % 7} ducks."}) + "\n")
    print(f"{QUEUE_ITEMS:,} items to label, {annotators} annotators, import of {import_lines:,} lines "
          f"({source.stat().st_size / 1e6:.0f} MB), judge run over {judge_items:,} items")

    stop_file = str(tmp / "stop")
    ctx = mp.get_context("spawn")
    results = ctx.Queue()
    workers = [ctx.Process(target=annotate, args=(str(db), f"ann{n}", stop_file, results)) for n in range(annotators)]
    calibrate = [sys.executable, "-m", "calibrate", "--db", str(db)]
    with FakeOpenAI(Reply("The answer is: yes.", delay=0.02)) as server:
        for w in workers:
            w.start()
        time.sleep(2.0)  # annotators at work
        started = time.perf_counter()
        importer = subprocess.Popen([*calibrate, "import", "jsonl", str(source), "--task", "c3/lexical", "--lang", "en"],
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        judge = subprocess.Popen([*calibrate, "judge", "--model", "fake", "--base-url", server.url, "--task", "c3/pause",
                                  "--concurrency", "8"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        import_out, _ = importer.communicate()
        import_seconds = time.perf_counter() - started
        judge_out, _ = judge.communicate()
        judge_seconds = time.perf_counter() - started
        Path(stop_file).touch()
        outcomes = [results.get(timeout=120) for _ in workers]
        for w in workers:
            w.join(60)

    latencies = [x for _, lat, _, _ in outcomes for x in lat]
    saved = [s for _, _, sv, _ in outcomes for s in sv]
    crashes = [f"{name}: {e}" for name, _, _, errs in outcomes for e in errs]
    crashes += [f"annotator process exit {w.exitcode}" for w in workers if w.exitcode != 0]
    store = Store(db)
    stored = {r[0]: r[1] for r in store.conn.execute("SELECT uid, item_id FROM annotations")}
    lost = [uid for item, uid in saved if stored.get(uid) != item]
    duplicated = store.conn.execute(
        "SELECT count(*) FROM (SELECT item_id FROM annotations GROUP BY item_id HAVING count(*) > 1)").fetchone()[0]
    imported = store.count_items(task="c3/lexical") - QUEUE_ITEMS
    judged = store.conn.execute("SELECT count(*) FROM judgments WHERE status = 'verdict'").fetchone()[0]

    print(f"import: exit {importer.returncode}, {import_seconds:.1f} s, {imported:,} items visible after it "
          f"({import_out.strip().splitlines()[-1] if import_out.strip() else ''})")
    print(f"judge run: exit {judge.returncode}, {judge_seconds:.1f} s, {judged:,} verdicts stored")
    print(f"decisions: {len(saved):,} confirmed to annotators, {len(lost)} lost, {duplicated} items labelled twice "
          f"(overlap 1), {len(crashes)} crashes {crashes[:3]}")
    print(f"keypress -> next item: p50 {percentile(latencies, 0.5) * 1000:.0f} ms, p95 {percentile(latencies, 0.95) * 1000:.0f} ms, "
          f"p99 {percentile(latencies, 0.99) * 1000:.0f} ms, max {max(latencies, default=float('nan')) * 1000:.0f} ms "
          f"(target p99 <= 1000 ms)")


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:]]
    main(*(args + [1_000_000, 8, 2_000][len(args):]))
