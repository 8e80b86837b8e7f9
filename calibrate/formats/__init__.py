"""The outside formats (one module each, holding both directions) and what they share:
reading files line by line, errors that name file:line, validating items against the template
manifests, matching records to stored items, and storing them in one transaction.

A format's reader is a generator of `Record`s (an item, or a reference to a stored item, and
perhaps a judge's raw output produced elsewhere) and `BadInput`s (something wrong at
file:line). Reading a file never touches the database: `ItemIndex` matches references to
stored items afterwards, in one place. `import_records` stores records atomically: the first
bad input aborts the whole import and the database is unchanged, unless `skip_bad` is set, in
which case every bad input is reported and skipped.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from calibrate.judging import judgment_from_output
from calibrate.model import CalibrateError, ImportCounts, Item, NewItem, NewJudgment, dump_json
from calibrate.store import Store
from calibrate.templates import Template, TemplateError, TemplateSet
from calibrate.validate import (
    InputError,
    bounded_int,
    check_field_type,
    check_value,
    finite_float,
    parse_json_value,
    refuse_constant,
)

BATCH = 2000
Progress = Callable[[int], None]


class ImportFailed(CalibrateError):
    """An import that stored nothing; the message names what and where."""


@dataclass(frozen=True)
class BadInput:
    location: str
    reason: str

    def __str__(self) -> str:
        return f"{self.location}: {self.reason}"


@dataclass(frozen=True)
class ItemRef:
    """A stored item named by its identity, with field values it must have (`expect`)."""

    task: str
    lang: str
    source_id: str
    expect: dict = field(default_factory=dict)
    hint: str = "import the items first"

    def __str__(self) -> str:
        return f"{self.task} ({self.lang}) item {self.source_id}"


class ItemIndex:
    """Finds stored items by (task, language, source id): the one place where records read
    from a file meet the database."""

    def __init__(self, store: Store):
        self.store = store
        self._ids: dict[tuple[str, str], dict[str, int]] = {}

    def find_id(self, task: str, lang: str, source_id: str) -> int | None:
        index = self._ids.get((task, lang))
        if index is None:
            index = self._ids[(task, lang)] = self.store.source_index(task, lang)
        return index.get(source_id)

    def resolve(self, ref: ItemRef) -> Item | str:
        """The stored item `ref` names, or the reason it cannot be used."""
        item_id = self.find_id(ref.task, ref.lang, ref.source_id)
        if item_id is None:
            return f"no {ref}; {ref.hint}"
        item = self.store.item(item_id)
        for name, value in ref.expect.items():
            stored = item.fields.get(name)
            if isinstance(stored, type(value)) and stored != value:
                return f"{name!r} differs from the {name} imported for {ref.source_id}: files are misaligned"
        return item


@dataclass
class Record:
    """An item to store (`item`) or a stored item to attach a judgment to (`ref`)."""

    item: NewItem | None
    location: str
    ref: ItemRef | None = None
    judge_output: str | None = None
    judge_name: str | None = None
    template_family: str | None = None
    judge_params: dict = field(default_factory=dict)
    judge_error: str | None = None


@dataclass
class ImportReport:
    counts: ImportCounts = field(default_factory=ImportCounts)
    skipped: list[BadInput] = field(default_factory=list)
    records: int = 0


def read_jsonl(path: Path, progress: Progress | None = None) -> Iterator[tuple[str, dict] | BadInput]:
    """Yield (file:line, object) per non-blank line, or a BadInput for a line that is not a
    JSON object. An empty or non-UTF-8 file raises ImportFailed: nothing in it can be trusted."""
    path = Path(path)
    if not path.is_file():
        raise ImportFailed(f"{path}: no such file")
    if path.stat().st_size == 0:
        raise ImportFailed(f"{path}: file is empty")
    seen_any = False
    with path.open("rb") as handle:
        for lineno, raw in enumerate(handle, 1):
            if progress:
                progress(len(raw))
            where = f"{path}:{lineno}"
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ImportFailed(f"{where}: not UTF-8 ({exc.reason} at byte {exc.start})") from None
            if not line.strip():
                continue
            seen_any = True
            try:
                obj = parse_json_value(line, "line")
            except InputError as exc:
                yield BadInput(where, str(exc).removeprefix("line: "))
                continue
            if not isinstance(obj, dict):
                yield BadInput(where, f"expected a JSON object, got {type(obj).__name__}")
                continue
            yield where, obj
    if not seen_any:
        raise ImportFailed(f"{path}: file has no records")


def read_json_list(path: Path) -> list:
    """A whole JSON list file (C3's layout). Errors name the file."""
    path = Path(path)
    try:
        text = path.read_bytes().decode("utf-8")
        data = json.loads(text, parse_constant=refuse_constant, parse_int=bounded_int, parse_float=finite_float)
        check_value(data, "value")
    except UnicodeDecodeError as exc:
        raise ImportFailed(f"{path}: not UTF-8 ({exc.reason} at byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise ImportFailed(f"{path}:{exc.lineno}: malformed JSON ({exc.msg})") from None
    except (InputError, RecursionError, ValueError) as exc:
        raise ImportFailed(f"{path}: {exc if not isinstance(exc, RecursionError) else 'nested too deeply'}") from None
    if not isinstance(data, list):
        raise ImportFailed(f"{path}: expected a JSON list")
    if not data:
        raise ImportFailed(f"{path}: list is empty")
    return data


def check_item(templates: TemplateSet, item: NewItem) -> Template:
    """The template for this item, after checking its task, language and required fields."""
    try:
        template = templates.for_task(item.task, item.lang)
    except TemplateError as exc:
        raise ValueError(str(exc)) from None
    fields = item.fields
    for name in template.required:
        if fields.get(name) is None:
            raise ValueError(f"missing field {name!r} (task {item.task} needs {', '.join(template.required)})")
    for name, declared in template.field_types.items():
        if name in fields:
            check_field_type(name, fields[name], declared)
    return template


def fill_reference(item: NewItem, template: Template) -> None:
    """Fill the item's reference from the field the manifest names, when the importer did not."""
    if item.reference is not None or not template.reference or template.reference not in item.fields:
        return
    value = item.fields[template.reference]
    item.reference = value if isinstance(value, str) else dump_json(value)


def import_records(
    store: Store,
    records: Iterable[Record | BadInput],
    templates: TemplateSet,
    *,
    skip_bad: bool = False,
    source: str = "import",
) -> ImportReport:
    """Store records as one recorded import run. Raises ImportFailed (nothing stored) on the
    first bad input unless `skip_bad`.

    New items (and their judgments) are written in short transactions of BATCH records, so
    annotators and judge runs are never locked out for long; they stay hidden until the run
    finishes. Judgments attached to items already present are written with the finish, in the
    same transaction. A failed or interrupted import is rolled back; one that was killed is
    rolled back by the next import (Store.clean_dead_imports)."""
    report = ImportReport()
    index = ItemIndex(store)
    batch: list[Record] = []
    attached: list[NewJudgment] = []
    run = store.begin_import(source)

    def judgment(item_id: int, item, record: Record) -> NewJudgment:
        return judgment_from_output(
            item_id, item, templates, record.judge_name or "imported", record.judge_output,
            family=record.template_family, params=record.judge_params, error=record.judge_error,
        )

    def flush() -> None:
        with_judgments = any(r.judge_output is not None or r.judge_error for r in batch)
        with store.transaction():
            ids, added = store.add_items([r.item for r in batch], with_ids=with_judgments, run=run) if batch else ([], 0)
            report.counts.items_added += added
            report.counts.items_existing += len(batch) - added
            if with_judgments:
                new = [judgment(item_id, r.item, r) for item_id, r in zip(ids, batch, strict=True)
                       if r.judge_output is not None or r.judge_error]
                report.counts.judgments_added += store.add_judgments(new)
        batch.clear()

    try:
        for record in records:
            if isinstance(record, Record) and record.ref is not None:
                found = index.resolve(record.ref)
                if isinstance(found, str):
                    record = BadInput(record.location, found)
                else:
                    report.records += 1
                    if record.judge_output is not None or record.judge_error:
                        attached.append(judgment(found.id, found, record))
                    continue
            elif isinstance(record, Record):
                try:
                    template = check_item(templates, record.item)
                except ValueError as exc:
                    record = BadInput(record.location, str(exc))
                else:
                    fill_reference(record.item, template)
            if isinstance(record, BadInput):
                if not skip_bad:
                    raise ImportFailed(f"{record}; nothing was imported (use --skip-bad to skip bad lines)")
                report.skipped.append(record)
                continue
            report.records += 1
            batch.append(record)
            if len(batch) >= BATCH:
                flush()
        flush()
        if report.records == 0:
            raise ImportFailed("no valid records; nothing was imported")
        with store.transaction():
            report.counts.judgments_added += store.add_judgments(attached) if attached else 0
            store.finish_import(run)
    except TemplateError as exc:
        store.abandon_import(run)
        raise ImportFailed(str(exc)) from None
    except BaseException:
        store.abandon_import(run)
        raise
    return report
