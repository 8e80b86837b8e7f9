"""Import runs are isolated: one import at a time (a second one waits), a dead run is told from a
running one by its heartbeat on any host, whatever its process id now belongs to, and what a
dead run wrote is removed by the next import or by `calibrate import abandon RUN`."""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from calibrate.model import NewItem
from calibrate.store import Store
from calibrate.store.imports import IMPORT_STALE_SECONDS, ImportRunLost
from tests.conftest import Calibrate
from tests.test_c3_roundtrip import results_of
from tests.test_formats import lexical_lines, write_jsonl

IMPORT = ("--task", "c3/lexical", "--lang", "en")


def lexical_items(n: int) -> list[NewItem]:
    """The items `lexical_lines(n)` imports (same identity and content)."""
    return [NewItem("c3/lexical", "en", str(line.pop("id")), line) for line in lexical_lines(n)]


def leave_unfinished_run(db, *, items: int, host: str | None = None, pid: int | None = None,
                         heartbeat_age: float = 0.0) -> int:
    """An import run that wrote `items` items and never finished, as a killed import leaves it."""
    store = Store(db)
    run = store.begin_import("calibrate import jsonl killed.jsonl")
    store.add_items(lexical_items(items), run=run)
    store.conn.execute("UPDATE import_runs SET heartbeat_at = ?, host = coalesce(?, host), pid = coalesce(?, pid) "
                       "WHERE id = ?", (time.time() - heartbeat_age, host, pid, run))
    store.close()
    return run


def python_calibrate(db, *args: str) -> subprocess.Popen:
    """calibrate in a child process whose messages are not folded (wide COLUMNS), so a test
    reads each message whole whatever width the suite's own environment has."""
    return subprocess.Popen([sys.executable, "-m", "calibrate", "--db", str(db), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "COLUMNS": "400"})


def visible_and_stored(db) -> tuple[int, int]:
    store = Store(db)
    try:
        return store.count_items(), store.conn.execute("SELECT count(*) FROM items").fetchone()[0]
    finally:
        store.close()


def test_two_concurrent_imports_of_one_file_never_count_the_others_hidden_rows(calibrate, tmp_path):
    n = 30_000
    big = write_jsonl(tmp_path / "big.jsonl", lexical_lines(n))
    calibrate("import", "jsonl", str(write_jsonl(tmp_path / "one.jsonl", lexical_lines(1))), *IMPORT)  # creates the file
    first = python_calibrate(calibrate.db, "import", "jsonl", str(big), *IMPORT)
    store = Store(calibrate.db)
    deadline = time.monotonic() + 60
    while not store.import_runs(unfinished=True) and time.monotonic() < deadline:
        time.sleep(0.01)
    (running,) = store.import_runs(unfinished=True)
    # hold the write lock until the second import is waiting for it, so both are under way at once
    # (the first has written at most a few of its 15 batches)
    store.conn.execute("BEGIN IMMEDIATE")
    second = python_calibrate(calibrate.db, "import", "jsonl", str(big), *IMPORT)
    assert select.select([second.stderr], [], [], 60)[0], "the second import waits for the database"
    assert "waiting for the database" in second.stderr.readline()
    store.conn.execute("ROLLBACK")
    (out1, err1), (out2, err2) = first.communicate(timeout=300), second.communicate(timeout=300)
    assert (first.returncode, second.returncode) == (0, 0), err1 + err2
    assert f"{n} records: {n - 1} items added, 1 already present" in out1
    assert f"waiting for import run {running['id']} to finish (calibrate import jsonl {big}; pid {first.pid}" in err2
    assert f"{n} records: 0 items added, {n} already present" in out2, "present once the first import had finished"
    assert visible_and_stored(calibrate.db) == (n, n)


