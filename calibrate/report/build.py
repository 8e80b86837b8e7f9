"""Building the agreement report from the store: judge vs human per task x language x judge,
beside the human-human ceiling on the same items.

The human label is each annotator's current label; with several annotators there is also a
line against the gold label (`calibrate.gold`, as every other figure and export takes it: the
adjudicator's, else the strict majority, the mean for scores, so an item one person labelled
has their label; ties are counted, never dropped). Cells pooled across languages compare like
with like: a cell holds one kind of verdict, and English yes/no and Chinese 是/否 meet on their
canonical polarity. The human ceiling of a categorical cell is kappa or alpha
(`calibrate.stats.ceiling`), of a scored cell the score statistics
(`calibrate.stats.score_agreement.score_ceiling`). Unparsed verdicts are left out, counted as
"no" (as C3's script does) or counted as disagreement, as asked, where the cell's kind allows
it (`calibrate.cells.unparsed_as`), and whenever a cell has some the range of kappa between the
best and the worst case is kept beside it. The items the jury's judges tie on (`calibrate.model.TIED`) are not
unparsed: whatever `--unparsed` says, they are left out and counted apart, as are the items
the jury leaves out because one judge only judged them.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import replace
from typing import TypeVar

import numpy as np

from calibrate.cells import UNPARSED_MODES, CellKinds, ReportError, unparsed_as
from calibrate.configurations import mixed_by_cell
from calibrate.judgments import TRUNCATED
from calibrate.kinds import VerdictKind
from calibrate.model import TIED, AgreementData, judged
from calibrate.preload import import_meanwhile
from calibrate.reliability_cells import (
    JURY,
    jury_data,
    reliability_by_cell,
)
from calibrate.report.model import AgreementCell, Line, Report, ReportOptions, gold_name
from calibrate.stats.agreement import (
    items_for_half_width,
    judge_vs_human,
    kappa_from_tables,
    two_raters,
)
from calibrate.stats.alt_test import AltTest, alternative_annotator_test_coded
from calibrate.stats.ceiling import human_ceiling_coded
from calibrate.stats.score_agreement import ScoreAgreement, score_agreement, score_ceiling
from calibrate.stats.shared_votes import NO_VOTE, NOT_JUDGED, UNPARSED, SharedVotes
from calibrate.store import Store
from calibrate.templates import TemplateSet
from calibrate.verdicts import SCORE_KEYS

DEFAULT_OPTIONS = ReportOptions()
T = TypeVar("T")

def build_report(store: Store, templates: TemplateSet, *, judge: str | None = None,
                 options: ReportOptions = DEFAULT_OPTIONS, system: str | None = None) -> Report:
    """The report over every item, or cut by system (`options.by`) or for one `system`, with
    the jury of the judges beside them. The judges' reliability (repeats, calibration, probes)
    is measured over every system at once, so a report cut by system leaves it out. The gold
    labels of the items several people labelled are computed once for all of its reads. Where a
    cell holds scores, scipy's statistics (their correlations and tests), a second or so to
    import, are imported on a thread of their own meanwhile, while the reads wait on SQLite; the
    other cells' statistics need only scipy.special."""
    scored = CellKinds(templates, ("task", "lang")).any_scored(store.task_langs(system=system))
    importing = import_meanwhile("scipy.stats") if scored else None
    try:
        return _build_report(store, templates, judge=judge, options=options, system=system)
    finally:
        if importing is not None:
            importing.join()


