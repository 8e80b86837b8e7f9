"""Inspect AI evaluation logs, both directions: `calibrate import inspect` reads the samples and
one scorer's scores of a log (`.eval` or `.json`, as inspect-ai writes them); `calibrate export
inspect` writes people's decisions back into a copy of the log as Inspect score edits.

An item is one (sample, epoch): the sample's input, its target (the reference) and the solver's
output (the response under test), in task `inspect/<the log's task>` of the evaluated model's
system. Its source id is the sample id, with `#<epoch>` after it for epochs after the first;
where that names another sample of the log (a sample id such as `1#2` beside sample `1`'s
second epoch) the epoch is written `#epoch<epoch>` (`1#epoch2`), so that no two samples share
an item and the ids of every other log stay as they always were.
Each score of the chosen scorer is a judgment: for a model-graded scorer (`model_graded_qa`,
`model_graded_fact`: the score keeps the grader's messages in `metadata["grading"]`) the judge is
the grader model, the judged prompt the grader's exact messages and the raw output its answer;
a scorer that sends no messages is a judge named after itself, without a prompt. The verdict is
the score's value as a label of the task (see `kinds.inspect_labels`): C/P/I/N letters,
True/False, numbers from 0 to 1, or the scorer's own text; an unscored sample (NaN, an empty
value, no score at all: a grader whose answer did not parse, a scorer that returned None) is an
unparsed verdict. An edited score (a log reviewed here or in Inspect) is read as what it is: the
scorer's original score, the first of its history, is the judgment, and each edit is a label of
the person its provenance names at the edit's time, with their notes; a score whose history
keeps no original is refused, so people's decisions never become a judge's verdicts. The task's
labels are the values the scorer gave (the originals): an edit to any other value is refused.

Back out, each labelled sample's score gets a `ScoreEdit` with provenance (the annotator, the
time of the decision, their notes as the reason and, in calibrate's metadata, each person's
label and notes) through inspect's own `edit_score`, and the
metrics are recomputed (the scorers' parameters kept as the log had them); a decision that
agrees with the score is recorded as a review that leaves the value unchanged.

inspect-ai is an optional dependency (`pip install 'calibrate[inspect]'`), imported only when a
log is read. `.eval` logs are read a sample at a time from their zip members (inspect's own
per-sample reader opens the archive again for every sample, ~25 ms each); `.json` logs are one
JSON document, which inspect reads whole.
"""

from __future__ import annotations

import json
import math
import zipfile
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cache
from pathlib import Path

from calibrate.formats import BadInput, ImportFailed, Record
from calibrate.gold import gold_label
from calibrate.kinds import INSPECT_LETTERS, inspect_labels
from calibrate.model import CalibrateError, NewItem, ahead_of_clock, check_system
from calibrate.names import annotator_name
from calibrate.store import Store
from calibrate.user_files import replaced_whole
from calibrate.verdicts import Verdict

FAMILY = "inspect"
TASK_PREFIX = "inspect/"
MAX_LABELS = 9
"""A person gives a label with one key (1-9), so a scorer has at most nine values."""
INSTALL_HINT = "pip install 'calibrate[inspect]'"
_SAMPLES = "samples/"
_UNREAD = ("events", "events_data", "attachments", "store", "messages", "error_retries")
"""Parts of a sample calibrate never reads. The text it reads (input, target, output, scores)
is never moved to attachments: inspect condenses only events, and images in messages."""


class InspectMissing(CalibrateError):
    """inspect-ai is not installed."""


def inspect_log_api():
    """inspect_ai.log, or InspectMissing saying how to install it. Importing it also registers
    the zstd compression that `.eval` archives use with `zipfile`."""
    try:
        import inspect_ai.log as api
    except ImportError as exc:
        raise InspectMissing(f"reading Inspect AI logs needs inspect-ai ({exc}): {INSTALL_HINT}") from None
    return api


# -- what a log holds -----------------------------------------------------------------------------


