"""Benchmark: the annotation app on databases of 10k and 1M items over several tasks and both
languages, with mixed verdicts (yes/no, 是/否, True/False, a three-label set, ~10 % unparsed,
~3 % with a second judge that disagrees), for every queue order.

Per order: start -> first item (in-process), and confirm -> next item painted: the action is
called directly (pilot.press waits ~60 ms by design) and the clock stops when the compositor
has painted the frame that shows the next item (a hook on the screen's refresh), p50 and p95
over 300 decisions. Then showing an item whose passage and judge output are 10 MB, against a
normal one, also to the painted frame; and start -> first item as a real `calibrate annotate`
process in a pty. Targets: p95 <= 30 ms and the 1M p95 <= 1.5x the 10k one, start <= 1 s, the
10 MB item <= 100 ms.

    .venv/bin/python tests/bench/bench_tui.py
"""

from __future__ import annotations

import asyncio
import json
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
from calibrate.session import ORDERS
from calibrate.store import Store
from calibrate.tui import CalibrateApp

DECISIONS = 300
SHOWS = 20
CELLS = [  # task, lang, fields, the verdicts a judge gives
    ("c3/lexical", "en", {"content": "She went to the bank to see the ducks.", "notation": "The bank of a river.",
                          "response": "A river bank."}, ["yes", "no"]),
    ("c3/semantic", "zh", {"content": "他在银行。", "annotation": "河岸。", "response": "河边。"}, ["是", "否"]),
    ("superglue/boolq", "en", {"question": "is the sun a star", "passage": "Sun -- The Sun is the star at the center "
                               "of the Solar System. " * 8, "response": "True"}, ["True", "False"]),
    ("superglue/cb", "en", {"premise": "It was a complex language.", "hypothesis": "the language was peeled down",
                            "response": "neutral"}, ["entailment", "contradiction", "neutral"]),
]


