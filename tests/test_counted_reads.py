"""The reads that count in SQL instead of building one Python object per item give what the
item-by-item computation gives, on random data: `calibrate scores` (groups of items counted by
`Store.score_groups`), the judges' reliability figures and trust thresholds (verdicts read in
groups from `cell_verdicts` by `Store.verdict_groups`), what the thresholds accept (the escalate
order in SQL, the export's marks), and the jury (sets of verdicts counted by migration 0018's
triggers); and the tables the triggers keep equal what their views compute afresh after any
sequence of writes."""

from __future__ import annotations

import csv
import io
import itertools
import json
import math
import sqlite3
from collections import Counter, defaultdict

import numpy as np
import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from calibrate.cells import BY_CHOICES, CellKinds, ReportError
from calibrate.formats.c3 import c3_right
from calibrate.formats.gold import write_csv, write_jsonl
from calibrate.gold import gold_by_item, gold_label
from calibrate.kinds import POSITIVE
from calibrate.model import TIED, NewItem, NewJudgment
from calibrate.reliability_cells import (
    JURY,
    JudgedItem,
    TrustMarks,
    _in_cell_words,
    _set_verdicts,
    jury_data,
    reliability_by_cell,
    trust_by_cell,
    trust_marks,
)
from calibrate.scores import build as scores_build
from calibrate.scores import render as scores_render
from calibrate.scores.model import NO_SYSTEM
from calibrate.stats import reliability as stats
from calibrate.stats.trust_or_escalate import UNPARSED, minimum_calibration, trust_threshold
from calibrate.store import Store
from calibrate.templates import TemplateSet
from tests.majority_reference import in_force

TEMPLATES = TemplateSet()
TASKS = [("c3/lexical", "en", ("yes", "no")), ("c3/semantic", "zh", ("是", "否")),
         ("superglue/boolq", "en", ("True", "False")), ("superglue/rte", "en", ("entailment", "not_entailment"))]
FIELDS = {"c3/lexical": {"content": "c", "notation": "n", "response": "r"},
          "c3/semantic": {"content": "c", "annotation": "a", "response": "r"},
          "superglue/boolq": {"question": "q", "passage": "p", "response": "True"},
          "superglue/rte": {"premise": "p", "hypothesis": "h", "response": "entailment"}}
OUTPUTS = ["The answer is: yes", "The answer is: no.", "**yes**", "the answer is: Yes, clearly", "最终答案为：是",
           "最终答案为：否", "The answer is: yes\nThe answer is: no", "the answer is: yes. The answer is: no", "", None,
           # outputs migration 0020's SQL leaves to C3's rule in Python
           "The answer is: yes\x00", "最终答案为：是\U0010ffff"]
# confidences on a grid step, a hair either side of one, ordinary values, and ones that are no probability
CONFIDENCES = [None, 0.7, 0.701, 0.7 + 1e-12, 0.7 - 1e-12, 0.8, 0.95, 1.0, 0.0, 0.5, 0.93, 0.66, 1.2, -0.1]

item = st.fixed_dictionaries({
    "task": st.integers(0, len(TASKS) - 1),
    "system": st.sampled_from(["", "s1", "s2"]),
    "reference": st.sampled_from([0, 1, None]),  # None: no gold (a test split's item)
    # per judge: None (not judged) or its samples: (status, verdict index, confidence, output)
    "judges": st.lists(st.one_of(st.none(), st.lists(st.tuples(
        st.sampled_from(["verdict", "verdict", "verdict", "unparsed", "error"]), st.integers(0, 1),
        st.sampled_from(CONFIDENCES) | st.floats(0, 1), st.sampled_from(OUTPUTS)), min_size=1, max_size=3)),
        min_size=2, max_size=2),
    "repeats": st.booleans(),  # the samples are repeats (judge --repeat), else judgments one after another
    "labels": st.lists(st.integers(0, 1), max_size=3),
    "correct": st.sampled_from([None, 0, 1]),
    "padding": st.integers(0, 4),  # spaces after the response: lengths vary
})


def fill(store: Store, items: list[dict], serial) -> list[int]:
    k = next(serial)
    ids, _ = store.add_items([
        NewItem(TASKS[it["task"]][0], TASKS[it["task"]][1], f"{k}-{n}",
                {**(fields := FIELDS[TASKS[it["task"]][0]]), "response": fields["response"] + " " * it["padding"]},
                reference=None if it["reference"] is None else TASKS[it["task"]][2][it["reference"]], system=it["system"])
        for n, it in enumerate(items)], with_ids=True)
    judgments = []
    for item_id, it in zip(ids, items, strict=True):
        labels = TASKS[it["task"]][2]
        for name, samples in zip(("gpt", "r1"), it["judges"], strict=True):
            for s, (status, verdict, confidence, output) in enumerate(samples or []):
                judgments.append(NewJudgment(
                    item_id=item_id, judge_name=name, judge_key=name, status=status, sample=s if it["repeats"] else 0,
                    verdict=labels[verdict] if status == "verdict" else None, confidence=confidence,
                    raw_output=output, correct=it["correct"] if status == "verdict" else None))
    store.add_judgments(judgments)
    for item_id, it in zip(ids, items, strict=True):
        for annotator, label in zip(("ann0", "ann1", "ann2"), it["labels"], strict=False):
            store.annotate(item_id, annotator, "label", label=TASKS[it["task"]][2][label])
    return ids


