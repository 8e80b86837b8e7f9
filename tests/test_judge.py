"""The judge runner against a real local chat-completions server, through the openai client."""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from calibrate import cli as cli_module
from calibrate.demo import DEMO_DIR
from calibrate.store import Store
from calibrate.store.connection import database_fault
from tests.conftest import Calibrate, as_made_before_0028
from tests.fake_openai import FakeOpenAI, Reply, completion

LEX = {"notation": "river bank", "response": "the river bank"}


@pytest.fixture
def lexical_db(tmp_path) -> Calibrate:
    def make(n: int) -> Calibrate:
        source = tmp_path / "items.jsonl"
        source.write_text("".join(json.dumps({"id": k, "content": f"sentence {k}", **LEX}) + "\n" for k in range(n)))
        run = Calibrate(tmp_path / "judge.db")
        run("import", "jsonl", str(source), "--task", "c3/lexical", "--lang", "en")
        return run

    return make


def judge(run: Calibrate, server: FakeOpenAI, *extra: str, ok: bool = True):
    return run("judge", "--model", "fake-judge", "--base-url", server.url, "--max-retries", "2", *extra, ok=ok)


def judgments(run: Calibrate):
    return list(Store(run.db).judgments())


def test_judge_stores_everything_a_judgment_needs(lexical_db):
    run = lexical_db(3)
    with FakeOpenAI(Reply("The student is right.\nThe answer is: yes.")) as server:
        out = judge(run, server, "--max-tokens", "256")
    stored = judgments(run)
    assert len(stored) == 3 and server.count == 3
    j = stored[0]
    assert (j.status, j.verdict, j.raw_output) == ("verdict", "yes", "The student is right.\nThe answer is: yes.")
    assert j.model == "fake-judge" and j.model_reported == "fake-judge-v1"
    assert j.prompt_tokens == 100 and j.completion_tokens == 20 and j.latency_ms > 0
    assert j.template_id == "c3/en/lexical" and len(j.template_hash) == 12
    assert j.params == {"temperature": 0.0, "max_tokens": 256, "logprobs": False}
    # the request that judged this item (requests run concurrently: they reach the server in any order)
    (sent,) = [r for r in server.requests if r["messages"][1]["content"] == j.prompt]
    assert [m["role"] for m in sent["messages"]] == ["system", "user"]
    assert sent["temperature"] == 0 and sent["max_tokens"] == 256
    assert "c3/lexical" in out.output and "3 judgments stored" in out.output


def test_resumed_run_makes_no_repeated_call(lexical_db):
    run = lexical_db(5)
    with FakeOpenAI() as server:
        judge(run, server, "--limit", "2")
        assert server.count == 2
        out = judge(run, server)
        assert server.count == 5, "only the three unjudged items were asked"
        assert "2 already judged (no call)" in out.output
        judge(run, server)
        assert server.count == 5, "a complete run asks nothing again"
        judge(run, server, "--force")
        assert server.count == 10
    assert len(judgments(run)) == 10, "--force stores new judgments beside the old"


def test_changed_parameters_make_a_new_judge(lexical_db):
    run = lexical_db(2)
    with FakeOpenAI() as server:
        judge(run, server)
        judge(run, server, "--temperature", "0.7")
        assert server.count == 4


def test_unparseable_output_is_kept_and_flagged(lexical_db):
    run = lexical_db(1)
    with FakeOpenAI(Reply("I am not sure what to say.")) as server:
        judge(run, server, ok=False)
    (j,) = judgments(run)
    assert j.status == "unparsed" and j.verdict is None and j.raw_output == "I am not sure what to say."


def test_a_run_none_of_whose_outputs_parsed_fails_and_says_why(lexical_db):
    """The usual cause is a model that does not follow the template (or the wrong model): the
    run says so and exits 1; when most outputs did not parse, it warns."""
    run = lexical_db(4)
    with FakeOpenAI(Reply("Let me think about whether the answer")) as server:
        out = judge(run, server, ok=False)
        text = " ".join(out.output.split())
        assert out.exit_code == 1 and "none of the 4 outputs of this run parsed as a verdict" in text
        assert f"4 of the 4 outputs did not parse as a verdict (4 × {judgments(run)[0].unparsed_reason})" in text
        assert "calibrate render ID" in text and "the template's answer format" in text
        assert "nothing to judge" in judge(run, server).output, "stored: a rerun asks nothing"
        server.by_content = {"sentence 3": Reply("The answer is: yes.")}
        most = judge(run, server, "--force")
    assert "3 of the 4 outputs did not parse as a verdict" in " ".join(most.output.split()) and "Error" not in most.output


