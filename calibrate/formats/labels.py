"""`calibrate import labels`: human labels made in another tool or a spreadsheet (JSONL, or CSV
with its delimiter found from the header: comma, semicolon or tab; with task, lang, source_id,
annotator, label, and optional system and note), joined to items by their identity, so they
count in the report like labels made in calibrate. Without a system column a source id must
name one system's item; in a file with the column, an empty value (CSV) or "" or null (JSONL)
names the item without a system, stored with the system '', as an export writes it. A gold export (`calibrate export`, JSONL or CSV) reads back as each
person's own labels: its JSONL `labels` object, or its CSV `label:NAME` columns (one edited in a
spreadsheet takes effect), each with that person's notes: from JSONL `notes` (they name their
author), from a CSV `notes` cell only where it holds one note by a person with a label column
(it joins notes with " | ", which a note may hold too). The notes of people without a label on
the item, and those a CSV cell cannot attribute, are counted, not imported; so are the export's
items without a label. Its gold label is never read: several people's labels make it, and it is
no person's. A row by the annotator "gold" (what an export names for such a label) is refused
and counted, the rest imported: it would vote beside the people it consolidates in the majority,
the human ceiling and the alternative annotator test.

A CSV field in quotes may hold line breaks (a note with a newline; Excel's Alt+Enter), as
Python's `csv` reads it; a quote left open at the end of the file is named by the line of the
row it opens in."""

from __future__ import annotations

import codecs
import csv
import io
import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from calibrate.escape import spreadsheet_unsafe
from calibrate.formats import BadInput, ImportFailed, ItemIndex, read_jsonl, skipped_summary
from calibrate.formats.gold import LABEL_COLUMN, NOTES_BETWEEN, SCORED
from calibrate.kinds import LabelError, ZeroBasedLabel
from calibrate.model import LabelsAdded, counted, digest
from calibrate.names import CONSOLIDATED
from calibrate.store import Store
from calibrate.templates import TemplateError, TemplateSet
from calibrate.validate import InputError, type_of
from calibrate.validate import source_id as valid_id
from calibrate.verdicts import SCORE_KEYS

REQUIRED = ("task", "lang", "source_id", "annotator", "label")
TEXT = ("task", "lang", "annotator", "system", "note")  # when present
DELIMITERS = {",": "comma", ";": "semicolon", "\t": "tab"}


@dataclass(frozen=True)
class LabelRow:
    """One human label as read from the file, its label already in the kind's stored form."""

    location: str
    task: str
    lang: str
    source_id: str
    annotator: str
    label: str
    note: str | None
    system: str | None = None  # None: the file has no system column; "": the item without a system


@dataclass(frozen=True)
class ZeroBased(BadInput):
    """A row whose label is a choice counted from 0: the whole file is refused, --skip-bad or
    not, since its rows that do name a choice name the one before the choice meant."""


@dataclass(frozen=True)
class Unlabelled:
    """A row of a gold export whose item has no person's label: nothing to import."""

    location: str


@dataclass(frozen=True)
class NotesLeftOut:
    """A gold export's row with notes not imported: by people without a label on the item, or in
    a CSV notes cell that cannot be split into its authors' notes unambiguously."""

    location: str


@dataclass(frozen=True)
class Consolidated:
    """A row by the annotator CONSOLIDATED: a label several people decided, not a person's."""

    location: str


CONSOLIDATED_REASON = (f"annotator {CONSOLIDATED!r} is the label several people decided (what calibrate export "
                       "writes), not a person's: imported, it would vote beside them in the majority and the human "
                       "ceiling. Bring the people's own labels instead (calibrate merge of their database, the export "
                       "with its label:NAME columns or labels object, or a file with one row per person)")


NOTES_LEFT_OUT_REASON = ("a note comes back with its author's label on the item; a CSV notes cell only where it holds "
                         "one note by a person with a label column, as the export joins notes with ' | ', which a note "
                         "may hold too (the JSONL export names each note's author)")


@dataclass
class LabelImport:
    """What an import of labels did: labels (an annotator's on an item) added or changed (with
    the notes added beside labels in force, and the labels put back), those already present,
    bad rows skipped, rows of a gold export without a label, rows refused as a consolidated
    label, notes of a gold export left out, labels read per annotator, and the rows left out as
    a later row of the file labels their item for their annotator otherwise (its place, the place
    of the row that stands)."""

    added: LabelsAdded
    present: int
    skipped: list[BadInput]
    unlabelled: int
    consolidated: int = 0
    notes_left_out: int = 0
    by_annotator: dict[str, int] = field(default_factory=dict)
    superseded: list[tuple[str, str]] = field(default_factory=list)


