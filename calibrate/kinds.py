"""What a verdict kind means, in one place.

A template's manifest names its verdict kind (`yes_no_en`, `yes_no_zh`, `label_set`,
`record_entity`, `rubric_scores`, `inspect_score`) and, for label sets, the labels; an Inspect
task's labels come from its scorer's values (`inspect_labels`). A `VerdictKind` answers every
question the rest of calibrate asks about such verdicts and labels: how to parse a judge's
output, which labels a person may give (and with which keys), what overriding a verdict means,
how a label reads and is coloured, whether a label is valid and in which form it is stored,
whether the kind is measured as scores or as categories, how C3 words a verdict, and the
canonical polarity that makes English "yes" and Chinese "是" the same outcome when cells are
pooled across languages.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from functools import cache

from calibrate import verdicts
from calibrate.model import CalibrateError
from calibrate.verdicts import SCORE_KEYS, Verdict

POSITIVE, NEGATIVE = "positive", "negative"
"""Canonical polarity of a binary label: the label that means "yes", and the one that means "no"."""

KIND_NAMES = ("yes_no_en", "yes_no_zh", "rubric_scores", "label_set", "record_entity", "inspect_score")

INSPECT_LETTERS = ("C", "P", "I", "N")
"""Inspect's value letters in their canonical order: correct, partially correct, incorrect, no answer."""

# Binary label pairs whose first label is the positive outcome. The first four read as yes / no,
# so the y and n keys label them; entailment pairs keep their digits.
_POLAR_PAIRS = {
    ("yes", "no"): True,
    ("是", "否"): True,
    ("True", "False"): True,
    ("correct", "incorrect"): True,
    ("C", "I"): True,
    ("1", "0"): True,
    ("entailment", "not_entailment"): False,
}
_C3_WORDING = {
    "yes_no_en": {"yes": "The answer is: yes.", "no": "The answer is: no."},
    "yes_no_zh": {"是": "最终答案为：是。", "否": "最终答案为：否。"},
}
# Verdict badges: white text on dark backgrounds picked from the xterm 256-colour cube (so a
# 256-colour terminal shows them exactly) whose nearest 16-colour ANSI colours are as dark; every
# pair keeps a WCAG AA contrast ratio (>= 4.5) in true colour, 256 and 16 colours (tested).
BADGE_TEXT = "#ffffff"
BADGE_COLOURS = {POSITIVE: "#005f00", NEGATIVE: "#870000", "other": "#00005f"}
STATUS_BADGES = {"unparsed": ("#000000", "#d7af00"), "error": (BADGE_TEXT, "#870000")}
"""(text, background) of the badge shown instead of a verdict: an unparsed output, a judge error."""

_TENTH = Decimal("0.1")
_FIXED_LABELS = {"yes_no_en": ("yes", "no"), "yes_no_zh": ("是", "否"), "rubric_scores": ()}


class LabelError(CalibrateError, ValueError):
    """A label that this kind does not accept; the message says which labels it does."""


class ZeroBasedLabel(LabelError):
    """A choice number that reads as counted from 0 (SuperGLUE's COPA form) where the choices
    count from 1: a file holding one likely numbers every choice so, its valid-looking labels
    included."""


