"""Import runs: an import writes its items in short transactions under a recorded run, and they
stay hidden until the run finishes.

One import runs at a time: a second one waits until the first has finished (so it never counts
the first one's hidden rows as "already present"). A running import renews its heartbeat while
it reads and writes; a run whose heartbeat is older than IMPORT_STALE_SECONDS (on any host), or
whose process is gone (on this host), is dead, and the next import removes what it wrote, in
short transactions. `abandon_import` does the same on request (`calibrate import abandon RUN`).
"""

from __future__ import annotations

import functools
import os
import socket
import sqlite3
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress

from calibrate.model import CalibrateError, dump_json, now_iso, process_running

IMPORT_HEARTBEAT_SECONDS = 5.0  # a running import renews its heartbeat this often
IMPORT_STALE_SECONDS = 60.0  # a heartbeat older than this: the import is dead, whatever its host
IMPORT_WAIT_POLL_SECONDS = 0.5  # how often an import waiting for another one looks again
CLEAN_UP_SECONDS = 0.4  # a clean-up transaction aims to hold the write lock no longer than this
# SQLite's page cache while an import writes or a clean-up removes (KiB): the random-keyed
# indexes (content hashes, uids) stay cached across their transactions instead of being read
# and written again in each
BULK_CACHE_KIB = 64 * 1024
# pages the write-ahead log may hold while an import writes before it is copied into the database
# (SQLite's default is 1000: with each transaction touching a page of the content-hash index per
# row, the copy ran after every transaction, and wrote the same pages again each time)
BULK_CHECKPOINT_PAGES = 16384


class ImportRunLost(CalibrateError):
    """The run this import was writing was removed by another process: its heartbeat had stopped
    for longer than IMPORT_STALE_SECONDS (a suspended process), or someone abandoned it."""