def _build_report(store: Store, templates: TemplateSet, *, judge: str | None, options: ReportOptions,
                  system: str | None) -> Report:
    with_jury_too = judge in (None, JURY)

    def jury_of(name: str | None) -> AgreementData | None:
        return jury_data(store, templates, gold_from=options.gold_from, system=name) if with_jury_too else None

    def with_jury(data: AgreementData, jury: AgreementData | None) -> AgreementData:
        return AgreementData.combine([data, jury]) if jury is not None else data

    if "system" in options.by or system is not None:
        cells = []
        with store.reading(), store.shared_gold_kept(options.gold_from):
            groups = store.once_labelled_groups()  # every system's, read once
            for name in [system] if system is not None else store.systems():
                data = with_jury(store.agreement_data(judge, system=name, gold_from=options.gold_from,
                                                      once_labelled=lambda: groups), jury_of(name))
                for cell in report_from_data(data, templates, options, system=name).cells:
                    cell.system = name
                    cells.append(cell)
        return count_per_cell(store, templates, Report(cells, options), judge=judge)
    measured_too = options.reliability or store.has_repeats_or_confidence()
    aside = _Aside(store.path, options.gold_from) if measured_too and store.in_file else None
    try:
        with store.reading(*[aside.store] if aside else []), \
                store.shared_gold_kept(options.gold_from, share=aside.give if aside else None):
            # the worker's first read needs no gold label: it is not kept waiting while this connection works them out
            once_labelled = aside.submit(lambda s: s.once_labelled_groups()) if aside else None
            jury = aside.submit(lambda s: jury_data(s, templates, gold_from=options.gold_from)) \
                if aside and with_jury_too else None
            measure = lambda s, irregular_read=None, once=None: reliability_by_cell(  # noqa: E731
                s, CellKinds(templates, options.by), judge=judge, gold_from=options.gold_from,
                families=dict(options.families), resamples=options.resamples, irregular_read=irregular_read,
                once_labelled=once)
            measuring = aside.submit(lambda s: measure(s, aside.irregular.result, once_labelled.result())) \
                if aside else None
            data = store.agreement_data(judge, gold_from=options.gold_from,
                                        once_labelled=once_labelled.result if once_labelled else None)
            if aside:  # the worker reads the judges' verdicts in groups meanwhile; the few irregular ones are read here
                aside.irregular.set_result(store.irregular_samples(judge))
            data = with_jury(data, jury.result() if jury else jury_of(None))
            report = count_per_cell(store, templates, report_from_data(data, templates, options), judge=judge)
            if not measured_too:
                return report
            temperatures = store.repeat_temperatures()  # read while the worker may still be measuring
            measured = measuring.result() if measuring else measure(store)
    finally:
        if aside:
            aside.close()
    for r in measured.values():
        r.temperatures = temperature_words(temperatures.get(r.judge, []))
    for c in report.cells:
        c.reliability = measured.get((c.key, c.judge))
    return report


class _Aside:
    """The jury and the judges' reliability figures, read and worked out in a worker thread on a
    read-only connection of its own to the database at `path` (`store`, which the report's
    connection reads the same snapshot as: `Store.reading`) while the report's connection
    reads and works out the agreement (SQLite, and numpy's draws and sorts, work without the
    interpreter's lock). The report's connection gives it what it works out or reads anyway, so
    that neither thread waits long for the other: the gold labels of the items several people
    labelled (`give`, for all of its reads) and the few irregular verdicts (`irregular`), read
    while this connection reads the regular ones in groups. Its first read (the groups of items
    with one label) needs neither, so it does not wait while they are worked out."""

    def __init__(self, path: str, gold_from: str | None):
        self.path, self.gold_from = path, gold_from
        self.worker = ThreadPoolExecutor(max_workers=1)
        self.store = Store(path, read_only=True)
        self.kept = ExitStack()
        self.kept_open = False  # whether `kept` holds the shared gold labels' context
        self.gold: Future[dict[int, str] | None] = Future()
        self.irregular: Future[tuple[list[tuple], list[tuple]] | None] = Future()  # read by the report's connection

    def give(self, gold: dict[int, str]) -> None:
        """The shared gold labels, as the report's connection worked them out (`agreement_data`):
        this connection's reads take them instead of working them out again."""
        if not self.gold.done():
            self.gold.set_result(gold)

    def submit(self, read: Callable[[Store], T]) -> Future[T]:
        """`read` of the second connection, in the worker thread after the reads submitted before it."""
        return self.worker.submit(lambda: read(self._opened()))

    def _opened(self) -> Store:
        if not self.kept_open:
            self.kept.enter_context(self.store.shared_gold_kept(self.gold_from, given=self.gold))
            self.kept_open = True
        return self.store

    def close(self) -> None:
        """Cancels the reads not begun, waits for the one under way, closes the connection. A read
        waiting for gold labels or irregular verdicts never given reads them itself."""
        for given in (self.gold, self.irregular):
            if not given.done():
                given.set_result(None)
        self.worker.shutdown(cancel_futures=True)
        try:
            self.kept.close()
        finally:
            self.store.close()


