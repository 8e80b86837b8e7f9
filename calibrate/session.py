"""An annotator's working session, without any user interface: which item comes next (queue
order, leases, overlap), what the judge said about it, and recording each decision at once.

The Textual app is a thin view over this, so every key path can also be driven and tested
directly, and decisions are committed to SQLite before the next item is shown.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from pathlib import Path

from calibrate.audio import PLAYER_HINT, find_player
from calibrate.cells import BY_CHOICES, CellKinds
from calibrate.child_process import ChildWorkError, in_child_process
from calibrate.display import PAGE_CHARS
from calibrate.item_view import Decision, ItemView, NoPlayerError, Progress, SessionError
from calibrate.kinds import LabelError
from calibrate.listening import Listening
from calibrate.model import LABEL_ACTIONS, Item, Judgment, counted, lease_holder, process_running
from calibrate.preload import import_meanwhile
from calibrate.queue_lanes import (
    LaneReader,
    informative_cells,
    informative_order,
    kept_ids,
    shuffled_lanes,
    work_out_queue,
)
from calibrate.reliability_cells import trust_marks
from calibrate.store import DEFAULT_LEASE_SECONDS, Store
from calibrate.templates import TemplateSet

RELABEL = "changed label"  # what `saved` counts a label given again, of the person's own, as
ORDERS = ("in-order", "random", "stratified", "disagreement-first", "informative", "unstable-first", "escalate")
WINDOW = 512  # queue ids checked for eligibility per claim
ID_SLICE = 50_000  # item ids per read of the orders that read their first items in slices of ids
FIRST_SLICE = 2_048  # ids of the first such read; each next one twice as many, up to ID_SLICE
PREPARE_IN_BACKGROUND_FROM = 100_000  # items: from this many on, escalate and informative work out their queue
                                      # in a child process, showing items meanwhile (`prepare_queue`)
RECOUNT_EVERY = 5.0  # seconds between two counts of the annotator's labels (`recount_labelled`)
EARLY_WINDOW = 32  # ids per claim while the queue is worked out (dropped once it is); twice as many after each
                  # window none of whose items could be claimed, up to WINDOW (`_early_limits`)
EARLY_NOTES = {
    "escalate": "escalate: the trust thresholds are still being fitted on the labelled items; until then the "
                "queue shows, in id order, items on which no judge's verdict can be accepted whatever they are",
    "informative": "informative: which cells' labels tell most is still being worked out; until then the queue "
                   "shows the unlabelled items of the first cell ({cell}) in that cell's random order",
}
FALLBACK_NOTES = {  # where an order finds none of the items it puts first, its queue is the id order's
    "unstable-first": "unstable-first: no verdict changed over judge --repeat: items in id order",
    "disagreement-first": "disagreement-first: no judges disagree or fail here: items in id order",
}


@dataclass
class AnnotationSession:
    store: Store
    templates: TemplateSet
    annotator: str
    task: str | None = None
    lang: str | None = None
    system: str | None = None
    judge: str | None = None
    blind: bool = False
    order: str = "in-order"
    overlap: int = 1
    seed: int = 0
    require_listen: bool = False
    audio_root: Path | None = None
    lease_seconds: float = DEFAULT_LEASE_SECONDS
    tab: str | None = None  # one browser tab of `calibrate serve` (else the session is its process: `lease_holder`)
    prepare_in_background: bool | None = None  # work out the queue in a child process (None: on large queues)
    history: list[int] = field(default_factory=list)
    position: int = -1
    last_decision: Decision | None = None

    def __post_init__(self) -> None:
        if self.order not in ORDERS:
            raise SessionError(f"unknown order {self.order!r}: use {', '.join(ORDERS)}")
        self.store.check_filter(**self._scope, judge=self.judge)
        # the stratified queue as an earlier session kept it for these items, else its lanes, read
        # from now on (on a thread, if the database is a file)
        self._kept_order: bytes | None = None
        self._lanes: LaneReader | None = None
        if self.order in ("random", "informative"):
            import_meanwhile("numpy")  # their first items need it: imported while the app starts (as the lanes' is)
        if self.order == "stratified":
            self._kept_order = self.store.kept_stratified_order(self._scope, self.seed)
            if self._kept_order is None:
                self._lanes = LaneReader(self.store, self._scope, self.seed)
        self.started = time.monotonic()
        self.saved: Counter[str] = Counter()  # what this session saved: labels, changed labels, skips, flags, undos, notes
        self.labels_here = 0  # labels given in this session and not undone: its pace
        self._windows: Iterator[list[int]] | None = None
        self._window: list[int] = []
        self._returning: list[int] | None = None
        self._claim_after = 0
        self._shown_at = time.monotonic()
        self.audio = Listening()
        self._decided_uids: list[str] = []  # this session's decisions (the only ones it undoes)
        self._trust_marks = None  # the escalate order's trust marks (reliability_cells.TrustMarks), once fitted
        self._preparing: Future | None = None  # what the queue needs, worked out in a child process
        self._shown_early: set[int] = set()  # items claimed before the queue was worked out
        self._early_note: str | None = None  # why they came
        self._early = False  # whether the queue's current window is of those
        self.fallback_note: str | None = None  # why the queue is in id order instead of the session's (FALLBACK_NOTES)
        self._back_to: int | None = None  # the history's place the next `forward` comes back to (`jump_to`)
        self.holder = lease_holder(self.annotator, self.tab)
        self.store.release_ended_sessions(self.annotator, process_running)
        # the queue's items counted on a thread while the app imports, composes and claims the first item
        self._total = self.store.counted_meanwhile("count_items", **self._scope)
        self.labelled = self.store.count_labelled(self.annotator, **self._scope)
        self._changes = 0  # this session's decisions and undos: a recount started before the latest is stale
        self._recount: tuple[int, Future] | None = None  # (changes when started, the count), while counting
        self._recounted_at = time.monotonic()  # when the latest count of the labelled items started
        self._counted_version = self.store.data_version()  # the database as the latest count found it

    @property
    def decisions_here(self) -> int:
        """The labels, skips and flags this session saved."""
        return self.saved["label"] + self.saved[RELABEL] + self.saved["skip"] + self.saved["flag"]

    @property
    def total(self) -> int:
        """The current, visible items of this session's filter, as counted when it started."""
        return self._total.result()

    @property
    def trust_marks(self):
        """The escalate order's trust marks (reliability_cells.TrustMarks) as fitted when its queue
        started (waiting for the child process fitting them, if it has not finished); None in the
        other orders or before the queue starts."""
        if self._trust_marks is None and self.order == "escalate" and self._preparing is not None:
            self._trust_marks = self._prepared()
        return self._trust_marks

    def _in_background(self) -> bool:
        """Whether this queue is worked out in a child process (`prepare_queue`)."""
        background = self.prepare_in_background
        if background is None:
            background = self._at_least(PREPARE_IN_BACKGROUND_FROM)
        return background and self.store.in_file  # the child process opens the database file again

    def _at_least(self, n: int) -> bool:
        """Whether the queue has `n` items or more (`total`), without waiting for the count on
        the thread: from the highest id (no more items than that), else counted up to `n`."""
        if self._total.done():
            return self.total >= n
        return self.store.max_item_id() >= n and self.store.count_items(**self._scope, at_most=n) >= n

    def _prepare_later(self, note: str) -> None:
        """The queue is to be worked out in another process (`prepare_queue`); items shown meanwhile carry `note`."""
        self._preparing, self._early_note = Future(), note

    def prepare_queue(self) -> None:
        """Start working out the queue (escalate's trust thresholds, informative's cells) in a
        child process with its own read-only connection, if this queue waits for that and it has
        not started: a thread of this process would hold the interpreter's lock for much of it,
        and keys would wait. The app calls this once the first item is painted, since the child
        takes a core for seconds; else the next claim does."""
        preparing = self._preparing
        if preparing is None or preparing.running() or preparing.done():
            return
        preparing.set_running_or_notify_cancel()
        in_child_process(preparing, work_out_queue,
                         (self.store.path, self.order, self.templates, self.judge, self._scope, self.seed))

    def _prepared(self):
        """What the child process worked out (started now if it was not), once it has."""
        self.prepare_queue()
        try:
            return self._preparing.result()
        except ChildWorkError as exc:
            raise SessionError(f"the queue's order could not be worked out in another process ({exc})") from None

    @property
    def queue_preparing(self) -> bool:
        """Whether the queue is still being worked out in a child process."""
        return self._preparing is not None and not self._preparing.done()

    def queue_note(self, item_id: int) -> str | None:
        """Why this item came in an order other than the session's own, if it did."""
        return self._early_note if item_id in self._shown_early else self.fallback_note

    @property
    def _scope(self) -> dict:
        """The filter every query of this session shares."""
        return {"task": self.task, "lang": self.lang, "system": self.system}

    # -- queue -------------------------------------------------------------------------------

    def _queue_windows(self) -> Iterator[list[int]]:
        """The queue in this session's order, a window of item ids at a time, computed lazily
        so that the first item shows at once even on a million items."""
        if self.order == "random":
            import numpy as np  # only the shuffled orders need it; keeps start-up light

            # the filter's items in random order: where they are most ids up to the highest, every
            # id shuffled (the claim passes over ids outside the filter), without reading them. Without
            # a filter that is all but certain: every id is shuffled while the count's thread counts
            # (SQLite counts without the interpreter's lock), and the count confirms it
            top = self.store.max_item_id()

            def shuffled_from(ids: np.ndarray) -> np.ndarray:
                return np.random.default_rng(self.seed).permutation(ids)

            shuffled = shuffled_from(np.arange(1, top + 1)) if not any(self._scope.values()) else None
            if 2 * self.total < top:
                shuffled = shuffled_from(self.store.item_id_array(**self._scope))
            elif shuffled is None:
                shuffled = shuffled_from(np.arange(1, top + 1))
            for k in range(0, len(shuffled), WINDOW):
                yield shuffled[k : k + WINDOW].tolist()
        elif self.order == "stratified":
            yield from self._stratified_windows()
        elif self.order == "escalate":  # items whose judge verdict cannot be trusted go to people first
            yield from self._escalate_windows()
        elif self.order == "unstable-first":  # the judge changed its verdict over its repeats, then the rest
            chosen, self.fallback_note = set(), FALLBACK_NOTES[self.order]  # until one is found
            for between in self._id_slices():
                first = self.store.unstable_item_ids(**self._scope, judge=self.judge, between=between,
                                                     overlap=self.overlap)
                chosen.update(first)
                if first:
                    self.fallback_note = None
                for k in range(0, len(first), WINDOW):
                    yield first[k : k + WINDOW]
            after = 0
            while rest := self.store.item_ids(**self._scope, after=after, limit=WINDOW):
                after = rest[-1]
                yield [i for i in rest if i not in chosen]
        elif self.order == "informative":
            yield from self._informative_windows()
        else:  # disagreement-first: contested items in id order, then the rest (both read a slice of ids at a time)
            self.fallback_note = FALLBACK_NOTES[self.order]  # until one is found
            for between in self._id_slices():
                contested = self.store.contested_item_ids(**self._scope, judge=self.judge, between=between,
                                                          overlap=self.overlap)
                if contested:
                    self.fallback_note = None
                    yield contested
            after = 0
            while rest := self.store.item_ids(**self._scope, after=after, limit=WINDOW):
                after = rest[-1]
                yield rest

    def _stratified_windows(self) -> Iterator[list[int]]:
        """One lane per system x task x language, each shuffled (`shuffled_lanes`); the queue
        takes one item of each lane in turn. The first item of each lane comes as its own window
        as soon as that lane is shuffled (`LaneReader`), so the first item waits only for the
        shuffles up to its own lane's; then WINDOW items of every lane at a time. The queue an
        earlier session kept for the same items (`Store.kept_stratified_order`) is that one,
        WINDOW items at a time."""
        if self._kept_order is not None:
            ids, self._kept_order = kept_ids(self._kept_order), None
            for k in range(0, len(ids), WINDOW):
                yield ids[k : k + WINDOW].tolist()
            return
        lanes = []
        for lane in self._lanes:
            lanes.append(lane)
            if len(lane):
                yield [int(lane[0])]
        for k in range(0, max(map(len, lanes), default=0), WINDOW):
            window = [int(lane[j]) for j in range(max(k, 1), k + WINDOW) for lane in lanes if j < len(lane)]
            if window:
                yield window

    def _id_slices(self) -> Iterator[tuple[int, int]]:
        """Ranges of item ids (inclusive) that cover every id up to the highest, FIRST_SLICE ids
        first and each next range twice as long, up to ID_SLICE: an order that reads its first
        items a slice of ids at a time finds them in a small read."""
        top, low, step = self.store.max_item_id(), 1, min(FIRST_SLICE, ID_SLICE)
        while low <= top:
            yield low, low + step - 1
            low += step
            step = min(2 * step, ID_SLICE)

    def _escalate_windows(self) -> Iterator[list[int]]:
        """In id order, the items on which no judge's verdict is accepted (`trust_marks`), then the
        rest. On a large queue the thresholds are fitted in a child process (seconds at 1M
        items); meanwhile come, in id order, the items on which no verdict can be accepted whatever
        the thresholds (`Store.surely_escalated_ids`), which the order puts among its first ones,
        each with a `queue_note`. Those shown are not shown again."""
        if self._in_background():
            self._prepare_later(EARLY_NOTES["escalate"])
            after, self._early, limits = 0, True, self._early_limits()
            while self.queue_preparing and (window := self.store.surely_escalated_ids(
                    judge=self.judge, **self._scope, after=after, limit=next(limits))):
                after = window[-1]
                yield window
            self._early = False
        else:
            self._trust_marks = trust_marks(self.store, CellKinds(self.templates, BY_CHOICES), judge=self.judge)
        self.store.set_trust_marks(self.trust_marks)
        for accepted in (False, True):  # in id order: those no judge's verdict is accepted on, then the rest
            after = 0
            while window := self.store.escalation_ids(accepted=accepted, **self._scope, after=after, limit=WINDOW):
                after = window[-1]
                yield [i for i in window if i not in self._shown_early] if self._shown_early else window

    def _informative_windows(self) -> Iterator[list[int]]:
        """The informative order (`informative_order`). On a large queue its cells are weighed in a
        child process (seconds at 1M items); meanwhile come the unlabelled items of the first cell
        in that cell's random order (the order's own within the cell), each with a `queue_note`.
        Those shown are not shown again."""
        if self._in_background():
            # the first cell's lane, as `informative_cells` draws it
            first, lane = next(shuffled_lanes(self.store, self._scope, self.seed), (("", "", ""), []))
            self._prepare_later(EARLY_NOTES["informative"].format(cell=" ".join(v for v in first if v)))
            self._early, k, limits = True, 0, self._early_limits()
            while k < len(lane) and self.queue_preparing:
                size = next(limits)
                yield self.store.unlabelled_ids(lane[k : k + size].tolist())
                k += size
            self._early = False
            heap, pending = self._prepared()
        else:
            heap, pending = informative_cells(self.store, self._scope, self.judge, self.seed)
        window = []
        for item_id in informative_order(heap, pending):
            if item_id in self._shown_early:
                continue
            window.append(item_id)
            if len(window) == WINDOW:
                yield window
                window = []
        if window:
            yield window

    def _early_limits(self) -> Iterator[int]:
        """How many ids each next window of the items shown while the queue is worked out takes:
        EARLY_WINDOW, twice as many after a window none of whose items was claimed (a stretch that
        others labelled already), up to WINDOW, and EARLY_WINDOW again after a claim. Which items
        come is the same whatever the windows' sizes (each claim takes the first eligible one)."""
        limit, shown = EARLY_WINDOW, len(self._shown_early)
        while True:
            yield limit
            limit = EARLY_WINDOW if len(self._shown_early) > shown else min(2 * limit, WINDOW)
            shown = len(self._shown_early)

    def _claim(self) -> int | None:
        """Lease the next item of the queue; once it is exhausted, the items this annotator
        skipped come back, once, in the order they were skipped."""
        if self._returning is None:
            item_id = self._claim_fresh()
            if item_id is not None:
                return item_id
            self._returning = self.store.decided_item_ids(self.annotator, "skip", **self._scope)
        while self._returning:
            item_id = self.store.claim_first(self.annotator, self._returning[:WINDOW], overlap=self.overlap,
                                             lease_seconds=self.lease_seconds, skipped_too=True, holder=self.holder)
            if item_id is not None:
                del self._returning[: self._returning.index(item_id) + 1]
                return item_id
            del self._returning[:WINDOW]
        return None

    def _claim_fresh(self) -> int | None:
        if self.order == "in-order":
            item_id = self.store.claim_next(self.annotator, overlap=self.overlap, task=self.task, lang=self.lang,
                                            system=self.system, after_id=self._claim_after,
                                            lease_seconds=self.lease_seconds, holder=self.holder)
            if item_id is not None:
                self._claim_after = item_id
            return item_id
        if self._windows is None:
            self._windows = self._queue_windows()
        if self.history:
            self.prepare_queue()  # if the app did not once the first item was painted
            if self._lanes is not None:  # past the first paint, which its work would slow
                self._lanes.keep_when_read()
        while True:
            if self._early and not self.queue_preparing:
                self._window = []  # the queue is worked out: it goes on in its own order
            if not self._window:
                self._window = next(self._windows, None)
                if self._window is None:
                    self._window = []
                    return None
            item_id = self.store.claim_first(self.annotator, self._window, overlap=self.overlap,
                                             lease_seconds=self.lease_seconds, holder=self.holder, **self._scope)
            if item_id is not None:
                del self._window[: self._window.index(item_id) + 1]
                if self._early:
                    self._shown_early.add(item_id)
                return item_id
            self._window = []

    # -- navigation --------------------------------------------------------------------------

    def current(self) -> ItemView | None:
        item_id = self._current_id()
        return None if item_id is None else self.view(item_id)

    def _current_id(self) -> int | None:
        return self.history[self.position] if 0 <= self.position < len(self.history) else None

    def start(self) -> ItemView | None:
        """The first item of the queue (claimed, or kept if this annotator already holds it)."""
        return self.forward()

    def forward(self) -> ItemView | None:
        """The next item in this session's history (after an item picked with F, the one left
        for it: `jump_to`), or a newly claimed one; the item on screen again where the queue comes
        back round to it (nothing else waits)."""
        self.stop_listening()
        if self._back_to is not None:
            self.position, self._back_to = self._back_to, None
        elif self.position + 1 < len(self.history):
            self.position += 1
        else:
            item_id = self._claim()
            if item_id is None:
                self.position = len(self.history)
                return None
            if item_id != self._current_id():
                self.history.append(item_id)
                self.position = len(self.history) - 1
        self._shown_at = time.monotonic()
        return self.current()

    def back(self) -> ItemView | None:
        self.stop_listening()
        self._back_to = None
        if self.position > 0:
            self.position -= 1
            self._shown_at = time.monotonic()
        return self.current()

    def jump_to(self, item_id: int, *, detour: bool = False) -> ItemView:
        """Show `item_id`: where it is in the history, else put in after the item on screen. A
        `detour` (an item picked with F) brings the next `forward` back to the item on screen now."""
        self.stop_listening()
        on_screen = self.position if detour and self._current_id() is not None else None
        back_to = self._back_to if self._back_to is not None else on_screen
        if item_id in self.history:
            self.position = self.history.index(item_id)
        else:
            at = min(self.position + 1, len(self.history))
            self.history.insert(at, item_id)
            self.position = at
            back_to = back_to + 1 if back_to is not None and back_to >= at else back_to
        self._back_to = back_to if back_to != self.position else None
        self._shown_at = time.monotonic()
        return self.view(item_id)

    def view(self, item_id: int) -> ItemView:
        item = self.store.item(item_id)
        template, problem = self.templates.for_item(item)
        # one character more than a page, so the view can tell that the output goes on
        judgments = self.store.judgments_for_item(item_id, self.judge, output_chars=PAGE_CHARS + 1)
        judgment = next((j for j in judgments if j.status != "error"), judgments[0] if judgments else None)
        judgment, repeats = self._in_force(item_id, judgment, judgments)
        choices = template.kind.labels
        audio = self.store.item_audio(item_id)
        if self.audio_root is not None:
            audio = [clip.moved_to(self.audio_root) for clip in audio]
        return ItemView(item, template, judgment, choices, self.store.current_label(item_id, self.annotator),
                        self.store.note_texts(item_id), audio, problem, repeats)

    def _in_force(self, item_id: int, shown: Judgment | None, judgments: list[Judgment]):
        """The judgment to show as the judge's verdict, and its samples when it has repeats: under
        `judge --repeat` the verdict in force is the majority of the samples (a tie or no parsed
        sample: unparsed, with the reason), shown on the judgment that gave it; without repeats
        `shown` itself. A verdict in force that is an error leaves `shown` (the newest answer)."""
        if shown is None:
            return None, []
        in_force = self.store.verdict_in_force(item_id, shown.judge_name)
        if in_force is None or in_force["status"] == "error":
            return shown, []
        base = next((j for j in judgments if j.id == in_force["judgment_id"]), shown)
        judgment = replace(base, status=in_force["status"], verdict=in_force["verdict"],
                           unparsed_reason=in_force["reason"] or base.unparsed_reason)
        samples = self.store.samples_in_force(item_id, shown.judge_name)
        return judgment, [(status, verdict) for _, status, verdict in samples] if len(samples) > 1 else []

    # -- listening ---------------------------------------------------------------------------

    @property
    def playing(self) -> bool:
        return self.audio.playing

    @property
    def player_error(self) -> str | None:
        """Why the latest playback could not start, if it could not."""
        return self.audio.player_error

    def listen(self) -> bool:
        """Play the current item's audio in the background (True), or stop it if it is playing
        (False). Raises SessionError when there is nothing to play, NoPlayerError without a player."""
        view = self.current()
        if view is None or not view.audio:
            raise SessionError("this item has no audio")
        return self.audio.toggle(view)

    def listen_in_browser(self) -> list[str]:
        """For `calibrate serve`: the URLs of the current item's playable clips (`Listening.in_browser`)."""
        view = self.current()
        if view is None or not view.playable:
            raise SessionError("this item has no audio to play")
        return self.audio.in_browser(view)

    def stop_listening(self) -> None:
        self.audio.stop()

    def listening(self, item_id: int) -> tuple[int, float]:
        return self.audio.of(item_id)

    # -- decisions ---------------------------------------------------------------------------

    def decide(self, action: str, label: str | None = None) -> Decision:
        """Record a decision on the current item (committed before this returns)."""
        view = self.current()
        if view is None:
            raise SessionError("no item to decide on")
        if view.problem and action not in ("skip", "flag"):
            raise SessionError(f"this item cannot be labelled ({view.problem}): s skips it, f flags it")
        if action == "confirm":
            if self.blind:
                raise SessionError("blind mode: give your own label (y/n, digits or the score form)")
            if view.verdict is None:
                raise SessionError("the judge gave no verdict to confirm: label it yourself")
            label = view.verdict
        elif action == "override":
            if self.blind:
                raise SessionError("blind mode: give your own label")
            if not view.is_binary:
                raise SessionError("override flips a yes/no verdict; for this task press a digit")
            if view.verdict is None:
                raise SessionError("the judge gave no verdict to override: label it yourself")
            label = view.kind.flip(view.verdict)
        elif action == "label":
            label = self._check_label(view, label)
        elif action not in ("skip", "flag"):
            raise SessionError(f"unknown action {action!r}")
        plays, listened = self.listening(view.item.id)
        if self.require_listen and action in LABEL_ACTIONS and view.playable and not plays:
            if find_player() is None:
                raise NoPlayerError(f"--require-listen needs the audio played, and there is no audio player on the "
                                    f"PATH: {PLAYER_HINT}")
            raise SessionError("listen first (l): --require-listen takes a label only after the audio has played")
        shown = view.judgment.id if view.judgment and not self.blind else None
        has_audio = bool(view.playable)
        uid = uuid.uuid4().hex
        self.store.annotate(
            view.item.id, self.annotator, action, label=label if action in LABEL_ACTIONS else None,
            judgment_id=shown, blind=self.blind, seconds_spent=round(time.monotonic() - self._shown_at, 3),
            audio_plays=plays if has_audio else None, listened_seconds=round(listened, 3) if has_audio else None,
            uid=uid, holder=self.holder)
        self._decided_uids.append(uid)
        self._changes += 1
        if action in LABEL_ACTIONS and view.current_label is None:
            self.labelled += 1
        # a label given again (H, or k back) changes the person's own: counted apart from the items labelled
        self.saved[action if action not in LABEL_ACTIONS else "label" if view.current_label is None else RELABEL] += 1
        self.labels_here += action in LABEL_ACTIONS
        self.last_decision = Decision(view.item.id, action, label, view.verdict, uid)
        return self.last_decision

    def _check_label(self, view: ItemView, label: str | None) -> str:
        if not view.is_scores and label not in view.choices:
            raise SessionError(f"{label!r} is not a label of {view.item.task}: {', '.join(view.choices)}")
        try:
            return view.kind.normalize_label(label)
        except LabelError as exc:
            raise SessionError(str(exc)) from None

    def note(self, text: str) -> None:
        view = self.current()
        if view is None or not text.strip():
            return
        self.store.annotate(view.item.id, self.annotator, "note", note=text.strip(), blind=self.blind)
        self.saved["note"] += 1

    def undo(self) -> ItemView | None:
        """Reverse this session's latest decision still in force (an appended row) and show that
        item again; another session's decisions (another terminal or tab) are left as they are."""
        undone = self.store.undo_last(self.annotator, among=self._decided_uids)
        if undone is None:
            return None
        self.last_decision = None
        self._changes += 1
        self.saved["undo"] += 1
        self.store.hold(undone.item_id, self.holder, self.lease_seconds)
        view = self.jump_to(undone.item_id)
        in_queue = all(value in (None, getattr(view.item, name)) for name, value in self._scope.items())
        if in_queue and undone.action in LABEL_ACTIONS and view.current_label is None:
            self.labelled -= 1
        if undone.action in LABEL_ACTIONS and undone.uid in self._decided_uids:
            self.labels_here -= 1
        return view

    def follows(self, earlier: AnnotationSession) -> None:
        """This session takes over from `earlier` in the same app (a filter change): the decisions made there stay its own to undo."""
        self._decided_uids[:0] = earlier._decided_uids

    def progress(self) -> Progress:
        elapsed = time.monotonic() - self.started
        # labels per hour (skips, flags and labels undone aside); from one or two labels it is noise: shown from the third on
        per_hour = self.labels_here / elapsed * 3600 if self.labels_here >= 3 and elapsed > 0 else None
        return Progress(self.labelled, self.total, per_hour)

    def recount_labelled(self) -> bool:
        """Count this annotator's labels in the queue again on a thread, at most every RECOUNT_EVERY s, once
        another connection wrote (their other terminals and tabs label too): a count finished since the
        last call is taken unless this session decided or undid meanwhile. Whether `progress` changed."""
        before = self.labelled
        if self._recount is not None and self._recount[1].done():
            (changes, counted), self._recount = self._recount, None
            if changes == self._changes and counted.exception() is None:
                self.labelled = counted.result()
            else:  # stale, or failed: count again, whatever was written meanwhile
                self._counted_version = None
        due = self._recount is None and time.monotonic() - self._recounted_at >= RECOUNT_EVERY
        if due and (version := self.store.data_version()) != self._counted_version:  # another connection wrote
            self._recounted_at, self._counted_version = time.monotonic(), version
            self._recount = (self._changes, self.store.counted_meanwhile("count_labelled", self.annotator, **self._scope))
        return self.labelled != before

    def finished_summary(self) -> str:
        """What became of this queue's items, for the screen that says it is finished."""
        skipped = len(self.store.decided_item_ids(self.annotator, "skip", **self._scope))
        flagged = len(self.store.decided_item_ids(self.annotator, "flag", **self._scope))
        others = self.total - self.store.count_decided(self.annotator, **self._scope)
        text = f"you labelled {self.labelled} of {counted(self.total, 'item')} here, skipped {skipped} and flagged {flagged}"
        if others:
            text += f"; {others} {'is' if others == 1 else 'are'} labelled or held by other annotators (overlap {self.overlap})"
        return text

    def flagged(self) -> list[Item]:
        """The items this annotator flagged (the flag still their latest decision), oldest first."""
        return [self.store.item(i) for i in self.store.decided_item_ids(self.annotator, "flag", **self._scope)]

    def labels_lately(self) -> list[tuple[int, str, str, str, str, str]]:
        """This annotator's labels in force on the items of this queue's filter, from any session,
        the latest first (`Store.labels_lately`): to pick one and label it again."""
        return self.store.labels_lately(self.annotator, **self._scope)

    def filter_text(self) -> str:
        """The active filter as typed in the app ("task=c3/pause lang=zh"; "" for all items)."""
        return " ".join(f"{k}={v}" for k, v in self._scope.items() if v)

    def give_back(self) -> None:
        """Give back the items this session holds, so others can take them at once."""
        self.store.release_all(self.holder)

    def close(self) -> None:
        """Stop the audio and the reading of lanes, and give back the held items (`give_back`)."""
        self.stop_listening()
        if self._lanes is not None:
            self._lanes.close()
        self.give_back()
