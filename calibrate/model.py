"""calibrate's record types and the small vocabulary every module shares.

An item, a judgment and an annotation as they travel between the importers, the judge, the
store, the session and the report; what each annotation action means; the canonical JSON and
hashes that make re-imports no-ops; how a message counts things (`counted`). Nothing here
touches SQL, files or the screen, so any module can import it without pulling in the store.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from json.encoder import c_make_encoder, encode_basestring
from pathlib import Path
from typing import Any


class CalibrateError(Exception):
    """An error whose message is meant for the user (it names what and where): the CLI prints
    it as `Error: …` with exit status 1, never a traceback."""


# -- annotation actions ------------------------------------------------------------------------
# An annotation row records one action. These tuples are the one definition of what each does.

LABEL_ACTIONS = ("confirm", "override", "label")
"""Actions that give the item a label (the label in force until a later one or an undo)."""
DECISION_ACTIONS = (*LABEL_ACTIONS, "skip", "flag")
"""Actions that decide an item for this annotator: it leaves their queue."""
REVERT_ACTION = "undo"
"""Appends a reversal of an earlier decision (named by `reverts_id`); never deletes."""
NOTE_ACTION = "note"
"""A note only: decides nothing, labels nothing."""
ACTIONS = (*DECISION_ACTIONS, REVERT_ACTION, NOTE_ACTION)


PROCESS_HOLDER = "@pid "  # after the annotator's name, in the lease holder of a session that is not a browser tab
LEFT_WAIT = 30.0  # seconds an app its person left (a closed terminal or tab) waits for a decision waiting to be saved
UNSAVED_META = "calibrate_unsaved"  # the packet in which a browser tab's app tells serve what its person did waits to be saved


def lease_holder(annotator: str, tab: str | None = None) -> str:
    """Who holds a lease: one session of the annotator, so that two sessions of one annotator
    never work on the same item: a browser tab of theirs (`calibrate serve`), or else the process
    the session runs in (this one), say an app in one of two terminals."""
    return f"{annotator} @{tab}" if tab else f"{annotator} {PROCESS_HOLDER}{os.getpid()}"


def holder_process(holder: str, annotator: str) -> int | None:
    """The process id in `holder` when it holds a lease for a session of `annotator` that runs in
    that process (`lease_holder` without a tab), else None."""
    head, _, pid = holder.partition(PROCESS_HOLDER)
    return int(pid) if head == f"{annotator} " and pid.isdigit() else None


def process_running(pid: int, since: float | None = None) -> bool:
    """Whether a process `pid` runs on this machine (SQLite's WAL keeps every session of a
    database on the machine that holds the file, so a lease holder's process runs here or not at
    all). With `since` (a time as `time.time()` gives it, when the process was seen running) and
    where the system tells when a process started (Linux's /proc), a process with that id that
    started later is another one, the id reused: not running."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        pass
    if since is not None and (started := _process_start(pid)) is not None:
        return started <= since + 1.0  # within the second: /proc's clock ticks and the boot time are coarse
    return True


def _process_start(pid: int) -> float | None:
    """When process `pid` started (seconds since the epoch), from /proc; None where there is no /proc."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        uptime = float(Path("/proc/uptime").read_text().split()[0])
    except (OSError, ValueError):
        return None
    # the fields after the command name (in parentheses, which may hold spaces): starttime is the 22nd field
    ticks = int(stat.rpartition(")")[2].split()[19])
    return time.time() - uptime + ticks / os.sysconf("SC_CLK_TCK")


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """'1 item', '2 items' ('1 entry', '2 entries' with the `plural` given): the one way every
    message counts something."""
    return f"{n} {noun}" if n == 1 else f"{n} {plural or noun + 's'}"


def now_iso() -> str:
    """The current UTC time, ISO 8601 with microseconds (how every timestamp is stored; text
    order is time order, also beside older millisecond stamps)."""
    return datetime.now(UTC).isoformat(timespec="microseconds")


FUTURE_TOLERANCE = timedelta(minutes=5)
"""How far ahead of this machine's clock a time from elsewhere (a merged row, an Inspect eval) may
be: more than the drift of a laptop kept offline for weeks, little enough that a row dated ahead
outranks later decisions only briefly."""


def ahead_of_clock(moment: datetime) -> str | None:
    """Why `moment` (aware) cannot order a decision or a judgment, which the newest one wins: it
    lies more than FUTURE_TOLERANCE ahead of this machine's clock, so it would stay in force over
    every later one ("is ahead of this machine's clock (… UTC) by more than 5 minutes"); None when
    it does not."""
    now = datetime.now(UTC)
    if moment - now <= FUTURE_TOLERANCE:
        return None
    return (f"is ahead of this machine's clock ({now:%Y-%m-%d %H:%M} UTC) by more than "
            f"{FUTURE_TOLERANCE.seconds // 60} minutes")


def digest(*parts: str) -> str:
    """A short stable hash of text parts (content hashes, judge keys, uids)."""
    return hashlib.blake2b("\x1f".join(parts).encode("utf-8"), digest_size=16).hexdigest()


_CANONICAL_JSON = json.JSONEncoder(ensure_ascii=False, sort_keys=True, separators=(",", ":"))
# The C encoder that _CANONICAL_JSON.encode builds anew on every call, built once: the same text
# in half the time (an import encodes every item's fields). It leaves out the check for values
# that contain themselves, which JSON read from text never does (such a value ends in
# RecursionError instead of ValueError).
_ENCODE_CANONICAL = c_make_encoder(None, _CANONICAL_JSON.default, encode_basestring, None, ":", ",", True, False, True)


def dump_json(value: Any) -> str:
    """Canonical JSON (sorted keys, no spaces): equal values give equal text and hashes."""
    return "".join(_ENCODE_CANONICAL(value, 0))


def judge_key(judge_name: str, model: str | None, template_hash: str | None, params: dict, server: str = "") -> str:
    """Identifies one judge configuration: a rerun with the same key resumes, not repeats. The
    server (host:port) is part of it, so the same model name on another server is another
    configuration; judgments made elsewhere (imports, the rule judge) have no server."""
    parts = [judge_name, model or "", template_hash or "", dump_json(params)]
    return digest(*parts, server) if server else digest(*parts)


# -- items --------------------------------------------------------------------------------------


class SystemNameError(CalibrateError):
    """A system-under-test name that is empty or only spaces."""


def check_system(value: str | None, where: str = "--system") -> str:
    """A system-under-test name as given by the user, stripped; an empty or all-space name is
    refused (no value at all, None, means "no system": gold-only data)."""
    if value is None:
        return ""
    name = str(value).strip()
    if not name:
        raise SystemNameError(f"{where}: the system name is empty; name the model whose responses these are")
    return name


@dataclass
class NewItem:
    """An item as an importer hands it over, before it has a database id. Its identity is
    (task, lang, system, source id); its content hash covers that identity and the fields, so
    the same item imported twice is one row. `version` is set by the import when the user asks
    to record changed content under the same identity (--update)."""

    task: str
    lang: str
    source_id: str
    fields: dict
    reference: str | None = None
    system: str = ""
    version: int = 1
    fields_json: str = field(init=False, repr=False)
    content_hash: str = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.fields_json = dump_json(self.fields)
        # Without a system the hash is the one items had before systems existed, so their
        # re-import stays a no-op.
        identity = (self.task, self.lang, self.system, self.source_id) if self.system else (self.task, self.lang, self.source_id)
        self.content_hash = digest(*identity, self.fields_json)

    @property
    def identity(self) -> tuple[str, str, str, str]:
        return (self.task, self.lang, self.system, self.source_id)


@dataclass
class Item:
    id: int
    task: str
    lang: str
    source_id: str
    fields: dict
    reference: str | None
    content_hash: str
    system: str = ""
    version: int = 1


@dataclass(frozen=True)
class AudioClip:
    """One audio file of an item: `part` names it ('response', 'turn 2'); `path` is relative to
    `root`. `problem` says why it cannot be played (missing, unreadable); then the figures are None."""

    part: str
    root: Path
    path: str
    duration: float | None = None
    sample_rate: int | None = None
    checksum: str | None = None
    problem: str | None = None

    @property
    def file(self) -> Path:
        return self.root / self.path

    @property
    def usable(self) -> bool:
        return self.problem is None

    def moved_to(self, root: Path) -> AudioClip:
        """The same clip looked for under another root (`--audio-root`)."""
        return replace(self, root=Path(root))


@dataclass
class ImportCounts:
    items_added: int = 0
    items_existing: int = 0
    judgments_added: int = 0
    labels_added: int = 0
    notes_added: int = 0  # beside a label already in force (a first note comes with its label)
    labels_put_back: int = 0  # of labels_added: see LabelsAdded
    labels_older: int = 0  # not among labels_added: see LabelsAdded
    labels_reworded: int = 0  # not among labels_added: see LabelsAdded
    versions_added: int = 0  # new versions of stored items (--update), not among items_added


@dataclass(frozen=True)
class VerdictChange:
    """A judge's verdict in force on an item that an import changed (a re-imported file whose
    output differs, or a verdict over an earlier failed call): each as its verdict, or its
    status when it has none (unparsed, error)."""

    source_id: str
    judge: str
    before: str
    after: str


# -- judgments ----------------------------------------------------------------------------------


@dataclass
class LabelsAdded:
    """What labels made elsewhere added (`Store.add_imported_labels`): people's labels on items
    added or changed, of those the changed ones that put back a label the person had given the
    item before (a newer decision of theirs now out of force: an older file read again?), notes
    added beside a label already in force, and labels whose own time is older than the person's
    decision in force (kept in the history, not in force), and C3 generation decisions whose
    judge's result files now word the same label otherwise (their words kept, for `export c3`)."""

    labels: int = 0
    put_back: int = 0
    notes: int = 0
    older: int = 0
    reworded: int = 0


