"""Exports: gold labels as JSONL and CSV (formats/gold) and C3's own result files (formats/c3)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from calibrate.store import Store
from tests.conftest import Calibrate


def test_export_jsonl_and_csv(labelled_db, tmp_path):
    path, *_ = labelled_db
    store = Store(path)
    store.annotate(1, "a", "note", note="ambiguous sentence")
    store.close()
    run = Calibrate(path)
    exported = run("export", "--format", "jsonl")
    records = [json.loads(line) for line in exported.stdout.splitlines()]
    assert len(records) == 60
    assert {r["trust"]["gpt"] for r in records} == {"needs a person"}
    assert "no confidence threshold certified in 1 cell" in exported.stderr, "the marks without confidences are said"
    assert "no items have both a judge confidence and a human label" in " ".join(exported.stderr.split())
    first = records[0]
    assert set(first["labels"]) == {"a", "b", "c"} and first["gold_basis"] in ("unanimous", "majority 2/3")
    assert first["verdicts"]["gpt"]["status"] == "unparsed"
    assert first["notes"] == [{"annotator": "a", "note": "ambiguous sentence", "action": "note"}]
    out = tmp_path / "gold.csv"
    run("export", "--format", "csv", "--out", str(out))
    rows = list(csv.DictReader(out.open(encoding="utf-8")))
    assert len(rows) == 60 and {"label:a", "label:b", "label:c", "verdict:gpt", "gold_label"} <= set(rows[0])


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_an_export_counts_the_items_it_writes_on_a_terminals_stderr(labelled_db, tmp_path, fmt, monkeypatch):
    """At a million items an export takes seconds: on a terminal a bar counts the items written
    (in batches of a few thousand; two here), then goes, leaving the file and its line."""
    import io

    from rich.console import Console

    from calibrate import cli
    from calibrate.store import export_rows

    path, *_ = labelled_db
    screen = io.StringIO()
    monkeypatch.setattr(cli, "err_console", Console(file=screen, force_terminal=True, width=100))
    monkeypatch.setattr(export_rows, "RANGE", 32)
    out = tmp_path / f"gold.{fmt}"
    result = Calibrate(path)("export", "--format", fmt, "--out", str(out))
    assert f"exporting {fmt}" in screen.getvalue() and "60/60 items" in screen.getvalue()
    assert result.stdout == f"wrote 60 items to {out}\n" and len(out.read_bytes().splitlines()) == 60 + (fmt == "csv")


def test_export_c3_layout_with_generation_labels(demo_db, tmp_path):
    store = Store(demo_db)
    generation = store.items(task="c3/generation-pause", lang="zh", system="sdm-alpha")[0]
    store.annotate(generation.id, "ana", "label", label="是")
    store.close()
    out = Calibrate(demo_db)("export", "c3", "--lang", "zh", "--system", "sdm-alpha", str(tmp_path), "--judge", "demo-judge")
    out_dir = tmp_path / "demo-judge"
    assert "demo-judge/ambiguity/phonological/generation/pause.json: 1 record\n" in out.output
    gen = json.loads((out_dir / "ambiguity/phonological/generation/pause.json").read_text())
    assert gen[0]["check_answer"] == "最终答案为：是。" and gen[0]["content"] == "南京市长江大桥"
    tone = json.loads((out_dir / "ambiguity/phonological/generation/tone.json").read_text())
    assert tone[0]["check_answer"] == "", "unlabelled generation items stay empty for a human"
    omission = json.loads((out_dir / "context-dependency/omission-completion.json").read_text())
    assert omission[0]["content"] == "甲：你吃饭了吗？\n乙：吃了。\n" and omission[0]["check_answer"].endswith("最终答案为：否。")
    multi = json.loads((out_dir / "context-dependency/multi-turn.json").read_text())
    assert multi[0]["annotation"] == "中国的首都是哪里？" and "甲说：" in multi[0]["content"]


def test_export_c3_into_a_folder_holding_another_systems_files_is_refused_before_writing(demo_db, tmp_path):
    calibrate = Calibrate(demo_db)
    export = ("export", "c3", str(tmp_path), "--lang", "en", "--judge", "demo-judge", "--system")
    calibrate(*export, "sdm-alpha")
    tree = tmp_path / "demo-judge"
    before = {path: path.read_bytes() for path in tree.rglob("*.json")}
    assert "ambiguity/phonological/generation.json" in {p.relative_to(tree).as_posix() for p in before}
    refused = calibrate(*export, "sdm-beta", ok=False)
    assert refused.exit_code == 1
    assert (f"{tree} holds 2 result files this export would not write (ambiguity/phonological/generation.json, "
            "context-dependency/multi-turn.json), left by an earlier export") in " ".join(refused.output.split())
    assert {path: path.read_bytes() for path in tree.rglob("*.json")} == before, "nothing written"
    again = calibrate(*export, "sdm-alpha")  # the same system's files are written again over their own
    assert "english_result_data.json" in again.output
    assert {path: path.read_bytes() for path in tree.rglob("*.json")} == before


def test_csv_exports_neutralise_cells_a_spreadsheet_would_run(tmp_path):
    from calibrate.model import NewItem

    path = tmp_path / "f.db"
    store = Store(path)
    (item_id,), _ = store.add_items([NewItem("c3/lexical", "en", "=HYPERLINK(\"http://x\")", {"content": "c"})], with_ids=True)
    store.annotate(item_id, "@ana", "label", label="yes")
    store.annotate(item_id, "@ana", "note", note="+1 agreed")
    store.close()
    rows = list(csv.reader(Calibrate(path)("export", "--format", "csv").output.splitlines()))
    cells = [cell for row in rows for cell in row]
    assert "'=HYPERLINK(\"http://x\")" in cells and "'@ana: +1 agreed" in cells
    assert not [c for c in cells if c[:1] in ("=", "+", "@") or (c[:1] == "-" and not c[1:2].isdigit())]


def test_a_csv_export_has_verdict_and_trust_columns_for_more_judges_than_sqlite_joins_tables(tmp_path):
    from calibrate.model import NewItem, NewJudgment

    judges = 70  # SQLite joins at most 64 tables: the columns must not be one join per judge
    path = tmp_path / "f.db"
    store = Store(path)
    (item_id,), _ = store.add_items([NewItem("c3/lexical", "en", "a/0", {"content": "c"})], with_ids=True)
    store.add_judgments([NewJudgment(item_id=item_id, judge_name=f"judge{k:02}", judge_key=f"judge{k:02}",
                                     status="verdict", verdict="yes") for k in range(judges)])
    store.close()
    Calibrate(path)("export", "--format", "csv", "--out", str(tmp_path / "out.csv"))
    header, row = csv.reader((tmp_path / "out.csv").read_text().splitlines())
    assert [name for name in header if name.startswith("verdict:")] == [f"verdict:judge{k:02}" for k in range(judges)]
    assert [cell for name, cell in zip(header, row, strict=True) if name.startswith("verdict:")] == ["yes"] * judges
    # no threshold is certified without labels: every verdict needs a person
    assert [cell for name, cell in zip(header, row, strict=True) if name.startswith("trust:")] == ["needs a person"] * judges


def test_a_csv_export_of_rubric_scores_gives_each_score_a_column_of_its_own(tmp_path, labelled_db):
    from tests.test_report import two_scorers_db

    two_scorers_db(tmp_path / "r.db")
    run = Calibrate(tmp_path / "r.db")
    out = tmp_path / "gold.csv"
    run("export", "--format", "csv", "--out", str(out))
    rows = list(csv.DictReader(out.open(encoding="utf-8")))
    assert [r["gold_label:score_answer"] for r in rows] == ["20.0", "35.0", "45.0", "75.0", "95.0", "55.0"], \
        "the gold is the mean of ana's and bob's scores, a number per cell"
    assert [r["score_reasoning:bob"] for r in rows] == ["20.0", "40.0", "50.0", "70.0", "100.0", "60.0"]
    assert [r["verdict:ds:score_answer"] for r in rows] == ["10.0", "30.0", "50.0", "70.0", "90.0", ""], \
        "an unparsed verdict has no score"
    assert rows[0]["gold_basis"] == "mean of 2" and json.loads(rows[0]["label:ana"])["score_answer"] == 20.0, \
        "the JSON cells stay, which import labels reads back"
    line = json.loads(run("export").stdout.splitlines()[0])
    assert "gold_label:score_answer" not in line and json.loads(line["gold_label"])["score_answer"] == 20.0, "JSONL as before"
    header = Calibrate(labelled_db[0])("export", "--format", "csv").output.splitlines()[0]
    assert "score_answer" not in header, "no score columns where no kind has scores"


def test_the_note_on_marks_names_a_cell_of_scores_whose_verdicts_all_need_a_person(tmp_path):
    """A rubric judge's scores are each marked 'needs a person' (no threshold accepts a score):
    the note that says which cells' verdicts are all so marked names their cell too, and why."""
    from tests.test_report import two_scorers_db

    two_scorers_db(tmp_path / "r.db")
    out = Calibrate(tmp_path / "r.db")("export", "--out", str(tmp_path / "gold.jsonl"))
    lines = [json.loads(line) for line in (tmp_path / "gold.jsonl").read_text(encoding="utf-8").splitlines()]
    assert {line["trust"]["ds"] for line in lines} == {"needs a person"}
    said = " ".join(out.stderr.split())
    assert "no confidence threshold certified in 1 cell" in said
    assert "rubric/reference zh (ds): the verdicts are scores, which no confidence threshold accepts" in said


