"""Gold labels out: items with every annotator's label, the gold label (`calibrate.gold`) and
who decided it (the annotator, or "gold" where several people's labels make it), judge
verdicts and notes, as JSONL or CSV (cells a spreadsheet would run as formulas are
neutralised; `calibrate import labels` reads an export back as each person's labels and
notes); for items with audio whether each annotator listened (seconds played, 0 when
they labelled without playing it); and, given the judges' trust marks (`calibrate trust`), per
judge whether each item's verdict is accepted or needs a person.

Items are streamed from the store (`Store.export_lines`, `Store.export_cells`), which writes
each line's or row's own part in SQL (a JSON line's head, a CSV row's first cells, quoted), and
written as they come, as UTF-8 bytes, so an export of a million items holds a few thousand lines
at a time. Here are added what follows from an item's labels (the gold label by
`calibrate.gold`, who decided it) and from its verdicts (their JSON or cells, and their trust
marks), each worked out once per set of labels or verdicts, as items share a few; and what few
items need: the notes, flags and listening of the items that have them, and the trust marks of
irregular verdicts. A JSON line is compact, the item's fields minified by SQLite from the stored
text, never parsed into Python objects."""

from __future__ import annotations

import codecs
import io
import json

from calibrate.escape import json_bytes_safe, spreadsheet_safe
from calibrate.gold import gold_label
from calibrate.kinds import kind_for
from calibrate.names import CONSOLIDATED
from calibrate.reliability_cells import TrustMarks
from calibrate.store import Store
from calibrate.store.export_rows import CSV_SPECIAL, NO_SPARSE_JSON, Sparse
from calibrate.verdicts import SCORE_KEYS

CHUNK = 2000  # lines written at once
SCORED = kind_for("rubric_scores")
LABEL_COLUMN = "label:"  # a CSV column of one person's labels, before their name
NOTES_BETWEEN = " | "  # between the notes of a CSV notes cell, each "annotator: note"
MEMO = 4096  # sets of labels (or verdicts) whose gold label part (JSON) or cells (CSV) are kept


def _json(value) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


