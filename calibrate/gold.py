"""The gold label of an item: the one rule by which every figure and export turns the labels
several people gave an item into one.

The adjudicator's label, where an adjudicator is named and labelled the item; else the strict
majority, the label with strictly more votes than any other (so a single annotator's label is
the gold); where two or more labels share the most votes, a tie, which gives no gold label and
is counted by the callers, never dropped silently. A missing label (None) is no vote.

The store reads the same rule from SQL (`calibrate.store.sql.gold_of`) where the reliability
figures and the jury work the gold out on their own connection; tests/test_gold.py checks on
random label sets that the two agree. Scores, the reliability figures, the jury and the gold
and C3 exports call `gold_label` (or `gold_by_item` for every labelled item at once); the
report's agreement read (`Store.agreement_data`) calls `gold_by_item_in_order` on the labels
it reads, and hands the result to the report's other reads.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Hashable, Iterable, Mapping
from typing import NamedTuple, TypeVar

Item = TypeVar("Item", bound=Hashable)


class GoldLabel(NamedTuple):
    """An item's gold label (None: unlabelled or tied) and how it was reached, in words:
    "adjudicator NAME", "single annotator", "unanimous", "majority K/N", "mean of N" (scores),
    "tie" or "unlabelled"."""

    label: str | None
    basis: str


def gold_label(labels: Mapping[str, str | None], adjudicator: str | None = None) -> GoldLabel:
    """The gold label of one item from its labels in force, annotator -> label (see the module
    docstring for the rule)."""
    if adjudicator is not None and labels.get(adjudicator) is not None:
        return GoldLabel(labels[adjudicator], f"adjudicator {adjudicator}")
    votes = [label for label in labels.values() if label is not None]
    if not votes:
        return GoldLabel(None, "unlabelled")
    if len(votes) == 1:
        return GoldLabel(votes[0], "single annotator")
    if votes[0][:1] == "{" and (mean := mean_scores(votes)) is not None:
        return GoldLabel(mean, f"mean of {len(votes)}")
    if len(votes) == 2:  # the common case of several people, decided without a tally
        return GoldLabel(votes[0], "unanimous") if votes[0] == votes[1] else GoldLabel(None, "tie")
    ranked = Counter(votes).most_common(2)
    if len(ranked) == 1:
        return GoldLabel(votes[0], "unanimous")
    (top, most), (_, second) = ranked
    if most > second:
        return GoldLabel(top, f"majority {most}/{len(votes)}")
    return GoldLabel(None, "tie")


def mean_scores(votes: list[str]) -> str | None:
    """The mean of score labels, JSON objects of the same numbers (the rubric's two scores, in
    `VerdictKind.score_label`'s stored form), in that form: each score's mean rounded half up
    to 0.1, keys sorted; None when a vote is not such an object."""
    tenths: dict[str, int] = {}
    for vote in votes:
        try:
            scores = json.loads(vote)
        except ValueError:
            return None
        if not isinstance(scores, dict) or not scores or (tenths and scores.keys() != tenths.keys()) \
                or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in scores.values()):
            return None
        for key, value in scores.items():
            tenths[key] = tenths.get(key, 0) + round(value * 10)
    n = len(votes)
    return json.dumps({key: (2 * total + n) // (2 * n) / 10 for key, total in sorted(tenths.items())})


def gold_by_item(labels: Mapping[Item, Mapping[str, str | None]], adjudicator: str | None = None) -> dict[Item, str]:
    """item -> its gold label (`gold_label`), for the items that have one: unlabelled and tied
    items are left out. Most items carry a single label, which is their gold whoever the
    adjudicator is; it is taken as it is, without a tally."""
    out: dict[Item, str] = {}
    for item, by_annotator in labels.items():
        if len(by_annotator) == 1:
            (label,) = by_annotator.values()
        else:
            label = gold_label(by_annotator, adjudicator).label
        if label is not None:
            out[item] = label
    return out


def gold_by_item_in_order(rows: Iterable[tuple[Item, str, str | None]], adjudicator: str | None = None) -> dict[Item, str]:
    """`gold_by_item` over rows (item, annotator, label) in which each item's rows come one after
    the other (read in item order): the items several people labelled, taken as they are read,
    without a mapping per item first."""
    out: dict[Item, str] = {}
    item: Item | None = None
    labels: dict[str, str | None] = {}

    def decide() -> None:
        label = gold_label(labels, adjudicator).label
        if label is not None:
            out[item] = label

    for row_item, annotator, label in rows:
        if row_item != item:
            if labels:
                decide()
            item, labels = row_item, {}
        labels[annotator] = label
    if labels:
        decide()
    return out
