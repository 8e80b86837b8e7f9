"""Gold labels out: items with every annotator's label, the consolidated (majority) label,
judge verdicts and notes as JSONL or CSV; and result files in C3's own layout."""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from calibrate.importers.c3 import C3_LAYOUT, C3_RESULTS_FAMILY
from calibrate.judging import render_for
from calibrate.store import Store
from calibrate.templates import TemplateError, TemplateSet

C3_WORDING = {"yes": "The answer is: yes.", "no": "The answer is: no.", "是": "最终答案为：是。", "否": "最终答案为：否。"}


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
        out.write(json.dumps(record, ensure_ascii=False) + "\n")
        n += 1
    return n


def write_csv(store: Store, out: io.TextIOBase) -> int:
    records = list(export_records(store))
    annotators = sorted({a for r in records for a in r["labels"]})
    judges = sorted({j for r in records for j in r["verdicts"]})
    writer = csv.writer(out)
    writer.writerow(["item_id", "task", "lang", "source_id", "reference", "gold_label", "gold_basis",
                     *(f"label:{a}" for a in annotators), *(f"verdict:{j}" for j in judges), "notes", "flagged_by"])
    for r in records:
        verdicts = [r["verdicts"].get(j, {}) for j in judges]
        writer.writerow([
            r["item_id"], r["task"], r["lang"], r["source_id"], r["reference"], r["gold_label"], r["gold_basis"],
            *(r["labels"].get(a, "") for a in annotators),
            *((v.get("verdict") or v.get("status", "")) for v in verdicts),
            " | ".join(f"{n['annotator']}: {n['note']}" for n in r["notes"]), " ".join(r["flagged_by"]),
        ])
    return len(records)


def export_c3(store: Store, templates: TemplateSet, lang: str, out_dir: Path, judge: str | None) -> dict[str, int]:
    """Result files in C3's layout (the paths its script writes). Judged phenomena carry the
    judge's raw output in check_answer; generation items carry the consolidated human label in
    C3's exact verdict wording ("" when nobody labelled them)."""
    out_dir = Path(out_dir)
    raw = store.latest_raw_outputs(judge) if judge else {}
    labels: dict[int, dict[str, str]] = {}
    for row in store.current_labels():
        labels.setdefault(row["item_id"], {})[row["annotator"]] = row["label"]
    written: dict[str, int] = {}
    for part in C3_LAYOUT[lang]:
        index = store.source_index(part.task, lang)
        items = sorted(
            ((int(source.rsplit("/", 1)[1]), item_id) for source, item_id in index.items()
             if source.rsplit("/", 1)[0] == part.source_prefix),
        )
        if not items:
            continue
        records = []
        for _, item_id in items:
            item = store.item(item_id)
            if "generation" in part.task:
                gold, _ = consolidated(labels.get(item_id, {}))
                check = C3_WORDING.get(gold, "") if gold else ""
            else:
                check = raw.get(item_id) or ""
            records.append(_c3_record(item, part, lang, check, templates))
        path = out_dir / f"{part.responses}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(records, ensure_ascii=False, indent=4), encoding="utf-8")
        written[str(path.relative_to(out_dir))] = len(records)
    return written


def _c3_record(item, part, lang: str, check_answer: str, templates: TemplateSet) -> dict:
    fields = dict(item.fields)
    response = fields.pop("response", None)
    if part.multi_turn:
        try:
            content = render_for(templates, item, C3_RESULTS_FAMILY).user
        except TemplateError:
            content = ""
        first = fields["turns"][0] if lang == "en" else fields["history"][0]
        return {"content": content, "annotation": first, "check_answer": check_answer}
    if "history" in fields:
        history = fields.pop("history")
        record = {"content": "".join(line + "\n" for line in history)}
        for key in ("omission_complete", "coreference_complete"):
            if key in fields and part.task.endswith(("completion", "resolution")):
                record["annotation"] = fields[key]
    else:
        record = dict(fields)
        if part.task == "c3/coreference-resolution" and "answer" in record:
            record["correct_answer"] = record.pop("answer")
    if response is not None:
        record["answer"] = response
    record["check_answer"] = check_answer
    return record