FAULTS = {
    "429 with retry-after, then ok": ([Reply(status=429, headers={"retry-after": "0.1"})], "verdict", 2),
    "429 with retry-after as a past HTTP date, then ok":
        ([Reply(status=429, headers={"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"})], "verdict", 2),
    "429 asking to wait a day: not asked again": ([Reply(status=429, headers={"retry-after": "86400"})], "error", 1),
    "429 asking to wait until 2099: not asked again":
        ([Reply(status=429, headers={"retry-after": "Wed, 21 Oct 2099 07:28:00 GMT"})], "error", 1),
    "500, then ok": ([Reply(status=500)], "verdict", 2),
    "503 every time": ([Reply(status=503)] * 3, "error", 3),
    "malformed body, then ok": ([Reply(raw_body="{not json")], "verdict", 2),
    "malformed body every time": ([Reply(raw_body="{not json")] * 3, "error", 3),
    "no choices in body": ([Reply(raw_body='{"id": "x", "object": "chat.completion"}')] * 3, "error", 3),
    "empty content every time": ([Reply(text="")] * 3, "error", 3),
    "empty content, then ok": ([Reply(text="")], "verdict", 2),
    "content of only whitespace every time": ([Reply(text=" \n\t ")] * 3, "error", 3),
}


@pytest.mark.parametrize("fault", list(FAULTS))
def test_faults_are_retried_then_stored_as_errors(lexical_db, fault):
    script, status, requests = FAULTS[fault]
    run = lexical_db(1)
    with FakeOpenAI() as server:
        server.then(*script)
        out = judge(run, server, "--concurrency", "1", ok=status != "error")
        assert server.count == requests
    (j,) = judgments(run)
    assert j.status == status
    if status == "error":
        assert j.verdict is None and j.error
        assert out.exit_code == 1 and "1 of 1 item ended in error" in out.output, "a failed run does not look like success"
        assert "1 judgment stored (1 of them errors)" in out.output
        assert f"1 × {j.error.split(':')[0]}" in out.output, "the reasons are printed, grouped"
        if "not asked again" in fault:
            assert "the server asks to wait" in j.error


def test_timeout_is_an_error_and_the_run_goes_on(lexical_db):
    run = lexical_db(2)
    with FakeOpenAI(by_content={"sentence 0": Reply(delay=3.0)}) as server:
        out = judge(run, server, "--timeout", "0.3", "--max-retries", "1", ok=False)
    assert out.exit_code == 1 and "1 of 2 items ended in error" in out.output
    by_status = {j.status: j for j in judgments(run)}
    assert set(by_status) == {"error", "verdict"}
    assert "timed out" in by_status["error"].error


def test_a_refused_connection_is_no_judgment_of_the_item_and_exits_1(lexical_db):
    run = lexical_db(1)
    out = run("judge", "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--max-retries", "0", ok=False)
    assert judgments(run) == [] and "0 judgments stored" in out.output
    assert out.exit_code == 1 and "1 × connection failed" in out.output and "1 request could not be sent" in out.output


@pytest.mark.parametrize(("status", "hint"), [(401, "check the key in $OPENAI_API_KEY"), (404, "has no model 'fake-judge'")])
def test_a_refusing_server_stops_the_run_with_the_reason(lexical_db, status, hint):
    run = lexical_db(5)
    with FakeOpenAI(Reply(status=status)) as server:
        out = judge(run, server, "--concurrency", "1", ok=False)
        assert server.count == 1, "no point asking about the other items"
    assert out.exit_code != 0 and f"HTTP {status}" in out.output and hint in out.output
    assert judgments(run) == [], "a refusal is not stored as a judgment of the item"


def test_errors_are_retried_by_the_next_run(lexical_db):
    run = lexical_db(1)
    with FakeOpenAI() as server:
        server.then(*[Reply(status=500)] * 3)
        judge(run, server, ok=False)
        judge(run, server)
    assert [j.status for j in judgments(run)] == ["error", "verdict"]


def test_api_key_is_never_written_anywhere(lexical_db, monkeypatch, tmp_path):
    secret = "sk-test-DO-NOT-STORE-4f9a2b"
    monkeypatch.setenv("MY_JUDGE_KEY", secret)
    run = lexical_db(2)
    echo = f'{{"error": {{"message": "Incorrect API key provided: {secret}"}}}}'
    with FakeOpenAI() as server:
        server.then(*[Reply(status=500, raw_body=echo)] * 3, Reply(f"The answer is: yes. (key {secret})"))
        out = judge(run, server, "--api-key-env", "MY_JUDGE_KEY", "--concurrency", "1", ok=False)
        batch = tmp_path / "batch.jsonl"
        judge(run, server, "--api-key-env", "MY_JUDGE_KEY", "--force", "--export-batch", str(batch))
        listed = run("items", "--status", "error", "--json")
    assert server.headers[0]["Authorization"] == f"Bearer {secret}", "the key was used"
    errors = [j.error for j in judgments(run) if j.error]
    assert errors and "Incorrect API key provided: ***" in errors[0], "the echoed body is stored, the key blanked"
    assert any("(key ***)" in (j.raw_output or "") for j in judgments(run))
    assert secret not in out.output and secret not in listed.output
    for path in [*Path(run.db).parent.glob("judge.db*"), batch]:
        assert secret.encode() not in path.read_bytes(), path


