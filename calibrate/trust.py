"""`calibrate trust`: per cell and judge (and system, when `--by` names it), the confidence above
which the judge's verdicts can be accepted without a person, and how to write it out (terminal
table, JSON, CSV, Markdown).

The items of each cell come from calibrate.reliability_cells (its verdict, confidence and human
label per item); the statistic is calibrate.stats.trust_or_escalate.trust_threshold (fixed-sequence
testing with an exact binomial bound; Jung et al., ICLR 2025).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass, field, fields

from calibrate.cells import CellKinds
from calibrate.configurations import MixedConfigurations, mixed_by_cell
from calibrate.escape import markdown_safe, safe, safe_json, spreadsheet_safe
from calibrate.fit import Columns, fit_table, hanging, said_once
from calibrate.reliability_cells import NO_SYSTEM, refusal_words, trust_by_cell
from calibrate.stats.trust_or_escalate import GRID_STEP, Trust, minimum_calibration
from calibrate.store import Store
from calibrate.templates import TemplateSet


@dataclass
class TrustRow:
    """One judge in one cell: the threshold found (or why none meets the target)."""

    system: str | None  # None unless the cells are cut by system
    task: str
    lang: str
    judge: str
    found: Trust
    configurations: MixedConfigurations | None = None  # where the judge's verdicts here come from several

    def as_dict(self) -> dict:
        return {"system": self.system, "task": self.task, "lang": self.lang, "judge": self.judge,
                **self.found.as_dict(),
                "configurations": self.configurations.as_dict() if self.configurations else None}


@dataclass
class TrustTable:
    """Every cell's row, with the target and risk they were found at and the fewest labelled
    items a threshold was certified from."""

    target: float
    risk: float
    rows: list[TrustRow]
    min_labels: int
    scored: list[tuple[str, str, str]] = field(default_factory=list)  # (task, lang, judge) left out: scores

    def scores_only(self) -> str | None:
        """Where the judges' only verdicts are scores, why there is nothing to trust, in words
        (None where there are rows, or no scored cell was judged)."""
        if self.rows or not self.scored:
            return None
        cells = ", ".join(f"{task} {lang} ({judge})" for task, lang, judge in self.scored)
        return (f"the judge verdicts are scores ({cells}): a score is not a yes/no or label verdict that could be "
                "accepted without a person, so there is no threshold to find. trust needs a yes/no or label verdict "
                "with a confidence (judge with --logprobs or --repeat K) and human labels; to see how the judge's "
                "scores follow people's, run calibrate report")


def build_trust(store: Store, templates: TemplateSet, *, by: tuple[str, ...], target: float, risk: float,
                judge: str | None = None, gold_from: str | None = None, min_labels: int | None = None,
                helpers: Sequence[Store] = ()) -> TrustTable:
    """The threshold of every judge in every categorical cell `by` names (scored cells have no
    verdict to accept or escalate), certified only from `min_labels` labelled items (None:
    `minimum_calibration(target, risk)`, 198 at 0.9 and 0.1). `helpers`: stores reading the
    same snapshot, which read part of the verdicts meanwhile (`reliability_cells.gather`)."""
    if min_labels is None:
        min_labels = minimum_calibration(target, risk)
    kinds = CellKinds(templates, by, scores_apart=True)  # scores have no verdict to accept: left out
    by_system = "system" in by
    found, _ = trust_by_cell(store, kinds, target=target, risk=risk, judge=judge, gold_from=gold_from,
                             by_system=by_system, min_labels=min_labels, helpers=helpers)
    # keyed as trust_by_cell keys its cells: the items of no system under NO_SYSTEM
    mixed = {(key, name, system or NO_SYSTEM if by_system else None): configurations
             for (key, name, system), configurations in
             mixed_by_cell(store.configuration_counts(judge=judge), kinds.key, by_system=by_system).items()}
    rows = [TrustRow(system, key[0], key[1], name, trust, mixed.get((key, name, system)))
            for (key, name, system), trust in found.items() if not kinds.scored(key)]
    rows.sort(key=lambda r: (r.system or "", r.task, r.lang, r.judge))
    scored = sorted({(*kinds.key(task, lang), name) for task, lang, _, name in store.judged_cells(judge)
                     if kinds.scored(kinds.key(task, lang))})
    return TrustTable(target, risk, rows, min_labels, scored)


COLUMNS = ["system", "task", "lang", "judge", "n", "threshold", "accepts", "lower bound", "agree", "shortfall"]


def _cells(table: TrustTable) -> tuple[list[str], list[list[str]], list[str]]:
    """The columns shown (system only when cut by system), each row as text, and notes (each
    once, with the rows it applies to): why the target cannot be met where it cannot, the
    labelled items left out of n for want of a confidence, and where the threshold lies well below the confidences of the labelled items it accepts (confidences
    that take a few values, as repeats' majority shares do)."""
    by_system = any(r.system is not None for r in table.rows)
    columns = COLUMNS if by_system else COLUMNS[1:]
    body, notes = [], []
    for r in table.rows:
        t = r.found
        where = f"{r.task} {r.lang} ({r.judge}{', ' + r.system if by_system else ''})"
        if r.configurations:
            notes.append((where, r.configurations.words()))
        if t.without_confidence:
            notes.append((where, _without_confidence_words(t.without_confidence)))
        if t.met:
            values = [f"{t.threshold:.3f}", f"{t.coverage:.0%} ({t.accepted})", f"{t.lower_bound:.3f}",
                      f"{t.agreement:.3f}", f"{t.shortfall:.3f}"]
            if t.lowest_accepted - t.threshold > 1.5 * GRID_STEP:  # more than one step (floats: 0.95 - 0.949 > 0.001)
                notes.append((where, f"threshold {t.threshold:.3f}: the labelled items it accepts have confidences "
                                     f"from {t.lowest_accepted:.3f} up, and none lies between (the threshold is the "
                                     "lowest of the grid 1.000, 0.999, … 0 that accepts the same labelled items)"))
        else:
            values = ["—"] * 5
            notes.append((where, refusal_words(t)))
        body.append(([r.system] if by_system else []) + [r.task, r.lang, r.judge, str(t.n), *values])
    return columns, body, said_once(notes)


def _without_confidence_words(n: int) -> str:
    """Why `n` labelled items with a verdict are not in a row's n."""
    items = "1 labelled item with a verdict has" if n == 1 else f"{n} labelled items with a verdict have"
    return (f"{items} no confidence (no logprob stored, nor two or more repeats that answered: a failed call is no "
            f"answer) and {'is' if n == 1 else 'are'} left out of n")


def _one_in(risk: float) -> str:
    """A risk as people say it: 1 in 10, or 2.5 %."""
    share = 1 / risk
    return f"1 in {round(share)}" if abs(share - round(share)) < 1e-9 else f"{risk:.1%}"


def guarantee_words(table: TrustTable) -> list[str]:
    """What `trust` guarantees and what its columns mean, in plain words."""
    target, risk, fewest = table.target, table.risk, minimum_calibration(table.target, table.risk)
    words = [
        "Accept a judge's verdict when its confidence reaches the threshold.",
        f"Guarantee: were this calibration repeated on a fresh random sample of labelled items, at most "
        f"{_one_in(risk)} of the repetitions would certify a threshold at which the judge agrees with people less "
        f"than {target:.0%} of the time. A property of the procedure over calibration samples, not the chance that "
        "this threshold is right.",
        f"A threshold is certified only from {table.min_labels} labelled items on"
        + (f" (--min-labels; the simulated minimum is {fewest}: with fewer, most certifications are wrong on fresh "
           "items)." if table.min_labels < fewest else " (with fewer, most certifications are wrong on fresh items)."),
        "accepts: the share of labelled items at or above the threshold and, in brackets, how many: the labels "
        f"behind it. lower bound: the one-sided {1 - risk:.0%} Clopper-Pearson bound on their agreement, at a threshold the "
        "data chose: not a guarantee. shortfall: with that many labels, an agreement short of the target by less "
        "than this goes unnoticed more than 1 time in 5.",
    ]
    return words


def render_table(table: TrustTable, console) -> None:
    """The terminal table, fitted to the console's width (calibrate.fit: a heading per cell
    where the whole row does not fit), the guarantee in words, and each reason a target cannot
    be met, once."""
    if not table.rows:
        console.print("no judge verdicts to assess")
        return
    for paragraph in guarantee_words(table):
        console.print(hanging(paragraph, console.width), soft_wrap=False)
    columns, body, notes = _cells(table)
    keys = [name for name in columns if name in ("system", "task", "lang")]
    how = Columns(names=("system", "task", "judge"), right=tuple(columns[len(keys) + 1 :]), keys=len(keys))
    console.print(fit_table(columns, [[safe(v) for v in row] for row in body], console.width, how))
    for line in notes:
        console.print(hanging(safe(line), console.width), soft_wrap=False)


def render_json(table: TrustTable) -> str:
    return safe_json([r.as_dict() for r in table.rows]) + "\n"


def render_csv(table: TrustTable) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    names = ["system", "task", "lang", "judge", *(f.name for f in fields(Trust))]
    writer.writerow(names)
    for r in table.rows:
        row = r.as_dict()
        writer.writerow([spreadsheet_safe(row[name]) for name in names])
    return out.getvalue()


def render_markdown(table: TrustTable) -> str:
    columns, body, notes = _cells(table)
    out = ["# Trust or escalate", "", *(f"{markdown_safe(p)}\n" for p in guarantee_words(table)),
           "| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    out += ["| " + " | ".join(markdown_safe(v) for v in row) + " |" for row in body]
    if notes:
        out += ["", *(f"- {markdown_safe(line)}" for line in notes)]
    return "\n".join(out) + "\n"


RENDERERS = {"json": render_json, "csv": render_csv, "markdown": render_markdown}
"""Every format but the terminal table, as text."""
