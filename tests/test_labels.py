"""Human labels made elsewhere (`calibrate import labels`): JSONL and CSV, idempotent, bad rows
named; a gold export read back as each person's labels and notes."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from calibrate.demo import load_demo
from calibrate.kinds import LabelError, VerdictKind
from calibrate.model import NewItem
from calibrate.store import Store
from tests.conftest import Calibrate
from tests.test_formats import lexical_lines, write_jsonl


def test_import_labels_jsonl_and_csv_idempotent(demo_db, tmp_path):
    run = Calibrate(demo_db)
    csv_file = tmp_path / "labels.csv"
    csv_file.write_text("task,lang,system,source_id,annotator,label,note\n"
                        "superglue/copa,en,sdm-alpha,0,sam,1,easy\n"
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

    steps = (("v1", 1, "1", False), ("v2", 1, "2", False), ("v1", 1, "1", True), ("v1", 0, "1", False),
             ("v2", 1, "2", True))
    for name, added, label, put_back in steps:
        out = run("import", "labels", str(files[name]))
        assert f"{added} {'label' if added == 1 else 'labels'} added, {1 - added} already present" in out.stdout, \
            (name, out.output)
        assert in_force() == label, name
        said = "1 label put back a label the person had given the item before, over a newer decision of theirs"
        assert (said in " ".join(out.stderr.split())) == put_back, (name, out.stderr)
    noted = tmp_path / "noted.csv"
    noted.write_text("task,lang,source_id,annotator,label,note\nsuperglue/copa,en,0,bob,2,still 2\n", encoding="utf-8")
    out = run("import", "labels", str(noted))
    assert "0 labels added, 1 already present, 1 more note beside labels" in out.stdout



def test_a_file_labelling_an_item_twice_keeps_the_later_row_in_force_and_says_so(calibrate, tmp_path):
    """A person's corrected label appended to the file stands, on every item (the rows of one
    import are not left to their uids' order), the rows it overrules are left out and named, and
    the file imported again adds nothing."""
    calibrate("import", "jsonl", str(write_jsonl(tmp_path / "in.jsonl", lexical_lines(20))), "--task", "c3/lexical",
              "--lang", "en")
    ids = [str(line["id"]) for line in lexical_lines(20)]
    rows = [f"c3/lexical,en,{source},bob,{first}\nc3/lexical,en,{source},bob,{second}\n"
            for k, source in enumerate(ids) for first, second in [("yes", "no") if k % 2 else ("no", "yes")]]
    twice = tmp_path / "twice.csv"
    twice.write_text("task,lang,source_id,annotator,label\n" + "".join(rows), encoding="utf-8")
    out = calibrate("import", "labels", str(twice))
    assert "20 labels added, 0 already present, 0 skipped; labels read: bob 20" in out.stdout
    assert " ".join(out.stderr.split()).startswith(
        f"20 rows of {twice} left out: a later row labels the same item for the same annotator otherwise, and the "
        f"file's last word stands ({twice}:2 by {twice}:3, {twice}:4 by {twice}:5,")
    store = Store(calibrate.db)
    in_force = {r["source_id"]: r["label"] for r in store.current_labels("bob")}
    assert in_force == {source: "no" if k % 2 else "yes" for k, source in enumerate(ids)}
    assert store.conn.execute("SELECT count(*) FROM annotations WHERE annotator = 'bob'").fetchone()[0] == 20
    assert "0 labels added, 20 already present" in calibrate("import", "labels", str(twice)).stdout


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"task": "superglue/copa", "lang": "en", "source_id": "0", "annotator": "s", "label": "3"}, "label '3' is not one of 1, 2"),
        ({"task": "superglue/copa", "lang": "en", "source_id": "0", "annotator": "s", "label": "0"},
         "label '0' is not one of 1, 2 (the choices count from 1 here, as the prompt shows them: a 0-based 0 is 1)"),
        ({"task": "superglue/copa", "lang": "en", "source_id": "77", "annotator": "s", "label": "1"}, "no superglue/copa (en) item with source id '77'"),
        ({"task": "superglue/copa", "lang": "en", "source_id": "0", "label": "1"}, "missing field 'annotator'"),
        ({"task": "superglue/copa", "lang": "en", "source_id": "0", "annotator": "", "label": "1"},
         "field 'annotator' is empty (a label row has"),
        ({"task": "superglue/copa", "lang": "en", "source_id": "0", "annotator": "s", "label": None},
         "missing field 'label' (a label row has"),
        ({"task": "superglue/copa", "lang": "en", "source_id": "0", "annotator": "s"}, "missing field 'label' (a label"),
        ({"task": "superglue/copa", "lang": "en", "source_id": "0", "annotator": "  ", "label": "1"},
         "field 'annotator' is only spaces: name the person who labelled"),
        ({"task": "superglue/copa", "lang": "en", "system": "my-llm", "source_id": "77", "annotator": "s", "label": "1"},
         "no superglue/copa (en) item of system 'my-llm' with source id '77'"),
        ({"task": "rubric/reference", "lang": "zh", "source_id": "r1", "annotator": "s", "label": "great"}, "a rubric label is JSON"),
        ({"task": "c3/pause", "lang": "zh", "source_id": "ambiguity/phonological/pause/0", "annotator": "s", "label": "是"},
         "c3/pause (zh) item 'ambiguity/phonological/pause/0' exists for systems 'sdm-alpha', 'sdm-beta': add a 'system' column "
         "naming one;"),
        ({"task": "c3/pause", "lang": "zh", "system": None, "source_id": "ambiguity/phonological/pause/0", "annotator": "s",
          "label": "是"}, "no c3/pause (zh) item 'ambiguity/phonological/pause/0' without a system (it has 'sdm-alpha', "
                         "'sdm-beta'; name one in the 'system' column)"),
        ({"task": "c3/pause", "lang": "zh", "system": "sdm-gamma", "source_id": "ambiguity/phonological/pause/0", "annotator": "s",
          "label": "是"}, "no system 'sdm-gamma' for c3/pause (zh) item 'ambiguity/phonological/pause/0' (it has 'sdm-alpha', 'sdm-beta';"),
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


def test_skip_bad_with_every_row_bad_names_the_rows_and_why(demo_db, tmp_path):
    f = tmp_path / "bad.csv"
    f.write_text("task,lang,system,source_id,annotator,label,note\n"
                 "c3/lexical,en,sdm-beta,nope,ana,yes,\nsuperglue/copa,en,sdm-alpha,0,ana,3,\n", encoding="utf-8")
    out = Calibrate(demo_db)("import", "labels", str(f), "--skip-bad", ok=False)
    said = " ".join(out.output.split())
    assert out.exit_code == 1 and "bad.csv: no valid labels; nothing was imported: all 2 skipped as bad" in said
    assert "bad.csv:2: no c3/lexical (en) item of system 'sdm-beta' with source id 'nope'" in said
    assert "bad.csv:3: label '3' is not one of 1, 2" in said
    assert Store(demo_db).current_labels() == []


def test_a_copa_file_counting_from_0_is_refused_whole_even_with_skip_bad(demo_db, tmp_path):
    f = tmp_path / "copa.jsonl"
    f.write_text("".join(json.dumps({"task": "superglue/copa", "lang": "en", "system": "sdm-alpha", "source_id": str(k),
                                     "annotator": "zed", "label": k % 2}) + "\n" for k in range(4)))
    out = Calibrate(demo_db)("import", "labels", str(f), "--skip-bad", ok=False)
    said = " ".join(out.output.split())
    assert out.exit_code == 1 and "copa.jsonl:1: label '0' is not one of 1, 2" in said, said
    assert f"{f} numbers the choices from 0, so its other labels would be read one choice off: nothing was imported" in said
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


def _by_person(db) -> tuple[dict, dict]:
    """Each person's label in force and notes (oldest first) per item identity."""
    store = Store(db)
    try:
        key = {r["id"]: (r["task"], r["lang"], r["system"], r["source_id"])
               for r in store.conn.execute("SELECT * FROM items")}
        labels = {(key[r["item_id"]], r["annotator"]): r["label"] for r in store.current_labels()}
        notes: dict = {}
        for r in store.conn.execute("SELECT item_id, annotator, note FROM annotations WHERE note IS NOT NULL ORDER BY id"):
            notes.setdefault((key[r["item_id"]], r["annotator"]), []).append(r["note"])
        return labels, notes
    finally:
        store.close()


