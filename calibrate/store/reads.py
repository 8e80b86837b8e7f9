"""The reads behind the report: each gathers, in a few statements, everything it needs (counts
kept by the triggers of migration 0008, the labels of items several people labelled, the jury's
rows), and none holds a Python object per item. (The scores' reads are in `score_counts.py`, the
exports' in `export_rows.py`.)"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from calibrate.gold import gold_by_item_in_order
from calibrate.model import AgreementData
from calibrate.store.connection import plain_rows


def in_sql_order(key: tuple) -> tuple:
    """A sort key that orders rows as SQLite's GROUP BY gives them: NULL first, then numbers,
    then text by its bytes (the code points' order)."""
    return tuple((0, 0) if v is None else (1, v) if isinstance(v, int | float) else (2, v) for v in key)


class ReadsMixin:
    """Report reads (part of Store)."""

    def unparsed_counts(self, reason_prefix: str, *, judge: str | None = None,
                        system: str | None = None) -> list[tuple[str, str, str, str, int]]:
        """(task, lang, system, judge, n): unparsed judgments in force (of `judge`, on `system`'s
        items, if given) whose reason begins with `reason_prefix` (outputs cut at the token
        limit, say), per cell of the counted items; found along migration 0019's index of the
        unparsed reasons."""
        beyond = reason_prefix[:-1] + chr(ord(reason_prefix[-1]) + 1)  # the first text after every one with the prefix
        return [tuple(r) for r in self.conn.execute(
            "SELECT c.task, c.lang, c.system, v.judge_name, count(*) FROM judgments j INDEXED BY judgments_unparsed "
            "JOIN verdicts_in_force v ON v.judgment_id = j.id JOIN counted_items c ON c.id = v.item_id "
            "WHERE j.status = 'unparsed' AND j.unparsed_reason >= ? AND j.unparsed_reason < ? AND v.status = 'unparsed' "
            "AND (? IS NULL OR v.judge_name = ?) AND (? IS NULL OR c.system = ?) "
            "GROUP BY c.task, c.lang, c.system, v.judge_name", (reason_prefix, beyond, judge, judge, system, system))]

    # -- agreement -----------------------------------------------------------------------------

    def agreement_data(self, judge: str | None = None, system: str | None = None, *,
                       gold_from: str | None = None,
                       once_labelled: Callable[[], list[tuple]] | None = None) -> AgreementData:
        """Everything the agreement report needs: judge verdict x human label counts per
        annotator and against the gold label (`calibrate.gold`, `gold_from` the adjudicator: on
        an item one person labelled, their label), and the per-item labels and verdicts of items
        that several annotators labelled (the human ceiling is worked out from them, and their
        gold label). `system` keeps only that system's items.

        The judge x annotator counts and the judged counts are kept up to date by the triggers
        of migration 0008 (agreement_counts, verdict_counts), so they cost a few hundred rows
        whatever the number of labels; only items labelled by two or more people are read one
        by one. The counts against the gold label are those of the items one person labelled, in
        the groups of cell_verdicts (migration 0017) `once_labelled_groups` reads (`once_labelled`
        gives them when another connection reads them already), and the gold labels of the items
        several people labelled. Only the current version of an item counts: labels made on an
        earlier version stay attached to it, but one source item is never counted twice."""
        counts_filter, params = "n != 0", []
        if system is not None:
            counts_filter += " AND system = ?"
            params.append(system)
        if judge:
            counts_filter += " AND judge_name = ?"
            params.append(judge)
        c = self.conn
        rows = lambda sql, params=(): list(plain_rows(c, sql, params))  # noqa: E731
        judge_vs_human = rows(
            "SELECT task, lang, judge_name, annotator, status, nullif(verdict, ''), label, sum(n) FROM agreement_counts "
            f"WHERE {counts_filter} GROUP BY 1, 2, 3, 4, 5, 6, 7", params)
        judged = rows(f"SELECT task, lang, judge_name, status, sum(n) FROM verdict_counts WHERE {counts_filter} "
                      "GROUP BY 1, 2, 3, 4", params)
        temporary = ("shared_now", "labels_now")
        for table in temporary:
            c.execute(f"DROP TABLE IF EXISTS temp.{table}")
        c.execute(  # the counted ones of the items two or more people labelled (kept by migration 0023), each item
            # found by its id (a join would have SQLite walk every item instead)
            "CREATE TEMP TABLE shared_now AS SELECT i.id AS item_id, i.task, i.lang FROM counted_items i "
            f"WHERE i.id IN (SELECT item_id FROM main.shared_items){' AND i.system = ?' if system is not None else ''}",
            [system] if system is not None else [],
        )
        c.execute("CREATE TEMP TABLE labels_now (item_id INTEGER, annotator TEXT, label TEXT, task TEXT, lang TEXT, "
                  "PRIMARY KEY (item_id, annotator)) WITHOUT ROWID")
        c.execute("INSERT INTO labels_now SELECT l.item_id, l.annotator, l.label, s.task, s.lang FROM shared_now s "
                  "JOIN labels_in_force l ON l.item_id = s.item_id")
        try:
            shared_labels = rows("SELECT item_id, task, lang, annotator, label FROM labels_now ORDER BY item_id")
            # the gold label of each item labelled by two or more people (`calibrate.gold`); a tie has none
            gold = gold_by_item_in_order(((r[0], r[3], r[4]) for r in shared_labels), gold_from)
            if system is None:  # every counted item several people labelled: the gold a report's other reads take
                self._offer_shared_gold(gold, gold_from)
            shared_verdicts = rows(
                "SELECT v.item_id, v.judge_name, v.status, v.verdict FROM shared_now s "
                f"JOIN verdicts_in_force v ON v.item_id = s.item_id{' WHERE v.judge_name = ?' if judge else ''}",
                [judge] if judge else [])
        finally:
            for table in temporary:
                c.execute(f"DROP TABLE IF EXISTS temp.{table}")
        cell_of = {r[0]: (r[1], r[2]) for r in shared_labels}
        # the judgments against the one label of each item one person labelled, its gold label: the groups of
        # cell_verdicts that `once_labelled_groups` reads (or `once_labelled` gives: the report's other
        # connection reads them for the reliability figures), summed over what the report does not tell apart
        versus_gold: Counter = Counter()
        for task, lang, name, _, item_system, status, verdict, label, _, n, _ in (
                once_labelled() if once_labelled is not None else self.once_labelled_groups()):
            if (system is None or item_system == system) and judge in (None, name):
                versus_gold[(task, lang, name, status, verdict or None, label)] += n
        for item_id, judge_name, status, verdict in shared_verdicts:
            if (label := gold.get(item_id)) is not None:
                versus_gold[(*cell_of[item_id], judge_name, status, verdict, label)] += 1
        return AgreementData(
            judge_vs_human=judge_vs_human,
            judge_vs_gold=[(*key, versus_gold[key]) for key in sorted(versus_gold, key=in_sql_order)],
            tied_items=[item_id for item_id in cell_of if item_id not in gold],
            shared_labels=shared_labels,
            shared_verdicts=shared_verdicts,
            judged=judged,
        )

    def jury_rows(self, exclude: str, system: str | None = None,
                  gold_from: str | None = None) -> tuple[list[str], dict[str, list[tuple]]]:
        """What a jury of the judges needs, over the counted items (current, visible) that two or
        more judges judged (an error is no judgment): the judges (all but `exclude`, each with a
        judgment in force that is not an error, in name order) and rows in which `verdicts` is one
        column per judge in that order, the parsed verdict or NULL (unparsed, or not judged):
        - judged: task, lang, verdicts..., n (items);
        - versus_human: task, lang, verdicts..., annotator, label, n (labels in force);
        - versus_gold: task, lang, verdicts..., gold label, n (labelled items with a gold label:
          `calibrate.gold`, `gold_from` the adjudicator; an item one person labelled has theirs);
        - shared: item_id, task, lang, verdicts..., one row per item two or more people labelled;
        - one_judge: task, lang, failed, n (the items only one of the judges judged, which the
          rows above leave out, with `failed` the tuple of the others whose calls failed there,
          in name order: empty where the others never judged the item).
        With `system`, only that system's items. Read from the sets of verdicts migration 0018's
        triggers keep per item and count, so the work grows with the distinct sets of verdicts
        (and the items several people labelled, and the failed calls), not with the items."""
        judges = [r[0] for r in self.conn.execute(
            "SELECT DISTINCT judge_name FROM verdict_counts WHERE n != 0 AND status != 'error' AND judge_name != ? "
            "AND (? IS NULL OR system = ?) ORDER BY 1", (exclude, system, system))]
        if len(judges) < 2:
            return judges, {}
        position = {name: k for k, name in enumerate(judges)}
        columns: dict[str, tuple[tuple, int]] = {}

        def read(text: str) -> tuple[tuple, int]:
            """A set of verdicts as one column per judge, and how many of the judges judged."""
            if text not in columns:
                values, judged = [None] * len(judges), 0
                for part in text.split("\x1e"):
                    name, _, said = part.partition("\x1f")
                    if name in position:
                        judged += 1
                        values[position[name]] = said[1:] if said.startswith("v") else None
                columns[text] = tuple(values), judged
            return columns[text]

        def verdicts(text: str) -> tuple | None:
            """A set of verdicts as one column per judge; None when fewer than two of them judged."""
            values, judged = read(text)
            return values if judged >= 2 else None

        def counted_sets(rows) -> list[tuple]:
            found: Counter = Counter()
            for task, lang, text, *rest, n in rows:
                row = verdicts(text)
                if row is not None:
                    found[(task, lang, *row, *rest)] += n
            return [(*key, n) for key, n in found.items() if n]

        counted = lambda sql: counted_sets(plain_rows(self.conn, sql, (system,)))  # noqa: E731

        # the sets of the items several people labelled (kept by migration 0023), in their id order
        sets = list(plain_rows(self.conn, "SELECT s.item_id, s.task, s.lang, s.verdicts FROM main.shared_items x "
                                          "CROSS JOIN verdict_sets s ON s.item_id = x.item_id "
                                          "WHERE ?1 IS NULL OR s.system = ?1 ORDER BY x.item_id", (system,)))
        shared = [(item_id, task, lang, *row) for item_id, task, lang, text in sets if (row := verdicts(text)) is not None]
        gold = self._shared_gold(gold_from)
        self._drop_shared_gold()
        with_gold = Counter((task, lang, text, label) for item_id, task, lang, text in sets
                            if (label := gold.get(item_id)) is not None)
        # the items one person labelled, with that label as their gold: every label of each set (verdict_set_labels)
        # less those of the items several people labelled, in one statement (one snapshot: a label given meanwhile
        # cannot make a count negative)
        versus_gold: Counter = Counter({tuple(key): n for *key, n in counted(
            "SELECT task, lang, verdicts, label, sum(n) FROM (SELECT task, lang, verdicts, label, n "
            "FROM verdict_set_labels WHERE n != 0 AND (?1 IS NULL OR system = ?1) UNION ALL "
            "SELECT s.task, s.lang, s.verdicts, l.label, -1 FROM main.shared_items x "
            "CROSS JOIN verdict_sets s ON s.item_id = x.item_id CROSS JOIN labels_in_force l ON l.item_id = x.item_id "
            "WHERE ?1 IS NULL OR s.system = ?1) GROUP BY 1, 2, 3, 4 HAVING sum(n) != 0")})
        for task, lang, text, label in sorted(with_gold, key=in_sql_order):
            if (row := verdicts(text)) is not None:
                versus_gold[(task, lang, *row, label)] += with_gold[(task, lang, text, label)]
        sets_counted = list(plain_rows(self.conn, "SELECT task, lang, verdicts, n FROM verdict_set_counts "
                                                  "WHERE n != 0 AND (?1 IS NULL OR system = ?1)", (system,)))
        return judges, {
            "judged": counted_sets(sets_counted),
            "versus_human": counted("SELECT task, lang, verdicts, annotator, label, n FROM verdict_set_labels "
                                    "WHERE n != 0 AND (?1 IS NULL OR system = ?1)"),
            "versus_gold": [(*key, n) for key, n in versus_gold.items()],
            "shared": shared,
            "one_judge": self._judged_by_one(sets_counted, system, lambda text: read(text)[1] == 1, set(judges)),
        }

    def _judged_by_one(self, sets: list[tuple], system: str | None, alone: Callable[[str], bool],
                       judges: set[str]) -> list[tuple]:
        """(task, lang, failed, n): of the counted `sets` (task, lang, verdicts, n), the items
        `alone` says only one of the jury's `judges` judged, with the others whose calls failed
        there, read along migration 0014's index of the failed calls (few, where any)."""
        found: Counter = Counter()
        for task, lang, text, n in sets:
            if alone(text):
                found[(task, lang, ())] += n
        for task, lang, text, names in plain_rows(
                self.conn, "SELECT s.task, s.lang, s.verdicts, group_concat(v.judge_name, char(30)) "
                           "FROM verdicts_in_force v INDEXED BY verdicts_in_force_errors "
                           "CROSS JOIN verdict_sets s ON s.item_id = v.item_id "
                           "WHERE v.status = 'error' AND (?1 IS NULL OR s.system = ?1) GROUP BY v.item_id", (system,)):
            failed = tuple(sorted(name for name in names.split("\x1e") if name in judges))
            if failed and alone(text) and found[(task, lang, ())] > 0:  # always, in one snapshot
                found[(task, lang, ())] -= 1
                found[(task, lang, failed)] += 1
        return [(*key, n) for key, n in found.items() if n]
