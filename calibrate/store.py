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
from concurrent.futures import ThreadPoolExecutor
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


JUDGMENT_COLUMNS = [
    "uid", "item_id", "judge_name", "model", "model_reported", "template_id", "template_hash", "params",
    "judge_key", "system_prompt", "prompt", "raw_output", "status", "verdict", "unparsed_reason", "correct",
    "confidence", "error", "latency_ms", "prompt_tokens", "completion_tokens", "created_at",
]



class DatabaseBusy(Exception):
    """Raised by an `on_wait` callback to stop waiting for the write lock (nothing was written):
    the annotation app raises it on its own thread, then waits on a worker thread instead."""


class NotACalibrateDatabase(CalibrateError):
    """A file that is not a calibrate database this version can read (merge refuses it)."""


SQLITE_HEADER = b"SQLite format 3\x00"


class Store:
    """calibrate's SQLite file. Opening it applies pending migrations.

    A writer never dies of a busy database: `transaction()` waits for the write lock as long as
    another writer holds it, in steps of `busy_timeout_ms`, calling `on_wait(seconds waited)`
    after each step so the caller can show that it is waiting (or raise DatabaseBusy to stop)."""

    on_wait: Callable[[float], None] | None = None

    def __init__(self, path: str | Path = ":memory:", *, busy_timeout_ms: int = 250):
        self.path = str(path)
        # check_same_thread off: the annotation app hands a waiting write to a worker thread
        # while its own thread waits for the result (the connection is never used by both at once)
        self.conn = sqlite3.connect(self.path, isolation_level=None, timeout=busy_timeout_ms / 1000,
                                    check_same_thread=False)
        self.conn.row_factory = sqlite3.Row
        self.conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
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
        """Insert items, ignoring ones already present. Returns (their ids in order if
        `with_ids`, else [], and the number added). Items of an import `run` stay hidden until
        the run finishes."""
        stamp = now_iso()
        rows, hashes = [], []
        for item in items:
            hashes.append(item.content_hash)
            rows.append(
                (item.task, item.lang, item.source_id, item.fields_json, item.reference, item.content_hash, stamp, run)
            )
        with self.transaction():
            before = self.conn.total_changes
            self.conn.executemany(
                "INSERT OR IGNORE INTO items "
                "(task, lang, source_id, fields, reference, content_hash, imported_at, import_run) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                rows,
            )
            added = self.conn.total_changes - before
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

    def source_index(self, task: str, lang: str) -> dict[str, int]:
        """source_id -> latest item id, for one task and language (joins by source id)."""
        rows = self.conn.execute(
            f"SELECT source_id, max(id) AS id FROM items i WHERE task = ? AND lang = ? AND {VISIBLE} GROUP BY source_id",
            (task, lang),
        )
        return {r["source_id"]: r["id"] for r in rows}

    def iter_items(
        self,
        *,
        task: str | None = None,
        lang: str | None = None,
        status: str | None = None,
        judge: str | None = None,
        limit: int | None = None,
        offset: int = 0,
    ) -> Iterator[Item]:
        """Items in id order, streamed. status: unjudged | judged | unparsed | error | labelled | unlabelled."""
        where, params = self._item_filter(task, lang, status, judge)
        sql = f"SELECT * FROM items i WHERE {where} ORDER BY i.id"
        if limit is not None:
            sql += " LIMIT ? OFFSET ?"
            params += [limit, offset]
        for row in self.conn.execute(sql, params):
            yield _item(row)

    def items(self, **filters) -> list[Item]:
        """iter_items, as a list."""
        return list(self.iter_items(**filters))

    def item_ids(self, *, task: str | None = None, lang: str | None = None) -> list[int]:
        where, params = self._item_filter(task, lang, None, None)
        return [r[0] for r in self.conn.execute(f"SELECT id FROM items i WHERE {where} ORDER BY id", params)]

    def item_cells(self, *, task: str | None = None, lang: str | None = None) -> dict[int, tuple[str, str]]:
        """item id -> (task, lang) for the filtered items, for ordering queues by cell."""
        where, params = self._item_filter(task, lang, None, None)
        rows = self.conn.execute(f"SELECT id, task, lang FROM items i WHERE {where}", params)
        return {r["id"]: (r["task"], r["lang"]) for r in rows}

    @staticmethod
    def _item_filter(task, lang, status, judge) -> tuple[str, list]:
        clauses, params = [VISIBLE], []
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
        elif status is not None:
            raise ValueError(
                f"unknown status {status!r}: use judged, unjudged, unparsed, error, labelled or unlabelled"
            )
        return " AND ".join(clauses), params

    def status_counts(self) -> list[dict]:
        """Per task x language: items, judged, unparsed, errors (an error a later judgment by the
        same judge has put right does not count), labelled (by anyone)."""
        sql = f"""
        SELECT i.task, i.lang, count(*) AS items,
            sum(EXISTS (SELECT 1 FROM judgments j WHERE j.item_id = i.id AND j.status != 'error')) AS judged,
            sum(EXISTS (SELECT 1 FROM judgments j WHERE j.item_id = i.id AND j.status = 'unparsed')) AS unparsed,
            sum(EXISTS (SELECT 1 FROM judgments j WHERE j.item_id = i.id AND j.status = 'error'
                        AND NOT EXISTS (SELECT 1 FROM judgments k WHERE k.item_id = i.id AND k.judge_name = j.judge_name
                                        AND k.status != 'error' AND k.id > j.id))) AS errors,
            sum(EXISTS (SELECT 1 FROM current_labels c WHERE c.item_id = i.id)) AS labelled
        FROM items i WHERE {VISIBLE} GROUP BY i.task, i.lang ORDER BY i.task, i.lang
        """
        return [dict(r) for r in self.conn.execute(sql)]

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
            before = self.conn.total_changes
            self.conn.executemany(
                f"INSERT OR IGNORE INTO judgments ({', '.join(JUDGMENT_COLUMNS)}) "
                f"VALUES ({', '.join('?' * len(JUDGMENT_COLUMNS))})",
                rows,
            )
            return self.conn.total_changes - before

    def judgments_for_item(self, item_id: int, judge: str | None = None) -> list[Judgment]:
        sql = "SELECT * FROM judgments WHERE item_id = ?"
        params: list = [item_id]
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
        FROM judgments j JOIN items i ON i.id = j.item_id
        WHERE {VISIBLE} AND j.id IN (SELECT max(id) FROM judgments GROUP BY item_id, judge_name)
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
        holder: str | None = None,
    ) -> int:
        """Append one annotation row (and update the label in force in the same transaction);
        a decision releases the lease of `holder` (default: the annotator)."""
        with self.transaction():
            row_id = self._append_annotation(
                uid or uuid.uuid4().hex, item_id, judgment_id, annotator, action, label, reverts_id, note, int(blind),
                seconds_spent, created_at or self._decision_time(),
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
                           seconds_spent, created_at) -> int | None:
        """INSERT OR IGNORE one annotation row (by uid) and keep `labels_in_force` in step: a
        label decision takes over if it is later (decision time, then uid) than the one in
        force; an undo of the decision in force hands over to the latest decision not reverted.
        Returns the new row id, or None when the uid was already present. Call inside a
        transaction."""
        cursor = self.conn.execute(
            "INSERT OR IGNORE INTO annotations (uid, item_id, judgment_id, annotator, action, label, "
            "reverts_id, note, blind, seconds_spent, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            (uid, item_id, judgment_id, annotator, action, label, reverts_id, note, blind, seconds_spent, created_at),
        )
        if cursor.rowcount == 0:
            return None
        if action in LABEL_ACTIONS and label is not None:
            self.conn.execute(
                "INSERT INTO labels_in_force (item_id, annotator, label, action, judgment_id, annotation_uid, decided_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (item_id, annotator) DO UPDATE SET label = excluded.label, "
                "action = excluded.action, judgment_id = excluded.judgment_id, annotation_uid = excluded.annotation_uid, "
                "decided_at = excluded.decided_at "
                "WHERE (excluded.decided_at, excluded.annotation_uid) > (labels_in_force.decided_at, labels_in_force.annotation_uid)",
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
            "SELECT c.item_id, c.annotator, c.label, i.task, i.lang, i.source_id "
            "FROM current_labels c JOIN items i ON i.id = c.item_id"
        )
        params: list = []
        if annotator:
            sql += " WHERE c.annotator = ?"
            params.append(annotator)
        return [dict(r) for r in self.conn.execute(sql + " ORDER BY c.item_id", params)]

    def note_texts(self, item_id: int) -> list[str]:
        rows = self.conn.execute(
            "SELECT annotator, note FROM annotations WHERE item_id = ? AND note IS NOT NULL ORDER BY id",
            (item_id,),
        )
        return [f"{r['annotator']}: {r['note']}" for r in rows]

    # -- agreement -----------------------------------------------------------------------------

    def agreement_data(self, judge: str | None = None, parts: int = 2) -> AgreementData:
        """Everything the agreement report needs, aggregated in SQL: judge verdict x human label
        counts per annotator and against the majority label, human x human pair counts, and the
        per-item labels of items that several annotators labelled.

        Every figure is per item, so the work splits by item id range: a file database is read
        by `parts` connections in parallel (SQLite runs without the GIL) and the parts summed."""
        if self.path == ":memory:" or parts < 2:
            return _agreement_part(self.conn, judge, None)
        low, high = self.conn.execute("SELECT min(id), max(id) FROM items").fetchone()
        if low is None:
            return _agreement_part(self.conn, judge, None)
        step = (high - low) // parts + 1
        ranges = [(low + k * step, min(high, low + (k + 1) * step - 1)) for k in range(parts)]

        def run(bounds: tuple[int, int]) -> AgreementData:
            reader = sqlite3.connect(self.path, timeout=60)
            try:
                return _agreement_part(reader, judge, bounds)
            finally:
                reader.close()

        with ThreadPoolExecutor(parts) as pool:
            return AgreementData.combine(list(pool.map(run, ranges)))

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
            before = self.conn.total_changes
            self.conn.executemany(
                f"INSERT OR IGNORE INTO judgments ({', '.join(JUDGMENT_COLUMNS)}) "
                f"VALUES ({', '.join('?' * len(JUDGMENT_COLUMNS))})",
                [[row[c] for c in JUDGMENT_COLUMNS] for row in rows],
            )
            return self.conn.total_changes - before

    def add_annotation_rows(self, rows: Sequence[dict]) -> int:
        """Annotations as complete rows (uid, item_id, judgment_id, annotator, action, label,
        reverts_uid, note, blind, seconds_spent, created_at; an undo names the row it reverts by
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
                ) is not None
        return added

    def export_rows(self) -> Iterator[dict]:
        """Per item: its fields, every annotator's current label, notes, and each judge's
        latest verdict, for gold-label exports."""
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
        for item in self.iter_items():
            yield {
                "item": item,
                "labels": labels.get(item.id, {}),
                "notes": notes.get(item.id, []),
                "flagged_by": sorted(flags.get(item.id, ())),
                "verdicts": verdicts.get(item.id, {}),
            }

    def latest_raw_outputs(self, judge: str) -> dict[int, str | None]:
        rows = self.conn.execute(
            "SELECT item_id, raw_output FROM judgments WHERE id IN "
            "(SELECT max(id) FROM judgments WHERE judge_name = ? GROUP BY item_id)",
            (judge,),
        )
        return {r["item_id"]: r["raw_output"] for r in rows}

    def count_items(self, *, task: str | None = None, lang: str | None = None) -> int:
        where, params = self._item_filter(task, lang, None, None)
        return self.conn.execute(f"SELECT count(*) FROM items i WHERE {where}", params).fetchone()[0]

    def count_decided(self, annotator: str, *, task: str | None = None, lang: str | None = None) -> int:
        """Items this annotator has a decision in force on (label, skip or flag)."""
        where, params = self._item_filter(task, lang, None, None)
        return self.conn.execute(
            f"SELECT count(DISTINCT a.item_id) FROM annotations a JOIN items i ON i.id = a.item_id "
            f"WHERE a.annotator = ? AND a.action IN (SELECT value FROM json_each(?)) AND {IN_FORCE} AND {where}",
            [annotator, DECIDES_JSON, *params],
        ).fetchone()[0]

    def has_decision(self, item_id: int, annotator: str) -> bool:
        return self.conn.execute(
            f"SELECT EXISTS (SELECT 1 FROM annotations a WHERE a.item_id = ? AND a.annotator = ? "
            f"AND a.action IN (SELECT value FROM json_each(?)) AND {IN_FORCE})",
            (item_id, annotator, DECIDES_JSON),
        ).fetchone()[0] == 1

    def contested_item_ids(self, *, task: str | None = None, lang: str | None = None, judge: str | None = None) -> list[int]:
        """Items whose latest verdict is unparsed (or an error), or whose judges disagree."""
        where, params = self._item_filter(task, lang, None, None)
        judge_clause, judge_params = (" AND judge_name = ?", [judge]) if judge else ("", [])
        sql = f"""
        WITH latest AS (SELECT item_id, status, verdict, max(id) FROM judgments WHERE 1{judge_clause} GROUP BY item_id, judge_name)
        SELECT l.item_id FROM latest l JOIN items i ON i.id = l.item_id WHERE {where}
        GROUP BY l.item_id
        HAVING sum(l.status != 'verdict') > 0 OR count(DISTINCT l.verdict) > 1
        ORDER BY l.item_id
        """
        return [r[0] for r in self.conn.execute(sql, [*judge_params, *params])]

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
        after_id: int = 0,
        lease_seconds: float = DEFAULT_LEASE_SECONDS,
        holder: str | None = None,
    ) -> int | None:
        """Lease the next item (in id order, after `after_id`, wrapping round) that this
        annotator has not decided, that fewer than `overlap` other annotators have labelled
        or hold, and that no other session of this annotator holds (`holder`, see
        lease_holder). A lease expires, so a crashed annotator's items come back."""
        clauses = ["i.id > :after"]
        # with task and lang, the (task, lang) index walks in id order; with one of them alone it
        # would sort every match of the cell, so walk the id order instead (the unary +)
        plus = "" if task and lang else "+"
        if task:
            clauses.append(f"{plus}i.task = :task")
        if lang:
            clauses.append(f"{plus}i.lang = :lang")
        sql = (f"SELECT i.id FROM items i WHERE {' AND '.join(clauses)} AND {VISIBLE} AND {self._ELIGIBLE} "
               "ORDER BY i.id LIMIT 1")
        recheck = f"SELECT 1 FROM items i WHERE i.id = :id AND {VISIBLE} AND {self._ELIGIBLE}"
        params = {"me": annotator, "holder": holder or annotator, "overlap": overlap, "task": task, "lang": lang,
                  "decides": DECIDES_JSON, "labels": LABELS_JSON}
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
        holder: str | None = None,
    ) -> int | None:
        """Lease the first eligible item of `candidates` (a queue in the caller's order)."""
        with self.transaction():
            now = time.time()
            for start in range(0, len(candidates), 256):
                chunk = list(candidates[start : start + 256])
                marks = ",".join(f":c{k}" for k in range(len(chunk)))
                params = {"me": annotator, "holder": holder or annotator, "now": now, "overlap": overlap,
                          "decides": DECIDES_JSON, "labels": LABELS_JSON}
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