def _is_jsonl(path: Path) -> bool:
    """JSONL or CSV, by the file's first character (after a byte-order mark and blank space)."""
    with path.open("rb") as handle:
        head = handle.read(4096).removeprefix(codecs.BOM_UTF8).lstrip()
    return head[:1] == b"{"


def _rows(path: Path) -> Iterator[tuple[str, dict] | BadInput]:
    if _is_jsonl(path):
        yield from read_jsonl(path)
        return
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ImportFailed(f"{path}: not UTF-8 ({exc.reason} at byte {exc.start})") from None
    if not text.strip():
        raise ImportFailed(f"{path}: file is empty")
    delimiter = _delimiter(path, text.splitlines()[0])
    # strict: a quote left open to the end of the file is an error (not a last field swallowing the rows after it)
    reader = csv.reader(io.StringIO(text), delimiter=delimiter, strict=True)
    header, line = None, 0
    while True:
        start = line + 1
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise ImportFailed(f"{path}:{start}: malformed CSV ({exc}; an unterminated quote?)") from None
        line = reader.line_num
        if header is None:
            header = [name.strip() for name in row]
            continue
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            runs_on = f"; its quotes run on to line {line}: one left open?" if line != start else ""
            yield BadInput(f"{path}:{start}", f"{counted(len(row), 'cell')}, but the header names {len(header)} "
                                              f"({DELIMITERS[delimiter]}-separated{runs_on})")
            continue
        yield f"{path}:{start}", {k: v.strip() for k, v in zip(header, row, strict=True) if k}


def _delimiter(path: Path, header: str) -> str:
    """The delimiter whose split of the header names the most label columns."""
    def named(delimiter: str) -> int:
        cells = {cell.strip() for cell in next(csv.reader([header], delimiter=delimiter), [])}
        return len(cells & {*REQUIRED, "id", "gold_label", "system", "note"})

    best = max(DELIMITERS, key=named)
    if not named(best):
        raise ImportFailed(f"{path}:1: the first row names none of the label columns ({', '.join(REQUIRED)}) "
                           "with a comma, semicolon or tab between them; a label file starts with a header row, "
                           "or is JSONL (one object per line)")
    return best


def read_labels(path: Path, templates: TemplateSet) -> Iterator[LabelRow | BadInput | Unlabelled | Consolidated |
                                                                  NotesLeftOut]:
    """Label rows from a JSONL or CSV file, each checked against its task's verdict kind: a gold
    export's row gives a row per person's label and note (`_people`)."""
    for entry in _rows(path):
        if isinstance(entry, BadInput):
            yield entry
            continue
        where, obj = entry
        obj = {**obj, "source_id": obj.get("source_id", obj.get("id"))}
        people = _people(where, obj)
        if isinstance(people, BadInput):
            yield people
        elif people is not None:
            rows, notes_left_out = people
            if notes_left_out:
                yield NotesLeftOut(where)
            if not rows:
                yield Unlabelled(where)
            for location, row in rows:
                yield _label_row(location, row, templates)
        elif "gold_basis" in obj and obj.get("label", obj.get("gold_label")) in (None, ""):
            yield Unlabelled(where)  # an export cut down to its gold label, of an item without one
        else:
            yield _label_row(where, {**obj, "label": obj.get("label", obj.get("gold_label"))}, templates)


def _people(where: str, obj: dict) -> tuple[list[tuple[str, dict]], bool] | BadInput | None:
    """A gold export's row as rows of a label file, one per person's label and note of theirs
    (with the label only, for one without a note), and whether it holds notes none of them
    takes; None for a row not an export's (without a JSONL `labels` object or CSV `label:NAME`
    columns)."""
    columns = {name.removeprefix(LABEL_COLUMN): label for name, label in obj.items() if name.startswith(LABEL_COLUMN)}
    if columns:  # a CSV export: its cells as they were before the export guarded them against spreadsheets
        obj = {k: spreadsheet_unsafe(v) if isinstance(v, str) else v for k, v in obj.items()}
        labels = {who: spreadsheet_unsafe(label) for who, label in columns.items() if label}
        # a person's scores may have columns of their own without a label:NAME column (added in a spreadsheet)
        scorers = [name.split(":", 1)[1] for name in obj if name.split(":", 1)[0] in SCORE_KEYS]
        for who in dict.fromkeys([*columns, *scorers]):
            scored = _scored(where, obj, who, labels.get(who))
            if isinstance(scored, BadInput):
                return scored
            if scored is not None:
                labels[who] = scored
        notes = _csv_notes(obj.get("notes") or "", labels)
        column = f"{LABEL_COLUMN}{{}}"
    elif "labels" in obj:
        labels, notes, column = obj["labels"], obj.get("notes") or [], "labels: {}"
        if not isinstance(labels, dict):
            return BadInput(where, f"'labels' must be an object of annotator -> label (as calibrate export writes), "
                                   f"not {type_of(labels)}")
        if not isinstance(notes, list) or not all(
                isinstance(n, dict) and isinstance(n.get("annotator"), str) and isinstance(n.get("note"), str)
                for n in notes):
            return BadInput(where, "'notes' must be a list of objects with a text annotator and note "
                                   "(as calibrate export writes)")
        notes = [(n["annotator"], n["note"]) for n in notes]
    else:
        return None
    item = {k: obj[k] for k in ("task", "lang", "source_id", "system") if k in obj}  # a system left out stays out
    rows = [(f"{where} ({column.format(who)})", {**item, "annotator": who, "label": label, "note": note})
            for who, label in labels.items()
            for note in [note for by, note in notes or () if by == who] or [None]]
    return rows, notes is None or any(by not in labels for by, _ in notes)