def test_credentials_in_the_base_url_are_never_stored_or_printed(lexical_db, monkeypatch):
    run = lexical_db(1)
    with FakeOpenAI() as server:
        host = server.url.removeprefix("http://")
        url = f"http://judge-user:hunter2-pass@{host}"
        server.then(*[Reply(status=500, raw_body='{"error": {"message": "bad password hunter2-pass"}}')] * 3)
        out = run("judge", "--model", "fake-judge", "--base-url", url, "--max-retries", "2", ok=False)
        monkeypatch.setenv("OPENAI_BASE_URL", url)
        shown = run("config")
    assert f"http://***@{host}" in out.output
    for text in (out.output, shown.output, Path(run.db).read_bytes().decode("utf-8", "replace")):
        assert "hunter2-pass" not in text and "judge-user" not in text


def test_the_same_model_name_on_another_server_replaces_the_first_servers_verdicts_and_says_so(lexical_db):
    """Another server is another configuration of the judge name: it is asked too, and its run
    says at its start and in its summary that its verdicts replace the first server's (which stay
    stored); `status` tells the two runs apart by their server."""
    run = lexical_db(2)
    with FakeOpenAI() as first, FakeOpenAI(Reply("The answer is: no.")) as second:
        judge(run, first)
        out = judge(run, second)
        assert first.count == 2 and second.count == 2, "the second server is asked too"
        again = judge(run, second, "--force")
    text = " ".join(out.output.split())
    replaced = f"2 verdicts in force of fake-judge from another configuration (2 from server 127.0.0.1:{first.port})"
    assert "0 already judged" in text
    assert f"this run replaces {replaced}, each as it answers its item" in text
    assert f"this run replaced {replaced}; the earlier judgments stay in the history but no longer count" in text
    assert "give the new configuration a name of its own (--judge-name NAME)" in text
    assert "in force of" not in again.output, "the same configuration asked again replaces no other"
    assert sorted(j.verdict for j in judgments(run)) == ["no"] * 4 + ["yes"] * 2, "the first server's stay stored"
    runs = [line.split() for line in run("status").output.splitlines() if "fake-judge" in line]
    assert [row[2].rpartition(":")[2] for row in runs] == [str(second.port)] * 2 + [str(first.port)], \
        "(at 80 columns, the host loses its middle to fit)"


def imported_as_fake_judge(tmp_path) -> Calibrate:
    """Three lexical items whose judgments ("yes") are imported under the judge name fake-judge."""
    source = tmp_path / "items.jsonl"
    source.write_text("".join(json.dumps({"id": k, "content": f"sentence {k}", "out": "The answer is: yes.", **LEX}) + "\n"
                              for k in range(3)))
    run = Calibrate(tmp_path / "judge.db")
    run("import", "jsonl", str(source), "--task", "c3/lexical", "--lang", "en", "--judge-output", "out",
        "--judge-name", "fake-judge")
    return run


def test_a_run_says_it_replaces_imported_verdicts_of_its_name_and_those_of_other_parameters(tmp_path):
    """Judgments imported under the judge's name are another configuration too; so are those of
    other request parameters. A limited run counts only the items it asks."""
    run = imported_as_fake_judge(tmp_path)
    with FakeOpenAI(Reply("The answer is: no.")) as server:
        limited = " ".join(judge(run, server, "--limit", "2").output.split())
        longer = " ".join(judge(run, server, "--max-tokens", "64").output.split())
    assert "this run replaces 2 verdicts in force of fake-judge from another configuration (2 imported)" in limited
    assert ("this run replaces 3 verdicts in force of fake-judge from another configuration "
            "(2 from max_tokens unset; 1 imported)") in longer


def test_a_failed_call_leaves_the_verdict_in_force_and_is_asked_again(tmp_path):
    """Imported verdicts of fake-judge, then a run of fake-judge whose calls fail on two items:
    those keep the imported verdict in force (report and status count it, as before the run),
    the run says so, and the next run asks those two again; its verdicts replace them."""
    run = imported_as_fake_judge(tmp_path)
    no, failed = Reply("The answer is: no."), Reply(status=500)
    with FakeOpenAI(no, by_content={"sentence 0\n": [failed, no], "sentence 1\n": [failed, no]}) as server:
        out = " ".join(judge(run, server, "--max-retries", "0", ok=False).output.split())
        assert ("this run replaced 1 verdict in force of fake-judge from another configuration (1 imported); 2 failed "
                "calls left the verdict in force of the other configuration (a failed call never replaces a verdict); "
                "the next run asks failed items again after those that never failed, and with --limit only where fewer "
                "of those are left; the earlier judgments stay in the history") in out, out
        store = Store(run.db)
        assert [store.verdict_in_force(item.id, "fake-judge")["verdict"] for item in store.items()] == ["yes", "yes", "no"]
        store.close()
        status = json.loads(run("status", "--json").output)
        assert [(c["judged"], c["errors"]) for c in status] == [(3, 0)]
        assert [r["errors"] for r in json.loads(run("status", "--runs", "--json").output)] == [2], \
            "the failed calls are counted with their run"
        asked = server.count
        judge(run, server, "--max-retries", "0")
        assert server.count == asked + 2, "the items whose call failed are asked again, and only those"
    store = Store(run.db)
    assert [store.verdict_in_force(item.id, "fake-judge")["verdict"] for item in store.items()] == ["no", "no", "no"]
    store.close()


