"""Computing `calibrate scores` from the store: right and wrong per item and judge, grouped into
cells, corrected, ranked and compared (see calibrate.scores for the rules)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field, replace

import numpy as np

from calibrate.cells import BY_CHOICES, check_by
from calibrate.formats.c3 import c3_right
from calibrate.gold import gold_label
from calibrate.kinds import POSITIVE
from calibrate.scores.model import (
    ALL,
    NO_SYSTEM,
    Accuracy,
    Final,
    JudgePair,
    JudgeScores,
    ScoreCell,
    Scores,
    ScoresError,
)
from calibrate.stats import correction
from calibrate.stats.agreement import two_raters
from calibrate.stats.intervals import proportion
from calibrate.stats.reliability import positive_rate_difference
from calibrate.store import Store
from calibrate.templates import TemplateError, TemplateSet


@dataclass
class _Item:
    id: int
    task: str
    lang: str
    system: str
    source_id: str
    human: float  # 1 right, 0 wrong, nan unlabelled
    people_decide: bool  # the task has no judge prompt
    verdicts: dict[str, tuple[float, bool | None, str]] = field(default_factory=dict)
    # judge -> (parser right 1/0/nan when unparsed or error, C3 rule right or None outside C3, raw output)


def build_scores(
    store: Store, templates: TemplateSet, *, by: tuple[str, ...] = BY_CHOICES, judge: str | None = None,
    system: str | None = None, target: float = 0.05,
) -> Scores:
    """Every figure of `calibrate scores`, for the cells `by` names and per system overall."""
    check_by(by)
    items, notes = _gather(store, templates, judge, system)
    if not any(i.verdicts for i in items):
        raise ScoresError("no judged items with right/wrong verdicts to score" + (f" for system {system!r}" if system else "")
                          + "".join(f"; {note}" for note in notes))
    groups: dict[tuple[str, str, str], list[_Item]] = defaultdict(list)
    for item in items:
        key = tuple(getattr(item, d) if d in by else ALL for d in BY_CHOICES)
        groups[key].append(item)
        if "system" in by and len(by) > 1:
            groups[(item.system, ALL, ALL)].append(item)
    family_judges: dict[tuple[str, str], set[str]] = defaultdict(set)  # (system, benchmark) -> its judges
    for item in items:
        family_judges[(item.system, _family(item.task))].update(item.verdicts)
    cells = [_cell(key, members, target, family_judges) for key, members in sorted(groups.items())]
    return Scores(by, target, cells, _rankings(cells, by), _judge_pairs(items, by), _rule_differences(items), notes)


def _gather(store: Store, templates: TemplateSet, judge: str | None, system: str | None) -> tuple[list[_Item], list[str]]:
    data = store.score_data(judge=judge, system=system)
    labels: dict[int, dict[str, str]] = defaultdict(dict)
    for item_id, annotator, label in data["labels"]:
        labels[item_id][annotator] = label
    kinds: dict[tuple[str, str], object] = {}
    prompted: dict[tuple[str, str], bool] = {}
    skipped: dict[str, str] = {}
    items: dict[int, _Item] = {}
    references: dict[int, str | None] = {}
    for item_id, task, lang, item_system, source_id, reference in data["items"]:
        if (task, lang) not in kinds:
            try:
                template = templates.for_task(task, lang)
                kinds[(task, lang)], prompted[(task, lang)] = template.kind, template.judged
            except TemplateError as exc:
                kinds[(task, lang)] = None
                skipped[task] = str(exc)
        kind = kinds[(task, lang)]
        if kind is None or not kind.right_or_wrong:
            if kind is not None:
                skipped[task] = ("scores, not right/wrong" if kind.scored else
                                 f"its values ({', '.join(kind.labels)}) say more than right or wrong")
                skipped[task] += " (see `calibrate report`)"
            continue
        gold, _ = gold_label(labels.get(item_id, {}))
        human = np.nan if gold is None else float(_right(kind, gold, reference))
        items[item_id] = _Item(item_id, task, lang, item_system or NO_SYSTEM, source_id, human,
                               not prompted[(task, lang)])
        references[item_id] = reference
    for item_id, judge_name, status, verdict, correct, raw in data["judgments"]:
        item = items.get(item_id)
        if item is None or item.people_decide:
            continue
        kind = kinds[(item.task, item.lang)]
        if status != "verdict":
            parsed = np.nan
        elif correct is not None and kind.positive is None:
            parsed = float(correct)
        else:
            parsed = float(_right(kind, verdict, references[item_id]))
        rule = c3_right(raw, item.lang) if item.task.startswith("c3/") else None
        item.verdicts[judge_name] = (parsed, rule, raw or "")
    notes = [f"{task} left out: {why}" for task, why in sorted(skipped.items())]
    return list(items.values()), notes


def _right(kind, label: str, reference: str | None) -> bool:
    """A verdict or label means the system's response is right."""
    if kind.positive is not None:
        return kind.polarity(label) == POSITIVE
    return reference is not None and kind.canonical(label) == kind.canonical(reference)


