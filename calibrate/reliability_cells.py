"""Judge reliability per cell and judge, from the store: how consistent the judge is over its
repeats, what its confidence is worth against people, above which confidence its verdicts can
be accepted without a person, and whether it leans on response length or favours a system.

`calibrate.stats.reliability` holds the statistics as pure functions over arrays; this module pulls
the judge's samples, the human (gold) labels, response lengths and systems from the store,
puts them in the report's cells (English yes/no and Chinese 是/否 meet on their polarity), and
hands each cell's arrays to those functions. The report, `calibrate trust`, the `escalate`
annotation order and the gold export all read their figures from here, and the report's
`jury` judge (several judges combined) its agreement rows.

Per item and judge:
- verdict: the majority verdict over the judge's samples (its only verdict without --repeat);
  a tie, or no parsed sample, gives none and the item is left out of calibration and trust;
- confidence: P(verdict) from logprobs where every sample giving that verdict has one stored
  (their mean), else the share of its answers giving the majority verdict
  (`majority_confidence`: an unparsed sample is an answer that did not agree, a failed one no
  answer; two "yes" and one unparsed give 2/3) where two or more samples answered, else none;
  a stored value outside [0, 1] (a server's malformed logprob) is not a probability and counts
  as none;
- human label: the adjudicator's (`gold_from`) where given, else the strict majority of the
  annotators' labels in force (a single annotator's label counts; ties give none).
An unparsed sample is UNPARSED in `JudgedItem.samples`, a failed one None: the verdict and the
consistency figures read labels only, the confidence every answer. The report's figures,
`trust`, the escalate order and the export's trust marks all take the verdicts and confidences
set here. Items with a verdict and a gold label but no confidence are left out of calibration and
trust, and counted (`JudgeVerdicts.unscored`).

The statistics (numpy, scipy) are imported when first used, so the CLI and the annotation app,
which read this module's defaults, start without them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

from calibrate.cells import CellKinds
from calibrate.gold import gold_by_item
from calibrate.kinds import POSITIVE, VerdictKind
from calibrate.model import TIED, AgreementData
from calibrate.preload import import_meanwhile
from calibrate.store import Store
from calibrate.templates import TemplateError, TemplateSet
from calibrate.verdicts import SCORE_KEYS

if TYPE_CHECKING:
    import numpy as np

    from calibrate.stats.reliability import Calibration, Consistency, Probe
    from calibrate.stats.trust_or_escalate import Trust

DEFAULT_TARGET, DEFAULT_RISK = 0.9, 0.1  # agreement with people to guarantee, and the risk allowed
NO_SYSTEM = "(none)"  # the system of items that name none, where trust is cut by system


@dataclass(slots=True)
class JudgedItem:
    """One irregular verdict (repeats, or an error in force) as one judge gave it, in its cell's
    labels: read sample by sample, and few."""

    item_id: int
    samples: dict[int, object] = field(default_factory=dict)  # sample index -> verdict, UNPARSED, or None (failed)
    logprobs: dict[int, float | None] = field(default_factory=dict)  # sample index -> stored P(verdict)
    human: str | None = None
    length: int | None = None
    system: str | None = None
    verdict: str | None = None
    confidence: float | None = None


class VerdictGroup(NamedTuple):
    """Items of one cell and judge that the reliability figures cannot tell apart: the same
    verdict and gold label (in the cell's labels; None: unparsed, or unlabelled or tied), system
    (None: none named) and response length (None: none), with the stored confidences of those
    that have one (every item of the group when it has a verdict, a gold label and a confidence)."""

    verdict: str | None
    human: str | None
    system: str | None
    length: int | None
    n: int
    confidences: np.ndarray


@dataclass
class JudgeVerdicts:
    """One judge's verdicts in one cell: the labelled ones counted in groups (`VerdictGroup`),
    and the irregular ones (repeats, or an error in force) item by item, which are in the
    groups too as groups of one."""

    groups: list[VerdictGroup] = field(default_factory=list)
    irregular: list[JudgedItem] = field(default_factory=list)

    def _labelled(self, system: str | None) -> list[VerdictGroup]:
        """The groups with a verdict and a gold label (of `system` only, when given)."""
        return [g for g in self.groups if g.verdict is not None and g.human is not None
                and (system is None or (g.system or NO_SYSTEM) == system)]

    def scored(self, system: str | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(confidence, agrees with the gold label) of the items with a verdict, a confidence and
        a gold label (of `system` only, when given; NO_SYSTEM for items that name none): what
        calibration and trust take."""
        import numpy as np

        groups = [g for g in self._labelled(system) if len(g.confidences)]
        if not groups:
            return np.zeros(0), np.zeros(0, dtype=bool)
        return (np.concatenate([g.confidences for g in groups]),
                np.repeat([g.verdict == g.human for g in groups], [len(g.confidences) for g in groups]))

    def unscored(self, system: str | None = None) -> int:
        """How many items with a verdict and a gold label (of `system` only, when given) have no
        confidence, and so are left out of `scored`: no logprob stored, and not two samples
        that answered."""
        return sum(g.n - len(g.confidences) for g in self._labelled(system))


@dataclass
class JudgeReliability:
    """The reliability figures of one judge in one cell."""

    key: tuple[str, str]
    judge: str
    kind: VerdictKind | None
    repeats: int = 1  # the most samples any item has
    fewest_repeats: int = 1  # the fewest samples of an item with two or more (runs resumed with another --repeat)
    temperatures: str | None = None  # the temperature(s) the repeats were asked at, in words
    consistency: Consistency | None = None
    unstable_items: list[int] = field(default_factory=list)  # item ids whose repeats disagree
    calibration: Calibration | None = None
    length: Probe | None = None
    systems: dict[str, Probe] = field(default_factory=dict)
    same_family: dict[str, bool | None] = field(default_factory=dict)  # system -> judge of its family?

    @property
    def repeats_words(self) -> str:
        """How many repeats the items have: "3", or "2-3" where runs asked for different numbers."""
        return str(self.repeats) if self.fewest_repeats == self.repeats else f"{self.fewest_repeats}-{self.repeats}"

    def as_dict(self) -> dict:
        return {
            "repeats": self.repeats, "fewest_repeats": self.fewest_repeats,
            "consistency": self.consistency.as_dict() if self.consistency else None,
            "unstable_items": self.unstable_items,
            "calibration": self.calibration.as_dict() if self.calibration else None,
            "length_bias": self.length.as_dict() if self.length else None,
            "systems": {name: {**probe.as_dict(), "same_family": self.same_family.get(name)}
                        for name, probe in self.systems.items()},
        }


IrregularSamples = Callable[[], "tuple[list[tuple], list[tuple]] | None"]


def gather(store: Store, kinds: CellKinds, *, judge: str | None = None, gold_from: str | None = None,
           irregular_read: IrregularSamples | None = None,
           once_labelled: list[tuple] | Callable[[], list[tuple]] | None = None,
           helpers: Sequence[Store] = ()) -> dict[tuple[tuple[str, str], str], JudgeVerdicts]:
    """(cell, judge) -> its verdicts, for every judge with a verdict in force that is not an
    error on a counted item of the cell: the regular ones on labelled items counted in groups
    (`Store.verdict_groups`), the irregular ones read item by item (`Store.irregular_samples`,
    or `irregular_read`: what another connection read of them, None if it did not)
    with their verdict and confidence set as the module docstring says. `once_labelled`: what
    `Store.once_labelled_groups` gave on this database, read before. `helpers`: stores reading
    the same snapshot (`Store.reading`), which read the items with one label, and read the
    irregular verdicts and set them, on threads of their own meanwhile (where neither is given).
    The judged cells are keyed first, in their order, which decides the words of a cell that
    pools two kinds: a helper's thread keys only the cells of irregular verdicts none of them is."""
    out: dict[tuple[tuple[str, str], str], JudgeVerdicts] = {}
    words_of: dict[tuple[str, str], dict[str, str]] = {}

    def words(task: str, lang: str) -> dict[str, str] | None:
        if kinds.templates.people_decide(task, lang):
            return None  # people decide these items: a judgment there is no evidence about the judge
        if (task, lang) not in words_of:
            words_of[(task, lang)] = _cell_words(kinds, task, lang) or {}
        return words_of[(task, lang)]

    for task, lang, _, judge_name in store.judged_cells(judge):
        if words(task, lang) is not None:
            out.setdefault((kinds.key(task, lang), judge_name), JudgeVerdicts())
    if helpers and irregular_read is None and once_labelled is None:
        with ThreadPoolExecutor(max_workers=min(2, len(helpers))) as pool:
            once = pool.submit(helpers[0].once_labelled_groups)
            irregular_items = pool.submit(lambda: _irregular_items(kinds, helpers[-1].irregular_samples(judge),
                                                                   gold_from=gold_from))
            groups = store.verdict_groups(judge, gold_from, once.result)
            irregular = irregular_items.result()
    else:
        groups = store.verdict_groups(judge, gold_from, once_labelled)
        read = irregular_read() if irregular_read is not None else None
        irregular = _irregular_items(kinds, read if read is not None else store.irregular_samples(judge),
                                     gold_from=gold_from)
    for task, lang, judge_name, system, _, verdict, gold, length, n, confidences in groups:
        mapped = words(task, lang)
        if mapped is None:
            continue
        group = VerdictGroup(mapped.get(verdict, verdict), mapped.get(gold, gold), system or None, length, n, confidences)
        out.setdefault((kinds.key(task, lang), judge_name), JudgeVerdicts()).groups.append(group)
    import numpy as np

    for (key, judge_name), items in irregular.items():
        found = out.setdefault((key, judge_name), JudgeVerdicts())
        found.irregular = items
        found.groups += [VerdictGroup(i.verdict, i.human, i.system, i.length, 1,
                                      np.array([i.confidence] if i.confidence is not None else [], dtype=float))
                         for i in items if i.human is not None]
    return out


def _cell_words(kinds: CellKinds, task: str, lang: str) -> dict[str, str] | None:
    """The labels of one (task, lang) in the words of the cell it is pooled in (English yes/no
    and Chinese 是/否 meet on their polarity); None when they are the cell's own labels."""
    kinds.key(task, lang)
    try:
        own = kinds.templates.for_task(task, lang).kind.labels
    except TemplateError:
        return None
    words = {label: kinds.label(task, lang, label) for label in own}
    return None if all(label == word for label, word in words.items()) else words


def _in_cell_words(kinds: CellKinds, task: str, lang: str, items) -> None:
    """Verdicts and human labels of one (task, lang) in the labels of its cell (`_cell_words`)."""
    words = _cell_words(kinds, task, lang)
    if words is None:
        return
    for item in items:
        item.human = words.get(item.human, item.human)
        item.samples = {k: words.get(v, v) for k, v in item.samples.items()}


def _set_verdicts(items: list[JudgedItem]) -> None:
    """Each item's verdict and confidence from its samples, as the module docstring says."""
    from calibrate.stats.trust_or_escalate import is_label, majority_confidence

    repeated = []
    for item in items:
        if len(item.samples) > 1:
            repeated.append(item)
            continue
        ((sample, verdict),) = item.samples.items()  # one sample: its verdict and stored confidence
        item.verdict = verdict if is_label(verdict) else None
        item.confidence = item.logprobs[sample] if item.verdict is not None else None
    if not repeated:
        return
    width = max(max(i.samples) + 1 for i in repeated)
    rows = [tuple([i.samples.get(k) for k in range(width)]) for i in repeated]
    distinct = list(dict.fromkeys(rows))  # items share a few rows of samples: each row's majority worked out once
    majority = majority_confidence(distinct)
    of_row = dict(zip(distinct, zip(majority.verdicts, majority.confidence, majority.answers, strict=True), strict=True))
    for item, row in zip(repeated, rows, strict=True):
        verdict, share, answers = of_row[row]
        item.verdict = verdict
        if verdict is None:
            continue
        stored = [item.logprobs.get(k) for k, v in item.samples.items() if v == verdict]
        if stored and all(p is not None for p in stored):
            item.confidence = sum(stored) / len(stored)
        elif answers >= 2:
            item.confidence = share


def measure(key: tuple[str, str], judge: str, kind: VerdictKind | None, verdicts: JudgeVerdicts, *,
            families: Mapping[str, str] | None = None, resamples: int | None = None) -> JudgeReliability:
    """Every reliability figure of one judge in one cell that its data allow (`resamples` for
    the bootstrap of alpha across repeats; None: the statistics module's default)."""
    from calibrate.stats.reliability import (
        calibration,
        consistency,
        length_bias,
        leniency,
        same_family,
    )

    result = JudgeReliability(key, judge, kind)
    if kind is not None and kind.scored:
        return result  # consistency, calibration and the probes here are for categorical verdicts
    items = sorted(verdicts.irregular, key=lambda i: i.item_id)  # only these have repeats
    result.repeats = max((len(i.samples) for i in items), default=1)
    result.fewest_repeats = min((len(i.samples) for i in items if len(i.samples) > 1), default=result.repeats)
    if result.repeats >= 2:
        width = max(max(i.samples) + 1 for i in items)
        table = [[i.samples.get(k) for k in range(width)] for i in items]
        result.consistency = consistency(table, **({"resamples": resamples} if resamples else {}))
        result.unstable_items = [items[row].item_id for row in result.consistency.unstable]
    confidence, correct = verdicts.scored()
    if len(confidence):
        result.calibration = calibration(confidence, correct)
    if kind is None or kind.positive is None:
        return result
    import numpy as np

    labels = {label for g in verdicts.groups for label in (g.verdict, g.human)}  # a few, over many groups
    polarity = {label: kind.polarity(label) for label in labels}
    positive = {label: side == POSITIVE for label, side in polarity.items()}
    polar = [g for g in verdicts.groups if polarity[g.verdict] and polarity[g.human]]
    # in one order whatever the reading order (the fit's iterations, near separation, depend on it)
    sized = sorted((g for g in polar if g.length is not None),
                   key=lambda g: (positive[g.verdict], positive[g.human], g.length))
    if sized:
        counts = [g.n for g in sized]
        result.length = length_bias(np.repeat([positive[g.verdict] for g in sized], counts),
                                    np.repeat([positive[g.human] for g in sized], counts),
                                    np.repeat([g.length for g in sized], counts))
    named = [g for g in polar if g.system]
    if named:
        counts = [g.n for g in named]
        result.systems = leniency(np.repeat([positive[g.verdict] for g in named], counts),
                                  np.repeat([positive[g.human] for g in named], counts),
                                  np.repeat(np.array([g.system for g in named], dtype=object), counts))
        result.same_family = {name: same_family(judge, name, families or {}) for name in result.systems}
    return result


def reliability_by_cell(store: Store, kinds: CellKinds, *, judge: str | None = None, gold_from: str | None = None,
                        families: Mapping[str, str] | None = None, resamples: int | None = None,
                        irregular_read: IrregularSamples | None = None, once_labelled: list[tuple] | None = None
                        ) -> dict[tuple[tuple[str, str], str], JudgeReliability]:
    """(cell, judge) -> its reliability figures, for every judge with stored verdicts (the
    irregular verdicts and the groups of items with one label as `gather` takes them)."""
    gathered = gather(store, kinds, judge=judge, gold_from=gold_from, irregular_read=irregular_read,
                      once_labelled=once_labelled)
    return {(key, name): measure(key, name, kinds.kind(key), verdicts, families=families, resamples=resamples)
            for (key, name), verdicts in gathered.items()}


def _irregular_items(kinds: CellKinds, irregular: tuple[list[tuple], list[tuple]], *,
                     gold_from: str | None) -> dict[tuple[tuple[str, str], str], list[JudgedItem]]:
    """(cell, judge) -> the irregular verdicts (`irregular`, as `Store.irregular_samples` gives
    them: repeats, or an error in force), one JudgedItem each with its verdict and confidence
    set: they are few."""
    from calibrate.stats.trust_or_escalate import UNPARSED

    samples, labels = irregular
    people: dict[int, dict[str, str]] = {}
    for item_id, annotator, label in labels:
        people.setdefault(item_id, {})[annotator] = label
    humans = gold_by_item(people, gold_from)
    cells: dict[tuple[str, str, str], dict[int, JudgedItem]] = {}
    for item_id, task, lang, system, judge_name, sample, status, verdict, confidence, length in samples:
        items = cells.get((task, lang, judge_name))
        if items is None:
            items = cells[(task, lang, judge_name)] = {}
        item = items.get(item_id)
        if item is None:
            item = items[item_id] = JudgedItem(item_id, human=humans.get(item_id), length=length, system=system or None)
        item.samples[sample] = verdict if status == "verdict" else UNPARSED if status == "unparsed" else None
        item.logprobs[sample] = confidence if confidence is not None and 0 <= confidence <= 1 else None
    out: dict[tuple[tuple[str, str], str], list[JudgedItem]] = {}
    for (task, lang, judge_name), items in cells.items():
        if kinds.templates.people_decide(task, lang):
            continue
        _in_cell_words(kinds, task, lang, items.values())
        _set_verdicts(list(items.values()))
        out.setdefault((kinds.key(task, lang), judge_name), []).extend(items.values())
    return out


def trust_by_cell(store: Store, kinds: CellKinds, *, target: float = DEFAULT_TARGET, risk: float = DEFAULT_RISK,
                  judge: str | None = None, gold_from: str | None = None, by_system: bool = False,
                  min_labels: int | None = None, helpers: Sequence[Store] = ()
                  ) -> tuple[dict[tuple[tuple[str, str], str, str | None], Trust], dict]:
    """(cell, judge, system) -> the threshold `trust_threshold` finds there from the items with a
    verdict, a confidence and a gold label (`JudgeVerdicts.scored`; system None unless
    `by_system`), certified only from `min_labels` labelled items (None:
    `minimum_calibration(target, risk)`, 198 at 0.9 and 0.1), for every cell, judge and system
    with a judged item, with the labelled items it leaves out for want of a confidence
    (`Trust.without_confidence`); and the irregular verdicts by (cell, judge), for the trust
    marks. `helpers` as for `gather`. scipy.special, which the thresholds need, is imported on a
    thread of its own meanwhile."""
    from calibrate.stats.trust_or_escalate import minimum_calibration, trust_threshold

    importing = import_meanwhile("scipy.special")
    if min_labels is None:
        min_labels = minimum_calibration(target, risk)

    def fitted(verdicts: JudgeVerdicts, system: str | None) -> Trust:
        found = trust_threshold(*verdicts.scored(system), target=target, risk=risk, min_calibration=min_labels)
        found.without_confidence = verdicts.unscored(system)
        return found

    try:
        gathered = gather(store, kinds, judge=judge, gold_from=gold_from, helpers=helpers)
    finally:  # a refused cell ends the command: not while the import runs
        importing.join()
    judged: dict[tuple[tuple[str, str], str], set[str]] = {}
    for task, lang, system, judge_name in store.judged_cells(judge) if by_system else ():
        if not kinds.templates.people_decide(task, lang):
            judged.setdefault((kinds.key(task, lang), judge_name), set()).add(system or NO_SYSTEM)
    found = {}
    for (key, judge_name), verdicts in gathered.items():
        if not by_system:
            found[(key, judge_name, None)] = fitted(verdicts, None)
            continue
        systems = (judged.get((key, judge_name), set()) | {g.system or NO_SYSTEM for g in verdicts.groups}
                   | {i.system or NO_SYSTEM for i in verdicts.irregular})
        for system in sorted(systems):
            found[(key, judge_name, system)] = fitted(verdicts, system)
    return found, {cell: verdicts.irregular for cell, verdicts in gathered.items() if verdicts.irregular}


@dataclass
class TrustMarks:
    """Which judge verdicts can be accepted without a person: per (task, lang, judge) the
    confidence threshold where one meets the target (absent: none does), and the irregular
    verdicts' marks one by one (item id, judge) -> accepted. A regular verdict is accepted when
    it is parsed and its stored confidence, in [0, 1], reaches its cell's threshold. `refused`
    says why no verdict is accepted in the cells where no threshold was certified."""

    thresholds: dict[tuple[str, str, str], float]
    irregular: dict[tuple[int, str], bool]
    judge: str | None = None
    refused: list[tuple[tuple[str, str], str, str]] = field(default_factory=list)  # (cell, judge, why no threshold)

    def refusals(self, task: str | None = None, lang: str | None = None, *,
                 judged: Collection[tuple[str, str, str]] | None = None) -> list[tuple[str, str]]:
        """(cell and judge, why) where no threshold was certified, in the cells of `task` and
        `lang` (None: any), and where `judged` (task, lang, judge) is given, in the cells where
        one of them falls (the cells an export of one system's items meets)."""
        return [(f"{cell[0]} {cell[1]} ({judge_name})", why) for cell, judge_name, why in self.refused
                if task in (None, cell[0], "*") and lang in (None, cell[1], "*")
                and (judged is None or any(cell[0] in (t, "*") and cell[1] in (g, "*") and j == judge_name
                                           for t, g, j in judged))]


SCORES_REFUSED = ("the verdicts are scores, which no confidence threshold accepts (calibrate report shows how they "
                  "follow people's)")


def trust_marks(store: Store, kinds: CellKinds, *, target: float = DEFAULT_TARGET, risk: float = DEFAULT_RISK,
                judge: str | None = None, gold_from: str | None = None, min_labels: int | None = None,
                helpers: Sequence[Store] = ()) -> TrustMarks:
    """Which verdicts (from `judge`, or every judge) can be accepted without a person: those
    whose confidence reaches the threshold `trust_by_cell` finds for the item's cell (none where
    no threshold is certified, by default below `minimum_calibration` labelled items, nor
    without a verdict or confidence). A cell of scored verdicts has no verdict to accept: its
    refusal says so (SCORES_REFUSED). `helpers` as for `gather`."""
    found, irregular = trust_by_cell(store, kinds, target=target, risk=risk, judge=judge, gold_from=gold_from,
                                     min_labels=min_labels, helpers=helpers)
    pairs = store.task_langs()
    thresholds = {(task, lang, judge_name): trust.threshold
                  for (key, judge_name, _), trust in found.items() if trust.met
                  for task, lang in pairs if kinds.key(task, lang) == key}
    marks = {}
    for (key, judge_name), items in irregular.items():
        trust = found.get((key, judge_name, None))
        for item in items:
            marks[(item.item_id, judge_name)] = bool(
                trust is not None and trust.met and item.verdict is not None and item.confidence is not None
                and item.confidence >= trust.threshold)
    refused = [(key, judge_name, SCORES_REFUSED if kinds.scored(key) else refusal_words(trust))
               for (key, judge_name, _), trust in sorted(found.items(), key=lambda kv: (kv[0][0], kv[0][1]))
               if not trust.met]
    return TrustMarks(thresholds, marks, judge, refused)


def refusal_words(found: Trust) -> str:
    """Why no threshold was certified, in words that are the same from cell to cell (so they
    can be said once with the cells they apply to)."""
    if found.min_calibration is not None and found.n < found.min_calibration:
        return (f"fewer than {found.min_calibration} labelled items with a confidence, the minimum to certify "
                "(--min-labels N certifies from fewer; most such certifications are wrong on fresh items)")
    return str(found.reason).split(":")[0]


# -- the jury ------------------------------------------------------------------------------------

JURY = "jury"


def _jury_verdict(kind: VerdictKind | None, row: tuple) -> tuple[str, str | None]:
    """The jury's status and verdict on one item from its judges' verdicts (None: unparsed):
    'verdict' with the plurality label, or for scores the mean per dimension
    (`calibrate.stats.reliability.jury`); TIED where two or more labels share the top count;
    'unparsed' where no judge's output parsed."""
    from calibrate.stats.reliability import jury

    if kind is not None and kind.scored:
        dims = [[(kind.scores(v) or {}).get(d) if v else None for v in row] for d in SCORE_KEYS]
        means = [jury([dim], scores=True).verdicts[0] for dim in dims]
        return ("unparsed", None) if None in means else (
            "verdict", kind.score_label(dict(zip(SCORE_KEYS, means, strict=True))))
    combined = jury([list(row)])
    if combined.verdicts[0] is not None:
        return "verdict", combined.verdicts[0]
    return (TIED if combined.ties else "unparsed"), None


def jury_data(store: Store, templates: TemplateSet, *, gold_from: str | None = None,
              system: str | None = None) -> AgreementData | None:
    """The agreement rows of one more judge, `jury`, whose verdict on an item combines every
    judge's newest verdict there (`calibrate.stats.reliability.jury`: the plurality label, the mean of
    scores), so its agreement with people can be set beside each member's. The rule, per item:
    - only items two or more judges judged count; an item only one judged (the others' calls
      failed: an error is no judgment, `calibrate.model.judged`; or they never judged it) is left
      out, and counted in `one_judge_only` with the judges whose calls failed there;
    - an unparsed output is a judgment but no vote: the other judges' labels decide (beside one
      unparsed output, a single other label stands);
    - where two or more labels share the top count the judges tie: the item has no verdict and
      the status TIED, not 'unparsed' (with two judges, it has a verdict only where they agree or
      one output is unparsed);
    - where no judge's output parsed, the jury's is unparsed.
    The gold label follows `Store.agreement_data` (`calibrate.gold`: the adjudicator's where given
    and they labelled the item, else the strict majority, an item one person labelled having
    theirs). With `system`, only that system's items. None with fewer than two judges."""
    judges, rows = store.jury_rows(exclude=JURY, system=system, gold_from=gold_from)
    if len(judges) < 2:
        return None
    k = len(judges)
    kinds: dict[tuple[str, str], VerdictKind | None] = {}
    # the jury's status and verdict per (task, lang) and row: rows repeat (keyed without the kind, whose hash is slow)
    combined: dict[tuple, tuple[str, str | None]] = {}

    def verdict_of(task: str, lang: str, verdicts: tuple) -> tuple[str, str | None]:
        found = combined.get((task, lang, verdicts))
        if found is None:
            if (task, lang) not in kinds:
                try:
                    kinds[task, lang] = templates.for_task(task, lang).kind
                except TemplateError:
                    kinds[task, lang] = None
            found = combined[task, lang, verdicts] = _jury_verdict(kinds[task, lang], verdicts)
        return found

    judged, versus_human, versus_gold, shared = Counter(), Counter(), Counter(), []
    members: dict[tuple[str, str, str], None] = {}  # (task, lang, judge) where the judge gave a parsed verdict
    for task, lang, *verdicts, n in rows["judged"]:
        judged[(task, lang, JURY, verdict_of(task, lang, tuple(verdicts))[0])] += n
        members.update(((task, lang, judge), None) for judge, verdict in zip(judges, verdicts, strict=True)
                       if verdict is not None)
    for row in rows["versus_human"]:
        task, lang, verdicts, (annotator, label, n) = row[0], row[1], tuple(row[2:2 + k]), row[2 + k:]
        versus_human[(task, lang, JURY, annotator, *verdict_of(task, lang, verdicts), label)] += n
    for row in rows["versus_gold"]:
        task, lang, verdicts, (gold, n) = row[0], row[1], tuple(row[2:2 + k]), row[2 + k:]
        versus_gold[(task, lang, JURY, *verdict_of(task, lang, verdicts), gold)] += n
    for item_id, task, lang, *verdicts in rows["shared"]:
        shared.append((item_id, JURY, *verdict_of(task, lang, tuple(verdicts))))
    counted = lambda counts: [(*key, n) for key, n in counts.items()]  # noqa: E731
    return AgreementData(judge_vs_human=counted(versus_human), judge_vs_gold=counted(versus_gold),
                         shared_labels=[], shared_verdicts=shared, judged=counted(judged), jury_judges=tuple(judges),
                         one_judge_only=[(task, lang, JURY, failed, n) for task, lang, failed, n in rows["one_judge"]],
                         jury_members=list(members))