def test_a_dead_run_whose_process_id_is_alive_again_is_removed_once_its_heartbeat_is_stale(calibrate, tmp_path):
    # the run's pid is this test's own process: alive, as when the id has been given to another process
    run = leave_unfinished_run(calibrate.db, items=50, heartbeat_age=IMPORT_STALE_SECONDS + 1)
    assert [r["state"] for r in Store(calibrate.db).import_runs()] == ["dead"]
    assert visible_and_stored(calibrate.db) == (0, 50), "its items are hidden"
    lines = write_jsonl(tmp_path / "in.jsonl", lexical_lines(50))
    out = calibrate("import", "jsonl", str(lines), *IMPORT, "--update")
    assert f"removing what import run {run} left unfinished (calibrate import jsonl killed.jsonl" in out.output
    assert "50 records: 50 items added, 0 already present" in out.output
    assert visible_and_stored(calibrate.db) == (50, 50)
    assert [r["source"] for r in Store(calibrate.db).import_runs()] == [f"calibrate import jsonl {lines}"]


def test_a_run_from_another_host_is_waited_for_while_its_heartbeat_is_fresh_then_removed(calibrate, tmp_path):
    run = leave_unfinished_run(calibrate.db, items=30, host="another-host", pid=1,
                               heartbeat_age=IMPORT_STALE_SECONDS - 3)
    assert [r["state"] for r in Store(calibrate.db).import_runs()] == ["running"]
    lines = write_jsonl(tmp_path / "in.jsonl", lexical_lines(30))
    importing = python_calibrate(calibrate.db, "import", "jsonl", str(lines), *IMPORT)
    out, err = importing.communicate(timeout=120)
    assert importing.returncode == 0, err
    assert (f"waiting for import run {run} to finish (calibrate import jsonl killed.jsonl; pid 1 on another-host"
            in err), "the message names the running import"
    assert f"calibrate import abandon {run}" in err
    assert "30 records: 30 items added, 0 already present" in out, "counted only once the dead run was removed"
    assert visible_and_stored(calibrate.db) == (30, 30)


def test_import_abandon_removes_a_dead_or_named_run_and_refuses_others(calibrate, tmp_path):
    running = leave_unfinished_run(calibrate.db, items=20, host="another-host")
    out = calibrate("import", "runs")
    assert "another-host" in out.output and "running" in out.output
    out = calibrate("import", "abandon", str(running), ok=False)
    assert out.exit_code == 1 and f"import run {running} is running" in out.output and "--force" in out.output
    assert visible_and_stored(calibrate.db) == (0, 20), "nothing removed"
    out = calibrate("import", "abandon", str(running), "--force")
    assert f"abandoned import run {running} (calibrate import jsonl killed.jsonl): 20 items removed" in out.output
    assert visible_and_stored(calibrate.db) == (0, 0)
    calibrate("import", "jsonl", str(write_jsonl(tmp_path / "in.jsonl", lexical_lines(2))), *IMPORT)
    (finished,) = [r["id"] for r in Store(calibrate.db).import_runs()]
    out = calibrate("import", "abandon", str(finished), ok=False)
    assert out.exit_code == 1 and "its items are imported, nothing to abandon" in out.output
    out = calibrate("import", "abandon", "999", ok=False)
    assert out.exit_code == 1 and "no import run 999" in out.output
    assert calibrate("import", "runs").output.strip() == "no import is running or left unfinished"
    assert visible_and_stored(calibrate.db) == (2, 2)


def test_an_import_whose_run_was_removed_under_it_stops_and_keeps_nothing(tmp_path):
    path = tmp_path / "x.db"
    importer, other = Store(path), Store(path)
    run = importer.begin_import("suspended import")
    importer.add_items(lexical_items(10), run=run)
    other.abandon_import(run)  # as the next import does when this one's heartbeat is stale
    assert other.begin_import("the next import") == run, "the next run may get the same id"
    with pytest.raises(ImportRunLost, match=f"import run {run} was removed by another process"):
        importer.add_items(lexical_items(20)[10:], run=run)
    with pytest.raises(ImportRunLost):
        importer.finish_import(run)
    other.finish_import(run)
    assert visible_and_stored(path) == (0, 0), "nothing of the removed run, nothing written into the newer one"


