"""Every importer, through the CLI as a user runs it, including each bad-input case."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from calibrate.demo import DEMO_DIR
from calibrate.display import reference_text
from calibrate.store import Store
from calibrate.templates import TemplateSet


def write_jsonl(path: Path, rows) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)) + "\n" for r in rows), encoding="utf-8")
    return path


def counts(db: Path) -> tuple[int, int, int]:
    store = Store(db)
    c = store.conn
    out = tuple(c.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("items", "judgments", "annotations"))
    store.close()
    return out


LEX = {"content": "She went to the bank.", "notation": "river bank", "response": "the river bank"}


# -- jsonl ---------------------------------------------------------------------------------------


def test_jsonl_imports_items_and_judge_outputs(calibrate, tmp_path):
    f = write_jsonl(tmp_path / "in.jsonl", [
        {"id": "a", **LEX, "judge": "Looks right.\nThe answer is: yes."},
        {"id": "b", **LEX, "response": "money", "judge": "The answer is: **no**"},
        {"id": "c", **LEX, "judge": "no idea"},
    ])
    out = calibrate("import", "jsonl", str(f), "--task", "c3/lexical", "--lang", "en", "--judge-output", "judge", "--judge-name", "gpt")
    assert "3 items added" in out.output and "3 judgments added" in out.output
    store = Store(calibrate.db)
    verdicts = {store.item(j.item_id).source_id: (j.status, j.verdict) for j in store.judgments()}
    assert verdicts == {"a": ("verdict", "yes"), "b": ("verdict", "no"), "c": ("unparsed", None)}
    item = store.item(store.identity_index("c3/lexical", "en")[("", "a")][0])
    assert item.reference == "river bank" and "judge" not in item.fields
    again = calibrate("import", "jsonl", str(f), "--task", "c3/lexical", "--lang", "en", "--judge-output", "judge", "--judge-name", "gpt")
    assert "0 items added, 3 already present, 0 judgments added" in again.output


def test_jsonl_field_mapping(calibrate, tmp_path):
    f = write_jsonl(tmp_path / "in.jsonl", [{"key": 1, "sentence": "s", "gold": "g", "answer_text": "a"}])
    calibrate("import", "jsonl", str(f), "--task", "c3/lexical", "--lang", "en", "--id-field", "key",
              "--map", "content=sentence", "--map", "notation=gold", "--map", "response=answer_text")
    item = Store(calibrate.db).items()[0]
    assert item.source_id == "1" and item.fields == {"content": "s", "notation": "g", "response": "a"}


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        ([{"id": 1, **LEX}, "{not json"], "in.jsonl:2: malformed JSON"),
        ([{"id": 1, **LEX}, {"id": 2, "content": "x", "response": "r"}], "in.jsonl:2: missing field 'notation'"),
        ([{"id": 1, **LEX}, [1, 2]], "in.jsonl:2: expected a JSON object"),
        ([{**LEX}], "in.jsonl:1: missing field 'id' (the item's source id; name another field with --id-field)"),
    ],
)
def test_jsonl_bad_line_imports_nothing(calibrate, tmp_path, lines, message):
    f = write_jsonl(tmp_path / "in.jsonl", lines)
    out = calibrate("import", "jsonl", str(f), "--task", "c3/lexical", "--lang", "en", ok=False)
    assert out.exit_code != 0 and message in out.output and "nothing was imported" in out.output
    assert counts(calibrate.db) == (0, 0, 0)


def test_skip_bad_reports_every_skipped_line(calibrate, tmp_path):
    f = write_jsonl(tmp_path / "in.jsonl", [{"id": 1, **LEX}, "{bad", {"id": 3, "content": "x"}, {"id": 4, **LEX}])
    out = calibrate("import", "jsonl", str(f), "--task", "c3/lexical", "--lang", "en", "--skip-bad")
    assert "in.jsonl:2: malformed JSON" in out.output
    assert "in.jsonl:3: missing field 'notation'" in out.output
    assert "2 items added" in out.output and "2 skipped" in out.output
    assert counts(calibrate.db)[0] == 2


def test_skip_bad_with_every_line_bad_names_the_first_lines_and_how_many(calibrate, tmp_path):
    f = write_jsonl(tmp_path / "in.jsonl", ["{bad", {"id": 2, "content": "x"}, [1], {**LEX}, "{worse"])
    out = calibrate("import", "jsonl", str(f), "--task", "c3/lexical", "--lang", "en", "--skip-bad", ok=False)
    assert out.exit_code == 1 and "no valid records; nothing was imported: all 5 skipped as bad" in out.output
    assert "in.jsonl:1: malformed JSON" in out.output and "in.jsonl:2: missing field 'notation'" in out.output
    assert "in.jsonl:3: expected a JSON object" in out.output and "… and 2 more" in out.output
    assert "in.jsonl:4" not in out.output and counts(calibrate.db) == (0, 0, 0)


def test_a_failed_import_into_an_empty_file_leaves_it_empty(calibrate, tmp_path):
    calibrate.db.touch()  # `: > calibrate.db`: a file of 0 bytes, which an import makes a database of
    f = write_jsonl(tmp_path / "in.jsonl", [{"id": "q1", "foo": 1}])
    out = calibrate("import", "jsonl", str(f), "--task", "c3/lexical", "--lang", "en", ok=False)
    assert out.exit_code == 1 and "in.jsonl:1: missing field 'content'" in out.output
    assert calibrate.db.stat().st_size == 0 and not list(tmp_path.glob(f"{calibrate.db.name}-*"))
    calibrate("import", "jsonl", str(write_jsonl(f, [{"id": 1, **LEX}])), "--task", "c3/lexical", "--lang", "en")
    assert counts(calibrate.db)[0] == 1, "a good import makes it the database"


@pytest.mark.parametrize(("task", "lang", "message"), [
    ("c3/nonsense", "en", "Invalid value for '--task': unknown task 'c3/nonsense'; tasks in en: c3/coreference-detection"),
    ("c3/lexcal", "en", "unknown task 'c3/lexcal' (did you mean c3/lexical?); tasks in en:"),
    ("c3/tone", "en", "task c3/tone has no template in en (it has in zh)"),
    ("c3/lexical", "fr", "Invalid value for '--lang': unknown language 'fr'; languages: en, zh"),
    ("c3/lexical", "EN", "unknown language 'EN' (did you mean en?); languages: en, zh"),
    ("c3/lexical", "english", "unknown language 'english' (did you mean en?); languages: en, zh")])
def test_unknown_task_or_language_is_a_usage_error_naming_the_valid_ones(calibrate, tmp_path, task, lang, message):
    f = write_jsonl(tmp_path / "in.jsonl", [{"id": 1, **LEX}])
    out = calibrate("import", "jsonl", str(f), "--task", task, "--lang", lang, ok=False)
    assert out.exit_code == 2 and message in out.output and "--skip-bad" not in out.output
    assert not calibrate.db.exists()


def test_non_utf8_and_empty_files(calibrate, tmp_path):
    latin = tmp_path / "latin.jsonl"
    latin.write_bytes(json.dumps({"id": 1, **LEX}).encode() + b"\n" + '{"id": 2, "content": "café"}'.encode("latin-1") + b"\n")
    out = calibrate("import", "jsonl", str(latin), "--task", "c3/lexical", "--lang", "en", ok=False)
    assert out.exit_code != 0 and "latin.jsonl:2: not UTF-8" in out.output
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    out = calibrate("import", "jsonl", str(empty), "--task", "c3/lexical", "--lang", "en", ok=False)
    assert out.exit_code != 0 and "empty.jsonl: file is empty" in out.output
    assert counts(calibrate.db) == (0, 0, 0)


def test_existing_data_survives_a_failed_import(calibrate, tmp_path):
    good = write_jsonl(tmp_path / "good.jsonl", [{"id": 1, **LEX}])
    calibrate("import", "jsonl", str(good), "--task", "c3/lexical", "--lang", "en")
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"id": 2, **LEX}, "oops"])
    calibrate("import", "jsonl", str(bad), "--task", "c3/lexical", "--lang", "en", ok=False)
    assert counts(calibrate.db)[0] == 1


# -- c3 ------------------------------------------------------------------------------------------


@pytest.fixture
def c3_en(tmp_path) -> Path:
    shutil.copytree(DEMO_DIR / "c3" / "en", tmp_path / "en")
    return tmp_path / "en"


def test_c3_english_tree_gives_one_item_per_phenomenon_and_index(calibrate, c3_en):
    calibrate("import", "c3", "--reference", str(c3_en / "reference"), "--responses", str(c3_en / "responses"), "--lang", "en")
    store = Store(calibrate.db)
    tasks = {(i.task, i.source_id) for i in store.items()}
    assert ("c3/omission-detection", "context-dependency/omission/0") in tasks
    assert ("c3/omission-completion", "context-dependency/omission/0") in tasks
    assert ("c3/heterograph", "ambiguity/phonological/heterograph/1") in tasks
    multi = store.items(task="c3/multi-turn")[0]
    assert multi.fields["turns"][0] == "What is the capital of Australia?"
    assert multi.fields["response"] == ["The capital of Australia is Canberra.", "Yes, Sydney is much bigger than Canberra.", "It's Canberra."]
    assert store.judgments_for_item(store.items(task="c3/generation")[0].id) == []


def test_c3_chinese_tree_and_results(calibrate):
    base = DEMO_DIR / "c3" / "zh"
    calibrate("import", "c3", "--reference", str(base / "reference"), "--responses", str(base / "responses"), "--lang", "zh")
    out = calibrate("import", "c3-results", str(base / "results"), "--lang", "zh", "--judge-name", "gpt-4o")
    store = Store(calibrate.db)
    multi = store.items(task="c3/multi-turn", lang="zh")[0]
    assert multi.fields["history"] == ["中国的首都是哪里？", "那里冬天冷吗？"] and len(multi.fields["response"]) == 3
    judgments = list(store.judgments(judge="gpt-4o"))
    assert len(judgments) == 10 and "10 judgments added" in out.output
    assert all(j.template_id.startswith("c3-official/") for j in judgments)
    heteronym = store.judgments_for_item(store.items(task="c3/heteronym")[0].id)[0]
    assert heteronym.verdict == "否"
    assert "```\n他的行为很好。\n```" in heteronym.prompt
    tone = store.judgments_for_item(store.items(task="c3/tone")[0].id)[0]
    assert tone.status == "unparsed" and "echo" in tone.unparsed_reason


def test_c3_response_count_mismatch_imports_nothing(calibrate, c3_en):
    (c3_en / "responses" / "ambiguity" / "phonological" / "heterograph" / "1.txt").unlink()
    out = calibrate("import", "c3", "--reference", str(c3_en / "reference"), "--responses", str(c3_en / "responses"), "--lang", "en", ok=False)
    assert out.exit_code != 0 and "heterograph: 1 response files but ambiguity/phonological/heterograph.json lists 2 items" in out.output
    assert "(missing 1.txt); responses pair with the reference by index" in out.output
    assert counts(calibrate.db) == (0, 0, 0)


def test_c3_response_with_a_leading_zero_beside_its_index_is_refused_naming_both(calibrate, c3_en):
    """C3's evaluate.py reads str(i) + ".txt": 1.txt is item 1, and 01.txt beside it is no item's response."""
    args = ("import", "c3", "--reference", str(c3_en / "reference"), "--responses", str(c3_en / "responses"), "--lang", "en")
    heterograph = c3_en / "responses" / "ambiguity" / "phonological" / "heterograph"
    (heterograph / "01.txt").write_text("a stale copy", encoding="utf-8")
    out = calibrate(*args, ok=False)
    assert out.exit_code == 1 and "heterograph: 3 response files but ambiguity/phonological/heterograph.json lists 2 " \
        "items (no item for 01.txt beside 1.txt: C3's evaluate.py reads <i>.txt without leading zeros)" \
        in " ".join(out.output.split())
    assert counts(calibrate.db) == (0, 0, 0)
    (heterograph / "01.txt").unlink()
    dialogue = c3_en / "responses" / "context-dependency" / "multi-turn" / "0"
    (dialogue / "01.txt").write_text("a stale turn", encoding="utf-8")
    out = calibrate(*args, ok=False)
    assert out.exit_code == 1 and "multi-turn/0: 01.txt beside 1.txt: C3's evaluate.py reads <i>.txt without leading " \
        "zeros" in " ".join(out.output.split())
    assert counts(calibrate.db) == (0, 0, 0)


def test_c3_skip_bad_passes_over_a_phenomenon_whose_responses_do_not_pair_and_names_it(calibrate, c3_en):
    responses = c3_en / "responses" / "ambiguity" / "phonological"
    (responses / "heterograph" / "5.txt").write_text("a stray answer", encoding="utf-8")
    shutil.rmtree(responses / "pause")
    args = ("import", "c3", "--reference", str(c3_en / "reference"), "--responses", str(c3_en / "responses"), "--lang", "en")
    refused = calibrate(*args, ok=False)
    assert refused.exit_code == 1 and "nothing was imported (use --skip-bad" in refused.output
    out = " ".join(calibrate(*args, "--skip-bad").output.split())
    assert "3 response files but ambiguity/phonological/heterograph.json lists 2 items (no item for 5.txt)" in out
    assert "by index: none of its 2 items is imported" in out, "how many items the one skip leaves out"
    assert "pause: response folder is missing for ambiguity/phonological/pause.json: none of its" in out
    tasks = {item.task for item in Store(calibrate.db).items()}
    assert "c3/lexical" in tasks and not {"c3/heterograph", "c3/pause"} & tasks


def test_c3_results_empty_check_answer_is_an_error_not_a_no(calibrate, c3_en):
    calibrate("import", "c3", "--reference", str(c3_en / "reference"), "--responses", str(c3_en / "responses"), "--lang", "en")
    results = c3_en / "results" / "ambiguity" / "semantic" / "lexical.json"
    records = json.loads(results.read_text())
    records[0]["check_answer"] = ""
    results.write_text(json.dumps(records))
    calibrate("import", "c3-results", str(c3_en / "results"), "--lang", "en", "--judge-name", "j")
    store = Store(calibrate.db)
    j = store.judgments_for_item(store.items(task="c3/lexical")[0].id)[0]
    assert j.status == "error" and j.verdict is None and "failed five times" in j.error


def test_c3_results_alone_name_a_record_missing_its_fields(calibrate, c3_en):
    """Result files alone create their items, but a record must hold the keys C3's script
    writes for its phenomenon: this coreference-resolution record lost its reference answer."""
    results = c3_en / "results" / "context-dependency" / "coreference-resolution.json"
    records = json.loads(results.read_text())
    del records[0]["correct_answer"]
    results.write_text(json.dumps(records))
    out = calibrate("import", "c3-results", str(c3_en / "results"), "--lang", "en", "--judge-name", "j", ok=False)
    assert "coreference-resolution.json[0]: missing field 'correct_answer' (C3 writes content, problem, correct_answer, " \
           "answer, check_answer" in out.output and counts(calibrate.db) == (0, 0, 0)


# -- superglue -----------------------------------------------------------------------------------

SG = DEMO_DIR / "superglue"


@pytest.mark.parametrize("task", ["boolq", "copa", "cb", "rte", "wic", "wsc", "multirc", "record", "axb", "axg"])
def test_superglue_every_task(calibrate, task):
    calibrate("import", "superglue", "--task", task, str(SG / f"{task}.jsonl"), "--predictions", str(SG / f"{task}.predictions.jsonl"),
              "--system", "m")
    store = Store(calibrate.db)
    items = store.items()
    assert items and all(i.task == f"superglue/{task}" and "response" in i.fields for i in items)


def test_superglue_multirc_is_one_item_per_answer_and_copa_gold_is_shifted(calibrate):
    calibrate("import", "superglue", "--task", "multirc", str(SG / "multirc.jsonl"), "--predictions", str(SG / "multirc.predictions.jsonl"),
              "--system", "m")
    calibrate("import", "superglue", "--task", "copa", str(SG / "copa.jsonl"))
    store = Store(calibrate.db)
    multirc = store.items(task="superglue/multirc")
    assert [(i.source_id, i.reference, i.fields["answer"]) for i in multirc] == [
        ("0/0/0", "True", "All of her friends"), ("0/0/1", "False", "Her teacher")]
    assert multirc[1].fields["response"] == "I think it is false."
    assert store.items(task="superglue/copa")[0].reference == "1"


def test_superglue_record_one_item_per_query_with_entities(calibrate):
    calibrate("import", "superglue", "--task", "record", str(SG / "record.jsonl"))
    item = Store(calibrate.db).items()[0]
    assert item.source_id == "0/0" and item.fields["answers"] == ["Walmart"]
    assert item.fields["entities"] == ["Tracy Morgan", "New Jersey Turnpike", "Walmart"]


def test_a_record_gold_answer_the_file_lists_twice_is_shown_once(calibrate, tmp_path):
    # ReCoRD lists a gold answer once per place it occurs in the passage
    line = json.loads((SG / "record.jsonl").read_text().splitlines()[0])
    line["qas"][0]["answers"] *= 2
    calibrate("import", "superglue", "--task", "record", str(write_jsonl(tmp_path / "r.jsonl", [line])))
    item = Store(calibrate.db).items()[0]
    assert item.fields["answers"] == ["Walmart", "Walmart"] and item.reference == "Walmart"
    assert reference_text(item, TemplateSet().for_task("superglue/record", "en")) == "gold: Walmart"


def test_superglue_record_with_text_where_its_queries_belong_is_a_bad_line(calibrate, tmp_path):
    line = json.loads((SG / "record.jsonl").read_text().splitlines()[0])
    bad = write_jsonl(tmp_path / "record.jsonl", [{**line, "qas": "中文"}])
    out = calibrate("import", "superglue", "--task", "record", str(bad), ok=False)
    assert out.exit_code == 1 and "record.jsonl:1: unexpected field shape" in out.output
    assert counts(calibrate.db) == (0, 0, 0)


def test_prediction_matching_no_item_imports_nothing(calibrate, tmp_path):
    preds = write_jsonl(tmp_path / "p.jsonl", [{"idx": 0, "response": "True"}, {"idx": 99, "response": "False"}])
    out = calibrate("import", "superglue", "--task", "boolq", str(SG / "boolq.jsonl"), "--predictions", str(preds), ok=False)
    assert out.exit_code != 0 and 'p.jsonl:2: prediction idx "99" matches no superglue/boolq item' in out.output
    assert counts(calibrate.db) == (0, 0, 0)


def test_predictions_none_of_which_match_an_item_import_nothing_even_with_skip_bad(calibrate, tmp_path):
    """The system's answers are what such an import is for: where none matches, the gold items
    are not imported without them (as gold-only items, under no system)."""
    (tmp_path / "sys1").mkdir()
    preds = write_jsonl(tmp_path / "sys1" / "p.jsonl", [{"idx": 98, "response": "True"}, {"idx": 99, "response": "no"}])
    out = calibrate("import", "superglue", "--task", "boolq", str(SG / "boolq.jsonl"), "--predictions", str(preds),
                    "--skip-bad", ok=False)
    assert out.exit_code == 1 and " ".join(out.output.split()) == (
        f'Error: {preds}:1: prediction idx "98" matches no superglue/boolq item in {SG / "boolq.jsonl"}; no '
        f"prediction in {preds} matches one: nothing was imported (even with --skip-bad)")
    assert not calibrate.db.exists()


def test_predictions_answering_only_bad_lines_import_nothing_even_with_skip_bad(calibrate, tmp_path):
    """The items the predictions answer fail their checks further on (a field the prompt needs):
    the other lines are not imported gold-only under a summary naming the predictions' system."""
    gold = write_jsonl(tmp_path / "boolq.jsonl", [{"idx": 0, "question": "q0", "label": True},
                                                  {"idx": 1, "question": "q1", "passage": "p1", "label": False}])
    (tmp_path / "sys1").mkdir()
    preds = write_jsonl(tmp_path / "sys1" / "p.jsonl", [{"idx": 0, "response": "True"}])
    out = calibrate("import", "superglue", "--task", "boolq", str(gold), "--predictions", str(preds), "--skip-bad",
                    ok=False)
    assert out.exit_code == 1 and (
        f"Error: no item that {preds} answers is among the records of {gold} read as items (the lines holding them are "
        "bad), so system sys1 would have no superglue/boolq item; nothing was imported: 1 skipped as bad "
        f"({gold}:1: missing field 'passage'") in " ".join(out.output.split()), out.output
    assert not calibrate.db.exists()


