"""The outside formats (one module each, holding both directions) and what they share:
reading files line by line, errors that name file:line, validating items against the template
manifests, matching records to stored items, and storing them in one transaction.

A format's reader is a generator of `Record`s (an item, or a reference to a stored item, and
perhaps a judge's raw output produced elsewhere or people's labels) and `BadInput`s
(something wrong at file:line). Reading a file never touches the database: `ItemIndex` matches
references to stored items afterwards, in one place, by identity (`ItemRef`) or, for files
whose order is not the items' order, by what the record holds (`ContentRef`). `import_records` stores records atomically: the first
bad input aborts the whole import and the database is unchanged, unless `skip_bad` is set, in
which case every bad input is reported and skipped.

An item's identity is (task, language, system, source id). Importing the same content again is
a no-op; different content under a stored identity is a bad input naming file:line, unless the
import is an update, which stores it as the identity's next version (labels stay on the version
they were made on).
"""

from __future__ import annotations

import codecs
import gc
import json
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from calibrate.judgments import judgment_from_output
from calibrate.model import (
    AudioClip,
    CalibrateError,
    ImportCounts,
    Item,
    LabelsAdded,
    NewItem,
    NewJudgment,
    VerdictChange,
    digest,
    dump_json,
)
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
    type_of,
)
from calibrate.verdicts import Verdict
from calibrate.write_behind import WriteBehind

BATCH = 2000  # records in an import's first transaction, and the fewest in any
BATCH_MAX = 20_000  # the most records in one transaction
# an import's transaction aims to hold the write lock no longer than this: its batches grow from
# BATCH towards BATCH_MAX while they take less (fewer, larger transactions rewrite fewer pages of
# the random-keyed content-hash index), and shrink back when they take more
BATCH_SECONDS = 0.25
Progress = Callable[[int], None]
PROGRESS_BYTES = 1 << 20  # read_jsonl tells its progress callback every MiB read, and at the end
SKIPPED_SHOWN = 3  # bad records named in the error of an import whose every record was bad


class ImportFailed(CalibrateError):
    """An import that stored nothing; the message names what and where."""


@dataclass(frozen=True)
class BadInput:
    location: str
    reason: str
    items: int = 1  # the items it leaves out (a phenomenon whose responses are missing leaves out all of its items)

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
    system: str = ""

    def __str__(self) -> str:
        return f"{describe_cell(self.task, self.lang, self.system)} item {self.source_id}"


@dataclass(frozen=True, eq=False)
class ContentRef:
    """A stored item named by what it holds, for files whose records are not in the items'
    order: an item of (task, lang, system) whose `view` (the item as the file writes it) has
    the `identify` values, and then the `check` values too (a record that matches an item on
    `identify` but not on `check` is misaligned). Records of one `group` (one file) never
    share an item, and the items of a cell that no record of the group matched are listed
    after the import (`ImportReport.unmatched`)."""

    task: str
    lang: str
    system: str
    identify: dict
    check: dict
    view: Callable[[Item], dict]
    group: str
    hint: str = "import the items first"
    # why no stored item of the cell has the `identify` values, where the format can tell (from the stored items and
    # the store), instead of "files are misaligned"
    no_match: Callable[[Store, list[Item]], str | None] | None = None

    def __str__(self) -> str:
        return f"{describe_cell(self.task, self.lang, self.system)} item"