# -- reliability and trust ----------------------------------------------------------------------


def items_one_by_one(store: Store, kinds: CellKinds, gold_from: str | None = None) -> dict[tuple, list[JudgedItem]]:
    """(cell, judge) -> every counted item the judge judged, read item by item: its samples as
    the verdict in force reads them (the newest judgment of each sample index in the judge's
    newest configuration, a failed call never newer than a verdict, a failed one no vote; when there is one sample or all failed, the
    newest judgment that is not an error), gold label, response length and system, with its
    verdict and confidence set by the module's rule (`_set_verdicts`)."""
    labels = defaultdict(dict)
    for row in store.current_labels():
        labels[row["item_id"]][row["annotator"]] = row["label"]
    gold = gold_by_item(labels, gold_from)
    cells: dict[tuple, dict[int, JudgedItem]] = defaultdict(dict)
    for it in store.iter_items():
        if TEMPLATES.people_decide(it.task, it.lang):
            continue
        by_judge = defaultdict(list)
        for j in sorted(store.judgments_for_item(it.id), key=lambda j: (j.status != "error", j.judged_at, j.id)):
            by_judge[j.judge_name].append(j)
        for name, judged in by_judge.items():
            newest_key = judged[-1].judge_key
            in_force = {j.sample: j for j in judged if j.judge_key == newest_key}  # the newest of each index
            if len(in_force) > 1 and any(j.status != "error" for j in in_force.values()):
                samples = in_force
            else:
                counted = [j for j in judged if j.status != "error"]
                if not counted:
                    continue
                samples = {0: counted[-1]}
            response = it.fields.get("response")
            found = cells[(it.task, it.lang, name)].setdefault(it.id, JudgedItem(
                it.id, human=gold.get(it.id), length=len(response) if isinstance(response, str) else None,
                system=it.system or None))
            for k, j in samples.items():
                found.samples[k] = j.verdict if j.status == "verdict" else UNPARSED if j.status == "unparsed" else None
                found.logprobs[k] = j.confidence if j.confidence is not None and 0 <= j.confidence <= 1 else None
    out: dict[tuple, list[JudgedItem]] = defaultdict(list)
    for (task, lang, name), members in cells.items():
        _in_cell_words(kinds, task, lang, members.values())
        _set_verdicts(list(members.values()))
        out[(kinds.key(task, lang), name)] += members.values()
    return {cell: sorted(members, key=lambda i: i.item_id) for cell, members in out.items()}


def reliability_one_by_one(key, judge, kind, items: list[JudgedItem]) -> dict:
    """Every reliability figure from a list of items, as the statistics take them item by item."""
    most = max(len(i.samples) for i in items)
    figures = {"repeats": most, "fewest_repeats": min((len(i.samples) for i in items if len(i.samples) > 1), default=most),
               "consistency": None, "unstable_items": [], "calibration": None, "length_bias": None, "systems": {}}
    if kind is not None and kind.scored:
        return {**figures, "repeats": 1, "fewest_repeats": 1}
    if figures["repeats"] >= 2:
        width = max(max(i.samples) + 1 for i in items)
        found = stats.consistency([[i.samples.get(k) for k in range(width)] for i in items])
        figures["consistency"], figures["unstable_items"] = found.as_dict(), [items[r].item_id for r in found.unstable]
    scored = [i for i in items if i.verdict is not None and i.confidence is not None and i.human is not None]
    if scored:
        figures["calibration"] = stats.calibration([i.confidence for i in scored],
                                                   [i.verdict == i.human for i in scored]).as_dict()
    if kind is None or kind.positive is None:
        return figures
    polar = [i for i in items if kind.polarity(i.verdict) and kind.polarity(i.human)]
    sized = sorted((i for i in polar if i.length is not None),  # the order `measure` fits in
                   key=lambda i: (kind.polarity(i.verdict) == POSITIVE, kind.polarity(i.human) == POSITIVE, i.length))
    if sized:
        figures["length_bias"] = stats.length_bias([kind.polarity(i.verdict) == POSITIVE for i in sized],
                                                   [kind.polarity(i.human) == POSITIVE for i in sized],
                                                   [i.length for i in sized]).as_dict()
    named = [i for i in polar if i.system]
    if named:
        figures["systems"] = {name: {**probe.as_dict(), "same_family": None} for name, probe in stats.leniency(
            [kind.polarity(i.verdict) == POSITIVE for i in named], [kind.polarity(i.human) == POSITIVE for i in named],
            [i.system for i in named]).items()}
    return figures


