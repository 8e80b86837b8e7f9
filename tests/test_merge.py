"""`calibrate merge`: an offline annotator's database folded in."""

from __future__ import annotations

import json
import sqlite3
import tempfile

from calibrate.model import NewItem, NewJudgment
from calibrate.store import Store
from tests.conftest import Calibrate
from tests.test_formats import lexical_lines, write_jsonl
from tests.tui_helpers import rows


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
    assert "1 item, 0 judgments, 4 annotations added" in out.output
    assert "0 items, 0 judgments, 0 annotations added" in run("merge", str(tmp_path / "offline.db")).output
    store = Store(demo_db)
    merged = store.item(store.identity_index("c3/lexical", "en")[(item.system, item.source_id)][0])
    rows = [r for r in map(dict, store.annotation_rows()) if r["item_id"] == merged.id]
    assert [r["action"] for r in rows] == ["override", "undo", "label"]
    assert rows[1]["reverts_id"] == rows[0]["id"] and rows[0]["judgment_id"] is not None and first
    assert store.current_label(merged.id, "offline-ann") == "yes"


def two_copies(tmp_path, n: int = 3) -> tuple[Store, Store, list[int]]:
    """Two databases holding the same items: the team's and an offline annotator's copy."""
    made = [NewItem("c3/lexical", "en", str(k), {"content": f"c{k}", "notation": "n", "response": "r"}) for k in range(n)]
    main, offline = Store(tmp_path / "main.db"), Store(tmp_path / "offline.db")
    ids = main.add_items(made, with_ids=True)[0]
    offline.add_items(made)
    return main, offline, ids


def merge(main: Store, tmp_path, templates):
    from calibrate.merge import merge_database

    other = Store.open_other(tmp_path / "offline.db")
    try:
        return merge_database(main, other, templates)
    finally:
        other.close()


def test_an_older_offline_label_does_not_replace_a_newer_one(tmp_path, templates):
    main, offline, ids = two_copies(tmp_path)
    offline.annotate(ids[0], "ana", "label", label="yes", created_at="2026-01-01T09:00:00.000000+00:00")
    offline.annotate(ids[1], "ana", "label", label="yes", created_at="2026-01-01T11:00:00.000000+00:00")
    main.annotate(ids[0], "ana", "label", label="no", created_at="2026-01-01T10:00:00.000000+00:00")
    main.annotate(ids[1], "ana", "label", label="no", created_at="2026-01-01T10:00:00.000000+00:00")
    offline.close()
    merge(main, tmp_path, templates)
    assert main.current_label(ids[0], "ana") == "no", "the newer label made online stays"
    assert main.current_label(ids[1], "ana") == "yes", "the newer label made offline wins"


def test_merged_judgments_leave_in_force_what_judging_in_one_database_does(tmp_path, templates):
    """Verdicts and failed calls of one judge made offline and here, at interleaved times: after
    the merge the verdicts in force are those of one database where they were all stored in the
    order they were made (the newest by time; a failed call never over a verdict)."""
    main, offline, ids = two_copies(tmp_path, 4)

    def judgment(item: int, hour: int, verdict: str | None) -> NewJudgment:
        return NewJudgment(item_id=ids[item], judge_name="gpt", judge_key="gpt", status="verdict" if verdict else "error",
                           verdict=verdict, raw_output=verdict, error=None if verdict else "HTTP 500",
                           judged_at=f"2026-01-01T{hour:02}:00:00.000000+00:00")
    here = [judgment(0, 10, "no"), judgment(1, 10, "no"), judgment(2, 10, "no"), judgment(3, 10, None)]
    there = [judgment(0, 9, "yes"), judgment(1, 11, "yes"), judgment(2, 11, None), judgment(3, 9, "yes")]
    main.add_judgments(here)
    offline.add_judgments(there)
    offline.close()
    merge(main, tmp_path, templates)
    one = Store(tmp_path / "one.db")
    one.add_items([NewItem("c3/lexical", "en", str(k), {"content": f"c{k}", "notation": "n", "response": "r"})
                   for k in range(4)])
    for made in sorted(here + there, key=lambda j: j.judged_at):
        one.add_judgments([made])
    merged = [main.verdict_in_force(i, "gpt") for i in ids]
    assert [(v["status"], v["verdict"]) for v in merged] == [("verdict", "no"), ("verdict", "yes"), ("verdict", "no"),
                                                             ("verdict", "yes")]
    assert [(v["status"], v["verdict"]) for v in merged] == [
        (v["status"], v["verdict"]) for v in (one.verdict_in_force(i, "gpt") for i in ids)]


