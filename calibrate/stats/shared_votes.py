"""The labels of items several people labelled, and one judge's verdicts on them, as integer
codes: what the human ceiling and the alternative annotator test read. A report holds tens of
thousands of such items per cell; as arrays the two statistics are computed with numpy
operations over all of them at once instead of a Python step per item and label.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

NO_VOTE = -1  # in `votes`: the annotator did not label the item (or gave no label)
UNPARSED = -1  # in `judge`: the judge's verdict could not be parsed
NOT_JUDGED = -2  # in `judge`: the judge gave no verdict on the item


@dataclass
class SharedVotes:
    """Items (rows, in the order the statistics see them) x annotators (columns): `votes` holds
    the index in `labels` of each annotator's label, NO_VOTE where there is none; `judge` holds
    per item the index of the judge's verdict, UNPARSED or NOT_JUDGED. Label and annotator
    names are distinct."""

    votes: np.ndarray
    judge: np.ndarray
    annotators: list[str]
    labels: list

    @classmethod
    def from_dicts(cls, items: dict, judge: dict) -> SharedVotes:
        """From `items`: item -> {annotator: label (None: no label)} and `judge`: item -> verdict
        (None: unparsed; an item that is not a key was not judged), rows in the order of `items`."""
        annotators: dict[str, int] = {}
        labels: dict = {}
        for votes in items.values():
            for annotator, label in votes.items():
                annotators.setdefault(annotator, len(annotators))
                if label is not None:
                    labels.setdefault(label, len(labels))
        for item in items:
            if judge.get(item) is not None:
                labels.setdefault(judge[item], len(labels))
        codes = np.full((len(items), len(annotators)), NO_VOTE, dtype=np.int64)
        verdicts = np.full(len(items), NOT_JUDGED, dtype=np.int64)
        for row, (item, votes) in enumerate(items.items()):
            for annotator, label in votes.items():
                if label is not None:
                    codes[row, annotators[annotator]] = labels[label]
            if item in judge:
                verdicts[row] = UNPARSED if judge[item] is None else labels[judge[item]]
        return cls(codes, verdicts, list(annotators), list(labels))

    def label_counts(self, rows: np.ndarray, order: np.ndarray) -> np.ndarray:
        """(len(rows), len(order)) float counts: how many annotators gave each label on each of
        the items `rows`, columns in `order` (label codes; every label given there is in it)."""
        column = np.full(len(self.labels), -1, dtype=np.int64)
        column[order] = np.arange(len(order))
        counts = np.zeros((len(rows), len(order)))
        votes = self.votes[rows]
        for a in range(votes.shape[1]):
            has = np.flatnonzero(votes[:, a] != NO_VOTE)
            counts[has, column[votes[has, a]]] += 1  # one label per annotator and item
        return counts