def make_db(path: Path, n: int) -> None:
    store = Store(path)
    stamp = now_iso()
    c = store.conn
    c.execute("BEGIN IMMEDIATE")
    cells = [(task, lang, json.dumps(fields, ensure_ascii=False), verdicts) for task, lang, fields, verdicts in CELLS]
    c.executemany(
        "INSERT INTO items (id, task, lang, source_id, fields, reference, content_hash, imported_at) VALUES (?,?,?,?,?,?,?,?)",
        ((k, cells[k % 4][0], cells[k % 4][1], str(k), cells[k % 4][2], None, digest(str(k)), stamp)
         for k in range(1, n + 1)),
    )

    def judgments():
        for k in range(1, n + 1):
            verdicts = cells[k % 4][3]
            unparsed = k % 10 == 7
            verdict = None if unparsed else verdicts[(k // 4) % len(verdicts)]
            yield (f"a{k}", k, "gpt", "ka", "unparsed" if unparsed else "verdict", verdict, f"The answer is: {verdict}.",
                   "{}", stamp)
            if k % 33 == 5 and not unparsed:  # a second judge that disagrees
                other = verdicts[((k // 4) + 1) % len(verdicts)]
                yield (f"b{k}", k, "r1", "kb", "verdict", other, f"The answer is: {other}.", "{}", stamp)

    c.executemany(
        "INSERT INTO judgments (uid, item_id, judge_name, judge_key, status, verdict, raw_output, params, created_at) "
        "VALUES (?,?,?,?,?,?,?,?,?)",
        judgments(),
    )
    huge = "word " * 2_000_000
    c.execute(
        "INSERT INTO items (task, lang, source_id, fields, reference, content_hash, imported_at) VALUES (?,?,?,?,?,?,?)",
        ("superglue/boolq", "en", "huge", json.dumps({"question": "is it big", "passage": huge, "response": "True"}),
         "True", digest("huge"), stamp),
    )
    huge_id = c.execute("SELECT max(id) FROM items").fetchone()[0]
    c.execute("INSERT INTO judgments (uid, item_id, judge_name, judge_key, status, verdict, raw_output, params, "
              "created_at) VALUES (?,?,?,?,?,?,?,?,?)", ("huge", huge_id, "gpt", "ka", "verdict", "True", huge, "{}", stamp))
    c.execute("COMMIT")
    store.close()


def hook_paint(screen) -> list[float]:
    painted = [0.0]
    refresh = screen._compositor_refresh

    def hooked() -> None:
        refresh()
        painted[0] = time.perf_counter()

    screen._compositor_refresh = hooked
    return painted


async def wait_paint(painted: list[float], since: float) -> float:
    while painted[0] < since:
        await asyncio.sleep(0.0005)
    return (painted[0] - since) * 1000


async def measure(path: Path, order: str, annotator: str) -> tuple[float, list[float]]:
    t0 = time.perf_counter()
    app = CalibrateApp(str(path), annotator=annotator, order=order)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        start = time.perf_counter() - t0
        screen = app.screen
        painted = hook_paint(screen)
        timings = []
        for _ in range(DECISIONS):
            before = screen.view.item.id
            t = time.perf_counter()
            if screen.view.verdict is not None:
                screen.action_confirm()
            else:
                screen.action_label_index(0) if not screen.view.is_yes_no else screen.action_label_yes()
            timings.append(await wait_paint(painted, t))
            assert screen.view.item.id != before
            await asyncio.sleep(0.01)  # an annotator does not press faster than every 10 ms
    return start, timings


async def measure_show(path: Path) -> tuple[list[float], list[float]]:
    """Showing a normal item and the 10 MB one (DB read, JSON parse, layout, paint), SHOWS times each."""
    app = CalibrateApp(str(path), annotator="shows")
    store = Store(path)
    huge_id = store.conn.execute("SELECT id FROM items WHERE source_id = 'huge'").fetchone()[0]
    store.close()
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        screen = app.screen
        painted = hook_paint(screen)
        normal, big = [], []
        for _ in range(SHOWS):
            for item_id, out in ((3, normal), (huge_id, big)):
                t = time.perf_counter()
                screen.show(app.session.jump_to(item_id))
                out.append(await wait_paint(painted, t))
                await asyncio.sleep(0.02)
    return normal, big


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
                if b"#1 " in seen or b"labelled" in seen:
                    return time.perf_counter() - t0
        raise RuntimeError("the app did not show an item within 20 s")
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(fd)


def main() -> None:
    tmp = Path(tempfile.mkdtemp())
    p95s: dict[tuple[int, str], float] = {}
    for n in (10_000, 1_000_000):
        path = tmp / f"tui-{n}.db"
        t = time.perf_counter()
        make_db(path, n)
        print(f"{n:,} items (4 tasks, en + zh, mixed verdicts) made in {time.perf_counter() - t:.1f} s", flush=True)
        for order in ORDERS:
            start, timings = asyncio.run(measure(path, order, f"bench-{order}"))
            q = statistics.quantiles(timings, n=100)
            p95s[(n, order)] = q[94]
            print(f"{n:>9,} items {order:>18}: start -> first item {start * 1000:4.0f} ms; confirm -> next item painted "
                  f"p50 {statistics.median(timings):5.1f} ms, p95 {q[94]:5.1f} ms", flush=True)
        if n == 1_000_000:
            normal, big = asyncio.run(measure_show(path))
            print(f"show an item, painted: normal p50 {statistics.median(normal):.1f} ms (max {max(normal):.1f}); "
                  f"10 MB passage + 10 MB judge output p50 {statistics.median(big):.1f} ms (max {max(big):.1f}); "
                  f"ratio {statistics.median(big) / statistics.median(normal):.1f}", flush=True)
            print(f"start -> first item as a process (in-order): {process_start(path) * 1000:.0f} ms", flush=True)
    for order in ORDERS:
        print(f"p95 ratio 1M / 10k, {order}: {p95s[(1_000_000, order)] / p95s[(10_000, order)]:.2f}")
    print("targets: p95 <= 30 ms, ratio <= 1.5, start <= 1 s, 10 MB item <= 100 ms")


if __name__ == "__main__":
    main()
