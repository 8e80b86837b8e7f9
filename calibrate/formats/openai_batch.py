"""OpenAI Batch API files, both directions: the judge's requests written as Batch API JSONL
(also what vLLM's run-batch reads), recorded in the store request by request, and the results
read back into judgments of the same configuration, each line parsed as the judge runner parses
a live answer: one judgment per request, whatever the file repeats, and the requests of the batch
that have no result yet named.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from calibrate.configurations import other_configurations, replaced_words
from calibrate.formats import BadInput, read_jsonl
from calibrate.judge_runner import (
    Answer,
    Job,
    JudgeConfig,
    judgment_for,
    judgment_from_response,
    plan_jobs,
    request_body,
)
from calibrate.judge_server import UnusableAnswer
from calibrate.judge_summary import RunSummary
from calibrate.model import CalibrateError, NewJudgment
from calibrate.store import Store
from calibrate.store.batch_exports import BatchExport
from calibrate.templates import TemplateSet
from calibrate.user_files import replaced_whole


class BatchFileError(CalibrateError):
    """A batch result file that cannot be read, or a line of it that fits no item of this judge."""



def export_batch(store: Store, jobs: Iterable[Job], config: JudgeConfig, path: Path) -> int:
    """Write OpenAI Batch API JSONL (also what vLLM's run-batch reads) and record its requests,
    for the import of its results to name those that never come back."""
    jobs = list(jobs)
    judged_after = store.newest_judgment_id()
    with replaced_whole(Path(path)) as part, part.open("w", encoding="utf-8") as out:
        for job in jobs:
            line = {"custom_id": job.custom_id, "method": "POST", "url": "/v1/chat/completions", "body": request_body(job, config)}
            out.write(json.dumps(line, ensure_ascii=False) + "\n")
    store.record_batch_export(str(path), config.name, judged_after,
                              ((job.custom_id, job.item.id, job.key, job.sample) for job in jobs))
    return len(jobs)


class _Obj:
    """Attribute access over a batch result's JSON, shaped like the client's response objects."""

    def __init__(self, data):
        self._data = data

    def __getattr__(self, name):
        if not isinstance(self._data, dict) or name not in self._data:
            raise AttributeError(name)
        return _wrap(self._data[name])


def _wrap(value):
    if isinstance(value, dict):
        return _Obj(value)
    if isinstance(value, list):
        return [_wrap(v) for v in value]
    return value


def _check_result_line(record: dict, where: str) -> None:
    """BatchFileError unless `record` is a line of a batch's output file: it has a `response`
    (an object, or null beside an `error`). A request line (what --export-batch writes) is named
    as one."""
    if "response" in record and (isinstance(record["response"], dict) or record["response"] is None and record.get("error")):
        return
    if "response" not in record and {"method", "url", "body"} <= set(record):
        raise BatchFileError(f"{where}: a batch request (what --export-batch writes), not a result: give "
                             "--import-batch the output file the batch API returns once the batch is done")
    raise BatchFileError(f"{where}: not a batch result line (no 'response' object; the batch API's output file "
                         "has one per line)")


@dataclass
class BatchImport:
    """What reading a batch's results found beside its judgments: how many requests it answers,
    those it answers more than once (item source id, the lines, the line kept) and the batch
    written by `--export-batch` it answers, with the requests of it that have no result yet
    (None when this database has no record of writing it)."""

    answered: int = 0
    repeated: list[tuple[str, list[int], int]] = field(default_factory=list)
    batch: BatchExport | None = None
    errors_again: int = 0  # error results stored already (the same file imported again): not stored twice


def import_batch(
    store: Store, templates: TemplateSet, config: JudgeConfig, path: Path, summary: RunSummary, *, force: bool = False
) -> BatchImport:
    """Store the results of a batch exported with the same configuration, one judgment per
    request: of lines repeating a custom_id, the last that is no error is kept (the last line,
    if all are). Requests already judged by it are skipped unless `force`, and so are errors
    stored already with the same message (the file imported again); a line from another
    configuration is an error naming the line."""
    path = Path(path)
    jobs = {job.custom_id: job for job in plan_jobs(store, templates, config, force=True)}
    summary.repeat = config.repeat
    kept: dict[str, tuple[int, Job, Answer]] = {}
    lines: dict[str, list[int]] = {}
    for line in read_jsonl(path):  # an empty file, or one of blank lines, is refused as an import's is
        if isinstance(line, BadInput):
            raise BatchFileError(f"{line.location}: not a batch result line ({line.reason})")
        where, record = line
        lineno = int(where.rsplit(":", 1)[1])
        if "custom_id" not in record:
            raise BatchFileError(f"{where}: not a batch result line (no custom_id)")
        custom_id = record["custom_id"]
        if not isinstance(custom_id, str):
            raise BatchFileError(f"{where}: not a batch result line (custom_id {json.dumps(custom_id)} is not text)")
        _check_result_line(record, where)
        job = jobs.get(custom_id)
        if job is None:
            raise BatchFileError(
                f"{where}: custom_id {custom_id} matches no item for judge {config.name} with these "
                "parameters (was the batch exported with another --model, template or parameters?)"
            )
        answer = _answer(record, job, config)
        lines.setdefault(custom_id, []).append(lineno)
        before = kept.get(custom_id)
        if before is None or answer.judgment.status != "error" or before[2].judgment.status == "error":
            kept[custom_id] = (lineno, job, answer)
    done: dict[str, dict[int, set[int]]] = {}
    errors: dict[str, set[tuple[int, int, str]]] = {}
    judgments: list[NewJudgment] = []
    stored: list[Job] = []
    errors_again = 0
    for _, job, answer in kept.values():
        if not force:
            already = done.setdefault(job.key, store.judged_samples(job.key))
            if job.sample in already.get(job.item.id, ()):
                summary.skipped_done += 1
                continue
            failed = errors.setdefault(job.key, store.errors_of(job.key))
            if answer.judgment.status == "error" and (job.item.id, job.sample, answer.judgment.error) in failed:
                errors_again += 1
                continue
        judgments.append(answer.judgment)
        stored.append(job)
        summary.count(job.item, answer.judgment, answer.bare)
    replacing = other_configurations(store, stored, config)
    store.add_judgments(judgments)
    if replaced := replaced_words(store, stored, config, replacing, {job.item.id for job in stored}):
        summary.notes.append(replaced)
    repeated = [(kept[custom_id][1].item.source_id, numbers, kept[custom_id][0])
                for custom_id, numbers in lines.items() if len(numbers) > 1]
    return BatchImport(len(kept), repeated, store.batch_export_of(kept) if kept else None, errors_again)


def _answer(record: dict, job: Job, config: JudgeConfig) -> Answer:
    """The judgment of one result line: the answer parsed, or an error with the message the
    batch gave (the request's own error, else the error body of a failed response)."""
    response = record["response"] or {}
    status_code = response.get("status_code")
    if not record.get("error") and status_code == 200:
        try:
            return judgment_from_response(job, config, _wrap(response.get("body")), None)
        except UnusableAnswer as exc:
            return Answer(judgment_for(job, config, status="error", error=f"batch result: {exc}"))
    error = record.get("error")
    if not error and isinstance(response.get("body"), dict):
        error = response["body"].get("error")
    message = error.get("message") if isinstance(error, dict) else error
    code = f"HTTP {status_code}" if status_code else error.get("code") if isinstance(error, dict) else None
    text = ": ".join(str(part) for part in (code, message) if part) or json.dumps(error)
    return Answer(judgment_for(job, config, status="error", error=f"batch error: {text[:300]}"))
