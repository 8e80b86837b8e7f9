"""From an item and a judge's raw output to a storable judgment: the prompt it was judged
with, the parsed verdict, (for SuperGLUE) whether that verdict matches the gold label, and the
verdict's probability from the output tokens' logprobs.

Shared by the importers (judgments run elsewhere), the judge runner and `calibrate parse`, so a
raw output is parsed the same way wherever it came from. An output the server cut at its token
limit is unparsed whatever it says ("truncated at N tokens"): its verdict, if any, is not the
one the judge would have ended with.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol

from calibrate.model import NewJudgment, counted, digest, judge_key
from calibrate.templates import RenderedPrompt, Template, TemplateError, TemplateSet
from calibrate.verdicts import Verdict, unparsed

TRUNCATED = "truncated at "
"""How the unparsed reason of a truncated output begins."""


def truncated(tokens: int | None) -> Verdict:
    """The verdict of an output cut at the token limit (`tokens`, when known)."""
    return unparsed(f"{TRUNCATED}{counted(tokens, 'token')}" if tokens else f"{TRUNCATED}the server's token limit")


def is_truncated(reason: str | None) -> bool:
    return bool(reason) and reason.startswith(TRUNCATED)


class ItemLike(Protocol):
    task: str
    lang: str
    fields: dict
    reference: str | None
    content_hash: str


def parse_output(template: Template, item: ItemLike, raw: str | None) -> tuple[Verdict, int | None]:
    """Parse `raw` with the template's verdict kind; `correct` is set where a gold label exists."""
    fields = item.fields
    verdict = template.kind.parse(raw, answers=list(fields.get("answers") or []), entities=list(fields.get("entities") or []))
    correct = None
    if verdict.parsed:
        if template.verdict == "record_entity":
            correct = int(verdict.value == "correct")
        elif template.verdict == "label_set" and item.reference is not None:
            correct = int(verdict.value == item.reference)
    return verdict, correct


def verdict_confidence(tokens: Sequence[tuple[str, float | None]] | None, raw: str, verdict: Verdict
                       ) -> tuple[float | None, str | None]:
    """P(verdict) from the output's tokens and their logprobs, or None and the reason.

    Rubric scores: the product of the probabilities of the tokens that write both scores'
    digits (never of syntax such as `{`). A verdict word or label: the probability of the last
    token that spells it. A ReCoRD verdict (correct / incorrect) is computed from the answer,
    not written, so it has none."""
    if not verdict.parsed:
        return None, None
    if not tokens:
        return None, "the server returned no logprobs"
    detail = verdict.detail or {}
    if "spans" in detail:
        return _span_probability(tokens, raw, list(detail["spans"].values()))
    if "entity" in detail:
        return None, "a ReCoRD verdict is computed from the answer, not written by the judge"
    target = verdict.value.lower()
    for token, logprob in reversed(tokens):
        text = (token or "").strip().strip("*").lower()
        if text and target.startswith(text):  # a multi-token label ends here with its first piece
            return (math.exp(logprob), None) if logprob is not None else (None, "the verdict's token has no logprob")
    return None, "no output token spells the verdict"


def _span_probability(tokens: Sequence[tuple[str, float | None]], raw: str, spans: list) -> tuple[float | None, str | None]:
    """exp(sum of logprobs) of the tokens overlapping `spans` (character ranges of `raw`)."""
    if any(span is None for span in spans):
        return None, "a score's digits were not found in the output"
    joined = "".join(token or "" for token, _ in tokens)
    offset = joined.find(raw)
    if offset < 0:  # a server may trim leading whitespace from the content or from the tokens
        stripped = raw.lstrip()
        found = joined.find(stripped)
        if found < 0:
            return None, "the logprob tokens do not spell the output"
        offset = found - (len(raw) - len(stripped))
    ranges = [(start + offset, end + offset) for start, end in spans]
    total, position, covered = 0.0, 0, 0
    for token, logprob in tokens:
        start, position = position, position + len(token or "")
        if any(start < end and begin < position for begin, end in ranges):
            if logprob is None:
                return None, "a score's token has no logprob"
            total, covered = total + logprob, covered + 1
    if not covered:
        return None, "no output token writes the scores"
    return math.exp(total), None


