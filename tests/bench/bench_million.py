"""Benchmark: every figure of a million items in one run, on the database of tests/bench/million.py
(built once, then reused): start -> first item and confirm -> next item for every queue order,
the report with two judges and their jury, `scores`, `trust`, every `export` format, the import
against raw executemany and `sqlite-utils insert`, and the clean-up of a killed import.

Each command also runs as a whole process (`python -m calibrate ...`), timed from spawn to exit,
with its CPU time (user + system, every thread: steadier than the wall time on a shared machine) and
peak memory (the child's ru_maxrss from os.wait4; in-process figures are measured in a
fresh interpreter too, so that this script stays small and no child inherits its memory). Each
line prints the target, the figure, the ratio figure / target (<= 1 meets it) and the machine's
load average. `scores`, `trust` and the exports run twice and the second run is the figure, the
first beside it: a first run may read the database from disk.

    PYTHONPATH=. .venv/bin/python tests/bench/bench_million.py [--n N] [--db PATH] [--only NAME,...]

NAME: orders, report, commands, import, cleanup (default: all). The annotation figures label a
few hundred items per order, on a copy of the database made for them and removed after, so
that every run measures the database as it was built (labels left by earlier runs would add a
report line per bench annotator, and make each order's queue shorter).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import pty
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.bench import million

HERE = Path(__file__).resolve().parent
DECISIONS = 400
STARTS = 3  # sessions per order whose start's median is the order's figure
rows: list[tuple] = []


def load() -> str:
    return f"load {os.getloadavg()[0]:.1f}"


def report(name: str, target: float | None, value: float, unit: str, extra: str = "") -> None:
    ratio = f"{value / target:5.2f}" if target else "    —"
    line = (f"{name:<46} target {'—' if target is None else f'{target:g} {unit}':>9}  measured {value:9.3f} {unit:<3} "
            f"ratio {ratio}  {extra}  [{load()}]")
    rows.append(line)
    print(line, flush=True)


def run_process(args: list[str], *, stdout=subprocess.DEVNULL) -> tuple[float, float, float, int]:
    """(seconds, CPU seconds (user + system, every thread), peak RSS in MB, exit status) of one
    calibrate process."""
    return run_measured([sys.executable, "-m", "calibrate", *args], stdout=stdout)


def run_measured(command: list[str], *, stdout=subprocess.DEVNULL) -> tuple[float, float, float, int]:
    """(seconds, CPU seconds (user + system), peak RSS in MB, exit status) of one process."""
    started = time.perf_counter()
    child = subprocess.Popen(command, stdout=stdout, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    took = time.perf_counter() - started
    err = child.stderr.read().decode(errors="replace")
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode:
        print(f"  ! {Path(command[0]).name} {' '.join(command[1:])} exited {child.returncode}: {err.strip()[-300:]}", flush=True)
    return took, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, child.returncode


# -- the annotation app --------------------------------------------------------------------------


async def _app_figures(path: Path, order: str, annotator: str, decisions: int,
                       seed: int = 0) -> tuple[float, list[float]]:
    from calibrate.tui import CalibrateApp
    from tests.bench.bench_tui import hook_paint, wait_paint

    t0 = time.perf_counter()
    app = CalibrateApp(str(path), annotator=annotator, order=order, seed=seed)
    async with app.run_test(size=(140, 40)) as pilot:
        screen = app.screen
        while getattr(screen, "view", None) is None:
            await pilot.pause(0.005)
            screen = app.screen
        await pilot.pause()
        start = time.perf_counter() - t0
        painted = hook_paint(screen)
        timings = []
        for _ in range(decisions):
            before = screen.view.item.id
            t = time.perf_counter()
            if screen.view.verdict is not None:
                screen.action_confirm()
            else:
                screen.action_label_index(0) if not screen.view.is_yes_no else screen.action_label_yes()
            timings.append(await wait_paint(painted, t))
            assert screen.view is None or screen.view.item.id != before
            await asyncio.sleep(0.01)  # an annotator does not press faster than every 10 ms
    return start, timings


def app_in_fresh_interpreter(path: Path, order: str, annotator: str, decisions: int,
                             seed: int = 0) -> tuple[float, list[float], float]:
    """Start -> first item painted and the confirm timings, in a fresh interpreter (imports
    included), and that process's peak memory."""
    code = (f"import asyncio, json; from tests.bench.bench_million import _app_figures; "
            f"print(json.dumps(asyncio.run(_app_figures({str(path)!r}, {order!r}, {annotator!r}, {decisions}, {seed}))))")
    with tempfile.TemporaryFile() as out:
        child = subprocess.Popen([sys.executable, "-c", code], stdout=out,
                                 env={**os.environ, "PYTHONPATH": str(HERE.parents[1])})
        _, status, usage = os.wait4(child.pid, 0)
        if os.waitstatus_to_exitcode(status):
            raise RuntimeError(f"the app for order {order} failed")
        out.seek(0)
        start, timings = json.loads(out.read())
    return start, timings, usage.ru_maxrss / 1024


