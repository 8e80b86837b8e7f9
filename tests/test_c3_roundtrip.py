"""C3 as its users' files really are, compared with C3's own scripts.

The trees (tests/c3_trees.py) hold CRLF responses, duplicates that C3's evaluate.py skips and
generation items; tests/fixtures/c3 holds what C3's own evaluate.py sent and wrote on them
(two judges, dpsk and gpt, and people's verdicts filled into the generation records) and what
its process_results.py counted (see the README there). calibrate imports the trees and those
result files, and must land every judgment on its item, count C3's rule as process_results.py
does, send the prompts evaluate.py sends, and export result files C3's script scores alike.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calibrate.formats.c3 import C3_LANGUAGE_NAMES, C3_LAYOUT, c3_json, c3_record_keys
from calibrate.store import Store
from tests.c3_trees import CTX, NOT_JUDGED_BY_C3, write_tree
from tests.fake_openai import FakeOpenAI, Reply

FIXTURES = Path(__file__).parent / "fixtures" / "c3"
RESULTS = FIXTURES / "results"
PROCESS_RESULTS = json.loads((FIXTURES / "process_results.json").read_text(encoding="utf-8"))
JUDGES = ("dpsk", "gpt")


def results_of(judge: str, lang: str) -> Path:
    return RESULTS / judge / C3_LANGUAGE_NAMES[lang]


def import_tree(calibrate, tmp_path: Path, lang: str):
    reference, responses = write_tree(tmp_path / lang, lang)
    return calibrate("import", "c3", "--reference", str(reference), "--responses", str(responses), "--lang", lang,
                     "--system", "sdm")


def import_all(calibrate, tmp_path: Path, lang: str) -> dict[str, str]:
    import_tree(calibrate, tmp_path, lang)
    return {judge: calibrate("import", "c3-results", str(results_of(judge, lang)), "--lang", lang, "--judge-name",
                             judge).output for judge in JUDGES}


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_both_imports_succeed_and_every_judgment_lands_on_its_item(calibrate, tmp_path, lang):
    out = import_tree(calibrate, tmp_path, lang)
    assert "no .wav files under" in out.output and "no audio:" not in out.output, "one line for a text-only tree"
    outputs = {judge: calibrate("import", "c3-results", str(results_of(judge, lang)), "--lang", lang, "--judge-name",
                                judge).output for judge in JUDGES}
    store = Store(calibrate.db)
    unjudged = set()
    for part in C3_LAYOUT[lang]:
        items = sorted(store.items(task=part.task, lang=lang, system="sdm"), key=lambda i: int(i.source_id.rsplit("/", 1)[1]))
        for judge in JUDGES:
            records = json.loads((results_of(judge, lang) / f"{part.responses}.json").read_text(encoding="utf-8"))
            if part.people_decide:
                labels = [store.current_label(i.id, "c3-result-file") for i in items]
                kind = {"en": {"yes": "The answer is: yes.", "no": "The answer is: no."},
                        "zh": {"是": "最终答案为：是。", "否": "最终答案为：否。"}}[lang]
                assert [kind.get(label, "") for label in labels] == [r["check_answer"] for r in records]
                assert not any(store.judgments_for_item(i.id) for i in items), "people's verdicts are no judgments"
                continue
            judged = [(i, store.judgments_for_item(i.id, judge)) for i in items]
            unjudged |= {(part.task, i.source_id) for i, j in judged if not j}
            landed = [(i, j[0]) for i, j in judged if j]
            # in reference order, C3's records one for one: every raw output on the item it judged
            assert [j.raw_output or "" for _, j in landed] == [r["check_answer"] for r in records]
            if part.multi_turn:
                assert [j.prompt for _, j in landed] == [r["content"] for r in records]
            else:
                assert [i.fields["response"] for i, _ in landed] == [r["answer"] for r in records]
    assert unjudged == NOT_JUDGED_BY_C3[lang]
    for output in outputs.values():  # every record is of an item the tree brought, multi-turn's too
        records = int(output.split(" records:")[0])
        assert f"{records} records: 0 items added, {records} already present" in output
    # the items C3 passes over are said as such, with what they repeat, not as items C3 did not judge
    said = outputs["dpsk"].splitlines()
    assert not any("not judged by C3" in line for line in said)
    for (task, source_id) in NOT_JUDGED_BY_C3[lang]:
        earlier, what = ("multi-turn/0", "first turn") if "multi-turn" in task else ("omission/1", "notation")
        assert any(line.startswith(f"C3's evaluate.py passes over 1 {task} ({lang}, system sdm) item (no record in ")
                   and line.endswith(f": {source_id} repeats {CTX}/{earlier}'s {what}") for line in said), said
    store.close()


def test_an_item_whose_record_is_missing_is_said_apart_from_those_c3_passes_over(calibrate, tmp_path):
    import_tree(calibrate, tmp_path, "en")
    results = tmp_path / "dpsk-english"
    shutil.copytree(results_of("dpsk", "en"), results)
    lexical = results / "ambiguity" / "semantic" / "lexical.json"
    records = json.loads(lexical.read_text(encoding="utf-8"))
    lexical.write_text(c3_json(records[:-1]), encoding="utf-8")
    said = calibrate("import", "c3-results", str(results), "--lang", "en", "--judge-name", "dpsk").output.splitlines()
    lost = f"ambiguity/semantic/lexical/{len(records) - 1}"
    assert f"not judged by C3 (no record in {lexical}): 1 c3/lexical (en, system sdm) item: {lost}" in said
    assert sum(line.startswith("C3's evaluate.py passes over 1 ") for line in said) == len(NOT_JUDGED_BY_C3["en"])


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_c3_rule_column_equals_process_results_overall_and_per_category(calibrate, tmp_path, lang):
    import_all(calibrate, tmp_path, lang)
    per_task = {(c["task"]): c for c in json.loads(calibrate("scores", "--format", "json").output)["cells"]
                if c["lang"] == lang}
    overall = next(c for c in json.loads(calibrate("scores", "--by", "system,lang", "--format", "json").output)["cells"]
                   if c["lang"] == lang)
    tasks = {"/" + part.responses: part.task for part in C3_LAYOUT[lang]}
    expected = PROCESS_RESULTS[lang]
    assert {row["category"] for row in expected} == {"overall", *tasks}
    for row in expected:
        cell = overall if row["category"] == "overall" else per_task[tasks[row["category"]]]
        rule = {j["judge"]: j["c3_rule"] for j in cell["judges"]}
        for judge in JUDGES:
            assert (rule[judge]["right"], rule[judge]["n"]) == (row[f"{judge}_correct"], row["total"]), row["category"]
            assert round(rule[judge]["accuracy"], 4) == row[f"{judge}_accuracy"]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_export_gives_back_c3s_own_result_files_for_two_judges_and_one(calibrate, tmp_path, lang):
    """After both imports, `export c3` writes each judge's result files byte for byte as C3's
    evaluate.py wrote them (so process_results.py gives the same accuracy on them), each under
    its own folder, and the statistics files apart, in OUT/statistics/."""
    import_all(calibrate, tmp_path, lang)
    out = tmp_path / "export"
    calibrate("export", "c3", str(out), "--lang", lang, "--judge", "dpsk", "--judge", "gpt")
    assert sorted(p.name for p in out.iterdir()) == ["dpsk", "gpt", "statistics"]
    for judge in JUDGES:
        ours = sorted(p.relative_to(out / judge) for p in (out / judge).rglob("*.json"))
        theirs = sorted(p.relative_to(results_of(judge, lang)) for p in results_of(judge, lang).rglob("*.json"))
        assert ours == theirs
        for rel in ours:
            assert (out / judge / rel).read_bytes() == (results_of(judge, lang) / rel).read_bytes(), rel
    name = C3_LANGUAGE_NAMES[lang]
    figures = {row["category"]: row for row in json.loads((out / "statistics" / f"{name}_result_data.json").read_text())}
    for row in PROCESS_RESULTS[lang]:
        mine = figures[row["category"]]
        assert {k: mine[k] for k in row} == row
    one = tmp_path / "one"
    calibrate("export", "c3", str(one), "--lang", lang, "--judge", "gpt")
    assert sorted(p.name for p in one.iterdir()) == ["gpt", "statistics"]
    for rel in (p.relative_to(one / "gpt") for p in (one / "gpt").rglob("*.json")):
        assert (one / "gpt" / rel).read_bytes() == (results_of("gpt", lang) / rel).read_bytes()


def test_export_statistics_are_the_same_from_the_child_process_and_without_it(calibrate, tmp_path, monkeypatch):
    """`export c3` works the corrected scores out in a child process while it writes the result
    files, where a core is free; on a busy machine, or when the child cannot finish, it works
    them out itself, to the same bytes."""
    from calibrate import child_process

    import_all(calibrate, tmp_path, "en")
    started = []
    real = child_process.in_child_process

    def counted(future, work, args, **kw):
        started.append(args[:2])
        real(future, work, args, **kw)

    def failing(future, work, args, **kw):
        started.append(args[:2])
        future.set_exception(child_process.ChildWorkError("status -9: killed"))

    written = {}
    for name, stand_in, free in (("child", counted, True), ("killed", failing, True), ("busy", counted, False)):
        monkeypatch.setattr(child_process, "in_child_process", stand_in)
        monkeypatch.setattr(child_process, "a_core_is_free", lambda free=free: free)
        calibrate("export", "c3", str(tmp_path / name), "--lang", "en", "--judge", "dpsk", "--judge", "gpt")
        written[name] = {p.relative_to(tmp_path / name): p.read_bytes() for p in (tmp_path / name).rglob("*.json")}
    assert started == [("calibrate.scores.build", "c3_corrected_in")] * 2, "no child on a busy machine"
    assert written["child"] == written["killed"] == written["busy"]
    assert b"corrected_method" in written["child"][Path("statistics/english_result_data.json")]


def test_export_writes_c3s_record_keys_per_phenomenon():
    """The keys C3's evaluate.py wrote into the recorded result files, phenomenon by phenomenon
    (a Chinese generation record keeps the reference answer; tone has none; English coreference
    detection has no problem)."""
    for lang in ("en", "zh"):
        for part in C3_LAYOUT[lang]:
            records = json.loads((results_of("dpsk", lang) / f"{part.responses}.json").read_text(encoding="utf-8"))
            assert {tuple(r) for r in records} == {c3_record_keys(part, lang)}, part.task


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_judge_variant_c3_official_sends_what_c3_sends(calibrate, tmp_path, lang):
    import_tree(calibrate, tmp_path, lang)
    recorded = json.loads((FIXTURES / f"prompts-{lang}.json").read_text(encoding="utf-8"))
    messages = lambda body: tuple((m["role"], m["content"]) for m in body["messages"])  # noqa: E731
    batch = tmp_path / "batch.jsonl"
    said = calibrate("judge", "--model", "m", "--variant", "c3-official", "--export-batch", str(batch)).output
    bodies = [json.loads(line)["body"] for line in batch.read_text(encoding="utf-8").split("\n") if line]
    sent, asked = Counter(messages(b) for b in bodies), Counter(messages(r) for r in recorded)
    assert sent == asked, "every prompt C3 sent, byte for byte, and none of the items C3 passes over"
    skipped = len(NOT_JUDGED_BY_C3[lang])
    assert f"{skipped} item{'s' * (skipped > 1)} not asked" in said and "C3's evaluate.py passes over" in said
    assert {(b["temperature"], b["max_tokens"]) for b in bodies} == {(0, 2048)}
    assert {(r["temperature"], r["max_tokens"]) for r in recorded} == {(0, 2048)}
    calibrate("judge", "--model", "m", "--variant", "c3-official", "--export-batch", str(batch), "--temperature", "0.5",
              "--max-tokens", "99")
    assert {(json.loads(line)["body"]["temperature"], json.loads(line)["body"]["max_tokens"])
            for line in batch.read_text(encoding="utf-8").split("\n") if line} == {(0.5, 99)}
    with FakeOpenAI(Reply("最终答案为：是。" if lang == "zh" else "The answer is: yes.")) as server:
        calibrate("judge", "--model", "m", "--base-url", server.url, "--variant", "c3-official")
        received = Counter(messages(body) for body in server.requests)
    assert received == sent
    store = Store(calibrate.db)
    stored = Counter(((("system", j.system_prompt), ("user", j.prompt))) for j in store.judgments())
    store.close()
    assert stored == sent, "the stored prompt is what was sent"


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_export_of_a_judge_run_here_leaves_out_the_records_c3_passes_over(calibrate, tmp_path, lang):
    """A judge run by calibrate does not ask the items C3's evaluate.py passes over
    (NOT_JUDGED_BY_C3); `export c3` writes the records that script writes, no more, so that
    process_results.py counts what it counts on C3's own run."""
    import_tree(calibrate, tmp_path, lang)
    with FakeOpenAI(Reply("最终答案为：是。" if lang == "zh" else "The answer is: yes.")) as server:
        calibrate("judge", "--model", "m", "--base-url", server.url, "--variant", "c3-official")
    out = tmp_path / "export"
    shown = " ".join(calibrate("export", "c3", str(out), "--lang", lang, "--judge", "m").output.split())
    without_verdicts = lambda path: [{k: v for k, v in record.items() if k != "check_answer"}  # noqa: E731
                                     for record in json.loads(path.read_text(encoding="utf-8"))]
    theirs = results_of("gpt", lang)
    for rel in (p.relative_to(theirs) for p in theirs.rglob("*.json")):
        assert without_verdicts(out / "m" / rel) == without_verdicts(theirs / rel), rel
    assert shown.count("which C3's evaluate.py passes over left out") == len(NOT_JUDGED_BY_C3[lang])


