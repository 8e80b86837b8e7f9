"""The reads behind the gold-label exports (`calibrate.formats.gold`): the lines (or rows) of a
range of item ids put together in one statement (`_export_range`), its items read in order
with each one's labels and verdicts looked up beside it, so an export of a million items holds
no Python object per item. Ranges are put together in order on the connection of the export, or
ahead of it on helper connections reading the same snapshot on threads of their own (SQLite
works without the interpreter's lock, and each range gives one row).

An item's labels and verdicts come as short JSON objects, which items share a few of: the
caller works out once per distinct object on each connection what follows from it (the gold
label by `calibrate.gold`'s rule; the verdicts' JSON or cells, and their trust marks), kept in
temp tables the statement looks each item's up in. Left to the caller too, as they are rare:
the sparse parts of the items that have some (`Sparse`: notes, flags, listening)."""

from __future__ import annotations

import queue
import re
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import NamedTuple

from calibrate.model import Item
from calibrate.store.connection import FAULTS, DatabaseFault, plain_rows
from calibrate.store.sql import IN_FORCE, ITEM_SELECT, item_from_row

# what a JSON line holds for an item without notes, flags or listening (the caller fills in those it has)
NO_SPARSE_JSON = ',"notes":[],"flagged_by":[],"listened":null'

# the head of a JSON line, as SQL: one JSON object of the item id, task, lang, system, source id, reference
# and fields (minified), built by SQLite in one buffer (half the work of concatenating each part's JSON text);
# the caller writes it without its closing brace, and the labels after it
_HEAD = ("json_object('item_id', i.id, 'task', i.task, 'lang', i.lang, 'system', i.system, "
         "'source_id', i.source_id, 'reference', i.reference, 'fields', json(i.fields))")


def _safe(expression: str) -> str:
    """SQL for a CSV cell of `expression` (a column, evaluated once): text a spreadsheet would run
    as a formula passed through `cell_safe` (registered on the connection), anything else as it
    is (NULL stays NULL)."""
    return (f"CASE WHEN substr({expression}, 1, 1) IN ('=', '+', '-', '@', char(9), char(13)) "
            f"THEN cell_safe({expression}) ELSE {expression} END")


class Sparse(NamedTuple):
    """What few items have, read beside the rows: notes (annotator, note, action; oldest first),
    who flagged the item (sorted), and for an item with usable audio how long each labelling
    annotator listened (annotator -> seconds, 0 for one who never played it; None without audio)."""

    notes: list[dict]
    flagged_by: list[str]
    listened: dict[str, float] | None


CSV_SPECIAL = re.compile('[,"\r\n]')  # what makes `csv.writer` quote a cell (QUOTE_MINIMAL)


def _csv_quoted(column: str, cell: str) -> str:
    """SQL for `cell` (text, not NULL: what a CSV cell of `column` holds) quoted as `csv.writer`
    quotes it by default (QUOTE_MINIMAL): within double quotes, its own doubled, where it holds a
    comma, a double quote, a carriage return or a newline, looked for in the column itself (the
    cell is the column, or "" for NULL, with at most an apostrophe put before it)."""
    return (f"CASE WHEN instr({column}, ',') OR instr({column}, '\"') OR instr({column}, char(13)) "
            f"OR instr({column}, char(10)) THEN '\"' || replace({cell}, '\"', '\"\"') || '\"' ELSE {cell} END")


class LineParts(NamedTuple):
    """What the caller works out for the lines (or rows) of an export, which the store's SQL
    puts together: text, each called once per distinct value on each connection (items share a
    few sets of labels and of verdicts)."""

    after_labels: Callable[[str], str]  # the JSON object of an item's labels -> what follows them
    verdicts: Callable[[str], tuple[str, str]]  # the JSON object of its verdicts -> (their part, their trust marks)
    sparse: Callable[[Sparse], str]  # the sparse part of an item that has `Sparse` parts
    finished: Callable[[bytes], bytes]  # the lines of a range as they are written out (on the thread that made them)


RANGE = 8192
"""Item ids an export's statement puts together at once (a few MB of lines)."""

