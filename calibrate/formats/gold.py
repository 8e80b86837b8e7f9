"""Gold labels out: items with every annotator's label, the gold label (`calibrate.gold`) and
who decided it (the annotator, or "gold" where several people's labels make it; `calibrate
import labels` reads an export back), judge verdicts and notes, as JSONL or CSV (cells a spreadsheet would run as formulas are
neutralised); for items with audio whether each annotator listened (seconds played, 0 when
they labelled without playing it); and, given the judges' trust marks (`calibrate trust`), per
judge whether each item's verdict is accepted or needs a person.

Items are streamed from the store (`Store.export_rows`) and written as they come, so an export
of a million items holds a few thousand lines at a time. A JSON line is put together from its
parts (SQLite writes the item, its labels and verdicts), compact, the item's fields as stored
(canonical JSON), never parsed and written again."""

from __future__ import annotations

import csv
import io
import json
from json.encoder import encode_basestring

from calibrate.escape import json_text_safe, spreadsheet_safe
from calibrate.gold import gold_label
from calibrate.reliability_cells import TrustMarks
from calibrate.store import Store

ACCEPTED, NEEDS_PERSON = "accepted", "needs a person"  # an item's trust mark per judge
CHUNK = 2000  # lines written at once


def _marks(row, marks: TrustMarks | None) -> dict[str, str] | None:
    """judge -> ACCEPTED or NEEDS_PERSON for the judges with a verdict in force on the item."""
    if marks is None:
        return None
    task, lang = row.item[0], row.item[1]
    return {judge: ACCEPTED if marks.accepted(row.item_id, task, lang, judge, status, confidence) else NEEDS_PERSON
            for judge, (status, _, _, confidence) in row.verdicts.items()}


def _json(value) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def decided_by(deciders: int, single: str | None, gold: str | None) -> str | None:
    """Who decided the gold label: the one annotator whose label it is (`single`, when there are
    `deciders` == 1), or "gold" where several people's labels make it (`import labels` reads an
    export back under this name)."""
    if gold is None:
        return None
    return single if deciders == 1 else "gold"


def _gold(row) -> tuple[str | None, str]:
    """The item's gold label and its basis (`calibrate.gold`), from its votes where they settle it."""
    n, distinct, top, _ = row.votes
    if n == 0:
        return None, "unlabelled"
    if n == 1:
        return top, "single annotator"
    if distinct == 1:
        return top, "unanimous"
    return gold_label(json.loads(row.item)["labels"])


def write_jsonl(store: Store, out: io.TextIOBase, system: str | None = None, marks: TrustMarks | None = None) -> int:
    """One JSON line per item: item_id, task, lang, system, source_id, reference, fields, labels,
    gold_label, gold_basis, verdicts (judge -> status, verdict, correct), notes, flagged_by,
    listened, and with `marks` trust (judge -> ACCEPTED or NEEDS_PERSON). SQLite writes the item,
    its labels, verdicts and marks as JSON; the rest is added here."""
    if marks is not None:
        store.set_trust_marks(marks)
    n, chunk = 0, []
    for row in store.export_rows(system, as_json=True, trust=marks is not None):
        gold, how = _gold(row)
        line = (f'{row.item[:-1]},"gold_label":{"null" if gold is None else encode_basestring(gold)},'
                f'"gold_basis":{encode_basestring(how)},"annotator":{_json(decided_by(row.votes[0], row.votes[3], gold))},'
                f'"verdicts":{row.verdicts},'
                f'"notes":{_json(row.notes) if row.notes else "[]"},'
                f'"flagged_by":{_json(row.flagged_by) if row.flagged_by else "[]"},'
                f'"listened":{"null" if row.listened is None else _json(row.listened)}')
        line += "}\n" if marks is None else f',"trust":{row.marks or "{}"}}}\n'
        # an ASCII line without DEL has nothing `json_text_safe` would change (JSON escaped the controls)
        chunk.append(line if line.isascii() and "\x7f" not in line else json_text_safe(line))
        if len(chunk) == CHUNK:
            out.write("".join(chunk))
            n, chunk = n + len(chunk), []
    out.write("".join(chunk))
    return n + len(chunk)


def write_csv(store: Store, out: io.TextIOBase, system: str | None = None, marks: TrustMarks | None = None) -> int:
    annotators, judges, with_audio = store.export_columns(system)
    listeners = annotators if with_audio else []
    trusted = judges if marks is not None else []
    writer = csv.writer(out)

    def cells(values: list) -> list[str]:
        return [spreadsheet_safe(v) for v in values]

    writer.writerow(cells(["item_id", "task", "lang", "system", "source_id", "reference", "gold_label", "gold_basis",
                           "annotator", *(f"label:{a}" for a in annotators), *(f"verdict:{j}" for j in judges),
                           *(f"trust:{j}" for j in trusted), "notes", "flagged_by", *(f"listened:{a}" for a in listeners)]))
    n, chunk = 0, []
    for row in store.export_rows(system):
        gold, how = gold_label(row.labels)
        verdicts = [row.verdicts.get(j) for j in judges]
        trust = _marks(row, marks) or {}
        chunk.append(cells([
            row.item_id, *row.item[:5], gold, how, decided_by(len(row.labels), next(iter(row.labels), None), gold),
            *(row.labels.get(a, "") for a in annotators),
            *((v[1] or v[0]) if v is not None else "" for v in verdicts),
            *(trust.get(j, "") for j in trusted),
            " | ".join(f"{note['annotator']}: {note['note']}" for note in row.notes), " ".join(row.flagged_by),
            *((row.listened or {}).get(a, "") for a in listeners),
        ]))
        if len(chunk) == CHUNK:
            writer.writerows(chunk)
            n, chunk = n + len(chunk), []
    writer.writerows(chunk)
    return n + len(chunk)
