"""Computing `calibrate scores` from the store: right and wrong per item and judge, grouped into
cells, corrected, ranked and compared (see calibrate.scores for the rules)."""

from __future__ import annotations

import functools
import os
from collections import Counter, defaultdict
from collections.abc import Collection, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace

import numpy as np

from calibrate.cells import BY_CHOICES, check_by
from calibrate.configurations import mixed_configurations
from calibrate.formats.c3 import (
    C3_LAYOUT,
    OwnDecisions,
    c3_file_decisions,
    c3_passed_over,
    c3_right,
)
from calibrate.formats.c3_figures import c3_corrected
from calibrate.gold import gold_label
from calibrate.kinds import POSITIVE
from calibrate.model import FAILED, Estimate, TextRule, counted, judged
from calibrate.scores.model import (
    ALL,
    NO_SYSTEM,
    Accuracy,
    Decided,
    Final,
    JudgePair,
    JudgeScores,
    ScoreCell,
    Scores,
    ScoresError,
)
from calibrate.stats import correction, ranking
from calibrate.stats.agreement import two_raters
from calibrate.stats.intervals import proportion
from calibrate.stats.pooled_correction import pooled_stratified_mean
from calibrate.stats.reliability import positive_rate_difference
from calibrate.store import Store
from calibrate.templates import TemplateError, TemplateSet


@dataclass
class _Group:
    """Items that the scores cannot tell apart, counted: one system's items of one task and
    language with the same human answer and the same verdicts (read in SQL by
    `Store.score_groups`, so nothing here grows with the number of items)."""

    task: str
    lang: str
    system: str  # as shown (NO_SYSTEM for items without one)
    stored_system: str  # as stored
    human: float  # 1 right, 0 wrong, nan unlabelled (or without gold)
    people_decide: bool  # the task has no judge prompt
    n: int
    words: tuple[str, str] = correction.CLASSES  # what people and judges call right and wrong here ('yes', 'no')
    verdicts: dict[str, tuple[float, bool | None]] = field(default_factory=dict)
    # judge -> (parser right 1/0/nan when unparsed or error, C3 rule right or None outside C3)
    stored: dict[str, tuple] = field(default_factory=dict)  # judge -> (status, verdict) as stored
    # judged or labelled items of a kind that needs gold (`VerdictKind.needs_gold`) that have none (a test split's):
    # neither right nor wrong, so out of every accuracy and of the labelled count, counted in the cell's items
    no_gold: bool = False

    @property
    def cell(self) -> str:
        """The group's cell (system · task · lang), the unit whose labels are one random sample."""
        return f"{self.system} · {self.task} · {self.lang}"


def _repeat(values, groups: list[_Group], dtype=float) -> np.ndarray:
    """One value per item: each group's value repeated for its items."""
    return np.repeat(np.asarray(values, dtype=dtype), [g.n for g in groups])


CELL_THREADS = min(2, os.cpu_count() or 1)
"""Threads the cells' figures, then the rankings, are worked out on: most of their time goes to
numpy's and scipy's work on arrays of a cell's items (the rankings' draws from the cells'
posteriors), which runs without the interpreter's lock (`build_scores` at a million items took
4.3-4.8 s on one thread, 2.6-3.0 s on two). Each cell and each ranking is worked out on its
own, the figures are the same on any number of threads, and they come back in order."""


def build_scores(
    store: Store, templates: TemplateSet, *, by: tuple[str, ...] = BY_CHOICES, judges: Sequence[str] = (),
    system: str | None = None, target: float = 0.05,
) -> Scores:
    """Every figure of `calibrate scores`, for the cells `by` names and per system overall, of
    `judges` (default: every judge)."""
    return build_scores_by(store, templates, (by,), judges=judges, system=system, target=target)[0]


