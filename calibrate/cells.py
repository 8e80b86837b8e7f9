"""What a cell is: the unit `report`, `scores` and `trust` measure, cut by `--by`.

A cell is the items of one (task, language) pair, or of several pooled when `--by` leaves a
dimension out, optionally per system under test. A cell holds one kind of verdict: English
yes/no and Chinese 是/否 pool on their canonical polarity, any other kind only with itself.
This module holds the one list of `--by` values, the one parser of `--by` for every command,
and how an unparsed verdict counts in a cell: `--unparsed as-negative` where a kind has a
negative label, `as-disagreement` where it has categories; elsewhere it is left out and the
report says why (`unparsed_not_applied`).
"""

from __future__ import annotations

from collections.abc import Iterable

import click

from calibrate.kinds import VerdictKind
from calibrate.model import CalibrateError
from calibrate.templates import TemplateError, TemplateSet

BY_CHOICES = ("system", "task", "lang")
UNPARSED_MODES = ("exclude", "as-negative", "as-disagreement")


class ReportError(CalibrateError, ValueError):
    """Cells that cannot be built as asked: an unknown `--by` value, or a cell that would pool
    unlike kinds of verdict."""


BY_VALUES = f"{', '.join(BY_CHOICES)} or a comma-separated combination of them (each once)"


def check_by(dims: tuple[str, ...]) -> tuple[str, ...]:
    """`dims` if it is a non-empty combination of BY_CHOICES (each once), else ReportError."""
    if not dims or len(set(dims)) != len(dims) or any(d not in BY_CHOICES for d in dims):
        raise ReportError(f"--by takes {BY_VALUES}, not {','.join(dims) or 'nothing'}")
    return dims


def parse_by(text: str) -> tuple[str, ...]:
    """`--by`'s text ("system,task") as dimensions, checked (see `check_by`)."""
    return check_by(tuple(d.strip() for d in text.split(",") if d.strip()))


def by_callback(ctx: click.Context, param: click.Parameter, value: str) -> tuple[str, ...]:
    """The click callback of `--by` for every command that takes it: the checked dimensions, or
    a usage error naming the valid values."""
    try:
        return parse_by(value)
    except ReportError:
        raise click.BadParameter(f"takes {BY_VALUES}, not {value!r}", ctx=ctx, param=param) from None


