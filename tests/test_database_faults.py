"""A database that SQLite cannot use (not a database, damaged, from a newer calibrate, in a
read-only folder, on a full disk, locked for too long) is `Error: PATH: reason` with exit 1 from
every command, never a traceback; nothing already saved is lost, and a file calibrate refuses is
never written."""

from __future__ import annotations

import contextlib
import gc
import hashlib
import os
import resource
import sqlite3
import subprocess
from pathlib import Path

import pytest
from textual.widgets import Input

from calibrate import cli as cli_module
from calibrate.model import NewItem
from calibrate.serve import CalibrateServer
from calibrate.store import MIGRATION_NAMES, Store, export_rows
from tests.conftest import Calibrate
from tests.test_formats import counts, lexical_lines, write_jsonl
from tests.tui_helpers import make_app, rows

IMPORT = ("--task", "c3/lexical", "--lang", "en")


def commands(tmp_path: Path) -> list[tuple[str, ...]]:
    """A command of each kind: reading, writing, the app, and merging into the file."""
    other = tmp_path / "other.db"
    if not other.exists():
        Store(other).add_items([NewItem("c3/lexical", "en", "o", {"content": "other"})])
    lines = write_jsonl(tmp_path / "lines.jsonl", lexical_lines(3))
    labels = tmp_path / "labels.csv"
    labels.write_text("task,lang,source_id,annotator,label,note\nc3/lexical,en,s0,ana,yes,\n", encoding="utf-8")
    return [("status",), ("items",), ("render", "1"), ("report",), ("scores",), ("trust",), ("export",),
            ("parse",), ("judge", "--judge", "rule"), ("annotate", "--annotator", "ana"), ("import", "runs"),
            ("import", "jsonl", str(lines), *IMPORT), ("import", "labels", str(labels)), ("merge", str(other))]


def state(path: Path) -> tuple[str, list[str]]:
    """The file's bytes (as a digest) and the files beside it."""
    return hashlib.sha256(path.read_bytes()).hexdigest(), sorted(p.name for p in path.parent.glob(f"{path.name}*"))


def a_calibrate_database(path: Path) -> Path:
    store = Store(path)
    store.add_items([NewItem("c3/lexical", "en", f"s{k}", {"content": f"c{k} " + "x" * 300}) for k in range(400)])
    store.close()
    return path


def not_a_database(path: Path) -> Path:
    path.write_text("a text file someone named .db\n" * 200, encoding="utf-8")
    return path


def truncated(path: Path) -> Path:
    a_calibrate_database(path)
    with path.open("r+b") as handle:
        handle.truncate(16384)
    return path


def from_a_newer_calibrate(path: Path) -> Path:
    a_calibrate_database(path)
    conn = sqlite3.connect(path)
    conn.execute("INSERT INTO _sqlite_migrations (migration_set, name, applied_at) VALUES ('calibrate', '9999_future', 'x')")
    conn.commit()
    conn.close()
    return path


def another_programs_database(path: Path) -> Path:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE notes (x)")
    conn.commit()
    conn.close()
    return path


def damaged_table(path: Path, table: str) -> Path:
    """`path` with the first page of `table` overwritten: the file opens, and a command fails
    only where it reads that table's rows."""
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (table,)).fetchone()[0]
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    conn.close()
    with path.open("r+b") as handle:
        handle.seek((root - 1) * page_size)
        handle.write(b"\x0d" + b"\xff" * 71)
    return path


@pytest.mark.parametrize(("make", "reason"), [
    (not_a_database, "not an SQLite database"),
    (truncated, "the database file is damaged (truncated or corrupt)"),
    (from_a_newer_calibrate, "schema version 9999_future is unknown to this calibrate (made by a newer version? "
                             f"this one knows up to {MIGRATION_NAMES[-1]})"),
    (another_programs_database, "an SQLite database, but not a calibrate one"),
], ids=["not-a-database", "truncated", "newer-schema", "foreign"])
def test_every_command_refuses_a_file_it_cannot_use_naming_it_and_leaves_it_unchanged(tmp_path, make, reason):
    db = make(tmp_path / "x.db")
    before = state(db)
    run = Calibrate(db)
    for command in commands(tmp_path):
        out = run(*command, ok=False)
        assert out.exit_code == 1, f"{command}: {out.output}"
        assert out.output.startswith(f"Error: {db}: {reason}"), f"{command}: {out.output}"
        assert state(db) == before, f"{command} changed the file or created one beside it"