@dataclass
class Judgment:
    id: int
    item_id: int
    judge_name: str
    model: str | None
    model_reported: str | None
    template_id: str | None
    template_hash: str | None
    params: dict
    judge_key: str
    system_prompt: str | None
    prompt: str | None
    raw_output: str | None
    status: str
    verdict: str | None
    unparsed_reason: str | None
    correct: int | None
    confidence: float | None
    error: str | None
    latency_ms: float | None
    prompt_tokens: int | None
    completion_tokens: int | None
    created_at: str
    sample: int = 0  # which of the judge's K repeats on this item (0 without --repeat)
    judged_at: str = ""  # when it was made, which orders it for the verdict in force ('' stored before 0028)


FAILED = "error"
"""The status of a judgment whose call failed (no output, or C3's empty check_answer): it is no
verdict. An item is judged (by a judge) when that judge's verdict in force on it has another
status: a verdict, or an output no verdict could be read from ('unparsed'). `status`, `items
--status judged`, `report` and `scores` all count "judged" so (`judged`; in SQL,
calibrate.store.sql.JUDGED)."""


INVISIBLE = "\u200b\u200c\u200d\u2060\ufeff"
"""Characters that show nothing and that str.strip() keeps: zero-width spaces and joiners, the
word joiner, the byte order mark."""
_WITHOUT_INVISIBLE = str.maketrans("", "", INVISIBLE)