def test_judge_variant_refuses_an_unknown_family_and_says_when_it_serves_nothing(calibrate, tmp_path):
    import_tree(calibrate, tmp_path, "en")
    out = calibrate("judge", "--model", "m", "--variant", "nope", "--export-batch", str(tmp_path / "b"), ok=False)
    assert out.exit_code == 2 and "unknown template family 'nope'" in out.output
    out = calibrate("judge", "--model", "m", "--variant", "c3-official", "--task", "c3/generation",
                    "--export-batch", str(tmp_path / "b"), ok=False)
    assert out.exit_code == 1 and "has a c3-official template: nothing to judge" in out.output


def test_a_response_that_really_differs_names_record_item_and_first_difference(calibrate, tmp_path):
    reference, responses = write_tree(tmp_path / "en", "en")
    (responses / "ambiguity" / "semantic" / "lexical" / "1.txt").write_bytes(b"Answer 1 for lexical.\r\nSomething else.")
    calibrate("import", "c3", "--reference", str(reference), "--responses", str(responses), "--lang", "en", "--system", "s")
    out = calibrate("import", "c3-results", str(results_of("dpsk", "en")), "--lang", "en", "--judge-name", "d", ok=False)
    assert ("lexical.json[1]: its 'answer' differs from that of c3/lexical (en, system s) item ambiguity/semantic/"
            "lexical/1, which has the same 'content' and 'notation' (record vs item, first difference at character 23: "
            '"exical.\\nI think the seco" vs "exical.\\nSomething else."); files are misaligned; nothing was '
            "imported") in out.output
    store = Store(calibrate.db)
    assert list(store.judgments()) == []
    store.close()