def test_a_running_import_renews_its_heartbeat_every_few_seconds(tmp_path, monkeypatch):
    from calibrate.store import imports

    store = Store(tmp_path / "x.db")
    run = store.begin_import("import")
    store.conn.execute("UPDATE import_runs SET heartbeat_at = heartbeat_at - 50 WHERE id = ?", (run,))
    writes = []
    store.conn.set_trace_callback(lambda sql: writes.append(sql) if sql.startswith("UPDATE") else None)
    store.keep_import_alive(run)
    assert writes == [], "renewed at most every IMPORT_HEARTBEAT_SECONDS (it was just begun)"
    monkeypatch.setattr(imports, "IMPORT_HEARTBEAT_SECONDS", 0.0)
    store.keep_import_alive(run)
    (row,) = store.import_runs()
    assert len(writes) == 1 and row["heartbeat_age"] < 5 and row["state"] == "running"
    assert row["pid"] == os.getpid()


def test_the_clean_up_never_touches_a_run_that_finished_or_came_back_alive(tmp_path, monkeypatch):
    from calibrate.store import imports

    path = tmp_path / "x.db"
    importer, cleaner = Store(path), Store(path)
    finished = importer.begin_import("finished import")
    importer.add_items(lexical_items(10), run=finished)
    importer.finish_import(finished)
    assert cleaner.abandon_import(finished) == 0 and cleaner.abandon_import(finished, dead_only=True) == 0
    assert visible_and_stored(path) == (10, 10), "a finished run's items are never removed"

    suspended = importer.begin_import("suspended import")
    importer.add_items(lexical_items(20)[10:], run=suspended)
    importer.conn.execute("UPDATE import_runs SET heartbeat_at = heartbeat_at - 3600 WHERE id = ?", (suspended,))
    (seen,) = cleaner.import_runs(unfinished=True)
    assert seen["state"] == "dead"
    monkeypatch.setattr(imports, "IMPORT_HEARTBEAT_SECONDS", 0.0)
    importer.keep_import_alive(suspended)  # it resumes before the clean-up starts
    assert cleaner.abandon_import(suspended, dead_only=True) == 0
    importer.finish_import(suspended)
    assert visible_and_stored(path) == (20, 20)


def stored_rows(db, table: str) -> int:
    store = Store(db)
    try:
        return store.conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    finally:
        store.close()


def counts_kept(db, table: str) -> list[tuple]:
    """A table of counts the triggers keep, without its id-free rows counted down to nought."""
    store = Store(db)
    try:
        return sorted(tuple(row) for row in store.conn.execute(f"SELECT * FROM {table} WHERE n != 0"))
    finally:
        store.close()