def no_output(text: object) -> bool:
    """Whether a judge's output holds nothing: missing, empty, or only whitespace and characters
    that show nothing (INVISIBLE). Such an output is a failed call (FAILED), never a verdict or an
    unparsed one, wherever it comes from (a file's field, C3's check_answer, a server's answer)."""
    return text is None or not str(text).translate(_WITHOUT_INVISIBLE).strip()


ASKED_AGAIN = ("the next run asks failed items again after those that never failed, and with --limit only where fewer "
               "of those are left")
"""When a judge asks again the items whose judgment in force is FAILED (`judge_runner.plan_jobs`):
every message saying so uses these words."""


def judged(status: str | None) -> bool:
    """Whether a verdict in force of this status (None: none) makes its item judged."""
    return status is not None and status != FAILED


TIED = "tied"
"""The status of the jury's verdict on an item where two or more labels share its judges' top
count (`calibrate.reliability_cells.jury_data`): the item is judged, but has no verdict. A tie
is not an unparsed output, so `report --unparsed` never settles it; it is counted apart and left
out of the jury's agreement."""


@dataclass(frozen=True)
class NewJudgment:
    """A judgment ready to store. `uid` defaults to a fresh one (a new run)."""

    item_id: int
    judge_name: str
    judge_key: str
    status: str
    raw_output: str | None = None
    verdict: str | None = None
    unparsed_reason: str | None = None
    correct: int | None = None
    model: str | None = None
    model_reported: str | None = None
    template_id: str | None = None
    template_hash: str | None = None
    params: dict | None = None
    system_prompt: str | None = None
    prompt: str | None = None
    confidence: float | None = None
    error: str | None = None
    latency_ms: float | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    uid: str | None = None
    sample: int = 0  # which of the judge's K repeats on this item (0 without --repeat)
    # of an imported judgment whose uid names its run (an Inspect eval): (its uid without the run, when the run began).
    # A database whose imports left runs out of uids holds it under the former: a judgment stored under that uid after
    # the run began is this one (add_judgments skips it); one stored before is an earlier run's
    former: tuple[str, str] | None = None
    judged_at: str | None = None  # when the judge made it, where its source says (an Inspect eval's time); else stored


