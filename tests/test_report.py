"""Reports, label import, merge and exports, through the CLI."""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pytest

from calibrate.agreement import two_raters
from calibrate.store import NewItem, NewJudgment, Store
from tests.conftest import Calibrate


@pytest.fixture
def labelled_db(tmp_path):
    """60 lexical items judged by 'gpt'; annotators a, b, c label all items (80-90 % right)."""
    path = tmp_path / "labelled.db"
    store = Store(path)
    rng = np.random.default_rng(1)
    truth = rng.choice(["yes", "no"], 60, p=[0.6, 0.4])
    ids, _ = store.add_items([NewItem("c3/lexical", "en", str(k), {"content": str(k), "notation": "n", "response": "r"})
                              for k in range(60)], with_ids=True)
    flip = lambda v: "no" if v == "yes" else "yes"  # noqa: E731
    verdicts = [t if rng.random() < 0.85 else flip(t) for t in truth]
    verdicts[0] = None  # one unparsed output
    store.add_judgments([
        NewJudgment(item_id=i, judge_name="gpt", judge_key="k", status="verdict" if v else "unparsed", verdict=v,
                    unparsed_reason=None if v else "no verdict line", raw_output=f"The answer is: {v}." if v else "??")
        for i, v in zip(ids, verdicts, strict=True)
    ])
    humans = {}
    for name, accuracy in (("a", 0.9), ("b", 0.85), ("c", 0.8)):
        humans[name] = [t if rng.random() < accuracy else flip(t) for t in truth]
        for i, label in zip(ids, humans[name], strict=True):
            store.annotate(i, name, "label", label=label)
    store.close()
    return path, verdicts, humans


def test_report_json_judge_vs_each_annotator_and_majority(labelled_db):
    path, verdicts, humans = labelled_db
    report = json.loads(Calibrate(path)("report", "--format", "json").output)
    (cell,) = report["cells"]
    assert (cell["task"], cell["lang"], cell["judge"], cell["unparsed"]) == ("c3/lexical", "en", "gpt", 1)
    lines = {line["versus"]: line for line in cell["lines"]}
    assert set(lines) == {"a", "b", "c", "majority"}
    expected = two_raters(verdicts[1:], humans["a"][1:], ["yes", "no"])
    assert lines["a"]["n"] == 59
    assert lines["a"]["stats"]["kappa"]["value"] == pytest.approx(expected.kappa.value)
    assert lines["a"]["verdict"].startswith(f"κ {expected.kappa.value:.2f} [")
    assert cell["ceiling_kind"].startswith("Krippendorff's α, 3 annotators")
    assert "human–human" in lines["a"]["verdict"]
    assert cell["alternative_annotator_test"]["ran"] is True
    assert 0 <= cell["alternative_annotator_test"]["winning_rate"] <= 1


def test_unparsed_as_disagreement(labelled_db):
    path, *_ = labelled_db
    run = Calibrate(path)
    normal = json.loads(run("report", "--format", "json").output)["cells"][0]["lines"][0]
    strict = json.loads(run("report", "--format", "json", "--unparsed-as-disagreement").output)["cells"][0]["lines"][0]
    assert strict["n"] == normal["n"] + 1
    assert "(unparsed)" in strict["stats"]["labels"]
    assert strict["stats"]["raw_agreement"] < normal["stats"]["raw_agreement"]


def test_two_annotators_give_a_cohen_kappa_ceiling(tmp_path):
    store = Store(tmp_path / "two.db")
    ids, _ = store.add_items([NewItem("superglue/rte", "en", str(k), {"premise": "p", "hypothesis": "h"}) for k in range(10)], with_ids=True)
    store.add_judgments([NewJudgment(item_id=i, judge_name="m", judge_key="k", status="verdict", verdict="entailment") for i in ids])
    for n, i in enumerate(ids):
        store.annotate(i, "x", "label", label="entailment" if n < 6 else "not_entailment")
        store.annotate(i, "y", "label", label="entailment" if n < 5 else "not_entailment")
    store.close()
    cell = json.loads(Calibrate(tmp_path / "two.db")("report", "--format", "json").output)["cells"][0]
    x = ["entailment"] * 6 + ["not_entailment"] * 4
    y = ["entailment"] * 5 + ["not_entailment"] * 5
    assert cell["ceiling"]["value"] == pytest.approx(two_raters(x, y).kappa.value)
    assert cell["ceiling_kind"] == "Cohen's κ, n=10"
    assert cell["alternative_annotator_test"]["ran"] is False
    assert "needs 3 or more annotators" in cell["alternative_annotator_test"]["reason"]