def process_start(path: Path, order: str, annotator: str) -> tuple[float, float]:
    """`calibrate annotate` in a pty: seconds until the first item's id is on screen, and the
    process's peak memory then."""
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "140", "LINES": "40"}
    t0 = time.perf_counter()
    pid, fd = pty.fork()
    if pid == 0:
        os.execve(sys.executable, [sys.executable, "-m", "calibrate", "--db", str(path), "annotate",
                                   "--annotator", annotator, "--order", order], env)
    seen = b""
    try:
        while time.perf_counter() - t0 < 60:
            if select.select([fd], [], [], 0.01)[0]:
                try:
                    seen += os.read(fd, 65536)
                except OSError:
                    break
                if b"labelled " in seen:
                    return time.perf_counter() - t0, _kill(pid, fd)
        raise RuntimeError(f"the app ({order}) did not show an item within 60 s")
    except BaseException:
        _kill(pid, fd)
        raise


def _kill(pid: int, fd: int) -> float:
    os.kill(pid, signal.SIGKILL)
    _, _, usage = os.wait4(pid, 0)
    os.close(fd)
    return usage.ru_maxrss / 1024


def orders(built: Path) -> None:
    folder = Path(tempfile.mkdtemp(dir=built.parent, prefix="orders-"))
    path = folder / built.name
    subprocess.run(["cp", "--sparse=always", str(built), str(path)], check=True)
    try:
        _orders_on(path)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _orders_on(path: Path) -> None:
    """Per order, the start's median of STARTS sessions (one of them labels DECISIONS items for
    the confirm timings) and its ratio to the in-order one; the first stratified session of a
    seed works its queue out and keeps it (migration 0022), so it is measured on its own first,
    and the order's median is of sessions that read the kept queue."""
    from calibrate.session import ORDERS

    first, _, peak = app_in_fresh_interpreter(path, "stratified", "bench-stratified-first", 1)
    report("start -> first item (stratified, queue worked out)", 1.0, first, "s", f"peak {peak:.0f} MB")
    starts = {}
    for order in ORDERS:
        start, timings, peak = app_in_fresh_interpreter(path, order, f"bench-{order}", DECISIONS)
        samples = [start] + [app_in_fresh_interpreter(path, order, f"bench-{order}-{k}", 1)[0]
                             for k in range(1, STARTS)]
        starts[order] = statistics.median(samples)
        q = statistics.quantiles(timings, n=100)
        report(f"start -> first item ({order}, in a fresh interpreter)", 1.0, starts[order], "s",
               f"median of {STARTS}: {', '.join(f'{x:.2f}' for x in samples)}; peak {peak:.0f} MB")
        report(f"confirm -> next item p95 ({order})", 30, q[94], "ms",
               f"p50 {statistics.median(timings):.1f}, p99 {q[98]:.1f} (target 60), max {max(timings):.1f}")
    for order, start in [*starts.items(), ("stratified, queue worked out", first)]:
        report(f"start {order} / start in-order", 1.5, start / starts["in-order"], "x")
    for order in ORDERS:
        took, peak = process_start(path, order, f"proc-{order}")
        report(f"start -> first item ({order}, `calibrate annotate` in a pty)", 1.0, took, "s", f"peak {peak:.0f} MB")


# -- the commands that read everything -----------------------------------------------------------


