"""`calibrate merge OTHER.db`: fold an offline annotator's database into this one.

OTHER is opened read-only and never changed (`Store.open_other` refuses anything that is not a
calibrate database of a known schema version, and reads one made by an older calibrate through an
upgraded temporary copy). Its rows are streamed in batches, so memory
stays bounded whatever its size, and each row is validated before it is written: items must
belong to a task and language the templates know, with fields of the declared types, an
honest content hash and no other content stored here under their identity and version (the
refusal names the fields that differ and what to do, as an import's does); judgments and
annotations must name items (and judgments, and reverted annotations) that exist here, with
well-formed fields; a label must be in its kind's label set.
What is refused is counted and reported, never silently dropped. Items join by content hash,
judgments and annotations by uid, so merging twice adds nothing; each batch is its own short
transaction, so annotators keep working meanwhile and an interrupted merge resumes when run
again. Which label is in force afterwards follows decision time, then uid (see the store), so
an older offline label never replaces a newer one; which judgment is follows the time it was
made (`judged_at`, kept from OTHER, migration 0028), so an older offline judgment never
replaces a newer one either, as judging in one database would have it; the verdicts in force
it changes are reported as an import's are (`calibrate.formats.verdict_changes`).

Because the newest decision wins, a time from a machine whose clock ran ahead would keep its row
in force over every later decision: a row (a decision or a judgment) dated more than
`calibrate.model.FUTURE_TOLERANCE` after this machine's clock is refused (`ahead_of_clock`, the
rule `import inspect` applies to an eval's time; not clamped: its real time is unknown, and a
made-up one could put it ahead of decisions taken since), and so is a time without a time zone.
Times are stored in UTC as the store writes them, so text order stays time order. Judgments are cleaned of
credentials on the way in (`calibrate.redact`: this environment's API key and base URL, and
anything shaped like a credential), so a key a server echoed into OTHER goes no further; the
report counts them.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from calibrate.formats import UPDATE_ADVICE, ImportFailed, check_item, verdict_changes
from calibrate.formats.inspect import merged_labels
from calibrate.kinds import LabelError
from calibrate.model import (
    ACTIONS,
    LABEL_ACTIONS,
    REVERT_ACTION,
    Item,
    NewItem,
    VerdictChange,
    ahead_of_clock,
)
from calibrate.redact import Redactor
from calibrate.store import JUDGMENT_COLUMNS, Store
from calibrate.templates import TemplateError, TemplateSet
from calibrate.validate import InputError, parse_json_value

BATCH = 1000
EXAMPLES = 20
JUDGMENT_STATUSES = ("verdict", "unparsed", "error")


class Refused(ValueError):
    """One row of OTHER that cannot be merged; the message says why."""


@dataclass
class MergeReport:
    added: Counter = field(default_factory=Counter)  # table -> rows added
    refused: Counter = field(default_factory=Counter)  # table -> rows refused
    redacted: int = 0  # judgments whose text had credentials blanked
    examples: list[str] = field(default_factory=list)  # the first EXAMPLES refusals, as "table uid: reason"
    left_behind: list[tuple[str, str]] = field(default_factory=list)  # (source id, annotator): labels added in
    # force on versions of items that `import --update` replaced here, which no longer count
    changed: list[VerdictChange] = field(default_factory=list)  # verdicts in force here the merged judgments changed

    def refuse(self, table: str, name: str, reason: str) -> None:
        self.refused[table] += 1
        if len(self.examples) < EXAMPLES:
            self.examples.append(f"{table} {name}: {reason}")


def merge_database(store: Store, other: Store, templates: TemplateSet) -> MergeReport:
    """Fold OTHER into `store`, blanking credentials out of its judgments (this environment's
    OPENAI_API_KEY and OPENAI_BASE_URL, and anything shaped like a credential)."""
    report = MergeReport()
    redact = Redactor.for_judge(os.environ.get("OPENAI_API_KEY"), os.environ.get("OPENAI_BASE_URL"))
    _merge_data_tasks(store, other, templates, report)
    _merge_items(store, other, templates, report)
    _merge_judgments(store, other, report, redact)
    _merge_annotations(store, other, templates, report)
    return report


def _left_behind(store: Store, labelled: set[tuple[int, str]]) -> list[tuple[str, str]]:
    """(source id, annotator) of the labels in force that the merge gave (item id, annotator)
    pairs of `labelled` on versions `import --update` has replaced here (merged, they do not count)."""
    replaced = store.replaced_versions(item_id for item_id, _ in labelled)
    return [(replaced[item_id], row["annotator"]) for item_id, rows in store.decisions(replaced).items()
            for row in rows if (item_id, row["annotator"]) in labelled]


def _batches(rows) -> Iterator[list]:
    batch = []
    for row in rows:
        batch.append(row)
        if len(batch) >= BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def _text(row, name: str, *, optional: bool = False) -> str | None:
    value = row[name]
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value.strip():
        raise Refused(f"{name} must be non-empty text, not {value!r}")
    return value


def _time(row, name: str = "created_at") -> str:
    """The row's time as the store writes it (UTC, microseconds); refused when it is not a
    time, has no time zone, or lies too far ahead of this machine's clock (`ahead_of_clock`)."""
    value = _text(row, name)
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise Refused(f"{name} {value!r} is not an ISO 8601 time") from None
    if moment.tzinfo is None:
        raise Refused(f"{name} {value!r} has no time zone, so it cannot be ordered")
    if (ahead := ahead_of_clock(moment)) is not None:
        raise Refused(f"{name} {value} {ahead}; it would stay in force over every later decision (check the clock "
                      "of the machine it came from, then decide that item again)")
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