def build_scores_by(
    store: Store, templates: TemplateSet, bys: Sequence[tuple[str, ...]], *, judges: Sequence[str] = (),
    system: str | None = None, target: float = 0.05, task_langs: Collection[tuple[str, str]] | None = None,
) -> list[Scores]:
    """`build_scores` for each cut in `bys`, the items read from the store once; with
    `task_langs`, of those (task, lang) pairs only (a cell pooling tasks pools those)."""
    for by in bys:
        check_by(by)
    groups_found, notes, ties, passed_over, own = _gather(store, templates, judges, system, task_langs)
    configurations = store.configuration_counts(system=system)
    if not any(g.verdicts for g in groups_found):
        raise ScoresError("no judged items with right/wrong verdicts to score" + (f" for system {system!r}" if system else "")
                          + "".join(f"; {note}" for note in notes))
    differences = _rule_differences(store, groups_found, passed_over)
    family_judges: dict[tuple[str, str, str], set[str]] = defaultdict(set)  # (system, benchmark, lang) -> its judges
    for group in groups_found:
        family_judges[(group.system, _family(group.task), group.lang)].update(group.verdicts)
    found = []
    with ThreadPoolExecutor(CELL_THREADS) as pool:
        for by in bys:
            groups: dict[tuple[str, str, str], list[_Group]] = defaultdict(list)
            for group in groups_found:
                key = tuple(getattr(group, d) if d in by else ALL for d in BY_CHOICES)
                groups[key].append(group)
                if "system" in by and len(by) > 1:
                    groups[(group.system, ALL, ALL)].append(group)
            # each cell's corrected numbers, worked out once for the rows pooling it and its own row (or twice, where
            # two threads reach it together: the same numbers)
            memo: dict = {}
            cell_of = functools.partial(_cell, target=target, family_judges=family_judges, memo=memo, ties=ties,
                                        configurations=configurations, own=own)
            keys = sorted(groups)
            cells = list(pool.map(cell_of, keys, [groups[key] for key in keys]))
            found.append(Scores(by, target, cells, _rankings(cells, by, pool), _judge_pairs(groups_found, by),
                                differences, notes))
    return found


C3_RULE = TextRule("c3/", c3_right)


