"""Gold labels out: items with every annotator's label, the gold label (`calibrate.gold`) and
who decided it (the annotator, or "gold" where several people's labels make it; `calibrate
import labels` reads an export back), judge verdicts and notes, as JSONL or CSV (cells a spreadsheet would run as formulas are
neutralised); for items with audio whether each annotator listened (seconds played, 0 when
they labelled without playing it); and, given the judges' trust marks (`calibrate trust`), per
judge whether each item's verdict is accepted or needs a person.

Items are streamed from the store (`Store.export_lines`, `Store.export_cells`), which writes
each line or row in SQL, and written as they come, so an export of a million items holds a few
thousand lines at a time. Here are added what follows from an item's labels (the gold label by
`calibrate.gold`, who decided it; worked out once per set of labels, as items share a few), and
what few items need: the notes, flags and listening of the items that have them, and the trust
marks of irregular verdicts. A JSON line is compact, the item's fields minified by SQLite from
the stored text, never parsed into Python objects."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import tempfile
from concurrent.futures import Future
from pathlib import Path

from calibrate.child_process import ChildWorkError, in_child_process
from calibrate.escape import json_text_safe, spreadsheet_safe
from calibrate.gold import gold_label
from calibrate.reliability_cells import TrustMarks
from calibrate.store import Store
from calibrate.store.confidence import ALL_IDS
from calibrate.store.export_rows import NO_SPARSE_JSON, Sparse

CHUNK = 2000  # lines written at once
TWO_PARTS_FROM = 100_000  # items from which an export of a database file is written by two processes, a half each
MEMO = 4096  # sets of labels whose gold label part (JSON) or cells (CSV) are kept


def _json(value) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


class _ByLabels(dict):
    """What follows from an item's labels, by their JSON text (annotator -> label), worked out by
    `work` from the labels once per set: items share a few sets of labels. At most MEMO sets are
    kept."""

    def __init__(self, work):
        super().__init__()
        self.work = work

    def __missing__(self, text: str):
        if len(self) >= MEMO:
            self.clear()
        found = self[text] = self.work(json.loads(text))
        return found


def _decided(labels: dict[str, str]) -> tuple[str | None, str, str | None]:
    """The gold label of an item with these labels (`calibrate.gold`), how it was reached, and
    who decided it: the one annotator, or "gold" where several labels make it (None without one)."""
    label, how = gold_label(labels)
    return label, how, None if label is None else next(iter(labels)) if len(labels) == 1 else "gold"


def _gold_json(labels: dict[str, str]) -> str:
    """The gold label part of a JSON line, after its labels."""
    label, how, who = _decided(labels)
    return f',"gold_label":{_json(label)},"gold_basis":{_json(how)},"annotator":{_json(who)}'


def _with_sparse(line: str, sparse: Sparse) -> str:
    """A line with the item's notes, flags and listening in place of `NO_SPARSE_JSON`."""
    head, _, tail = line.rpartition(NO_SPARSE_JSON)
    return (f'{head},"notes":{_json(sparse.notes)},"flagged_by":{_json(sparse.flagged_by)},'
            f'"listened":{_json(sparse.listened)}{tail}')


def _with_marks(line: str, marks: list[tuple[str, bool]]) -> str:
    """A line with the trust marks of the item's irregular verdicts (`Sparse.marks`) in place of
    the ones the store wrote by the rule of regular verdicts: its last object, the marks, read
    and written again (its values are strings, so ',"trust":{' cannot occur inside it)."""
    head, _, tail = line.rpartition(',"trust":{')
    trust = json.loads("{" + tail.removesuffix("}"))  # the object, without the line's own closing brace
    for judge, accepted in marks:
        if judge in trust:
            trust[judge] = "accepted" if accepted else "needs a person"
    return f'{head},"trust":{_json(trust)}}}'


