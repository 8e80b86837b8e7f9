"""What the store's modules share: the SQL conditions every read repeats (an item's visibility,
an annotation in force), the judgment columns, and the conversion of rows to record types.

Each condition is written once here and pasted into statements by the modules that need it;
values never are (they are bound as parameters)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence

from calibrate.model import (
    DECISION_ACTIONS,
    FAILED,
    LABEL_ACTIONS,
    Annotation,
    Item,
    Judgment,
    dump_json,
)

# An item `i` is visible unless the import run that is writing it has not finished.
VISIBLE = "(i.import_run IS NULL OR i.import_run NOT IN (SELECT id FROM import_runs WHERE finished_at IS NULL))"
# The same condition read from the indexes of unfinished runs and of their items, not from the
# item's row: a read that walks an index of the items then loads no row it does not need.
VISIBLE_BY_ID = ("i.id NOT IN (SELECT w.id FROM items w WHERE w.import_run IN "
                 "(SELECT id FROM import_runs WHERE finished_at IS NULL))")
# An annotation row `a` is in force until an undo row reverts it.
IN_FORCE = "NOT EXISTS (SELECT 1 FROM annotations u WHERE u.reverts_id = a.id)"
# A verdict in force `v` makes its item judged: calibrate.model.judged in SQL (a failed call is no verdict).
JUDGED = f"v.status != '{FAILED}'"
# Row `a` gives a label (its action one of the JSON array bound to the next `?`).
LABELLED = "a.action IN (SELECT value FROM json_each(?)) AND a.label IS NOT NULL"
# The action sets of calibrate.model reach SQL as parameters (JSON arrays read by json_each),
# never pasted into the statement text.
DECIDES_JSON = dump_json(DECISION_ACTIONS)
LABELS_JSON = dump_json(LABEL_ACTIONS)



def gold_of(labels: str) -> str:
    """A SELECT of (item_id, label): the gold label (`calibrate.gold`) of each item in the table
    `labels` (item_id, annotator, label): the adjudicator's label (bound to the one `?`) where
    they labelled the item, else for score labels (JSON objects of numbers) from several people
    the mean of each score, its tenths rounded half up in integers (`calibrate.gold.mean_scores`,
    the same text), else the strict majority (an item's one label), NULL on a tie."""
    return f"""
    WITH counted AS (SELECT item_id, label, count(*) AS votes FROM {labels} GROUP BY item_id, label),
    ranked AS (SELECT *, max(votes) OVER (PARTITION BY item_id) AS top FROM counted),
    majority AS (SELECT item_id, CASE WHEN count(*) = 1 THEN max(label) END AS label FROM ranked
                 WHERE votes = top GROUP BY item_id),
    scored AS (SELECT item_id FROM {labels} GROUP BY item_id
               HAVING count(*) > 1 AND sum(CASE WHEN json_valid(label) THEN json_type(label) = 'object' END) = count(*)),
    score_sums AS (SELECT l.item_id, j.key, sum(CAST(round(j.value * 10) AS INTEGER)) AS tenths, count(*) AS n
                   FROM {labels} l JOIN scored USING (item_id), json_each(CASE WHEN json_valid(l.label) THEN l.label ELSE '{{}}' END) j
                   GROUP BY l.item_id, j.key ORDER BY l.item_id, j.key),
    means AS (SELECT item_id, '{{' || group_concat('"' || key || '": ' || (((2 * tenths + n) / (2 * n)) / 10.0), ', ')
                                || '}}' AS label FROM score_sums GROUP BY item_id)
    SELECT m.item_id, coalesce(a.label, s.label, m.label) AS label FROM majority m
    LEFT JOIN means s ON s.item_id = m.item_id
    LEFT JOIN {labels} a ON a.item_id = m.item_id AND a.annotator = ?"""


JUDGMENT_COLUMNS = [
    "uid", "item_id", "judge_name", "model", "model_reported", "template_id", "template_hash", "params",
    "judge_key", "system_prompt", "prompt", "raw_output", "status", "verdict", "unparsed_reason", "correct",
    "confidence", "error", "latency_ms", "prompt_tokens", "completion_tokens", "created_at", "sample", "judged_at",
]


def chunks(values: list, size: int) -> Iterator[list]:
    """`values` in consecutive slices of at most `size` (SQLite limits the parameters of one statement)."""
    for start in range(0, len(values), size):
        yield values[start : start + size]


# an item's columns as `item_from_row` reads them, in the order of Item's fields (`i` the items table)
ITEM_SELECT = "i.id, i.task, i.lang, i.source_id, i.fields, i.reference, i.content_hash, i.system, i.version"


def item_from_row(row: Sequence) -> Item:
    """The Item of a row whose first columns are `ITEM_SELECT` (read by position: a look-up
    by column name costs more than the rest of the item at a hundred thousand rows)."""
    return Item(row[0], row[1], row[2], row[3], json.loads(row[4]), row[5], row[6], row[7], row[8])


def judgment_from_row(row: sqlite3.Row) -> Judgment:
    values = {k: row[k] for k in row.keys() if k != "uid"}
    values["params"] = json.loads(values["params"] or "{}")
    return Judgment(**values)


def annotation_from_row(row: sqlite3.Row) -> Annotation:
    return Annotation(**{k: row[k] for k in row.keys()})
