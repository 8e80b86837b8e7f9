"""The reads that count in SQL instead of building one Python object per item give what the
item-by-item computation gives, on random data: `calibrate scores` (groups of items counted by
`Store.score_groups`), the trust thresholds (confidences counted per step of the threshold grid
by `Store.confidence_counts`), and what the thresholds accept (the escalate order in SQL, the
export's marks)."""

from __future__ import annotations

import itertools
import json
import math
from collections import defaultdict

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calibrate.cells import BY_CHOICES, CellKinds
from calibrate.formats.c3 import c3_right
from calibrate.gold import gold_label
from calibrate.kinds import POSITIVE
from calibrate.model import NewItem, NewJudgment
from calibrate.reliability_cells import JudgeReliability, gather, trust_by_cell, trust_marks
from calibrate.scores import build as scores_build
from calibrate.scores import render as scores_render
from calibrate.scores.model import NO_SYSTEM
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
           "最终答案为：否", "The answer is: yes\nThe answer is: no", "the answer is: yes. The answer is: no", "", None]
# confidences on a grid step, a hair either side of one, ordinary values, and ones that are no probability
CONFIDENCES = [None, 0.7, 0.701, 0.7 + 1e-12, 0.7 - 1e-12, 0.8, 0.95, 1.0, 0.0, 0.5, 0.93, 0.66, 1.2, -0.1]

item = st.fixed_dictionaries({
    "task": st.integers(0, len(TASKS) - 1),
    "system": st.sampled_from(["", "s1", "s2"]),
    "reference": st.integers(0, 1),
    # per judge: None (not judged) or its samples: (status, verdict index, confidence, output)
    "judges": st.lists(st.one_of(st.none(), st.lists(st.tuples(
        st.sampled_from(["verdict", "verdict", "verdict", "unparsed", "error"]), st.integers(0, 1),
        st.sampled_from(CONFIDENCES) | st.floats(0, 1), st.sampled_from(OUTPUTS)), min_size=1, max_size=3)),
        min_size=2, max_size=2),
    "repeats": st.booleans(),  # the samples are repeats (judge --repeat), else judgments one after another
    "labels": st.lists(st.integers(0, 1), max_size=3),
    "correct": st.sampled_from([None, 0, 1]),
})


def fill(store: Store, items: list[dict], serial) -> list[int]:
    k = next(serial)
    ids, _ = store.add_items([
        NewItem(TASKS[it["task"]][0], TASKS[it["task"]][1], f"{k}-{n}", FIELDS[TASKS[it["task"]][0]],
                reference=TASKS[it["task"]][2][it["reference"]], system=it["system"])
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


# -- trust ---------------------------------------------------------------------------------------


def test_trust_from_counted_confidences_equals_trust_from_every_items_confidence():
    """Thresholds found from the counted confidences (and the irregular verdicts one by one)
    are those `trust_threshold` finds on each item's own confidence, verdict and gold label
    (`gather`, item by item), in every cell, for every judge and system; and an item's verdict
    is accepted (the export's marks, the escalate order in SQL) exactly when its own confidence
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
        for (key, name), members in gather(store, kinds).items():
            groups = defaultdict(list)
            for m in members:
                groups[(m.system or NO_SYSTEM) if "system" in by else None].append(m)
            for system, group in groups.items():
                expected[(key, name, system)] = JudgeReliability(key, name, kinds.kind(key), group).trust(target, risk)
        for key, trust in expected.items():
            assert found[key].as_dict() == pytest.approx(trust.as_dict()), key
        assert set(found) >= set(expected)
        assert all(found[key].n == 0 for key in set(found) - set(expected))

        kinds = CellKinds(TEMPLATES, BY_CHOICES)
        marks = trust_marks(store, kinds, target=target, risk=risk)
        cell_trust, _ = trust_by_cell(store, kinds, target=target, risk=risk)
        accepted = set()
        for (key, name), members in gather(store, kinds).items():
            t = cell_trust[(key, name, None)]
            accepted |= {m.item_id for m in members if t.met and m.verdict is not None and m.confidence is not None
                         and m.confidence >= t.threshold}
        store.set_trust_marks(marks)
        in_sql = set(store.escalation_ids(accepted=True, limit=10**9))
        assert in_sql == accepted
        assert not in_sql & set(store.escalation_ids(accepted=False, limit=10**9))
        rows = {r.item_id: r for r in store.export_rows()}
        in_python = {i for i, r in rows.items() if any(
            marks.accepted(i, r.item[0], r.item[1], judge, status, confidence)
            for judge, (status, _, _, confidence) in r.verdicts.items())}
        assert in_python == accepted

    try:
        check()
    finally:
        store.close()


# -- scores --------------------------------------------------------------------------------------


def _per_item_gather(store, templates, judge, system):
    """`calibrate scores`' data item by item, from plain reads: one group per item."""
    groups, skipped = [], {}
    labels = defaultdict(dict)
    for row in store.current_labels():
        labels[row["item_id"]][row["annotator"]] = row["label"]
    for it in store.iter_items(system=system):
        template = templates.for_task(it.task, it.lang)
        kind = template.kind
        if not kind.right_or_wrong:
            continue
        gold, _ = gold_label(labels.get(it.id, {}))

        def right(value, kind=kind, reference=it.reference) -> bool:
            if kind.positive is not None:
                return kind.polarity(value) == POSITIVE
            return reference is not None and kind.canonical(value) == kind.canonical(reference)

        group = scores_build._Group(it.task, it.lang, it.system or NO_SYSTEM, it.system,
                                    np.nan if gold is None else float(right(gold)), not template.judged, 1)
        by_judge = defaultdict(list)
        for j in store.judgments_for_item(it.id, judge):
            by_judge[j.judge_name].append(j)
        for name, judgments in by_judge.items():
            if group.people_decide:
                continue
            j, status, verdict = in_force(judgments)  # the majority of repeats, computed in Python
            if status != "verdict":
                parsed = np.nan
            elif j.correct is not None and kind.positive is None:
                parsed = float(j.correct)
            else:
                parsed = float(right(verdict))
            group.verdicts[name] = (parsed, c3_right(j.raw_output, it.lang) if it.task.startswith("c3/") else None)
            group.stored[name] = (status, verdict)
        groups.append(group)
    return groups, [f"{task} left out: {why}" for task, why in sorted(skipped.items())]


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
    item (up to the last bits of floating-point sums)."""
    store = Store(":memory:")
    serial = itertools.count()

    @settings(max_examples=20, deadline=None)
    @given(st.lists(item, min_size=1, max_size=30), st.sampled_from([("system", "task", "lang"), ("lang",), ("system",)]))
    def check(items, by):
        fill(store, items, serial)
        try:
            counted = json.loads(scores_render.render_json(scores_build.build_scores(store, TEMPLATES, by=by)))
        except scores_build.ScoresError:
            counted = None
        with monkeypatch.context() as patch:
            patch.setattr(scores_build, "_gather", _per_item_gather)
            try:
                one_by_one = json.loads(scores_render.render_json(scores_build.build_scores(store, TEMPLATES, by=by)))
            except scores_build.ScoresError:
                one_by_one = None
        assert not _differences(counted, one_by_one), _differences(counted, one_by_one)[:5]

    try:
        check()
    finally:
        store.close()
