"""The annotation session without any UI: queue orders, overlap, progress, decisions."""

from __future__ import annotations

import functools
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from calibrate import queue_lanes
from calibrate import session as session_module
from calibrate.item_view import SessionError
from calibrate.model import NewItem, NewJudgment
from calibrate.session import AnnotationSession
from calibrate.store import Store, UnknownFilter


@pytest.fixture
def two_cells(templates):
    store = Store(":memory:")
    items = [NewItem("c3/lexical", "en", f"l{k}", {"content": "c", "notation": "n", "response": "r"}) for k in range(6)]
    items += [NewItem("c3/semantic", "zh", f"s{k}", {"content": "c", "annotation": "a", "response": "r"}) for k in range(2)]
    ids, _ = store.add_items(items, with_ids=True)
    return store, ids


def session(store, templates, **kw) -> AnnotationSession:
    kw.setdefault("annotator", "ana")
    return AnnotationSession(store, templates, **kw)


def drain(s: AnnotationSession, action: str = "flag") -> list[int]:
    seen = []
    view = s.start()
    while view is not None:
        seen.append(view.item.id)
        s.decide(action)
        view = s.forward()
    return seen


def test_the_pace_counts_labels_given_here_not_skips_flags_or_labels_undone(two_cells, templates):
    store, _ = two_cells
    s = session(store, templates, task="c3/lexical")
    s.start()
    for action, label in (("label", "yes"), ("skip", None), ("flag", None), ("label", "no")):
        s.decide(action, label)
        s.forward()
    assert s.progress().per_hour is None, "two labels: too few for a pace"
    s.decide("label", "yes")
    s.undo()
    assert s.progress().per_hour is None, "the third label was undone"
    s.decide("label", "yes")
    s.started -= 3600  # an hour ago
    assert 2.9 < s.progress().per_hour < 3.1, "three labels in an hour"


def test_in_order(two_cells, templates):
    store, ids = two_cells
    assert drain(session(store, templates)) == ids


def test_random_is_seeded(two_cells, templates):
    store, ids = two_cells
    a = drain(session(store, templates, order="random", seed=7))
    b = drain(session(store, templates, annotator="bo", order="random", seed=7))
    assert a == b and sorted(a) == ids and a != ids


@pytest.mark.parametrize("superseded", [0, 3, 40])
@pytest.mark.parametrize("system", [None, "a"])
def test_random_queue_is_every_id_or_the_filters_ids_shuffled(tmp_path, templates, superseded, system):
    """The random queue is every id up to the highest, shuffled by the seed, where the filter's
    items are at least half of them (the claim passes over the others), else the filter's ids
    shuffled; the same whether the count is done before the shuffle or after it."""
    import numpy as np

    store = Store(tmp_path / "r.db")
    fields = {"content": "c", "notation": "n", "response": "r"}
    store.add_items([NewItem("c3/lexical", "en", str(k), fields, system="ab"[k % 2]) for k in range(60)])
    store.conn.execute("UPDATE items SET current = 0 WHERE id <= ?", (superseded,))
    top, rng = store.max_item_id(), np.random.default_rng(3)
    expected = (rng.permutation(np.arange(1, top + 1)) if 2 * store.count_items(system=system) >= top
                else rng.permutation(store.item_id_array(system=system))).tolist()
    assert _queue(session(store, templates, order="random", seed=3, system=system)) == expected
    store.close()


def test_stratified_fills_every_cell_evenly(two_cells, templates):
    store, ids = two_cells
    order = drain(session(store, templates, order="stratified"))
    cells = ["en" if i in ids[:6] else "zh" for i in order]
    assert cells[:4] == ["en", "zh", "en", "zh"], "cells alternate while both have items"


def test_disagreement_first(two_cells, templates):
    store, ids = two_cells
    store.add_judgments([
        NewJudgment(item_id=ids[3], judge_name="a", judge_key="ka", status="unparsed"),
        NewJudgment(item_id=ids[5], judge_name="a", judge_key="ka", status="verdict", verdict="yes"),
        NewJudgment(item_id=ids[5], judge_name="b", judge_key="kb", status="verdict", verdict="no"),
        NewJudgment(item_id=ids[1], judge_name="a", judge_key="ka", status="verdict", verdict="yes"),
        NewJudgment(item_id=ids[1], judge_name="b", judge_key="kb", status="verdict", verdict="yes"),
    ])
    order = drain(session(store, templates, order="disagreement-first"))
    assert order[:2] == [ids[3], ids[5]] and sorted(order) == ids


def test_overlap_two_gives_each_item_to_two_annotators(two_cells, templates):
    store, ids = two_cells
    a, b, c = (session(store, templates, annotator=n, overlap=2) for n in "abc")
    for s in (a, b, c):
        s.start()
    assert a.current().item.id == b.current().item.id != c.current().item.id


def test_a_file_session_counts_its_queue_on_a_thread_as_the_store_does(tmp_path, templates):
    store = Store(tmp_path / "t.db")
    store.add_items([NewItem(task, "en", f"{task}{k}", {"content": "c", "notation": "n", "response": "r"}, system=system)
                     for task, system, n in (("c3/lexical", "a", 5), ("c3/lexical", "b", 3), ("c3/syntactic", "a", 2))
                     for k in range(n)])
    for scope, expected in (({}, 10), ({"task": "c3/lexical"}, 8), ({"system": "a"}, 7), ({"task": "c3/lexical", "system": "b"}, 3)):
        s = session(store, templates, **scope)
        assert s.progress().total == expected == store.count_items(**scope)
        assert s._total.done()