@dataclass
class InspectLog:
    """A log opened for import or export: its header, the scorer chosen, the labels its
    scores take, its samples' ids and how many of them were scored (an eval cancelled or
    failed part way scores fewer than its dataset holds). `samples()` reads the samples one at
    a time."""

    path: Path
    header: object  # inspect_ai.log.EvalLog without samples
    scorer: str
    model_graded: bool
    grader: str | None  # the grader model of a model-graded scorer
    labels: tuple[str, ...]
    family: str  # letters, True/False, numbers, text: the kind of value most scores have
    sample_ids: frozenset[str] = frozenset()
    scored: int = 0  # samples (each epoch) that ended without an error with a value from the scorer
    full: object | None = None  # a .json log, read whole

    @property
    def task(self) -> str:
        return TASK_PREFIX + self.header.eval.task

    @property
    def model(self) -> str:
        """The evaluated model: the default system under test."""
        return self.header.eval.model

    @property
    def run(self) -> tuple[str, str]:
        """The eval's own id and the time it began (`created`; "" where the header has none): the
        run whose grading the log holds (the same in a copy of the log inspect writes again, as a
        reviewed one)."""
        return self.header.eval.eval_id, self.created or ""

    @property
    def created(self) -> str | None:
        """When the eval was created, in UTC as the store writes times: the time of its grading,
        which orders it among other evals' gradings of a sample whatever order the logs are
        imported in. Inspect writes it in UTC, with its offset, and reads a time without a time
        zone (a log written by hand or by another tool) as UTC, and so does this, so both place
        the eval at the same moment. None where the header's time is not one."""
        moment = self._created()
        return moment.astimezone(UTC).isoformat(timespec="microseconds") if moment else None

    def ahead_of_clock(self) -> str | None:
        """Why the log's gradings cannot be imported (None when they can): the eval's time lies
        ahead of this machine's clock (`calibrate.model.ahead_of_clock`, the rule `merge` applies),
        so its gradings would stay in force over every later eval's, as merged rows would."""
        moment = self._created()
        ahead = ahead_of_clock(moment) if moment else None
        if ahead is None:
            return None
        return (f"{self.path}: the eval was created at {self.header.eval.created} (the log's header), which {ahead}; "
                "its gradings would stay in force over every later eval's, so nothing is imported (check the clock "
                "of the machine that ran it)")

    def _created(self) -> datetime | None:
        try:
            moment = datetime.fromisoformat(str(self.header.eval.created))
        except ValueError:
            return None
        return moment if moment.tzinfo else moment.replace(tzinfo=UTC)

    @property
    def judge(self) -> str:
        return self.grader if self.model_graded and self.grader else self.scorer

    def incomplete(self) -> str | None:
        """What the log of an eval that did not finish covers ("the eval was cancelled: 16 of 40
        samples scored"), or None for a finished one."""
        status = self.header.status
        if status == "success":
            return None
        why = {"cancelled": "the eval was cancelled", "started": "the eval had not finished when the log was written",
               "error": f"the eval ended in an error ({_error_text(self.header.error)})"}.get(
            status, f"the eval's status is {status}")
        spec = self.header.eval
        epochs = (spec.config.epochs or 1) if spec.config else 1
        planned = (spec.dataset.samples or 0) * epochs
        of = f"{planned} ({spec.dataset.samples} samples × {epochs} epochs)" if epochs > 1 else str(planned)
        return f"{why}: {self.scored} of {of} samples scored"

    def samples(self) -> Iterator:
        """Every sample (each epoch), one at a time, without the parts calibrate does not read
        (events, the message history, the store): the bulk of a sample."""
        if self.full is not None:
            yield from self.full.samples or ()
            return
        from inspect_ai.log import EvalSample

        yield from self._members(EvalSample.model_validate)

    def scores(self) -> Iterator:
        """The scorer's score of each sample, None where it gave none or the sample ended in an
        error; of a `.eval` sample only the scores are read (3000 samples: 0.3 s, where
        `samples()` takes 2.4 s)."""
        if self.full is not None:
            yield from (None if s.error else (s.scores or {}).get(self.scorer) for s in self.full.samples or ())
            return
        from inspect_ai.scorer import Score

        def score(data: dict):
            found = (data.get("scores") or {}).get(self.scorer)
            return None if found is None or data.get("error") else Score.model_validate(found)
        yield from self._members(score)

    def _members(self, read) -> Iterator:
        """`read(data)` of each sample member of a `.eval` archive, its JSON without the parts
        calibrate never reads; ImportFailed names a damaged member."""
        inspect_log_api()  # registers zstd, the compression of .eval archives, with zipfile
        with zipfile.ZipFile(self.path) as archive:
            for name in archive.namelist():
                if not (name.startswith(_SAMPLES) and name.endswith(".json")):
                    continue
                try:
                    data = json.loads(archive.read(name))
                    for key in _UNREAD:
                        data.pop(key, None)
                    found = read(data)
                except Exception as exc:  # a damaged member: zip, zstd, JSON or pydantic errors
                    raise ImportFailed(f"{self.path}:{name}: not a sample inspect wrote ({_first_line(exc)}); "
                                       "nothing was imported") from None
                yield found