def _agreement_part(c: sqlite3.Connection, judge: str | None, bounds: tuple[int, int] | None) -> AgreementData:
    """agreement_data for the items whose id lies within `bounds` (all items if None)."""
    where, params = ("item_id BETWEEN ? AND ?", list(bounds)) if bounds else ("1", [])
    judge_filter, judge_params = (" AND judge_name = ?", [judge]) if judge else ("", [])
    for table in ("labels_now", "verdicts_now", "shared_items"):
        c.execute(f"DROP TABLE IF EXISTS temp.{table}")
    c.execute(
        "CREATE TEMP TABLE verdicts_now AS SELECT v.item_id, i.task, i.lang, v.judge_name, v.status, v.verdict "
        "FROM (SELECT item_id, judge_name, status, verdict, max(id) FROM judgments "
        f"WHERE {where}{judge_filter} GROUP BY item_id, judge_name) v JOIN items i ON i.id = v.item_id WHERE {VISIBLE}",
        params + judge_params,
    )
    c.execute(f"CREATE TEMP TABLE labels_now AS SELECT item_id, annotator, label FROM current_labels WHERE {where}", params)
    c.execute("CREATE INDEX temp.verdicts_now_item ON verdicts_now (item_id)")
    c.execute(
        "CREATE TEMP TABLE shared_items AS SELECT l.item_id, i.task, i.lang FROM labels_now l JOIN items i ON i.id = l.item_id "
        "GROUP BY l.item_id HAVING count(*) >= 2"
    )
    try:
        rows = lambda sql: [tuple(r) for r in c.execute(sql)]  # noqa: E731
        return AgreementData(
            judge_vs_human=rows(
                "SELECT v.task, v.lang, v.judge_name, h.annotator, v.status, v.verdict, h.label, count(*) "
                "FROM labels_now h JOIN verdicts_now v ON v.item_id = h.item_id GROUP BY 1, 2, 3, 4, 5, 6, 7"
            ),
            judge_vs_gold=rows(
                """
                WITH counted AS (SELECT l.item_id, s.task, s.lang, l.label, count(*) AS votes
                                 FROM labels_now l JOIN shared_items s ON s.item_id = l.item_id GROUP BY l.item_id, l.label),
                ranked AS (SELECT *, max(votes) OVER (PARTITION BY item_id) AS top FROM counted),
                gold AS (SELECT item_id, task, lang, label FROM ranked WHERE votes = top GROUP BY item_id HAVING count(*) = 1)
                SELECT g.task, g.lang, v.judge_name, v.status, v.verdict, g.label, count(*)
                FROM gold g JOIN verdicts_now v ON v.item_id = g.item_id GROUP BY 1, 2, 3, 4, 5, 6
                """
            ),
            human_pairs=rows(
                "SELECT s.task, s.lang, x.annotator, y.annotator, x.label, y.label, count(*) FROM shared_items s "
                "JOIN labels_now x ON x.item_id = s.item_id JOIN labels_now y ON y.item_id = s.item_id "
                "AND x.annotator < y.annotator GROUP BY 1, 2, 3, 4, 5, 6"
            ),
            shared_labels=rows(
                "SELECT l.item_id, s.task, s.lang, l.annotator, l.label FROM shared_items s "
                "JOIN labels_now l ON l.item_id = s.item_id ORDER BY l.item_id"
            ),
            shared_verdicts=rows(
                "SELECT v.item_id, v.judge_name, v.status, v.verdict FROM shared_items s "
                "JOIN verdicts_now v ON v.item_id = s.item_id"
            ),
            judged=rows("SELECT task, lang, judge_name, status, count(*) FROM verdicts_now GROUP BY 1, 2, 3, 4"),
        )
    finally:
        for table in ("labels_now", "verdicts_now", "shared_items"):
            c.execute(f"DROP TABLE IF EXISTS temp.{table}")


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
        row["content_hash"],
    )


def _judgment(row: sqlite3.Row) -> Judgment:
    values = {k: row[k] for k in row.keys() if k != "uid"}
    values["params"] = json.loads(values["params"] or "{}")
    return Judgment(**values)


def _annotation(row: sqlite3.Row) -> Annotation:
    return Annotation(**{k: row[k] for k in row.keys()})
