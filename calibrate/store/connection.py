"""The SQLite connection the Store talks through, and the one place where SQLite's failures of
the file or its surroundings (a full disk, a file-size limit, a read-only folder, a damaged or
foreign file, a lock held longer than calibrate waits) become `DatabaseFault`s: CalibrateErrors
whose message names the file and says what is wrong, so every command prints `Error: PATH:
reason` instead of a traceback, whichever statement or row it happened on.

Other SQLite errors (a constraint or trigger refusing a row) are the code's own and pass
through unchanged."""

from __future__ import annotations

import ctypes
import os
import resource
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from calibrate.model import CalibrateError

# SQLite's primary result codes for faults of the file or its surroundings, and what they mean
BUSY_CODES = {5, 6}  # SQLITE_BUSY, SQLITE_LOCKED
DAMAGED_CODES = {11, 26}  # SQLITE_CORRUPT, SQLITE_NOTADB
FAULTS = {
    3: "permission denied",
    5: "locked by another process for longer than calibrate waits; try again once it is done",
    6: "locked by another process for longer than calibrate waits; try again once it is done",
    7: "out of memory",
    8: "cannot write: the file or its folder is read-only",
    10: "input/output error (is the disk failing, or the file on a network share that went away?)",
    11: "the database file is damaged (truncated or corrupt): restore it from a copy",
    13: "the disk is full: nothing more could be saved (what was saved before is kept); free some space and run again",
    14: "cannot open the file",
    15: "the file's locks do not work (is it on a network file system?)",
    26: "not an SQLite database (another kind of file, or encrypted)",
}

# SQLite's extended codes of an input/output error while a file grows: what a write past the
# process's file-size limit gives (SQLITE_IOERR_WRITE, _TRUNCATE, _SHMSIZE)
GROWING = {778, 1546, 4874}
NEARLY_FULL = 1 << 20
"""Free bytes on the database's disk below which an input/output error means the disk is full:
opening a database, SQLite makes its -shm file (32 KiB) and its -wal file beside it, and where
they cannot grow it reports an input/output error, not a full disk."""


def past_file_size_limit() -> str | None:
    """Why a file could not grow, where this process may write files only up to a size (`ulimit
    -f`: the write fails with EFBIG, which SQLite reports as an input/output error); None where
    there is no such limit."""
    limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    if limit == resource.RLIM_INFINITY:
        return None
    return (f"the file grew past this process's file-size limit ({limit:,} bytes, set by `ulimit -f`): "
            "raise the limit and run again (what was saved before is kept)")


class DatabaseFault(CalibrateError):
    """SQLite could not use the database file: the message names it and the reason."""

    def __init__(self, message: str, code: int):
        super().__init__(message)
        self.code = code

    @property
    def busy(self) -> bool:
        """Another connection holds the lock this one needs."""
        return self.code in BUSY_CODES

    @property
    def damaged(self) -> bool:
        """The file is damaged or no database: unlike a full disk or a lock, waiting does not
        help, and no later read or write of it can be trusted."""
        return self.code in DAMAGED_CODES