def test_a_failed_import_that_wrote_labels_is_removed_whole_and_counts_as_if_it_never_ran(calibrate, tmp_path,
                                                                                         monkeypatch):
    """C3 result files bring the judge's generation decisions as labels; with one record per
    batch, those labels are committed before a broken record further on stops the import."""
    from calibrate import formats

    monkeypatch.setattr(formats, "BATCH", 1)
    monkeypatch.setattr(formats, "BATCH_MAX", 1)
    folder = shutil.copytree(results_of("dpsk", "en"), tmp_path / "dpsk")
    (folder / "context-dependency" / "multi-turn.json").unlink()  # its records need the C3 tree's items
    broken = folder / "context-dependency" / "coreference-resolution.json"
    whole = broken.read_text(encoding="utf-8")
    broken.write_text(json.dumps([*json.loads(whole), {"x": 1}]), encoding="utf-8")
    args = ("import", "c3-results", str(folder), "--lang", "en", "--judge-name", "dpsk", "--system", "sdm")

    failed = calibrate(*args, ok=False)
    assert failed.exit_code == 1 and "coreference-resolution.json[" in failed.output
    assert "nothing was imported" in failed.output
    for table in ("items", "annotations", "labels_in_force", "judgments", "import_runs WHERE finished_at IS NULL"):
        assert stored_rows(calibrate.db, table) == 0, table

    broken.write_text(whole, encoding="utf-8")
    again = calibrate(*args)
    assert calibrate("import", "runs").output.strip() == "no import is running or left unfinished"
    fresh = Calibrate(tmp_path / "fresh.db")
    assert " ".join(again.output.split()) == " ".join(fresh(*args).output.split())
    assert stored_rows(calibrate.db, "annotations") > 0, "the generation decisions are labels"
    assert calibrate("scores", "--by", "system,task").output == fresh("scores", "--by", "system,task").output
    for kept in ("agreement_counts", "verdict_set_labels", "score_set_counts"):  # what the labels' triggers keep
        assert counts_kept(calibrate.db, kept) == counts_kept(fresh.db, kept), kept
    assert stored_rows(calibrate.db, "score_sets") == stored_rows(fresh.db, "score_sets")


def test_a_run_the_earlier_clean_up_could_not_remove_for_its_labels_is_removed_now(calibrate, tmp_path):
    """As calibrate before migration 0029 left it: the run taken from its writer (owner NULL),
    its items and their imported labels still there, and every import stopping on it."""
    store = Store(calibrate.db)
    run = store.begin_import("calibrate import c3-results dpsk")
    ids, _ = store.add_items(lexical_items(3), run=run, with_ids=True)
    store.add_imported_labels([(f"u{k}", item_id, "c3-result-file", "yes", None, None, "dpsk", None)
                               for k, item_id in enumerate(ids)])
    store.conn.execute("UPDATE import_runs SET owner = NULL, heartbeat_at = ? WHERE id = ?",
                       (time.time() - 2 * IMPORT_STALE_SECONDS, run))
    store.close()
    out = calibrate("import", "jsonl", str(write_jsonl(tmp_path / "in.jsonl", lexical_lines(5))), *IMPORT)
    assert "5 records: 5 items added, 0 already present" in out.output
    assert visible_and_stored(calibrate.db) == (5, 5)
    assert (stored_rows(calibrate.db, "annotations"), stored_rows(calibrate.db, "labels_in_force")) == (0, 0)


def test_labels_stay_append_only_outside_an_abandoned_run(calibrate, tmp_path):
    """Only the clean-up of a run taken from its writer deletes labels: not those on a finished
    import's items, nor those a running import wrote."""
    store = Store(calibrate.db)
    finished = store.begin_import("finished import")
    ids, _ = store.add_items(lexical_items(2), run=finished, with_ids=True)
    store.finish_import(finished)
    running = store.begin_import("running import")
    more, _ = store.add_items(lexical_items(4)[2:], run=running, with_ids=True)
    store.add_imported_labels([(f"u{item_id}", item_id, "ann", "no", None, None, None, None) for item_id in ids + more])
    for item_id in ids + more:
        with pytest.raises(sqlite3.IntegrityError, match="annotations are append-only"):
            store.conn.execute("DELETE FROM annotations WHERE item_id = ?", (item_id,))
    assert store.abandon_import(running) == 2
    assert stored_rows(calibrate.db, "annotations") == 2, "the finished import's labels stay"