def test_the_upgrade_puts_back_in_force_the_verdicts_failed_calls_displaced(tmp_path):
    """A database where the calibrate before migration 0028 let two failed calls displace
    imported verdicts (the items counted as errors): opening it upgrades it, and those verdicts
    are in force again, in the counts too; the item the run answered keeps its answer."""
    run = imported_as_fake_judge(tmp_path)
    no, failed = Reply("The answer is: no."), Reply(status=500)
    with FakeOpenAI(no, by_content={"sentence 0\n": failed, "sentence 1\n": failed}) as server:
        judge(run, server, "--max-retries", "0", ok=False)
    as_made_before_0028(run.db)
    conn = sqlite3.connect(run.db)
    assert conn.execute("SELECT status FROM verdicts_in_force ORDER BY item_id").fetchall() == [
        ("error",), ("error",), ("verdict",)], "as the calibrate before 0028 left it"
    conn.close()
    upgraded = run("status", "--json")
    assert "upgrading" in upgraded.stderr
    assert [(c["judged"], c["errors"]) for c in json.loads(upgraded.stdout)] == [(3, 0)]
    store = Store(run.db)
    assert [store.verdict_in_force(item.id, "fake-judge")["verdict"] for item in store.items()] == ["yes", "yes", "no"]
    key = {j.verdict: j.judge_key for j in store.judgments() if j.status == "verdict"}
    assert store.configuration_counts() == sorted([("c3/lexical", "en", "", "fake-judge", key["yes"], 2),
                                                   ("c3/lexical", "en", "", "fake-judge", key["no"], 1)])
    store.close()


def test_importing_a_batchs_results_says_which_verdicts_of_another_configuration_they_replaced(tmp_path):
    run = imported_as_fake_judge(tmp_path)
    batch_in, batch_out = tmp_path / "requests.jsonl", tmp_path / "results.jsonl"
    run("judge", "--model", "fake-judge", "--limit", "2", "--export-batch", str(batch_in))
    lines = [{"custom_id": r["custom_id"], "response": {"status_code": 200, "body": completion(r["body"], Reply())}}
             for r in map(json.loads, batch_in.read_text().splitlines())]
    batch_out.write_text("".join(json.dumps(line) + "\n" for line in lines))
    out = " ".join(run("judge", "--model", "fake-judge", "--import-batch", str(batch_out)).output.split())
    assert ("this run replaced 2 verdicts in force of fake-judge from another configuration (2 imported); the "
            "earlier judgments stay in the history but no longer count") in out, out
    again = run("judge", "--model", "fake-judge", "--import-batch", str(batch_out), "--force")
    assert "in force of" not in again.output, "the same configuration's results replace no other"


def test_logprobs_give_the_verdict_probability(lexical_db):
    run = lexical_db(1)
    reply = Reply("The answer is: yes.", logprobs=[("The", -0.01), (" answer", -0.01), (" is", 0.0), (":", 0.0), (" yes", -0.2), (".", 0.0)])
    with FakeOpenAI(reply) as server:
        judge(run, server, "--logprobs")
        assert server.requests[0]["logprobs"] is True and server.requests[0]["top_logprobs"] == 5
    (j,) = judgments(run)
    assert math.isclose(j.confidence, math.exp(-0.2))


def test_a_server_that_drops_logprobs_is_tolerated(lexical_db):
    run = lexical_db(1)
    with FakeOpenAI(Reply("The answer is: no.", logprobs=None)) as server:
        judge(run, server, "--logprobs")
    (j,) = judgments(run)
    assert j.verdict == "no" and j.confidence is None


def test_rule_judge_parses_superglue_responses_offline(demo_db):
    store = Store(demo_db)
    rule = {store.item(j.item_id).task + "/" + store.item(j.item_id).source_id: j for j in store.judgments(judge="rule")}
    assert len(rule) == 12
    boolq_wrong = rule["superglue/boolq/1"]
    assert (boolq_wrong.verdict, boolq_wrong.correct) == ("True", 0)
    assert (rule["superglue/copa/0"].verdict, rule["superglue/copa/0"].correct) == ("1", 1)
    assert (rule["superglue/record/0/0"].verdict, rule["superglue/record/0/0"].correct) == ("correct", 1)
    assert (rule["superglue/multirc/0/0/1"].verdict, rule["superglue/multirc/0/0/1"].correct) == ("False", 1)
    out = Calibrate(demo_db)("judge", "--judge", "rule")
    assert "nothing to judge: rule has judged all 14 (--force judges them again)" in out.output  # 12 of sdm-alpha, 2 of sdm-beta