# the labels in force of item `i`, as a JSON object annotator -> label ('{}' without any)
_LABELS = "SELECT json_group_object(annotator, label) FROM labels_in_force WHERE item_id = i.id"
# an item's verdicts in force as a JSON object judge -> an array, read from the `_FROM` beside it where `items i` is
# the item (whose cell `{mark}`, whether the verdict is accepted, reads)
_JSON_VERDICTS = "json_group_object(v.judge_name, json_array(v.status, v.verdict, j.correct{mark}))"
_JSON_VERDICTS_FROM = "verdicts_in_force v CROSS JOIN judgments j ON j.id = v.judgment_id"
_CSV_VERDICTS = ("json_group_object(v.judge_name, json_array(CASE WHEN v.verdict IS NULL OR v.verdict = '' "
                 "THEN v.status ELSE v.verdict END{mark}))")
_CSV_VERDICTS_FROM = "verdicts_in_force v"


@dataclass
class _Export:
    """One export's statements and what the caller works out, as each connection runs them."""

    line: str  # SQL of an item's line from its row `r` (head, labels, verdicts) and its parts `g`, `t`, `x`
    head: str  # SQL of its head, from `items i`
    verdicts: str  # `_JSON_VERDICTS` or `_CSV_VERDICTS`, its mark filled in
    verdicts_from: str  # what it reads (`_JSON_VERDICTS_FROM` or `_CSV_VERDICTS_FROM`)
    separator: str  # between lines
    no_sparse: str  # the sparse part of an item without one
    where: str
    params: list
    system: str | None  # the system whose items are exported (None: every system's)
    parts: LineParts
    marks: object | None  # a reliability_cells.TrustMarks, for `set_trust_marks`
    safe: Callable[[str], str] | None  # `cell_safe` of the CSV head


