"""The items: adding them (and their audio), reading them one by one or streamed, the
identities an import checks against, the systems and cells they fall into, the filters
(task, language, system, judge, status) every reader applies to them, and the tasks whose id
and labels came with imported data (Inspect logs)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from functools import cache
from itertools import chain
from pathlib import Path

from calibrate.model import AudioClip, CalibrateError, Item, NewItem, dump_json, now_iso
from calibrate.store.connection import plain_rows
from calibrate.store.sql import IN_FORCE, ITEM_SELECT, JUDGED, VISIBLE, chunks, item_from_row

_ITEM_COLUMNS = ("task", "lang", "system", "source_id", "version", "fields", "reference", "content_hash", "imported_at",
                 "import_run", "response_length")
ROWS_PER_INSERT = 2000  # item rows in one INSERT statement (fewer if SQLite allows fewer parameters)


def id_array(text: str):
    """The ids of `Store.item_ids_text` as a sorted numpy array."""
    import numpy as np

    return np.sort(np.fromstring(text, dtype=np.int64, sep=",")) if text else np.zeros(0, dtype=np.int64)


@cache
def _insert_items_sql(rows: int) -> str:
    """INSERT OR IGNORE of `rows` item rows in one statement."""
    one = "(" + ",".join("?" * len(_ITEM_COLUMNS)) + ")"
    return f"INSERT OR IGNORE INTO items ({', '.join(_ITEM_COLUMNS)}) VALUES " + ",".join([one] * rows)


def response_length(fields: dict) -> int | None:
    """The number of characters of an item's `response` field when it is a string, else None:
    stored beside the item for the length-bias probe (migration 0017)."""
    response = fields.get("response")
    return len(response) if isinstance(response, str) else None


class UnknownFilter(CalibrateError, ValueError):
    """A task, language or judge filter naming something the database does not hold."""


class ItemsMixin:
    """Items, their audio and the item filters (part of Store)."""

    # -- items ----------------------------------------------------------------------------

    def item_values(self, items: Sequence[NewItem], *, run: int | None = None) -> list:
        """The values of the rows `add_items` writes for `items` (under import `run`, stamped
        now), row after row in `_ITEM_COLUMNS`' order: built before its transaction, so that an
        import builds them while it holds no lock."""
        stamp = now_iso()
        return list(chain.from_iterable(
            (item.task, item.lang, item.system, item.source_id, item.version, item.fields_json, item.reference,
             item.content_hash, stamp, run, response_length(item.fields)) for item in items))

    def add_items(self, items: Sequence[NewItem], *, with_ids: bool = False, run: int | None = None,
                  values: list | None = None) -> tuple[list[int], int]:
        """Insert items, ignoring ones already present (same content hash). Returns (their ids in
        order if `with_ids`, else [], and the number added). Items of an import `run` stay hidden
        until the run finishes, which is also when an item with version > 1 supersedes the earlier
        versions of its identity (at once when there is no run). `values` are the items'
        `item_values`, when the caller built them already."""
        if values is None:
            values = self.item_values(items, run=run)
        with self.transaction():
            if run is not None:
                self._renew_import(run)
            added = self._insert_item_values(values)
            newer = [(*item.identity, item.version) for item in items if item.version > 1] if run is None else []
            if newer:
                self.conn.executemany(
                    "UPDATE items SET current = 0 WHERE task = ? AND lang = ? AND system = ? AND source_id = ? "
                    "AND version < ?",
                    newer,
                )
            if not with_ids:
                return [], added
            hashes = [item.content_hash for item in items]
            ids = self._ids_for_hashes(hashes)
        return [ids[h] for h in hashes], added

    def _insert_item_values(self, values: list) -> int:
        """INSERT OR IGNORE the rows whose values (`item_values`) these are, many rows per
        statement; returns how many were inserted. One statement of many rows costs SQLite less
        than a statement per row (executemany) and lets other threads run while it writes (the
        interpreter's lock is released once per statement, not once per row). Statements hold
        ROWS_PER_INSERT rows (or as many as SQLite takes parameters for), the rest a power of two
        each: the connection caches few statement shapes, each of which holds memory for all its
        rows."""
        width = len(_ITEM_COLUMNS)
        most = max(1, min(ROWS_PER_INSERT, self.conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER) // width))
        rows = len(values) // width
        added, start = 0, 0
        while start < rows:
            left = rows - start
            count = most if left >= most else 1 << (left.bit_length() - 1)
            # rowcount: rows this statement inserted (it leaves out what triggers write)
            added += self.conn.execute(_insert_items_sql(count), values[start * width:(start + count) * width]).rowcount
            start += count
        return added

    def _ids_for_hashes(self, hashes: list[str]) -> dict[str, int]:
        found: dict[str, int] = {}
        for chunk in chunks(hashes, 500):
            marks = ",".join("?" * len(chunk))
            for row in self.conn.execute(
                f"SELECT id, content_hash FROM items WHERE content_hash IN ({marks})", chunk
            ):
                found[row["content_hash"]] = row["id"]
        return found

    def item(self, item_id: int) -> Item | None:
        row = self.conn.execute(f"SELECT {ITEM_SELECT} FROM items i WHERE id = ? AND {VISIBLE}", (item_id,)).fetchone()
        return item_from_row(row) if row else None

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
        labelled | unlabelled (judged: a judge's verdict in force is not a failed call,
        `calibrate.model.judged`; unjudged: none is)."""
        where, params = self._item_filter(task, lang, status, judge, system)
        sql = f"SELECT {ITEM_SELECT} FROM items i WHERE {where} ORDER BY i.id"
        if limit is not None:
            sql += " LIMIT ? OFFSET ?"
            params += [limit, offset]
        for row in plain_rows(self.conn, sql, params):
            yield item_from_row(row)

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
        """Ids of the filtered items as a sorted numpy array (`id_array` of `item_ids_text`)."""
        return id_array(self.item_ids_text(task=task, lang=lang, system=system))

    def item_ids_text(self, *, task: str | None = None, lang: str | None = None, system: str | None = None) -> str:
        """Ids of the filtered items as one comma-separated string, in no set order: on a million
        items 3x faster than a row each (queues are built from it at start-up), read along the
        items' cell index when no import is running, and without numpy (a thread can read it
        while another imports numpy)."""
        where, params = self._item_filter(task, lang, None, None, system)
        quick, params_quick = self._item_filter(task, lang, None, None, system, visible=False)
        return self.conn.execute(
            f"SELECT CASE WHEN EXISTS (SELECT 1 FROM import_runs WHERE finished_at IS NULL) "
            f"THEN (SELECT group_concat(id) FROM items i WHERE {where}) "
            f"ELSE (SELECT group_concat(id) FROM items i WHERE {quick}) END", [*params, *params_quick]).fetchone()[0] or ""

    def cells(self, *, task: str | None = None, lang: str | None = None,
              system: str | None = None) -> list[tuple[str, str, str]]:
        """The (task, lang, system) cells of the filtered items, sorted, found by seeks along the
        items' identity index (a few lookups on a million items, where DISTINCT reads them all)."""
        tasks = [task] if task else self._seek_values("SELECT task FROM items WHERE task {op} ? ORDER BY task LIMIT 1")
        lang_after = "SELECT lang FROM items WHERE task = ? AND lang {op} ? ORDER BY lang LIMIT 1"
        system_after = "SELECT system FROM items WHERE task = ? AND lang = ? AND system {op} ? ORDER BY system LIMIT 1"
        return [(t, found, s) for t in tasks for found in self._seek_values(lang_after, t) if lang in (None, found)
                for s in self._seek_values(system_after, t, found) if system in (None, s)]

    def task_langs(self, *, system: str | None = None) -> list[tuple[str, str]]:
        """The (task, lang) pairs of the current, visible items (of `system`, if given), sorted:
        the cells found by index seeks, each confirmed by one of its items."""
        where, params = self._item_filter(None, None, None, None, system)
        found = []
        for task, lang, cell_system in self.cells(system=system):
            if (task, lang) not in found and self.conn.execute(
                    f"SELECT 1 FROM items i WHERE i.task = ? AND i.lang = ? AND i.system = ? AND {where} LIMIT 1",
                    [task, lang, cell_system, *params]).fetchone():
                found.append((task, lang))
        return found

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
        "annotator": ("SELECT DISTINCT annotator FROM annotations ORDER BY 1",
                      "SELECT 1 FROM annotations WHERE annotator = ? LIMIT 1"),
    }

    def known(self, what: str) -> list[str]:
        """Every task, language, system, judge or annotator in this database (what: task | language |
        system | judge | annotator)."""
        return [r[0] for r in self.conn.execute(self._KNOWN[what][0])]

    def check_filter(self, *, task: str | None = None, lang: str | None = None, system: str | None = None,
                     judge: str | None = None, annotator: str | None = None) -> None:
        """UnknownFilter naming the known values when a task, language, system, judge or annotator
        filter matches nothing in this database."""
        for what, value in (("task", task), ("language", lang), ("system", system), ("judge", judge),
                            ("annotator", annotator)):
            if value and self.conn.execute(self._KNOWN[what][1], (value,)).fetchone() is None:
                known = [v or "(none)" for v in self.known(what)]
                listing = ", ".join(known) if known else "none yet"
                raise UnknownFilter(f"unknown {what} {value!r}: this database has {listing}")

    @staticmethod
    def _item_filter(task, lang, status, judge, system=None, *, visible: bool = True) -> tuple[str, list]:
        """SQL conditions on `items i`: the current version of each visible item, filtered
        (`visible=False` leaves visibility out, for reads made when no import is running)."""
        clauses, params = ["i.current = 1", VISIBLE] if visible else ["i.current = 1"], []
        if system is not None:
            clauses.append("i.system = ?")
            params.append(system)
        if task:
            clauses.append("i.task = ?")
            params.append(task)
        if lang:
            clauses.append("i.lang = ?")
            params.append(lang)
        judge_clause = " AND v.judge_name = ?" if judge else ""
        judge_params = [judge] if judge else []
        # the verdict in force (a majority of repeats, the newest judgment)
        if status in ("judged", "unjudged"):
            neg = "NOT " if status == "unjudged" else ""
            clauses.append(f"{neg}EXISTS (SELECT 1 FROM verdicts_in_force v WHERE v.item_id = i.id AND {JUDGED}{judge_clause})")
            params += judge_params
        elif status in ("unparsed", "error"):
            clauses.append(f"EXISTS (SELECT 1 FROM verdicts_in_force v WHERE v.item_id = i.id AND v.status = ?{judge_clause})")
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
        """Per task x language x system: items, judged (a judge's verdict in force on them is not
        a failed call: `calibrate.model.judged`), unparsed and errors (a judge's verdict in force
        is: under repeats, their majority; else the newest judgment, so an error a later
        judgment put right does not count), labelled (by anyone)."""
        where, params = self._item_filter(None, None, None, None, system)
        sql = f"""
        SELECT i.task, i.lang, i.system, count(*) AS items,
            sum(EXISTS (SELECT 1 FROM verdicts_in_force v WHERE v.item_id = i.id AND {JUDGED})) AS judged,
            sum(EXISTS (SELECT 1 FROM verdicts_in_force v WHERE v.item_id = i.id AND v.status = 'unparsed')) AS unparsed,
            sum(EXISTS (SELECT 1 FROM verdicts_in_force v WHERE v.item_id = i.id AND v.status = 'error')) AS errors,
            sum(EXISTS (SELECT 1 FROM current_labels c WHERE c.item_id = i.id)) AS labelled
        FROM items i WHERE {where} GROUP BY i.task, i.lang, i.system ORDER BY i.task, i.lang, i.system
        """
        return [dict(r) for r in self.conn.execute(sql, params)]

    def count_items(self, *, task: str | None = None, lang: str | None = None, system: str | None = None,
                    at_most: int | None = None) -> int:
        """The current, visible items of the filter, counted along the items' cell index when no
        import is running (none is hidden then), which is much smaller than the table (named:
        with no filter SQLite's planner would scan the table, 0.17-0.27 s at a million items
        against 0.07-0.09 s along the index); `at_most`: counted up to that many (whether there
        are that many, at a cost in proportion to it)."""
        where, params = self._item_filter(task, lang, None, None, system)
        quick, params_quick = self._item_filter(task, lang, None, None, system, visible=False)
        limit = "" if at_most is None else f" LIMIT {int(at_most)}"  # the same plan as a bare count(*) without it
        return self.conn.execute(
            f"SELECT CASE WHEN EXISTS (SELECT 1 FROM import_runs WHERE finished_at IS NULL) "
            f"THEN (SELECT count(*) FROM (SELECT 1 FROM items i WHERE {where}{limit})) "
            f"ELSE (SELECT count(*) FROM (SELECT 1 FROM items i INDEXED BY items_by_cell WHERE {quick}{limit})) END",
            [*params, *params_quick]).fetchone()[0]

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

    # -- tasks that come with data (Inspect logs) --------------------------------------------

    def data_tasks(self) -> list[tuple[str, str, str, tuple[str, ...]]]:
        """(task, lang, family, labels) of each task whose id and labels came with imported data."""
        rows = self.conn.execute("SELECT task, lang, family, labels FROM data_tasks ORDER BY task, lang")
        return [(r["task"], r["lang"], r["family"], tuple(json.loads(r["labels"]))) for r in rows]

    def set_data_task(self, task: str, lang: str, family: str, labels: Sequence[str]) -> None:
        """Record a data task's template family and labels (replacing what was recorded)."""
        with self.transaction():
            self.conn.execute(
                "INSERT INTO data_tasks (task, lang, family, labels) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (task, lang) DO UPDATE SET family = excluded.family, labels = excluded.labels",
                (task, lang, family, dump_json(list(labels))),
            )