@pytest.fixture
def noted_demo_db(labelled_demo_db) -> Path:
    """The labelled demo (ana and bo: ties and agreements) with notes: bo's with a line break and
    a comma on an item, two of ana's on another, and one by cy, who labels nothing."""
    store = Store(labelled_demo_db)
    tied, agreed = (next(r["item_id"] for r in store.conn.execute(
        "SELECT a.item_id FROM labels_in_force a JOIN labels_in_force b ON b.item_id = a.item_id AND b.annotator = 'bo' "
        f"WHERE a.annotator = 'ana' AND a.label {op} b.label ORDER BY a.item_id")) for op in ("!=", "="))
    store.annotate(tied, "bo", "note", note="the audio cuts out,\nthen comes back")
    store.annotate(agreed, "ana", "note", note="easy")
    store.annotate(agreed, "ana", "note", note="on second thought, hard")
    store.annotate(agreed, "cy", "skip", note="not my language")
    store.close()
    return labelled_demo_db


@pytest.fixture
def unlabelled_demo_db(tmp_path, templates):
    """The same items as the demo, without a label."""
    path = tmp_path / "unlabelled" / "demo.db"
    path.parent.mkdir()
    store = Store(path)
    load_demo(store, templates)
    store.close()
    return path


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_a_gold_export_reads_back_as_each_persons_labels_and_notes(noted_demo_db, unlabelled_demo_db, tmp_path, fmt):
    db = noted_demo_db
    gold = tmp_path / f"gold.{fmt}"
    Calibrate(db)("export", "--format", fmt, "--out", str(gold))
    labels, notes = _by_person(db)
    bo_tied = next(key for key in notes if key[1] == "bo")
    assert labels[(bo_tied[0], "ana")] != labels[bo_tied], "a tie: no gold label, both people's labels"
    run = Calibrate(unlabelled_demo_db)
    out = run("import", "labels", str(gold))
    people = {who: sum(1 for _, by in labels if by == who) for who in ("ana", "bo")}
    assert f"{len(labels)} labels added, 0 already present, " in out.stdout
    assert f"labels read: ana {people['ana']}, bo {people['bo']}" in out.stdout
    assert "refused" not in out.output, "the export's gold label is never read as a person's"
    read_labels, read_notes = _by_person(unlabelled_demo_db)
    assert read_labels == labels
    if fmt == "jsonl":  # each note names its author
        assert read_notes == {key: n for key, n in notes.items() if key[1] != "cy"}
    else:  # a notes cell is read where it holds one note by a person with a label column
        assert read_notes == {bo_tied: ["the audio cuts out,\nthen comes back"]}
    assert "the notes of 1 item left out" in out.stderr  # cy's (and in CSV ana's two, in one cell with cy's)
    again = run("import", "labels", str(gold))
    assert f"0 labels added, {len(labels)} already present" in again.stdout
    assert _by_person(unlabelled_demo_db) == (read_labels, read_notes)
    assert f"0 labels added, {len(labels)} already present" in Calibrate(db)("import", "labels", str(gold)).stdout
    assert _by_person(db) == (labels, notes), "read back into its own database, the export changes nothing"


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_an_export_reads_back_to_the_item_without_a_system_beside_one_with_a_system(tmp_path, fmt):
    # source id 0 exists gold-only (system '') and as system preds' item: the export's empty system names the first
    items = tmp_path / "items.jsonl"
    items.write_text("".join(json.dumps({"id": k, "premise": "p", "hypothesis": "h", "response": "neutral"}) + "\n"
                             for k in range(2)), encoding="utf-8")
    for name in ("from.db", "to.db"):
        for system in ((), ("--system", "preds")):
            Calibrate(tmp_path / name)("import", "jsonl", str(items), "--task", "superglue/cb", "--lang", "en", *system)
    labels = tmp_path / "labels.csv"
    labels.write_text("task,lang,system,source_id,annotator,label\nsuperglue/cb,en,,0,carl,neutral\n"
                      "superglue/cb,en,preds,0,carl,entailment\n", encoding="utf-8")
    Calibrate(tmp_path / "from.db")("import", "labels", str(labels))
    gold = tmp_path / f"gold.{fmt}"
    Calibrate(tmp_path / "from.db")("export", "--format", fmt, "--out", str(gold))
    for name in ("from.db", "to.db"):
        out = Calibrate(tmp_path / name)("import", "labels", str(gold))
        assert "labels read: carl 2" in out.stdout
    assert _by_person(tmp_path / "to.db")[0] == {(("superglue/cb", "en", "", "0"), "carl"): "neutral",
                                                  (("superglue/cb", "en", "preds", "0"), "carl"): "entailment"}
    nulled = tmp_path / "nulled.jsonl"  # null in JSONL is the item without a system too
    nulled.write_text(json.dumps({"task": "superglue/cb", "lang": "en", "system": None, "source_id": "1",
                                  "annotator": "dora", "label": "neutral"}) + "\n", encoding="utf-8")
    Calibrate(tmp_path / "to.db")("import", "labels", str(nulled))
    assert _by_person(tmp_path / "to.db")[0][(("superglue/cb", "en", "", "1"), "dora")] == "neutral"
    without = tmp_path / "without.csv"
    without.write_text("task,lang,source_id,annotator,label\nsuperglue/cb,en,0,dora,neutral\n", encoding="utf-8")
    out = Calibrate(tmp_path / "to.db")("import", "labels", str(without), ok=False)
    assert out.exit_code == 1 and ("without.csv:2: superglue/cb (en) item '0' exists for systems (none), 'preds': add a "
                                   "'system' column naming one (empty for the item without a system)") \
        in " ".join(out.output.split())


