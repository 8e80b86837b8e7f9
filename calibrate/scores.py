"""The benchmark's scores per system under test, raw and corrected for the judge's errors
(`calibrate scores`).

A judge's accuracy figure for a system is what a benchmark publishes; it is biased by the
judge's mistakes. Per system × task × language (and per system overall) this module puts side
by side: the judge's accuracy three ways (C3's own scoring rule, calibrate's parser with
unparsed verdicts counted wrong, and with them left out), people's accuracy on the items they
labelled, and the corrected accuracy from both (PPI++ as the main estimate, Rogan–Gladen
beside it; the statistics live in calibrate.stats.correction). For C3 the final score is the mean
over the judges, raw and corrected. Systems are ranked with the interval of every pairwise
difference; judges are compared with each other (Cohen's κ) and with people (the paired
difference of their agreement with people); and each cell says how many more random labels
would bring its corrected interval under the target half-width.

Right and wrong: for a yes/no kind a verdict or label is "right" when it means yes (C3:
the system's answer is correct); for a label-set kind (SuperGLUE) when it equals the item's
reference (the gold label). Items with several annotators use the majority label (a tie
counts as unlabelled). Score kinds (the rubric) have no right/wrong and are left out. Tasks
without a judge prompt (C3's generation phenomena) are decided by people: as in C3's own
statistics, they count in every judge's accuracy of their benchmark by the human label, and
as wrong while unlabelled.
"""

from __future__ import annotations

import csv
import html
import io
import json
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from calibrate.display import markdown_safe, safe, safe_json, spreadsheet_safe
from calibrate.formats.c3 import c3_right
from calibrate.formats.gold import consolidated
from calibrate.kinds import POSITIVE
from calibrate.model import CalibrateError, Estimate
from calibrate.stats import correction
from calibrate.stats.agreement import two_raters
from calibrate.stats.reliability import paired_difference
from calibrate.store import Store
from calibrate.templates import TemplateError, TemplateSet

BY_CHOICES = ("system", "task", "lang")
ALL = "(all)"
NO_SYSTEM = "(none)"
FINAL = "mean of judges"


class ScoresError(CalibrateError):
    """Scores that cannot be computed as asked (an unknown --by dimension, no data)."""


@dataclass
class Accuracy:
    """right / n, or no value when n is 0."""

    right: int
    n: int

    @property
    def value(self) -> float | None:
        return self.right / self.n if self.n else None

    def text(self) -> str:
        return f"{self.right}/{self.n} {self.value:.0%}" if self.n else "—"

    def as_dict(self) -> dict:
        return {"right": self.right, "n": self.n, "accuracy": self.value}


@dataclass
class JudgeScores:
    """One judge's figures in one cell. `judged` counts the items this judge judged; the
    accuracies also count the cell's items that people decide (see the module docstring)."""

    judge: str
    judged: int
    unparsed: int
    c3_rule: Accuracy | None  # None outside C3
    parser_unparsed_wrong: Accuracy
    parser_unparsed_left_out: Accuracy
    corrected: correction.Corrected
    rogan_gladen: correction.RoganGladen
    plan: correction.LabelPlan

    def as_dict(self) -> dict:
        return {
            "judge": self.judge, "judged": self.judged, "unparsed": self.unparsed,
            "c3_rule": self.c3_rule.as_dict() if self.c3_rule else None,
            "parser_unparsed_wrong": self.parser_unparsed_wrong.as_dict(),
            "parser_unparsed_left_out": self.parser_unparsed_left_out.as_dict(),
            "corrected_ppi": self.corrected.as_dict(), "rogan_gladen": self.rogan_gladen.as_dict(),
            "more_labels_for_target": self.plan.more, "plan_reason": self.plan.reason,
        }


@dataclass
class Final:
    """C3's final score: the mean over its judges, raw (each judge's accuracy by C3's rule) and
    corrected (PPI++ with the judges' mean verdict as the prediction, on the C3 items every one
    of them judged)."""

    judges: list[str]
    raw: float | None
    corrected: correction.Corrected

    def as_dict(self) -> dict:
        return {"judges": self.judges, "raw": self.raw, "corrected_ppi": self.corrected.as_dict()}


