"""The one place that speaks SQL: calibrate's SQLite file, its migrations, and every read and write.

Every other module asks the Store. Writers open `BEGIN IMMEDIATE`, so several annotators (or
processes) can share one file under WAL without "database is locked" on a read-to-write
upgrade. The schema lives in `db/migrations/*.sql`, applied in order through
`sqlite_utils.Migrations` and recorded in the database.

This module opens the file (refusing, before anything is written, a schema newer than this
calibrate or another program's database), applies the migrations (one that fails is a
MigrationFailed naming the file and the migration, nothing changed), and holds the transactions
and the errors; `connection.py` turns SQLite's faults of the file (full disk, read-only, damaged)
into errors naming it. The queries live in one module per concern (items, import runs,
judgments, judge runs, exported batches, labels, the annotation queue, report reads, export
reads, merge rows), each a mixin class composed into the one `Store` here, so callers see a single object. Their shared SQL conditions are in
`sql.py`.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager, suppress
from pathlib import Path

from calibrate.model import CalibrateError, NewItem
from calibrate.resources import bundled
from calibrate.store.batch_exports import BatchExportsMixin
from calibrate.store.confidence import ConfidenceMixin
from calibrate.store.connection import DatabaseFault, connect, database_fault, past_file_size_limit
from calibrate.store.export_rows import ExportRowsMixin
from calibrate.store.imports import ImportRunsMixin
from calibrate.store.items import ItemsMixin, UnknownFilter
from calibrate.store.judge_runs import JudgeRunsMixin
from calibrate.store.judged import JudgmentsMixin
from calibrate.store.labels import LabelsMixin
from calibrate.store.merge_rows import MergeRowsMixin
from calibrate.store.queue import DEFAULT_LEASE_SECONDS, QueueMixin
from calibrate.store.reads import ReadsMixin
from calibrate.store.score_counts import ScoreCountsMixin
from calibrate.store.sql import JUDGMENT_COLUMNS

__all__ = [
    "DEFAULT_LEASE_SECONDS", "JUDGMENT_COLUMNS", "DatabaseBusy", "stop_waiting", "DatabaseFault", "DatabaseMissing", "NewItem",
    "MigrationFailed", "NotACalibrateDatabase", "Store", "UnknownFilter", "past_file_size_limit",
]

MIGRATION_FILES = sorted((bundled("db") / "migrations").glob("*.sql"))
MIGRATION_NAMES = [path.stem for path in MIGRATION_FILES]
MIGRATION_SET = "calibrate"


def _migrations(database: str):
    """db/migrations/*.sql as a sqlite_utils.Migrations set, in file-name order, applied to the
    database file `database` (named by the MigrationFailed a statement's failure becomes).
    Imported only when a migration is pending: sqlite_utils (and what it pulls in) is slow to
    import, and the annotation app should start fast."""
    import sqlite_utils

    migrations = sqlite_utils.Migrations(MIGRATION_SET)
    for path in MIGRATION_FILES:
        script = path.read_text(encoding="utf-8")

        def apply(db, script: str = script, name: str = path.stem) -> None:
            for statement in _split_sql(script):
                try:
                    db.execute(statement)
                except sqlite3.Error as exc:  # a fault of the file (a full disk) is a DatabaseFault, not this
                    raise MigrationFailed(database, name, exc) from None

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


def _begin_waiting(conn: sqlite3.Connection, on_wait: Callable[[float], None] | None) -> None:
    """BEGIN IMMEDIATE on `conn`, tried again for as long as another writer holds the lock (each
    try waits the connection's busy timeout), each busy try followed by `on_wait(seconds waited
    since the first)`: the first call, at 0 s, says that a wait starts. `on_wait` may raise to
    stop waiting (DatabaseBusy)."""
    started = None
    while True:
        try:
            conn.execute("BEGIN IMMEDIATE")
            return
        except DatabaseFault as exc:
            if not exc.busy:
                raise
        started = started if started is not None else time.monotonic()
        if on_wait is not None:
            on_wait(time.monotonic() - started)


def _applied(conn: sqlite3.Connection) -> list[str]:
    """Names of the calibrate migrations recorded in the database, in the order applied."""
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '_sqlite_migrations'").fetchone():
        return []
    rows = conn.execute("SELECT name FROM _sqlite_migrations WHERE migration_set = ? ORDER BY rowid", (MIGRATION_SET,))
    return [r[0] for r in rows]


def _read_only_uri(path: Path, *, briefly: bool = False) -> str:
    """A URI reading `path` without writing anything, not even a -wal or -shm file beside it.
    Without a -wal file the main file holds everything, and it is read as immutable (no locks)
    if the read is brief (a look at its schema; another database to merge, left as it is) or its
    folder allows no -wal file, so no writer can start; otherwise through SQLite's locks."""
    immutable = not Path(f"{path}-wal").exists() and (briefly or not os.access(path.resolve().parent, os.W_OK))
    return path.resolve().as_uri() + ("?mode=ro&immutable=1" if immutable else "?mode=ro")


def _wal_holds_pages(path: Path) -> bool:
    """Whether the write-ahead log beside the database file at `path` holds anything (a new
    database's pages can be there before its file has any)."""
    wal = Path(f"{path}-wal")
    return wal.is_file() and wal.stat().st_size > 0


def _schema_in_file(path: Path, timeout: float) -> tuple[list[str], bool]:
    """The calibrate migrations recorded in the database file at `path`, and whether it holds
    any table at all (read without writing; waiting up to `timeout` seconds for a lock)."""
    conn = connect(str(path), _read_only_uri(path, briefly=True), uri=True, timeout=timeout)
    try:
        return _applied(conn), conn.execute("SELECT EXISTS (SELECT 1 FROM sqlite_master)").fetchone()[0] == 1
    finally:
        conn.close()


def _check_schema(path: str | Path, applied: list[str], *, must_be_calibrate: bool) -> None:
    """NotACalibrateDatabase, naming the file, for a schema newer than this calibrate knows (a
    migration it does not have), or for a file without calibrate's migrations where one is needed."""
    unknown = [name for name in applied if name not in MIGRATION_NAMES]
    if unknown:
        raise NotACalibrateDatabase(
            f"{path}: schema version {unknown[-1]} is unknown to this calibrate (made by a newer version? this one "
            f"knows up to {MIGRATION_NAMES[-1]}); nothing was written to it: use it with a newer calibrate"
        )
    if must_be_calibrate and not applied:
        raise NotACalibrateDatabase(f"{path}: an SQLite database, but not a calibrate one (no calibrate migrations)")


class DatabaseMissing(CalibrateError):
    """A command that only reads was pointed at a database file that does not exist."""


class DatabaseBusy(Exception):
    """Raised by an `on_wait` callback to stop waiting for the write lock (nothing was written):
    the annotation app raises it on its own thread, then waits on a worker thread instead."""


def stop_waiting(seconds: float) -> None:
    """An `on_wait` that stops a transaction's wait for another writer at once (DatabaseBusy)."""
    raise DatabaseBusy


class NotACalibrateDatabase(CalibrateError):
    """A file that is not a calibrate database this version can read: refused before anything is written."""


ALREADY_THERE = ("duplicate column name", "already exists")
"""What SQLite says when a migration adds a column, table or index the database already has."""


class MigrationFailed(CalibrateError):
    """A pending migration failed on the database file (the transaction applying the migrations
    is rolled back, so the file is as it was). Where what the migration adds is already there,
    the database's record of the migrations applied (`_sqlite_migrations`) lacks its row: the
    record is damaged, and the message says so rather than guessing a repair."""

    def __init__(self, path: str, migration: str, exc: sqlite3.Error):
        if any(words in str(exc) for words in ALREADY_THERE):
            reason = (f"the database's record of its migrations is damaged: migration {migration} is not recorded "
                      f"in its _sqlite_migrations table, yet what it adds is already there (SQLite: {exc}); "
                      "nothing was changed: restore the file from a copy")
        else:
            reason = (f"upgrading it to this calibrate's schema failed at migration {migration} (SQLite: {exc}); "
                      "nothing was changed")
        super().__init__(f"{path}: {reason}")


SQLITE_HEADER = b"SQLite format 3\x00"


HELPERS = 4
"""At most how many helper connections a read takes (`Store.helpers`)."""


class Store(ItemsMixin, ImportRunsMixin, JudgmentsMixin, JudgeRunsMixin, BatchExportsMixin, LabelsMixin, QueueMixin,
            ReadsMixin, ScoreCountsMixin, ExportRowsMixin, ConfidenceMixin, MergeRowsMixin):
    """calibrate's SQLite file. Opening it applies pending migrations.

    `read_only=True` is for commands that only read: a missing file is a DatabaseMissing error
    (nothing is created), and the connection cannot write, unless the file needs a pending
    migration, which is applied first. `on_upgrade(path, pending migration names)` is called
    before the migrations of a database made by an older calibrate are applied (on a large
    database they take a while).

    A writer never dies of a busy database: `transaction()` waits for the write lock as long as
    another writer holds it, in steps of `busy_timeout_ms`, calling `on_wait(seconds waited)`
    after each step so the caller can show that it is waiting (or raise DatabaseBusy to stop).

    A store's connection is used by one thread at a time: SQLite reports a statement's error
    through the connection, so a read of another thread in between can turn a busy database into
    "another row available", or into a BEGIN that seems to succeed. A thread that waits for
    another writer on behalf of the store's thread does so on a connection of its own
    (`wait_for_writers`); an import hands its store to the thread that writes a batch, and takes
    it back once the batch is written (`calibrate.write_behind`)."""

    def __init__(self, path: str | Path = ":memory:", *, busy_timeout_ms: int = 250, read_only: bool = False,
                 on_upgrade: Callable[[str, list[str]], None] | None = None):
        self.path = str(path)
        self._wait_step = busy_timeout_ms / 1000
        self._import_leases = {}
        file = Path(self.path)
        self.read_only = read_only and self.in_file
        if self.in_file and file.is_dir():
            raise NotACalibrateDatabase(f"{self.path}: a folder, not a database file: name a file with --db "
                                        f"(such as {file / 'calibrate.db'})")
        if self.read_only and not file.is_file():
            raise DatabaseMissing(f"no database at {self.path}: import items first (calibrate import …), "
                                  "or name another file with --db")
        if self.read_only and file.stat().st_size == 0 and not _wal_holds_pages(file):  # SQLite would make it one
            raise DatabaseMissing(f"{self.path} is an empty file, not yet a database: import items first "
                                  "(calibrate import …), or name another file with --db")
        pending = True
        if self.in_file and file.is_file() and file.stat().st_size > 0:
            # a file from a newer calibrate, or another program's database, is refused before anything is written
            applied, has_tables = _schema_in_file(file, busy_timeout_ms / 1000)
            _check_schema(self.path, applied, must_be_calibrate=has_tables)
            pending = bool(set(MIGRATION_NAMES) - set(applied))
            if pending and applied and on_upgrade is not None:
                on_upgrade(self.path, [name for name in MIGRATION_NAMES if name not in applied])
        if self.read_only and pending:
            Store(self.path, busy_timeout_ms=busy_timeout_ms).close()
        if self.read_only:
            self.conn = connect(self.path, _read_only_uri(file), uri=True, timeout=busy_timeout_ms / 1000)
        else:
            self.conn = connect(self.path, self.path, timeout=busy_timeout_ms / 1000)
        try:
            self._set_up(busy_timeout_ms, pending)
        except BaseException:
            self.conn.close()
            raise
        self.commits = 0  # write transactions committed since the store was opened (its migrations aside)

    def _set_up(self, busy_timeout_ms: int, pending: bool) -> None:
        """The connection's settings; for a writer, WAL and the pending migrations."""
        self.conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        if self.read_only:
            return
        if self.in_file:
            self.conn.execute("PRAGMA journal_mode = WAL")
        self.conn.execute("PRAGMA synchronous = NORMAL")
        self.conn.execute("PRAGMA foreign_keys = ON")
        if pending:
            import sqlite_utils

            with self.transaction():
                _migrations(self.path).apply(sqlite_utils.Database(self.conn))

    def counted_meanwhile(self, count: str, *args, **kwargs) -> Future:
        """The result of `getattr(store, count)(*args, **kwargs)` (a read), worked out on a thread
        with its own read-only connection when the database is a file: at a million items a count
        takes 0.1-0.3 s, and SQLite counts without the interpreter's lock, so the caller goes on
        meanwhile. Worked out here, at once, on SQLite's in-memory database. An error is raised
        where the result is read."""
        counted: Future = Future()
        if not self.in_file:
            counted.set_result(getattr(self, count)(*args, **kwargs))
            return counted
        path = self.path

        def work() -> None:
            try:
                reader = Store(path, read_only=True)
                try:
                    counted.set_result(getattr(reader, count)(*args, **kwargs))
                finally:
                    reader.close()
            except BaseException as exc:  # raised where the result is read
                counted.set_exception(exc)

        threading.Thread(target=work, name=f"calibrate {count}", daemon=True).start()
        return counted

    def data_version(self) -> int:
        """A number that changes when another connection commits a change to the database
        (SQLite's `PRAGMA data_version`); what this connection writes leaves it as it is."""
        return self.conn.execute("PRAGMA data_version").fetchone()[0]

    @property
    def in_file(self) -> bool:
        """Whether the database is a file (that another connection, thread or process can open
        again), not SQLite's in-memory database."""
        return self.path != ":memory:"

    @classmethod
    def open_other(cls, path: str | Path) -> Store:
        """Another calibrate database, opened read-only and left exactly as it is (no journal
        mode change, no migration, no -wal or -shm file created). Refuses, naming the file,
        anything that is not a calibrate database of a schema version this calibrate knows. One
        made by an older calibrate (a migration pending) is read through an upgraded copy in a
        temporary folder (`upgraded_copy`, removed on close), so its rows have every column."""
        path = Path(path)
        if not path.is_file():
            raise NotACalibrateDatabase(f"{path}: no such file")
        with path.open("rb") as handle:
            header = handle.read(len(SQLITE_HEADER))
        if not header:
            raise NotACalibrateDatabase(f"{path}: the file is empty, not a calibrate database")
        if header != SQLITE_HEADER:
            raise NotACalibrateDatabase(f"{path}: not an SQLite database")
        store = cls.__new__(cls)
        store.path = str(path)
        store._wait_step = 0.25
        store.conn = connect(str(path), _read_only_uri(path, briefly=True), uri=True)
        try:
            _check_schema(path, store.applied_migrations(), must_be_calibrate=True)
        except DatabaseFault as exc:
            store.close()
            raise NotACalibrateDatabase(f"{path}: unreadable SQLite file ({exc})") from None
        except NotACalibrateDatabase:
            store.close()
            raise
        if set(MIGRATION_NAMES) - set(store.applied_migrations()):
            try:
                return cls._upgraded_copy(store, path)
            finally:
                store.close()
        return store

    upgraded_copy: Path | None = None
    """The temporary copy read in place of another database made by an older calibrate (`open_other`)."""

    @classmethod
    def _upgraded_copy(cls, older: Store, path: Path) -> Store:
        """A copy of the database `older` (opened read-only from `path`), upgraded to this
        calibrate's schema in a temporary folder; refused, naming `path`, where that fails."""
        folder = Path(tempfile.mkdtemp(prefix="calibrate-merge-"))
        copy = folder / path.name
        try:
            target = sqlite3.connect(copy)
            try:
                older.conn.backup(target)
            except sqlite3.Error as exc:
                raise database_fault(str(copy), exc) or exc from None
            finally:
                target.close()
            store = cls(copy)
        except CalibrateError as exc:
            shutil.rmtree(folder, ignore_errors=True)
            raise NotACalibrateDatabase(f"{path}: its schema is older than this calibrate's, and upgrading a copy of "
                                        f"it to read it failed ({exc})") from None
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        store.upgraded_copy = copy
        return store

    def close(self) -> None:
        self.conn.close()
        if self.upgraded_copy is not None:
            shutil.rmtree(self.upgraded_copy.parent, ignore_errors=True)

    def defer_checkpoints(self) -> None:
        """This connection's commits no longer copy the write-ahead log into the database file
        as it grows (SQLite's automatic checkpoint: tens of milliseconds on a large file, inside
        the commit); its owner calls `checkpoint` on another connection when it has time.
        Other connections checkpoint as before."""
        self.conn.execute("PRAGMA wal_autocheckpoint = 0")

    def checkpoint(self) -> None:
        """Copy the write-ahead log into the database file as far as no reader still needs it,
        without waiting for any lock (a passive checkpoint)."""
        self.conn.execute("PRAGMA wal_checkpoint(PASSIVE)")

    # -- transactions -------------------------------------------------------------------

    commits = 0

    on_wait: Callable[[float], None] | None = None
    """Called with the seconds waited while a write waits for the lock; None: wait silently."""
    _writing: object | None = None  # the open `transaction()` block's own token (a nested one joins it)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """A write transaction (`BEGIN IMMEDIATE`), counted in `commits`; nested calls join the
        outer one. Begun inside the block that rolls it back: an interrupt (Ctrl-C, SIGTERM)
        right after the BEGIN leaves no transaction open for the clean-up's to fail on. A block
        that an interrupt left without resuming it (`end_interrupted_transaction`) touches nothing
        when it is closed later: the connection is no longer its."""
        if self._writing is not None:
            yield
            return
        token = object()
        try:
            self._writing = token
            _begin_waiting(self.conn, self.on_wait)
            yield
            self.conn.execute("COMMIT")
            self.commits += 1
        except BaseException:
            # SQLite itself rolls back after some faults (a full disk, I/O)
            if self._writing is token and self.conn.in_transaction:
                with suppress(sqlite3.Error, DatabaseFault):  # the first error says more than this one
                    self.conn.execute("ROLLBACK")
            raise
        finally:
            if self._writing is token:
                self._writing = None

    def end_interrupted_transaction(self) -> None:
        """Roll back a write transaction an interrupt left open, and take this connection back
        from it: an interrupt that lands after a `transaction()` block's last statement, in
        contextlib's frames before the block's own code resumes, skips both its COMMIT and its
        ROLLBACK. Call only where no `transaction()` block is open on this connection (a failed
        import's clean-up, once its writer thread has ended)."""
        if self.conn.in_transaction:
            with suppress(sqlite3.Error, DatabaseFault):
                self.conn.execute("ROLLBACK")
        self._writing = None

    def check_writable(self) -> None:
        """Raise the DatabaseFault that writing would (the file, its folder or its mount
        read-only), changing nothing: for a command whose first write comes late (the annotation
        app's, at a person's first decision) to refuse before it starts. `BEGIN IMMEDIATE` alone
        passes on a read-only file; a statement that writes, even no row, does not."""
        with self.transaction():
            self.conn.execute("UPDATE items SET id = id WHERE 0")

    @contextmanager
    def helpers(self) -> Iterator[list[Store]]:
        """Read-only connections to this store's file, one per core (at most HELPERS), for a read
        that puts its rows together on threads of their own (`reading` has them read this
        connection's snapshot); none for a database in memory. Closed after."""
        opened: list[Store] = []
        try:
            if self.in_file:
                opened += [Store(self.path, read_only=True) for _ in range(min(HELPERS, os.cpu_count() or 1))]
            yield opened
        finally:
            for store in opened:
                store.close()

    PINNING_ATTEMPTS = 100
    """How often `reading` begins again when commits keep coming between its connections' beginnings."""

    @contextmanager
    def reading(self, *others: Store) -> Iterator[None]:
        """One read transaction on this store's connection, and on each of `others` (connections
        to the same file) over the same snapshot: every read made in them sees the database as it
        was when they began, whatever is committed meanwhile, so that a command's reads, seconds
        apart at a million items, agree with each other and with a second connection working
        beside it. A commit that comes between their beginnings (this connection's `PRAGMA
        data_version` tells) has them begin again, PINNING_ATTEMPTS times at most (then each
        keeps a snapshot of its own). Inside a transaction of this connection: joins it."""
        if self.conn.in_transaction:
            if others:
                raise ValueError("other connections cannot share the snapshot of a transaction already open")
            yield
            return
        stores = (*others, self)  # this one last: its data_version, read after, says whether anything came between
        try:
            for _ in range(self.PINNING_ATTEMPTS):
                before = self.data_version()
                for store in stores:
                    store.conn.execute("BEGIN")
                    store.conn.execute("SELECT count(*) FROM sqlite_master").fetchone()  # the snapshot is taken here
                if not others or self.data_version() == before:
                    break
                for store in stores:
                    store.conn.execute("COMMIT")
            yield
        finally:
            for store in stores:
                if store.conn.in_transaction:
                    with suppress(sqlite3.Error, DatabaseFault):  # a closed connection ends its own
                        store.conn.execute("COMMIT")

    def wait_for_writers(self, on_wait: Callable[[float], None]) -> None:
        """Return once no other writer holds the database, calling `on_wait(seconds waited)` after
        each step of the busy timeout meanwhile: for a thread that waits so that the store's own
        thread can write at once, without freezing (the annotation app's worker). It waits on a
        connection of its own, which it closes: never on the store's, which that thread goes on
        using. DatabaseFault for a fault of the file other than a busy one."""
        if not self.in_file:
            return
        own = connect(self.path, self.path, timeout=self._wait_step)
        try:
            _begin_waiting(own, on_wait)
            own.execute("ROLLBACK")  # the lock was free: taken, and at once given back
        finally:
            own.close()

    # -- schema ---------------------------------------------------------------------------

    def applied_migrations(self) -> list[str]:
        """Names of the migrations recorded in this database, in the order applied."""
        return _applied(self.conn)

    def schema_sql(self) -> str:
        """The schema as SQLite stores it, excluding the migrations bookkeeping."""
        rows = self.conn.execute(
            "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL "
            "AND name NOT LIKE '_sqlite_migrations%' AND tbl_name != '_sqlite_migrations' "
            "ORDER BY type DESC, name"
        )
        return "\n".join(row["sql"] + ";" for row in rows) + "\n"