def test_an_import_stopped_while_another_writer_holds_the_database_says_what_its_clean_up_waits_for(calibrate,
                                                                                                    tmp_path):
    big = write_jsonl(tmp_path / "big.jsonl", lexical_lines(100_000))
    calibrate("import", "jsonl", str(write_jsonl(tmp_path / "one.jsonl", lexical_lines(1))), *IMPORT)
    importing = python_calibrate(calibrate.db, "import", "jsonl", str(big), *IMPORT)
    store = Store(calibrate.db)
    deadline = time.monotonic() + 60
    while visible_and_stored(calibrate.db)[1] < 2 and time.monotonic() < deadline:  # a batch of it is written
        time.sleep(0.01)
    store.conn.execute("BEGIN IMMEDIATE")  # the next batch waits for this writer
    assert select.select([importing.stderr], [], [], 60)[0]
    assert "waiting for the database (another writer holds it)" in importing.stderr.readline()
    importing.send_signal(signal.SIGINT)
    assert select.select([importing.stderr], [], [], 60)[0], "the clean-up waits for the same writer"
    (run,) = store.import_runs(unfinished=True)
    assert importing.stderr.readline().strip() == (f"waiting for the database (another writer holds it) to remove what "
                                                   f"import run {run['id']} wrote; Ctrl-C leaves that to the next import…")
    store.conn.execute("ROLLBACK")
    _, err = importing.communicate(timeout=120)
    assert importing.returncode != 0, err
    assert visible_and_stored(calibrate.db) == (1, 1), "what it wrote is removed once the other writer let go"
    assert not Store(calibrate.db).import_runs(unfinished=True)


@pytest.mark.parametrize("fresh_file", [False, True], ids=["existing database", "database the import creates"])
def test_an_interrupt_after_the_import_committed_keeps_it_and_says_so(calibrate, tmp_path, monkeypatch, fresh_file):
    """Ctrl-C while the import reads what it changed (after its commit) ends only the telling: the
    items stay, the database file too where the import created it, and the error says so."""
    if not fresh_file:
        calibrate("import", "jsonl", str(write_jsonl(tmp_path / "one.jsonl", lexical_lines(1))), *IMPORT)

    def interrupted(self, item_ids):
        raise KeyboardInterrupt

    monkeypatch.setattr(Store, "decisions", interrupted)
    out = calibrate("import", "jsonl", str(write_jsonl(tmp_path / "in.jsonl", lexical_lines(4))), *IMPORT, ok=False)
    run = 1 if fresh_file else 2
    assert out.exit_code == 1
    assert " ".join(out.output.split()) == (
        f"Error: interrupted after import run {run} was committed: what it imported is in {calibrate.db} (calibrate "
        "status shows it); only what the command had still to say or check was cut short")
    assert visible_and_stored(calibrate.db) == (4, 4)
    assert not Store(calibrate.db).import_runs(unfinished=True)


def test_an_interrupt_before_the_commit_still_removes_everything(calibrate, tmp_path, monkeypatch):
    """Ctrl-C in the finish's own transaction, and Ctrl-C just after the run was recorded (before
    the import knows its number): nothing stays, no run is left for the next import to wait on."""
    calibrate("import", "jsonl", str(write_jsonl(tmp_path / "one.jsonl", lexical_lines(1))), *IMPORT)
    begin, finish = Store.begin_import, Store.finish_import
    for name, interrupted in (
            ("finish_import", lambda self, run: (finish(self, run), (_ for _ in ()).throw(KeyboardInterrupt))),
            ("begin_import", lambda self, source: (begin(self, source), (_ for _ in ()).throw(KeyboardInterrupt)))):
        with monkeypatch.context() as patched:
            patched.setattr(Store, name, interrupted)
            out = calibrate("import", "jsonl", str(write_jsonl(tmp_path / "in.jsonl", lexical_lines(4))), *IMPORT,
                            ok=False)
        assert out.exit_code == 1 and "Aborted!" in out.output and "committed" not in out.output, name
        assert visible_and_stored(calibrate.db) == (1, 1), name
        assert not Store(calibrate.db).import_runs(unfinished=True), name