def test_a_score_edited_in_its_column_of_a_csv_export_is_imported_or_refused_never_dropped(tmp_path):
    # the score columns are what a spreadsheet user edits: an edit there that the label's JSON cell does not say too
    # cannot be told from an edit of the JSON cell, so it is refused naming both; with the JSON cell emptied, the
    # columns are the label
    from tests.test_report import two_scorers_db

    two_scorers_db(tmp_path / "r.db")
    out = tmp_path / "gold.csv"
    Calibrate(tmp_path / "r.db")("export", "--format", "csv", "--out", str(out))
    rows = list(csv.DictReader(out.open(encoding="utf-8")))

    def written(edit, added: tuple[str, ...] = ()) -> Path:
        edited = [dict(r) for r in rows]
        edit(edited[0])
        path = tmp_path / "edited.csv"
        with path.open("w", encoding="utf-8", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=[*rows[0], *added], restval="")
            writer.writeheader()
            writer.writerows(edited)
        return path

    two_scorers_db(tmp_path / "copy.db")
    run = Calibrate(tmp_path / "copy.db")
    refused = run("import", "labels", str(written(lambda r: r.update({"score_answer:ana": "12.5"}))), ok=False)
    assert refused.exit_code == 1
    assert "score_answer:ana 12.5, score_reasoning:ana 20, where label:ana is" in " ".join(refused.output.split())
    taken = run("import", "labels", str(written(lambda r: r.update({"score_answer:ana": "12.5", "label:ana": ""}))))
    assert "1 label added" in " ".join(taken.output.split()), taken.output
    store = Store(tmp_path / "copy.db")
    try:
        (label,) = [r["label"] for r in store.conn.execute(
            "SELECT l.label FROM labels_in_force l JOIN items i ON i.id = l.item_id WHERE l.annotator = 'ana' "
            "AND i.source_id = '0'")]
    finally:
        store.close()
    assert json.loads(label) == {"score_answer": 12.5, "score_reasoning": 20.0}
    def fresh(name: str) -> Calibrate:
        two_scorers_db(tmp_path / name)
        return Calibrate(tmp_path / name)

    rounded = fresh("rounded.db")("import", "labels", str(written(lambda r: r.update({"score_reasoning:ana": "20.04"}))))
    assert "0 labels added" in " ".join(rounded.output.split()), "20.04 is stored as 20.0, what label:ana says"
    half = fresh("half.db")("import", "labels", str(written(lambda r: r.update({
        "score_answer:bob": "20.25", "label:bob": json.dumps({"score_answer": 20.2, "score_reasoning": 20.0})}))), ok=False)
    assert half.exit_code == 1, "20.25 is stored as 20.3 (half up), not label:bob's 20.2"
    dee = fresh("dee.db")("import", "labels", str(written(
        lambda r: r.update({"score_answer:dee": "70", "score_reasoning:dee": "60"}), ("score_answer:dee", "score_reasoning:dee"))))
    assert "1 label added" in " ".join(dee.output.split()), "score columns of a person without a label:NAME column"
    unchanged = fresh("same.db")("import", "labels", str(out))
    assert "0 labels added" in " ".join(unchanged.output.split()), "the export as written adds nothing to its database"


def test_an_export_of_one_system_says_only_the_trust_refusals_of_its_own_cells(demo_db, tmp_path):
    """The note on verdicts marked 'needs a person' counts the cells (task, language, judge) the
    exported system's items are judged in, not every cell of the database."""
    store = Store(demo_db)
    own = {(task, lang, judge) for task, lang, system, judge in store.judged_cells() if system == "sdm-beta"}
    every = {(task, lang, judge) for task, lang, _, judge in store.judged_cells()}
    store.close()
    assert 0 < len(own) < len(every)
    out = Calibrate(demo_db)("export", "--system", "sdm-beta", "--out", str(tmp_path / "beta.jsonl"))
    assert f"no confidence threshold certified in {len(own)} cells" in out.stderr, out.stderr