def _copy_results(tmp_path: Path, lang: str = "en") -> Path:
    copy = tmp_path / "results"
    shutil.copytree(results_of("dpsk", lang), copy)
    return copy


def _edit(path: Path, change) -> None:
    records = json.loads(path.read_text(encoding="utf-8"))
    change(records)
    path.write_text(json.dumps(records, ensure_ascii=False), encoding="utf-8")


def test_a_record_matching_no_item_or_an_item_already_matched_is_an_error_naming_it(calibrate, tmp_path):
    import_tree(calibrate, tmp_path, "en")
    results = _copy_results(tmp_path)
    lexical = results / "ambiguity" / "semantic" / "lexical.json"
    _edit(lexical, lambda records: records[1].update(content="A sentence the tree does not hold."))
    out = calibrate("import", "c3-results", str(results), "--lang", "en", "--judge-name", "d", ok=False)
    assert ("lexical.json[1]: matches no c3/lexical (en, system sdm) item: none has this 'content' and 'notation'; "
            "files are misaligned") in out.output
    results = _copy_results(tmp_path / "again")
    lexical = results / "ambiguity" / "semantic" / "lexical.json"
    _edit(lexical, lambda records: records.append(dict(records[0])))
    out = calibrate("import", "c3-results", str(results), "--lang", "en", "--judge-name", "d", ok=False)
    assert "lexical.json[2]: matches c3/lexical (en, system sdm) item ambiguity/semantic/lexical/0, which " \
           f"{lexical}[0] matched already" in out.output