def render_for(templates: TemplateSet, item: ItemLike, family: str | None = None) -> RenderedPrompt:
    template = templates.for_task(item.task, item.lang, family)
    return template.render(item.task, item.fields)


def judgment_from_output(
    item_id: int,
    item: ItemLike,
    templates: TemplateSet,
    judge_name: str,
    raw: str | None,
    *,
    family: str | None = None,
    params: dict | None = None,
    error: str | None = None,
    model: str | None = None,
    decided: Verdict | None = None,
    prompt: tuple[str | None, str] | None = None,
    run: tuple[str, str] | None = None,
    judged_at: str | None = None,
) -> NewJudgment:
    """A judgment for output produced elsewhere (an import). Its uid is derived from the item,
    judge and output (and the id of `run`, the (id, start time) of the run that gave it, where the
    source names one), so importing the same output twice stores it once, while a later run that
    gives an earlier run's output again is a judgment of its own, in force. A judgment of a run
    also carries its uid without the run (`NewJudgment.former`): a database whose imports left
    runs out of uids holds it under that one.

    `decided` is a verdict the judge's own tool already reached (an Inspect score's value, or
    unparsed with its reason) instead of one parsed from `raw`; `prompt` is the (system, user)
    prompt the judge was given, stored instead of the template's; `judged_at` the time the judge
    made it where the source says (it orders the judgment among the judge's others of the item)."""
    template = templates.for_task(item.task, item.lang, family)
    params = params or {}
    rendered = None
    if prompt is None and template.has_prompt:
        try:
            rendered = template.render(item.task, item.fields)
        except TemplateError:
            rendered = None
    if rendered is not None:
        prompt = (rendered.system, rendered.user)
    key = judge_key(judge_name, model, template.version, params)
    if error:
        verdict, correct, status = Verdict(None, None), None, "error"
    elif decided is not None:
        verdict, correct, status = decided, None, decided.status
    else:
        verdict, correct = parse_output(template, item, raw)
        status = verdict.status
    decided_part = [] if decided is None else [decided.value or f"unparsed: {decided.reason}"]
    identity = [item.content_hash, key, raw or "", error or "", *decided_part]
    return NewJudgment(
        item_id=item_id,
        judge_name=judge_name,
        judge_key=key,
        status=status,
        raw_output=raw,
        verdict=verdict.value,
        unparsed_reason=verdict.reason,
        correct=correct,
        model=model,
        template_id=template.id,
        template_hash=template.version,
        params=params,
        system_prompt=prompt[0] if prompt else None,
        prompt=prompt[1] if prompt else None,
        error=error,
        uid=digest(*identity, *([f"run {run[0]}"] if run else [])),
        former=(digest(*identity), run[1]) if run else None,
        judged_at=judged_at,
    )


def reparse(store, templates: TemplateSet, judge: str | None = None) -> dict[tuple[str, str], int]:
    """Parse every stored raw output again (after a parser change) and store what changed.
    Raw outputs are never rewritten; errors stay errors, truncated outputs stay unparsed.
    Returns {(from, to): count}."""
    changes: dict[tuple[str, str], int] = {}
    items: dict[int, object] = {}
    for judgment in list(store.judgments(judge=judge)):
        if judgment.status == "error" or is_truncated(judgment.unparsed_reason):
            continue
        item = items.get(judgment.item_id) or items.setdefault(judgment.item_id, store.item(judgment.item_id))
        try:
            template = templates.get(judgment.template_id) if judgment.template_id else templates.for_task(item.task, item.lang)
        except TemplateError:
            template = templates.for_task(item.task, item.lang)
        if not template.kind.parses_output:
            continue
        verdict, correct = parse_output(template, item, judgment.raw_output)
        before = judgment.verdict if judgment.status == "verdict" else "unparsed"
        after = verdict.value if verdict.parsed else "unparsed"
        stored = (judgment.status, judgment.verdict, judgment.unparsed_reason, judgment.correct)
        if stored != (verdict.status, verdict.value, verdict.reason, correct):
            store.update_parse(judgment.id, verdict.status, verdict.value, verdict.reason, correct)
            if before != after:
                changes[(before, after)] = changes.get((before, after), 0) + 1
    return changes
