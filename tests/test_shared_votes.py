"""The human ceiling and the alternative annotator test computed on coded arrays (`SharedVotes`)
give what the item-by-item computation gives, on random items: the statistics' own entry points,
and the report's cells built from its rows (`report.build._SharedCells`) under every way of
treating unparsed verdicts, with the English yes/no and Chinese 是/否 cells pooled."""

from __future__ import annotations

from collections import Counter, defaultdict

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calibrate.cells import CellKinds
from calibrate.model import AgreementData
from calibrate.report.build import _SharedCells
from calibrate.stats.agreement import kappa_from_tables
from calibrate.stats.alt_test import (
    AltTest,
    alternative_annotator_test,
    alternative_annotator_test_coded,
    decision_from_wins,
)
from calibrate.stats.ceiling import human_ceiling, human_ceiling_coded
from calibrate.stats.intervals import MIN_INTERVAL_ITEMS
from calibrate.stats.shared_votes import SharedVotes
from calibrate.templates import TemplateSet

RESAMPLES = 200


def alt_test_item_by_item(items: dict, judge: dict, *, epsilon: float = 0.2, alpha: float = 0.05,
                          min_items: int = 30) -> AltTest:
    """The alternative annotator test as a loop over items and annotators (the reference)."""
    humans = sorted({a for votes in items.values() for a, v in votes.items() if v is not None}, key=str)
    if len(humans) < 3:
        return AltTest(False, epsilon=epsilon, annotators=len(humans), min_items=min_items,
                       reason=f"needs 3 or more annotators on shared items; this cell has {len(humans)}")
    usable = {i: {a: v for a, v in votes.items() if v is not None} for i, votes in items.items() if i in judge}
    usable = {i: votes for i, votes in usable.items() if len(votes) >= 2}
    judge_wins: dict = {j: [] for j in humans}
    human_wins: dict = {j: [] for j in humans}
    for item, votes in usable.items():
        tally = Counter(votes.values())
        verdict = judge[item]
        for j, label in votes.items():
            judge_hits = tally[verdict] - (label == verdict) if verdict is not None else 0
            human_hits = tally[label] - 1
            judge_wins[j].append(judge_hits >= human_hits)
            human_wins[j].append(human_hits >= judge_hits)
    return decision_from_wins(humans, judge_wins, human_wins, epsilon=epsilon, alpha=alpha, min_items=min_items)


def ceiling_arrays_item_by_item(items: dict, judge: dict) -> tuple:
    """The human ceiling's per-item arrays, built item by item (the reference): the items used,
    the people, the labels, and the label counts, (judge, person) pairs and (person, person)
    pairs per item."""
    shared = {i: {a: v for a, v in votes.items() if v is not None} for i, votes in items.items()
              if judge.get(i) is not None and sum(v is not None for v in votes.values()) >= 2}
    people = sorted({a for votes in shared.values() for a in votes}, key=str)
    labels = sorted({v for votes in shared.values() for v in votes.values()} | {judge[i] for i in shared}, key=str)
    index = {label: k for k, label in enumerate(labels)}
    k = len(labels)
    counts = np.zeros((len(shared), k))
    judge_pairs = np.zeros((len(shared), k, k))
    human_pairs = np.zeros((len(shared), k, k))
    for row, (item, votes) in enumerate(shared.items()):
        for label in votes.values():
            counts[row, index[label]] += 1
        judge_pairs[row, index[judge[item]]] = counts[row]
        if len(people) == 2 and len(votes) == 2:
            human_pairs[row, index[votes[people[0]]], index[votes[people[1]]]] = 1
    return len(shared), people, counts, judge_pairs, human_pairs


LABELS = ["yes", "no", "maybe", "Yes"]


@st.composite
def items_and_judge(draw):
    annotators = draw(st.lists(st.sampled_from(["ann0", "ann1", "ann2", "bob", "Ann"]), min_size=0, max_size=5,
                               unique=True))
    labels = draw(st.lists(st.sampled_from(LABELS), min_size=1, max_size=4, unique=True))
    rows = draw(st.lists(st.tuples(st.lists(st.sampled_from([*labels, None, "absent"]), min_size=len(annotators),
                                            max_size=len(annotators)),
                                   st.sampled_from(["not judged", None, *labels, "other"])), max_size=60))
    order = draw(st.randoms(use_true_random=False)).sample(range(1000), len(rows))  # item ids in any order
    items, judge = {}, {}
    for item, (votes, verdict) in zip(order, rows, strict=True):
        items[item] = {a: label for a, label in zip(annotators, votes, strict=True) if label != "absent"}
        if verdict != "not judged":
            judge[item] = verdict
    return items, judge


@settings(max_examples=100, deadline=None)
@given(items_and_judge(), st.sampled_from([0.1, 0.2]))
def test_alt_test_on_arrays_is_the_item_by_item_test(drawn, epsilon):
    items, judge = drawn
    expected = alt_test_item_by_item(items, judge, epsilon=epsilon)
    assert alternative_annotator_test(items, judge, epsilon=epsilon).as_dict() == expected.as_dict()
    assert (alternative_annotator_test_coded(SharedVotes.from_dicts(items, judge), epsilon=epsilon).as_dict()
            == expected.as_dict())


