"""What the shuffled and fitted annotation queue orders are built from, apart from the session
that takes items from them: each cell's shuffled lane (the stratified and informative orders draw
them alike), read on a thread for the stratified order (`LaneReader`), informative's cells and
escalate's trust marks as a child process works them out on a large queue
(`AnnotationSession.prepare_queue`), and the informative order drawn from those cells
(`informative_order`)."""

from __future__ import annotations

import sys
import threading
from array import array
from collections.abc import Iterable, Iterator
from contextlib import suppress
from typing import TYPE_CHECKING

from calibrate.cells import BY_CHOICES, CellKinds
from calibrate.preload import import_meanwhile
from calibrate.reliability_cells import trust_marks
from calibrate.store import DatabaseFault, Store
from calibrate.store.items import id_array
from calibrate.templates import TemplateSet

if TYPE_CHECKING:
    import numpy as np


def shuffled_lanes(store: Store, scope: dict, seed: int) -> Iterator[tuple[tuple[str, str, str], np.ndarray]]:
    """Each cell (task, lang, system) of the filter `scope` in sorted order with its item ids in
    random order (`shuffle_cells`). A cell's ids are read when it is reached, so the first lane
    costs one cell's read."""
    cells = ((cell, store.item_ids_text(task=cell[0], lang=cell[1], system=cell[2])) for cell in store.cells(**scope))
    return shuffle_cells(cells, seed)


def shuffle_cells(cell_ids: Iterable[tuple[tuple[str, str, str], str]],
                  seed: int) -> Iterator[tuple[tuple[str, str, str], np.ndarray]]:
    """Each (cell, ids as `Store.item_ids_text` reads them) in turn, with the cell's sorted ids
    permuted by the next draw of the seed's generator. numpy is imported once the first cell's
    ids are read (a thread can read them while another imports numpy)."""
    rng = None
    for cell, text in cell_ids:
        if rng is None:
            import numpy as np

            rng = np.random.default_rng(seed)
        yield cell, rng.permutation(id_array(text))


def interleaved(lanes: list[np.ndarray]) -> np.ndarray:
    """The stratified queue: one item of each lane in turn, for as long as each lane has items."""
    import numpy as np

    if not lanes:
        return np.zeros(0, dtype=np.int64)
    places = np.concatenate([np.arange(len(lane)) for lane in lanes])
    return np.concatenate(lanes)[np.argsort(places, kind="stable")]


def kept_ids(kept: bytes) -> array:
    """The item ids of a kept stratified queue (`Store.kept_stratified_order`), without numpy."""
    ids = array("q", kept)
    if sys.byteorder == "big":
        ids.byteswap()
    return ids