def test_a_record_prediction_keyed_by_its_query_idx_answers_that_query(calibrate, tmp_path):
    # the SuperGLUE layout keys ReCoRD predictions by the query idx (unique in the released files)
    line = json.loads((SG / "record.jsonl").read_text().splitlines()[0])
    query = line["qas"][0]["idx"]
    preds = write_jsonl(tmp_path / "p.jsonl", [{"idx": query, "response": "Walmart"}])
    calibrate("import", "superglue", "--task", "record", str(SG / "record.jsonl"), "--predictions", str(preds),
              "--system", "m1")
    (item,) = [i for i in Store(calibrate.db).items() if i.system == "m1"]
    assert item.source_id == f"{line['idx']}/{query}" and item.fields["response"] == "Walmart"
    shared = write_jsonl(tmp_path / "two.jsonl", [line, {**line, "idx": 7}])  # two passages whose query idx is the same
    out = calibrate("--db", str(tmp_path / "two.db"), "import", "superglue", "--task", "record", str(shared),
                    "--predictions", str(preds), "--system", "m1", ok=False)
    assert out.exit_code == 1 and (f'p.jsonl:1: prediction idx "{query}" is the idx of a query in 2 passages'
                                   in " ".join(out.output.split())), out.output


def test_a_record_or_multirc_prediction_whose_idx_is_not_their_object_is_told_the_idx_they_take(calibrate, tmp_path):
    preds = write_jsonl(tmp_path / "p.jsonl", [{"idx": 99, "response": "Walmart"}])
    out = calibrate("import", "superglue", "--task", "record", str(SG / "record.jsonl"), "--predictions", str(preds),
                    ok=False)
    assert out.exit_code != 0 and ('p.jsonl:1: prediction idx "99" matches no superglue/record item in '
                                   f'{SG / "record.jsonl"}; a ReCoRD prediction\'s idx is the idx of the query it answers, '
                                   'or {"passage": …, "query": …}' in " ".join(out.output.split())), out.output
    preds = write_jsonl(tmp_path / "p.jsonl", [{"idx": {"passage": 0, "query": 0}, "response": "True"}])
    out = calibrate("import", "superglue", "--task", "multirc", str(SG / "multirc.jsonl"), "--predictions", str(preds),
                    ok=False)
    assert out.exit_code != 0 and ("p.jsonl:1: idx lacks 'paragraph'; a MultiRC prediction's idx is "
                                   '{"paragraph": …, "question": …, "answer": …}') in " ".join(out.output.split())
    assert counts(calibrate.db) == (0, 0, 0)


