"""The C3 benchmark's own file layout (`C3_LAYOUT`) and its result files, both ways: `import
c3-results` and `export c3` (the reference and response trees, `import c3`, are read in
`calibrate.formats.c3_tree`).

An item's source id is `<reference path without .json>/<index>`, and its system is the spoken
dialogue model that wrote the responses. The C3 evaluation script's result files (same paths as
the response folders, `.json`) carry the judge's raw output in `check_answer`; they become
judgments that point at the `c3-official` templates, the prompt wording that script really sent. That script
skips a record whose notation (English omission) or first turn (multi-turn) is already in its
results, so a record is matched to its item by what it holds (`ContentRef`), never by its
position; those items are `c3_passed_over`, and no C3 figure counts them. Generation records
are people's decisions: a filled `check_answer` becomes a person's label, stored with the judge
whose file held it (annotations.c3_file_judge; a note says so to people). One label per item is
in force; `c3_file_decisions` gives each judge's own, which C3 counts. An empty one waits for a
person. A result record also holds the content, the reference and the system's answer, so
result files alone create the items they judge (numbered in record order). `export c3` writes the same result files back, one folder per
judge, with the statistics files C3's scoring script writes in a folder of their own
(`calibrate.formats.c3_figures`).
`c3_right` is C3's own scoring rule, the one definition of it in calibrate.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from calibrate.formats import (
    BadInput,
    ContentRef,
    ImportFailed,
    Progress,
    Record,
    read_json_list,
)
from calibrate.gold import gold_label
from calibrate.judgments import render_for
from calibrate.kinds import POSITIVE, VerdictKind
from calibrate.model import Item, NewItem, counted, no_output
from calibrate.names import listing
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

    @property
    def people_decide(self) -> bool:
        """A generation phenomenon: no judge prompt, people decide by listening."""
        return "generation" in self.task

    def resume_key(self, lang: str) -> str | None:
        """The result record's key by which C3's evaluate.py passes over a record whose value is
        in its results already (as it resumes an interrupted run): the notation of English
        omission, the first user turn (`annotation`) of a dialogue in both languages; None where
        it writes every record."""
        if self.multi_turn:
            return "annotation"
        return "notation" if lang == "en" and "omission" in self.task else None

    def resume_value(self, lang: str, fields: dict) -> str:
        """An item's value under `resume_key`, from its fields (as JSON text, to compare): what
        its result record would hold there."""
        if self.multi_turn:
            turns = fields.get("turns") if lang == "en" else fields.get("history")
            value = turns[0] if isinstance(turns, list) and turns else None
        else:
            value = fields.get("notation")
        return json.dumps(value, sort_keys=True, ensure_ascii=False)


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


C3_LAYOUT_FOLDERS = {"txt", "english", "chinese", "en", "zh"}
"""Folder names of C3's own layout, which never name a model (see `default_system`)."""


def default_system(folder: Path, what: str, judge: str | None = None) -> tuple[str, str]:
    """The system a response or result tree belongs to when the user names none, and where the
    name came from, for the import summary (`what`: "responses" or "results"). C3's
    EvaluationUsage keeps a model's answers in `Mooer-Omni/english/txt` and a judge's results of
    them in `Mooer-Omni/gpt-4o/english`, so the name is that of the folder above the ones of
    C3's layout (`C3_LAYOUT_FOLDERS`: `txt`, a language folder) and, for a result tree of
    `judge`, above a folder named after the judge; else the folder's own name (of the resolved
    path, so `.` names the current folder)."""
    folder = Path(folder).resolve()
    passed: list[str] = []
    while folder.parent.name and (folder.name.casefold() in C3_LAYOUT_FOLDERS or folder.name == judge):
        passed.insert(0, folder.name)
        folder = folder.parent
    return folder.name, f"the folder above {'/'.join(passed)} in C3's layout" if passed else f"the {what}' folder"