def test_an_offline_undo_reverts_only_the_decision_it_names(tmp_path, templates):
    main, offline, ids = two_copies(tmp_path)
    offline.annotate(ids[0], "ana", "label", label="yes", created_at="2026-01-01T09:00:00.000000+00:00")
    offline.undo_last("ana")
    main.annotate(ids[0], "ana", "label", label="no", created_at="2026-01-01T10:00:00.000000+00:00")
    offline.close()
    merge(main, tmp_path, templates)
    assert main.current_label(ids[0], "ana") == "no"
    assert [r["action"] for r in main.annotation_rows()] == ["label", "label", "undo"]


def test_undo_after_merge_restores_the_latest_label_by_time(tmp_path, templates):
    main, offline, ids = two_copies(tmp_path)
    offline.annotate(ids[0], "ana", "label", label="no", created_at="2026-01-01T09:00:00.000000+00:00")
    main.annotate(ids[0], "ana", "label", label="yes", created_at="2026-01-01T08:00:00.000000+00:00")
    offline.close()
    merge(main, tmp_path, templates)
    assert main.current_label(ids[0], "ana") == "no"
    main.annotate(ids[0], "ana", "label", label="yes")
    main.undo_last("ana")
    assert main.current_label(ids[0], "ana") == "no"


def test_merge_refuses_bad_rows_and_reports_them(tmp_path, templates):
    main, offline, ids = two_copies(tmp_path)
    offline.annotate(ids[0], "ana", "label", label="maybe")
    offline.annotate(ids[1], "ana", "label", label="YES")
    offline.annotate(ids[2], "ana", "label", label="no", created_at="yesterday")
    stray = offline.add_items([NewItem("no/such-task", "en", "x", {"content": "c"})], with_ids=True)[0][0]
    offline.annotate(stray, "ana", "label", label="yes")
    offline.close()
    report = merge(main, tmp_path, templates)
    assert report.added["annotations"] == 1 and main.current_label(ids[1], "ana") == "yes", "labels are normalised"
    assert report.refused == {"item": 1, "annotation": 3}
    reasons = "\n".join(report.examples)
    assert "'maybe' is not one of yes, no" in reasons and "not an ISO 8601 time" in reasons
    assert "unknown task 'no/such-task'" in reasons and "its item is not in this database" in reasons
    run = Calibrate(tmp_path / "main.db")
    main.close()
    result = run("merge", str(tmp_path / "offline.db"), ok=False)
    assert result.exit_code == 1 and "refused 3 annotations, 1 item" in result.output
    assert "4 rows of" in result.output and "refused (listed above), not merged" in result.output


def files_beside(path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in path.parent.iterdir() if p.name.startswith(path.name)}


def test_other_is_read_only_and_left_byte_for_byte(tmp_path, templates):
    main, offline, ids = two_copies(tmp_path)
    offline.annotate(ids[0], "ana", "label", label="yes")
    offline.close()
    other = tmp_path / "offline.db"
    before = files_beside(other)
    assert list(before) == ["offline.db"]
    merge(main, tmp_path, templates)
    assert files_beside(other) == before, "no byte changed, no -wal or -shm created"


def test_merge_refuses_what_is_not_a_calibrate_database(tmp_path, demo_db):
    (tmp_path / "notes.txt").write_text("just some text, not a database\n")
    (tmp_path / "empty.db").write_bytes(b"")
    foreign = sqlite3.connect(tmp_path / "foreign.db")
    foreign.execute("CREATE TABLE t (x)")
    foreign.commit()
    foreign.close()
    newer = Store(tmp_path / "newer.db")
    newer.conn.execute("INSERT INTO _sqlite_migrations (migration_set, name, applied_at) VALUES ('calibrate', '9999_future', 'x')")
    newer.close()
    run = Calibrate(demo_db)
    for name, message in (("notes.txt", "not an SQLite database"), ("empty.db", "the file is empty"),
                          ("foreign.db", "not a calibrate one"), ("newer.db", "schema version 9999_future is unknown")):
        path = tmp_path / name
        before = files_beside(path)
        result = run("merge", str(path), ok=False)
        assert result.exit_code == 1 and message in result.output and "Traceback" not in result.output, result.output
        assert files_beside(path) == before, f"{name} was changed"