def test_superglue_unknown_task(calibrate):
    out = calibrate("import", "superglue", "--task", "squad", str(SG / "boolq.jsonl"), ok=False)
    assert out.exit_code != 0 and "unknown SuperGLUE task 'squad'" in out.output


# -- rubric --------------------------------------------------------------------------------------


def test_rubric_import_with_judge_output(calibrate):
    out = calibrate("import", "rubric", str(DEMO_DIR / "rubric" / "rubric.jsonl"), "--judge-output", "judge_output", "--judge-name", "ds")
    assert "2 items added" in out.output
    store = Store(calibrate.db)
    by_source = {store.item(j.item_id).source_id: j for j in store.judgments()}
    assert json.loads(by_source["r1"].verdict) == {"score_answer": 48.5, "score_reasoning": 42.0}
    assert by_source["r2"].status == "unparsed" and "score_reasoning is not a number" in by_source["r2"].unparsed_reason


def test_a_rubric_output_giving_two_different_scores_is_unparsed_naming_both(calibrate, tmp_path):
    record = json.loads((DEMO_DIR / "rubric" / "rubric.jsonl").read_text().splitlines()[0])
    draft, final = (json.dumps({"score_answer": a, "score_reasoning": r}) for a, r in ((20.0, 20.0), (90.0, 75.25)))
    f = write_jsonl(tmp_path / "r.jsonl", [{**record, "id": "twice", "judge_output": f"{draft}\n修正后：\n{final}"},
                                           {**record, "id": "same", "judge_output": f"{final}\n确认：\n{final}"}])
    calibrate("import", "rubric", str(f), "--judge-output", "judge_output", "--judge-name", "ds")
    store = Store(calibrate.db)
    by_source = {store.item(j.item_id).source_id: j for j in store.judgments()}
    assert (by_source["twice"].status, by_source["twice"].unparsed_reason) == ("unparsed", (
        "2 JSON objects give different scores: score_answer 20.0, score_reasoning 20.0; score_answer 90.0, score_reasoning 75.25"))
    assert json.loads(by_source["same"].verdict) == {"score_answer": 90.0, "score_reasoning": 75.3}, "75.25 rounds up"