C3_RESULTS_FAMILY = "c3-official"
C3_ANSWER_SPLIT = {"en": ("The answer is: ", "the answer is: "), "zh": ("最终答案为：",)}
C3_RIGHT_START = {"en": ("Yes", "yes"), "zh": ("是",)}
C3_RESULT_ANNOTATOR = "c3-result-file"
"""Who the people's verdicts in generation result files are stored as, unless told otherwise."""
C3_FILE_NOTE = "in the C3 result files of judge "
"""The note, followed by the judge's name, on a people's verdict imported from a judge's
generation result file, which tells a reader where the decision came from; the code reads the
judge from annotations.c3_file_judge, and the file's own words of the decision, where they are
not C3's, from annotations.c3_file_text (`c3_file_decisions`)."""


def c3_right(check_answer: str | None, lang: str) -> bool:
    """C3's own scoring rule, as its process_results.py applies it: the response is right iff,
    for one of the markers "The answer is: " / "the answer is: " (Chinese "最终答案为："), the
    output holds the marker and the piece after its last occurrence starts with "Yes"/"yes"
    ("是"). Everything else is wrong: no marker, a bold "**yes**", a full-width or space-less
    colon, an empty output (a failed call). calibrate's own parser is more tolerant; `calibrate
    scores` shows both. No marker overlaps itself (none begins with its own ending), so the piece
    after the last one `str.split` finds starts at the marker's last occurrence (`str.rfind`)."""
    text = check_answer or ""
    start = C3_RIGHT_START[lang]
    for marker in C3_ANSWER_SPLIT[lang]:
        at = text.rfind(marker)
        if at >= 0 and text.startswith(start, at + len(marker)):
            return True
    return False


@dataclass(frozen=True)
class FileDecision:
    """A people's verdict on a generation item as one judge's C3 result files hold it, and the
    judge whose files decided the result-file label in force (calibrate keeps one per item and
    annotator: the file imported last decides it; None: not from a result file)."""

    source_id: str
    label: str
    in_force: str | None  # the result-file annotator's label in force
    standing: str | None
    written: str | None = None  # the file's check_answer where it is not C3's own wording of `label`


@dataclass(frozen=True)
class OwnDecisions:
    """One judge's own generation decisions in one cell, as its result files held them (item id
    -> FileDecision; empty where its files were imported by an earlier calibrate, which recorded
    no judge): what C3's process_results.py counts for that judge."""

    decisions: dict[int, FileDecision]

    def of(self, item_id: int, source_id: str, gold: str | None) -> tuple[str | None, str | None]:
        """(the decision C3 counts for this judge on the item, a note where it differs from `gold`,
        the label the figures take otherwise): its file's decision; none (wrong, as C3 counts an
        empty check_answer) for an item its files left undecided while they decided others; the
        gold label where no decision of its files is known."""
        if not self.decisions:
            return gold, None
        found = self.decisions.get(item_id)
        label = found.label if found else None
        if label == gold:
            return label, None
        whose = f" from {found.standing}'s files" if found and found.standing and gold == found.in_force else ""
        there = label if label is not None else "left undecided"
        return label, f"{source_id}: {there} there, {gold or 'none'} in force{whose}"

    def written(self, item_id: int, label: str | None) -> str | None:
        """The judge's own file's text of its decision `label` on the item, where it was not
        C3's own wording (`The answer is: Yes.`), so that an export gives it back as it was."""
        found = self.decisions.get(item_id)
        return found.written if found and found.label == label else None


def c3_file_decisions(store: Store, task: str, lang: str, system: str) -> dict[str, dict[int, FileDecision]]:
    """Per judge, the people's verdicts on one cell's generation items as its own C3 result
    files held them (the labels stored with that judge at import, `Store.c3_file_labels`), by
    item id: what C3's process_results.py counts for that judge, which `export c3` writes back
    into that judge's files and `scores`' C3-rule column counts, where judges' files decided an
    item otherwise. Labels imported without a judge (by a calibrate that noted none) have no
    judge here: the label in force is then all there is."""
    found: dict[str, dict[int, FileDecision]] = {}
    for item_id, source_id, _, judge, label, in_force, standing, written in store.c3_file_labels(
            task=task, lang=lang, system=system):
        found.setdefault(judge, {})[item_id] = FileDecision(source_id, label, in_force, standing, written)
    return found