def test_a_persons_label_edited_in_a_csv_export_takes_effect(labelled_demo_db, tmp_path):
    run = Calibrate(labelled_demo_db)
    gold = tmp_path / "gold.csv"
    run("export", "--format", "csv", "--out", str(gold))
    rows = list(csv.DictReader(gold.open(encoding="utf-8", newline="")))
    row = next(r for r in rows if r["gold_basis"] == "tie")
    row["label:bo"] = row["label:ana"]  # bo comes round to ana's label
    row["gold_label"] = "nonsense"  # the consolidated label is no one's: never read
    with gold.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    before, _ = _by_person(labelled_demo_db)
    out = run("import", "labels", str(gold))
    assert f"1 label added, {len(before) - 1} already present" in out.stdout
    after, _ = _by_person(labelled_demo_db)
    key = ((row["task"], row["lang"], row["system"], row["source_id"]), "bo")
    assert after == {**before, key: row["label:bo"]}


def test_a_csv_field_in_quotes_may_hold_line_breaks_but_one_left_open_is_named(demo_db, tmp_path):
    f = tmp_path / "l.csv"
    f.write_text('task,lang,source_id,annotator,label,note\n'
                 'superglue/copa,en,0,sam,1,"first line\nsecond, line"\n'
                 'superglue/boolq,en,0,sam,True,\n', encoding="utf-8")
    run = Calibrate(demo_db)
    assert "2 labels added" in run("import", "labels", str(f)).output
    assert _by_person(demo_db)[1] == {(("superglue/copa", "en", "sdm-alpha", "0"), "sam"): ["first line\nsecond, line"]}
    f.write_text('task,lang,source_id,annotator,label,note\nsuperglue/copa,en,0,sam,"2\nsuperglue/boolq,en,0,sam,True,"\n',
                 encoding="utf-8")
    out = run("import", "labels", str(f), ok=False)
    assert "l.csv:2: 5 cells, but the header names 6 (comma-separated; its quotes run on to line 3: one left open?)" \
        in " ".join(out.output.split())
    f.write_text('task,lang,source_id,annotator,label,note\nsuperglue/copa,en,0,sam,2,\n'
                 'superglue/boolq,en,0,sam,False,"left open\nsuperglue/copa,en,2,sam,2,\n', encoding="utf-8")
    for skip_bad in ((), ("--skip-bad",)):
        out = run("import", "labels", *skip_bad, str(f), ok=False)
        assert out.exit_code == 1 and "l.csv:3: malformed CSV (unexpected end of data; an unterminated quote?)" in out.output
        assert {r["label"] for r in Store(demo_db).current_labels()} == {"1", "True"}, "nothing was imported"