class ImportRunsMixin:
    """Beginning, renewing, finishing and abandoning import runs (part of Store)."""

    # called with its row once for each unfinished run begin_import waits for (running) or removes (dead)
    on_import_wait: Callable[[dict], None] | None = None
    # while abandon_import removes a run, called with the run and the seconds waited instead of `on_wait`
    # when another writer holds the database (at 0 s as a wait starts)
    on_clean_up_wait: Callable[[int, float], None] | None = None
    # the runs this Store began: run -> (its owner tag, time.monotonic() of the last renewal)
    _import_leases: dict[int, tuple[str, float]]

    def begin_import(self, source: str) -> int:
        """Record an import run: its items stay hidden from every reader until finish_import.
        Waits while another import is running; removes first what dead runs left behind (calling
        `on_import_wait` with the row of each)."""
        announced: set[int] = set()
        while True:
            with self.transaction():
                runs = self.import_runs(unfinished=True)
                if not runs:
                    owner = uuid.uuid4().hex
                    run = self.conn.execute(
                        "INSERT INTO import_runs (source, pid, host, started_at, heartbeat_at, owner) "
                        "VALUES (?, ?, ?, ?, ?, ?)",
                        (source, os.getpid(), socket.gethostname(), now_iso(), time.time(), owner),
                    ).lastrowid
                    self._import_leases[run] = (owner, time.monotonic())
                    return run
            for run in runs:
                if run["id"] not in announced and self.on_import_wait is not None:
                    self.on_import_wait(run)
                announced.add(run["id"])
                if run["state"] == "dead":
                    self.abandon_import(run["id"], dead_only=True)
            if any(run["state"] == "running" for run in runs):
                time.sleep(IMPORT_WAIT_POLL_SECONDS)

    def imports_begun_here(self, *, finished: bool) -> list[int]:
        """The import runs this Store began that are now finished (committed: `finished`) or not
        yet, in id order, as the database records them: what an interrupt that lands anywhere
        around a commit leaves, read back rather than assumed. A run is this Store's by its id and
        its owner tag (an id freed by `import abandon` may be another import's run now), or an
        unfinished one taken from its writer by a clean-up (owner NULL). After an interrupt, call
        `end_interrupted_transaction` first: a transaction it left open would read as committed."""
        if not self._import_leases:
            return []
        owned = dump_json([[run, owner] for run, (owner, _) in sorted(self._import_leases.items())])
        # an unfinished run's owner is NULL once a clean-up took it (one of this Store's, interrupted, may have)
        return [row[0] for row in self.conn.execute(
            "SELECT r.id FROM import_runs r JOIN json_each(?) e ON r.id = json_extract(e.value, '$[0]') "
            "AND (r.owner = json_extract(e.value, '$[1]') OR (r.owner IS NULL AND r.finished_at IS NULL)) "
            "WHERE (r.finished_at IS NOT NULL) = ? ORDER BY r.id", (owned, finished))]

    def import_renewal_due(self, run: int) -> bool:
        """Whether IMPORT_HEARTBEAT_SECONDS have passed since the run's heartbeat was last renewed."""
        _, renewed = self._import_leases.get(run, ("", float("-inf")))
        return time.monotonic() - renewed >= IMPORT_HEARTBEAT_SECONDS

    def keep_import_alive(self, run: int) -> None:
        """Renew the run's heartbeat if it is due (import_renewal_due). ImportRunLost if the run
        is gone."""
        if self.import_renewal_due(run):
            with self.transaction():
                self._renew_import(run)

    def _renew_import(self, run: int) -> None:
        """Renew the run's heartbeat (inside the caller's transaction); ImportRunLost if it is gone
        (its id may then name a newer run: the owner tag tells them apart)."""
        owner, _ = self._import_leases.get(run, ("", 0.0))
        renewed = self.conn.execute(
            "UPDATE import_runs SET heartbeat_at = ? WHERE id = ? AND owner = ? AND finished_at IS NULL",
            (time.time(), run, owner),
        ).rowcount
        if not renewed:
            raise ImportRunLost(
                f"import run {run} was removed by another process while this import was writing it (its heartbeat "
                f"stopped for over {IMPORT_STALE_SECONDS:g} s, as when the process is suspended, or it was "
                "abandoned); nothing of this import was kept: run it again"
            )
        self._import_leases[run] = (owner, time.monotonic())

    def finish_import(self, run: int) -> None:
        """Make the run's items visible, all at once. Call inside the transaction that writes
        the run's last rows."""
        with self.transaction():
            self._renew_import(run)
            self.conn.execute(  # the run's new versions supersede the earlier ones only now
                "UPDATE items SET current = 0 WHERE id IN (SELECT o.id FROM items n JOIN items o "
                "ON o.task = n.task AND o.lang = n.lang AND o.system = n.system AND o.source_id = n.source_id "
                "AND o.version < n.version WHERE n.import_run = ? AND n.version > 1 AND o.current = 1)",
                (run,),
            )
            self.conn.execute("UPDATE import_runs SET finished_at = ? WHERE id = ?", (now_iso(), run))

    def abandon_import(self, run: int, *, dead_only: bool = False) -> int:
        """Remove everything an unfinished run wrote (items, judgments, labels), then the run itself (only if it is still
        dead, with `dead_only`). Returns the number of items removed. The run is first taken
        from its writer (which then can neither write nor finish it: ImportRunLost); its items
        are hidden, so removing them over several transactions shows nothing half-done, and each
        transaction takes as many items as fit in CLEAN_UP_SECONDS, so other writers never wait
        long. A wait for another writer meanwhile calls `on_clean_up_wait` (if set) instead of
        `on_wait`."""
        waiting = self.on_wait
        if self.on_clean_up_wait is not None:
            self.on_wait = functools.partial(self.on_clean_up_wait, run)
        try:
            return self._remove_import(run, dead_only)
        finally:
            self.on_wait = waiting

    def _remove_import(self, run: int, dead_only: bool) -> int:
        """`abandon_import`'s work."""
        with self.transaction():
            found = [r for r in self.import_runs(unfinished=True) if r["id"] == run]
            if not found or (dead_only and found[0]["state"] != "dead"):
                return 0  # finished, removed, or alive again meanwhile
            self.conn.execute("UPDATE import_runs SET owner = NULL WHERE id = ?", (run,))
        removed, batch = 0, 500
        # the log is copied as usual: another writer's commit copies whatever the log holds beyond
        # its own 1000 pages, so a longer interval here would make that writer wait longer
        with self.writing_in_bulk(checkpoint_pages=None):
            while True:
                with self.transaction():
                    started = time.perf_counter()
                    ids = [r[0] for r in self.conn.execute("SELECT id FROM items WHERE import_run = ? LIMIT ?",
                                                           (run, batch))]
                    if not ids:
                        self.conn.execute("DELETE FROM import_runs WHERE id = ? AND finished_at IS NULL", (run,))
                        return removed
                    marks = ",".join("?" * len(ids))
                    # the labels the import wrote: those in force first (their triggers take them out
                    # of the counts), then the rows (migration 0029 lets an abandoned run's go)
                    self.conn.execute(f"DELETE FROM labels_in_force WHERE item_id IN ({marks})", ids)
                    self.conn.execute(f"DELETE FROM annotations WHERE item_id IN ({marks})", ids)
                    self.conn.execute(f"DELETE FROM judge_claims WHERE item_id IN ({marks})", ids)
                    self.conn.execute(f"DELETE FROM judgments WHERE item_id IN ({marks})", ids)
                    self.conn.execute(f"DELETE FROM item_audio WHERE item_id IN ({marks})", ids)
                    removed += self.conn.execute(f"DELETE FROM items WHERE id IN ({marks})", ids).rowcount
                took = time.perf_counter() - started
                batch = max(50, min(20_000, int(batch * CLEAN_UP_SECONDS / max(took, 1e-3))))

    @contextmanager
    def writing_in_bulk(self, *, checkpoint_pages: int | None = BULK_CHECKPOINT_PAGES) -> Iterator[None]:
        """This connection's settings for many short write transactions in a row (an import, a
        clean-up): a page cache of BULK_CACHE_KIB and, unless `checkpoint_pages` is None, a
        write-ahead log copied into the database every `checkpoint_pages` pages; restored afterwards."""
        cache = self.conn.execute("PRAGMA cache_size").fetchone()[0]
        checkpoint = self.conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0]
        self.conn.execute(f"PRAGMA cache_size = -{BULK_CACHE_KIB}")
        if checkpoint_pages is not None:
            self.conn.execute(f"PRAGMA wal_autocheckpoint = {int(checkpoint_pages)}")
        try:
            yield
        finally:
            # (on a connection an interrupt had this block left unresumed until it was closed: nothing to restore)
            with suppress(sqlite3.ProgrammingError):
                self.conn.execute(f"PRAGMA cache_size = {int(cache)}")
                self.conn.execute(f"PRAGMA wal_autocheckpoint = {int(checkpoint)}")

    def import_sources(self, item_ids: Iterable[int]) -> list[str]:
        """The recorded commands (`begin_import`'s source) of the import runs that added these
        items, in run order: where an item came from, for a message."""
        return [row[0] for row in self.conn.execute(
            "SELECT r.source FROM import_runs r WHERE r.id IN (SELECT i.import_run FROM json_each(?) e "
            "JOIN items i ON i.id = e.value) ORDER BY r.id", (dump_json(list(item_ids)),))]

    def import_runs(self, *, unfinished: bool = False) -> list[dict]:
        """The recorded import runs in id order (only the unfinished ones if `unfinished`), each
        a dict of its row with `heartbeat_age` (seconds since its last renewal; None if never
        renewed) and `state`: finished, running, or dead (its heartbeat is older than
        IMPORT_STALE_SECONDS or missing, or its process is gone from this host)."""
        here, now = socket.gethostname(), time.time()
        runs = []
        sql = "SELECT * FROM import_runs" + (" WHERE finished_at IS NULL" if unfinished else "") + " ORDER BY id"
        for row in self.conn.execute(sql):
            run = dict(row)
            run["heartbeat_age"] = None if run["heartbeat_at"] is None else max(0.0, now - run["heartbeat_at"])
            if run["finished_at"] is not None:
                run["state"] = "finished"
            elif (run["heartbeat_age"] is None or run["heartbeat_age"] > IMPORT_STALE_SECONDS
                  or (run["host"] == here and not process_running(run["pid"]))):
                run["state"] = "dead"
            else:
                run["state"] = "running"
            runs.append(run)
        return runs
