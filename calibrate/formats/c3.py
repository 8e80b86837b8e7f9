"""The C3 benchmark's own file layout, both ways: `import c3`, `import c3-results` and `export c3`.

The reference tree (one JSON list per phenomenon) pairs with the spoken dialogue model's
response tree by list index; an item's source id is `<reference path without .json>/<index>`,
and its system is the spoken dialogue model that wrote the responses. The C3 evaluation
script's result files (same paths as the response folders, `.json`) carry the judge's raw
output in `check_answer`; they become judgments that point at the `c3-official` templates, the
prompt wording that script really sent. A result record also holds the content, the reference
and the system's answer, so result files alone create the items they judge. `export c3` writes
the same result files back, with the per-category statistics file C3's scoring script writes.
`c3_right` is C3's own scoring rule, the one definition of it in calibrate.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from calibrate.audio import probe_clip
from calibrate.formats import BadInput, ImportFailed, ItemRef, Progress, Record, read_json_list
from calibrate.gold import gold_label
from calibrate.judgments import render_for
from calibrate.model import NewItem
from calibrate.store import Store
from calibrate.templates import TemplateError, TemplateSet


@dataclass(frozen=True)
class C3Part:
    """One phenomenon file: which task it feeds and where its responses are."""

    task: str
    reference: str  # path of the reference list, relative to the language's text root
    responses: str  # folder of <i>.txt responses (and of the result file, + ".json")
    multi_turn: bool = False

    @property
    def source_prefix(self) -> str:
        return self.reference.removesuffix(".json")


_PHON = "ambiguity/phonological"
_CTX = "context-dependency"

# Context dependency has the same files in English and Chinese.
_CONTEXT_PARTS = (
    C3Part("c3/omission-detection", f"{_CTX}/omission.json", f"{_CTX}/omission-detection"),
    C3Part("c3/omission-completion", f"{_CTX}/omission.json", f"{_CTX}/omission-completion"),
    C3Part("c3/coreference-detection", f"{_CTX}/coreference.json", f"{_CTX}/coreference-detection"),
    C3Part("c3/coreference-resolution", f"{_CTX}/coreference.json", f"{_CTX}/coreference-resolution"),
    C3Part("c3/multi-turn", f"{_CTX}/multi-turn.json", f"{_CTX}/multi-turn", multi_turn=True),
)

C3_LAYOUT: dict[str, tuple[C3Part, ...]] = {
    "en": (
        C3Part("c3/generation", f"{_PHON}/generation.json", f"{_PHON}/generation"),
        C3Part("c3/heterograph", f"{_PHON}/heterograph.json", f"{_PHON}/heterograph"),
        C3Part("c3/pause", f"{_PHON}/pause.json", f"{_PHON}/pause"),
        C3Part("c3/stress", f"{_PHON}/stress.json", f"{_PHON}/stress"),
        C3Part("c3/intonation", f"{_PHON}/intonation.json", f"{_PHON}/intonation"),
        C3Part("c3/lexical", "ambiguity/semantic/lexical.json", "ambiguity/semantic/lexical"),
        C3Part("c3/syntactic", "ambiguity/semantic/syntactic.json", "ambiguity/semantic/syntactic"),
        *_CONTEXT_PARTS,
    ),
    "zh": (
        *(C3Part(f"c3/{p}", f"{_PHON}/{p}.json", f"{_PHON}/{p}") for p in ("pause", "heteronym", "heterograph", "tone")),
        *(
            C3Part(f"c3/generation-{p}", f"{_PHON}/generation/{p}.json", f"{_PHON}/generation/{p}")
            for p in ("pause", "heteronym", "tone")
        ),
        C3Part("c3/semantic", "ambiguity/semantic.json", "ambiguity/semantic"),
        *_CONTEXT_PARTS,
    ),
}


def _read_text(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ImportFailed(f"{path}: not UTF-8 ({exc.reason} at byte {exc.start})") from None


def _numbered(folder: Path, suffix: str = ".txt") -> list[Path]:
    """<0..n-1><suffix> in a folder, failing if the numbering has a gap."""
    names = sorted(
        (p for p in folder.iterdir() if (p.suffix == suffix or (not suffix and p.is_dir())) and p.stem.isdigit()),
        key=lambda p: int(p.stem),
    )
    for expected, path in enumerate(names):
        if int(path.stem) != expected:
            raise ImportFailed(f"{folder}: response {expected}{suffix} is missing (found {path.name})")
    return names


def _responses(part: C3Part, responses_root: Path, count: int) -> list:
    folder = responses_root / part.responses
    if not folder.is_dir():
        raise ImportFailed(f"{folder}: response folder is missing for {part.reference} ({count} items)")
    files = _numbered(folder, "" if part.multi_turn else ".txt")
    if len(files) != count:
        kind = "dialogue folders" if part.multi_turn else "response files"
        raise ImportFailed(
            f"{folder}: {len(files)} {kind} but {part.reference} lists {count} items; "
            "responses pair with the reference by index, so the counts must match"
        )
    if part.multi_turn:
        return [[_read_text(p) for p in _numbered(d)] for d in files]
    return [_read_text(p) for p in files]


def _fields(part: C3Part, lang: str, entry, response, where: str) -> dict | BadInput:
    if part.multi_turn:
        turns = entry if lang == "en" else (entry.get("history") if isinstance(entry, dict) else None)
        if not isinstance(turns, list) or not all(isinstance(t, str) for t in turns):
            what = "a list of user turns" if lang == "en" else "an object with a 'history' list"
            return BadInput(where, f"expected {what}")
        expected = len(turns) + (1 if lang == "zh" else 0)
        if len(response) != expected:
            return BadInput(where, f"dialogue has {expected} user turns but {len(response)} response files")
        if lang == "en":
            return {"turns": turns, "response": response}
        return {**entry, "response": response}
    if not isinstance(entry, dict):
        return BadInput(where, f"expected a JSON object, got {type(entry).__name__}")
    return {**entry, "response": response}


def _audio(part: C3Part, responses_root: Path, index: int, turns: int) -> tuple:
    """The .wav beside each response .txt (one per turn for a dialogue), relative to the root."""
    folder = f"{part.responses}/{index}"
    if part.multi_turn:
        return tuple(probe_clip(f"turn {t + 1}", responses_root, f"{folder}/{t}.wav") for t in range(turns))
    return (probe_clip("response", responses_root, f"{folder}.wav"),)


def c3_parts(reference_root: Path, lang: str) -> list[C3Part]:
    """The phenomena whose reference file exists under `reference_root`."""
    reference_root = Path(reference_root)
    if lang not in C3_LAYOUT:
        raise ImportFailed(f"unknown language {lang!r}: C3 has en and zh")
    if not reference_root.is_dir():
        raise ImportFailed(f"{reference_root}: not a folder")
    parts = [p for p in C3_LAYOUT[lang] if (reference_root / p.reference).is_file()]
    if not parts:
        raise ImportFailed(f"{reference_root}: no C3 {lang} reference files found (e.g. {C3_LAYOUT[lang][1].reference})")
    return parts


def c3_records(
    reference_root: Path, responses_root: Path, lang: str, progress: Progress | None = None, system: str | None = None
) -> Iterator[Record | BadInput]:
    """Items of every phenomenon whose reference file exists under `reference_root`, the
    responses of `system` (default: the response folder's name), each with the audio beside its
    response (probed, or the reason it is missing); `progress` is told of each phenomenon file
    done."""
    reference_root, responses_root = Path(reference_root), Path(responses_root)
    parts = c3_parts(reference_root, lang)
    if not responses_root.is_dir():
        raise ImportFailed(f"{responses_root}: not a folder")
    system = default_system(responses_root) if system is None else system
    for part in parts:
        entries = read_json_list(reference_root / part.reference)
        responses = _responses(part, responses_root, len(entries))
        for index, (entry, response) in enumerate(zip(entries, responses, strict=True)):
            where = f"{reference_root / part.reference}[{index}]"
            fields = _fields(part, lang, entry, response, where)
            if isinstance(fields, BadInput):
                yield fields
                continue
            audio = _audio(part, responses_root, index, len(response) if part.multi_turn else 1)
            yield Record(NewItem(part.task, lang, f"{part.source_prefix}/{index}", fields, system=system), where,
                         audio=audio)
        if progress:
            progress(1)


LANGUAGE_FOLDERS = {"english", "chinese", "en", "zh"}


def default_system(folder: Path) -> str:
    """The system a response or result tree belongs to when the user names none: the folder's
    name (of the resolved path, so `.` names the current folder), or the name of the folder
    above it when it is a language folder (`my-sdm/english` is my-sdm's, as C3 lays out a
    model's responses)."""
    folder = Path(folder).resolve()
    return folder.parent.name if folder.name.casefold() in LANGUAGE_FOLDERS else folder.name


C3_RESULTS_FAMILY = "c3-official"
C3_ANSWER_SPLIT = {"en": ("The answer is: ", "the answer is: "), "zh": ("最终答案为：",)}
C3_RIGHT_START = {"en": ("Yes", "yes"), "zh": ("是",)}


def c3_right(check_answer: str | None, lang: str) -> bool:
    """C3's own scoring rule, as its evaluation and statistics scripts apply it: split the
    judge's output on "The answer is: " / "the answer is: " (Chinese "最终答案为："), and the
    response is right iff the last piece starts with "Yes"/"yes" ("是"). Everything else is
    wrong: a bold "**yes**", a full-width or space-less colon, an empty output (a failed call).
    calibrate's own parser is more tolerant; `calibrate scores` shows both."""
    text = check_answer or ""
    for marker in C3_ANSWER_SPLIT[lang][1:]:
        text = text.replace(marker, C3_ANSWER_SPLIT[lang][0])
    return text.split(C3_ANSWER_SPLIT[lang][0])[-1].startswith(C3_RIGHT_START[lang])


def c3_result_parts(results_root: Path, lang: str) -> list[C3Part]:
    """The judged phenomena whose result file exists under `results_root` (generation result
    files carry no judge output)."""
    results_root = Path(results_root)
    if lang not in C3_LAYOUT:
        raise ImportFailed(f"unknown language {lang!r}: C3 has en and zh")
    if not results_root.is_dir():
        raise ImportFailed(f"{results_root}: not a folder")
    parts = [p for p in C3_LAYOUT[lang] if (results_root / f"{p.responses}.json").is_file()]
    if not parts:
        raise ImportFailed(f"{results_root}: no C3 {lang} result files found (e.g. {C3_LAYOUT[lang][1].responses}.json)")
    return [p for p in parts if "generation" not in p.task]


def c3_result_records(
    results_root: Path, lang: str, judge_name: str, progress: Progress | None = None, system: str | None = None
) -> Iterator[Record | BadInput]:
    """Judgments from the C3 script's result files, for the responses of `system` (default:
    the results folder's name). Each is aimed at the item of the same task, language, system
    and source id when it is stored (its 'answer' must be that item's response), else it
    creates the item from the record's content, reference and answer."""
    results_root = Path(results_root)
    system = default_system(results_root) if system is None else system
    for part in c3_result_parts(results_root, lang):
        path = results_root / f"{part.responses}.json"
        for index, record in enumerate(read_json_list(path)):
            where = f"{path}[{index}]"
            if not isinstance(record, dict) or "check_answer" not in record:
                yield BadInput(where, "expected an object with 'check_answer'")
                continue
            output = record["check_answer"]
            if not isinstance(output, str):
                yield BadInput(where, "'check_answer' must be text")
                continue
            answer = record.get("answer")
            expect = {"response": answer} if not part.multi_turn and isinstance(answer, str) else {}
            source_id = f"{part.source_prefix}/{index}"
            item = _item_from_result(part, lang, record, source_id, system)
            if isinstance(item, str):
                yield BadInput(where, item)
                continue
            yield Record(
                item,
                where,
                ref=ItemRef(part.task, lang, source_id, expect,
                            "multi-turn result files hold only the rendered dialogue: import the C3 tree first "
                            "(calibrate import c3)", system),
                judge_output=output if output else None,
                judge_name=judge_name,
                template_family=C3_RESULTS_FAMILY,
                judge_params={"source": "c3-results"},
                judge_error=None if output else "empty check_answer: the C3 script's judge call failed five times",
            )
        if progress:
            progress(1)


def c3_systems(store: Store, lang: str) -> list[str]:
    """The systems with C3 items in this language."""
    return sorted({s for part in C3_LAYOUT[lang] for s in store.systems(task=part.task, lang=lang)} - {""})


def _item_from_result(part: C3Part, lang: str, record: dict, source_id: str, system: str) -> NewItem | str | None:
    """The item a result record judges, rebuilt from its fields (the inverse of `_c3_record`),
    or what is missing; None for multi-turn records, whose dialogue is only there rendered.
    Fields the task's template needs are checked by the import, against the template."""
    if part.multi_turn:
        return None
    answer = record.get("answer")
    if not isinstance(answer, str):
        return "missing field 'answer' (the system's response)"
    fields = {k: v for k, v in record.items() if k not in ("answer", "check_answer")}
    if lang == "zh" and part.source_prefix.startswith(_CTX):
        content = fields.pop("content", None)
        if not isinstance(content, str):
            return "missing field 'content' (the dialogue history)"
        fields["history"] = content.splitlines()
        annotation = fields.pop("annotation", None)
        if annotation is not None:
            fields["omission_complete" if "omission" in part.task else "coreference_complete"] = annotation
    elif "correct_answer" in fields:
        fields["answer"] = fields.pop("correct_answer")
    return NewItem(part.task, lang, source_id, {**fields, "response": answer}, system=system)


def export_c3(
    store: Store, templates: TemplateSet, lang: str, out_dir: Path, judge: str | None, system: str = ""
) -> dict[str, list[dict]]:
    """Result files in C3's layout (the paths its script writes) for one system's items;
    returns the records written per file (relative path). Judged phenomena carry the judge's
    raw output in check_answer; generation items carry the consolidated human label in C3's
    exact verdict wording ("" when nobody labelled them)."""
    out_dir = Path(out_dir)
    raw = store.latest_raw_outputs(judge) if judge else {}
    labels: dict[int, dict[str, str]] = {}
    for row in store.current_labels():
        labels.setdefault(row["item_id"], {})[row["annotator"]] = row["label"]
    written: dict[str, list[dict]] = {}
    for part in C3_LAYOUT[lang]:
        index = store.source_index(part.task, lang, system)
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
                gold, _ = gold_label(labels.get(item_id, {}))
                check = templates.for_task(part.task, lang).kind.c3_wording(gold)
            else:
                check = raw.get(item_id) or ""
            records.append(_c3_record(item, part, lang, check, templates))
        path = out_dir / f"{part.responses}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(records, ensure_ascii=False, indent=4), encoding="utf-8")
        written[str(path.relative_to(out_dir))] = records
    return written


C3_LANGUAGE_NAMES = {"en": "english", "zh": "chinese"}


def c3_statistics(
    results: dict[str, dict[str, list[dict]]], lang: str, corrected: dict[str, dict]
) -> dict[str, list[dict]]:
    """C3's statistics files for result files `results` (judge -> relative path -> records),
    keyed as its process_results.py writes them, per judge key (C3 calls its judges dpsk and
    gpt): `combined_<language>_statistic.json`, a list of {"data_id": "/<path>/<index>",
    <judge>: "right" | "wrong"}, and `<language>_result_data.json`, a list of {"category",
    <judge>_correct, "total", <judge>_accuracy} (accuracies rounded to 4 places), "overall"
    first. Beside C3's keys each category gets calibrate's corrected accuracy from `corrected`
    (category -> {"corrected_accuracy", "corrected_ci", "corrected_note", ...})."""
    judges = list(results)
    combined: dict[str, dict] = {}
    categories: dict[str, dict[str, int]] = {}
    for judge, files in results.items():
        for rel, records in files.items():
            category = "/" + rel.removesuffix(".json")
            counts = categories.setdefault(category, {})
            for index, record in enumerate(records):
                right = c3_right(record.get("check_answer"), lang)
                combined.setdefault(f"{category}/{index}", {"data_id": f"{category}/{index}"})[judge] = (
                    "right" if right else "wrong")
                counts[judge] = counts.get(judge, 0) + right
                counts[f"{judge}:total"] = counts.get(f"{judge}:total", 0) + 1

    def entry(name: str, counts: dict[str, int]) -> dict:
        total = max((counts.get(f"{j}:total", 0) for j in judges), default=0)
        row: dict = {"category": name}
        row.update({f"{j}_correct": counts.get(j, 0) for j in judges})
        row["total"] = total
        row.update({f"{j}_accuracy": round(counts.get(j, 0) / total, 4) if total else 0.0 for j in judges})
        row.update(corrected.get(name, {}))
        return row

    overall: dict[str, int] = {}
    for counts in categories.values():
        for key, n in counts.items():
            overall[key] = overall.get(key, 0) + n
    name = C3_LANGUAGE_NAMES[lang]
    return {
        f"combined_{name}_statistic.json": list(combined.values()),
        f"{name}_result_data.json": [entry("overall", overall)] + [entry(c, n) for c, n in categories.items()],
    }


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



def c3_corrected(per_task, overall, lang: str, judges: list[str]) -> dict[str, dict]:
    """Per C3 category ("/<result path>" or "overall"): calibrate's corrected accuracy of the
    exported `judges` (their mean when several, as C3's final score), for `c3_statistics`.
    `per_task` and `overall` are one system's `calibrate scores` cells (ScoreCell), cut by task
    and language and by language alone."""
    categories = {part.task: "/" + part.responses for part in C3_LAYOUT[lang]}
    named = [(categories[c.task], c) for c in per_task if c.lang == lang and c.task in categories]
    named += [("overall", c) for c in overall if c.lang == lang]
    out: dict[str, dict] = {}
    for name, cell in named:
        chosen = [j for j in cell.judges if j.judge in judges]
        if len(judges) > 1 and cell.final is not None:
            estimate = cell.final.corrected
        elif len(chosen) == 1:
            estimate = chosen[0].corrected
        else:
            continue
        out[name] = {
            "corrected_accuracy": round(estimate.value, 4) if estimate.value is not None else None,
            "corrected_ci": [round(v, 4) for v in estimate.ci] if estimate.ci else None,
            "corrected_note": estimate.reason,
            "people_accuracy": round(cell.people.value, 4) if cell.people.value is not None else None,
            "labelled": cell.labelled,
        }
    return out