more = st.lists(st.tuples(st.sampled_from(["relabel", "undo", "reparse", "judge again", "new version"]),
                          st.integers(0, 10**6), st.integers(0, 1)), max_size=6)


def shake(store: Store, ids: list[int], changes) -> None:
    """Writes after the first ones: a label changed, a decision undone, a judgment re-parsed or
    judged again, a new version of an item (the old one stops counting)."""
    for what, pick, value in changes:
        item_id = ids[pick % len(ids)]
        it = store.item(item_id)
        if it is None:
            continue
        words = next(t[2] for t in TASKS if t[0] == it.task)
        if what == "relabel":
            store.annotate(item_id, ("ann0", "ann1", "ann2")[pick % 3], "label", label=words[value])
        elif what == "undo":
            store.undo_last(("ann0", "ann1", "ann2")[pick % 3])
        elif what in ("reparse", "judge again"):
            found = store.judgments_for_item(item_id)
            if not found:
                continue
            if what == "reparse":
                store.update_parse(found[pick % len(found)].id, "verdict", words[value], None, None)
            else:
                store.add_judgments([NewJudgment(item_id=item_id, judge_name=found[0].judge_name, judge_key="again",
                                                 status="verdict", verdict=words[value], confidence=0.5 + value / 3,
                                                 sample=pick % 2)])
        else:
            store.add_items([NewItem(it.task, it.lang, it.source_id, {**it.fields, "response": "new " * value},
                                     reference=it.reference, system=it.system, version=it.version + 1)])


def test_tables_kept_by_triggers_equal_their_views_after_any_writes():
    """cell_verdicts, verdict_sets and score_sets, and the sets' counts, equal what their views and a count
    over them give afresh, and shared_items holds the items with two or more labels in force,
    whatever was written: labels, undo, re-parses, judgments added (repeats too), new item
    versions."""
    store = Store(":memory:")
    serial = itertools.count()
    c = store.conn

    def rows(sql: str) -> list[tuple]:
        return sorted(tuple(r) for r in c.execute(sql))

    @settings(max_examples=25, deadline=None)
    @given(st.lists(item, min_size=1, max_size=12), more)
    def check(items, changes):
        shake(store, fill(store, items, serial), changes)
        assert rows("SELECT * FROM cell_verdicts") == rows("SELECT * FROM cell_verdict_rows")
        assert rows("SELECT * FROM verdict_sets") == rows("SELECT * FROM verdict_set_rows")
        assert rows("SELECT task, lang, system, verdicts, n FROM verdict_set_counts WHERE n != 0") == rows(
            "SELECT task, lang, system, verdicts, count(*) FROM verdict_set_rows GROUP BY 1, 2, 3, 4")
        assert rows("SELECT * FROM verdict_set_labels WHERE n != 0") == rows(
            "SELECT s.task, s.lang, s.system, s.verdicts, l.annotator, l.label, count(*) FROM verdict_set_rows s "
            "JOIN labels_in_force l ON l.item_id = s.item_id GROUP BY 1, 2, 3, 4, 5, 6")
        assert rows("SELECT * FROM score_sets") == rows("SELECT * FROM score_set_rows")
        assert rows("SELECT task, lang, system, reference, gold, verdicts, n FROM score_set_counts WHERE n != 0") == rows(
            "SELECT task, lang, system, reference, gold, verdicts, count(*) FROM score_set_rows GROUP BY 1, 2, 3, 4, 5, 6")
        assert rows("SELECT item_id FROM shared_items") == rows(
            "SELECT item_id FROM labels_in_force GROUP BY item_id HAVING count(*) >= 2")

    try:
        check()
    finally:
        store.close()


again = st.lists(st.tuples(st.integers(0, 10**6), st.sampled_from(["gpt", "r1", "llama"]), st.integers(0, 2),
                           st.sampled_from(["verdict", "verdict", "unparsed", "error"]), st.integers(0, 1),
                           st.sampled_from(OUTPUTS)), min_size=1, max_size=80)