def _gather(store: Store, templates: TemplateSet, judges: Sequence[str], system: str | None,
            task_langs: Collection[tuple[str, str]] | None = None,
            ) -> tuple[list[_Group], list[str], dict[tuple[str, str, str], int], set[int], dict]:
    """The score groups of the right/wrong tasks (of the `task_langs` pairs, if given), the
    notes on the tasks and items left out, the tied items per (task, lang, system as shown),
    the items C3 passes over (grouped as unjudged: `formats.c3.c3_passed_over`) and each
    judge's own generation decisions (`_own_decisions`)."""
    kinds: dict[tuple[str, str], object] = {}
    prompted: dict[tuple[str, str], bool] = {}
    skipped: dict[str, str] = {}
    for task, lang in store.task_langs(system=system):
        if task_langs is not None and (task, lang) not in task_langs:
            continue
        try:
            template = templates.for_task(task, lang)
            kinds[(task, lang)], prompted[(task, lang)] = template.kind, template.judged
        except TemplateError as exc:
            skipped[task] = str(exc)
            continue
        kind = kinds[(task, lang)]
        if not kind.right_or_wrong:
            skipped[task] = ("its verdicts are 0-100 scores, not right/wrong: a system's score here would need a "
                             "right/wrong verdict per item; `calibrate report` shows how the judge's scores follow "
                             "people's" if kind.scored else
                             f"its values ({', '.join(kind.labels)}) say more than right or wrong (see `calibrate report`)")
            del kinds[(task, lang)]
    judges = list(dict.fromkeys(judges)) or store.judge_names(system=system)
    passed_over = c3_passed_over(store, system=system)
    rows = store.score_groups(judges, kinds, by_reference=[k for k, kind in kinds.items() if kind.needs_gold],
                              system=system, c3_rule=c3_right, unjudged=passed_over)
    found = []
    for task, lang, item_system, reference, gold, *rest in rows:
        kind, people_decide = kinds[(task, lang)], not prompted[(task, lang)]
        # the store keeps the reference of the items with a label or a verdict: one of those without is without gold
        no_gold = kind.needs_gold and reference is None and (
            gold is not None or any(status is not None for status in rest[:-1:4]))
        group = _Group(task, lang, item_system or NO_SYSTEM, item_system,
                       np.nan if gold is None or no_gold else float(_right(kind, gold, reference)), people_decide,
                       rest[-1], _words(kind), no_gold=no_gold)
        for k, name in enumerate(judges):
            status, verdict, correct, rule = rest[4 * k : 4 * k + 4]
            if status is None or people_decide:
                continue
            if status != "verdict" or no_gold:
                parsed = np.nan
            elif correct is not None and kind.right_by_reference:
                parsed = float(correct)
            else:
                parsed = float(_right(kind, verdict, reference))
            group.verdicts[name] = (parsed, None if rule is None else bool(rule))
            group.stored[name] = (status, verdict)
        found.append(group)
    notes = [f"{task} left out: {why}" for task, why in sorted(skipped.items())]
    repeats = Counter((p.task, p.lang) for p in passed_over.values() if (p.task, p.lang) in kinds)
    if repeats:
        n, where = sum(repeats.values()), ", ".join(f"{t} ({lang}): {k}" for (t, lang), k in sorted(repeats.items()))
        notes.append(f"{counted(n, 'item')} ({where}) {'repeats' if n == 1 else 'repeat'} an earlier item's notation or "
                     "first turn, which C3's evaluate.py passes over: no verdict on them counts, as export c3 writes no "
                     "record of them and judge does not ask them")
    ties: dict[tuple[str, str, str], int] = defaultdict(int)
    for (task, lang, item_system), n in store.score_ties(kinds, system=system).items():
        ties[(task, lang, item_system or NO_SYSTEM)] += n
    own = _own_decisions(store, {(g.task, g.lang, g.stored_system): kinds[(g.task, g.lang)] for g in found
                                 if g.people_decide and _family(g.task) == "c3"}, judges)
    return found, notes, ties, set(passed_over), own


def _own_decisions(store: Store, cells: dict[tuple[str, str, str], object],
                   judges: list[str]) -> dict[tuple[str, str], tuple[int, list[str]]]:
    """(judge, cell as shown) -> what counting the people's decisions on a C3 generation cell as
    that judge's own result files held them (`formats.c3.c3_file_decisions`), as C3's
    process_results.py counts them, changes in its C3-rule count of right items against the
    label in force (+1 where its file says yes and the gold label does not, -1 the other way),
    and where its file and the label in force differ (`formats.c3.OwnDecisions.of`)."""
    own: dict[tuple[str, str], tuple[int, list[str]]] = {}
    for (task, lang, item_system), kind in cells.items():
        decisions = c3_file_decisions(store, task, lang, item_system)
        if not any(judge in decisions for judge in judges):
            continue
        labels: dict[int, dict[str, str]] = defaultdict(dict)
        source_ids: dict[int, str] = {}
        for row in store.current_labels(task=task, lang=lang, system=item_system):
            labels[row["item_id"]][row["annotator"]] = row["label"]
            source_ids[row["item_id"]] = row["source_id"]
        cell = f"{item_system or NO_SYSTEM} · {task} · {lang}"
        for judge in judges:
            delta, differing = 0, []
            files = OwnDecisions(decisions.get(judge, {}))
            source_ids.update((item_id, d.source_id) for item_id, d in files.decisions.items())
            for item_id in sorted(labels.keys() | files.decisions.keys()):
                gold = gold_label(labels.get(item_id, {}))[0]
                label, differs = files.of(item_id, source_ids[item_id], gold)
                delta += (label is not None and _right(kind, label, None)) - (gold is not None and _right(kind, gold, None))
                if differs:
                    differing.append(differs)
            if delta or differing:
                own[(judge, cell)] = (delta, differing)
    return own