class CellKinds:
    """Cells as `--by` cuts them, and the verdict kind each one measures.

    A cell that pools several (task, language) pairs must pool one kind of verdict: English
    yes/no and Chinese 是/否 pool (labels are mapped by their canonical polarity, shown in the
    first member's words), other kinds only with themselves; anything else is refused. The
    system dimension is not part of the key: callers that cut by system keep a CellKinds per
    system (naming it as `system`, for the refusal to name the cell as `--by` does) or split a
    cell's items by their system. A refusal advises the `--by` that keeps the user's dimensions
    and adds the one that parts the two kinds met. With `scores_apart` (for a caller that leaves
    scores out, as `trust` does), a (task, language) of scores is a cell of its own, keyed by
    itself, and never refused beside the cell `--by` would put it in."""

    def __init__(self, templates: TemplateSet, by: tuple[str, ...], system: str | None = None, *,
                 scores_apart: bool = False):
        self.templates, self.by, self.system = templates, by, system  # `system`: the one whose cells these are
        self.scores_apart = scores_apart
        self._apart: set[tuple[str, str]] = set()  # with scores_apart: the pairs of scores, each its own cell
        self._own: dict[tuple[str, str], VerdictKind | None] = {}
        self._cell: dict[tuple[str, str], VerdictKind | None] = {}
        self._first: dict[tuple[str, str], tuple[str, str]] = {}  # a cell's first (task, lang) of its kind

    def key(self, task: str, lang: str) -> tuple[str, str]:
        if (task, lang) in self._apart:
            return task, lang
        key = (task if "task" in self.by else "*", lang if "lang" in self.by else "*")
        if (task, lang) not in self._own:
            try:
                own = self.templates.for_task(task, lang).kind
            except TemplateError:
                own = None
            self._own[(task, lang)] = own
            if self.scores_apart and own is not None and own.scored:
                self._apart.add((task, lang))
                self._cell[task, lang] = own
                return task, lang
            first = self._cell.setdefault(key, own)
            if own is not None and first is not None and own.pool_key != first.pool_key:
                raise self._unlike(key, first, own, (task, lang))
            if first is None:
                self._cell[key] = own
            if own is not None:
                self._first.setdefault(key, (task, lang))
        return key

    def _unlike(self, key: tuple[str, str], first: VerdictKind, own: VerdictKind, pair: tuple[str, str]) -> ReportError:
        """The refusal of a cell that would pool `own` (the kind of `pair`) with its `first`
        kind: the cell as `--by` names it, both pairs, and the --by that keeps the user's own
        dimensions and adds the one that parts these two pairs (the task where they differ)."""
        named = [f"system {self.system}"] if "system" in self.by and self.system is not None else []
        named += [f"{dim} {value}" for dim, value in zip(("task", "lang"), key, strict=True) if dim in self.by]
        cell = ", ".join(named) or ("a system" if "system" in self.by else "all items")
        other = self._first[key]
        parting = "task" if other[0] != pair[0] else "lang"
        unlike = ("they are different kinds of verdict" if first.name != own.name else
                  f"their labels differ ({', '.join(first.labels)} against {', '.join(own.labels)})")
        return ReportError(
            f"the cell of {cell} would pool {first.name} ({', '.join(other)}) with {own.name} ({', '.join(pair)}): "
            f"{unlike}; use --by {','.join([*self.by, parting])}")

    def kind(self, key: tuple[str, str]) -> VerdictKind | None:
        return self._cell.get(key)

    def scored(self, key: tuple[str, str]) -> bool:
        kind = self.kind(key)
        return kind is not None and kind.scored

    def any_scored(self, pairs: Iterable[tuple[str, str]]) -> bool:
        """Whether the cell of one of the (task, lang) `pairs` holds scores."""
        return any(self.scored(self.key(task, lang)) for task, lang in pairs)

    def label(self, task: str, lang: str, value: str | None) -> str | None:
        """`value` (a verdict or label of this task and language) in its cell's labels."""
        cell = self._cell.get(self.key(task, lang))  # key() looks up the pair's own kind first
        own = self._own[(task, lang)]
        if own is None or cell is None or own is cell or value not in own.labels:
            return value
        outcome = own.canonical(value)  # yes and 是 are one outcome
        return next((label for label in cell.labels if cell.canonical(label) == outcome), value)


UNPARSED_ANSWER = "(unparsed)"
"""What an unparsed verdict of a kind of more than two labels counts as under as-disagreement:
an answer of its own that no person gives, so the item disagrees with every person's label
without being given one of the kind's labels, which the judge never gave."""


def unparsed_not_applied(kind: VerdictKind | None, mode: str) -> str | None:
    """Why `--unparsed mode` does not apply to this kind's unparsed verdicts, which are then left
    out; None where it applies. as-negative needs a negative label (yes/no, True/False, …);
    as-disagreement needs categories (a score has no one score that disagrees)."""
    if mode == "as-negative" and (kind is None or kind.positive is None):
        if kind is not None and kind.scored:
            return "scores have no negative label"
        labels = f" ({', '.join(kind.labels)})" if kind is not None and kind.labels else ""
        return f"these labels{labels} have no negative one"
    if mode == "as-disagreement" and (kind is None or not kind.labels):
        return "no score counts as disagreeing with a person's" if kind is not None and kind.scored \
            else "the labels of these verdicts are not known"
    return None


def unparsed_words(kind: VerdictKind | None, mode: str) -> str:
    """How a cell of this kind counts its unparsed verdicts under `mode`, in words."""
    not_applied = unparsed_not_applied(kind, mode)
    if not_applied:
        return f"left out: --unparsed {mode} does not apply here ({not_applied})"
    if mode == "as-negative":
        return f"counted as the negative label {kind.labels[1]!r} (C3's rule)"
    if mode == "as-disagreement":
        return "counted as disagreeing with the person" + (
            "" if kind.is_binary else f" (an answer of their own, {UNPARSED_ANSWER}, in κ's table)")
    return "left out"


def unparsed_as(kind: VerdictKind | None, mode: str, human: str) -> str | None:
    """What an unparsed verdict counts as under `mode`, against this human label (None: left
    out): the negative label (as-negative), the other label of a binary kind or UNPARSED_ANSWER
    (as-disagreement), where the mode applies (`unparsed_not_applied`)."""
    if mode == "exclude" or unparsed_not_applied(kind, mode):
        return None
    if mode == "as-negative":
        return kind.labels[1]
    return kind.flip(human) or UNPARSED_ANSWER