class ExportRowsMixin:
    """Gold-label export reads (part of Store)."""

    def export_json_lines(self, parts: LineParts, system: str | None = None, *, marks=None,
                          helpers: Sequence[ExportRowsMixin] = ()) -> Iterator[tuple[int, bytes]]:
        """(how many, the JSON lines of that many items as UTF-8 bytes, each ending in a newline)
        for the current items (of `system`, if given) in id order, some thousands at a time. Each
        line is the JSON object of the item id, task, lang, system, source_id, reference, fields
        (minified), labels (annotator -> label), then `parts.after_labels` of its labels, the
        verdicts' part and its sparse part (`NO_SPARSE_JSON` without one), and its trust marks;
        the verdicts a JSON object judge -> [status, verdict, correct of its judgment in force,
        and with `marks` whether it is accepted (1 or 0)]. `helpers`: stores
        reading the same snapshot of the same file (`reading`), which put the lines together on
        threads of their own, this one's thread writing them out meanwhile."""
        where, params = self._item_filter(None, None, None, None, system)
        mark = f", CASE WHEN {self.ACCEPTED_JOINED} THEN 1 ELSE 0 END" if marks is not None else ""
        return self._export_ranges(_Export(
            line="""substr(r.head, 1, length(r.head) - 1) || ',"labels":' || r.labels || g.part || t.part
                    || coalesce(x.sparse, ?) || t.trust || '}'""",
            head=_HEAD, verdicts=_JSON_VERDICTS.replace("{mark}", mark), verdicts_from=_JSON_VERDICTS_FROM,
            separator="\n",
            no_sparse=NO_SPARSE_JSON, where=where, params=params, system=system, parts=parts, marks=marks, safe=None),
            helpers)

    def export_csv_rows(self, parts: LineParts, safe: Callable[[str], str], no_sparse: str, system: str | None = None,
                        *, marks=None, helpers: Sequence[ExportRowsMixin] = ()) -> Iterator[tuple[int, bytes]]:
        """(how many, the CSV rows of that many items as UTF-8 bytes) for the current items (of
        `system`, if given) in id order, some thousands at a time. Each row is the CSV text of
        the item id, task, lang, system, source_id and reference ("" for none), each cell quoted
        as `csv.writer` quotes it (QUOTE_MINIMAL) and text cells passed through `safe` first (a
        spreadsheet's formula guard: called only for text starting with = + - @, a tab or a
        carriage return), then `parts.after_labels` of its labels (a JSON object annotator ->
        label), the verdicts' cells and their trust marks (`parts.verdicts` of a JSON object
        judge -> [the verdict, or the status where there is none; with `marks` whether it is
        accepted]), and its sparse part (`no_sparse` without one), which ends
        the row. `helpers` as for `export_json_lines`."""
        where, params = self._item_filter(None, None, None, None, system)
        # a cell's guard and quotes are looked for per item, but for the columns of the items' cells (a few
        # values, looked at here) only where one of their values needs them
        values = self.conn.execute("SELECT DISTINCT task, lang, system FROM items i WHERE i.current = 1").fetchall()
        plain = {name for k, name in enumerate(("task", "lang", "system"))
                 if all(safe(row[k] or "") == (row[k] or "") and not CSV_SPECIAL.search(row[k] or "") for row in values)}
        head = " || ',' || ".join(["i.id", *(f"coalesce(i.{name}, '')" if name in plain else
                                             _csv_quoted(f"i.{name}", f"coalesce({_safe(f'i.{name}')}, '')")
                                             for name in ("task", "lang", "system", "source_id", "reference"))])
        mark = f", CASE WHEN {self.ACCEPTED} THEN 1 ELSE 0 END" if marks is not None else ""
        return self._export_ranges(_Export(
            line="r.head || g.part || t.part || t.trust || coalesce(x.sparse, ?)",
            head=head, verdicts=_CSV_VERDICTS.replace("{mark}", mark), verdicts_from=_CSV_VERDICTS_FROM,
            separator="",
            no_sparse=no_sparse, where=where, params=params, system=system, parts=parts, marks=marks, safe=safe),
            helpers)

    def _export_ranges(self, export: _Export, helpers: Sequence[ExportRowsMixin]) -> Iterator[tuple[int, bytes]]:
        """(how many, their lines) per range of RANGE item ids, in order: put together by `helpers`
        on threads of their own, a few ranges ahead of the one written out (by this connection
        where there are none). The items put together are checked against the number this
        connection counts (read from the file's indexes): a damaged page met in a range can end
        its scan early without an error, leaving items out of the export silently. The count is
        `count_items`, read along the items' cell index: along the table it reads every item's
        row, seconds at a million items, while a helper waits for its next range."""
        # each bound by a look-up of its own: SQLite reads min() and max() together off every row
        low, high = self.conn.execute("SELECT (SELECT min(id) FROM items), (SELECT max(id) FROM items)").fetchone()
        ranges = [] if low is None else [(start, start + RANGE - 1) for start in range(low, high + 1, RANGE)]
        counted = []

        def count() -> None:
            counted.append(self.count_items(system=export.system))

        read = 0
        for found in self._put_together(export, helpers, ranges, count):
            read += found[0]
            yield found
        if read != counted[0]:
            raise DatabaseFault(f"{self.path}: {FAULTS[11]} (the export read {read:,} of the {counted[0]:,} items "
                                "it counts)", 11)

    def _put_together(self, export: _Export, helpers: Sequence[ExportRowsMixin], ranges: list[tuple[int, int]],
                      meanwhile: Callable[[], None]) -> Iterator[tuple[int, bytes]]:
        """`_export_range` of each of `ranges` that has items, in order, on `helpers` (`meanwhile`
        called once they have begun) or on this connection (`meanwhile` called first)."""
        if not helpers:
            meanwhile()
            for start, end in ranges:
                if found := self._export_range(export, start, end):
                    yield found
            return
        free: queue.SimpleQueue = queue.SimpleQueue()
        for helper in helpers:
            free.put(helper)

        def put_together(start: int, end: int) -> tuple[int, bytes] | None:
            helper = free.get()
            try:
                return helper._export_range(export, start, end)
            finally:
                free.put(helper)

        with ThreadPoolExecutor(max_workers=len(helpers)) as pool:
            ahead: deque[Future] = deque(pool.submit(put_together, start, end) for start, end in ranges[:1])
            meanwhile()
            try:
                for start, end in ranges[1:]:
                    ahead.append(pool.submit(put_together, start, end))
                    if len(ahead) > 2 * len(helpers) and (found := ahead.popleft().result()):
                        yield found
                while ahead:
                    if found := ahead.popleft().result():
                        yield found
            finally:  # written out, or given up (an error, or the caller stopped): no range is begun after
                for future in ahead:
                    future.cancel()

    def _export_range(self, export: _Export, start: int, end: int) -> tuple[int, bytes] | None:
        """(how many, their lines) of the exported items with ids from `start` to `end`, None
        without any: their sparse parts put in temp.export_sparse, the parts of sets of labels and
        of verdicts not met before on this connection worked out and kept (temp.export_labels,
        temp.export_verdicts), then the lines put together in one statement."""
        c = self.conn
        if getattr(self, "_export", None) is not export:
            self._begin_export(export)
        c.execute("DELETE FROM temp.export_sparse")
        sparse = self._sparse_in(start, end, export)
        c.executemany("INSERT INTO temp.export_sparse VALUES (?, ?)", sparse)
        # the exported items of the range, in id order: (id, head, labels, verdicts), the labels and verdicts as
        # the JSON objects that the parts are looked up by
        rows = f"""
            SELECT i.id, {export.head} AS head, ({_LABELS}) AS labels,
                   (SELECT {export.verdicts} FROM {export.verdicts_from} WHERE v.item_id = i.id) AS verdicts
            FROM items i NOT INDEXED
            WHERE {export.where} AND i.id BETWEEN ? AND ? ORDER BY i.id"""
        rows_params = [*export.params, start, end]
        statement = f"""
            SELECT count(*), sum(g.part IS NULL OR t.part IS NULL), CAST(group_concat({export.line}, ?) AS BLOB)
            FROM ({rows}) r
            LEFT JOIN temp.export_labels g ON g.labels = r.labels LEFT JOIN temp.export_verdicts t ON t.verdicts = r.verdicts
            LEFT JOIN temp.export_sparse x ON x.item_id = r.id"""
        params = [export.no_sparse, export.separator, *rows_params]
        n, unmet, lines = c.execute(statement, params).fetchone()
        if unmet:  # sets of labels or of verdicts this connection has not met: worked out, and the lines again
            for table, column, work in (("export_labels", "labels", lambda text: (export.parts.after_labels(text),)),
                                        ("export_verdicts", "verdicts", export.parts.verdicts)):
                new = [(text, *work(text)) for (text,) in c.execute(
                    f"SELECT DISTINCT r.{column} FROM ({rows}) r WHERE r.{column} NOT IN (SELECT {column} FROM temp.{table})",
                    rows_params).fetchall()]
                if new:
                    c.executemany(f"INSERT INTO temp.{table} VALUES ({', '.join('?' * len(new[0]))})", new)
            n, unmet, lines = c.execute(statement, params).fetchone()
        return (n, export.parts.finished(lines + export.separator.encode())) if n else None

    def _begin_export(self, export: _Export) -> None:
        """This connection's temp tables for `export`, and its trust marks and CSV guard."""
        c = self.conn
        for table, columns in (("export_labels", "labels TEXT PRIMARY KEY, part TEXT"),
                               ("export_verdicts", "verdicts TEXT PRIMARY KEY, part TEXT, trust TEXT"),
                               ("export_sparse", "item_id INTEGER PRIMARY KEY, sparse TEXT")):
            c.execute(f"DROP TABLE IF EXISTS temp.{table}")
            c.execute(f"CREATE TEMP TABLE {table} ({columns})")
        # an item without labels, or without verdicts
        c.execute("INSERT INTO temp.export_labels VALUES ('{}', ?)", (export.parts.after_labels("{}"),))
        c.execute("INSERT INTO temp.export_verdicts VALUES ('{}', ?, ?)", export.parts.verdicts("{}"))
        if export.marks is not None:
            self.set_trust_marks(export.marks)
        if export.safe is not None:
            c.create_function("cell_safe", 1, export.safe, deterministic=True)
        self._export = export

    def _sparse_in(self, start: int, end: int, export: _Export) -> list[tuple[int, str]]:
        """(item id, sparse part) of each item with ids from `start` to `end` that has notes, flags
        or listening (`LineParts.sparse`)."""
        c, span = self.conn, (start, end)
        notes = _ByItem(plain_rows(c, "SELECT item_id, annotator, note, action FROM annotations WHERE note IS NOT NULL "
                                      "AND item_id BETWEEN ? AND ? ORDER BY item_id, id", span))
        flags = _ByItem(plain_rows(c, f"SELECT DISTINCT a.item_id, a.annotator FROM annotations a "
                                      f"WHERE a.action = 'flag' AND {IN_FORCE} AND a.item_id BETWEEN ? AND ? ORDER BY 1, 2",
                                   span))
        listening = _ByItem(plain_rows(
            c, "SELECT item_id, annotator, max(coalesce(listened_seconds, 0)) FROM annotations "
               "WHERE audio_plays IS NOT NULL AND item_id BETWEEN ? AND ? GROUP BY item_id, annotator "
               "ORDER BY item_id, annotator", span))
        audio = _ByItem(plain_rows(c, "SELECT DISTINCT item_id FROM item_audio WHERE problem IS NULL "
                                      "AND item_id BETWEEN ? AND ? ORDER BY item_id", span))
        parts = (notes, flags, audio)
        found: list[tuple[int, str]] = []
        while (item_id := min(part.next_id for part in parts)) != float("inf"):
            listened = None
            if audio.take(item_id):
                seconds = dict(listening.take(item_id))
                listened = {a: seconds.get(a, 0.0) for (a,) in c.execute(
                    "SELECT annotator FROM labels_in_force WHERE item_id = ? ORDER BY annotator", (item_id,))}
            found.append((item_id, export.parts.sparse(Sparse(
                [{"annotator": a, "note": note, "action": action} for a, note, action in notes.take(item_id)],
                sorted({a for (a,) in flags.take(item_id)}), listened))))
        return found

    def c3_export_items(self, task: str, lang: str, system: str,
                        judge: str | None) -> Iterator[tuple[Item, bool, str | None]]:
        """(item, whether `judge` has a verdict in force on it, the raw output of that verdict's
        judgment) per current item of one task, language and system, in id order: what `export
        c3` writes of a cell, in one pass (no judge: never judged)."""
        where, params = self._item_filter(task, lang, None, None, system)
        for row in plain_rows(
                self.conn, f"SELECT {ITEM_SELECT}, v.item_id IS NOT NULL, j.raw_output FROM items i "
                "LEFT JOIN verdicts_in_force v ON v.item_id = i.id AND v.judge_name = ? "
                f"LEFT JOIN judgments j ON j.id = v.judgment_id WHERE {where} ORDER BY i.id", [judge, *params]):
            yield item_from_row(row), bool(row[-2]), row[-1]

    def c3_file_has_items(self, task: str, lang: str, system: str, prefix: str, judge: str | None = None) -> bool:
        """Whether a current item of one task, language and system has the source id
        `prefix`/<index> (and, with `judge`, a verdict in force of that judge): whether `export
        c3` writes the result file of that C3 phenomenon."""
        where, params = self._item_filter(task, lang, None, None, system)
        return bool(self.conn.execute(
            f"SELECT EXISTS (SELECT 1 FROM items i WHERE {where} AND substr(i.source_id, 1, ?) = ? "
            "AND instr(substr(i.source_id, ?), '/') = 0 AND (? IS NULL OR EXISTS (SELECT 1 FROM verdicts_in_force v "
            "WHERE v.item_id = i.id AND v.judge_name = ?)))",
            [*params, len(prefix) + 1, prefix + "/", len(prefix) + 2, judge, judge]).fetchone()[0])

    def export_columns(self, system: str | None = None) -> tuple[list[str], list[str], bool]:
        """What the columns of a CSV export of the current items (of `system`, if given) are made
        of: the annotators with a label in force on one of them, the judges with a verdict in
        force on one (both sorted), and whether one has
        usable audio. Found by seeks and counts, without reading every item."""
        where, params = self._item_filter(None, None, None, None, system)
        annotators = [a for a in self._seek_values(
            "SELECT annotator FROM labels_in_force WHERE annotator {op} ? ORDER BY annotator LIMIT 1")
            if self.conn.execute(f"SELECT 1 FROM labels_in_force l JOIN items i ON i.id = l.item_id "
                                 f"WHERE l.annotator = ? AND {where} LIMIT 1", [a, *params]).fetchone()]
        judges = self.judge_names(system=system)
        # CROSS JOIN keeps item_audio the outer loop: a few rows, where the items are a million
        with_audio = bool(self.conn.execute(
            f"SELECT EXISTS (SELECT 1 FROM item_audio a CROSS JOIN items i ON i.id = a.item_id WHERE a.problem IS NULL "
            f"AND {where})", params).fetchone()[0])
        return annotators, judges, with_audio


class _ByItem:
    """Rows ordered by their first column (an item id), taken item by item in increasing order."""

    def __init__(self, rows):
        self._rows = iter(rows)
        self._next = next(self._rows, None)
        self.next_id = self._next[0] if self._next is not None else float("inf")  # the item id of the next row

    def take(self, item_id: int) -> list[tuple]:
        """The rest of the rows of `item_id` (those of smaller ids are passed over)."""
        found = []
        while self.next_id <= item_id:
            if self.next_id == item_id:
                found.append(self._next[1:])
            self._next = next(self._rows, None)
            self.next_id = self._next[0] if self._next is not None else float("inf")
        return found
