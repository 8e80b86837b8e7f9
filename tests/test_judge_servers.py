"""Judging against servers as they really behave: bare verdicts, outputs cut at the token limit,
a server that answers one request at a time, dead or refusing servers, rubric confidence from
the score tokens, sampling controls and reasoning models, another reported model, progress on
any stream. Each against the local fake chat-completions server (tests/fake_openai.py)."""

from __future__ import annotations

import asyncio
import io
import json
import math
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from rich.console import Console

from calibrate.judge_progress import JudgeProgress
from calibrate.judge_runner import Job, JudgeConfig, same_model
from calibrate.judge_server import AdaptiveConcurrency
from calibrate.judge_summary import RunSummary
from calibrate.store import Store
from tests.conftest import Calibrate, as_made_before_0027
from tests.fake_openai import FakeOpenAI, Reply, hanging_url, refused_url

EN = {"notation": "river bank", "response": "the river bank"}
ZH = {"annotation": "银行", "response": "河岸"}
RUBRIC = {"question": "1+1?", "answer": "2", "llm_answer": "2", "llm_reasoning": "adding"}


@pytest.fixture
def db(tmp_path):
    """make(n, task, lang, fields): a database of n items of one task, and its CLI."""

    def make(n: int, task: str = "c3/lexical", lang: str = "en", fields: dict = EN) -> Calibrate:
        source = tmp_path / f"{task.replace('/', '_')}_{lang}.jsonl"
        source.write_text("".join(json.dumps({"id": k, "content": f"sentence {k}", **fields}, ensure_ascii=False) + "\n"
                                  for k in range(n)), encoding="utf-8")
        run = Calibrate(tmp_path / "judge.db")
        run("import", "jsonl", str(source), "--task", task, "--lang", lang)
        return run

    return make


def judge(run: Calibrate, server: FakeOpenAI | str, *extra: str, ok: bool = True):
    url = server if isinstance(server, str) else server.url
    return run("judge", "--model", "fake-judge", "--base-url", url, "--max-retries", "2", *extra, ok=ok)


def stored(run: Calibrate):
    return list(Store(run.db).judgments())


def runs(run: Calibrate) -> list[dict]:
    return json.loads(run("status", "--runs", "--json").output)


def wait_for(condition, seconds: float = 60) -> None:
    """Poll until `condition()` holds (another process or thread gets there), `seconds` at most:
    the caller's assertions then say what did not happen."""
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.02)


# -- 1. bare verdicts ------------------------------------------------------------------------


def test_a_bare_verdict_word_is_stored_as_that_verdict_and_counted_as_bare(db):
    run = db(3, "c3/tone", "zh", ZH)
    replies = {"sentence 0": Reply("是。"), "sentence 1": Reply("**否**"), "sentence 2": Reply("是的，学生说得对。")}
    with FakeOpenAI(by_content=replies) as server:
        out = judge(run, server)
    by_item = {j.item_id: j for j in stored(run)}
    assert [(by_item[k].status, by_item[k].verdict) for k in (1, 2, 3)] == [("verdict", "是"), ("verdict", "否"), ("unparsed", None)]
    assert "bare" in out.output and runs(run)[0]["bare"] == 2
    assert "no verdict changed" in run("parse").output, "a re-parse reads them the same"


# -- 2. truncation ---------------------------------------------------------------------------


def test_an_output_cut_at_the_token_limit_is_unparsed_as_truncated_even_if_it_holds_a_verdict(db):
    run = db(2)
    cut = Reply("The answer is: yes. Wait, let me reconsider whether", finish_reason="length", completion_tokens=16)
    with FakeOpenAI(by_content={"sentence 0": cut}) as server:
        out = judge(run, server, "--max-tokens", "16")
        judge(run, server, "--max-tokens", "16")
        assert server.count == 2, "a truncated output is an answer: not asked again"
    truncated = next(j for j in stored(run) if j.item_id == 1)
    assert (truncated.status, truncated.verdict, truncated.unparsed_reason) == ("unparsed", None, "truncated at 16 tokens")
    assert "1 output was cut at the token limit" in out.output and "raise --max-tokens" in out.output
    assert "another configuration of the judge: it asks all 2 items of this run again, not only the 1 cut" in \
        " ".join(out.output.split())
    assert runs(run)[-1]["truncated"] == 1
    run("parse")
    assert next(j for j in stored(run) if j.item_id == 1).unparsed_reason == "truncated at 16 tokens", "re-parsing keeps it"
    store = Store(run.db)
    for item_id in (1, 2):
        store.annotate(item_id, "ann", "label", label="yes")
    store.close()
    assert ("1 of the unparsed outputs were cut at the judge's token limit: judge again with a higher --max-tokens "
            "(another configuration: it asks every item again, not only these)") in " ".join(run("report").output.split())


def test_one_judge_name_over_two_configurations_is_said_beside_it_until_the_new_one_has_judged_every_item(db):
    """Another server is another configuration of the judge: its run asks again, and its verdicts
    replace the first server's item by item. Until it has asked every item, the report, the scores
    and trust say how many verdicts each configuration gave."""
    run = db(10)
    confident = dict(logprobs=[(" yes", -0.05), (".", -0.01)])
    with FakeOpenAI(Reply("The answer is: yes.", **confident)) as first:
        judge(run, first, "--logprobs")
    store = Store(run.db)
    for item_id in range(1, 11):
        store.annotate(item_id, "ann", "label", label="yes" if item_id % 3 else "no")
    store.close()
    mixed = "fake-judge's verdicts here come from 2 configurations (7 + 3 items)"
    assert mixed not in " ".join(run("report").output.split()), "one configuration: nothing to say"
    with FakeOpenAI(Reply("The answer is: no.", **confident)) as second:
        assert "0 already judged" in judge(run, second, "--logprobs", "--limit", "3").output
        outputs = {what: " ".join(run(*what, ok=False).output.split()) for what in (("report",), ("scores",), ("trust",))}
        for what, text in outputs.items():
            assert mixed in text and "give each its own --judge-name to report them apart" in text, what
        (cell,) = json.loads(run("report", "--format", "json").output)["cells"]
        assert cell["configurations"] == [{"task": "c3/lexical", "lang": "en", "items_per_configuration": [7, 3]}]
        judge(run, second, "--logprobs")
    assert not any("configurations (" in run(*what, ok=False).output for what in (("report",), ("scores",), ("trust",))), \
        "once the new configuration judged every item, every verdict in force is its own"