def test_a_record_that_cannot_tell_two_items_apart_is_an_error(calibrate, tmp_path):
    """English coreference-detection records hold only the content and the answer: two items
    with the same content and response but different questions cannot be told apart."""
    reference, responses = write_tree(tmp_path / "en", "en")
    coreference = reference / "context-dependency" / "coreference.json"
    _edit(coreference, lambda entries: entries[1].update(content=entries[0]["content"]))
    for folder in ("coreference-detection", "coreference-resolution"):
        shutil.copy(responses / "context-dependency" / folder / "0.txt", responses / "context-dependency" / folder / "1.txt")
    calibrate("import", "c3", "--reference", str(reference), "--responses", str(responses), "--lang", "en", "--system", "s")
    results = _copy_results(tmp_path)
    detection = results / "context-dependency" / "coreference-detection.json"
    _edit(detection, lambda records: records.__setitem__(1, {**records[0], "check_answer": records[1]["check_answer"]}))
    for name in ("coreference-resolution", "multi-turn", "omission-detection", "omission-completion"):
        (results / "context-dependency" / f"{name}.json").unlink()
    out = calibrate("import", "c3-results", str(results), "--lang", "en", "--judge-name", "d", ok=False)
    assert ("coreference-detection.json[0]: matches c3/coreference-detection (en, system s) items "
            "context-dependency/coreference/0 and context-dependency/coreference/1, which differ in what the record "
            "does not hold; it cannot tell which one it judged") in out.output