def c3_parts_under(root: Path, lang: str, file_of: Callable[[C3Part], str], what: str) -> list[C3Part]:
    """The phenomena of `lang` whose file (`file_of`: its path under `root`) exists under
    `root`; an error naming the folder where it is none, or no folder, or `lang` is no C3
    language (`what`: the files' kind, for the message)."""
    root = Path(root)
    if lang not in C3_LAYOUT:
        raise ImportFailed(f"unknown language {lang!r}: C3 has en and zh")
    if not root.is_dir():
        raise ImportFailed(f"{root}: {'not a folder' if root.exists() else 'no such folder'}")
    parts = [p for p in C3_LAYOUT[lang] if (root / file_of(p)).is_file()]
    if not parts:
        raise ImportFailed(f"{root}: no C3 {lang} {what} files found (e.g. {file_of(C3_LAYOUT[lang][1])})")
    return parts


def c3_result_parts(results_root: Path, lang: str) -> list[C3Part]:
    """The phenomena whose result file exists under `results_root`."""
    return c3_parts_under(results_root, lang, lambda part: f"{part.responses}.json", "result")


@cache
def c3_record_keys(part: C3Part, lang: str) -> tuple[str, ...]:
    """The keys of a C3 result record of this phenomenon, in the order evaluate.py writes them
    (worked out once per phenomenon: an export asks for each of its records)."""
    if part.multi_turn:
        return ("content", "annotation", "check_answer")
    if part.task == "c3/generation-tone":
        return ("content", "annotation", "check_answer")  # the script writes no answer for this one
    if lang == "zh":
        annotated = part.task.endswith(("completion", "resolution")) or not part.source_prefix.startswith(_CTX)
        return ("content", *(("annotation",) if annotated else ()), "answer", "check_answer")
    middle = {"c3/heterograph": ("notation", "problem"), "c3/coreference-resolution": ("problem", "correct_answer"),
              "c3/coreference-detection": ()}.get(part.task, ("notation",))
    return ("content", *middle, "answer", "check_answer")