def test_without_max_tokens_the_truncation_names_the_tokens_the_server_gave(db):
    run = db(1)
    with FakeOpenAI(Reply("The answer", finish_reason="length", completion_tokens=2048)) as server:
        out = judge(run, server, ok=False)
    assert stored(run)[0].unparsed_reason == "truncated at 2048 tokens"
    assert "raise --max-tokens" in out.output and "the one output of this run did not parse" in out.output
    assert "template's answer format" not in out.output, "the advice for a truncation is the token limit's"


# -- 3. a server that answers one request at a time ----------------------------------------------


def test_requests_queued_behind_our_own_are_not_timed_out_and_nothing_is_wasted(db):
    """8 at once against one slot: the last is answered after 8 x 0.2 s = 1.6 s, far beyond the
    1 s timeout, yet each request is answered within 1 s of the server starting on it."""
    run = db(8)
    with FakeOpenAI(Reply(delay=0.2), slots=1) as server:
        out = judge(run, server, "--concurrency", "8", "--timeout", "1")
        assert (server.count, server.served, server.abandoned) == (8, 8, 0), "no retry, no abandoned work"
        judge(run, server)
    assert [j.status for j in stored(run)] == ["verdict"] * 8
    assert "8 requests sent, 0 of them retries" in out.output
    assert (runs(run)[0]["requests"], runs(run)[0]["retries"], runs(run)[0]["failures"]) == (8, 0, {})
    assert len(runs(run)) == 1, "the second run had nothing to ask: not recorded"


def test_a_server_taking_our_requests_in_another_order_than_we_sent_them_is_not_timed_out(db):
    """One slot serving the newest request first: the first one sent after the first waits
    1.2 s behind the six sent after it, beyond the 1 s timeout, but the server answers one of
    ours every 0.2 s meanwhile, so none is abandoned."""
    run = db(8)
    with FakeOpenAI(Reply(delay=0.2), slots=1, newest_first=True) as server:
        out = judge(run, server, "--concurrency", "8", "--timeout", "1")
        assert (server.count, server.served, server.abandoned) == (8, 8, 0), "no retry, no abandoned work"
    assert "8 requests sent, 0 of them retries" in out.output


def test_a_request_the_server_is_stuck_on_times_out_is_retried_and_counted(db):
    run = db(3)
    with FakeOpenAI(Reply(delay=0.05)) as server:
        server.then(Reply(delay=2.0))  # the first request takes too long; its retry is fine
        out = judge(run, server, "--concurrency", "1", "--timeout", "0.5")
        assert server.count == 4
    assert out.exit_code == 0, "every item finally answered: the run succeeded"
    assert "4 requests sent, 1 of them a retry; failed: 1 × timed out" in out.output
    assert runs(run)[0]["failures"] == {"timed out": 1}


def test_a_run_whose_timeouts_leave_an_item_unanswered_fails(db):
    run = db(2)
    with FakeOpenAI(by_content={"sentence 0": Reply(delay=3.0)}) as server:
        out = judge(run, server, "--concurrency", "1", "--timeout", "0.3", "--max-retries", "1", ok=False)
    assert out.exit_code == 1 and "1 of 2 items ended in error" in out.output and "2 × timed out" in out.output
    status = run("status").output
    assert "the last 1 judge run (more" in status and "timeouts" in status


def test_concurrency_halves_once_per_round_on_overload_and_grows_back_by_one_per_round():
    async def scenario():
        limit = AdaptiveConcurrency(8)
        sent = [await limit.acquire() for _ in range(8)]
        for at in sent:  # a whole round overloaded: one halving, not eight
            await limit.release(at, overload=True)
        assert limit.allowed == 4
        again = await limit.acquire()
        await limit.release(again, overload=True)  # sent after the cut: cuts again
        assert limit.allowed == 2 and limit.lowest == 2
        for _ in range(2):  # each answer adds 1/limit: a round of answers adds about one
            await limit.release(await limit.acquire(), overload=False)
        assert limit.allowed == 2 and limit.limit == pytest.approx(2.9)
        await limit.release(await limit.acquire(), overload=False)
        assert limit.allowed == 3
        for _ in range(100):
            await limit.release(await limit.acquire(), overload=False)
        assert limit.allowed == 8, "never above the ceiling"

    asyncio.run(scenario())


def test_429s_lower_the_concurrency_and_are_reported(db):
    run = db(6)
    with FakeOpenAI(Reply(delay=0.05)) as server:
        server.then(*[Reply(status=429, headers={"retry-after": "0.05"})] * 4)
        out = judge(run, server, "--concurrency", "4")
    assert len(stored(run)) == 6 and out.exit_code == 0
    assert "failed: 4 × HTTP 429" in out.output and "concurrency went down to 2 of 4" in out.output


