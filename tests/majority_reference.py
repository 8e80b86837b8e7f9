"""The verdict in force of an item under one judge, computed in Python from its judgments: the
reference the store's SQL (migrations 0015 and 0028: `verdicts_by_majority` and its triggers) is
tested against."""

from __future__ import annotations

import json
from collections import Counter


def in_force(judgments) -> tuple | None:
    """(judgment, status, verdict) in force among one item's `judgments` under one judge (any
    order): newest by (not a failed call, judged_at, id), so a failed call is never newer than a
    verdict; the samples are the newest judgment of each sample index in the newest judgment's
    configuration; one sample is itself; else the parsed samples' most frequent verdict (no other
    as frequent; its newest sample), the mean of each score for JSON scores, unparsed on a tie or
    with no parsed sample (error when every sample failed)."""
    if not judgments:
        return None
    ordered = sorted(judgments, key=lambda j: (j.status != "error", j.judged_at, j.id), reverse=True)
    newest = ordered[0]
    samples = {}
    for j in ordered:
        if j.judge_key == newest.judge_key:
            samples.setdefault(j.sample, j)
    if len(samples) == 1:
        return newest, newest.status, newest.verdict
    parsed = [j for j in samples.values() if j.status == "verdict"]
    scores = [json.loads(j.verdict) for j in parsed if j.verdict.startswith("{")]
    counts = Counter(j.verdict for j in parsed)
    ranked = sorted(counts, key=lambda v: (counts[v], max(j.id for j in parsed if j.verdict == v)), reverse=True)
    if scores:
        keys = sorted({k for s in scores for k in s})
        mean = {k: sum(s[k] for s in scores if k in s) / sum(k in s for s in scores) for k in keys}
        top = max((j for j in parsed if j.verdict == ranked[0]), key=lambda j: j.id)
        return top, "verdict", mean
    if ranked and (len(ranked) == 1 or counts[ranked[0]] > counts[ranked[1]]):
        top = max((j for j in parsed if j.verdict == ranked[0]), key=lambda j: j.id)
        return top, "verdict", ranked[0]
    if ranked:
        return newest, "unparsed", None
    if all(j.status == "error" for j in samples.values()):
        return newest, "error", None
    return newest, "unparsed", None