def _scored(where: str, obj: dict, who: str, label: str | None) -> str | BadInput | None:
    """A CSV export's rubric label of `who` read from its score columns (`KEY:NAME`, a number a
    spreadsheet edits), as the label's JSON; None where the row has none of them filled. Where
    the `label:NAME` cell is filled too, the two must say the same (which of them was edited
    cannot be told): else BadInput naming both."""
    cells = {key: (obj.get(f"{key}:{who}") or "").strip() for key in SCORE_KEYS}
    if not any(cells.values()):
        return None
    try:
        scores = {key: float(cell.replace(",", ".")) for key, cell in cells.items()}
    except ValueError:
        return BadInput(where, f"the score columns of {who} ({', '.join(f'{k}:{who} {v!r}' for k, v in cells.items())}) "
                               "must both be numbers")
    if label:
        try:  # compared as they would be stored (rounded to 0.1 half up: 10.25 is 10.3, not 10.2's 10.2)
            same = SCORED.score_label(label) == SCORED.score_label(scores)
        except LabelError:
            same = False
        if not same:
            said = ", ".join(f"{k}:{who} {scores[k]:g}" for k in SCORE_KEYS)
            return BadInput(where, f"{said}, where {LABEL_COLUMN}{who} is {label}: which was edited cannot be told; "
                                   f"make them agree, or empty {LABEL_COLUMN}{who} to take the score columns")
    return json.dumps(scores)


def _csv_notes(cell: str, people: dict) -> list[tuple[str, str]] | None:
    """(author, note) of a CSV export's notes cell ("ana: text | bo: text"), or None where that
    is not certain: the cell holds NOTES_BETWEEN (between notes, or within one) or does not
    start with the name of exactly one of `people`."""
    authors = [who for who in people if cell.startswith(f"{who}: ")]
    if not cell:
        return []
    return [(authors[0], cell[len(authors[0]) + 2:])] if len(authors) == 1 and NOTES_BETWEEN not in cell else None


def _label_row(where: str, obj: dict, templates: TemplateSet) -> LabelRow | BadInput | Consolidated:
    """One row of a label file (task, lang, source_id, annotator, label[, system, note]), checked."""
    missing = [k for k in REQUIRED if obj.get(k) in (None, "")]
    if missing:
        name = missing[0]  # (a gold export's columns read as a label row may put a field there as None)
        problem = f"field {name!r} is empty" if obj.get(name) == "" else f"missing field {name!r}"
        return BadInput(where, f"{problem} (a label row has {', '.join(REQUIRED)}; "
                               f"this one has {', '.join(k for k, v in obj.items() if v not in (None, '')) or 'none'})")
    not_text = [k for k in TEXT if obj.get(k) is not None and not isinstance(obj[k], str)]
    if not_text:
        return BadInput(where, f"{not_text[0]!r} must be text, not {type_of(obj[not_text[0]])}")
    try:
        source_id = valid_id(obj["source_id"], "'source_id'")
    except InputError as exc:
        return BadInput(where, str(exc))
    if not obj["annotator"].strip():
        return BadInput(where, "field 'annotator' is only spaces: name the person who labelled")
    if obj["annotator"] == CONSOLIDATED:
        return Consolidated(where)
    task, lang = obj["task"], obj["lang"]
    try:
        label = templates.for_task(task, lang).kind.normalize_label(obj["label"])
    except ZeroBasedLabel as exc:
        return ZeroBased(where, str(exc))
    except (TemplateError, LabelError) as exc:
        return BadInput(where, str(exc))
    system = obj.get("system")
    if system and not system.strip():
        return BadInput(where, "'system' is only spaces; leave it empty for the item without a system")
    return LabelRow(where, task, lang, source_id, obj["annotator"], label, obj.get("note") or None,
                    (system or "").strip() if "system" in obj else None)