def test_result_files_alone_rebuild_a_chinese_history_holding_u2028(calibrate, tmp_path):
    results = _copy_results(tmp_path, "zh")
    (results / "context-dependency" / "multi-turn.json").unlink()  # a rendered dialogue needs the tree
    calibrate("import", "c3-results", str(results), "--lang", "zh", "--judge-name", "dpsk", "--system", "sdm")
    store = Store(calibrate.db)
    (item,) = [i for i in store.items(task="c3/omission-completion", lang="zh") if i.source_id.endswith("/1")]
    assert item.fields["history"] == ["甲：昨天去了哪里？\u2028（停顿）", "乙：公园。"]
    assert item.fields["response"] == "omission-completion的回答1。\n我觉得是第二种意思。"
    store.close()


@pytest.mark.parametrize(("check_answer", "message"), [
    ("The answer is: **yes**", "reads 'yes' to calibrate but the other way to C3's scoring script"),
    ("yes", "reads 'yes' to calibrate but the other way to C3's scoring script"),
    ("maybe", "is not a person's verdict: write 'The answer is: yes.' or 'The answer is: no.'"),
])
def test_a_persons_verdict_c3_would_read_otherwise_is_refused(calibrate, tmp_path, check_answer, message):
    import_tree(calibrate, tmp_path, "en")
    results = _copy_results(tmp_path)
    _edit(results / "ambiguity" / "phonological" / "generation.json",
          lambda records: records[2].update(check_answer=check_answer))
    out = calibrate("import", "c3-results", str(results), "--lang", "en", "--judge-name", "d", ok=False)
    assert f"generation.json[2]: check_answer {check_answer!r} {message}" in out.output