def test_requests_are_counted_as_the_server_received_them_when_a_run_stops_with_retries_pending(db):
    """Every request hangs: retries waiting for room in flight, and requests not yet sent, are
    cancelled as the run stops; none of them counts as sent."""
    run = db(20)
    with FakeOpenAI(Reply(delay=5)) as server:
        out = judge(run, server, "--concurrency", "4", "--timeout", "0.3", "--max-retries", "1", ok=False)
        (record,) = runs(run)
        wait_for(lambda: server.count >= record["requests"], 5)  # the last ones sent may reach it just after
        asked = Counter(body["messages"][-1]["content"] for body in server.requests)
    assert "3 items failed before the server gave any usable answer in this run" in out.output
    assert (record["requests"], record["retries"]) == (server.count, server.count - len(asked))
    retries = "a retry" if record["retries"] == 1 else "retries"
    assert f"{server.count} requests sent, {record['retries']} of them {retries}" in out.output


def test_the_progress_line_says_the_server_asked_to_wait_while_the_run_waits(db):
    run = db(1)
    with FakeOpenAI() as server:
        server.then(Reply(status=429, headers={"retry-after": "3"}))
        out = judge(run, server, "--concurrency", "1", "--progress-every", "0.5")
    lines = [line for line in out.output.splitlines() if line.startswith("judging: ")]
    assert any("0/1 items, 1 failed (1 HTTP 429)" in line and "waiting 3 s as the server asks (" in line
               for line in lines), out.output
    assert "1/1 items" in lines[-1] and "1 retry (1 HTTP 429)" in lines[-1] and "waiting" not in lines[-1]


def test_status_counts_a_judge_run_as_it_goes_and_after_its_process_was_killed(db):
    """Five items are answered at once, the sixth never: the run's record counts what it stored
    while it runs, and keeps it after a kill -9 (which leaves the run no chance to record its end)."""
    run = db(10)
    with FakeOpenAI(by_content={f"sentence {k}\n": Reply(delay=60) for k in range(5, 10)}) as server:
        judging = subprocess.Popen([sys.executable, "-m", "calibrate", "--db", str(run.db), "judge", "--model",
                                    "fake-judge", "--base-url", server.url, "--concurrency", "1"],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_for(lambda: server.count == 6)  # the sixth is asked once the fifth is stored
            (record,) = runs(run)
            assert (record["outcome"], record["stored"], record["verdicts"], record["requests"]) == ("running", 5, 5, 5)
            assert "running   5/10" in run("status").output
        finally:
            judging.kill()
            judging.wait()
    (record,) = runs(run)
    assert (record["outcome"], record["stored"], record["verdicts"], record["requests"]) == ("died", 5, 5, 5)
    assert len(stored(run)) == 5
    assert "died      5/10" in run("status").output



@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="process start times are read from /proc")
def test_a_run_whose_process_id_another_process_took_since_shows_as_died(db):
    """A run killed long ago whose process id a newer process holds now (ids are reused) is not
    shown as running."""
    run = db(1)
    store = Store(run.db)
    run_id = store.begin_judge_run("j", "m", "s", {}, items=1, samples=1, concurrency=1)
    newer = subprocess.Popen(["sleep", "30"])
    try:
        with store.transaction():  # the run began an hour ago, in a process with the id the newer one has now
            store.conn.execute("UPDATE judge_runs SET pid = ?, started_at = ? WHERE id = ?",
                               (newer.pid, "2026-01-01T00:00:00.000000+00:00", run_id))
        store.close()
        (record,) = runs(run)
        assert record["outcome"] == "died"
    finally:
        newer.kill()
        newer.wait()

# -- 4. a dead or refusing server ---------------------------------------------------------------


def test_an_unreachable_server_stops_the_run_with_one_message_naming_the_failed_items(db):
    run = db(20)
    with refused_url() as url:
        out = judge(run, url, "--concurrency", "2", "--max-retries", "1", ok=False)
    stop = " ".join(out.output.split())
    assert out.exit_code == 1 and stop.count("Error:") == 1
    assert "3 items failed before the server gave any usable answer in this run (e.g. connection failed: could not connect" \
        in stop
    assert "is the server" in stop and ("3 requests reached no server (no connection could be made): their items are "
                                        "not stored, and the next run asks them. The items not yet answered are not "
                                        "stored: run again to resume once the server is up.") in stop
    assert "The failed items are stored as errors" not in stop
    assert "no request reached the server (" in stop and "requests sent" not in stop
    assert stored(run) == [], "nothing reached the server: no item is at fault, none is stored as an error"
    (record,) = runs(run)
    assert record["outcome"] == "stopped" and record["stored"] == 0
    assert (record["requests"], record["retries"]) == (0, 0), "as the summary says: no request reached the server"
    assert record["failures"]["connection failed"] >= 3


def test_requests_whose_connection_times_out_are_not_said_to_be_sent(db):
    """A server whose connections hang (a full queue, a firewall dropping packets) never gets a
    request: the run says none reached it and why, stores none of its items as an error, and
    counts no request, rather than "4 requests sent" that the server "(presumably) started on"."""
    run = db(2)
    with hanging_url() as url:
        out = judge(run, url, "--concurrency", "1", "--timeout", "0.3", "--max-retries", "1", ok=False)
    said = " ".join(out.output.split())
    assert out.exit_code == 1 and "no request reached the server (4 attempts to connect failed)" in said
    assert "2 requests could not be sent: no connection to the server could be made" in said
    assert "requests sent" not in said and "started on it" not in said
    (record,) = runs(run)
    assert (record["requests"], record["retries"], record["stored"]) == (0, 0, 0) and stored(run) == []