def test_the_rule_judge_reads_a_record_answer_as_the_passage_entity_it_names(tmp_path):
    passage = "Tracy Morgan hospitalized after crash. @highlight\nThe comedian was in a limo in New Jersey."
    gold = {"start": 80, "end": 89, "text": "New Jersey"}
    answers = ["The answer is New Jersey.", "The answer is: Tracy Morgan", "Tracy Morgan and New Jersey", "Bob"]
    (tmp_path / "val.jsonl").write_text(json.dumps({"idx": 0, "source": "x", "passage": {
        "text": passage, "entities": [{"start": 0, "end": 11}, {"start": 80, "end": 89}]}, "qas": [
        {"query": f"Q{q}: the limo was in @placeholder.", "idx": q, "answers": [gold]} for q in range(len(answers))]}) + "\n")
    (tmp_path / "llm").mkdir()
    (tmp_path / "llm" / "record.jsonl").write_text("".join(
        json.dumps({"idx": {"passage": 0, "query": q}, "response": text}) + "\n" for q, text in enumerate(answers)))
    (tmp_path / "copa.jsonl").write_text((DEMO_DIR / "superglue" / "copa.jsonl").read_text())
    (tmp_path / "llm" / "copa.jsonl").write_text(json.dumps({"idx": 0, "response": "２"}) + "\n")
    run = Calibrate(tmp_path / "rec.db")
    run("import", "superglue", "--task", "record", str(tmp_path / "val.jsonl"), "--predictions", str(tmp_path / "llm" / "record.jsonl"))
    run("import", "superglue", "--task", "copa", str(tmp_path / "copa.jsonl"), "--predictions", str(tmp_path / "llm" / "copa.jsonl"))
    run("judge", "--judge", "rule")
    store = Store(run.db)
    got = {store.item(j.item_id).fields["response"]: (j.verdict, j.correct, j.unparsed_reason) for j in store.judgments()}
    assert got == {
        "The answer is New Jersey.": ("correct", 1, None),
        "The answer is: Tracy Morgan": ("incorrect", 0, None),
        "Tracy Morgan and New Jersey": (None, None, "names more than one entity: Tracy Morgan, New Jersey"),
        "Bob": (None, None, "names none of the passage's entities"),
        "２": ("2", 0, None),  # COPA's full-width digit: the gold is choice 1
    }


def test_a_rule_judge_run_is_recorded_as_a_servers_run_is(tmp_path):
    sg = DEMO_DIR / "superglue"
    run = Calibrate(tmp_path / "rule.db")
    run("import", "superglue", "--task", "boolq", str(sg / "boolq.jsonl"), "--predictions",
        str(sg / "boolq.predictions.jsonl"), "--system", "my-llm")
    stored = len(judgments(run)) or None
    run("judge", "--judge", "rule")
    run("judge", "--judge", "rule")  # nothing left to judge: no run
    (record,) = json.loads(run("status", "--runs", "--json").output)
    n = len(judgments(run))
    assert stored is None and n > 0
    assert (record["judge_name"], record["server"], record["outcome"], record["items"], record["stored"]) == \
        ("rule", "", "finished", n, n)
    assert record["verdicts"] + record["unparsed"] == n and record["finished_at"] and record["requests"] == 0
    (row,) = [line.split() for line in run("status").output.splitlines() if line.split()[1:2] == ["rule"]]
    assert row[2:5] == ["(offline)", "finished", f"{n}/{n}"]


def test_batch_round_trip(lexical_db, tmp_path):
    run = lexical_db(3)
    batch_in, batch_out = tmp_path / "requests.jsonl", tmp_path / "results.jsonl"
    with FakeOpenAI() as server:  # the batch is run by the same server that is asked later
        out = judge(run, server, "--export-batch", str(batch_in))
        assert "wrote 3 requests" in out.output
        requests = [json.loads(line) for line in batch_in.read_text().splitlines()]
        assert {r["url"] for r in requests} == {"/v1/chat/completions"} and all(r["method"] == "POST" for r in requests)
        # what OpenAI's Batch API (and vLLM's run-batch) write back, one line per request
        lines = []
        for n, r in enumerate(requests):
            if n == 2:
                lines.append({"id": f"b{n}", "custom_id": r["custom_id"], "response": {"status_code": 500, "body": {}}, "error": None})
                continue
            body = completion(r["body"], Reply("The answer is: no." if n else "The answer is: yes."))
            lines.append({"id": f"b{n}", "custom_id": r["custom_id"], "response": {"status_code": 200, "request_id": f"r{n}", "body": body}, "error": None})
        batch_out.write_text("".join(json.dumps(line) + "\n" for line in lines))
        out = judge(run, server, "--import-batch", str(batch_out), ok=False)
        assert out.exit_code == 1 and "1 × batch error" in out.output
        stored = sorted(judgments(run), key=lambda j: j.item_id)
        assert [(j.status, j.verdict) for j in stored] == [("verdict", "yes"), ("verdict", "no"), ("error", None)]
        assert stored[0].model_reported == "fake-judge-v1" and stored[0].prompt.startswith("This is a sentence")
        judge(run, server)
        assert server.count == 1, "only the batch's failed item is asked again"