@settings(max_examples=100, deadline=None)
@given(items_and_judge())
def test_ceiling_on_arrays_uses_the_item_by_item_tables(drawn):
    items, judge = drawn
    n, people, counts, judge_pairs, human_pairs = ceiling_arrays_item_by_item(items, judge)
    result = human_ceiling(items, judge, resamples=RESAMPLES)
    assert (result.n_items, result.annotators) == (n, len(people))
    if n < 2:
        assert result.judge.value is None
        return

    def same(value, expected):
        return value is None if not np.isfinite(expected) else value == pytest.approx(float(expected), abs=1e-12)

    assert same(result.judge.value, kappa_from_tables(judge_pairs.sum(axis=0)))
    if len(people) == 2:
        assert same(result.humans.value, kappa_from_tables(human_pairs.sum(axis=0)))
    if n >= MIN_INTERVAL_ITEMS:
        assert result.difference.ci is not None or result.difference.ci_reason


@settings(max_examples=25, deadline=None)
@given(st.data(), st.sampled_from(["exclude", "as-negative", "as-disagreement"]))
def test_report_cells_hold_the_items_and_verdicts_item_by_item(data, unparsed):
    """`_SharedCells` from the report's rows, against the per-item dicts the report built
    before: the ceilings and alt tests of each cell and judge are equal."""
    templates = TemplateSet()
    kinds = CellKinds(templates, ())  # pools c3/lexical en (yes/no) with c3/semantic zh (是/否)
    pairs = [("c3/lexical", "en", ["yes", "no"]), ("c3/semantic", "zh", ["是", "否"])]
    annotators = ["a", "b", "c", "d"]
    rows = data.draw(st.lists(st.tuples(st.sampled_from(pairs), st.lists(st.integers(-1, 1), min_size=4, max_size=4),
                                        st.lists(st.sampled_from(["verdict0", "verdict1", "unparsed", "error", "none"]),
                                                 min_size=2, max_size=2)), max_size=40))
    shared_labels, shared_verdicts = [], []
    for item_id, ((task, lang, labels), votes, verdicts) in enumerate(rows, start=1):
        if sum(v >= 0 for v in votes) < 2:
            votes = [0, 1, *votes[2:]]  # items two or more people labelled
        shared_labels += [(item_id, task, lang, a, labels[v]) for a, v in zip(annotators, votes, strict=True) if v >= 0]
        for judge, status in zip(("gpt", "r1"), verdicts, strict=True):
            if status != "none":
                shared_verdicts.append((item_id, judge, status.rstrip("01"),
                                        labels[int(status[-1])] if status.startswith("verdict") else None))
    agreement = AgreementData(judge_vs_human=[], judge_vs_gold=[], shared_labels=shared_labels,
                              shared_verdicts=shared_verdicts, judged=[])

    # the per-item dicts, as the report built them item by item
    per_item: dict = defaultdict(lambda: defaultdict(dict))
    item_cells = {}
    for item_id, task, lang, annotator, label in shared_labels:
        per_item[kinds.key(task, lang)][item_id][annotator] = kinds.label(task, lang, label)
        item_cells[item_id] = (task, lang)
    verdicts: dict = defaultdict(dict)
    for item_id, judge, status, verdict in shared_verdicts:
        if status == "verdict":
            verdicts[judge][item_id] = kinds.label(*item_cells[item_id], verdict)
        elif status == "unparsed":
            verdicts[judge][item_id] = None
    cells = _SharedCells(agreement, kinds)
    for key, items in per_item.items():
        kind = kinds.kind(key)
        for judge in ("gpt", "r1"):
            shown = {}
            for item_id in items:
                if item_id not in verdicts[judge]:
                    continue
                verdict = verdicts[judge][item_id]
                if verdict is None and unparsed == "as-negative" and kind.positive:
                    verdict = kind.labels[1]
                if verdict is not None or unparsed != "exclude":
                    shown[item_id] = verdict
            coded = cells.votes_for(key, judge, kind, unparsed)
            assert (human_ceiling_coded(coded, resamples=RESAMPLES).as_dict()
                    == human_ceiling(items, shown, resamples=RESAMPLES).as_dict())
            assert (alternative_annotator_test_coded(coded).as_dict()
                    == alt_test_item_by_item(items, shown).as_dict())


def test_a_verdict_no_person_gave_is_a_label_of_its_own():
    items = {i: {"a": "yes", "b": "yes", "c": "no"} for i in range(12)}
    judge = dict.fromkeys(range(12), "unsure")
    result = human_ceiling(items, judge, resamples=RESAMPLES)
    assert result.n_items == 12 and result.judge.value == pytest.approx(0.0)
    assert alternative_annotator_test(items, judge).per_annotator["c"]["advantage"] == 1.0
