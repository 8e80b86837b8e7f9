"""The import's quick paths give exactly what the plain ones give: canonical JSON from the
encoder built once, a JSONL line parsed without the decoder's whitespace scans, the field-type
check's one-pass common case, items inserted many rows per statement; and a batch that fails, or
a bad line after batches were written, leaves nothing behind."""

from __future__ import annotations

import json
import sqlite3

import pytest
from hypothesis import given
from hypothesis import strategies as st

from calibrate.formats import ImportFailed, import_records, read_jsonl
from calibrate.formats.jsonl import jsonl_records
from calibrate.model import CalibrateError, NewItem, dump_json
from calibrate.store import Store
from calibrate.validate import MAX_DEPTH, STRICT_JSON, InputError, check_value, parse_json_value

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=20,
)


@given(JSON_VALUES)
def test_canonical_json_is_what_the_standard_encoder_writes(value):
    assert dump_json(value) == json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def decoded_as_before(text: str, what: str = "line"):
    """parse_json_value's result or message, written out with the decoder's own decode."""
    try:
        value = STRICT_JSON.decode(text)
    except InputError as exc:
        return f"{what}: {exc}"
    except json.JSONDecodeError as exc:
        return f"{what}: malformed JSON ({exc.msg} at column {exc.colno})"
    except RecursionError:
        return f"{what}: nested too deeply"
    except ValueError as exc:
        return f"{what}: {exc}"
    if "\\u" in text or text.count("[") + text.count("{") > MAX_DEPTH:
        try:
            check_value(value, what)
        except InputError as exc:
            return str(exc)
    return value


PIECES = ['{', '}', '[', ']', '"a"', '"\\ud800"', ':', ',', '1', '-2.5e3', '9' * 40, '1e999', 'NaN', 'null', 'true',
          ' ', '\t', '\n', '\r\n', '\r', 'x', '"', '\\', 'é', '{"k": [1, {"b": "c"}]}']


@given(st.lists(st.sampled_from(PIECES), max_size=10).map("".join))
def test_a_line_parses_to_the_value_or_message_the_decoder_gives(text):
    try:
        ours = parse_json_value(text, "line")
    except InputError as exc:
        ours = str(exc)
    assert repr(ours) == repr(decoded_as_before(text))


def test_a_line_with_two_fields_of_the_wrong_type_names_the_manifests_first(calibrate, tmp_path):
    line = {"id": "a", "response": 5, "notation": "n", "content": ["x"]}
    f = tmp_path / "in.jsonl"
    f.write_text(json.dumps(line) + "\n", encoding="utf-8")
    out = calibrate("import", "jsonl", str(f), "--task", "c3/lexical", "--lang", "en", ok=False)
    assert out.exit_code == 1 and "in.jsonl:1: field 'content' must be text, got list of text" in out.output


def test_items_inserted_many_per_statement_are_the_rows_and_count_of_one_per_statement(tmp_path, monkeypatch):
    """Statements of 3 rows (monkeypatched) over 10 items with repeats inside and across
    statements: the same rows, ids and count of added items as one INSERT per item."""
    from calibrate.store import items as items_module

    monkeypatch.setattr(items_module, "ROWS_PER_INSERT", 3)
    new = [NewItem("c3/lexical", "en", f"s{k % 7}", {"content": f"c{k % 7}", "n": k % 7 or None}) for k in range(10)]
    store = Store(tmp_path / "many.db")
    ids, added = store.add_items(new, with_ids=True)
    assert added == 7 and ids == [1, 2, 3, 4, 5, 6, 7, 1, 2, 3]
    reference = sqlite3.connect(":memory:")
    reference.execute("CREATE TABLE items (id INTEGER PRIMARY KEY, source_id, fields, content_hash UNIQUE)")
    reference.executemany("INSERT OR IGNORE INTO items (source_id, fields, content_hash) VALUES (?, ?, ?)",
                          [(i.source_id, i.fields_json, i.content_hash) for i in new])
    stored = store.conn.execute("SELECT id, source_id, fields, content_hash FROM items ORDER BY id")
    assert [tuple(row) for row in stored] == reference.execute("SELECT * FROM items ORDER BY id").fetchall()