@dataclass
class Cell:
    system: str
    task: str
    lang: str
    items: int
    judged: int
    labelled: int
    people: Estimate
    judges: list[JudgeScores] = field(default_factory=list)
    final: Final | None = None

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.system, self.task, self.lang)

    def estimates(self) -> dict[str, correction.Corrected]:
        """The corrected estimates systems are ranked by: each judge's, and the final score."""
        out = {j.judge: j.corrected for j in self.judges}
        if self.final is not None:
            out[FINAL] = self.final.corrected
        return out

    def as_dict(self) -> dict:
        return {
            "system": self.system, "task": self.task, "lang": self.lang, "items": self.items, "judged": self.judged,
            "labelled": self.labelled, "people": self.people.as_dict(), "judges": [j.as_dict() for j in self.judges],
            "final": self.final.as_dict() if self.final else None,
        }


@dataclass
class JudgePair:
    """Two judges on the same items of one scope: agreement with each other, and which tracks
    people better (agreement of a with people minus agreement of b, paired over the items
    both judged and people labelled)."""

    scope: str
    a: str
    b: str
    n: int
    kappa: Estimate
    n_labelled: int
    tracks_people: Estimate

    def as_dict(self) -> dict:
        return {"scope": self.scope, "a": self.a, "b": self.b, "n": self.n, "kappa": self.kappa.as_dict(),
                "n_labelled": self.n_labelled, "agreement_with_people_a_minus_b": self.tracks_people.as_dict()}


@dataclass
class Scores:
    by: tuple[str, ...]
    target: float
    cells: list[Cell]
    rankings: list[tuple[str, correction.Ranking]]
    judge_pairs: list[JudgePair]
    rule_differences: list[str]
    notes: list[str]

    def as_dict(self) -> dict:
        return {
            "by": list(self.by), "target_half_width": self.target, "cells": [c.as_dict() for c in self.cells],
            "rankings": [
                {"scope": scope, "order": r.order, "unranked": r.unranked,
                 "pairs": [{"a": p.a, "b": p.b, "difference": p.difference.as_dict(), "separated": p.separated}
                           for p in r.pairs]}
                for scope, r in self.rankings
            ],
            "judge_pairs": [p.as_dict() for p in self.judge_pairs],
            "why_the_c3_rule_differs": self.rule_differences, "notes": self.notes,
        }


# -- building ----------------------------------------------------------------------------------


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
    unknown = [d for d in by if d not in BY_CHOICES]
    if unknown or not by:
        raise ScoresError(f"--by takes {', '.join(BY_CHOICES)} (comma-separated), not {','.join(by) or 'nothing'}")
    items, notes = _gather(store, templates, judge, system)
    if not any(i.verdicts for i in items):
        raise ScoresError("no judged items with right/wrong verdicts to score" + (f" for system {system!r}" if system else "")
                          + "".join(f"; {note}" for note in notes))
    groups: dict[tuple[str, str, str], list[_Item]] = defaultdict(list)
    for item in items:
        key = tuple(getattr(item, d) if d in by else ALL for d in ("system", "task", "lang"))
        groups[key].append(item)
        if "system" in by and len(by) > 1:
            groups[(item.system, ALL, ALL)].append(item)
    cells = [_cell(key, members, target) for key, members in sorted(groups.items())]
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
        gold, _ = consolidated(labels.get(item_id, {}))
        human = np.nan if gold is None else float(_right(kind, gold, reference))
        items[item_id] = _Item(item_id, task, lang, item_system or NO_SYSTEM, source_id, human,
                               not prompted[(task, lang)])
        references[item_id] = reference
    for item_id, judge_name, status, verdict, correct, raw in data["judgments"]:
        item = items.get(item_id)
        if item is None:
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


