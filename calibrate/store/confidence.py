"""The reads behind trust thresholds and what they accept: the judges' confidences against the
gold label, counted in SQL, and the thresholds applied back in SQL (the escalate order, the
trust marks of an export), so that neither reads one Python object per item.

Most verdicts are simply a judge's judgment in force with its stored confidence. The others,
"irregular" here, are read one by one and left to the caller's rule: an item and judge with
repeats (`judge --repeat`: the verdict is the majority of the samples), or whose judgment in
force is an error (the newest judgment that is not one counts). Migration 0014's partial
indexes find them without reading every judgment.
"""

from __future__ import annotations

from calibrate.store.connection import plain_rows
from calibrate.store.sql import gold_of

# Confidences are counted in buckets of the trust threshold grid (steps of 1/1000); one within
# this distance of a grid step is counted on its own, by its exact value, so that every bucket
# lies strictly between two steps.
GRID_STEPS = 1000
EDGE = 1e-6


class ConfidenceMixin:
    """Confidence counts, irregular verdicts and trust marks (part of Store)."""

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

    def confidence_counts(self, judge: str | None = None, gold_from: str | None = None) -> list[tuple]:
        """The judges' parsed verdicts that carry a confidence in [0, 1], on items with a gold label
        (`calibrate.gold`, `gold_from` the adjudicator), counted: rows of (task, lang, judge,
        system, verdict, gold label, n, confidence), where `confidence` is the lowest of the n
        (they share one step of the grid of GRID_STEPS, strictly inside it) or their exact value
        (one close to a step). Irregular verdicts are left out: `irregular_samples` reads them."""
        c = self.conn
        self._mark_irregular(judge)
        c.execute("DROP TABLE IF EXISTS temp.gold_shared")
        c.execute("CREATE TEMP TABLE gold_shared (item_id INTEGER PRIMARY KEY, label TEXT)")
        c.execute(f"INSERT INTO gold_shared {gold_of('labels_in_force', shared_only=True)}", (gold_from,))
        try:
            rows = plain_rows(c, f"""
                SELECT i.task || char(31) || i.lang || char(31) || v.judge_name || char(31) || i.system || char(31)
                       || coalesce(v.verdict, '') || char(31) || g.label,
                       CAST(j.confidence * {GRID_STEPS} AS INTEGER),
                       CASE WHEN j.confidence * {GRID_STEPS} - CAST(j.confidence * {GRID_STEPS} AS INTEGER)
                                 NOT BETWEEN {EDGE} AND {1 - EDGE} THEN j.confidence END,
                       j.confidence
                FROM (SELECT l.item_id, CASE WHEN count(*) = 1 THEN max(l.label)
                             ELSE (SELECT s.label FROM temp.gold_shared s WHERE s.item_id = l.item_id) END AS label
                      FROM labels_in_force l GROUP BY l.item_id) g
                JOIN verdicts_in_force v ON v.item_id = g.item_id
                JOIN items i ON i.id = g.item_id
                JOIN judgments j ON j.id = v.judgment_id
                WHERE g.label IS NOT NULL AND v.status = 'verdict' AND j.confidence BETWEEN 0 AND 1
                  AND (?1 IS NULL OR v.judge_name = ?1)
                  AND NOT EXISTS (SELECT 1 FROM temp.irregular r WHERE r.item_id = v.item_id AND r.judge_name = v.judge_name)
                """, (judge,))
            counted: dict[tuple, list] = {}  # counted here rather than by SQL's GROUP BY, which sorts every row
            for row in rows:  # one text of the six columns a row: Python makes one string, not six
                key, confidence = row[:3], row[3]
                found = counted.get(key)
                if found is None:
                    counted[key] = [1, confidence]
                else:
                    found[0] += 1
                    if confidence < found[1]:
                        found[1] = confidence
            return [(*key[0].split("\x1f"), n, lowest) for key, (n, lowest) in counted.items()]
        finally:
            c.execute("DROP TABLE IF EXISTS temp.gold_shared")

    def irregular_samples(self, judge: str | None = None) -> tuple[list[tuple], list[tuple]]:
        """The irregular verdicts one by one: every judgment of theirs that is not an error, in id
        order (item_id, task, lang, system, judge_name, sample, status, verdict, confidence), and the
        labels in force of their items (item_id, annotator, label)."""
        self._mark_irregular(judge)
        # CROSS JOIN: from the few irregular pairs to their judgments (not every judgment, in id order)
        samples = list(plain_rows(self.conn, """
            SELECT j.item_id, i.task, i.lang, i.system, j.judge_name, j.sample, j.status, j.verdict, j.confidence
            FROM temp.irregular r CROSS JOIN judgments j ON j.item_id = r.item_id AND j.judge_name = r.judge_name
            JOIN items i ON i.id = j.item_id
            WHERE j.status != 'error' ORDER BY j.id"""))
        labels = [tuple(r) for r in self.conn.execute(
            "SELECT l.item_id, l.annotator, l.label FROM labels_in_force l "
            "WHERE l.item_id IN (SELECT item_id FROM temp.irregular)")]
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
        it (`escalation_ids`, `export_rows` with trust): `marks` (a reliability_cells.TrustMarks)
        holds per (task, lang, judge) the confidence threshold where one meets the target, per
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
        c.executemany("INSERT INTO trust_irregular VALUES (?, ?, ?)", [(*key, ok) for key, ok in marks.irregular.items()])
        self._trust_judge = marks.judge

    # whether judge `v.judge_name`'s verdict on item `i` (its row `v` of verdicts_in_force) is accepted
    ACCEPTED = """
        CASE WHEN EXISTS (SELECT 1 FROM temp.irregular r WHERE r.item_id = v.item_id AND r.judge_name = v.judge_name)
             THEN coalesce((SELECT a.accepted FROM temp.trust_irregular a
                            WHERE a.item_id = v.item_id AND a.judge_name = v.judge_name), 0)
             ELSE v.status = 'verdict' AND coalesce((SELECT j.confidence >= t.threshold AND j.confidence BETWEEN 0 AND 1
                 FROM temp.trust_thresholds t, judgments j WHERE t.task = i.task AND t.lang = i.lang
                 AND t.judge_name = v.judge_name AND j.id = v.judgment_id), 0) END"""

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


