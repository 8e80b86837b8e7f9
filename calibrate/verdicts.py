"""Verdict parsers: turn a judge's raw text into a verdict, or say plainly that it did not parse.

One parser per verdict kind (calibrate.kinds says which kind uses which). None of them guesses: text with no
verdict, or a verdict that only appears inside an echo of the prompt's own instruction, is
`unparsed` with the reason, never a silent "no". Where several yes/no verdict lines appear, the
last one wins, as the prompts ask for the verdict "at the end"; where an output gives two
different verdicts otherwise (rubric objects with different scores, two SuperGLUE labels or
ReCoRD entities), it is unparsed, naming both. An output that is nothing but the
verdict word (`yes.`, `**否**`) is that verdict in its bare form: small models answer so, and
there is nothing else it could mean.
"""

from __future__ import annotations

import json
import re
import string
from collections.abc import Sequence
from dataclasses import dataclass

UNPARSED = "unparsed"
BARE = "bare"
"""The form of a verdict read from an output that is only the verdict word, not a verdict line."""


@dataclass(frozen=True)
class Verdict:
    """A parse result. `value` is the verdict (None when unparsed); `reason` says why not;
    `form` is BARE for a verdict given as the bare word, else None."""

    value: str | None
    reason: str | None = None
    detail: dict | None = None
    form: str | None = None

    @property
    def parsed(self) -> bool:
        return self.value is not None

    @property
    def status(self) -> str:
        return "verdict" if self.parsed else UNPARSED


def unparsed(reason: str) -> Verdict:
    return Verdict(None, reason)


# -- C3 yes/no -------------------------------------------------------------------------------

_BOLD = r"[*_`\s]*"
_BEFORE_VALUE = r"[*_`\s\"'“”‘’「」]*"
_COLON = r"[:：]"
_EN_VERDICT = re.compile(
    rf"the{_BOLD}answer{_BOLD}is{_BOLD}{_COLON}{_BEFORE_VALUE}(?P<v>yes|no)(?![a-z])", re.IGNORECASE
)
# The prompt's own instruction, quoted back: 'The answer is: yes.' ... otherwise ... 'The answer is: no.'
_EN_ECHO = re.compile(
    rf"[\"'“‘]{_BOLD}the answer is{_BOLD}{_COLON}{_BOLD}yes{_BOLD}\.?{_BOLD}[\"'”’]"
    rf"[^\n]{{0,120}}?[\"'“‘]{_BOLD}the answer is{_BOLD}{_COLON}{_BOLD}no{_BOLD}\.?{_BOLD}[\"'”’]",
    re.IGNORECASE,
)
_ZH_VERDICT = re.compile(rf"最终{_BOLD}答案{_BOLD}为{_BOLD}{_COLON}{_BEFORE_VALUE}(?P<v>是|否)")
# 最终答案为：是。 或者 最终答案为：否。 (the format instruction, echoed)
_ZH_ECHO = re.compile(
    rf"最终答案为{_COLON}{_BOLD}是[。.]?{_BOLD}(?:或者|或)[\s\S]{{0,6}}?最终答案为{_COLON}{_BOLD}否[。.]?"
)
# The whole output is one verdict word, with optional bold, quotes, whitespace and final punctuation.
_BARE_END = r"[*_`\s\"'“”‘’「」.。!！]*"
_EN_BARE = re.compile(rf"{_BEFORE_VALUE}(?P<v>yes|no){_BARE_END}", re.IGNORECASE)
_ZH_BARE = re.compile(rf"{_BEFORE_VALUE}(?P<v>是|否){_BARE_END}")


def _last_verdict(text: str, verdict: re.Pattern, echo: re.Pattern, bare: re.Pattern, values: dict[str, str],
                  kind: str) -> Verdict:
    if not text or not text.strip():
        return unparsed("empty output")
    cleaned = echo.sub(" ", text)
    matches = list(verdict.finditer(cleaned))
    if matches:
        return Verdict(values[matches[-1].group("v").lower()])
    if cleaned != text and verdict.search(text):
        return unparsed(f"{kind} verdict appears only inside an echo of the instruction")
    word = bare.fullmatch(text)
    if word:
        return Verdict(values[word.group("v").lower()], form=BARE)
    return unparsed(f"no {kind} verdict line found")


def parse_yes_no_en(text: str) -> Verdict:
    """`The answer is: yes.` / `no.`: the last one wins; case, bold, full-width colon tolerated.
    An output that is only `yes` or `no` (any case, bold, final punctuation) is that verdict, bare."""
    return _last_verdict(text, _EN_VERDICT, _EN_ECHO, _EN_BARE, {"yes": "yes", "no": "no"}, "'The answer is:'")


def parse_yes_no_zh(text: str) -> Verdict:
    """`最终答案为：是。` / `否。`: the last one wins; half- or full-width colon, bold tolerated.
    An output that is only `是` or `否` (bold, final punctuation) is that verdict, bare."""
    return _last_verdict(text, _ZH_VERDICT, _ZH_ECHO, _ZH_BARE, {"是": "是", "否": "否"}, "'最终答案为：'")


