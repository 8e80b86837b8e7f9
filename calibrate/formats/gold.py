"""Gold labels out: items with every annotator's label, the gold label (`calibrate.gold`) and
who decided it (the annotator, or "gold" where several people's labels make it), judge
verdicts and notes, as JSONL or CSV (cells a spreadsheet would run as formulas are
neutralised; `calibrate import labels` reads an export back as each person's labels and
notes); for items with audio whether each annotator listened (seconds played, 0 when
they labelled without playing it); and, given the judges' trust marks (`calibrate trust`), per
judge whether each item's verdict is accepted or needs a person.

The store puts the lines (or rows) together in SQL, some thousands at a time
(`Store.export_json_lines`, `Store.export_csv_rows`), on threads of their own where helper
connections are given, and they are written out as they come, as UTF-8 bytes, so an export of
a million items holds a few ranges of lines at a time. Here is worked out what the store puts
in them: what follows from an item's labels (the gold label by `calibrate.gold`, who decided
it) and from its verdicts (their JSON or cells, and their trust marks), once per set of labels
or verdicts, as items share a few; and what few items need: the notes, flags and listening of
the items that have them. A JSON line is compact, the item's fields minified by SQLite from the
stored text, never parsed into Python objects."""

from __future__ import annotations

import codecs
import functools
import io
import json
from collections.abc import Callable, Sequence

from calibrate.escape import json_bytes_safe, spreadsheet_safe
from calibrate.gold import gold_label
from calibrate.kinds import kind_for
from calibrate.names import CONSOLIDATED
from calibrate.reliability_cells import TrustMarks
from calibrate.store import Store
from calibrate.store.export_rows import CSV_SPECIAL, LineParts, Sparse
from calibrate.verdicts import SCORE_KEYS

SCORED = kind_for("rubric_scores")
LABEL_COLUMN = "label:"  # a CSV column of one person's labels, before their name
NOTES_BETWEEN = " | "  # between the notes of a CSV notes cell, each "annotator: note"


def _json(value) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def _trust_words(accepted: bool) -> str:
    return "accepted" if accepted else "needs a person"


def _decided(labels: dict[str, str]) -> tuple[str | None, str, str | None]:
    """The gold label of an item with these labels (`calibrate.gold`), how it was reached, and
    who decided it: the one annotator, or CONSOLIDATED where several labels make it (None without one)."""
    label, how = gold_label(labels)
    return label, how, None if label is None else next(iter(labels)) if len(labels) == 1 else CONSOLIDATED


def _gold_json(labels: dict[str, str]) -> str:
    """The gold label part of a JSON line, after its labels."""
    label, how, who = _decided(labels)
    return f',"gold_label":{_json(label)},"gold_basis":{_json(how)},"annotator":{_json(who)}'


def write_jsonl(store: Store, out: io.TextIOBase | io.BufferedIOBase, system: str | None = None,
                marks: TrustMarks | None = None, helpers: Sequence[Store] = (),
                progress: Callable[[int], None] = lambda written: None) -> int:
    """One JSON line per item: item_id, task, lang, system, source_id, reference, fields, labels,
    gold_label, gold_basis, verdicts (judge -> status, verdict, correct), notes, flagged_by,
    listened, and with `marks` trust (judge -> "accepted" or "needs a person"). `out` is a text
    stream, or a binary one that takes the lines in UTF-8 (cheaper: the lines are not decoded).
    `helpers`: stores reading the same snapshot, which put the lines together meanwhile
    (`Store.export_json_lines`). `progress` is called with the number of items of each batch
    written."""
    trust = marks is not None

    def verdicts_parts(text: str) -> tuple[str, str]:
        """The verdicts part of a line of an item with these verdicts (judge -> status, verdict,
        correct, with `marks` accepted), and with `marks` its trust marks."""
        verdicts = json.loads(text)
        shown = {j: {"status": status, "verdict": verdict, "correct": correct}
                 for j, (status, verdict, correct, *_) in verdicts.items()}
        return (f',"verdicts":{_json(shown)}',
                f',"trust":{_json({j: _trust_words(v[3]) for j, v in verdicts.items()})}' if trust else "")

    def sparse_part(sparse: Sparse) -> str:
        """The notes, flags and listening part of an item's line."""
        return (f',"notes":{_json(sparse.notes)},"flagged_by":{_json(sparse.flagged_by)},'
                f'"listened":{_json(sparse.listened)}')

    write = _bytes_to(out)
    n = 0
    parts = LineParts(lambda labels: _gold_json(json.loads(labels)), verdicts_parts, sparse_part, json_bytes_safe)
    for count, lines in store.export_json_lines(parts, system, marks=marks, helpers=helpers):
        write(lines)
        n += count
        progress(count)
    return n