def open_log(path: Path, scorer: str | None = None, *, whole: bool = False) -> InspectLog:
    """Read a log's header and its scores (summaries) and choose the scorer: `scorer`, or the
    only one. ImportFailed names the log and what is wrong: not an Inspect log, no scores,
    several scorers and none chosen, values that fit no convention. A `.json` log, or any log
    when `whole`, is read whole (`InspectLog.full`)."""
    api = inspect_log_api()
    path = Path(path)
    if not path.is_file():
        raise ImportFailed(f"{path}: no such file")
    full = None
    try:
        if whole or path.suffix == ".json":
            full = api.read_eval_log(str(path))
            header, summaries = full, full.samples or []
        else:
            header = api.read_eval_log(str(path), header_only=True)
            summaries = api.read_eval_log_sample_summaries(str(path))
    except Exception as exc:  # inspect raises ValueError, KeyError, pydantic errors… for foreign files
        if not path.stat().st_size:
            raise ImportFailed(f"{path}: the file is empty") from None
        with path.open("rb") as head:
            archive = head.read(2) == b"PK"  # an .eval log is a zip archive: this one is cut short or damaged
        if archive:
            raise ImportFailed(f"{path}: an .eval log that cannot be read: damaged or cut short "
                               f"({_first_line(exc)})") from None
        raise ImportFailed(f"{path}: not an Inspect log ({_first_line(exc)})") from None
    names = list(dict.fromkeys(name for s in summaries for name in (s.scores or {})))
    if not names:
        raise ImportFailed(f"{path}: no sample has a score; score the log first (inspect score {path.name})")
    if scorer is None:
        if len(names) > 1:
            raise ImportFailed(f"{path}: the log has scores from {len(names)} scorers ({', '.join(names)}); "
                               "choose one with --scorer")
        scorer = names[0]
    elif scorer not in names:
        raise ImportFailed(f"{path}: no scores from scorer {scorer!r}; the log has {', '.join(names)}")
    scores = [s.scores[scorer] for s in summaries if not s.error and scorer in (s.scores or {})]
    model_graded = any(isinstance(score.metadata, dict) and "grading" in score.metadata for score in scores)
    grader = _grader(header, scorer) if model_graded else None
    valued = sum(_value_family(score.value) != "unscored" for score in scores)  # samples the scorer gave a value
    log = InspectLog(path, header, scorer, model_graded, grader, (), "", frozenset(str(s.id) for s in summaries),
                     valued, full)
    # the scorer's values, before people's edits: a summary holds the value in force, without its history
    originals = [original.value for score in log.scores() if (original := _original(score)) is not None]
    log.family, log.labels = _label_set(path, scorer, originals)
    return log