def test_a_damaged_page_met_half_way_through_a_read_is_a_message(tmp_path):
    db = a_calibrate_database(tmp_path / "x.db")
    size = db.stat().st_size
    with db.open("r+b") as handle:  # the file's first pages (the schema) stay intact
        handle.seek(size * 2 // 3)
        handle.write(bytes(range(256)) * 64)
    for command in (("items", "--limit", "1000"), ("export",), ("status",)):
        out = Calibrate(db)(*command, ok=False)
        assert out.exit_code == 1, out.output
        assert any(line.startswith(f"Error: {db}: the database file is damaged") for line in out.output.splitlines())


def test_an_export_that_reads_fewer_items_than_the_file_counts_fails(tmp_path, monkeypatch):
    """A damaged page can end a scan early without an error from SQLite: an export that put
    together fewer items than the database counts is a failure naming the file, and --out is
    left as it was, not a silently short file."""
    db = a_calibrate_database(tmp_path / "x.db")
    put_together = export_rows.ExportRowsMixin._export_range

    def one_left_out(self, export, start, end):
        n, lines = put_together(self, export, start, end)
        return n - 1, lines.split(b"\n", 1)[1]

    monkeypatch.setattr(export_rows.ExportRowsMixin, "_export_range", one_left_out)
    out = tmp_path / "gold.jsonl"
    out.write_text("before\n", encoding="utf-8")
    for command in (("export", "--out", str(out)), ("export", "--format", "csv", "--out", str(out))):
        result = Calibrate(db)(*command, ok=False)
        assert result.exit_code == 1
        assert result.output.startswith(f"Error: {db}: the database file is damaged"), result.output
        assert "read 399 of the 400 items" in result.output
        assert out.read_text(encoding="utf-8") == "before\n"


def test_a_database_locked_by_another_program_beyond_the_wait_is_a_message(tmp_path):
    db = a_calibrate_database(tmp_path / "x.db")
    lines = write_jsonl(tmp_path / "lines.jsonl", lexical_lines(3, start=1000))
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("PRAGMA locking_mode = EXCLUSIVE")  # another program keeps the file to itself
    holder.execute("BEGIN EXCLUSIVE")
    holder.execute("UPDATE items SET reference = 'held' WHERE id = 1")
    try:
        for command in (("status",), ("import", "jsonl", str(lines), *IMPORT)):
            out = Calibrate(db)(*command, ok=False)
            assert out.exit_code == 1 and out.output.startswith(f"Error: {db}: locked by another process"), out.output
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert Calibrate(db)("import", "jsonl", str(lines), *IMPORT).exit_code == 0, "works once the lock is gone"


@contextlib.contextmanager
def read_only(path: Path):
    """`path` (a folder or a file) made read-only: by its permissions, or for root (whom
    permissions do not stop) by a read-only bind mount, where the system allows one."""
    if os.geteuid() != 0:
        mode = path.stat().st_mode
        path.chmod(0o555 if path.is_dir() else 0o444)
        try:
            yield
        finally:
            path.chmod(mode)
        return
    mounted = subprocess.run(["mount", "--bind", str(path), str(path)], capture_output=True).returncode == 0
    if not mounted:
        pytest.skip("running as root without permission to mount: cannot make a file or folder read-only")
    try:
        if subprocess.run(["mount", "-o", "remount,ro,bind", str(path)], capture_output=True).returncode != 0:
            pytest.skip("cannot remount read-only")
        yield
    finally:
        gc.collect()  # a refused command's connection lives on in its traceback's reference cycles until collected
        if subprocess.run(["umount", str(path)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "--lazy", str(path)], check=True)
            raise AssertionError(f"{path} was still open after the commands ended")


def test_a_database_in_a_read_only_folder_is_read_and_writing_it_is_a_message(tmp_path):
    folder = tmp_path / "shared"
    folder.mkdir()
    db = a_calibrate_database(folder / "x.db")
    lines = write_jsonl(tmp_path / "lines.jsonl", lexical_lines(3))
    before = state(db)
    with read_only(folder):
        run = Calibrate(db)
        assert "c3/lexical" in run("status").output, "commands that only read still work"
        out = run("import", "jsonl", str(lines), *IMPORT, ok=False)
        assert out.exit_code == 1 and out.output.startswith(f"Error: {db}: cannot open the file: its folder is read-only")
        out = Calibrate(folder / "new.db")("import", "jsonl", str(lines), *IMPORT, ok=False)
        assert out.exit_code == 1 and "its folder is read-only" in out.output
    assert state(db) == before


def test_the_annotation_app_and_serve_refuse_a_read_only_database_file_before_they_start(tmp_path, monkeypatch):
    db = a_calibrate_database(tmp_path / "x.db")
    lines = write_jsonl(tmp_path / "lines.jsonl", lexical_lines(3, start=1000))
    monkeypatch.setattr(CalibrateServer, "serve", lambda *args: pytest.fail("served a database it cannot write"))
    before = state(db)

    def refusal(*command: str) -> tuple[int, str]:
        out = Calibrate(db)(*command, ok=False)  # (not kept: its traceback holds the file open)
        return out.exit_code, out.output

    with read_only(db):
        code, refused = refusal("import", "jsonl", str(lines), *IMPORT)
        assert code == 1 and refused.startswith(f"Error: {db}: cannot write: the file or its folder is read-only")
        for command in (("annotate", "--annotator", "ana"), ("serve", "--port", "0")):
            assert refusal(*command) == (1, refused), command
    assert state(db)[0] == before[0]


def test_an_import_on_a_full_disk_is_a_message_and_keeps_what_was_saved(calibrate, tmp_path, monkeypatch):
    calibrate("import", "jsonl", str(write_jsonl(tmp_path / "first.jsonl", lexical_lines(5))), *IMPORT)
    saved = counts(calibrate.db)
    big = write_jsonl(tmp_path / "big.jsonl", [{**line, "content": "y" * 20_000} for line in lexical_lines(50, start=5)])

    class FullDiskStore(Store):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.conn.execute("PRAGMA max_page_count = 1")  # SQLite raises it to the current size: no growth

    monkeypatch.setattr(cli_module, "Store", FullDiskStore)
    out = calibrate("import", "jsonl", str(big), *IMPORT, ok=False)
    assert out.exit_code == 1 and out.output.startswith(f"Error: {calibrate.db}: the disk is full"), out.output
    monkeypatch.undo()
    assert counts(calibrate.db) == saved and Store(calibrate.db).import_runs(unfinished=True) == []
    assert Store(calibrate.db).count_items() == 5


async def test_the_app_on_a_full_disk_shows_the_error_keeps_what_was_saved_and_goes_on(demo_db):
    app = make_app(demo_db, task="c3/heterograph", lang="en")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("y")
        assert rows(demo_db, "SELECT action, label FROM annotations") == [("label", "yes")]
        assert app.store.conn.execute("PRAGMA freelist_count").fetchone()[0] == 0, "no free page to take"
        app.store.conn.execute("PRAGMA max_page_count = 1")  # SQLite raises it to the current size: no growth
        await pilot.press("a")
        app.screen.query_one(Input).value = "a long note " * 2000  # needs new pages
        await pilot.press("enter")
        await pilot.pause()
        messages = [n.message for n in app._notifications]
        assert any(m.startswith(f"{demo_db}: the disk is full") for m in messages), messages
        assert app.is_running and app.screen.view is not None, "the app goes on"
        app.store.conn.execute("PRAGMA max_page_count = 1073741823")  # space freed
        await pilot.press("a", *"short", "enter")
        await pilot.press("y")
    assert rows(demo_db, "SELECT action, coalesce(label, note) FROM annotations") == [
        ("label", "yes"), ("note", "short"), ("label", "yes")], "the decision before the error is kept"


def test_a_command_failing_on_a_damaged_database_leaves_the_file_its_out_named_as_it_was(demo_db, tmp_path):
    outputs = tmp_path / "outputs"
    outputs.mkdir()
    run = Calibrate(demo_db)
    writes = {"gold.jsonl": ("export",), "scores.csv": ("scores", "--format", "csv")}
    for name, command in writes.items():
        run(*command, "--out", str(outputs / name))
    before = {name: (outputs / name).read_bytes() for name in writes}
    damaged_table(demo_db, "judgments")
    for name, command in writes.items():
        out = run(*command, "--out", str(outputs / name), ok=False)
        assert out.exit_code == 1 and f"Error: {demo_db}: the database file is damaged" in out.output, out.output
    assert {path.name: path.read_bytes() for path in outputs.iterdir()} == before, "the earlier files, and no other"


def test_a_file_growing_past_the_file_size_limit_is_said_so_and_the_earlier_one_kept(tmp_path):
    db = a_calibrate_database(tmp_path / "x.db")
    gold = tmp_path / "gold.jsonl"
    gold.write_text("an earlier export\n", encoding="utf-8")
    big = write_jsonl(tmp_path / "big.jsonl", [{**line, "content": "y" * 20_000} for line in lexical_lines(20, start=500)])
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    limit = 64 * 1024  # above the database's shared-memory file (32 KiB), below the export and the import
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))  # Python ignores SIGXFSZ: a write past it fails (EFBIG)
    try:
        export = Calibrate(db)("export", "--out", str(gold), ok=False)
        imported = Calibrate(db)("import", "jsonl", str(big), *IMPORT, ok=False)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    said = f"the file grew past this process's file-size limit ({limit:,} bytes, set by `ulimit -f`)"
    assert export.exit_code == 1 and export.output.startswith(f"Error: {gold}: {said}"), export.output
    assert imported.exit_code == 1 and imported.output.startswith(f"Error: {db}: {said}"), imported.output
    assert gold.read_text(encoding="utf-8") == "an earlier export\n"
    assert sorted(p.name for p in tmp_path.glob("*gold*")) == ["gold.jsonl"]
    assert Store(db).count_items() == 400