def write_jsonl(store: Store, out: io.TextIOBase | io.BufferedIOBase, system: str | None = None,
                marks: TrustMarks | None = None, *, ids: tuple[int, int] = ALL_IDS) -> int:
    """One JSON line per item (whose id is in `ids`, first and last): item_id, task, lang, system,
    source_id, reference, fields, labels, gold_label, gold_basis, verdicts (judge -> status,
    verdict, correct), notes, flagged_by, listened, and with `marks` trust (judge -> "accepted" or
    "needs a person"). `out` is a text stream, or a binary one that takes the lines in UTF-8
    (cheaper: the lines are not decoded)."""
    if marks is not None:
        store.set_trust_marks(marks)
    if isinstance(out, io.TextIOBase):
        def write(lines: list[bytes]) -> None:
            out.write((b"\n".join(lines) + b"\n").decode())
    else:
        def write(lines: list[bytes]) -> None:
            out.write(b"\n".join(lines) + b"\n")
    n, chunk = 0, []
    gold = _ByLabels(lambda labels: _gold_json(labels).encode())
    # the store gives each line's parts as UTF-8 bytes, written out as they are where nothing is to be changed
    for _, (_, head, labels, tail), sparse in store.export_lines(system, trust=marks is not None, ids=ids):
        line = b"".join((head[:-1], b',"labels":', labels, gold[labels], tail))
        if sparse is not None:
            text = _with_sparse(line.decode(), sparse)
            if sparse.marks:
                text = _with_marks(text, sparse.marks)
            line = text.encode()
        # an ASCII line without DEL has nothing `json_text_safe` would change (JSON escaped the controls)
        chunk.append(line if line.isascii() and b"\x7f" not in line else json_text_safe(line.decode()).encode())
        if len(chunk) == CHUNK:
            write(chunk)
            n, chunk = n + len(chunk), []
    if chunk:
        write(chunk)
    return n + len(chunk)


def write_csv(store: Store, out: io.TextIOBase, system: str | None = None, marks: TrustMarks | None = None, *,
              ids: tuple[int, int] = ALL_IDS, columns: tuple[list[str], list[str], bool] | None = None,
              header: bool = True) -> int:
    """One CSV row per item (whose id is in `ids`, first and last): item_id, task, lang, system,
    source_id, reference, gold_label, gold_basis, annotator, a label column per annotator, a
    verdict column per judge, with `marks` a trust column per judge, notes, flagged_by, and where
    an item has usable audio a listened column per annotator; cells a spreadsheet would run as
    formulas neutralised. The columns are `columns` (`Store.export_columns`; read when None), the
    header row written with `header`."""
    annotators, judges, with_audio = columns or store.export_columns(system)
    listeners = annotators if with_audio else []
    trusted = judges if marks is not None else []
    if marks is not None:
        store.set_trust_marks(marks)
    writer = csv.writer(out)
    if header:
        writer.writerow([spreadsheet_safe(v) for v in [
            "item_id", "task", "lang", "system", "source_id", "reference", "gold_label", "gold_basis", "annotator",
            *(f"label:{a}" for a in annotators), *(f"verdict:{j}" for j in judges), *(f"trust:{j}" for j in trusted),
            "notes", "flagged_by", *(f"listened:{a}" for a in listeners)]])
    column = {a: k for k, a in enumerate(annotators)}
    # each judge's trust column in a row of `Store.export_cells`: after the item id, five cells, labels, verdicts
    mark_column = {j: 7 + len(judges) + k for k, j in enumerate(trusted)}
    no_sparse = ("", "", *[""] * len(listeners))

    def cells_of(labels: dict[str, str]) -> tuple:
        """The cells that follow from an item's labels: gold label, basis, who decided, a label per annotator."""
        cells = [*_decided(labels), *[""] * len(annotators)]
        for who, label in labels.items():
            cells[3 + column[who]] = label
        return tuple(map(spreadsheet_safe, cells))

    decided = _ByLabels(cells_of)
    count = 0

    def rows():
        nonlocal count
        for _, row, sparse in store.export_cells(judges, spreadsheet_safe, system, trust=marks is not None, ids=ids):
            count += 1
            labels = row[6]  # after the item id, task, lang, system, source_id and reference ("{}" for none)
            cells = decided[labels]
            if sparse is None:
                tail = no_sparse
            else:
                if sparse.marks:  # the irregular verdicts' marks in place of the ones written by the regular rule
                    row = list(row)
                    for judge, accepted in sparse.marks:
                        if judge in mark_column and row[mark_column[judge]]:
                            row[mark_column[judge]] = "accepted" if accepted else "needs a person"
                    row = tuple(row)
                tail = tuple(spreadsheet_safe(value) for value in (
                    " | ".join(f"{note['annotator']}: {note['note']}" for note in sparse.notes),
                    " ".join(sparse.flagged_by), *((sparse.listened or {}).get(a, "") for a in listeners)))
            yield row[:6] + cells + row[7:] + tail

    writer.writerows(rows())
    return count