def test_requests_that_could_not_connect_among_answers_are_not_stored_and_the_run_says_so(db):
    """A request for which no connection could be made (nothing listens) is not the item's error:
    the run leaves it unstored, exits 1 saying so, and the next run asks it."""
    run = db(4)
    with FakeOpenAI() as server:
        judge(run, server, "--limit", "2")
        with refused_url() as down:
            out = judge(run, down, "--limit", "1", "--max-retries", "0", ok=False)
        said = " ".join(out.output.split())
        assert out.exit_code == 1 and ("1 request could not be sent: no connection to the server could be made "
                                       "(after its retries); it is not stored, and the next run asks it") in said
        assert len(stored(run)) == 2
        judge(run, server)
    assert sorted((j.item_id, j.status) for j in stored(run)) == [(i, "verdict") for i in (1, 2, 3, 4)]


def test_a_server_refusing_every_request_stops_after_three_items(db):
    run = db(10)
    with FakeOpenAI(Reply(status=400, raw_body='{"error": {"message": "unknown field top_k"}}')) as server:
        out = judge(run, server, "--concurrency", "1", "--param", "top_k=40", ok=False)
        assert server.count == 3, "a 400 is not retried; three in a row stop the run"
    assert "3 items failed before the server gave any usable answer in this run" in " ".join(out.output.split())
    assert "HTTP 400" in out.output and [(j.item_id, j.status) for j in stored(run)] == [(k, "error") for k in (1, 2, 3)]
    assert "rejects these requests" in out.output and "is the server" not in out.output, "it answered: it is up"


def test_a_stop_on_rate_limits_says_so(db):
    run = db(10)
    with FakeOpenAI(Reply(status=429, headers={"retry-after": "121"})) as server:
        out = judge(run, server, "--concurrency", "1", ok=False)
    stop = " ".join(out.output.split())
    assert "3 items failed" in stop and "limits how often it is asked: wait as it says" in stop
    assert "the server asks to wait 121 s" in stop and "fails every request" not in stop


def test_a_stop_names_its_cause_once(db):
    run = db(10)
    with FakeOpenAI(Reply(text="")) as server:
        out = judge(run, server, "--concurrency", "1", "--max-retries", "1", ok=False)
    stop = " ".join(out.output.split())
    assert "3 items failed before the server gave any usable answer in this run (empty content (after 2 attempts)): " \
        "id 1, 2, 3." in stop and "e.g." not in stop
    assert "is up, but failed each request of this run: it fails every request, or these items are ones it cannot " \
        "judge" in stop


def test_items_that_failed_before_are_asked_last_and_do_not_stop_the_run(db):
    """Three items the server always rejects (prompts too long for its context) fail the first
    run between answers; a resumed run asks the items never asked first, then stores the three
    failures again instead of taking them for a server that is down."""
    run = db(10)
    too_long = Reply(status=400, raw_body='{"error": {"message": "maximum context length exceeded"}}')
    with FakeOpenAI(by_content={f"sentence {k}\n": too_long for k in (1, 3, 5)}) as server:
        first = judge(run, server, "--concurrency", "1", "--limit", "6", ok=False)
        assert "3 of 6 items ended in error" in first.output
        again = judge(run, server, "--concurrency", "1", ok=False)
        assert [r["messages"][1]["content"].split("\n")[1] for r in server.requests[6:]] == \
            [f"sentence {k}" for k in (6, 7, 8, 9, 1, 3, 5)]
    assert "in a row" not in again.output and "3 of 7 items ended in error" in again.output
    assert sorted(j.item_id for j in stored(run) if j.status == "verdict") == [1, 3, 5, 7, 8, 9, 10]


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("status", "says"), [(500, "items failed before the server gave any usable answer"),
                                              (401, "check the key")])
def test_a_run_stopped_with_requests_in_flight_ends_with_its_message(db, status, says):
    """The other requests in flight are abandoned as the run stops; the run still ends, at once.
    A failure is stored as the item's error (a 401 is the server refusing everyone: not)."""
    run = db(40)
    with FakeOpenAI(Reply(status=status, delay=0.05)) as server:
        out = judge(run, server, "--concurrency", "8", "--max-retries", "0", ok=False)
    assert out.exit_code == 1 and says in " ".join(out.output.split()) and f"HTTP {status}" in out.output
    assert runs(run)[0]["outcome"] in ("stopped", "refused")
    assert {j.status for j in stored(run)} == ({"error"} if status == 500 else set())


@pytest.mark.parametrize("concurrency", [1, 4])
def test_items_that_always_fail_at_the_start_of_a_run_do_not_block_the_next(db, concurrency):
    """Three items the server always fails (HTTP 500) come first: the run cannot tell them from
    a server failing everything and stops, but stores them as errors and names them; the next
    run asks the other items first and the three last, and finishes. (The other items are slow
    to answer, so at concurrency 4 the three fail before the first answer.)"""
    run = db(12)
    bad = {f"sentence {k}\n": Reply(status=500) for k in (0, 1, 2)}
    with FakeOpenAI(Reply(delay=0.2 if concurrency > 1 else 0), by_content=bad) as server:
        first = judge(run, server, "--concurrency", str(concurrency), "--max-retries", "0", ok=False)
        stop = " ".join(first.output.split())
        assert sorted((j.item_id, j.status) for j in stored(run)) == [(1, "error"), (2, "error"), (3, "error")]
        assert "3 items failed before the server gave any usable answer in this run (e.g. HTTP 500" in stop
        assert "id 1, 2, 3." in stop and "these items are ones it cannot judge" in stop
        listed = run("items", "--status", "error").output
        assert all(f"sentence {k}" in listed for k in (0, 1, 2))
        asked = server.count
        again = judge(run, server, "--concurrency", str(concurrency), "--max-retries", "0", ok=False)
        later = [r["messages"][1]["content"].split("\n")[1] for r in server.requests[asked:]]
    assert len(later) == 12 and all(later.index(f"sentence {k}") >= 9 - (concurrency - 1) for k in (0, 1, 2)), \
        "asked after the others (but for the requests in flight)"
    assert "items failed" not in again.output and "3 of 12 items ended in error" in again.output
    assert sorted(j.item_id for j in stored(run) if j.status == "verdict") == list(range(4, 13))


