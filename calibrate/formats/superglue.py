"""`calibrate import superglue`: the ten tasks from SuperGLUE's published JSONL, with an
optional predictions file (`{"idx": …, "response": "…"}` per line) joined on the task's idx.

MultiRC becomes one item per (question, answer) and ReCoRD one item per query, as the seed's
prompts ask for. The reference is the gold label in the prompt's answer space (COPA 0/1 -> 1/2,
true/false -> True/False), so a parsed answer and the gold label compare directly.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from calibrate.formats import UPDATE_ADVICE, BadInput, ImportFailed, Progress, Record, read_jsonl
from calibrate.model import Item, NewItem
from calibrate.validate import InputError
from calibrate.validate import source_id as valid_id

SUPERGLUE_TASKS = {
    "boolq": "superglue/boolq",
    "copa": "superglue/copa",
    "cb": "superglue/cb",
    "rte": "superglue/rte",
    "wic": "superglue/wic",
    "wsc": "superglue/wsc",
    "multirc": "superglue/multirc",
    "record": "superglue/record",
    "axb": "superglue/axb",
    "ax-b": "superglue/axb",
    "axg": "superglue/axg",
    "ax-g": "superglue/axg",
}


def task_id(name: str) -> str:
    key = name.lower().removeprefix("superglue/")
    if key not in SUPERGLUE_TASKS:
        raise ImportFailed(f"unknown SuperGLUE task {name!r}: use one of boolq, copa, cb, rte, wic, wsc, multirc, record, axb, axg")
    return SUPERGLUE_TASKS[key]


def gold_label(task: str, label) -> str | None:
    """The gold label in the answer space the prompt asks for."""
    if label is None:
        return None
    if task == "superglue/copa":
        return str(int(label) + 1)
    if isinstance(label, bool):
        return "True" if label else "False"
    if task == "superglue/multirc":
        return "True" if int(label) == 1 else "False"
    return str(label)


IDX_SHAPES = {
    "superglue/multirc": 'a MultiRC prediction\'s idx is {"paragraph": …, "question": …, "answer": …}, the idx of the '
                         "passage, question and answer it answers",
    "superglue/record": 'a ReCoRD prediction\'s idx is the idx of the query it answers, or {"passage": …, "query": …} '
                        "(the idx of its passage and query)",
}
"""How a prediction names its item in the tasks whose items are parts of a line (MultiRC, ReCoRD)."""


def _idx_shape(task: str) -> str:
    """What an error about a prediction's idx adds: the idx's shape where it is an object."""
    return f"; {IDX_SHAPES[task]}" if task in IDX_SHAPES else ""


def idx_key(task: str, idx) -> str:
    """The source id for a task's idx: plain for most, paragraph/question/answer for MultiRC,
    passage/query for ReCoRD."""
    if task == "superglue/multirc" and isinstance(idx, dict):
        return f"{idx['paragraph']}/{idx['question']}/{idx['answer']}"
    if task == "superglue/record" and isinstance(idx, dict):
        return f"{idx['passage']}/{idx['query']}"
    return valid_id(idx, "idx")


def _items(task: str, obj: dict, where: str) -> list[tuple[str, dict, str | None]] | BadInput:
    """(source id, fields, reference) for each item in one line."""
    try:
        if task == "superglue/multirc":
            passage = obj["passage"]
            out = []
            for question in passage["questions"]:
                for answer in question["answers"]:
                    source = idx_key(task, {"paragraph": obj["idx"], "question": question["idx"], "answer": answer["idx"]})
                    fields = {"passage": passage["text"], "question": question["question"], "answer": answer["text"]}
                    out.append((source, fields, gold_label(task, answer.get("label"))))
            return out
        if task == "superglue/record":
            text = obj["passage"]["text"]
            entities = list(dict.fromkeys(text[e["start"] : e["end"] + 1] for e in obj["passage"]["entities"]))
            out = []
            for qa in obj["qas"]:
                answers = [a["text"] for a in qa.get("answers", [])]
                source = idx_key(task, {"passage": obj["idx"], "query": qa["idx"]})
                fields = {"passage": text, "query": qa["query"], "entities": entities, "answers": answers}
                # the reference names each gold answer once (the file lists an answer again for each place it occurs)
                out.append((source, fields, " | ".join(dict.fromkeys(answers)) if answers else None))
            return out
        if "idx" not in obj:
            return BadInput(where, "missing field 'idx'")
        fields = {k: v for k, v in obj.items() if k not in ("idx", "label")}
        return [(idx_key(task, obj["idx"]), fields, gold_label(task, obj.get("label")))]
    except KeyError as exc:
        return BadInput(where, f"missing field {exc.args[0]!r}")
    except InputError as exc:
        return BadInput(where, str(exc))
    except (TypeError, ValueError, AttributeError) as exc:  # a list or text where an object belongs
        return BadInput(where, f"unexpected field shape ({exc})")


def read_predictions(path: Path, task: str) -> dict[str, tuple[str, str]]:
    """idx key -> (response, file:line)."""
    out: dict[str, tuple[str, str]] = {}
    for entry in read_jsonl(path):
        if isinstance(entry, BadInput):
            raise ImportFailed(f"{entry}; nothing was imported")
        where, obj = entry
        if "idx" not in obj or "response" not in obj:
            raise ImportFailed(f"{where}: a prediction needs 'idx' and 'response'; nothing was imported")
        if not isinstance(obj["response"], str):
            raise ImportFailed(f"{where}: 'response' must be text; nothing was imported")
        try:
            key = idx_key(task, obj["idx"])
        except KeyError as exc:
            raise ImportFailed(f"{where}: idx lacks {exc.args[0]!r}{_idx_shape(task)}; nothing was imported") from None
        except InputError as exc:
            raise ImportFailed(f"{where}: {exc}; nothing was imported") from None
        if key in out:
            raise ImportFailed(f"{where}: prediction idx {json.dumps(key)} repeats {out[key][1]} "
                               "(which response is meant?); nothing was imported")
        out[key] = (obj["response"], where)
    return out


def _by_query(path: Path, responses: dict[str, tuple[str, str]]) -> dict[str, tuple[str, str]]:
    """ReCoRD predictions keyed by the query idx alone (as the SuperGLUE layout keys them: a
    query's idx is unique in the released files) keyed as the items are, passage/query: the
    task file is read once more for the passage of each query idx. A query idx that several
    passages share in this file cannot say which query it answers: ImportFailed."""
    passages: dict[str, list[str]] = {}
    for entry in read_jsonl(path):
        if isinstance(entry, BadInput):
            continue  # said where the items are read
        _, obj = entry
        try:
            for qa in obj["qas"]:
                passages.setdefault(str(qa["idx"]), []).append(idx_key("superglue/record", {"passage": obj["idx"],
                                                                                           "query": qa["idx"]}))
        except (KeyError, TypeError, InputError):
            continue  # said where the items are read
    keyed = {}
    for key, (response, where) in responses.items():
        found = passages.get(key, [key]) if "/" not in key else [key]
        if len(found) > 1:
            raise ImportFailed(f"{where}: prediction idx {json.dumps(key)} is the idx of a query in {len(found)} "
                               f"passages of {path} ({', '.join(found[:3])}…): give its idx as "
                               '{"passage": …, "query": …}; nothing was imported')
        if found[0] in keyed:
            raise ImportFailed(f"{where}: prediction idx {json.dumps(key)} answers the query {found[0]} that "
                               f"{keyed[found[0]][1]} answers (which response is meant?); nothing was imported")
        keyed[found[0]] = (response, where)
    return keyed


def default_system(predictions: Path, task_file: Path) -> str | None:
    """Whose answers a predictions file holds when the user names no system: the name of the
    folder it is in (`my-llm/boolq.jsonl` is my-llm's), or None where that folder cannot say:
    the working folder, the task file's own folder, or a folder named after a task (a layout
    by task, not by model)."""
    folder = Path(predictions).resolve().parent
    if folder in (Path.cwd().resolve(), Path(task_file).resolve().parent):
        return None
    name = folder.name
    return None if name.casefold().replace("-", "") in {key.replace("-", "") for key in SUPERGLUE_TASKS} else name


def superglue_conflict_advice(stored: Item, item: NewItem) -> str:
    """A SuperGLUE item whose content differs from the one imported before (`ConflictAdvice`):
    mostly another split of the task, whose idx restarts at 0."""
    return (f"; {UPDATE_ADVICE}; if this file is another split of the task (SuperGLUE's idx restarts in each), import "
            "it into a database of its own instead: --update would replace the first split's items")


def superglue_records(
    path: Path, task_name: str, predictions: Path | None = None, progress: Progress | None = None, system: str = ""
) -> Iterator[Record | BadInput]:
    """Items of one task; with `predictions`, each carries the system's response and belongs
    to `system` (items the predictions do not answer stay gold-only, without a system). A
    prediction that matches no item is a bad input; where none matches, ImportFailed."""
    task = task_id(task_name)
    responses = read_predictions(predictions, task) if predictions else {}
    if task == "superglue/record" and any("/" not in key for key in responses):
        responses = _by_query(path, responses)
    used: set[str] = set()
    bad: list[BadInput] = []  # lines not read as items (an item a prediction answers may be among them)
    for entry in read_jsonl(path, progress):
        if isinstance(entry, BadInput):
            bad.append(entry)
            yield entry
            continue
        where, obj = entry
        items = _items(task, obj, where)
        if isinstance(items, BadInput):
            bad.append(items)
            yield items
            continue
        for source_id, fields, reference in items:
            owner = ""
            if source_id in responses:
                fields = {**fields, "response": responses[source_id][0]}
                used.add(source_id)
                owner = system
            yield Record(NewItem(task, "en", source_id, fields, reference, owner), where)
    unmatched = [BadInput(where, f"prediction idx {json.dumps(key)} matches no {task} item in {path}{_idx_shape(task)}")
                 for key, (_, where) in responses.items() if key not in used]
    if responses and not used:  # the predictions are what the user imports, and none is: not even with --skip-bad
        among = (f"; {path} has {len(bad):,} bad {'line' if len(bad) == 1 else 'lines'}, which the items they answer "
                 f"may be among (the first: {bad[0]})" if bad else "")
        raise ImportFailed(f"{unmatched[0]}; no prediction in {predictions} matches one{among}: nothing was imported "
                           "(even with --skip-bad)")
    yield from unmatched
