"""The rule judge: SuperGLUE offline. It parses the model-under-test's own response with the
task's parsing rules (seed 004's) and compares it with the gold label, asking no server; its
runs are recorded as a server's are (judge_runs), with no server and no requests."""

from __future__ import annotations

from dataclasses import replace

from calibrate.judge_summary import RunSummary
from calibrate.judgments import judgment_from_output
from calibrate.model import judge_key
from calibrate.store import Store
from calibrate.templates import TemplateSet

RULE_JUDGE = "rule"
RULE_PARAMS = {"rule": "superglue seed-004 answer parsing"}


def run_rule_judge(
    store: Store, templates: TemplateSet, *, task: str | None = None, lang: str | None = None,
    system: str | None = None, force: bool = False, limit: int | None = None
) -> RunSummary:
    """SuperGLUE offline: parse each item's `response` (the model under test) with the task's
    rules and compare with the gold label, over the items of the filters given (those without
    a response, gold-only, are counted in `summary.no_response`; those of other tasks, which no
    rule reads, in `summary.outside_family`). The verdict is
    the parsed answer; `correct` says whether it matches. A run that stores judgments is
    recorded (judge_runs), as a server's is."""
    summary = RunSummary()
    judgments = []
    done: dict[str, set[int]] = {}
    for item in store.iter_items(task=task, lang=lang, system=system):
        if not item.task.startswith("superglue/"):  # no rule reads it: counted, as a --variant counts what it passes over
            summary.outside_family[(item.task, item.lang)] += 1
            continue
        if "response" not in item.fields:
            summary.no_response[(item.task, item.lang)] += 1
            continue
        template = templates.for_task(item.task, item.lang)
        key = judge_key(RULE_JUDGE, None, template.version, RULE_PARAMS)
        if key not in done:
            done[key] = set() if force else store.judged_item_ids(key)
        if item.id in done[key]:
            summary.skipped_done += 1
            continue
        judgment = judgment_from_output(item.id, item, templates, RULE_JUDGE, item.fields["response"], params=RULE_PARAMS)
        if force:  # judged again: a judgment of its own (the output's uid would be the earlier run's, and be dropped)
            judgment = replace(judgment, uid=None)
        judgments.append(judgment)
        summary.count(item, judgment)
        if limit is not None and len(judgments) >= limit:
            break
    if judgments:  # recorded as a server's run is, in one transaction with its judgments
        with store.transaction():
            run_id = store.begin_judge_run(RULE_JUDGE, "", "", RULE_PARAMS, items=len(judgments),
                                           samples=len(judgments), concurrency=1)
            store.add_judgments(judgments)
            store.finish_judge_run(run_id, outcome="finished", message=None, params=RULE_PARAMS, stored=summary.stored,
                                   cells=summary.cells, requests=summary.requests, concurrency_lowest=1)
    return summary
