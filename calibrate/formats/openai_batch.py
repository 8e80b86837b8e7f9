"""OpenAI Batch API files, both directions: the judge's requests written as Batch API JSONL
(also what vLLM's run-batch reads), and the results read back into judgments of the same
configuration, each line parsed as the judge runner parses a live answer.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from calibrate.judge_runner import (
    Answer,
    Job,
    JudgeConfig,
    RunSummary,
    judgment_for,
    judgment_from_response,
    plan_jobs,
    request_body,
)
from calibrate.judge_server import UnusableAnswer
from calibrate.model import CalibrateError, NewJudgment
from calibrate.store import Store
from calibrate.templates import TemplateSet
from calibrate.user_files import replaced_whole


class BatchFileError(CalibrateError):
    """A batch result file that cannot be read, or a line of it that fits no item of this judge."""



def export_batch(jobs: Iterable[Job], config: JudgeConfig, path: Path) -> int:
    """Write OpenAI Batch API JSONL (also what vLLM's run-batch reads)."""
    n = 0
    with replaced_whole(Path(path)) as part, part.open("w", encoding="utf-8") as out:
        for job in jobs:
            line = {"custom_id": job.custom_id, "method": "POST", "url": "/v1/chat/completions", "body": request_body(job, config)}
            out.write(json.dumps(line, ensure_ascii=False) + "\n")
            n += 1
    return n


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


def import_batch(
    store: Store, templates: TemplateSet, config: JudgeConfig, path: Path, summary: RunSummary, *, force: bool = False
) -> RunSummary:
    """Store the results of a batch exported with the same configuration. Lines for items
    already judged by it are skipped unless `force`; a line from another configuration is an
    error naming the line."""
    path = Path(path)
    jobs = {job.custom_id: job for job in plan_jobs(store, templates, config, force=True)}
    done: dict[str, dict[int, set[int]]] = {}
    judgments: list[NewJudgment] = []
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise BatchFileError(f"{path}: {exc.strerror or exc}") from None
    with handle:
        for lineno, line in enumerate(handle, 1):
            if not line.strip():
                continue
            where = f"{path}:{lineno}"
            try:
                record = json.loads(line.decode("utf-8"))
                custom_id = record["custom_id"]
            except (UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError) as exc:
                raise BatchFileError(f"{where}: not a batch result line ({exc})") from None
            _check_result_line(record, where)
            job = jobs.get(custom_id)
            if job is None:
                raise BatchFileError(
                    f"{where}: custom_id {custom_id} matches no item for judge {config.name} with these "
                    "parameters (was the batch exported with another --model, template or parameters?)"
                )
            if not force:
                already = done.setdefault(job.key, store.judged_samples(job.key))
                if job.sample in already.get(job.item.id, ()):
                    summary.skipped_done += 1
                    continue
            response = record["response"] or {}
            status_code = response.get("status_code")
            if record.get("error") or status_code != 200:
                error = record.get("error") or {"status_code": status_code}
                answer = Answer(judgment_for(job, config, status="error", error=f"batch error: {json.dumps(error)[:200]}"))
            else:
                try:
                    answer = judgment_from_response(job, config, _wrap(response.get("body")), None)
                except UnusableAnswer as exc:
                    answer = Answer(judgment_for(job, config, status="error", error=f"batch result: {exc}"))
            judgments.append(answer.judgment)
            summary.count(job.item, answer.judgment, answer.bare)
    store.add_judgments(judgments)
    return summary
