"""Gold labels out: items with every annotator's label, the gold label (`calibrate.gold`) and
who decided it (the annotator, or "gold" where several people's labels make it; `calibrate
import labels` reads an export back), judge verdicts and notes, as JSONL or CSV (cells a
spreadsheet would run as formulas are neutralised); for items with audio whether each
annotator listened (seconds played, 0 when they labelled without playing it); and, given the
judges' trust marks (`calibrate trust`), per judge whether each item's verdict is accepted or
needs a person."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator, Mapping

from calibrate.escape import safe_json, spreadsheet_safe
from calibrate.gold import gold_label
from calibrate.store import Store

ACCEPTED, NEEDS_PERSON = "accepted", "needs a person"  # an item's trust mark per judge


def export_records(store: Store, system: str | None = None,
                   accepted: Mapping[str, Mapping[int, bool]] | None = None) -> Iterator[dict]:
    """One record per item (of `system` if given). `accepted`: judge -> item id -> whether that
    judge's verdict can be accepted without a person; each record then has `trust`: judge ->
    "accepted" or "needs a person" for the judges that gave it a verdict."""
    for row in store.export_rows(system):
        item = row["item"]
        gold, how = gold_label(row["labels"])
        record = {
            "item_id": item.id, "task": item.task, "lang": item.lang, "system": item.system, "source_id": item.source_id,
            "reference": item.reference, "fields": item.fields, "labels": row["labels"], "gold_label": gold,
            "gold_basis": how, "annotator": decided_by(row["labels"], gold), "verdicts": row["verdicts"], "notes": row["notes"], "flagged_by": row["flagged_by"],
            "listened": row["listened"],
        }
        if accepted is not None:
            record["trust"] = {judge: ACCEPTED if accepted.get(judge, {}).get(item.id) else NEEDS_PERSON
                               for judge in row["verdicts"]}
        yield record


def decided_by(labels: Mapping[str, str | None], gold: str | None) -> str | None:
    """Who decided the gold label: the one annotator whose label it is, or "gold" where several
    people's labels make it (`import labels` reads an export back under this name)."""
    if gold is None:
        return None
    deciders = [annotator for annotator, label in labels.items() if label is not None]
    return deciders[0] if len(deciders) == 1 else "gold"


def write_jsonl(store: Store, out: io.TextIOBase, system: str | None = None,
                accepted: Mapping[str, Mapping[int, bool]] | None = None) -> int:
    n = 0
    for record in export_records(store, system, accepted):
        out.write(safe_json(record, indent=None) + "\n")
        n += 1
    return n


def write_csv(store: Store, out: io.TextIOBase, system: str | None = None,
              accepted: Mapping[str, Mapping[int, bool]] | None = None) -> int:
    records = list(export_records(store, system, accepted))
    annotators = sorted({a for r in records for a in r["labels"]})
    judges = sorted({j for r in records for j in r["verdicts"]})
    listeners = annotators if any(r["listened"] is not None for r in records) else []
    trusted = judges if accepted is not None else []
    writer = csv.writer(out)
    writerow = lambda cells: writer.writerow([spreadsheet_safe(c) for c in cells])  # noqa: E731
    writerow(["item_id", "task", "lang", "system", "source_id", "reference", "gold_label", "gold_basis", "annotator",
              *(f"label:{a}" for a in annotators), *(f"verdict:{j}" for j in judges),
              *(f"trust:{j}" for j in trusted), "notes", "flagged_by", *(f"listened:{a}" for a in listeners)])
    for r in records:
        verdicts = [r["verdicts"].get(j, {}) for j in judges]
        writerow([
            r["item_id"], r["task"], r["lang"], r["system"], r["source_id"], r["reference"], r["gold_label"], r["gold_basis"],
            r["annotator"],
            *(r["labels"].get(a, "") for a in annotators),
            *((v.get("verdict") or v.get("status", "")) for v in verdicts),
            *(r["trust"].get(j, "") for j in trusted),
            " | ".join(f"{n['annotator']}: {n['note']}" for n in r["notes"]), " ".join(r["flagged_by"]),
            *((r["listened"] or {}).get(a, "") for a in listeners),
        ])
    return len(records)
