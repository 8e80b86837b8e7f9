"""The gold exports, whose lines and rows SQLite writes (`Store.export_json_lines`,
`Store.export_csv_rows`), give byte for byte what the item-by-item computation gives on random
data: every item's labels, the gold label by `calibrate.gold`'s rule (contested items
included), verdicts in force, notes, flags, and text with quotes, controls, invisible
characters and formula-like starts; and each verdict's trust mark, regular or irregular."""

from __future__ import annotations

import contextlib
import csv
import io
import itertools
import json
import os
import random
import sqlite3
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calibrate.escape import json_text_safe, spreadsheet_safe
from calibrate.formats.gold import _csv_cells, write_csv, write_jsonl
from calibrate.gold import gold_label
from calibrate.model import NewItem, NewJudgment
from calibrate.reliability_cells import TrustMarks
from calibrate.store import HELPERS, Store, export_rows
from calibrate.store.export_rows import _csv_quoted
from tests.test_counted_reads import fill, item, more, shake

text = st.text(alphabet=st.sampled_from(['a', 'é', '"', "\\", "\n", "\t", "\x1b", "\x7f", "\u200b", "\u202e", "=",
                                         "-", "+", "@", ",", " ", "是", "1"]), max_size=6)
extras = st.lists(st.tuples(text, text, st.sampled_from(["skip", "flag", "label"]), st.integers(0, 10**6)), max_size=5)


def expected_items(store: Store, system: str | None) -> list[dict]:
    """Every current item of the export, as its line must read, computed item by item."""
    out = []
    for it in store.iter_items(system=system):
        labels = {r["annotator"]: r["label"] for r in sorted(store.current_labels(), key=lambda r: r["annotator"])
                  if r["item_id"] == it.id}
        gold, basis = gold_label(labels)
        verdicts = {name: {"status": status, "verdict": verdict, "correct": correct}
                    for name, status, verdict, correct in store.conn.execute(
                        "SELECT v.judge_name, v.status, v.verdict, j.correct FROM verdicts_in_force v "
                        "JOIN judgments j ON j.id = v.judgment_id WHERE v.item_id = ? ORDER BY v.judge_name", (it.id,))}
        notes = [{"annotator": a, "note": n, "action": act} for a, n, act in store.conn.execute(
            "SELECT annotator, note, action FROM annotations WHERE item_id = ? AND note IS NOT NULL ORDER BY id",
            (it.id,))]
        flagged = sorted({a for (a,) in store.conn.execute(
            "SELECT annotator FROM annotations a WHERE item_id = ? AND action = 'flag' "
            "AND NOT EXISTS (SELECT 1 FROM annotations u WHERE u.reverts_id = a.id)", (it.id,))})
        out.append({
            "item_id": it.id, "task": it.task, "lang": it.lang, "system": it.system, "source_id": it.source_id,
            "reference": it.reference, "fields": it.fields, "labels": labels, "gold_label": gold, "gold_basis": basis,
            "annotator": None if gold is None else next(iter(labels)) if len(labels) == 1 else "gold",
            "verdicts": verdicts, "notes": notes, "flagged_by": flagged, "listened": None,
        })
    return out


@pytest.fixture(params=["memory", "file"])
def exporting(request, tmp_path: Path, monkeypatch) -> Iterator[tuple[Store, Callable]]:
    """A store, in memory (its exports put together on its own connection) or in a file (put
    together by helper connections on threads of their own), and a function running an export
    on it as `calibrate export` does: its lines a few items at a time (several ranges, some
    put together ahead of the one written out)."""
    where = request.param
    monkeypatch.setattr(export_rows, "RANGE", 40)
    store = Store(":memory:" if where == "memory" else tmp_path / "export.db")
    with store.helpers() as helpers:
        assert len(helpers) == (0 if where == "memory" else min(HELPERS, os.cpu_count() or 1))

        def export(writer, *args):
            with store.reading(*helpers):
                return writer(store, *args, helpers=helpers)

        try:
            yield store, export
        finally:
            store.close()