def test_people_labels_under_the_annotator_named(calibrate, tmp_path):
    import_tree(calibrate, tmp_path, "zh")
    out = calibrate("import", "c3-results", str(results_of("gpt", "zh")), "--lang", "zh", "--judge-name", "gpt",
                    "--annotator", "lin")
    assert "5 labels added" in out.output
    assert "1 c3/generation-heteronym (zh) item waits for a person's label" in out.output
    store = Store(calibrate.db)
    assert {row["annotator"] for row in store.current_labels()} == {"lin"}
    store.close()
    again = calibrate("import", "c3-results", str(results_of("gpt", "zh")), "--lang", "zh", "--judge-name", "gpt",
                      "--annotator", "lin")
    assert "0 judgments added" in again.output and "labels added" not in again.output


def test_another_judges_files_changing_a_generation_decision_say_so(calibrate, tmp_path):
    import_tree(calibrate, tmp_path, "en")
    first = calibrate("import", "c3-results", str(results_of("dpsk", "en")), "--lang", "en", "--judge-name", "dpsk")
    assert "changed by these files" not in first.output
    results = tmp_path / "gpt" / "english"  # the other judge's folder, where the person decided item 0 otherwise
    shutil.copytree(results_of("gpt", "en"), results)
    _edit(results / "ambiguity" / "phonological" / "generation.json",
          lambda records: records[0].update(check_answer="The answer is: no."))
    out = " ".join(calibrate("import", "c3-results", str(results), "--lang", "en", "--judge-name", "gpt").output.split())
    assert "1 generation decision of c3-result-file changed by these files (ambiguity/phonological/generation/0)" in out
    assert "C3's process_results.py counts each judge's own" in out


def test_export_gives_back_a_judges_own_generation_decisions_in_its_words(calibrate, tmp_path):
    """A judge's generation file wrote `The answer is: Yes.` / `No.` (C3 reads them as yes and
    no): the export of that judge's files gives them back byte for byte. A judge whose files
    held no generation decision gets calibrate's decisions, the person's made here among them,
    in C3's own words."""
    import_tree(calibrate, tmp_path, "en")
    results = tmp_path / "dpsk" / "english"
    shutil.copytree(results_of("dpsk", "en"), results)
    generation = Path("ambiguity") / "phonological" / "generation.json"
    records = json.loads((results / generation).read_text(encoding="utf-8"))
    records[0]["check_answer"], records[1]["check_answer"] = "The answer is: Yes.", "The answer is: No."
    (results / generation).write_text(c3_json(records), encoding="utf-8")
    other = tmp_path / "gpt" / "english"  # gpt's files without their generation file
    shutil.copytree(results_of("gpt", "en"), other)
    (other / generation).unlink()
    for folder, judge in ((results, "dpsk"), (other, "gpt")):
        calibrate("import", "c3-results", str(folder), "--lang", "en", "--judge-name", judge)
    again = calibrate("import", "c3-results", str(results), "--lang", "en", "--judge-name", "dpsk").output
    assert "labels added" not in again and "more note" not in again, "the same files again add nothing"
    store = Store(calibrate.db)
    (waiting,) = [i for i in store.items(task="c3/generation", lang="en") if i.source_id.endswith("/2")]
    store.annotate(waiting.id, "ana", "label", label="no")  # the item dpsk's file left empty
    store.close()
    out = tmp_path / "export"
    calibrate("export", "c3", str(out), "--lang", "en", "--judge", "dpsk", "--judge", "gpt")
    assert (out / "dpsk" / generation).read_bytes() == (results / generation).read_bytes()
    assert [r["check_answer"] for r in json.loads((out / "gpt" / generation).read_text(encoding="utf-8"))] == [
        "The answer is: yes.", "The answer is: no.", "The answer is: no."]