@pytest.mark.parametrize("fmt", ["table", "markdown", "json", "csv", "html"])
def test_every_format_works_on_the_demo(demo_db, tmp_path, fmt):
    run = Calibrate(demo_db)
    labels = tmp_path / "labels.jsonl"
    labels.write_text("\n".join(json.dumps(r) for r in [
        {"task": "superglue/boolq", "lang": "en", "source_id": "0", "annotator": "ana", "label": "True"},
        {"task": "superglue/boolq", "lang": "en", "source_id": "1", "annotator": "ana", "label": "False"},
        {"task": "c3/heterograph", "lang": "en", "source_id": "ambiguity/phonological/heterograph/0", "annotator": "ana", "label": "yes"},
    ]) + "\n")
    run("import", "labels", str(labels))
    out = tmp_path / f"report.{fmt}"
    run("report", "--format", fmt, "--out", str(out))
    text = out.read_text(encoding="utf-8")
    assert "superglue/boolq" in text
    if fmt == "json":
        json.loads(text)
    if fmt == "csv":
        rows = list(csv.reader(io.StringIO(text)))
        assert rows[0][:4] == ["task", "lang", "judge", "vs"]
    if fmt == "html":
        assert text.startswith("<!doctype html>") and "<svg" in text
        assert "http://" not in text.replace("http://www.w3.org", "") and "<script" not in text and "<link" not in text
    if fmt == "table":
        assert "κ [95% CI]" in text and "●" in text


def test_report_by_language_merges_tasks(labelled_db):
    path, *_ = labelled_db
    report = json.loads(Calibrate(path)("report", "--format", "json", "--by", "lang").output)
    assert [(c["task"], c["lang"]) for c in report["cells"]] == [("*", "en")]
    bad = Calibrate(path)("report", "--by", "judge", ok=False)
    assert bad.exit_code != 0


# -- labels from elsewhere, merge, export ----------------------------------------------------------


def test_import_labels_jsonl_and_csv_idempotent(demo_db, tmp_path):
    run = Calibrate(demo_db)
    csv_file = tmp_path / "labels.csv"
    csv_file.write_text("task,lang,source_id,annotator,label,note\n"
                        "superglue/copa,en,0,sam,1,easy\n"
                        "c3/pause,zh,ambiguity/phonological/pause/0,sam,是,\n", encoding="utf-8")
    assert "2 labels added" in run("import", "labels", str(csv_file)).output
    assert "0 labels added" in run("import", "labels", str(csv_file)).output
    store = Store(demo_db)
    labels = {(r["task"], r["annotator"]): r["label"] for r in store.current_labels()}
    assert labels == {("superglue/copa", "sam"): "1", ("c3/pause", "sam"): "是"}


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"task": "superglue/copa", "lang": "en", "source_id": "0", "annotator": "s", "label": "3"}, "label '3' is not one of 1, 2"),
        ({"task": "superglue/copa", "lang": "en", "source_id": "77", "annotator": "s", "label": "1"}, "no superglue/copa (en) item with source id '77'"),
        ({"task": "superglue/copa", "lang": "en", "source_id": "0", "label": "1"}, "missing field 'annotator'"),
        ({"task": "rubric/reference", "lang": "zh", "source_id": "r1", "annotator": "s", "label": "great"}, "a rubric label is JSON"),
    ],
)
def test_import_labels_bad_rows(demo_db, tmp_path, row, message):
    f = tmp_path / "l.jsonl"
    f.write_text(json.dumps({"task": "superglue/boolq", "lang": "en", "source_id": "0", "annotator": "s", "label": "True"}) + "\n" + json.dumps(row) + "\n")
    out = Calibrate(demo_db)("import", "labels", str(f), ok=False)
    assert out.exit_code != 0 and f"l.jsonl:2: {message}" in out.output
    assert Store(demo_db).current_labels() == []


def test_merge_folds_an_offline_database_in_once(demo_db, tmp_path, templates):
    from calibrate.demo import load_demo

    offline = Store(tmp_path / "offline.db")
    load_demo(offline, templates)
    item = offline.items(task="c3/lexical")[0]
    judgment = offline.judgments_for_item(item.id)[0]
    first = offline.annotate(item.id, "offline-ann", "override", label="no", judgment_id=judgment.id, note="judge too lenient")
    offline.undo_last("offline-ann")
    offline.annotate(item.id, "offline-ann", "label", label="yes")
    extra = offline.add_items([NewItem("c3/lexical", "en", "new-1", {"content": "c", "notation": "n", "response": "r"})], with_ids=True)[0][0]
    offline.annotate(extra, "offline-ann", "label", label="no")
    offline.close()
    run = Calibrate(demo_db)
    out = run("merge", str(tmp_path / "offline.db"))
    assert "1 items, 0 judgments, 4 annotations added" in out.output
    assert "0 items, 0 judgments, 0 annotations added" in run("merge", str(tmp_path / "offline.db")).output
    store = Store(demo_db)
    merged = store.items_by_source("c3/lexical", "en", item.source_id)[0]
    rows = store.annotations_for_item(merged.id)
    assert [r.action for r in rows] == ["override", "undo", "label"]
    assert rows[1].reverts_id == rows[0].id and rows[0].judgment_id is not None and first
    assert store.current_label(merged.id, "offline-ann") == "yes"