def test_an_interrupt_between_the_finishs_last_statement_and_its_commit_keeps_nothing_and_claims_nothing(
        calibrate, tmp_path, monkeypatch):
    """A Ctrl-C that lands as the finish's `with` block is left, before the transaction's own code
    resumes (in contextlib's frames), skips its COMMIT and its ROLLBACK: the run's finish read back
    on that connection would be uncommitted. The clean-up rolls it back and removes the run, and
    nothing says it was committed."""
    calibrate("import", "jsonl", str(write_jsonl(tmp_path / "one.jsonl", lexical_lines(1))), *IMPORT)
    real, finishing = Store.transaction, []

    def transaction(self):
        inner, outer = real(self), self._writing is None

        class LeftUnresumed:
            def __enter__(self_):
                return inner.__enter__()

            def __exit__(self_, *exc):
                if outer and finishing and exc[0] is None:
                    finishing.clear()
                    raise KeyboardInterrupt  # the generator stays suspended at its yield
                return inner.__exit__(*exc)

        return LeftUnresumed()

    finish = Store.finish_import
    monkeypatch.setattr(Store, "transaction", transaction)
    monkeypatch.setattr(Store, "finish_import", lambda self, run: (finish(self, run), finishing.append(run)))
    out = calibrate("import", "jsonl", str(write_jsonl(tmp_path / "in.jsonl", lexical_lines(4))), *IMPORT, ok=False)
    monkeypatch.undo()
    assert out.exit_code == 1 and "Aborted!" in out.output and "committed" not in out.output, out.output
    assert visible_and_stored(calibrate.db) == (1, 1)
    assert not Store(calibrate.db).import_runs(unfinished=True)


def test_a_run_id_another_import_took_over_is_not_taken_for_this_stores_own(tmp_path):
    """A run removed by `import abandon` frees its id for the next import: the Store that began it
    neither calls that import's run its own (committed) nor removes it (while it runs)."""
    first, other = Store(tmp_path / "s.db"), Store(tmp_path / "s.db")
    run = first.begin_import("stopped import")
    assert other.abandon_import(run) == 0  # `calibrate import abandon RUN`: taken and removed
    again = other.begin_import("the next import")
    assert again == run, "the id is free again"
    assert first.imports_begun_here(finished=False) == [] and first.imports_begun_here(finished=True) == []
    other.finish_import(again)
    assert first.imports_begun_here(finished=True) == [] and other.imports_begun_here(finished=True) == [again]


def test_ctrl_c_pressed_twice_after_the_commit_still_says_the_import_stands(calibrate, tmp_path, monkeypatch):
    """The second Ctrl-C lands while the command reads back which runs it committed: it reads
    again, and says the import stands, rather than "Aborted!"."""
    def interrupted(self, item_ids):
        raise KeyboardInterrupt

    read_back, second = Store.imports_begun_here, []

    def interrupted_once(self, *, finished):
        if finished and not second:
            second.append(True)
            raise KeyboardInterrupt
        return read_back(self, finished=finished)

    monkeypatch.setattr(Store, "decisions", interrupted)
    monkeypatch.setattr(Store, "imports_begun_here", interrupted_once)
    out = calibrate("import", "jsonl", str(write_jsonl(tmp_path / "in.jsonl", lexical_lines(4))), *IMPORT, ok=False)
    assert second and out.exit_code == 1 and "interrupted after import run 1 was committed" in out.output, out.output
    assert visible_and_stored(calibrate.db) == (4, 4)


def test_ctrl_c_while_the_database_closes_after_the_command_is_let_go(calibrate, tmp_path, monkeypatch):
    """The command has done its work and said so: a Ctrl-C as the database closes (SQLite's
    checkpoint) ends it as it was going to end, not in "Aborted!"."""
    import os
    import signal

    close = Store.close

    def interrupted_close(self):
        os.kill(os.getpid(), signal.SIGINT)
        close(self)

    monkeypatch.setattr(Store, "close", interrupted_close)
    out = calibrate("import", "jsonl", str(write_jsonl(tmp_path / "in.jsonl", lexical_lines(3))), *IMPORT)
    assert out.exit_code == 0 and "3 records: 3 items added" in out.output and "Aborted!" not in out.output
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
