"""Benchmark: the annotation app on databases of 10k and 1M items.

Measures confirm -> next item rendered: the confirm action is called directly (pilot.press
waits ~60 ms by design) and the clock stops when the compositor has painted the frame that
shows the next item (a hook on the screen's refresh), p50 and p95 over 500 decisions, with the action's own share (the part that touches the
database) printed beside it; and start -> first item, both
in-process and as a real `calibrate annotate` process in a pty. Targets: p95 <= 30 ms, the 1M
p95 no more than 1.5x the 10k one, start <= 1 s.

    .venv/bin/python tests/bench/bench_tui.py
"""

from __future__ import annotations

import asyncio
import os
import pty
import select
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

from calibrate.model import digest, now_iso
from calibrate.store import Store
from calibrate.tui import CalibrateApp

DECISIONS = 500


def make_db(path: Path, n: int) -> None:
    store = Store(path)
    stamp = now_iso()
    fields = '{"content":"She went to the bank to see the ducks, and the ducks went to the bank too.","notation":"The bank of a river.","response":"A river bank."}'
    c = store.conn
    c.execute("BEGIN IMMEDIATE")
    c.executemany(
        "INSERT INTO items (id, task, lang, source_id, fields, reference, content_hash, imported_at) VALUES (?,?,?,?,?,?,?,?)",
        ((k, "c3/lexical", "en", str(k), fields, "The bank of a river.", digest(str(k)), stamp) for k in range(1, n + 1)),
    )
    c.executemany(
        "INSERT INTO judgments (uid, item_id, judge_name, judge_key, status, verdict, raw_output, template_id, params, created_at) "
        "VALUES (?,?,?,?,?,?,?,?,?,?)",
        ((f"j{k}", k, "gpt", "key", "verdict", "yes", "The student is right.\nThe answer is: yes.", "c3/en/lexical", "{}", stamp)
         for k in range(1, n + 1)),
    )
    c.execute("COMMIT")
    store.close()


async def measure(path: Path) -> tuple[float, list[float], list[float]]:
    t0 = time.perf_counter()
    app = CalibrateApp(str(path), annotator="bench")
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        start = time.perf_counter() - t0
        screen = app.screen
        painted = [0.0]
        refresh = screen._compositor_refresh

        def hooked() -> None:
            refresh()
            painted[0] = time.perf_counter()

        screen._compositor_refresh = hooked
        timings, work = [], []
        for _ in range(DECISIONS):
            before = screen.view.item.id
            t = time.perf_counter()
            screen.action_confirm()
            work.append((time.perf_counter() - t) * 1000)
            while painted[0] < t:
                await asyncio.sleep(0.0005)
            timings.append((painted[0] - t) * 1000)
            assert screen.view.item.id != before
            await asyncio.sleep(0.01)  # an annotator does not press faster than every 10 ms
    return start, timings, work


def process_start(path: Path) -> float:
    """Spawn `calibrate annotate` in a pty; time until the first item's id is on screen."""
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "140", "LINES": "40"}
    t0 = time.perf_counter()
    pid, fd = pty.fork()
    if pid == 0:
        os.execve(sys.executable, [sys.executable, "-m", "calibrate", "--db", str(path), "annotate", "--annotator", "proc"], env)
    seen = b""
    try:
        while time.perf_counter() - t0 < 20:
            if select.select([fd], [], [], 0.01)[0]:
                seen += os.read(fd, 65536)
                if b"item #" in seen and b"c3/lexical" in seen:
                    return time.perf_counter() - t0
        raise RuntimeError("the app did not show an item within 20 s")
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(fd)


def main() -> None:
    tmp = Path(tempfile.mkdtemp())
    results = {}
    for n in (10_000, 1_000_000):
        path = tmp / f"tui-{n}.db"
        t = time.perf_counter()
        make_db(path, n)
        print(f"{n:,} items made in {time.perf_counter() - t:.1f} s", flush=True)
        start, timings, work = asyncio.run(measure(path))
        proc = process_start(path)
        q, w = statistics.quantiles(timings, n=100), statistics.quantiles(work, n=100)
        results[n] = (q[94], w[94])
        print(f"{n:>9,} items: confirm -> next item painted p50 {statistics.median(timings):.1f} ms, p95 {q[94]:.1f} ms "
              f"(of which the action itself, DB commit + claim + widget updates: p50 {statistics.median(work):.1f} ms, "
              f"p95 {w[94]:.1f} ms); start -> first item {start * 1000:.0f} ms in-process, {proc * 1000:.0f} ms as a process")
    big, small = results[1_000_000], results[10_000]
    print(f"p95 ratio 1M / 10k: painted {big[0] / small[0]:.2f}, action {big[1] / small[1]:.2f}   "
          "targets: ratio <= 1.5, p95 <= 30 ms, start <= 1 s")


if __name__ == "__main__":
    main()