def _original(score):
    """The score the scorer gave: the first of an edited score's history, the score itself when
    unedited; None for no score, or a history that keeps no original (refused on import)."""
    if score is None or not score.history:
        return score
    return score.history[0] if score.history[0].provenance is None else None


def _grader(header, scorer: str) -> str:
    """The grader model of a model-graded scorer: the model its parameters name, else the
    model bound to the `grader` role, else the evaluated model (inspect's own order)."""
    results = header.results
    params = next((s.params for s in (results.scores if results else ()) if s.name == scorer), {}) or {}
    model = params.get("model")
    names = [_model_name(m) for m in (model if isinstance(model, list) else [model]) if m]
    if names:
        return "+".join(names)
    role = (header.eval.model_roles or {}).get(params.get("model_role") or "grader")
    if role:
        return "+".join(_model_name(r) for r in (role if isinstance(role, list) else [role]))
    return header.eval.model


def _model_name(model) -> str:
    if isinstance(model, str):
        return model
    if isinstance(model, dict):
        return str(model.get("model"))
    return str(getattr(model, "model", model))


# -- values and labels ----------------------------------------------------------------------------

_FAMILY_NAMES = {"letters": "C/I letters", "boolean": "True/False", "number": "numbers from 0 to 1", "text": "text labels"}


def _value_family(value) -> str | None:
    """Which of Inspect's value conventions `value` follows; None for a value calibrate does not
    read (a list, a dict, None, a number outside 0-1), and "unscored" for NaN and empty text."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        if isinstance(value, float) and math.isnan(value):
            return "unscored"
        return "number" if 0 <= value <= 1 else None
    if isinstance(value, str):
        if not value.strip():  # a scorer that found nothing to score (an extraction without a match)
            return "unscored"
        return "letters" if value in INSPECT_LETTERS else "text"
    return None


def _label_set(path: Path, scorer: str, values: list) -> tuple[str, tuple[str, ...]]:
    """The value convention most scores follow and the labels of the task (a score of another
    convention is a bad input of its sample)."""
    families = Counter(f for f in map(_value_family, values) if f not in (None, "unscored"))
    if families["text"]:  # a scorer of its own text labels may use C or I among them
        families["text"] += families.pop("letters", 0)
    if not families:
        raise ImportFailed(f"{path}: scorer {scorer!r} gave no value calibrate reads (C/I letters, True/False, "
                           "numbers from 0 to 1 or text) on any sample")
    family = families.most_common(1)[0][0]
    labels = inspect_labels(label for v in values if (label := _label(v, family)) is not None)
    if len(labels) > MAX_LABELS:
        raise ImportFailed(f"{path}: scorer {scorer!r} gives {len(labels)} different values; calibrate takes at "
                           f"most {MAX_LABELS} (one key each): {', '.join(labels[:12])}…")
    if len(labels) < 2:
        raise ImportFailed(f"{path}: scorer {scorer!r} gives only the value {labels[0]!r}: calibrate cannot "
                           "tell which other values a person may give")
    return family, labels


def _label(value, family: str) -> str | None:
    """The label a score value reads as under `family`, or None if it does not follow it."""
    found = _value_family(value)
    if found == "letters" and family == "text":
        found = "text"
    if found != family:
        return None
    if family == "boolean":
        return str(value)
    if family == "number":
        return format(float(value), ".12g")
    return value


def score_verdict(log: InspectLog, score) -> Verdict:
    """The verdict a score gives: its value as a label, or unparsed when the scorer left the
    sample unscored. ValueError for a value that fits none of the task's labels."""
    family = _value_family(score.value)
    if family == "unscored":
        why = f" ({score.reason})" if score.reason else ""
        return Verdict(None, f"the scorer left this sample unscored{why}")
    label = _label(score.value, log.family)
    if label is None:
        shown = repr(score.value)[:60]
        if family is None:
            raise ValueError(f"score value {shown} is not one calibrate reads (C/I letters, True/False, "
                             "numbers from 0 to 1 or text)")
        raise ValueError(f"score value {shown} is {_FAMILY_NAMES[family]}, but the scorer's other values are "
                         f"{_FAMILY_NAMES[log.family]} ({', '.join(log.labels)})")
    return Verdict(label)