def test_a_limited_run_asks_items_never_asked_before_the_ones_that_failed(db):
    """`--limit N` runs one after another work through the items: an item that failed in an
    earlier run is asked again only where fewer than N items are left that never failed."""
    run = db(5)
    with FakeOpenAI(by_content={"sentence 0\n": Reply(status=500)}) as server:
        judge(run, server, "--limit", "2", "--max-retries", "0", ok=False)
        assert sorted((j.item_id, j.status) for j in stored(run)) == [(1, "error"), (2, "verdict")]
        asked = server.count
        judge(run, server, "--limit", "2", "--max-retries", "0")
        assert sorted(r["messages"][1]["content"].split("\n")[1] for r in server.requests[asked:]) == \
            ["sentence 2", "sentence 3"]
        asked = server.count
        judge(run, server, "--limit", "2", "--max-retries", "0", ok=False)  # the one item left that never failed, then the failed one
        assert sorted(r["messages"][1]["content"].split("\n")[1] for r in server.requests[asked:]) == \
            ["sentence 0", "sentence 4"]

@pytest.mark.parametrize("concurrency", ["1", "4"])
def test_a_stretch_of_failing_items_between_answers_does_not_stop_the_run(db, concurrency):
    """A server failing a share of the items (content filtered, prompts too long) fails a few in
    a row now and then: the run goes on, storing them as errors."""
    run = db(24)
    with FakeOpenAI(by_content={f"sentence {k}\n": Reply(text="") for k in (5, 6, 7, 8, 9, 15, 16, 17)}) as server:
        out = judge(run, server, "--concurrency", concurrency, "--max-retries", "0", ok=False)
    assert "Stopped" not in out.output and "8 of 24 items ended in error" in out.output
    assert len(stored(run)) == 24 and runs(run)[0]["outcome"] == "finished"


def test_failing_items_that_outlast_the_answers_in_flight_beside_them_do_not_stop_the_run(db):
    """At concurrency 16 the items that fail (slowly) are still in flight when the quick answers
    beside them have all come: their failures then arrive one after another, but the server
    answered while each was being asked, so none is a sign of a server that stopped working."""
    run = db(45)
    with FakeOpenAI(by_content={f"sentence {k}\n": Reply(status=500, delay=1.0) for k in range(0, 45, 3)}) as server:
        out = judge(run, server, "--concurrency", "16", "--max-retries", "0", ok=False)
    assert "Stopped" not in out.output and "15 of 45 items ended in error" in out.output


def test_a_server_that_stops_answering_mid_run_stops_it_after_ten_items(db):
    run = db(30)
    with FakeOpenAI(Reply(status=500)) as server:
        server.then(*[Reply()] * 5)
        out = judge(run, server, "--concurrency", "1", "--max-retries", "0", ok=False)
        assert server.count == 15
    stop = " ".join(out.output.split())
    assert "10 items in a row failed after the server had given 5 usable answers in this run (e.g. HTTP 500" in stop
    assert "id 6, 7, 8, 9, 10 and 5 more" in stop and "may have stopped answering anything but errors" in stop
    assert "every request" not in stop
    assert sorted(j.status for j in stored(run)) == ["error"] * 10 + ["verdict"] * 5


def test_failures_the_server_recovers_from_are_stored_as_the_items_errors(db):
    run = db(3)
    with FakeOpenAI() as server:
        server.then(*[Reply(status=500)] * 3)  # the first item fails all its attempts, then the server answers
        out = judge(run, server, "--concurrency", "1", ok=False)
    assert sorted(j.status for j in stored(run)) == ["error", "verdict", "verdict"]
    assert "1 of 3 items ended in error" in out.output


# -- 5. rubric confidence -------------------------------------------------------------------------

RUBRIC_TOKENS = [("```", 0.0), ("json", 0.0), ("\n", 0.0), ('{"', 0.0), ("score", 0.0), ("_answer", 0.0), ('":', 0.0),
                 (" ", -0.01), ("8", -0.2), ("5", -0.3), (",", 0.0), (' "', 0.0), ("score", 0.0), ("_reason", 0.0),
                 ("ing", 0.0), ('":', 0.0), (" 7", -0.5), ("0", -0.1), ("}", 0.0), ("\n", 0.0), ("```", 0.0)]


def test_rubric_confidence_is_the_probability_of_the_score_digits_not_of_the_brace(db):
    run = db(1, "rubric/reference", "zh", RUBRIC)
    text = "".join(token for token, _ in RUBRIC_TOKENS)
    with FakeOpenAI(Reply(text, logprobs=RUBRIC_TOKENS)) as server:
        judge(run, server, "--logprobs")
    (j,) = stored(run)
    assert json.loads(j.verdict) == {"score_answer": 85.0, "score_reasoning": 70.0}
    assert math.isclose(j.confidence, math.exp(-0.2 - 0.3 - 0.5 - 0.1)), "the digits of both scores, not '{'"


def test_no_confidence_without_logprobs_says_why(db):
    run = db(1, "rubric/reference", "zh", RUBRIC)
    with FakeOpenAI(Reply('{"score_answer": 85, "score_reasoning": 70}', logprobs=None)) as server:
        out = judge(run, server, "--logprobs")
    assert stored(run)[0].confidence is None
    assert "no confidence for 1 verdict: the server returned no logprobs" in out.output