class LaneReader:
    """The lanes of `shuffled_lanes`, in their order, read on a thread with its own connection
    when the database is a file, from when the session is made (else where they are taken, one
    at a time): at a million items the reads and numpy's import (about 0.3 s and 0.1 s) go on
    while the app starts. The lanes are the same either way (`shuffle_cells`). On a file, the
    queue they make is then kept for the next session (`Store.keep_stratified_order`)."""

    def __init__(self, store: Store, scope: dict, seed: int):
        self._lanes: list[np.ndarray] = []
        self._finished = False
        self._failure: BaseException | None = None
        self._changed = threading.Condition()
        self._keep = threading.Event()  # set once the session's first item is painted (`keep_when_read`)
        self._wanted = 1  # how many lanes the session has asked for (the thread reads one more, `_when_wanted`)
        self._here: Iterator | None = None
        self._thread: threading.Thread | None = None
        if store.in_file:
            self._thread = threading.Thread(target=self._read, args=(store.path, scope, seed),
                                            name="calibrate-lanes", daemon=True)
            self._thread.start()
        else:
            self._here = shuffled_lanes(store, scope, seed)

    def _read(self, path: str, scope: dict, seed: int) -> None:
        """Each cell's ids and its shuffle in turn, all cells in one snapshot, while another
        thread imports numpy (SQLite reads without the interpreter's lock, so the app's thread
        and the import go on meanwhile): the first lane comes after one cell's read, and until
        `keep_when_read` is called (the session's second claim, or its close) no more cells are
        read than the session asks for (`_when_wanted`: the work would slow the first paint).
        Then the queue is kept for the next session of the same items (`kept_stratified_order`)."""
        import_meanwhile("numpy")
        try:
            store = Store(path)
            try:
                lanes = []
                with store.cell_id_texts(**scope) as (stamp, cells):
                    for _, lane in shuffle_cells(self._when_wanted(cells), seed):
                        with self._changed:
                            self._lanes.append(lane)
                            self._changed.notify_all()
                        lanes.append(lane)
                with self._changed:  # no lane comes after these
                    self._finished = True
                    self._changed.notify_all()
                self._keep.wait()
                if stamp is not None:
                    with suppress(DatabaseFault):  # not kept: the next session works it out again
                        store.keep_stratified_order(scope, seed, stamp, interleaved(lanes).astype("<i8").tobytes())
            finally:
                store.close()
        except Exception as exc:  # handed to the session's thread, which raises it where it takes a lane
            self._failure = exc
        finally:
            with self._changed:
                self._finished = True
                self._changed.notify_all()

    def _when_wanted(self, cells: Iterable) -> Iterator:
        """`cells`, each next one taken (its ids read) only once the session has asked for the
        lane before it, or the first item is painted (`keep_when_read`): the thread reads one
        lane ahead of the session, and waits meanwhile, in the cells' snapshot."""
        cells = iter(cells)
        while True:
            with self._changed:
                while not (self._keep.is_set() or len(self._lanes) <= self._wanted):
                    self._changed.wait()
            cell = next(cells, None)
            if cell is None:
                return
            yield cell

    def __iter__(self) -> Iterator[np.ndarray]:
        """Each lane in turn, waiting for the thread to have read it."""
        if self._here is not None:
            for _, lane in self._here:
                yield lane
            return
        taken = 0
        while True:
            with self._changed:
                if self._wanted < taken + 1:
                    self._wanted = taken + 1
                    self._changed.notify_all()
                while len(self._lanes) == taken and not self._finished:
                    self._changed.wait()
                if len(self._lanes) == taken:
                    if self._failure is not None:
                        raise self._failure
                    return
                lane = self._lanes[taken]
            yield lane
            taken += 1

    def keep_when_read(self) -> None:
        """Read every lane now, and keep the queue once they are read (on the thread)."""
        with self._changed:
            self._keep.set()
            self._changed.notify_all()

    def close(self) -> None:
        """Read the lanes not read yet (at most about 0.3 s at a million items) and keep the
        queue, as `keep_when_read`, and wait for the thread: a session closed on its first item
        leaves its queue for the next one, as one whose lanes were all read by then does."""
        self.keep_when_read()
        if self._thread is not None:
            self._thread.join()


def informative_cells(store: Store, scope: dict, judge: str | None, seed: int) -> tuple[list, dict]:
    """The informative order's heap of cells and each cell's unlabelled items in random order
    (`informative_order`), for the filter `scope` and `judge`, read through `store`."""
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


def informative_order(heap: list, pending: dict) -> Iterator[int]:
    """Items in the order whose labels most narrow the corrected-score intervals of
    `calibrate scores`, with every cell's labels still a random sample of it.

    Cells are system x task x language. Each next label goes to the cell whose interval it
    narrows most: a cell's half-width is taken as proportional to sqrt(w / (n + 1)) with n
    its labelled items (people's labels in force plus those already queued) and
    w = 1 + the share of its items whose judges disagree, failed or gave no verdict (where
    the judges are unsure, a label tells more). Within a cell items come in random order
    (`lanes`: each cell's item ids, shuffled), so the labels stay the random sample PPI++
    and Rogan-Gladen assume; which items the judges disagree on steers which cells get
    labels, never which items. The queue is produced as it is taken, from the heap and lanes
    of `informative_cells`."""
    import heapq

    taken = dict.fromkeys(pending, 0)
    while heap:
        _, cell, n, weight = heapq.heappop(heap)
        yield int(pending[cell][taken[cell]])
        taken[cell] += 1
        if taken[cell] < len(pending[cell]):
            heapq.heappush(heap, (-(weight / (n + 2)), cell, n + 1, weight))


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