def test_judgments_in_one_batch_keep_score_sets_as_one_at_a_time(monkeypatch):
    """Judgments stored in one batch (score_sets rewritten once per touched item as the batch
    ends, migration 0021) leave score_sets and the counts of every set in use as the same
    judgments stored one at a time do (each verdict in force rewriting its item's row), and as the
    views give afresh: on items with labels, earlier verdicts and repeats, and on an unfinished
    import's hidden items (shown when it finishes, with an item shown at once between them); and
    so does a judgment deleted while the rewrite is deferred."""
    import calibrate.store.judged as judged

    batched, single = Store(":memory:"), Store(":memory:")
    serial = itertools.count()

    def rows(store: Store, sql: str) -> list[tuple]:
        return sorted(tuple(r) for r in store.conn.execute(sql))

    @settings(max_examples=25, deadline=None, phases=[Phase.generate])  # the stores grow: nothing to shrink
    @given(st.lists(item, min_size=1, max_size=12), again)
    def check(items, judgments):
        k = next(serial)
        ids = [fill(store, items, itertools.count(k)) for store in (batched, single)][0]
        run = [store.begin_import(f"hidden {k}") for store in (batched, single)]
        added = []  # two items of the unfinished run, and between them one shown at once
        for store, r in zip((batched, single), run, strict=True):
            added.append([store.add_items([NewItem("c3/lexical", "en", f"{name}-{k}", FIELDS["c3/lexical"])],
                                          with_ids=True, run=in_run)[0][0]
                          for name, in_run in (("hidden", r), ("shown", None), ("hidden too", r))])
        assert added[0] == added[1]
        tasks = [TASKS[it["task"]] for it in items] + [TASKS[0]] * 3
        ids += added[0]
        new = []
        for pick, name, sample, status, verdict, output in judgments:
            item_id, (_, _, words) = ids[pick % len(ids)], tasks[pick % len(ids)]
            new.append(NewJudgment(item_id=item_id, judge_name=name, judge_key=name, status=status, sample=sample,
                                   verdict=words[verdict] if status == "verdict" else None, raw_output=output))
        monkeypatch.setattr(judged, "SCORE_SETS_DEFERRED_FROM", 1)
        batched.add_judgments(new)
        monkeypatch.setattr(judged, "SCORE_SETS_DEFERRED_FROM", 10**9)
        for judgment in new:
            single.add_judgments([judgment])
        newest = batched.conn.execute("SELECT max(id) FROM judgments").fetchone()[0]
        for store, deferring in ((batched, True), (single, False)):  # a verdict removed alone (a clean-up)
            with store.transaction():
                if deferring:
                    store.conn.execute("INSERT INTO score_set_deferrals (writer) VALUES (1)")
                store.conn.execute("DELETE FROM judgments WHERE id = ?", (newest,))
                store.conn.execute("DELETE FROM score_set_deferrals")
        for store, r in zip((batched, single), run, strict=True):
            store.finish_import(r)
        for sql in ("SELECT * FROM score_sets", "SELECT task, lang, system, reference, gold, verdicts, n "
                    "FROM score_set_counts WHERE n != 0", "SELECT * FROM score_set_stale", "SELECT * FROM score_set_deferrals"):
            assert rows(batched, sql) == rows(single, sql), sql
        assert rows(batched, "SELECT * FROM score_sets") == rows(batched, "SELECT * FROM score_set_rows")
        assert rows(batched, "SELECT task, lang, system, reference, gold, verdicts, n FROM score_set_counts "
                    "WHERE n != 0") == rows(batched, "SELECT task, lang, system, reference, gold, verdicts, count(*) "
                                             "FROM score_set_rows GROUP BY 1, 2, 3, 4, 5, 6")

    try:
        check()
    finally:
        batched.close()
        single.close()


def test_a_failed_batch_of_judgments_leaves_score_sets_rewritten_per_row_in_the_same_transaction():
    store = Store(":memory:")
    (item_id,), _ = store.add_items([NewItem("c3/lexical", "en", "1", FIELDS["c3/lexical"])], with_ids=True)
    judged = lambda i, verdict: NewJudgment(item_id=i, judge_name="gpt", judge_key="gpt", status="verdict",  # noqa: E731
                                            verdict=verdict, raw_output="The answer is: " + verdict)
    with store.transaction():
        with pytest.raises(sqlite3.IntegrityError):  # no such item: the batch fails, the caller goes on
            store.add_judgments([judged(item_id, "yes")] * 3 + [judged(item_id + 99, "no")])
        store.add_judgments([judged(item_id, "no")])
    rows = store.conn.execute("SELECT verdicts FROM score_sets").fetchall()
    assert [r[0] for r in rows] == ["gpt\x1fverdict\x1fvno\x1f\x1f0"]
    assert store.conn.execute("SELECT count(*) FROM score_set_deferrals").fetchone()[0] == 0
    store.close()


