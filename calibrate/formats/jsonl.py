"""`calibrate import jsonl`: one item per JSON line, for any task, with optional field mapping,
judge outputs that were produced elsewhere, and the path of the response's audio."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from calibrate.audio import probe_clip
from calibrate.formats import BadInput, ImportFailed, Progress, Record, read_jsonl
from calibrate.model import NewItem, SystemNameError, check_system, no_output
from calibrate.names import closest, listing
from calibrate.validate import InputError, type_of
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
    system: str = "",
    system_field: str | None = None,
    require_id: bool = True,
    audio_field: str | None = None,
    progress: Progress | None = None,
) -> Iterator[Record | BadInput]:
    """Items from a JSONL file. `field_map` maps item field -> line field (others pass through);
    the line's `id_field` is the item's source id (else, unless `require_id`, its line number).
    The system under test is `system`, or each line's `system_field`. The id, reference,
    judge-output and system fields are never item fields; a line whose judge output is missing,
    null, empty or only whitespace brings an error judgment (see `_no_judge_output`), but a file
    none of whose lines has the judge-output field is refused (ImportFailed, naming the fields its
    lines have: the option names another field). `audio_field` names the path of the response's .wav, relative to the file's folder."""
    field_map = field_map or {}
    audio_root = Path(path).resolve().parent
    renamed_sources = set(field_map.values())
    not_content = tuple(f for f in (id_field, reference_field, judge_output, system_field, audio_field) if f)
    id_what = f"field {id_field!r}"
    output_seen = not judge_output  # whether a line has the judge-output field
    fields_seen: set[str] = set()  # the lines' fields until one has it
    for entry in read_jsonl(path, progress):
        if isinstance(entry, BadInput):
            yield entry
            continue
        where, obj = entry
        if not output_seen:
            output_seen = judge_output in obj
            fields_seen.update(obj)
        if id_field in obj:
            try:
                source_id = valid_id(obj[id_field], id_what)
            except InputError as exc:
                yield BadInput(where, str(exc))
                continue
        elif require_id:
            yield BadInput(where, f"missing field {id_field!r} (the item's source id; name another field with --id-field)")
            continue
        else:
            source_id = where.rsplit(":", 1)[1]
        fields = obj.copy()
        for name in not_content:
            fields.pop(name, None)
        line_system = system
        if system_field:
            if (value := obj.get(system_field)) is not None and not isinstance(value, str):
                yield BadInput(where, f"field {system_field!r} must be text (the system under test's name), got "
                                      f"{type_of(value)}")
                continue
            try:
                line_system = check_system(value, f"field {system_field!r}")
            except SystemNameError as exc:
                yield BadInput(where, str(exc))
                continue
            if not line_system:
                yield BadInput(where, f"missing field {system_field!r} (the system under test)")
                continue
        audio = ()
        if audio_field:
            value = obj.get(audio_field)
            if not isinstance(value, str) or not value:
                yield BadInput(where, f"field {audio_field!r} must hold the path of a .wav (--audio-field)")
                continue
            audio = (probe_clip("response", audio_root, value),)
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
        output = error = None
        if judge_output:
            output = obj.get(judge_output)
            if output is not None and not isinstance(output, str):
                yield BadInput(where, f"field {judge_output!r} must be text, got {type_of(output)}")
                continue
            if no_output(output):
                output, error = None, _no_judge_output(judge_output, obj)
        item = NewItem(task, lang, source_id, fields, reference, line_system)
        yield Record(item, where, judge_output=output, judge_name=judge_name, judge_error=error,
                     ignored_fields=not_content, audio=audio)
    if not output_seen and fields_seen:
        match = closest(judge_output, sorted(fields_seen))
        raise ImportFailed(
            f"{path}: no line has the field {judge_output!r} that --judge-output names"
            + (f" (did you mean {match}?)" if match else "") + f"; its lines have {listing(sorted(fields_seen))}: "
            "nothing was imported (each line's judgment would be a failed call; a line whose judge gave nothing "
            "holds the field empty or null)")


def _no_judge_output(name: str, obj: dict) -> str:
    """The error stored as the judgment of a line whose judge-output field is missing, null,
    empty or only whitespace (`no_output`): the judge gave nothing (its call failed, or it was
    never asked), which is no verdict, as C3's empty check_answer is; the item is imported for
    people to label all the same."""
    state = ("missing" if name not in obj else "null" if obj[name] is None else "empty" if obj[name] == ""
             else "only whitespace")
    return f"no judge output: field {name!r} is {state}"