def c3_result_records(
    results_root: Path, lang: str, judge_name: str, templates: TemplateSet, progress: Progress | None = None,
    system: str | None = None, annotator: str = C3_RESULT_ANNOTATOR, notes: list[str] | None = None,
) -> Iterator[Record | BadInput]:
    """Judgments and people's labels from the C3 script's result files, for the responses of
    `system` (default: `default_system`).

    A record is matched to the stored item of its task, language and system that holds the
    same values (`ContentRef`: content with notation, annotation, problem or reference answer;
    the first turn for a dialogue), and must then hold that item's response (`answer`; the
    rendered dialogue for multi-turn). When no item of that task is stored yet, the record
    creates it from its content, reference and answer. Judged phenomena give a judgment from
    `check_answer` (an empty one is an error: the script's judge call failed); generation
    phenomena give `annotator`'s label from a filled `check_answer` (stored with the
    judge, and the file's text where it is not C3's own wording), and an empty one leaves
    the item waiting for a person. A file holding an empty list (an export's of a phenomenon
    the judge judged none of) has no records; it and a file starting with a UTF-8 byte-order
    mark, which C3's process_results.py cannot read, are said in `notes`."""
    results_root = Path(results_root)
    system = default_system(results_root, "results")[0] if system is None else system
    empty: list[str] = []
    for part in c3_result_parts(results_root, lang):
        path = results_root / f"{part.responses}.json"
        keys = c3_record_keys(part, lang)
        response_key = "content" if part.multi_turn else None if part.people_decide and lang == "zh" else "answer"
        kind = templates.for_task(part.task, lang).kind
        view = _viewer(part, lang, templates)
        records = read_json_list(path, empty_ok=True)
        with path.open("rb") as handle:
            bom = handle.read(len(codecs.BOM_UTF8)) == codecs.BOM_UTF8
        if notes is not None and bom:
            notes.append(f"{path}: starts with a UTF-8 byte-order mark (as Windows editors save): read here, but C3's "
                         "process_results.py cannot read it and leaves the file out, so its figures on these result "
                         "files leave out these records (save the file as UTF-8 without BOM)")
        if not records:
            empty.append(str(path))
            if notes is not None:
                notes.append(f"{path}: an empty list, no records: {judge_name} judged none of its items")
        for index, record in enumerate(records):
            where = f"{path}[{index}]"
            if not isinstance(record, dict) or "check_answer" not in record:
                yield BadInput(where, "expected an object with 'check_answer'")
                continue
            missing = [k for k in keys if k not in record]
            if missing:
                yield BadInput(where, f"missing field {missing[0]!r} (C3 writes {', '.join(keys)} for {part.responses})"
                               + _other_language(record, lang))
                continue
            output = record["check_answer"]
            if not isinstance(output, str):
                yield BadInput(where, "'check_answer' must be text")
                continue
            item = _item_from_result(part, lang, record, f"{part.source_prefix}/{index}", system)
            if isinstance(item, str):
                yield BadInput(where, item)
                continue
            identify = {k: record[k] for k in keys if k not in ("check_answer", response_key)}
            ref = ContentRef(part.task, lang, system, identify, {response_key: record[response_key]} if response_key else {},
                             view, str(path), "multi-turn result files hold only the rendered dialogue: import the "
                             "C3 tree first (calibrate import c3)", _made_from_results)
            if part.people_decide:
                label, problem = (None, None) if no_output(output) else _person_label(output, kind, lang)
                labels = ((annotator, label),) if label is not None else ()
                noted = ((annotator, C3_FILE_NOTE + judge_name),) if labels else ()
                # the file's own words of the decision, where they are not C3's: `export c3` gives them back
                words = output if label is not None and output != kind.c3_wording(label) else None
                yield BadInput(where, problem) if problem else Record(item, where, ref=ref, labels=labels, notes=noted,
                                                                      c3_file_judge=judge_name, c3_file_text=words)
                continue
            yield Record(
                item,
                where,
                ref=ref,
                judge_output=None if no_output(output) else output,
                judge_name=judge_name,
                template_family=C3_RESULTS_FAMILY,
                judge_params={"source": "c3-results"},
                judge_error=("check_answer holds no text: the C3 script's judge call failed five times, or the judge "
                             "answered only whitespace") if no_output(output) else None,
            )
        if progress:
            progress(1)
    if empty and len(empty) == len(c3_result_parts(results_root, lang)):
        raise ImportFailed(f"{listing(empty, 3)}: {'an empty list' if len(empty) == 1 else 'each an empty list'}, no "
                           "records: nothing was imported")


def _other_language(record: dict, lang: str) -> str:
    """The hint of a record holding the other language's reference key (English `notation`,
    Chinese `annotation`): the files are of the other language, or '' where it does not."""
    other = "en" if lang == "zh" else "zh"
    mine, theirs = ("annotation", "notation") if lang == "zh" else ("notation", "annotation")
    if theirs in record and mine not in record:
        name = C3_LANGUAGE_NAMES[other].capitalize()
        return f"; it has {theirs!r}, as C3's {name} result files have: if these are {name} results, use --lang {other}"
    return ""


def _made_from_results(store: Store, items: list[Item]) -> str | None:
    """Why a result record matches none of a cell's items when they were all made from result
    files (`import c3-results` without the C3 tree): each judge's files hold only the records of
    the items it judged, so a second judge's record of an item the first did not judge finds
    none; None when the tree made them."""
    sources = store.import_sources(item.id for item in items)
    if not sources or not all(source.startswith("calibrate import c3-results") for source in sources):
        return None
    return (f"the {counted(len(items), 'item')} of that cell {'was' if len(items) == 1 else 'were'} made from the "
            "records of earlier result files "
            f"({listing([source.removeprefix('calibrate ') for source in sources], 2)}), which hold only what their judge "
            "judged, not from the C3 tree: import the C3 tree first (calibrate import c3), into a fresh database, then "
            "each judge's result files")