def test_a_csv_export_reads_back_what_it_guarded_against_spreadsheets(tmp_path):
    # source ids and an annotator a spreadsheet would run as formulas: the export writes them after an apostrophe
    items = tmp_path / "items.jsonl"
    items.write_text("".join(json.dumps({"id": name, "question": "q?", "passage": "p", "response": "False"}) + "\n"
                             for name in ("@home", "=1+1")), encoding="utf-8")
    labels = tmp_path / "labels.csv"
    labels.write_text("task,lang,source_id,annotator,label,note\nsuperglue/boolq,en,@home,ana,False,\n"
                      "superglue/boolq,en,=1+1,-bo,True,=SUM(A1)\n", encoding="utf-8")
    for name in ("from.db", "to.db"):
        Calibrate(tmp_path / name)("import", "jsonl", str(items), "--task", "superglue/boolq", "--lang", "en")
    Calibrate(tmp_path / "from.db")("import", "labels", str(labels))
    gold = tmp_path / "gold.csv"
    Calibrate(tmp_path / "from.db")("export", "--format", "csv", "--out", str(gold))
    assert "'@home" in gold.read_text(encoding="utf-8"), "the export guards the cell"
    out = Calibrate(tmp_path / "to.db")("import", "labels", str(gold))
    assert "2 labels added" in out.stdout
    store = Store(tmp_path / "to.db")
    read = {(row["source_id"], row["annotator"], row["label"]) for row in store.current_labels()}
    store.close()
    assert read == {("@home", "ana", "False"), ("=1+1", "-bo", "True")}


def test_untimed_labels_of_one_call_are_decisions_in_their_order(tmp_path):
    """Rows without a time given to the store in one call are timed in their order: the later of
    two rows of one person on one item is in force on every item (one timestamp for all left it
    to their uids' order)."""
    store = Store(tmp_path / "s.db")
    ids, _ = store.add_items([NewItem("c3/lexical", "en", str(k), {"content": str(k), "notation": "n", "response": "r"})
                              for k in range(20)], with_ids=True)
    store.add_imported_labels([row for k, item_id in enumerate(ids) for row in (
        (f"a{k}", item_id, "bob", "yes" if k % 2 else "no", None, None, None, None),
        (f"b{k}", item_id, "bob", "no" if k % 2 else "yes", None, None, None, None))])
    assert [store.current_label(item_id, "bob") for item_id in ids] == ["no" if k % 2 else "yes" for k in range(20)]