@dataclass(frozen=True)
class VerdictKind:
    """One verdict kind with its label set (a label-set kind exists once per distinct set)."""

    name: str
    labels: tuple[str, ...]

    # -- what it is --------------------------------------------------------------------------

    @property
    def scored(self) -> bool:
        """Scores (measured by correlation and error), not categories (measured by kappa)."""
        return self.name == "rubric_scores"

    @property
    def positive(self) -> str | None:
        """The label meaning "yes" for a binary kind with a polarity, else None."""
        return self.labels[0] if self.labels in _POLAR_PAIRS else None

    @property
    def reads_yes_no(self) -> bool:
        """The two labels read as yes / no, so the y and n keys label them."""
        return _POLAR_PAIRS.get(self.labels, False)

    @property
    def is_binary(self) -> bool:
        return len(self.labels) == 2

    @property
    def parses_output(self) -> bool:
        """Verdicts are parsed from the judge's raw output. An Inspect score's value is the
        scorer's own decision, read from the log, so re-parsing its raw output changes nothing."""
        return self.name != "inspect_score"

    @property
    def right_or_wrong(self) -> bool:
        """A verdict says whether the system's response is right, so a system's score can be
        computed from verdicts and labels: yes/no kinds (yes is right), ReCoRD (correct is
        right), label sets (right is the gold label); an Inspect score only when it takes two
        values with a polarity (C/I, True/False, 1/0). Scores and Inspect's other value sets say
        more than right or wrong."""
        if self.name == "inspect_score":
            return self.positive is not None
        return not self.scored

    @property
    def right_by_reference(self) -> bool:
        """A verdict is an answer, right when it is the item's reference (the benchmark's gold
        label): label sets, True/False ones too (a SuperGLUE system answering False where the
        gold is False is right), and a person's label on such an item is their reading of the
        system's answer. A yes/no verdict, a ReCoRD verdict and label (correct / incorrect: the
        answer against the gold entities) or an Inspect score say themselves whether the
        response is right (their positive label)."""
        return self.name == "label_set"

    def label_means(self, source: str = "the output") -> str | None:
        """What a person's label says where it is easily taken for something else: on a label set,
        the answer `source` gives (confirming or overriding the answer the judge parsed from it),
        not the right answer, which the scores compare it with (`right_by_reference`); None
        elsewhere."""
        if not self.right_by_reference:
            return None
        choices = f" ({', '.join(self.labels[:-1])} or {self.labels[-1]})" if len(self.labels) > 1 else ""
        return f"label the answer {source} gives{choices}, not the one that is right: scores compare it with gold"

    @property
    def needs_gold(self) -> bool:
        """Right or wrong only against the benchmark's gold (the item's reference): a label set's
        answer is compared with it, a ReCoRD answer with the gold entities, so an item without
        one (a test split's) is neither right nor wrong in a score."""
        return self.name in ("label_set", "record_entity")

    @property
    def pool_key(self) -> str:
        """Kinds with the same pool key can share a cell once labels are made canonical: the
        English and Chinese yes/no kinds pool; other kinds only with themselves."""
        if self.name in ("yes_no_en", "yes_no_zh"):
            return "yes/no"
        return f"{self.name}:{'/'.join(self.labels)}"

    # -- parsing -----------------------------------------------------------------------------

    def parse(self, text: str | None, *, answers: list[str] | None = None, entities: list[str] | None = None) -> Verdict:
        """The judge's verdict in `text`, or unparsed with the reason (never a guess). A ReCoRD
        answer is read against the passage's `entities` and judged by the gold `answers`."""
        text = text or ""
        if self.name == "yes_no_en":
            return verdicts.parse_yes_no_en(text)
        if self.name == "yes_no_zh":
            return verdicts.parse_yes_no_zh(text)
        if self.name == "rubric_scores":
            parsed = verdicts.parse_rubric_scores(text)
            if parsed.parsed:
                return Verdict(self.score_label(json.loads(parsed.value)), detail=parsed.detail)
            return parsed
        if self.name == "record_entity":
            return verdicts.parse_record_entity(text, answers or [], entities or [])
        if self.name == "inspect_score":
            value = text.strip()
            if value in self.labels:
                return Verdict(value)
            return verdicts.unparsed(f"an Inspect score is one of {', '.join(self.labels)}, read from the log")
        return verdicts.parse_label_set(text, self.labels)

    # -- labels ------------------------------------------------------------------------------

    def polarity(self, label: str | None) -> str | None:
        """POSITIVE or NEGATIVE for a label of a polar kind, else None."""
        if self.positive is None or label not in self.labels:
            return None
        return POSITIVE if label == self.positive else NEGATIVE

    def canonical(self, label: str) -> str:
        """The label as it is compared across kinds of one pool: a polarity for yes/no kinds
        (so "yes" and "是" are one outcome), the label itself otherwise."""
        if self.pool_key == "yes/no":
            return self.polarity(label) or label
        return label


    def flip(self, label: str) -> str | None:
        """The other label of a binary kind (what overriding a verdict gives), else None."""
        if not self.is_binary or label not in self.labels:
            return None
        return self.labels[1] if label == self.labels[0] else self.labels[0]

    def normalize_label(self, value) -> str:
        """The stored form of a human label, or LabelError. Categorical labels match exactly,
        else case-insensitively where that names one label; scores become score_label(). A
        number one below a choice (where none is 0) raises ZeroBasedLabel."""
        if self.scored:
            return self.score_label(value)
        text = value if isinstance(value, str) else json.dumps(value)
        if text in self.labels:
            return text
        folded = [label for label in self.labels if label.casefold() == text.strip().casefold()]
        if len(folded) == 1:
            return folded[0]
        counted_from_one = (text.strip().isdecimal() and "0" not in self.labels
                            and str(int(text.strip()) + 1) in self.labels)
        raise (ZeroBasedLabel if counted_from_one else LabelError)(f"label {text!r} is not one of {', '.join(self.labels)}" + (
            f" (the choices count from 1 here, as the prompt shows them: a 0-based {text.strip()} is "
            f"{int(text.strip()) + 1})" if counted_from_one else ""))

    def score_label(self, value) -> str:
        """The one stored form of rubric scores: canonical JSON of both scores, rounded to 0.1
        half up as people round the number written (75.25 is 75.3, where float rounding gives
        75.2). Accepts a dict or its JSON text; LabelError names what is wrong."""
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError:
                value = None
        if not isinstance(value, dict):
            raise LabelError('a rubric label is JSON: {"score_answer": …, "score_reasoning": …}')
        scores = {}
        for key in SCORE_KEYS:
            number = written = value.get(key)
            if isinstance(number, str):
                try:
                    number = float(number)
                except ValueError:
                    number = None
            if isinstance(number, bool) or not isinstance(number, int | float):
                said = f", not {written.strip()!r}" if isinstance(written, str) and written.strip() else ""
                raise LabelError(f"{key} must be a number{said}")
            if not math.isfinite(number) or not 0.0 <= number <= 100.0:
                raise LabelError(f"{key} = {number} is outside 0.0-100.0")
            scores[key] = float(Decimal(repr(float(number))).quantize(_TENTH, ROUND_HALF_UP))
        return json.dumps(scores, sort_keys=True)

    def scores(self, label: str | None) -> dict[str, float] | None:
        """The two scores of a stored score label, or None if it is not one."""
        try:
            return json.loads(self.score_label(label)) if label is not None else None
        except LabelError:
            return None

    # -- how it reads ------------------------------------------------------------------------

    def words(self, label: str | None) -> str:
        """A label as a person reads it: YES / NO / 是 / 否 / a label / two scores."""
        if label is None:
            return "—"
        if self.scored:
            scores = self.scores(label)
            if scores is None:
                return label
            return f"answer {scores['score_answer']:.1f} · reasoning {scores['score_reasoning']:.1f}"
        return label.upper() if self.name == "yes_no_en" else label

    def colour(self, label: str | None) -> str:
        """The badge background for a verdict: green for the positive outcome, red for the
        negative, blue for anything else; BADGE_TEXT is written on it."""
        return BADGE_COLOURS[self.polarity(label) or "other"]

    def c3_wording(self, label: str | None) -> str:
        """C3's exact verdict line for a label ("" for none or a kind C3 does not use)."""
        return _C3_WORDING.get(self.name, {}).get(label or "", "")