def _report_in_process(path: str) -> tuple[float, float, list[str], int]:
    from calibrate.report import build_report
    from calibrate.store import Store
    from calibrate.templates import TemplateSet

    store, templates = Store(path, read_only=True), TemplateSet()
    t0, cpu0 = time.perf_counter(), time.process_time()
    result = build_report(store, templates)
    took, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    return took, cpu, sorted({c.judge for c in result.cells}), sum(1 for c in result.cells for _ in c.lines)


def report_figures(path: Path) -> None:
    """The report built in a fresh interpreter (timed around build_report) and as a process: a
    child forked from a large parent would report the parent's memory as its own peak."""
    code = (f"import json; from tests.bench.bench_million import _report_in_process; "
            f"print(json.dumps(_report_in_process({str(path)!r})))")
    with tempfile.TemporaryFile() as out:
        child = subprocess.Popen([sys.executable, "-c", code], stdout=out,
                                 env={**os.environ, "PYTHONPATH": str(HERE.parents[1])})
        _, _, usage = os.wait4(child.pid, 0)
        out.seek(0)
        took, cpu, judges, lines = json.loads(out.read())
    report("report (two judges and their jury), in-process", 2.0, took, "s",
           f"CPU {cpu:.2f} s (both threads); judges {', '.join(judges)}, {lines} lines; "
           f"that process's peak {usage.ru_maxrss / 1024:.0f} MB")
    took, cpu, peak, _ = run_process(["--db", str(path), "report"])
    report("report (two judges and their jury), as a process", 2.0, took, "s", f"CPU {cpu:.2f} s, peak {peak:.0f} MB")


def commands(path: Path) -> None:
    out = Path(tempfile.mkdtemp())
    for name, args in [
        ("scores", ["scores"]),
        ("trust", ["trust"]),
        ("export --format jsonl", ["export", "--format", "jsonl", "--out", str(out / "gold.jsonl")]),
        ("export --format csv", ["export", "--format", "csv", "--out", str(out / "gold.csv")]),
        ("export c3 (en, judge gpt, one system)",
         ["export", "c3", str(out / "c3"), "--lang", "en", "--judge", "gpt", "--system", "sys-a"]),
    ]:
        # run twice, the second the figure: the first may read much of the file from disk (machines here keep a
        # few GB of file pages, and the import figures write several GB), which measures the disk, not calibrate
        first, _, _, _ = run_process(["--db", str(path), *args])
        took, cpu, peak, code = run_process(["--db", str(path), *args])
        report(f"{name}{'' if code == 0 else ' (FAILED)'}", 5.0, took, "s",
               f"CPU {cpu:.2f} s, peak {peak:.0f} MB (target 300); first run {first:.2f} s")
    shutil.rmtree(out, ignore_errors=True)


# -- import and clean-up ---------------------------------------------------------------------------


