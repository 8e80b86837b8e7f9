"""The agreement report through the CLI: lines per annotator and majority, ceilings, formats, cells."""

from __future__ import annotations

import csv
import io
import json

import pytest

from calibrate.agreement import two_raters
from calibrate.model import NewItem, NewJudgment
from calibrate.store import Store
from tests.conftest import Calibrate


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
        {"task": "c3/heterograph", "lang": "en", "system": "sdm-alpha", "source_id": "ambiguity/phonological/heterograph/0",
         "annotator": "ana", "label": "yes"},
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


def test_report_by_language_merges_tasks(labelled_db):
    path, *_ = labelled_db
    report = json.loads(Calibrate(path)("report", "--format", "json", "--by", "lang").output)
    assert [(c["task"], c["lang"]) for c in report["cells"]] == [("*", "en")]
    bad = Calibrate(path)("report", "--by", "judge", ok=False)
    assert bad.exit_code != 0
