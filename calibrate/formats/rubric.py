"""`calibrate import rubric`: records for the reference-scoring rubric (seed 003), one JSON
object per line with question, content, answer, llm_answer and llm_reasoning."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from calibrate.formats import BadInput, Progress, Record
from calibrate.formats.jsonl import jsonl_records

RUBRIC_TASK = "rubric/reference"


def rubric_records(
    path: Path,
    *,
    judge_output: str | None = None,
    judge_name: str | None = None,
    system: str = "",
    progress: Progress | None = None,
) -> Iterator[Record | BadInput]:
    """Rubric items; a line's `id` is its source id, else its line number."""
    return jsonl_records(
        path, task=RUBRIC_TASK, lang="zh", require_id=False, system=system,
        judge_output=judge_output, judge_name=judge_name, progress=progress,
    )