def import_figures(n: int) -> None:
    """The import against raw executemany and sqlite-utils, as wall time (the target) and as CPU
    time (user + system). Neither is steady on a shared machine: the import's batches are sized
    by how long each took, so a busier machine makes them smaller, and smaller batches cost
    SQLite more work per item (each commit writes the content-hash index pages it touched)."""
    import resource
    import sqlite3

    from calibrate.model import now_iso
    from calibrate.store import Store

    tmp = Path(tempfile.mkdtemp())
    source = tmp / "items.jsonl"
    with source.open("w", encoding="utf-8") as out:
        for k in range(n):
            out.write(json.dumps({"id": f"item-{k}", "content": f"She went to the bank number {k}.",
                                  "notation": "The bank of a river.", "response": f"A river bank, {k % 7} ducks."}) + "\n")
    took, cpu, peak, _ = run_measured([sys.executable, "-m", "calibrate", "--db", str(tmp / "calibrate.db"), "import",
                                       "jsonl", str(source), "--task", "c3/lexical", "--lang", "en"])
    conn = sqlite3.connect(tmp / "calibrate.db")
    prepared = conn.execute("SELECT task, lang, source_id, fields, reference, content_hash FROM items ORDER BY id").fetchall()
    conn.close()
    Store(tmp / "raw.db").close()
    conn = sqlite3.connect(tmp / "raw.db", isolation_level=None)
    conn.execute("PRAGMA synchronous = NORMAL")
    stamp = now_iso()
    before = resource.getrusage(resource.RUSAGE_SELF)
    start = time.perf_counter()
    conn.execute("BEGIN IMMEDIATE")
    conn.executemany("INSERT INTO items (task, lang, source_id, fields, reference, content_hash, imported_at) "
                     "VALUES (?,?,?,?,?,?,?)", [(*r, stamp) for r in prepared])
    conn.execute("COMMIT")
    raw = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_SELF)
    raw_cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    conn.close()
    del prepared
    utils = shutil.which("sqlite-utils", path=str(Path(sys.executable).parent))
    insert_nl, insert_nl_cpu, _, _ = run_measured([utils, "insert", str(tmp / "utils.db"), "items", str(source), "--nl"])
    report(f"import jsonl ({n:,} lines), as a process", None, took, "s", f"peak {peak:.0f} MB, CPU {cpu:.1f} s")
    report("raw executemany / import (target >= 0.5: ratio <= 2)", 2.0, took / raw, "x", f"raw {raw:.1f} s")
    report("  ... as CPU time (user + system)", None, cpu / raw_cpu, "x", f"raw {raw_cpu:.1f} s")
    report("import / sqlite-utils insert --nl", 2.0, took / insert_nl, "x", f"sqlite-utils {insert_nl:.1f} s")
    report("  ... as CPU time (user + system)", None, cpu / insert_nl_cpu, "x", f"sqlite-utils {insert_nl_cpu:.1f} s")
    shutil.rmtree(tmp, ignore_errors=True)


def cleanup_figures(n: int) -> None:
    import multiprocessing as mp

    from tests.bench import bench_cleanup

    ctx = mp.get_context("fork")
    path = Path(tempfile.mkdtemp()) / "cleanup.db"
    base = bench_cleanup.visible_base(path, 20_000)
    bench_cleanup.leave_killed_run(ctx, path, n)
    stop, results = ctx.Event(), ctx.Queue()
    writer = ctx.Process(target=bench_cleanup.one_row_writer, args=(str(path), base, stop, results))
    writer.start()
    time.sleep(1.0)
    took, cpu = bench_cleanup.clean_up(path)
    time.sleep(0.5)
    stop.set()
    waits = sorted(results.get(timeout=60))
    writer.join(60)
    report(f"clean-up of a killed import ({n:,} items)", None, took, "s", f"CPU {cpu:.1f} s, {n / took:,.0f} items/s")
    report("a one-row writer's longest wait meanwhile", 1.0, waits[-1], "s", f"{len(waits)} writes")
    shutil.rmtree(path.parent, ignore_errors=True)


def compile_calibrate() -> None:
    """Compile calibrate's modules to bytecode before anything is timed, as installing it does:
    in a source tree without fresh bytecode, and with PYTHONDONTWRITEBYTECODE set, every
    process timed here would compile them again (about 0.1 s of CPU per start, measured)."""
    import compileall

    import calibrate

    compileall.compile_dir(Path(calibrate.__file__).parent, quiet=1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--db", type=Path, help="the database to build once and reuse")
    parser.add_argument("--only", default="orders,report,commands,import,cleanup")
    parser.add_argument("--cleanup-n", type=int, default=100_000)
    args = parser.parse_args()
    path = args.db or Path(tempfile.gettempdir()) / "calibrate-bench" / f"million-{args.n}.db"
    started = time.perf_counter()
    million.ensure(path, args.n)
    compile_calibrate()
    print(f"database: {path} ({path.stat().st_size / 1e9:.2f} GB, {args.n:,} items; ready in "
          f"{time.perf_counter() - started:.0f} s) [{load()}, {os.cpu_count()} cores]", flush=True)
    only = args.only.split(",")
    if "commands" in only:
        commands(path)
    if "report" in only:
        report_figures(path)
    if "orders" in only:
        orders(path)
    if "import" in only:
        import_figures(args.n)
    if "cleanup" in only:
        cleanup_figures(args.cleanup_n)
    print("\nsummary")
    for line in rows:
        print(line)


if __name__ == "__main__":
    main()
