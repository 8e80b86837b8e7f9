"""An import writes each batch on a thread of its own while it reads the next records
(`calibrate.write_behind`): the store is never used by both threads at once, and a failed or
stopped import waits for the write under way (or stops its wait for the lock) before it removes
what it wrote, keeping nothing. (A write's error ends the import: test_import_paths.)"""

from __future__ import annotations

import contextlib
import sys
import threading
import time

import pytest

from calibrate import formats
from calibrate.formats import import_records
from calibrate.formats.jsonl import jsonl_records
from calibrate.store import Store
from tests.test_formats import lexical_lines, write_jsonl
from tests.test_import_runs import visible_and_stored


@pytest.fixture
def small_batches(monkeypatch):
    """Batches of 100 records, so that a few hundred lines make several."""
    monkeypatch.setattr(formats, "BATCH", 100)
    monkeypatch.setattr(formats, "BATCH_MAX", 100)


def traced(store: Store) -> list[tuple[str, str]]:
    """(thread name, SQL) of every statement the store's connection runs from now on."""
    log: list[tuple[str, str]] = []
    store.conn.set_trace_callback(lambda sql: log.append((threading.current_thread().name, sql)))
    return log


def transactions_by_thread(log: list[tuple[str, str]]) -> list[str]:
    """The thread of each write transaction in `log`, in order; AssertionError where another
    thread's statement comes between one's BEGIN and its COMMIT or ROLLBACK."""
    holders, holder = [], None
    for who, sql in log:
        if sql.startswith("BEGIN"):
            assert holder is None, f"{who} began a transaction inside {holder}'s"
            holder = who
            holders.append(who)
        elif holder is not None:
            assert who == holder, f"{who} ran {sql[:60]!r} inside {holder}'s transaction"
        if sql in ("COMMIT", "ROLLBACK"):
            holder = None
    return holders


def no_writer_left() -> bool:
    return not any(thread.name.startswith("write behind") for thread in threading.enumerate())


def test_an_import_writes_its_batches_behind_and_never_uses_the_store_from_two_threads(tmp_path, templates,
                                                                                      small_batches, monkeypatch):
    from calibrate.store import imports

    # the heartbeat due at every record: the importing thread writes to the store between the batches
    monkeypatch.setattr(imports, "IMPORT_HEARTBEAT_SECONDS", 0.0)
    interval = sys.getswitchinterval()
    store = Store(tmp_path / "s.db")
    log = traced(store)
    report = import_records(store, jsonl_records(write_jsonl(tmp_path / "in.jsonl", lexical_lines(1000)),
                                                 task="c3/lexical", lang="en"), templates)
    holders = transactions_by_thread(log)
    batches = [who for who, sql in log if sql.startswith("INSERT OR IGNORE INTO items")]
    assert report.counts.items_added == 1000 and visible_and_stored(store.path) == (1000, 1000)
    assert batches and all(who.startswith("write behind") for who in batches), "every batch written behind"
    assert sum(who.startswith("write behind") for who in holders) == 10, "a transaction per batch"
    assert any(who == "MainThread" for who in holders), "the heartbeat's renewals on the importing thread"
    assert sys.getswitchinterval() == interval and no_writer_left()


def test_an_import_stopped_while_a_batch_is_written_waits_for_it_then_keeps_nothing(tmp_path, templates,
                                                                                   small_batches):
    store = Store(tmp_path / "s.db")
    original, writing = store.add_items, threading.Event()

    def slow(items, **kw):
        writing.set()
        time.sleep(0.3)  # still writing when the interrupt comes
        return original(items, **kw)

    store.add_items = slow
    lines = jsonl_records(write_jsonl(tmp_path / "in.jsonl", lexical_lines(1000)), task="c3/lexical", lang="en")

    def interrupted():
        for k, record in enumerate(lines):
            if k == 250:
                assert writing.wait(5)
                raise KeyboardInterrupt
            yield record

    log = traced(store)
    with pytest.raises(KeyboardInterrupt):
        import_records(store, interrupted(), templates)
    transactions_by_thread(log)  # the clean-up's transactions begin once the write under way has ended
    writer_ended = max(k for k, (who, _) in enumerate(log) if who.startswith("write behind"))
    clean_up = next(k for k, (_, sql) in enumerate(log) if sql.startswith("DELETE FROM items"))
    assert writer_ended < clean_up
    assert visible_and_stored(store.path) == (0, 0)
    assert store.conn.execute("SELECT count(*) FROM import_runs").fetchone()[0] == 0
    assert no_writer_left()


