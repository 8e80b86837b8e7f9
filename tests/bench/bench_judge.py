"""Benchmark: the judge runner against a local server with latency L at concurrency C.

Prints achieved throughput as a ratio of the ideal C / L (target >= 0.9), and calibrate's CPU
time per request as a ratio of a bare AsyncOpenAI loop making the same calls in the same run
(target <= 1.5). The server runs in its own process so its CPU is not counted.

    .venv/bin/python tests/bench/bench_judge.py [ITEMS] [LATENCY] [CONCURRENCY]   (1000 0.5 32)
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
from calibrate.judge_runner import JudgeConfig, plan_jobs, run_jobs
from calibrate.judge_summary import RunSummary
from calibrate.store import Store
from calibrate.templates import TemplateSet

ROOT = Path(__file__).resolve().parents[2]


def start_server(latency: float) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "tests.fake_openai", str(latency)], cwd=ROOT,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    port = int(proc.stdout.readline())
    return proc, f"http://127.0.0.1:{port}/v1"


async def bare_loop(url: str, bodies: list[dict], concurrency: int) -> None:
    client = openai.AsyncOpenAI(base_url=url, api_key="x", max_retries=3)
    gate = asyncio.Semaphore(concurrency)

    async def one(body):
        async with gate:
            response = await client.chat.completions.create(**body)
            return response.choices[0].message.content

    await asyncio.gather(*(one(b) for b in bodies))
    await client.close()


def main(n: int, latency: float, concurrency: int) -> None:
    tmp = Path(tempfile.mkdtemp())
    source = tmp / "items.jsonl"
    source.write_text("".join(
        json.dumps({"id": k, "content": f"She went to the bank {k}.", "notation": "river bank", "response": "river"}) + "\n"
        for k in range(n)))
    store, templates = Store(tmp / "judge.db"), TemplateSet()
    import_records(store, jsonl_records(source, task="c3/lexical", lang="en"), templates)
    server, url = start_server(latency)
    try:
        config = JudgeConfig(model="bench", base_url=url, concurrency=concurrency)
        summary = RunSummary()
        jobs = plan_jobs(store, templates, config, summary=summary)
        bodies = [{"model": "bench", "messages": j.prompt.messages(), "temperature": 0.0} for j in jobs]

        cpu0, wall0 = time.process_time(), time.perf_counter()
        asyncio.run(run_jobs(store, jobs, config, summary))
        ours_cpu, ours_wall = time.process_time() - cpu0, time.perf_counter() - wall0

        cpu0, wall0 = time.process_time(), time.perf_counter()
        asyncio.run(bare_loop(url, bodies, concurrency))
        bare_cpu, bare_wall = time.process_time() - cpu0, time.perf_counter() - wall0
    finally:
        server.stdin.close()
        server.wait(10)

    ideal = concurrency / latency
    assert summary.cells and summary.stored == n, summary
    print(f"{n} items, latency {latency}s, concurrency {concurrency}: ideal {ideal:.1f} req/s")
    print(f"calibrate: {n / ours_wall:.1f} req/s, {ours_cpu / n * 1000:.2f} ms CPU/request")
    print(f"bare AsyncOpenAI loop: {n / bare_wall:.1f} req/s, {bare_cpu / n * 1000:.2f} ms CPU/request")
    print(f"throughput ratio (calibrate / ideal): {n / ours_wall / ideal:.2f}   target >= 0.9")
    print(f"CPU ratio (calibrate / bare loop):   {ours_cpu / bare_cpu:.2f}   target <= 1.5")


if __name__ == "__main__":
    args = sys.argv[1:]
    main(int(args[0]) if args else 1000, float(args[1]) if len(args) > 1 else 0.5, int(args[2]) if len(args) > 2 else 32)