def test_a_count_that_fails_on_its_thread_fails_where_the_total_is_read(tmp_path, templates, monkeypatch):
    store = Store(tmp_path / "t.db")
    store.add_items([NewItem("c3/lexical", "en", "x", {"content": "c", "notation": "n", "response": "r"})])

    def broken(self, **scope):
        raise sqlite3.DatabaseError("database disk image is malformed")

    monkeypatch.setattr(Store, "count_items", broken)
    s = session(store, templates)
    with pytest.raises(sqlite3.DatabaseError, match="malformed"):
        s.progress()


def test_labels_given_in_another_terminal_reach_the_count_of_the_first(tmp_path, templates, monkeypatch):
    monkeypatch.setattr(session_module, "RECOUNT_EVERY", 0)
    store = Store(tmp_path / "t.db")
    store.add_items([NewItem("c3/lexical", "en", f"x{k}", {"content": "c", "notation": "n", "response": "r"})
                     for k in range(6)])
    here, there = session(store, templates), session(Store(tmp_path / "t.db"), templates, tab="2")  # a second terminal
    here.start(), there.start()
    here.decide("label", "yes")
    for _ in range(3):
        there.decide("label", "no")
        there.forward()

    def recounted(s: AnnotationSession) -> int:
        s.recount_labelled()  # takes a count started earlier (at start) if it is done, else starts one
        if s._recount is not None:  # the count on its thread: wait for it, then take it
            s._recount[1].result(timeout=10)
            assert s.recount_labelled()  # taken: the count changed
        return s.progress().labelled

    assert here.progress().labelled == 1, "this session tallies its own labels at once"
    assert recounted(here) == 4 == recounted(there)
    counts = []
    monkeypatch.setattr(Store, "count_labelled", lambda *a, **k: counts.append(a) or 0)
    assert not here.recount_labelled()
    if here._recount is not None:  # a count started (on a thread): wait for it
        here._recount[1].result(timeout=10)
    assert not counts, "nobody else wrote: no count"
    monkeypatch.undo()
    monkeypatch.setattr(session_module, "RECOUNT_EVERY", 0)
    there.decide("label", "yes")
    here.recount_labelled()
    here._recount[1].result(timeout=10)
    here.forward()
    here.decide("label", "no")  # decided while counting: that count is stale, and not taken
    assert not here.recount_labelled() and here.progress().labelled == 5
    assert recounted(here) == 6


def test_progress_counts_labelled_items_only(two_cells, templates):
    store, ids = two_cells
    s = session(store, templates, task="c3/lexical")
    s.start()
    s.decide("label", "yes")
    s.back()
    s.decide("label", "no")  # relabelling the same item is one item
    s.decide("skip")
    s.decide("flag")
    assert s.progress().labelled == 1 and s.progress().total == 6, "skips and flags are not labels"
    s.undo()
    s.undo()
    s.undo()
    assert store.current_label(ids[0], "ana") == "yes" and s.progress().labelled == 1
    s.undo()
    assert s.progress().labelled == 0
    again = session(store, templates, task="c3/lexical")
    assert again.progress().labelled == 0


def test_skipped_items_come_back_at_the_end_once(two_cells, templates):
    store, ids = two_cells
    s = session(store, templates, task="c3/lexical")
    assert s.start().item.id == ids[0]
    s.decide("skip")
    s.forward()
    s.decide("skip")
    for expected in ids[2:6]:
        assert s.forward().item.id == expected
        s.decide("label", "yes")
    order = []
    view = s.forward()
    while view is not None:
        order.append(view.item.id)
        s.decide("skip")  # skipped again: it waits for the next session
        view = s.forward()
    assert order == [ids[0], ids[1]]
    later = session(store, templates, task="c3/lexical")
    assert drain(later, "skip") == [ids[0], ids[1]]


def test_flagged_items_are_listed_and_can_be_revisited(two_cells, templates):
    store, ids = two_cells
    s = session(store, templates, task="c3/lexical")
    s.start()
    s.decide("flag")
    s.forward()
    s.decide("label", "no")
    s.forward()
    assert [i.id for i in s.flagged()] == [ids[0]]
    assert s.jump_to(ids[0]).item.id == ids[0]
    s.decide("label", "yes")
    assert s.flagged() == [], "a label replaces the flag"


def test_labels_lately_come_latest_decided_first_also_where_a_merge_appended_older_ones(two_cells, templates):
    store, ids = two_cells
    s = session(store, templates, task="c3/lexical")
    s.start()
    s.decide("label", "yes")  # decided now, here
    s.forward()
    s.decide("label", "no")
    # labels decided earlier elsewhere, appended after them (as `merge` or `import labels` of a file with times does)
    store.add_imported_labels([(f"offline-{k}", ids[k], "ana", "yes", None, f"2020-01-0{k}T00:00:00.000000+00:00",
                                None, None) for k in (2, 3)])
    store.add_imported_labels([("other", ids[4], "bo", "yes", None, None, None, None)])  # not ana's
    lately = s.labels_lately()
    assert [row[0] for row in lately] == [ids[1], ids[0], ids[3], ids[2]], "by when each was decided"
    assert [row[4] for row in lately] == ["no", "yes", "yes", "yes"]
    assert [row[0] for row in session(store, templates, task="c3/semantic").labels_lately()] == [], "the queue's filter"


def test_going_back_after_the_queue_is_finished(two_cells, templates):
    store, ids = two_cells
    s = session(store, templates, task="c3/semantic", lang="zh")
    assert drain(s) == ids[6:]
    assert s.current() is None
    assert s.back().item.id == ids[7]
    assert "flagged 2" in s.finished_summary()