def test_a_decision_dated_in_the_future_is_refused_and_later_relabels_count(tmp_path, templates):
    from datetime import UTC, datetime, timedelta

    main, offline, ids = two_copies(tmp_path)
    soon = (datetime.now(UTC) + timedelta(minutes=2)).isoformat()  # a clock a little ahead: within the tolerance
    offline.annotate(ids[0], "ana", "label", label="yes", created_at="2099-01-01T00:00:00.000000+00:00")
    offline.annotate(ids[1], "ana", "label", label="yes", created_at=soon)
    offline.annotate(ids[2], "ana", "label", label="yes", created_at="2026-01-01T09:00:00")  # no time zone
    offline.close()
    report = merge(main, tmp_path, templates)
    assert report.added["annotations"] == 1 and report.refused == {"annotation": 2}
    reasons = "\n".join(report.examples)
    assert "2099-01-01T00:00:00.000000+00:00 is ahead of this machine's clock" in reasons and "by more than 5 minutes" in reasons
    assert "has no time zone" in reasons
    main.annotate(ids[0], "ana", "label", label="no")
    assert main.current_label(ids[0], "ana") == "no", "a relabel made now is in force"
    assert main.current_label(ids[1], "ana") == "yes"


def test_times_are_merged_in_utc_so_text_order_is_time_order(tmp_path, templates):
    main, offline, ids = two_copies(tmp_path)
    offline.annotate(ids[0], "ana", "label", label="yes", created_at="2026-01-01T23:00:00-05:00")  # 04:00 UTC
    main.annotate(ids[0], "ana", "label", label="no", created_at="2026-01-02T01:00:00.000000+00:00")
    offline.close()
    merge(main, tmp_path, templates)
    assert main.current_label(ids[0], "ana") == "yes", "the offline label is the later one"
    stamps = [r["created_at"] for r in main.annotation_rows()]
    assert "2026-01-02T04:00:00.000000+00:00" in stamps


def test_merge_blanks_credentials_a_server_echoed_into_the_other_database(tmp_path, demo_db, monkeypatch):
    from calibrate.model import NewJudgment

    monkeypatch.setenv("OPENAI_API_KEY", "team-key-0123456789")
    offline = Store(tmp_path / "offline.db")
    (item,), _ = offline.add_items([NewItem("c3/lexical", "en", "s1", {"content": "c", "notation": "n", "response": "r"})],
                                   with_ids=True)
    offline.add_judgments([NewJudgment(
        item_id=item, judge_name="j", judge_key="k", status="verdict", verdict="yes",
        raw_output="echo team-key-0123456789, Authorization: Bearer team-key-0123456789\nThe answer is: yes.",
        model_reported="m Basic dXNlcjpodW50ZXIy", error=None)])
    offline.close()
    out = Calibrate(demo_db)("merge", str(tmp_path / "offline.db"))
    assert "blanked credentials out of 1 judgment" in out.output
    row = dict(Store(demo_db).conn.execute("SELECT raw_output, model_reported FROM judgments WHERE judge_name = 'j'").fetchone())
    assert row == {"raw_output": "echo ***, Authorization: Bearer ***\nThe answer is: yes.", "model_reported": "m Basic ***"}


def made_by_the_calibrate_before(migration: str, path, n: int = 3):
    """A database at `path` as the calibrate before `migration` made it (its schema up to the
    migration before), holding n lexical items and ana's label 'yes' on the first: written in
    SQL, since this calibrate's code writes columns that schema lacks."""
    from unittest.mock import patch

    import calibrate.store as store_module

    before = store_module.MIGRATION_NAMES.index(migration)
    with patch.object(store_module, "MIGRATION_FILES", store_module.MIGRATION_FILES[:before]), \
            patch.object(store_module, "MIGRATION_NAMES", store_module.MIGRATION_NAMES[:before]):
        Store(path).close()
    conn = sqlite3.connect(path)
    with conn:
        for k in range(n):
            item = NewItem("c3/lexical", "en", str(k), {"content": f"c{k}", "notation": "n", "response": "r"})
            conn.execute("INSERT INTO items (task, lang, source_id, fields, content_hash, imported_at, system, version, "
                         "current) VALUES (?, ?, ?, ?, ?, '2026-01-01T08:00:00.000000+00:00', ?, 1, 1)",
                         (item.task, item.lang, item.source_id, json.dumps(item.fields), item.content_hash, item.system))
        conn.execute("INSERT INTO annotations (uid, item_id, annotator, action, label, blind, created_at) "
                     "VALUES ('old-1', 1, 'ana', 'label', 'yes', 0, '2026-01-01T09:00:00.000000+00:00')")
    conn.close()
    return path


