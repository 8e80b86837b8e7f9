"""The one place that speaks SQL: calibrate's SQLite file, its migrations, and every read and write.

Every other module asks the Store. Writers open `BEGIN IMMEDIATE`, so several annotators (or
processes) can share one file under WAL without "database is locked" on a read-to-write
upgrade. The schema lives in `db/migrations/*.sql`, applied in order through
`sqlite_utils.Migrations` and recorded in the database.

This module holds the connection, the transactions, the migrations and the errors; the queries
live in one module per concern (items, import runs, judgments, labels, the annotation queue,
report reads, merge rows), each a mixin class composed into the one `Store` here, so callers
see a single object. Their shared SQL conditions are in `sql.py`.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

from calibrate.model import CalibrateError, NewItem
from calibrate.resources import bundled
from calibrate.store.imports import ImportRunsMixin
from calibrate.store.items import ItemsMixin, UnknownFilter
from calibrate.store.judged import JudgmentsMixin
from calibrate.store.labels import LabelsMixin
from calibrate.store.merge_rows import MergeRowsMixin
from calibrate.store.queue import DEFAULT_LEASE_SECONDS, QueueMixin
from calibrate.store.reads import ReadsMixin
from calibrate.store.sql import JUDGMENT_COLUMNS

__all__ = [
    "DEFAULT_LEASE_SECONDS", "JUDGMENT_COLUMNS", "DatabaseBusy", "DatabaseMissing", "NewItem", "NotACalibrateDatabase",
    "Store", "UnknownFilter",
]

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


class DatabaseMissing(CalibrateError):
    """A command that only reads was pointed at a database file that does not exist."""


class DatabaseBusy(Exception):
    """Raised by an `on_wait` callback to stop waiting for the write lock (nothing was written):
    the annotation app raises it on its own thread, then waits on a worker thread instead."""


class NotACalibrateDatabase(CalibrateError):
    """A file that is not a calibrate database this version can read (merge refuses it)."""


SQLITE_HEADER = b"SQLite format 3\x00"


class Store(ItemsMixin, ImportRunsMixin, JudgmentsMixin, LabelsMixin, QueueMixin, ReadsMixin, MergeRowsMixin):
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
        self._import_leases = {}
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