def test_exports_equal_the_item_by_item_export(exporting):
    store, export = exporting
    serial = itertools.count()

    @settings(max_examples=25, deadline=None)
    @given(st.lists(item, min_size=1, max_size=20), more, extras, st.sampled_from([None, "s1"]))
    def check(items, changes, odd, system):
        ids = fill(store, items, serial)
        shake(store, ids, changes)
        for content, note, action, pick in odd:  # odd text in items, notes, flags
            new, _ = store.add_items([NewItem("c3/lexical", "en", f"{next(serial)}{content}",
                                              {"content": content, "response": note}, reference=content,
                                              system="s1" if pick % 2 else f"={content},")], with_ids=True)
            ids += new
            store.annotate(ids[pick % len(ids)], f"ann{content}", action, note=note or None,
                           label=f"y{content}" if action == "label" else None)
        expected = expected_items(store, system)

        out = io.StringIO()
        assert export(write_jsonl, out, system) == len(expected)
        assert out.getvalue() == "".join(
            json_text_safe(json.dumps(e, ensure_ascii=False, separators=(",", ":"))) + "\n" for e in expected)
        binary = io.BytesIO()  # a file the lines go to as UTF-8 bytes
        assert export(write_jsonl, binary, system) == len(expected)
        assert binary.getvalue() == out.getvalue().encode()

        out = io.StringIO()
        assert export(write_csv, out, system) == len(expected)
        rows = list(csv.reader(io.StringIO(out.getvalue())))
        header = rows[0]
        annotators = [h.removeprefix("label:") for h in header if h.startswith("label:")]
        judges = [h.removeprefix("verdict:") for h in header if h.startswith("verdict:")]
        assert annotators == sorted({a for e in expected for a in e["labels"]})
        assert judges == sorted({j for e in expected for j in e["verdicts"]})
        expected_rows = [[spreadsheet_safe(v) for v in [
            e["item_id"], e["task"], e["lang"], e["system"], e["source_id"], e["reference"], e["gold_label"],
            e["gold_basis"], e["annotator"], *(e["labels"].get(a, "") for a in annotators),
            *((e["verdicts"][j]["verdict"] or e["verdicts"][j]["status"]) if j in e["verdicts"] else "" for j in judges),
            " | ".join(f"{n['annotator']}: {n['note']}" for n in e["notes"]), " ".join(e["flagged_by"])]]
            for e in expected]
        assert rows[1:] == expected_rows
        written = io.StringIO(newline="")
        csv.writer(written).writerows([header, *expected_rows])
        assert out.getvalue() == written.getvalue(), "quoted and ended as csv.writer writes them"

    check()


def expected_marks(store: Store, marks: TrustMarks) -> dict[int, dict[str, str]]:
    """Item id -> judge -> its trust mark, verdict by verdict: an irregular verdict (repeats, or an
    error in force) as `marks` marks it one by one, any other accepted when it is parsed and its
    confidence, in [0, 1], reaches its cell's threshold."""
    found = defaultdict(dict)
    for item_id, task, lang, judge, status, confidence, repeated in store.conn.execute(
            "SELECT v.item_id, i.task, i.lang, v.judge_name, v.status, j.confidence, EXISTS (SELECT 1 FROM judgments r "
            "WHERE r.item_id = v.item_id AND r.judge_name = v.judge_name AND r.sample > 0) FROM verdicts_in_force v "
            "JOIN items i ON i.id = v.item_id JOIN judgments j ON j.id = v.judgment_id ORDER BY v.item_id, v.judge_name"):
        if repeated or status == "error":
            accepted = marks.irregular.get((item_id, judge), False)
        else:
            threshold = marks.thresholds.get((task, lang, judge))
            accepted = (status == "verdict" and threshold is not None and confidence is not None
                        and 0 <= confidence <= 1 and confidence >= threshold)
        found[item_id][judge] = "accepted" if accepted else "needs a person"
    return found