def test_a_database_made_by_an_older_calibrate_is_merged_through_an_upgraded_copy_and_left_as_it_was(
        tmp_path, monkeypatch):
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))
    older = made_by_the_calibrate_before("0013_inspect", tmp_path / "old.db")
    before = files_beside(older)
    run = Calibrate(tmp_path / "main.db")
    out = run("merge", str(older))
    assert (f"merged {older} (made by an older calibrate: read through a copy upgraded to this calibrate's schema; "
            f"{older} is left as it was): 3 items, 0 judgments, 1 annotation added") in " ".join(out.output.split())
    assert files_beside(older) == before, "no byte changed, no -wal or -shm created"
    assert list(temporary.iterdir()) == [], "the copy is removed"
    store = Store(tmp_path / "main.db")
    assert store.current_label(store.identity_index("c3/lexical", "en")[("", "0")][0], "ana") == "yes"
    assert "0 items, 0 judgments, 0 annotations added" in run("merge", str(older)).output


def test_merged_labels_on_versions_update_replaced_here_are_said_not_to_count(tmp_path):
    lines = lexical_lines(4)
    first = write_jsonl(tmp_path / "first.jsonl", lines)
    changed = write_jsonl(tmp_path / "changed.jsonl", [{**line, "content": line["content"] + " CHANGED"}
                                                        if line["id"] in ("s0", "s1") else line for line in lines])
    main, offline = Calibrate(tmp_path / "main.db"), Calibrate(tmp_path / "offline.db")
    for run in (main, offline):
        run("import", "jsonl", str(first), "--task", "c3/lexical", "--lang", "en")
    main("import", "jsonl", str(changed), "--task", "c3/lexical", "--lang", "en", "--update")
    labels = tmp_path / "labels.csv"
    labels.write_text("task,lang,source_id,annotator,label,note\n" + "".join(
        f"c3/lexical,en,{source},carol,yes,\n" for source in ("s0", "s1", "s2")), encoding="utf-8")
    offline("import", "labels", str(labels))
    out = main("merge", str(offline.db))
    assert out.exit_code == 0 and "3 annotations added" in out.output
    assert (f"2 labels merged from {offline.db} stay with the versions --update replaced and no longer count "
            "(carol on s0, carol on s1): label the new versions (calibrate annotate)") in " ".join(out.stderr.split())
    again = main("merge", str(offline.db))
    assert "0 annotations added" in again.output and "no longer count" not in again.stderr


def lexical_file(path, verdict: str | None = None, n: int = 4, changed: str = "", said: str = "The answer is"):
    """n lexical items as a JSONL file; with `verdict`, each line carries a judge's output giving
    it in field 'out' ("{said}: {verdict}."); `changed` is added to every item's content."""
    out = {"out": f"{said}: {verdict}."} if verdict else {}
    return write_jsonl(path, [{**line, "content": line["content"] + changed, **out} for line in lexical_lines(n)])


def test_an_item_held_here_with_other_content_is_refused_with_its_fields_and_nothing_of_it_is_merged(tmp_path):
    """Here the judge's output field was imported as an item field; the other database named it
    with --judge-output, so the same identity holds other content in each."""
    main, offline = Calibrate(tmp_path / "main.db"), Calibrate(tmp_path / "offline.db")
    main("import", "jsonl", str(lexical_file(tmp_path / "three.jsonl", "no", 3)), "--task", "c3/lexical", "--lang", "en")
    judged = lexical_file(tmp_path / "judged.jsonl", "no")  # one item more: s3, new to main
    offline("import", "jsonl", str(judged), "--task", "c3/lexical", "--lang", "en", "--judge-output", "out",
            "--judge-name", "J")
    (tmp_path / "dan.csv").write_text("task,lang,source_id,annotator,label\nc3/lexical,en,s1,dan,no\n", encoding="utf-8")
    offline("import", "labels", str(tmp_path / "dan.csv"))
    out = main("merge", str(offline.db), ok=False)
    said = " ".join(out.output.split())
    assert out.exit_code == 1 and "Traceback" not in said, out.output
    assert "1 item, 1 judgment, 0 annotations added" in said and "refused 1 annotation, 3 items, 3 judgments" in said
    for source in ("s0", "s1", "s2"):
        assert (f"item c3/lexical (en) {source}: this database holds its version 1 with other content (fields only "
                "here: 'out'): the two imports read the same record differently (an option such as --judge-output or "
                "--reference-field in one and not the other?), so merging never joins them: bring its labels with "
                "`calibrate --db OTHER export --out labels.jsonl` and `calibrate import labels labels.jsonl` here") in said
    assert "7 rows of" in said and "refused (listed above), not merged" in said
    in_force = "SELECT i.source_id FROM verdicts_in_force v JOIN items i ON i.id = v.item_id ORDER BY 1"
    store = Store(main.db)
    assert [r[0] for r in store.conn.execute(in_force)] == ["s3"], "only the item new here came with its judgment"
    store.close()
    main("import", "jsonl", str(judged), "--task", "c3/lexical", "--lang", "en", "--judge-output", "out", "--judge-name", "J")
    store = Store(main.db)
    assert [r[0] for r in store.conn.execute(in_force)] == ["s0", "s1", "s2", "s3"], "the advice brings the judgments"
    store.close()
    offline("export", "--out", str(tmp_path / "labels.jsonl"))
    main("import", "labels", str(tmp_path / "labels.jsonl"))
    assert rows(main.db, "SELECT l.annotator, i.source_id FROM labels_in_force l JOIN items i ON i.id = l.item_id") == \
        [("dan", "s1")], "and its labels"


