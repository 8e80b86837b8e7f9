"""What the shuffled and fitted annotation queue orders are built from, apart from the session
that takes items from them: each cell's shuffled lane (the stratified and informative orders draw
them alike), informative's cells and escalate's trust marks as a child process works them out on
a large queue (`AnnotationSession.prepare_queue`), and reads made on a thread while the app starts
(the stratified lanes, the queue's count)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future
from typing import TYPE_CHECKING, TypeVar

from calibrate.cells import BY_CHOICES, CellKinds
from calibrate.reliability_cells import trust_marks
from calibrate.store import Store
from calibrate.templates import TemplateSet

if TYPE_CHECKING:
    import numpy as np

T = TypeVar("T")


def shuffled_lanes(store: Store, scope: dict, seed: int) -> Iterator[tuple[tuple[str, str, str], np.ndarray]]:
    """Each cell (task, lang, system) of the filter `scope` in sorted order with its item ids in
    random order (`shuffle_lanes`). A cell's ids are read when it is reached, so the first lane
    costs one cell's read."""
    cells = store.cells(**scope)
    return shuffle_lanes(cells, (store.item_id_array(task=t, lang=lang, system=s) for t, lang, s in cells), seed)


def shuffle_lanes(cells: Iterable[tuple[str, str, str]], ids: Iterable[np.ndarray], seed: int,
                  ) -> Iterator[tuple[tuple[str, str, str], np.ndarray]]:
    """Each cell with its item ids (sorted, in `ids`) in random order: permuted by the next draw of
    the seed's generator."""
    import numpy as np

    rng = np.random.default_rng(seed)
    for cell, cell_ids in zip(cells, ids, strict=True):
        yield cell, rng.permutation(cell_ids)


_READ_AHEAD: dict[tuple, Future] = {}  # lanes whose read `read_lanes_ahead` started, by what they are


def read_lanes_ahead(path: str, scope: dict, seed: int) -> None:
    """Start reading the lanes that a session of the stratified order on the database at `path`,
    the filter `scope` and `seed` will take (`lanes_read_ahead`), before it is built:
    `calibrate annotate` starts them before it loads the app."""
    _READ_AHEAD[(str(path), tuple(sorted(scope.items())), seed)] = _read_lanes(str(path), scope, seed)


def lanes_read_ahead(path: str, scope: dict, seed: int) -> Future:
    """Every cell's shuffled lane (`shuffled_lanes`) of the filter `scope`, in cell order, read
    from the database at `path` on a thread of its own read-only connection, for a `Future`:
    the read `read_lanes_ahead` started for the same lanes, if it did (taken once), else a new one.

    The ids are read in one statement (`Store.cell_id_arrays`), during which SQLite lets go of the
    interpreter's lock, so the thread reads while the app starts up (which holds the lock for its
    own work); the cells are found first, on the calling thread, since each of their dozens of
    short seeks would wait for that lock on the thread."""
    started = _READ_AHEAD.pop((str(path), tuple(sorted(scope.items())), seed), None)
    return started if started is not None else _read_lanes(str(path), scope, seed)


def _read_lanes(path: str, scope: dict, seed: int) -> Future:
    store = Store(path, read_only=True)
    cells = store.cells(**scope)
    return read_in_thread(store, lambda store: [lane for _, lane in shuffle_lanes(cells, store.cell_id_arrays(cells), seed)])


def read_in_thread(store: Store, read: Callable[[Store], T]) -> Future:
    """`read(store)` on a thread, which then closes `store` (a connection of its own, opened on the
    calling thread: opening takes the interpreter's lock for a while), for a `Future` that raises
    what the read raised. A read that is one long statement lets go of the lock while SQLite
    works, so it goes on while the calling thread does other work (the app starting up)."""
    future = Future()

    def run() -> None:
        try:
            future.set_result(read(store))
        except BaseException as exc:  # noqa: BLE001 - raised where the result is taken
            future.set_exception(exc)
        finally:
            store.close()

    future.set_running_or_notify_cancel()
    threading.Thread(target=run, name="calibrate read", daemon=True).start()
    return future


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