def inspect_labels(labels: Iterable[str]) -> tuple[str, ...]:
    """The label set of an Inspect scorer, in canonical order, from the labels its values read
    as (and any the task had before): letters as C, P, I, N with C and I always there; True,
    False; numbers from 0 to 1 from high to low with 1 and 0 always there; other text in sorted
    order. The first of a two-label set is the positive outcome."""
    found = set(labels)
    if found and found <= set(INSPECT_LETTERS):
        return tuple(letter for letter in INSPECT_LETTERS if letter in found | {"C", "I"})
    if found and found <= {"True", "False"}:
        return ("True", "False")
    numbers = {_unit_number(label): label for label in found}
    if not found or None in numbers:
        return tuple(sorted(found))
    numbers = {1.0: "1", 0.0: "0"} | numbers
    return tuple(numbers[value] for value in sorted(numbers, reverse=True))


def _unit_number(label: str) -> float | None:
    """The number from 0 to 1 that `label` writes, else None."""
    try:
        value = float(label)
    except ValueError:
        return None
    return value if 0.0 <= value <= 1.0 else None


@cache
def kind_for(name: str, labels: tuple[str, ...] = ()) -> VerdictKind:
    """The kind a manifest names (`labels` for label sets); ValueError for an unknown name."""
    if name not in KIND_NAMES:
        raise ValueError(f"unknown verdict kind {name!r}: use one of {', '.join(KIND_NAMES)}")
    return VerdictKind(name, _FIXED_LABELS.get(name, tuple(labels)))
