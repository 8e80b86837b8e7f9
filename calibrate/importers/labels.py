"""`calibrate import labels`: human labels made in another tool or a spreadsheet (JSONL or CSV
with task, lang, source_id, annotator, label and an optional note), joined to items by their
source id, so they count in the report like labels made in calibrate."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path

from calibrate.importers import BadInput, ImportFailed, read_jsonl
from calibrate.store import Store, digest
from calibrate.templates import TemplateError, TemplateSet
from calibrate.verdicts import SCORE_KEYS, label_choices

REQUIRED = ("task", "lang", "source_id", "annotator", "label")


def _rows(path: Path) -> Iterator[tuple[str, dict] | BadInput]:
    if path.suffix.lower() != ".csv":
        yield from read_jsonl(path)
        return
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ImportFailed(f"{path}: not UTF-8 ({exc.reason} at byte {exc.start})") from None
    if not text.strip():
        raise ImportFailed(f"{path}: file is empty")
    reader = csv.DictReader(io.StringIO(text))
    for row in reader:
        yield f"{path}:{reader.line_num}", {k.strip(): (v or "").strip() for k, v in row.items() if k}


def _check_label(templates: TemplateSet, task: str, lang: str, label: str) -> str | None:
    try:
        template = templates.for_task(task, lang)
    except TemplateError as exc:
        return str(exc)
    if template.verdict == "rubric_scores":
        try:
            scores = json.loads(label)
            if not all(0 <= float(scores[k]) <= 100 for k in SCORE_KEYS):
                return "scores must be within 0-100"
        except (ValueError, KeyError, TypeError):
            return 'a rubric label is JSON: {"score_answer": …, "score_reasoning": …}'
        return None
    choices = label_choices(template.verdict, template.labels)
    if choices and label not in choices:
        return f"label {label!r} is not one of {', '.join(choices)}"
    return None


def import_labels(store: Store, templates: TemplateSet, path: Path, *, skip_bad: bool = False) -> tuple[int, list[BadInput]]:
    """Import every row or nothing (unless `skip_bad`). Returns (labels added, skipped rows)."""
    path = Path(path)
    if not path.is_file():
        raise ImportFailed(f"{path}: no such file")
    indexes: dict[tuple[str, str], dict[str, int]] = {}
    hashes: dict[int, str] = {}
    rows, skipped = [], []
    for entry in _rows(path):
        if isinstance(entry, BadInput):
            problem = entry
        else:
            where, obj = entry
            obj = {**obj, "source_id": obj.get("source_id", obj.get("id"))}
            missing = [k for k in REQUIRED if obj.get(k) in (None, "")]
            problem = BadInput(where, f"missing field {missing[0]!r}") if missing else None
            if problem is None:
                task, lang, source = str(obj["task"]), str(obj["lang"]), str(obj["source_id"])
                label = obj["label"] if isinstance(obj["label"], str) else json.dumps(obj["label"])
                reason = _check_label(templates, task, lang, label)
                index = indexes.setdefault((task, lang), store.source_index(task, lang))
                if reason:
                    problem = BadInput(where, reason)
                elif source not in index:
                    problem = BadInput(where, f"no {task} ({lang}) item with source id {source!r}")
                else:
                    item_id = index[source]
                    if item_id not in hashes:
                        hashes[item_id] = store.item(item_id).content_hash
                    note = obj.get("note") or None
                    uid = digest(hashes[item_id], str(obj["annotator"]), label, note or "", "import labels")
                    rows.append((uid, item_id, str(obj["annotator"]), label, note))
        if problem is not None:
            if not skip_bad:
                raise ImportFailed(f"{problem}; nothing was imported (use --skip-bad to skip bad rows)")
            skipped.append(problem)
    if not rows:
        raise ImportFailed(f"{path}: no valid labels; nothing was imported")
    return store.add_imported_labels(rows), skipped
