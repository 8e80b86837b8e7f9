"""Import runs: an import writes its items in short transactions under a recorded run and
they stay hidden until the run finishes; a run whose process died is removed by the next one."""

from __future__ import annotations

import os
import socket

from calibrate.model import now_iso


class ImportRunsMixin:
    """Beginning, finishing and abandoning import runs (part of Store)."""

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


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