def database_fault(path: str, exc: sqlite3.Error) -> DatabaseFault | None:
    """The DatabaseFault naming `path` for a fault of the file or its surroundings, else None."""
    code = (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF
    if code not in FAULTS:
        return None
    reason = FAULTS[code]
    if code == 10 and exc.sqlite_errorcode in GROWING and (limit := past_file_size_limit()):
        reason = limit
    elif code == 10 and _free_space(path) < NEARLY_FULL:
        reason = FAULTS[13]
    if code == 14:
        folder = Path(path).resolve().parent
        if not folder.is_dir():
            reason = f"cannot open the file: there is no folder {folder}"
        elif not os.access(folder, os.W_OK):
            reason = "cannot open the file: its folder is read-only (SQLite keeps a -wal and a -shm file beside it)"
    return DatabaseFault(f"{path}: {reason} (SQLite: {exc})", code)


def _free_space(path: str) -> float:
    """Bytes free to this process on the disk holding the database file at `path` (infinite
    where that cannot be told)."""
    try:
        disk = os.statvfs(Path(path).resolve().parent)
    except OSError:
        return float("inf")
    return disk.f_bavail * disk.f_frsize


SQLITE_CONFIG_MEMSTATUS = 9  # sqlite3_config's option that turns the memory statistics on or off


def without_memory_statistics() -> bool:
    """Turns off SQLite's memory statistics for this process (`sqlite3_config(SQLITE_CONFIG_MEMSTATUS,
    0)`, what SQLite's recommended compile-time option SQLITE_DEFAULT_MEMSTATUS=0 does); whether
    they are off. With them on, every allocation SQLite makes takes one process-wide lock, so
    that connections building rows on two threads (`export`, `report`) take turns at it and
    gain little from the second core; off, each works at full speed. Done through the SQLite
    library Python's sqlite3 module uses, and only while none of SQLite's memory is in use (no
    connection open, which the statistics themselves tell: sqlite3_shutdown is safe then);
    where the library's functions cannot be reached, SQLite keeps its statistics (only speed
    differs)."""
    try:
        import _sqlite3

        library = ctypes.CDLL(_sqlite3.__file__)  # its symbols include SQLite's, linked in or loaded with it
        memory_used = library.sqlite3_memory_used
        memory_used.restype = ctypes.c_int64
        if memory_used() != 0:  # a connection is open (the statistics count its memory): left as they are
            return False
        probe = sqlite3.connect(":memory:")
        counted = memory_used() > 0
        probe.close()
        if not counted:  # the library was built without them
            return True
        if memory_used() != 0:
            return False
        library.sqlite3_shutdown()
        configured = library.sqlite3_config(SQLITE_CONFIG_MEMSTATUS, ctypes.c_int(0)) == 0
        return library.sqlite3_initialize() == 0 and configured
    except (ImportError, OSError, AttributeError):
        return False


MEMORY_STATISTICS_OFF = without_memory_statistics()


def connect(path: str, target: str, *, uri: bool = False, timeout: float = 5.0) -> Connection:
    """A Connection to `target` (a file name or URI) whose faults name `path`."""
    try:
        # check_same_thread off: a connection opened on one thread may be used on another (the
        # annotation app's checkpoint store, on each checkpoint's thread), never by two at once
        conn = sqlite3.connect(target, uri=uri, isolation_level=None, timeout=timeout, check_same_thread=False,
                               factory=Connection)
    except sqlite3.Error as exc:
        raise database_fault(path, exc) or exc from None
    conn.path = path
    conn.row_factory = sqlite3.Row
    return conn


class Connection(sqlite3.Connection):
    """sqlite3.Connection whose statements and rows raise DatabaseFault for faults of the file."""

    path: str

    def execute(self, sql: str, parameters=(), /) -> Cursor:
        return self.cursor(Cursor).execute(sql, parameters)

    def executemany(self, sql: str, parameters, /) -> Cursor:
        return self.cursor(Cursor).executemany(sql, parameters)

    def executescript(self, script: str, /) -> Cursor:
        return self.cursor(Cursor).executescript(script)


class Cursor(sqlite3.Cursor):
    """sqlite3.Cursor raising DatabaseFault for faults of the file, at any step."""

    def _fault(self, exc: sqlite3.Error) -> Exception:
        return database_fault(self.connection.path, exc) or exc

    def execute(self, sql: str, parameters=(), /) -> Cursor:
        try:
            return super().execute(sql, parameters)
        except sqlite3.Error as exc:
            raise self._fault(exc) from None

    def executemany(self, sql: str, parameters, /) -> Cursor:
        try:
            return super().executemany(sql, parameters)
        except sqlite3.Error as exc:
            raise self._fault(exc) from None

    def executescript(self, script: str, /) -> Cursor:
        try:
            return super().executescript(script)
        except sqlite3.Error as exc:
            raise self._fault(exc) from None

    def __next__(self):
        try:
            return super().__next__()
        except sqlite3.Error as exc:
            raise self._fault(exc) from None

    def fetchone(self):
        try:
            return super().fetchone()
        except sqlite3.Error as exc:
            raise self._fault(exc) from None

    def fetchmany(self, size: int | None = None):
        try:
            return super().fetchmany(size) if size is not None else super().fetchmany()
        except sqlite3.Error as exc:
            raise self._fault(exc) from None

    def fetchall(self):
        try:
            return super().fetchall()
        except sqlite3.Error as exc:
            raise self._fault(exc) from None


def plain_rows(conn: Connection, sql: str, parameters=(), size: int = 2000) -> Iterator[tuple]:
    """The rows of one statement as plain tuples, fetched `size` at a time: for reads of a row
    per item, where building an sqlite3.Row and a Python call for each row would cost more than
    the query."""
    cursor = conn.cursor(Cursor)
    cursor.row_factory = None
    cursor.execute(sql, parameters)
    while batch := cursor.fetchmany(size):
        yield from batch