def test_a_judges_files_rewording_a_decision_say_so_and_the_export_follows(calibrate, tmp_path):
    """The same decision, in other words in the judge's files (`yes.` then `Yes.`): no label
    changes, the new words are kept for the export, and the import says so."""
    import_tree(calibrate, tmp_path, "en")
    results = tmp_path / "dpsk" / "english"
    shutil.copytree(results_of("dpsk", "en"), results)
    calibrate("import", "c3-results", str(results), "--lang", "en", "--judge-name", "dpsk")
    generation = Path("ambiguity") / "phonological" / "generation.json"
    records = json.loads((results / generation).read_text(encoding="utf-8"))
    assert records[0]["check_answer"] == "The answer is: yes."
    records[0]["check_answer"] = "The answer is: Yes."
    (results / generation).write_text(c3_json(records), encoding="utf-8")
    again = " ".join(calibrate("import", "c3-results", str(results), "--lang", "en", "--judge-name", "dpsk").output.split())
    assert "1 generation decision in its result file's new words" in again and "label added" not in again
    out = tmp_path / "export"
    calibrate("export", "c3", str(out), "--lang", "en", "--judge", "dpsk")
    assert (out / "dpsk" / generation).read_bytes() == (results / generation).read_bytes()


def test_failed_calls_and_verdicts_a_reimported_file_changes_are_said(calibrate, tmp_path):
    """An empty check_answer (C3's judge call failed) is stored as an error, and the summary
    says so; a file of the same judge read again says which verdicts in force it changed, and
    where a failed call left the earlier verdict in force."""
    import_tree(calibrate, tmp_path, "en")
    first = " ".join(calibrate("import", "c3-results", str(results_of("dpsk", "en")), "--lang", "en",
                               "--judge-name", "dpsk").output.split())
    assert ("3 records of dpsk hold no verdict (check_answer holds no text: the C3 script's judge call failed five times, "
            "or the judge answered only whitespace): "
            "stored as errors, not verdicts (") in first
    assert "in force changed" not in first and "replaced an earlier verdict" not in first
    results = _copy_results(tmp_path)
    lexical = results / "ambiguity" / "semantic" / "lexical.json"
    assert [r["check_answer"].splitlines()[-1] for r in json.loads(lexical.read_text(encoding="utf-8"))] == \
        ["The answer is: yes.", "The answer is: no."]
    _edit(lexical, lambda records: (records[0].update(check_answer="The answer is: no."),
                                    records[1].update(check_answer=" \n")))  # only whitespace: as empty
    again = " ".join(calibrate("import", "c3-results", str(results), "--lang", "en", "--judge-name", "dpsk").output.split())
    assert "27 records: 0 items added, 27 already present, 2 judgments added, " in again
    # the new failed call only: the 3 stored before were said by the first import
    assert "1 record of dpsk holds no verdict" in again and f"{lexical}[1]" in again
    assert "it left the verdict of dpsk in force there (a failed call never replaces a verdict)" in again
    assert ("1 verdict in force changed by this import (dpsk on ambiguity/semantic/lexical/0: yes -> no)") in again
    store = Store(calibrate.db)
    (item, failed) = sorted((i for i in store.items(task="c3/lexical") if i.source_id[-2:] in ("/0", "/1")),
                            key=lambda i: i.source_id)
    assert store.verdict_in_force(item.id, "dpsk")["verdict"] == "no"
    assert store.verdict_in_force(failed.id, "dpsk")["verdict"] == "no", "the failed call left the verdict in force"
    store.close()


def test_render_variant_on_a_generation_item_says_people_decide_it(calibrate, tmp_path):
    import_tree(calibrate, tmp_path, "en")
    store = Store(calibrate.db)
    (item, *_) = store.items(task="c3/generation")
    store.close()
    out = calibrate("render", str(item.id), "--variant", "c3-official")
    assert "has no judge prompt in any family: people decide it" in out.output