def test_tokens_that_do_not_spell_the_output_give_no_confidence(db):
    run = db(1, "rubric/reference", "zh", RUBRIC)
    with FakeOpenAI(Reply('{"score_answer": 85, "score_reasoning": 70}', logprobs=[("{", 0.0), ("other", -1.0)])) as server:
        out = judge(run, server, "--logprobs")
    assert stored(run)[0].confidence is None and "do not spell the output" in out.output


# -- 6. sampling controls, reasoning models, the model that answered -----------------------------------


def test_sampling_controls_are_sent_and_make_the_judge(db, tmp_path):
    run = db(2)
    system = tmp_path / "system.txt"
    system.write_text("You are a strict grader.", encoding="utf-8")
    args = ("--seed", "7", "--top-p", "0.9", "--stop", "###", "--stop", "END", "--param", "top_k=40",
            "--param", 'chat_template_kwargs={"enable_thinking": false}', "--param", "mode=fast",
            "--system-prompt", str(system))
    with FakeOpenAI() as server:
        judge(run, server, *args)
        sent = server.requests[0]
        assert (sent["seed"], sent["top_p"], sent["stop"], sent["top_k"]) == (7, 0.9, ["###", "END"], 40)
        assert sent["chat_template_kwargs"] == {"enable_thinking": False} and sent["mode"] == "fast"
        assert sent["messages"][0] == {"role": "system", "content": "You are a strict grader."}
        judge(run, server, *args)
        assert server.count == 2, "the same controls are the same judge: resumed"
        system.write_text("You are a lenient grader.", encoding="utf-8")
        judge(run, server, *args)
        assert server.count == 4, "another system prompt is another judge configuration"
    first = stored(run)[0]
    assert first.system_prompt == "You are a strict grader."
    assert first.params["seed"] == 7 and first.params["extra"] == {"chat_template_kwargs": {"enable_thinking": False},
                                                                     "mode": "fast", "top_k": 40}
    assert len({j.judge_key for j in stored(run)}) == 2


def test_a_param_that_a_flag_owns_is_refused(db):
    run = db(1)
    out = run("judge", "--model", "m", "--param", "temperature=1", ok=False)
    assert out.exit_code == 1 and "--param temperature: set by --temperature" in out.output
    out = run("judge", "--model", "m", "--param", "stream=true", ok=False)
    assert out.exit_code == 1 and "--param stream: streaming is not supported" in out.output
    out = run("judge", "--model", "m", "--param", "top_k", ok=False)
    assert "write KEY=VALUE" in out.output


def test_a_server_that_streams_its_answers_is_said_to_and_not_asked_again(db):
    run = db(5)
    with FakeOpenAI(Reply(sse=True)) as server:
        out = judge(run, server, "--concurrency", "1", ok=False)
        assert server.count == 3, "a streamed answer is not retried: the server would stream again"
    stop = " ".join(out.output.split())
    assert "the server answered with a stream (server-sent events), which calibrate does not read" in stop
    assert "streams its answers: make it answer whole" in stop and "AttributeError" not in stop


def test_a_base_url_without_its_scheme_is_a_usage_error_before_any_request(db, monkeypatch):
    run = db(2)
    with FakeOpenAI() as server:
        bare = server.url.removeprefix("http://")
        out = judge(run, bare, ok=False)
        assert out.exit_code == 2 and f"'{bare}' is no server URL: write it with http:// or https:// (http://{bare})" \
            in " ".join(out.output.split())
        monkeypatch.setenv("OPENAI_BASE_URL", bare)
        out = run("judge", "--model", "fake-judge", ok=False)
        assert out.exit_code == 2 and "set by $OPENAI_BASE_URL" in out.output
        assert server.count == 0
    assert stored(run) == [] and runs(run) == []


def test_reasoning_mode_sends_no_temperature_and_max_completion_tokens(db):
    run = db(1)
    with FakeOpenAI(rejects_temperature=True) as server:
        judge(run, server, "--reasoning", "--max-tokens", "500")
        assert server.count == 1 and "temperature" not in server.requests[0]
        assert server.requests[0]["max_completion_tokens"] == 500 and "max_tokens" not in server.requests[0]
    assert stored(run)[0].params == {"reasoning": True, "max_completion_tokens": 500, "logprobs": False}
    out = run("judge", "--model", "m", "--reasoning", "--temperature", "0", ok=False)
    assert out.exit_code == 2 and "--reasoning sends no temperature" in out.output


def test_a_server_that_refuses_temperature_is_asked_again_as_a_reasoning_model(db):
    run = db(4)
    with FakeOpenAI(rejects_temperature=True) as server:
        out = judge(run, server, "--concurrency", "1")
        assert server.count == 5, "one refusal, then the four items"
        assert all("temperature" not in body for body in server.requests[1:])
        assert "judging as a reasoning model" in out.output and out.exit_code == 0
        assert "5 requests sent, 1 of them a retry" in out.output
        again = judge(run, server, "--concurrency", "1")
        assert server.count == 5, "a rerun resumes as a reasoning model and finds every item judged"
        assert "nothing to judge: fake-judge has judged all 4" in again.output
    judged = stored(run)
    assert [j.status for j in judged] == ["verdict"] * 4 and all(j.params["reasoning"] for j in judged)
    assert len({j.judge_key for j in judged}) == 1
    assert runs(run)[0]["params"]["reasoning"] is True
    assert runs(run)[0]["message"].startswith("switched to reasoning mode") and runs(run)[0]["switched_to_reasoning"]