def test_trust_marks_in_exports_equal_the_marks_verdict_by_verdict(exporting):
    """Each verdict's trust mark in both exports, regular and irregular ones (repeats, errors in
    force; judges named like parts of a line), under random thresholds and random marks of the
    irregular verdicts, is the mark `TrustMarks` gives it."""
    store, export = exporting
    serial = itertools.count()
    odd_judges = ["trust", 'a","gpt', "gpt\\"]

    @settings(max_examples=25, deadline=None)
    @given(st.lists(item, min_size=1, max_size=20), st.lists(st.tuples(st.integers(0, 10**6), st.sampled_from(odd_judges),
                                                                        st.booleans(), st.sampled_from([None, 0.5, 0.9]))),
           st.lists(st.sampled_from([0.0, 0.6, 0.7, 0.95]), min_size=12, max_size=12), st.integers(0, 2**32),
           st.sampled_from([None, "s1"]))
    def check(items, odd, levels, seed, system):
        rng = random.Random(seed)  # one draw, whatever the number of verdicts the store has gathered
        ids = fill(store, items, serial)
        store.add_judgments([NewJudgment(item_id=ids[pick % len(ids)], judge_name=name, judge_key=name, status="verdict",
                                         verdict="yes", confidence=confidence, sample=int(repeat))
                             for pick, name, repeat, confidence in odd])
        judges = ["gpt", "r1", *odd_judges]
        cells = store.conn.execute("SELECT DISTINCT task, lang FROM items ORDER BY 1, 2").fetchall()
        thresholds = {(task, lang, judge): level for (task, lang), judge, level in zip(
            [cell for cell in cells for _ in judges], judges * len(cells), levels * 10, strict=False) if level}
        pairs = store.conn.execute("SELECT item_id, judge_name FROM verdicts_in_force").fetchall()
        marks = TrustMarks(thresholds, {tuple(pair): rng.random() < 0.5 for pair in pairs})
        expected = {item_id: found for item_id, found in expected_marks(store, marks).items()}
        current = [i for (i,) in store.conn.execute(
            "SELECT id FROM items WHERE current = 1 AND (?1 IS NULL OR system = ?1) ORDER BY id", (system,))]

        out = io.StringIO()
        export(write_jsonl, out, system, marks)
        written = [json.loads(line) for line in out.getvalue().splitlines()]
        assert [r["item_id"] for r in written] == current
        assert {r["item_id"]: r["trust"] for r in written} == {i: expected.get(i, {}) for i in current}
        for line in out.getvalue().splitlines():  # the marks keep the store's order and spelling
            record = json.loads(line)
            assert line.endswith(',"trust":' + json.dumps(record["trust"], ensure_ascii=False, separators=(",", ":"))
                                 + "}")

        out = io.StringIO()
        export(write_csv, out, system, marks)
        rows = list(csv.DictReader(io.StringIO(out.getvalue())))
        shown = sorted({j for i in current for j in expected.get(i, {})})
        assert [int(r["item_id"]) for r in rows] == current
        assert [{j: r[f"trust:{spreadsheet_safe(j)}"] for j in shown} for r in rows] == \
            [{j: expected.get(i, {}).get(j, "") for j in shown} for i in current]

    check()


def test_c3_export_items_equal_each_items_verdict_in_force_read_one_by_one():
    """What `export c3` reads of a cell in one pass (each item, whether the judge has a verdict
    in force on it, that judgment's raw output) is what reading the items and each one's verdict
    in force gives, after random writes (re-labels, undos, re-parses, new judgments, new versions)."""
    store = Store(":memory:")
    serial = itertools.count()

    @settings(max_examples=25, deadline=None)
    @given(st.lists(item, min_size=1, max_size=20), more, st.sampled_from(["gpt", "r1", None]),
           st.sampled_from(["", "s1", "s2"]))
    def check(items, changes, judge, system):
        shake(store, fill(store, items, serial), changes)
        for task, lang in (("c3/lexical", "en"), ("c3/semantic", "zh")):
            expected = []
            for it in store.iter_items(task=task, lang=lang, system=system):
                found = store.conn.execute(
                    "SELECT j.raw_output FROM verdicts_in_force v JOIN judgments j ON j.id = v.judgment_id "
                    "WHERE v.item_id = ? AND v.judge_name = ?", (it.id, judge)).fetchone()
                expected.append((it, found is not None, found[0] if found else None))
            assert list(store.c3_export_items(task, lang, system, judge)) == expected

    try:
        check()
    finally:
        store.close()


cell = st.text(alphabet=st.sampled_from(["a", ",", '"', "\r", "\n", "\x00", " ", "'", "é", "是", "\t", ";"]), max_size=5)


@settings(max_examples=300, deadline=None)
@given(st.lists(cell, min_size=2, max_size=6))
def test_csv_cells_are_quoted_as_csv_writer_quotes_them(cells):
    """A CSV row put together from cells quoted by the export (in SQL for the first ones, in
    Python for the rest) has the bytes `csv.writer` writes for it."""
    written = io.StringIO(newline="")
    csv.writer(written).writerow(cells)
    with contextlib.closing(sqlite3.connect(":memory:")) as conn:  # SQL alone: no schema needed
        first = conn.execute(f"SELECT {_csv_quoted('x', 'x')} FROM (SELECT ? AS x)", (cells[0],)).fetchone()[0]
    assert first + _csv_cells(cells[1:]) + "\r\n" == written.getvalue()