def test_an_import_stopped_while_its_batch_waits_for_another_writer_stops_the_wait(tmp_path, templates,
                                                                                   small_batches):
    """The batch's wait for the lock ends at the interrupt: the batch is never written, even once
    the other writer lets go (the clean-up waits for the lock as any write does)."""
    import sqlite3

    store = Store(tmp_path / "s.db")
    waiting = threading.Event()
    store.on_wait = lambda seconds: waiting.set()
    other = sqlite3.connect(store.path, isolation_level=None, check_same_thread=False)
    lines = jsonl_records(write_jsonl(tmp_path / "in.jsonl", lexical_lines(300)), task="c3/lexical", lang="en")

    def interrupted():
        for k, record in enumerate(lines):
            if k == 99:  # the first batch is handed over with the next record: another writer holds the lock first,
                other.execute("BEGIN IMMEDIATE")  # and lets go 1.5 s later (where the batch is written in this thread
                threading.Timer(1.5, lambda: other.execute("COMMIT")).start()  # too, the batch is then written)
            if k == 100:
                assert waiting.wait(5), "the batch waits for the lock"
                raise KeyboardInterrupt
            yield record

    log = traced(store)
    with pytest.raises(KeyboardInterrupt):
        import_records(store, interrupted(), templates)
    assert not [sql for _, sql in log if sql.startswith("INSERT OR IGNORE INTO items")], "the batch was never written"
    assert visible_and_stored(store.path) == (0, 0) and no_writer_left()
    other.close()



def test_signals_while_the_writer_is_waited_out_wait_for_its_write_to_end(tmp_path):
    """Ctrl-C again while a stopped import waits for the write under way: the wait goes on until
    the write has ended (Python 3.11's Thread.join, interrupted so, took the live thread for ended,
    and the clean-up then used the store while the writer still wrote)."""
    import os
    import signal

    from calibrate.write_behind import WriteBehind

    store = Store(tmp_path / "s.db")
    events, writing, release = [], threading.Event(), threading.Event()

    def write() -> None:
        writing.set()
        release.wait(10)
        time.sleep(0.2)  # after the signals, the write is still under way
        events.append("write ended")

    def interrupt_twice() -> None:
        time.sleep(0.2)  # the caller is waiting out the writer by now
        for _ in range(2):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.1)
        release.set()

    interrupter = threading.Thread(target=interrupt_twice, daemon=True)
    with WriteBehind(store) as writes:
        writes.submit(write)
        assert writing.wait(10), "the write is under way (one not begun is left out)"
        interrupter.start()
        try:
            writes.wait_out()
            events.append("waited out")
        except KeyboardInterrupt:  # a signal outside the wait: it had ended early
            events.append("interrupted")
        while interrupter.is_alive():  # (the second signal, where the wait ended at the first)
            with contextlib.suppress(KeyboardInterrupt):
                interrupter.join(10)
    assert events == ["write ended", "waited out"]
    assert no_writer_left()

def test_a_signal_landing_as_the_writers_last_word_is_taken_does_not_leave_the_wait_waiting(tmp_path):
    """A Ctrl-C that lands just as `wait_out` takes the writer's word that it has ended (between
    that wait's return and the next statement) does not lose the word: the wait ends (it waited
    for a word that never came again, through every later Ctrl-C, until SIGKILL)."""
    from calibrate.write_behind import WriteBehind

    store = Store(tmp_path / "s.db")
    writes = WriteBehind(store).__enter__()
    word = writes._gone

    class TakenThenInterrupted:
        put = word.put

        def get(self, *args, **kwargs):
            word.get(*args, **kwargs)
            raise KeyboardInterrupt  # the signal, at the first bytecode after the word was taken

    writes._gone = TakenThenInterrupted()
    ended = threading.Event()
    threading.Thread(target=lambda: (writes.wait_out(), ended.set()), daemon=True).start()
    assert ended.wait(10), "the wait ended"  # (left open where it did not: leaving would wait for ever too)
    writes.__exit__()
    assert no_writer_left()



def test_judge_outputs_for_items_already_present_are_parsed_before_the_finish_takes_the_write_lock(tmp_path, templates,
                                                                                                   monkeypatch):
    """A judge's outputs imported for stored items are written with the finish, in one
    transaction: their prompts are rendered and their outputs parsed before it begins, so other
    writers wait only for the writes."""
    import calibrate.formats as formats_module

    store = Store(tmp_path / "s.db")
    lines = lexical_lines(30)
    import_records(store, jsonl_records(write_jsonl(tmp_path / "in.jsonl", lines), task="c3/lexical", lang="en"),
                   templates)
    made_while_writing = []
    made = formats_module.judgment_from_output

    def judgment_from_output(*args, **kwargs):
        made_while_writing.append(store._writing is not None)
        return made(*args, **kwargs)

    monkeypatch.setattr(formats_module, "judgment_from_output", judgment_from_output)
    judged = write_jsonl(tmp_path / "judged.jsonl", [{**line, "out": "yes"} for line in lines])
    report = import_records(store, jsonl_records(judged, task="c3/lexical", lang="en", judge_output="out",
                                                 judge_name="j"), templates)
    assert (report.counts.items_existing, report.counts.judgments_added) == (30, 30)
    assert made_while_writing == [False] * 30