@pytest.mark.timeout(120)
def test_a_switch_to_reasoning_mode_is_recorded_at_once_so_a_killed_run_is_resumed_in_it(db):
    """The run that switched is killed (kill -9) before it ends: its record says so already, and
    the next run resumes as a reasoning model without a refused request or a replacement note."""
    run = db(20)
    with FakeOpenAI(Reply(delay=0.3), rejects_temperature=True) as server:
        killed = subprocess.Popen([sys.executable, "-m", "calibrate", "judge", "--model", "fake-judge", "--base-url",
                                   server.url, "--concurrency", "1"], env={**os.environ, "CALIBRATE_DB": str(run.db)},
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 60
        while len(stored(run)) < 2 and time.time() < deadline:
            time.sleep(0.05)
        killed.kill()
        killed.wait(10)
        (record,) = runs(run)
        assert record["message"].startswith("switched to reasoning mode") and record["params"]["reasoning"] is True
        asked = server.count
        again = judge(run, server, "--concurrency", "1")
        assert all("temperature" not in body for body in server.requests[asked:])
    said = " ".join(again.output.split())
    assert "this run resumes as a reasoning model" in said and "in force of" not in said


def test_a_rerun_of_a_run_that_switched_to_reasoning_mode_resumes_in_it(db):
    """The same command again sends no request the server refuses, and claims to replace nothing."""
    run = db(8)
    with FakeOpenAI(rejects_temperature=True) as server:
        first = judge(run, server, "--limit", "4", "--concurrency", "4", "--max-tokens", "100")
        refused = sum("temperature" in body for body in server.requests)
        assert f"{4 + refused} requests sent, {refused} of them" in first.output
        asked = server.count
        again = judge(run, server, "--limit", "4", "--concurrency", "4", "--max-tokens", "100")
        assert server.count == asked + 4 and all("temperature" not in body for body in server.requests[asked:])
        assert all(body["max_completion_tokens"] == 100 for body in server.requests[asked:])
    said = " ".join(again.output.split())
    assert "this run resumes as a reasoning model" in said and "4 requests sent, 0 of them retries" in said
    assert "replace" not in said and "judging as a reasoning model" not in said
    assert "4 judgments stored, 4 items already judged" in said
    assert sorted(j.item_id for j in stored(run)) == list(range(1, 9))


@pytest.mark.timeout(60)
def test_a_run_that_switched_before_migration_0027_is_resumed_in_reasoning_mode(db):
    """A run recorded by the calibrate before migration 0027, which said it switched to reasoning
    mode only in its message: after the upgrade the next run starts in that mode."""
    run = db(8)
    with FakeOpenAI(rejects_temperature=True) as server:
        judge(run, server, "--limit", "4", "--concurrency", "1")
        as_made_before_0027(run.db)
        asked = server.count
        again = judge(run, server, "--concurrency", "1")
        assert server.count == asked + 4 and all("temperature" not in body for body in server.requests[asked:])
    assert "this run resumes as a reasoning model" in " ".join(again.output.split())
    assert [r["switched_to_reasoning"] for r in runs(run)] == [0, 1], "the upgrade read the earlier run's message"


def test_refusals_of_requests_sent_before_the_switch_to_reasoning_mode_are_asked_again(db):
    """At --concurrency 8 the first eight requests carry temperature; their refusals arrive
    after the switch and are asked again, as a reasoning model."""
    run = db(16)
    with FakeOpenAI(rejects_temperature=True) as server:
        out = judge(run, server, "--concurrency", "8")
        refused = sum("temperature" in body for body in server.requests)
        assert 1 <= refused <= 8 and server.count == 16 + refused
    assert out.exit_code == 0 and "judging as a reasoning model" in out.output
    assert [j.status for j in stored(run)] == ["verdict"] * 16 and all(j.params["reasoning"] for j in stored(run))


def test_a_400_about_a_value_is_not_taken_for_a_reasoning_model(db):
    run = db(1)
    with FakeOpenAI(Reply(status=400, raw_body='{"error": {"message": "max_tokens must be at most 4096"}}')) as server:
        out = judge(run, server, "--max-tokens", "9000", ok=False)
        assert server.count == 1
    assert "reasoning" not in out.output and "1 × HTTP 400" in out.output
    assert stored(run)[0].error.startswith("HTTP 400: ") and "max_tokens must be at most 4096" in stored(run)[0].error


def test_another_model_answering_is_warned_about_and_stored_beside_the_one_asked(db):
    run = db(3)
    with FakeOpenAI(Reply(model="/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf")) as server:
        out = run("judge", "--model", "gpt-4o", "--base-url", server.url)
    assert out.output.count("asked for model 'gpt-4o', the server reports") == 1, "warned once, as it happens"
    assert "reported model '/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf' for 3 answers" in out.output
    assert {(j.model, j.model_reported) for j in stored(run)} == {("gpt-4o", "/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf")}


@pytest.mark.parametrize(("asked", "reported", "same"), [
    ("gpt-4o", "gpt-4o-2024-08-06", True), ("fake-judge", "fake-judge-v1", True), ("Qwen2.5-0.5B", "qwen2.5-0.5b", True),
    ("qwen2.5-coder", "/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf", True), ("gpt-4o", "qwen2.5", False),
    ("gpt-4o", "gpt-4o-mini", False), ("llama3", "llama3:latest", True), ("gpt-4o-2024-08-06", "gpt-4o", True),
    ("gpt-4o", None, True),
])
def test_what_counts_as_the_model_asked_for(asked, reported, same):
    assert same_model(asked, reported) is same


# -- 7. progress -----------------------------------------------------------------------------------


def test_progress_is_a_plain_line_every_few_seconds_when_not_on_a_terminal(db):
    run = db(3)
    with FakeOpenAI(Reply(delay=0.4)) as server:
        out = judge(run, server, "--concurrency", "1", "--repeat", "2", "--progress-every", "1")
    lines = [line for line in out.output.splitlines() if line.startswith("judging: ")]
    assert len(lines) >= 2, out.output
    assert "3/3 items (6/6 samples)" in lines[-1] and "samples/s" in lines[-1]
    assert any("items (" in line and "/6 samples)" in line for line in lines[:-1])


def test_progress_on_a_terminal_is_a_bar_counting_items_and_samples_apart():
    from calibrate.model import Item

    items = [Item(k, "c3/lexical", "en", str(k), {}, None, f"h{k}") for k in range(2)]
    jobs = [Job(item, None, None, "key", sample) for item in items for sample in range(3)]
    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, width=120)
    summary = RunSummary()
    with JudgeProgress(console, jobs, summary) as progress:
        for job in jobs[:4]:
            progress.advance(job)
        assert progress.counts().startswith("1/2 items (4/6 samples)")
    assert "━" in screen.getvalue() and "4/6 samples" in screen.getvalue()


