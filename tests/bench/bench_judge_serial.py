"""Benchmark: judging against a server that answers one request at a time (llama.cpp's server
with one slot), as in the issue's real run: the default concurrency queues requests behind each
other for longer than the timeout.

The server (its own process) serves one request at a time with a fixed service time S, first
come first served, and computes every request it received even when the client has gone; it
counts requests received and the work done for clients that had gone (wasted). Printed, for
calibrate's runner and for a bare AsyncOpenAI loop with the same timeout and concurrency and
the client's default retries, each against a fresh server in the same run:
throughput as a share of the server's capacity 1/S (target close to 1), wasted requests
(target 0) and silent retries, requests the server received beyond those the run counted
(target 0).

    .venv/bin/python tests/bench/bench_judge_serial.py [ITEMS] [SERVICE] [CONCURRENCY] [TIMEOUT]   (60 0.2 8 1.0)
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import openai

from calibrate.formats import import_records
from calibrate.formats.jsonl import jsonl_records
from calibrate.judge_runner import JudgeConfig, plan_jobs, request_body, run_jobs
from calibrate.judge_summary import RunSummary
from calibrate.store import Store
from calibrate.templates import TemplateSet

ROOT = Path(__file__).resolve().parents[2]


class SerialServer:
    """tests/fake_openai.py in its own process with one slot."""

    def __init__(self, service: float):
        self.proc = subprocess.Popen([sys.executable, "-m", "tests.fake_openai", str(service), "1"], cwd=ROOT,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.url = f"http://127.0.0.1:{int(self.proc.stdout.readline())}/v1"

    def finish(self, settle: float) -> dict:
        """Let the server finish the work it still has queued, then read its counts."""
        time.sleep(settle)
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()
        counts = json.loads(self.proc.stdout.readline())
        self.proc.wait(10)
        return counts


async def bare_loop(url: str, bodies: list[dict], concurrency: int, timeout: float) -> int:
    """The openai client as commonly used: its own timeout and retries. Returns answers received."""
    client = openai.AsyncOpenAI(base_url=url, api_key="x", timeout=timeout)
    gate = asyncio.Semaphore(concurrency)

    async def one(body) -> int:
        async with gate:
            try:
                await client.chat.completions.create(**body)
                return 1
            except openai.APITimeoutError:
                return 0

    answered = sum(await asyncio.gather(*(one(b) for b in bodies)))
    await client.close()
    return answered


def main(n: int, service: float, concurrency: int, timeout: float) -> None:
    tmp = Path(tempfile.mkdtemp())
    source = tmp / "items.jsonl"
    source.write_text("".join(
        json.dumps({"id": k, "content": f"She went to the bank {k}.", "notation": "river bank", "response": "river"}) + "\n"
        for k in range(n)))
    store, templates = Store(tmp / "judge.db"), TemplateSet()
    import_records(store, jsonl_records(source, task="c3/lexical", lang="en"), templates)
    capacity = 1 / service
    settle = concurrency * service + 1  # whatever the server still has queued when a run ends
    print(f"{n} items; server: one request at a time, {service}s each (capacity {capacity:.1f} req/s); "
          f"concurrency {concurrency}, timeout {timeout}s (the last of {concurrency} queued waits "
          f"{concurrency * service:.1f}s)")
    print(f"{'run':<24}{'answered':>9}{'req/s':>8}{'of capacity':>13}{'sent':>6}{'counted':>9}{'silent':>8}"
          f"{'wasted':>8}{'timeouts':>10}")

    server = SerialServer(service)
    config = JudgeConfig(model="bench", base_url=server.url, concurrency=concurrency, timeout=timeout)
    summary = RunSummary()
    jobs = plan_jobs(store, templates, config, summary=summary)
    bodies = [request_body(job, config) for job in jobs]
    wall0 = time.perf_counter()
    asyncio.run(run_jobs(store, jobs, config, summary))
    wall = time.perf_counter() - wall0
    seen = server.finish(settle)
    answered = summary.cells[("c3/lexical", "en", "verdict")]
    counted = summary.requests.attempts
    print(f"{'calibrate':<24}{answered:>9}{answered / wall:>8.2f}{answered / wall / capacity:>13.2f}"
          f"{seen['requests']:>6}{counted:>9}{seen['requests'] - counted:>8}{seen['abandoned']:>8}"
          f"{summary.requests.timeouts:>10}")

    server = SerialServer(service)
    wall0 = time.perf_counter()
    answered = asyncio.run(bare_loop(server.url, bodies, concurrency, timeout))
    wall = time.perf_counter() - wall0
    seen = server.finish(settle)
    print(f"{'AsyncOpenAI (2 retries)':<24}{answered:>9}{answered / wall:>8.2f}{answered / wall / capacity:>13.2f}"
          f"{seen['requests']:>6}{n:>9}{seen['requests'] - n:>8}{seen['abandoned']:>8}{'?':>10}")
    print("sent: requests the server received; counted: requests the run knows it sent; silent: sent - counted; "
          "wasted: answers computed for a client that had gone")


if __name__ == "__main__":
    args = sys.argv[1:]
    main(int(args[0]) if args else 60, float(args[1]) if len(args) > 1 else 0.2,
         int(args[2]) if len(args) > 2 else 8, float(args[3]) if len(args) > 3 else 1.0)
