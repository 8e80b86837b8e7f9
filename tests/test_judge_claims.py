"""Concurrent runs of one judge split the items: each request is claimed in the store before it
is asked, so every item is asked once, and a dead run's claims come free."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
import time
from collections import Counter

from calibrate.judge_runner import JudgeConfig, plan_jobs, run_jobs
from calibrate.judge_summary import RunSummary
from calibrate.model import NewItem, NewJudgment
from calibrate.store import Store
from tests.fake_openai import FakeOpenAI, Reply
from tests.test_judge import judgments, lexical_db  # noqa: F401 (a fixture)


def judge_in_processes(run, server: FakeOpenAI, count: int, *extra: str) -> list[str]:
    """`count` judge runs of one judge at once, each in its own process; their outputs."""
    cmd = [sys.executable, "-m", "calibrate", "--db", str(run.db), "judge", "--model", "fake-judge",
           "--base-url", server.url, "--concurrency", "4", *extra]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for _ in range(count)]
    outputs = [proc.communicate(timeout=120)[0] for proc in procs]
    assert [proc.returncode for proc in procs] == [0] * count, outputs
    return outputs


def stored_by_each(outputs: list[str]) -> list[int]:
    return [int(re.search(r"(\d+) judgments stored", out).group(1)) for out in outputs]


def test_two_concurrent_runs_of_one_judge_in_two_processes_ask_each_item_once(lexical_db):  # noqa: F811
    run = lexical_db(80)
    with FakeOpenAI(Reply(delay=0.25)) as server:  # 5 s of asking for one run alone: the two overlap
        outputs = judge_in_processes(run, server, 2)
        assert server.count == 80, "requests == items"
    stored = stored_by_each(outputs)
    assert sum(stored) == 80 and min(stored) > 0, f"both runs were under way at once and split the items: {stored}"
    assert sorted(Counter(j.item_id for j in judgments(run)).values()) == [1] * 80
    assert Store(run.db).conn.execute("SELECT count(*) FROM judge_claims").fetchone()[0] == 0, "every claim released"


def test_two_concurrent_forced_runs_ask_each_item_once_more(lexical_db, templates):  # noqa: F811
    run = lexical_db(40)
    config = JudgeConfig(model="fake-judge", concurrency=4, max_retries=0)
    with FakeOpenAI(Reply(delay=0.05)) as server:
        config.base_url = server.url
        judge_in_processes(run, server, 1)
        assert server.count == 40
        stores = [Store(run.db), Store(run.db)]
        plans = [(store, plan_jobs(store, templates, config, force=True), RunSummary()) for store in stores]

        async def both() -> None:
            await asyncio.gather(*(run_jobs(store, jobs, config, summary) for store, jobs, summary in plans))

        asyncio.run(both())
        assert server.count == 80, "each item asked once more, not twice"
    stored = [summary.stored for _, _, summary in plans]
    assert sum(stored) == 40 and min(stored) > 0, f"the runs split the items: {stored}"
    assert sorted(Counter(j.item_id for j in judgments(run)).values()) == [2] * 40


def test_a_claim_is_free_once_answered_expired_or_its_process_is_gone(tmp_path):
    store = Store(tmp_path / "x.db")
    (item,), _ = store.add_items([NewItem("c3/lexical", "en", "1", {"content": "c"})], with_ids=True)
    assert store.claim_judging(item, "k", 0, "run-a", seconds=60) == "claimed"
    assert store.claim_judging(item, "k", 0, "run-a", seconds=60) == "claimed", "a run's own claim"
    assert store.claim_judging(item, "k", 1, "run-b", seconds=60) == "claimed", "another sample is another request"
    assert store.claim_judging(item, "k", 0, "run-b", seconds=60) == "held"
    with store.transaction():
        store.add_judgments([NewJudgment(item_id=item, judge_name="j", judge_key="k", status="verdict", verdict="yes")])
        store.release_judging(item, "k", 0, "run-a")
    assert store.claim_judging(item, "k", 0, "run-b", seconds=60) == "judged", "answered by the other run"
    assert store.claim_judging(item, "k", 0, "run-b", seconds=60, judged_after=store.newest_judgment_id()) == "claimed"

    gone = subprocess.Popen(["true"])
    gone.wait()
    store.conn.execute("UPDATE judge_claims SET pid = ?, holder = 'killed' WHERE sample = 1", (gone.pid,))
    assert store.claim_judging(item, "k", 1, "run-c", seconds=60) == "claimed", "its process is gone from this machine"
    store.conn.execute("UPDATE judge_claims SET host = 'another-host', holder = 'elsewhere' WHERE sample = 1")
    assert store.claim_judging(item, "k", 1, "run-c", seconds=60) == "held", "alive as far as this machine can tell"
    store.conn.execute("UPDATE judge_claims SET expires_at = ? WHERE sample = 1", (time.time() - 1,))
    assert store.claim_judging(item, "k", 1, "run-c", seconds=60) == "claimed", "expired"
    store.release_all_judging("run-c")
    assert [r[0] for r in store.conn.execute("SELECT holder FROM judge_claims")] == ["run-b"]