# -- rubric scores ---------------------------------------------------------------------------

SCORE_KEYS = ("score_answer", "score_reasoning")


def parse_rubric_scores(text: str) -> Verdict:
    """A JSON object with score_answer and score_reasoning in 0.0-100.0, fenced or in prose.

    Several such objects that give the same two scores are that one verdict; objects giving
    different scores (a draft and a "corrected" one) are unparsed, naming each, since which
    one the judge meant is a guess. The verdict value is the two scores as JSON, as written
    (kinds.score_label rounds them); `detail` keeps `evaluation_details` (if any) and `spans`:
    where in `text` each score's number is written, as (start, end) character offsets (for its
    tokens' probability).
    """
    if not text or not text.strip():
        return unparsed("empty output")
    found = [(obj, (start, end)) for obj, start, end in _json_objects(text) if all(k in obj for k in SCORE_KEYS)]
    if not found:
        return unparsed("no JSON object with score_answer and score_reasoning")
    for obj, _ in found:
        for key in SCORE_KEYS:
            if key in obj.given_twice:
                return unparsed(f"one JSON object gives {key} more than once, differently: "
                                f"{', '.join(map(repr, obj.given_twice[key]))}")
    given = list(dict.fromkeys(_written_scores(obj) for obj, _ in found))
    if len(given) > 1:
        return unparsed(f"{len(given)} JSON objects give different scores: {'; '.join(given)}")
    obj, where = found[-1]
    scores = {}
    for key in SCORE_KEYS:
        value = obj[key]
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            return unparsed(f"{key} is not a number: {value!r}")
        try:
            number = float(value)
        except ValueError:
            return unparsed(f"{key} is not a number: {value!r}")
        if not 0.0 <= number <= 100.0:
            return unparsed(f"{key} = {number} is outside 0.0-100.0")
        scores[key] = number
    details = obj.get("evaluation_details")
    spans = {key: _number_span(text, where, key, scores[key]) for key in SCORE_KEYS}
    return Verdict(json.dumps(scores, sort_keys=True), detail={"evaluation_details": details, "spans": spans})


def _written_scores(obj: dict) -> str:
    """An object's two scores as a reason names them: `score_answer 20.0, score_reasoning 20.0`."""
    return ", ".join(f"{key} {_score_read(obj[key])}" for key in SCORE_KEYS)


def _score_read(value) -> str:
    """A JSON value as the parser reads a score, shown: numbers written differently but equal
    (`90`, `90.0`, `"90"`) read the same, and so does NaN twice; any other value is itself."""
    try:
        return repr(float(value)) if not isinstance(value, bool) else repr(value)
    except (TypeError, ValueError):
        return repr(value)


def _number_span(text: str, where: tuple[int, int], key: str, value: float) -> tuple[int, int] | None:
    """Where the number `value` of `key` is written inside the object at `where`: the last
    `"key": number` there with that value (JSON's last duplicate wins), quotes left out."""
    pattern = re.compile(rf'"{key}"\s*:\s*"?\s*([-+0-9.eE]+)')
    span = None
    for match in pattern.finditer(text, *where):
        try:
            if float(match.group(1)) == value:
                span = match.span(1)
        except ValueError:
            continue
    return span


class _JsonObject(dict):
    """A JSON object that keeps, beside its values (the last of a key given twice, as JSON
    reads it), each key given more than once with values read differently as a score (see
    `_score_read`): `given_twice` (key -> the values in order)."""

    def __init__(self, pairs: list[tuple[str, object]]):
        super().__init__()
        self.given_twice: dict[str, list] = {}
        for key, value in pairs:
            if key in self and _score_read(self[key]) != _score_read(value):
                self.given_twice.setdefault(key, [self[key]]).append(value)
            self[key] = value


def _json_objects(text: str):
    """Each JSON object in `text` (a `_JsonObject`), with its start and end offsets."""
    decoder = json.JSONDecoder(object_pairs_hook=_JsonObject)
    index = text.find("{")
    while index != -1:
        try:
            obj, end = decoder.raw_decode(text, index)
        except json.JSONDecodeError:
            index = text.find("{", index + 1)
            continue
        if isinstance(obj, dict):
            yield obj, index, end
        index = text.find("{", end)


# -- SuperGLUE labels ------------------------------------------------------------------------


def parse_label_set(text: str, labels: tuple[str, ...]) -> Verdict:
    """The one label of the task's set that the answer names (whole words, any case, full-width
    digits read as digits: COPA's `２` is `2`).

    SuperGLUE prompts ask for the label only, so an answer naming two different labels is
    ambiguous and unparsed, and so is one negating a label ("Not true", "isn't false": which
    label it means is a guess); a label asked about ("Is it true? No.") is not one given. `not_entailment` is also recognised written `not entailment`.
    """
    if not text or not text.strip():
        return unparsed("empty output")
    text = text.translate(FULL_WIDTH_DIGITS)
    alternatives = sorted(labels, key=len, reverse=True)
    pattern = "|".join(_label_pattern(label) for label in alternatives)
    mentions = []
    for match in re.finditer(rf"(?<![\w]){pattern}(?![\w])", text, re.IGNORECASE):
        word = re.sub(r"[\s-]+", "_", match.group(0).lower())
        mentions.extend((match.start(), match.end(), label) for label in labels if label.lower() == word)
    return _the_one_named(text, mentions, "label", f"none of {', '.join(labels)} found")


