"""`calibrate trust`: per cell and judge (and system, when `--by` names it), the confidence above
which the judge's verdicts can be accepted without a person, and how to write it out (terminal
table, JSON, CSV, Markdown).

The items of each cell come from calibrate.reliability_cells (its verdict, confidence and human
label per item); the statistic is calibrate.stats.reliability.trust_threshold (fixed-sequence
testing with an exact binomial bound; Jung et al., ICLR 2025).
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, fields

from calibrate.cells import CellKinds
from calibrate.escape import markdown_safe, safe, safe_json, spreadsheet_safe
from calibrate.fit import Columns, fit_table, hanging, said_once
from calibrate.reliability_cells import trust_by_cell
from calibrate.stats.reliability import Trust
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

    def as_dict(self) -> dict:
        return {"system": self.system, "task": self.task, "lang": self.lang, "judge": self.judge,
                **self.found.as_dict()}


@dataclass
class TrustTable:
    """Every cell's row, with the target and risk they were found at."""

    target: float
    risk: float
    rows: list[TrustRow]


def build_trust(store: Store, templates: TemplateSet, *, by: tuple[str, ...], target: float, risk: float,
                judge: str | None = None, gold_from: str | None = None) -> TrustTable:
    """The threshold of every judge in every categorical cell `by` names (scored cells have no
    verdict to accept or escalate)."""
    kinds = CellKinds(templates, by)
    found, _ = trust_by_cell(store, kinds, target=target, risk=risk, judge=judge, gold_from=gold_from,
                             by_system="system" in by)
    rows = [TrustRow(system, key[0], key[1], name, trust) for (key, name, system), trust in found.items()
            if not kinds.scored(key)]
    rows.sort(key=lambda r: (r.system or "", r.task, r.lang, r.judge))
    return TrustTable(target, risk, rows)


COLUMNS = ["system", "task", "lang", "judge", "n", "threshold", "accepts", "guaranteed", "agree"]


def _cells(table: TrustTable) -> tuple[list[str], list[list[str]], list[str]]:
    """The columns shown (system only when cut by system), each row as text, and why the
    target cannot be met where it cannot (each reason once, with the rows it applies to)."""
    by_system = any(r.system is not None for r in table.rows)
    columns = COLUMNS if by_system else COLUMNS[1:]
    body, refused = [], []
    for r in table.rows:
        t = r.found
        if t.met:
            values = [f"{t.threshold:.3f}", f"{t.coverage:.0%} ({t.accepted})", f"{t.guaranteed:.3f}", f"{t.agreement:.3f}"]
        else:
            values = ["—"] * 4
            refused.append((f"{r.task} {r.lang} ({r.judge}{', ' + r.system if by_system else ''})", t.reason))
        body.append(([r.system] if by_system else []) + [r.task, r.lang, r.judge, str(t.n), *values])
    return columns, body, said_once(refused)


def _heading(table: TrustTable) -> str:
    return (f"accept a judge's verdict when its confidence reaches the threshold: agreement with people "
            f">= {table.target:g}, guaranteed with probability {1 - table.risk:g}")


def render_table(table: TrustTable, console) -> None:
    """The terminal table, fitted to the console's width (calibrate.fit: a heading per cell
    where the whole row does not fit), and each reason a target cannot be met, once."""
    if not table.rows:
        console.print("no judge verdicts to assess")
        return
    console.print(hanging(_heading(table), console.width), soft_wrap=False)
    columns, body, refused = _cells(table)
    keys = [name for name in columns if name in ("system", "task", "lang")]
    how = Columns(names=("system", "task", "judge"), right=tuple(columns[len(keys) + 1 :]), keys=len(keys))
    console.print(fit_table(columns, [[safe(v) for v in row] for row in body], console.width, how))
    for line in refused:
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
    columns, body, refused = _cells(table)
    out = ["# Trust or escalate", "", _heading(table), "", "| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    out += ["| " + " | ".join(markdown_safe(v) for v in row) + " |" for row in body]
    if refused:
        out += ["", *(f"- {markdown_safe(line)}" for line in refused)]
    return "\n".join(out) + "\n"


RENDERERS = {"json": render_json, "csv": render_csv, "markdown": render_markdown}
"""Every format but the terminal table, as text."""