def _cell(key: tuple[str, str, str], members: list[_Item], target: float) -> Cell:
    y = np.array([m.human for m in members])
    labelled = ~np.isnan(y)
    people = correction.wilson(int(np.nansum(y)), int(labelled.sum()))
    judges = sorted({j for m in members for j in m.verdicts})
    cell = Cell(*key, items=len(members), judged=sum(bool(m.verdicts) for m in members),
                labelled=int(labelled.sum()), people=people)
    for name in judges:
        rows = [m for m in members if name in m.verdicts]
        judged = len(rows)
        families = {_family(m.task) for m in rows}
        decided = [m for m in members if m.people_decide and _family(m.task) in families]
        parsed = np.array([m.verdicts[name][0] for m in rows] + [np.nan_to_num(m.human, nan=0.0) for m in decided])
        rules = [m.verdicts[name][1] for m in rows] + [m.human == 1 for m in decided]
        rows = rows + decided
        f = np.nan_to_num(parsed, nan=0.0)
        yj = np.array([m.human for m in rows])
        ok = ~np.isnan(parsed)
        cell.judges.append(JudgeScores(
            judge=name, judged=judged, unparsed=int((~ok).sum()),
            c3_rule=Accuracy(sum(bool(r) for r in rules), len(rules)) if all(r is not None for r in rules) else None,
            parser_unparsed_wrong=Accuracy(int(f.sum()), len(rows)),
            parser_unparsed_left_out=Accuracy(int(parsed[ok].sum()), int(ok.sum())),
            corrected=correction.ppi_mean(f, yj, random_sample=True),
            rogan_gladen=correction.rogan_gladen(f, yj, random_sample=True),
            plan=correction.labels_needed(f, yj, random_sample=True, target=target),
        ))
    c3 = [m for m in members if _family(m.task) == "c3"]
    c3_judges = sorted({j for m in c3 for j in m.verdicts})
    common = [m for m in c3 if m.verdicts and all(j in m.verdicts for j in c3_judges)]
    if len(c3_judges) > 1 and common:
        f = np.array([[np.nan_to_num(m.verdicts[j][0], nan=0.0) for j in c3_judges] for m in common])
        raws = [j.c3_rule.value if j.c3_rule else None for j in cell.judges if j.judge in c3_judges]
        raw = float(np.mean(raws)) if all(r is not None for r in raws) else None
        corrected = correction.ppi_mean(f, np.array([m.human for m in common]), random_sample=True)
        cell.final = Final(c3_judges, raw, corrected)
    return cell


def _family(task: str) -> str:
    """The benchmark a task belongs to (c3, superglue, rubric)."""
    return task.split("/", 1)[0]


def _rankings(cells: list[Cell], by: tuple[str, ...]) -> list[tuple[str, correction.Ranking]]:
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
                tracks = paired_difference(agree_a, agree_b)
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


# -- rendering -----------------------------------------------------------------------------------

COLUMNS = ["system", "task", "lang", "judge", "items", "judged", "labelled", "C3 rule", "parser (unparsed wrong)",
           "parser (unparsed left out)", "people", "corrected (PPI++)", "Rogan–Gladen", "more labels", "note"]
RULE_EXPLAINED = (
    "C3 rule: C3's own statistics script (split on \"The answer is: \" / \"最终答案为：\", right iff the rest starts "
    "with yes/是), so a bold, full-width-colon or space-less \"yes\" counts as wrong; parser: calibrate's tolerant "
    "parser. Corrected: PPI++ (Angelopoulos et al. 2023) from every judge verdict plus the human labels, 95 % "
    "interval; Rogan–Gladen from the judge's sensitivity and specificity on labelled items. Labels are taken as a "
    "random sample of their cell (a test flags cells where they clearly are not). Items people decide (C3's "
    "generation phenomena) count in each judge's accuracy by their human label, as wrong while unlabelled, as in "
    "C3's statistics.")


class Footnotes:
    """Long reasons said once below the table and referred to by number in it."""

    def __init__(self):
        self.texts: list[str] = []

    def ref(self, text: str | None) -> str:
        if not text:
            return ""
        if text not in self.texts:
            self.texts.append(text)
        return f"[{self.texts.index(text) + 1}]"

    def lines(self) -> list[str]:
        return [f"[{k}] {text}" for k, text in enumerate(self.texts, 1)]


class InlineNotes(Footnotes):
    """Reasons written in full where they apply (for CSV, which has no place below a table)."""

    def ref(self, text: str | None) -> str:
        return f"{text}. " if text else ""


def _estimate_text(value: float | None, ci, reason: str | None) -> str:
    if value is None:
        return "—"
    text = f"{value:.0%}"
    return text + (f" [{ci[0]:.0%}, {ci[1]:.0%}]" if ci else "")


def rows(scores: Scores, notes: Footnotes) -> list[list[str]]:
    """One row per cell and judge (and a final row per cell with several judges), as
    terminal-safe text (display.safe: names come from data); reasons go to `notes`."""
    return [[safe(value) for value in row] for row in _rows(scores, notes)]


