"""The reads behind the gold-label exports (`calibrate.formats.gold`): one statement over the
current items in id order whose rows SQLite writes as they are written out (a JSON line's
head, or the first cells of a CSV row, quoted), the items' labels and verdicts each read in one
ordered pass over their table beside it (a look-up per item costs twice as much), and the
sparse parts (notes, flags, listening, the irregular verdicts' trust marks) read beside them,
so an export of a million items holds no Python object per item.

An item's labels and verdicts come as short JSON objects, which items share a few of: the
caller works out once per distinct object what follows from it (the gold label by
`calibrate.gold`'s rule; the verdicts' JSON or cells, and their trust marks). Left to the caller
too, as they are rare: the sparse parts of the items that have some (`Sparse`; the caller
writes the empty ones, `NO_SPARSE_JSON`), and the trust marks of irregular verdicts (repeats,
or an error in force), which SQLite gives by the rule of regular ones, so that it looks each
verdict's mark up in one table, not three."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import NamedTuple

from calibrate.model import Item
from calibrate.store.connection import plain_rows
from calibrate.store.sql import IN_FORCE, item_from_row

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
    who flagged the item (sorted), for an item with usable audio how long each labelling
    annotator listened (annotator -> seconds, 0 for one who never played it; None without audio),
    and in a read with trust marks the marks of its irregular verdicts (repeats, or an error in
    force), which the row gives as if they were regular."""

    notes: list[dict]
    flagged_by: list[str]
    listened: dict[str, float] | None
    marks: list[tuple[str, bool]]  # the item's irregular verdicts' trust marks: (judge, accepted)


CSV_SPECIAL = re.compile('[,"\r\n]')  # what makes `csv.writer` quote a cell (QUOTE_MINIMAL)


def _csv_quoted(column: str, cell: str) -> str:
    """SQL for `cell` (text, not NULL: what a CSV cell of `column` holds) quoted as `csv.writer`
    quotes it by default (QUOTE_MINIMAL): within double quotes, its own doubled, where it holds a
    comma, a double quote, a carriage return or a newline, looked for in the column itself (the
    cell is the column, or "" for NULL, with at most an apostrophe put before it)."""
    return (f"CASE WHEN instr({column}, ',') OR instr({column}, '\"') OR instr({column}, char(13)) "
            f"OR instr({column}, char(10)) THEN '\"' || replace({cell}, '\"', '\"\"') || '\"' ELSE {cell} END")


