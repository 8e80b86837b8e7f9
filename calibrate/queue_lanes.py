"""What the shuffled and fitted annotation queue orders are built from, apart from the session
that takes items from them: each cell's shuffled lane (the stratified and informative orders draw
them alike), and informative's cells and escalate's trust marks as a child process works them out
on a large queue (`AnnotationSession.prepare_queue`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from calibrate.cells import BY_CHOICES, CellKinds
from calibrate.reliability_cells import trust_marks
from calibrate.store import Store
from calibrate.templates import TemplateSet

if TYPE_CHECKING:
    import numpy as np


def shuffled_lanes(store: Store, scope: dict, seed: int) -> Iterator[tuple[tuple[str, str, str], np.ndarray]]:
    """Each cell (task, lang, system) of the filter `scope` in sorted order with its item ids in
    random order: its sorted ids permuted by the next draw of the seed's generator. A cell's ids
    are read when it is reached, so the first lane costs one cell's read."""
    import numpy as np

    rng = np.random.default_rng(seed)
    for cell in store.cells(**scope):
        yield cell, rng.permutation(store.item_id_array(task=cell[0], lang=cell[1], system=cell[2]))


def informative_cells(store: Store, scope: dict, judge: str | None, seed: int) -> tuple[list, dict]:
    """The informative order's heap of cells and each cell's unlabelled items in random order
    (`AnnotationSession._informative`), for the filter `scope` and `judge`, read through `store`."""
    import heapq

    import numpy as np

    lanes = dict(shuffled_lanes(store, scope, seed))
    labelled = store.labelled_item_ids()
    contested = np.array(store.contested_item_ids(**scope, judge=judge), dtype=np.int64)
    heap, pending = [], {}
    for cell, lane in lanes.items():
        weight = 1 + int(np.isin(lane, contested).sum()) / len(lane)
        done = np.isin(lane, labelled)
        pending[cell] = lane[~done]
        if len(pending[cell]):
            heapq.heappush(heap, (-(weight / (int(done.sum()) + 1)), cell, int(done.sum()), weight))
    return heap, pending


def work_out_queue(path: str, order: str, templates: TemplateSet, judge: str | None, scope: dict, seed: int):
    """What a queue order needs beyond its first items, from the database at `path` opened
    read-only: escalate's trust marks, informative's cells (`informative_cells`)."""
    store = Store(path, read_only=True)
    try:
        if order == "escalate":
            return trust_marks(store, CellKinds(templates, BY_CHOICES), judge=judge)
        return informative_cells(store, scope, judge, seed)
    finally:
        store.close()