def write_export(store: Store, out: io.TextIOBase | io.BufferedIOBase, fmt: str, system: str | None = None,
                 marks: TrustMarks | None = None, *, items: int, beside: Path | None = None) -> int:
    """The items (of `system`, if given; `items` of them) as JSON lines (`fmt` "jsonl", see
    `write_jsonl`) or CSV rows (`write_csv`) to `out`. From a database file with at least
    TWO_PARTS_FROM items, a second process writes the second half of the items (by id) to a
    temporary file in the folder `beside` (None: the system's) while this one writes the first
    half to `out`, and the second is then copied after it: the same bytes in about half the
    time where a core is free. Should the second process fail to start or end, this one
    writes its half itself."""
    write = write_jsonl if fmt == "jsonl" else write_csv
    columns = store.export_columns(system) if fmt == "csv" else None
    options = {"columns": columns} if columns is not None else {}
    split = store.export_split(system) if store.in_file and items >= TWO_PARTS_FROM else None
    if split is None:
        return write(store, out, system, marks, **options)
    text = isinstance(out, io.TextIOBase)
    encoding = (out.encoding, out.errors) if text else None
    handle, part = tempfile.mkstemp(prefix=".calibrate-export-", suffix=".part", dir=beside)
    os.close(handle)
    try:
        second = Future()
        in_child_process(second, _write_second_part, (store.path, fmt, system, marks, split, columns, part, encoding),
                         niceness=0)
        n = write(store, out, system, marks, ids=(ALL_IDS[0], split - 1), **options)
        try:
            n_second = second.result()
        except ChildWorkError:  # the second process did not finish: this one writes its half
            n_second = _write_second_part(store, fmt, system, marks, split, columns, part, encoding)
        out.flush()
        with open(part, "rb") as written:
            shutil.copyfileobj(written, out.buffer if text else out, 1 << 20)
        return n + n_second
    finally:
        os.unlink(part)


def _write_second_part(store: Store | str, fmt: str, system: str | None, marks: TrustMarks | None, split: int,
                       columns: tuple | None, part: str, encoding: tuple[str, str] | None) -> int:
    """`write_export`'s second half: the items from id `split` on, written to the file `part`
    (in bytes as they would be written to the output: text encoded by `encoding`, (encoding,
    errors), or UTF-8 bytes where it is None), read through `store` or a store opened read-only
    on that path."""
    if isinstance(store, str):
        store = Store(store, read_only=True)
    with (open(part, "w", encoding=encoding[0], errors=encoding[1], newline="") if encoding else open(part, "wb")) as out:
        if fmt == "jsonl":
            return write_jsonl(store, out, system, marks, ids=(split, ALL_IDS[1]))
        return write_csv(store, out, system, marks, ids=(split, ALL_IDS[1]), columns=columns, header=False)