PEOPLE_DECIDE = "people decide these items (no judge prompt): no judge verdicts to correct"


def _cell(key: tuple[str, str, str], members: list[_Item], target: float,
          family_judges: dict[tuple[str, str], set[str]]) -> ScoreCell:
    y = np.array([m.human for m in members])
    labelled = ~np.isnan(y)
    people = proportion(int(np.nansum(y)), int(labelled.sum()), none_reason="no labelled items")
    judges = sorted({j for m in members for j in m.verdicts}
                    | {j for m in members if m.people_decide for j in family_judges[(m.system, _family(m.task))]})
    cell = ScoreCell(*key, items=len(members), judged=sum(bool(m.verdicts) for m in members),
                     labelled=int(labelled.sum()), people=people)
    for name in judges:
        rows = [m for m in members if name in m.verdicts]
        judged = len(rows)
        # as C3's statistics: the items people decide count for every judge of their system's
        # benchmark, by the human label (wrong while unlabelled), beside the judge's own items
        decided = [m for m in members if m.people_decide and name in family_judges[(m.system, _family(m.task))]]
        verdicts = np.array([m.verdicts[name][0] for m in rows], dtype=float)
        parsed = np.concatenate([verdicts, [np.nan_to_num(m.human, nan=0.0) for m in decided]])
        rules = [m.verdicts[name][1] for m in rows] + [m.human == 1 for m in decided]
        f = np.nan_to_num(parsed, nan=0.0)
        ok = ~np.isnan(parsed)
        # the judge's evidence: only the items it judged
        fj, yj = np.nan_to_num(verdicts, nan=0.0), np.array([m.human for m in rows], dtype=float)
        corrected = correction.stratified_mean(fj, yj, random_sample=True)
        ppi = correction.ppi_mean(fj, yj, random_sample=True)
        rogan_gladen = correction.rogan_gladen(fj, yj, random_sample=True)
        plan = correction.stratified_labels_needed(fj, yj, random_sample=True, target=target, now=corrected)
        if not rows:
            corrected, ppi = replace(corrected, reason=PEOPLE_DECIDE), replace(ppi, reason=PEOPLE_DECIDE)
            rogan_gladen = replace(rogan_gladen, reason=PEOPLE_DECIDE)
            plan = replace(plan, more=None, reason=PEOPLE_DECIDE)
        cell.judges.append(JudgeScores(
            judge=name, judged=judged, unparsed=int((~ok).sum()),
            c3_rule=Accuracy(sum(bool(r) for r in rules), len(rules)) if all(r is not None for r in rules) else None,
            parser_unparsed_wrong=Accuracy(int(f.sum()), len(parsed)),
            parser_unparsed_left_out=Accuracy(int(parsed[ok].sum()), int(ok.sum())),
            corrected=corrected, rogan_gladen=rogan_gladen, plan=plan, ppi=ppi,
        ))
    c3 = [m for m in members if _family(m.task) == "c3"]
    c3_judges = sorted({j for m in c3 for j in m.verdicts})
    common = [m for m in c3 if m.verdicts and all(j in m.verdicts for j in c3_judges)]
    if len(c3_judges) > 1 and common:
        f = np.array([[np.nan_to_num(m.verdicts[j][0], nan=0.0) for j in c3_judges] for m in common])
        raws = [j.c3_rule.value if j.c3_rule else None for j in cell.judges if j.judge in c3_judges]
        raw = float(np.mean(raws)) if all(r is not None for r in raws) else None
        corrected = correction.stratified_mean(f, np.array([m.human for m in common]), random_sample=True)
        cell.final = Final(c3_judges, raw, corrected)
    return cell