def _number(row, name: str) -> float | None:
    value = row[name]
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise Refused(f"{name} must be a finite number, not {value!r}")
    return value


def _stored_item(row, items: dict[str, tuple[int, str, str, str]]) -> tuple[int, str, str, str]:
    """(id, task, lang, source id) here of the item a judgment or annotation row of OTHER belongs to."""
    if row["content_hash"] not in items:
        raise Refused("its item is not in this database (refused or missing)")
    return items[row["content_hash"]]


def _merge_data_tasks(store: Store, other: Store, templates: TemplateSet, report: MergeReport) -> None:
    """The tasks OTHER's imports brought with them (Inspect logs' tasks): their labels join the
    ones recorded here, so their items and labels can be checked and merged."""
    mine = {(task, lang): labels for task, lang, _, labels in store.data_tasks()}
    for task, lang, family, labels in other.data_tasks():
        try:
            merged = merged_labels(task, lang, mine.get((task, lang)), labels)
            templates.add_data_task(task, lang, family, merged)
        except (ImportFailed, TemplateError) as exc:
            report.refuse("task", f"{task} ({lang})", str(exc))
            continue
        store.set_data_task(task, lang, family, merged)


def _merge_items(store: Store, other: Store, templates: TemplateSet, report: MergeReport) -> None:
    for batch in _batches(other.item_rows()):
        accepted: list[tuple[int, str, NewItem]] = []  # (its id in OTHER, its name, the item)
        for row in batch:
            name = f"#{row['id']}"
            try:
                task, lang, source_id = _text(row, "task"), _text(row, "lang"), _text(row, "source_id")
                name = f"{task} ({lang}) {source_id}"
                fields = parse_json_value(_text(row, "fields"), "fields")
                if not isinstance(fields, dict):
                    raise Refused("fields must be a JSON object")
                system = row["system"]
                if not isinstance(system, str):
                    raise Refused(f"system must be text, not {system!r}")
                version = row["version"]
                if isinstance(version, bool) or not isinstance(version, int) or version < 1:
                    raise Refused(f"version must be a whole number from 1, not {version!r}")
                item = NewItem(task, lang, source_id, fields, _text(row, "reference", optional=True), system, version)
                check_item(templates, item)
                if item.content_hash != row["content_hash"]:
                    raise Refused("content_hash does not match the item's content")
            except (Refused, InputError, ValueError) as exc:
                report.refuse("item", name, str(exc))
                continue
            accepted.append((row["id"], name, item))
        if not accepted:
            continue
        with store.transaction():  # no import can take an identity between the check and the write
            conflicts = store.identity_conflicts([item for _, _, item in accepted])
            for _, name, item in accepted:
                if item.content_hash in conflicts:
                    report.refuse("item", name, _other_content(conflicts[item.content_hash], item))
            accepted = [row for row in accepted if row[2].content_hash not in conflicts]
            ids, added = store.add_items([item for _, _, item in accepted], with_ids=True)
            report.added["items"] += added
            for (other_id, _, _), item_id in zip(accepted, ids, strict=True):
                clips = other.audio_by_item(other_id).get(other_id)
                if clips:
                    store.set_item_audio(item_id, clips)


