"""The bundled demo data and the one call that imports all of it (see README.md here)."""

from __future__ import annotations

from pathlib import Path

from calibrate.formats import import_records
from calibrate.formats.c3 import c3_result_records
from calibrate.formats.c3_tree import c3_records
from calibrate.formats.rubric import rubric_records
from calibrate.formats.superglue import superglue_records
from calibrate.store import Store
from calibrate.templates import TemplateSet

DEMO_DIR = Path(__file__).resolve().parent
DEMO_JUDGE = "demo-judge"
DEMO_JUDGE_2 = "demo-judge-2"
"""A second, stricter made-up judge, over sdm-beta's C3 answers only (C3 publishes the mean of
two judges' accuracies)."""
DEMO_SYSTEMS = ("sdm-alpha", "sdm-beta")
"""Two made-up spoken dialogue models: alpha answers the phonological items better, beta the
context-dependency ones; beta arrives as C3 result files only."""
SUPERGLUE_DEMO_TASKS = ("boolq", "copa", "cb", "rte", "wic", "wsc", "multirc", "record", "axb", "axg")


def load_demo(store: Store, templates: TemplateSet) -> str:
    """Import every demo file (a re-run adds nothing) and run the rule judge on SuperGLUE."""
    from calibrate.judge_rule import run_rule_judge

    added = judgments = 0

    def take(records) -> None:
        nonlocal added, judgments
        report = import_records(store, records, templates)
        added += report.counts.items_added
        judgments += report.counts.judgments_added

    alpha, beta = DEMO_SYSTEMS
    for lang in ("en", "zh"):
        base = DEMO_DIR / "c3" / lang
        take(c3_records(base / "reference", base / "responses", lang, system=alpha))
        take(c3_result_records(base / "results", lang, DEMO_JUDGE, templates, system=alpha))
    folder = DEMO_DIR / "superglue"
    for task in SUPERGLUE_DEMO_TASKS:
        take(superglue_records(folder / f"{task}.jsonl", task, folder / f"{task}.predictions.jsonl", system=alpha))
    rubric = DEMO_DIR / "rubric" / "rubric.jsonl"
    take(rubric_records(rubric, judge_output="judge_output", judge_name=DEMO_JUDGE, system=alpha))
    for lang in ("en", "zh"):
        take(c3_result_records(DEMO_DIR / "c3" / lang / "results-beta", lang, DEMO_JUDGE, templates, system=beta))
        take(c3_result_records(DEMO_DIR / "c3" / lang / "results-beta-judge2", lang, DEMO_JUDGE_2, templates,
                                   system=beta))
    for task in SUPERGLUE_DEMO_TASKS:
        if (folder / "beta" / f"{task}.predictions.jsonl").is_file():
            take(superglue_records(folder / f"{task}.jsonl", task, folder / "beta" / f"{task}.predictions.jsonl",
                                   system=beta))
    rule = run_rule_judge(store, templates, task=None)
    return f"{added} items and {judgments + rule.stored} judgments added ({store.count_items()} items in all)"