def test_a_rubric_output_giving_a_score_twice_as_the_same_number_is_that_score(calibrate, tmp_path):
    """80 and "80" are one score (as "80" alone is); NaN twice is the one NaN, refused as NaN is."""
    record = json.loads((DEMO_DIR / "rubric" / "rubric.jsonl").read_text().splitlines()[0])
    outputs = {"80, '80'": '{"score_answer": 80, "score_reasoning": 70, "score_answer": "80"}',
               "NaN twice": '{"score_answer": NaN, "score_reasoning": 70, "score_answer": NaN}',
               "NaN": '{"score_answer": NaN, "score_reasoning": 70}'}
    f = write_jsonl(tmp_path / "r.jsonl", [{**record, "id": name, "judge_output": text} for name, text in outputs.items()])
    calibrate("import", "rubric", str(f), "--judge-output", "judge_output", "--judge-name", "ds")
    store = Store(calibrate.db)
    by_source = {store.item(j.item_id).source_id: j for j in store.judgments()}
    assert json.loads(by_source["80, '80'"].verdict) == {"score_answer": 80.0, "score_reasoning": 70.0}
    assert by_source["NaN twice"].unparsed_reason == by_source["NaN"].unparsed_reason == (
        "score_answer = nan is outside 0.0-100.0")


