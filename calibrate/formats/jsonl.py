"""`calibrate import jsonl`: one item per JSON line, for any task, with optional field mapping
and judge outputs that were produced elsewhere."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from calibrate.formats import BadInput, Progress, Record, read_jsonl
from calibrate.model import NewItem
from calibrate.validate import InputError
from calibrate.validate import source_id as valid_id


def jsonl_records(
    path: Path,
    *,
    task: str,
    lang: str,
    id_field: str = "id",
    field_map: dict[str, str] | None = None,
    reference_field: str | None = None,
    judge_output: str | None = None,
    judge_name: str | None = None,
    require_id: bool = True,
    progress: Progress | None = None,
) -> Iterator[Record | BadInput]:
    """Items from a JSONL file. `field_map` maps item field -> line field (others pass through);
    the line's `id_field` is the item's source id (else, unless `require_id`, its line number)."""
    field_map = field_map or {}
    renamed_sources = set(field_map.values())
    for entry in read_jsonl(path, progress):
        if isinstance(entry, BadInput):
            yield entry
            continue
        where, obj = entry
        if id_field not in obj and require_id:
            yield BadInput(where, f"missing field {id_field!r} (the item's source id)")
            continue
        try:
            source_id = valid_id(obj[id_field], f"field {id_field!r}") if id_field in obj else where.rsplit(":", 1)[1]
        except InputError as exc:
            yield BadInput(where, str(exc))
            continue
        fields = dict(obj)
        fields.pop(id_field, None)
        if judge_output:
            fields.pop(judge_output, None)
        if field_map:
            missing = [src for src in field_map.values() if src not in obj]
            if missing:
                yield BadInput(where, f"missing field {missing[0]!r} (mapped by --map)")
                continue
            for source in renamed_sources:
                fields.pop(source, None)
            fields.update({target: obj[src] for target, src in field_map.items()})
        reference = None
        if reference_field:
            if reference_field not in obj:
                yield BadInput(where, f"missing field {reference_field!r} (the reference)")
                continue
            value = obj[reference_field]
            reference = value if isinstance(value, str) else str(value)
        output = None
        if judge_output:
            if judge_output not in obj:
                yield BadInput(where, f"missing field {judge_output!r} (the judge output)")
                continue
            output = obj[judge_output]
            if not isinstance(output, str):
                yield BadInput(where, f"field {judge_output!r} must be text, got {type(output).__name__}")
                continue
        item = NewItem(task, lang, source_id, fields, reference)
        yield Record(item, where, judge_output=output, judge_name=judge_name)