class _ByJson(dict):
    """What follows from an item's labels (annotator -> label) or verdicts, by their JSON text,
    worked out by `work` from the value once per text: items share a few sets of labels and of
    verdicts. At most MEMO texts are kept."""

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
    who decided it: the one annotator, or CONSOLIDATED where several labels make it (None without one)."""
    label, how = gold_label(labels)
    return label, how, None if label is None else next(iter(labels)) if len(labels) == 1 else CONSOLIDATED


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
    write = _bytes_to(out)
    n, chunk = 0, []
    trust = marks is not None

    def tail_of(verdicts: dict[str, list]) -> bytes:
        """What follows the gold label part in a line of an item with these verdicts (judge -> status,
        verdict, correct, with `marks` accepted were it regular): its verdicts, the sparse parts
        (`NO_SPARSE_JSON`) and with `marks` its trust marks."""
        shown = {j: {"status": status, "verdict": verdict, "correct": correct}
                 for j, (status, verdict, correct, *_) in verdicts.items()}
        accepted = {j: "accepted" if v[3] else "needs a person" for j, v in verdicts.items()} if trust else None
        return (f',"verdicts":{_json(shown)}{NO_SPARSE_JSON}' + (f',"trust":{_json(accepted)}' if trust else "")
                + "}").encode()

    gold, tails = _ByJson(lambda labels: _gold_json(labels).encode()), _ByJson(tail_of)
    # the store gives each line's parts as UTF-8 bytes, written out as they are where nothing is to be changed
    for _, (_, head, labels, verdicts), sparse in store.export_lines(system, trust=trust):
        line = b"".join((head[:-1], b',"labels":', labels, gold[labels], tails[verdicts]))
        if sparse is not None:
            text = _with_sparse(line.decode(), sparse)
            if sparse.marks:
                text = _with_marks(text, sparse.marks)
            line = text.encode()
        chunk.append(json_bytes_safe(line))
        if len(chunk) == CHUNK:
            write(b"\n".join(chunk) + b"\n")
            n, chunk = n + len(chunk), []
    if chunk:
        write(b"\n".join(chunk) + b"\n")
    return n + len(chunk)


def write_csv(store: Store, out: io.TextIOBase | io.BufferedIOBase, system: str | None = None,
              marks: TrustMarks | None = None, scores: bool = False) -> int:
    """One CSV row per item: item_id, task, lang, system, source_id, reference, gold_label,
    gold_basis, annotator, a label column per annotator, a verdict column per judge, with `marks`
    a trust column per judge, notes, flagged_by, and where an item has usable audio a listened
    column per annotator; cells a spreadsheet would run as formulas neutralised; as `csv.writer`
    writes them (QUOTE_MINIMAL, rows ending in CR LF). With `scores` (some items' kind has
    rubric scores, whose labels and verdicts are JSON objects of two scores), each score also
    has a column of its own, a number a spreadsheet can average: `gold_label:KEY`, `KEY:NAME`
    per annotator after the label columns, `verdict:JUDGE:KEY` after the verdict columns (KEY
    score_answer or score_reasoning; empty where the cell holds no scores). `out` is a text
    stream, or a binary one that takes the rows in UTF-8."""
    annotators, judges, with_audio = store.export_columns(system)
    listeners = annotators if with_audio else []
    trusted = judges if marks is not None else []
    keys = SCORE_KEYS if scores else ()
    if marks is not None:
        store.set_trust_marks(marks)
    write = _bytes_to(out)
    write(_csv_cells([spreadsheet_safe(v) for v in [
        "item_id", "task", "lang", "system", "source_id", "reference", "gold_label", "gold_basis", "annotator",
        *(f"{LABEL_COLUMN}{a}" for a in annotators), *(f"gold_label:{k}" for k in keys),
        *(f"{k}:{a}" for a in annotators for k in keys), *(f"verdict:{j}" for j in judges),
        *(f"verdict:{j}:{k}" for j in judges for k in keys), *(f"trust:{j}" for j in trusted),
        "notes", "flagged_by", *(f"listened:{a}" for a in listeners)]])[1:] + b"\r\n")  # the header row
    column = {a: k for k, a in enumerate(annotators)}
    no_sparse = _csv_cells(["", "", *[""] * len(listeners)]) + b"\r\n"

    def score_cells(labels: list[str | None]) -> list[str]:
        """Each score of each of `labels` (rubric scores' JSON, or anything else: empty cells)."""
        found = [SCORED.scores(label) if label and label[:1] == "{" else None for label in labels]
        return [str(each[k]) if each else "" for each in found for k in keys]

    def labels_cells(labels: dict[str, str]) -> bytes:
        """The cells that follow from an item's labels: gold label, basis, who decided, a label per
        annotator, and with `scores` each score of the gold label and of each annotator's label."""
        cells = [*_decided(labels), *[""] * len(annotators)]
        for who, label in labels.items():
            cells[3 + column[who]] = label
        if keys:
            cells += score_cells([cells[0], *(labels.get(a) for a in annotators)])
        return _csv_cells(map(spreadsheet_safe, cells))

    def verdict_cells(verdicts: dict[str, list], irregular: dict[str, bool] | None = None) -> bytes:
        """The cells of an item's verdicts (judge -> [verdict or status, accepted were it regular]): a
        verdict per judge, with `scores` each score of each judge's verdict, and with `marks` a trust
        mark per judge (an irregular verdict's from `irregular`)."""
        accepted = {j: bool(v[-1]) for j, v in verdicts.items()} | (irregular or {}) if trusted else {}
        shown = [verdicts[j][0] if j in verdicts else "" for j in judges]
        return _csv_cells([*map(spreadsheet_safe, shown), *(score_cells(shown) if keys else ()),
                           *(("accepted" if accepted[j] else "needs a person") if j in verdicts else "" for j in trusted)])

    decided, judged = _ByJson(labels_cells), _ByJson(verdict_cells)
    n, chunk = 0, []
    for _, (_, head, labels, verdicts), sparse in store.export_cells(spreadsheet_safe, system, trust=marks is not None):
        if sparse is None:
            chunk.append(b"".join((head, decided[labels], judged[verdicts], no_sparse)))
        else:
            tail = _csv_cells(map(spreadsheet_safe, (
                NOTES_BETWEEN.join(f"{note['annotator']}: {note['note']}" for note in sparse.notes), " ".join(sparse.flagged_by),
                *((sparse.listened or {}).get(a, "") for a in listeners))))
            cells = verdict_cells(json.loads(verdicts), dict(sparse.marks)) if sparse.marks else judged[verdicts]
            chunk.append(b"".join((head, decided[labels], cells, tail, b"\r\n")))
        if len(chunk) == CHUNK:
            write(b"".join(chunk))
            n, chunk = n + len(chunk), []
    if chunk:
        write(b"".join(chunk))
    return n + len(chunk)


def _csv_cells(cells) -> bytes:
    """`cells` (text) as the part of a CSV row they make after another cell, in UTF-8: each after
    a comma, quoted as `csv.writer` quotes them (QUOTE_MINIMAL: within double quotes, its own
    doubled, where a cell holds a comma, a double quote, a carriage return or a newline)."""
    return "".join("," + (f'"{cell.replace(chr(34), chr(34) * 2)}"' if CSV_SPECIAL.search(cell) else cell)
                   for cell in cells).encode()


def _bytes_to(out: io.TextIOBase | io.BufferedIOBase):
    """A function writing UTF-8 bytes to `out`: as they are to a binary stream, or to a UTF-8
    text stream's buffer (after what was written to it as text), else decoded."""
    if not isinstance(out, io.TextIOBase):
        return out.write
    if hasattr(out, "buffer") and codecs.lookup(out.encoding).name == "utf-8":
        out.flush()
        return out.buffer.write
    return lambda data: out.write(data.decode())