def test_rubric_missing_field(calibrate, tmp_path):
    f = write_jsonl(tmp_path / "r.jsonl", [{"question": "q", "content": "c", "answer": "a", "llm_answer": "x"}])
    out = calibrate("import", "rubric", str(f), ok=False)
    assert "r.jsonl:1: missing field 'llm_reasoning'" in out.output


# -- bounded memory ------------------------------------------------------------------------------


def test_jsonl_import_streams(tmp_path, templates, monkeypatch):
    """A generator of 5,000 lines is consumed batch by batch, never held whole: no transaction
    takes more than BATCH_MAX records, however fast the batches are written."""
    from calibrate import formats
    from calibrate.formats.jsonl import jsonl_records

    monkeypatch.setattr(formats, "BATCH", 300)
    monkeypatch.setattr(formats, "BATCH_MAX", 1000)
    f = write_jsonl(tmp_path / "big.jsonl", [{"id": k, **LEX} for k in range(5000)])
    store = Store(tmp_path / "big.db")
    sizes = []
    original = store.add_items

    def spy(batch, **kw):
        sizes.append(len(batch))
        return original(batch, **kw)

    store.add_items = spy
    report = formats.import_records(store, jsonl_records(f, task="c3/lexical", lang="en"), templates)
    assert report.counts.items_added == 5000 and sizes[0] == 300 and max(sizes) <= 1000 and len(sizes) >= 5