def first_difference(a: str, b: str, width: int = 24) -> str:
    """Where two texts first differ, with a few characters of each from just before there
    (line endings and other invisible characters written as JSON escapes: \\r, \\n)."""
    at = next((k for k, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    start = max(0, at - 8)
    show = lambda text: json.dumps(text[start:start + width], ensure_ascii=False)  # noqa: E731
    return f"first difference at character {at + 1}: {show(a)} vs {show(b)}"


def describe_cell(task: str, lang: str, system: str) -> str:
    """'task (lang)' or 'task (lang, system S)': how messages name a cell."""
    return f"{task} ({lang}, system {system})" if system else f"{task} ({lang})"


class ItemIndex:
    """Finds items by identity (task, language, system, source id) among the stored ones and
    the ones this import has already accepted: the one place where records read from a file
    meet the database."""

    def __init__(self, store: Store, settle: Callable[[], None] = lambda: None):
        self._store = store
        self._settle = settle
        # (task, lang) -> (system, source_id) -> (id or None while pending, content hash, version)
        self._cells: dict[tuple[str, str], dict[tuple[str, str], tuple[int | None, str, int]]] = {}
        self._contents: dict[tuple[str, str, str], list[tuple[Item, dict]]] = {}  # (task, lang, system) -> views
        self._claims: dict[tuple[str, str, str, str], dict[int, str]] = {}  # (group, cell) -> item id -> location

    @property
    def store(self) -> Store:
        """The store, once it is this thread's (`settle`: `import_records` writes its batches on
        another thread)."""
        self._settle()
        return self._store

    def _cell(self, task: str, lang: str) -> dict[tuple[str, str], tuple[int | None, str, int]]:
        cell = self._cells.get((task, lang))
        if cell is None:
            cell = self._cells[(task, lang)] = dict(self.store.identity_index(task, lang))
        return cell

    def current_or_accept(self, item: NewItem) -> tuple[int | None, str, int]:
        """(id, content hash, version) of the current version of the item's identity; an
        identity not seen before is first accepted (as `accept` does), in the same look-up."""
        return self._cell(item.task, item.lang).setdefault((item.system, item.source_id),
                                                           (None, item.content_hash, item.version))

    def accept(self, item: NewItem) -> None:
        """Note an item this import is adding, so later records see it."""
        self._cell(item.task, item.lang)[(item.system, item.source_id)] = (None, item.content_hash, item.version)

    def find_id(self, task: str, lang: str, source_id: str, system: str = "") -> int | None:
        found = self._cell(task, lang).get((system, source_id))
        return found[0] if found else None

    def systems_for(self, task: str, lang: str, source_id: str) -> list[str]:
        """The systems that have a stored item with this source id."""
        return sorted(s for (s, sid), (item_id, _, _) in self._cell(task, lang).items() if sid == source_id and item_id)

    def resolve(self, ref: ItemRef | ContentRef, location: str = "") -> Item | str | None:
        """The stored item `ref` names, None if there is none, or the reason it cannot be used."""
        if isinstance(ref, ContentRef):
            return self._match(ref, location)
        item_id = self.find_id(ref.task, ref.lang, ref.source_id, ref.system)
        if item_id is None:
            return None
        item = self.store.item(item_id)
        for name, value in ref.expect.items():
            stored = item.fields.get(name)
            if isinstance(stored, type(value)) and stored != value:
                return f"{name!r} differs from the {name} imported for {ref}: files are misaligned"
        return item

    def _match(self, ref: ContentRef, location: str) -> Item | str | None:
        """The stored item whose view has the record's values (see ContentRef); None when the
        cell holds no stored item at all (the record then creates its own)."""
        cell = (ref.task, ref.lang, ref.system)
        if cell not in self._contents:
            self._contents[cell] = [(item, ref.view(item)) for item in
                                    self.store.iter_items(task=ref.task, lang=ref.lang, system=ref.system)]
        stored = self._contents[cell]
        if not stored:
            return None
        claims = self._claims.setdefault((ref.group, *cell), {})
        keys = " and ".join(repr(k) for k in ref.identify)
        same = [(item, view) for item, view in stored if all(view.get(k) == v for k, v in ref.identify.items())]
        if not same:
            why = ref.no_match(self.store, [item for item, _ in stored]) if ref.no_match else None
            return f"matches no {ref}: none has this {keys}; {why or 'files are misaligned'}"
        full = [item for item, view in same if all(view.get(k) == v for k, v in ref.check.items())]
        if not full:
            item, view = same[0]
            name = next(k for k, v in ref.check.items() if view.get(k) != v)
            ours, theirs = ref.check[name], view.get(name)
            where = first_difference(ours, theirs) if isinstance(ours, str) and isinstance(theirs, str) else ""
            return (f"its {name!r} differs from that of {ref} {item.source_id}, which has the same {keys} "
                    f"(record vs item, {where}); files are misaligned")
        free = [item for item in full if item.id not in claims]
        if not free:
            return f"matches {ref} {full[0].source_id}, which {claims[full[0].id]} matched already"
        if any(item.fields != free[0].fields for item in free[1:]):
            return (f"matches {ref}s {free[0].source_id} and {free[1].source_id}, which differ in what the record "
                    "does not hold; it cannot tell which one it judged")
        claims[free[0].id] = location
        return free[0]

    def unmatched(self) -> list[tuple[str, str, list[str]]]:
        """(group, cell, source ids) of stored items that no record of a group matched by
        content, for each group and cell that matching looked in."""
        out = []
        for (group, task, lang, system), claims in self._claims.items():
            missing = [item.source_id for item, _ in self._contents[(task, lang, system)] if item.id not in claims]
            if missing:
                out.append((group, describe_cell(task, lang, system), missing))
        return out


@dataclass
class Record:
    """An item to store (`item`), or a stored item to attach a judgment to (`ref`), or both:
    attach to `ref` when it is stored, else store `item`. `ignored_fields` name source fields
    that are not item content (judge output, reference, id): an item stored earlier with them
    among its fields is the same item. `audio` is the audio of its response (clips that are
    missing or unreadable say why). `judge_verdict` is a verdict the judge's own tool reached
    (an Inspect score's value) and `judge_prompt` the (system, user) prompt it was given, stored
    as they are instead of parsing the output and rendering a template; `judge_model` names the
    model that judged."""

    item: NewItem | None
    location: str
    ref: ItemRef | ContentRef | None = None
    ignored_fields: tuple[str, ...] = ()
    judge_output: str | None = None
    judge_name: str | None = None
    template_family: str | None = None
    judge_params: dict = field(default_factory=dict)
    judge_error: str | None = None
    audio: tuple[AudioClip, ...] = ()
    labels: tuple[tuple[str, str], ...] = ()  # people's (annotator, label), each in its kind's stored form
    notes: tuple[tuple[str, str], ...] = ()  # people's (annotator, note) on the item, each beside their label
    c3_file_judge: str | None = None  # the judge whose C3 generation result files held `labels`
    c3_file_text: str | None = None  # those files' words of them, where they are not C3's own
    label_times: tuple[tuple[str, str], ...] = ()  # (annotator, when they decided) where the source keeps it
    judge_verdict: Verdict | None = None
    judge_prompt: tuple[str | None, str] | None = None
    judge_model: str | None = None
    # (id, start time) of the run that gave `judge_output`, where the source names one (an Inspect eval): a later run
    # giving the same output is a judgment of its own, in force, not the earlier one again
    judge_run: tuple[str, str] | None = None
    # when the judge made `judge_output` (UTC ISO), where the source says (an Inspect eval's time): it orders the
    # judgment among the judge's others of the item, so an older one imported later does not take over
    judged_at: str | None = None

    @property
    def has_judgment(self) -> bool:
        return self.judge_output is not None or bool(self.judge_error) or self.judge_verdict is not None


@dataclass
class ImportReport:
    counts: ImportCounts = field(default_factory=ImportCounts)
    skipped: list[BadInput] = field(default_factory=list)
    records: int = 0
    systems: Counter = field(default_factory=Counter)  # with a refusal: system -> valid records of its items
    without_audio: list[BadInput] = field(default_factory=list)  # imported, but an audio clip is missing or unreadable
    unmatched: list[tuple[str, str, list[str]]] = field(default_factory=list)  # see ItemIndex.unmatched
    changed: list[VerdictChange] = field(default_factory=list)  # verdicts in force on items stored before
    errors: dict[tuple[str, str], list[str]] = field(default_factory=dict)  # (judge, why) -> where: no verdict, an error
    superseded: list[tuple[int, str]] = field(default_factory=list)  # (id, source id) of versions --update replaced
    left_behind: list[tuple[str, str]] = field(default_factory=list)  # (source id, annotator): labels on those versions
    outputs: Counter = field(default_factory=Counter)  # (judge, status) -> judgments of this import's records
    unparsed: Counter = field(default_factory=Counter)  # (judge, why an output did not parse) -> n
    out_of_force: Counter = field(default_factory=Counter)  # (judge, why: Store.out_of_force) -> judgments added


def read_jsonl(path: Path, progress: Progress | None = None) -> Iterator[tuple[str, dict] | BadInput]:
    """Yield (file:line, object) per non-blank line, or a BadInput for a line that is not a
    JSON object. An empty or non-UTF-8 file raises ImportFailed: nothing in it can be trusted."""
    path = Path(path)
    if not path.is_file():
        raise ImportFailed(f"{path}: no such file")
    if path.stat().st_size == 0:
        raise ImportFailed(f"{path}: file is empty")
    seen_any = False
    prefix = f"{path}:"
    unreported = 0  # bytes read since progress was last told (told every PROGRESS_BYTES: a call costs microseconds)
    with path.open("rb") as handle:
        for lineno, raw in enumerate(handle, 1):
            if progress:
                unreported += len(raw)
                if unreported >= PROGRESS_BYTES:
                    progress(unreported)
                    unreported = 0
            if lineno == 1:
                raw = raw.removeprefix(codecs.BOM_UTF8)  # written by some Windows editors and exporters
            where = prefix + str(lineno)
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ImportFailed(f"{where}: not UTF-8 ({exc.reason} at byte {exc.start})") from None
            if not line or line.isspace():  # blank (as `not line.strip()`, without copying the line)
                continue
            seen_any = True
            try:
                obj = parse_json_value(line, "line")
            except InputError:
                yield BadInput(where, _line_fault(line))
                continue
            if not isinstance(obj, dict):
                yield BadInput(where, f"expected a JSON object, got {type_of(obj)}")
                continue
            yield where, obj
    if progress and unreported:
        progress(unreported)
    if not seen_any:
        raise ImportFailed(f"{path}: file is empty (only blank lines)")


def _line_fault(line: str) -> str:
    """What is wrong with a JSONL line that does not parse, read without its line ending so that
    a column counts along the line (a line cut short is wrong at its end, not on the next line)."""
    try:
        parse_json_value(line.rstrip("\r\n"), "line")
    except InputError as exc:
        return str(exc).removeprefix("line: ")
    raise AssertionError(f"a line that failed to parse parsed without its line ending: {line!r}")


def read_json_list(path: Path, empty_ok: bool = False) -> list:
    """A whole JSON list file (C3's layout). Errors name the file; an empty list is one unless
    `empty_ok`."""
    path = Path(path)
    try:
        text = path.read_bytes().decode("utf-8-sig")
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
    if not data and not empty_ok:
        raise ImportFailed(f"{path}: list is empty")
    return data


@cache
def accepts_text(declared: str) -> bool:
    """Whether a manifest's declared field type ("text", "text or object", ...) allows text."""
    return "text" in declared.split(" or ")


def check_item(templates: TemplateSet, item: NewItem) -> Template:
    """The template for this item, after checking its task, language and required fields."""
    try:
        template = templates.for_task(item.task, item.lang)
    except TemplateError as exc:
        raise ValueError(str(exc)) from None
    fields = item.fields
    for name in template.required:
        if fields.get(name) is None:
            what = f"field {name!r} is null" if name in fields else f"missing field {name!r}"
            raise ValueError(f"{what} (task {item.task} needs {', '.join(template.required)})")
    declared_types = template.field_types
    for name, value in fields.items():
        declared = declared_types.get(name)
        if declared is not None and not (isinstance(value, str) and accepts_text(declared)):
            break
    else:
        return template  # the common case: text where the manifest allows text, anything where it declares nothing
    for name, declared in declared_types.items():  # in the manifest's order: the first wrong field is named
        if name in fields:
            check_field_type(name, fields[name], declared)
    return template


def fill_reference(item: NewItem, template: Template) -> None:
    """Fill the item's reference from the field the manifest names, when the importer did not."""
    if item.reference is not None or not template.reference or template.reference not in item.fields:
        return
    value = item.fields[template.reference]
    item.reference = value if isinstance(value, str) else dump_json(value)


@contextmanager
def cycle_collection_paused() -> Iterator[None]:
    """Python's cyclic garbage collector paused (as it was, afterwards). An import holds a few
    small objects per record it has read (the identities it checks later records against) and
    makes no reference cycles; each of the collector's passes walks all of them, which on
    200,000 lines took about a tenth of the import's time."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


UPDATE_ADVICE = "pass --update to record this content as a new version (labels stay with the version they were made on)"
ConflictAdvice = Callable[[Item, NewItem], str]
"""What a new item whose content differs from the stored item of its identity may mean and
what to do, as the end of the message after "was imported before with different content"; each
format that knows its files' usual causes has its own."""


def new_version_advice(stored: Item, item: NewItem) -> str:
    """The advice of a format without one of its own (`ConflictAdvice`)."""
    return (f"; {UPDATE_ADVICE}; if this file holds other items whose ids repeat an earlier file's, give them another "
            "--system or import this file into a database of its own: --update would replace those items")


def import_records(
    store: Store,
    records: Iterable[Record | BadInput],
    templates: TemplateSet,
    *,
    skip_bad: bool = False,
    update: bool = False,
    source: str = "import",
    data_tasks: Sequence[tuple[str, str, str, tuple[str, ...]]] = (),
    conflict_advice: ConflictAdvice = new_version_advice,
    refusal: Callable[[ImportReport], str | None] | None = None,
) -> ImportReport:
    """Store records as one recorded import run. Raises ImportFailed (nothing stored) on the
    first bad input unless `skip_bad`. With `update`, changed content under a stored identity
    becomes a new version instead of a bad input (which ends in the format's `conflict_advice`).
    `data_tasks` (task, lang, family, labels) are the tasks these records bring with them (see
    TemplateSet.add_data_task), recorded with the finish. `refusal`, once every record is read and
    before the finish, says why the import as read is not the one asked for (ImportFailed: nothing
    stored), or None.

    New items (with their judgments and audio) are written in short transactions of BATCH to
    BATCH_MAX records (as many as fit in BATCH_SECONDS), so annotators and judge runs are never
    locked out for long; they stay hidden until the run finishes. Each batch is written behind
    (`WriteBehind`) while the next records are read. What attaches to items already present
    (judgments, labels, audio) is written with the finish, in the same transaction. A failed or
    interrupted import is rolled back; one that was killed is rolled back by the next import
    (Store.begin_import), which also waits while another import is running."""
    report = ImportReport()
    writes = WriteBehind(store)
    index = ItemIndex(store, writes.settle)
    batch: list[Record] = []
    attached: list[tuple[Item, Record]] = []  # records aimed at items already stored

    def judgment(item_id: int, item, record: Record) -> NewJudgment:
        return judgment_from_output(
            item_id, item, templates, record.judge_name or "imported", record.judge_output,
            family=record.template_family, params=record.judge_params, error=record.judge_error,
            model=record.judge_model, decided=record.judge_verdict, prompt=record.judge_prompt, run=record.judge_run,
            judged_at=record.judged_at,
        )

    def store_judgments(judged: list[tuple[int, Item | NewItem, Record]], earlier: bool,
                        new: list[NewJudgment]) -> None:
        """Store the judgments `new` made of these records' outputs (`judgment`, before: rendering
        and parsing need no write lock) on these items; where some of the items were stored
        before this import (`earlier`), note the verdicts in force that they change, and why
        those of them added that are not in force are not (`Store.out_of_force`)."""
        if not judged:
            return
        before = store.verdicts_in_force_of((j.item_id, j.judge_name) for j in new) if earlier else {}
        stored = store.ids_by_uid("judgments", (j.uid for j in new)) if earlier else {}
        report.counts.judgments_added += store.add_judgments(new)
        if earlier:
            report.out_of_force.update(store.out_of_force(j.uid for j in new if j.uid not in stored))
        sources = {item_id: item.source_id for item_id, item, _ in judged}
        report.changed += verdict_changes(store, before, sources).values()
        for (_, _, r), made in zip(judged, new, strict=True):
            report.outputs[made.judge_name, made.status] += 1
            if made.status == "unparsed":
                report.unparsed[made.judge_name, made.unparsed_reason or "no reason given"] += 1
            if r.judge_error and made.uid not in stored:  # (one stored before was said when it was)
                report.errors.setdefault((r.judge_name or "imported", r.judge_error), []).append(r.location)

    def store_audio(item_id: int, record: Record) -> None:
        if record.audio:
            store.set_item_audio(item_id, record.audio)
            report.without_audio += [BadInput(str(c.file), c.problem) for c in record.audio if not c.usable]

    def store_labels(pairs: list[tuple[int, str, Record]]) -> None:
        rows = [(digest(content_hash, annotator, label, *([note] if note else []), "imported label"), item_id,
                 annotator, label, note, dict(r.label_times).get(annotator), r.c3_file_judge, r.c3_file_text)
                for item_id, content_hash, r in pairs for annotator, label in r.labels
                for note in [note for who, note in r.notes if who == annotator] or [None]]
        added = store.add_imported_labels(rows) if rows else LabelsAdded()
        report.counts.labels_added += added.labels
        report.counts.notes_added += added.notes
        report.counts.labels_put_back += added.put_back
        report.counts.labels_older += added.older
        report.counts.labels_reworded += added.reworded

    batch_size = BATCH

    def write_batch(records: list[Record], values: list, full: bool) -> None:
        """Store new items with what comes with them, in one transaction (`values`: their rows,
        `Store.item_values`); after a `full` batch, size the next one to what fits BATCH_SECONDS."""
        nonlocal batch_size
        items = [r.item for r in records]
        with_judgments = any(r.has_judgment for r in records)
        need_ids = with_judgments or any(r.audio or r.labels for r in records)
        with store.transaction():
            started = time.perf_counter()  # once the write lock is held
            ids, added = store.add_items(items, with_ids=need_ids, run=run, values=values)
            versions = sum(r.item.version > 1 for r in records)  # each a new row: the content differs
            report.counts.items_added += added - versions
            report.counts.versions_added += versions
            report.counts.items_existing += len(records) - added
            for item_id, record in zip(ids, records, strict=True) if need_ids else ():
                store_audio(item_id, record)
            if with_judgments:
                judged = [(item_id, r.item, r) for item_id, r in zip(ids, records, strict=True) if r.has_judgment]
                store_judgments(judged, added < len(records), [judgment(*one) for one in judged])
            if need_ids:
                store_labels([(item_id, r.item.content_hash, r) for item_id, r in zip(ids, records, strict=True)])
        took = time.perf_counter() - started
        if full:  # the next batch fits BATCH_SECONDS, at most twice as large
            fitting = int(batch_size * BATCH_SECONDS / max(took, 1e-3))
            batch_size = max(BATCH, min(BATCH_MAX, 2 * batch_size, fitting))

    def flush() -> None:
        """Write the batch behind (`WriteBehind`) while this thread reads the next records."""
        nonlocal batch
        if not batch:
            return
        written, batch = batch, []
        values = store.item_values([r.item for r in written], run=run)  # no SQL: built before the store is handed over
        writes.submit(write_batch, written, values, len(written) >= batch_size)

    with store.writing_in_bulk(), cycle_collection_paused(), writes:
        try:
            run = store.begin_import(source)
            for record in records:
                writes.settle_if_ended()
                if isinstance(record, Record) and (record.judge_output is not None or record.judge_error):
                    cell = record.item if record.item is not None else record.ref
                    if templates.people_decide(cell.task, cell.lang):
                        record = BadInput(record.location, f"{cell.task} ({cell.lang}) has no judge prompt: people decide "
                                          "it, so a judge's output for it is no judgment (import people's verdicts with "
                                          "calibrate import labels)")
                if store.import_renewal_due(run):  # (each batch renews it too)
                    writes.settle()
                    store.keep_import_alive(run)
                if isinstance(record, Record) and record.ref is not None:
                    found = index.resolve(record.ref, record.location)
                    if isinstance(found, str):
                        record = BadInput(record.location, found)
                    elif found is not None:
                        attached.append((found, record))
                    elif record.item is None:
                        record = BadInput(record.location, f"no {record.ref}; {record.ref.hint}")
                    else:
                        record.ref = None
                if isinstance(record, Record) and record.ref is None:
                    record = _new_item(record, templates, index, update, attached, conflict_advice, report.superseded)
                if isinstance(record, BadInput):
                    if not skip_bad:
                        raise ImportFailed(f"{record}; nothing was imported (use --skip-bad to skip the bad records and import the rest)")
                    report.skipped.append(record)
                    continue
                report.records += 1
                if refusal is not None:  # (what it reads; 0.3-0.6 us a record, a second at a million)
                    report.systems[record.item.system if record.item is not None else None] += 1
                if record.ref is not None:
                    continue  # attaches to a stored item: written with the finish
                batch.append(record)
                if len(batch) >= batch_size:
                    flush()
            flush()
            writes.settle()
            if report.records == 0:
                raise ImportFailed("no valid records; nothing was imported" + skipped_summary(report.skipped))
            if refusal is not None and (why := refusal(report)):
                raise ImportFailed(f"{why}; nothing was imported" + skipped_summary(report.skipped, every=False))
            judged = [(item.id, item, r) for item, r in attached if r.has_judgment]
            made = [judgment(*one) for one in judged]  # before the finish's write lock, which it would lengthen
            with store.transaction():
                report.counts.items_existing += len(attached)  # records of stored items (a multi-turn result's too)
                for item, record in attached:
                    store_audio(item.id, record)
                store_judgments(judged, True, made)
                store_labels([(item.id, item.content_hash, r) for item, r in attached])
                for task, lang, family, labels in data_tasks:
                    store.set_data_task(task, lang, family, labels)
                store.finish_import(run)
        except BaseException as exc:  # the runs as the database has them: one begun just before an interrupt too
            writes.wait_out()
            store.end_interrupted_transaction()
            for begun in store.imports_begun_here(finished=False):
                store.abandon_import(begun)
            if isinstance(exc, TemplateError):
                raise ImportFailed(str(exc)) from None
            raise
    # committed: what follows only reads (an interrupt here leaves the import in place, as the CLI says)
    report.unmatched = index.unmatched()
    sources = dict(report.superseded)
    report.left_behind = [(sources[item_id], row["annotator"])
                          for item_id, rows in store.decisions(sources).items() for row in rows]
    return report


def verdict_changes(store: Store, before: dict[tuple[int, str], tuple[str, str | None]],
                    sources: Mapping[int, str]) -> dict[tuple[int, str], VerdictChange]:
    """(item id, judge) -> how its verdict in force changed, for those of `before` (the verdicts
    in force `Store.verdicts_in_force_of` read before judgments were stored) that differ now;
    `sources` names the items (item id -> source id). What an import and a merge say they changed."""
    after = store.verdicts_in_force_of(before) if before else {}
    return {(item_id, judge): VerdictChange(sources[item_id], judge, _shown(before[item_id, judge]), _shown(now))
            for (item_id, judge), now in after.items() if now != before[item_id, judge]}


def _shown(in_force: tuple[str, str | None]) -> str:
    """A verdict in force, (status, verdict), as a summary names it: the verdict, or the status
    of a judgment that gave none."""
    status, verdict = in_force
    return str(verdict) if status == "verdict" else status


def skipped_summary(skipped: list[BadInput], *, every: bool = True) -> str:
    """What an import that found nothing to add skipped as bad: how many (`every`: that was
    all it read), and the first SKIPPED_SHOWN with their places and reasons ('' when it skipped
    nothing). Each import's "nothing was imported" ends with it."""
    if not skipped:
        return ""
    shown = "; ".join(str(bad) for bad in skipped[:SKIPPED_SHOWN])
    more = f"; … and {len(skipped) - SKIPPED_SHOWN} more" if len(skipped) > SKIPPED_SHOWN else ""
    return f": {'all ' if every else ''}{len(skipped)} skipped as bad ({shown}{more})"


def _new_item(
    record: Record, templates: TemplateSet, index: ItemIndex, update: bool, attached: list[tuple[Item, Record]],
    conflict_advice: ConflictAdvice,
    superseded: list[tuple[int, str]],
) -> Record | BadInput:
    """Check a record's new item and its identity. Returns the record to store, the record
    turned into a reference (to an item stored earlier with the same content, or with ignored
    fields among its fields, where the record brings judgments, labels or audio to it),
    or the bad input (for changed content without `update`, ending in `conflict_advice`). A new
    version (`update`) notes the stored one it replaces in `superseded`."""
    item = record.item
    try:
        template = check_item(templates, item)
    except ValueError as exc:
        return BadInput(record.location, str(exc))
    fill_reference(item, template)
    stored_id, content_hash, version = index.current_or_accept(item)
    if content_hash == item.content_hash:  # new here (accepted just now), or the same content again
        if stored_id is not None and (record.has_judgment or record.labels or record.audio):
            # stored before this import: what the record brings is written with the finish, as for a reference,
            # so that an import that fails leaves it nothing (a batch's writes on a visible item would stay)
            stored = Item(stored_id, item.task, item.lang, item.source_id, item.fields, item.reference,
                          item.content_hash, item.system, version)  # (the same content: no need to read it back)
            attached.append((stored, record))
            record.ref = ItemRef(item.task, item.lang, item.source_id, system=item.system)
        return record
    if stored_id is not None and record.ignored_fields:
        stored = index.store.item(stored_id)
        if {k: v for k, v in stored.fields.items() if k not in record.ignored_fields} == item.fields:
            attached.append((stored, record))
            record.ref = ItemRef(item.task, item.lang, item.source_id, system=item.system)
            return record
    where = f"{describe_cell(item.task, item.lang, item.system)} item {item.source_id}"
    if stored_id is None:  # no version to follow: --update is no help
        return BadInput(record.location, f"{where} appears twice in this import with different content")
    if not update:
        return BadInput(record.location, f"{where} was imported before with different content"
                                         f"{conflict_advice(index.store.item(stored_id), item)}")
    if index.store.items_by_hash([item.content_hash]):
        return BadInput(record.location, f"{where} held this content in an earlier version; --update records new "
                        "content as a new version and cannot make an earlier one current again")
    item.version = version + 1
    index.accept(item)
    superseded.append((stored_id, item.source_id))
    return record