def test_unknown_filters_list_what_the_database_has(two_cells, templates):
    store, _ = two_cells
    with pytest.raises(UnknownFilter, match="unknown task 'c3/nonexistent': this database has c3/lexical, c3/semantic"):
        session(store, templates, task="c3/nonexistent")
    with pytest.raises(UnknownFilter, match="unknown language 'fr': this database has en, zh"):
        session(store, templates, lang="fr")
    with pytest.raises(UnknownFilter, match="unknown judge 'gpt': this database has none yet"):
        session(store, templates, judge="gpt")


def test_a_second_annotator_at_overlap_one_is_told_where_the_items_went(two_cells, templates):
    store, ids = two_cells
    first = session(store, templates, task="c3/semantic", lang="zh")
    drain(first, "skip")
    first.close()
    second = session(store, templates, annotator="bo", task="c3/semantic", lang="zh")
    second.start()
    second.decide("label", "是")
    assert second.forward() is not None  # the first annotator only skipped: skipped items are not taken
    second.decide("label", "否")
    assert second.forward() is None
    third = session(store, templates, annotator="cy", task="c3/semantic", lang="zh")
    assert third.start() is None
    assert "2 are labelled or held by other annotators (overlap 1)" in third.finished_summary()


def test_bad_decisions_say_why(two_cells, templates):
    store, _ = two_cells
    s = session(store, templates)
    s.start()
    with pytest.raises(SessionError, match="no verdict to confirm"):
        s.decide("confirm")
    with pytest.raises(SessionError, match="not a label"):
        s.decide("label", "maybe")
    with pytest.raises(SessionError, match="unknown order"):
        session(store, templates, order="sideways")