def _rows(scores: Scores, notes: Footnotes) -> list[list[str]]:
    out = []
    for cell in scores.cells:
        people = cell.people
        people_text = _estimate_text(people.value, people.ci, None) if cell.labelled else "—"
        for j in cell.judges:
            note = notes.ref(j.corrected.reason)
            if j.rogan_gladen.reason and j.rogan_gladen.reason != j.corrected.reason:
                note += notes.ref(f"Rogan–Gladen: {j.rogan_gladen.reason}")
            if j.plan.reason and j.plan.reason != j.corrected.reason:
                note += notes.ref(f"more labels: {j.plan.reason}")
            more = str(j.plan.more) if j.plan.more is not None else "—"
            out.append([
                cell.system, cell.task, cell.lang, j.judge, str(cell.items), str(j.judged), str(cell.labelled),
                j.c3_rule.text() if j.c3_rule else "—", j.parser_unparsed_wrong.text(), j.parser_unparsed_left_out.text(),
                people_text, _estimate_text(j.corrected.value, j.corrected.ci, None),
                _estimate_text(j.rogan_gladen.value, j.rogan_gladen.ci, None), more, note,
            ])
        if cell.final is not None:
            f = cell.final
            out.append([
                cell.system, cell.task, cell.lang, FINAL, str(cell.items), str(cell.judged), str(cell.labelled),
                f"{f.raw:.0%}" if f.raw is not None else "—", "", "", people_text,
                _estimate_text(f.corrected.value, f.corrected.ci, None), "", "", notes.ref(f.corrected.reason),
            ])
    return out


def _ranking_lines(scores: Scores) -> list[str]:
    lines = []
    unranked: dict[str, list[str]] = defaultdict(list)
    for scope, ranking in scores.rankings:
        if len(ranking.order) > 1:
            lines.append(f"{scope}: " + " > ".join(ranking.order))
            for p in ranking.pairs:
                d = p.difference
                lines.append(f"  {p.a} − {p.b}: {_estimate_text(d.value, d.ci, None)}"
                             f" ({'a real difference' if p.separated else 'the interval includes 0: not a real difference'})")
        for name, why in sorted(ranking.unranked.items()):
            unranked[why].append(f"{name} in {scope}")
    for why, where in unranked.items():
        shown = ", ".join(where[:4]) + (f" and {len(where) - 4} more" if len(where) > 4 else "")
        lines.append(f"not ranked ({why}): {shown}")
    if any(len(r.order) > 1 for _, r in scores.rankings):
        lines.append("each difference's interval treats the two systems' estimates as independent: conservative "
                     "when they answered the same items")
    return lines or ["(no scope with two or more systems)"]


def _pair_lines(scores: Scores) -> list[str]:
    lines = []
    for p in scores.judge_pairs:
        k = p.kappa
        kappa = f"κ {k.value:.2f}" + (f" [{k.ci[0]:.2f}, {k.ci[1]:.2f}]" if k.ci else "") if k.value is not None else f"κ — ({k.reason})"
        t = p.tracks_people
        tracks = (f"agreement with people {p.a} − {p.b}: {t.value:+.0%}" + (f" [{t.ci[0]:+.0%}, {t.ci[1]:+.0%}]" if t.ci else "")
                  + f" (n={p.n_labelled} labelled)" if t.value is not None else f"agreement with people: — ({t.reason})")
        lines.append(f"{p.scope}: {p.a} vs {p.b}, n={p.n}: {kappa}; {tracks}")
    return lines or ["(no items judged by two judges)"]


def sections(scores: Scores, notes: Footnotes) -> list[tuple[str, list[str]]]:
    """The parts below the table, as (title, lines) of terminal-safe text."""
    return [(title, [safe(line) for line in lines]) for title, lines in _sections(scores, notes)]


def _sections(scores: Scores, notes: Footnotes) -> list[tuple[str, list[str]]]:
    return [
        ("Notes", notes.lines() or ["(none)"]),
        ("Ranking of systems (corrected accuracy, 95 % interval of each difference)", _ranking_lines(scores)),
        ("Judge against judge", _pair_lines(scores)),
        ("Why the C3-rule column differs from the parser column", scores.rule_differences or ["(no output is read differently)"]),
        ("How the columns are computed", [RULE_EXPLAINED, f"more labels: random labels that would bring the PPI++ "
                                          f"interval under ±{scores.target:g}", *scores.notes]),
    ]


