"""What a judge run did, counted as it goes: the judgments it stored by cell and kind (verdict,
bare, unparsed, truncated, error), why outputs did not parse and calls failed, its requests, the
concurrency it ran at, and what it decided on its own; the CLI prints it at the end of the run
and the run's record (judge_runs) keeps its counts."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from calibrate.judge_server import RequestCounts
from calibrate.judgments import is_truncated
from calibrate.model import Item, NewJudgment
from calibrate.verdicts import BARE


@dataclass
class RunSummary:
    skipped_done: int = 0
    not_renderable: dict[str, list[int]] = field(default_factory=dict)  # why -> ids of the items it stops
    no_template: Counter = field(default_factory=Counter)  # (task, lang) no template serves -> items
    no_prompt: int = 0  # items of tasks people decide (no judge prompt)
    outside_family: Counter = field(default_factory=Counter)  # (task, lang) the --variant or rule does not serve -> items
    c3_passes_over: Counter = field(default_factory=Counter)  # (task, lang) -> items C3's evaluate.py never asks
    # (task, lang) -> items carrying a system's response their template's prompt does not show (not asked)
    response_unseen: Counter = field(default_factory=Counter)
    no_response: Counter = field(default_factory=Counter)  # (task, lang) -> items the rule judge has no response to read
    stored: int = 0
    cells: Counter = field(default_factory=Counter)  # (task, lang, status) -> n; also "bare", "truncated"
    errors: Counter = field(default_factory=Counter)  # reason (the error up to its first colon) -> n
    error_examples: dict = field(default_factory=dict)  # reason -> one full error message
    unparsed: Counter = field(default_factory=Counter)  # why an output did not parse (truncation aside) -> n
    interrupted: bool = False
    requests: RequestCounts = field(default_factory=RequestCounts)
    concurrency: tuple[int, int] | None = None  # (requests allowed in flight now, the ceiling)
    concurrency_lowest: int | None = None  # the lowest the adaptive limit went
    other_models: Counter = field(default_factory=Counter)  # model the server reported, other than asked -> n
    no_confidence: Counter = field(default_factory=Counter)  # why a parsed verdict has no confidence -> n
    notes: list[str] = field(default_factory=list)  # what the run decided on its own (reasoning mode) or replaced
    stopped: str | None = None  # why the run stopped before asking everything
    repeat: int = 1  # samples asked per item: the counts above count samples
    unsent: int = 0  # requests no connection could be made for: not the items' errors, not stored
    items_stored: set[int] = field(default_factory=set)  # ids of the items this run stored a judgment of

    @property
    def unit(self) -> str:
        """What the counts count, in words (one of them): item, or sample with --repeat."""
        return "item" if self.repeat == 1 else "sample"

    @staticmethod
    def cells_of(item: Item, judgment: NewJudgment, bare: bool = False) -> Counter:
        """What one stored judgment adds to `cells`."""
        cells = Counter({(item.task, item.lang, judgment.status): 1})
        if bare:
            cells[(item.task, item.lang, BARE)] += 1
        if is_truncated(judgment.unparsed_reason):
            cells[(item.task, item.lang, "truncated")] += 1
        return cells

    def count(self, item: Item, judgment: NewJudgment, bare: bool = False) -> None:
        """Count a judgment once it is stored (committed)."""
        self.stored += 1
        self.items_stored.add(item.id)
        self.cells.update(self.cells_of(item, judgment, bare))
        if judgment.status == "unparsed" and not is_truncated(judgment.unparsed_reason):
            self.unparsed[judgment.unparsed_reason or "no reason given"] += 1
        if judgment.status == "error":
            error = judgment.error or "unknown error"
            reason = error.split(":", 1)[0]
            self.errors[reason] += 1
            self.error_examples.setdefault(reason, error)

    def columns(self) -> list[str]:
        """The per-cell table's columns: bare and truncated only when some output was."""
        shown = {name for name in (BARE, "truncated") if any(key[2] == name for key in self.cells)}
        return [c for c in ("task", "lang", "verdicts", BARE, "unparsed", "truncated", "errors")
                if c not in (BARE, "truncated") or c in shown]

    def table(self) -> list[list]:
        cells = sorted({(t, lang) for t, lang, _ in self.cells})
        names = {"verdicts": "verdict", "errors": "error"}
        return [[t, lang, *(self.cells[(t, lang, names.get(c, c))] for c in self.columns()[2:])] for t, lang in cells]

    @property
    def failed(self) -> int:
        return sum(self.errors.values())

    def outputs(self, status: str) -> int:
        """The outputs stored with `status` (verdict, unparsed, error) over the cells."""
        return sum(n for (_, _, cell_status), n in self.cells.items() if cell_status == status)