def merged_labels(task: str, lang: str, stored: tuple[str, ...] | None, new: tuple[str, ...]) -> tuple[str, ...]:
    """The task's labels once this log is imported: the labels stored before and the new ones,
    which must be values of one convention (ImportFailed otherwise)."""
    if not stored or set(new) <= set(stored):
        return stored or new
    if _labels_family(stored) != _labels_family(new):
        raise ImportFailed(f"{task} ({lang}) holds scores valued {', '.join(stored)} from an earlier log; this "
                           f"log's are {', '.join(new)}: one task takes one kind of value")
    merged = inspect_labels([*stored, *new])
    if len(merged) > MAX_LABELS:
        raise ImportFailed(f"{task} ({lang}) would have {len(merged)} labels ({', '.join(merged)}); calibrate "
                           f"takes at most {MAX_LABELS}")
    return merged


def _labels_family(labels: tuple[str, ...]) -> str:
    """The value convention a task's labels follow (as inspect_labels orders them)."""
    if set(labels) <= set(INSPECT_LETTERS):
        return "letters"
    if set(labels) <= {"True", "False"}:
        return "boolean"
    return "number" if inspect_labels(labels) == inspect_labels([*labels, "1", "0"]) else "text"


# -- import ---------------------------------------------------------------------------------------


def sample_location(log: InspectLog, sample) -> str:
    """How messages name a sample: LOG:sample ID (and its epoch after the first)."""
    epoch = f" epoch {sample.epoch}" if sample.epoch > 1 else ""
    return f"{log.path}:sample {sample.id}{epoch}"


def sample_item(log: InspectLog, sample, lang: str, system: str) -> NewItem:
    """The item of one sample and epoch (the same on import and export)."""
    fields = {"input": _input_text(sample.input), "target": sample.target, "response": sample.output.completion}
    if sample.choices:
        fields["choices"] = list(sample.choices)
    return NewItem(log.task, lang, _source_id(log, sample), fields, system=system)


def _source_id(log: InspectLog, sample) -> str:
    """The sample id, `ID#EPOCH` for epochs after the first, or `ID#epochEPOCH` where `ID#EPOCH`
    is the id of another sample of the log."""
    if sample.epoch <= 1:
        return str(sample.id)
    plain = f"{sample.id}#{sample.epoch}"
    return f"{sample.id}#epoch{sample.epoch}" if plain in log.sample_ids else plain


def inspect_records(log: InspectLog, *, lang: str, system: str | None = None) -> Iterator[Record | BadInput]:
    """A record per (sample, epoch) with its scorer's judgment (unparsed where the scorer gave
    the sample no score); a sample that ended in an error, or whose value fits none of the
    task's labels, is a bad input naming the log and sample."""
    system = check_system(system) if system is not None else log.model
    params = {"scorer": log.scorer}
    for sample in log.samples():
        where = sample_location(log, sample)
        if sample.error is not None:
            error = _error_text(sample.error)
            yield BadInput(where, "the sample was cancelled before it was scored" if error == "cancelled"
                           else f"the sample ended in an error ({error})")
            continue
        score = (sample.scores or {}).get(log.scorer)
        try:
            scored, people, notes = scorer_and_people(log, score) if score is not None else (None, (), ())
            verdict = score_verdict(log, scored) if scored is not None else Verdict(
                None, f"scorer {log.scorer} gave this sample no score")
        except ValueError as exc:
            yield BadInput(where, str(exc))
            continue
        grading = _grading(scored) if scored is not None else None
        prompt, raw = (grading[0], grading[1]) if grading else (None, getattr(scored, "explanation", None))
        yield Record(
            sample_item(log, sample, lang, system), where, judge_output=raw, judge_name=log.judge,
            judge_params=params, judge_verdict=verdict, judge_prompt=prompt, judge_run=log.run,
            judged_at=log.created,
            judge_model=log.grader if grading else None, labels=tuple((name, label) for name, label, _ in people),
            notes=notes, label_times=tuple((name, at) for name, _, at in people),
        )


