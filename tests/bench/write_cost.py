"""Benchmark: what the store's triggers cost every write, for two checkouts of calibrate in one
run (say main's and this branch's), so that a table kept by triggers is weighed against the
reads it speeds up.

For each checkout, in a fresh database of its own schema, as whole processes run from that
checkout: `import jsonl` of N items (one task); then N judgments of a first judge and N of a
second, stored in batches of 1,000 (as a judgments import writes them), 2 % of the items judged
again as repeats; then 1,000 judgments one per transaction (as the judge runner stores each
answer) and 1,000 labels one per transaction (as the app's confirm does), each as wall time and
as the process's CPU time. Each figure is the median of `--runs` runs, printed beside the first
checkout's with the ratio.

    PYTHONPATH=. .venv/bin/python tests/bench/write_cost.py --code /tmp/main-tree --code . [--n N] [--runs R]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SINGLES = 1000


def child(db: str, n: int) -> dict:
    """In the checkout this interpreter imports: the write figures on a database whose items are
    already imported (seconds each)."""
    from calibrate.model import NewJudgment
    from calibrate.store import Store

    store = Store(db)
    ids = [r[0] for r in store.conn.execute("SELECT id FROM items ORDER BY id")]
    found = {}

    def judged(name: str, item_ids, sample: int = 0, batch: int = 1000) -> tuple[float, float]:
        start, cpu = time.perf_counter(), time.process_time()
        for k in range(0, len(item_ids), batch):
            store.add_judgments([
                NewJudgment(item_id=i, judge_name=name, judge_key=f"{name}-key", status="verdict",
                            verdict=("yes", "no")[(i * 7 + sample) % 3 == 0], confidence=(i % 1000) / 1000,
                            raw_output="yes", sample=sample)
                for i in item_ids[k:k + batch]])
        return time.perf_counter() - start, time.process_time() - cpu

    def labelled() -> tuple[float, float]:
        start, cpu = time.perf_counter(), time.process_time()
        for i in ids[:SINGLES]:
            store.annotate(i, "bench", "label", label="yes" if i % 3 else "no")
        return time.perf_counter() - start, time.process_time() - cpu

    def repeats() -> tuple[float, float]:
        (wall1, cpu1), (wall2, cpu2) = judged("gpt", ids[::50], 1), judged("gpt", ids[::50], 2)
        return wall1 + wall2, cpu1 + cpu2

    for name, write in (("judgments, first judge", lambda: judged("gpt", ids)),
                        ("judgments, second judge", lambda: judged("r1", ids)),
                        ("repeats (2 % of items, 2 samples)", repeats),
                        ("judgments one per transaction", lambda: judged("claude", ids[:SINGLES], batch=1)),
                        ("labels one per transaction", labelled)):
        # the process's CPU seconds beside the wall time: on a machine shared with other work,
        # the wall time carries the other processes' load, the CPU time much less of it
        found[name], found[f"{name}, CPU"] = write()
    store.close()
    return found


def measure(code: Path, n: int, source: Path) -> dict:
    """Every figure for one checkout, in a fresh directory."""
    env = {**os.environ, "PYTHONPATH": str(code)}
    with tempfile.TemporaryDirectory() as tmp:
        db = str(Path(tmp) / "calibrate.db")
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "calibrate", "--db", db, "import", "jsonl", str(source),
                        "--task", "c3/lexical", "--lang", "en"], cwd=code, env=env, check=True,
                       stdout=subprocess.DEVNULL)
        found = {f"import jsonl, {n:,} items (process)": time.perf_counter() - start}
        out = subprocess.run([sys.executable, __file__, "--child", db, "--n", str(n)], cwd=code, env=env, check=True,
                             capture_output=True, text=True).stdout
        found.update(json.loads(out))
        found["database size (MB)"] = Path(db).stat().st_size / 2**20
    return found


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--code", type=Path, action="append", help="a checkout of calibrate (repeat: the first is the base)")
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--child")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.n)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "items.jsonl"
        with source.open("w", encoding="utf-8") as out:
            for k in range(args.n):
                out.write(json.dumps({"id": f"item-{k}", "content": f"She went to the bank number {k}.",
                                      "notation": "The bank of a river.", "response": f"A river bank, {k % 7} ducks."})
                          + "\n")
        runs: dict[Path, list[dict]] = {code: [] for code in args.code}
        for _ in range(args.runs):
            for code in args.code:  # interleaved, so that the machine's load falls on each alike
                runs[code].append(measure(code.resolve(), args.n, source))
    base = args.code[0]
    print(f"load {os.getloadavg()[0]:.1f}; median of {args.runs}; ratio = checkout / {base}")
    for name in runs[base][0]:
        values = {code: statistics.median(r[name] for r in found) for code, found in runs.items()}
        print(f"{name:<42}" + "".join(f"  {code.name or str(code)}: {v:8.2f}  ({v / values[base]:4.2f}x)"
                                      for code, v in values.items()))


if __name__ == "__main__":
    main()