def test_reliability_from_verdict_groups_equals_reliability_item_by_item():
    """Every reliability figure (repeats, consistency and its unstable items, calibration, the
    length and per-system probes) from the verdicts read in groups equals the figures the
    statistics give on each item's own verdict, confidence, gold label, length and system, in
    every cell and for every judge, with or without an adjudicator."""
    store = Store(":memory:")
    serial = itertools.count()

    @settings(max_examples=20, deadline=None, phases=[Phase.generate])  # the store grows: nothing to shrink
    @given(st.lists(item, min_size=1, max_size=30), more, st.sampled_from([("task", "lang"), ("task",)]),
           st.sampled_from([None, "ann1"]))
    def check(items, changes, by, gold_from):
        shake(store, fill(store, items, serial), changes)
        kinds = CellKinds(TEMPLATES, by)
        grouped = {cell: r.as_dict() for cell, r in reliability_by_cell(store, kinds, gold_from=gold_from).items()}
        one_by_one = {(key, name): reliability_one_by_one(key, name, kinds.kind(key), members)
                      for (key, name), members in items_one_by_one(store, kinds, gold_from).items()}
        assert grouped.keys() == one_by_one.keys()
        assert not _differences(grouped, one_by_one), _differences(grouped, one_by_one)[:5]

    try:
        check()
    finally:
        store.close()


def test_trust_from_verdict_groups_equals_trust_from_every_items_confidence():
    """Thresholds found from the verdicts read in groups (and the irregular ones one by one)
    are those `trust_threshold` finds on each item's own confidence, verdict and gold label
    (read item by item), in every cell, for every judge and system; and an item's verdict is
    accepted (the export's marks, the escalate order in SQL) exactly when its own confidence
    reaches its cell's threshold."""
    store = Store(":memory:")
    serial = itertools.count()

    @settings(max_examples=20, deadline=None)
    @given(st.lists(item, min_size=1, max_size=30), st.sampled_from([(0.6, 0.3), (0.8, 0.2)]),
           st.sampled_from([("task", "lang"), ("task",), ("system", "task", "lang")]))
    def check(items, level, by):
        fill(store, items, serial)
        target, risk = level
        kinds = CellKinds(TEMPLATES, by)
        found, _ = trust_by_cell(store, kinds, target=target, risk=risk, by_system="system" in by)
        expected = {}
        for (key, name), members in items_one_by_one(store, kinds).items():
            groups = defaultdict(list)
            for m in members:
                groups[(m.system or NO_SYSTEM) if "system" in by else None].append(m)
            for system, group in groups.items():
                scored = [m for m in group if m.verdict is not None and m.confidence is not None and m.human is not None]
                found_here = expected[(key, name, system)] = trust_threshold(
                    [m.confidence for m in scored], [m.verdict == m.human for m in scored], target=target, risk=risk,
                    min_calibration=minimum_calibration(target, risk))
                found_here.without_confidence = sum(m.verdict is not None and m.human is not None and m.confidence is None
                                                    for m in group)
        assert found.keys() == expected.keys()
        for key, trust in expected.items():
            assert found[key].as_dict() == pytest.approx(trust.as_dict()), key

        kinds = CellKinds(TEMPLATES, BY_CHOICES)
        marks = trust_marks(store, kinds, target=target, risk=risk)
        cell_trust, _ = trust_by_cell(store, kinds, target=target, risk=risk)
        accepted = set()
        for (key, name), members in items_one_by_one(store, kinds).items():
            t = cell_trust[(key, name, None)]
            accepted |= {m.item_id for m in members if t.met and m.verdict is not None and m.confidence is not None
                         and m.confidence >= t.threshold}
        store.set_trust_marks(marks)
        in_sql = set(store.escalation_ids(accepted=True, limit=10**9))
        assert in_sql == accepted
        assert not in_sql & set(store.escalation_ids(accepted=False, limit=10**9))
        jsonl, table = io.StringIO(), io.StringIO()
        write_jsonl(store, jsonl, marks=marks)
        lines = [json.loads(line) for line in jsonl.getvalue().splitlines()]
        assert {r["item_id"] for r in lines if "accepted" in r["trust"].values()} == accepted
        write_csv(store, table, marks=marks)
        rows = list(csv.DictReader(io.StringIO(table.getvalue())))
        assert {int(r["item_id"]) for r in rows if "accepted" in [v for k, v in r.items() if k.startswith("trust:")]} \
            == accepted

    try:
        check()
    finally:
        store.close()


def test_items_surely_escalated_are_those_no_trust_marks_could_accept():
    """The items the escalate order shows while its thresholds are being fitted
    (`Store.surely_escalated_ids`) are exactly those on which no judge's verdict is accepted even
    by the most lenient marks (every threshold 0, every irregular verdict accepted), for any
    judge and filter: under any marks each of them is escalated."""
    store = Store(":memory:")
    serial = itertools.count()

    @settings(max_examples=20, deadline=None)
    @given(st.lists(item, min_size=1, max_size=30), st.sampled_from([None, "gpt", "r1"]),
           st.sampled_from([{}, {"task": "c3/lexical"}, {"system": "s1"}, {"task": "superglue/rte", "lang": "en"}]))
    def check(items, judge, scope):
        fill(store, items, serial)
        pairs = store.conn.execute("SELECT DISTINCT task, lang FROM items").fetchall()
        lenient = TrustMarks({(task, lang, name): 0.0 for task, lang in pairs for name in ("gpt", "r1")},
                             {(i, name): True for (i,) in store.conn.execute("SELECT id FROM items")
                              for name in ("gpt", "r1")}, judge)
        store.set_trust_marks(lenient)
        surely = store.surely_escalated_ids(judge=judge, **scope, limit=10**9)
        assert surely == store.escalation_ids(accepted=False, **scope, limit=10**9)
        window = store.surely_escalated_ids(judge=judge, **scope, after=surely[0] if surely else 0, limit=3)
        assert window == surely[1:4]

    try:
        check()
    finally:
        store.close()