# -- annotations --------------------------------------------------------------------------------


@dataclass(frozen=True)
class TextRule:
    """A benchmark's own reading of right or wrong from a judge's raw output (C3's rule), for
    the judgments of tasks whose id starts with `prefix`: `check(raw_output, lang)`."""

    prefix: str
    check: Callable[[str | None, str], bool]


@dataclass
class Annotation:
    id: int
    uid: str
    item_id: int
    judgment_id: int | None
    annotator: str
    action: str
    label: str | None
    reverts_id: int | None
    note: str | None
    blind: int
    seconds_spent: float | None
    created_at: str
    audio_plays: int | None = None
    listened_seconds: float | None = None
    c3_file_judge: str | None = None  # the judge whose C3 generation result files held this label
    c3_file_text: str | None = None  # those files' words of it, where they are not C3's own (`export c3` gives them back)


@dataclass
class AgreementData:
    """Rows for the agreement report (see Store.agreement_data); counts are the last field."""

    judge_vs_human: list[tuple]  # task, lang, judge, annotator, status, verdict, label, n
    judge_vs_gold: list[tuple]  # task, lang, judge, status, verdict, gold label, n (every labelled item with one)
    shared_labels: list[tuple]  # item_id, task, lang, annotator, label (items with >= 2 annotators)
    shared_verdicts: list[tuple]  # item_id, judge, status, verdict (same items)
    judged: list[tuple]  # task, lang, judge, status, n (every verdict in force, failed ones too; the jury's TIED)
    tied_items: list[int] = field(default_factory=list)  # of those, the items with no gold label (a tie)
    jury_judges: tuple[str, ...] = ()  # the judges the jury combines (none without a jury)
    # task, lang, judge (the jury), judges whose calls failed there (a tuple, maybe empty), n: the items the
    # jury leaves out because only one of its judges judged them
    one_judge_only: list[tuple] = field(default_factory=list)
    jury_members: list[tuple] = field(default_factory=list)  # task, lang, judge: the jury's judges with a verdict there

    @staticmethod
    def combine(parts: list[AgreementData]) -> AgreementData:
        """Parts over disjoint item ranges: counted rows are summed, item rows concatenated."""

        def summed(name: str) -> list[tuple]:
            totals: dict[tuple, int] = {}
            for part in parts:
                for *key, n in getattr(part, name):
                    totals[tuple(key)] = totals.get(tuple(key), 0) + n
            return [(*key, n) for key, n in totals.items()]

        return AgreementData(
            summed("judge_vs_human"), summed("judge_vs_gold"),
            [r for p in parts for r in p.shared_labels], [r for p in parts for r in p.shared_verdicts], summed("judged"),
            [i for p in parts for i in p.tied_items], next((p.jury_judges for p in parts if p.jury_judges), ()),
            summed("one_judge_only"), list(dict.fromkeys(r for p in parts for r in p.jury_members)),
        )


# -- statistics -----------------------------------------------------------------------------------


@dataclass
class Estimate:
    """A statistic with an optional CI and standard error, or None with the reason.
    `undefined_share` is the share of resamples or posterior draws in which the statistic was
    undefined (counted, never silently dropped); `ci_reason` says why there is no interval;
    `approximate` is the simulated coverage of the 95 % interval in a setting like this one
    where it falls below 93 % (the interval is then approximate, and outputs say so)."""

    value: float | None
    ci: tuple[float, float] | None = None
    se: float | None = None
    reason: str | None = None
    undefined_share: float | None = None
    ci_reason: str | None = None
    approximate: float | None = None

    def as_dict(self) -> dict:
        return {"value": self.value, "ci": list(self.ci) if self.ci else None, "se": self.se, "reason": self.reason,
                "undefined_share": self.undefined_share, "ci_reason": self.ci_reason, "approximate": self.approximate}