def _words(kind) -> tuple[str, str]:
    """The labels that mean right and wrong, as people and judges give them: a yes/no kind's
    own ('yes', 'no'; '是', '否'); right and wrong where a label is right by the reference."""
    if kind.right_by_reference:
        return correction.CLASSES
    return kind.positive, next(label for label in kind.labels if label != kind.positive)


def _shared_words(groups: list[_Group]) -> tuple[str, str]:
    """The groups' words for right and wrong where they all share them, else right and wrong."""
    words = {g.words for g in groups}
    return words.pop() if len(words) == 1 else correction.CLASSES


def _right(kind, label: str, reference: str | None) -> bool:
    """A verdict or label means the system's response is right: it is the reference (`right_by_reference`), or
    else the kind's positive label."""
    if not kind.right_by_reference:
        return kind.polarity(label) == POSITIVE
    return reference is not None and kind.canonical(label) == kind.canonical(reference)


PEOPLE_DECIDE = "people decide these items (no judge prompt): no judge verdicts to correct"
PEOPLE_DECIDED_HERE = ("it counts the judged items only, and this row also holds items people decide: the corrected "
                       "column counts both")
NO_GOLD = "no item the judge judged here has a gold label: its verdicts are neither right nor wrong, nothing to correct"


def _cell(key: tuple[str, str, str], members: list[_Group], target: float,
          family_judges: dict[tuple[str, str, str], set[str]], memo: dict, ties: dict[tuple[str, str, str], int],
          configurations: list[tuple], own: dict[tuple[str, str], tuple[int, list[str]]]) -> ScoreCell:
    """One cell's figures; `configurations` are the store's counts of the verdicts in force per
    judge configuration (`Store.configuration_counts`), to note a judge whose verdicts here come
    from several; `own` the judges' own generation decisions (`_own_decisions`), for their C3 rule."""
    graded = [m for m in members if not m.no_gold]
    y = _repeat([m.human for m in graded], graded)
    labelled = ~np.isnan(y)
    people = proportion(int(np.nansum(y)), int(labelled.sum()), none_reason="no labelled items")
    cells, names = _cells_of(graded)
    if len(names) > 1 and labelled.any():
        # over several cells, whose labels sample each its own cell: each cell's people's accuracy weighted by its
        # share of the items (the pooled estimate with no verdict to stratify by), or none where a cell has none
        pooled = pooled_stratified_mean(np.zeros(len(y)), y, cells, names, random_sample=True, memo=memo,
                                        figure="people's accuracy")
        people = Estimate(pooled.value, pooled.ci, pooled.se, reason=pooled.reason)
    judges = sorted({j for m in members for j in m.verdicts}
                    | {j for m in members if m.people_decide for j in family_judges[(m.system, _family(m.task), m.lang)]})
    by_any = sum(m.n for m in members if any(judged(status) for status, _ in m.stored.values()))
    cell = ScoreCell(*key, items=sum(m.n for m in members), judged=by_any,
                     labelled=int(labelled.sum()), people=people,
                     tied=sum(ties.get(k, 0) for k in {(m.task, m.lang, m.system) for m in members}),
                     no_gold=sum(m.n for m in members if m.no_gold))
    not_random = None  # why the labels do not look like a random sample of a cell, by a judge's verdicts
    for name in judges:
        judged_here = [m for m in members if name in m.verdicts]
        rows = [m for m in judged_here if not m.no_gold]  # the items its verdicts are right or wrong on
        statuses = Counter()
        for m in judged_here:
            statuses[m.stored[name][0]] += m.n
        # as C3's statistics: the items people decide count for every judge of their system's
        # benchmark in their language, by the human label (wrong while unlabelled), beside the judge's own items
        decided = [m for m in members if m.people_decide and name in family_judges[(m.system, _family(m.task), m.lang)]]
        # a row pooling cells: the judge's figures cover the cells of the benchmarks it judges in the row, and
        # need its verdicts in each of them that has a judge prompt
        families = {_family(m.task) for m in judged_here + decided}
        without = _without_verdicts([m for m in members if _family(m.task) in families], {m.cell for m in judged_here})
        verdicts = _repeat([m.verdicts[name][0] for m in rows], rows)
        parsed = np.concatenate([verdicts, _repeat([np.nan_to_num(m.human, nan=0.0) for m in decided], decided)])
        rule_known = all(m.verdicts[name][1] is not None for m in judged_here)
        rules_right = sum(m.n for m in rows if m.verdicts[name][1]) + sum(m.n for m in decided if m.human == 1)
        # C3's rule counts the generation decisions as this judge's own result files held them
        own_cells = [own[(name, c)] for c in sorted({m.cell for m in decided}) if (name, c) in own]
        rules_right += sum(delta for delta, _ in own_cells)
        # C3's rule divides as process_results.py does: by every item any judge shown has a record for (a
        # verdict or an error), one this judge has none for counting wrong, beside the items people decide
        recorded = sum(m.n for m in members if m.verdicts and _family(m.task) in families)
        no_record = recorded - len(verdicts)
        f = np.nan_to_num(parsed, nan=0.0)
        ok = ~np.isnan(parsed)
        # the judge's evidence: only the items it judged
        fj, yj = np.nan_to_num(verdicts, nan=0.0), _repeat([m.human for m in rows], rows)
        cells, names = _cells_of(rows)
        for k, cell_name in enumerate(names):  # people's accuracy rests on the same sample as the judge's figures
            if not_random is None and (why := correction.not_random_sample(fj[cells == k], yj[cells == k])):
                not_random = f"{cell_name}: " * (len(names) > 1) + f"by {name}'s verdicts, {why}"
        # the row's items people decide count in its corrected figure as in its accuracies, a stratum of their own
        known = _decided(decided) if len(fj) else None
        corrected = pooled_stratified_mean(fj, yj, cells, names, random_sample=True, memo=memo,
                                           decided=known.stratum if known else None)
        ppi = correction.ppi_mean(fj, yj, random_sample=True)
        rogan_gladen = correction.rogan_gladen(fj, yj, random_sample=True, classes=_shared_words(rows))
        # the plan spreads the labels over the judged cells and the items people decide alike
        f_plan, y_plan, cells_plan = _with_decided(fj, yj, cells, decided)
        plan = correction.stratified_labels_needed(f_plan, y_plan, random_sample=True, target=target, now=corrected,
                                                   cells=cells_plan)
        if without:
            why = _without_reason(f"{name}: no verdicts", without, members, rule_known)
            corrected, ppi, rogan_gladen = _withheld(corrected, why), _withheld(ppi, why), _withheld(rogan_gladen, why)
            plan = replace(plan, more=None, reason=why)
        elif not rows:
            why = PEOPLE_DECIDE if decided else NO_GOLD
            corrected, ppi, rogan_gladen = replace(corrected, reason=why), replace(ppi, reason=why), replace(rogan_gladen, reason=why)
            plan = replace(plan, more=None, reason=why)
        elif len(names) > 1:  # PPI++ and Rogan-Gladen take the labels as one random sample of all the items
            why = ONE_CELL_ONLY if corrected.value is not None else corrected.reason
            ppi, rogan_gladen = _withheld(ppi, why), _withheld(rogan_gladen, why)
        elif known:  # nor can they count the items people decide
            ppi, rogan_gladen = _withheld(ppi, PEOPLE_DECIDED_HERE), _withheld(rogan_gladen, PEOPLE_DECIDED_HERE)
        places = {(m.task, m.lang, m.stored_system) for m in rows}
        mixed = mixed_configurations(name, [(task, lang, config, n) for task, lang, item_system, judge, config, n
                                            in configurations if judge == name and (task, lang, item_system) in places])
        raw = [Accuracy(rules_right, len(parsed) + no_record), Accuracy(int(f.sum()), len(parsed)),
               Accuracy(int(parsed[ok].sum()), int(ok.sum()))]
        if without:  # over only some of the row's cells: not this row's accuracy (C3's rule counts them all, as C3)
            raw = [raw[0] if rule_known else Accuracy(None, None), Accuracy(None, None), Accuracy(None, None)]
        cell.judges.append(JudgeScores(
            judge=name, judged=sum(n for status, n in statuses.items() if judged(status)),
            unparsed=statuses["unparsed"], errors=statuses[FAILED], c3_rule=raw[0] if rule_known else None,
            c3_no_record=no_record if rule_known else 0, c3_own_decisions=[d for _, found in own_cells for d in found],
            parser_unparsed_wrong=raw[1], parser_unparsed_left_out=raw[2],
            corrected=corrected, rogan_gladen=rogan_gladen, plan=plan, ppi=ppi, without_verdicts=without,
            other_benchmarks=sum(m.n for m in members if _family(m.task) not in families), configurations=mixed,
            decided=known if corrected.value is not None else None,
        ))
    if not_random and cell.people.value is not None:
        cell.people = Estimate(None, reason=not_random + ": people's accuracy on them says little of the cell's")
    c3 = [m for m in members if _family(m.task) == "c3"]
    c3_judges = sorted({j for m in c3 for j in m.verdicts})
    common = [m for m in c3 if m.verdicts and all(j in m.verdicts for j in c3_judges)]
    if len(c3_judges) > 1 and common:
        f = np.repeat(np.array([[np.nan_to_num(m.verdicts[j][0], nan=0.0) for j in c3_judges] for m in common]),
                      [m.n for m in common], axis=0)
        raws = [j.c3_rule.value if j.c3_rule else None for j in cell.judges if j.judge in c3_judges]
        raw = float(np.mean(raws)) if all(r is not None for r in raws) else None
        # the items people decide that every one of these judges counts (`decided` above)
        known = _decided([m for m in c3 if m.people_decide and all(
            j in family_judges[(m.system, _family(m.task), m.lang)] for j in c3_judges)])
        corrected = pooled_stratified_mean(f, _repeat([m.human for m in common], common), *_cells_of(common),
                                           random_sample=True, memo=memo, decided=known.stratum if known else None)
        without = _without_verdicts(c3, {m.cell for m in common})
        if without:
            corrected = _withheld(corrected, _without_reason(
                f"the judges' mean: {', '.join(c3_judges)} do not all have verdicts", without, members, raw is not None))
        cell.final = Final(c3_judges, raw, corrected, without, known if corrected.value is not None else None)
    return cell