def test_the_progress_of_a_read_reaches_the_file_size_in_few_calls(tmp_path):
    """The progress bar is told every MiB, and of the rest at the end: it ends at the file's size."""
    from calibrate.formats import PROGRESS_BYTES, read_jsonl

    f = write_jsonl(tmp_path / "big.jsonl", [{"id": k, **LEX, "pad": "x" * 500} for k in range(5000)])
    told: list[int] = []
    assert sum(1 for _ in read_jsonl(f, told.append)) == 5000
    size = f.stat().st_size
    assert sum(told) == size and len(told) == size // PROGRESS_BYTES + 1


def test_an_import_leaves_the_connection_settings_as_they_were(tmp_path, templates):
    """The bulk settings of an import (cache, checkpoint interval) are undone, also when it fails."""
    from calibrate.formats import ImportFailed, import_records
    from calibrate.formats.jsonl import jsonl_records

    store = Store(tmp_path / "s.db")
    settings = lambda: [store.conn.execute(f"PRAGMA {p}").fetchone()[0] for p in ("cache_size", "wal_autocheckpoint")]  # noqa: E731
    before = settings()
    good = write_jsonl(tmp_path / "good.jsonl", lexical_lines(5))
    import_records(store, jsonl_records(good, task="c3/lexical", lang="en"), templates)
    assert settings() == before
    bad = write_jsonl(tmp_path / "bad.jsonl", [*lexical_lines(5, start=5), "{broken"])
    with pytest.raises(ImportFailed):
        import_records(store, jsonl_records(bad, task="c3/lexical", lang="en"), templates)
    assert settings() == before and store.count_items() == 5


# -- malformed input: a message naming file:line, never a traceback, nothing stored -------------

BAD_LINES = {
    "content as a number": ('{"id": "a", "content": 5, "notation": "n", "response": "r"}', "field 'content' must be text, got number"),
    "content as a list": ('{"id": "a", "content": ["x"], "notation": "n", "response": "r"}', "field 'content' must be text, got list of text"),
    "content as an object": ('{"id": "a", "content": {"x": 1}, "notation": "n", "response": "r"}', "field 'content' must be text, got object"),
    "null id": ('{"id": null, "content": "c", "notation": "n", "response": "r"}', "field 'id' must be a non-empty string or an integer"),
    "empty id": ('{"id": " ", "content": "c", "notation": "n", "response": "r"}', "field 'id' must not be empty"),
    "NaN": ('{"id": "a", "content": "c", "notation": "n", "response": "r", "score": NaN}', "NaN is not a number calibrate accepts"),
    "Infinity": ('{"id": "a", "content": "c", "notation": "n", "response": "r", "score": -Infinity}', "-Infinity is not a number"),
    "5000-digit integer": ('{"id": "a", "content": "c", "notation": "n", "response": "r", "n": ' + "9" * 5000 + "}", "an integer of 5000 digits is too large"),
    "deep nesting": ('{"id": "a", "content": "c", "notation": "n", "response": "r", "deep": ' + "[" * 100000 + "]" * 100000 + "}", "nested too deeply"),
    "lone surrogate": ('{"id": "a", "content": "\\ud800", "notation": "n", "response": "r"}', "lone surrogate"),
}


@pytest.mark.parametrize("case", list(BAD_LINES))
def test_each_malformed_line_is_refused_with_file_and_line(calibrate, tmp_path, case):
    line, message = BAD_LINES[case]
    f = write_jsonl(tmp_path / "in.jsonl", ['{"id": "ok", "content": "c", "notation": "n", "response": "r"}', line])
    out = calibrate("import", "jsonl", str(f), "--task", "c3/lexical", "--lang", "en", ok=False)
    assert out.exit_code == 1 and "in.jsonl:2: " in out.output and message in out.output, out.output
    assert "Traceback" not in out.output and counts(calibrate.db) == (0, 0, 0)


@pytest.mark.parametrize(("value", "named"), [("3", "number"), ('["yes"]', "list of text")])
def test_a_judge_output_that_is_not_text_is_named_as_json_names_it(calibrate, tmp_path, value, named):
    f = write_jsonl(tmp_path / "in.jsonl", ['{"id": "a", "content": "c", "notation": "n", "response": "r", "j": ' + value + "}"])
    out = calibrate("import", "jsonl", str(f), "--task", "c3/lexical", "--lang", "en", "--judge-output", "j",
                    "--judge-name", "jj", ok=False)
    assert out.exit_code == 1 and f"in.jsonl:1: field 'j' must be text, got {named}" in out.output, out.output


