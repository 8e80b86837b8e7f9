"""The store: migrations, idempotent items, append-only annotations, labels, leases."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from calibrate import store as store_module
from calibrate.merge import merge_database
from calibrate.model import NewItem, NewJudgment
from calibrate.store import Store
from tests.conftest import Calibrate, as_made_before_0028

SCHEMA_DUMP = Path(__file__).parents[1] / "db" / "schema.sql"


MIGRATIONS = ["0001_initial", "0002_current_labels_by_latest_id", "0003_labels_in_force", "0004_systems", "0005_audio",
              "0006_judgment_samples", "0007_import_runs", "0008_counts_in_force", "0009_cleanup_indexes",
              "0010_run_leases", "0011_judge_runs", "0013_inspect", "0014_irregular_verdicts",
              "0015_verdicts_by_majority", "0016_verdict_after_last_repeat_removed", "0017_cell_verdicts",
              "0018_verdict_sets", "0019_unparsed_reasons", "0020_score_sets", "0021_trigger_work_per_batch",
              "0022_stratified_orders", "0023_shared_items", "0024_batch_exports", "0025_configuration_counts",
              "0026_judge_run_process", "0027_facts_as_columns", "0028_failed_calls_and_older_evals_out_of_force",
              "0029_abandoned_imports_take_their_labels"]


def items(n: int, task: str = "c3/lexical", lang: str = "en") -> list[NewItem]:
    return [NewItem(task, lang, str(k), {"content": f"c{k}", "notation": "n", "response": "r"}) for k in range(n)]


def test_fresh_database_is_migrated_to_the_documented_schema(tmp_path):
    store = Store(tmp_path / "x.db")
    assert store.applied_migrations() == MIGRATIONS
    assert store.schema_sql() == SCHEMA_DUMP.read_text(encoding="utf-8"), (
        "db/schema.sql is out of date: regenerate it with "
        "`python -c 'from calibrate.store import Store; print(Store().schema_sql(), end=\"\")' > db/schema.sql`"
    )
    tables = {r[0] for r in store.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"items", "judgments", "annotations", "leases"} <= tables
    assert store.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_reopening_applies_no_migration_twice(tmp_path):
    Store(tmp_path / "x.db").close()
    store = Store(tmp_path / "x.db")
    assert store.applied_migrations() == MIGRATIONS


def test_every_foreign_key_has_an_index_for_clean_up(tmp_path):
    """Deleting a row makes SQLite look up the rows that reference it: without an index on the
    referencing column, each deletion reads the whole table (clean-up grows with the square of
    what it removes)."""
    store = Store(tmp_path / "x.db")
    tables = [r[0] for r in store.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    unindexed = []
    for table in tables:
        leading = {store.conn.execute(f"PRAGMA index_info('{index['name']}')").fetchone()["name"]
                   for index in store.conn.execute(f"PRAGMA index_list('{table}')")}
        for key in store.conn.execute(f"PRAGMA foreign_key_list('{table}')"):
            if key["from"] not in leading:
                unindexed.append(f"{table}.{key['from']} -> {key['table']}")
    assert unindexed == []


def test_adding_the_same_items_again_is_a_no_op(store):
    _, added = store.add_items(items(5))
    assert added == 5
    ids, added_again = store.add_items(items(5), with_ids=True)
    assert added_again == 0 and len(set(ids)) == 5
    assert store.count_items() == 5


def test_annotations_are_append_only(store):
    (item_id,), _ = store.add_items(items(1), with_ids=True)
    store.annotate(item_id, "ann", "label", label="yes")
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        store.conn.execute("UPDATE annotations SET label = 'no'")
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        store.conn.execute("DELETE FROM annotations")


def test_current_label_is_the_latest_and_undo_appends(store):
    (item_id,), _ = store.add_items(items(1), with_ids=True)
    store.annotate(item_id, "ann", "confirm", label="yes")
    store.annotate(item_id, "ann", "override", label="no")
    assert store.current_label(item_id, "ann") == "no"
    undone = store.undo_last("ann")
    assert undone.label == "no"
    assert store.current_label(item_id, "ann") == "yes"
    store.undo_last("ann")
    assert store.current_label(item_id, "ann") is None
    actions = [r["action"] for r in map(dict, store.annotation_rows()) if r["item_id"] == item_id]
    assert actions == ["confirm", "override", "undo", "undo"]
    assert store.current_labels() == []


def test_undo_of_a_skip_keeps_the_label(store):
    (item_id,), _ = store.add_items(items(1), with_ids=True)
    store.annotate(item_id, "ann", "label", label="yes")
    store.annotate(item_id, "ann", "skip")
    store.undo_last("ann")
    assert store.current_label(item_id, "ann") == "yes"


def test_claim_never_gives_a_held_item_to_another_annotator(store):
    store.add_items(items(3))
    a = store.claim_next("a")
    b = store.claim_next("b")
    assert a != b
    assert store.claim_next("a") == a, "an annotator's own lease comes back to them"


def test_claim_honours_overlap(store):
    store.add_items(items(2))
    first = store.claim_next("a", overlap=2)
    assert store.claim_next("b", overlap=2) == first
    assert store.claim_next("c", overlap=2) != first
    store.annotate(first, "a", "label", label="yes")
    store.annotate(first, "b", "label", label="no")
    assert store.claim_next("d", overlap=2) != first


def test_expired_lease_comes_back(store):
    store.add_items(items(1))
    item_id = store.claim_next("crashed", lease_seconds=0.05)
    assert store.claim_next("other") is None
    time.sleep(0.1)
    assert store.claim_next("other") == item_id


def test_decided_items_are_not_offered_again_until_undone(store):
    store.add_items(items(2))
    first = store.claim_next("a")
    store.annotate(first, "a", "skip")
    second = store.claim_next("a")
    assert second != first
    store.annotate(second, "a", "label", label="yes")
    assert store.claim_next("a") is None
    store.undo_last("a")
    assert store.claim_next("a") == second


def test_claim_first_follows_the_callers_order(store):
    ids, _ = store.add_items(items(4), with_ids=True)
    order = [ids[2], ids[0], ids[3], ids[1]]
    assert store.claim_first("a", order) == ids[2]
    assert store.claim_first("b", order) == ids[0]


ANNOTATORS = ["a", "b", "c"]
# what an annotator does to an item: label, skip or flag it, undo their latest decision, or lease it
STEPS = st.lists(st.tuples(st.sampled_from(ANNOTATORS), st.integers(0, 11),
                           st.sampled_from(["label", "label", "confirm", "skip", "flag", "undo", "lease"])), max_size=40)


@settings(max_examples=40, deadline=None, phases=[Phase.explicit, Phase.reuse, Phase.generate])
@given(steps=STEPS, overlap=st.integers(1, 3), order=st.permutations(range(12)), skipped_too=st.booleans())
def test_claim_first_gives_what_the_whole_check_of_each_candidate_gives(steps, overlap, order, skipped_too):
    """Dropping the items with `overlap` labels in force before the eligibility check leases the
    same items as checking every candidate in full, after any labels, skips, flags, undos and
    leases, at any overlap."""
    leased = []
    for drop_first in (True, False):
        store = Store(":memory:")
        ids, _ = store.add_items(items(12), with_ids=True)
        for who, k, action in steps:
            if action == "undo":
                store.undo_last(who)
            elif action == "lease":
                store.claim_first(who, [ids[k]])
            else:
                store.annotate(ids[k], who, action, label="yes" if action in ("label", "confirm") else None)
        if not drop_first:
            store._open_to_labels = lambda item_ids, overlap: set(item_ids)
        candidates = [ids[k] for k in order]
        leased.append([store.claim_first(who, candidates, overlap=overlap, skipped_too=skipped_too)
                       for who in [*ANNOTATORS, "d", "a"]])
    assert leased[0] == leased[1]


def test_release_all_frees_the_items(store):
    store.add_items(items(1))
    item_id = store.claim_next("a")
    store.release_all("a")
    assert store.claim_next("b") == item_id


def test_judgments_several_per_item_and_uid_dedup(store):
    (item_id,), _ = store.add_items(items(1), with_ids=True)
    j = NewJudgment(item_id=item_id, judge_name="gpt", judge_key="k", status="verdict", verdict="yes", uid="u1")
    assert store.add_judgments([j, j]) == 1
    store.add_judgments([NewJudgment(item_id=item_id, judge_name="r1", judge_key="k2", status="unparsed", unparsed_reason="x")])
    assert {x.judge_name for x in store.judgments_for_item(item_id)} == {"gpt", "r1"}


def test_writers_use_begin_immediate(store):
    statements = []
    store.conn.set_trace_callback(statements.append)
    store.add_items(items(1))
    assert "BEGIN IMMEDIATE" in statements


def test_an_undone_label_no_longer_counts_as_labelled(store):
    ids, _ = store.add_items(items(2), with_ids=True)
    store.annotate(ids[0], "ann", "label", label="yes")
    store.annotate(ids[1], "ann", "label", label="no")
    store.undo_last("ann")
    assert [i.id for i in store.items(status="labelled")] == [ids[0]]
    assert [i.id for i in store.items(status="unlabelled")] == [ids[1]]
    assert store.status_counts()[0]["labelled"] == 1


def test_status_counts_an_error_only_while_no_later_judgment_succeeded(store):
    ids, _ = store.add_items(items(2), with_ids=True)
    for item_id in ids:
        store.add_judgments([NewJudgment(item_id=item_id, judge_name="j", judge_key="k", status="error", error="HTTP 500")])
    store.add_judgments([NewJudgment(item_id=ids[0], judge_name="j", judge_key="k", status="verdict", verdict="yes")])
    (cell,) = store.status_counts()
    assert (cell["judged"], cell["errors"]) == (1, 1), "item 0's error was fixed by a later run; item 1's was not"


# -- the report's counts, kept by triggers (migration 0008) ---------------------------------------

VISIBLE_CURRENT = ("i.current = 1 AND NOT EXISTS "
                   "(SELECT 1 FROM import_runs r WHERE r.id = i.import_run AND r.finished_at IS NULL)")
NEWEST = ("j.id IN (SELECT (SELECT k.id FROM judgments k WHERE k.item_id = g.item_id AND k.judge_name = g.judge_name "
          "ORDER BY k.status != 'error' DESC, k.judged_at DESC, k.id DESC LIMIT 1) "
          "FROM (SELECT DISTINCT item_id, judge_name FROM judgments) g)")  # in force without repeats (migration 0028)


def counts_from_every_row(store: Store, system: str | None) -> tuple[list, list]:
    """The reference: judge x label and judged counts recomputed from every stored row."""
    where = f"{NEWEST} AND {VISIBLE_CURRENT}" + (" AND i.system = ?" if system is not None else "")
    params = [system] if system is not None else []
    judge_vs_human = store.conn.execute(
        "SELECT i.task, i.lang, j.judge_name, l.annotator, j.status, j.verdict, l.label, count(*) FROM judgments j "
        f"JOIN items i ON i.id = j.item_id JOIN labels_in_force l ON l.item_id = i.id WHERE {where} GROUP BY 1, 2, 3, 4, 5, 6, 7",
        params).fetchall()
    judged = store.conn.execute(
        f"SELECT i.task, i.lang, j.judge_name, j.status, count(*) FROM judgments j JOIN items i ON i.id = j.item_id "
        f"WHERE {where} GROUP BY 1, 2, 3, 4", params).fetchall()
    return sorted(map(tuple, judge_vs_human)), sorted(map(tuple, judged))


def assert_counts_kept(store: Store, step: str) -> None:
    for system in (None, "s1", "s2"):
        data = store.agreement_data(system=system)
        expected_pairs, expected_judged = counts_from_every_row(store, system)
        assert sorted(data.judge_vs_human) == expected_pairs, f"judge x label counts after {step} (system {system})"
        assert sorted(data.judged) == expected_judged, f"judged counts after {step} (system {system})"
        where = f"{NEWEST} AND {VISIBLE_CURRENT}" + (" AND i.system = ?" if system is not None else "")
        configurations = store.conn.execute(
            "SELECT i.task, i.lang, i.system, j.judge_name, j.judge_key, count(*) FROM judgments j "
            f"JOIN items i ON i.id = j.item_id WHERE {where} GROUP BY 1, 2, 3, 4, 5",
            [system] if system is not None else []).fetchall()
        assert store.configuration_counts(system=system) == sorted(map(tuple, configurations)), \
            f"configuration counts after {step} (system {system})"


def test_report_counts_stay_equal_to_a_recount_through_every_kind_of_write(tmp_path, templates):
    store = Store(tmp_path / "x.db")
    made = [NewItem("c3/lexical", "en" if k < 4 else "zh", str(k), {"content": f"c{k}"}, system="s1" if k % 2 else "s2")
            for k in range(8)]
    ids = store.add_items(made, with_ids=True)[0]
    judge = lambda i, verdict, name="gpt", status="verdict": NewJudgment(  # noqa: E731
        item_id=i, judge_name=name, judge_key=name, status=status, verdict=verdict)
    store.add_judgments([judge(i, "yes" if k % 3 else "no") for k, i in enumerate(ids)])
    store.add_judgments([judge(i, None, "llama", "unparsed") for i in ids[:3]])
    assert_counts_kept(store, "judging")
    for k, i in enumerate(ids):
        store.annotate(i, "ann", "label", label="yes" if k % 2 else "no")
        if k < 5:
            store.annotate(i, "bob", "confirm", label="yes")
    assert_counts_kept(store, "labelling")
    store.annotate(ids[0], "ann", "override", label="yes")
    store.undo_last("bob")
    store.annotate(ids[1], "bob", "skip")
    assert_counts_kept(store, "override, undo and skip")
    store.add_judgments([judge(ids[0], "no"), judge(ids[1], "yes", "llama")])  # a newer judgment replaces the older
    assert_counts_kept(store, "re-judging")
    store.add_judgments([NewJudgment(item_id=ids[3], judge_name="gpt", judge_key="gpt at 4096 tokens", status="verdict",
                                     verdict="yes")])
    assert_counts_kept(store, "re-judging under another configuration")
    reparsed = store.judgments_for_item(ids[2], "llama")[-1]
    store.update_parse(reparsed.id, "verdict", "no", None, None)
    older = store.judgments_for_item(ids[0], "gpt")[0]
    store.update_parse(older.id, "unparsed", None, "no answer", None)  # not in force: no count moves
    assert_counts_kept(store, "re-parsing")
    store.add_items([NewItem("c3/lexical", "en", "0", {"content": "changed"}, system="s2", version=2)])
    assert_counts_kept(store, "a new version superseding an item")
    run = store.begin_import("test")
    (hidden,), _ = store.add_items([NewItem("c3/lexical", "zh", "9", {"content": "c9"}, system="s1")], with_ids=True, run=run)
    store.add_judgments([judge(hidden, "yes")])
    store.add_imported_labels([("imported-1", hidden, "ann", "yes", None, None, None, None)])
    assert_counts_kept(store, "writing an unfinished import run")
    store.finish_import(run)
    assert_counts_kept(store, "finishing the import run")
    abandoned = store.begin_import("test")
    (gone,), _ = store.add_items([NewItem("c3/lexical", "en", "10", {"content": "c10"})], with_ids=True, run=abandoned)
    store.add_judgments([judge(gone, "no")])
    store.abandon_import(abandoned)
    assert_counts_kept(store, "abandoning an import run")
    offline = Store(tmp_path / "offline.db")
    offline_ids = offline.add_items(made[2:5], with_ids=True)[0]
    offline.add_judgments([judge(offline_ids[0], "yes", "mistral")])
    offline.annotate(offline_ids[1], "cy", "label", label="no")
    offline.annotate(offline_ids[2], "ann", "override", label="yes")
    merge_database(store, offline, templates)
    assert_counts_kept(store, "merging an offline database")
    store.conn.execute("UPDATE items SET system = 's1' WHERE id = ?", (ids[4],))
    assert_counts_kept(store, "moving an item to another system")


def test_upgrading_an_older_database_fills_the_report_counts(tmp_path, monkeypatch):
    path = tmp_path / "old.db"
    with monkeypatch.context() as before_0008:  # a database made by the version before migration 0008
        known = store_module.MIGRATION_NAMES.index("0008_counts_in_force")
        before_0008.setattr(store_module, "MIGRATION_FILES", store_module.MIGRATION_FILES[:known])
        before_0008.setattr(store_module, "MIGRATION_NAMES", store_module.MIGRATION_NAMES[:known])
        Store(path).close()
    conn = sqlite3.connect(path)
    conn.execute("INSERT INTO items (id, task, lang, source_id, fields, content_hash, imported_at) "
                 "VALUES (1, 'c3/lexical', 'en', '1', '{}', 'h1', 't'), (2, 'c3/lexical', 'en', '2', '{}', 'h2', 't')")
    conn.execute("INSERT INTO judgments (uid, item_id, judge_name, judge_key, status, verdict, created_at) "
                 "VALUES ('j1', 1, 'gpt', 'k', 'verdict', 'no', 't'), ('j2', 1, 'gpt', 'k', 'verdict', 'yes', 't'), "
                 "('j3', 2, 'gpt', 'k', 'unparsed', NULL, 't')")
    conn.execute("INSERT INTO labels_in_force (item_id, annotator, label, action, annotation_uid, decided_at) "
                 "VALUES (1, 'ann', 'yes', 'label', 'a1', 't'), (2, 'ann', 'no', 'label', 'a2', 't')")
    conn.commit()
    conn.close()
    store = Store(path)
    assert store.applied_migrations() == MIGRATIONS
    data = store.agreement_data()
    assert sorted(data.judge_vs_human) == [("c3/lexical", "en", "gpt", "ann", "unparsed", None, "no", 1),
                                           ("c3/lexical", "en", "gpt", "ann", "verdict", "yes", "yes", 1)]
    assert_counts_kept(store, "the upgrade")


def test_a_command_says_it_upgrades_a_database_from_an_older_calibrate_once(tmp_path, monkeypatch):
    path = tmp_path / "old.db"
    with monkeypatch.context() as older:  # a database made by the version before the last migration
        older.setattr(store_module, "MIGRATION_FILES", store_module.MIGRATION_FILES[:-1])
        older.setattr(store_module, "MIGRATION_NAMES", store_module.MIGRATION_NAMES[:-1])
        Store(path).close()
    calibrate = Calibrate(path)
    first, second = calibrate("status", ok=False), calibrate("status", ok=False)
    assert f"upgrading {path} to this calibrate's schema ({MIGRATIONS[-1]})" in " ".join(first.stderr.split())
    assert "upgrading" not in second.stderr
    assert Store(path, read_only=True).applied_migrations() == MIGRATIONS
    told = []
    Store(tmp_path / "new.db", on_upgrade=lambda *a: told.append(a)).close()  # a new file is created, not upgraded
    assert told == []


KEPT_BY_TRIGGERS = ("verdicts_in_force", "agreement_counts", "verdict_counts", "configuration_counts", "cell_verdicts",
                    "score_sets", "score_set_counts", "verdict_sets", "verdict_set_counts", "verdict_set_labels")


def test_the_upgrade_to_0028_leaves_in_force_what_this_calibrate_would_have(tmp_path):
    """The same judgments stored by the calibrate before migration 0028 (failed calls over
    verdicts of another configuration and of their own, all the repeats of another configuration
    failed) and by this one: after the upgrade the verdicts in force and every table the
    triggers keep from them are as this calibrate made them, the failed calls over verdicts out of force."""
    def made(path: Path) -> list[int]:
        store = Store(path)
        ids, _ = store.add_items(items(4), with_ids=True)
        steps = [(0, "k1", "verdict", "yes", 0), (0, "k2", "error", None, 0),  # another configuration failed
                 (1, "k1", "verdict", "no", 0), (1, "k1", "error", None, 0),  # the same one asked again, failed
                 (2, "k1", "error", None, 0), (2, "k1", "error", None, 0),  # failed twice: the error stays
                 *[(3, "k1", "verdict", v, s) for s, v in enumerate(["yes", "yes", "no"])],
                 *[(3, "k2", "error", None, s) for s in range(3)]]  # every repeat of another one failed
        for item, key, status, verdict, sample in steps:
            store.add_judgments([NewJudgment(item_id=ids[item], judge_name="j", judge_key=key, status=status,
                                             verdict=verdict, sample=sample, error="HTTP 500" if verdict is None else None)])
        for item_id in ids:
            store.annotate(item_id, "ann", "label", label="yes")
        store.close()
        return ids

    ids = made(tmp_path / "old.db")
    made(tmp_path / "new.db")
    as_made_before_0028(tmp_path / "old.db")
    old = sqlite3.connect(tmp_path / "old.db")
    assert [r[0] for r in old.execute("SELECT status FROM verdicts_in_force ORDER BY item_id")] == ["error"] * 4
    old.close()
    upgraded, new = Store(tmp_path / "old.db"), Store(tmp_path / "new.db")
    assert [upgraded.verdict_in_force(i, "j")["status"] for i in ids] == ["verdict", "verdict", "error", "verdict"]
    def kept(store: Store, table: str) -> list[dict]:  # a count the upgrade took down to 0 stays as a row of 0
        rows = [dict(r) for r in store.conn.execute(f"SELECT * FROM {table}")]
        return sorted((r for r in rows if r.get("n", 1) != 0), key=lambda r: [str(v) for v in r.values()])
    for table in KEPT_BY_TRIGGERS:
        assert kept(upgraded, table) == kept(new, table), table
    upgraded.close()
    new.close()


def test_rows_in_force_are_replaced_never_updated(store):
    (item_id,), _ = store.add_items(items(1), with_ids=True)
    store.add_judgments([NewJudgment(item_id=item_id, judge_name="gpt", judge_key="k", status="verdict", verdict="yes")])
    store.annotate(item_id, "ann", "label", label="yes")
    for table in ("labels_in_force", "verdicts_in_force"):
        with pytest.raises(sqlite3.IntegrityError, match="replaced"):
            store.conn.execute(f"UPDATE {table} SET item_id = item_id")


# -- the verdict in force under repeats: their majority (migration 0015) ---------------------------

def test_the_verdict_in_force_of_repeats_is_their_majority_through_every_kind_of_write():
    """After any sequence of judgments (two configurations, three sample indexes, parsed,
    unparsed and failed samples, scores), re-parses and removals, each item's verdict in force is
    what the Python reference (tests/majority_reference.py) computes from its judgments."""
    from hypothesis import example, given, settings
    from hypothesis import strategies as st

    from tests.majority_reference import in_force

    verdicts = st.sampled_from(["yes", "no", '{"score_answer": 40.0, "score_reasoning": 60.0}',
                                '{"score_answer": 70.0, "score_reasoning": 30.0}'])
    judgment = st.tuples(st.integers(0, 2), st.sampled_from(["k1", "k2"]), st.integers(0, 2),
                         st.sampled_from(["verdict", "verdict", "unparsed", "error"]), verdicts)
    step = st.one_of(st.tuples(st.just("judge"), judgment), st.tuples(st.just("reparse"), st.integers(0, 50), verdicts),
                     st.tuples(st.just("remove"), st.integers(0, 50)))

    @settings(max_examples=150, deadline=None, derandomize=True)
    @given(st.lists(step, min_size=1, max_size=25))
    @example([("judge", (0, "k1", 0, "verdict", "yes")), ("judge", (0, "k1", 1, "verdict", "yes")),
              ("judge", (0, "k1", 0, "verdict", "no")), ("remove", 1)])  # the last repeat removed: one sample left
    def check(steps):
        store = Store(":memory:")
        ids, _ = store.add_items(items(3), with_ids=True)
        for kind, *args in steps:
            stored = [r[0] for r in store.conn.execute("SELECT id FROM judgments ORDER BY id")]
            if kind == "judge":
                item, key, sample, status, verdict = args[0]
                store.add_judgments([NewJudgment(item_id=ids[item], judge_name="j", judge_key=key, status=status,
                                                 sample=sample, verdict=verdict if status == "verdict" else None)])
            elif stored and kind == "reparse":
                store.update_parse(stored[args[0] % len(stored)], "verdict", args[1], None, None)
            elif stored:
                with store.transaction():
                    store.conn.execute("DELETE FROM judgments WHERE id = ?", (stored[args[0] % len(stored)],))
        for item_id in ids:
            expected = in_force(store.judgments_for_item(item_id, "j"))
            row = store.conn.execute("SELECT judgment_id, status, verdict FROM verdicts_in_force "
                                     "WHERE item_id = ? AND judge_name = 'j'", (item_id,)).fetchone()
            if expected is None:
                assert row is None
                continue
            judgment, status, verdict = expected
            assert (row["judgment_id"], row["status"]) == (judgment.id, status), steps
            stored_verdict = json.loads(row["verdict"]) if isinstance(verdict, dict) else row["verdict"]
            assert stored_verdict == verdict, steps
        store.close()

    check()


def test_status_and_the_items_filters_count_the_verdict_in_force_not_any_judgment(store):
    ids, _ = store.add_items(items(4), with_ids=True)

    def judged(item_id: int, status: str, verdict: str | None = None, sample: int = 0) -> None:
        store.add_judgments([NewJudgment(item_id=item_id, judge_name="j", judge_key="k", status=status, verdict=verdict,
                                         sample=sample, error="HTTP 500" if status == "error" else None)])

    judged(ids[0], "verdict", "yes", 0)
    judged(ids[0], "verdict", "no", 1)  # two repeats that tie: unparsed, though neither answer was
    judged(ids[1], "unparsed")
    judged(ids[1], "verdict", "yes")  # parsed when asked again
    judged(ids[2], "error")
    judged(ids[2], "verdict", "no")  # an error put right
    judged(ids[3], "error")
    judged(ids[3], "error")  # asked again, failed again: the verdict in force is an error
    (row,) = store.status_counts()
    assert (row["items"], row["judged"], row["unparsed"], row["errors"]) == (4, 3, 1, 1)
    assert [item.id for item in store.iter_items(status="unparsed")] == [ids[0]]
    assert [item.id for item in store.iter_items(status="error", judge="j")] == [ids[3]]


def test_the_majority_of_repeats_wins_over_the_newest_and_a_tie_or_no_parsed_repeat_says_why(store):
    ids, _ = store.add_items(items(3), with_ids=True)
    store.add_judgments([NewJudgment(item_id=ids[2], judge_name="j", judge_key="k", status="verdict", verdict=v, sample=s)
                         for s, v in enumerate(["yes", "yes", "no"])])
    row = store.conn.execute("SELECT status, verdict, reason FROM verdicts_in_force WHERE item_id = ?", (ids[2],)).fetchone()
    assert tuple(row) == ("verdict", "yes", None), "two of three repeats said yes; the newest said no"
    store.add_judgments([NewJudgment(item_id=ids[0], judge_name="j", judge_key="k", status="verdict", verdict=v, sample=s)
                         for s, v in enumerate(["yes", "no"])])
    store.add_judgments([NewJudgment(item_id=ids[1], judge_name="j", judge_key="k", status="unparsed", sample=s,
                                     unparsed_reason="no verdict line") for s in range(3)])
    reasons = dict(store.conn.execute("SELECT item_id, reason FROM verdicts_in_force WHERE item_id != ?", (ids[2],)).fetchall())
    assert reasons == {ids[0]: "the 2 repeats tie: 1 each for the most frequent verdicts",
                       ids[1]: "none of the 3 repeats gave a verdict"}


def test_reading_keeps_two_connections_on_one_snapshot_though_a_commit_comes_between(tmp_path):
    """`Store.reading` over two connections: a commit between their beginnings has them begin
    again, so both see the database with it; a commit after they began reaches neither."""
    path = tmp_path / "pinned.db"
    writer, reader, other = Store(path), Store(path), Store(path, read_only=True)
    item = lambda n: NewItem("c3/lexical", "en", str(n), {"content": "c", "notation": "n", "response": "r"})  # noqa: E731
    writer.add_items([item(0)])
    begin_read, added = other.conn.execute, []

    def execute(sql, *args):  # the other connection's snapshot taken, an import commits before this one's
        cursor = begin_read(sql, *args)
        if sql.startswith("SELECT count(*) FROM sqlite_master") and not added:
            added.append(writer.add_items([item(1)]))
        return cursor

    other.conn.execute = execute
    with reader.reading(other):
        writer.add_items([item(2)])
        assert reader.count_items() == other.count_items() == 2
    assert reader.count_items() == other.count_items() == 3
    for store in (writer, reader, other):
        store.close()


def test_an_interrupt_right_after_begin_leaves_no_transaction_open(tmp_path, monkeypatch):
    """Ctrl-C or SIGTERM landing as BEGIN IMMEDIATE returns: the transaction is rolled back, so
    the clean-up's own transaction can begin (it failed: "cannot start a transaction within a
    transaction")."""
    store = Store(tmp_path / "s.db")
    begin = store_module._begin_waiting

    def interrupted(conn, on_wait):
        begin(conn, on_wait)
        raise KeyboardInterrupt

    monkeypatch.setattr(store_module, "_begin_waiting", interrupted)
    with pytest.raises(KeyboardInterrupt), store.transaction():
        pass
    monkeypatch.setattr(store_module, "_begin_waiting", begin)
    assert not store.conn.in_transaction
    with store.transaction():
        store.conn.execute("UPDATE items SET id = id WHERE 0")