def _other_content(stored: Item, item: NewItem) -> str:
    """Why an item of OTHER is refused whose identity and version hold other content here, and
    what to do (as an import says of content that differs from the stored item's). Where only
    the fields each holds differ, not their values, the two imports read the same record
    differently (one took a field as the judge's output with an option): no version of either
    would ever match, so its labels come by `export` there and `import labels` here (which go by
    task, language, system and source id) and its judges' outputs by importing the file here as
    it was imported there; --update would leave this database's verdicts on the old version."""
    only_here = sorted(set(stored.fields) - set(item.fields))
    only_there = sorted(set(item.fields) - set(stored.fields))
    differing = sorted(k for k in set(stored.fields) & set(item.fields) if stored.fields[k] != item.fields[k])
    fields = "; ".join(f"{words} {', '.join(map(repr, names))}" for words, names in (
        ("fields only here:", only_here), ("fields only in the other database:", only_there),
        ("fields that differ:", differing)) if names)
    system = f", system {stored.system}" if stored.system else ""
    held = f"this database holds its version {stored.version}{system} with other content ({fields})"
    if not differing:
        return (f"{held}: the two imports read the same record differently (an option such as --judge-output or "
                "--reference-field in one and not the other?), so merging never joins them: bring its labels with "
                "`calibrate --db OTHER export --out labels.jsonl` and `calibrate import labels labels.jsonl` here (they "
                "go by task, language, system and source id), and its judges' outputs by importing its file here as "
                "it was imported there")
    return f"{held}: import the file the other database read it from here and {UPDATE_ADVICE}, then merge again"


def _merge_judgments(store: Store, other: Store, report: MergeReport, redact: Redactor) -> None:
    """Judgments by uid; notes the verdicts in force here they changed (as an import does),
    each from what was in force before the merge to what is after it."""
    changed: dict[tuple[int, str], VerdictChange] = {}
    for batch in _batches(other.judgment_rows()):
        items = store.items_by_hash(r["content_hash"] for r in batch if r["content_hash"])
        accepted = []
        for row in batch:
            name = str(row["uid"])
            try:
                uid = _text(row, "uid")
                item_id, _, _, _ = _stored_item(row, items)
                if row["status"] not in JUDGMENT_STATUSES:
                    raise Refused(f"status {row['status']!r} is not one of {', '.join(JUDGMENT_STATUSES)}")
                values = {c: row[c] for c in JUDGMENT_COLUMNS}
                values.update(uid=uid, item_id=item_id, judge_name=_text(row, "judge_name"),
                              judge_key=_text(row, "judge_key"), created_at=_time(row),
                              judged_at=_time(row, "judged_at") if row["judged_at"] else "")
                if row["status"] == "verdict":
                    _text(row, "verdict")
                parse_json_value(row["params"] or "{}", "params")
                for number in ("confidence", "latency_ms", "prompt_tokens", "completion_tokens"):
                    _number(row, number)
            except (Refused, InputError) as exc:
                report.refuse("judgment", name, str(exc))
                continue
            cleaned = redact.fields(values)
            report.redacted += cleaned != values
            accepted.append(cleaned)
        if not accepted:
            continue
        before = store.verdicts_in_force_of((row["item_id"], row["judge_name"]) for row in accepted)
        report.added["judgments"] += store.add_judgment_rows(accepted)
        sources = {item_id: source_id for item_id, _, _, source_id in items.values()}
        for pair, change in verdict_changes(store, before, sources).items():
            first = changed.get(pair)  # an earlier batch changed it: from what was in force before the merge
            changed[pair] = replace(change, before=first.before) if first else change
    report.changed = [change for change in changed.values() if change.before != change.after]