def test_batch_results_give_one_judgment_per_request_and_name_the_requests_without_one(lexical_db, tmp_path):
    """A result file missing a request, repeating one and holding a failed one: one judgment
    per request (a verdict over an error, else the last line), counted by item; the failure's
    own message kept; the request without a result named, and found once its result comes."""
    run = lexical_db(10)
    batch_in, batch_out, later = tmp_path / "requests.jsonl", tmp_path / "results.jsonl", tmp_path / "errors.jsonl"
    run("judge", "--model", "fake-judge", "--limit", "6", "--export-batch", str(batch_in))
    requests = [json.loads(line) for line in batch_in.read_text().splitlines()]

    def result(r, reply="The answer is: yes.", status=200):
        body = completion(r["body"], Reply(reply)) if status == 200 else {"error": {"message": "boom"}}
        return json.dumps({"custom_id": r["custom_id"], "response": {"status_code": status, "body": body}, "error": None})

    lines = [result(requests[0]), result(requests[1], status=500), result(requests[2]),
             result(requests[3], "The answer is: no."), result(requests[3], "The answer is: yes."),
             result(requests[4]), result(requests[4], status=500)]  # requests[5] has no result
    batch_out.write_text(lines[0] + "\n")  # the first result only: the rest are named, and the command fails
    out = run("judge", "--model", "fake-judge", "--import-batch", str(batch_out), ok=False)
    text = " ".join(out.output.split())
    assert out.exit_code == 1 and "1 judgment" in text and "have no result yet: items 1, 2, 3, 4, 5." in text
    assert "Error: 5 of the batch's 6 requests have no result yet (named above)" in text, text
    batch_out.write_text("\n".join(lines) + "\n")
    out = run("judge", "--model", "fake-judge", "--import-batch", str(batch_out), ok=False)
    text = " ".join(out.output.split())
    assert out.exit_code == 1 and "4 judgments stored (1 of them errors)" in text, text
    assert "1 × batch error e.g. batch error: HTTP 500: boom" in text
    assert "2 requests of " in text and "have more than one result line; one judgment per request was stored, of " \
           "the last line that is not an error (item 3 on lines 4, 5: kept line 5, item 4 on lines 6, 7: kept line 6)" in text
    assert f"1 of the 6 requests of the batch written to {batch_in} on " in text and "UTC has no result yet: item 5." in text
    stored = {j.item_id: (j.status, j.verdict, j.error) for j in judgments(run)}
    assert stored == {1: ("verdict", "yes", None), 2: ("error", None, "batch error: HTTP 500: boom"),
                      3: ("verdict", "yes", None), 4: ("verdict", "yes", None), 5: ("verdict", "yes", None)}

    later.write_text(result(requests[5], "The answer is: no.") + "\n")  # e.g. the batch's error file, retried
    out = run("judge", "--model", "fake-judge", "--import-batch", str(later))
    assert "1 judgment" in out.output and "no result" not in out.output and out.exit_code == 0


def test_batch_results_in_a_database_that_did_not_write_the_batch_say_what_cannot_be_told(lexical_db, tmp_path):
    run = lexical_db(2)
    before = tmp_path / "before.db"
    shutil.copy(run.db, before)
    batch_in = tmp_path / "requests.jsonl"
    run("judge", "--model", "fake-judge", "--export-batch", str(batch_in))
    (request, _) = [json.loads(line) for line in batch_in.read_text().splitlines()]
    line = {"custom_id": request["custom_id"], "response": {"status_code": 200, "body": completion(request["body"], Reply())}}
    (tmp_path / "out.jsonl").write_text(json.dumps(line) + "\n")
    out = Calibrate(before)("judge", "--model", "fake-judge", "--import-batch", str(tmp_path / "out.jsonl"))
    assert "no batch written by --export-batch into this database holds the requests of" in " ".join(out.output.split())


def test_batch_from_another_configuration_is_refused(lexical_db, tmp_path):
    run = lexical_db(1)
    batch_in = tmp_path / "requests.jsonl"
    run("judge", "--model", "fake-judge", "--export-batch", str(batch_in))
    request = json.loads(batch_in.read_text())
    line = {"custom_id": request["custom_id"], "response": {"status_code": 200, "body": completion(request["body"], Reply())}}
    (tmp_path / "out.jsonl").write_text(json.dumps(line) + "\n")
    out = run("judge", "--model", "other-model", "--import-batch", str(tmp_path / "out.jsonl"), ok=False)
    assert out.exit_code != 0 and "out.jsonl:1" in out.output and "matches no item" in out.output


def test_a_disk_filling_during_a_run_leaves_its_record_counting_only_the_judgments_kept(lexical_db, monkeypatch):
    run = lexical_db(6)

    class DiskFillsStore(Store):
        """The third judgment's commit fails as on a full disk (SQLite writes a transaction's
        pages to the -wal as it commits), and SQLite rolls that judgment back."""
        written = 0

        def add_judgments(self, judgments):
            added = super().add_judgments(judgments)
            DiskFillsStore.written += 1
            if DiskFillsStore.written == 3:
                execute = self.conn.execute

                def commit_fails(sql, parameters=()):
                    if sql != "COMMIT":
                        return execute(sql, parameters)
                    del self.conn.execute  # once
                    full = sqlite3.OperationalError("database or disk is full")
                    full.sqlite_errorcode = 13
                    raise database_fault(self.path, full)

                self.conn.execute = commit_fails
            return added

    monkeypatch.setattr(cli_module, "Store", DiskFillsStore)
    with FakeOpenAI() as server:
        out = judge(run, server, "--concurrency", "1", ok=False)
    monkeypatch.undo()
    assert out.exit_code == 1 and f"Error: {run.db}: the disk is full" in out.output, out.output
    (record,) = json.loads(run("status", "--runs", "--json").output)
    assert len(judgments(run)) == 2 and (record["stored"], record["verdicts"]) == (2, 2)


