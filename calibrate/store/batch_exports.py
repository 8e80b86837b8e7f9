"""The record of `judge --export-batch`: which requests each batch file holds (custom id, item,
judge key, sample), so that `judge --import-batch` can tell the batch a result file belongs to
and name the requests of it that have no result yet."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

from calibrate.model import now_iso


@dataclass(frozen=True)
class BatchExport:
    """A batch written by `judge --export-batch`, and its requests that no judgment answers yet
    (item source ids, in the order written)."""

    path: str
    exported_at: str
    requests: int
    unanswered: list[str]


class BatchExportsMixin:
    """Exported batches (part of Store)."""

    def record_batch_export(self, path: str, judge_name: str, judged_after: int,
                            requests: Iterable[tuple[str, int, str, int]]) -> None:
        """Record a batch file just written: `requests` are (custom_id, item_id, judge_key, sample);
        `judged_after` is the newest judgment id as it was written."""
        with self.transaction():
            export_id = self.conn.execute(
                "INSERT INTO batch_exports (path, judge_name, exported_at, judged_after) VALUES (?, ?, ?, ?)",
                (path, judge_name, now_iso(), judged_after)).lastrowid
            self.conn.executemany(
                "INSERT OR IGNORE INTO batch_requests (export_id, custom_id, item_id, judge_key, sample) "
                "VALUES (?, ?, ?, ?, ?)", ((export_id, *request) for request in requests))

    def batch_export_of(self, custom_ids: Iterable[str]) -> BatchExport | None:
        """The exported batch holding the most of `custom_ids` (the newest of those holding as
        many), with its requests that no judgment newer than the export answers; None when no
        recorded batch holds any of them."""
        found = self.conn.execute(
            "SELECT r.export_id FROM batch_requests r WHERE r.custom_id IN (SELECT value FROM json_each(?)) "
            "GROUP BY r.export_id ORDER BY count(*) DESC, r.export_id DESC LIMIT 1",
            (json.dumps(list(custom_ids)),)).fetchone()
        if found is None:
            return None
        export = self.conn.execute("SELECT e.path, e.exported_at, (SELECT count(*) FROM batch_requests r "
                                   "WHERE r.export_id = e.id) FROM batch_exports e WHERE e.id = ?", found).fetchone()
        unanswered = [row[0] for row in self.conn.execute(
            "SELECT coalesce(i.source_id, '#' || r.item_id) FROM batch_requests r "
            "JOIN batch_exports e ON e.id = r.export_id LEFT JOIN items i ON i.id = r.item_id "
            "WHERE r.export_id = ? AND NOT EXISTS (SELECT 1 FROM judgments j WHERE j.judge_key = r.judge_key "
            "AND j.item_id = r.item_id AND j.sample = r.sample AND j.id > e.judged_after) ORDER BY r.rowid",
            found)]
        return BatchExport(*export, unanswered)