def test_a_line_without_judge_output_imports_its_item_with_an_error_judgment(calibrate, tmp_path):
    """A judge output that is null, missing, empty or only whitespace is no verdict, as C3's empty
    check_answer is: the item is imported (people can label it), its judgment is an error, and the
    summary says how many and where. Read again over verdicts, such a file leaves them in force."""
    lines = [{"id": str(k), **LEX, "out": "The answer is: yes."} for k in range(7)]
    lines[1]["out"], lines[3]["out"], lines[6]["out"] = None, "", " \n\t "
    del lines[5]["out"]
    f = write_jsonl(tmp_path / "in.jsonl", lines)
    out = calibrate("import", "jsonl", str(f), "--task", "c3/lexical", "--lang", "en", "--judge-output", "out",
                    "--judge-name", "ext")
    text = " ".join(out.output.split())
    assert "7 records: 7 items added" in text and "7 judgments added" in text and "0 skipped" in text, text
    assert "1 record of ext holds no verdict (no judge output: field 'out' is null): stored as an error, not a " \
           f"verdict ({f}:2)" in text
    assert "field 'out' is empty): stored as an error" in text and "field 'out' is missing): stored as an error" in text
    assert f"field 'out' is only whitespace): stored as an error, not a verdict ({f}:7)" in text, text
    store = Store(calibrate.db)
    stored = {store.item(j.item_id).source_id: (j.status, j.error) for j in store.judgments()}
    store.close()
    assert stored["0"] == ("verdict", None) and stored["5"] == ("error", "no judge output: field 'out' is missing")
    assert [k for k, (status, _) in sorted(stored.items()) if status == "error"] == ["1", "3", "5", "6"]
    same = calibrate("import", "jsonl", str(f), "--task", "c3/lexical", "--lang", "en", "--judge-output", "out",
                     "--judge-name", "ext")
    assert "0 judgments added" in same.output and "holds no verdict" not in same.output, "stored before, said before"
    answered = write_jsonl(tmp_path / "answered.jsonl", [{"id": str(k), **LEX, "out": "The answer is: no."}
                                                         for k in range(7)])
    calibrate("import", "jsonl", str(answered), "--task", "c3/lexical", "--lang", "en", "--judge-output", "out",
              "--judge-name", "later")
    again = " ".join(calibrate("import", "jsonl", str(f), "--task", "c3/lexical", "--lang", "en", "--judge-output",
                               "out", "--judge-name", "later").output.split())
    assert (f"field 'out' is only whitespace): stored as an error, not a verdict ({f}:7); it left the verdict of later "
            "in force there" in again and "later on 6" not in again), again


@pytest.mark.parametrize("command", ["jsonl", "rubric"])
def test_a_judge_output_field_no_line_has_is_refused_naming_the_fields_the_lines_have(calibrate, tmp_path, command):
    """A misspelt --judge-output would make every line's judgment a failed call: the file is
    refused, with the fields its lines do have (and the one meant), and nothing is imported."""
    fields = LEX if command == "jsonl" else {name: "x" for name in ("question", "content", "answer", "llm_answer",
                                                                     "llm_reasoning")}
    lines = [{"id": str(k), **fields, **({"out": "yes"} if k == 2 else {})} for k in range(3)]
    f = write_jsonl(tmp_path / "in.jsonl", lines)
    cell = ["--task", "c3/lexical", "--lang", "en"] if command == "jsonl" else []
    out = calibrate("import", command, str(f), *cell, "--judge-output", "outt", "--judge-name", "ext", ok=False)
    assert out.exit_code == 1 and " ".join(out.output.split()) == (
        f"Error: {f}: no line has the field 'outt' that --judge-output names (did you mean out?); its lines have "
        f"{', '.join(sorted([*fields, 'id', 'out']))}: nothing was imported (each line's judgment would be a failed "
        "call; a line whose judge gave nothing holds the field empty or null)")
    assert not calibrate.db.exists()


def test_an_output_of_characters_that_show_nothing_is_no_output():
    # a zero-width space or a byte order mark alone shows as an empty answer: an error, as whitespace is
    from calibrate.model import no_output

    assert no_output("\u200b") and no_output("\ufeff \n") and no_output(" \u200b\u3000\u2060 ")
    assert not no_output("\u200bThe answer is: yes.") and not no_output("0")


def test_an_integer_id_is_its_digits(calibrate, tmp_path):
    f = write_jsonl(tmp_path / "in.jsonl", [{"id": 7, **LEX}])
    calibrate("import", "jsonl", str(f), "--task", "c3/lexical", "--lang", "en")
    assert Store(calibrate.db).items()[0].source_id == "7"


def test_an_unterminated_csv_quote_is_an_error_naming_its_line(demo_db, tmp_path):
    from tests.conftest import Calibrate

    f = tmp_path / "labels.csv"
    f.write_text('task,lang,source_id,annotator,label,note\n'
                 'c3/lexical,en,ambiguity/semantic/lexical/0,ana,yes,"she said ""maybe\n'
                 'c3/lexical,en,ambiguity/semantic/lexical/0,bo,no,\n', encoding="utf-8")
    out = Calibrate(demo_db)("import", "labels", str(f), ok=False)
    assert out.exit_code == 1 and "labels.csv:2:" in out.output and "unterminated quote" in out.output, out.output
    assert Store(demo_db).current_labels() == []