def test_the_config_of_a_plain_run_keeps_its_judge_key():
    """Options left unset add nothing to the parameters, so judges stored before keep resuming."""
    assert JudgeConfig(model="m").params() == {"temperature": 0.0, "max_tokens": None, "logprobs": False}


# -- 8. what a run says about itself --------------------------------------------------------------


def test_an_answer_left_only_in_the_models_reasoning_says_so_and_is_not_asked_again(db):
    """A thinking model that spends its tokens thinking answers with empty content and its text
    in reasoning_content: the error and the stop say where the answer went and what to do."""
    run = db(4)
    with FakeOpenAI(Reply(text=None, reasoning="The answer is yes.")) as server:
        out = judge(run, server, "--concurrency", "1", "--max-retries", "1", ok=False)
        assert server.count == 3, "asking again would think to the limit again"
    said = " ".join(out.output.split())
    assert "answers only in its reasoning (reasoning_content)" in said and "Raise --max-tokens" in said
    assert "fails every request" not in said and "empty content" not in said
    assert "run again to resume" in said, "one item is left"
    assert {j.error for j in stored(run)} == {"answer only in reasoning: the answer is only in the model's reasoning "
                                              "(reasoning_content), its content is empty: raise --max-tokens, or turn "
                                              "thinking off"}


def test_a_run_that_stops_once_every_item_is_asked_says_only_what_applies(db):
    run = db(3)
    with FakeOpenAI(Reply(status=500)) as server:
        out = judge(run, server, "--concurrency", "1", "--max-retries", "0", ok=False)
        assert server.count == 3
    said = " ".join(out.output.split())
    assert ("The failed items are stored as errors (calibrate items --status error lists them; the next run asks failed "
            "items again after those that never failed, and with --limit only where fewer of those are left).") in said
    assert "run again" not in said and "connection" not in said and "but for any" not in said
    assert runs(run)[0]["message"].endswith("of those are left).")


def test_a_run_that_left_requests_unsent_records_so(db):
    run = db(3)
    with FakeOpenAI() as server:
        judge(run, server, "--limit", "2")
    with refused_url() as down:
        judge(run, down, "--limit", "1", "--max-retries", "0", ok=False)
    record = runs(run)[0]
    assert record["outcome"] == "stopped"
    assert record["message"] == ("1 request reached no server (no connection could be made): its item is not stored, "
                                 "and the next run asks it.")


def test_an_output_cut_at_one_token_counts_it_in_the_singular(db):
    run = db(1)
    with FakeOpenAI(Reply("The", finish_reason="length", completion_tokens=1)) as server:
        judge(run, server, "--max-tokens", "1", ok=False)
    assert stored(run)[0].unparsed_reason == "truncated at 1 token"


@pytest.mark.timeout(120)
def test_two_runs_of_one_judge_name_with_two_configurations_at_once_say_so(db, tmp_path):
    """The first run (slow, in its own process) is under way when the second starts, and still
    when it ends: the second warns at its start, and each says at its end how the other's
    verdicts mix with its own."""
    run = db(30)
    with FakeOpenAI(Reply(delay=0.35)) as slow, FakeOpenAI(Reply("The answer is: no.")) as fast:
        env = {**os.environ, "CALIBRATE_DB": str(run.db)}
        first = subprocess.Popen([sys.executable, "-m", "calibrate", "judge", "--model", "fake-judge", "--base-url",
                                  slow.url, "--concurrency", "1"], env=env, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True)
        deadline = time.time() + 60
        while len(stored(run)) < 3 and time.time() < deadline:
            time.sleep(0.05)
        second = " ".join(judge(run, fast).output.split())
        output, _ = first.communicate(timeout=90)
    assert first.returncode == 0, output
    assert "warning: fake-judge is being judged now with another configuration too (run 1)" in second
    assert "run 1 of fake-judge, another configuration, ran beside this one" in second
    assert "it is still running, and replaces this run's verdicts as it answers their items" in second
    said = " ".join(output.split())
    assert "run 2 of fake-judge, another configuration, ran beside this one:" in said
    first_items = {j.item_id for j in stored(run) if j.verdict == "yes"}
    replaced = int(said.split("ran beside this one: ")[1].split(" of the 30 items")[0])
    in_force = Store(run.db).verdicts_in_force_of((item, "fake-judge") for item in range(1, 31))
    assert replaced == sum(in_force[item, "fake-judge"][1] == "no" for item in first_items) >= 3