def _person_label(check_answer: str, kind: VerdictKind, lang: str) -> tuple[str | None, str | None]:
    """(label, None) for a person's verdict written into a generation record, as a label of
    the task's kind; (None, why not) for a text that is no verdict, or one C3's own scoring
    rule reads the other way."""
    verdict = kind.parse(check_answer)
    wording = " or ".join(repr(kind.c3_wording(label)) for label in kind.labels)
    if not verdict.parsed:
        return None, f"check_answer {check_answer!r} is not a person's verdict: write {wording}"
    if (kind.polarity(verdict.value) == POSITIVE) != c3_right(check_answer, lang):
        return None, (f"check_answer {check_answer!r} reads {verdict.value!r} to calibrate but the other way to "
                      f"C3's scoring script: write {wording}")
    return verdict.value, None


def _viewer(part: C3Part, lang: str, templates: TemplateSet):
    """A stored item as the C3 script writes its record (without check_answer)."""
    return lambda item: _c3_record(item, part, lang, "", templates)


def c3_systems(store: Store, lang: str) -> list[str]:
    """The systems with C3 items in this language: the cells found by index seeks, each
    system confirmed by one of its current items (`Store.task_langs`)."""
    tasks = {part.task for part in C3_LAYOUT[lang]}
    candidates = {system for task, _, system in store.cells(lang=lang) if task in tasks} - {""}
    return sorted(system for system in candidates
                  if any(task in tasks and found == lang for task, found in store.task_langs(system=system)))


@dataclass(frozen=True)
class PassedOver:
    """The cell of an item C3's evaluate.py passes over (`c3_passed_over`), and the source id
    of the earlier item whose notation or first turn it repeats."""

    task: str
    lang: str
    repeats: str


def c3_passed_over(store: Store, *, lang: str | None = None, system: str | None = None,
                   task: str | None = None) -> dict[int, PassedOver]:
    """The current C3 items that C3's evaluate.py passes over, by item id: an item whose
    `C3Part.resume_value` an item before it in its file holds (lower index, same task, language
    and system), as that script, going through the file in order, finds that value in its
    results already and writes no record (English omission's notation, a dialogue's first turn). The one definition of "C3 skips this item": `export c3`
    writes no record for these items, `judge` does not ask them and `scores` leaves their
    verdicts out, so every C3 figure counts what C3's own run counts. Of `lang`, `system` and
    `task` where given."""
    found: dict[int, PassedOver] = {}
    for code in [lang] if lang else list(C3_LAYOUT):
        for part in C3_LAYOUT.get(code, ()):
            if part.resume_key(code) is None or task not in (None, part.task):
                continue
            indexed = []
            for item in store.iter_items(task=part.task, lang=code, system=system):
                prefix, _, index = item.source_id.rpartition("/")
                if prefix == part.source_prefix and index.isdigit():
                    indexed.append((int(index), item))
            seen: dict[tuple[str, str], str] = {}
            for _, item in sorted(indexed, key=lambda entry: entry[0]):
                value = (item.system, part.resume_value(code, item.fields))
                if value in seen:
                    found[item.id] = PassedOver(part.task, code, seen[value])
                seen.setdefault(value, item.source_id)
    return found


def _item_from_result(part: C3Part, lang: str, record: dict, source_id: str, system: str) -> NewItem | str | None:
    """The item a result record judges, rebuilt from its fields (the inverse of `_c3_record`),
    for result files read without the C3 tree; None for multi-turn records, whose dialogue is
    only there rendered. Fields the task's template needs are checked by the import, against
    the template."""
    if part.multi_turn:
        return None
    fields = {k: v for k, v in record.items() if k != "check_answer"}
    if not (lang == "zh" and part.people_decide):
        answer = fields.pop("answer", None)
        if not isinstance(answer, str):
            return "'answer' (the system's response) must be text"
        fields["response"] = answer
    if lang == "zh" and part.source_prefix.startswith(_CTX):
        content = fields.pop("content", None)
        if not isinstance(content, str):
            return "'content' (the dialogue history) must be text"
        # the script writes each history line followed by "\n"; a line may hold U+2028 itself
        fields["history"] = content.removesuffix("\n").split("\n")
        annotation = fields.pop("annotation", None)
        if annotation is not None:
            fields["omission_complete" if "omission" in part.task else "coreference_complete"] = annotation
    elif "correct_answer" in fields:
        fields["answer"] = fields.pop("correct_answer")
    return NewItem(part.task, lang, source_id, fields, system=system)