def test_domain_modules_import_without_textual():
    code = (
        "import sys\n"
        "import calibrate.store, calibrate.templates, calibrate.verdicts, calibrate.judge_runner, calibrate.judgments, "
        "calibrate.stats.agreement, calibrate.cells, calibrate.report, calibrate.scores.build, calibrate.scores.render, "
        "calibrate.trust, calibrate.session, calibrate.display, calibrate.escape, calibrate.formats.gold, calibrate.formats, "
        "calibrate.formats.c3, calibrate.formats.c3_tree, calibrate.formats.superglue, calibrate.formats.labels, calibrate.demo, calibrate.cli\n"
        "leaked = sorted(m for m in sys.modules if m == 'textual' or m.startswith('textual.'))\n"
        "assert not leaked, leaked\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_the_escalate_order_starts_without_scipy_stats_or_scikit_learn(tmp_path):
    """Their imports take seconds; the trust thresholds need only numpy and scipy.special."""
    store = Store(tmp_path / "e.db")
    ids, _ = store.add_items([NewItem("c3/lexical", "en", str(k), {"content": "c", "notation": "n", "response": "r"})
                              for k in range(2)], with_ids=True)
    store.add_judgments([NewJudgment(item_id=i, judge_name="gpt", judge_key="k", status="verdict", verdict="yes",
                                     confidence=0.9) for i in ids])
    store.add_judgments([NewJudgment(item_id=ids[1], judge_name="gpt", judge_key="k", status="verdict", verdict="no",
                                     sample=1)])  # a repeat: the majority of the samples
    store.annotate(ids[0], "ana", "label", label="yes")
    store.close()
    code = (
        "import sys\n"
        "from calibrate.session import AnnotationSession\n"
        "from calibrate.store import Store\n"
        "from calibrate.templates import TemplateSet\n"
        f"view = AnnotationSession(Store({str(tmp_path / 'e.db')!r}), TemplateSet(), 'bo', order='escalate').start()\n"
        "assert view is not None\n"
        "heavy = sorted(m for m in sys.modules if m in ('scipy.stats', 'sklearn'))\n"
        "assert not heavy, heavy\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def held_until(event: threading.Event):
    """A stand-in for session.in_child_process: the work runs on a thread of this process once
    `event` is set, so a test knows which items come before the queue is worked out."""
    def in_thread(future, work, args):
        def run():
            event.wait(10)
            try:
                future.set_result(work(*args))
            except Exception as exc:  # noqa: BLE001 - handed over as the child process's would be
                future.set_exception(exc)

        threading.Thread(target=run, daemon=True).start()

    return in_thread


def test_a_queue_worked_out_in_a_child_process_shows_every_item_once(tmp_path, templates):
    """The escalate order fitting its thresholds in a child process (as on a large queue): every
    unlabelled item comes once, and the trust marks are those fitted in this process."""
    store = Store(tmp_path / "c.db")
    ids, _ = store.add_items([NewItem("c3/lexical", "en", str(k), {"content": "c", "notation": "n", "response": "r"})
                              for k in range(12)], with_ids=True)
    store.add_judgments([NewJudgment(item_id=i, judge_name="gpt", judge_key="k", status="verdict", verdict="yes",
                                     confidence=None if k % 3 else 0.9) for k, i in enumerate(ids)])
    store.annotate(ids[0], "bo", "label", label="yes")
    s = session(store, templates, order="escalate", prepare_in_background=True)
    assert sorted(drain(s)) == ids[1:]
    here = session(store, templates, annotator="cy", order="escalate")
    here.start()
    assert s.trust_marks == here.trust_marks
    s.close()
    store.close()


def test_escalate_shows_items_no_threshold_could_accept_while_it_fits_its_thresholds(tmp_path, templates, monkeypatch):
    """On a large queue the trust thresholds are fitted on a worker thread. Meanwhile the queue
    shows, in id order and saying so, only items on which no verdict can be accepted whatever the
    thresholds (here: no confidence); once they are fitted it goes on in the order's own sequence,
    without showing those items again, and `trust_marks` holds what was fitted."""
    store = Store(tmp_path / "e.db")
    ids, _ = store.add_items([NewItem("c3/lexical", "en", str(k), {"content": "c", "notation": "n", "response": "r"})
                              for k in range(48)], with_ids=True)
    # labelled: 30 confident verdicts people agree with, 10 unsure ones they do not; then 8 unlabelled
    confidences = [0.95] * 30 + [0.2] * 10 + [0.95, None, 0.2, 0.95, None, 0.2, 0.95, 0.95]
    store.add_judgments([NewJudgment(item_id=i, judge_name="gpt", judge_key="k", status="verdict", verdict="yes",
                                     confidence=c) for i, c in zip(ids, confidences, strict=True)])
    for k, i in enumerate(ids[:40]):
        store.annotate(i, "bo", "label", label="yes" if k < 30 else "no")
    fitted = threading.Event()
    monkeypatch.setattr(session_module, "in_child_process", held_until(fitted))
    monkeypatch.setattr(queue_lanes, "trust_marks", functools.partial(queue_lanes.trust_marks, min_labels=1))
    s = session(store, templates, order="escalate", prepare_in_background=True)
    view = s.start()
    assert view.item.id == ids[41] and s.queue_preparing
    assert "still being fitted" in s.queue_note(ids[41])
    fitted.set()
    assert s.trust_marks.thresholds  # waits for the worker
    assert not s.queue_preparing
    s.decide("flag")
    # the threshold accepts the 0.95 verdicts: the others first, in id order, ids[41] not again
    assert [s.forward().item.id for _ in range(7)] == [ids[k] for k in (42, 44, 45, 40, 43, 46, 47)]
    assert s.queue_note(ids[42]) is None and s.forward() is None
    s.close()
    store.close()


@settings(max_examples=25, deadline=None)
@given(systems=st.lists(st.sampled_from("abc"), max_size=30), hidden=st.integers(0, 5), at_most=st.integers(0, 40),
       system=st.sampled_from([None, "a", "b"]))
def test_items_counted_up_to_a_bound_are_the_count_or_the_bound(systems, hidden, at_most, system):
    """`count_items(at_most=n)` (whether a queue is large, without counting it all) is the
    count of the same items (current and visible: none of an import still running) or n."""
    store = Store(":memory:")
    fields = {"content": "c", "notation": "n", "response": "r"}
    store.add_items([NewItem("c3/lexical", "en", str(k), fields, system=sy) for k, sy in enumerate(systems)])
    if hidden:
        run = store.begin_import("later.jsonl")
        store.add_items([NewItem("c3/lexical", "en", f"h{k}", fields, system="a") for k in range(hidden)], run=run)
    assert store.count_items(system=system, at_most=at_most) == min(store.count_items(system=system), at_most)
    assert store.count_items(system=system) == sum(system in (None, sy) for sy in systems)
    store.close()


@pytest.mark.parametrize("order", ["escalate", "informative"])
def test_a_large_queue_shows_its_first_item_before_it_is_counted(tmp_path, templates, monkeypatch, order):
    """Whether escalate and informative work their queue out in another process (a large
    queue) is decided without waiting for the queue's count, which the status line shows once
    it is done: the first item comes meanwhile."""
    store = Store(tmp_path / "q.db")
    store.add_items([NewItem("c3/lexical", "en", str(k), {"content": "c", "notation": "n", "response": "r"})
                     for k in range(30)])
    monkeypatch.setattr(session_module, "PREPARE_IN_BACKGROUND_FROM", 20)
    monkeypatch.setattr(session_module, "in_child_process", held_until(threading.Event()))  # never worked out here
    counted = threading.Event()
    count = Store.count_items

    def slow_count(self, **kw):
        if kw.get("at_most") is None:
            assert counted.wait(30)
        return count(self, **kw)

    monkeypatch.setattr(Store, "count_items", slow_count)
    s = session(store, templates, order=order)
    shown = []
    starting = threading.Thread(target=lambda: shown.append(s.start()))
    starting.start()
    starting.join(10)
    alive = starting.is_alive()
    counted.set()
    starting.join()
    assert not alive and shown[0] is not None and s.queue_preparing and s.total == 30
    s.close()
    store.close()


def test_escalate_passes_a_long_labelled_stretch_in_a_few_reads_while_it_fits_its_thresholds(tmp_path, templates,
                                                                                                monkeypatch):
    """While the thresholds are fitted, a stretch of items others labelled already is passed
    in windows that grow (a few reads, not one per EARLY_WINDOW items), and the items shown are
    the same, in the same order, as item by item."""
    store = Store(tmp_path / "e.db")
    ids, _ = store.add_items([NewItem("c3/lexical", "en", str(k), {"content": "c", "notation": "n", "response": "r"})
                              for k in range(120)], with_ids=True)
    for i in ids[:90] + ids[95:97]:
        store.annotate(i, "bo", "label", label="yes")
    monkeypatch.setattr(session_module, "EARLY_WINDOW", 2)
    monkeypatch.setattr(session_module, "in_child_process", held_until(threading.Event()))  # never fitted here
    reads = []
    read = Store.surely_escalated_ids

    def counted(self, **kw):
        reads.append(kw["limit"])
        return read(self, **kw)

    monkeypatch.setattr(Store, "surely_escalated_ids", counted)
    s = session(store, templates, order="escalate", prepare_in_background=True)
    shown = [s.start().item.id] + [s.forward().item.id for _ in range(9)]
    assert shown == [i for i in ids if i not in ids[:90] + ids[95:97]][:10]
    assert len(reads) <= 9 and reads[:3] == [2, 4, 8]  # one read per 2 ids would be 45 before the first
    s.close()
    store.close()


def test_informative_shows_the_first_cells_items_in_their_order_while_it_weighs_the_cells(tmp_path, templates,
                                                                                        monkeypatch):
    """On a large queue the informative order weighs its cells on a worker thread. Meanwhile the
    queue shows, saying so, the first cell's unlabelled items in the order the queue takes them
    within that cell; once the cells are weighed it goes on as the order's own queue, without
    showing those items again."""
    store = Store(tmp_path / "i.db")
    ids, _ = store.add_items([NewItem("c3/lexical", "en", f"{system}{k}", {"content": "c", "notation": "n", "response": "r"},
                                      system=system) for system in ("a", "b") for k in range(10)], with_ids=True)
    store.add_judgments([NewJudgment(item_id=i, judge_name=judge, judge_key=judge, status="verdict",
                                     verdict="yes" if judge == "gpt" or k % 2 else "no")
                         for k, i in enumerate(ids) for judge in ("gpt", "dpsk")])
    store.annotate(ids[0], "bo", "label", label="yes")
    whole = [i for window in session(store, templates, annotator="cy", order="informative")._queue_windows()
             for i in window]
    weighed = threading.Event()
    monkeypatch.setattr(session_module, "in_child_process", held_until(weighed))
    s = session(store, templates, order="informative", prepare_in_background=True)
    first_cell = [i for i in whole if i in ids[:10]]
    shown = [s.start().item.id, s.forward().item.id]
    assert shown == first_cell[:2] and s.queue_preparing
    assert "(c3/lexical en a)" in s.queue_note(shown[1])
    weighed.set()
    deadline = time.monotonic() + 10
    while s.queue_preparing and time.monotonic() < deadline:
        time.sleep(0.01)
    rest = []
    while (view := s.forward()) is not None:
        rest.append(view.item.id)
    assert rest == [i for i in whole if i not in shown] and s.queue_note(rest[0]) is None
    s.close()
    store.close()


def test_informative_order_spreads_labels_over_systems_favouring_contested_cells(templates):
    """Two systems' cells of 10 items; the judges disagree on half of system b's items. The
    informative queue starts in the cell whose labels tell more, alternates between cells as
    their intervals narrow, gives b more of the first labels, and keeps each cell's items in
    random order (a random sample of the cell, whatever prefix gets labelled)."""
    store = Store(":memory:")
    ids = {}
    for system in ("a", "b"):
        ids[system], _ = store.add_items([
            NewItem("c3/lexical", "en", str(k), {"content": "c", "notation": "n", "response": "r"}, system=system)
            for k in range(10)], with_ids=True)
    store.add_judgments([
        NewJudgment(item_id=i, judge_name=judge, judge_key=judge, status="verdict",
                    verdict="yes" if judge == "gpt" or k >= 5 or system == "a" else "no")
        for system in ("a", "b") for k, i in enumerate(ids[system]) for judge in ("gpt", "dpsk")
    ])
    store.annotate(ids["a"][0], "bo", "label", label="yes")
    queue = [i for window in session(store, templates, order="informative", overlap=2)._queue_windows() for i in window]
    assert sorted(queue) == sorted(ids["a"][1:] + ids["b"])  # every unlabelled item, once
    system_of = {i: s for s, members in ids.items() for i in members}
    first = [system_of[i] for i in queue[:8]]
    assert first[0] == "b" and first.count("b") > first.count("a") >= 2
    b_order = [ids["b"].index(i) for i in queue if system_of[i] == "b"]
    assert b_order != sorted(b_order)  # random within the cell, not in id order
    again = [i for window in session(store, templates, order="informative", overlap=2, seed=0)._queue_windows() for i in window]
    assert again == queue  # the seed makes it repeatable


def test_an_item_judged_with_repeats_shows_and_confirms_their_majority(two_cells, templates):
    """`judge --repeat 3` answered no, no, yes (the yes last): the app shows "no", lists the three
    repeats, and Enter confirms "no"; a tie shows as unparsed with the reason, nothing to confirm."""
    store, ids = two_cells
    store.add_judgments([NewJudgment(item_id=ids[0], judge_name="j", judge_key="k", status="verdict", verdict=v, sample=s)
                         for s, v in enumerate(["no", "no", "yes"])])
    store.add_judgments([NewJudgment(item_id=ids[1], judge_name="j", judge_key="k", status="verdict", verdict=v, sample=s)
                         for s, v in enumerate(["no", "yes"])])
    s = session(store, templates)
    view = s.start()
    assert view.item.id == ids[0]
    assert view.verdict == "no" and view.repeats == [("verdict", "no"), ("verdict", "no"), ("verdict", "yes")]
    s.decide("confirm")
    assert store.current_label(ids[0], "ana") == "no"
    view = s.forward()
    assert view.verdict is None and view.judgment.status == "unparsed"
    assert view.judgment.unparsed_reason == "the 2 repeats tie: 1 each for the most frequent verdicts"
    with pytest.raises(SessionError, match="no verdict to confirm"):
        s.decide("confirm")


def _queue(s: AnnotationSession) -> list[int]:
    """The whole queue of a session, in its order (every window's ids, one after another)."""
    return [i for window in s._queue_windows() for i in window]


@pytest.mark.parametrize("seed", [0, 3, 11])
def test_stratified_queue_takes_each_shuffled_lane_in_turn(templates, seed):
    """The queue is the cells' lanes (each cell's ids shuffled in the seed's turn) interleaved one item
    of each at a time, written out item by item, on cells of unequal sizes spanning several windows."""
    import numpy as np

    store = Store(":memory:")
    sizes = {("c3/lexical", "en"): 1300, ("c3/semantic", "zh"): 700, ("superglue/boolq", "en"): 41}
    fields = {"c3/lexical": {"content": "c", "notation": "n", "response": "r"},
              "c3/semantic": {"content": "c", "annotation": "a", "response": "r"},
              "superglue/boolq": {"question": "q", "passage": "p", "response": "True"}}
    rng = np.random.default_rng(99)
    todo = [cell for cell, n in sizes.items() for _ in range(n)]
    items = [NewItem(task, lang, f"{k}", fields[task], system=f"s{k % 2}")
             for k, (task, lang) in enumerate(todo[j] for j in rng.permutation(len(todo)))]
    store.add_items(items)

    def written_out(**scope):
        rng = np.random.default_rng(seed)
        lanes = [rng.permutation(store.item_id_array(task=t, lang=lg, system=sy)) for t, lg, sy in store.cells(**scope)]
        return [int(lane[j]) for j in range(max(map(len, lanes))) for lane in lanes if j < len(lane)]

    expected = written_out()
    assert len(store.cells()) == 6 and sorted(expected) == store.item_ids() != expected
    assert _queue(session(store, templates, order="stratified", seed=seed)) == expected
    drained = drain(session(store, templates, task="superglue/boolq", order="stratified", seed=seed))
    assert drained == written_out(task="superglue/boolq") and len(drained) == 41


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sizes=st.lists(st.integers(0, 90), min_size=1, max_size=7), seed=st.integers(0, 2**32 - 1),
       window=st.sampled_from([1, 3, 512]), labelled=st.sets(st.integers(0, 400), max_size=60))
def test_stratified_queue_read_on_a_thread_is_the_queue_read_in_place(tmp_path_factory, templates, monkeypatch,
                                                                      sizes, seed, window, labelled):
    """On a database file the lanes are read on a thread (`LaneReader`) and the first item of
    each lane comes as soon as its lane is read: the queue, and the items a session claims from
    it, are those of the lanes read in place one after another (an in-memory copy of the same
    items, read without a thread), whatever the cells' sizes (some empty: only superseded
    items), the seed, the window and which items are labelled already."""
    import numpy as np

    monkeypatch.setattr(session_module, "WINDOW", window)
    path = tmp_path_factory.mktemp("lanes") / "q.db"
    stores = [Store(path), Store(":memory:")]
    fields = {"content": "c", "notation": "n", "response": "r"}
    items = [NewItem("c3/lexical", "en", f"{cell}-{k}", fields, system=f"s{cell}")
             for k in range(max(sizes)) for cell, n in enumerate(sizes) if k < n]
    items += [NewItem("c3/lexical", "en", "gone", fields, system="s9"), NewItem("c3/lexical", "en", "gone", fields,
                                                                                  system="s9", version=2)]
    for store in stores:
        ids, _ = store.add_items(items, with_ids=True)
        store.conn.execute("UPDATE items SET current = 0 WHERE source_id = 'gone'")
        for k in sorted(labelled):
            if k < len(ids) - 2:
                store.annotate(ids[k], "bo", "label", label="correct")
    on_thread, in_place = (session(store, templates, order="stratified", seed=seed) for store in stores)
    assert on_thread._lanes._thread is not None and in_place._lanes._thread is None
    rng = np.random.default_rng(seed)
    lanes = [rng.permutation(stores[1].item_id_array(task=t, lang=lg, system=sy)) for t, lg, sy in stores[1].cells()]
    written_out = [int(lane[j]) for j in range(max(sizes)) for lane in lanes if j < len(lane)]
    assert _queue(on_thread) == _queue(in_place) == written_out
    on_thread.close()  # the lanes' thread has kept the queue for the next session of these items
    kept = session(stores[0], templates, annotator="di", order="stratified", seed=seed)
    assert kept._lanes is None and _queue(kept) == written_out
    on_thread, in_place = (session(store, templates, annotator="cy", order="stratified", seed=seed) for store in stores)
    assert drain(on_thread) == drain(in_place)
    for store in stores:
        store.close()


def test_the_first_stratified_lane_comes_before_the_other_cells_are_read(tmp_path, templates, monkeypatch):
    """The lanes' thread hands over each lane as soon as its cell is read: the first item of a
    queue worked out from its cells waits for one cell's read, not for every cell's."""
    fields = {"content": "c", "notation": "n", "response": "r"}
    store = Store(tmp_path / "q.db")
    store.add_items([NewItem("c3/lexical", "en", f"{k}", fields, system=f"s{k % 3}") for k in range(30)])
    first_cell = store.cells()[0]
    others_may_be_read = threading.Event()
    read = Store.item_ids_text

    def item_ids_text(self, **cell):
        if (cell["task"], cell["lang"], cell["system"]) != first_cell:
            assert others_may_be_read.wait(30)
        return read(self, **cell)

    monkeypatch.setattr(Store, "item_ids_text", item_ids_text)
    s = session(store, templates, order="stratified", seed=2)
    first = s.start()  # the other cells' reads wait meanwhile
    assert (first.item.task, first.item.lang, first.item.system) == first_cell
    others_may_be_read.set()
    s.close()
    store.close()


def test_the_stratified_lanes_are_read_no_further_than_asked_until_the_first_item_is_painted(tmp_path, templates,
                                                                                           monkeypatch):
    """Until the session's second claim (its first item painted), the lanes' thread reads one
    cell beyond the lanes the session took, so that the reads do not slow the first paint; then
    it reads the others, and the queue is the same."""
    fields = {"content": "c", "notation": "n", "response": "r"}
    store = Store(tmp_path / "q.db")
    store.add_items([NewItem("c3/lexical", "en", f"{k}", fields, system=f"s{k % 6}") for k in range(60)])
    expected = _queue(session(store, templates, order="stratified", seed=5, prepare_in_background=False))
    store.conn.execute("DELETE FROM stratified_orders")
    reads = []
    read = Store.item_ids_text

    def counted(self, **cell):
        reads.append(cell["system"])
        return read(self, **cell)

    monkeypatch.setattr(Store, "item_ids_text", counted)
    s = session(store, templates, annotator="cy", order="stratified", seed=5)
    first = s.start()
    time.sleep(0.3)  # time enough for the thread to read every cell, were it not waiting
    assert first.item.id == expected[0] and len(reads) == 2
    shown = [first.item.id] + [s.forward().item.id for _ in range(11)]
    assert shown == expected[:12] and len(reads) == 6
    s.close()
    store.conn.execute("DELETE FROM stratified_orders")
    on_first = session(store, templates, annotator="di", order="stratified", seed=5)
    on_first.start()
    on_first.close()  # closed on its first item: the other lanes are read, and the queue kept
    kept = session(store, templates, annotator="ed", order="stratified", seed=5)
    assert _queue(kept) == expected and kept._lanes is None
    store.close()


def test_the_cells_of_a_stratified_queue_are_read_in_one_snapshot(tmp_path):
    """The cells' ids, read one at a time as the lanes are shuffled, are those of one moment:
    items another connection adds meanwhile, and the stamp it changes, come in the next queue."""
    fields = {"content": "c", "notation": "n", "response": "r"}
    path = tmp_path / "q.db"
    store, writer = Store(path), Store(path)
    store.add_items([NewItem("c3/lexical", "en", f"{k}", fields, system=f"s{k % 2}") for k in range(10)])
    with store.cell_id_texts() as (stamp, cells):
        (cell, ids), *_ = [next(cells)]
        writer.add_items([NewItem("c3/lexical", "en", "new", fields, system="s1")])
        rest = list(cells)
    assert cell == ("c3/lexical", "en", "s0") and len(ids.split(",")) == 5
    assert rest == [(("c3/lexical", "en", "s1"), rest[0][1])] and len(rest[0][1].split(",")) == 5
    with store.cell_id_texts() as (later_stamp, cells):
        assert [len(ids.split(",")) for _, ids in cells] == [5, 6] and later_stamp != stamp
    assert not store.conn.in_transaction
    store.close()
    writer.close()


def test_a_kept_stratified_queue_serves_only_the_items_it_was_worked_out_from(tmp_path, templates):
    """The queue a session worked out is kept in the file; the next session of the same filter
    and seed takes it instead of reading the lanes, and gets the same items in the same order.
    After items are added, while an import runs, and after it finishes, the queue is worked
    out again, with the new items in their place; another filter or seed has its own."""
    fields = {"content": "c", "notation": "n", "response": "r"}
    store = Store(tmp_path / "q.db")
    store.add_items([NewItem("c3/lexical", "en", f"{k}", fields, system=f"s{k % 3}") for k in range(50)])

    def worked_out(**kw):
        s = session(store, templates, order="stratified", **kw)
        queue = _queue(s)
        s.close()
        return s, queue

    first, queue = worked_out(seed=4)
    assert first._lanes is not None and store.kept_stratified_order(first._scope, 4) is not None
    again, same = worked_out(seed=4)
    assert again._lanes is None and same == queue
    other, other_queue = worked_out(seed=5)
    narrower, narrower_queue = worked_out(seed=4, system="s1")
    assert other._lanes is not None and narrower._lanes is not None
    assert other_queue != queue and sorted(narrower_queue) == sorted(i for i in queue if i % 3 == 2)

    store.add_items([NewItem("c3/lexical", "en", "new", fields, system="s0")])
    added, with_new = worked_out(seed=4)
    assert added._lanes is not None and len(with_new) == 51 and worked_out(seed=4)[0]._lanes is None

    run = store.begin_import("more.jsonl")
    store.add_items([NewItem("c3/lexical", "en", "later", fields, system="s2")], run=run)
    running, hidden = worked_out(seed=4)
    assert running._lanes is not None and hidden == with_new  # the running import's items are hidden
    assert store.kept_stratified_order(running._scope, 4) is None
    store.finish_import(run)
    finished, shown = worked_out(seed=4)
    assert finished._lanes is not None and len(shown) == 52 and worked_out(seed=4)[1] == shown
    store.close()


def test_unstable_first_queue_read_in_slices_of_ids_is_the_whole_read(templates, monkeypatch):
    """Read a slice of ids at a time (slices growing from 13 ids to 97), the unstable-first queue
    is still every unstable item in id order (as one read of them all gives), then the others in
    id order; the disagreement-first queue likewise every contested item, then every item."""
    import random

    store = Store(":memory:")
    ids, _ = store.add_items([NewItem("c3/lexical", "en", f"{k}", {"content": "c", "notation": "n", "response": "r"})
                              for k in range(2000)], with_ids=True)
    draw = random.Random(5)
    repeated = draw.sample(ids, 300)
    store.add_judgments([NewJudgment(item_id=i, judge_name="gpt", judge_key="g", status="verdict",
                                     verdict=draw.choice(["yes", "no"]) if i in repeated[:120] else "yes", sample=k)
                         for i in repeated for k in range(3)])
    unstable = store.unstable_item_ids()
    assert 40 < len(unstable) < 120
    monkeypatch.setattr(session_module, "ID_SLICE", 97)
    monkeypatch.setattr(session_module, "FIRST_SLICE", 13)
    queue = _queue(session(store, templates, order="unstable-first"))
    assert queue == unstable + [i for i in ids if i not in set(unstable)]
    store.add_judgments([NewJudgment(item_id=i, judge_name="claude", judge_key="c", status="verdict",
                                     verdict=draw.choice(["yes", "no"])) for i in repeated])
    contested = store.contested_item_ids()
    assert 60 < len(contested) < 240
    queue = _queue(session(store, templates, order="disagreement-first"))
    assert queue == contested + ids  # the claim passes over those already taken

    # items with `overlap` labels in force or more, which no claim at that overlap leases, are left out of the read
    labels = Counter()
    for who in ("a", "b"):
        for i in sorted(set(draw.sample(unstable + contested, 60) + draw.sample(ids, 100))):
            store.annotate(i, who, "label", label="yes")
            labels[i] += 1
        labels[store.undo_last(who).item_id] -= 1
    assert max(labels.values()) == 2 and any(labels[i] == 1 for i in unstable) and any(labels[i] for i in contested)
    for overlap in (1, 2, 3):
        assert store.unstable_item_ids(overlap=overlap) == [i for i in unstable if labels[i] < overlap]
        assert store.contested_item_ids(overlap=overlap) == [i for i in contested if labels[i] < overlap]
        assert store.contested_item_ids(between=(ids[500], ids[999]), overlap=overlap) == [
            i for i in contested if labels[i] < overlap and ids[500] <= i <= ids[999]]
    unstable_first = session(store, templates, order="unstable-first", overlap=2)
    open_unstable = [i for i in unstable if labels[i] < 2]
    assert _queue(unstable_first) == open_unstable + [i for i in ids if i not in set(open_unstable)]
    assert store.unstable_item_ids(between=(ids[500], ids[999])) == [i for i in unstable if ids[500] <= i <= ids[999]]



@pytest.fixture
def another_process():
    """A process of this machine that runs until the test ends: where a second app would run."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    yield child
    child.kill()
    child.wait()


def items_file(tmp_path, n: int):
    """A database file of `n` items, that several apps (processes) can open."""
    path = tmp_path / "c.db"
    Store(path).add_items([NewItem("c3/lexical", "en", f"l{k}", {"content": "c", "notation": "n", "response": "r"})
                           for k in range(n)])
    return path


def test_two_apps_of_one_annotator_never_share_an_item_and_undo_their_own(tmp_path, templates, monkeypatch,
                                                                        another_process):
    path = items_file(tmp_path, 4)
    first = session(Store(path), templates)
    one = first.start()
    monkeypatch.setattr("calibrate.model.os.getpid", lambda: another_process.pid)  # the second app, in another terminal
    second = session(Store(path), templates)
    two = second.start()
    assert one.item.id != two.item.id, "both terminals showed the same item"
    first.decide("label", "yes")
    second.decide("label", "no")
    assert first.undo().item.id == one.item.id, "the first app undoes its own decision, not the second's later one"
    assert first.store.current_label(two.item.id, "ana") == "no"
    assert first.store.current_label(one.item.id, "ana") is None
    assert second.undo().item.id == two.item.id
    assert first.undo() is None, "nothing of its own is left to undo"


def test_an_item_held_by_an_app_that_was_killed_comes_back_when_its_annotator_starts_again(tmp_path, templates,
                                                                                        monkeypatch, another_process):
    path = items_file(tmp_path, 4)
    monkeypatch.setattr("calibrate.model.os.getpid", lambda: another_process.pid)
    held = session(Store(path), templates).start().item.id  # the app is killed: it never gives the item back
    monkeypatch.undo()
    running = session(Store(path), templates).start()
    assert running.item.id != held, "the other app's process still runs: its item stays with it"
    another_process.kill()
    another_process.wait()
    again = session(Store(path), templates)
    assert again.start().item.id == held, "the killed app's item came back at once"


def test_an_item_brought_back_by_undo_stays_with_the_app_that_shows_it(tmp_path, templates, monkeypatch,
                                                                       another_process):
    path = items_file(tmp_path, 2)
    first = session(Store(path), templates)
    one = first.start()
    monkeypatch.setattr("calibrate.model.os.getpid", lambda: another_process.pid)  # the second terminal
    second = session(Store(path), templates)
    two = second.start()
    first.decide("label", "yes")
    second.decide("label", "no")
    assert first.undo().item.id == one.item.id
    assert second.forward() is None, "the undone item is the first app's again, not free for the second to show"
    assert first.store.current_label(two.item.id, "ana") == "no"


def test_a_new_queue_of_the_same_app_undoes_the_decisions_made_before_it(two_cells, templates):
    store, _ = two_cells
    before = session(store, templates, task="c3/lexical")
    decided = before.start()
    before.decide("label", "yes")
    before.close()
    after = session(store, templates, task="c3/semantic")  # the app's filter changed (/)
    after.follows(before)
    after.start()
    assert after.undo().item.id == decided.item.id and store.current_label(decided.item.id, "ana") is None