def scorer_and_people(log: InspectLog, score) -> tuple[object, tuple[tuple[str, str, str], ...],
                                                     tuple[tuple[str, str], ...]]:
    """The scorer's own score, people's (annotator, label, time of the edit) decisions and their
    (annotator, note) notes, read from a score's edit history. An edited score's value is people's, not the
    scorer's: the scorer's is the first entry of its history (the one without provenance), and
    each edit is its author's label (a review that keeps the value labels the value in force);
    an edit calibrate wrote names each person's label (a gold edit's several people) and notes
    in its provenance, and any other edit's reason is its author's note. ValueError when the
    history keeps no original score, or an edit's author, value or notes cannot be a person's."""
    if not score.history:
        return score, (), ()
    original, *edits = score.history
    if original.provenance is not None:
        raise ValueError(f"the score was edited (by {original.provenance.author}) and its history keeps no original "
                         "score: the scorer's judgment cannot be told from people's edits, so the sample is not "
                         "imported")
    value, decided, noted = original.value, {}, {}
    for edit in edits:
        provenance = edit.provenance
        if provenance is None:
            raise ValueError("the score's history has an edit without provenance: whose decision it is is unknown")
        if edit.value != "UNCHANGED":
            value = edit.value
        label = _label(value, log.family)
        if label not in log.labels:
            raise ValueError(f"{provenance.author}'s edit gives the value {repr(value)[:60]}, which is not one of "
                             f"the scorer's values ({', '.join(log.labels)})")
        ours = provenance.metadata.get("calibrate")
        ours = ours if isinstance(ours, dict) else {}
        gold = ours.get("labels") if isinstance(ours.get("labels"), dict) else None
        notes = ours.get("notes", {} if gold is not None else {provenance.author: [provenance.reason]})
        if not (isinstance(notes, dict) and all(isinstance(n, list) and all(isinstance(t, str | None) for t in n)
                                                for n in notes.values())):
            raise ValueError(f"{provenance.author}'s edit has notes that are not lists of text per person")
        for author, given in (gold if gold is not None else {provenance.author: label}).items():
            if given not in log.labels:
                raise ValueError(f"{author}'s label {given!r} in a gold edit is not one of the scorer's values "
                                 f"({', '.join(log.labels)})")
            name = annotator_name(author, f"score edit author {author!r}")
            decided[name] = (given, provenance.timestamp.astimezone(UTC).isoformat(timespec="microseconds"))
            noted.update({(name, note): None for note in notes.get(author, ()) if note})
    return original, tuple((name, label, at) for name, (label, at) in decided.items()), tuple(noted)


def _grading(score) -> tuple[tuple[str | None, str], str | None] | None:
    """((system, user) prompt, raw output) from a score's grader messages, or None when it kept
    none. System messages form the system prompt; one user message is the prompt as it is,
    several turns are written one after another under their roles; the grader's last answer is
    the raw output."""
    messages = (score.metadata or {}).get("grading") if isinstance(score.metadata, dict) else None
    if not isinstance(messages, list) or not messages:
        return None
    from pydantic import ValidationError

    try:
        messages = [_chat_message().validate_python(m) for m in messages]
    except ValidationError:
        return None
    raw = None
    if messages[-1].role == "assistant":
        raw = messages.pop().text
    system = "\n\n".join(m.text for m in messages if m.role == "system") or None
    turns = [m for m in messages if m.role != "system"]
    if len(turns) == 1 and turns[0].role == "user":
        user = turns[0].text
    else:
        user = "\n\n".join(f"[{m.role}]\n{m.text}" for m in turns)
    return (system, user), raw if raw is not None else score.explanation