def test_a_duplicate_prediction_idx_is_an_error(calibrate, tmp_path):
    data = write_jsonl(tmp_path / "boolq.jsonl", [{"idx": 0, "question": "q", "passage": "p", "label": True}])
    preds = write_jsonl(tmp_path / "preds.jsonl", [{"idx": 0, "response": "yes"}, {"idx": 0, "response": "no"}])
    out = calibrate("import", "superglue", "--task", "boolq", str(data), "--predictions", str(preds), "--system", "m", ok=False)
    assert out.exit_code == 1 and "preds.jsonl:2: prediction idx \"0\" repeats" in out.output and "preds.jsonl:1" in out.output
    assert counts(calibrate.db) == (0, 0, 0)


def test_a_declared_field_type_must_be_known_and_an_undeclared_field_is_text(tmp_path):
    from calibrate.templates import TemplateError, TemplateSet

    folder = tmp_path / "mine" / "custom"
    folder.mkdir(parents=True)
    (folder / "manifest.toml").write_text(
        'family = "custom"\n[fields]\ncontent = "number"\n[[template]]\nid = "custom/en/x"\nlang = "en"\n'
        'tasks = ["c3/lexical"]\nrequired = ["content"]\nverdict = "yes_no_en"\n')
    with pytest.raises(TemplateError, match="field 'content' has type 'number'"):
        TemplateSet([tmp_path / "mine"])
    (folder / "manifest.toml").write_text(
        'family = "custom"\n[[template]]\nid = "custom/en/x"\nlang = "en"\ntasks = ["c3/lexical"]\n'
        'required = ["content"]\nverdict = "yes_no_en"\n')
    assert TemplateSet([tmp_path / "mine"]).get("custom/en/x").field_types == {"content": "text"}


# -- imports are recorded runs in short transactions ---------------------------------------------


def lexical_lines(n: int, start: int = 0) -> list[dict]:
    return [{"id": f"s{k}", "content": f"sentence {k}", "notation": "n", "response": "r"} for k in range(start, start + n)]


def test_a_bad_line_after_committed_batches_still_imports_nothing(calibrate, tmp_path):
    from calibrate.formats import BATCH

    f = write_jsonl(tmp_path / "in.jsonl", [*lexical_lines(BATCH * 2 + 5), "{broken"])
    out = calibrate("import", "jsonl", str(f), "--task", "c3/lexical", "--lang", "en", ok=False)
    assert out.exit_code == 1 and f"in.jsonl:{BATCH * 2 + 6}: malformed JSON" in out.output
    store = Store(calibrate.db)
    assert counts(calibrate.db) == (0, 0, 0), "the run's batches were rolled back"
    assert store.conn.execute("SELECT count(*) FROM import_runs").fetchone()[0] == 0


def test_a_failed_import_leaves_nothing_on_items_already_present(calibrate, tmp_path):
    """The judgments a failing import brings to items stored before it (same content) wait for
    its finish as every attachment does: a batch written before the failure leaves none behind,
    and the import said "nothing was imported" truly."""
    from calibrate.formats import BATCH

    n = BATCH * 2 + 5
    calibrate("import", "jsonl", str(write_jsonl(tmp_path / "plain.jsonl", lexical_lines(n))), "--task", "c3/lexical",
              "--lang", "en")
    judged = [{**line, "j": "The answer is: yes."} for line in lexical_lines(n)]
    f = write_jsonl(tmp_path / "judged.jsonl", [*judged, "{broken"])
    args = ("import", "jsonl", str(f), "--task", "c3/lexical", "--lang", "en", "--judge-output", "j", "--judge-name", "jj")
    out = calibrate(*args, ok=False)
    assert out.exit_code == 1 and "nothing was imported" in out.output
    assert counts(calibrate.db) == (n, 0, 0), "no judgment of the failed import on the items already present"
    write_jsonl(f, judged)
    again = " ".join(calibrate(*args).output.split())
    assert f"{n} records: 0 items added, {n} already present, {n} judgments added" in again
    assert counts(calibrate.db) == (n, n, 0)


def test_a_killed_import_leaves_nothing_visible_and_the_next_import_removes_it(calibrate, tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time

    big = write_jsonl(tmp_path / "big.jsonl", lexical_lines(200_000))
    calibrate("import", "jsonl", str(write_jsonl(tmp_path / "one.jsonl", lexical_lines(1, start=10**6))),
              "--task", "c3/lexical", "--lang", "en")
    proc = subprocess.Popen([sys.executable, "-m", "calibrate", "--db", str(calibrate.db), "import", "jsonl", str(big),
                             "--task", "c3/lexical", "--lang", "en"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    store = Store(calibrate.db)
    deadline = time.monotonic() + 60
    while store.conn.execute("SELECT count(*) FROM items").fetchone()[0] < 5000 and time.monotonic() < deadline:
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    written = store.conn.execute("SELECT count(*) FROM items").fetchone()[0]
    assert 5000 <= written < 200_001, "the import was killed half-way"
    assert store.count_items() == 1 and [c["items"] for c in store.status_counts()] == [1], "nothing of it is visible"
    assert store.claim_next("ana") == store.item_ids()[0]
    calibrate("import", "jsonl", str(write_jsonl(tmp_path / "two.jsonl", lexical_lines(1, start=2 * 10**6))),
              "--task", "c3/lexical", "--lang", "en")
    assert store.conn.execute("SELECT count(*) FROM items").fetchone()[0] == 2, "the dead run's rows are gone"
