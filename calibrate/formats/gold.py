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

from calibrate.escape import json_text_safe, spreadsheet_safe
from calibrate.gold import gold_label
from calibrate.reliability_cells import TrustMarks
from calibrate.store import Store
from calibrate.store.export_rows import NO_SPARSE_JSON, Sparse

CHUNK = 2000  # lines written at once
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
                marks: TrustMarks | None = None) -> int:
    """One JSON line per item: item_id, task, lang, system, source_id, reference, fields, labels,
    gold_label, gold_basis, verdicts (judge -> status, verdict, correct), notes, flagged_by,
    listened, and with `marks` trust (judge -> "accepted" or "needs a person"). `out` is a text
    stream, or a binary one that takes the lines in UTF-8 (cheaper: the lines are not decoded)."""
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
    for _, (_, head, labels, tail), sparse in store.export_lines(system, trust=marks is not None):
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


def write_csv(store: Store, out: io.TextIOBase, system: str | None = None, marks: TrustMarks | None = None) -> int:
    """One CSV row per item: item_id, task, lang, system, source_id, reference, gold_label,
    gold_basis, annotator, a label column per annotator, a verdict column per judge, with `marks`
    a trust column per judge, notes, flagged_by, and where an item has usable audio a listened
    column per annotator; cells a spreadsheet would run as formulas neutralised."""
    annotators, judges, with_audio = store.export_columns(system)
    listeners = annotators if with_audio else []
    trusted = judges if marks is not None else []
    if marks is not None:
        store.set_trust_marks(marks)
    writer = csv.writer(out)
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
        for _, row, sparse in store.export_cells(judges, spreadsheet_safe, system, trust=marks is not None):
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