def export_c3(
    store: Store, templates: TemplateSet, lang: str, out_dir: Path, judge: str | None, system: str = ""
) -> tuple[dict[str, list[dict]], dict[str, int], dict[str, int], dict[str, list[str]]]:
    """Result files in C3's layout (the paths and record keys its script writes) for one
    system's items: (the records written per file, relative path; per file, the items left out
    because `judge` has not judged them; per file, the items left out because C3's evaluate.py
    would not have written them; per file, the generation decisions written as `judge`'s own
    result files held them where the label in force differs, in `OwnDecisions.of` words). Judged phenomena carry the judge's raw output in check_answer
    ("" for a failed call, as C3 writes it); items the judge never judged are left out, as the
    C3 script leaves out what it skipped, so its scoring script counts what was judged; so is an
    item that script passes over (`c3_passed_over`), so that process_results.py counts what it
    would on C3's own run. Generation items carry the
    people's decision: the one `judge`'s own result files held (`c3_file_decisions`), in their
    words, else the consolidated human label in C3's exact verdict wording ("" when nobody
    labelled them).
    Without a judge every judged phenomenon's check_answer is empty. A phenomenon the judge
    judged none of gets no file (as C3 writes none for a phenomenon it did not run), only its
    count in the items left out."""
    out_dir = Path(out_dir)
    written: dict[str, list[dict]] = {}
    left_out: dict[str, int] = {}
    passed_over: dict[str, int] = {}
    own_kept: dict[str, list[str]] = {}
    for part in C3_LAYOUT[lang]:
        labels: dict[int, dict[str, str]] = {}  # where people decide: their labels
        for row in store.current_labels(task=part.task, lang=lang, system=system) if part.people_decide else ():
            labels.setdefault(row["item_id"], {})[row["annotator"]] = row["label"]
        own = OwnDecisions(c3_file_decisions(store, part.task, lang, system).get(judge, {})
                           if part.people_decide and judge else {})
        # the cell's items read in one pass with the judge's raw outputs (id order), their records put in source order
        built: list[tuple[int, dict | None]] = []
        skipped = c3_passed_over(store, lang=lang, system=system, task=part.task) if part.resume_key(lang) else {}
        rel = f"{part.responses}.json"
        for item, judged, raw in store.c3_export_items(part.task, lang, system, judge):
            prefix, _, index = item.source_id.rpartition("/")
            if prefix != part.source_prefix:
                continue
            if item.id in skipped:
                passed_over[rel] = passed_over.get(rel, 0) + 1
                continue
            if part.people_decide:
                decided, differs = own.of(item.id, item.source_id, gold_label(labels.get(item.id, {}))[0])
                check = own.written(item.id, decided) or templates.for_task(part.task, lang).kind.c3_wording(decided)
                if differs:
                    own_kept.setdefault(rel, []).append(differs)
            elif judge and not judged:
                built.append((int(index), None))
                continue
            else:
                check = raw or ""
            built.append((int(index), _c3_record(item, part, lang, check, templates)))
        if not built:
            continue
        built.sort(key=lambda entry: entry[0])
        records = [record for _, record in built if record is not None]
        if len(records) < len(built):
            left_out[rel] = len(built) - len(records)
        if not records:
            continue
        path = out_dir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(c3_json(records), encoding="utf-8")
        written[rel] = records
    return written, left_out, passed_over, own_kept


def c3_files_left_over(store: Store, lang: str, target: Path, system: str, judge: str | None = None) -> list[str]:
    """The JSON files under `target` (relative paths, sorted) that `export_c3` of `system` and
    `judge` would not write there: an earlier export's, which C3's process_results.py, reading
    every file of the tree, would score with this one's."""
    if not target.is_dir():
        return []
    written = {f"{part.responses}.json" for part in C3_LAYOUT[lang] if store.c3_file_has_items(
        part.task, lang, system, part.source_prefix, None if part.people_decide else judge)}
    return sorted(rel for path in target.rglob("*.json") if (rel := path.relative_to(target).as_posix()) not in written)


