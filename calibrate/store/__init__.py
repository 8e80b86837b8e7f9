"""The one place that speaks SQL: calibrate's SQLite file, its migrations, and every read and write.

Every other module asks the Store. Writers open `BEGIN IMMEDIATE`, so several annotators (or
processes) can share one file under WAL without "database is locked" on a read-to-write
upgrade. The schema lives in `db/migrations/*.sql`, applied in order through
`sqlite_utils.Migrations` and recorded in the database.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import time
import uuid
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path
from urllib.parse import quote

from calibrate.model import (
    DECISION_ACTIONS,
    LABEL_ACTIONS,
    REVERT_ACTION,
    AgreementData,
    Annotation,
    AudioClip,
    CalibrateError,
    Item,
    Judgment,
    NewItem,
    NewJudgment,
    dump_json,
    now_iso,
)
from calibrate.resources import bundled

DEFAULT_LEASE_SECONDS = 30 * 60
# An item `i` is visible unless the import run that is writing it has not finished.
VISIBLE = "(i.import_run IS NULL OR i.import_run NOT IN (SELECT id FROM import_runs WHERE finished_at IS NULL))"
# An annotation row `a` is in force until an undo row reverts it.
IN_FORCE = "NOT EXISTS (SELECT 1 FROM annotations u WHERE u.reverts_id = a.id)"
# Row `a` gives a label (its action one of the JSON array bound to the next `?`).
_LABELLED = "a.action IN (SELECT value FROM json_each(?)) AND a.label IS NOT NULL"
# The action sets of calibrate.model reach SQL as parameters (JSON arrays read by json_each),
# never pasted into the statement text.
DECIDES_JSON = dump_json(DECISION_ACTIONS)
LABELS_JSON = dump_json(LABEL_ACTIONS)


MIGRATION_FILES = sorted((bundled("db") / "migrations").glob("*.sql"))
MIGRATION_NAMES = [path.stem for path in MIGRATION_FILES]
MIGRATION_SET = "calibrate"


def _migrations():
    """db/migrations/*.sql as a sqlite_utils.Migrations set, in file-name order. Imported only
    when a migration is pending: sqlite_utils (and what it pulls in) is slow to import, and
    the annotation app should start fast."""
    import sqlite_utils

    migrations = sqlite_utils.Migrations(MIGRATION_SET)
    for path in MIGRATION_FILES:
        script = path.read_text(encoding="utf-8")

        def apply(db, script: str = script) -> None:
            for statement in _split_sql(script):
                db.execute(statement)

        migrations(name=path.stem)(apply)
    return migrations


def _split_sql(script: str) -> list[str]:
    statements, pending = [], ""
    for line in script.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            if pending.strip():
                statements.append(pending.strip())
            pending = ""
    if pending.strip() and not pending.strip().startswith("--"):
        statements.append(pending.strip())
    return statements


def _pending_migrations(path: str) -> bool:
    """Whether the database file at `path` lacks one of calibrate's migrations (read without writing)."""
    conn = sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True)
    try:
        if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = '_sqlite_migrations'").fetchone():
            return True
        names = {r[0] for r in conn.execute("SELECT name FROM _sqlite_migrations WHERE migration_set = ?", (MIGRATION_SET,))}
        return bool(set(MIGRATION_NAMES) - names)
    finally:
        conn.close()


JUDGMENT_COLUMNS = [
    "uid", "item_id", "judge_name", "model", "model_reported", "template_id", "template_hash", "params",
    "judge_key", "system_prompt", "prompt", "raw_output", "status", "verdict", "unparsed_reason", "correct",
    "confidence", "error", "latency_ms", "prompt_tokens", "completion_tokens", "created_at", "sample",
]



class DatabaseMissing(CalibrateError):
    """A command that only reads was pointed at a database file that does not exist."""


class UnknownFilter(CalibrateError, ValueError):
    """A task, language or judge filter naming something the database does not hold."""


class DatabaseBusy(Exception):
    """Raised by an `on_wait` callback to stop waiting for the write lock (nothing was written):
    the annotation app raises it on its own thread, then waits on a worker thread instead."""


class NotACalibrateDatabase(CalibrateError):
    """A file that is not a calibrate database this version can read (merge refuses it)."""


SQLITE_HEADER = b"SQLite format 3\x00"


class Store:
    """calibrate's SQLite file. Opening it applies pending migrations.

    `read_only=True` is for commands that only read: a missing file is a DatabaseMissing error
    (nothing is created), and the connection cannot write, unless the file needs a pending
    migration, which is applied first.

    A writer never dies of a busy database: `transaction()` waits for the write lock as long as
    another writer holds it, in steps of `busy_timeout_ms`, calling `on_wait(seconds waited)`
    after each step so the caller can show that it is waiting (or raise DatabaseBusy to stop)."""

    on_wait: Callable[[float], None] | None = None

    def __init__(self, path: str | Path = ":memory:", *, busy_timeout_ms: int = 250, read_only: bool = False):
        self.path = str(path)
        self.read_only = read_only and self.path != ":memory:"
        if self.read_only and not Path(self.path).is_file():
            raise DatabaseMissing(f"no database at {self.path}: import items first (calibrate import …), "
                                  "or name another file with --db")
        if self.read_only and _pending_migrations(self.path):
            Store(self.path, busy_timeout_ms=busy_timeout_ms).close()
        target = f"{Path(self.path).resolve().as_uri()}?mode=ro" if self.read_only else self.path
        # check_same_thread off: the annotation app hands a waiting write to a worker thread
        # while its own thread waits for the result (the connection is never used by both at once)
        self.conn = sqlite3.connect(target, uri=self.read_only, isolation_level=None, timeout=busy_timeout_ms / 1000,
                                    check_same_thread=False)
        self.conn.row_factory = sqlite3.Row
        self.conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        if self.read_only:
            return
        if self.path != ":memory:":
            self.conn.execute("PRAGMA journal_mode = WAL")
        self.conn.execute("PRAGMA synchronous = NORMAL")
        self.conn.execute("PRAGMA foreign_keys = ON")
        if set(MIGRATION_NAMES) - set(self.applied_migrations()):
            import sqlite_utils

            with self.transaction():
                _migrations().apply(sqlite_utils.Database(self.conn))

    @classmethod
    def open_other(cls, path: str | Path) -> Store:
        """Another calibrate database, opened read-only and left exactly as it is (no journal
        mode change, no migration, no -wal or -shm file created). Refuses, naming the file,
        anything that is not a calibrate database of a schema version this calibrate knows."""
        path = Path(path)
        if not path.is_file():
            raise NotACalibrateDatabase(f"{path}: no such file")
        with path.open("rb") as handle:
            header = handle.read(len(SQLITE_HEADER))
        if not header:
            raise NotACalibrateDatabase(f"{path}: the file is empty, not a calibrate database")
        if header != SQLITE_HEADER:
            raise NotACalibrateDatabase(f"{path}: not an SQLite database")
        # Without a -wal file the main file holds everything, so it is read as immutable (SQLite
        # then creates no -shm); with one, someone has it open: read it through SQLite's locks.
        wal_present = Path(f"{path}-wal").exists()
        uri = "file:" + quote(str(path.resolve())) + ("?mode=ro" if wal_present else "?mode=ro&immutable=1")
        store = cls.__new__(cls)
        store.path = str(path)
        store.conn = sqlite3.connect(uri, uri=True, isolation_level=None)
        store.conn.row_factory = sqlite3.Row
        try:
            applied = store.applied_migrations()
        except sqlite3.DatabaseError as exc:
            store.close()
            raise NotACalibrateDatabase(f"{path}: unreadable SQLite file ({exc})") from None
        unknown = [name for name in applied if name not in MIGRATION_NAMES]
        if not applied or unknown:
            store.close()
            if not applied:
                raise NotACalibrateDatabase(f"{path}: an SQLite database, but not a calibrate one (no calibrate migrations)")
            raise NotACalibrateDatabase(
                f"{path}: schema version {unknown[-1]} is unknown to this calibrate (made by a newer version?)"
            )
        return store

    def close(self) -> None:
        self.conn.close()

    # -- transactions -------------------------------------------------------------------

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """A write transaction (`BEGIN IMMEDIATE`); nested calls join the outer one."""
        if self.conn.in_transaction:
            yield
            return
        self._begin_immediate()
        try:
            yield
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    def _begin_immediate(self) -> None:
        """BEGIN IMMEDIATE, waiting for as long as another writer holds the lock."""
        started = None
        while True:
            try:
                self.conn.execute("BEGIN IMMEDIATE")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) and "busy" not in str(exc):
                    raise
            started = started if started is not None else time.monotonic()
            if self.on_wait is not None:
                self.on_wait(time.monotonic() - started)

    # -- schema ---------------------------------------------------------------------------

    def applied_migrations(self) -> list[str]:
        """Names of the migrations recorded in this database, in the order applied."""
        exists = self.conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '_sqlite_migrations'"
        ).fetchone()
        if not exists:
            return []
        rows = self.conn.execute(
            "SELECT name FROM _sqlite_migrations WHERE migration_set = ? ORDER BY rowid", (MIGRATION_SET,)
        )
        return [r[0] for r in rows]

    def schema_sql(self) -> str:
        """The schema as SQLite stores it, excluding the migrations bookkeeping."""
        rows = self.conn.execute(
            "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL "
            "AND name NOT LIKE '_sqlite_migrations%' AND tbl_name != '_sqlite_migrations' "
            "ORDER BY type DESC, name"
        )
        return "\n".join(row["sql"] + ";" for row in rows) + "\n"

    # -- items ----------------------------------------------------------------------------

    def add_items(self, items: Sequence[NewItem], *, with_ids: bool = False, run: int | None = None) -> tuple[list[int], int]:
        """Insert items, ignoring ones already present (same content hash). Returns (their ids in
        order if `with_ids`, else [], and the number added). Items of an import `run` stay hidden
        until the run finishes, which is also when an item with version > 1 supersedes the earlier
        versions of its identity (at once when there is no run)."""
        stamp = now_iso()
        rows, hashes = [], []
        for item in items:
            hashes.append(item.content_hash)
            rows.append(
                (item.task, item.lang, item.system, item.source_id, item.version, item.fields_json, item.reference,
                 item.content_hash, stamp, run)
            )
        with self.transaction():
            added = self.conn.executemany(
                "INSERT OR IGNORE INTO items "
                "(task, lang, system, source_id, version, fields, reference, content_hash, imported_at, import_run) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                rows,
            ).rowcount  # rows this statement inserted (rowcount leaves out what triggers write)
            newer = [(*item.identity, item.version) for item in items if item.version > 1] if run is None else []
            if newer:
                self.conn.executemany(
                    "UPDATE items SET current = 0 WHERE task = ? AND lang = ? AND system = ? AND source_id = ? "
                    "AND version < ?",
                    newer,
                )
            if not with_ids:
                return [], added
            ids = self._ids_for_hashes(hashes)
        return [ids[h] for h in hashes], added

    # -- import runs -----------------------------------------------------------------------

    def begin_import(self, source: str) -> int:
        """Record an import run: its items stay hidden from every reader until finish_import.
        First removes what runs whose process died (a killed import) left behind."""
        self.clean_dead_imports()
        with self.transaction():
            return self.conn.execute(
                "INSERT INTO import_runs (source, pid, host, started_at) VALUES (?, ?, ?, ?)",
                (source, os.getpid(), socket.gethostname(), now_iso()),
            ).lastrowid

    def finish_import(self, run: int) -> None:
        """Make the run's items visible, all at once. Call inside the transaction that writes
        the run's last rows."""
        with self.transaction():
            self.conn.execute(  # the run's new versions supersede the earlier ones only now
                "UPDATE items SET current = 0 WHERE current = 1 AND EXISTS (SELECT 1 FROM items n "
                "WHERE n.import_run = ? AND n.task = items.task AND n.lang = items.lang AND n.system = items.system "
                "AND n.source_id = items.source_id AND n.version > items.version)",
                (run,),
            )
            self.conn.execute("UPDATE import_runs SET finished_at = ? WHERE id = ?", (now_iso(), run))

    def abandon_import(self, run: int, batch: int = 5000) -> None:
        """Remove everything an unfinished run wrote (hidden, so removing it in short
        transactions shows nothing half-done), then the run itself."""
        while True:
            with self.transaction():
                ids = [r[0] for r in self.conn.execute("SELECT id FROM items WHERE import_run = ? LIMIT ?", (run, batch))]
                if not ids:
                    self.conn.execute("DELETE FROM import_runs WHERE id = ? AND finished_at IS NULL", (run,))
                    return
                marks = ",".join("?" * len(ids))
                self.conn.execute(f"DELETE FROM judgments WHERE item_id IN ({marks})", ids)
                self.conn.execute(f"DELETE FROM item_audio WHERE item_id IN ({marks})", ids)
                self.conn.execute(f"DELETE FROM items WHERE id IN ({marks})", ids)

    def clean_dead_imports(self) -> int:
        """Abandon the unfinished runs of this machine whose process is gone. Returns how many."""
        here = socket.gethostname()
        dead = [r["id"] for r in self.conn.execute("SELECT id, pid, host FROM import_runs WHERE finished_at IS NULL")
                if r["host"] == here and not _process_alive(r["pid"])]
        for run in dead:
            self.abandon_import(run)
        return len(dead)

    def _ids_for_hashes(self, hashes: list[str]) -> dict[str, int]:
        found: dict[str, int] = {}
        for start in range(0, len(hashes), 500):
            chunk = hashes[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for row in self.conn.execute(
                f"SELECT id, content_hash FROM items WHERE content_hash IN ({marks})", chunk
            ):
                found[row["content_hash"]] = row["id"]
        return found

    def item(self, item_id: int) -> Item | None:
        row = self.conn.execute(f"SELECT * FROM items i WHERE id = ? AND {VISIBLE}", (item_id,)).fetchone()
        return _item(row) if row else None

    def source_index(self, task: str, lang: str, system: str = "") -> dict[str, int]:
        """source_id -> current item id, for one task, language and system (none by default)."""
        rows = self.conn.execute(
            f"SELECT source_id, id FROM items i WHERE task = ? AND lang = ? AND system = ? AND current = 1 AND {VISIBLE}",
            (task, lang, system),
        )
        return {r["source_id"]: r["id"] for r in rows}

    def identity_index(self, task: str, lang: str) -> dict[tuple[str, str], tuple[int, str, int]]:
        """(system, source_id) -> (id, content hash, version) of the current version of every
        item of one task and language: what an import checks identities against."""
        rows = self.conn.execute(
            "SELECT system, source_id, id, content_hash, version FROM items i "
            f"WHERE task = ? AND lang = ? AND current = 1 AND {VISIBLE}",
            (task, lang),
        )
        return {(r["system"], r["source_id"]): (r["id"], r["content_hash"], r["version"]) for r in rows}

    def systems(self, *, task: str | None = None, lang: str | None = None) -> list[str]:
        """The systems under test with current items (the empty name for items without one)."""
        where, params = self._item_filter(task, lang, None, None)
        return [r[0] for r in self.conn.execute(f"SELECT DISTINCT system FROM items i WHERE {where} ORDER BY 1", params)]

    def iter_items(
        self,
        *,
        task: str | None = None,
        lang: str | None = None,
        status: str | None = None,
        judge: str | None = None,
        system: str | None = None,
        limit: int | None = None,
        offset: int = 0,
    ) -> Iterator[Item]:
        """Current items in id order, streamed. status: unjudged | judged | unparsed | error |
        labelled | unlabelled."""
        where, params = self._item_filter(task, lang, status, judge, system)
        sql = f"SELECT * FROM items i WHERE {where} ORDER BY i.id"
        if limit is not None:
            sql += " LIMIT ? OFFSET ?"
            params += [limit, offset]
        for row in self.conn.execute(sql, params):
            yield _item(row)

    def items(self, **filters) -> list[Item]:
        """iter_items, as a list."""
        return list(self.iter_items(**filters))

    def item_ids(self, *, task: str | None = None, lang: str | None = None, system: str | None = None,
                 after: int = 0, limit: int | None = None) -> list[int]:
        """Ids of the filtered items in id order, after `after`, at most `limit` of them."""
        where, params = self._item_filter(task, lang, None, None, system)
        sql = f"SELECT id FROM items i WHERE {where} AND i.id > ? ORDER BY id"
        params.append(after)
        if limit is not None:
            sql += " LIMIT ?"
            params.append(int(limit))
        return [r[0] for r in self.conn.execute(sql, params)]

    def item_id_array(self, *, task: str | None = None, lang: str | None = None, system: str | None = None):
        """Ids of the filtered items as a sorted numpy array: read as one string, which on a
        million items is 3x faster than a row each (queues are built from it at start-up)."""
        import numpy as np

        where, params = self._item_filter(task, lang, None, None, system)
        text = self.conn.execute(f"SELECT group_concat(id) FROM items i WHERE {where}", params).fetchone()[0]
        return np.sort(np.array(text.split(","), dtype=np.int64)) if text else np.zeros(0, dtype=np.int64)

    def cells(self, *, task: str | None = None, lang: str | None = None,
              system: str | None = None) -> list[tuple[str, str, str]]:
        """The (task, lang, system) cells of the filtered items, sorted, found by seeks along the
        items' identity index (a few lookups on a million items, where DISTINCT reads them all)."""
        tasks = [task] if task else self._seek_values("SELECT task FROM items WHERE task {op} ? ORDER BY task LIMIT 1")
        lang_after = "SELECT lang FROM items WHERE task = ? AND lang {op} ? ORDER BY lang LIMIT 1"
        system_after = "SELECT system FROM items WHERE task = ? AND lang = ? AND system {op} ? ORDER BY system LIMIT 1"
        return [(t, found, s) for t in tasks for found in self._seek_values(lang_after, t) if lang in (None, found)
                for s in self._seek_values(system_after, t, found) if system in (None, s)]

    def _seek_values(self, sql: str, *fixed: str) -> list[str]:
        """Distinct values in order, found by index seeks: the first one >= '', then each one
        after the last found (`sql` has `{op}` for the comparison and takes `fixed`, then the bound)."""
        values, op, last = [], ">=", ""
        while row := self.conn.execute(sql.format(op=op), (*fixed, last)).fetchone():
            last, op = row[0], ">"
            values.append(last)
        return values

    def max_item_id(self) -> int:
        return self.conn.execute("SELECT coalesce(max(id), 0) FROM items").fetchone()[0]

    # -- filters --------------------------------------------------------------------------

    _KNOWN = {
        "task": ("SELECT DISTINCT task FROM items ORDER BY 1", "SELECT 1 FROM items WHERE task = ? LIMIT 1"),
        "language": ("SELECT DISTINCT lang FROM items ORDER BY 1", "SELECT 1 FROM items WHERE lang = ? LIMIT 1"),
        "system": ("SELECT DISTINCT system FROM items ORDER BY 1", "SELECT 1 FROM items WHERE system = ? LIMIT 1"),
        "judge": ("SELECT DISTINCT judge_name FROM judgments ORDER BY 1",
                  "SELECT 1 FROM judgments WHERE judge_name = ? LIMIT 1"),
    }

    def known(self, what: str) -> list[str]:
        """Every task, language, system or judge in this database (what: task | language | system | judge)."""
        return [r[0] for r in self.conn.execute(self._KNOWN[what][0])]

    def check_filter(self, *, task: str | None = None, lang: str | None = None, system: str | None = None,
                     judge: str | None = None) -> None:
        """UnknownFilter naming the known values when a task, language, system or judge filter
        matches nothing in this database."""
        for what, value in (("task", task), ("language", lang), ("system", system), ("judge", judge)):
            if value and self.conn.execute(self._KNOWN[what][1], (value,)).fetchone() is None:
                known = [v or "(none)" for v in self.known(what)]
                listing = ", ".join(known) if known else "none yet"
                raise UnknownFilter(f"unknown {what} {value!r}: this database has {listing}")

    @staticmethod
    def _item_filter(task, lang, status, judge, system=None) -> tuple[str, list]:
        """SQL conditions on `items i`: the current version of each visible item, filtered."""
        clauses, params = ["i.current = 1", VISIBLE], []
        if system is not None:
            clauses.append("i.system = ?")
            params.append(system)
        if task:
            clauses.append("i.task = ?")
            params.append(task)
        if lang:
            clauses.append("i.lang = ?")
            params.append(lang)
        judge_clause = " AND j.judge_name = ?" if judge else ""
        judge_params = [judge] if judge else []
        if status in ("judged", "unjudged"):
            neg = "NOT " if status == "unjudged" else ""
            clauses.append(f"{neg}EXISTS (SELECT 1 FROM judgments j WHERE j.item_id = i.id{judge_clause})")
            params += judge_params
        elif status in ("unparsed", "error"):
            clauses.append(
                f"EXISTS (SELECT 1 FROM judgments j WHERE j.item_id = i.id AND j.status = ?{judge_clause})"
            )
            params += [status, *judge_params]
        elif status in ("labelled", "unlabelled"):
            neg = "NOT " if status == "unlabelled" else ""
            clauses.append(f"{neg}EXISTS (SELECT 1 FROM current_labels c WHERE c.item_id = i.id)")
        elif status == "flagged":
            clauses.append(f"EXISTS (SELECT 1 FROM annotations a WHERE a.item_id = i.id AND a.action = 'flag' AND {IN_FORCE})")
        elif status is not None:
            raise ValueError(
                f"unknown status {status!r}: use judged, unjudged, unparsed, error, labelled, unlabelled or flagged"
            )
        return " AND ".join(clauses), params

    def status_counts(self, *, system: str | None = None) -> list[dict]:
        """Per task x language x system: items, judged, unparsed, errors (an error a later
        judgment by the same judge has put right does not count), labelled (by anyone)."""
        where, params = self._item_filter(None, None, None, None, system)
        sql = f"""
        SELECT i.task, i.lang, i.system, count(*) AS items,
            sum(EXISTS (SELECT 1 FROM judgments j WHERE j.item_id = i.id AND j.status != 'error')) AS judged,
            sum(EXISTS (SELECT 1 FROM judgments j WHERE j.item_id = i.id AND j.status = 'unparsed')) AS unparsed,
            sum(EXISTS (SELECT 1 FROM judgments j WHERE j.item_id = i.id AND j.status = 'error'
                        AND NOT EXISTS (SELECT 1 FROM judgments k WHERE k.item_id = i.id AND k.judge_name = j.judge_name
                                        AND k.status != 'error' AND k.id > j.id))) AS errors,
            sum(EXISTS (SELECT 1 FROM current_labels c WHERE c.item_id = i.id)) AS labelled
        FROM items i WHERE {where} GROUP BY i.task, i.lang, i.system ORDER BY i.task, i.lang, i.system
        """
        return [dict(r) for r in self.conn.execute(sql, params)]

    # -- judgments ------------------------------------------------------------------------

    def add_judgments(self, judgments: Iterable[NewJudgment]) -> int:
        """Store judgments; a judgment whose uid is already present is skipped. Returns added."""
        stamp = now_iso()
        rows = []
        for j in judgments:
            values = {**j.__dict__, "created_at": stamp}
            values["uid"] = j.uid or uuid.uuid4().hex
            values["params"] = dump_json(j.params or {})
            rows.append(tuple(values[c] for c in JUDGMENT_COLUMNS))
        with self.transaction():
            return self.conn.executemany(
                f"INSERT OR IGNORE INTO judgments ({', '.join(JUDGMENT_COLUMNS)}) "
                f"VALUES ({', '.join('?' * len(JUDGMENT_COLUMNS))})",
                rows,
            ).rowcount

    def judgments_for_item(self, item_id: int, judge: str | None = None, *,
                           output_chars: int | None = None) -> list[Judgment]:
        """The item's judgments, newest first; with `output_chars`, each raw output cut to
        that many characters by SQLite (a 10 MB output then costs nothing to show)."""
        if output_chars is None:
            sql, params = "SELECT * FROM judgments WHERE item_id = ?", [item_id]
        else:
            columns = ", ".join(c for c in (*JUDGMENT_COLUMNS, "id") if c != "raw_output")
            sql, params = (f"SELECT {columns}, substr(raw_output, 1, ?) AS raw_output FROM judgments WHERE item_id = ?",
                           [output_chars, item_id])
        if judge:
            sql += " AND judge_name = ?"
            params.append(judge)
        return [_judgment(r) for r in self.conn.execute(sql + " ORDER BY id DESC", params)]

    def judgments(self, *, judge: str | None = None, status: str | None = None) -> Iterator[Judgment]:
        sql, params = "SELECT * FROM judgments WHERE 1", []
        if judge:
            sql += " AND judge_name = ?"
            params.append(judge)
        if status:
            sql += " AND status = ?"
            params.append(status)
        for row in self.conn.execute(sql + " ORDER BY id", params):
            yield _judgment(row)

    def judged_item_ids(self, judge_key_value: str) -> set[int]:
        """Items that already have a non-error judgment from this exact judge configuration."""
        rows = self.conn.execute(
            "SELECT item_id FROM judgments WHERE judge_key = ? AND status != 'error'", (judge_key_value,)
        )
        return {r[0] for r in rows}

    def judged_samples(self, judge_key_value: str) -> dict[int, set[int]]:
        """item id -> the sample indices (repeats) that already have a non-error judgment from
        this exact judge configuration: what a resumed `judge --repeat K` need not ask again."""
        done: dict[int, set[int]] = {}
        for item_id, sample in self.conn.execute(
            "SELECT item_id, sample FROM judgments WHERE judge_key = ? AND status != 'error'", (judge_key_value,)
        ):
            done.setdefault(item_id, set()).add(sample)
        return done

    def judge_samples(self, judge: str | None = None) -> list[tuple]:
        """Every judgment that is not an error, in id order (so the newest of an item, judge and
        sample comes last), for reliability: (item_id, task, lang, judge_name, sample, status,
        verdict, confidence, response_length), the length in characters of the item's
        `response` field (None when it has none)."""
        judge_clause, params = (" AND j.judge_name = ?", [judge]) if judge else ("", [])
        sql = f"""
        SELECT j.item_id, i.task, i.lang, j.judge_name, j.sample, j.status, j.verdict, j.confidence,
               length(json_extract(i.fields, '$.response'))
        FROM judgments j JOIN items i ON i.id = j.item_id
        WHERE j.status != 'error'{judge_clause}
        ORDER BY j.id
        """
        return [tuple(r) for r in self.conn.execute(sql, params)]

    def has_repeats_or_confidence(self) -> bool:
        """Whether any judgment is a repeat (`judge --repeat`) or carries a confidence: without
        either, a judge's consistency and calibration cannot be measured."""
        return bool(self.conn.execute(
            "SELECT EXISTS (SELECT 1 FROM judgments WHERE sample > 0 OR confidence IS NOT NULL)").fetchone()[0])

    def item_systems(self) -> dict[int, str]:
        """item id -> the system under test that produced its response, for items that name one."""
        rows = self.conn.execute("SELECT id, system FROM items WHERE system != ''")
        return {r[0]: r[1] for r in rows}

    def update_parse(self, judgment_id: int, status: str, verdict, reason, correct) -> None:
        """Re-parse result for a stored judgment; raw output is never touched."""
        with self.transaction():
            self.conn.execute(
                "UPDATE judgments SET status = ?, verdict = ?, unparsed_reason = ?, correct = ? WHERE id = ?",
                (status, verdict, reason, correct, judgment_id),
            )

    def latest_verdicts(self, judge: str | None = None) -> list[dict]:
        """The newest judgment per (item, judge): what agreement compares with humans."""
        sql = f"""
        SELECT j.item_id, j.judge_name, j.status, j.verdict, j.correct, j.id AS judgment_id,
               i.task, i.lang, i.reference
        FROM verdicts_in_force v JOIN judgments j ON j.id = v.judgment_id JOIN items i ON i.id = v.item_id
        WHERE {VISIBLE}
        """
        params: list = []
        if judge:
            sql += " AND j.judge_name = ?"
            params.append(judge)
        return [dict(r) for r in self.conn.execute(sql, params)]

    # -- annotations ----------------------------------------------------------------------

    def annotate(
        self,
        item_id: int,
        annotator: str,
        action: str,
        *,
        label: str | None = None,
        judgment_id: int | None = None,
        note: str | None = None,
        blind: bool = False,
        seconds_spent: float | None = None,
        reverts_id: int | None = None,
        uid: str | None = None,
        created_at: str | None = None,
        audio_plays: int | None = None,
        listened_seconds: float | None = None,
        holder: str | None = None,
    ) -> int:
        """Append one annotation row (and update the label in force in the same transaction);
        a decision releases the lease of `holder` (default: the annotator). `audio_plays` and
        `listened_seconds` record listening (None: the item has no audio)."""
        with self.transaction():
            row_id = self._append_annotation(
                uid or uuid.uuid4().hex, item_id, judgment_id, annotator, action, label, reverts_id, note, int(blind),
                seconds_spent, created_at or self._decision_time(), audio_plays, listened_seconds,
            )
            if action in DECISION_ACTIONS:
                self.conn.execute(
                    "DELETE FROM leases WHERE item_id = ? AND annotator = ?", (item_id, holder or annotator)
                )
            return row_id

    def _decision_time(self) -> str:
        """now_iso(), strictly later than the previous decision time of this connection, so two
        decisions in one microsecond still keep their order."""
        stamp = now_iso()
        last = getattr(self, "_last_decision_time", "")
        if stamp <= last:
            stamp = (datetime.fromisoformat(last) + timedelta(microseconds=1)).isoformat(timespec="microseconds")
        self._last_decision_time = stamp
        return stamp

    def _append_annotation(self, uid, item_id, judgment_id, annotator, action, label, reverts_id, note, blind,
                           seconds_spent, created_at, audio_plays=None, listened_seconds=None) -> int | None:
        """INSERT OR IGNORE one annotation row (by uid) and keep `labels_in_force` in step: a
        label decision takes over if it is later (decision time, then uid) than the one in
        force; an undo of the decision in force hands over to the latest decision not reverted.
        Returns the new row id, or None when the uid was already present. Call inside a
        transaction."""
        cursor = self.conn.execute(
            "INSERT OR IGNORE INTO annotations (uid, item_id, judgment_id, annotator, action, label, reverts_id, note, "
            "blind, seconds_spent, created_at, audio_plays, listened_seconds) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (uid, item_id, judgment_id, annotator, action, label, reverts_id, note, blind, seconds_spent, created_at,
             audio_plays, listened_seconds),
        )
        if cursor.rowcount == 0:
            return None
        if action in LABEL_ACTIONS and label is not None:
            # the row in force is replaced (deleted, then inserted), never updated: migration
            # 0008's counts follow inserts and deletes
            self.conn.execute(
                "DELETE FROM labels_in_force WHERE item_id = ? AND annotator = ? AND (decided_at, annotation_uid) < (?, ?)",
                (item_id, annotator, created_at, uid),
            )
            self.conn.execute(
                "INSERT OR IGNORE INTO labels_in_force "
                "(item_id, annotator, label, action, judgment_id, annotation_uid, decided_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (item_id, annotator, label, action, judgment_id, uid, created_at),
            )
        elif action == REVERT_ACTION and reverts_id is not None:
            reverted = self.conn.execute(
                "DELETE FROM labels_in_force WHERE item_id = ? AND annotator = ? "
                "AND annotation_uid = (SELECT uid FROM annotations WHERE id = ?)",
                (item_id, annotator, reverts_id),
            ).rowcount
            if reverted:
                self.conn.execute(
                    "INSERT INTO labels_in_force (item_id, annotator, label, action, judgment_id, annotation_uid, decided_at) "
                    "SELECT a.item_id, a.annotator, a.label, a.action, a.judgment_id, a.uid, a.created_at "
                    f"FROM annotations a WHERE a.item_id = ? AND a.annotator = ? AND {_LABELLED} AND {IN_FORCE} "
                    "ORDER BY a.created_at DESC, a.uid DESC LIMIT 1",
                    (item_id, annotator, LABELS_JSON),
                )
        return cursor.lastrowid

    def undo_last(self, annotator: str, among: Collection[str] | None = None) -> Annotation | None:
        """Reverse the annotator's latest decision still in force (only those whose uid is in
        `among`, when given: one browser tab undoes only its own decisions) by appending an
        `undo` row that names it and carries the label left in force. Returns the reversed row."""
        with self.transaction():
            sql = (f"SELECT * FROM annotations a WHERE a.annotator = ? "
                   f"AND a.action IN (SELECT value FROM json_each(?)) AND {IN_FORCE}")
            params: list = [annotator, DECIDES_JSON]
            if among is not None:
                sql += " AND a.uid IN (SELECT value FROM json_each(?))"
                params.append(dump_json(sorted(among)))
            row = self.conn.execute(sql + " ORDER BY a.id DESC LIMIT 1", params).fetchone()
            if row is None:
                return None
            undone = _annotation(row)
            restored = self.conn.execute(
                f"SELECT a.label FROM annotations a WHERE a.item_id = ? AND a.annotator = ? AND a.id != ? "
                f"AND {_LABELLED} AND {IN_FORCE} ORDER BY a.created_at DESC, a.uid DESC LIMIT 1",
                (undone.item_id, annotator, undone.id, LABELS_JSON),
            ).fetchone()
            self.annotate(
                undone.item_id, annotator, REVERT_ACTION, label=restored["label"] if restored else None,
                reverts_id=undone.id, judgment_id=undone.judgment_id, blind=bool(undone.blind),
            )
            return undone

    def add_imported_labels(self, rows: Iterable[tuple]) -> int:
        """Labels made elsewhere: (uid, item_id, annotator, label, note). A uid already present
        is skipped, so importing the same file twice adds nothing. Returns rows added."""
        stamp = now_iso()
        added = 0
        with self.transaction():
            for uid, item_id, annotator, label, note in rows:
                added += self._append_annotation(uid, item_id, None, annotator, "label", label, None, note, 0, None,
                                                 stamp) is not None
        return added

    def current_label(self, item_id: int, annotator: str) -> str | None:
        row = self.conn.execute(
            "SELECT label FROM current_labels WHERE item_id = ? AND annotator = ?", (item_id, annotator)
        ).fetchone()
        return row["label"] if row else None

    def current_labels(self, annotator: str | None = None) -> list[dict]:
        """Every annotator's label in force per item (latest labelling row), with task and lang."""
        sql = (
            "SELECT c.item_id, c.annotator, c.label, i.task, i.lang, i.system, i.source_id "
            "FROM current_labels c JOIN items i ON i.id = c.item_id"
        )
        params: list = []
        if annotator:
            sql += " WHERE c.annotator = ?"
            params.append(annotator)
        return [dict(r) for r in self.conn.execute(sql + " ORDER BY c.item_id", params)]

    def labels_in_force(self) -> list[tuple[int, str, str]]:
        """(item_id, annotator, label) for every annotator's label in force: current_labels
        without the join to items, for figures that need only the labels."""
        return [tuple(r) for r in self.conn.execute("SELECT item_id, annotator, label FROM current_labels")]

    def note_texts(self, item_id: int) -> list[str]:
        rows = self.conn.execute(
            "SELECT annotator, note FROM annotations WHERE item_id = ? AND note IS NOT NULL ORDER BY id",
            (item_id,),
        )
        return [f"{r['annotator']}: {r['note']}" for r in rows]

    # -- audio -----------------------------------------------------------------------------------

    def set_item_audio(self, item_id: int, clips: Sequence[AudioClip]) -> None:
        """Record an item's audio clips (replacing what an earlier import recorded for the same
        parts), each under the root it was found in."""
        with self.transaction():
            for position, clip in enumerate(clips):
                root = str(clip.root)
                self.conn.execute(
                    "INSERT INTO audio_roots (root, imported_at) VALUES (?, ?) ON CONFLICT (root) DO NOTHING",
                    (root, now_iso()),
                )
                self.conn.execute(
                    "INSERT OR REPLACE INTO item_audio (item_id, part, position, root_id, path, duration, sample_rate, "
                    "checksum, problem) VALUES (?, ?, ?, (SELECT id FROM audio_roots WHERE root = ?), ?, ?, ?, ?, ?)",
                    (item_id, clip.part, position, root, clip.path, clip.duration, clip.sample_rate, clip.checksum,
                     clip.problem),
                )

    def item_audio(self, item_id: int) -> list[AudioClip]:
        """The item's audio clips in order (usable or not); [] when it was imported without any."""
        return self.audio_by_item(item_id).get(item_id, [])

    def audio_by_item(self, item_id: int | None = None) -> dict[int, list[AudioClip]]:
        """item id -> its audio clips in order, for one item or all of them."""
        where, params = ("WHERE a.item_id = ?", [item_id]) if item_id is not None else ("", [])
        rows = self.conn.execute(
            "SELECT a.*, r.root FROM item_audio a JOIN audio_roots r ON r.id = a.root_id "
            f"{where} ORDER BY a.item_id, a.position",
            params,
        )
        clips: dict[int, list[AudioClip]] = {}
        for r in rows:
            clips.setdefault(r["item_id"], []).append(AudioClip(
                r["part"], Path(r["root"]), r["path"], r["duration"], r["sample_rate"], r["checksum"], r["problem"]))
        return clips

    def listening(self) -> dict[tuple[int, str], float]:
        """(item id, annotator) -> the longest listening recorded with one of their decisions on an
        item with audio (0.0: decided without playing it)."""
        rows = self.conn.execute(
            "SELECT item_id, annotator, max(coalesce(listened_seconds, 0)) AS seconds FROM annotations "
            "WHERE audio_plays IS NOT NULL GROUP BY item_id, annotator"
        )
        return {(r["item_id"], r["annotator"]): r["seconds"] for r in rows}

    # -- agreement -----------------------------------------------------------------------------

    def agreement_data(self, judge: str | None = None, system: str | None = None, *,
                       gold_from: str | None = None) -> AgreementData:
        """Everything the agreement report needs: judge verdict x human label counts per
        annotator and against the gold label, human x human pair counts, and the per-item labels
        of items that several annotators labelled. `system` keeps only that system's items.

        The judge x annotator counts and the judged counts are kept up to date by the triggers
        of migration 0008 (agreement_counts, verdict_counts), so they cost a few hundred rows
        whatever the number of labels; only items labelled by two or more people are read one
        by one. Only the current version of an item counts: labels made on an earlier version
        stay attached to it, but one source item is never counted twice."""
        counts_filter, params = "n != 0", []
        if system is not None:
            counts_filter += " AND system = ?"
            params.append(system)
        if judge:
            counts_filter += " AND judge_name = ?"
            params.append(judge)
        c = self.conn
        rows = lambda sql, params=(): [tuple(r) for r in c.execute(sql, params)]  # noqa: E731
        judge_vs_human = rows(
            "SELECT task, lang, judge_name, annotator, status, nullif(verdict, ''), label, sum(n) FROM agreement_counts "
            f"WHERE {counts_filter} GROUP BY 1, 2, 3, 4, 5, 6, 7", params)
        judged = rows(f"SELECT task, lang, judge_name, status, sum(n) FROM verdict_counts WHERE {counts_filter} "
                      "GROUP BY 1, 2, 3, 4", params)
        temporary = ("shared_items", "labels_now", "verdicts_now", "gold_now")
        for table in temporary:
            c.execute(f"DROP TABLE IF EXISTS temp.{table}")
        c.execute(
            "CREATE TEMP TABLE shared_items AS SELECT s.item_id, i.task, i.lang FROM "
            "(SELECT item_id FROM labels_in_force GROUP BY item_id HAVING count(*) >= 2) s "
            f"JOIN counted_items i ON i.id = s.item_id{' WHERE i.system = ?' if system is not None else ''}",
            [system] if system is not None else [],
        )
        c.execute("CREATE TEMP TABLE labels_now (item_id INTEGER, annotator TEXT, label TEXT, task TEXT, lang TEXT, "
                  "PRIMARY KEY (item_id, annotator)) WITHOUT ROWID")
        c.execute("INSERT INTO labels_now SELECT l.item_id, l.annotator, l.label, s.task, s.lang FROM shared_items s "
                  "JOIN labels_in_force l ON l.item_id = s.item_id")
        c.execute(
            "CREATE TEMP TABLE verdicts_now AS SELECT v.item_id, v.judge_name, v.status, v.verdict FROM shared_items s "
            f"JOIN verdicts_in_force v ON v.item_id = s.item_id{' WHERE v.judge_name = ?' if judge else ''}",
            [judge] if judge else [],
        )
        # The gold label of an item labelled by two or more people: the adjudicator's (`gold_from`)
        # where they labelled it, else the strict majority; NULL for a tie, counted in `ties`.
        c.execute(
            """CREATE TEMP TABLE gold_now AS
            WITH counted AS (SELECT item_id, label, count(*) AS votes FROM labels_now GROUP BY item_id, label),
            ranked AS (SELECT *, max(votes) OVER (PARTITION BY item_id) AS top FROM counted),
            majority AS (SELECT item_id, CASE WHEN count(*) = 1 THEN max(label) END AS label FROM ranked
                         WHERE votes = top GROUP BY item_id)
            SELECT s.item_id, s.task, s.lang, coalesce(a.label, m.label) AS label FROM shared_items s
            JOIN majority m ON m.item_id = s.item_id
            LEFT JOIN labels_now a ON a.item_id = s.item_id AND a.annotator = ?""",
            (gold_from,),
        )
        try:
            return AgreementData(
                judge_vs_human=judge_vs_human,
                judge_vs_gold=rows(
                    "SELECT g.task, g.lang, v.judge_name, v.status, v.verdict, g.label, count(*) "
                    "FROM gold_now g JOIN verdicts_now v ON v.item_id = g.item_id WHERE g.label IS NOT NULL "
                    "GROUP BY 1, 2, 3, 4, 5, 6"
                ),
                ties=rows("SELECT task, lang, count(*) FROM gold_now WHERE label IS NULL GROUP BY 1, 2"),
                human_pairs=rows(
                    "SELECT x.task, x.lang, x.annotator, y.annotator, x.label, y.label, count(*) FROM labels_now x "
                    "JOIN labels_now y ON y.item_id = x.item_id AND x.annotator < y.annotator GROUP BY 1, 2, 3, 4, 5, 6"
                ),
                shared_labels=rows("SELECT item_id, task, lang, annotator, label FROM labels_now ORDER BY item_id"),
                shared_verdicts=rows("SELECT item_id, judge_name, status, verdict FROM verdicts_now"),
                judged=judged,
            )
        finally:
            for table in temporary:
                c.execute(f"DROP TABLE IF EXISTS temp.{table}")

    def jury_rows(self, exclude: str, system: str | None = None) -> tuple[list[str], dict[str, list[tuple]]]:
        """What a jury of the judges needs, over the counted items (current, visible) that two or
        more judges judged (an error is no judgment): the judges (all but `exclude`, each with a
        judgment in force that is not an error, in name order) and rows in which `verdicts` is one
        column per judge in that order, the parsed verdict or NULL (unparsed, or not judged):
        - judged: task, lang, verdicts..., n (items);
        - versus_human: task, lang, verdicts..., annotator, label, n (labels in force);
        - shared: item_id, task, lang, verdicts..., annotator, label, one row per label of the
          items two or more people labelled.
        With `system`, only that system's items. Items whose judges gave the same verdicts are
        counted together, so the work in Python grows with the distinct rows of verdicts, not
        with the items."""
        judges = [r[0] for r in self.conn.execute(
            "SELECT DISTINCT judge_name FROM verdict_counts WHERE n != 0 AND status != 'error' AND judge_name != ? "
            "AND (? IS NULL OR system = ?) ORDER BY 1", (exclude, system, system))]
        if len(judges) < 2:
            return judges, {}
        pivot = ", ".join(f"max(CASE WHEN judge_name = ?{k} THEN CASE WHEN status = 'verdict' THEN verdict END END)"
                          for k in range(1, len(judges) + 1))
        columns = ", ".join(f"j.v{k}" for k in range(1, len(judges) + 1))
        c = self.conn
        c.execute("DROP TABLE IF EXISTS temp.juried")
        c.execute(f"CREATE TEMP TABLE juried (item_id INTEGER PRIMARY KEY, task TEXT, lang TEXT, "
                  f"{', '.join(f'v{k}' for k in range(1, len(judges) + 1))})")
        c.execute(
            f"INSERT INTO juried SELECT v.item_id, i.task, i.lang, {pivot} FROM verdicts_in_force v "
            "JOIN counted_items i ON i.id = v.item_id "
            f"WHERE v.status != 'error' AND v.judge_name IN ({', '.join(f'?{k}' for k in range(1, len(judges) + 1))}) "
            f"{'AND i.system = ?' + str(len(judges) + 1) if system is not None else ''} "
            "GROUP BY v.item_id HAVING count(*) >= 2",
            [*judges, system] if system is not None else judges,
        )
        rows = lambda sql: [tuple(r) for r in c.execute(sql)]  # noqa: E731
        try:
            return judges, {
                "judged": rows(f"SELECT j.task, j.lang, {columns}, count(*) FROM juried j GROUP BY j.task, j.lang, {columns}"),
                "versus_human": rows(
                    f"SELECT j.task, j.lang, {columns}, l.annotator, l.label, count(*) FROM juried j "
                    f"JOIN labels_in_force l ON l.item_id = j.item_id GROUP BY j.task, j.lang, {columns}, l.annotator, l.label"),
                "shared": rows(
                    f"SELECT j.item_id, j.task, j.lang, {columns}, l.annotator, l.label FROM "
                    "(SELECT item_id FROM labels_in_force GROUP BY item_id HAVING count(*) >= 2) s "
                    "JOIN juried j ON j.item_id = s.item_id JOIN labels_in_force l ON l.item_id = s.item_id "
                    "ORDER BY j.item_id"),
            }
        finally:
            c.execute("DROP TABLE IF EXISTS temp.juried")

    # -- merging: reading another database, writing what passed validation ---------------------

    def item_rows(self) -> Iterator[sqlite3.Row]:
        """Every item row in id order, streamed (merge reads another database with it)."""
        yield from self.conn.execute(f"SELECT * FROM items i WHERE {VISIBLE} ORDER BY id")

    def judgment_rows(self) -> Iterator[sqlite3.Row]:
        """Every judgment row with its item's content hash, in id order, streamed."""
        yield from self.conn.execute(
            "SELECT j.*, i.content_hash FROM judgments j LEFT JOIN items i ON i.id = j.item_id ORDER BY j.id"
        )

    def annotation_rows(self) -> Iterator[sqlite3.Row]:
        """Every annotation row with its item's content hash, its judgment's uid and the uid of
        the row it reverts, in id order, streamed."""
        yield from self.conn.execute(
            "SELECT a.*, i.content_hash, j.uid AS judgment_uid, r.uid AS reverts_uid FROM annotations a "
            "LEFT JOIN items i ON i.id = a.item_id LEFT JOIN judgments j ON j.id = a.judgment_id "
            "LEFT JOIN annotations r ON r.id = a.reverts_id ORDER BY a.id"
        )

    def items_by_hash(self, hashes: Iterable[str]) -> dict[str, tuple[int, str, str]]:
        """content hash -> (id, task, lang) of the stored items among `hashes`."""
        found: dict[str, tuple[int, str, str]] = {}
        for chunk in _chunks(list(set(hashes)), 500):
            marks = ",".join("?" * len(chunk))
            for r in self.conn.execute(
                f"SELECT id, task, lang, content_hash FROM items i WHERE content_hash IN ({marks}) AND {VISIBLE}", chunk
            ):
                found[r["content_hash"]] = (r["id"], r["task"], r["lang"])
        return found

    def ids_by_uid(self, table: str, uids: Iterable[str]) -> dict[str, int]:
        """uid -> id of the stored judgments or annotations among `uids`."""
        if table not in ("judgments", "annotations"):
            raise ValueError(f"no uids in table {table!r}")
        found: dict[str, int] = {}
        for chunk in _chunks([u for u in set(uids) if u], 500):
            marks = ",".join("?" * len(chunk))
            for r in self.conn.execute(f"SELECT uid, id FROM {table} WHERE uid IN ({marks})", chunk):
                found[r["uid"]] = r["id"]
        return found

    def add_judgment_rows(self, rows: Sequence[dict]) -> int:
        """Judgments as complete rows (every JUDGMENT_COLUMNS value), skipping uids already
        present. Returns rows added."""
        with self.transaction():
            return self.conn.executemany(
                f"INSERT OR IGNORE INTO judgments ({', '.join(JUDGMENT_COLUMNS)}) "
                f"VALUES ({', '.join('?' * len(JUDGMENT_COLUMNS))})",
                [[row[c] for c in JUDGMENT_COLUMNS] for row in rows],
            ).rowcount

    def add_annotation_rows(self, rows: Sequence[dict]) -> int:
        """Annotations as complete rows (uid, item_id, judgment_id, annotator, action, label,
        reverts_uid, note, blind, seconds_spent, created_at, and optionally audio_plays and
        listened_seconds; an undo names the row it reverts by
        uid, which may be written earlier in `rows`), skipping uids already present and keeping
        the labels in force in step. Returns rows added."""
        added = 0
        with self.transaction():
            for row in rows:
                reverts_id = None
                if row["reverts_uid"] is not None:
                    reverts_id = self.conn.execute("SELECT id FROM annotations WHERE uid = ?", (row["reverts_uid"],)).fetchone()[0]
                added += self._append_annotation(
                    row["uid"], row["item_id"], row["judgment_id"], row["annotator"], row["action"], row["label"],
                    reverts_id, row["note"], row["blind"], row["seconds_spent"], row["created_at"],
                    row.get("audio_plays"), row.get("listened_seconds"),
                ) is not None
        return added

    def export_rows(self, system: str | None = None) -> Iterator[dict]:
        """Per item (of `system`, if given): its fields, every annotator's current label, notes,
        and each judge's latest verdict, for gold-label exports."""
        labels: dict[int, dict[str, str]] = {}
        for r in self.conn.execute("SELECT item_id, annotator, label FROM current_labels"):
            labels.setdefault(r["item_id"], {})[r["annotator"]] = r["label"]
        notes: dict[int, list[dict]] = {}
        for r in self.conn.execute("SELECT item_id, annotator, note, action FROM annotations WHERE note IS NOT NULL ORDER BY id"):
            notes.setdefault(r["item_id"], []).append({"annotator": r["annotator"], "note": r["note"], "action": r["action"]})
        flags: dict[int, set[str]] = {}
        for r in self.conn.execute(
            f"SELECT a.item_id, a.annotator FROM annotations a WHERE a.action = 'flag' AND {IN_FORCE}"
        ):
            flags.setdefault(r["item_id"], set()).add(r["annotator"])
        verdicts: dict[int, dict[str, dict]] = {}
        for v in self.latest_verdicts():
            verdicts.setdefault(v["item_id"], {})[v["judge_name"]] = {
                "status": v["status"], "verdict": v["verdict"], "correct": v["correct"]}
        listened = self.listening()
        with_audio = {item_id for item_id, clips in self.audio_by_item().items() if any(c.usable for c in clips)}
        for item in self.iter_items(system=system):
            yield {
                "item": item,
                "listened": {a: listened.get((item.id, a), 0.0) for a in labels.get(item.id, {})}
                if item.id in with_audio else None,
                "labels": labels.get(item.id, {}),
                "notes": notes.get(item.id, []),
                "flagged_by": sorted(flags.get(item.id, ())),
                "verdicts": verdicts.get(item.id, {}),
            }

    def score_data(self, *, judge: str | None = None, system: str | None = None) -> dict[str, list[tuple]]:
        """What `calibrate scores` needs, for the current version of every item: the items
        (id, task, lang, system, source_id, reference), each judge's latest judgment per item
        (item_id, judge, status, verdict, correct, raw_output) and every label in force
        (item_id, annotator, label)."""
        where, params = self._item_filter(None, None, None, None, system)
        judge_clause, judge_params = (" AND v.judge_name = ?", [judge]) if judge else ("", [])
        items = self.conn.execute(
            f"SELECT id, task, lang, system, source_id, reference FROM items i WHERE {where} ORDER BY id", params
        ).fetchall()
        judgments = self.conn.execute(
            "SELECT j.item_id, j.judge_name, j.status, j.verdict, j.correct, j.raw_output FROM verdicts_in_force v "
            f"JOIN judgments j ON j.id = v.judgment_id JOIN items i ON i.id = v.item_id WHERE {where}{judge_clause} "
            "ORDER BY v.item_id",
            [*params, *judge_params],
        ).fetchall()
        labels = self.conn.execute(
            f"SELECT c.item_id, c.annotator, c.label FROM current_labels c JOIN items i ON i.id = c.item_id WHERE {where}",
            params,
        ).fetchall()
        return {"items": [tuple(r) for r in items], "judgments": [tuple(r) for r in judgments],
                "labels": [tuple(r) for r in labels]}

    def latest_raw_outputs(self, judge: str) -> dict[int, str | None]:
        rows = self.conn.execute(
            "SELECT v.item_id, j.raw_output FROM verdicts_in_force v JOIN judgments j ON j.id = v.judgment_id "
            "WHERE v.judge_name = ?",
            (judge,),
        )
        return {r["item_id"]: r["raw_output"] for r in rows}

    def count_items(self, *, task: str | None = None, lang: str | None = None, system: str | None = None) -> int:
        where, params = self._item_filter(task, lang, None, None, system)
        return self.conn.execute(f"SELECT count(*) FROM items i WHERE {where}", params).fetchone()[0]

    def count_decided(
        self, annotator: str, *, task: str | None = None, lang: str | None = None, system: str | None = None
    ) -> int:
        """Items this annotator has a decision in force on (label, skip or flag)."""
        where, params = self._item_filter(task, lang, None, None, system)
        return self.conn.execute(
            f"SELECT count(DISTINCT a.item_id) FROM annotations a JOIN items i ON i.id = a.item_id "
            f"WHERE a.annotator = ? AND a.action IN (SELECT value FROM json_each(?)) AND {IN_FORCE} AND {where}",
            [annotator, DECIDES_JSON, *params],
        ).fetchone()[0]

    def count_labelled(self, annotator: str, *, task: str | None = None, lang: str | None = None,
                       system: str | None = None) -> int:
        """Items on which this annotator has a label in force (skips and flags are not labels)."""
        where, params = self._item_filter(task, lang, None, None, system)
        return self.conn.execute(
            f"SELECT count(*) FROM current_labels c JOIN items i ON i.id = c.item_id WHERE c.annotator = ? AND {where}",
            [annotator, *params],
        ).fetchone()[0]

    def decided_item_ids(self, annotator: str, action: str, *, task: str | None = None,
                         lang: str | None = None, system: str | None = None) -> list[int]:
        """Items whose latest decision in force by this annotator is `action` (skip or flag),
        in the order those decisions were made."""
        where, params = self._item_filter(task, lang, None, None, system)
        sql = f"""
        SELECT d.item_id FROM (
            SELECT a.item_id, a.action, max(a.id) AS latest FROM annotations a
            WHERE a.annotator = ? AND a.action IN (SELECT value FROM json_each(?)) AND {IN_FORCE}
            GROUP BY a.item_id) d
        JOIN items i ON i.id = d.item_id WHERE d.action = ? AND {where} ORDER BY d.latest
        """
        return [r[0] for r in self.conn.execute(sql, [annotator, DECIDES_JSON, action, *params])]

    def contested_item_ids(self, *, task: str | None = None, lang: str | None = None, judge: str | None = None,
                           system: str | None = None, between: tuple[int, int] | None = None) -> list[int]:
        """Items whose latest verdict is unparsed (or an error), or whose judges disagree; only
        item ids within `between` (inclusive) when given, so a queue can read them in slices."""
        where, params = self._item_filter(task, lang, None, None, system)
        judge_clause, judge_params = (" AND judge_name = ?", [judge]) if judge else ("", [])
        if between:
            judge_clause += " AND item_id BETWEEN ? AND ?"
            judge_params += list(between)
        sql = f"""
        WITH latest AS (SELECT item_id, status, verdict FROM verdicts_in_force WHERE 1{judge_clause})
        SELECT l.item_id FROM latest l JOIN items i ON i.id = l.item_id WHERE {where}
        GROUP BY l.item_id
        HAVING sum(l.status != 'verdict') > 0 OR count(DISTINCT l.verdict) > 1
        ORDER BY l.item_id
        """
        return [r[0] for r in self.conn.execute(sql, [*judge_params, *params])]

    def unstable_item_ids(self, *, task: str | None = None, lang: str | None = None, judge: str | None = None,
                          system: str | None = None) -> list[int]:
        """Items on which one judge configuration gave different parsed verdicts over its
        repeats (`judge --repeat`), newest judgment per sample."""
        where, params = self._item_filter(task, lang, None, None, system)
        judge_clause, judge_params = (" AND judge_name = ?", [judge]) if judge else ("", [])
        sql = f"""
        WITH latest AS (SELECT max(id) AS id FROM judgments WHERE status != 'error'{judge_clause}
                        GROUP BY item_id, judge_key, sample)
        SELECT j.item_id FROM judgments j JOIN latest l ON l.id = j.id JOIN items i ON i.id = j.item_id
        WHERE j.status = 'verdict' AND {where}
        GROUP BY j.item_id, j.judge_key HAVING count(DISTINCT j.verdict) > 1
        """
        return sorted({r[0] for r in self.conn.execute(sql, [*judge_params, *params])})

    # -- leases ---------------------------------------------------------------------------

    _ELIGIBLE = f"""
        NOT EXISTS (
            SELECT 1 FROM annotations a WHERE a.item_id = i.id AND a.annotator = :me
            AND a.action IN (SELECT value FROM json_each(:decides)) AND {IN_FORCE})
        AND (
            SELECT count(DISTINCT a.annotator) FROM annotations a
            WHERE a.item_id = i.id AND a.annotator != :me AND a.action IN (SELECT value FROM json_each(:labels)) AND {IN_FORCE})
          + (SELECT count(*) FROM leases l
             WHERE l.item_id = i.id AND l.annotator != :holder AND l.expires_at > :now) < :overlap
        AND NOT EXISTS (
            SELECT 1 FROM leases l WHERE l.item_id = i.id AND l.annotator != :holder AND l.expires_at > :now
            AND (l.annotator = :me OR substr(l.annotator, 1, length(:me) + 2) = :me || ' @'))
    """

    def claim_next(
        self,
        annotator: str,
        *,
        overlap: int = 1,
        task: str | None = None,
        lang: str | None = None,
        system: str | None = None,
        after_id: int = 0,
        lease_seconds: float = DEFAULT_LEASE_SECONDS,
        holder: str | None = None,
    ) -> int | None:
        """Lease the next item (in id order, after `after_id`, wrapping round) that this
        annotator has not decided, that fewer than `overlap` other annotators have labelled
        or hold, and that no other session of this annotator holds (`holder`, see
        lease_holder). A lease expires, so a crashed annotator's items come back."""
        clauses = ["i.id > :after", "i.current = 1"]
        # with task and lang, the (task, lang) index walks in id order; with one of them alone it
        # would sort every match of the cell, so walk the id order instead (the unary +)
        plus = "" if task and lang else "+"
        if task:
            clauses.append(f"{plus}i.task = :task")
        if lang:
            clauses.append(f"{plus}i.lang = :lang")
        if system is not None:
            clauses.append("i.system = :system")
        sql = (f"SELECT i.id FROM items i WHERE {' AND '.join(clauses)} AND {VISIBLE} AND {self._ELIGIBLE} "
               "ORDER BY i.id LIMIT 1")
        recheck = f"SELECT 1 FROM items i WHERE i.id = :id AND {VISIBLE} AND {self._ELIGIBLE}"
        params = {"me": annotator, "holder": holder or annotator, "overlap": overlap, "task": task, "lang": lang,
                  "system": system, "decides": DECIDES_JSON, "labels": LABELS_JSON}
        after, wrapped = after_id, not after_id
        while True:
            # find a candidate outside the write lock, then lease it if it is still free: the
            # lock is held for a lookup by id, not for the search
            row = self.conn.execute(sql, {**params, "now": time.time(), "after": after}).fetchone()
            if row is None:
                if wrapped:
                    return None
                after, wrapped = 0, True
                continue
            with self.transaction():
                now = time.time()
                if self.conn.execute(recheck, {**params, "now": now, "id": row[0]}).fetchone():
                    self._lease(row[0], holder or annotator, now + lease_seconds)
                    return row[0]
            after = row[0]

    def claim_first(
        self,
        annotator: str,
        candidates: Sequence[int],
        *,
        overlap: int = 1,
        lease_seconds: float = DEFAULT_LEASE_SECONDS,
        skipped_too: bool = False,
        holder: str | None = None,
    ) -> int | None:
        """Lease the first eligible item of `candidates` (a queue in the caller's order);
        `skipped_too` lets items this annotator skipped be taken again. Candidates are checked
        8 at a time, then in chunks doubling up to 256: the first is usually eligible, and
        each check of an item scattered over a large table costs page reads."""
        decides = dump_json([a for a in DECISION_ACTIONS if a != "skip"]) if skipped_too else DECIDES_JSON
        with self.transaction():
            now = time.time()
            start, size = 0, 8
            while start < len(candidates):
                chunk = list(candidates[start : start + size])
                start, size = start + size, min(2 * size, 256)
                marks = ",".join(f":c{k}" for k in range(len(chunk)))
                params = {"me": annotator, "holder": holder or annotator, "now": now, "overlap": overlap,
                          "decides": decides, "labels": LABELS_JSON}
                params.update({f"c{k}": v for k, v in enumerate(chunk)})
                eligible = {
                    r[0]
                    for r in self.conn.execute(
                        f"SELECT i.id FROM items i WHERE i.id IN ({marks}) AND {VISIBLE} AND {self._ELIGIBLE}", params
                    )
                }
                for item_id in chunk:
                    if item_id in eligible:
                        self._lease(item_id, holder or annotator, now + lease_seconds)
                        return item_id
            return None

    def _lease(self, item_id: int, holder: str, expires_at: float) -> None:
        self.conn.execute(
            "INSERT INTO leases (item_id, annotator, expires_at) VALUES (?, ?, ?) "
            "ON CONFLICT (item_id, annotator) DO UPDATE SET expires_at = excluded.expires_at",
            (item_id, holder, expires_at),
        )

    def release_all(self, holder: str) -> None:
        """Give back every item this lease holder (an annotator, or one session of one) holds."""
        with self.transaction():
            self.conn.execute("DELETE FROM leases WHERE annotator = ?", (holder,))

    # -- judge runs ------------------------------------------------------------------------

    def begin_judge_run(self, judge_name: str, model: str, server: str, params: dict, *, items: int, samples: int,
                        concurrency: int) -> int:
        """Record the start of a `calibrate judge` run; returns its id."""
        with self.transaction():
            return self.conn.execute(
                "INSERT INTO judge_runs (judge_name, model, server, params, started_at, items, samples, concurrency) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (judge_name, model, server, dump_json(params), now_iso(), items, samples, concurrency),
            ).lastrowid

    def finish_judge_run(self, run_id: int, *, outcome: str, message: str | None, params: dict, stored: int,
                         cells: dict, requests, concurrency_lowest: int) -> None:
        """Record how a judge run ended: `cells` counts stored judgments by (task, lang, what)
        where what is verdict, bare, unparsed, truncated or error; `requests` has attempts,
        retries and failures (cause -> n)."""
        what = {name: sum(n for key, n in cells.items() if key[2] == name)
                for name in ("verdict", "bare", "unparsed", "truncated", "error")}
        with self.transaction():
            self.conn.execute(
                "UPDATE judge_runs SET finished_at = ?, outcome = ?, message = ?, params = ?, stored = ?, verdicts = ?, "
                "bare = ?, unparsed = ?, truncated = ?, errors = ?, requests = ?, retries = ?, failures = ?, "
                "concurrency_lowest = ? WHERE id = ?",
                (now_iso(), outcome, message, dump_json(params), stored, what["verdict"], what["bare"],
                 what["unparsed"], what["truncated"], what["error"], requests.attempts, requests.retries,
                 dump_json(dict(requests.failures)), concurrency_lowest, run_id),
            )

    def unparsed_counts(self, reason_prefix: str) -> list[tuple[str, str, str, str, int]]:
        """(task, lang, system, judge, n): unparsed judgments in force whose reason begins with
        `reason_prefix` (outputs cut at the token limit, say), per cell of the counted items."""
        return [tuple(r) for r in self.conn.execute(
            "SELECT c.task, c.lang, c.system, v.judge_name, count(*) FROM verdicts_in_force v "
            "JOIN judgments j ON j.id = v.judgment_id JOIN counted_items c ON c.id = v.item_id "
            "WHERE v.status = 'unparsed' AND substr(j.unparsed_reason, 1, length(?1)) = ?1 "
            "GROUP BY c.task, c.lang, c.system, v.judge_name", (reason_prefix,))]

    def judge_runs(self, limit: int | None = None) -> list[dict]:
        """Judge runs, newest first (`failures` and `params` as dicts)."""
        sql = "SELECT * FROM judge_runs ORDER BY id DESC" + (" LIMIT ?" if limit else "")
        runs = [dict(r) for r in self.conn.execute(sql, (limit,) if limit else ())]
        for run in runs:
            run["failures"], run["params"] = json.loads(run["failures"]), json.loads(run["params"])
        return runs


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _chunks(values: list, size: int) -> Iterator[list]:
    for start in range(0, len(values), size):
        yield values[start : start + size]


def _item(row: sqlite3.Row) -> Item:
    return Item(
        row["id"], row["task"], row["lang"], row["source_id"], json.loads(row["fields"]), row["reference"],
        row["content_hash"], row["system"], row["version"],
    )


def _judgment(row: sqlite3.Row) -> Judgment:
    values = {k: row[k] for k in row.keys() if k != "uid"}
    values["params"] = json.loads(values["params"] or "{}")
    return Judgment(**values)


def _annotation(row: sqlite3.Row) -> Annotation:
    return Annotation(**{k: row[k] for k in row.keys()})
