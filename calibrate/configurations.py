"""Where one judge name holds the verdicts of several configurations, and how to say so.

A judge's configuration (its judge_key: model, server, template version, request parameters) is
its identity: a run with another server or another --max-tokens asks every item again, and each
answer it stores becomes the judge's verdict in force on its item. Until that run has answered
every item, the figures of the judge name mix two configurations' verdicts, item by item. The
report, the scores and trust put `MixedConfigurations.words()` beside such a judge, read from
the counts migration 0025 keeps (`Store.configuration_counts`).

Only the configurations of one task and language are compared: each task's template is part of
the configuration, so a row pooling several tasks holds several configurations by construction.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass

KEEP_APART = ("a run with another server, model, template or request parameters (--max-tokens, --temperature, "
              "--param) is another judge, whose verdicts replace the earlier ones item by item; give each its own "
              "--judge-name to report them apart")
"""What mixes configurations, and how to keep them apart."""


@dataclass(frozen=True)
class MixedConfigurations:
    """One judge's verdicts in force, in one row or cell, that come from several configurations:
    per task and language, the items each configuration gave (most first)."""

    judge: str
    items: dict[tuple[str, str], list[int]]

    def words(self) -> str:
        """The note: how many configurations, with how many items each, and what to do."""
        parts = [f"{len(n)} configurations ({' + '.join(map(str, n))} items)" for n in self.items.values()]
        if len(self.items) == 1:
            where = parts[0]
        else:
            where = "; ".join(f"{task} {lang}: {part}" for (task, lang), part in zip(self.items, parts, strict=True))
        return f"{self.judge}'s verdicts here come from {where}: {KEEP_APART}"

    def as_dict(self) -> list[dict]:
        return [{"task": task, "lang": lang, "items_per_configuration": n} for (task, lang), n in self.items.items()]


def mixed_configurations(judge: str, counts: Iterable[tuple[str, str, str, int]]) -> MixedConfigurations | None:
    """The configurations of `judge`'s verdicts, from `counts` (task, lang, configuration, n),
    where a task and language holds more than one; None where none does."""
    per: dict[tuple[str, str], Counter] = defaultdict(Counter)
    for task, lang, configuration, n in counts:
        per[(task, lang)][configuration] += n
    mixed = {where: sorted((n for n in found.values() if n), reverse=True) for where, found in sorted(per.items())}
    mixed = {where: n for where, n in mixed.items() if len(n) > 1}
    return MixedConfigurations(judge, mixed) if mixed else None


def mixed_by_cell(counts: Iterable[tuple[str, str, str, str, str, int]], key_of: Callable[[str, str], Hashable], *,
                  by_system: bool) -> dict[tuple, MixedConfigurations]:
    """(cell key, judge, system or None) -> its mixed configurations, from the store's counts
    (task, lang, system, judge, configuration, n): `key_of` gives a task and language's cell;
    `by_system` keeps systems apart (else None stands for them all)."""
    grouped: dict[tuple, list[tuple[str, str, str, int]]] = defaultdict(list)
    for task, lang, system, judge, configuration, n in counts:
        grouped[(key_of(task, lang), judge, system if by_system else None)].append((task, lang, configuration, n))
    return {cell: found for cell, rows in grouped.items() if (found := mixed_configurations(cell[1], rows))}