def temperature_words(temperatures: list) -> str | None:
    """How the repeats were sampled, in words: "temperature 0.7", "temperatures 0, 0.7", "the
    model's default temperature" (none sent); None without repeats."""
    if not temperatures:
        return None
    shown = [f"{t:g}" if t is not None else "the model's default" for t in temperatures]
    if shown == ["the model's default"]:
        return "the model's default temperature"
    return ("temperature " if len(shown) == 1 else "temperatures ") + ", ".join(shown)


def count_per_cell(store: Store, templates: TemplateSet, report: Report, *, judge: str | None) -> Report:
    """Each cell's unparsed verdicts that were outputs cut at the token limit, and the
    configurations its judge's verdicts come from where they are several
    (`calibrate.configurations`). Only the verdicts of the report's `judge` (None: every
    judge) on its systems' items are read, each system's cells keyed apart where the report is
    cut by system, as its cells were built: verdicts outside the report may not pool as its cells
    do, and are no cell of it."""
    by_cell = {(c.key, c.judge, c.system): c for c in report.cells}
    by_system = any(c.system is not None for c in report.cells)
    for system in {c.system for c in report.cells}:  # None alone where the report is not cut by system
        kinds = CellKinds(templates, report.options.by, system)
        for task, lang, item_system, name, n in store.unparsed_counts(TRUNCATED, judge=judge, system=system):
            for shown in (item_system, None):
                c = by_cell.get((kinds.key(task, lang), name, shown))
                if c is not None:
                    c.truncated += n
        counts = store.configuration_counts(system=system, judge=judge)
        for cell, mixed in mixed_by_cell(counts, kinds.key, by_system=by_system).items():
            if (c := by_cell.get(cell)) is not None:
                c.configurations = mixed
    return report