def test_export_jsonl_and_csv(labelled_db, tmp_path):
    path, *_ = labelled_db
    store = Store(path)
    store.annotate(1, "a", "note", note="ambiguous sentence")
    store.close()
    run = Calibrate(path)
    records = [json.loads(line) for line in run("export", "--format", "jsonl").output.splitlines()]
    assert len(records) == 60
    first = records[0]
    assert set(first["labels"]) == {"a", "b", "c"} and first["gold_basis"] in ("unanimous", "majority 2/3")
    assert first["verdicts"]["gpt"]["status"] == "unparsed"
    assert first["notes"] == [{"annotator": "a", "note": "ambiguous sentence", "action": "note"}]
    out = tmp_path / "gold.csv"
    run("export", "--format", "csv", "--out", str(out))
    rows = list(csv.DictReader(out.open(encoding="utf-8")))
    assert len(rows) == 60 and {"label:a", "label:b", "label:c", "verdict:gpt", "gold_label"} <= set(rows[0])


def test_export_c3_layout_with_generation_labels(demo_db, tmp_path):
    store = Store(demo_db)
    generation = store.items(task="c3/generation-pause", lang="zh")[0]
    store.annotate(generation.id, "ana", "label", label="是")
    store.close()
    out_dir = tmp_path / "results"
    out = Calibrate(demo_db)("export", "c3", "--lang", "zh", str(out_dir), "--judge", "demo-judge")
    assert "ambiguity/phonological/generation/pause.json: 1 records" in out.output
    gen = json.loads((out_dir / "ambiguity/phonological/generation/pause.json").read_text())
    assert gen[0]["check_answer"] == "最终答案为：是。" and gen[0]["content"] == "南京市长江大桥"
    tone = json.loads((out_dir / "ambiguity/phonological/generation/tone.json").read_text())
    assert tone[0]["check_answer"] == "", "unlabelled generation items stay empty for a human"
    omission = json.loads((out_dir / "context-dependency/omission-completion.json").read_text())
    assert omission[0]["content"] == "甲：你吃饭了吗？\n乙：吃了。\n" and omission[0]["check_answer"].endswith("最终答案为：否。")
    multi = json.loads((out_dir / "context-dependency/multi-turn.json").read_text())
    assert multi[0]["annotation"] == "中国的首都是哪里？" and "甲说：" in multi[0]["content"]


def test_parallel_item_ranges_give_the_same_data_as_one_pass(labelled_db):
    path, *_ = labelled_db
    store = Store(path)
    store.annotate(5, "d", "label", label="yes")
    one, three = store.agreement_data(parts=1), store.agreement_data(parts=3)
    for name in ("judge_vs_human", "judge_vs_gold", "human_pairs", "shared_labels", "shared_verdicts", "judged"):
        assert sorted(getattr(one, name)) == sorted(getattr(three, name)), name


def test_rubric_cells_are_measured_on_scores_not_as_categories(tmp_path):
    store = Store(tmp_path / "rubric.db")
    fields = {"question": "q", "content": "c", "answer": "a", "llm_answer": "x", "llm_reasoning": "r"}
    ids, _ = store.add_items([NewItem("rubric/reference", "zh", str(k), fields) for k in range(6)], with_ids=True)
    scores = lambda a, r: json.dumps({"score_answer": a, "score_reasoning": r}, sort_keys=True)  # noqa: E731
    store.add_judgments([NewJudgment(item_id=i, judge_name="ds", judge_key="k", status="verdict", verdict=scores(10.0 * k, 50.0))
                         for k, i in enumerate(ids)])
    for name, shift in (("a", 0), ("b", 5), ("c", 10)):
        for k, i in enumerate(ids):
            store.annotate(i, name, "label", label=scores(10.0 * k + shift, 40.0 + k))
    store.close()
    (cell,) = json.loads(Calibrate(tmp_path / "rubric.db")("report", "--format", "json").output)["cells"]
    line = next(line for line in cell["lines"] if line["versus"] == "b")
    assert line["scores"]["score_answer"]["spearman"]["value"] == pytest.approx(1.0)
    assert line["scores"]["score_answer"]["mae"] == pytest.approx(5.0)
    assert cell["ceiling"] is None, "labels that are score pairs are not categories to compute kappa on"
    assert cell["alternative_annotator_test"]["reason"] == "the test compares categorical labels, not scores"