def test_agreement_gold_rows_worked_out_in_python_equal_sql_in_its_order():
    """`agreement_data` works out the gold label of the items several people labelled, its
    judge x gold counts (those of the items one person labelled from the counts less the shared
    items' labels) and its ties in Python from the rows it reads: they equal the SQL gold
    (`gold_of`) of every labelled item joined to the verdicts in force and grouped, row for row
    in SQLite's order, with and without an adjudicator, per system and for one judge."""
    from calibrate.store.sql import gold_of

    store = Store(":memory:")
    serial = itertools.count()

    @settings(max_examples=25, deadline=None)
    @given(st.lists(item, min_size=1, max_size=30), more, st.sampled_from([None, "ann1"]),
           st.sampled_from([None, "s1"]), st.sampled_from([None, "gpt"]))
    def check(items, changes, gold_from, system, judge):
        shake(store, fill(store, items, serial), changes)
        data = store.agreement_data(judge, system=system, gold_from=gold_from)
        gold = f"SELECT g.item_id, g.label, i.task, i.lang FROM ({gold_of('labels_in_force')}) g " \
               "JOIN counted_items i ON i.id = g.item_id WHERE (?2 IS NULL OR i.system = ?2)"
        assert data.judge_vs_gold == [tuple(r) for r in store.conn.execute(
            f"SELECT g.task, g.lang, v.judge_name, v.status, v.verdict, g.label, count(*) FROM ({gold}) g "
            "JOIN verdicts_in_force v ON v.item_id = g.item_id WHERE g.label IS NOT NULL "
            "AND (?3 IS NULL OR v.judge_name = ?3) GROUP BY 1, 2, 3, 4, 5, 6", (gold_from, system, judge))]
        assert sorted(data.tied_items) == [r[0] for r in store.conn.execute(
            f"SELECT item_id FROM ({gold}) WHERE label IS NULL ORDER BY 1", (gold_from, system))]

    try:
        check()
    finally:
        store.close()


def test_jury_from_counted_sets_equals_the_jury_item_by_item():
    """The jury's rows (judged, against each annotator, against the gold label of every labelled
    item, on shared items) from the counted sets of verdicts equal the plurality of each item's
    verdicts in force, read item by item, overall and per system (a tie counted as one, not as
    unparsed), and so do the items it leaves out as judged by one judge only, with the judges
    whose calls failed there."""
    store = Store(":memory:")
    serial = itertools.count()

    @settings(max_examples=20, deadline=None)
    @given(st.lists(item, min_size=1, max_size=30), more, st.sampled_from([None, "s1"]))
    def check(items, changes, system):
        shake(store, fill(store, items, serial), changes)
        data = jury_data(store, TEMPLATES, system=system)
        labels = defaultdict(dict)
        for row in store.current_labels():
            labels[row["item_id"]][row["annotator"]] = row["label"]
        judged, versus_human, versus_gold, shared = Counter(), Counter(), Counter(), set()
        judges, alone = set(), []
        for it in store.iter_items(system=system):
            by_judge = defaultdict(list)
            for j in store.judgments_for_item(it.id):
                by_judge[j.judge_name].append(j)
            found = {name: in_force(judgments)[1:] for name, judgments in by_judge.items()}
            said = {name: (status, verdict) for name, (status, verdict) in found.items() if status != "error"}
            judges |= set(said)
            if len(said) == 1:
                alone.append((it.task, it.lang, {name for name, (status, _) in found.items() if status == "error"}))
            if len(said) < 2:
                continue
            votes = Counter(verdict for status, verdict in said.values() if status == "verdict").most_common()
            verdict = votes[0][0] if votes and (len(votes) == 1 or votes[0][1] > votes[1][1]) else None
            status = "verdict" if verdict is not None else TIED if votes else "unparsed"
            cell = (it.task, it.lang, JURY)
            judged[(*cell, status)] += 1
            for annotator, label in labels.get(it.id, {}).items():
                versus_human[(*cell, annotator, status, verdict, label)] += 1
            if len(labels.get(it.id, {})) >= 2:
                shared.add((it.id, JURY, status, verdict))
            gold = gold_label(labels.get(it.id, {})).label
            if gold is not None:
                versus_gold[(*cell, status, verdict, gold)] += 1
        if len(judges) < 2:
            assert data is None
            return
        assert Counter({r[:-1]: r[-1] for r in data.judged}) == judged
        assert Counter({r[:-1]: r[-1] for r in data.judge_vs_human}) == versus_human
        assert Counter({r[:-1]: r[-1] for r in data.judge_vs_gold}) == versus_gold
        assert set(data.shared_verdicts) == shared
        one_judge = Counter((task, lang, JURY, tuple(sorted(failed & judges))) for task, lang, failed in alone)
        assert Counter({r[:-1]: r[-1] for r in data.one_judge_only}) == one_judge

    try:
        check()
    finally:
        store.close()


