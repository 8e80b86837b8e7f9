"""Gold labels out: items with every annotator's label, the consolidated (majority) label,
judge verdicts and notes, as JSONL or CSV (cells a spreadsheet would run as formulas are
neutralised)."""

from __future__ import annotations

import csv
import io
from collections import Counter
from collections.abc import Iterator

from calibrate.display import safe_json, spreadsheet_safe
from calibrate.store import Store


def consolidated(labels: dict[str, str]) -> tuple[str | None, str]:
    """The majority label and how it was reached (single, unanimous, majority, tie)."""
    if not labels:
        return None, "unlabelled"
    counts = Counter(labels.values()).most_common()
    if len(labels) == 1:
        return counts[0][0], "single annotator"
    if len(counts) == 1:
        return counts[0][0], "unanimous"
    if counts[0][1] > counts[1][1]:
        return counts[0][0], f"majority {counts[0][1]}/{len(labels)}"
    return None, "tie"


def export_records(store: Store) -> Iterator[dict]:
    for row in store.export_rows():
        item = row["item"]
        gold, how = consolidated(row["labels"])
        yield {
            "item_id": item.id, "task": item.task, "lang": item.lang, "source_id": item.source_id,
            "reference": item.reference, "fields": item.fields, "labels": row["labels"], "gold_label": gold,
            "gold_basis": how, "verdicts": row["verdicts"], "notes": row["notes"], "flagged_by": row["flagged_by"],
        }


def write_jsonl(store: Store, out: io.TextIOBase) -> int:
    n = 0
    for record in export_records(store):
        out.write(safe_json(record, indent=None) + "\n")
        n += 1
    return n


def write_csv(store: Store, out: io.TextIOBase) -> int:
    records = list(export_records(store))
    annotators = sorted({a for r in records for a in r["labels"]})
    judges = sorted({j for r in records for j in r["verdicts"]})
    writer = csv.writer(out)
    writerow = lambda cells: writer.writerow([spreadsheet_safe(c) for c in cells])  # noqa: E731
    writerow(["item_id", "task", "lang", "source_id", "reference", "gold_label", "gold_basis",
                     *(f"label:{a}" for a in annotators), *(f"verdict:{j}" for j in judges), "notes", "flagged_by"])
    for r in records:
        verdicts = [r["verdicts"].get(j, {}) for j in judges]
        writerow([
            r["item_id"], r["task"], r["lang"], r["source_id"], r["reference"], r["gold_label"], r["gold_basis"],
            *(r["labels"].get(a, "") for a in annotators),
            *((v.get("verdict") or v.get("status", "")) for v in verdicts),
            " | ".join(f"{n['annotator']}: {n['note']}" for n in r["notes"]), " ".join(r["flagged_by"]),
        ])
    return len(records)