def _the_one_named(text: str, mentions: list[tuple[int, int, str]], what: str, none_found: str) -> Verdict:
    """The one `what` (a label, an entity) that `text` names, from its `mentions` (start, end,
    name), else unparsed: naming none (`none_found`), naming two different ones, or negating one.
    A mention inside a question ("Is it true? No.") is not one given."""
    found = []
    for start, end, name in mentions:
        if _ASKED.match(text, end):  # in a question ("Is it true? No.", "True or False?"): not given
            continue
        if negation := _NEGATED.search(text[:start]):
            said = re.sub(r"^\W+", "", text[text.rfind(" ", 0, negation.start()) + 1 : end])  # from its word on
            article = "an" if what[0] in "aeiou" else "a"
            return unparsed(f"negates {article} {what} ({said!r}): it names none")
        found.append(name)
    distinct = list(dict.fromkeys(found))
    if not distinct:
        return unparsed(none_found)
    if len(distinct) > 1:
        return unparsed(f"names more than one {what}: {', '.join(distinct)}")
    return Verdict(distinct[0])


FULL_WIDTH_DIGITS = str.maketrans("０１２３４５６７８９", "0123456789")
"""For str.translate: full-width digits (a Chinese input method's) as ASCII digits."""

# right before a label, it is negated: not, no, never, cannot, -n't, with at most two small words between
# ("not an entailment", "cannot be true", "not really true")
_NEGATED = re.compile(r"(?:\b(?:not|no|never|cannot)|n't)(?:\s+(?:a|an|the|be|really|quite|exactly)){0,2}\s+$",
                      re.IGNORECASE)


_ASKED = re.compile(r"[^.!?\n]*\?")  # the rest of a sentence that ends in a question mark


def _label_pattern(label: str) -> str:
    return r"[\s_-]+".join(re.escape(part) for part in label.split("_"))


_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = frozenset(string.punctuation)


def normalize_record(text: str) -> str:
    """ReCoRD's answer normalisation: lower case, no punctuation, articles or extra spaces."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def parse_record_entity(text: str, answers: Sequence[str], entities: Sequence[str] = ()) -> Verdict:
    """ReCoRD: the passage entity the answer names, right if it is a gold answer.

    As the seed says, the answer is found by matching the text against the passage's entity
    list (`entities`; the gold `answers` are entities too): word by word, ignoring case,
    punctuation and articles, so extra text ("The answer is: Tracy Morgan.") is tolerated. Where
    one entity's words lie inside another's ("Morgan" in "Tracy Morgan") the longer one is named.
    As for labels, naming two different entities, negating one, or naming none is unparsed. The
    entity named is `correct` if, normalised as the metric does, it equals a gold answer (the
    metric's exact match), else `incorrect`; it is kept in `detail`.
    """
    if not text or not text.strip():
        return unparsed("empty output")
    by_words: dict[tuple[str, ...], str] = {}
    for entity in [*entities, *answers]:
        # an abbreviation's dots go as the metric's normalisation takes them out: "U.S." is named by "US" too
        for spelt in dict.fromkeys((entity, entity.replace(".", ""))):
            by_words.setdefault(tuple(word for word, _, _ in _record_words(spelt)), entity)
    by_words.pop((), None)
    by_first: dict[str, list[tuple[str, ...]]] = {}
    for key in by_words:
        by_first.setdefault(key[0], []).append(key)
    words = _record_words(text)
    said = [word for word, _, _ in words]
    spans = [(start, start + len(key), by_words[key]) for start, word in enumerate(said)
             for key in by_first.get(word, ()) if tuple(said[start : start + len(key)]) == key]
    taken: set[int] = set()
    mentions = []
    for first, last, name in sorted(spans, key=lambda span: (span[0] - span[1], span[0])):  # longest first
        if taken.isdisjoint(range(first, last)):
            taken.update(range(first, last))
            mentions.append((words[first][1], words[last - 1][2], name))
    named = _the_one_named(text, sorted(mentions), "entity", "names none of the passage's entities")
    if not named.parsed:
        return named
    gold = {normalize_record(a) for a in answers}
    right = normalize_record(named.value) in gold
    return Verdict("correct" if right else "incorrect", detail={"entity": named.value})


def _record_words(text: str) -> list[tuple[str, int, int]]:
    """The words of `text` as ReCoRD's metric compares them (lower case, articles left out),
    each with its start and end offsets: runs of letters and digits, so a word ends at any
    punctuation ("Obama's", "Obama—the", "Biden,Obama" name Obama)."""
    return [(word, match.start(), match.end()) for match in re.finditer(r"\w+", text)
            if not _ARTICLES.fullmatch(word := match.group(0).lower())]
