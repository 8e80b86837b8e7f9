"""The reads behind the reliability figures, the trust thresholds and what they accept: the
judges' verdicts in force against the gold label, read in groups from `cell_verdicts` (kept by
migration 0017's triggers), and the thresholds applied back in SQL (the escalate order, the
trust marks of an export), so that none reads one Python object per item.

Most verdicts are simply a judge's judgment in force with its stored confidence. The others,
"irregular" here, are read one by one and left to the caller's rule: an item and judge with
repeats (`judge --repeat`: the verdict is the majority of the samples), or whose judgment in
force is an error (the newest judgment that is not one counts). Migration 0014's partial
indexes find them without reading every judgment.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass

from calibrate.model import dump_json
from calibrate.store.connection import plain_rows
from calibrate.store.sql import gold_of

# a group's confidences, written by SQLite with 17 significant digits (exact) and read by numpy
CONFIDENCES = "group_concat(CASE WHEN c.status = 'verdict' AND c.confidence BETWEEN 0 AND 1 " \
              "THEN printf('%!.17g', c.confidence) END)"


@dataclass(slots=True)
class _KeptGold:
    """The shared gold labels while `ConfidenceMixin.shared_gold_kept` is open."""

    gold_from: str | None
    given: Future | None
    share: Callable[[dict[int, str]], None] | None
    labels: dict[int, str] | None = None  # item id -> gold label, once worked out or given
    in_table: bool = False  # whether temp.shared_gold holds them


class ConfidenceMixin:
    """Verdict groups, irregular verdicts and trust marks (part of Store)."""

    def _mark_irregular(self, judge: str | None) -> None:
        """temp.irregular: the (item, judge) pairs whose verdict is not the judgment in force."""
        c = self.conn
        c.execute("DROP TABLE IF EXISTS temp.irregular")
        c.execute("CREATE TEMP TABLE irregular (item_id INTEGER, judge_name TEXT, PRIMARY KEY (item_id, judge_name)) "
                  "WITHOUT ROWID")
        c.execute("INSERT OR IGNORE INTO irregular SELECT item_id, judge_name FROM judgments INDEXED BY judgments_repeats "
                  "WHERE sample > 0 AND (?1 IS NULL OR judge_name = ?1)", (judge,))
        c.execute("INSERT OR IGNORE INTO irregular SELECT item_id, judge_name FROM verdicts_in_force "
                  "WHERE status = 'error' AND (?1 IS NULL OR judge_name = ?1)", (judge,))

    _gold_kept: _KeptGold | None = None  # while `shared_gold_kept` is open

    @contextmanager
    def shared_gold_kept(self, gold_from: str | None, *, given: Future | None = None,
                         share: Callable[[dict[int, str]], None] | None = None) -> Iterator[None]:
        """While open, the gold labels of the items several people labelled (`_shared_gold`) are
        worked out once, when first read, and kept for every read that takes them
        (`verdict_groups`, `jury_rows`): a report reads them two or more times. `given`: a
        Future of them (item id -> gold label, ties left out) that another connection works out,
        waited for instead of working them out here (a result of None: worked out here after
        all); `share`: called with them when `agreement_data` works them out here."""
        if self._gold_kept is not None:
            raise ValueError("the shared gold labels are kept already")
        self._gold_kept = _KeptGold(gold_from, given, share)
        try:
            yield
        finally:
            self._gold_kept = None
            self._drop_shared_gold()

    def _offer_shared_gold(self, labels: dict[int, str], gold_from: str | None) -> None:
        """While `shared_gold_kept` is open for `gold_from` and has not worked them out yet: take
        `labels` (item id -> gold label, ties left out; `gold_from` the adjudicator) of every
        counted item two or more people labelled (more items than `_shared_gold` keeps; its
        readers join them on their items), and share them as it was asked to."""
        kept = self._gold_kept
        if kept is None or kept.labels is not None or kept.gold_from != gold_from:
            return
        kept.labels = labels
        if kept.share is not None:
            kept.share(labels)

    def _drop_shared_gold(self) -> None:
        if self._gold_kept is None:
            self.conn.execute("DROP TABLE IF EXISTS temp.shared_gold")

    def _shared_gold(self, gold_from: str | None) -> dict[int, str]:
        """temp.shared_gold (item_id, label), and the same as item id -> label: the gold label
        (`calibrate.gold`, `gold_from` the adjudicator) of each counted item that two or more
        people labelled and a judge judged (found along cell_verdicts' key); a tie has none (NULL
        in the table, left out of the mapping). Worked out once while `shared_gold_kept` is open,
        or taken from what it was given."""
        kept, c = self._gold_kept, self.conn
        if kept is not None:
            if kept.gold_from != gold_from:
                raise ValueError(f"the shared gold labels kept are from {kept.gold_from!r}, not {gold_from!r}")
            if kept.labels is None and kept.given is not None:
                kept.labels = kept.given.result()
            if kept.labels is not None:
                if not kept.in_table:
                    c.execute("DROP TABLE IF EXISTS temp.shared_gold")
                    c.execute("CREATE TEMP TABLE shared_gold (item_id INTEGER PRIMARY KEY, label TEXT)")
                    # in one statement: SQLite walks the labels without taking the interpreter's lock once per row
                    c.execute("INSERT INTO shared_gold SELECT CAST(key AS INTEGER), value FROM json_each(?)",
                              (dump_json(kept.labels),))
                    kept.in_table = True
                return kept.labels
        for table in ("shared_labels", "shared_gold"):
            c.execute(f"DROP TABLE IF EXISTS temp.{table}")
        c.execute("CREATE TEMP TABLE shared_labels (item_id INTEGER, annotator TEXT, label TEXT, "
                  "PRIMARY KEY (item_id, annotator)) WITHOUT ROWID")
        c.execute("INSERT INTO shared_labels SELECT l.item_id, l.annotator, l.label FROM labels_in_force l "
                  "WHERE l.item_id IN (SELECT item_id FROM cell_verdicts WHERE labelled = 2)")
        c.execute("CREATE TEMP TABLE shared_gold (item_id INTEGER PRIMARY KEY, label TEXT)")
        c.execute(f"INSERT INTO shared_gold {gold_of('temp.shared_labels')}", (gold_from,))
        c.execute("DROP TABLE temp.shared_labels")
        labels = dict(c.execute("SELECT item_id, label FROM temp.shared_gold WHERE label IS NOT NULL"))
        if kept is not None:
            kept.labels, kept.in_table = labels, True
        return labels

    _GROUP_COLUMNS = ("c.task, c.lang, c.judge_name, c.repeated, c.system, c.status, c.verdict, {label}, "
                      "c.response_length")

    def once_labelled_groups(self) -> list[tuple]:
        """`verdict_groups`' read of the items with one label (every judge's, repeated and
        errors too: `verdict_groups` leaves them out), which needs no gold label: another
        connection can read it first, while the gold labels are worked out. Rows of (task, lang,
        judge, repeated, system, status, verdict, label, response length, n, confidences as
        text), in cell_verdicts' key order."""
        grouping = self._GROUP_COLUMNS.format(label="c.label")
        # the groups are runs of the key, read without sorting
        return list(plain_rows(self.conn, f"SELECT {grouping}, count(*), {CONFIDENCES} FROM cell_verdicts c "
                                          f"WHERE c.labelled = 1 GROUP BY {grouping}"))

    def verdict_groups(self, judge: str | None = None, gold_from: str | None = None,
                       once_labelled: list[tuple] | Callable[[], list[tuple]] | None = None) -> list[tuple]:
        """The judges' regular verdicts in force (not irregular) on counted items with a gold
        label (`calibrate.gold`, `gold_from` the adjudicator), in groups of items that share
        everything the reliability figures tell apart: rows of (task, lang, judge, system,
        status, verdict (None unless parsed), gold label, response length (None: none), n,
        confidences), `confidences` the group's stored confidences in [0, 1] of parsed verdicts
        as numpy array (the group's other items have none). Read from cell_verdicts in its key
        order: items with one label as they are filed (`once_labelled_groups`, or
        `once_labelled`: what it gave on this database, or a function giving it, called once the
        gold labels are read), items several people labelled with the gold label of their labels."""
        import numpy as np

        c = self.conn
        self._shared_gold(gold_from)
        grouping = self._GROUP_COLUMNS.format(label="g.label")
        try:
            several = list(plain_rows(c, f"SELECT {grouping}, count(*), {CONFIDENCES} FROM cell_verdicts c "
                                         "JOIN temp.shared_gold g ON g.item_id = c.item_id WHERE c.labelled = 2 "
                                         f"AND g.label IS NOT NULL GROUP BY {grouping}"))
        finally:
            self._drop_shared_gold()
        once = once_labelled() if callable(once_labelled) else once_labelled
        found = [*(once if once is not None else self.once_labelled_groups()), *several]
        empty = np.zeros(0)
        return [(task, lang, name, system, status, verdict if status == "verdict" else None, gold,
                 None if length < 0 else length, n, np.fromstring(confidences, sep=",") if confidences else empty)
                for task, lang, name, repeated, system, status, verdict, gold, length, n, confidences in found
                if not repeated and status != "error" and judge in (None, name)]

    def irregular_samples(self, judge: str | None = None) -> tuple[list[tuple], list[tuple]]:
        """The irregular verdicts on counted items one by one, as the verdict in force reads them
        (migrations 0015, 0028): a pair with repeats gives the samples in force (the newest judgment
        of each sample index in the configuration of the newest, a failed call never newer than a
        verdict; a failed sample is no vote), unless
        every one of them failed; any other pair (its judgment in force failed) gives its newest
        judgment that is not an error, as sample 0. Rows in id order (item_id, task, lang,
        system, judge_name, sample, status, verdict, confidence, response_length), and the
        labels in force of their items (item_id, annotator, label)."""
        self._mark_irregular(judge)
        c = self.conn
        # CROSS JOIN: from the few irregular pairs to their judgments (not every judgment), in id order; a pair's
        # cell (and whether its item counts) from its row of cell_verdicts, along an index that holds it, rather
        # than from the item's row once per judgment (a pair with judgments has a verdict in force)
        judged: dict[tuple[int, str], list[tuple]] = {}
        for row in plain_rows(c, """
                SELECT j.item_id, v.task, v.lang, v.system, j.judge_name, j.sample, j.status, j.verdict, j.confidence,
                       nullif(v.response_length, -1), j.judge_key, j.id, j.judged_at
                FROM temp.irregular r CROSS JOIN cell_verdicts v INDEXED BY cell_verdicts_by_item
                ON v.item_id = r.item_id AND v.judge_name = r.judge_name
                CROSS JOIN judgments j ON j.item_id = r.item_id AND j.judge_name = r.judge_name ORDER BY j.id"""):
            judged.setdefault((row[0], row[4]), []).append(row)
        samples = []
        for rows in judged.values():
            rows.sort(key=lambda row: (row[6] != "error", row[12], row[11]))  # the order in force (migration 0028)
            newest_key = rows[-1][10]
            in_force = {row[5]: row for row in rows if row[10] == newest_key}  # the newest of each sample index
            if len(in_force) > 1 and any(row[6] != "error" for row in in_force.values()):
                samples += in_force.values()
            elif counted := [row for row in rows if row[6] != "error"]:
                samples.append((*counted[-1][:5], 0, *counted[-1][6:]))
        samples = [row[:10] for row in sorted(samples, key=lambda row: row[11])]
        labels = list(plain_rows(c, "SELECT l.item_id, l.annotator, l.label FROM labels_in_force l "
                                    "WHERE l.item_id IN (SELECT item_id FROM temp.irregular)"))
        return samples, labels

    def judged_cells(self, judge: str | None = None) -> list[tuple[str, str, str, str]]:
        """(task, lang, system, judge) of the counted items with a verdict in force that is not
        an error (kept by migration 0008's triggers)."""
        return [tuple(r) for r in self.conn.execute(
            "SELECT DISTINCT task, lang, system, judge_name FROM verdict_counts WHERE n != 0 AND status != 'error' "
            "AND (?1 IS NULL OR judge_name = ?1) ORDER BY 1, 2, 3, 4", (judge,))]

    # -- trust marks: thresholds applied in SQL -------------------------------------------------

    def set_trust_marks(self, marks) -> None:
        """What a judge's verdict needs to be accepted without a person, for the reads that apply
        it (`escalation_ids`, `export_json_lines` and `export_csv_rows` with marks): `marks` (a
        reliability_cells.TrustMarks) holds per (task, lang, judge) the confidence threshold where one meets the target, per
        irregular verdict (item id, judge) whether it is accepted, and the judge they are of (None:
        every judge)."""
        c = self.conn
        self._mark_irregular(marks.judge)
        for table in ("trust_thresholds", "trust_irregular"):
            c.execute(f"DROP TABLE IF EXISTS temp.{table}")
        c.execute("CREATE TEMP TABLE trust_thresholds (task TEXT, lang TEXT, judge_name TEXT, threshold REAL, "
                  "PRIMARY KEY (task, lang, judge_name)) WITHOUT ROWID")
        c.executemany("INSERT INTO trust_thresholds VALUES (?, ?, ?, ?)",
                      [(*key, threshold) for key, threshold in marks.thresholds.items()])
        c.execute("CREATE TEMP TABLE trust_irregular (item_id INTEGER, judge_name TEXT, accepted INTEGER, "
                  "PRIMARY KEY (item_id, judge_name)) WITHOUT ROWID")
        # the accepted ones only (an irregular verdict without a row is not accepted), in one statement
        c.execute("INSERT INTO trust_irregular SELECT value ->> 0, value ->> 1, 1 FROM json_each(?)",
                  (dump_json([key for key, ok in marks.irregular.items() if ok]),))
        self._trust_judge = marks.judge

    # whether judge `v.judge_name`'s verdict on item `i` (its row `v` of verdicts_in_force) is accepted: an
    # irregular verdict (in temp.irregular) as `set_trust_marks` marked it; a regular one when it is parsed, with
    # a stored confidence in [0, 1] reaching its cell's threshold (the confidence of its judgment `j`)
    _ACCEPTED = """
        CASE WHEN EXISTS (SELECT 1 FROM temp.irregular r WHERE r.item_id = v.item_id AND r.judge_name = v.judge_name)
             THEN coalesce((SELECT a.accepted FROM temp.trust_irregular a
                            WHERE a.item_id = v.item_id AND a.judge_name = v.judge_name), 0)
             ELSE v.status = 'verdict' AND coalesce((SELECT j.confidence >= t.threshold AND j.confidence BETWEEN 0 AND 1
                  FROM temp.trust_thresholds t{judgments} WHERE t.task = i.task AND t.lang = i.lang
                  AND t.judge_name = v.judge_name{joined}), 0) END"""
    # the rule, reading the verdict's judgment (for its confidence) only where its cell has a threshold: a
    # regular verdict in a cell without one is never accepted, and its judgment's row is not read
    ACCEPTED = _ACCEPTED.format(judgments=" CROSS JOIN judgments j", joined=" AND j.id = v.judgment_id")
    # the rule where the statement has joined the verdict's judgment as `j` already
    ACCEPTED_JOINED = _ACCEPTED.format(judgments="", joined="")

    def escalation_ids(self, *, accepted: bool, task: str | None = None, lang: str | None = None,
                       system: str | None = None, after: int = 0, limit: int = 512) -> list[int]:
        """Ids of the filtered items after `after`, in id order, at most `limit`: those on which some
        judge's verdict (the judge of `set_trust_marks`, or any) is accepted, or (accepted=False)
        those on which none is."""
        where, params = self._item_filter(task, lang, None, None, system)
        judge = getattr(self, "_trust_judge", None)
        return [r[0] for r in self.conn.execute(
            f"SELECT i.id FROM items i WHERE {where} AND i.id > ? AND {'' if accepted else 'NOT'} EXISTS ("
            f"SELECT 1 FROM verdicts_in_force v WHERE v.item_id = i.id AND (? IS NULL OR v.judge_name = ?) "
            f"AND {self.ACCEPTED}) ORDER BY i.id LIMIT ?",
            [*params, after, judge, judge, limit])]

    def surely_escalated_ids(self, *, judge: str | None = None, task: str | None = None, lang: str | None = None,
                             system: str | None = None, after: int = 0, limit: int = 512) -> list[int]:
        """Ids of the filtered items after `after`, in id order, at most `limit`, on which no verdict
        of `judge` (None: any judge) can be accepted whatever the trust marks: none is a parsed
        verdict with a stored confidence in [0, 1], none is irregular (repeats, or an error in
        force). `escalation_ids(accepted=False)` holds each of them under any `set_trust_marks`,
        so they can be shown before the thresholds are fitted."""
        where, params = self._item_filter(task, lang, None, None, system)
        return [r[0] for r in self.conn.execute(
            f"SELECT i.id FROM items i WHERE {where} AND i.id > ? AND NOT EXISTS ("
            "SELECT 1 FROM verdicts_in_force v JOIN judgments j ON j.id = v.judgment_id "
            "WHERE v.item_id = i.id AND (? IS NULL OR v.judge_name = ?) AND (v.status = 'error' "
            "OR (v.status = 'verdict' AND j.confidence BETWEEN 0 AND 1) OR EXISTS ("
            "SELECT 1 FROM judgments r INDEXED BY judgments_repeats WHERE r.item_id = v.item_id "
            "AND r.judge_name = v.judge_name AND r.sample > 0))) ORDER BY i.id LIMIT ?",
            [*params, after, judge, judge, limit])]