def import_labels(store: Store, templates: TemplateSet, path: Path, *, skip_bad: bool = False) -> LabelImport:
    """Import every row or nothing (unless `skip_bad`)."""
    path = Path(path)
    if not path.is_file():
        raise ImportFailed(f"{path}: no such file")
    index = ItemIndex(store)
    hashes: dict[int, str] = {}
    skipped, unlabelled, consolidated, notes_left_out = [], 0, 0, 0
    found: list[tuple[int, str, str, str, tuple]] = []  # (item, annotator, label, place, its store row) per row
    last: dict[tuple[int, str], tuple[str, str]] = {}  # (item, annotator) -> (label, place) of the file's last row
    for row in read_labels(path, templates):
        if isinstance(row, Unlabelled):
            unlabelled += 1
            continue
        if isinstance(row, Consolidated):
            consolidated += 1
            continue
        if isinstance(row, NotesLeftOut):
            notes_left_out += 1
            continue
        problem = row if isinstance(row, BadInput) else None
        if problem is None:
            item_id, reason = _find(index, row)
            if item_id is None:
                problem = BadInput(row.location, reason)
            else:
                if item_id not in hashes:
                    hashes[item_id] = store.item(item_id).content_hash
                uid = digest(hashes[item_id], row.annotator, row.label, row.note or "", "import labels")
                last[item_id, row.annotator] = (row.label, row.location)
                found.append((item_id, row.annotator, row.label, row.location,
                              (uid, item_id, row.annotator, row.label, row.note, None, None, None)))
        if isinstance(problem, ZeroBased):
            raise ImportFailed(f"{problem}; {path} numbers the choices from 0, so its other labels would be read "
                               f"one choice off: nothing was imported, even with --skip-bad (add 1 to every choice)")
        if problem is not None:
            if not skip_bad:
                raise ImportFailed(f"{problem}; nothing was imported (use --skip-bad to skip bad rows)")
            skipped.append(problem)
    if not found:
        left_out = [f"{counted(unlabelled, 'row')} of items without a label"] if unlabelled else []
        left_out += [f"{counted(consolidated, 'row')} refused: {CONSOLIDATED_REASON}"] if consolidated else []
        raise ImportFailed(f"{path}: no valid labels; nothing was imported" +
                           (f" ({'; '.join(left_out)})" if left_out else "") + skipped_summary(skipped, every=not left_out))
    # the file's last word on an item for a person stands: the rows it overrules are left out (not left to the
    # order of their uids, and the file imported again adds nothing)
    superseded = [(place, last[item_id, annotator][1]) for item_id, annotator, label, place, _ in found
                  if label != last[item_id, annotator][0]]
    rows = [stored for item_id, annotator, label, _, stored in found if label == last[item_id, annotator][0]]
    added = store.add_imported_labels(rows)
    labels = {(item_id, annotator) for _, item_id, annotator, *_ in rows}  # a person's label may come with notes
    by_annotator = dict(sorted(Counter(annotator for _, annotator in labels).items()))
    return LabelImport(added, len(labels) - added.labels, skipped, unlabelled, consolidated, notes_left_out,
                       by_annotator, superseded)


def _find(index: ItemIndex, row: LabelRow) -> tuple[int | None, str]:
    """The item a label row names, or None and why not."""
    item = f"{row.task} ({row.lang}) item {row.source_id!r}"
    systems = index.systems_for(row.task, row.lang, row.source_id)
    if not systems:
        system = "" if row.system is None else f" of system {row.system!r}" if row.system else " without a system"
        return None, f"no {row.task} ({row.lang}) item{system} with source id {row.source_id!r}"
    known = ", ".join(repr(s) if s else "(none)" for s in systems)
    empty = " (empty for the item without a system)" if "" in systems else ""
    if row.system is None:
        if len(systems) > 1:
            return None, f"{item} exists for systems {known}: add a 'system' column naming one{empty}"
        return index.find_id(row.task, row.lang, row.source_id, systems[0]), ""
    if row.system not in systems:
        missing = f"no system {row.system!r} for {item}" if row.system else f"no {item} without a system"
        return None, f"{missing} (it has {known}; name one in the 'system' column{empty})"
    return index.find_id(row.task, row.lang, row.source_id, row.system), ""
