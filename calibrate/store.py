"""The one place that speaks SQL: calibrate's SQLite file, its migrations, and every read and write.

Every other module asks the Store. Writers open `BEGIN IMMEDIATE`, so several annotators (or
processes) can share one file under WAL without "database is locked" on a read-to-write
upgrade. The schema lives in `db/migrations/*.sql`, applied in order through
`sqlite_utils.Migrations` and recorded in the database.
"""

from __future__ import annotations

import json
import sqlite3
import time
import uuid
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

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
# An annotation row `a` is in force until an undo row reverts it.
IN_FORCE = "NOT EXISTS (SELECT 1 FROM annotations u WHERE u.reverts_id = a.id)"
# The action sets of calibrate.model reach SQL as parameters (JSON arrays read by json_each),
# never pasted into the statement text.
DECIDES_JSON = dump_json(DECISION_ACTIONS)
LABELS_JSON = dump_json(LABEL_ACTIONS)
LABELLING_JSON = dump_json((*LABEL_ACTIONS, REVERT_ACTION))


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


class Store:
    """calibrate's SQLite file. Opening it applies pending migrations.

    `read_only=True` is for commands that only read: a missing file is a DatabaseMissing error
    (nothing is created), and the connection cannot write, unless the file needs a pending
    migration, which is applied first."""

    def __init__(self, path: str | Path = ":memory:", *, busy_timeout_ms: int = 60_000, read_only: bool = False):
        self.path = str(path)
        self.read_only = read_only and self.path != ":memory:"
        if self.read_only and not Path(self.path).is_file():
            raise DatabaseMissing(f"no database at {self.path}: import items first (calibrate import …), "
                                  "or name another file with --db")
        if self.read_only and _pending_migrations(self.path):
            Store(self.path, busy_timeout_ms=busy_timeout_ms).close()
        target = f"{Path(self.path).resolve().as_uri()}?mode=ro" if self.read_only else self.path
        self.conn = sqlite3.connect(target, uri=self.read_only, isolation_level=None, timeout=busy_timeout_ms / 1000)
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

    def close(self) -> None:
        self.conn.close()

    # -- transactions -------------------------------------------------------------------

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """A write transaction (`BEGIN IMMEDIATE`); nested calls join the outer one."""
        if self.conn.in_transaction:
            yield
            return
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

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

    def add_items(self, items: Sequence[NewItem], *, with_ids: bool = False) -> tuple[list[int], int]:
        """Insert items, ignoring ones already present (same content hash). An item with
        version > 1 supersedes the earlier versions of its identity. Returns (their ids in
        order if `with_ids`, else [], and the number added)."""
        stamp = now_iso()
        rows, hashes = [], []
        for item in items:
            hashes.append(item.content_hash)
            rows.append(
                (item.task, item.lang, item.system, item.source_id, item.version, item.fields_json, item.reference,
                 item.content_hash, stamp)
            )
        with self.transaction():
            before = self.conn.total_changes
            self.conn.executemany(
                "INSERT OR IGNORE INTO items "
                "(task, lang, system, source_id, version, fields, reference, content_hash, imported_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                rows,
            )
            added = self.conn.total_changes - before
            newer = [(*item.identity, item.version) for item in items if item.version > 1]
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
        row = self.conn.execute("SELECT * FROM items WHERE id = ?", (item_id,)).fetchone()
        return _item(row) if row else None

    def source_index(self, task: str, lang: str, system: str = "") -> dict[str, int]:
        """source_id -> current item id, for one task, language and system (none by default)."""
        rows = self.conn.execute(
            "SELECT source_id, id FROM items WHERE task = ? AND lang = ? AND system = ? AND current = 1",
            (task, lang, system),
        )
        return {r["source_id"]: r["id"] for r in rows}

    def identity_index(self, task: str, lang: str) -> dict[tuple[str, str], tuple[int, str, int]]:
        """(system, source_id) -> (id, content hash, version) of the current version of every
        item of one task and language: what an import checks identities against."""
        rows = self.conn.execute(
            "SELECT system, source_id, id, content_hash, version FROM items "
            "WHERE task = ? AND lang = ? AND current = 1",
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
        """SQL conditions on `items i`: the current version of each item, filtered."""
        clauses, params = ["i.current = 1"], []
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
        """Per task x language x system: items, judged, unparsed, errors, labelled (by anyone)."""
        where, params = self._item_filter(None, None, None, None, system)
        sql = f"""
        SELECT i.task, i.lang, i.system, count(*) AS items,
            sum(EXISTS (SELECT 1 FROM judgments j WHERE j.item_id = i.id AND j.status != 'error')) AS judged,
            sum(EXISTS (SELECT 1 FROM judgments j WHERE j.item_id = i.id AND j.status = 'unparsed')) AS unparsed,
            sum(EXISTS (SELECT 1 FROM judgments j WHERE j.item_id = i.id AND j.status = 'error')) AS errors,
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
            before = self.conn.total_changes
            self.conn.executemany(
                f"INSERT OR IGNORE INTO judgments ({', '.join(JUDGMENT_COLUMNS)}) "
                f"VALUES ({', '.join('?' * len(JUDGMENT_COLUMNS))})",
                rows,
            )
            return self.conn.total_changes - before

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
        sql = """
        SELECT j.item_id, j.judge_name, j.status, j.verdict, j.correct, j.id AS judgment_id,
               i.task, i.lang, i.reference
        FROM judgments j JOIN items i ON i.id = j.item_id
        WHERE j.id IN (SELECT max(id) FROM judgments GROUP BY item_id, judge_name)
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
    ) -> int:
        """Append one annotation row and release the annotator's lease on a decision.
        `audio_plays` and `listened_seconds` record listening (None: the item has no audio)."""
        with self.transaction():
            cursor = self.conn.execute(
                "INSERT INTO annotations (uid, item_id, judgment_id, annotator, action, label, reverts_id, note, "
                "blind, seconds_spent, created_at, audio_plays, listened_seconds) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    uid or uuid.uuid4().hex,
                    item_id,
                    judgment_id,
                    annotator,
                    action,
                    label,
                    reverts_id,
                    note,
                    int(blind),
                    seconds_spent,
                    created_at or now_iso(),
                    audio_plays,
                    listened_seconds,
                ),
            )
            if action in DECISION_ACTIONS:
                self.conn.execute(
                    "DELETE FROM leases WHERE item_id = ? AND annotator = ?", (item_id, annotator)
                )
            return cursor.lastrowid

    def undo_last(self, annotator: str) -> Annotation | None:
        """Reverse the annotator's latest decision that is still in force, by appending an
        `undo` row that carries the label in force before it. Returns the reversed row."""
        with self.transaction():
            row = self.conn.execute(
                "SELECT * FROM annotations a WHERE a.annotator = ? "
                f"AND a.action IN (SELECT value FROM json_each(?)) AND {IN_FORCE} ORDER BY a.id DESC LIMIT 1",
                (annotator, DECIDES_JSON),
            ).fetchone()
            if row is None:
                return None
            undone = _annotation(row)
            prior = self.conn.execute(
                "SELECT label FROM annotations WHERE item_id = ? AND annotator = ? AND id < ? "
                "AND action IN (SELECT value FROM json_each(?)) ORDER BY id DESC LIMIT 1",
                (undone.item_id, annotator, undone.id, LABELLING_JSON),
            ).fetchone()
            if undone.action in LABEL_ACTIONS:
                restored = prior["label"] if prior else None
            else:
                restored = self.current_label(undone.item_id, annotator)
            self.annotate(
                undone.item_id, annotator, REVERT_ACTION, label=restored, reverts_id=undone.id,
                judgment_id=undone.judgment_id, blind=bool(undone.blind),
            )
            return undone

    def add_imported_labels(self, rows: Iterable[tuple]) -> int:
        """Labels made elsewhere: (uid, item_id, annotator, label, note). A uid already present
        is skipped, so importing the same file twice adds nothing. Returns rows added."""
        stamp = now_iso()
        with self.transaction():
            before = self.conn.total_changes
            self.conn.executemany(
                "INSERT OR IGNORE INTO annotations (uid, item_id, annotator, action, label, note, created_at) "
                "VALUES (?, ?, ?, 'label', ?, ?, ?)",
                [(*row, stamp) for row in rows],
            )
            return self.conn.total_changes - before

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

    def annotations(self) -> Iterator[dict]:
        """Every annotation row with its item's content hash and its judgment's uid (for merge)."""
        sql = (
            "SELECT a.*, i.content_hash, j.uid AS judgment_uid, r.uid AS reverts_uid FROM annotations a "
            "JOIN items i ON i.id = a.item_id LEFT JOIN judgments j ON j.id = a.judgment_id "
            "LEFT JOIN annotations r ON r.id = a.reverts_id ORDER BY a.id"
        )
        for row in self.conn.execute(sql):
            yield dict(row)

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

    def agreement_data(self, judge: str | None = None, parts: int = 2, system: str | None = None, *,
                       gold_from: str | None = None) -> AgreementData:
        """Everything the agreement report needs, aggregated in SQL: judge verdict x human label
        counts per annotator and against the majority label, human x human pair counts, and the
        per-item labels of items that several annotators labelled.

        Every figure is per item, so the work splits by item id range: a file database is read
        by `parts` connections in parallel (SQLite runs without the GIL) and the parts summed.
        `system` keeps only that system's items."""
        if self.path == ":memory:" or parts < 2:
            return _agreement_part(self.conn, judge, None, system, gold_from)
        low, high = self.conn.execute("SELECT min(id), max(id) FROM items").fetchone()
        if low is None:
            return _agreement_part(self.conn, judge, None, system, gold_from)
        step = (high - low) // parts + 1
        ranges = [(low + k * step, min(high, low + (k + 1) * step - 1)) for k in range(parts)]

        def run(bounds: tuple[int, int]) -> AgreementData:
            reader = sqlite3.connect(self.path, timeout=60)
            try:
                return _agreement_part(reader, judge, bounds, system, gold_from)
            finally:
                reader.close()

        with ThreadPoolExecutor(parts) as pool:
            return AgreementData.combine(list(pool.map(run, ranges)))

    def merge_from(self, other: Store) -> dict[str, int]:
        """Fold another calibrate database into this one: items by content hash, judgments and
        annotations by uid. Running it twice adds nothing the second time."""
        added = {"items": 0, "judgments": 0, "annotations": 0}
        with self.transaction():
            rows = other.conn.execute("SELECT * FROM items ORDER BY id").fetchall()
            new_items = [
                NewItem(r["task"], r["lang"], r["source_id"], json.loads(r["fields"]), r["reference"], r["system"], r["version"])
                for r in rows
            ]
            ids, added["items"] = self.add_items(new_items, with_ids=True) if new_items else ([], 0)
            item_map = {r["id"]: new_id for r, new_id in zip(rows, ids, strict=True)}
            columns = JUDGMENT_COLUMNS
            before = self.conn.total_changes
            for r in other.conn.execute("SELECT * FROM judgments ORDER BY id"):
                values = {c: r[c] for c in columns}
                values["item_id"] = item_map[r["item_id"]]
                self.conn.execute(
                    f"INSERT OR IGNORE INTO judgments ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
                    [values[c] for c in columns],
                )
            added["judgments"] = self.conn.total_changes - before
            judgment_ids = {r["uid"]: r["id"] for r in self.conn.execute("SELECT uid, id FROM judgments")}
            for item_id, clips in other.audio_by_item().items():
                self.set_item_audio(item_map[item_id], clips)
            for row in other.annotations():
                reverts = None
                if row["reverts_uid"]:
                    reverts = self.conn.execute("SELECT id FROM annotations WHERE uid = ?", (row["reverts_uid"],)).fetchone()[0]
                cursor = self.conn.execute(
                    "INSERT OR IGNORE INTO annotations (uid, item_id, judgment_id, annotator, action, label, reverts_id, "
                    "note, blind, seconds_spent, created_at, audio_plays, listened_seconds) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    (row["uid"], item_map[row["item_id"]], judgment_ids.get(row["judgment_uid"]), row["annotator"],
                     row["action"], row["label"], reverts, row["note"], row["blind"], row["seconds_spent"], row["created_at"],
                     row["audio_plays"], row["listened_seconds"]),
                )
                added["annotations"] += cursor.rowcount
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
        judge_clause, judge_params = (" AND judge_name = ?", [judge]) if judge else ("", [])
        items = self.conn.execute(
            f"SELECT id, task, lang, system, source_id, reference FROM items i WHERE {where} ORDER BY id", params
        ).fetchall()
        judgments = self.conn.execute(
            "SELECT j.item_id, j.judge_name, j.status, j.verdict, j.correct, j.raw_output FROM judgments j "
            f"JOIN items i ON i.id = j.item_id WHERE {where} AND j.id IN "
            f"(SELECT max(id) FROM judgments WHERE 1{judge_clause} GROUP BY item_id, judge_name) ORDER BY j.item_id",
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
            "SELECT item_id, raw_output FROM judgments WHERE id IN "
            "(SELECT max(id) FROM judgments WHERE judge_name = ? GROUP BY item_id)",
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
        WITH latest AS (SELECT item_id, status, verdict, max(id) FROM judgments WHERE 1{judge_clause} GROUP BY item_id, judge_name)
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
             WHERE l.item_id = i.id AND l.annotator != :me AND l.expires_at > :now) < :overlap
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
    ) -> int | None:
        """Lease the next item (in id order, after `after_id`, wrapping round) that this
        annotator has not decided, that fewer than `overlap` other annotators have labelled
        or hold. A lease expires, so a crashed annotator's items come back."""
        clauses = ["i.id > :after", "i.current = 1"]
        if task:
            clauses.append("i.task = :task")
        if lang:
            clauses.append("i.lang = :lang")
        if system is not None:
            clauses.append("i.system = :system")
        sql = f"SELECT i.id FROM items i WHERE {' AND '.join(clauses)} AND {self._ELIGIBLE} ORDER BY i.id LIMIT 1"
        with self.transaction():
            now = time.time()
            params = {"me": annotator, "now": now, "overlap": overlap, "task": task, "lang": lang, "system": system,
                      "decides": DECIDES_JSON, "labels": LABELS_JSON}
            row = self.conn.execute(sql, {**params, "after": after_id}).fetchone()
            if row is None and after_id:
                row = self.conn.execute(sql, {**params, "after": 0}).fetchone()
            if row is None:
                return None
            self._lease(row[0], annotator, now + lease_seconds)
            return row[0]

    def claim_first(
        self,
        annotator: str,
        candidates: Sequence[int],
        *,
        overlap: int = 1,
        lease_seconds: float = DEFAULT_LEASE_SECONDS,
        skipped_too: bool = False,
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
                params = {"me": annotator, "now": now, "overlap": overlap, "decides": decides, "labels": LABELS_JSON}
                params.update({f"c{k}": v for k, v in enumerate(chunk)})
                eligible = {
                    r[0]
                    for r in self.conn.execute(
                        f"SELECT i.id FROM items i WHERE i.id IN ({marks}) AND {self._ELIGIBLE}", params
                    )
                }
                for item_id in chunk:
                    if item_id in eligible:
                        self._lease(item_id, annotator, now + lease_seconds)
                        return item_id
            return None

    def _lease(self, item_id: int, annotator: str, expires_at: float) -> None:
        self.conn.execute(
            "INSERT INTO leases (item_id, annotator, expires_at) VALUES (?, ?, ?) "
            "ON CONFLICT (item_id, annotator) DO UPDATE SET expires_at = excluded.expires_at",
            (item_id, annotator, expires_at),
        )

    def release_all(self, annotator: str) -> None:
        with self.transaction():
            self.conn.execute("DELETE FROM leases WHERE annotator = ?", (annotator,))


def _agreement_part(
    c: sqlite3.Connection, judge: str | None, bounds: tuple[int, int] | None, system: str | None = None,
    gold_from: str | None = None,
) -> AgreementData:
    """agreement_data for the items whose id lies within `bounds` (all items if None), of
    `system` if given."""
    where, params = ("item_id BETWEEN ? AND ?", list(bounds)) if bounds else ("1", [])
    if system is not None:
        where += " AND item_id IN (SELECT id FROM items WHERE system = ?)"
        params = [*params, system]
    judge_filter, judge_params = (" AND judge_name = ?", [judge]) if judge else ("", [])
    for table in ("labels_now", "verdicts_now", "shared_items"):
        c.execute(f"DROP TABLE IF EXISTS temp.{table}")
    c.execute(
        "CREATE TEMP TABLE verdicts_now AS SELECT v.item_id, i.task, i.lang, v.judge_name, v.status, v.verdict "
        "FROM (SELECT item_id, judge_name, status, verdict, max(id) FROM judgments "
        f"WHERE {where}{judge_filter} GROUP BY item_id, judge_name) v JOIN items i ON i.id = v.item_id",
        params + judge_params,
    )
    c.execute(f"CREATE TEMP TABLE labels_now AS SELECT item_id, annotator, label FROM current_labels WHERE {where}", params)
    c.execute("CREATE INDEX temp.verdicts_now_item ON verdicts_now (item_id)")
    c.execute(
        "CREATE TEMP TABLE shared_items AS SELECT l.item_id, i.task, i.lang FROM labels_now l JOIN items i ON i.id = l.item_id "
        "GROUP BY l.item_id HAVING count(*) >= 2"
    )
    # The gold label of an item labelled by two or more people: the adjudicator's (`gold_from`)
    # where they labelled it, else the strict majority; tied items have none and are counted.
    gold = """
        WITH counted AS (SELECT l.item_id, l.label, count(*) AS votes
                         FROM labels_now l JOIN shared_items s ON s.item_id = l.item_id GROUP BY l.item_id, l.label),
        ranked AS (SELECT *, max(votes) OVER (PARTITION BY item_id) AS top FROM counted),
        tied AS (SELECT item_id FROM ranked WHERE votes = top GROUP BY item_id HAVING count(*) > 1),
        adjudicated AS (SELECT l.item_id, l.label FROM labels_now l JOIN shared_items s ON s.item_id = l.item_id
                        WHERE l.annotator = :gold_from),
        gold AS (SELECT s.item_id, s.task, s.lang, coalesce(a.label, r.label) AS label FROM shared_items s
                 LEFT JOIN adjudicated a ON a.item_id = s.item_id
                 LEFT JOIN (SELECT item_id, label FROM ranked WHERE votes = top GROUP BY item_id HAVING count(*) = 1) r
                   ON r.item_id = s.item_id
                 WHERE coalesce(a.label, r.label) IS NOT NULL)
    """
    try:
        rows = lambda sql, params=(): [tuple(r) for r in c.execute(sql, params)]  # noqa: E731
        return AgreementData(
            judge_vs_human=rows(
                "SELECT v.task, v.lang, v.judge_name, h.annotator, v.status, v.verdict, h.label, count(*) "
                "FROM labels_now h JOIN verdicts_now v ON v.item_id = h.item_id GROUP BY 1, 2, 3, 4, 5, 6, 7"
            ),
            judge_vs_gold=rows(
                f"{gold} SELECT g.task, g.lang, v.judge_name, v.status, v.verdict, g.label, count(*) "
                "FROM gold g JOIN verdicts_now v ON v.item_id = g.item_id GROUP BY 1, 2, 3, 4, 5, 6",
                {"gold_from": gold_from},
            ),
            ties=rows(
                f"{gold} SELECT s.task, s.lang, count(*) FROM shared_items s WHERE s.item_id IN (SELECT item_id FROM tied) "
                "AND s.item_id NOT IN (SELECT item_id FROM adjudicated) GROUP BY 1, 2",
                {"gold_from": gold_from},
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