def test_a_batch_that_fails_fails_the_import_and_leaves_nothing(tmp_path, templates, monkeypatch):
    from calibrate import formats

    monkeypatch.setattr(formats, "BATCH", 100)
    f = tmp_path / "in.jsonl"
    f.write_text("".join(json.dumps({"id": k, "content": f"c{k}", "notation": "n", "response": "r"}) + "\n"
                         for k in range(1000)), encoding="utf-8")
    store = Store(tmp_path / "s.db")
    original, calls = store.add_items, []

    def failing(items, **kw):
        calls.append(len(items))
        if len(calls) == 3:
            raise CalibrateError("the disk is full")
        return original(items, **kw)

    store.add_items = failing
    with pytest.raises(CalibrateError, match="the disk is full"):
        import_records(store, jsonl_records(f, task="c3/lexical", lang="en"), templates)
    assert len(calls) == 3, "no batch was written after the failed one"
    assert store.conn.execute("SELECT count(*) FROM items").fetchone()[0] == 0
    assert store.conn.execute("SELECT count(*) FROM import_runs").fetchone()[0] == 0
    store.add_items = original
    report = import_records(store, jsonl_records(f, task="c3/lexical", lang="en"), templates)
    assert report.counts.items_added == 1000 and store.count_items() == 1000


def test_a_bad_line_after_batches_were_written_imports_nothing(tmp_path, templates, monkeypatch):
    from calibrate import formats

    monkeypatch.setattr(formats, "BATCH", 100)
    f = tmp_path / "in.jsonl"
    f.write_text("".join(json.dumps({"id": k, "content": f"c{k}", "notation": "n", "response": "r"}) + "\n"
                         for k in range(250)) + "{broken\n", encoding="utf-8")
    store = Store(tmp_path / "s.db")
    with pytest.raises(ImportFailed, match="in.jsonl:251: malformed JSON"):
        import_records(store, jsonl_records(f, task="c3/lexical", lang="en"), templates)
    assert store.conn.execute("SELECT count(*) FROM items").fetchone()[0] == 0
    assert store.conn.execute("SELECT count(*) FROM import_runs").fetchone()[0] == 0


@pytest.mark.parametrize("ending", ["\n", "\r\n"])
def test_a_line_cut_short_is_wrong_at_its_own_end_not_on_the_next_line(tmp_path, ending):
    f = tmp_path / "cut.jsonl"
    f.write_bytes(('{"id": 1, "content": "x"' + ending).encode())
    (found,) = list(read_jsonl(f))
    assert found.reason == "malformed JSON (Expecting ',' delimiter at column 25)"


def test_an_identity_seen_twice_in_one_import_is_the_same_item_or_a_bad_line(calibrate, tmp_path):
    """The same line twice is one item (the second already present); the same identity with
    other content is refused naming the second line, also with --update (no version of an item
    this import has not stored yet)."""
    line = {"id": "a", "content": "c", "notation": "n", "response": "r"}
    twice = tmp_path / "twice.jsonl"
    twice.write_text(json.dumps(line) + "\n" + json.dumps(line) + "\n", encoding="utf-8")
    out = calibrate("import", "jsonl", str(twice), "--task", "c3/lexical", "--lang", "en")
    assert "2 records: 1 item added, 1 already present" in out.output
    changed = tmp_path / "changed.jsonl"
    changed.write_text(json.dumps({**line, "id": "b"}) + "\n" + json.dumps({**line, "id": "b", "response": "s"}) + "\n",
                       encoding="utf-8")
    out = calibrate("import", "jsonl", str(changed), "--task", "c3/lexical", "--lang", "en", ok=False)
    assert out.exit_code == 1 and "changed.jsonl:2: c3/lexical (en) item b appears twice in this import" in out.output
    assert "--update" not in out.output.replace("--skip-bad", ""), "--update is no help here"
    out = calibrate("import", "jsonl", str(changed), "--task", "c3/lexical", "--lang", "en", "--update", ok=False)
    assert out.exit_code == 1 and "changed.jsonl:2: c3/lexical (en) item b appears twice in this import" in out.output
