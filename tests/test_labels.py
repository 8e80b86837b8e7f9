"""Human labels made elsewhere (`calibrate import labels`): JSONL and CSV, idempotent, bad rows named."""

from __future__ import annotations

import json

import pytest

from calibrate.kinds import LabelError, VerdictKind
from calibrate.store import Store
from tests.conftest import Calibrate


def test_import_labels_jsonl_and_csv_idempotent(demo_db, tmp_path):
    run = Calibrate(demo_db)
    csv_file = tmp_path / "labels.csv"
    csv_file.write_text("task,lang,system,source_id,annotator,label,note\n"
                        "superglue/copa,en,,0,sam,1,easy\n"
                        "c3/pause,zh,sdm-beta,ambiguity/phonological/pause/0,sam,是,\n", encoding="utf-8")
    assert "2 labels added" in run("import", "labels", str(csv_file)).output
    assert "0 labels added" in run("import", "labels", str(csv_file)).output
    store = Store(demo_db)
    labels = {(r["task"], r["system"], r["annotator"]): r["label"] for r in store.current_labels()}
    assert labels == {("superglue/copa", "sdm-alpha", "sam"): "1", ("c3/pause", "sdm-beta", "sam"): "是"}


def test_a_file_returning_to_an_earlier_decision_puts_it_back_in_force(demo_db, tmp_path):
    run = Calibrate(demo_db)
    files = {}
    for name, label, note in (("v1", "1", ""), ("v2", "2", "changed my mind")):
        files[name] = tmp_path / f"{name}.csv"
        files[name].write_text(f"task,lang,source_id,annotator,label,note\nsuperglue/copa,en,0,bob,{label},{note}\n",
                               encoding="utf-8")

    def in_force() -> str:
        store = Store(demo_db)
        try:
            return {r["annotator"]: r["label"] for r in store.current_labels(task="superglue/copa")}["bob"]
        finally:
            store.close()

    for name, added, label in (("v1", 1, "1"), ("v2", 1, "2"), ("v1", 1, "1"), ("v1", 0, "1"), ("v2", 1, "2")):
        out = run("import", "labels", str(files[name])).output
        assert f"{added} labels added, {1 - added} already present" in out, (name, out)
        assert in_force() == label, name


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"task": "superglue/copa", "lang": "en", "source_id": "0", "annotator": "s", "label": "3"}, "label '3' is not one of 1, 2"),
        ({"task": "superglue/copa", "lang": "en", "source_id": "77", "annotator": "s", "label": "1"}, "no superglue/copa (en) item with source id '77'"),
        ({"task": "superglue/copa", "lang": "en", "source_id": "0", "label": "1"}, "missing field 'annotator'"),
        ({"task": "rubric/reference", "lang": "zh", "source_id": "r1", "annotator": "s", "label": "great"}, "a rubric label is JSON"),
        ({"task": "c3/pause", "lang": "zh", "source_id": "ambiguity/phonological/pause/0", "annotator": "s", "label": "是"},
         "c3/pause (zh) item 'ambiguity/phonological/pause/0' exists for systems 'sdm-alpha', 'sdm-beta': add a 'system' column"),
        ({"task": "c3/pause", "lang": "zh", "system": "sdm-gamma", "source_id": "ambiguity/phonological/pause/0", "annotator": "s",
          "label": "是"}, "no system 'sdm-gamma' for c3/pause (zh) item 'ambiguity/phonological/pause/0' (it has 'sdm-alpha', 'sdm-beta')"),
        ({"task": "c3/pause", "lang": "zh", "system": "  ", "source_id": "ambiguity/phonological/pause/0", "annotator": "s",
          "label": "是"}, "'system' is only spaces"),
        ({"task": "superglue/copa", "lang": "en", "source_id": "0", "annotator": "s", "label": "1", "note": 7},
         "'note' must be text, not number"),
        ({"task": "superglue/copa", "lang": "en", "source_id": "0", "annotator": ["s"], "label": "1"},
         "'annotator' must be text, not list of text"),
        ({"task": "superglue/copa", "lang": "en", "source_id": 1.5, "annotator": "s", "label": "1"},
         "'source_id' must be a non-empty string or an integer, not 1.5"),
    ],
)
def test_import_labels_bad_rows(demo_db, tmp_path, row, message):
    f = tmp_path / "l.jsonl"
    f.write_text(json.dumps({"task": "superglue/boolq", "lang": "en", "source_id": "0", "annotator": "s", "label": "True"}) + "\n" + json.dumps(row) + "\n")
    out = Calibrate(demo_db)("import", "labels", str(f), ok=False)
    assert out.exit_code != 0 and f"l.jsonl:2: {message}" in out.output
    assert Store(demo_db).current_labels() == []


def test_labels_match_the_label_set_case_insensitively_where_that_is_unambiguous(demo_db, tmp_path, templates):
    f = tmp_path / "l.csv"
    f.write_text("task,lang,system,source_id,annotator,label,note\n"
                 "superglue/boolq,en,sdm-alpha,0,sam,true,\n"
                 "superglue/cb,en,sdm-alpha,0,sam, Neutral ,\n"
                 "c3/lexical,en,sdm-alpha,ambiguity/semantic/lexical/0,sam,YES,\n", encoding="utf-8")
    assert "3 labels added" in Calibrate(demo_db)("import", "labels", str(f)).output
    labels = {r["task"]: r["label"] for r in Store(demo_db).current_labels()}
    assert labels == {"superglue/boolq": "True", "superglue/cb": "neutral", "c3/lexical": "yes"}
    ambiguous = VerdictKind("label_set", ("Yes", "yes"))
    with pytest.raises(LabelError, match="label 'YES' is not one of Yes, yes"):
        ambiguous.normalize_label("YES")
