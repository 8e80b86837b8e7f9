"""Writers sharing one database: eight processes claim and label at once (no collisions, nothing
lost), and two threads sharing one store (the annotation app and its worker) never share a transaction."""

from __future__ import annotations

import multiprocessing as mp
import sqlite3
import threading
from collections import Counter

import pytest

from calibrate.model import NewItem
from calibrate.store import DatabaseFault, Store

WORKERS = 8
ITEMS = 400


def label_until_done(path: str, annotator: str, overlap: int, results) -> None:
    store = Store(path)
    labelled, errors = [], []
    while True:
        try:
            item_id = store.claim_next(annotator, overlap=overlap)
            if item_id is None:
                break
            store.annotate(item_id, annotator, "label", label="yes")
            labelled.append(item_id)
        except (sqlite3.OperationalError, DatabaseFault) as exc:  # "database is locked" would land here
            errors.append(str(exc))
            break
    results.put((annotator, labelled, errors))


@pytest.mark.parametrize("overlap", [1, 2])
def test_eight_processes_share_one_database(tmp_path, overlap):
    path = str(tmp_path / "shared.db")
    Store(path).add_items([NewItem("c3/lexical", "en", str(k), {"k": k}) for k in range(ITEMS)])
    ctx = mp.get_context("fork")
    results = ctx.Queue()
    procs = [ctx.Process(target=label_until_done, args=(path, f"ann{n}", overlap, results)) for n in range(WORKERS)]
    for p in procs:
        p.start()
    outcomes = [results.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0

    assert [e for _, _, errs in outcomes for e in errs] == [], "no 'database is locked' or other error"
    per_item = Counter(item for _, labelled, _ in outcomes for item in labelled)
    assert set(per_item.values()) == {overlap}, "every item gets exactly `overlap` annotators"
    assert len(per_item) == ITEMS
    for _, labelled, _ in outcomes:
        assert len(labelled) == len(set(labelled)), "no annotator labels an item twice"

    store = Store(path)
    rows = store.conn.execute("SELECT count(*) FROM annotations").fetchone()[0]
    assert rows == sum(len(labelled) for _, labelled, _ in outcomes) == ITEMS * overlap, "no annotation lost"


def test_a_write_of_one_thread_waits_for_another_threads_transaction_and_is_kept(tmp_path):
    """The annotation app's own thread and its worker share a store. A decision written while the
    other thread's transaction is open waits for it (as for another process) instead of joining
    it: when that transaction fails and is rolled back, the decision stays."""
    store = Store(tmp_path / "shared.db")
    item_id = store.add_items([NewItem("c3/lexical", "en", "a", {"k": 1})], with_ids=True)[0][0]
    opened, fail = threading.Event(), threading.Event()

    def failing_write() -> None:
        with pytest.raises(RuntimeError), store.transaction():
            store.conn.execute("INSERT INTO leases (item_id, annotator, expires_at) VALUES (?, 'worker', 0)", (item_id,))
            opened.set()
            fail.wait(10)
            raise RuntimeError("the worker's write fails (a full disk, say)")

    worker = threading.Thread(target=failing_write)
    worker.start()
    opened.wait(10)
    waits = []
    store.on_wait = lambda seconds: (waits.append(seconds), fail.set())  # this thread's own: the worker's has none
    store.annotate(item_id, "ana", "label", label="yes")
    fail.set()
    worker.join(10)
    assert waits, "the decision waited for the worker's transaction"
    assert [tuple(r) for r in store.conn.execute("SELECT annotator, action, label FROM annotations")] == \
        [("ana", "label", "yes")], "the decision is kept"
    assert store.conn.execute("SELECT count(*) FROM leases").fetchone()[0] == 0, "the worker's write is rolled back"