def test_an_item_whose_content_changed_is_refused_until_update_records_it_here(tmp_path):
    main, offline = Calibrate(tmp_path / "main.db"), Calibrate(tmp_path / "offline.db")
    main("import", "jsonl", str(lexical_file(tmp_path / "first.jsonl")), "--task", "c3/lexical", "--lang", "en")
    corrected = lexical_file(tmp_path / "corrected.jsonl", changed=" (corrected)")
    offline("import", "jsonl", str(corrected), "--task", "c3/lexical", "--lang", "en")
    labels = tmp_path / "labels.csv"
    labels.write_text("task,lang,source_id,annotator,label\n" + "".join(
        f"c3/lexical,en,{source},carol,yes\n" for source in ("s0", "s1")), encoding="utf-8")
    offline("import", "labels", str(labels))
    out = main("merge", str(offline.db), ok=False)
    said = " ".join(out.output.split())
    assert out.exit_code == 1 and "refused 2 annotations, 4 items" in said
    assert ("item c3/lexical (en) s0: this database holds its version 1 with other content (fields that differ: "
            "'content'): import the file the other database read it from here and pass --update to record this "
            "content as a new version (labels stay with the version they were made on), then merge again") in said
    main("import", "jsonl", str(corrected), "--task", "c3/lexical", "--lang", "en", "--update")
    again = main("merge", str(offline.db))
    assert "0 items, 0 judgments, 2 annotations added" in again.output


def test_merge_lists_the_verdicts_in_force_it_changed_as_an_import_does(tmp_path):
    here, there = Calibrate(tmp_path / "main.db"), Calibrate(tmp_path / "offline.db")
    judge = ("--task", "c3/lexical", "--lang", "en", "--judge-output", "out", "--judge-name", "J")
    here("import", "jsonl", str(lexical_file(tmp_path / "no.jsonl", "no")), *judge)
    there("import", "jsonl", str(lexical_file(tmp_path / "yes.jsonl", "yes")), *judge)  # judged later
    older = here.db.with_name("older.db")
    older.write_bytes(here.db.read_bytes())
    out = here("merge", str(there.db))
    assert "4 judgments" in out.output
    assert ("4 verdicts in force changed by this merge (J on s0: no -> yes, J on s1: no -> yes, J on s2: no -> yes, "
            "J on s3: no -> yes): a judge's newest judgment of an item is the one in force") in " ".join(out.stderr.split())
    quiet = there("merge", str(older))
    assert "4 judgments" in quiet.output and "changed" not in quiet.stderr, "older judgments change no verdict in force"


def test_a_verdict_merged_batches_changed_and_changed_back_is_not_said_to_change(tmp_path, monkeypatch):
    here, there = Calibrate(tmp_path / "main.db"), Calibrate(tmp_path / "offline.db")
    judge = ("--task", "c3/lexical", "--lang", "en", "--judge-output", "out", "--judge-name", "J")
    here("import", "jsonl", str(lexical_file(tmp_path / "no.jsonl", "no", 1)), *judge)
    there("import", "jsonl", str(lexical_file(tmp_path / "yes.jsonl", "yes", 1)), *judge)
    there("import", "jsonl", str(lexical_file(tmp_path / "no-again.jsonl", "no", 1, said="So the answer is")), *judge)
    monkeypatch.setattr("calibrate.merge.BATCH", 1)  # one judgment a batch: yes in force after the first, no after the second
    out = here("merge", str(there.db))
    assert "2 judgments" in out.output and "changed" not in out.stderr, out.stderr