@pytest.mark.parametrize("sent", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "kill"])
def test_an_interrupted_run_keeps_completed_judgments_and_resume_finishes(lexical_db, sent):
    run = lexical_db(12)
    with FakeOpenAI(Reply(delay=0.25)) as server:
        env = {**os.environ, "CALIBRATE_DB": str(run.db)}
        cmd = [sys.executable, "-m", "calibrate", "judge", "--model", "fake-judge", "--base-url", server.url, "--concurrency", "1"]
        # Ctrl-C as in a terminal: a suite started in the background (`cmd &` in a script) passes
        # SIGINT on ignored, and the judge would rightly keep ignoring it
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        deadline = time.time() + 20
        while len(judgments(run)) < 3 and time.time() < deadline:
            time.sleep(0.05)
        proc.send_signal(sent)
        output, _ = proc.communicate(timeout=20)
        kept = len(judgments(run))
        assert proc.returncode == 1 and f"interrupted: {kept} judgments were stored; run again to resume" in output
        assert 3 <= kept < 12
        (record,) = json.loads(run("status", "--runs", "--json").output)
        assert (record["outcome"], record["stored"], record["items"]) == ("interrupted", kept, 12)
        asked_before_resume = server.count
        judge(run, server)
        assert len(judgments(run)) == 12
        assert server.count - asked_before_resume == 12 - kept, "the resumed run asks only for what is missing"


def test_repeat_stores_k_samples_per_item_under_one_judge_and_resumes(lexical_db):
    run = lexical_db(4)
    with FakeOpenAI() as server:
        first = judge(run, server, "--repeat", "3", "--limit", "2")
        assert server.count == 6, "2 items x 3 samples"
        assert "samples judged (3 per item)" in first.output, "the table counts samples, and says so"
        out = judge(run, server, "--repeat", "3")
        assert server.count == 12, "only the 2 items not yet asked, 3 samples each"
        assert "6 already judged (no call)" in out.output and "6 samples already judged (skipped)" in out.output
        judge(run, server, "--repeat", "3")
        assert server.count == 12, "a complete run asks nothing again"
        judge(run, server, "--repeat", "4")
        assert server.count == 16, "a fourth sample per item, under the same judge"
        judge(run, server)
        assert server.count == 16, "a plain run is sample 0 of the same judge"
    stored = judgments(run)
    assert len(stored) == 16 and len({j.judge_key for j in stored}) == 1
    per_item = {}
    for j in stored:
        per_item.setdefault(j.item_id, []).append(j.sample)
    assert all(sorted(samples) == [0, 1, 2, 3] for samples in per_item.values())


def test_repeat_asks_again_a_sample_that_failed(lexical_db):
    run = lexical_db(1)
    with FakeOpenAI(by_content={"sentence 0": [Reply(status=500)] * 3 + [Reply()]}) as server:
        failed = judge(run, server, "--repeat", "2", "--concurrency", "1", ok=False)
        assert failed.exit_code == 1 and [j.status for j in judgments(run)].count("error") == 1
        judge(run, server, "--repeat", "2")
    assert sorted((j.sample, j.status) for j in judgments(run)) == [(0, "error"), (0, "verdict"), (1, "verdict")]


def test_with_repeats_one_failing_item_does_not_stop_the_run(lexical_db):
    """Its samples failing one after another are one item failing, not three."""
    run = lexical_db(8)
    with FakeOpenAI(Reply(delay=0.05), by_content={"sentence 3": Reply(status=500)}) as server:
        out = judge(run, server, "--repeat", "3", "--temperature", "0.7", "--concurrency", "4", "--max-retries", "0",
                    ok=False)
    assert "Stopped" not in out.output and "3 of 24 samples ended in error" in out.output, "it counts samples"
    assert sorted((j.item_id, j.status) for j in judgments(run) if j.status == "error") == [(4, "error")] * 3
    assert [j.status for j in judgments(run)].count("verdict") == 21


def test_batch_round_trip_with_repeats(lexical_db, tmp_path):
    run = lexical_db(2)
    batch_in, batch_out = tmp_path / "requests.jsonl", tmp_path / "results.jsonl"
    run("judge", "--model", "fake-judge", "--repeat", "2", "--export-batch", str(batch_in))
    requests = [json.loads(line) for line in batch_in.read_text().splitlines()]
    assert len(requests) == 4
    lines = [{"id": f"b{n}", "custom_id": r["custom_id"], "error": None,
              "response": {"status_code": 200, "body": completion(r["body"], Reply())}} for n, r in enumerate(requests)]
    batch_out.write_text("".join(json.dumps(line) + "\n" for line in lines))
    run("judge", "--model", "fake-judge", "--repeat", "2", "--import-batch", str(batch_out))
    assert sorted((j.item_id, j.sample) for j in judgments(run)) == [(1, 0), (1, 1), (2, 0), (2, 1)]
    out = run("judge", "--model", "fake-judge", "--repeat", "2", "--import-batch", str(batch_out))
    assert "4 samples already judged" in out.output and len(judgments(run)) == 4