# -- scores --------------------------------------------------------------------------------------


def _per_item_gather(store, templates, judges, system, task_langs=None):
    """`calibrate scores`' data item by item, from plain reads: one group per item (of the
    `task_langs` pairs, if given), and the labelled items whose labels tie (these items hold
    none C3 passes over and no generation item, so none of those and no judge's own generation
    decisions)."""
    groups, skipped, ties = [], {}, defaultdict(int)
    labels = defaultdict(dict)
    for row in store.current_labels():
        labels[row["item_id"]][row["annotator"]] = row["label"]
    for it in store.iter_items(system=system):
        if task_langs is not None and (it.task, it.lang) not in task_langs:
            continue
        template = templates.for_task(it.task, it.lang)
        kind = template.kind
        if not kind.right_or_wrong:
            continue
        gold, _ = gold_label(labels.get(it.id, {}))
        if gold is None and labels.get(it.id):
            ties[(it.task, it.lang, it.system or NO_SYSTEM)] += 1

        def right(value, kind=kind, reference=it.reference) -> bool:
            if not kind.right_by_reference:
                return kind.polarity(value) == POSITIVE
            return reference is not None and kind.canonical(value) == kind.canonical(reference)

        by_judge = defaultdict(list)
        for j in store.judgments_for_item(it.id):
            if not judges or j.judge_name in judges:
                by_judge[j.judge_name].append(j)
        no_gold = kind.needs_gold and it.reference is None and (gold is not None or bool(by_judge))
        group = scores_build._Group(it.task, it.lang, it.system or NO_SYSTEM, it.system,
                                    np.nan if gold is None or no_gold else float(right(gold)), not template.judged, 1,
                                    scores_build._words(kind), no_gold=no_gold)
        for name, judgments in by_judge.items():
            if group.people_decide:
                continue
            j, status, verdict = in_force(judgments)  # the majority of repeats, computed in Python
            if status != "verdict" or no_gold:
                parsed = np.nan
            elif j.correct is not None and kind.right_by_reference:
                parsed = float(j.correct)
            else:
                parsed = float(right(verdict))
            group.verdicts[name] = (parsed, c3_right(j.raw_output, it.lang) if it.task.startswith("c3/") else None)
            group.stored[name] = (status, verdict)
        groups.append(group)
    return groups, [f"{task} left out: {why}" for task, why in sorted(skipped.items())], ties, set(), {}


def _differences(a, b, where: str = "") -> list[str]:
    """Where two JSON values differ (floats compared up to the last bits of their sums)."""
    if isinstance(a, float) and isinstance(b, float):
        return [] if math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12) else [f"{where}: {a} != {b}"]
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return [f"{where}: keys {sorted(a)} != {sorted(b)}"]
        return [d for k in a for d in _differences(a[k], b[k], f"{where}.{k}")]
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{where}: {len(a)} != {len(b)} elements"]
        return [d for k, (x, y) in enumerate(zip(a, b, strict=True)) for d in _differences(x, y, f"{where}[{k}]")]
    return [] if a == b else [f"{where}: {a!r} != {b!r}"]


def test_scores_counted_in_groups_equal_scores_item_by_item(monkeypatch):
    """Every figure of `calibrate scores` (every cut, rankings, judge pairs, the C3-rule lines)
    from the counted groups equals the same computation over one group per item read item by
    item (up to the last bits of floating-point sums), over every task or some (`task_langs`,
    as `export c3` scores C3's)."""
    store = Store(":memory:")
    serial = itertools.count()
    some = [None, {TASKS[0][:2]}, {TASKS[0][:2], TASKS[2][:2]}]

    @settings(max_examples=20, deadline=None)
    @given(st.lists(item, min_size=1, max_size=30), st.sampled_from([("system", "task", "lang"), ("lang",), ("system",)]),
           st.sampled_from(some))
    def check(items, by, task_langs):
        fill(store, items, serial)

        def scores() -> dict | None:
            try:
                (found,) = scores_build.build_scores_by(store, TEMPLATES, (by,), task_langs=task_langs)
            except scores_build.ScoresError:
                return None
            return json.loads(scores_render.render_json(found))

        counted = scores()
        with monkeypatch.context() as patch:
            patch.setattr(scores_build, "_gather", _per_item_gather)
            one_by_one = scores()
        assert not _differences(counted, one_by_one), _differences(counted, one_by_one)[:5]

    try:
        check()
    finally:
        store.close()


