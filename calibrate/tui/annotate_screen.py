"""The main screen: the item, the response under test, the reference, the judge's verdict and
the rendered prompt; one key to confirm, override, label, skip, flag or undo. Each decision is
committed to SQLite (through the session) before the next item is shown. When another writer
holds the database (a long import, a judge run), a worker thread waits for it on a connection
of its own, the status line says so, and the write is made on the app's thread once the
database is free; keys wait meanwhile (each one pressed says so; q quits once the write is
done, q again at once), and the decision is confirmed only once committed. A decision and the
claim of the next item are two writes: the wait of the second never makes the first one again."""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Callable
from typing import TypeVar

from rich.text import Text
from textual import work
from textual.actions import parse
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.events import Key
from textual.screen import Screen

from calibrate.audio import scp_path
from calibrate.escape import safe
from calibrate.item_view import Decision, ItemView, NoPlayerError, SessionError
from calibrate.model import LABEL_ACTIONS, CalibrateError
from calibrate.session import AnnotationSession
from calibrate.store import DatabaseBusy, DatabaseFault, Store, stop_waiting
from calibrate.tui.audio_strip import AudioStrip
from calibrate.tui.item_panel import ItemPanel
from calibrate.tui.item_picker_screen import ItemPickerScreen
from calibrate.tui.key_bar import KeyBar
from calibrate.tui.keys import typed_key
from calibrate.tui.prompt_panel import PromptPanel
from calibrate.tui.reading_pane import ReadingPane
from calibrate.tui.score_form import ScoreForm
from calibrate.tui.stats_screen import StatsScreen
from calibrate.tui.status_bar import StatusBar
from calibrate.tui.text_prompt import TextPrompt
from calibrate.tui.text_screen import TextScreen
from calibrate.tui.verdict_panel import VerdictPanel

T = TypeVar("T")
BUSY = object()  # what `_write_here` gives when another writer holds the database (nothing written)
CHECKPOINT_EVERY = 20  # decisions between two checkpoints of the database's write-ahead log, off the key path
PREPARE_AFTER_PAINT = 0.3  # seconds after the first item is painted before the queue is worked out (`prepare_queue`)
RECOUNT_POLL = 1.0  # seconds between two looks at the count of the annotator's labels (`recount_labelled`)
STILL_WAITING = "still waiting to save the previous action"
# what waits, in the status line's "waiting N s for another writer" (`write`)
DECISION_PENDING = "your decision is not saved yet"
UNDO_PENDING = "your undo is not saved yet"
NEXT_PENDING = "the next item comes when it is free"
FILTER_PENDING = "the new filter starts when it is free"
QUIT_PENDING = "calibrate quits when it is free; q quits now"  # (the held items are then given back later)
NOTE_PENDING = "your note is not saved yet"
QUIT_AFTER = "; calibrate quits once it is done (q again: at once)"  # q pressed while something else waits
LABELLING = ("confirm", "label_yes", "label_no", "label_index", "scores", "override")  # the actions that decide an item's label
LOST_AT_THE_END = {DECISION_PENDING: "your last decision was not saved", UNDO_PENDING: "your last undo was not saved",
                   NOTE_PENDING: "your last note was not saved"}


DIGIT_BINDINGS = [
    Binding(str(k), f"label_index({k - 1})", "label", show=k == 1, id=f"annotate.label_{k}") for k in range(1, 10)
]
SCROLL_BINDINGS = [
    Binding(key, f"scroll_pane('{how}')", how.replace("_", " "), show=False, id=f"annotate.{how}")
    for key, how in (("pagedown", "page_down"), ("pageup", "page_up"), ("down", "down"), ("up", "up"),
                     ("home", "home"), ("end", "end"))
]