def write_csv(store: Store, out: io.TextIOBase | io.BufferedIOBase, system: str | None = None,
              marks: TrustMarks | None = None, scores: bool = False, helpers: Sequence[Store] = (),
              progress: Callable[[int], None] = lambda written: None) -> int:
    """One CSV row per item: item_id, task, lang, system, source_id, reference, gold_label,
    gold_basis, annotator, a label column per annotator, a verdict column per judge, with `marks`
    a trust column per judge, notes, flagged_by, and where an item has usable audio a listened
    column per annotator; cells a spreadsheet would run as formulas neutralised; as `csv.writer`
    writes them (QUOTE_MINIMAL, rows ending in CR LF). With `scores` (some items' kind has
    rubric scores, whose labels and verdicts are JSON objects of two scores), each score also
    has a column of its own, a number a spreadsheet can average: `gold_label:KEY`, `KEY:NAME`
    per annotator after the label columns, `verdict:JUDGE:KEY` after the verdict columns (KEY
    score_answer or score_reasoning; empty where the cell holds no scores). `out` is a text
    stream, or a binary one that takes the rows in UTF-8. `helpers` and `progress` as for
    `write_jsonl`."""
    annotators, judges, with_audio = store.export_columns(system)
    listeners = annotators if with_audio else []
    trusted = judges if marks is not None else []
    keys = SCORE_KEYS if scores else ()
    write = _bytes_to(out)
    write(_csv_cells([spreadsheet_safe(v) for v in [
        "item_id", "task", "lang", "system", "source_id", "reference", "gold_label", "gold_basis", "annotator",
        *(f"{LABEL_COLUMN}{a}" for a in annotators), *(f"gold_label:{k}" for k in keys),
        *(f"{k}:{a}" for a in annotators for k in keys), *(f"verdict:{j}" for j in judges),
        *(f"verdict:{j}:{k}" for j in judges for k in keys), *(f"trust:{j}" for j in trusted),
        "notes", "flagged_by", *(f"listened:{a}" for a in listeners)]])[1:].encode() + b"\r\n")  # the header row
    column = {a: k for k, a in enumerate(annotators)}

    def score_cells(labels: list[str | None]) -> list[str]:
        """Each score of each of `labels` (rubric scores' JSON, or anything else: empty cells)."""
        found = [SCORED.scores(label) if label and label[:1] == "{" else None for label in labels]
        return [str(each[k]) if each else "" for each in found for k in keys]

    def labels_cells(text: str) -> str:
        """The cells that follow from an item's labels: gold label, basis, who decided, a label per
        annotator, and with `scores` each score of the gold label and of each annotator's label."""
        labels = json.loads(text)
        cells = [*_decided(labels), *[""] * len(annotators)]
        for who, label in labels.items():
            cells[3 + column[who]] = label
        if keys:
            cells += score_cells([cells[0], *(labels.get(a) for a in annotators)])
        return _csv_cells(map(spreadsheet_safe, cells))

    def verdict_cells(verdicts: dict[str, list]) -> str:
        """A verdict per judge of an item's verdicts (judge -> [verdict or status, ...]), and with
        `scores` each score of each judge's verdict."""
        shown = [verdicts[j][0] if j in verdicts else "" for j in judges]
        return _csv_cells([*map(spreadsheet_safe, shown), *(score_cells(shown) if keys else ())])

    def trust_cells(accepted: dict[str, bool]) -> str:
        """With `marks`, a trust mark per judge (judge -> accepted; empty where no verdict)."""
        return _csv_cells(_trust_words(accepted[j]) if j in accepted else "" for j in trusted)

    def verdicts_parts(text: str) -> tuple[str, str]:
        verdicts = json.loads(text)
        return verdict_cells(verdicts), trust_cells({j: bool(v[-1]) for j, v in verdicts.items()} if trusted else {})

    def sparse_part(sparse: Sparse) -> str:
        """The notes, flags and listening cells of an item, ending its row."""
        return _csv_cells(map(spreadsheet_safe, (
            NOTES_BETWEEN.join(f"{note['annotator']}: {note['note']}" for note in sparse.notes), " ".join(sparse.flagged_by),
            *((sparse.listened or {}).get(a, "") for a in listeners)))) + "\r\n"

    n = 0
    no_sparse = _csv_cells(["", "", *[""] * len(listeners)]) + "\r\n"
    parts = LineParts(labels_cells, verdicts_parts, sparse_part, lambda rows: rows)
    for count, rows in store.export_csv_rows(parts, spreadsheet_safe, no_sparse, system, marks=marks, helpers=helpers):
        write(rows)
        n += count
        progress(count)
    return n


def _csv_cells(cells) -> str:
    """`cells` (text) as the part of a CSV row they make after another cell: each after
    a comma, quoted as `csv.writer` quotes them (QUOTE_MINIMAL: within double quotes, its own
    doubled, where a cell holds a comma, a double quote, a carriage return or a newline)."""
    return "".join("," + (f'"{cell.replace(chr(34), chr(34) * 2)}"' if CSV_SPECIAL.search(cell) else cell)
                   for cell in cells)


def _bytes_to(out: io.TextIOBase | io.BufferedIOBase):
    """A function writing UTF-8 bytes to `out`: as they are to a binary stream, or to a UTF-8
    text stream's buffer (after what was written to it as text), else decoded. Bytes go on
    being written until all are: a pipe's write takes only what fits when its reader leaves
    (the next one fails, so that the export ends as a failure, not as if all was written)."""
    if not isinstance(out, io.TextIOBase):
        return functools.partial(_write_all, out.write)
    if hasattr(out, "buffer") and codecs.lookup(out.encoding).name == "utf-8":
        out.flush()
        return functools.partial(_write_all, out.buffer.write)
    return lambda data: out.write(data.decode())


def _write_all(write, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[write(view):]