@cache
def _chat_message():
    """inspect's ChatMessage as a pydantic validator (building one costs ~3 ms)."""
    from inspect_ai.model import ChatMessage
    from pydantic import TypeAdapter

    return TypeAdapter(ChatMessage)


def _input_text(value) -> str:
    if isinstance(value, str):
        return value
    if len(value) == 1:
        return value[0].text
    return "\n\n".join(f"[{m.role}]\n{m.text}" for m in value)


def _error_text(error) -> str:
    """An eval's or sample's error as its first line; "cancelled" for the eval stopped part way
    (inspect keeps the repr of asyncio's CancelledError, naming its internal tasks)."""
    message = error.message if error is not None else ""
    return "cancelled" if message.startswith("CancelledError") else _first_line(message or "no message")


def _first_line(value) -> str:
    text = str(value).strip()
    return text.splitlines()[0][:200] if text else type(value).__name__


# -- export ---------------------------------------------------------------------------------------


@dataclass
class ExportSummary:
    """What `export inspect` wrote: score edits that change a value, reviews that keep it, and
    the samples it left as they were, by reason."""

    changed: int = 0
    confirmed: int = 0
    already: int = 0  # the same decision was written into this log before
    unlabelled: int = 0
    ties: int = 0
    not_imported: int = 0
    no_score: int = 0  # the scorer gave the sample none: a label on it has no score to edit
    samples: int = 0
    replaced: bool = False  # a file of the name --out gives was there before: it is replaced whole
    metrics_before: dict[str, float] = field(default_factory=dict)
    metrics_after: dict[str, float] = field(default_factory=dict)

    @property
    def edits(self) -> int:
        return self.changed + self.confirmed


LOG_SUFFIXES = (".eval", ".json")
"""How an Inspect log's file name ends (the format inspect writes it in)."""


def export_edits(
    store: Store, log_path: Path, out: Path, *, annotator: str | None = None, gold: bool = False,
    lang: str = "en", system: str | None = None, scorer: str | None = None,
) -> ExportSummary:
    """Write `log_path` to `out` with the people's decisions on its samples as score edits of
    `scorer`: one annotator's labels, or (`gold`) the consolidated label of everyone who labelled
    (majority; ties are left alone). The log at `log_path` is only read. CalibrateError (nothing
    written) when no sample has such a decision."""
    api = inspect_log_api()
    if out.suffix not in LOG_SUFFIXES:
        raise CalibrateError(f"--out {out}: an Inspect log ends in .eval or .json")
    if annotator is None and not gold:
        raise CalibrateError("say whose decisions to write: --annotator NAME, or --gold for the consolidated label")
    log = open_log(log_path, scorer, whole=True)
    full = log.full
    system = check_system(system) if system is not None else log.model
    items = [(sample, sample_item(log, sample, lang, system)) for sample in full.samples or ()]
    found = store.items_by_hash(item.content_hash for _, item in items)
    decisions = store.decisions([found[item.content_hash][0] for _, item in items if item.content_hash in found])
    summary = ExportSummary(samples=len(items), metrics_before=_metrics(full, log.scorer))
    for sample, item in items:
        if item.content_hash not in found:
            summary.not_imported += 1
            continue
        decided = _decision(decisions.get(found[item.content_hash][0], []), annotator, gold, summary)
        if decided is None:
            continue
        if log.scorer not in (sample.scores or {}):
            summary.no_score += 1
            continue
        edit = _score_edit(api, log, sample, *decided)
        if edit is None:
            summary.already += 1
            continue
        if edit.value == "UNCHANGED":
            summary.confirmed += 1
        else:
            summary.changed += 1
        api.edit_score(full, sample.id, log.scorer, edit, recompute_metrics=False, epoch=sample.epoch)
    if not summary.edits:
        whose = f"by {annotator}" if annotator else "with a gold label"
        if summary.not_imported == summary.samples:
            why = (f"none of its samples is in {store.path} as task {log.task} ({lang}, system {system}); "
                   "name the --lang and --system it was imported with")
        elif summary.already:
            why = f"every label {whose} is in it already"
        elif newer := store.labelled_on_newer_versions([found[i.content_hash][0] for _, i in items
                                                        if i.content_hash in found], annotator):
            why = (f"none of its samples has a label {whose} in {store.path}: the labels {whose} of {newer} of them "
                   "are on a newer version of the sample (imported with --update); export onto the log that version "
                   "came from")
        else:
            why = f"none of its samples has a label {whose} in {store.path}"
        raise CalibrateError(f"{log_path}: {why}; nothing was written")
    params = {score.name: score.params for score in (full.results.scores if full.results else ())}
    api.recompute_metrics(full)
    for score in full.results.scores if full.results else ():
        # inspect rebuilds the scorers' parameters from the header's scorers, which a log may not
        # have: kept as the log had them, a grader they name still names the judge of a re-import
        score.params = params.get(score.name, score.params)
    summary.metrics_after = _metrics(full, log.scorer)
    summary.replaced = out.exists()
    with replaced_whole(out) as part:
        api.write_eval_log(full, str(part))
    return summary