class ExportRowsMixin:
    """Gold-label export reads (part of Store)."""

    def export_lines(self, system: str | None = None, *,
                     trust: bool = False) -> Iterator[tuple[int, tuple, Sparse | None]]:
        """(item id, (item id, head, labels, verdicts), sparse parts or None) per current item (of
        `system`, if given) in id order, the parts UTF-8 bytes: the head the JSON object of the
        item id, task, lang, system, source_id, reference and fields (minified) that begins its
        JSON line (the caller writes what follows in place of its closing brace); the labels the
        JSON object of its labels in force (annotator -> label, "{}" for none); the verdicts a
        JSON object judge -> [status, verdict, correct (of its judgment in force); with `trust`
        (after `set_trust_marks`) whether it is accepted were it regular (1 or 0; the irregular
        ones' marks are in the sparse parts, `Sparse.marks`)], "{}" when unjudged. Items share a
        few sets of labels and of verdicts, whose parts the caller works out once per set."""
        where, params = self._item_filter(None, None, None, None, system)
        # each part as its UTF-8 bytes (a BLOB): not decoded here to be encoded again as it is written out; the
        # labels and the verdicts each read in one pass over their table in item order (a look-up per item
        # costs twice as much), those of items not exported passed over as the parts are put together
        heads = plain_rows(self.conn, f"SELECT i.id, CAST({_HEAD} AS BLOB) FROM items i WHERE {where} ORDER BY i.id",
                           params)
        # one pass over the verdicts and their judgments (and items, for the marks' cells) for both the verdicts
        # and the marks; CROSS JOIN keeps verdicts_in_force the outer loop, in item order
        mark, joined = (f", CASE WHEN {self.ACCEPTED_IF_REGULAR} THEN 1 ELSE 0 END",
                       " CROSS JOIN items i ON i.id = v.item_id") if trust else ("", "")
        verdicts = plain_rows(self.conn, f"""
            SELECT v.item_id, CAST(json_group_object(v.judge_name, json_array(v.status, v.verdict, j.correct{mark}))
                   AS BLOB)
            FROM verdicts_in_force v CROSS JOIN judgments j ON j.id = v.judgment_id{joined}
            GROUP BY v.item_id ORDER BY v.item_id""")
        return self._with_sparse(_side_by_side(heads, self._labels_by_item(), b"{}", verdicts, b"{}"), trust)

    def export_cells(self, safe: Callable[[str], str], system: str | None = None, *,
                     trust: bool = False) -> Iterator[tuple[int, tuple, Sparse | None]]:
        """(item id, (item id, head, labels, verdicts), sparse parts or None) per current item (of
        `system`, if given) in id order, for a CSV export, the parts UTF-8 bytes: the head is the
        CSV text of the item id, task, lang, system, source_id and reference ("" for none), each
        cell quoted as `csv.writer` quotes it (QUOTE_MINIMAL) and text cells passed through `safe`
        first (a spreadsheet's formula guard: called only for text starting with = + - @, a tab
        or a carriage return); the labels the JSON object of its labels in force (annotator ->
        label; "{}" when unlabelled); the verdicts a JSON object judge -> [the verdict, or the
        status where there is none; with `trust` (after `set_trust_marks`) whether it is accepted
        were it regular (1 or 0; the irregular ones' marks are in the sparse parts,
        `Sparse.marks`)], "{}" when unjudged. Items share a few sets of labels and of verdicts,
        whose cells the caller works out once per set."""
        where, params = self._item_filter(None, None, None, None, system)
        self.conn.create_function("cell_safe", 1, safe, deterministic=True)
        # a cell's guard and quotes are looked for per item, but for the columns of the items' cells (a few
        # values, looked at here) only where one of their values needs them
        values = self.conn.execute("SELECT DISTINCT task, lang, system FROM items i WHERE i.current = 1").fetchall()
        plain = {name for k, name in enumerate(("task", "lang", "system"))
                 if all(safe(row[k] or "") == (row[k] or "") and not CSV_SPECIAL.search(row[k] or "") for row in values)}
        head = " || ',' || ".join(["i.id", *(f"coalesce(i.{name}, '')" if name in plain else
                                             _csv_quoted(f"i.{name}", f"coalesce({_safe(f'i.{name}')}, '')")
                                             for name in ("task", "lang", "system", "source_id", "reference"))])
        heads = plain_rows(self.conn, f"SELECT i.id, CAST({head} AS BLOB) FROM items i WHERE {where} ORDER BY i.id",
                           params)
        mark = f", CASE WHEN {self.ACCEPTED_IF_REGULAR_BY_CELL} THEN 1 ELSE 0 END" if trust else ""
        joined = " CROSS JOIN items i ON i.id = v.item_id" if trust else ""  # the verdict's cell, for its threshold
        verdicts = plain_rows(self.conn, f"""
            SELECT v.item_id, CAST(json_group_object(v.judge_name, json_array(CASE WHEN v.verdict IS NULL
                   OR v.verdict = '' THEN v.status ELSE v.verdict END{mark})) AS BLOB)
            FROM verdicts_in_force v{joined} GROUP BY v.item_id ORDER BY v.item_id""")
        return self._with_sparse(_side_by_side(heads, self._labels_by_item(), b"{}", verdicts, b"{}"), trust)

    def _labels_by_item(self) -> Iterator[tuple[int, bytes]]:
        """(item id, the JSON object of its labels in force as UTF-8 bytes: annotator -> label) per
        labelled item, in item id order: one pass over the labels (a look-up per item costs twice
        as much)."""
        return plain_rows(self.conn, "SELECT item_id, CAST(json_group_object(annotator, label) AS BLOB) "
                                     "FROM labels_in_force GROUP BY item_id ORDER BY item_id")

    def _with_sparse(self, rows, trust: bool) -> Iterator[tuple[int, object, Sparse | None]]:
        """(item id, its row, its sparse parts or None) for `rows` in item id order: the
        sparse parts (with `trust`, the irregular verdicts' marks among them) read in streams of
        their own in item order beside them, looked at only when their next row is this item's."""
        c = self.conn
        notes = _ByItem(plain_rows(c, "SELECT item_id, annotator, note, action FROM annotations WHERE note IS NOT NULL "
                                      "ORDER BY item_id, id"))
        flags = _ByItem(plain_rows(c, f"SELECT DISTINCT a.item_id, a.annotator FROM annotations a "
                                      f"WHERE a.action = 'flag' AND {IN_FORCE} ORDER BY 1, 2"))
        listening = _ByItem(plain_rows(
            c, "SELECT item_id, annotator, max(coalesce(listened_seconds, 0)) FROM annotations "
               "WHERE audio_plays IS NOT NULL GROUP BY item_id, annotator ORDER BY item_id, annotator"))
        audio = _ByItem(plain_rows(c, "SELECT DISTINCT item_id FROM item_audio WHERE problem IS NULL ORDER BY item_id"))
        irregular = _ByItem(self.irregular_marks() if trust else ())
        sparse = (notes, flags, audio, irregular)
        upcoming = min(part.next_id for part in sparse)  # the next item with a sparse part
        for row in rows:
            item_id = row[0]
            if item_id < upcoming:
                yield item_id, row, None
                continue
            listened = None
            if audio.take(item_id):
                seconds = dict(listening.take(item_id))
                listened = {a: seconds.get(a, 0.0) for (a,) in self.conn.execute(
                    "SELECT annotator FROM labels_in_force WHERE item_id = ? ORDER BY annotator", (item_id,))}
            found = Sparse([{"annotator": a, "note": note, "action": action} for a, note, action in notes.take(item_id)],
                           sorted({a for (a,) in flags.take(item_id)}), listened,
                           [(judge, bool(ok)) for judge, ok in irregular.take(item_id)])
            upcoming = min(part.next_id for part in sparse)
            yield item_id, row, found if found.notes or found.flagged_by or listened is not None or found.marks else None

    def c3_export_items(self, task: str, lang: str, system: str,
                        judge: str | None) -> Iterator[tuple[Item, bool, str | None]]:
        """(item, whether `judge` has a verdict in force on it, the raw output of that verdict's
        judgment) per current item of one task, language and system, in id order: what `export
        c3` writes of a cell, in one pass (no judge: never judged)."""
        where, params = self._item_filter(task, lang, None, None, system)
        for row in self.conn.execute(
                "SELECT i.*, v.item_id IS NOT NULL AS judged, j.raw_output FROM items i "
                "LEFT JOIN verdicts_in_force v ON v.item_id = i.id AND v.judge_name = ? "
                f"LEFT JOIN judgments j ON j.id = v.judgment_id WHERE {where} ORDER BY i.id", [judge, *params]):
            yield item_from_row(row), bool(row["judged"]), row["raw_output"]

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


def _side_by_side(heads, labels, no_labels: bytes, tails, no_tail: bytes) -> Iterator[tuple]:
    """(item id, head, labels, tail) per row (item id, head) of `heads`, with the labels and the
    tail of rows (item id, part) of `labels` and `tails`, both in item id order (`no_labels`,
    `no_tail` for an item without a row; rows of other items are passed over)."""
    end = (float("inf"), None)
    labels, tails = iter(labels), iter(tails)
    (label_id, label), (tail_id, tail) = next(labels, end), next(tails, end)
    for item_id, head in heads:
        while label_id < item_id:
            label_id, label = next(labels, end)
        while tail_id < item_id:
            tail_id, tail = next(tails, end)
        yield (item_id, head, label if label_id == item_id else no_labels, tail if tail_id == item_id else no_tail)


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