def _family(task: str) -> str:
    """The benchmark a task belongs to (c3, superglue, rubric)."""
    return task.split("/", 1)[0]


def _rankings(cells: list[ScoreCell], by: tuple[str, ...]) -> list[tuple[str, correction.Ranking]]:
    """Systems ranked within each scope (the same task and language, or overall) and by each
    judge (and the final score), where at least two systems have a cell."""
    if "system" not in by:
        return []
    scopes: dict[tuple[str, str, str], dict[str, correction.Corrected]] = defaultdict(dict)
    for cell in cells:
        for judge, estimate in cell.estimates().items():
            scopes[(cell.task, cell.lang, judge)][cell.system] = estimate
    return [(_scope(task, lang, judge), correction.rank(members))
            for (task, lang, judge), members in sorted(scopes.items()) if len(members) > 1]


def _scope(task: str, lang: str, judge: str) -> str:
    where = "overall" if task == ALL and lang == ALL else " ".join(p for p in (task, lang) if p != ALL)
    return f"{where}, by {judge}"


def _judge_pairs(items: list[_Item], by: tuple[str, ...]) -> list[JudgePair]:
    """Every pair of judges over all items both judged, and per language (C3's judges are
    compared per language in its paper)."""
    judges = sorted({j for i in items for j in i.verdicts})
    items = [i for i in items if i.verdicts]
    pairs = []
    scopes = [("all items", items)] + [(lang, [i for i in items if i.lang == lang]) for lang in sorted({i.lang for i in items})]
    for k, a in enumerate(judges):
        for b in judges[k + 1:]:
            for scope, members in scopes:
                both = [i for i in members if a in i.verdicts and b in i.verdicts]
                if not both:
                    continue
                va = ["right" if i.verdicts[a][0] == 1 else "wrong" for i in both]
                vb = ["right" if i.verdicts[b][0] == 1 else "wrong" for i in both]
                kappa = two_raters(va, vb, ["right", "wrong"]).kappa
                lab = [i for i in both if not np.isnan(i.human)]
                agree_a = [i.verdicts[a][0] == i.human for i in lab]
                agree_b = [i.verdicts[b][0] == i.human for i in lab]
                tracks = positive_rate_difference(agree_a, agree_b)
                pairs.append(JudgePair(scope, a, b, len(both), kappa, len(lab), tracks))
    return pairs


def _rule_differences(items: list[_Item]) -> list[str]:
    """Why the C3-rule column differs from the parser column: each output the two read
    differently, with its last line."""
    out = []
    for item in items:
        for judge, (parsed, rule, raw) in sorted(item.verdicts.items()):
            if rule is None or (parsed == 1) == rule:
                continue
            last = next((line.strip() for line in reversed(raw.splitlines()) if line.strip()), "(empty output)")
            parser = "unparsed" if np.isnan(parsed) else ("right" if parsed == 1 else "wrong")
            out.append(f"{item.system} {item.task} ({item.lang}) {item.source_id}, {judge}: C3's rule says "
                       f"{'right' if rule else 'wrong'}, calibrate's parser {parser}; last line: {last}")
    return out