def test_a_folder_named_as_the_database_is_said_to_be_a_folder(tmp_path):
    folder = tmp_path / "labels.db"
    folder.mkdir()
    lines = write_jsonl(tmp_path / "lines.jsonl", lexical_lines(3))
    for command in (("status",), ("import", "jsonl", str(lines), *IMPORT)):
        out = Calibrate(folder)(*command, ok=False)
        assert out.exit_code == 1 and out.output.startswith(f"Error: {folder}: a folder, not a database file"), out.output
    assert list(folder.iterdir()) == []


@pytest.mark.parametrize("missing", ["0013_inspect", MIGRATION_NAMES[-1]])
def test_a_migration_record_missing_a_row_is_said_damaged_by_every_command_and_nothing_is_changed(tmp_path, missing):
    """The record of the migrations applied lacks one whose table or column is there: no
    command guesses a repair (or fails with SQLite's words alone); each names the file and the
    migration."""
    db = a_calibrate_database(tmp_path / "x.db")
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("DELETE FROM _sqlite_migrations WHERE name = ?", (missing,))
    conn.close()
    before = state(db)
    run = Calibrate(db)
    for command in commands(tmp_path):
        out = run(*command, ok=False)
        assert out.exit_code == 1, f"{command}: {out.output}"
        said = " ".join(out.output.split())
        assert (f"Error: {db}: the database's record of its migrations is damaged: migration {missing} is not "
                "recorded in its _sqlite_migrations table, yet what it adds is already there") in said, f"{command}: {said}"
        assert "nothing was changed: restore the file from a copy" in said
    assert state(db) == before