def test_scores_leave_out_the_items_of_an_import_still_running():
    """Items an unfinished import wrote (and verdicts on them) are not in the scores until the
    import finishes."""
    store = Store(":memory:")
    try:
        serial = itertools.count()
        judged = {"task": 0, "system": "s1", "reference": 0, "repeats": False, "labels": [0], "correct": None,
                  "padding": 0, "judges": [[("verdict", 0, 0.9, "The answer is: yes")], None]}
        fill(store, [judged, {**judged, "labels": [1]}], serial)
        before = scores_render.render_json(scores_build.build_scores(store, TEMPLATES))
        run = store.begin_import("an import still running")
        ids, _ = store.add_items([NewItem("c3/lexical", "en", "running", FIELDS["c3/lexical"], system="s1")],
                                 with_ids=True, run=run)
        store.add_judgments([NewJudgment(item_id=ids[0], judge_name="gpt", judge_key="gpt", status="verdict",
                                         verdict="no", raw_output="The answer is: no")])
        assert scores_render.render_json(scores_build.build_scores(store, TEMPLATES)) == before
        store.finish_import(run)
        after = json.loads(scores_render.render_json(scores_build.build_scores(store, TEMPLATES)))
        assert {c["items"] for c in after["cells"]} == {3}
    finally:
        store.close()


# -- the report's reads on a second connection -----------------------------------------------------


def test_report_of_a_file_equals_the_report_of_its_copy_in_memory(tmp_path):
    """A report on a database file reads the jury's rows and reads and works out the reliability
    figures on a second connection in a thread; the same data in memory is read on its one
    connection. Both
    give the same report, to the byte, for every judge and with or without an adjudicator."""
    from calibrate.report import build_report
    from calibrate.report.model import ReportOptions
    from calibrate.report.render import render_json

    serial = itertools.count()

    @settings(max_examples=10, deadline=None, phases=[Phase.generate])
    @given(st.lists(item, min_size=2, max_size=40), st.sampled_from([None, "gpt", JURY]),
           st.sampled_from([None, "ann1"]))
    def check(items, judge, gold_from):
        path = tmp_path / f"{next(serial)}.db"
        on_file = Store(path)
        fill(on_file, items, serial)
        in_memory = Store(":memory:")
        on_file.conn.backup(in_memory.conn)
        options = ReportOptions(gold_from=gold_from, reliability=True, resamples=200)
        reports = []
        for store in (on_file, in_memory):
            try:
                reports.append(render_json(build_report(store, TEMPLATES, judge=judge, options=options)))
            except ReportError as error:  # nothing labelled yet, say: both refuse alike
                reports.append(f"refused: {error}")
            finally:
                store.close()
        assert reports[0] == reports[1]

    check()


def test_a_label_given_while_a_report_is_worked_out_counts_in_none_of_it(tmp_path, monkeypatch):
    """The report reads on two connections for seconds at a million items: a label committed
    meanwhile (here a second person's label on an item one person labelled, committed by another
    connection after the report's connection read the agreement and before the other one reads
    the jury's rows) reaches neither; the report is the one of the database as it was when it began."""
    import threading

    from calibrate.report import build as report_build
    from calibrate.report.model import ReportOptions
    from calibrate.report.render import render_json

    path = tmp_path / "busy.db"
    store = Store(path)
    items = [{"task": 0, "system": "s1", "reference": 0, "repeats": False, "correct": None, "padding": 0,
              "labels": [k % 2, 0] if k < 4 else [k % 2],
              "judges": [[("verdict", k % 3 % 2, 0.6 + k / 50, "The answer is: yes")],
                         [("verdict", k % 2, None, "The answer is: no")]]} for k in range(16)]
    once_labelled = fill(store, items, itertools.count())[5]
    options = ReportOptions(reliability=True, resamples=200)
    before = render_json(report_build.build_report(store, TEMPLATES, options=options))

    labelled, read_agreement, read_jury = threading.Event(), Store.agreement_data, report_build.jury_data
    def agreement_then_a_label(self, *args, **kwargs):
        found = read_agreement(self, *args, **kwargs)
        other = Store(path)
        other.annotate(once_labelled, "ann1", "label", label=TASKS[0][2][1])  # as the first person
        other.close()
        labelled.set()
        return found
    def jury_after_the_label(*args, **kwargs):
        assert labelled.wait(30)
        return read_jury(*args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(Store, "agreement_data", agreement_then_a_label)
        patch.setattr(report_build, "jury_data", jury_after_the_label)
        during = render_json(report_build.build_report(store, TEMPLATES, options=options))
    after = render_json(report_build.build_report(store, TEMPLATES, options=options))
    store.close()
    assert during == before
    assert after != before, "the label counts once the report that began before it is done"