def _decided(members: list[_Group]) -> Decided | None:
    """The items of `members` (groups of tasks people decide) as a row's corrected figure counts
    them (None for none)."""
    items = sum(m.n for m in members)
    if not items:
        return None
    return Decided(items, sum(m.n for m in members if m.human == 1), sum(m.n for m in members if np.isnan(m.human)))


def _with_decided(verdicts: np.ndarray, labels: np.ndarray, cells: np.ndarray,
                  decided: list[_Group]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The judged items' verdicts, labels and cells, with the `decided` items (people decide them)
    after them as a cell of their own, one verdict for all (the arrays as they are without any)."""
    if not decided:
        return verdicts, labels, cells
    return (np.concatenate([verdicts, np.zeros(sum(m.n for m in decided))]),
            np.concatenate([labels, _repeat([m.human for m in decided], decided)]),
            np.concatenate([cells, np.full(sum(m.n for m in decided), (cells.max() + 1) if len(cells) else 0)]))


def _without_verdicts(members: list[_Group], judged: set[str]) -> list[str]:
    """The cells of `members` with a judge prompt that are not among the `judged` cells."""
    return sorted({m.cell for m in members if not m.people_decide} - judged)


def _without_reason(lead: str, without: list[str], members: list[_Group], c3_rule: bool = False) -> str:
    """Why a pooled row gives no raw or corrected accuracy: `lead` (whose verdicts are missing),
    then the cells without them, named, with their items; with `c3_rule`, that C3's rule is
    given all the same (it counts those items as C3's process_results.py does)."""
    items = sum(m.n for m in members if m.cell in without)
    shown = ("no parser or corrected accuracy over this row: it would leave those items out (the C3 rule counts "
             "them as C3's process_results.py does: wrong where another judge shown has a record, else not at all)"
             if c3_rule else "no raw or corrected accuracy over this row: it would leave those items out")
    return (f"{lead} in {len(without)} of the cells pooled here ({', '.join(without)}; {items} of its "
            f"{counted(sum(m.n for m in members), 'item')}), so {shown}")


def _withheld(estimate, why: str):
    """`estimate` (Corrected or RoganGladen) with its number and interval taken away, `why` given."""
    gone = {"lam": None, "posterior": None} if isinstance(estimate, correction.Corrected) else {}
    return replace(estimate, value=None, ci=None, se=None, reason=why, approximate=None, **gone)


ONE_CELL_ONLY = ("it rests on one random sample of labels, and these items pool several cells, each labelled "
                 "on its own: the corrected column combines them cell by cell")


def _cells_of(members: list[_Group]) -> tuple[np.ndarray, list[str]]:
    """The cell (system · task · lang) of each item of `members`, as an index into the names:
    the unit whose labels are one random sample."""
    names = sorted({m.cell for m in members})
    return _repeat([names.index(m.cell) for m in members], members, np.int64), names


def _family(task: str) -> str:
    """The benchmark a task belongs to (c3, superglue, rubric)."""
    return task.split("/", 1)[0]


def _rankings(cells: list[ScoreCell], by: tuple[str, ...],
              pool: ThreadPoolExecutor) -> list[tuple[str, ranking.Ranking]]:
    """Systems ranked within each scope (the same task and language, or overall) and by each
    judge (and the final score), where at least two systems have a cell; on `pool`'s threads
    (each ranking's draws are numpy's work, as the cells' are)."""
    if "system" not in by:
        return []
    scopes: dict[tuple[str, str, str], dict[str, correction.Corrected]] = defaultdict(dict)
    for cell in cells:
        for judge, estimate in cell.estimates().items():
            scopes[(cell.task, cell.lang, judge)][cell.system] = estimate
    ranked = [(key, members) for key, members in sorted(scopes.items()) if len(members) > 1]
    found = list(pool.map(ranking.rank, [members for _, members in ranked]))
    return [(_scope(*key), rank) for (key, _), rank in zip(ranked, found, strict=True)]


def _scope(task: str, lang: str, judge: str) -> str:
    where = "overall" if task == ALL and lang == ALL else " ".join(p for p in (task, lang) if p != ALL)
    return f"{where}, by {judge}"


def _judge_pairs(groups: list[_Group], by: tuple[str, ...]) -> list[JudgePair]:
    """Every pair of judges over all items both judged, and per language (C3's judges are
    compared per language in its paper). Items where either verdict is unparsed or an error
    are left out and counted (`JudgePair.left_out_unparsed`, `left_out_errors`): read as "no"
    they would pass for a verdict."""
    groups = [g for g in groups if g.verdicts and not g.no_gold]
    judges = sorted({j for g in groups for j in g.verdicts})
    pairs = []
    scopes = [("all items", groups)] + [(lang, [g for g in groups if g.lang == lang])
                                        for lang in sorted({g.lang for g in groups})]
    for k, a in enumerate(judges):
        for b in judges[k + 1:]:
            for scope, members in scopes:
                judged = [g for g in members if a in g.verdicts and b in g.verdicts]
                if not judged:
                    continue
                both = [g for g in judged if not np.isnan(g.verdicts[a][0]) and not np.isnan(g.verdicts[b][0])]
                table = np.zeros((2, 2), dtype=np.int64)  # right / wrong of a x of b
                for g in both:
                    table[int(g.verdicts[a][0] != 1), int(g.verdicts[b][0] != 1)] += g.n
                kappa = two_raters(table=table, labels=_shared_words(judged), raters=(a, b)).kappa
                lab = [g for g in both if not np.isnan(g.human)]
                agree_a = _repeat([g.verdicts[a][0] == g.human for g in lab], lab, bool)
                agree_b = _repeat([g.verdicts[b][0] == g.human for g in lab], lab, bool)
                tracks = positive_rate_difference(agree_a, agree_b)
                n = sum(g.n for g in both)
                errors = sum(g.n for g in judged if FAILED in (g.stored[a][0], g.stored[b][0]))
                pairs.append(JudgePair(scope, a, b, n, kappa, len(agree_a), tracks,
                                       sum(g.n for g in judged) - n - errors, errors))
    return pairs


def _rule_differences(store: Store, groups: list[_Group], passed_over: set[int]) -> list[str]:
    """Why the C3-rule column differs from the parser column: each output the two read
    differently, with its last line, item by item, the items C3 passes over aside (their
    verdicts count nowhere). On C3's tasks (yes/no) the parser's reading
    is the stored status and verdict's, so those and the rule's reading find the items."""
    differing = {(g.task, g.lang, g.stored_system, judge, *g.stored[judge], rule)
                 for g in groups for judge, (parsed, rule) in g.verdicts.items()
                 if rule is not None and (parsed == 1) != rule}
    found = []
    for task, lang, system, judge, status, verdict, rule in sorted(differing, key=str):
        parsed = next(g.verdicts[judge][0] for g in groups if (g.task, g.lang, g.stored_system) == (task, lang, system)
                      and g.stored.get(judge) == (status, verdict))
        for item_id, source_id, raw in store.rule_judgments(task, lang, system, judge, (status, verdict), C3_RULE, rule):
            if item_id not in passed_over:
                found.append((item_id, judge, system or NO_SYSTEM, task, lang, source_id, parsed, rule, raw))
    out = []
    for _, judge, system, task, lang, source_id, parsed, rule, raw in sorted(found, key=lambda f: (f[0], f[1])):
        last = next((line.strip() for line in reversed((raw or "").splitlines()) if line.strip()), "(empty output)")
        parser = "unparsed" if np.isnan(parsed) else ("right" if parsed == 1 else "wrong")
        out.append(f"{system} {task} ({lang}) {source_id}, {judge}: C3's rule says "
                   f"{'right' if rule else 'wrong'}, calibrate's parser {parser}; last line: {last}")
    return out


def c3_corrected_in(path: str, templates: TemplateSet, lang: str, system: str, judges: list[str]) -> dict[str, dict]:
    """`formats.c3_figures.c3_corrected` for one system's items of the database file at `path`, read on
    a read-only connection of its own: `export c3` works it out in a child process
    (`in_child_process`) while it writes the result files, since the corrected scores'
    statistics take seconds to import and compute at a million items. Only C3's tasks in `lang`
    are scored, by `judges` only: "overall" pools no other benchmark's items of the system in
    that language, and the judges' mean is the exported judges', not every judge's. {} when
    there is nothing to score (`ScoresError`)."""
    store = Store(path, read_only=True)
    try:  # calibrate's corrected accuracy per category and overall, beside C3's own figures
        per_task, overall = (scores.cells for scores in build_scores_by(
            store, templates, (("system", "task", "lang"), ("system", "lang")), judges=judges, system=system,
            task_langs={(part.task, lang) for part in C3_LAYOUT[lang]}))
    except ScoresError:
        per_task = overall = []
    finally:
        store.close()
    return c3_corrected(per_task, overall, lang, judges)
