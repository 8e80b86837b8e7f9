"""`calibrate import labels`: human labels made in another tool or a spreadsheet (JSONL, or CSV
with its delimiter found from the header: comma, semicolon or tab; with task, lang, source_id,
annotator, label, and optional system and note), joined to items by their identity, so they
count in the report like labels made in calibrate. Without a system column a source id must
name one system's item. A gold export (`calibrate export`, JSONL or CSV) reads back as labels:
its gold label, by the annotator who decided it; its items without a gold label (unlabelled or
tied) are counted, not refused. A row by the annotator "gold" (what an export names for a label
several people's labels make) is refused and counted, the rest imported: it is no person's
label, and would vote beside the people it consolidates in the majority, the human ceiling and
the alternative annotator test."""

from __future__ import annotations

import codecs
import csv
import io
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from calibrate.formats import BadInput, ImportFailed, ItemIndex, read_jsonl
from calibrate.kinds import LabelError
from calibrate.model import digest
from calibrate.names import CONSOLIDATED
from calibrate.store import Store
from calibrate.templates import TemplateError, TemplateSet
from calibrate.validate import InputError, type_of
from calibrate.validate import source_id as valid_id

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
    system: str | None = None


@dataclass(frozen=True)
class NoGold:
    """A row of a gold export whose item has no gold label (unlabelled or tied): not a label."""

    location: str


@dataclass(frozen=True)
class Consolidated:
    """A row by the annotator CONSOLIDATED: a label several people decided, not a person's."""

    location: str


CONSOLIDATED_REASON = (f"annotator {CONSOLIDATED!r} is the label several people decided (what calibrate export "
                       "writes), not a person's: imported, it would vote beside them in the majority and the human "
                       "ceiling. Bring the people's own labels instead (calibrate merge of their database, or a file "
                       "with one row per person)")


@dataclass
class LabelImport:
    """What an import of labels did: labels added, rows already present, bad rows skipped, rows
    of a gold export without a gold label, and rows refused as a consolidated label."""

    added: int
    present: int
    skipped: list[BadInput]
    without_gold: int
    consolidated: int = 0


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
    # Strict: one row per line. A quote left open would otherwise swallow the rows after it.
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
        if line != start:
            raise ImportFailed(f"{path}:{start}: a quoted field runs on to line {line} (an unterminated quote?); "
                               "label files take one row per line")
        if header is None:
            header = [name.strip() for name in row]
            continue
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            yield BadInput(f"{path}:{start}", f"{len(row)} cells, but the header names {len(header)} "
                                              f"({DELIMITERS[delimiter]}-separated)")
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


def read_labels(path: Path, templates: TemplateSet) -> Iterator[LabelRow | BadInput | NoGold | Consolidated]:
    """Label rows from a JSONL or CSV file, each checked against its task's verdict kind."""
    for entry in _rows(path):
        if isinstance(entry, BadInput):
            yield entry
            continue
        where, obj = entry
        obj = {**obj, "source_id": obj.get("source_id", obj.get("id")), "label": obj.get("label", obj.get("gold_label"))}
        if "gold_basis" in obj and obj["label"] in (None, ""):
            yield NoGold(where)
            continue
        missing = [k for k in REQUIRED if obj.get(k) in (None, "")]
        if missing:
            yield BadInput(where, f"missing field {missing[0]!r} (a label row has {', '.join(REQUIRED)}; "
                                  f"this one has {', '.join(k for k, v in obj.items() if v not in (None, '')) or 'none'})")
            continue
        not_text = [k for k in TEXT if obj.get(k) is not None and not isinstance(obj[k], str)]
        if not_text:
            yield BadInput(where, f"{not_text[0]!r} must be text, not {type_of(obj[not_text[0]])}")
            continue
        try:
            source_id = valid_id(obj["source_id"], "'source_id'")
        except InputError as exc:
            yield BadInput(where, str(exc))
            continue
        if obj["annotator"] == CONSOLIDATED:
            yield Consolidated(where)
            continue
        task, lang = obj["task"], obj["lang"]
        try:
            label = templates.for_task(task, lang).kind.normalize_label(obj["label"])
        except (TemplateError, LabelError) as exc:
            yield BadInput(where, str(exc))
            continue
        system = obj.get("system")
        if system not in (None, "") and not str(system).strip():
            yield BadInput(where, "'system' is only spaces; leave it out for items without a system")
            continue
        yield LabelRow(where, task, lang, source_id, obj["annotator"], label, obj.get("note") or None,
                       system.strip() if system not in (None, "") else None)


def import_labels(store: Store, templates: TemplateSet, path: Path, *, skip_bad: bool = False) -> LabelImport:
    """Import every row or nothing (unless `skip_bad`)."""
    path = Path(path)
    if not path.is_file():
        raise ImportFailed(f"{path}: no such file")
    index = ItemIndex(store)
    hashes: dict[int, str] = {}
    rows, skipped, without_gold, consolidated = [], [], 0, 0
    for row in read_labels(path, templates):
        if isinstance(row, NoGold):
            without_gold += 1
            continue
        if isinstance(row, Consolidated):
            consolidated += 1
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
                rows.append((uid, item_id, row.annotator, row.label, row.note))
        if problem is not None:
            if not skip_bad:
                raise ImportFailed(f"{problem}; nothing was imported (use --skip-bad to skip bad rows)")
            skipped.append(problem)
    if not rows:
        left_out = [f"{without_gold} rows of items without a gold label"] if without_gold else []
        left_out += [f"{consolidated} rows refused: {CONSOLIDATED_REASON}"] if consolidated else []
        raise ImportFailed(f"{path}: no valid labels; nothing was imported" +
                           (f" ({'; '.join(left_out)})" if left_out else ""))
    added = store.add_imported_labels(rows)
    return LabelImport(added, len(rows) - added, skipped, without_gold, consolidated)


def _find(index: ItemIndex, row: LabelRow) -> tuple[int | None, str]:
    """The item a label row names, or None and why not."""
    systems = index.systems_for(row.task, row.lang, row.source_id)
    if not systems:
        return None, f"no {row.task} ({row.lang}) item with source id {row.source_id!r}"
    if row.system is None:
        if len(systems) > 1:
            return None, (f"{row.task} ({row.lang}) item {row.source_id!r} exists for systems "
                          f"{', '.join(map(repr, systems))}: add a 'system' column")
        return index.find_id(row.task, row.lang, row.source_id, systems[0]), ""
    if row.system not in systems:
        known = ", ".join(repr(s) for s in systems)
        return None, f"no system {row.system!r} for {row.task} ({row.lang}) item {row.source_id!r} (it has {known})"
    return index.find_id(row.task, row.lang, row.source_id, row.system), ""