def test_judgments_on_generation_items_are_never_judge_evidence(calibrate, tmp_path):
    """Whatever stored a judgment on an item people decide (an older database, a merge), the
    report, trust and scores leave it out; an import refuses to store one."""
    from calibrate.model import NewJudgment

    import_all(calibrate, tmp_path, "en")
    store = Store(calibrate.db)
    generation = store.items(task="c3/generation")
    store.add_judgments([NewJudgment(item_id=i.id, judge_name="dpsk", judge_key="old", status="verdict", verdict="yes",
                                     raw_output="The answer is: yes.") for i in generation])
    store.close()
    # the only labelled items are generation items: no judge has evidence, so nothing to report
    report = calibrate("report", "--format", "json", ok=False)
    assert report.exit_code == 1 and "no agreement to report yet" in report.output
    trust = calibrate("trust", "--format", "json", ok=False)
    assert trust.exit_code == 1 and "c3/generation" not in trust.output, trust.output
    cells = {c["task"]: c for c in json.loads(calibrate("scores", "--format", "json").output)["cells"]}
    (dpsk,) = [j for j in cells["c3/generation"]["judges"] if j["judge"] == "dpsk"]
    assert dpsk["judged"] == 0 and dpsk["c3_rule"] == {"right": 1, "n": 3, "accuracy": 1 / 3}
    assert dpsk["corrected"]["value"] is None and "people decide these items" in dpsk["corrected"]["reason"]
    assert dpsk["more_labels_for_target"] is None
    lines = tmp_path / "gen.jsonl"
    lines.write_text(json.dumps({"id": "x", "content": "c", "notation": "n", "response": "r", "out": "yes"}) + "\n")
    out = calibrate("import", "jsonl", str(lines), "--task", "c3/generation", "--lang", "en", "--judge-output", "out",
                    "--judge-name", "j", ok=False)
    assert "gen.jsonl:1: c3/generation (en) has no judge prompt: people decide it" in out.output


def test_audio_kept_in_a_tree_of_its_own(calibrate, tmp_path):
    """C3's evaluate.py counts every file of a response folder, so .wav files beside the .txt
    files break it: `--audio` finds them in a separate tree at the same relative paths."""
    import wave

    reference, responses = write_tree(tmp_path / "en", "en")
    audio = tmp_path / "audio"
    for txt in responses.rglob("*.txt"):
        wav = audio / txt.relative_to(responses).with_suffix(".wav")
        wav.parent.mkdir(parents=True, exist_ok=True)
        with wave.open(str(wav), "wb") as out:
            out.setnchannels(1), out.setsampwidth(1), out.setframerate(8000)
            out.writeframes(bytes([128]) * 8000)
    out = calibrate("import", "c3", "--reference", str(reference), "--responses", str(responses), "--audio", str(audio),
                    "--lang", "en")
    assert "no audio" not in out.output and "no .wav files" not in out.output
    store = Store(calibrate.db)
    clips = [clip for item in store.items() for clip in store.item_audio(item.id)]
    store.close()
    assert len(clips) == 30 + 6 and all(c.usable and c.duration == 1.0 and c.root == audio.resolve() for c in clips)


# text that would look like the layout's bounds if strings did not escape their newlines
json_text = st.text() | st.sampled_from(["},\n        {", "}, {", "{", "}", "\n    }"])
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | json_text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(json_text, inner, max_size=3),
    max_leaves=12,
)
flat_values = st.none() | st.booleans() | st.integers() | st.floats() | json_text


@settings(max_examples=300, deadline=None)
@given(st.lists(st.dictionaries(json_text, flat_values, max_size=5) | st.dictionaries(json_text, json_values, max_size=5),
                max_size=4))
def test_c3_files_are_written_as_pythons_indenting_encoder_writes_them(rows):
    # C3's scripts write json.dumps(..., ensure_ascii=False, indent=4): the files must read the same, byte for byte
    assert c3_json(rows) == json.dumps(rows, ensure_ascii=False, indent=4)


def test_export_c3_of_items_without_c3s_source_ids_says_why_nothing_was_written(calibrate, tmp_path):
    lines = tmp_path / "lexical.jsonl"
    lines.write_text("".join(json.dumps({"id": f"q{k}", "content": "c", "notation": "n", "response": "r"}) + "\n"
                             for k in range(3)), encoding="utf-8")
    calibrate("import", "jsonl", str(lines), "--task", "c3/lexical", "--lang", "en")
    out = calibrate("export", "c3", str(tmp_path / "out"), "--lang", "en", ok=False)
    assert out.exit_code == 1 and "with C3's source ids" in out.output and "nothing was written" in out.output