# each object's members on lines of their own at the indent of `c3_json`'s objects (the C encoder, as no indent is set)
_flat_rows = json.JSONEncoder(ensure_ascii=False, separators=(",\n        ", ": ")).encode


def c3_json(rows: list[dict]) -> str:
    """A list of objects written as C3's scripts write their files, `json.dumps(rows,
    ensure_ascii=False, indent=4)`. Python's encoder with an indent is pure Python; when every
    object has members and none is a list or an object, which is how C3's records mostly are,
    the list is written by the C encoder with the members' separator as the indent and the
    objects' bounds indented after: a newline in its JSON is always a separator (strings escape
    theirs), and "}" before one always an object's end."""
    nested = {type(value) for row in rows for value in row.values()}
    if not rows or not all(rows) or any(issubclass(kind, (list, tuple, dict)) for kind in nested):
        return json.dumps(rows, ensure_ascii=False, indent=4)
    members = _flat_rows(rows)[2:-2]  # between "[{" and "}]"
    return "[\n    {\n        " + members.replace("},\n        {", "\n    },\n    {\n        ") + "\n    }\n]"


C3_LANGUAGE_NAMES = {"en": "english", "zh": "chinese"}
C3_STATISTICS_FOLDER = "statistics"
"""Where `export c3` writes the statistics files, beside one folder per judge: C3's scoring
script reads every .json under a judge's folder as result records."""


def c3_judges_without_verdicts(store: Store, lang: str, system: str, judges: tuple[str, ...]) -> list[str]:
    """The `judges` with no verdict on any of `system`'s items of C3's judged phenomena in `lang`
    (none when it has no such items): an export would write none of their records."""
    parts = [part for part in C3_LAYOUT[lang] if not part.people_decide
             and store.c3_file_has_items(part.task, lang, system, part.source_prefix)]
    return [judge for judge in judges if parts and not any(
        store.c3_file_has_items(part.task, lang, system, part.source_prefix, judge) for part in parts)]


def c3_other_judge_folders(out_dir: Path, folders: list[str]) -> list[str]:
    """The folders of `out_dir` holding JSON files, other than the judges' `folders` and the
    statistics folder, sorted: another export's judge folders, whose records C3's
    process_results.py would score if pointed at them, though the statistics no longer cover them."""
    if not out_dir.is_dir():
        return []
    return sorted(path.name for path in out_dir.iterdir() if path.is_dir() and path.name not in folders
                  and path.name != C3_STATISTICS_FOLDER and next(path.rglob("*.json"), None) is not None)


def c3_judge_folder(judge: str) -> str:
    """The folder of OUT_DIR a judge's result tree is exported to: its name, with path
    separators as "_" (and "_" before a name that is the statistics folder or a dot name)."""
    name = judge.replace("/", "_").replace("\\", "_")
    return f"_{name}" if name in (C3_STATISTICS_FOLDER, ".", "..") else name


def _c3_record(item: Item, part: C3Part, lang: str, check_answer: str, templates: TemplateSet) -> dict:
    """The item as C3's evaluate.py writes its result record: exactly its keys, in its order
    (`c3_record_keys`). Multi-turn content is the rendered c3-official prompt ("" if the item
    cannot render); Chinese generation keeps the reference answer in `answer` (that script
    writes no response there), the other phenomena the system's response."""
    fields = item.fields
    if part.multi_turn:
        try:
            content = render_for(templates, item, C3_RESULTS_FAMILY).user
        except TemplateError:
            content = ""
        turns = fields.get("turns") if lang == "en" else fields.get("history")
        return {"content": content, "annotation": turns[0] if turns else None, "check_answer": check_answer}
    values = dict(fields)
    if "history" in fields:
        values["content"] = "".join(line + "\n" for line in fields["history"])
        values["annotation"] = fields.get("omission_complete" if "omission" in part.task else "coreference_complete")
    if part.task == "c3/coreference-resolution" and lang == "en":
        values["correct_answer"] = fields.get("answer")
    if not (lang == "zh" and part.people_decide):
        values["answer"] = fields.get("response")
    values["check_answer"] = check_answer
    return {key: values.get(key) for key in c3_record_keys(part, lang)}