def _decision(rows: list[dict], annotator: str | None, gold: bool, summary: ExportSummary):
    """(label, author, time, notes, metadata) of the decision to write for one item, or None. The
    metadata names each person's notes (a gold edit's reason joins the notes of those who agree,
    whose authors it does not say), so that they come back whole with the labels on import."""
    if not gold:
        row = next((r for r in rows if r["annotator"] == annotator), None)
        if row is None:
            summary.unlabelled += 1
            return None
        return (row["label"], annotator, row["decided_at"], row["notes"],
                {"action": row["action"], "notes": {annotator: row["notes"]}})
    labels = {r["annotator"]: r["label"] for r in rows}
    label, how = gold_label(labels)
    if label is None:
        summary.ties += how == "tie"
        summary.unlabelled += how != "tie"
        return None
    agreeing = [r for r in rows if r["label"] == label]
    notes = [note for r in agreeing for note in r["notes"]]
    return (label, ", ".join(r["annotator"] for r in agreeing), max(r["decided_at"] for r in agreeing), notes,
            {"gold": how, "labels": labels, "notes": {r["annotator"]: r["notes"] for r in rows}})


def _score_edit(api, log: InspectLog, sample, label: str, author: str, decided_at: str, notes: list[str],
                metadata: dict):
    """The ScoreEdit recording this decision, or None when the log records it already."""
    from inspect_ai.scorer import ScoreEdit

    score = sample.scores[log.scorer]
    value = _value(label, score.value, log.family)
    same = _value_family(score.value) != "unscored" and value == score.value and type(value) is type(score.value)
    provenance = api.ProvenanceData(
        timestamp=datetime.fromisoformat(decided_at), author=author, reason="\n".join(notes) or None,
        metadata={"calibrate": {"label": label, **metadata}},
    )
    last = score.history[-1].provenance if score.history else None
    if last is not None and (last.author, last.timestamp, score.value) == (author, provenance.timestamp, value):
        return None
    return ScoreEdit(value="UNCHANGED" if same else value, provenance=provenance)


def _value(label: str, original, family: str):
    """A label as an Inspect value, of the type the scorer gave (an int stays an int)."""
    if family == "boolean":
        return label == "True"
    if family == "number":
        number = float(label)
        if isinstance(original, int) and not isinstance(original, bool) and number.is_integer():
            return int(number)
        return number
    return label


def _metrics(log, scorer: str) -> dict[str, float]:
    results = log.results
    for score in results.scores if results else ():
        if score.name == scorer:
            return {name: metric.value for name, metric in score.metrics.items()}
    return {}