def _merge_annotations(store: Store, other: Store, templates: TemplateSet, report: MergeReport) -> None:
    labelled: set[tuple[int, str]] = set()  # (item id, annotator) of the label rows added
    for batch in _batches(other.annotation_rows()):
        items = store.items_by_hash(r["content_hash"] for r in batch if r["content_hash"])
        judgments = store.ids_by_uid("judgments", (r["judgment_uid"] for r in batch))
        reverted = store.ids_by_uid("annotations", (r["reverts_uid"] for r in batch))
        accepted, written = [], set()  # written: uids accepted earlier in this batch (an undo may name one)
        for row in batch:
            name = str(row["uid"])
            try:
                uid = _text(row, "uid")
                item_id, task, lang, _ = _stored_item(row, items)
                action = row["action"]
                if action not in ACTIONS:
                    raise Refused(f"action {action!r} is not one of {', '.join(ACTIONS)}")
                label = row["label"]
                if label is not None:
                    if action not in (*LABEL_ACTIONS, REVERT_ACTION):
                        raise Refused(f"a {action} row carries no label, but this one has {label!r}")
                    label = templates.for_task(task, lang).kind.normalize_label(label)
                elif action in LABEL_ACTIONS:
                    raise Refused(f"a {action} row needs a label")
                judgment_id = None
                if row["judgment_uid"] is not None:
                    if row["judgment_uid"] not in judgments:
                        raise Refused("the judgment it was made on is not in this database (refused or missing)")
                    judgment_id = judgments[row["judgment_uid"]]
                reverts_uid = None
                if action == REVERT_ACTION:
                    reverts_uid = row["reverts_uid"]
                    if reverts_uid not in reverted and reverts_uid not in written:
                        raise Refused("it reverts an annotation that is not in this database (refused or missing)")
                if row["blind"] not in (0, 1):
                    raise Refused(f"blind must be 0 or 1, not {row['blind']!r}")
                values = {
                    "uid": uid, "item_id": item_id, "judgment_id": judgment_id, "annotator": _text(row, "annotator"),
                    "action": action, "label": label, "reverts_uid": reverts_uid, "note": row["note"],
                    "blind": row["blind"], "seconds_spent": _number(row, "seconds_spent"), "created_at": _time(row),
                    "audio_plays": _number(row, "audio_plays"), "listened_seconds": _number(row, "listened_seconds"),
                    "c3_file_judge": _text(row, "c3_file_judge", optional=True),
                    "c3_file_text": _text(row, "c3_file_text", optional=True),
                }
                if values["note"] is not None and not isinstance(values["note"], str):
                    raise Refused("note must be text")
            except (Refused, LabelError, TemplateError) as exc:
                report.refuse("annotation", name, str(exc))
                continue
            accepted.append(values)
            written.add(uid)
        if accepted:
            added = store.add_annotation_rows(accepted)
            report.added["annotations"] += len(added)
            labelled.update((row["item_id"], row["annotator"]) for row in added if row["action"] in LABEL_ACTIONS)
    report.left_behind = _left_behind(store, labelled)