def test_a_bad_batch_file_is_a_message_naming_the_line(lexical_db, tmp_path):
    run = lexical_db(1)
    bad = tmp_path / "results.jsonl"
    bad.write_bytes(b'{"custom_id": "nope", "response": {}}\n\xff\xfe\n')
    out = run("judge", "--model", "fake-judge", "--import-batch", str(bad), ok=False)
    assert out.exit_code == 1 and f"{bad}:1: custom_id nope matches no item" in out.output and "Traceback" not in out.output
    bad.write_bytes(b'\xff\xfe\n')
    out = run("judge", "--model", "fake-judge", "--import-batch", str(bad), ok=False)
    assert out.exit_code == 1 and f"{bad}:1: not UTF-8" in out.output
    bad.write_bytes(b'{"custom_id": "nope", "response": {}\n')
    out = run("judge", "--model", "fake-judge", "--import-batch", str(bad), ok=False)
    assert out.exit_code == 1 and f"{bad}:1: not a batch result line (malformed JSON" in out.output


@pytest.mark.parametrize("content", [b"", b"\n  \r\n\n"], ids=["no-bytes", "blank-lines"])
def test_an_empty_batch_file_is_refused_as_an_empty_import_is(lexical_db, tmp_path, content):
    run = lexical_db(1)
    empty = tmp_path / "results.jsonl"
    empty.write_bytes(content)
    out = run("judge", "--model", "fake-judge", "--import-batch", str(empty), ok=False)
    assert out.exit_code == 1 and out.output.startswith(f"Error: {empty}: file is empty"), out.output
    imported = run("import", "jsonl", str(empty), "--task", "c3/lexical", "--lang", "en", ok=False)
    assert imported.output.splitlines()[-1] == out.output.splitlines()[-1] and judgments(run) == []


def _batch_results(batch_in: Path, batch_out: Path, failing: int = 0) -> None:
    """The results of the batch written to `batch_in`: its first `failing` requests HTTP 500."""
    requests = [json.loads(line) for line in batch_in.read_text().splitlines()]
    lines = [{"custom_id": r["custom_id"], "response": {"status_code": 500, "body": {"error": {"message": "down"}}}}
             if k < failing else
             {"custom_id": r["custom_id"], "response": {"status_code": 200, "body": completion(r["body"], Reply())}}
             for k, r in enumerate(requests)]
    batch_out.write_text("".join(json.dumps(line) + "\n" for line in lines))


def test_a_batch_export_with_nothing_left_to_ask_writes_no_file_and_fails_saying_so(lexical_db, tmp_path):
    """A script exports, uploads and imports: an export that wrote nothing must not look done,
    or the script uploads the earlier batch again."""
    run = lexical_db(1)
    batch_in, batch_out = tmp_path / "requests.jsonl", tmp_path / "results.jsonl"
    run("judge", "--model", "fake-judge", "--export-batch", str(batch_in))
    _batch_results(batch_in, batch_out)
    run("judge", "--model", "fake-judge", "--import-batch", str(batch_out))
    earlier = batch_in.read_bytes()
    out = run("judge", "--model", "fake-judge", "--export-batch", str(batch_in), ok=False)
    assert out.exit_code == 1 and batch_in.read_bytes() == earlier
    assert (f"nothing to judge: fake-judge has judged all 1 (--force judges them again); no batch file was written "
            f"({batch_in} is left as it was)") in " ".join(out.output.split())
    fresh = tmp_path / "fresh.jsonl"
    none = run("judge", "--model", "fake-judge", "--export-batch", str(fresh), ok=False)
    assert none.exit_code == 1 and not fresh.exists()
    assert " ".join(none.output.split()).endswith("; no batch file was written")


def test_importing_the_same_batch_results_again_stores_nothing_again(lexical_db, tmp_path):
    run = lexical_db(3)
    batch_in, batch_out = tmp_path / "requests.jsonl", tmp_path / "results.jsonl"
    run("judge", "--model", "fake-judge", "--export-batch", str(batch_in))
    _batch_results(batch_in, batch_out, failing=1)
    run("judge", "--model", "fake-judge", "--import-batch", str(batch_out), ok=False)
    assert len(judgments(run)) == 3
    again = " ".join(run("judge", "--model", "fake-judge", "--import-batch", str(batch_out)).output.split())
    assert len(judgments(run)) == 3, "the error line is not stored twice"
    assert f"1 error result of {batch_out} is stored already, with the same message: not stored again" in again
    assert "0 judgments stored, 2 items already judged" in again


def test_the_replacement_note_counts_errors_apart_from_verdicts(lexical_db, tmp_path):
    run = lexical_db(3)
    batch_in, batch_out = tmp_path / "requests.jsonl", tmp_path / "results.jsonl"
    run("judge", "--model", "fake-judge", "--max-tokens", "5", "--export-batch", str(batch_in))
    _batch_results(batch_in, batch_out, failing=1)
    run("judge", "--model", "fake-judge", "--max-tokens", "5", "--import-batch", str(batch_out), ok=False)
    with FakeOpenAI() as server:
        out = " ".join(judge(run, server).output.split())
    assert "this run replaces 2 verdicts and 1 error (failed calls) in force of fake-judge from another configuration" \
        in out
    assert "this run replaced 2 verdicts and 1 error (failed calls) in force" in out