def test_a_migration_failing_for_another_reason_is_a_message_naming_it_and_nothing_is_changed(tmp_path, monkeypatch):
    import calibrate.store as store_module

    db = a_calibrate_database(tmp_path / "x.db")
    before = state(db)
    broken = tmp_path / "9000_broken.sql"
    broken.write_text("CREATE TABLE scratch (x);\nINSERT INTO nosuch VALUES (1);\n", encoding="utf-8")
    monkeypatch.setattr(store_module, "MIGRATION_FILES", [*store_module.MIGRATION_FILES, broken])
    monkeypatch.setattr(store_module, "MIGRATION_NAMES", [*store_module.MIGRATION_NAMES, broken.stem])
    out = Calibrate(db)("status", ok=False)
    assert out.exit_code == 1 and (f"Error: {db}: upgrading it to this calibrate's schema failed at migration "
                                   "9000_broken (SQLite: no such table: nosuch); nothing was changed") in out.output
    monkeypatch.undo()
    assert state(db) == before


@contextlib.contextmanager
def small_disk(folder: Path):
    """`folder` made a disk of 1 MiB (a tmpfs, for root where mounting is allowed)."""
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(folder)],
                                           capture_output=True).returncode != 0:
        pytest.skip("cannot mount a small tmpfs (needs root with permission to mount)")
    try:
        yield
    finally:
        subprocess.run(["umount", str(folder)], check=True)


def filled(folder: Path) -> Path:
    """A file filling the disk of `folder` to the last byte."""
    filler = folder / "filler"
    with filler.open("wb", buffering=0) as handle, contextlib.suppress(OSError):
        while True:
            handle.write(b"\0" * 4096)
    return filler


def test_a_disk_too_full_to_open_the_database_is_said_to_be_full_and_nothing_is_lost(tmp_path):
    """SQLite reports a -shm file it cannot make room for as an input/output error: where the disk
    has no free space, the message says that the disk is full, not that it is failing."""
    folder = tmp_path / "disk"
    folder.mkdir()
    made = a_calibrate_database(tmp_path / "x.db")
    with small_disk(folder):
        db = folder / "x.db"
        db.write_bytes(made.read_bytes())
        filler = filled(folder)
        out = Calibrate(db)("status", ok=False)
        assert out.exit_code == 1 and out.output.startswith(f"Error: {db}: the disk is full"), out.output
        filler.unlink()
        assert "c3/lexical" in Calibrate(db)("status").output
        store = Store(db)
        assert store.count_items() == 400
        store.close()