class AnnotateScreen(Screen):
    # bindings of different sets here never work on one item (`check_action`: y and n on an item
    # whose labels read yes / no, the digits on the others), so a keymap may give them one key
    NEVER_TOGETHER = ({"annotate.yes", "annotate.no"}, {binding.id for binding in DIGIT_BINDINGS})
    # the key bar shows these in this order, only those that work on the item on screen; at
    # 80 columns everything up to "quit" fits on yes/no items (the panels name x and ] where
    # they apply; the rest are on the ? page); where the digits' labels make it too long, the
    # keys of KEY_BAR_DROPS leave it first
    BINDINGS = [
        Binding("enter,space", "confirm", "ok", id="annotate.confirm"),
        Binding("y", "label_yes", "yes", id="annotate.yes"),
        Binding("n", "label_no", "no", id="annotate.no"),
        *DIGIT_BINDINGS,
        Binding("e", "scores", "scores", id="annotate.scores"),
        Binding("o", "override", "flip", id="annotate.override"),
        Binding("s", "skip", "skip", id="annotate.skip"),
        Binding("f", "flag", "flag", id="annotate.flag"),
        Binding("u", "undo", "undo", id="annotate.undo"),
        Binding("j,right", "next", "next", id="annotate.next"),
        Binding("k,left", "previous", "prev", id="annotate.previous"),
        Binding("l", "listen", "listen", show=False, id="annotate.listen"),
        Binding("c", "copy_audio_path", "scp path", show=False, id="annotate.copy_audio_path"),
        Binding("slash", "filter", "filter", id="annotate.filter"),
        Binding("question_mark", "help", "help", id="annotate.help"),
        Binding("q", "quit_app", "quit", id="annotate.quit"),
        Binding("x", "expand", "more", id="annotate.expand"),
        Binding("right_square_bracket", "page(1)", "page", id="annotate.page_next"),
        Binding("left_square_bracket", "page(-1)", "page back", show=False, id="annotate.page_previous"),
        Binding("tab", "next_pane", "pane", show=False, id="annotate.pane"),
        *SCROLL_BINDINGS,
        Binding("a", "note", "note", show=False, id="annotate.note"),
        Binding("p", "toggle_prompt", "prompt", show=False, id="annotate.prompt"),
        Binding("F", "flagged", "flagged", show=False, id="annotate.flagged"),
        Binding("H", "labelled", "your labels", show=False, id="annotate.labelled"),
        Binding("t", "stats", "stats", show=False, id="annotate.stats"),
        Binding("g", "guidelines", "guide", show=False, id="annotate.guidelines"),
    ]

    KEY_BAR_DROPS = ("annotate.filter", "annotate.previous", "annotate.next", "annotate.page_next", "annotate.expand",
                     "annotate.undo", "annotate.flag", "annotate.help")

    def __init__(self, session: AnnotationSession):
        super().__init__()
        self.session = session
        self.view: ItemView | None = None
        self.revealed: set[int] = set()
        self.told_no_player = False
        self.expanded = False
        self.page = 0
        self.pane = 0  # which of the panes the scrolling keys move
        self.saving = False  # a write waits for another writer (`write`)
        self.pending: str | None = None  # what waits with it, as the status line says
        self.unsaved: str | None = None  # the person's action that waits with it, in words (`write`)
        self.waited = 0.0  # seconds it has waited so far
        self.quit_after = False  # q was pressed meanwhile: calibrate quits once it is written (`action_quit_app`)
        self.pressed = ""  # the latest key pressed on this screen, as typed (for what a key that did nothing says)
        self._checkpoints: Store | None = None  # the checkpoint thread's own connection, opened on its first run
        self._checkpoints_lock = threading.Lock()  # held while it is used, and while it is closed on unmount
        self._unmounted = False

    def compose(self) -> ComposeResult:
        yield StatusBar(id="status")
        yield AudioStrip(id="audio")
        with Horizontal(id="main"):
            yield ItemPanel(id="item", classes="reading")
            yield VerdictPanel(id="verdict")
        yield PromptPanel(id="prompt")
        yield KeyBar(id="keys")

    def on_mount(self) -> None:
        if self.session.store.in_file:
            self.session.store.defer_checkpoints()  # `_checkpoint` does them, on a thread, between keys
        self.write(self.session.start, self.show, NEXT_PENDING)
        # what the queue's order needs beyond its first items (seconds on a large queue), a moment after
        # they are painted: the child process's start (its arguments pickled on a thread) would hold up the
        # first frame's way to the terminal
        self.call_after_refresh(self.set_timer, PREPARE_AFTER_PAINT, self.session.prepare_queue)
        self.set_interval(RECOUNT_POLL, self._recount_labelled)
        # then what the start built stays out of Python's full garbage collections: on a queue of
        # 1M items one took ~160 ms, a pause on whichever key it fell (one in a few hundred)
        self.call_after_refresh(gc.freeze)

    def on_unmount(self) -> None:
        if self.saving and self.pending in LOST_AT_THE_END:  # the app ends (Ctrl-C) while a write waits
            self.app.lost = LOST_AT_THE_END[self.pending]
        gc.unfreeze()
        with self._checkpoints_lock:
            self._unmounted = True
            if self._checkpoints is not None:
                self._checkpoints.close()
                self._checkpoints = None

    def _recount_labelled(self) -> None:
        """The status bar's "labelled N/M" follows the labels this annotator gives elsewhere."""
        if self.session.recount_labelled():
            self.query_one(StatusBar).show_again()

    # -- writing: at once when the database is free, else once a worker thread saw it free ------

    def write(self, work: Callable[[], T], done: Callable[[T], None], pending: str = DECISION_PENDING,
              unsaved: str | None = None) -> None:
        """Run `work` (one write: it is done again, whole, if the database is busy) and hand its
        result to `done`. If another writer holds the database, nothing is written now: a worker
        thread waits for it to be free (`_write_waiting`), the status line shows the wait and
        that `pending` waits, and `work` is run again here, then `done` once it is committed.
        `unsaved`: the person's action that `work` saves, in words ("label 'yes' on item #3"),
        said meanwhile to whoever waits for it (`CalibrateApp.unsaved`: serve, in a browser tab)."""
        if self.saving:
            self.notify(STILL_WAITING, severity="warning")
            return
        try:
            result = self._write_here(work)
        except (SessionError, DatabaseFault) as exc:
            self._not_saved(exc)
            return
        if result is not BUSY:
            done(result)
            return
        self.saving, self.pending = True, pending
        if unsaved is not None:
            self.unsaved = f"{self.session.annotator}'s {unsaved}"
            self.app.unsaved(self.unsaved)
        self._show_wait(0.0)
        self._write_waiting(work, done)

    def _write_here(self, work: Callable[[], T]) -> T | object:
        """`work`'s result, written on the app's own thread (the only one that uses the session's
        connection), or BUSY, nothing written, if another writer holds the database: the screen
        does not freeze waiting for it."""
        store = self.session.store
        store.on_wait = stop_waiting
        try:
            return work()
        except DatabaseBusy:
            return BUSY
        finally:
            store.on_wait = None

    def _show_wait(self, seconds: float) -> None:
        """The status line's wait: how long, what waits, and whether calibrate quits after it."""
        self.waited = seconds
        self.query_one(StatusBar).waiting(seconds, self.pending + (QUIT_AFTER if self.quit_after else ""))

    @work(thread=True, exclusive=True, group="write")
    def _write_waiting(self, work: Callable[[], T], done: Callable[[T], None]) -> None:
        """Wait for the database to be free, on a connection of this thread's own, then have the
        app's thread write (`_write_again`); again if another writer took it first."""
        started = time.monotonic()
        show = lambda _: self.app.call_from_thread(self._show_wait, time.monotonic() - started)  # noqa: E731
        while True:
            try:
                self.session.store.wait_for_writers(show)
            except DatabaseFault as exc:
                self.app.call_from_thread(self._refused, exc)
                return
            if self.app.call_from_thread(self._write_again, work, done):
                return

    def _write_again(self, work: Callable[[], T], done: Callable[[T], None]) -> bool:
        """The write that waited, now that the database was free a moment ago: whether it is
        over (saved or refused), or must wait again (another writer took the database first)."""
        try:
            result = self._write_here(work)
        except (SessionError, DatabaseFault) as exc:
            self._refused(exc)
            return True
        if result is BUSY:
            return False
        self._written(done, result)
        return True

    def _refused(self, exc: SessionError | DatabaseFault) -> None:
        """The write that waited was refused: said (`_not_saved`) as the wait ends (`_written`)."""
        self._written(lambda _: self._not_saved(exc), None, saved=False)

    def _not_saved(self, exc: SessionError | DatabaseFault) -> None:
        """Say why an action was not saved, in a toast: what the session refused, or a fault of
        the file that may pass (a full disk, a read-only file; the actions before it are saved).
        A damaged file ends the app instead (`CalibrateApp.end_on`): nothing more can be saved."""
        if isinstance(exc, DatabaseFault) and exc.damaged:
            self.app.end_on(exc)
        elif isinstance(exc, DatabaseFault):
            self.notify(safe(str(exc)), severity="error", timeout=30, markup=False)
        else:
            self.notify(safe(str(exc)), severity="warning", timeout=4, markup=False)

    def _written(self, done: Callable, result, saved: bool = True) -> None:
        """The write that waited is done (`saved`) or refused: `done` goes on from it, unless q
        was pressed meanwhile and it was saved: then calibrate quits (a refusal is said instead)."""
        self.saving, self.pending = False, None
        if self.unsaved is not None:
            self.unsaved = None
            self.app.unsaved(None)
        self.query_one(StatusBar).waiting(None)
        quit_after, self.quit_after = self.quit_after, False
        if quit_after and saved:
            self.action_quit_app()
            return
        done(result)  # which may start the next write (`decide`)

    def on_key(self, event: Key) -> None:
        """A key of this screen that does nothing (`check_action`) says why: while a write waits,
        in a toast; on an item it does not fit, in the status line, with what works there instead."""
        bindings = [binding for binding in self.BINDINGS if event.key in self.app.keys_of(binding)]
        self.pressed = typed_key(event.key)
        if self.saving:
            if any(binding.action != "quit_app" for binding in bindings):
                self.notify(STILL_WAITING, severity="warning")
            return
        actions = [parse(binding.action)[1:] for binding in bindings]
        if not actions:
            return
        if any(self.check_action(action, params) for action, params in actions):
            self.query_one(StatusBar).hint(None)  # a key that works: the hint of one that did not is done
        elif instead := self._instead(actions[0][0], self.pressed):
            self.query_one(StatusBar).hint(instead)

    # -- drawing -----------------------------------------------------------------------------

    def show(self, view: ItemView | None, *, keep_place: bool = False) -> None:
        """Draw `view`; a new item starts folded on its first page, unless `keep_place`."""
        if not keep_place:
            self.expanded, self.page = False, 0
        self.view = view
        hidden = self.session.blind and view is not None and view.item.id not in self.revealed and view.current_label is None
        self.query_one(StatusBar).show(view, self.session)
        self.query_one(ItemPanel).show(view, expanded=self.expanded, page=self.page)
        self.query_one(VerdictPanel).show(view, hidden)
        self.query_one(PromptPanel).show(view)
        strip, main = self.query_one(AudioStrip), self.query_one("#main")
        strip.show(view, self.session)
        first = view is not None and view.audio_first
        if first != (self.children.index(strip) < self.children.index(main)):  # a move lays out the whole screen
            self.move_child(strip, **{"before" if first else "after": main})
        self.query_one(KeyBar).show(self, view.choices if view else ())

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Only what works on the item on screen is enabled (and so shown in the key bar); while
        a write waits for the database every key but q waits too (the decision already made is
        saved first, nothing is lost)."""
        if self.saving:
            return action == "quit_app"
        view, blind = self.view, self.session.blind
        if action in ("confirm", "label_yes", "label_no", "label_index", "scores", "override", "skip", "flag",
                      "note", "guidelines", "expand", "page") and view is None:
            return False
        if action == "confirm":
            return (view.verdict is not None and not blind) or (view.is_scores and blind)
        if action in ("label_yes", "label_no"):
            return view.is_yes_no
        if action == "label_index":
            return not view.is_yes_no and not view.is_scores and parameters[0] < len(view.choices)
        if action == "scores":
            return view.is_scores
        if action == "override":
            return not blind and view.is_binary and view.verdict is not None
        if action == "expand":
            return bool(self.query_one(ItemPanel).folds) or self.expanded
        if action == "page":
            return self.query_one(ItemPanel).pages > 1
        if action in ("listen", "copy_audio_path"):
            return view is not None and bool(view.audio)
        if action == "previous":
            return self.session.position > 0
        return True

    def _instead(self, action: str, key: str) -> str | None:
        """What works on the item on screen instead of `key`, whose `action` does nothing on it."""
        if self.view is None:
            return None
        if action in LABELLING:
            return f"{key} does nothing here: label with {self._label_keys()}"
        if action in ("listen", "copy_audio_path"):
            return f"{key}: this item has no audio"
        if action == "expand":
            return f"{key}: nothing is folded on this item"
        if action == "page":
            return f"{key}: this item fits on one page"
        if action == "previous":
            return (f"{key}: first of this session: {self._keys('annotate.next')} goes on, "
                    f"{self._keys('annotate.labelled')} your labels, {self._keys('annotate.flagged')} your flags")
        return None

    def _keys(self, binding_id: str) -> str:
        """The keys of this screen's binding `binding_id`, as typed (after any remapping)."""
        return self.app.keymap_for(next(binding for binding in self.BINDINGS if binding.id == binding_id))

    def _label_keys(self) -> str:
        """The keys that label the item on screen, each with its label ("y yes, n no", "1
        entailment, 2 contradiction, 3 neutral"), or the score form's key on a rubric item."""
        # y and n where the item's labels read yes / no, else the digits
        ids = ["annotate.yes", "annotate.no"] if self.view.is_yes_no else [f"annotate.label_{k}" for k in range(1, 10)]
        return (", ".join(f"{self._keys(key)} {label}" for key, label in zip(ids, self.view.choices, strict=False))
                or f"the score form ({self._keys('annotate.scores')})")

    def decide(self, action: str, label: str | None = None) -> None:
        def decided(decision: Decision) -> None:
            self.revealed.add(decision.item_id)
            self.write(self.session.forward, self._show_decided, f"saved; {NEXT_PENDING}")

        self.write(lambda: self.session.decide(action, label), decided, unsaved=self._decision_words(action, label))

    def _decision_words(self, action: str, label: str | None) -> str:
        """A decision on the item on screen in words, with the label it gives ("label 'no' on
        item #3", "skip on item #4")."""
        view = self.view
        if action == "confirm":
            label = view.verdict
        elif action == "override":
            label = view.kind.flip(view.verdict)
        said = f"label {label!r}" if action in LABEL_ACTIONS and label is not None else action
        return f"{said} on item #{view.item.id}"

    def _show_decided(self, view: ItemView | None) -> None:
        self.show(view)
        if self.session.decisions_here % CHECKPOINT_EVERY == 0 and self.session.store.in_file:
            self._checkpoint()

    @work(thread=True, exclusive=True, group="checkpoint")
    def _checkpoint(self) -> None:
        """Copy the decisions' write-ahead log into the database file, on a connection of the
        checkpoint threads', opened on the first one and closed when the screen is: the commits
        of the app's own connection do not (`Store.defer_checkpoints`), so that no key waits for
        it. One that fails is done by a later one."""
        with self._checkpoints_lock:
            if self._unmounted:
                return
            try:
                if self._checkpoints is None:
                    self._checkpoints = Store(self.session.store.path)
                self._checkpoints.checkpoint()
            except DatabaseFault:
                return

    # -- actions -----------------------------------------------------------------------------

    def action_confirm(self) -> None:
        if self.view is not None and self.view.is_scores and self.session.blind:
            self.action_scores()
            return
        self.decide("confirm")

    def action_label_yes(self) -> None:
        self.decide("label", self.view.choices[0])

    def action_label_no(self) -> None:
        self.decide("label", self.view.choices[1])

    def action_label_index(self, index: int) -> None:
        self.decide("label", self.view.choices[index])

    def action_scores(self) -> None:
        start = None if self.session.blind else self.view.verdict

        def done(scores: str | None) -> None:
            if scores is not None:
                self.decide("label", scores)

        self.app.push_screen(ScoreForm(self.view.kind, start), done)

    def action_override(self) -> None:
        self.decide("override")

    def action_skip(self) -> None:
        self.decide("skip")

    def action_flag(self) -> None:
        self.decide("flag")

    def action_undo(self) -> None:
        def undone(view: ItemView | None) -> None:
            if view is None:
                self.notify("nothing to undo: this app has made no decision still in force (u undoes only its own)",
                            severity="information")
                return
            self.notify(f"undone: item #{view.item.id} is back (the reversal is recorded)")
            self.show(view)

        self.write(self.session.undo, undone, UNDO_PENDING, unsaved="undo of their latest decision")

    def action_note(self) -> None:
        if self.view is None:
            return

        def done(text: str | None) -> None:
            if text:
                self.write(lambda: self.session.note(text), lambda _: (self.show(self.session.current()),
                                                                       self.notify("note saved")), NOTE_PENDING,
                           unsaved=f"note on item #{self.view.item.id}: {text!r}")

        self.app.push_screen(TextPrompt(f"Note on item #{self.view.item.id}", "what should others know?",
                                        enter="saves the note"), done)

    def action_listen(self) -> None:
        if self.session.tab is not None:  # in a browser (calibrate serve): the browser plays it
            try:
                urls = self.session.listen_in_browser()
            except SessionError as exc:
                self.notify(safe(str(exc)), severity="warning", markup=False)
                return
            for url in urls:
                self.app.open_url(url)
            self.query_one(AudioStrip).show(self.view, self.session)
            self.notify("opened in your browser", timeout=2)
            return
        try:
            playing = self.session.listen()
        except NoPlayerError as exc:
            if not self.told_no_player:
                self.told_no_player = True
                self.notify(str(exc), severity="warning", timeout=10)
            return
        except SessionError as exc:
            self.notify(str(exc), severity="warning")
            return
        self.query_one(AudioStrip).show(self.view, self.session)
        self.notify("playing: l again stops" if playing else "stopped", timeout=2)

    def action_copy_audio_path(self) -> None:
        clips = self.view.audio if self.view else []
        if not clips:
            self.notify("this item has no audio", severity="warning")
            return
        paths = " ".join(scp_path(clip.file) for clip in clips)
        self.app.copy_to_clipboard(paths)
        self.notify(f"copied for scp: {paths}", timeout=8)

    def action_previous(self) -> None:
        self.show(self.session.back())

    def action_next(self) -> None:
        on_screen, key = self.view and self.view.item.id, self.pressed

        def moved(view: ItemView | None) -> None:
            if (view and view.item.id) != on_screen:
                self.show(view)
                return
            back = f" ({self._keys('annotate.previous')} goes back)" if self.check_action("previous", ()) else ""
            self.query_one(StatusBar).hint(f"{key}: no other item waits for you in this queue{back}")

        self.write(self.session.forward, moved, NEXT_PENDING)

    def action_expand(self) -> None:
        self.expanded = not self.expanded
        self.show(self.view, keep_place=True)

    def action_page(self, step: int) -> None:
        self.page = min(max(0, self.page + step), self.query_one(ItemPanel).pages - 1)
        self.show(self.view, keep_place=True)

    def _panes(self) -> list[ReadingPane]:
        panes = [self.query_one(ItemPanel), self.query_one("#verdict-raw-scroll", ReadingPane)]
        if not self.query_one(PromptPanel).collapsed:
            panes.append(self.query_one("#prompt-scroll", ReadingPane))
        return panes

    def action_next_pane(self) -> None:
        panes = self._panes()
        self.pane = (self.pane + 1) % len(panes)
        for n, pane in enumerate(panes):
            pane.set_class(n == self.pane, "reading")
        self.notify(f"PgUp/PgDn, Home/End and ↑/↓ now scroll the {('item', 'judge output', 'prompt')[self.pane]}",
                    timeout=2)

    def action_scroll_pane(self, how: str) -> None:
        panes = self._panes()
        pane = panes[self.pane % len(panes)]
        getattr(pane, f"scroll_{how}")(animate=False)

    def action_toggle_prompt(self) -> None:
        panel = self.query_one(PromptPanel)
        panel.collapsed = not panel.collapsed
        if panel.collapsed and self.pane >= 2:
            self.pane = 0
            self.query_one(ItemPanel).add_class("reading")

    def action_flagged(self) -> None:
        flagged = self.session.flagged()
        title = (f"Your flagged items not labelled since ({len(flagged)}): Enter shows one, Esc closes" if flagged else
                 "No item you flagged in this queue waits for you (f flags one; one you label leaves this list, its "
                 "flag stays in the export). Esc closes")
        self._pick(title, [(i.id, f"{i.task} {i.lang}  ({i.source_id})") for i in flagged])

    def action_labelled(self) -> None:
        labels, total = self.session.labels_lately(), self.session.labelled
        shown = f"{len(labels)} of {total}; / narrows the queue" if len(labels) < total else str(len(labels))
        title = (f"Your labels in this queue, the latest first ({shown}): Enter shows one to label it again, Esc closes"
                 if labels else "You have labelled no item in this queue yet. Esc closes")
        self._pick(title, [(item_id, f"{self._words(task, lang, label)}  {at[5:16].replace('T', ' ')}  {task} {lang}  "
                                     f"{source_id}") for item_id, task, lang, source_id, label, at in labels])

    def _words(self, task: str, lang: str, label: str) -> str:
        """A label of an item of `task` and `lang` as a person reads it (as stored where its task has no template)."""
        try:
            return self.session.templates.for_task(task, lang).kind.words(label)
        except CalibrateError:
            return label

    def _pick(self, title: str, rows: list[tuple[int, str]]) -> None:
        """A list of items to pick one from: it is shown, and the next item after it is the one on screen now."""
        def done(item_id: int | None) -> None:
            if item_id is not None:
                self.show(self.session.jump_to(item_id, detour=True))

        self.app.push_screen(ItemPickerScreen(title, rows), done)

    def action_filter(self) -> None:
        current = self.session.filter_text()

        def done(text: str | None) -> None:
            if text is not None:  # the held items given back first: the new queue's session starts after it
                self.write(self.session.give_back, lambda _: self.app.refilter(text), FILTER_PENDING)

        self.app.push_screen(TextPrompt("Filter: task=… lang=… system=… (empty for all)", "task=c3/pause lang=zh", current,
                                        check=lambda text: safe(self.app.filter_problem(text) or "") or None,
                                        enter="starts the filtered queue"), done)

    def action_stats(self) -> None:
        self.app.push_screen(StatsScreen(self.session.store.path, self.session.templates, self.session.judge))

    def action_guidelines(self) -> None:
        if self.view is None:
            return
        template = self.view.template
        parts = [self.app.guidelines_for(template), template.kind.label_means("the system's response"),
                 f"labels: {self._label_keys()}"]
        self.app.push_screen(TextScreen(f"Guidelines: {self.view.item.task} ({self.view.item.lang})",
                                        Text(safe("\n\n".join(part for part in parts if part)))))

    def action_help(self) -> None:
        lines = Text()
        for binding in self.BINDINGS:
            keys = self.app.keymap_for(binding)
            lines.append(f"{keys:<16}", style="bold")
            lines.append(f"{binding.description:<10} ({binding.id})\n")
        lines.append("\nEnter confirms the judge's verdict; y/n or digits give your own label (also in blind mode); "
                     "o flips a yes/no verdict; e opens the score form on rubric items. Every decision is saved "
                     "at once; u appends a reversal. Skipped items come back once the rest of the queue is done; "
                     "F lists your flagged items, H your labels from every session (the latest first) to label one again. A long passage shows its first lines: x shows all of it; a "
                     "field too big for one screen is paged with ] and [. Tab chooses the pane that PgUp/PgDn, "
                     "Home/End and ↑/↓ scroll. Remap keys in a TOML file named by $CALIBRATE_KEYMAP, "
                     'e.g. "annotate.next" = "right,m".')
        self.app.push_screen(TextScreen("Keys", lines))

    def action_quit_app(self) -> None:
        """Give the held items back and quit. While a write waits for another writer, q quits once
        it is done (`_written`); q again, or q while the giving back waits, quits at once: the held
        items then come back when the annotator starts again, or when their leases end, and a
        decision that waited is not saved (the exit says so: `LOST_AT_THE_END`)."""
        if self.saving and (self.quit_after or self.pending == QUIT_PENDING):
            self.app.exit()
        elif self.saving:
            self.quit_after = True
            self._show_wait(self.waited)
        else:
            self.write(self.session.give_back, lambda _: self.app.exit(), QUIT_PENDING)
