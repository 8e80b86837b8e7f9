"""Writers sharing one database: eight processes claim and label at once (no collisions, nothing
lost), and a thread that waits for another writer (the annotation app's worker) does so without
the store's connection, which its own thread goes on using."""

from __future__ import annotations

import multiprocessing as mp
import sqlite3
import threading
import time
from collections import Counter

import pytest

from calibrate.model import NewItem
from calibrate.store import DatabaseFault, Store
from tests.conftest import threads_using

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


def test_a_thread_waits_for_another_writer_without_the_stores_connection(tmp_path):
    """The annotation app's worker waits for another writer so that the app's thread can write at
    once. It waits on a connection of its own: the store's goes on reading on its thread meanwhile
    (SQLite reports an error through the connection, so a read in between could turn the busy
    lock into a BEGIN that seems to succeed), and nothing is written by the wait."""
    store = Store(tmp_path / "shared.db")
    store.add_items([NewItem("c3/lexical", "en", "a", {"k": 1})])
    other = sqlite3.connect(tmp_path / "shared.db", isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    waits = []

    def on_wait(seconds: float) -> None:
        waits.append(seconds)
        if len(waits) == 2:
            other.execute("COMMIT")

    with threads_using(store) as used_by:
        waiter = threading.Thread(target=store.wait_for_writers, args=(on_wait,))
        waiter.start()
        deadline = time.monotonic() + 10
        while waiter.is_alive():
            assert time.monotonic() < deadline, "the wait ended once the other writer was done"
            assert store.conn.execute("SELECT count(*) FROM items").fetchone()[0] == 1  # the app's thread reads on
    assert len(waits) == 2 and waits[0] < waits[1], "it waited, saying how long, until the other writer was done"
    assert used_by == {threading.get_ident()}, "the store's connection was used by its own thread only"
    assert not store.conn.in_transaction and store.commits == 1
    with store.transaction():  # the lock is free: the wait holds nothing
        store.conn.execute("UPDATE items SET system = 's'")
    other.close()
    store.close()