def report_from_data(data: AgreementData, templates: TemplateSet, options: ReportOptions = DEFAULT_OPTIONS, *,
                     system: str | None = None) -> Report:
    """Cells per (task, lang) as `options.by` says, per judge (of one `system`'s items, if given).
    Only the (task, lang) pairs a judge of `data` judged make cells and are pooled: people's
    labels on items of the other pairs are left out, as they measure no judge here."""
    if options.unparsed not in UNPARSED_MODES:
        raise ReportError(f"unknown --unparsed {options.unparsed!r}: use {', '.join(UNPARSED_MODES)}")
    data = judge_evidence(data, templates)
    judged_pairs = {(r[0], r[1]) for rows in (data.judged, data.judge_vs_human, data.judge_vs_gold) for r in rows}
    data = replace(data, shared_labels=[r for r in data.shared_labels if (r[1], r[2]) in judged_pairs])
    kinds = CellKinds(templates, options.by, system)
    cells: dict[tuple, AgreementCell] = {}
    gold = gold_name(options)
    members: dict[tuple, set[str]] = defaultdict(set)  # a cell's jury judges: those that gave a verdict there
    for task, lang, judge in data.jury_members:
        members[kinds.key(task, lang)].add(judge)

    def cell(task, lang, judge) -> AgreementCell:
        key = kinds.key(task, lang)
        if (key, judge) not in cells:
            cells[key, judge] = AgreementCell(key, judge, kinds.kind(key), jury_judges=tuple(
                j for j in data.jury_judges if j in members[key]) if judge == JURY else ())
        return cells[key, judge]

    for task, lang, judge, status, n in data.judged:
        c = cell(task, lang, judge)
        if not judged(status):
            c.errors += n
            continue
        c.judged += n
        if status == "unparsed":
            c.unparsed += n
        elif status == TIED:
            c.jury_ties += n
    for task, lang, judge, failed, n in data.one_judge_only:
        if (c := cells.get((kinds.key(task, lang), judge))) is not None:  # a jury that judged none there has no cell
            c.one_judge_only[failed] = c.one_judge_only.get(failed, 0) + n
    # the tied items (no gold label) each judge judged, for the note of its line against the gold label
    tied, cell_of = set(data.tied_items), {r[0]: (r[1], r[2]) for r in data.shared_labels}
    ties = Counter((kinds.key(*cell_of[item_id]), judge) for item_id, judge, status, _ in data.shared_verdicts
                   if item_id in tied and judged(status))

    # (cell, judge, versus) -> {(verdict, label): n} for parsed verdicts, {label: n} for unparsed; labelled items
    # the jury's judges tie on
    parsed: dict[tuple, dict[tuple[str, str], int]] = defaultdict(lambda: defaultdict(int))
    unparsed: dict[tuple, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    tied: Counter = Counter()
    failed: Counter = Counter()  # the same keys: labelled items whose verdict is a failed call
    for rows, has_annotator in ((data.judge_vs_human, True), (data.judge_vs_gold, False)):
        for row in rows:
            if has_annotator:
                task, lang, judge, annotator, status, verdict, label, n = row
            else:
                task, lang, judge, status, verdict, label, n = row
                annotator = gold
            key = (kinds.key(task, lang), judge, annotator)
            if not judged(status):
                failed[key] += n
                continue
            cell(task, lang, judge)
            label = kinds.label(task, lang, label)
            if status == "verdict":
                parsed[key][(kinds.label(task, lang, verdict), label)] += n
            elif status == TIED:
                tied[key] += n
            else:
                unparsed[key][label] += n

    for (key, judge, _), n in failed.items():
        if (c := cells.get((key, judge))) is not None:
            c.labelled_errors = max(c.labelled_errors, n)
    people = defaultdict(set)  # (cell, judge) -> annotators with lines
    for key, judge, versus in [*parsed, *unparsed, *tied]:
        if versus != gold:
            people[(key, judge)].add(versus)
    for key, judge, versus in sorted({*parsed, *unparsed, *tied}, key=lambda k: (k[0], k[1], k[2] == gold, k[2])):
        if versus == gold and len(people[(key, judge)]) < 2:
            continue  # the gold label of one annotator's labels is that annotator's line again
        c = cells[(key, judge)]
        c.ties = ties[(key, judge)]
        line = _line(c.kind, versus, parsed[(key, judge, versus)], unparsed[(key, judge, versus)], options)
        line.jury_ties = tied[(key, judge, versus)]
        c.lines.append(line)

    _add_ceilings_and_alt_tests(data, cells, kinds, options)
    ordered = sorted(cells.values(), key=lambda c: (c.key, c.judge))
    return Report(ordered, options)


def judge_evidence(data: AgreementData, templates: TemplateSet) -> AgreementData:
    """`data` without the judgments on tasks people decide (no judge prompt: C3's generation
    phenomena): whatever stored them, they say nothing about a judge. People's labels stay."""
    judge_rows = (data.judged, data.judge_vs_human, data.judge_vs_gold, data.one_judge_only)
    decided = {(task, lang): templates.people_decide(task, lang)
               for task, lang in {*((r[0], r[1]) for rows in judge_rows for r in rows),
                                  *((r[1], r[2]) for r in data.shared_labels)}}
    if not any(decided.values()):
        return data
    people = {item_id for item_id, task, lang, *_ in data.shared_labels if decided[(task, lang)]}
    return replace(
        data,
        judge_vs_human=[r for r in data.judge_vs_human if not decided[(r[0], r[1])]],
        judge_vs_gold=[r for r in data.judge_vs_gold if not decided[(r[0], r[1])]],
        judged=[r for r in data.judged if not decided[(r[0], r[1])]],
        one_judge_only=[r for r in data.one_judge_only if not decided[(r[0], r[1])]],
        shared_verdicts=[r for r in data.shared_verdicts if r[0] not in people],
    )


def _line(kind: VerdictKind | None, versus: str, parsed: dict, unparsed: dict, options: ReportOptions) -> Line:
    """One judge-vs-person line, with unparsed verdicts treated as `options.unparsed` says."""
    if kind is not None and kind.scored:
        return Line(versus, scores=_score_lines(kind, parsed, options.threshold, options.resamples),
                    unparsed=sum(unparsed.values()))
    pairs = dict(parsed)
    for label, n in unparsed.items():
        counted_as = unparsed_as(kind, options.unparsed, label)
        if counted_as is not None:
            pairs[(counted_as, label)] = pairs.get((counted_as, label), 0) + n
    labels = list(kind.labels) if kind else []
    table, labels = _pair_table(pairs, labels)
    person = "the gold label" if versus == gold_name(options) else versus
    stats = two_raters(table=table, labels=labels, resamples=options.resamples, raters=("the judge", person))
    plan = items_for_half_width(stats.n, stats.kappa.ci, options.target_half_width) if stats.kappa.value is not None else None
    line = Line(versus, stats=stats, unparsed=sum(unparsed.values()), more_items=plan)
    if kind is not None and kind.positive is not None and stats.n:
        line.errors = judge_vs_human(table, labels, kind.positive)
    if unparsed and kind is not None and kind.labels:
        line.kappa_range = _kappa_range(kind, parsed, unparsed, labels)
    return line


def _kappa_range(kind: VerdictKind, parsed: dict, unparsed: dict, labels: list[str]) -> tuple[float | None, float | None]:
    """Kappa if every unparsed verdict had disagreed with the person (worst: as
    `--unparsed as-disagreement` counts it) or agreed (best)."""
    out = []
    for counted_as in (lambda h: unparsed_as(kind, "as-disagreement", h), lambda h: h):
        pairs = dict(parsed)
        for label, n in unparsed.items():
            pairs[(counted_as(label), label)] = pairs.get((counted_as(label), label), 0) + n
        table, _ = _pair_table(pairs, labels)
        value = float(kappa_from_tables(table))
        out.append(value if np.isfinite(value) else None)
    return out[0], out[1]


def _pair_table(pairs: dict[tuple[str, str], int], labels: list[str]) -> tuple[np.ndarray, list[str]]:
    """A confusion table from {(rater A label, rater B label): n}: the given label order first,
    then any other label that occurs (a label from elsewhere)."""
    labels = list(labels)
    for a, b in pairs:
        for value in (a, b):
            if value not in labels:
                labels.append(value)
    index = {label: i for i, label in enumerate(labels)}
    table = np.zeros((len(labels), len(labels)), dtype=np.int64)
    for (a, b), n in pairs.items():
        table[index[a], index[b]] += n
    return table, labels


def _score_lines(kind: VerdictKind, pairs: dict[tuple[str, str], int], threshold: float,
                 resamples: int) -> dict[str, ScoreAgreement]:
    out = {}
    for dimension in SCORE_KEYS:
        judge_scores, human_scores = [], []
        for (verdict, label), n in pairs.items():
            judge, human = kind.scores(verdict), kind.scores(label)
            if judge is None or human is None:
                continue
            judge_scores += [judge[dimension]] * n
            human_scores += [human[dimension]] * n
        out[dimension] = score_agreement(judge_scores, human_scores, threshold=threshold, resamples=resamples)
    return out


class _SharedCells:
    """Per cell, the items two or more people labelled (in item order, as `data.shared_labels`
    lists them) with their labels, and each judge's verdicts on them, in the cell's labels
    (`CellKinds.label`), as the codes of `SharedVotes`."""

    def __init__(self, data: AgreementData, kinds: CellKinds):
        self.kinds = kinds
        self.rows: dict[tuple, dict[int, int]] = {}  # cell -> item id -> row
        self.annotators: dict[tuple, dict[str, int]] = {}
        self.labels: dict[tuple, dict[str, int]] = {}
        self._coded: dict[tuple, tuple] = {}  # (task, lang, value) -> (cell, code of the value in the cell's labels)
        cell_of: dict[int, tuple] = {}  # item id -> (task, lang, cell, row)
        entries: dict[tuple, list[tuple[int, int, int]]] = defaultdict(list)
        coded = self._coded
        for item_id, task, lang, annotator, label in data.shared_labels:
            key, code = coded.get((task, lang, label)) or self._code_of(task, lang, label)
            rows = self.rows[key] if key in self.rows else self.rows.setdefault(key, {})
            row = rows.setdefault(item_id, len(rows))
            cell_of[item_id] = (task, lang, key, row)
            columns = self.annotators[key] if key in self.annotators else self.annotators.setdefault(key, {})
            entries[key].append((row, columns.setdefault(annotator, len(columns)), code))
        self.votes = {}
        for key, found in entries.items():
            votes = np.full((len(self.rows[key]), len(self.annotators[key])), NO_VOTE, dtype=np.int64)
            row, column, code = np.array(found, dtype=np.int64).T
            votes[row, column] = code
            self.votes[key] = votes
        self.verdicts: dict[tuple, tuple[list[int], list[int]]] = defaultdict(lambda: ([], []))  # (cell, judge)
        for item_id, judge, status, verdict in data.shared_verdicts:
            if status not in ("verdict", "unparsed") or item_id not in cell_of:
                continue
            task, lang, key, row = cell_of[item_id]
            if status == "verdict":
                key, code = coded.get((task, lang, verdict)) or self._code_of(task, lang, verdict)
            rows, codes = self.verdicts[(key, judge)]
            rows.append(row)
            codes.append(code if status == "verdict" else UNPARSED)

    def _code_of(self, task: str, lang: str, value: str) -> tuple:
        key = self.kinds.key(task, lang)
        self._coded[(task, lang, value)] = found = (key, self.code(key, self.kinds.label(task, lang, value)))
        return found

    def code(self, key: tuple, label: str) -> int:
        labels = self.labels.setdefault(key, {})
        return labels.setdefault(label, len(labels))

    def votes_for(self, key: tuple, judge: str, kind: VerdictKind | None, unparsed: str) -> SharedVotes:
        """The cell's items and `judge`'s verdicts on them, unparsed verdicts as `unparsed` says:
        counted as the negative label (as-negative, for a kind with a positive label), left out
        as not judged (exclude), or kept as unparsed."""
        rows, codes = self.verdicts[(key, judge)]
        found = np.array(codes, dtype=np.int64)
        if unparsed == "as-negative" and kind is not None and kind.positive:
            found[found == UNPARSED] = self.code(key, kind.labels[1])
        elif unparsed == "exclude":
            found[found == UNPARSED] = NOT_JUDGED
        verdicts = np.full(len(self.rows[key]), NOT_JUDGED, dtype=np.int64)
        verdicts[np.array(rows, dtype=np.int64)] = found
        return SharedVotes(self.votes[key], verdicts, list(self.annotators[key]), list(self.labels[key]))


def _shared_scores(data: AgreementData, kinds: CellKinds) -> dict[tuple, tuple[dict, dict]]:
    """Per scored cell, the scores of the items two or more people scored (item -> {annotator:
    scores}) and each judge's on them (judge -> item -> scores, None where unparsed)."""
    out: dict[tuple, tuple[dict, dict]] = {}
    cell_of = {}
    for item_id, task, lang, annotator, label in data.shared_labels:
        key = kinds.key(task, lang)
        if kinds.scored(key) and (scores := kinds.kind(key).scores(label)) is not None:
            people, _ = out.setdefault(key, ({}, defaultdict(dict)))
            people.setdefault(item_id, {})[annotator] = scores
            cell_of[item_id] = key
    for item_id, judge, status, verdict in data.shared_verdicts:
        key = cell_of.get(item_id)
        if key is None or status not in ("verdict", "unparsed"):
            continue
        scores = kinds.kind(key).scores(verdict) if status == "verdict" else None
        if status == "unparsed" or scores is not None:
            out[key][1][judge][item_id] = scores
    return out


def _add_ceilings_and_alt_tests(data: AgreementData, cells: dict, kinds: CellKinds, options: ReportOptions) -> None:
    """Per categorical cell, on the items two or more people labelled: the judge beside the
    humans (same items, same statistic family, a paired interval for the difference), and the
    alternative annotator test; unparsed verdicts follow `options.unparsed`. Per scored cell,
    the score statistics of people and judge on the items two or more people scored
    (`score_ceiling`; unparsed verdicts left out)."""
    shared = _SharedCells(data, kinds)
    scored = _shared_scores(data, kinds) if any(kinds.scored(key) for key, _ in cells) else {}
    for (key, judge), c in cells.items():
        if kinds.scored(key):
            c.alt_test = AltTest(False, epsilon=options.epsilon, reason="the test compares categorical labels, not scores")
            if key in scored:
                people, verdicts = scored[key]
                c.score_ceiling = score_ceiling(people, verdicts[judge], SCORE_KEYS, threshold=options.threshold,
                                                resamples=options.resamples)
            continue
        if key not in shared.rows:
            continue
        votes = shared.votes_for(key, judge, c.kind, options.unparsed)
        c.ceiling = human_ceiling_coded(votes, resamples=options.resamples)
        c.alt_test = alternative_annotator_test_coded(votes, epsilon=options.epsilon)
