"""The reads behind `calibrate scores`: the counted items of the scored tasks, grouped by what the
scores tell apart, read from the sets migration 0020's triggers keep per item and count (the
cell, reference, gold label, and each verdict in force with its `correct` and C3's rule), so the
work grows with the distinct sets, not with the items; the labelled items those sets count as
unlabelled because their labels tie; and the items behind one group, for the outputs C3's rule
reads differently from calibrate's parser."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Sequence

from calibrate.model import TextRule
from calibrate.store.connection import plain_rows
from calibrate.store.sql import VISIBLE, VISIBLE_BY_ID

C3_PREFIX = "c3/"  # the tasks whose judgments migration 0020 reads C3's rule of
UNREAD = "?"  # migration 0020's mark of a rule its SQL cannot read


def _judge_columns(text: str) -> dict[str, list[str]]:
    """A set of verdicts as stored by migration 0020: judge -> [status, 'v' + verdict or '',
    correct or '', rule]."""
    found = {}
    for part in text.split("\x1e") if text else ():
        name, status, *verdict, correct, rule = part.split("\x1f")
        found[name] = [status, "\x1f".join(verdict), correct, rule]
    return found


class ScoreCountsMixin:
    """Score reads (part of Store)."""

    def score_groups(self, judges: Sequence[str], scored: Iterable[tuple[str, str]], *,
                     by_reference: Iterable[tuple[str, str]] = (), system: str | None = None,
                     c3_rule: Callable[[str | None, str], bool] | None = None,
                     unjudged: Collection[int] = ()) -> list[tuple]:
        """What `calibrate scores` needs, counted: the current items of the `scored`
        (task, lang) pairs (of `system`, if given) grouped by what the scores tell apart, one
        row per group:
        (task, lang, system, reference, gold label, then per judge of `judges` its verdict in
        force as status, verdict, correct, rule, then the number of items).
        The reference is kept only for the pairs in `by_reference`, on items with a gold label or
        a verdict by one of `judges` (NULL elsewhere: it cannot change their scores); the gold
        label is the strict majority of the labels in force (`calibrate.gold`; NULL when
        unlabelled or tied); a judge's columns are NULL where it did not judge the item; `correct`
        is the judgment's, on the `by_reference` pairs only; `rule` is C3's rule on the judgment's
        raw output (1 or 0) for tasks starting with 'c3/' when `c3_rule` is given (NULL
        elsewhere), as migration 0020 reads it, or as `c3_rule` (C3's rule in Python) does where
        that SQL cannot. The items `unjudged` names are grouped as if no judge had judged them (the
        items C3's evaluate.py passes over: no C3 figure counts a verdict on them)."""
        judges = list(judges)
        scored, references = set(scored), set(by_reference)
        found: Counter = Counter()
        unread: list[tuple] = []
        columns: dict[tuple[str, bool, bool], tuple | None] = {}
        counted: Counter = Counter()  # (task, lang, system) -> items with a set

        def judge_values(text: str, by_ref: bool, ruled: bool) -> tuple | None:
            """The judges' columns of a set; None when C3's rule is to be read item by item."""
            key = (text, by_ref, ruled)
            if key not in columns:
                stored, values = _judge_columns(text), []
                for name in judges:
                    if name not in stored:
                        values += [None] * 4
                        continue
                    status, verdict, correct, rule = stored[name]
                    if ruled and rule == UNREAD:
                        columns[key] = None
                        break
                    values += [status, verdict[1:] if verdict else None,
                               _number(correct) if by_ref and correct else None,
                               int(rule) if ruled else None]
                else:
                    columns[key] = tuple(values)
            return columns[key]

        for task, lang, item_system, reference, gold, text, n in plain_rows(
                self.conn, "SELECT task, lang, system, reference, gold, verdicts, n FROM score_set_counts "
                           "WHERE n != 0 AND (?1 IS NULL OR system = ?1)", (system,)):
            if (task, lang) not in scored:
                continue
            counted[(task, lang, item_system)] += n
            by_ref = (task, lang) in references
            ruled = c3_rule is not None and task.startswith(C3_PREFIX)
            values = judge_values(text, by_ref, ruled)
            if values is None:
                unread.append((task, lang, item_system, reference, gold, text))
                continue
            found[_group_key(task, lang, item_system, reference, gold, values, by_ref)] += n
        for task, lang, item_system, reference, gold, text in unread:
            by_ref = (task, lang) in references
            for values in self._items_ruled(judges, (task, lang, item_system, reference, gold, text),
                                            judge_values(text, by_ref, False), c3_rule):
                found[_group_key(task, lang, item_system, reference, gold, values, by_ref)] += 1
        for item_id, task, lang, item_system, reference, gold, text in self._score_sets_of(unjudged):
            if (task, lang) not in scored or (system is not None and item_system != system):
                continue
            by_ref = (task, lang) in references
            values = judge_values(text, by_ref, c3_rule is not None and task.startswith(C3_PREFIX))
            if values is None:
                values = next(iter(self._items_ruled(judges, (task, lang, item_system, reference, gold, text),
                                                     judge_values(text, by_ref, False), c3_rule, item_id)))
            found[_group_key(task, lang, item_system, reference, gold, values, by_ref)] -= 1
            found[_group_key(task, lang, item_system, reference, gold, (None,) * len(values), by_ref)] += 1
        for cell, n in self._cell_sizes(scored, system).items():
            if n > counted[cell]:
                found[(*cell, None, None, *[None] * (4 * len(judges)))] += n - counted[cell]
        return [(*key, n) for key, n in found.items() if n]

    def _score_sets_of(self, item_ids: Collection[int]) -> list[tuple]:
        """(item id, task, lang, system, reference, gold, verdicts) of the counted items among
        `item_ids` that have a score set (a verdict or a label in force)."""
        if not item_ids:
            return []
        return [tuple(r) for r in self.conn.execute(
            "SELECT item_id, task, lang, system, reference, gold, verdicts FROM score_sets "
            "WHERE item_id IN (SELECT value FROM json_each(?)) ORDER BY item_id", (json.dumps(sorted(item_ids)),))]

    def score_ties(self, scored: Iterable[tuple[str, str]], *, system: str | None = None) -> Counter:
        """(task, lang, system) -> the counted items of the `scored` (task, lang) pairs (of
        `system`, if given) that people labelled but whose labels tie: no strict majority, so
        `score_groups` gives them no gold label and they count as unlabelled there. Read from the
        items two or more people labelled (one label is never a tie), so the work grows with those."""
        scored = set(scored)
        ties: Counter = Counter()
        # CROSS JOIN keeps the shared items the outer loop: SQLite's planner would scan every score set
        for task, lang, item_system, n in self.conn.execute(
                "SELECT s.task, s.lang, s.system, count(*) FROM shared_items h CROSS JOIN score_sets s ON s.item_id = h.item_id "
                "WHERE s.gold = '' AND (?1 IS NULL OR s.system = ?1) GROUP BY 1, 2, 3", (system,)):
            if (task, lang) in scored:
                ties[(task, lang, item_system)] += n
        return ties

    def _items_ruled(self, judges: list[str], key: tuple, values: tuple,
                     c3_rule: Callable[[str | None, str], bool], item_id: int | None = None) -> Iterable[tuple]:
        """The judges' columns of each item of one stored set (of the one item `item_id`, if
        given), with C3's rule read by `c3_rule` from each judgment's raw output."""
        lang = key[1]
        outputs: dict[int, dict[str, str | None]] = {}
        for found_id, name, raw in self.conn.execute(
                "SELECT s.item_id, v.judge_name, j.raw_output FROM score_sets s "
                "JOIN verdicts_in_force v ON v.item_id = s.item_id JOIN judgments j ON j.id = v.judgment_id "
                "WHERE s.task = ? AND s.lang = ? AND s.system = ? AND s.reference = ? AND s.gold = ? AND s.verdicts = ? "
                "AND (? IS NULL OR s.item_id = ?)", (*key, item_id, item_id)):
            outputs.setdefault(found_id, {})[name] = raw
        for raws in outputs.values():
            ruled = list(values)
            for k, name in enumerate(judges):
                if ruled[4 * k] is not None:
                    ruled[4 * k + 3] = int(c3_rule(raws[name], lang))
            yield tuple(ruled)

    def _cell_sizes(self, scored: set[tuple[str, str]], system: str | None) -> Counter:
        """(task, lang, system) -> the number of counted items, for the `scored` pairs, read from
        the items' cell index."""
        sizes: Counter = Counter()
        for task, lang in sorted(scored):
            for item_system, n in self.conn.execute(
                    f"SELECT i.system, count(*) FROM items i INDEXED BY items_by_cell WHERE i.task = ? AND i.lang = ? "
                    f"AND i.current = 1 AND {VISIBLE_BY_ID} AND (?3 IS NULL OR i.system = ?3) GROUP BY i.system",
                    (task, lang, system)):
                sizes[(task, lang, item_system)] = n
        return sizes

    def rule_judgments(self, task: str, lang: str, system: str, judge: str, stored: tuple[str, str | None],
                       rule: TextRule, value: bool) -> list[tuple[int, str, str | None]]:
        """(item id, source id, raw output) of the current items of one task, language and system
        whose verdict in force by `judge` is `stored` (status, verdict) and whose raw output
        `rule.check` reads as `value`, in item order: what a benchmark's own rule reads
        differently from calibrate's parser, item by item."""
        self.conn.create_function("text_rule", 2, lambda raw, lang: int(rule.check(raw, lang)), deterministic=True)
        status, verdict = stored
        return [tuple(r) for r in self.conn.execute(
            "SELECT i.id, i.source_id, j.raw_output FROM items i "
            "JOIN verdicts_in_force v ON v.item_id = i.id AND v.judge_name = ? JOIN judgments j ON j.id = v.judgment_id "
            f"WHERE i.task = ? AND i.lang = ? AND i.system = ? AND i.current = 1 AND {VISIBLE} "
            "AND v.status IS ? AND v.verdict IS ? AND text_rule(j.raw_output, i.lang) = ? ORDER BY i.id",
            (judge, task, lang, system, status, verdict, int(value)))]


def _number(text: str) -> int | float:
    """A judgment's `correct` as stored in a set (an integer, in practice)."""
    try:
        return int(text)
    except ValueError:
        return float(text)


def _group_key(task: str, lang: str, system: str, reference: str, gold: str, values: tuple, by_ref: bool) -> tuple:
    """A score group's columns: the reference only where it can change a score."""
    gold_label = gold[1:] if gold else None
    judged = any(values[k] is not None for k in range(0, len(values), 4))
    kept = reference[1:] if by_ref and reference and (gold_label is not None or judged) else None
    return (task, lang, system, kept, gold_label, *values)