def render_table(scores: Scores, console) -> None:
    from rich.table import Table
    from rich.text import Text

    notes = Footnotes()
    if console.width < WIDE_TABLE:
        _render_cards(rows(scores, notes), console)
    else:
        table = Table(title="benchmark scores per system", show_lines=False)
        for n, column in enumerate(COLUMNS):
            table.add_column(column, overflow="fold", no_wrap=n < 3)
        for row in rows(scores, notes):
            table.add_row(*[Text(v) for v in row])
        console.print(table)
    for title, lines in sections(scores, notes):
        console.print(Text(title, style="bold"))
        for line in lines:
            console.print(Text(f"  {line}"))


WIDE_TABLE = 180
"""Terminal width from which the scores are one table; narrower terminals get a block per cell."""


def _render_cards(table_rows: list[list[str]], console) -> None:
    """The table's rows as a block per cell (a heading line, then a line or two per judge),
    for terminals too narrow for fifteen columns."""
    from rich.text import Text

    console.print(Text("benchmark scores per system", style="bold"))
    heading = None
    for (system, task, lang, judge, items, _judged, labelled, rule, parser, left_out, people, ppi, rg, more,
         note) in table_rows:
        if (system, task, lang) != heading:
            heading = (system, task, lang)
            console.print(Text(f"{system} · {task} · {lang}", style="bold cyan"), Text(
                f"  {items} items, {labelled} labelled, people {people}"))
        first = [f"C3 rule {rule}"] if rule != "—" or not parser else []
        if parser:
            first.append(f"parser {parser}" + (f" (unparsed left out {left_out})" if left_out != parser else ""))
        second = [f"corrected {ppi}"] + ([f"R–G {rg}"] if rg else []) + ([f"+labels {more}"] if more else [])
        console.print(Text(f"  {judge}: " + " · ".join(first)))
        console.print(Text("    " + " · ".join(second) + (f" {note}" if note else "")))


def render_markdown(scores: Scores) -> str:
    out = ["# Benchmark scores per system", "", "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    notes = Footnotes()
    out += ["| " + " | ".join(markdown_safe(v) for v in row) + " |" for row in rows(scores, notes)]
    for title, lines in sections(scores, notes):
        out += ["", f"## {title}", ""] + [f"- {markdown_safe(line)}" for line in lines]
    return "\n".join(out) + "\n"


def render_json(scores: Scores) -> str:
    # numpy numbers become plain ones first; safe_json then writes unsafe characters as \u escapes
    return safe_json(json.loads(json.dumps(scores.as_dict(), default=float))) + "\n"


def render_csv(scores: Scores) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(COLUMNS)
    writer.writerows([spreadsheet_safe(v) for v in row] for row in rows(scores, InlineNotes()))
    return buffer.getvalue()


def render_html(scores: Scores) -> str:
    e = html.escape
    head = "".join(f"<th>{e(c)}</th>" for c in COLUMNS)
    notes = Footnotes()
    body = "".join("<tr>" + "".join(f"<td>{e(v)}</td>" for v in row) + "</tr>" for row in rows(scores, notes))
    parts = "".join(f"<h2>{e(t)}</h2><ul>" + "".join(f"<li>{e(line)}</li>" for line in lines) + "</ul>"
                    for t, lines in sections(scores, notes))
    style = ("body{font-family:system-ui,'Noto Sans CJK SC',sans-serif;margin:2em;color:#222}"
             "table{border-collapse:collapse}td,th{border-bottom:1px solid #ddd;padding:5px 7px;font-size:13px;"
             "text-align:left;vertical-align:top;white-space:nowrap}td:last-child{white-space:normal}th{background:#f4f4f4;"
             "white-space:normal}li{font-size:13px;margin:2px 0}")
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>calibrate scores</title>'
            f"<style>{style}</style></head><body><h1>Benchmark scores per system</h1>"
            f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{parts}</body></html>\n")


RENDERERS = {"markdown": render_markdown, "json": render_json, "csv": render_csv, "html": render_html}
